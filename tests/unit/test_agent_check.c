/* SPDX-License-Identifier: MIT */
/*
 * test_agent_check.c - `gxboot check`'s pure part over fixtures in
 * tests/fixtures/check/: reports go through the real wire path (seal,
 * header, open, decode) into the world; then the summary line, the failed
 * pairs, the MTU warning, matrix cells, and the result document's round trip
 * are checked against each fixture's "expect". Hostile reports and frames
 * (oversized, bad MAC, wrong round, rank out of range, wrong shape) are
 * rejected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/check/check_int.h"
#include "rdzv/gx/gx.h"
#include "tests/unit/check_fixture.h"

#define FIX "tests/fixtures/check/"
#define ROUND CF_ROUND

static const unsigned char key[CHECK_KEY_LEN] = CF_KEY;

static char *matrix_text(const struct check_world *w, int proto)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	assert_non_null(m);
	agent_check_print_matrix(m, w, proto);
	agent_check_print_failures(m, w, 0);
	fclose(m);
	return buf;
}

static void expect_failed(const struct check_world *w, json_t *failed)
{
	size_t k, nfail = 0;
	uint32_t i;
	json_t *x;

	for (i = 0; i < w->n; i++)
		for (k = 0; k < w->rows[i].nprobes; k++)
			nfail += !w->rows[i].probes[k].ok;
	assert_int_equal(nfail, json_array_size(failed));
	json_array_foreach(failed, k, x)
	{
		const struct check_probe *p;
		int proto = strcmp(json_string_value(json_array_get(x, 2)), "rdma") == 0;

		p = agent_check_find(w, (uint32_t)json_integer_value(json_array_get(x, 0)),
				     (uint32_t)json_integer_value(json_array_get(x, 1)), proto);
		assert_non_null(p);
		assert_false(p->ok);
		assert_string_equal(p->why, json_string_value(json_array_get(x, 3)));
	}
}

static void expect_cells(const struct check_world *w, json_t *cells)
{
	char cell[64];
	size_t k;
	json_t *x;

	json_array_foreach(cells, k, x)
	{
		agent_check_cell(
		    agent_check_find(w, (uint32_t)json_integer_value(json_array_get(x, 0)),
				     (uint32_t)json_integer_value(json_array_get(x, 1)), CHECK_TCP),
		    cell, sizeof(cell));
		assert_string_equal(cell, json_string_value(json_array_get(x, 2)));
	}
}

/* The coordinator's result document decodes on a member to the same summary and probes. */
static void expect_result_round_trip(const struct check_world *w, const struct check_summary *s)
{
	struct check_world m;
	struct check_summary ms;
	json_t *doc, *back = NULL;
	char *text, why[160];
	uint32_t i;

	doc = agent_check_result_json(w, s, NULL, 0, 0);
	assert_non_null(doc);
	text = json_dumps(doc, JSON_COMPACT);
	assert_non_null(text);
	assert_int_equal(agent_check_world_init(&m, w->n, w->star, w->names), 0);
	assert_int_equal(
	    agent_check_result_decode(&m, text, strlen(text), &back, &ms, why, sizeof(why)), 0);
	assert_string_equal(ms.line, s->line);
	assert_int_equal(ms.all_ok, s->all_ok);
	assert_int_equal(ms.tcp_ok, s->tcp_ok);
	for (i = 0; i < w->n; i++) {
		assert_int_equal(m.rows[i].nprobes, w->rows[i].nprobes);
		assert_int_equal(m.rows[i].reported, w->rows[i].reported);
		assert_string_equal(m.rows[i].why, w->rows[i].why);
	}
	json_decref(back);
	json_decref(doc);
	free(text);
	agent_check_world_free(&m);
}

