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
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/check/check_int.h"
#include "rdzv/gx/gx.h"
#include "rdzv/rdma/rdzv_rdma.h"
#include "tests/unit/check_fixture.h"

#define ROUND CF_ROUND

static void test_probe_echo(void **state)
{
	const struct check_probe *p;
	struct gx_ev *ev = NULL;
	struct cf_pod c;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	cf_serve(&c, ev, 2, 0);
	/* the coordinator probes "job-worker-1", which is its own service here */
	assert_int_equal(agent_check_probes_start(&c.n), 0);
	cf_run_until(ev, &c.n.probes_done, 10000);
	assert_true(c.n.probes_done);
	p = agent_check_find(&c.w, 0, 1, CHECK_TCP);
	assert_non_null(p);
	assert_true(p->ok);
	assert_true(p->min_us > 0 && p->min_us <= p->median_us && p->median_us <= p->max_us);
	cf_pod_free(&c);
	gx_ev_free(ev);
}

static void test_probe_refused(void **state)
{
	const struct check_probe *p;
	struct gx_ev *ev = NULL;
	struct cf_pod c;
	struct sockaddr_in hold = {.sin_family = AF_INET};
	int64_t t;
	int hfd;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	hold.sin_port = htons(cf_serve(&c, ev, 2, 0));
	agent_check_serve_stop(&c.n); /* nothing listens: refused, retried until the grace ends */
	/*
	 * The port stays bound, not listening: a probe's source port (bind to port 0) drawn
	 * from the ephemeral range, where the fixture's port may lie, is then never this one.
	 * Both pods are 127.0.0.1, so such a draw connected the probe to itself and its echo
	 * came back (about 6e-4 of runs, review of the test suite).
	 */
	hold.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	hfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(hfd >= 0);
	assert_int_equal(bind(hfd, (struct sockaddr *)&hold, sizeof(hold)), 0);
	c.n.t0 = gx_now_ms() - 4500;
	t = gx_now_ms();
	assert_int_equal(agent_check_probes_start(&c.n), 0);
	cf_run_until(ev, &c.n.probes_done, 10000);
	p = agent_check_find(&c.w, 0, 1, CHECK_TCP);
	assert_non_null(p);
	assert_false(p->ok);
	assert_string_equal(p->why, "refused");
	assert_true(gx_now_ms() - t >= 1500); /* retried for the probe's own 2 s window */
	close(hfd);
	cf_pod_free(&c);
	gx_ev_free(ev);
}

static void test_report_result(void **state)
{
	const char *result = "{\"world\":2}";
	struct check_probe pr;
	struct gx_ev *ev = NULL;
	struct cf_pod c, m;
	unsigned char *frame;
	char *text;
	size_t len, flen;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	cf_serve(&c, ev, 2, 0);
	cf_pod_init(&m, ev, 2, 1, c.n.port);
	m.w.rows[1].mtu = 1450;
	memset(&pr, 0, sizeof(pr));
	pr.ok = 1;
	pr.median_us = 42;
	assert_int_equal(agent_check_row_add(&m.w, 1, &pr), 0);
	assert_int_equal(gx_addr_parse("127.0.0.1", c.n.port, &m.n.coord, &m.n.coordlen), 0);
	assert_int_equal(agent_check_report_encode(&m.w, 1, &text, &len), 0);
	assert_int_equal(
	    agent_check_seal(m.n.key, CHECK_REPORT, ROUND, 1, text, len, &frame, &flen), 0);
	free(text);
	assert_int_equal(agent_check_report_start(&m.n, frame, flen), 0);
	cf_run_until(ev, &c.n.reports_done, 5000);
	assert_true(c.n.reports_done);
	assert_true(c.w.rows[1].reported);
	assert_int_equal(c.w.rows[1].mtu, 1450);
	assert_int_equal(agent_check_find(&c.w, 1, 0, CHECK_TCP)->median_us, 42);
	assert_int_equal(agent_check_serve_reply(&c.n, result, strlen(result)), 0);
	cf_run_until(ev, &m.n.result_done, 5000);
	assert_true(m.n.result_done);
	assert_string_equal(m.n.result, result);
	cf_pod_free(&m);
	cf_pod_free(&c);
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
	struct gx_ev *ev = NULL;
	struct cf_pod c;
	size_t flen;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	cf_serve(&c, ev, 2, 0);
	assert_true(service_closes(ev, c.n.port, "GET / HTTP/1.0\r\n\r\n", 18));
	agent_check_hdr_put(h, CHECK_REPORT, CHECK_MAX_REPORT + 1);
	assert_true(service_closes(ev, c.n.port, h, sizeof(h)));
	agent_check_hdr_put(h, CHECK_RESULT, 64);
	assert_true(service_closes(ev, c.n.port, h, sizeof(h)));
	memset(wrong, 8, sizeof(wrong));
	assert_int_equal(
	    agent_check_seal(wrong, CHECK_REPORT, ROUND, 1, text, strlen(text), &frame, &flen), 0);
	assert_true(service_closes(ev, c.n.port, frame, flen));
	free(frame);
	assert_int_equal(c.n.nreports, 0);
	assert_false(c.w.rows[1].reported);
	cf_pod_free(&c);
	gx_ev_free(ev);
}

