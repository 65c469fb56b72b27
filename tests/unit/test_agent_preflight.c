/* SPDX-License-Identifier: MIT */
/*
 * test_agent_preflight.c - the preflight's pure part on synthetic worlds: the shape (every
 * pod in at least two measured pairs each way from 3 pods on), the figures and the job
 * median, the first pass' suspects, the vantages (unsuspected and fastest first), the
 * slow verdict against controls (a throttled pod named; a pod whose control is as slow,
 * i.e. a loaded node, cleared), the connectivity verdict (known-good pods, ARP lines, a
 * second pass that reaches it, no report) and the plan and report documents (hostile
 * ones refused).
 */
#include "agent/preflight/preflight_int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define G 10e9 /* a healthy path, bits/s */

static char *names[8] = {"job-worker-0", "job-worker-1", "job-worker-2", "job-worker-3",
			 "job-worker-4", "job-worker-5", "job-worker-6", "job-worker-7"};

/* A TCP pair a -> b that streamed at bps (0: failed with why). */
static void pair(struct check_world *w, uint32_t a, uint32_t b, double bps, const char *why)
{
	struct check_probe p;

	memset(&p, 0, sizeof(p));
	p.to = b;
	p.gid_index = -1;
	p.ok = bps > 0;
	p.median_us = 100;
	if (p.ok) {
		p.bytes = 16 << 20;
		p.stream_us = (int64_t)((double)p.bytes * 8e6 / bps);
	} else {
		snprintf(p.why, sizeof(p.why), "%s", why);
	}
	assert_int_equal(agent_check_row_add(w, a, &p), 0);
	w->rows[a].reported = 1;
}

/* The first pass of n pods (ring shape), every pair at G but pod slow's at rate. */
static void ring_world(struct check_world *w, uint32_t n, uint32_t slow, double rate)
{
	uint32_t t[8], i, k, nt;

	assert_int_equal(agent_check_world_init(w, n, 0, names), 0);
	agent_pf_shape(w, 0);
	for (i = 0; i < n; i++) {
		nt = agent_pf_targets(n, 0, i, t);
		for (k = 0; k < nt; k++)
			pair(w, i, t[k], i == slow || t[k] == slow ? rate : G * (1 + i * 0.01),
			     NULL);
	}
	assert_int_equal(agent_check_world_finish(w), 0);
}

static void test_shape(void **state)
{
	uint32_t *t = calloc(300, sizeof(*t)), *in = calloc(300, sizeof(*in)), n, i, k, nt;

	(void)state;
	assert_non_null(t);
	assert_non_null(in);
	for (n = 3; n <= 300; n++) {
		memset(in, 0, 300 * sizeof(*in));
		for (i = 0; i < n; i++) {
			nt = agent_pf_targets(n, 0, i, t);
			assert_true(nt >= 2);
			assert_true(n <= AGENT_PF_SMALL ? nt == n - 1 : nt == 2);
			for (k = 0; k < nt; k++) {
				assert_true(t[k] != i && t[k] < n);
				in[t[k]]++;
			}
		}
		for (i = 0; i < n; i++) /* every pod measured by two others at least */
			assert_true(in[i] >= 2);
	}
	assert_int_equal(agent_pf_targets(6, 1, 2, t), 5); /* all pairs on request */
	assert_int_equal(agent_pf_targets(1, 0, 0, t), 0);
	free(t);
	free(in);
}

static void test_suspects_and_vantages(void **state)
{
	struct agent_pf_fig fig[8];
	struct agent_pf_medians med;
	unsigned char sus[8];
	uint32_t vant[8 * AGENT_PF_VANTAGES];
	struct check_world w;
	char rate[32];

	(void)state;
	ring_world(&w, 8, 5, 4e6);
	agent_pf_figures(&w, NULL, fig, &med);
	assert_true(med.tcp > 9e9 && med.tcp < 11e9);
	assert_true(fig[5].out < 5e6 && fig[5].in < 5e6);
	assert_true(fig[4].out > 9e9); /* its pair with 5 is slow, its best is not */
	assert_int_equal(agent_pf_suspects(&w, 0.5, sus), 1);
	assert_int_equal(sus[5], PF_SUS_OUT | PF_SUS_IN);
	assert_true(agent_pf_vantages(&w, sus, vant) >= 1);
	/* the unsuspected pods whose worse way is the fastest: 7 (in 1.06 G, out 1.07 G), then
	 * 3 (out 1.03 G, in 1.07 G); 6 takes from 5 and 2 (1.02 G) */
	assert_int_equal(vant[5 * AGENT_PF_VANTAGES], 7);
	assert_int_equal(vant[5 * AGENT_PF_VANTAGES + 1], 3);
	assert_int_equal(vant[0], 8); /* no suspect, no vantage */
	agent_pf_rate(3.94e6, rate, sizeof(rate));
	assert_string_equal(rate, "3.9 Mbit/s");
	agent_pf_rate(9.44e9, rate, sizeof(rate));
	assert_string_equal(rate, "9.4 Gbit/s");
	agent_check_world_free(&w);
}

