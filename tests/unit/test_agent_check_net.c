/* SPDX-License-Identifier: MIT */
/*
 * test_agent_check_net.c - the network side of `gxboot check` in one process
 * on loopback: the service echoes a real TCP probe; a member's sealed report
 * reaches the coordinator's service and the coordinator's RESULT comes back
 * on the same connection; garbage, a bad MAC and a refused port are handled
 * (closed / retried / reported) without hanging; the RDMA probe child's
 * records reach the parent's loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/check_int.h"
#include "rdzv/gx.h"
#include "rdzv/rdzv_rdma.h"

#define ROUND 0xabcdef0123456789ull

static char *names[2] = {"job-worker-0", "job-worker-1"};

struct pod {
	struct check_world w;
	struct check_net n;
};

static void table_init(struct rdzv_peer t[2])
{
	uint32_t i;

	memset(t, 0, 2 * sizeof(*t));
	for (i = 0; i < 2; i++) {
		snprintf(t[i].name, sizeof(t[i].name), "%s", names[i]);
		snprintf(t[i].iface, sizeof(t[i].iface), "lo");
		snprintf(t[i].addr4, sizeof(t[i].addr4), "127.0.0.1");
		t[i].gid_index = -1;
	}
}

static void pod_init(struct pod *p, struct gx_ev *ev, uint32_t self, uint16_t port,
		     const struct rdzv_peer *table)
{
	memset(p, 0, sizeof(*p));
	assert_int_equal(check_world_init(&p->w, 2, 0, names), 0);
	p->n.ev = ev;
	p->n.w = &p->w;
	p->n.self = self;
	p->n.round = ROUND;
	memset(p->n.key, 7, sizeof(p->n.key));
	p->n.port = port;
	p->n.is_coord = self == 0;
	p->n.table = table;
	p->n.t0 = gx_now_ms();
	p->n.lfd[0] = p->n.lfd[1] = -1;
	snprintf(p->n.ifname, sizeof(p->n.ifname), "lo");
}

static void pod_free(struct pod *p)
{
	check_probes_stop(&p->n);
	check_serve_stop(&p->n);
	check_world_free(&p->w);
}

/* The coordinator's service on a free port. */
static uint16_t serve(struct pod *coord, struct gx_ev *ev, const struct rdzv_peer *table)
{
	char err[256];
	uint16_t port;
	int k;

	for (k = 0; k < 50; k++) {
		port = (uint16_t)(30000 + (getpid() * 7 + k * 131) % 20000);
		pod_init(coord, ev, 0, port, table);
		if (check_serve_start(&coord->n, err, sizeof(err)) == 0)
			return port;
		pod_free(coord);
	}
	fail_msg("no free port");
	return 0;
}

static void run_until(struct gx_ev *ev, const int *flag, int64_t ms)
{
	int64_t deadline = gx_now_ms() + ms;

	while (!*flag && gx_now_ms() < deadline)
		gx_ev_run_until(ev, deadline);
}

static void test_probe_echo(void **state)
{
	struct rdzv_peer table[2];
	const struct check_probe *p;
	struct gx_ev *ev = NULL;
	struct pod c;

	(void)state;
	table_init(table);
	assert_int_equal(gx_ev_new(&ev), 0);
	serve(&c, ev, table);
	/* the coordinator probes "job-worker-1", which is its own service here */
	assert_int_equal(check_probes_start(&c.n), 0);
	run_until(ev, &c.n.probes_done, 10000);
	assert_true(c.n.probes_done);
	p = check_find(&c.w, 0, 1, CHECK_TCP);
	assert_non_null(p);
	assert_true(p->ok);
	assert_true(p->min_us > 0 && p->min_us <= p->median_us && p->median_us <= p->max_us);
	pod_free(&c);
	gx_ev_free(ev);
}

static void test_probe_refused(void **state)
{
	struct rdzv_peer table[2];
	const struct check_probe *p;
	struct gx_ev *ev = NULL;
	struct pod c;
	int64_t t;

	(void)state;
	table_init(table);
	assert_int_equal(gx_ev_new(&ev), 0);
	serve(&c, ev, table);
	check_serve_stop(&c.n); /* nothing listens: refused, retried until the grace ends */
	c.n.t0 = gx_now_ms() - 4500;
	t = gx_now_ms();
	assert_int_equal(check_probes_start(&c.n), 0);
	run_until(ev, &c.n.probes_done, 10000);
	p = check_find(&c.w, 0, 1, CHECK_TCP);
	assert_non_null(p);
	assert_false(p->ok);
	assert_string_equal(p->why, "refused");
	assert_true(gx_now_ms() - t >= 1500); /* retried for the probe's own 2 s window */
	pod_free(&c);
	gx_ev_free(ev);
}

static void test_report_result(void **state)
{
	const char *result = "{\"world\":2}";
	struct rdzv_peer table[2];
	struct check_probe pr;
	struct gx_ev *ev = NULL;
	struct pod c, m;
	unsigned char *frame;
	char *text;
	size_t len, flen;

	(void)state;
	table_init(table);
	assert_int_equal(gx_ev_new(&ev), 0);
	serve(&c, ev, table);
	pod_init(&m, ev, 1, c.n.port, table);
	m.w.rows[1].mtu = 1450;
	memset(&pr, 0, sizeof(pr));
	pr.ok = 1;
	pr.median_us = 42;
	assert_int_equal(check_row_add(&m.w, 1, &pr), 0);
	assert_int_equal(gx_addr_parse("127.0.0.1", c.n.port, &m.n.coord, &m.n.coordlen), 0);
	assert_int_equal(check_report_encode(&m.w, 1, &text, &len), 0);
	assert_int_equal(check_seal(m.n.key, CHECK_REPORT, ROUND, 1, text, len, &frame, &flen), 0);
	free(text);
	assert_int_equal(check_report_start(&m.n, frame, flen), 0);
	run_until(ev, &c.n.reports_done, 5000);
	assert_true(c.n.reports_done);
	assert_true(c.w.rows[1].reported);
	assert_int_equal(c.w.rows[1].mtu, 1450);
	assert_int_equal(check_find(&c.w, 1, 0, CHECK_TCP)->median_us, 42);
	assert_int_equal(check_serve_reply(&c.n, result, strlen(result)), 0);
	run_until(ev, &m.n.result_done, 5000);
	assert_true(m.n.result_done);
	assert_string_equal(m.n.result, result);
	pod_free(&m);
	pod_free(&c);
	gx_ev_free(ev);
}

