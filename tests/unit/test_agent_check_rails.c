/* SPDX-License-Identifier: MIT */
/*
 * test_agent_check_rails.c - `gxboot check --rails`, the pure
 * part: the JOIN rails text ("dev:port/netdev/addr,..."), the rail set of a
 * world (union by name, strverscmp order, bounded), rail probes through the
 * report and result documents (rails travel by name, so two pods' indices may
 * differ), the summary, the per-rail matrices and which pod's rail is broken.
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
#include "rdzv/rdma/rdzv_rdma.h"
#include "tests/unit/check_fixture.h"

static char *names4[] = {"job-worker-0", "job-worker-1", "job-worker-2", "job-worker-3"};

static void test_items(void **state)
{
	struct check_rail r;

	(void)state;
	assert_int_equal(agent_check_rails_item(":0/net2/10.0.2.5", 0, &r), 0);
	assert_string_equal(r.name, "net2");
	assert_string_equal(r.dev, "");
	assert_int_equal(r.port, 0);
	assert_string_equal(r.iface, "net2");
	assert_string_equal(r.addr, "10.0.2.5");
	assert_int_equal(agent_check_rails_item("mlx5_0:1/net1/192.168.1.2,mlx5_3:2//", 1, &r), 0);
	assert_string_equal(r.name, "mlx5_3:2"); /* no netdev: named by its port */
	assert_string_equal(r.dev, "mlx5_3");
	assert_int_equal(r.port, 2);
	assert_string_equal(r.addr, "");
	assert_int_equal(agent_check_rails_item("mlx5_0:1/net1/fd00:4::11", 0, &r), 0);
	assert_string_equal(r.addr, "fd00:4::11");
	assert_int_equal(agent_check_rails_item("mlx5_0:1/net1/1.2.3.4", 1, &r), -ENOENT);
	assert_int_equal(agent_check_rails_item("", 0, &r), -ENOENT);
	assert_int_equal(agent_check_rails_item(NULL, 0, &r), -ENOENT);
	/* malformed items */
	assert_int_equal(agent_check_rails_item("net1", 0, &r), -EINVAL);
	assert_int_equal(agent_check_rails_item("net1/10.0.0.1", 0, &r), -EINVAL);
	assert_int_equal(agent_check_rails_item("/net1/10.0.0.1", 0, &r), -EINVAL);
	assert_int_equal(agent_check_rails_item(":0//", 0, &r), -EINVAL);
	assert_int_equal(agent_check_rails_item(":300/net1/10.0.0.1", 0, &r), -EINVAL);
	assert_int_equal(agent_check_rails_item(":x/net1/10.0.0.1", 0, &r), -EINVAL);
	assert_int_equal(agent_check_rails_item(":0/net1/999.0.0.1", 0, &r), -EINVAL);
	assert_int_equal(agent_check_rails_item(":0/averyveryverylongname/10.0.0.1", 0, &r),
			 -EINVAL);
	assert_int_equal(agent_check_rails_item(":0/net1/10.0.0.1/x", 0, &r), -EINVAL);
	/* find by name, skipping a malformed item */
	assert_int_equal(
	    agent_check_rails_find("bad,:0/net1/10.0.1.5,:0/net3/10.0.3.5", "net3", &r), 0);
	assert_string_equal(r.addr, "10.0.3.5");
	assert_int_equal(agent_check_rails_find(":0/net1/10.0.1.5", "net10", &r), -ENOENT);
	assert_int_equal(agent_check_rails_find("", "net1", &r), -ENOENT);
}

static void test_index(void **state)
{
	struct check_world w;
	char name[16];
	int k;

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 2, 0, names4), 0);
	assert_int_equal(agent_check_rail_index(&w, "net2"), 1);
	assert_int_equal(agent_check_rail_index(&w, "mlx5_0:1"), 2);
	assert_int_equal(agent_check_rail_index(&w, "net2"), 1);
	assert_string_equal(agent_check_rail_name(&w, 2), "mlx5_0:1");
	assert_string_equal(agent_check_rail_name(&w, 0), "");
	assert_string_equal(agent_check_rail_name(&w, 3), "");
	assert_string_equal(agent_check_rail_name(&w, -1), "");
	assert_int_equal(agent_check_rail_index(&w, ""), -EINVAL);
	assert_int_equal(agent_check_rail_index(&w, "net 1"), -EINVAL);
	assert_int_equal(agent_check_rail_index(&w, "net1/x"), -EINVAL);
	assert_int_equal(agent_check_rail_index(&w, "net1\n"), -EINVAL);
	for (k = 3; k <= CHECK_MAX_RAILS; k++) {
		snprintf(name, sizeof(name), "r%d", k);
		assert_int_equal(agent_check_rail_index(&w, name), k);
	}
	assert_int_equal(agent_check_rail_index(&w, "one-too-many"), -E2BIG);
	assert_int_equal(agent_check_rail_index(&w, "r7"), 7);
	agent_check_world_free(&w);
}