/*
 * A slow pod that no pod can look at again: 5 pods all pairs, 3 and 4 failed their own
 * checks (an overloaded loop), 0 and 2 are unreachable, so 1, throttled to 4 Mbit/s, is the
 * only known-good pod without a connectivity suspicion. Its suspicion has no vantage while
 * the others' do (1 looks at them), and its first pass alone must name it, as when nobody
 * has a vantage: else the second look skips it and a slow pod starts the job.
 */
static void test_slow_without_vantage(void **state)
{
	uint32_t vant[5 * AGENT_PF_VANTAGES], a, b;
	unsigned char sus[5];
	struct check_world w;
	char why[300];
	double ratio;

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 5, 0, names), 0);
	agent_pf_shape(&w, 1);
	for (a = 0; a < 5; a++)
		for (b = 0; b < 5; b++)
			if (a != b)
				pair(&w, a, b,
				     a == 0 || b == 0 || a == 2 || b == 2 ? 0
				     : a == 1 || b == 1			  ? 4e6
									  : G,
				     "connect timeout");
	w.rows[0].reported = w.rows[2].reported = 0;
	snprintf(w.rows[3].why, sizeof(w.rows[3].why), "overloaded");
	snprintf(w.rows[4].why, sizeof(w.rows[4].why), "overloaded");
	assert_int_equal(agent_check_world_finish(&w), 0);
	assert_true(agent_pf_suspects(&w, 0.5, sus) >= 1);
	assert_int_equal(sus[1] & PF_SUS_CONN, 0);
	assert_true(sus[1] & PF_SUS_SLOW);
	assert_true(agent_pf_vantages(&w, sus, vant) >= 1);
	assert_int_equal(vant[1 * AGENT_PF_VANTAGES], 5); /* nobody to look at 1 */
	assert_int_equal(vant[0 * AGENT_PF_VANTAGES], 1); /* 1 looks at the others */
	assert_int_equal(
	    agent_pf_slow_verdict(&w, NULL, NULL, 1, sus[1], 0.5, why, sizeof(why), &ratio), 1);
	assert_string_equal(why,
			    "slow: 4.0 Mbit/s to its peers against the job median 10.0 Gbit/s");
	agent_check_world_free(&w);
}

/* The second look of suspect 5 from vantages 7 and 3: each to 5 and to the other, 5 to both. */
static void look(struct check_world *ws, double to5, double ctl, double from5)
{
	assert_int_equal(agent_check_world_init(ws, 8, 0, names), 0);
	pair(ws, 7, 5, to5, "stream stalled");
	pair(ws, 7, 3, ctl, NULL);
	pair(ws, 3, 5, to5, "stream stalled");
	pair(ws, 3, 7, ctl, NULL);
	pair(ws, 5, 7, from5, NULL);
	pair(ws, 5, 3, from5, NULL);
}

