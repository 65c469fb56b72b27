/* SPDX-License-Identifier: MIT */
/*
 * test_rdzv_preflight.c - the rendezvous' part of the preflight, in one loop on loopback:
 * the COMMIT is held until the verdict; PREFLIGHT frames carry bytes both ways on the
 * phase-1 sessions; a fixed world ends with every pod told (the named one GX_ELEFTOUT,
 * the others GX_EPREFLIGHT); an elastic job gathers (MAX, or the settle window), leaves
 * the named pod out and commits the rest with contiguous ranks and the new world (table
 * in that order on the coordinator and on a member that asked for it), and a pod that
 * comes back later gets the next rank; a blamed coordinator ends the job. Pods of one
 * host sharing a secondary address (loopback) are no IPAM conflict.
 */
#include "rdzv/rdzv_int.h"
#include "tests/unit/rdzv_harness.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const unsigned char TOKEN[] = "0123456789abcdef-test-token";

/* The caller's side of the test: what pf_start saw, the bytes each slot sent back. */
struct pfx {
	struct rh *w;
	uint32_t slots[16], n;
	int started;
	unsigned char *leave;
	const char *line;
	uint32_t got[16]; /* bytes received from each slot (coordinator) */
	int echoes;	  /* members that echoed the plan */
	int member_got[16];
	uint64_t timer;
	int transport; /* send a plan to every member and wait for its echo */
};

static struct pfx X;

static void verdict(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct pfx *x = arg;

	(void)ev;
	(void)id;
	x->timer = 0;
	rdzv_coord_pf_done(x->w->co, x->leave, x->line);
}

static void pf_start(void *arg, const uint32_t *slots, uint32_t n, const struct rdzv_peer *tab)
{
	struct pfx *x = arg;
	char plan[300];
	uint32_t k;

	assert_true(n <= 16);
	assert_int_equal(slots[0], 0);
	assert_string_equal(tab[0].name, "job-worker-0");
	memcpy(x->slots, slots, n * sizeof(*slots));
	x->n = n;
	x->started++;
	if (!x->transport) {
		x->timer = gx_ev_timer(x->w->ev, 10, verdict, x);
		return;
	}
	for (k = 1; k < n; k++) {
		snprintf(plan, sizeof(plan), "plan for %s", tab[slots[k]].name);
		assert_int_equal(rdzv_coord_pf_send(x->w->co, slots[k], plan, strlen(plan)), 0);
	}
	/* slot 0 is the coordinator itself: nothing to send */
	assert_int_equal(rdzv_coord_pf_send(x->w->co, 0, "x", 1), -ENOTCONN);
}

static void co_recv(void *arg, uint32_t slot, const unsigned char *p, size_t len)
{
	struct pfx *x = arg;
	char want[320];

	snprintf(want, sizeof(want), "echo: plan for job-worker-%u", slot);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(p, want, len);
	x->got[slot] += (uint32_t)len;
	if (++x->echoes == (int)x->n - 1)
		x->timer = gx_ev_timer(x->w->ev, 0, verdict, x);
}

/* A member echoes its plan (pf_arg: its slot). */
static void m_recv(void *arg, uint32_t slot, const unsigned char *p, size_t len)
{
	struct rh_slot *s = arg;
	char echo[RDZV_PF_DATA_MAX + 1];

	assert_int_equal(slot, 0);
	X.member_got[s->i]++;
	snprintf(echo, sizeof(echo), "echo: %.*s", (int)len, (const char *)p);
	assert_int_equal(rdzv_member_pf_send(s->m, echo, strlen(echo)), 0);
}

static void pump(struct rh *w, int want, int64_t ms)
{
	int64_t until = gx_now_ms() + ms;

	w->want = want;
	while (w->ndone < w->want && gx_now_ms() < until)
		gx_ev_run_until(w->ev, gx_now_ms() + 50 < until ? gx_now_ms() + 50 : until);
}

static void setup(struct rh *w, uint32_t n, int elastic)
{
	memset(&X, 0, sizeof(X));
	X.w = w;
	rh_init(w, n, 0, "job-pf", TOKEN, sizeof(TOKEN) - 1, 15000);
	w->base.deadline_ms = w->deadline + 1000;
	if (elastic) {
		w->base.elastic = 1;
		w->base.nnames = n;
		w->base.min_peers = 2;
	}
}

static void start_coord(struct rh *w, int64_t settle)
{
	struct rdzv_config cfg;

	rh_coord_cfg(w, &cfg);
	cfg.preflight = 1;
	cfg.pf_settle_ms = settle;
	cfg.pf_start = pf_start;
	cfg.pf_recv = co_recv;
	cfg.pf_arg = &X;
	cfg.keep_serving = cfg.elastic;
	rh_start_coord_cfg(w, &cfg);
}