static void test_plan(void **state)
{
	struct rdzv_peer t[3];
	struct check_world w;
	size_t off = 0;
	int k;

	(void)state;
	memset(t, 0, sizeof(t));
	gx_strlcpy(t[0].rails, ":0/net1/10.0.1.1,:0/net10/10.0.10.1,:0/net2/10.0.2.1",
		   sizeof(t[0].rails));
	gx_strlcpy(t[1].rails, ":0/net1/10.0.1.2,:0/net3/10.0.3.2,junk", sizeof(t[1].rails));
	/* t[2]: no rails (netdetect failed) */
	assert_int_equal(agent_check_world_init(&w, 3, 0, names4), 0);
	assert_int_equal(agent_check_rails_plan(&w, t, 3), 4);
	assert_string_equal(w.rails[0], "net1");
	assert_string_equal(w.rails[1], "net2");
	assert_string_equal(w.rails[2], "net3");
	assert_string_equal(w.rails[3], "net10");
	/* bounded: a peer listing more rails than CHECK_MAX_RAILS */
	t[0].rails[0] = '\0';
	for (k = 0; k < 20; k++)
		off += (size_t)snprintf(t[0].rails + off, sizeof(t[0].rails) - off, "%s:0/n%d/",
					k ? "," : "", k);
	assert_int_equal(agent_check_rails_plan(&w, t, 1), CHECK_MAX_RAILS);
	agent_check_world_free(&w);
}

/* 4 pods, rails net1..net3; every probe of rail `bad_rail` touching pod `bad` fails. */
static void fill(struct check_world *w, uint32_t bad, int bad_rail)
{
	struct check_probe p;
	uint32_t i, j;
	int k, ok;

	for (k = 1; k <= 3; k++) {
		char name[16];

		snprintf(name, sizeof(name), "net%d", k);
		assert_int_equal(agent_check_rail_index(w, name), k);
	}
	for (i = 0; i < w->n; i++) {
		w->rows[i].reported = 1;
		for (j = 0; j < w->n; j++) {
			if (i == j)
				continue;
			for (k = 0; k <= 3; k++) {
				ok = !(k == bad_rail && (i == bad || j == bad));
				p = cf_probe(j, k, ok, ok ? NULL : "timeout");
				assert_int_equal(agent_check_row_add(w, i, &p), 0);
			}
		}
	}
}