/* A member's sealed report of one OK probe to the coordinator, sent from m. */
static void send_report(struct cf_pod *m)
{
	struct check_probe pr = cf_probe(0, 0, 1, NULL);
	unsigned char *frame;
	char *text;
	size_t len, flen;

	m->w.rows[m->n.self].mtu = 1450;
	assert_int_equal(agent_check_row_add(&m->w, m->n.self, &pr), 0);
	assert_int_equal(agent_check_report_encode(&m->w, m->n.self, &text, &len), 0);
	assert_int_equal(
	    agent_check_seal(m->n.key, CHECK_REPORT, ROUND, m->n.self, text, len, &frame, &flen),
	    0);
	free(text);
	assert_int_equal(agent_check_report_start(&m->n, frame, flen), 0);
}

/*
 * A REPORT that arrives while the coordinator runs its second pass
 * counts: it goes into the coordinator's world (n->late counts it), not into
 * the second pass's scratch world, which gets only the second probes (before:
 * the second pass swapped n->w, and the report was decoded into the scratch
 * world and thrown away: the pod stayed "missing").
 */
static void test_late_report_in_second_pass(void **state)
{
	unsigned char only[2] = {0, 1};
	struct check_world again;
	const struct check_probe *p;
	struct gx_ev *ev = NULL;
	struct cf_pod c, m;
	int64_t end;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	cf_serve(&c, ev, 2, 0);
	cf_pod_init(&m, ev, 2, 1, c.n.port);
	assert_int_equal(gx_addr_parse("127.0.0.1", c.n.port, &m.n.coord, &m.n.coordlen), 0);
	c.w.rows[0].reported = 1;			     /* the own row */
	assert_int_equal(agent_check_world_finish(&c.w), 0); /* the first pass is over: 1 missing */
	assert_false(c.w.rows[1].reported);
	assert_int_equal(agent_check_world_init(&again, 2, 0, cf_names()), 0);
	c.n.late_after = 1;
	assert_int_equal(agent_check_probes_again(&c.n, &again, only), 0);
	send_report(&m);
	end = gx_now_ms() + 10000;
	while ((!c.n.probes_done || !c.n.reports_done) && gx_now_ms() < end)
		gx_ev_run_until(ev, end);
	assert_true(c.n.probes_done && c.n.reports_done);
	assert_true(c.w.rows[1].reported); /* counts */
	assert_int_equal(c.w.rows[1].mtu, 1450);
	assert_int_equal(c.n.late, 1);
	assert_false(again.rows[1].reported); /* not thrown away with the scratch world */
	p = agent_check_find(&again, 0, 1, CHECK_TCP);
	assert_true(p && p->ok);		     /* the second probe */
	p = agent_check_find(&c.w, 0, 1, CHECK_TCP); /* the first pass's, as it was */
	assert_true(p && !p->ok);
	assert_string_equal(p->why, "not probed");
	agent_check_probes_reset(&c.n);
	agent_check_world_free(&again);
	cf_pod_free(&m);
	cf_pod_free(&c);
	gx_ev_free(ev);
}

/*
 * The second pass: the coordinator asks a known-good member, over its report
 * connection, to probe pods again (sealed PROBE); the member probes them and
 * answers PROBED on the same connection, into the coordinator's scratch world.
 * Pod 2 has no address in the member's table: that probe fails there. A
 * PROBED on a connection that holds no report is refused at its header; a
 * PROBE sealed with another key is ignored by the member.
 */
