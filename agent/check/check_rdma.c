/* SPDX-License-Identifier: MIT */
/*
 * check_rdma.c - the RDMA-CM probes of `gxboot check`, one at a
 * time, inside this pod's own event loop: each probe is an rdzv_rdma client
 * driven by the loop (its rdma_cm channel and completion channel fds), so the
 * pod keeps serving TCP echoes and RDMA-CM connects of others while it probes.
 * No fork: a child that posts on verbs objects its parent opened
 * (librdmacm opens the uverbs device once per process) gets EACCES from the
 * kernel on real hardware and on rxe.
 */
#include "agent/check/check_int.h"
#include "rdzv/rdma/rdzv_rdma.h"

#include <errno.h>
#include <string.h>

#define RDMA_PROBE_MS 3000 /* one attempt; check.c budgets 3 s per target plus 5 s */
#define RDMA_RETRY_MS 300  /* a refused connect within the first second: once more */

static void add_result(struct check_rdma *r, const struct rdzv_rdma_probe *out, const char *why)
{
	const struct check_net *n = r->n;
	struct check_probe p;

	memset(&p, 0, sizeof(p));
	p.to = r->j;
	p.rail = (int)r->k;
	p.proto = CHECK_RDMA;
	p.ok = out && out->ok;
	p.gid_index = out ? out->gid_index : -1;
	p.mtu = out ? out->mtu : 0;
	p.min_us = p.median_us = p.max_us = out ? out->sendrecv_us : 0;
	p.write_us = out ? out->write_us : 0;
	p.bytes = out && out->ok && out->write_us ? (int64_t)out->size : 0;
	if (!p.ok)
		gx_strlcpy(p.why, why ? why : out->why[0] ? out->why : "failed", sizeof(p.why));
	if (agent_check_row_add(n->w, n->self, &p) < 0)
		gx_warn("check: RDMA probe result dropped");
	gx_debug("check: rdma -> %s (rail %u): %s", n->w->names[p.to], r->k, p.ok ? "ok" : p.why);
}

/*
 * The next target after (k, j): rail 0 is the bootstrap interface (every
 * probed peer with a device), rail k (check --rails) pairs rail k with rail k
 * where both ends have a device and an address on it. 0 when none is left.
 */
static int next_target(struct check_rdma *r)
{
	const struct check_net *n = r->n;

	for (;;) {
		r->j = r->started ? r->j + 1 : 0;
		r->started = 1;
		if (r->j >= n->w->n) {
			if (r->k >= n->w->nrails)
				return 0;
			r->k++;
			r->j = 0;
			if (agent_check_rail_peer(&n->table[n->self], n->w->rails[r->k - 1],
						  &r->me) < 0) {
				r->j = n->w->n; /* no device on this rail here: skip it */
				continue;
			}
		}
		if (!agent_check_pair_probed(n->w, n->self, r->j))
			continue;
		if (r->k == 0 && n->table[r->j].rdma_dev[0]) {
			r->me = n->table[n->self];
			r->them = n->table[r->j];
			return 1;
		}
		if (r->k > 0 &&
		    agent_check_rail_peer(&n->table[r->j], n->w->rails[r->k - 1], &r->them) == 0)
			return 1;
	}
}

static void all_done(struct check_rdma *r)
{
	r->done = 1;
	gx_ev_stop(r->n->ev, 0);
	if (r->done_cb)
		r->done_cb(r);
}

static void probe_done(void *arg, const struct rdzv_rdma_probe *out);

/* Starts the probe of the current target; a start failure is a result. */
static int start_one(struct check_rdma *r)
{
	int rc;

	r->t_start = gx_now_ms();
	rc = rdzv_rdma_probe_start(r->ctx, r->n->ev, &r->me, &r->them, r->n->port, r->size,
				   r->t_start + RDMA_PROBE_MS, probe_done, r, &r->cli);
	if (rc < 0)
		add_result(r, NULL, "probe failed to start");
	return rc;
}

/* Starts probes until one runs or none is left. */
static void start_next(struct check_rdma *r)
{
	r->retried = 0;
	while (next_target(r))
		if (start_one(r) == 0)
			return;
	all_done(r);
}

static void on_retry(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct check_rdma *r = arg;

	(void)ev;
	(void)id;
	r->timer = 0;
	if (start_one(r) < 0)
		start_next(r);
}

/*
 * One probe's outcome. A connect refused within the first second is tried
 * once more after RDMA_RETRY_MS: the target may have opened its TCP service
 * (which our TCP probes saw) but not yet its RDMA-CM listener.
 */
static void probe_done(void *arg, const struct rdzv_rdma_probe *out)
{
	struct check_rdma *r = arg;

	r->cli = NULL;
	if (!out->ok && !r->retried && out->step && strcmp(out->step, "connect") == 0 &&
	    gx_now_ms() - r->t_start <= 1000) {
		r->retried = 1;
		r->timer = gx_ev_timer(r->n->ev, RDMA_RETRY_MS, on_retry, r);
		return;
	}
	add_result(r, out, NULL);
	start_next(r);
}

void agent_check_rdma_init(struct check_net *n, struct rdzv_rdma_ctx *ctx, size_t size,
			   struct check_rdma *r)
{
	memset(r, 0, sizeof(*r));
	r->n = n;
	r->ctx = ctx;
	r->size = size;
}

void agent_check_rdma_go(struct check_rdma *r)
{
	if (!r->n || r->started)
		return;
	start_next(r);
}

void agent_check_rdma_stop(struct check_rdma *r)
{
	if (!r->n)
		return;
	rdzv_rdma_probe_cancel(r->cli);
	r->cli = NULL;
	if (r->timer)
		gx_ev_timer_cancel(r->n->ev, r->timer);
	r->timer = 0;
	r->done = 1;
}
