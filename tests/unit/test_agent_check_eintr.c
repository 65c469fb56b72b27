/* SPDX-License-Identifier: MIT */
/*
 * test_agent_check_eintr.c - a `gxboot check` connection survives interrupted socket calls:
 * every other recv and send in this process fails EINTR once (the link wraps them), as a
 * signal arriving mid-call makes it, and an echo probe still measures its round trips and a
 * member's REPORT still gets its RESULT. The calls are retried, not taken for a closed
 * connection ("connection closed", a probe failed "Interrupted system call").
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
#include <sys/socket.h>
#include <unistd.h>

#include "agent/check/check_int.h"
#include "rdzv/gx/gx.h"
#include "tests/unit/check_fixture.h"

ssize_t __real_recv(int fd, void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);
ssize_t __real_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);

static int inject;
static unsigned long eintr_recv, eintr_send;

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	static int flip;

	if (inject && (flip ^= 1)) {
		eintr_recv++;
		errno = EINTR;
		return -1;
	}
	return __real_recv(fd, buf, len, flags);
}

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
	static int flip;

	if (inject && (flip ^= 1)) {
		eintr_send++;
		errno = EINTR;
		return -1;
	}
	return __real_send(fd, buf, len, flags);
}

static int setup(void **state)
{
	(void)state;
	eintr_recv = eintr_send = 0;
	inject = 1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	inject = 0;
	return 0;
}

/* The echo probe and the service's echo: every round trip through interrupted calls. */
static void test_probe_echo_interrupted(void **state)
{
	const struct check_probe *p;
	struct gx_ev *ev = NULL;
	struct cf_pod c;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	cf_serve(&c, ev, 2, 0);
	assert_int_equal(agent_check_probes_start(&c.n), 0);
	cf_run_until(ev, &c.n.probes_done, 10000);
	assert_true(c.n.probes_done);
	p = agent_check_find(&c.w, 0, 1, CHECK_TCP);
	assert_non_null(p);
	assert_string_equal(p->why, "");
	assert_true(p->ok);
	printf("  echo probe: %lu recv and %lu send calls interrupted\n", eintr_recv, eintr_send);
	assert_true(eintr_recv >= CHECK_ECHO_K && eintr_send >= CHECK_ECHO_K);
	cf_pod_free(&c);
	gx_ev_free(ev);
}

/* A member's REPORT to the coordinator's service and its RESULT back, interrupted. */
static void test_report_result_interrupted(void **state)
{
	const char *result = "{\"world\":2}";
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
	assert_int_equal(gx_addr_parse("127.0.0.1", c.n.port, &m.n.coord, &m.n.coordlen), 0);
	assert_int_equal(agent_check_report_encode(&m.w, 1, &text, &len), 0);
	assert_int_equal(
	    agent_check_seal(m.n.key, CHECK_REPORT, CF_ROUND, 1, text, len, &frame, &flen), 0);
	free(text);
	assert_int_equal(agent_check_report_start(&m.n, frame, flen), 0);
	cf_run_until(ev, &c.n.reports_done, 5000);
	assert_true(c.n.reports_done);
	assert_int_equal(c.w.rows[1].mtu, 1450);
	assert_int_equal(agent_check_serve_reply(&c.n, result, strlen(result)), 0);
	cf_run_until(ev, &m.n.result_done, 5000);
	assert_true(m.n.result_done);
	assert_string_equal(m.n.result, result);
	assert_string_equal(m.n.result_why, ""); /* no retry: the first connection carried it */
	printf("  report and result: %lu recv and %lu send calls interrupted\n", eintr_recv,
	       eintr_send);
	assert_true(eintr_recv >= 2 && eintr_send >= 2);
	cf_pod_free(&m);
	cf_pod_free(&c);
	gx_ev_free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_probe_echo_interrupted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_result_interrupted, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