static void test_summary_and_broken(void **state)
{
	struct check_world w;
	struct check_summary s;
	char buf[256];

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 4, 0, names4), 0);
	fill(&w, 2, 3);
	agent_check_summarize(&w, &s);
	assert_int_equal(s.tcp_ok, 12);
	assert_int_equal(s.tcp_total, 12);
	assert_int_equal(s.rail_ok, 30);
	assert_int_equal(s.rail_total, 36);
	assert_false(s.all_ok);
	assert_string_equal(
	    s.line, "12/12 pairs OK over TCP, RDMA: no device on 4 pods, rails: 30/36 probes OK");
	assert_int_equal(agent_check_rails_broken(&w, buf, sizeof(buf)), 1);
	assert_string_equal(buf, " job-worker-2 (rail net3)");
	/* a rail probe of a bootstrap pair is found only under its rail */
	assert_true(agent_check_find(&w, 0, 2, CHECK_TCP)->ok);
	assert_false(agent_check_find_rail(&w, 0, 2, CHECK_TCP, 3)->ok);
	assert_null(agent_check_find_rail(&w, 0, 2, CHECK_RDMA, 3));
	/* a rail index beyond the world's rails is refused */
	{
		struct check_probe p = cf_probe(1, 4, 1, NULL);

		assert_int_equal(agent_check_row_add(&w, 0, &p), -EINVAL);
	}
	agent_check_world_free(&w);

	/* all good */
	assert_int_equal(agent_check_world_init(&w, 4, 0, names4), 0);
	fill(&w, 0, -1);
	agent_check_summarize(&w, &s);
	assert_true(s.all_ok);
	assert_int_equal(agent_check_rails_broken(&w, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	agent_check_world_free(&w);

	/* the broken pod failed its own checks (net1 down): named by its why, not here */
	assert_int_equal(agent_check_world_init(&w, 4, 0, names4), 0);
	fill(&w, 2, 3);
	gx_strlcpy(w.rows[2].why, "net1 is down (no carrier)", sizeof(w.rows[2].why));
	assert_int_equal(agent_check_rails_broken(&w, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	agent_check_world_free(&w);

	/* two pods: no majority, both named */
	assert_int_equal(agent_check_world_init(&w, 2, 0, names4), 0);
	fill(&w, 1, 2);
	assert_int_equal(agent_check_rails_broken(&w, buf, sizeof(buf)), 2);
	assert_string_equal(buf, " job-worker-0 (rail net2) job-worker-1 (rail net2)");
	agent_check_world_free(&w);
}

/* Reports carry rails by name: another world with another rail order maps them right. */
static void test_report_roundtrip(void **state)
{
	struct check_world a, b;
	const struct check_probe *p;
	char *text = NULL, why[160];
	size_t len;

	(void)state;
	assert_int_equal(agent_check_world_init(&a, 4, 0, names4), 0);
	assert_int_equal(agent_check_world_init(&b, 4, 0, names4), 0);
	fill(&a, 2, 3);
	assert_int_equal(agent_check_rail_index(&b, "net3"), 1); /* b knows net3 first */
	assert_int_equal(agent_check_report_encode(&a, 1, &text, &len), 0);
	assert_non_null(strstr(text, "\"rail\":\"net3\""));
	assert_int_equal(agent_check_report_decode(&b, 1, text, len, why, sizeof(why)), 0);
	assert_int_equal(b.rows[1].nprobes, 12);
	assert_int_equal(b.nrails, 3);
	p = agent_check_find_rail(&b, 1, 2, CHECK_TCP, 1); /* net3 in b */
	assert_non_null(p);
	assert_false(p->ok);
	assert_string_equal(p->why, "timeout");
	p = agent_check_find_rail(&b, 1, 2, CHECK_TCP, agent_check_rail_index(&b, "net1"));
	assert_true(p->ok);
	assert_int_equal(p->median_us, 101);
	free(text);
	agent_check_world_free(&a);
	agent_check_world_free(&b);
}

static void test_report_hostile(void **state)
{
	static const char *bad[] = {
	    /* the same (to, proto, rail) twice */
	    "{\"rank\":1,\"mtu\":0,\"rdma\":0,\"why\":\"\",\"probes\":["
	    "{\"to\":0,\"proto\":\"tcp\",\"ok\":true,\"why\":\"\",\"min_us\":1,\"median_us\":1,"
	    "\"max_us\":1,\"write_us\":0,\"gid_index\":-1,\"mtu\":0,\"rail\":\"net1\"},"
	    "{\"to\":0,\"proto\":\"tcp\",\"ok\":true,\"why\":\"\",\"min_us\":1,\"median_us\":1,"
	    "\"max_us\":1,\"write_us\":0,\"gid_index\":-1,\"mtu\":0,\"rail\":\"net1\"}]}",
	    /* a rail name that is no name */
	    "{\"rank\":1,\"mtu\":0,\"rdma\":0,\"why\":\"\",\"probes\":["
	    "{\"to\":0,\"proto\":\"tcp\",\"ok\":true,\"why\":\"\",\"min_us\":1,\"median_us\":1,"
	    "\"max_us\":1,\"write_us\":0,\"gid_index\":-1,\"mtu\":0,\"rail\":\"net 1\"}]}",
	    /* not a string */
	    "{\"rank\":1,\"mtu\":0,\"rdma\":0,\"why\":\"\",\"probes\":["
	    "{\"to\":0,\"proto\":\"tcp\",\"ok\":true,\"why\":\"\",\"min_us\":1,\"median_us\":1,"
	    "\"max_us\":1,\"write_us\":0,\"gid_index\":-1,\"mtu\":0,\"rail\":3}]}",
	};
	struct check_world w;
	char why[160], text[8192], one[400];
	size_t k, off;

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 2, 0, names4), 0);
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		assert_int_equal(
		    agent_check_report_decode(&w, 1, bad[k], strlen(bad[k]), why, sizeof(why)),
		    GX_EPROTO);
		assert_int_equal(w.rows[1].nprobes, 0);
	}
	/* more distinct rails than CHECK_MAX_RAILS */
	off = (size_t)snprintf(text, sizeof(text),
			       "{\"rank\":1,\"mtu\":0,\"rdma\":0,\"why\":\"\","
			       "\"probes\":[");
	for (k = 0; k <= CHECK_MAX_RAILS; k++) {
		snprintf(one, sizeof(one),
			 "%s{\"to\":0,\"proto\":\"tcp\",\"ok\":true,\"why\":\"\",\"min_us\":1,"
			 "\"median_us\":1,\"max_us\":1,\"write_us\":0,\"gid_index\":-1,\"mtu\":0,"
			 "\"rail\":\"r%zu\"}",
			 k ? "," : "", k);
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s", one);
	}
	snprintf(text + off, sizeof(text) - off, "]}");
	assert_int_equal(agent_check_report_decode(&w, 1, text, strlen(text), why, sizeof(why)),
			 GX_EPROTO);
	agent_check_world_free(&w);
}

