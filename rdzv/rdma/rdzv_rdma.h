/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma.h - RDMA-CM for the rendezvous' phase-2 verification
 * and for `gxboot check`'s RDMA probes: librdmacm + verbs, in the
 * rping idiom, behind an ops table so that unit tests replace every rdma_* /
 * ibv_* call with recorded shapes (this machine has no RDMA device).
 *
 * Server and client run inside the caller's gx_ev loop (the rdma_cm event
 * channel fd and the completion channel fds are non-blocking and polled), the
 * member's verification too (no private loop).
 * Steps and the private-data layout: rdzv/PROTOCOL.md, "RDMA-CM".
 */
#ifndef RDZV_RDMA_H
#define RDZV_RDMA_H

#include "rdzv/rdzv.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The librdmacm / verbs seam. Every entry returns 0 or a negative errno
 * (objects through out-pointers); poll_cq returns the number of completions
 * or a negative errno. Only rdzv_rdma_cm.c calls the libraries.
 */
struct rdzv_rdma_cm_ops {
	int (*create_event_channel)(struct rdma_event_channel **ret);
	void (*destroy_event_channel)(struct rdma_event_channel *ch);
	int (*create_id)(struct rdma_event_channel *ch, struct rdma_cm_id **ret, void *context);
	int (*destroy_id)(struct rdma_cm_id *id);
	int (*bind_addr)(struct rdma_cm_id *id, struct sockaddr *addr);
	int (*listen)(struct rdma_cm_id *id, int backlog);
	int (*resolve_addr)(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			    int timeout_ms);
	int (*resolve_route)(struct rdma_cm_id *id, int timeout_ms);
	int (*connect)(struct rdma_cm_id *id, struct rdma_conn_param *param);
	int (*accept)(struct rdma_cm_id *id, struct rdma_conn_param *param);
	int (*reject)(struct rdma_cm_id *id, const void *pdata, uint8_t len);
	int (*disconnect)(struct rdma_cm_id *id);
	/* -EAGAIN when the (non-blocking) channel has nothing */
	int (*get_cm_event)(struct rdma_event_channel *ch, struct rdma_cm_event **ret);
	int (*ack_cm_event)(struct rdma_cm_event *ev);
	int (*create_qp)(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	void (*destroy_qp)(struct rdma_cm_id *id);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			struct ibv_qp_init_attr *init);
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
	int (*alloc_pd)(struct ibv_context *ctx, struct ibv_pd **ret);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access, struct ibv_mr **ret);
	int (*dereg_mr)(struct ibv_mr *mr);
	int (*create_comp_channel)(struct ibv_context *ctx, struct ibv_comp_channel **ret);
	int (*destroy_comp_channel)(struct ibv_comp_channel *cc);
	int (*create_cq)(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *cc,
			 struct ibv_cq **ret);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*req_notify_cq)(struct ibv_cq *cq);
	/* -EAGAIN when the (non-blocking) channel has nothing */
	int (*get_cq_event)(struct ibv_comp_channel *cc, struct ibv_cq **cq);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr);
	int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
};

/* The real ops (librdmacm + libibverbs). */
const struct rdzv_rdma_cm_ops *rdzv_rdma_cm_real(void);

struct rdzv_rdma_ctx; /* server state; owns no global state */

/* At most this many server connections at once; more are rejected ("busy"). */
#define RDZV_RDMA_MAX_CONNS 64
/* A server connection lives at most this long (a client that never hangs up). */
#define RDZV_RDMA_CONN_MS 10000
/* The largest max_write a context accepts (a buffer per server connection). */
#define RDZV_RDMA_MAX_WRITE (64u << 20)
/*
 * Wire v2 (a stranger cannot make it pin memory): a server registers a write target only for a
 * PING whose MAC proves the job's key, at most RDZV_RDMA_PIN_MAX bytes at once
 * (a PONG says so past it); a connection has RDZV_RDMA_PROOF_MS to prove, and
 * one source address holds at most RDZV_RDMA_PREAUTH_PER_SRC unproved ones (at
 * the connection limit the heaviest source's oldest unproved one is closed).
 */
#define RDZV_RDMA_PIN_MAX (512u << 20)
#define RDZV_RDMA_PREAUTH_PER_SRC 4
#define RDZV_RDMA_PROOF_MS 2000

/*
 * A context the caller owns. cm: the seam (rdzv_rdma_cm_real() in the
 * program, a fake in tests). max_write: the largest RDMA WRITE a client may
 * ask for (check --size); 0 = verification only (one small send/recv).
 * -EINVAL for max_write > RDZV_RDMA_MAX_WRITE.
 */
int rdzv_rdma_ctx_new(const struct rdzv_rdma_cm_ops *cm, size_t max_write,
		      struct rdzv_rdma_ctx **ret);
/*
 * The job's RDMA key: derived from the token for "rdma:<job id>", or without a
 * token from the job id (anyone who knows it can then prove, as on TCP). Both
 * ends must set the same; a fresh context holds the key of no token and job "".
 */
int rdzv_rdma_set_key(struct rdzv_rdma_ctx *c, const unsigned char *token, size_t len,
		      const char *job_id);