/* Bytes to the service on a plain socket; 1 when the service closed the connection. */
static int service_closes(struct gx_ev *ev, uint16_t port, const void *buf, size_t len)
{
	union gx_sockaddr sa;
	socklen_t sl;
	struct pollfd p;
	int fd = -1, closed = 0;
	int64_t end = gx_now_ms() + 3000;
	char b[64];

	assert_int_equal(gx_addr_parse("127.0.0.1", port, &sa, &sl), 0);
	assert_int_equal(gx_tcp_connect(&sa, sl, NULL, 0, &fd), 0);
	p.fd = fd;
	p.events = POLLOUT;
	assert_int_equal(poll(&p, 1, 1000), 1);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	while (!closed && gx_now_ms() < end) {
		gx_ev_run_until(ev, gx_now_ms() + 50);
		closed = read(fd, b, sizeof(b)) == 0;
	}
	close(fd);
	return closed;
}

static void test_hostile_service(void **state)
{
	const char *text = "{\"rank\":1,\"mtu\":1500,\"rdma\":0,\"why\":\"\",\"probes\":[]}";
	unsigned char wrong[CHECK_KEY_LEN], *frame, h[CHECK_HDR_LEN];
	struct rdzv_peer table[2];
	struct gx_ev *ev = NULL;
	struct pod c;
	size_t flen;

	(void)state;
	table_init(table);
	assert_int_equal(gx_ev_new(&ev), 0);
	serve(&c, ev, table);
	assert_true(service_closes(ev, c.n.port, "GET / HTTP/1.0\r\n\r\n", 18));
	check_hdr_put(h, CHECK_REPORT, CHECK_MAX_REPORT + 1);
	assert_true(service_closes(ev, c.n.port, h, sizeof(h)));
	check_hdr_put(h, CHECK_RESULT, 64);
	assert_true(service_closes(ev, c.n.port, h, sizeof(h)));
	memset(wrong, 8, sizeof(wrong));
	assert_int_equal(
	    check_seal(wrong, CHECK_REPORT, ROUND, 1, text, strlen(text), &frame, &flen), 0);
	assert_true(service_closes(ev, c.n.port, frame, flen));
	free(frame);
	assert_int_equal(c.n.nreports, 0);
	assert_false(c.w.rows[1].reported);
	pod_free(&c);
	gx_ev_free(ev);
}

/*
 * The RDMA probes run in this process's loop (no fork): told "go", their
 * outcomes land as RDMA probes of this pod's row. This machine has no RDMA:
 * the real seam fails the probe, which must come back as a failed probe with
 * a reason. (The real path: tests/e2e/rdma/, in the soft-RoCE VM.)
 */
static void test_rdma_probes(void **state)
{
	struct rdzv_peer table[2];
	struct check_rdma ch;
	struct rdzv_rdma_ctx *ctx = NULL;
	struct check_world w;
	struct check_net n;
	const struct check_probe *p;
	int64_t deadline = gx_now_ms() + 15000;
	uint32_t i;

	(void)state;
	memset(table, 0, sizeof(table));
	for (i = 0; i < 2; i++) {
		snprintf(table[i].name, sizeof(table[i].name), "%s", names[i]);
		snprintf(table[i].iface, sizeof(table[i].iface), "lo");
		snprintf(table[i].addr4, sizeof(table[i].addr4), "127.0.0.1");
		snprintf(table[i].rdma_dev, sizeof(table[i].rdma_dev), "rxe0");
		table[i].rdma_port = 1;
		table[i].gid_index = 1;
	}
	assert_int_equal(check_world_init(&w, 2, 0, names), 0);
	memset(&n, 0, sizeof(n));
	assert_int_equal(gx_ev_new(&n.ev), 0);
	n.w = &w;
	n.table = table;
	n.port = 9; /* discard: nothing answers RDMA-CM there */
	assert_int_equal(rdzv_rdma_ctx_new(rdzv_rdma_cm_real(), 4096, &ctx), 0);
	check_rdma_init(&n, ctx, 4096, &ch);
	check_rdma_go(&ch);
	while (!ch.done && gx_now_ms() < deadline)
		gx_ev_run_until(n.ev, deadline);
	assert_true(ch.done);
	check_rdma_stop(&ch);
	p = check_find(&w, 0, 1, CHECK_RDMA);
	assert_non_null(p);
	assert_false(p->ok);
	assert_true(p->why[0] != '\0');
	print_message("rdma probe without a device: %s\n", p->why);
	assert_null(check_find(&w, 0, 1, CHECK_TCP));
	rdzv_rdma_ctx_free(ctx);
	gx_ev_free(n.ev);
	check_world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_probe_echo),	  cmocka_unit_test(test_probe_refused),
	    cmocka_unit_test(test_report_result), cmocka_unit_test(test_hostile_service),
	    cmocka_unit_test(test_rdma_probes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
