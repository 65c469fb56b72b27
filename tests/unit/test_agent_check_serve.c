/* SPDX-License-Identifier: MIT */
/* test_agent_check_serve.c - the check service's budgets against a stranger: a member refuses a
 * REPORT at its header; the coordinator buffers at most CHECK_PREMAC_MAX bytes of REPORTs whose
 * MACs are not verified yet (64 connections that each declare 4 MiB and send 1 MiB: before these
 * budgets all 64 MiB were buffered); a REPORT claiming the coordinator's own rank is refused after
 * its first 36 bytes. */
#include <errno.h>
#include <arpa/inet.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/check/check_int.h"
#include "rdzv/gx/gx.h"
#include "tests/unit/check_fixture.h"

#define NCONN 64
#define SEND (1u << 20)

static void pod_start(struct cf_pod *p, struct gx_ev *ev, uint32_t self)
{
	cf_serve(p, ev, 2, self);
	p->table[0].iface[0] = p->table[1].iface[0] = '\0';
}

/* A connection from src (127.0.0.2: not the table's address) to the service. */
static int conn(struct cf_pod *p, const char *src)
{
	union gx_sockaddr sa, ss;
	socklen_t sl, ssl;
	int fd = -1;

	assert_int_equal(gx_addr_parse("127.0.0.1", p->n.port, &sa, &sl), 0);
	assert_int_equal(gx_addr_parse(src, 0, &ss, &ssl), 0);
	assert_int_equal(gx_tcp_connect(&sa, sl, &ss, ssl, &fd), 0);
	return fd;
}