static void test_slow_verdict(void **state)
{
	const uint32_t g[2] = {7, 3};
	struct check_world w, ws;
	double ratio;
	char why[300];

	(void)state;
	ring_world(&w, 8, 5, 4e6);
	/* throttled: named, with its figure and the job median */
	look(&ws, 3.9e6, 12e9, 3.8e6);
	assert_int_equal(agent_pf_slow_verdict(&w, &ws, g, 5, PF_SUS_OUT | PF_SUS_IN, 0.5, why,
					       sizeof(why), &ratio),
			 1);
	assert_non_null(strstr(why, "slow: 4.0 Mbit/s to its peers against the job median 10."));
	agent_check_world_free(&ws);
	/* fast when measured again: cleared */
	look(&ws, 11e9, 12e9, 10e9);
	assert_int_equal(agent_pf_slow_verdict(&w, &ws, g, 5, PF_SUS_OUT | PF_SUS_IN, 0.5, why,
					       sizeof(why), &ratio),
			 0);
	assert_true(ratio > 0.8 && ratio < 0.9); /* 10 G out against the 12 G control */
	agent_check_world_free(&ws);
	/* a loaded node: slow now, but so is the control in the same step: cleared */
	look(&ws, 2e9, 3e9, 2e9);
	assert_int_equal(agent_pf_slow_verdict(&w, &ws, g, 5, PF_SUS_OUT | PF_SUS_IN, 0.5, why,
					       sizeof(why), &ratio),
			 0);
	agent_check_world_free(&ws);
	/* one vantage's stream fast: not every measurement agrees, cleared */
	look(&ws, 3.9e6, 12e9, 3.8e6);
	ws.rows[3].probes[0].stream_us = ws.rows[7].probes[1].stream_us; /* 3 -> 5 at 12 G */
	assert_int_equal(
	    agent_pf_slow_verdict(&w, &ws, g, 5, PF_SUS_IN, 0.5, why, sizeof(why), &ratio), 0);
	agent_check_world_free(&ws);
	/* streams that stalled: named from its peers */
	look(&ws, 0, 12e9, 10e9);
	assert_int_equal(
	    agent_pf_slow_verdict(&w, &ws, g, 5, PF_SUS_IN, 0.5, why, sizeof(why), &ratio), 1);
	assert_non_null(strstr(why, "from its peers"));
	agent_check_world_free(&ws);
	/* no vantage at all: the first pass stands */
	assert_int_equal(
	    agent_pf_slow_verdict(&w, NULL, g, 5, PF_SUS_IN, 0.5, why, sizeof(why), &ratio), 1);
	agent_check_world_free(&w);
}

/* n pods, all pairs, every pair to `bad` failing with why (and its own pairs out too). */
static void dead_world(struct check_world *w, uint32_t n, uint32_t bad, const char *why)
{
	uint32_t i, j;

	assert_int_equal(agent_check_world_init(w, n, 0, names), 0);
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			if (i != j)
				pair(w, i, j, i == bad || j == bad ? 0 : G, why);
	assert_int_equal(agent_check_world_finish(w), 0);
}

static void test_conn_verdict(void **state)
{
	struct check_world w, w2;
	uint32_t vant[4 * AGENT_PF_VANTAGES];
	unsigned char sus[4];
	char why[300];

	(void)state;
	dead_world(&w, 4, 2, "timeout");
	assert_int_equal(agent_pf_suspects(&w, 0.5, sus), 1);
	assert_int_equal(sus[2], PF_SUS_CONN);
	assert_true(agent_pf_vantages(&w, sus, vant) >= 1);
	/* the second pass fails too: named, counting the known-good pods */
	assert_int_equal(agent_check_world_init(&w2, 4, 0, names), 0);
	pair(&w2, vant[2 * AGENT_PF_VANTAGES], 2, 0, "timeout");
	pair(&w2, vant[2 * AGENT_PF_VANTAGES + 1], 2, 0, "timeout");
	assert_int_equal(agent_pf_conn_verdict(&w, &w2, vant, 2, why, sizeof(why)), 1);
	assert_string_equal(why, "no echo from 3 known-good pods");
	agent_check_world_free(&w2);
	/* now reached by both: the first pass' failures passed */
	assert_int_equal(agent_check_world_init(&w2, 4, 0, names), 0);
	pair(&w2, vant[2 * AGENT_PF_VANTAGES], 2, G, NULL);
	pair(&w2, vant[2 * AGENT_PF_VANTAGES + 1], 2, G, NULL);
	assert_int_equal(agent_pf_conn_verdict(&w, &w2, vant, 2, why, sizeof(why)), 0);
	/* one good pod still fails with it: every pair must work */
	w2.rows[vant[2 * AGENT_PF_VANTAGES]].probes[0].ok = 0;
	assert_int_equal(agent_pf_conn_verdict(&w, &w2, vant, 2, why, sizeof(why)), 1);
	agent_check_world_free(&w2);
	agent_check_world_free(&w);
	/* layer 2 named as such */
	dead_world(&w, 4, 3, "no ARP answer from 192.168.1.13");
	assert_int_equal(agent_pf_conn_verdict(&w, NULL, NULL, 3, why, sizeof(why)), 1);
	assert_string_equal(why, "no ARP answer from 192.168.1.13 (from 3 known-good pods)");
	/* no report at all */
	w.rows[3].reported = 0;
	assert_int_equal(agent_pf_conn_verdict(&w, NULL, NULL, 3, why, sizeof(why)), 1);
	assert_string_equal(why, "no report (its gxboot did not answer the preflight)");
	agent_check_world_free(&w);
}