static void run_fixture(const char *file)
{
	struct check_summary s;
	struct cf_fx f;
	json_t *expect;
	char warn[512] = "", *mx, *body;
	const char *want_warn;

	cf_fx_load(&f, file);
	cf_fx_deliver_all(&f);
	expect = json_object_get(f.doc, "expect");
	agent_check_summarize(&f.w, &s);
	assert_string_equal(s.line, json_string_value(json_object_get(expect, "line")));
	assert_int_equal(s.all_ok, json_is_true(json_object_get(expect, "ok")));
	expect_failed(&f.w, json_object_get(expect, "failed"));
	want_warn = json_string_value(json_object_get(expect, "mtu_warning"));
	assert_int_equal(agent_check_mtu_warning(&f.w, warn, sizeof(warn)), want_warn[0] != '\0');
	if (want_warn[0])
		assert_string_equal(warn, want_warn);
	expect_cells(&f.w, json_object_get(expect, "cells"));
	mx = matrix_text(&f.w, CHECK_TCP);
	body = strstr(mx, "from\\to"); /* after the legend: cells and the failures */
	assert_non_null(body);
	assert_int_equal(strstr(body, "✗") != NULL, !s.all_ok);
	free(mx);
	expect_result_round_trip(&f.w, &s);
	cf_fx_free(&f);
}

static void test_all_ok(void **state)
{
	(void)state;
	run_fixture(FIX "all_ok_4.json");
}

static void test_net1_down(void **state)
{
	struct cf_fx f;
	char *mx;

	(void)state;
	run_fixture(FIX "net1_down_4.json");
	/* the matrix names the broken pod's own reason */
	cf_fx_load(&f, FIX "net1_down_4.json");
	cf_fx_deliver_all(&f);
	mx = matrix_text(&f.w, CHECK_TCP);
	assert_non_null(strstr(mx, "job-worker-2: net1 is down (administratively)"));
	assert_non_null(strstr(mx, "✗ job-worker-0 -> job-worker-2 tcp: no address"));
	free(mx);
	cf_fx_free(&f);
}

static void test_mtu_low(void **state)
{
	(void)state;
	run_fixture(FIX "mtu_low_4.json");
}

static void test_star_missing(void **state)
{
	(void)state;
	run_fixture(FIX "star_missing_4.json");
}

static void test_rdma_mixed(void **state)
{
	struct cf_fx f;
	char *mx;

	(void)state;
	run_fixture(FIX "rdma_mixed_4.json");
	cf_fx_load(&f, FIX "rdma_mixed_4.json");
	cf_fx_deliver_all(&f);
	mx = matrix_text(&f.w, CHECK_RDMA);
	assert_non_null(strstr(mx, "RDMA (rows: from"));
	assert_non_null(strstr(mx, "✗ connect: r"));
	assert_non_null(strstr(mx, "✗ job-worker-1 -> job-worker-2 rdma: connect: rejected"));
	free(mx);
	cf_fx_free(&f);
}

/* A pod whose RDMA-CM is not available: probes to it are not counted, the summary names it. */
static void test_rdma_unavailable(void **state)
{
	(void)state;
	run_fixture(FIX "rdma_unavailable_4.json");
}

static void test_hostile_reports(void **state)
{
	json_t *reports, *x;
	struct cf_fx f;
	char *text;
	size_t k;

	(void)state;
	cf_fx_load(&f, FIX "hostile_reports.json");
	reports = json_object_get(f.doc, "reports");
	assert_true(json_array_size(reports) > 10);
	json_array_foreach(reports, k, x)
	{
		text = json_dumps(json_object_get(x, "payload"), JSON_COMPACT);
		assert_non_null(text);
		if (cf_deliver(&f.w, 1, ROUND, text, strlen(text)) != GX_EPROTO)
			fail_msg("accepted: %s", json_string_value(json_object_get(x, "what")));
		assert_false(f.w.rows[1].reported);
		assert_int_equal(f.w.rows[1].nprobes, 0);
		free(text);
	}
	/* the good shape of the same report is accepted (the fixtures are near misses) */
	text = "{\"rank\":1,\"mtu\":1500,\"rdma\":0,\"why\":\"\",\"probes\":[]}";
	assert_int_equal(cf_deliver(&f.w, 1, ROUND, text, strlen(text)), 0);
	assert_true(f.w.rows[1].reported);
	cf_fx_free(&f);
}