static void start_member(struct rh *w, uint32_t i, int full)
{
	struct rdzv_config cfg;

	rh_member_cfg(w, i, &cfg);
	cfg.pf_recv = m_recv;
	cfg.pf_arg = &w->s[i];
	cfg.full_table = full;
	rh_start_member_in(w, w->ev, i, &cfg);
}

/* Fixed world, nobody named: the frames go both ways, then the COMMIT as usual. */
static void test_fixed_pass(void **state)
{
	struct rh w;
	uint32_t i;

	(void)state;
	setup(&w, 4, 0);
	X.transport = 1;
	start_coord(&w, 0);
	for (i = 1; i < 4; i++)
		start_member(&w, i, 0);
	pump(&w, 4, 10000);
	assert_int_equal(X.started, 1);
	assert_int_equal(X.n, 4);
	assert_int_equal(w.co_rc, 0);
	assert_int_equal(w.co_res.world, 4);
	for (i = 1; i < 4; i++) {
		assert_int_equal(w.s[i].rc, 0);
		assert_int_equal(w.s[i].rank, (int)i);
		assert_int_equal(w.s[i].res.world, 4);
		assert_int_equal(X.member_got[i], 1);
		assert_true(X.got[i] > 0);
		assert_string_equal(w.s[i].res.note, "");
	}
	rh_free(&w);
}

/* Fixed world, one pod named: every pod ends at once; it with GX_ELEFTOUT (exit 8). */
static void test_fixed_blamed(void **state)
{
	unsigned char leave[4] = {0, 0, 1, 0};
	struct rh w;
	uint32_t i;

	(void)state;
	setup(&w, 4, 0);
	X.leave = leave;
	X.line = "job-worker-2: slow: 3.9 Mbit/s from its peers against the job's median "
		 "2.1 Gbit/s";
	start_coord(&w, 0);
	for (i = 1; i < 4; i++)
		start_member(&w, i, 0);
	pump(&w, 4, 10000);
	assert_int_equal(w.co_rc, GX_EPREFLIGHT);
	assert_non_null(strstr(w.co_err, "preflight failed: job-worker-2: slow: 3.9 Mbit/s"));
	for (i = 1; i < 4; i++) {
		assert_int_equal(w.s[i].done, 1);
		assert_int_equal(w.s[i].rc, i == 2 ? GX_ELEFTOUT : GX_EPREFLIGHT);
		assert_non_null(strstr(w.s[i].err, "job-worker-2: slow"));
	}
	assert_int_equal(gx_exit_code(GX_EPREFLIGHT), 7);
	assert_int_equal(gx_exit_code(GX_ELEFTOUT), 8);
	rh_free(&w);
}

static void check_ranked(const struct rh *w, const char *const *names, uint32_t k)
{
	uint32_t r;

	assert_int_equal(w->co_res.world, k);
	assert_int_equal(w->co_res.ntable, k);
	for (r = 0; r < k; r++) {
		assert_string_equal(w->co_res.table[r].name, names[r]);
		assert_int_equal(w->co_res.table[r].index, r);
	}
}

/* Elastic 2:5 with all five in: the named pod leaves, the others get ranks 0..3. */
static void test_elastic_shrink(void **state)
{
	static const char *const kept[] = {"job-worker-0", "job-worker-1", "job-worker-3",
					   "job-worker-4"};
	unsigned char leave[5] = {0, 0, 1, 0, 0};
	struct rh w;
	uint32_t i;

	(void)state;
	setup(&w, 5, 1);
	X.leave = leave;
	X.line = "job-worker-2: no echo from 3 known-good pods";
	start_coord(&w, 5000); /* MAX comes before the window: no waiting for it */
	for (i = 1; i < 5; i++)
		start_member(&w, i, i == 4);
	pump(&w, 5, 8000);
	assert_int_equal(X.n, 5);
	assert_int_equal(w.co_rc, 0);
	check_ranked(&w, kept, 4);
	assert_string_equal(w.co_res.note, X.line);
	assert_int_equal(w.s[2].rc, GX_ELEFTOUT);
	assert_non_null(strstr(w.s[2].err, "left out by the preflight: job-worker-2: no echo"));
	assert_int_equal(w.s[1].rank, 1);
	assert_int_equal(w.s[3].rank, 2);
	assert_int_equal(w.s[4].rank, 3);
	for (i = 1; i < 5; i++) {
		if (i == 2)
			continue;
		assert_int_equal(w.s[i].rc, 0);
		assert_int_equal(w.s[i].res.world, 4);
		assert_string_equal(w.s[i].res.note, X.line);
	}
	/* the member that asked for the table got it in job-rank order */
	assert_int_equal(w.s[4].ntable, 4);
	/* the named pod comes back (rescheduled): the next rank, world 5 */
	rdzv_member_free(w.s[2].m);
	w.s[2].m = NULL;
	w.ndone = 0;
	start_member(&w, 2, 0);
	pump(&w, 1, 5000);
	assert_int_equal(w.s[2].rc, 0);
	assert_int_equal(w.s[2].rank, 4);
	assert_int_equal(w.s[2].res.world, 5);
	rh_free(&w);
}