/* 1 when the peer closed fd (EOF or reset), 0 while open. */
static int closed(int fd)
{
	char b[256];
	ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

static void report_head(unsigned char *f, uint32_t blen, uint32_t rank)
{
	uint32_t r = htonl(rank);

	agent_check_hdr_put(f, CHECK_REPORT, blen);
	memset(f + CHECK_HDR_LEN, 0xab, CHECK_MAC_LEN);
	memcpy(f + CHECK_HDR_LEN + CHECK_MAC_LEN, &r, 4);
}

static void test_member_refuses_report_header(void **state)
{
	unsigned char h[CHECK_HDR_LEN];
	struct gx_ev *ev = NULL;
	struct cf_pod m;
	int fd, k, shut = 0;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	pod_start(&m, ev, 1);
	fd = conn(&m, "127.0.0.2");
	cf_pump(ev, 50);
	agent_check_hdr_put(h, CHECK_REPORT,
			    CHECK_MAX_REPORT); /* the header only: no body follows */
	assert_int_equal(write(fd, h, sizeof(h)), (ssize_t)sizeof(h));
	for (k = 0; k < 40 && !shut; k++) {
		cf_pump(ev, 25);
		shut = closed(fd);
	}
	assert_true(shut); /* before: it waited for the 4 MiB body, then refused it */
	close(fd);
	cf_pod_free(&m);
	gx_ev_free(ev);
}

static void test_premac_budget(void **state)
{
	static unsigned char chunk[65536];
	unsigned char f[CHECK_HDR_LEN + CHECK_MAC_LEN + 4];
	size_t sent[NCONN] = {0}, peak = 0;
	int fd[NCONN], shut[NCONN] = {0}, i, k, nshut = 0, busy = 1;
	struct gx_ev *ev = NULL;
	struct cf_pod c;
	ssize_t w;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	pod_start(&c, ev, 0);
	report_head(f, CHECK_MAX_REPORT, 1);
	for (i = 0; i < NCONN; i++) {
		fd[i] = conn(&c, "127.0.0.2");
		cf_pump(ev, 2);
	}
	cf_pump(ev, 50);
	for (i = 0; i < NCONN; i++)
		assert_int_equal(write(fd[i], f, sizeof(f)), (ssize_t)sizeof(f));
	for (k = 0; k < 4000 && busy; k++) {
		busy = 0;
		for (i = 0; i < NCONN; i++) {
			if (shut[i] || sent[i] >= SEND)
				continue;
			w = send(fd[i], chunk, sizeof(chunk), MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w > 0)
				sent[i] += (size_t)w;
			else if (w < 0 && errno != EAGAIN)
				shut[i] = 1;
			busy = 1;
		}
		cf_pump(ev, 2);
		if (c.n.premac > peak)
			peak = c.n.premac;
	}
	cf_pump(ev, 200);
	for (i = 0; i < NCONN; i++) {
		shut[i] = shut[i] || closed(fd[i]);
		nshut += shut[i];
		close(fd[i]);
	}
	printf("# %d connections x %u bytes of REPORT before its MAC: %d closed, peak %zu bytes "
	       "buffered (bound %u)\n",
	       NCONN, SEND, nshut, peak, CHECK_PREMAC_MAX);
	assert_true(peak <= CHECK_PREMAC_MAX);
	assert_true(nshut >= NCONN - (int)(CHECK_PREMAC_MAX / SEND)); /* the rest were refused */
	assert_int_equal(c.n.nreports, 0);
	cf_pod_free(&c);
	gx_ev_free(ev);
}

/*
 * Review finding: a stranger's REPORTs fill the pre-MAC budget; a REPORT from the rank's own
 * address must still start (its MAC and rank are read before any charge) and push a
 * stranger's bytes out, instead of being refused at its first byte.
 */
static void test_premac_full_report_still_starts(void **state)
{
	static unsigned char chunk[65536];
	unsigned char f[CHECK_HDR_LEN + CHECK_MAC_LEN + 4];
	int fd[NCONN], mine, i, k;
	struct gx_ev *ev = NULL;
	struct cf_pod c;
	size_t sent = 0;
	ssize_t w;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	pod_start(&c, ev, 0);
	report_head(f, CHECK_MAX_REPORT, 1);
	for (i = 0; i < NCONN; i++) {
		fd[i] = conn(&c, "127.0.0.2");
		cf_pump(ev, 2);
		assert_int_equal(write(fd[i], f, sizeof(f)), (ssize_t)sizeof(f));
	}
	for (k = 0; k < 4000 && c.n.premac + 65536 <= CHECK_PREMAC_MAX; k++) {
		for (i = 0; i < NCONN; i++)
			(void)send(fd[i], chunk, sizeof(chunk), MSG_DONTWAIT | MSG_NOSIGNAL);
		cf_pump(ev, 2);
	}
	assert_true(c.n.premac + 65536 > CHECK_PREMAC_MAX); /* full of strangers' bytes */
	mine = conn(&c, "127.0.0.1");			    /* rank 1's own address */
	cf_pump(ev, 20);
	assert_int_equal(write(mine, f, sizeof(f)), (ssize_t)sizeof(f));
	for (k = 0; k < 200 && sent < 4 * sizeof(chunk); k++) {
		w = send(mine, chunk, sizeof(chunk), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0)
			sent += (size_t)w;
		cf_pump(ev, 5);
	}
	cf_pump(ev, 50);
	assert_false(closed(mine)); /* before: refused at its first 4 KiB */
	assert_true(sent >= 4 * sizeof(chunk));
	close(mine);
	for (i = 0; i < NCONN; i++)
		close(fd[i]);
	cf_pod_free(&c);
	gx_ev_free(ev);
}

static void test_report_own_rank_refused_early(void **state)
{
	unsigned char f[CHECK_HDR_LEN + CHECK_MAC_LEN + 4];
	struct gx_ev *ev = NULL;
	struct cf_pod c;
	int fd, k, shut = 0;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	pod_start(&c, ev, 0);
	fd = conn(&c, "127.0.0.1");
	cf_pump(ev, 50);
	report_head(f, CHECK_MAX_REPORT, 0); /* claims the coordinator's own rank */
	assert_int_equal(write(fd, f, sizeof(f)), (ssize_t)sizeof(f));
	for (k = 0; k < 40 && !shut; k++) {
		cf_pump(ev, 25);
		shut = closed(fd);
	}
	assert_true(shut);
	assert_true(c.n.premac <= 4096);
	close(fd);
	cf_pod_free(&c);
	gx_ev_free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_member_refuses_report_header),
	    cmocka_unit_test(test_premac_budget),
	    cmocka_unit_test(test_premac_full_report_still_starts),
	    cmocka_unit_test(test_report_own_rank_refused_early),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