static void test_frames(void **state)
{
	const char *text = "{\"rank\":1,\"mtu\":1500,\"rdma\":0,\"why\":\"\",\"probes\":[]}";
	unsigned char *frame = NULL, h[CHECK_HDR_LEN];
	struct check_world w;
	char *names[4] = {"a", "b", "c", "d"}, *big;
	const char *payload;
	size_t flen, plen;
	uint32_t rank, blen;
	int type;

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 4, 0, names), 0);
	/* wrong round: another rendezvous' report */
	assert_int_equal(cf_deliver(&w, 1, ROUND + 1, text, strlen(text)), GX_EMAC);
	/* bad MAC: one payload byte flipped */
	assert_int_equal(
	    agent_check_seal(key, CHECK_REPORT, ROUND, 1, text, strlen(text), &frame, &flen), 0);
	frame[flen - 2] ^= 1;
	assert_int_equal(agent_check_open(key, CHECK_REPORT, ROUND, 4, frame + CHECK_HDR_LEN,
					  flen - CHECK_HDR_LEN, &rank, &payload, &plen),
			 GX_EMAC);
	/* a REPORT's MAC does not open as a RESULT */
	frame[flen - 2] ^= 1;
	assert_int_equal(agent_check_open(key, CHECK_RESULT, ROUND, 4, frame + CHECK_HDR_LEN,
					  flen - CHECK_HDR_LEN, &rank, &payload, &plen),
			 GX_EMAC);
	free(frame);
	/* rank out of range, correctly MAC'd */
	assert_int_equal(
	    agent_check_seal(key, CHECK_REPORT, ROUND, 9, text, strlen(text), &frame, &flen), 0);
	assert_int_equal(agent_check_open(key, CHECK_REPORT, ROUND, 4, frame + CHECK_HDR_LEN,
					  flen - CHECK_HDR_LEN, &rank, &payload, &plen),
			 GX_EPROTO);
	free(frame);
	/* headers: oversized, wrong magic, other version, echo bounds, unknown type */
	agent_check_hdr_put(h, CHECK_REPORT, CHECK_MAX_REPORT + 1);
	assert_int_equal(agent_check_hdr_get(h, &type, &blen), GX_EPROTO);
	agent_check_hdr_put(h, CHECK_REPORT, CHECK_MAX_REPORT);
	assert_int_equal(agent_check_hdr_get(h, &type, &blen), 0);
	agent_check_hdr_put(h, CHECK_ECHO, CHECK_ECHO_MAX + 1);
	assert_int_equal(agent_check_hdr_get(h, &type, &blen), GX_EPROTO);
	agent_check_hdr_put(h, CHECK_ECHO, CHECK_ECHO_MIN - 1);
	assert_int_equal(agent_check_hdr_get(h, &type, &blen), GX_EPROTO);
	agent_check_hdr_put(h, 9, 20);
	assert_int_equal(agent_check_hdr_get(h, &type, &blen), GX_EPROTO);
	agent_check_hdr_put(h, CHECK_ECHO, 32);
	h[4] = 2;
	assert_int_equal(agent_check_hdr_get(h, &type, &blen), GX_EVERSION);
	h[4] = CHECK_VERSION;
	h[0] ^= 0xff;
	assert_int_equal(agent_check_hdr_get(h, &type, &blen), GX_EPROTO);
	/* oversized payloads are refused when sealing and when decoding */
	big = calloc(1, CHECK_MAX_REPORT + 16);
	assert_non_null(big);
	memset(big, ' ', CHECK_MAX_REPORT + 15);
	assert_int_equal(
	    agent_check_seal(key, CHECK_REPORT, ROUND, 1, big, CHECK_MAX_REPORT, &frame, &flen),
	    -EMSGSIZE);
	assert_int_equal(agent_check_report_decode(&w, 1, big, CHECK_MAX_REPORT + 1, big, 64),
			 GX_EPROTO);
	free(big);
	agent_check_world_free(&w);
}

static void test_result_hostile(void **state)
{
	static const char *const bad[] = {
	    "[]",
	    "{\"world\":5}",
	    "{\"world\":4,\"summary\":{}}",
	    "{\"world\":4,\"summary\":{\"ok\":true,\"line\":\"x\",\"tcp_ok\":1,\"tcp_total\":1,"
	    "\"rdma_ok\":0,\"rdma_total\":0,\"no_rdma\":0,\"rdma_unavailable\":0,\"missing\":0},"
	    "\"peers\":[],\"probes\":[]}",
	};
	struct check_world w;
	struct check_summary s;
	char *names[4] = {"a", "b", "c", "d"}, why[160];
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		assert_int_equal(agent_check_world_init(&w, 4, 0, names), 0);
		assert_int_equal(agent_check_result_decode(&w, bad[k], strlen(bad[k]), NULL, &s,
							   why, sizeof(why)),
				 GX_EPROTO);
		agent_check_world_free(&w);
	}
}