/* The coordinator's result document keeps rails and their counts. */
static void test_result_roundtrip(void **state)
{
	struct check_world a, b;
	struct check_summary s, s2;
	json_t *doc, *back = NULL;
	char *text, why[160];

	(void)state;
	assert_int_equal(agent_check_world_init(&a, 4, 0, names4), 0);
	assert_int_equal(agent_check_world_init(&b, 4, 0, names4), 0);
	fill(&a, 1, 2);
	agent_check_summarize(&a, &s);
	doc = agent_check_result_json(&a, &s, NULL, 0, 0);
	assert_non_null(doc);
	text = json_dumps(doc, JSON_COMPACT);
	assert_int_equal(
	    agent_check_result_decode(&b, text, strlen(text), &back, &s2, why, sizeof(why)), 0);
	assert_int_equal(s2.rail_ok, 30);
	assert_int_equal(s2.rail_total, 36);
	assert_false(s2.all_ok);
	assert_string_equal(s2.line, s.line);
	assert_int_equal(b.nrails, 3);
	assert_false(
	    agent_check_find_rail(&b, 3, 1, CHECK_TCP, agent_check_rail_index(&b, "net2"))->ok);
	assert_true(
	    agent_check_find_rail(&b, 3, 0, CHECK_TCP, agent_check_rail_index(&b, "net2"))->ok);
	free(text);
	json_decref(back);
	json_decref(doc);
	/* a result without rails (older coordinator): no rail counts */
	agent_check_world_free(&a);
	assert_int_equal(agent_check_world_init(&a, 2, 0, names4), 0);
	a.rows[0].reported = a.rows[1].reported = 1;
	agent_check_summarize(&a, &s);
	doc = agent_check_result_json(&a, &s, NULL, 0, 0);
	assert_null(json_object_get(json_object_get(doc, "summary"), "rails_total"));
	json_decref(doc);
	agent_check_world_free(&a);
	agent_check_world_free(&b);
}

static void test_matrices(void **state)
{
	struct check_world w;
	char *out = NULL, *boot, *rail1;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(agent_check_world_init(&w, 4, 0, names4), 0);
	fill(&w, 2, 3);
	assert_int_equal(agent_check_rail_index(&w, "net10"), 4); /* no probes: no matrix */
	f = open_memstream(&out, &len);
	assert_non_null(f);
	agent_check_print_matrix(f, &w, CHECK_TCP);
	agent_check_print_rails(f, &w);
	agent_check_print_failures(f, &w, 0);
	fclose(f);
	/* the bootstrap matrix has no ✗; rails in name order; net3's row 2 all ✗ */
	boot = strstr(out, "TCP (rows: from");
	rail1 = strstr(out, "TCP rail net1 (");
	assert_non_null(boot);
	assert_non_null(rail1);
	assert_true(boot < rail1);
	*rail1 = '\0';
	assert_null(strstr(boot, "✗ timeout"));
	*rail1 = 'T';
	assert_true(strstr(out, "TCP rail net1 (") < strstr(out, "TCP rail net2 ("));
	assert_true(strstr(out, "TCP rail net2 (") < strstr(out, "TCP rail net3 ("));
	assert_null(strstr(out, "rail net10"));
	assert_null(strstr(out, "RDMA rail"));
	assert_non_null(
	    strstr(out, "\n2       ✗ timeout ✗ timeout -         ✗ timeout  job-worker-2\n"));
	assert_non_null(strstr(out, "  ✗ job-worker-0 -> job-worker-2 tcp rail net3: timeout\n"));
	free(out);
	agent_check_world_free(&w);
}