static void test_plan_document(void **state)
{
	uint32_t targets[2] = {3, 5};
	struct rdzv_peer peer[2];
	struct agent_pf_plan p = {.id = 7,
				  .n = 8,
				  .me = 4,
				  .ntargets = 2,
				  .targets = targets,
				  .peer = peer,
				  .port = 29411,
				  .bytes = 1 << 20,
				  .bound_ms = 1000,
				  .tries = 3,
				  .reps = 2};
	struct agent_pf_plan q;
	char *text = NULL, why[160];
	size_t len = 0, k;
	static const char *const bad[] = {
	    /* itself a target */
	    "{\"id\":1,\"n\":4,\"me\":1,\"port\":1,\"bytes\":0,\"bound_ms\":1,\"tries\":1,\"reps\":"
	    "1,\"to\":[{\"i\":1,"
	    "\"name\":\"a\",\"addr\":\"10.0.0.1\"}]}",
	    /* a target twice */
	    "{\"id\":1,\"n\":4,\"me\":0,\"port\":1,\"bytes\":0,\"bound_ms\":1,\"tries\":1,\"reps\":"
	    "1,\"to\":[{\"i\":1,"
	    "\"name\":\"a\",\"addr\":\"10.0.0.1\"},{\"i\":1,\"name\":\"a\",\"addr\":\"10.0.0.1\"}]"
	    "}",
	    /* not an address, a hostile name, too many bytes, out of range */
	    "{\"id\":1,\"n\":4,\"me\":0,\"port\":1,\"bytes\":0,\"bound_ms\":1,\"tries\":1,\"reps\":"
	    "1,\"to\":[{\"i\":1,"
	    "\"name\":\"a\",\"addr\":\"$(reboot)\"}]}",
	    "{\"id\":1,\"n\":4,\"me\":0,\"port\":1,\"bytes\":0,\"bound_ms\":1,\"tries\":1,\"reps\":"
	    "1,\"to\":[{\"i\":1,"
	    "\"name\":\"a b\",\"addr\":\"10.0.0.1\"}]}",
	    "{\"id\":1,\"n\":4,\"me\":0,\"port\":1,\"bytes\":999999999999,\"bound_ms\":1,\"tries\":"
	    "1,\"reps\":1,"
	    "\"to\":[]}",
	    "{\"id\":1,\"n\":4,\"me\":9,\"port\":1,\"bytes\":0,\"bound_ms\":1,\"tries\":1,\"reps\":"
	    "1,\"to\":[]}",
	    "[1,2,3]",
	    "",
	};

	(void)state;
	memset(peer, 0, sizeof(peer));
	snprintf(peer[0].name, sizeof(peer[0].name), "job-worker-3");
	snprintf(peer[0].iface, sizeof(peer[0].iface), "net1");
	snprintf(peer[0].addr4, sizeof(peer[0].addr4), "192.168.1.13");
	peer[0].gid_index = -1;
	snprintf(peer[1].name, sizeof(peer[1].name), "job-worker-5");
	snprintf(peer[1].addr6, sizeof(peer[1].addr6), "fd00::15");
	snprintf(peer[1].rdma_dev, sizeof(peer[1].rdma_dev), "mlx5_0");
	peer[1].rdma_port = 1;
	peer[1].gid_index = 3;
	assert_int_equal(agent_pf_plan_encode(&p, &text, &len), 0);
	assert_int_equal(agent_pf_plan_decode(text, len, &q, why, sizeof(why)), 0);
	assert_int_equal(q.id, 7);
	assert_int_equal(q.n, 8);
	assert_int_equal(q.me, 4);
	assert_int_equal(q.ntargets, 2);
	assert_int_equal(q.targets[1], 5);
	assert_string_equal(q.peer[0].addr4, "192.168.1.13");
	assert_string_equal(q.peer[1].addr6, "fd00::15");
	assert_string_equal(q.peer[1].rdma_dev, "mlx5_0");
	assert_int_equal(q.peer[1].gid_index, 3);
	assert_int_equal(q.bytes, 1 << 20);
	assert_int_equal(q.reps, 2);
	agent_pf_plan_free(&q);
	free(text);
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		assert_true(agent_pf_plan_decode(bad[k], strlen(bad[k]), &q, why, sizeof(why)) < 0);
}