static void test_expected_pairs(void **state)
{
	struct check_world w;
	char *names[5] = {"a", "b", "c", "d", "e"};
	uint32_t i, j, n = 0;

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 5, 1, names), 0);
	for (i = 0; i < 5; i++)
		for (j = 0; j < 5; j++)
			n += (uint32_t)agent_check_pair_probed(&w, i, j);
	assert_int_equal(n, 8); /* star: 2 (N - 1) */
	w.star = 0;
	for (n = 0, i = 0; i < 5; i++)
		for (j = 0; j < 5; j++)
			n += (uint32_t)agent_check_pair_probed(&w, i, j);
	assert_int_equal(n, 20); /* all: N (N - 1) */
	assert_false(agent_check_pair_probed(&w, 2, 2));
	assert_false(agent_check_pair_probed(&w, 5, 0));
	agent_check_world_free(&w);
}

/* A world of n pods where every pair is OK except from -> to (timeout). */
static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* 20 pods: one-character cells; 70 pods: no matrix, failures only, result of failures only. */
static void test_matrix_sizes(void **state)
{
	char *names[70], *mx, *text, why[160];
	struct check_world w, m;
	struct check_summary s, ms;
	json_t *doc;

	(void)state;
	cf_full_world(&w, 20, names, 3, 17);
	mx = matrix_text(&w, CHECK_TCP);
	if (getenv("GX_TEST_SHOW"))
		fputs(mx, stderr);
	/* legend + header + 20 rows + 1 failure */
	assert_int_equal(count_lines(mx), 23);
	assert_non_null(strstr(mx, "\n3       ✓  ✓  ✓  -  ✓ "));
	assert_non_null(strstr(mx, " ✓  ✗  ✓  ✓   job-worker-3\n"));
	assert_non_null(strstr(mx, "from\\to 0  1  2 "));
	assert_non_null(strstr(mx, " 18 19\n"));
	assert_non_null(strstr(mx, "✗ job-worker-3 -> job-worker-17 tcp: timeout"));
	free(mx);
	agent_check_summarize(&w, &s);
	assert_string_equal(s.line, "379/380 pairs OK over TCP, RDMA: no device on 20 pods");
	agent_check_world_free(&w);
	cf_free_names(names, 20);

	cf_full_world(&w, 70, names, 69, 0);
	mx = matrix_text(&w, CHECK_TCP);
	assert_null(strstr(mx, "from\\to"));
	assert_non_null(strstr(mx, "matrix omitted"));
	assert_int_equal(count_lines(mx), 2);
	free(mx);
	agent_check_summarize(&w, &s);
	doc = agent_check_result_json(&w, &s, NULL, 0, 1);
	text = json_dumps(doc, JSON_COMPACT);
	assert_int_equal(json_array_size(json_object_get(doc, "probes")), 1);
	assert_int_equal(agent_check_world_init(&m, 70, 0, names), 0);
	assert_int_equal(
	    agent_check_result_decode(&m, text, strlen(text), NULL, &ms, why, sizeof(why)), 0);
	assert_false(ms.all_ok);
	assert_string_equal(ms.line, s.line);
	assert_int_equal(m.rows[69].nprobes, 1);
	assert_int_equal(m.rows[69].probes[0].to, 0);
	free(text);
	json_decref(doc);
	agent_check_world_free(&m);
	agent_check_world_free(&w);
	cf_free_names(names, 70);
}