static void test_probe_through_member(void **state)
{
	unsigned char only[3] = {1, 0, 1}, h[CHECK_HDR_LEN], wrong[CHECK_KEY_LEN];
	struct check_world via;
	const struct check_probe *p;
	struct gx_ev *ev = NULL;
	struct cf_pod c, m;
	int64_t end;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	cf_serve(&c, ev, 3, 0);
	cf_pod_init(&m, ev, 3, 1, c.n.port);
	m.table[2].addr4[0] = '\0';
	m.n.probes_done = 1; /* its own probes are over */
	assert_int_equal(gx_addr_parse("127.0.0.1", c.n.port, &m.n.coord, &m.n.coordlen), 0);
	agent_check_hdr_put(h, CHECK_PROBED, 64);
	assert_true(service_closes(ev, c.n.port, h, sizeof(h)));
	assert_int_equal(agent_check_world_init(&via, 3, 0, cf_names()), 0);
	assert_int_equal(agent_check_serve_ask(&c.n, 1, only, &via), -ENOENT); /* no report yet */
	send_report(&m);
	end = gx_now_ms() + 5000;
	while (!agent_check_serve_has(&c.n, 1) && gx_now_ms() < end)
		cf_pump(ev, 50);
	assert_true(agent_check_serve_has(&c.n, 1));
	/* a PROBE under another key: the member ignores it and answers nothing */
	memcpy(wrong, c.n.key, sizeof(wrong));
	memset(c.n.key, 8, sizeof(c.n.key));
	assert_int_equal(agent_check_serve_ask(&c.n, 1, only, &via), 0);
	cf_run_until(ev, &c.n.probed_done, 1500);
	assert_false(c.n.probed_done);
	memcpy(c.n.key, wrong, sizeof(wrong));
	assert_int_equal(agent_check_serve_ask(&c.n, 1, only, &via), 0);
	cf_run_until(ev, &c.n.probed_done, 10000);
	assert_true(c.n.probed_done);
	assert_true(via.rows[1].reported);
	p = agent_check_find(&via, 1, 0, CHECK_TCP);
	assert_true(p && p->ok && p->median_us > 0);
	p = agent_check_find(&via, 1, 2, CHECK_TCP);
	assert_true(p && !p->ok);
	assert_string_equal(p->why, "no address");
	assert_null(
	    agent_check_find(&m.w, 1, 2, CHECK_TCP)); /* the member's own row is untouched */
	/* and it can be asked again */
	agent_check_world_free(&via);
	assert_int_equal(agent_check_world_init(&via, 3, 0, cf_names()), 0);
	assert_int_equal(agent_check_serve_ask(&c.n, 1, only, &via), 0);
	cf_run_until(ev, &c.n.probed_done, 10000);
	assert_true(c.n.probed_done);
	assert_true(via.rows[1].reported);
	assert_false(m.n.result_done); /* still waits for its RESULT */
	agent_check_world_free(&via);
	cf_pod_free(&m);
	cf_pod_free(&c);
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
	struct rdzv_rdma_ctx *ctx = NULL;
	const struct check_probe *p;
	int64_t deadline = gx_now_ms() + 15000;
	struct gx_ev *ev = NULL;
	struct check_rdma ch;
	struct cf_pod c;
	uint32_t i;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	cf_pod_init(&c, ev, 2, 0, 9); /* discard: nothing answers RDMA-CM there */
	for (i = 0; i < 2; i++) {
		snprintf(c.table[i].rdma_dev, sizeof(c.table[i].rdma_dev), "rxe0");
		c.table[i].rdma_port = 1;
		c.table[i].gid_index = 1;
	}
	assert_int_equal(rdzv_rdma_ctx_new(rdzv_rdma_cm_real(), 4096, &ctx), 0);
	agent_check_rdma_init(&c.n, ctx, 4096, &ch);
	agent_check_rdma_go(&ch);
	while (!ch.done && gx_now_ms() < deadline)
		gx_ev_run_until(ev, deadline);
	assert_true(ch.done);
	agent_check_rdma_stop(&ch);
	p = agent_check_find(&c.w, 0, 1, CHECK_RDMA);
	assert_non_null(p);
	assert_false(p->ok);
	assert_true(p->why[0] != '\0');
	print_message("rdma probe without a device: %s\n", p->why);
	assert_null(agent_check_find(&c.w, 0, 1, CHECK_TCP));
	rdzv_rdma_ctx_free(ctx);
	agent_check_world_free(&c.w);
	gx_ev_free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_probe_echo),
	    cmocka_unit_test(test_probe_refused),
	    cmocka_unit_test(test_report_result),
	    cmocka_unit_test(test_hostile_service),
	    cmocka_unit_test(test_rdma_probes),
	    cmocka_unit_test(test_late_report_in_second_pass),
	    cmocka_unit_test(test_probe_through_member),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