/* dst gets src's key (a rail's server, made after the token is wiped). */
int rdzv_rdma_share_key(struct rdzv_rdma_ctx *dst, const struct rdzv_rdma_ctx *src);
/* Server figures: bytes registered as write targets now and at most, unproved closes. */
struct rdzv_rdma_pins {
	size_t now, peak;
	uint64_t refused;
};
void rdzv_rdma_pins(const struct rdzv_rdma_ctx *c, struct rdzv_rdma_pins *out);
/* The outcome of the latest verification (ops check()); NULL when none ran. */
const struct rdzv_rdma_probe *rdzv_rdma_last(const struct rdzv_rdma_ctx *c);
/*
 * The fabric gate per HCA (NCCL gets only the rails that passed). Each rail in
 * rdzv_peer.rails
 * ("dev:port/netdev/addr,...") is matched with the coordinator's rail on the
 * interface of the same name; the member's check() probes every matched rail
 * (RDMA-CM connect + send/recv from its rail address to the coordinator's),
 * the coordinator's listen() serves each of its rail addresses. A rail's
 * failure does not fail check() (only the bootstrap rail does): it is left
 * out of NCCL_IB_HCA by the caller and named.
 */
#define RDZV_RDMA_MAX_RAILS 8
struct rdzv_rdma_rail {
	char dev[64];	   /* this pod's device on the rail */
	char netdev[16];   /* the rail's interface */
	int bootstrap;	   /* the rail of the bootstrap address */
	int checked;	   /* member: probed to the coordinator's same rail */
	int ok;		   /* member: that probe passed */
	int gid_index;	   /* member: the SGID index that carried it, -1 unknown */
	int served;	   /* coordinator: a listener runs on this rail */
	unsigned answered; /* coordinator: members whose connect + send/recv came on it */
	char why[200];	   /* member: why not ok; coordinator: why not served */
};
/*
 * Rails on (default) or off (check: its own --rails probes cover them). The
 * rail probes share half of check()'s remaining time, in equal parts.
 */
void rdzv_rdma_set_rails(struct rdzv_rdma_ctx *c, int on);
/* This context's rails (after check() or listen()); *ret valid until the next call / free. */
size_t rdzv_rdma_rails(struct rdzv_rdma_ctx *c, const struct rdzv_rdma_rail **ret);

/* Stops the server (if any) and frees everything; NULL is fine. */
void rdzv_rdma_ctx_free(struct rdzv_rdma_ctx *c);

/*
 * struct rdzv_rdma_ops for rdzv_config.rdma: check() = the member-side
 * verification (resolve addr/route to coord's secondary address, connect,
 * one small send/recv; GX_ERDZV + why on failure), listen()/close() = the
 * coordinator's server in ev (rdzv_rdma_serve / rdzv_rdma_stop).
 * ops->arg is c; the returned struct lives inside c.
 */
const struct rdzv_rdma_ops *rdzv_rdma_ops(struct rdzv_rdma_ctx *c);

/*
 * Server (coordinator and check): answer connects on self's secondary
 * address (addr4, else addr6) and port inside ev. -EALREADY when serving.
 */
int rdzv_rdma_serve(struct rdzv_rdma_ctx *c, struct gx_ev *ev, const struct rdzv_peer *self,
		    uint16_t port, char *why, size_t whylen);
/* Stops the server: every connection and id destroyed; safe when not serving. */
void rdzv_rdma_stop(struct rdzv_rdma_ctx *c);
/* Server connections open now (tests, progress). */
unsigned rdzv_rdma_nconns(const struct rdzv_rdma_ctx *c);
/*
 * Server: distinct ranks whose connect + first send/recv went through with a
 * PING that proved the job's key, since the context was made (the
 * coordinator's evidence that its RDMA-CM path works; a stranger's connect or
 * a member's retry does not count twice).
 */
unsigned rdzv_rdma_answered(const struct rdzv_rdma_ctx *c);

struct rdzv_rdma_probe {
	int ok;		     /* 1: every step passed */
	const char *step;    /* the step that failed: "resolve_addr", "resolve_route",
				"setup" (pd/cq/qp/memory registration), "connect", "send",
				"recv", "write", "completion"; NULL when ok */
	char why[256];	     /* one line: step + cause (e.g. "connect: rejected by 10.0.0.1") */
	int64_t connect_us;  /* resolve + route + connect */
	int64_t sendrecv_us; /* one small send and its reply */
	int64_t write_us;    /* RDMA WRITE of size bytes, until its completion */
	size_t size;	     /* bytes written */
	int gid_index;	     /* the SGID index the connection used, -1 unknown */
	int mtu, peer_mtu;   /* active MTU (bytes) here and as the server reports it; 0 unknown */
};

/*
 * Client probe: from self's secondary address to peer's, port; connect,
 * send/recv, RDMA WRITE of size bytes (0 = skip), with latency; the outcome
 * by deadline_ms (gx_now_ms clock). It runs inside ev (the rdma_cm channel
 * and the completion channel are polled there, a timer holds the deadline):
 * no fork, no thread, so the verbs objects are used only by the process
 * that opened them. done(arg, out) is called exactly once, from the loop
 * (never from start), after every object is released; the probe is freed
 * then. *ret (may be NULL) is valid until done or rdzv_rdma_probe_cancel.
 * Negative only for bad arguments / out of memory (done is not called).
 */
struct rdzv_rdma_cli;
typedef void rdzv_rdma_probe_fn(void *arg, const struct rdzv_rdma_probe *out);
int rdzv_rdma_probe_start(struct rdzv_rdma_ctx *c, struct gx_ev *ev, const struct rdzv_peer *self,
			  const struct rdzv_peer *peer, uint16_t port, size_t size,
			  int64_t deadline_ms, rdzv_rdma_probe_fn *done, void *arg,
			  struct rdzv_rdma_cli **ret);
/* Stops a running probe without calling done; NULL is fine. */
void rdzv_rdma_probe_cancel(struct rdzv_rdma_cli *cl);

#endif