/* A row prints in rank order of its targets, whatever order the probes finished in. */
static void test_row_order(void **state)
{
	char *names[3] = {"a", "b", "c"}, *buf = NULL;
	struct check_probe p;
	struct check_world w;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 3, 0, names), 0);
	memset(&p, 0, sizeof(p));
	p.to = 2;
	p.ok = 1;
	p.median_us = 7;
	assert_int_equal(agent_check_row_add(&w, 0, &p), 0);
	p.to = 1;
	p.ok = 0;
	snprintf(p.why, sizeof(p.why), "refused");
	assert_int_equal(agent_check_row_add(&w, 0, &p), 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	agent_check_print_row(f, &w, 0);
	fclose(f);
	assert_non_null(strstr(buf, "-> b"));
	assert_true(strstr(buf, "-> b") < strstr(buf, "-> c"));
	assert_non_null(strstr(buf, "✗ refused"));
	assert_non_null(strstr(buf, "✓ median 7 µs"));
	if (getenv("GX_TEST_SHOW"))
		fputs(buf, stderr);
	free(buf);
	agent_check_world_free(&w);
}

/*
 * A timed-out probe from or to a pod whose loop stalled (its
 * report's lag_ms) blames that pod as overloaded, not the network; the lag
 * survives the report round trip; a timeout between healthy pods stays one.
 */
static void test_overload(void **state)
{
	struct check_world w, back;
	struct check_probe p;
	char *names[6], why[128], *text = NULL;
	const struct check_probe *q;
	size_t len = 0;

	(void)state;
	cf_full_world(&w, 6, names, 1, 2); /* 1 -> 2 timed out */
	memset(&p, 0, sizeof(p));
	p.to = 4;
	snprintf(p.why, sizeof(p.why), "no echo");
	w.rows[3].probes[3] = p; /* 3 -> 4 (row 3's 4th probe is to 4) */
	w.rows[2].lag_ms = 2500; /* pod 2 was starved */
	w.rows[5].lag_ms = 1500; /* so was pod 5, but its probes all came through */
	assert_int_equal(agent_check_report_encode(&w, 2, &text, &len), 0);
	assert_int_equal(agent_check_world_init(&back, 6, 0, names), 0);
	assert_int_equal(agent_check_report_decode(&back, 2, text, len, why, sizeof(why)), 0);
	assert_int_equal(back.rows[2].lag_ms, 2500);
	free(text);
	agent_check_world_free(&back);

	agent_check_world_overload(&w);
	q = agent_check_find(&w, 1, 2, CHECK_TCP);
	assert_non_null(q);
	assert_string_equal(q->why, "overloaded");
	q = agent_check_find(&w, 3, 4, CHECK_TCP);
	assert_non_null(q);
	assert_string_equal(q->why, "no echo"); /* nobody stalled: a real failure */
	assert_true(strncmp(w.rows[2].why, CHECK_OVERLOADED, strlen(CHECK_OVERLOADED)) == 0);
	assert_string_equal(w.rows[1].why, "");
	assert_string_equal(w.rows[4].why, "");
	assert_string_equal(w.rows[5].why, "");
	agent_check_world_free(&w);
	cf_free_names(names, 6);
}

/*
 * A pod that stopped midway (case_check_dead's race): 0 -> 3 and 1 -> 3 failed, 2 -> 3 and
 * 3's own probes came through before. Pod 3 is the common end: it is blamed, not two paths.
 * A single failed pair between good pods stays a path.
 */
static void test_blame_common_end(void **state)
{
	struct check_world w;
	char *names[4], text[1024];

	(void)state;
	cf_full_world(&w, 4, names, 0, 3);
	w.rows[1].probes[2].ok = 0; /* 1 -> 3 */
	snprintf(w.rows[1].probes[2].why, sizeof(w.rows[1].probes[2].why), "no echo");
	assert_int_equal(w.rows[1].probes[2].to, 3);
	assert_true(agent_check_blame_text(&w, text, sizeof(text)) == 1);
	assert_non_null(strstr(text, "job-worker-3 ("));
	assert_null(strstr(text, "path"));
	agent_check_world_free(&w);
	cf_free_names(names, 4);
	cf_full_world(&w, 4, names, 0, 3); /* only 0 -> 3 */
	assert_true(agent_check_blame_text(&w, text, sizeof(text)) == 1);
	assert_non_null(strstr(text, "job-worker-0 -> job-worker-3 (path: timeout)"));
	agent_check_world_free(&w);
	cf_free_names(names, 4);
}

/*
 * Star mode, 0 <-> 2 fails both ways, 0 <-> 1 passes. Pod 2 has no good
 * pair: it is blamed. When a known-good third pod reached it in the second pass (row
 * second, "reached" in the result), the failed pairs are the path's, not pod 2's; the
 * result carries "reached" to the members, whose blame then agrees.
 */
