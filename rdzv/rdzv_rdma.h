/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma.h - RDMA-CM for the rendezvous' phase-2 verification (issue 5)
 * and for `gxboot check`'s RDMA probes (issue 8): librdmacm + verbs, in the
 * rping idiom, behind an ops table so that unit tests replace every rdma_* /
 * ibv_* call with recorded shapes (this machine has no RDMA device).
 *
 * The server side runs inside the caller's gx_ev loop (the rdma_cm event
 * channel fd and the completion channel fd are non-blocking and polled);
 * the client side is blocking with a deadline (a member waits for nothing
 * else while it verifies; check runs its RDMA probes one at a time).
 */
#ifndef RDZV_RDMA_H
#define RDZV_RDMA_H

#include "rdzv/rdzv.h"

#include <stddef.h>
#include <stdint.h>

struct rdzv_rdma_cm_ops; /* the librdmacm / verbs seam, defined in rdzv_rdma.c */

/* The real ops (librdmacm + libibverbs). */
const struct rdzv_rdma_cm_ops *rdzv_rdma_cm_real(void);

struct rdzv_rdma_ctx; /* server state; owns no global state */

/*
 * A context the caller owns. cm: the seam (rdzv_rdma_cm_real() in the
 * program, a fake in tests). max_write: the largest RDMA WRITE a client may
 * ask for (check --size); 0 = verification only (one small send/recv).
 */
int rdzv_rdma_ctx_new(const struct rdzv_rdma_cm_ops *cm, size_t max_write,
		      struct rdzv_rdma_ctx **ret);
void rdzv_rdma_ctx_free(struct rdzv_rdma_ctx *c);

/*
 * struct rdzv_rdma_ops for rdzv_config.rdma: check() = the member-side
 * verification (resolve addr/route to coord's secondary address, connect,
 * one small send/recv), listen()/close() = the coordinator's server in ev.
 * ops->arg is c; the returned struct lives inside c.
 */
const struct rdzv_rdma_ops *rdzv_rdma_ops(struct rdzv_rdma_ctx *c);

/* Server for probes (check): answer connects on self's secondary address. */
int rdzv_rdma_serve(struct rdzv_rdma_ctx *c, struct gx_ev *ev, const struct rdzv_peer *self,
		    uint16_t port, char *why, size_t whylen);

struct rdzv_rdma_probe {
	int ok;		     /* 1: every step passed */
	const char *step;    /* the step that failed: "resolve_addr", "resolve_route",
				"connect", "send", "recv", "write", "completion" */
	char why[256];	     /* one line: step + cause (e.g. "connect: rejected") */
	int64_t connect_us;  /* resolve + route + connect */
	int64_t sendrecv_us; /* one small send and its reply */
	int64_t write_us;    /* RDMA WRITE of size bytes, until its completion */
	size_t size;	     /* bytes written */
	int gid_index;	     /* the SGID index the route used, -1 unknown */
	int mtu, peer_mtu;   /* active path MTU here and as the server reports it */
};

/*
 * Client probe (check): from self's secondary address to peer's, port;
 * connect, send/recv, RDMA WRITE of size bytes (0 = skip), with latency.
 * Blocks until done or deadline_ms (gx_now_ms clock). 0 with out->ok set
 * or cleared; negative only for bad arguments / out of memory.
 */
int rdzv_rdma_probe_run(struct rdzv_rdma_ctx *c, const struct rdzv_peer *self,
			const struct rdzv_peer *peer, uint16_t port, size_t size,
			int64_t deadline_ms, struct rdzv_rdma_probe *out);

#endif