static void test_rail_peer(void **state)
{
	struct rdzv_peer src, out;

	(void)state;
	memset(&src, 0, sizeof(src));
	gx_strlcpy(src.name, "job-worker-1", sizeof(src.name));
	gx_strlcpy(src.iface, "net1", sizeof(src.iface));
	gx_strlcpy(src.addr4, "192.168.1.11", sizeof(src.addr4));
	gx_strlcpy(src.rdma_dev, "mlx5_0", sizeof(src.rdma_dev));
	src.rdma_port = 1;
	src.gid_index = 3;
	gx_strlcpy(src.rails,
		   "mlx5_0:1/net1/192.168.1.11,mlx5_3:2/net2/fd00:2::11,:0/net3/10.0.3.11,"
		   "mlx5_4:1/net4/",
		   sizeof(src.rails));
	assert_int_equal(agent_check_rail_peer(&src, "net2", &out), 0);
	assert_string_equal(out.name, "job-worker-1");
	assert_string_equal(out.iface, "net2");
	assert_string_equal(out.addr4, "");
	assert_string_equal(out.addr6, "fd00:2::11");
	assert_string_equal(out.rdma_dev, "mlx5_3");
	assert_int_equal(out.rdma_port, 2);
	assert_int_equal(out.gid_index, -1);
	assert_int_equal(agent_check_rail_peer(&src, "net1", &out), 0);
	assert_string_equal(out.addr4, "192.168.1.11");
	/* a netdev rail has no device; a rail without address cannot be reached */
	assert_int_equal(agent_check_rail_peer(&src, "net3", &out), -ENOENT);
	assert_int_equal(agent_check_rail_peer(&src, "net4", &out), -ENOENT);
	assert_int_equal(agent_check_rail_peer(&src, "net5", &out), -ENOENT);
}

/*
 * The RDMA probes (in the loop) probe rail k <-> rail k where both ends have a
 * device on it (no RDMA here: the real seam fails, the failure comes back as
 * that rail's RDMA probe); a rail one end lacks a device on is not probed.
 */
static void test_rdma_rail_probes(void **state)
{
	struct rdzv_peer table[2];
	struct check_rdma ch;
	struct rdzv_rdma_ctx *ctx = NULL;
	struct check_world w;
	struct check_net n;
	const struct check_probe *p;
	int64_t deadline = gx_now_ms() + 20000;
	uint32_t i;

	(void)state;
	memset(table, 0, sizeof(table));
	for (i = 0; i < 2; i++) {
		snprintf(table[i].name, sizeof(table[i].name), "%s", names4[i]);
		snprintf(table[i].iface, sizeof(table[i].iface), "lo");
		snprintf(table[i].addr4, sizeof(table[i].addr4), "127.0.0.1");
		/* no bootstrap device: only the rails are probed */
		snprintf(table[i].rails, sizeof(table[i].rails), "rxe0:1/lo/127.0.0.%u%s", i + 1,
			 i ? ",:0/net2/127.0.0.9" : ",rxe1:1/net2/127.0.0.8");
	}
	assert_int_equal(agent_check_world_init(&w, 2, 0, names4), 0);
	assert_int_equal(agent_check_rails_plan(&w, table, 2), 2);
	memset(&n, 0, sizeof(n));
	assert_int_equal(gx_ev_new(&n.ev), 0);
	n.w = &w;
	n.table = table;
	n.port = 9; /* discard: nothing answers RDMA-CM there */
	assert_int_equal(rdzv_rdma_ctx_new(rdzv_rdma_cm_real(), 4096, &ctx), 0);
	agent_check_rdma_init(&n, ctx, 4096, &ch);
	agent_check_rdma_go(&ch);
	while (!ch.done && gx_now_ms() < deadline)
		gx_ev_run_until(n.ev, deadline);
	assert_true(ch.done);
	agent_check_rdma_stop(&ch);
	assert_null(agent_check_find(&w, 0, 1, CHECK_RDMA));
	p = agent_check_find_rail(&w, 0, 1, CHECK_RDMA, agent_check_rail_index(&w, "lo"));
	assert_non_null(p);
	assert_false(p->ok);
	assert_true(p->why[0] != '\0');
	print_message("rdma rail probe without a device: %s\n", p->why);
	assert_null(
	    agent_check_find_rail(&w, 0, 1, CHECK_RDMA, agent_check_rail_index(&w, "net2")));
	assert_int_equal(w.rows[0].nprobes, 1);
	rdzv_rdma_ctx_free(ctx);
	gx_ev_free(n.ev);
	agent_check_world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_items),
	    cmocka_unit_test(test_index),
	    cmocka_unit_test(test_plan),
	    cmocka_unit_test(test_summary_and_broken),
	    cmocka_unit_test(test_report_roundtrip),
	    cmocka_unit_test(test_report_hostile),
	    cmocka_unit_test(test_result_roundtrip),
	    cmocka_unit_test(test_matrices),
	    cmocka_unit_test(test_rail_peer),
	    cmocka_unit_test(test_rdma_rail_probes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