static void test_blame_reached(void **state)
{
	struct check_probe p01 = cf_probe(1, 0, 1, NULL), p10 = cf_probe(0, 0, 1, NULL);
	struct check_probe p02 = cf_probe(2, 0, 0, "timeout"), p20 = cf_probe(0, 0, 0, "timeout");
	struct check_world w, m;
	struct check_summary s, ms;
	json_t *doc, *back = NULL;
	char text[1024], why[160], *res;
	uint32_t i;

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 3, 1, cf_names()), 0);
	for (i = 0; i < 3; i++)
		w.rows[i].reported = 1;
	assert_int_equal(agent_check_row_add(&w, 0, &p01), 0);
	assert_int_equal(agent_check_row_add(&w, 1, &p10), 0);
	assert_int_equal(agent_check_row_add(&w, 0, &p02), 0);
	assert_int_equal(agent_check_row_add(&w, 2, &p20), 0);
	assert_int_equal(agent_check_blame_text(&w, text, sizeof(text)), 1);
	assert_string_equal(text, " job-worker-2 (no pod reaches it or is reached by it)");
	w.rows[2].second = CHECK_SECOND_OK;
	assert_int_equal(agent_check_blame_text(&w, text, sizeof(text)), 2);
	assert_string_equal(text, " job-worker-0 -> job-worker-2 (path: timeout)"
				  " job-worker-2 -> job-worker-0 (path: timeout)");
	agent_check_summarize(&w, &s);
	doc = agent_check_result_json(&w, &s, NULL, 0, 0);
	res = json_dumps(doc, JSON_COMPACT);
	assert_non_null(res);
	assert_int_equal(agent_check_world_init(&m, 3, 1, cf_names()), 0);
	assert_int_equal(
	    agent_check_result_decode(&m, res, strlen(res), &back, &ms, why, sizeof(why)), 0);
	assert_int_equal(m.rows[2].second, CHECK_SECOND_OK);
	assert_int_equal(m.rows[1].second, CHECK_SECOND_NONE);
	assert_int_equal(agent_check_blame_text(&m, text, sizeof(text)), 2);
	json_decref(back);
	json_decref(doc);
	free(res);
	agent_check_world_free(&m);
	agent_check_world_free(&w);
}

/*
 * Above CHECK_MATRIX_MAX the result carries only the failed probes: a member
 * blamed with no OK pair in sight and named every pod (seen at 120 pods with
 * one cut net1: 1 of 120 pods named the cut pod alone). The result's peers
 * carry the coordinator's known-good set, and a member names what it names.
 */
static void test_blame_failures_only_result(void **state)
{
	struct check_world w, m;
	struct check_summary s, ms;
	json_t *doc, *back = NULL;
	char *names[70], text[1024], mtext[1024], why[160], *res;
	uint32_t j;

	(void)state;
	cf_full_world(&w, 70, names, 0, 5);
	for (j = 1; j < 70; j++) /* every pod's probe to 5 fails (its row's probe k: to k or k+1) */
		if (j != 5) {
			struct check_probe *p = &w.rows[j].probes[j < 5 ? 4 : 5];

			assert_int_equal(p->to, 5);
			p->ok = 0;
			snprintf(p->why, sizeof(p->why), "timeout");
		}
	assert_int_equal(agent_check_blame_text(&w, text, sizeof(text)), 1);
	assert_string_equal(text, " job-worker-5 (no pod reaches it or is reached by it)");
	agent_check_summarize(&w, &s);
	doc = agent_check_result_json(&w, &s, NULL, 0, 1);
	res = json_dumps(doc, JSON_COMPACT);
	assert_non_null(res);
	assert_int_equal(agent_check_world_init(&m, 70, 0, names), 0);
	assert_int_equal(
	    agent_check_result_decode(&m, res, strlen(res), &back, &ms, why, sizeof(why)), 0);
	assert_int_equal(m.rows[1].nprobes, 1); /* failures only */
	assert_int_equal(agent_check_blame_text(&m, mtext, sizeof(mtext)), 1);
	assert_string_equal(mtext, text);
	json_decref(back);
	json_decref(doc);
	free(res);
	agent_check_world_free(&m);
	agent_check_world_free(&w);
	cf_free_names(names, 70);
}

