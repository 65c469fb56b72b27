/* SPDX-License-Identifier: MIT */
/*
 * test_agent_check_stream.c - the preflight's throughput probe on loopback: a STREAM to a
 * check service comes back STREAMED with every byte counted (the best of 3); a stream to a
 * peer that never reads stops at its time bound with what the peer's kernel acknowledged
 * (tcp_info), neither zero nor the whole, and is not repeated; a pair whose echo failed gets no
 * stream; the service refuses a STREAM past its cap at the header.
 */
#include "tests/unit/check_fixture.h"

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

static int done;

static void on_done(struct check_net *n)
{
	(void)n;
	done = 1;
}

/* Pod 0 of 2 with an OK echo probe to pod 1 (ok) at port. */
static void prober(struct cf_pod *p, struct gx_ev *ev, uint16_t port, int ok)
{
	struct check_probe pr = cf_probe(1, 0, ok, ok ? NULL : "timeout");

	cf_pod_init(p, ev, 2, 0, port);
	assert_int_equal(agent_check_row_add(&p->w, 0, &pr), 0);
}

static void test_stream_full(void **state)
{
	struct cf_pod srv, cli;
	struct gx_ev *ev;
	uint16_t port;
	const struct check_probe *p;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	port = cf_serve(&srv, ev, 2, 1);
	prober(&cli, ev, port, 1);
	done = 0;
	assert_int_equal(agent_check_streams_start(&cli.n, 8 << 20, 5000, 3, on_done), 0);
	cf_run_until(ev, &done, 10000);
	assert_true(done);
	p = agent_check_find(&cli.w, 0, 1, CHECK_TCP);
	assert_true(p->ok);
	assert_int_equal(p->bytes, 8 << 20);
	assert_true(p->stream_us > 0);
	printf("# 8 MiB on loopback in %lld us (%.1f Gbit/s)\n", (long long)p->stream_us,
	       (double)p->bytes * 8e3 / (double)p->stream_us / 1e6);
	agent_check_streams_stop(&cli.n);
	cf_pod_free(&cli);
	cf_pod_free(&srv);
	gx_ev_free(ev);
}

/* A peer that accepts nothing and reads nothing: its kernel takes a window, then no more. */
static void test_stream_bound(void **state)
{
	union gx_sockaddr sa;
	socklen_t len;
	struct cf_pod cli;
	struct gx_ev *ev;
	const struct check_probe *p;
	int lfd = -1;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	assert_int_equal(gx_addr_parse("127.0.0.1", 0, &sa, &len), 0);
	assert_int_equal(gx_tcp_listen(&sa, len, &lfd), 0);
	len = sizeof(sa);
	assert_int_equal(getsockname(lfd, &sa.sa, &len), 0);
	prober(&cli, ev, ntohs(sa.in4.sin_port), 1);
	done = 0;
	assert_int_equal(agent_check_streams_start(&cli.n, 64 << 20, 300, 3, on_done), 0);
	cf_run_until(ev, &done, 5000);
	assert_true(done);
	p = agent_check_find(&cli.w, 0, 1, CHECK_TCP);
	assert_true(p->ok);
	assert_true(p->bytes > 0 && p->bytes < 64 << 20);
	printf("# bound 300 ms: %lld bytes acknowledged in %lld us\n", (long long)p->bytes,
	       (long long)p->stream_us);
	agent_check_streams_stop(&cli.n);
	cf_pod_free(&cli);
	close(lfd);
	gx_ev_free(ev);
}

static void test_stream_needs_echo(void **state)
{
	struct cf_pod srv, cli;
	struct gx_ev *ev;
	uint16_t port;
	const struct check_probe *p;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	port = cf_serve(&srv, ev, 2, 1);
	prober(&cli, ev, port, 0);
	done = 0;
	assert_int_equal(agent_check_streams_start(&cli.n, 1 << 20, 1000, 1, on_done), 0);
	cf_run_until(ev, &done, 3000);
	assert_true(done);
	p = agent_check_find(&cli.w, 0, 1, CHECK_TCP);
	assert_false(p->ok);
	assert_int_equal(p->bytes, 0);
	agent_check_streams_stop(&cli.n);
	cf_pod_free(&cli);
	cf_pod_free(&srv);
	gx_ev_free(ev);
}

/* A STREAM header past the cap: the service closes the connection unanswered. */
static void test_stream_cap(void **state)
{
	unsigned char h[CHECK_HDR_LEN], b;
	union gx_sockaddr sa;
	socklen_t len;
	struct cf_pod srv;
	struct gx_ev *ev;
	uint16_t port;
	int fd = -1, rc;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	port = cf_serve(&srv, ev, 2, 1);
	assert_int_equal(gx_addr_parse("127.0.0.1", port, &sa, &len), 0);
	assert_int_equal(gx_tcp_connect(&sa, len, NULL, 0, &fd), 0);
	cf_pump(ev, 50);
	agent_check_hdr_put(h, CHECK_STREAM, CHECK_STREAM_MAX + 1);
	assert_int_equal(write(fd, h, sizeof(h)), sizeof(h));
	cf_pump(ev, 100);
	rc = (int)recv(fd, &b, 1, MSG_DONTWAIT);
	assert_int_equal(rc, 0); /* closed */
	close(fd);
	cf_pod_free(&srv);
	gx_ev_free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream_full),
	    cmocka_unit_test(test_stream_bound),
	    cmocka_unit_test(test_stream_needs_echo),
	    cmocka_unit_test(test_stream_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
