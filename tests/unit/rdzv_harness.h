/* SPDX-License-Identifier: MIT */
/*
 * rdzv_harness.h - the in-process rendezvous harness of the rdzv unit tests
 * (test_rdzv_loop.c, test_rdzv_bounds.c): one gx_ev loop on loopback, a
 * coordinator and members started from one template config, their outcomes
 * recorded per slot. Linked into every test binary like test_support.c.
 */
#ifndef TESTS_RDZV_HARNESS_H
#define TESTS_RDZV_HARNESS_H

#include "rdzv/rdzv.h"

#include <stddef.h>
#include <stdint.h>

struct rh;

/* One member's slot: its outcome, filled by rh_m_done. */
struct rh_slot {
	struct rdzv_member *m;
	int done, rc, rank;
	struct rdzv_result res; /* copied, table dropped */
	size_t ntable;
	size_t table_named; /* rows of the full table whose name is names[row] */
	char err[1024];
	int64_t at; /* when done ran */
	struct rh *h;
	uint32_t i;
};

struct rh {
	struct gx_ev *ev;
	uint32_t n, nslots; /* names; slots = n + extra */
	char **names;	    /* "job-worker-<i>" */
	uint16_t port;	    /* free at init */
	int64_t deadline;   /* the coordinator's (rh_coord_cfg) */
	struct rdzv_coord *co;
	int co_done, co_rc;
	struct rdzv_result co_res; /* copied; its table is the coordinator's (valid until free) */
	char co_err[1024];
	int64_t co_at;
	struct rh_slot *s;
	struct rdzv_config base; /* the template: job, token, port, names, coordinator address */
	uint32_t coord_slots;	 /* the coordinator's self.slots (8) */
	int want, ndone;	 /* rh_m_done / rh_co_done stop the loop at `want` dones (> 0) */
};

/* A loopback TCP port that was free a moment ago. */
uint16_t rh_free_port(void);
/* n names, n + extra slots, base.deadline_ms = deadline = now + deadline_ms. */
void rh_init(struct rh *h, uint32_t n, uint32_t extra, const char *job_id,
	     const unsigned char *token, size_t token_len, int64_t deadline_ms);
void rh_free(struct rh *h);

/* done callbacks: arg is the harness / the slot. */
void rh_co_done(void *arg, int rc, const struct rdzv_result *res);
void rh_m_done(void *arg, int rc, const struct rdzv_result *res);

/* Peer 0 on 127.0.0.1 (listening there only), deadline h->deadline. */
void rh_coord_cfg(struct rh *h, struct rdzv_config *cfg);
/* Peer i, secondary address 127.0.<1 + i/250>.<1 + i%250>, a fresh incarnation. */
void rh_member_cfg(struct rh *h, uint32_t i, struct rdzv_config *cfg);
void rh_start_coord_cfg(struct rh *h, const struct rdzv_config *cfg);
void rh_start_member_in(struct rh *h, struct gx_ev *ev, uint32_t slot,
			const struct rdzv_config *cfg);

/*
 * A fake RDMA-CM check (rdzv_rdma_ops) for a member "mlx5_1" against a coordinator
 * "mlx5_0" (asserted): it answers rc from a timer of the loop delay_ms later, or never
 * (hang); one check at a time. rh_rdma_ops fills ops with it.
 */
struct rh_rdma {
	int rc, hang, delay_ms;
	int calls, cancels;
	struct gx_ev *ev;
	uint64_t timer;
	rdzv_rdma_check_fn *done;
	void *done_arg;
};
void rh_rdma_ops(struct rh_rdma *f, struct rdzv_rdma_ops *ops);

/* Run ev in 20 ms slices for ms, or until *flag becomes nonzero. */
void rh_pump_ev(struct gx_ev *ev, int64_t ms, const int *flag);

#endif