/* The PROBE request and the PROBED answer: round trips, and what is refused. */
static void test_probe_request(void **state)
{
	unsigned char only[4] = {0, 1, 0, 1}, got[4];
	struct check_world w, back;
	struct check_probe p = cf_probe(3, 0, 0, "timeout");
	char why[160], *text;
	uint64_t id = 0;
	size_t len;

	(void)state;
	assert_int_equal(agent_check_probe_req_encode(7, only, 4, &text, &len), 0);
	assert_int_equal(agent_check_probe_req_decode(text, len, 4, 0, &id, got, why, sizeof(why)),
			 0);
	assert_int_equal(id, 7);
	assert_memory_equal(got, only, 4);
	/* a member never probes itself: a request naming it is refused */
	assert_int_equal(agent_check_probe_req_decode(text, len, 4, 3, &id, got, why, sizeof(why)),
			 GX_EPROTO);
	free(text);
	assert_int_equal(agent_check_probe_req_decode("{\"id\":1,\"targets\":[1,1]}", 25, 4, 0, &id,
						      got, why, sizeof(why)),
			 GX_EPROTO);
	assert_int_equal(agent_check_probe_req_decode("{\"id\":1,\"targets\":[4]}", 23, 4, 0, &id,
						      got, why, sizeof(why)),
			 GX_EPROTO);
	assert_int_equal(agent_check_probe_req_decode("{\"id\":1,\"targets\":[]}", 22, 4, 0, &id,
						      got, why, sizeof(why)),
			 GX_EPROTO);
	assert_int_equal(agent_check_world_init(&w, 4, 0, cf_names()), 0);
	assert_int_equal(agent_check_row_add(&w, 1, &p), 0);
	assert_int_equal(agent_check_probed_encode(&w, 1, 7, &text, &len), 0);
	assert_int_equal(agent_check_world_init(&back, 4, 0, cf_names()), 0);
	assert_int_equal(agent_check_probed_decode(&back, 1, 8, text, len, why, sizeof(why)),
			 GX_EPROTO);
	assert_false(back.rows[1].reported);
	assert_int_equal(agent_check_probed_decode(&back, 1, 7, text, len, why, sizeof(why)), 0);
	assert_string_equal(agent_check_find(&back, 1, 3, CHECK_TCP)->why, "timeout");
	free(text);
	agent_check_world_free(&back);
	agent_check_world_free(&w);
}

/* A star chosen by default (N > 64) says so in the summary line. */
static void test_star_default_line(void **state)
{
	struct check_world w;
	struct check_summary s;
	char *names[3] = {"a", "b", "c"};

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 3, 1, names), 0);
	w.star_default = 1;
	assert_int_equal(agent_check_world_finish(&w), 0);
	agent_check_summarize(&w, &s);
	assert_non_null(strstr(s.line, "; star mode: the default above 64 pods (--mode all "
				       "probes every pair)"));
	w.star_default = 0; /* --mode star: the user asked for it */
	agent_check_summarize(&w, &s);
	assert_null(strstr(s.line, "star"));
	agent_check_world_free(&w);
}

