/* SPDX-License-Identifier: MIT */
/*
 * test_agent_check_stream.c - the preflight's throughput probe on loopback: a STREAM to a
 * check service comes back STREAMED with every byte counted (the best of 3); a stream to a
 * peer that never reads stops at its time bound with what the peer's kernel acknowledged
 * (tcp_info), neither zero nor the whole, and is not repeated; a pair whose echo failed gets no
 * stream; an answer other than STREAMED fails the stream; the service refuses a STREAM past its
 * cap at the header.
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

/* A peer that takes the whole STREAM and answers anything but STREAMED (an ECHO's header, a
 * STREAMED of the wrong length): the stream fails with "bad stream answer". */
static void test_stream_bad_answer(void **state)
{
	static unsigned char sink[1 << 16];
	static const struct {
		int type;
		uint32_t len;
	} bad[] = {{CHECK_ECHO, 8}, {CHECK_STREAMED, 9}};
	unsigned char ans[CHECK_HDR_LEN + 9];
	union gx_sockaddr sa;
	socklen_t len;
	struct cf_pod cli;
	struct gx_ev *ev;
	const struct check_probe *p;
	size_t k, got;
	ssize_t r;
	int lfd = -1, fd, i;

	(void)state;
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		assert_int_equal(gx_ev_new(&ev), 0);
		assert_int_equal(gx_addr_parse("127.0.0.1", 0, &sa, &len), 0);
		assert_int_equal(gx_tcp_listen(&sa, len, &lfd), 0);
		len = sizeof(sa);
		assert_int_equal(getsockname(lfd, &sa.sa, &len), 0);
		prober(&cli, ev, ntohs(sa.in4.sin_port), 1);
		done = 0;
		assert_int_equal(agent_check_streams_start(&cli.n, 100000, 2000, 1, on_done), 0);
		fd = -1;
		got = 0;
		for (i = 0; i < 400 && got < CHECK_HDR_LEN + 100000; i++) {
			cf_pump(ev, 5);
			if (fd < 0)
				fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			while (fd >= 0 && (r = recv(fd, sink, sizeof(sink), 0)) > 0)
				got += (size_t)r;
		}
		assert_int_equal(got, CHECK_HDR_LEN + 100000);
		memset(ans, 0, sizeof(ans));
		agent_check_hdr_put(ans, bad[k].type, bad[k].len);
		assert_int_equal(write(fd, ans, CHECK_HDR_LEN + bad[k].len),
				 CHECK_HDR_LEN + bad[k].len);
		cf_run_until(ev, &done, 2000);
		assert_true(done);
		p = agent_check_find(&cli.w, 0, 1, CHECK_TCP);
		assert_false(p->ok);
		assert_string_equal(p->why, "bad stream answer");
		assert_int_equal(p->bytes, 0);
		agent_check_streams_stop(&cli.n);
		cf_pod_free(&cli);
		close(fd);
		close(lfd);
		gx_ev_free(ev);
	}
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
	    cmocka_unit_test(test_stream_full),	      cmocka_unit_test(test_stream_bound),
	    cmocka_unit_test(test_stream_needs_echo), cmocka_unit_test(test_stream_bad_answer),
	    cmocka_unit_test(test_stream_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
