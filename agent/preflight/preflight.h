/* SPDX-License-Identifier: MIT */
/*
 * preflight.h - preflight's face: the hooks a run gives the rendezvous so that every pod
 * measures its paths before the COMMIT (`--preflight`), given the run's state as plain data
 * (the pipeline hosts it; preflight never sees its struct). Internals: preflight_int.h.
 */
#ifndef AGENT_PREFLIGHT_H
#define AGENT_PREFLIGHT_H

#include "agent/agent.h"
#include "rdzv/gx/gx.h"

#include <stddef.h>

/*
 * 16 MiB: a 10 Gbit/s path takes 13 ms and a 100 Gbit/s one (at the ~50 Gbit/s a single
 * TCP stream reaches) 2.7 ms, long past slow start on a datacenter RTT (the window covers
 * the BDP in a few round trips), so the figure is the path's and not TCP's ramp; a ring
 * costs each pod 2 x 16 MiB each way. A slower path is measured, not waited for: every
 * stream stops after AGENT_PF_BOUND_MS with what got through.
 */
#define AGENT_PF_BYTES (16L << 20)
#define AGENT_PF_SLOW 0.5 /* slow: below this fraction of the job's median */

struct nd_result;
struct nd_routes;
struct rdzv_config;
struct rdzv_coord;
struct rdzv_member;
struct rdzv_peer;
struct rdzv_rdma_ctx;
struct rdzv_result;

/* What the run that hosts the preflight gives it; every pointer outlives the preflight. The
 * slots (coord, member, rdma_ctx, routes) are the run's: filled when the run starts them. */
struct agent_pf_host {
	const struct agent_opts *o;
	struct gx_ev *ev;
	struct rdzv_coord *const *coord;
	struct rdzv_member *const *member;
	struct rdzv_rdma_ctx *const *rdma_ctx; /* the verified RDMA-CM context, or NULL */
	const struct rdzv_peer *self;	       /* this pod's JOIN entry */
	const struct nd_result *nd;	       /* NULL when netdetect failed */
	struct nd_routes **routes;	       /* the run's route answers (opened here when NULL) */
	int routes_off;			       /* netlink refused: no route check */
	size_t npeers;
	/* preflight.json's text into --out (the run's directory): 0, or < 0 with err */
	int (*write_file)(void *arg, const char *name, const char *text, size_t len, char *err,
			  size_t errlen);
	void *arg;
};

struct agent_pf;
/* rdzv hooks for this run (run, init, serve): members always answer a coordinator's
 * plan; the coordinator holds its COMMIT when --preflight. 0 and *ret, or -ENOMEM. */
int agent_pf_hook(const struct agent_pf_host *h, struct rdzv_config *cfg, struct agent_pf **ret);
/* After the rendezvous (res and rc its outcome): the service and probes stop; the note is
 * logged. pf may be NULL. */
void agent_pf_end(struct agent_pf *pf, const struct rdzv_result *res, int rdzv_rc);

#endif