/* check --report's page: self-contained, names, ✗ for the failed pair, blame. */
static void test_html(void **state)
{
	struct check_world w;
	struct check_summary s;
	char *names[5], *buf = NULL;
	const char *params[] = {"pods", "5", "mode", "all <pairs>"};
	const char *warn[] = {"MTU & friends"};
	struct check_probe p;
	size_t len = 0;
	FILE *f;

	(void)state;
	cf_full_world(&w, 5, names, 1, 3); /* 1 -> 3 timed out */
	agent_check_summarize(&w, &s);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(agent_check_html_write(f, &w, &s, params, 4, warn, 1), 0);
	fclose(f);
	assert_non_null(strstr(buf, "<!DOCTYPE html>"));
	assert_non_null(strstr(buf, "job-worker-4"));
	assert_non_null(strstr(buf, "all &lt;pairs&gt;"));
	assert_non_null(strstr(buf, "MTU &amp; friends"));
	assert_non_null(strstr(buf, "19/20 pairs OK over TCP"));
	assert_non_null(strstr(buf, "title=\"job-worker-1 → job-worker-3: timeout\">✗</td>"));
	assert_non_null(strstr(buf, "job-worker-1 -&gt; job-worker-3 (path: timeout)"));
	assert_null(strstr(buf, "<script"));
	assert_null(strstr(buf, "http"));
	assert_null(strstr(buf, "src="));
	assert_null(strstr(buf, "rail"));
	free(buf);

	/* a rail: its own tab, its failure in the list */
	memset(&p, 0, sizeof(p));
	p.to = 2;
	p.rail = 1;
	snprintf(p.why, sizeof(p.why), "no rail at peer");
	assert_int_equal(agent_check_rail_index(&w, "net2"), 1);
	assert_int_equal(agent_check_row_add(&w, 0, &p), 0);
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(agent_check_html_write(f, &w, &s, params, 4, warn, 1), 0);
	fclose(f);
	assert_non_null(strstr(buf, "<label for=t1>TCP rail net2</label>"));
	assert_non_null(strstr(buf, "id=p1"));
	assert_non_null(
	    strstr(buf, "title=\"job-worker-0 → job-worker-2: no rail at peer\">✗</td>"));
	free(buf);
	agent_check_world_free(&w);
	cf_free_names(names, 5);
}

/*
 * --mode sampled: k offsets from the seed (the same on every pod),
 * every pod probes k peers and the coordinator, is probed by k; the coverage
 * counted matches the pairs probed; the line states it.
 */
static void test_sampled(void **state)
{
	struct check_world w, v;
	struct check_summary s;
	char *names[40];
	uint32_t i, j, out, in;
	size_t n = 0;

	(void)state;
	for (i = 0; i < 40; i++)
		names[i] = "p";
	assert_int_equal(agent_check_world_init(&w, 40, 0, names), 0);
	assert_int_equal(agent_check_world_init(&v, 40, 0, names), 0);
	agent_check_world_sample(&w, 5, 42);
	agent_check_world_sample(&v, 5, 42);
	assert_int_equal(w.sample_k, 5);
	assert_memory_equal(w.offs, v.offs, sizeof(w.offs));
	for (i = 0; i < 40; i++) {
		for (out = in = 0, j = 0; j < 40; j++) {
			n += (size_t)agent_check_pair_probed(&w, i, j);
			out += (uint32_t)agent_check_pair_probed(&w, i, j);
			in += (uint32_t)agent_check_pair_probed(&w, j, i);
		}
		if (i) {
			assert_true(agent_check_pair_probed(&w, i, 0) &&
				    agent_check_pair_probed(&w, 0, i));
			assert_in_range(out, 5, 6);
			assert_in_range(in, 5, 6);
		}
	}
	assert_int_equal(n, agent_check_pairs_probed(&w));
	assert_true(n < 40 * 39 / 4);
	assert_int_equal(agent_check_world_finish(&w), 0);
	agent_check_summarize(&w, &s);
	assert_non_null(strstr(s.line, "; sampled: 5 peers per pod + the coordinator, "));
	agent_check_world_sample(&v, 64, 7); /* k >= n - 1: every pair */
	assert_int_equal(agent_check_pairs_probed(&v), 40 * 39);
	agent_check_world_free(&w);
	agent_check_world_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_all_ok),
	    cmocka_unit_test(test_net1_down),
	    cmocka_unit_test(test_mtu_low),
	    cmocka_unit_test(test_star_missing),
	    cmocka_unit_test(test_rdma_mixed),
	    cmocka_unit_test(test_rdma_unavailable),
	    cmocka_unit_test(test_hostile_reports),
	    cmocka_unit_test(test_frames),
	    cmocka_unit_test(test_result_hostile),
	    cmocka_unit_test(test_expected_pairs),
	    cmocka_unit_test(test_matrix_sizes),
	    cmocka_unit_test(test_row_order),
	    cmocka_unit_test(test_overload),
	    cmocka_unit_test(test_star_default_line),
	    cmocka_unit_test(test_blame_common_end),
	    cmocka_unit_test(test_html),
	    cmocka_unit_test(test_sampled),
	    cmocka_unit_test(test_blame_reached),
	    cmocka_unit_test(test_probe_request),
	    cmocka_unit_test(test_blame_failures_only_result),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