/* Elastic 2:5 with only three pods: the preflight starts when the settle window passes. */
static void test_elastic_settle(void **state)
{
	struct rh w;
	int64_t t0;
	uint32_t i;

	(void)state;
	setup(&w, 5, 1);
	start_coord(&w, 400);
	t0 = gx_now_ms();
	for (i = 1; i < 3; i++)
		start_member(&w, i, 0);
	pump(&w, 3, 8000);
	printf("# settle window 400 ms: committed %lld ms after the start\n",
	       (long long)(gx_now_ms() - t0));
	assert_int_equal(X.started, 1);
	assert_int_equal(X.n, 3);
	assert_int_equal(w.co_rc, 0);
	assert_int_equal(w.co_res.world, 3);
	assert_int_equal(w.s[1].res.world, 3);
	assert_int_equal(w.s[2].rank, 2);
	rh_free(&w);
}

/* Elastic: a named coordinator ends the job (no MASTER_ADDR handover). */
static void test_elastic_coord_blamed(void **state)
{
	unsigned char leave[3] = {1, 0, 0};
	struct rh w;
	uint32_t i;

	(void)state;
	setup(&w, 3, 1);
	X.leave = leave;
	X.line = "job-worker-0: slow: 1.2 Mbit/s to its peers against the job's median 900 Mbit/s";
	start_coord(&w, 5000);
	for (i = 1; i < 3; i++)
		start_member(&w, i, 0);
	pump(&w, 3, 8000);
	assert_int_equal(w.co_rc, GX_ELEFTOUT);
	for (i = 1; i < 3; i++) {
		assert_int_equal(w.s[i].rc, GX_EPREFLIGHT);
		assert_non_null(strstr(w.s[i].err, "is the coordinator"));
	}
	rh_free(&w);
}

/* Elastic 2:3, two named: one pod would remain, fewer than MIN: the job ends. */
static void test_elastic_below_min(void **state)
{
	unsigned char leave[3] = {0, 1, 1};
	struct rh w;
	uint32_t i;

	(void)state;
	setup(&w, 3, 1);
	X.leave = leave;
	X.line = "job-worker-1: no echo from 1 known-good pods; job-worker-2: no echo from 1 "
		 "known-good pods";
	start_coord(&w, 5000);
	for (i = 1; i < 3; i++)
		start_member(&w, i, 0);
	pump(&w, 3, 8000);
	assert_int_equal(w.co_rc, GX_EPREFLIGHT);
	assert_non_null(strstr(w.co_err, "1 pods remain, fewer than the 2 needed"));
	for (i = 1; i < 3; i++)
		assert_int_equal(w.s[i].rc, GX_ELEFTOUT);
	rh_free(&w);
}

/* Pods of one host share its addresses (hostNetwork; every loopback member here, which
 * reaches the coordinator's 127.0.0.9 from 127.0.0.1): no IPAM conflict. */
static void test_same_host_address(void **state)
{
	struct rdzv_config cfg;
	struct rh w;
	uint32_t i;

	(void)state;
	rh_init(&w, 3, 0, "job-addr", TOKEN, sizeof(TOKEN) - 1, 10000);
	assert_int_equal(
	    gx_addr_parse("127.0.0.9", w.port, &w.base.coord_addr, &w.base.coord_addrlen), 0);
	rh_coord_cfg(&w, &cfg);
	gx_addr_parse("127.0.0.9", 0, &cfg.listen_addr, &cfg.listen_addrlen);
	rh_start_coord_cfg(&w, &cfg);
	for (i = 1; i < 3; i++) {
		rh_member_cfg(&w, i, &cfg);
		snprintf(cfg.self.addr4, sizeof(cfg.self.addr4), "127.0.0.1");
		rh_start_member_in(&w, w.ev, i, &cfg);
	}
	pump(&w, 3, 8000);
	assert_int_equal(w.co_rc, 0);
	for (i = 1; i < 3; i++)
		assert_int_equal(w.s[i].rc, 0);
	rh_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixed_pass),		 cmocka_unit_test(test_fixed_blamed),
	    cmocka_unit_test(test_elastic_shrink),	 cmocka_unit_test(test_elastic_settle),
	    cmocka_unit_test(test_elastic_coord_blamed), cmocka_unit_test(test_elastic_below_min),
	    cmocka_unit_test(test_same_host_address),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