static void test_report_document(void **state)
{
	struct check_world lw, w;
	uint32_t lmap[3] = {4, 2, 6};
	char *text = NULL, why[160];
	size_t len = 0;
	const struct check_probe *p;
	const char *bad;

	(void)state;
	assert_int_equal(agent_check_world_init(&lw, 3, 0, names), 0);
	pair(&lw, 0, 1, 2e9, NULL);
	pair(&lw, 0, 2, 0, "no ARP answer from 10.0.0.6");
	lw.rows[0].probes[0].proto = CHECK_RDMA; /* an RDMA WRITE to 1 too */
	lw.rows[0].probes[0].write_us = lw.rows[0].probes[0].stream_us;
	pair(&lw, 0, 1, 2e9, NULL);
	assert_int_equal(agent_pf_report_encode(&lw, lmap, 9, 12, &text, &len), 0);
	assert_int_equal(agent_check_world_init(&w, 8, 0, names), 0);
	assert_true(agent_pf_report_decode(&w, 4, 8, text, len, why, sizeof(why)) < 0); /* id */
	assert_int_equal(agent_pf_report_decode(&w, 4, 9, text, len, why, sizeof(why)), 0);
	assert_true(w.rows[4].reported);
	assert_int_equal(w.rows[4].lag_ms, 12);
	p = agent_check_find(&w, 4, 2, CHECK_TCP);
	assert_non_null(p);
	assert_true(p->ok);
	assert_int_equal(p->bytes, 16 << 20);
	p = agent_check_find(&w, 4, 6, CHECK_TCP);
	assert_non_null(p);
	assert_string_equal(p->why, "no ARP answer from 10.0.0.6");
	/* the RDMA WRITE survives the world's finish (RDMA planned where both verified it) */
	assert_int_equal(agent_check_world_finish(&w), 0);
	p = agent_check_find(&w, 4, 2, CHECK_RDMA);
	assert_non_null(p);
	assert_true(p->ok && p->write_us > 0 && p->bytes == 16 << 20);
	/* a probe to itself, out of range, or twice: the row is refused */
	bad = "{\"id\":9,\"lag_ms\":0,\"probes\":[{\"to\":4,\"proto\":\"tcp\",\"ok\":true,\"why\":"
	      "\"\","
	      "\"rtt_us\":1,\"bytes\":0,\"us\":0}]}";
	assert_true(agent_pf_report_decode(&w, 4, 9, bad, strlen(bad), why, sizeof(why)) < 0);
	bad = "{\"id\":9,\"lag_ms\":0,\"probes\":[{\"to\":8,\"proto\":\"tcp\",\"ok\":true,\"why\":"
	      "\"\","
	      "\"rtt_us\":1,\"bytes\":0,\"us\":0}]}";
	assert_true(agent_pf_report_decode(&w, 4, 9, bad, strlen(bad), why, sizeof(why)) < 0);
	bad = "{\"id\":9,\"lag_ms\":0,\"probes\":[{\"to\":1,\"proto\":\"tcp\",\"ok\":true,\"why\":"
	      "\"\","
	      "\"rtt_us\":1,\"bytes\":0,\"us\":0},{\"to\":1,\"proto\":\"tcp\",\"ok\":true,\"why\":"
	      "\"\","
	      "\"rtt_us\":1,\"bytes\":0,\"us\":0}]}";
	assert_true(agent_pf_report_decode(&w, 4, 9, bad, strlen(bad), why, sizeof(why)) < 0);
	free(text);
	agent_check_world_free(&lw);
	agent_check_world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shape),
	    cmocka_unit_test(test_suspects_and_vantages),
	    cmocka_unit_test(test_slow_without_vantage),
	    cmocka_unit_test(test_slow_verdict),
	    cmocka_unit_test(test_conn_verdict),
	    cmocka_unit_test(test_plan_document),
	    cmocka_unit_test(test_report_document),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
