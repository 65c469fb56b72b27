/* SPDX-License-Identifier: MIT */
/*
 * test_rdzv_loop.c - in-process rendezvous: one coordinator and N members in
 * ONE gx_ev loop on loopback: N = 1, 2, 64, 1024 (256 under
 * valgrind), late coordinator, restarts, wrong tokens, garbage and silent
 * connections, conflicts, missing and unreachable peers.
 */
#include "rdzv/rdzv_coord_int.h"
#include "tests/unit/rdzv_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>

static const unsigned char TOKEN[] = "0123456789abcdef-test-token";
static const unsigned char BAD_TOKEN[] = "fedcba9876543210-not-the-token";

static int valgrind(void)
{
	const char *v = getenv("GX_TEST_VALGRIND");

	return v && *v == '1';
}

static void w_init(struct rh *w, uint32_t n, int64_t deadline_ms)
{
	rh_init(w, n, 0, "job-1", TOKEN, sizeof(TOKEN) - 1, deadline_ms);
	w->base.deadline_ms = w->deadline + 1000; /* members: the coordinator's comes first */
}

static void count_done(struct rh *w)
{
	if (++w->ndone >= w->want)
		gx_ev_stop(w->ev, 0);
}

static void start_coord(struct rh *w)
{
	struct rdzv_config cfg;

	rh_coord_cfg(w, &cfg);
	rh_start_coord_cfg(w, &cfg);
}

static void start_member_cfg(struct rh *w, uint32_t i, const struct rdzv_config *cfg)
{
	rh_start_member_in(w, w->ev, i, cfg);
}

static void start_member(struct rh *w, uint32_t i)
{
	struct rdzv_config cfg;

	rh_member_cfg(w, i, &cfg);
	start_member_cfg(w, i, &cfg);
}

/* Run the loop until `want` dones or ms elapse. In 50 ms slices: gx_ev's
 * poll_timeout() lets a timer that is already overdue wait for the run_until
 * deadline (seen under valgrind); slices bound that (reported to the lead). */
static void pump(struct rh *w, int want, int64_t ms)
{
	int64_t until = gx_now_ms() + ms;

	w->want = want;
	while (w->ndone < w->want && gx_now_ms() < until)
		gx_ev_run_until(w->ev, gx_now_ms() + 50 < until ? gx_now_ms() + 50 : until);
}

static void expect_all_ok(struct rh *w)
{
	uint32_t i;

	assert_int_equal(w->co_done, 1);
	assert_int_equal(w->co_rc, 0);
	assert_int_equal(w->co_res.world, w->n);
	assert_string_equal(w->co_res.master_addr, "127.0.0.1");
	for (i = 1; i < w->n; i++) {
		assert_int_equal(w->s[i].done, 1);
		assert_int_equal(w->s[i].rc, 0);
		assert_int_equal(w->s[i].res.rank, (int)i);
		assert_int_equal(w->s[i].res.world, w->n);
		assert_string_equal(w->s[i].res.master_addr, "127.0.0.1");
		assert_string_equal(w->s[i].res.coord.name, w->names[0]);
	}
}

static void run_n(uint32_t n)
{
	struct rh w;
	uint32_t i;
	int64_t t0, t1;

	w_init(&w, n, 20000);
	start_coord(&w);
	t0 = gx_now_ms();
	for (i = 1; i < n; i++)
		start_member(&w, i);
	t1 = gx_now_ms();
	pump(&w, (int)n, 19000);
	/* printed, not asserted: timing assertions flake on a loaded machine */
	printf("# N=%u: starting the members took %lld ms; all done %lld ms after the last "
	       "start\n",
	       n, (long long)(t1 - t0), (long long)(gx_now_ms() - t1));
	expect_all_ok(&w);
	assert_int_equal(w.co_res.ntable, n);
	assert_int_equal(w.co_res.ntickets, n - 1); /* phase 2 without a second handshake */
	for (i = 1; i < n; i++) {
		assert_string_equal(w.co_res.table[i].name, w.names[i]);
		assert_string_equal(w.co_res.table[i].seen_from, w.co_res.table[i].addr4);
	}
	rh_free(&w);
}

static void test_n1(void **state)
{
	(void)state;
	run_n(1);
}

static void test_n2(void **state)
{
	(void)state;
	run_n(2);
}

static void test_n64(void **state)
{
	(void)state;
	run_n(64);
}

static void test_n1024(void **state)
{
	(void)state;
	run_n(valgrind() ? 256 : 1024);
}

/* Wildcard listener (production default), no token on either side, full table. */
static void test_wildcard_no_token_full_table(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 3, 10000);
	w.base.token = NULL;
	w.base.token_len = 0;
	rh_coord_cfg(&w, &cfg);
	cfg.listen_addrlen = 0;
	rh_start_coord_cfg(&w, &cfg);
	start_member(&w, 1);
	rh_member_cfg(&w, 2, &cfg);
	cfg.full_table = 1;
	start_member_cfg(&w, 2, &cfg);
	pump(&w, 3, 9000);
	expect_all_ok(&w);
	assert_int_equal(w.co_res.authenticated, 0);
	assert_int_equal(w.s[1].res.authenticated, 0);
	assert_int_equal(w.s[1].ntable, 0);
	assert_int_equal(w.s[2].ntable, 3);
	rh_free(&w);
}

/*
 * A member reads one buffer of RDZV_MB_RBUF bytes per readiness and handles every whole frame
 * in it; a body larger than that is read on straight into its own buffer. A full-table
 * COMMIT of 40 peers with names of about 253 characters is larger than the buffer: the member that
 * asked for it gets every row, as the one that did not gets its rank.
 */
static void test_full_table_larger_than_read(void **state)
{
	struct rdzv_config cfg;
	struct rh w;
	uint32_t i, n = 40;
	size_t k;

	(void)state;
	w_init(&w, n, 20000);
	for (i = 0; i < n; i++) { /* about 253 characters (the DNS limit), labels of 60 */
		char *nm = malloc(254);
		size_t lab;

		assert_non_null(nm);
		k = (size_t)snprintf(nm, 254, "job-worker-%u", i);
		while (k + 2 <= 253) {
			nm[k++] = '.';
			for (lab = 0; lab < 60 && k < 253; lab++)
				nm[k++] = 'x';
		}
		nm[k] = '\0';
		free(w.names[i]);
		w.names[i] = nm;
	}
	start_coord(&w);
	for (i = 1; i < n; i++) {
		rh_member_cfg(&w, i, &cfg);
		cfg.full_table = i == 1;
		start_member_cfg(&w, i, &cfg);
	}
	pump(&w, (int)n, 15000);
	expect_all_ok(&w);
	assert_true(n * 250 > RDZV_MB_RBUF);
	assert_int_equal(w.s[1].ntable, n);
	assert_int_equal(w.s[2].ntable, 0);
	assert_int_equal(w.s[1].table_named, n);
	rh_free(&w);
}

static void test_member_before_coordinator(void **state)
{
	struct rh w;

	(void)state;
	w_init(&w, 3, 10000);
	start_member(&w, 1);
	start_member(&w, 2);
	pump(&w, 100, 700); /* members back off against a closed port */
	assert_int_equal(w.s[1].done, 0);
	start_coord(&w);
	pump(&w, 3, 9000);
	expect_all_ok(&w);
	rh_free(&w);
}

/*
 * The resolve hook answers later (-EINPROGRESS, then
 * rdzv_member_resolved from the loop), first NXDOMAIN, then the address: the
 * member retries and joins; the loop never blocks on the lookup.
 */
struct async_res {
	struct rh *w;
	uint32_t i;
	int calls;
};

static void async_answer(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct async_res *a = arg;

	(void)ev;
	(void)id;
	if (a->calls == 1)
		rdzv_member_resolved(a->w->s[a->i].m, -ENOENT, NULL, 0);
	else
		rdzv_member_resolved(a->w->s[a->i].m, 0, &a->w->base.coord_addr,
				     a->w->base.coord_addrlen);
}

static int async_resolve(void *arg, union gx_sockaddr *sa, socklen_t *len)
{
	struct async_res *a = arg;

	(void)sa;
	(void)len;
	a->calls++;
	assert_non_null(gx_ev_timer(a->w->ev, 20, async_answer, a));
	return -EINPROGRESS;
}

static void test_async_resolve(void **state)
{
	struct async_res a[3];
	struct rdzv_config cfg;
	struct rh w;
	uint32_t i;

	(void)state;
	w_init(&w, 3, 10000);
	start_coord(&w);
	for (i = 1; i < 3; i++) {
		a[i] = (struct async_res){&w, i, 0};
		rh_member_cfg(&w, i, &cfg);
		cfg.resolve = async_resolve;
		cfg.resolve_arg = &a[i];
		start_member_cfg(&w, i, &cfg);
	}
	pump(&w, 3, 9000);
	expect_all_ok(&w);
	for (i = 1; i < 3; i++)
		assert_int_equal(a[i].calls, 2); /* NXDOMAIN, then the answer */
	rh_free(&w);
}

/*
 * The hints decide from rdzv_result.conn_err, not from err's text.
 * Nothing listens: -ECONNREFUSED; a listener that accepts and closes at once
 * (a proxy without its upstream): -ECONNRESET.
 */
static void accept_close(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	int c = accept(fd, NULL, NULL);

	(void)ev;
	(void)events;
	(void)arg;
	if (c >= 0)
		close(c);
}

static void test_conn_err(void **state)
{
	union gx_sockaddr sa;
	socklen_t len;
	struct rh w;
	int lfd = -1;

	(void)state;
	w_init(&w, 2, 0);
	w.base.deadline_ms = gx_now_ms() + 1200;
	start_member(&w, 1);
	pump(&w, 1, 5000);
	assert_int_equal(w.s[1].rc, GX_EPEERS);
	assert_int_equal(w.s[1].res.conn_err, -ECONNREFUSED);
	rh_free(&w);

	w_init(&w, 2, 0);
	w.base.deadline_ms = gx_now_ms() + 1200;
	assert_int_equal(gx_addr_parse("127.0.0.1", w.port, &sa, &len), 0);
	assert_int_equal(gx_tcp_listen(&sa, len, &lfd), 0);
	assert_int_equal(gx_ev_add(w.ev, lfd, EPOLLIN, accept_close, NULL), 0);
	start_member(&w, 1);
	pump(&w, 1, 5000);
	assert_int_equal(w.s[1].rc, GX_EPEERS);
	assert_int_equal(w.s[1].res.conn_err, -ECONNRESET);
	gx_ev_del(w.ev, lfd);
	close(lfd);
	rh_free(&w);
}

/* A pod restarts: its member goes away, a new incarnation joins and wins. */
static void test_new_incarnation(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 3, 10000);
	start_coord(&w);
	start_member(&w, 1);
	pump(&w, 100, 300);
	rdzv_member_free(w.s[1].m);
	w.s[1].m = NULL;
	rh_member_cfg(&w, 1, &cfg);
	cfg.self.incarnation = 0x1234;
	start_member_cfg(&w, 1, &cfg);
	start_member(&w, 2);
	pump(&w, 3, 9000);
	expect_all_ok(&w);
	assert_true(w.co_res.table[1].incarnation == 0x1234);
	rh_free(&w);
}

static void test_coordinator_restart(void **state)
{
	struct rh w;

	(void)state;
	w_init(&w, 3, 15000);
	start_coord(&w);
	start_member(&w, 1);
	pump(&w, 100, 300);
	rdzv_coord_free(w.co);
	w.co = NULL;
	pump(&w, 100, 200);
	start_coord(&w);
	start_member(&w, 2);
	pump(&w, 3, 14000);
	expect_all_ok(&w);
	rh_free(&w);
}

static void test_wrong_token_rejected_others_complete(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 3, 10000);
	start_coord(&w);
	start_member(&w, 1);
	rh_member_cfg(&w, 2, &cfg);
	cfg.token = BAD_TOKEN;
	cfg.token_len = sizeof(BAD_TOKEN) - 1;
	cfg.deadline_ms = gx_now_ms() + 2500;
	start_member_cfg(&w, 2, &cfg);
	pump(&w, 1, 5000);
	assert_int_equal(w.s[2].done, 1);
	assert_int_equal(w.s[2].rc, GX_EREJECTED);
	assert_non_null(strstr(w.s[2].res.err, "bad token"));
	/* a REJECT in clear cannot end a member holding a token at once:
	 * it tried again until its deadline, and says so */
	assert_non_null(strstr(w.s[2].res.err, "until the deadline"));
	assert_true(w.co->nunauth_refused >= 2);
	assert_int_equal(w.co_done, 0);
	rdzv_member_free(w.s[2].m);
	w.s[2].m = NULL;
	w.ndone = 0;
	start_member(&w, 2); /* the right pod with the right token */
	pump(&w, 3, 9000);
	expect_all_ok(&w);
	rh_free(&w);
}

static void test_missing_token_deadline_names_it(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 3, 1500);
	start_coord(&w);
	start_member(&w, 1);
	rh_member_cfg(&w, 2, &cfg);
	cfg.token = NULL;
	cfg.token_len = 0;
	start_member_cfg(&w, 2, &cfg);
	pump(&w, 3, 5000);
	assert_int_equal(w.s[2].rc, GX_EREJECTED);
	assert_non_null(strstr(w.s[2].res.err, "missing token"));
	assert_int_equal(w.co_rc, GX_EPEERS);
	/* a refusal before any proof is no note on the peer it claimed to
	 * be; the coordinator's own line lists it apart, marked unproven */
	assert_non_null(strstr(w.co_res.err,
			       "peers missing after 2s: job-worker-2; unproven: 1 JOIN "
			       "refused before authentication, the last from 127.0."));
	assert_non_null(strstr(w.co_res.err, "claiming job-worker-2: missing token"));
	assert_int_equal(w.s[1].rc, GX_EPEERS); /* ABORT with the coordinator's line */
	assert_string_equal(w.s[1].res.err, "peers missing after 2s: job-worker-2");
	assert_null(strstr(w.s[1].res.err, "token"));
	rh_free(&w);
}

static int raw_connect(struct rh *w)
{
	union gx_sockaddr sa;
	socklen_t len;
	int fd = -1;

	gx_addr_parse("127.0.0.1", w->port, &sa, &len);
	assert_int_equal(gx_tcp_connect(&sa, len, NULL, 0, &fd), 0);
	return fd;
}

static void test_garbage_and_silent(void **state)
{
	unsigned char junk[200], hdr[RDZV_HDR_LEN];
	struct pollfd p;
	int g, s, big, n = 0;
	struct rh w;

	(void)state;
	w_init(&w, 3, 15000);
	start_coord(&w);
	g = raw_connect(&w);
	s = raw_connect(&w);
	big = raw_connect(&w);
	pump(&w, 100, 50);
	randombytes_buf(junk, sizeof(junk));
	assert_int_equal(send(g, junk, sizeof(junk), MSG_NOSIGNAL), sizeof(junk));
	rdzv_hdr_encode(hdr, RDZV_HELLO, 1u << 30); /* oversize: refused before reading */
	assert_int_equal(send(big, hdr, sizeof(hdr), MSG_NOSIGNAL), sizeof(hdr));
	start_member(&w, 1);
	start_member(&w, 2);
	pump(&w, 3, 5000);
	expect_all_ok(&w);
	/* the silent one is closed by the handshake deadline (5 s) */
	p = (struct pollfd){.fd = s, .events = POLLIN};
	w.want = 1000;
	while (gx_now_ms() < w.deadline - 2000 && n == 0) {
		gx_ev_run_until(w.ev, gx_now_ms() + 50);
		n = poll(&p, 1, 0);
	}
	assert_int_equal(n, 1);
	assert_int_equal(recv(s, junk, sizeof(junk), 0), 0);
	assert_true(recv(g, junk, sizeof(junk), 0) <= 0);
	assert_true(recv(big, junk, sizeof(junk), 0) <= 0);
	close(g);
	close(s);
	close(big);
	rh_free(&w);
}

static void test_conflicting_peers(void **state)
{
	struct rdzv_config cfg;
	struct rh w;
	struct rdzv_member *twin = NULL;

	(void)state;
	w_init(&w, 3, 10000);
	start_coord(&w);
	start_member(&w, 1);
	pump(&w, 100, 300);
	rh_member_cfg(&w, 1, &cfg); /* a second live pod claiming job-worker-1 */
	assert_int_equal(rdzv_member_start(w.ev, &cfg, rh_m_done, &w.s[2], &twin), 0);
	pump(&w, 3, 8000);
	assert_int_equal(w.co_rc, GX_ECONFLICT);
	assert_non_null(strstr(w.co_res.err, "job-worker-1"));
	assert_int_equal(w.s[1].rc, GX_ECONFLICT);
	assert_int_equal(w.s[2].rc, GX_ECONFLICT); /* the twin */
	rdzv_member_free(twin);
	rh_free(&w);
}

static void test_deadline_missing_peer(void **state)
{
	struct rh w;

	(void)state;
	w_init(&w, 4, 1500);
	start_coord(&w);
	start_member(&w, 1);
	start_member(&w, 3);
	pump(&w, 3, 5000);
	assert_int_equal(w.co_rc, GX_EPEERS);
	assert_non_null(strstr(w.co_res.err, "peers missing after 2s: job-worker-2"));
	assert_null(strstr(w.co_res.err, "job-worker-1"));
	assert_int_equal(w.s[1].rc, GX_EPEERS);
	assert_int_equal(w.s[3].rc, GX_EPEERS);
	rh_free(&w);
}

/*
 * The job's addresses are in one family, MASTER_ADDR's (the coordinator's IPv4 one here):
 * a member whose secondary has only IPv6 could verify over it, but rank 0 would reach its
 * table row through another interface or not at all. It fails at once, named, with both
 * families; the other member is not blamed.
 */
static void test_secondary_family_mismatch(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 3, 2000);
	rh_coord_cfg(&w, &cfg);
	snprintf(cfg.self.addr6, sizeof(cfg.self.addr6), "::1");
	rh_start_coord_cfg(&w, &cfg);
	start_member(&w, 1);
	rh_member_cfg(&w, 2, &cfg);
	cfg.self.addr4[0] = '\0';
	snprintf(cfg.self.addr6, sizeof(cfg.self.addr6), "::1");
	start_member_cfg(&w, 2, &cfg);
	pump(&w, 3, 6000);
	printf("# %s\n", w.co_res.err);
	assert_int_equal(w.co_rc, GX_ERDZV);
	assert_non_null(strstr(w.co_res.err, "job-worker-2 has no IPv4 address"));
	assert_non_null(strstr(w.co_res.err, "(only ::1)"));
	assert_non_null(strstr(w.co_res.err, "MASTER_ADDR 127.0.0.1 is IPv4"));
	assert_null(strstr(w.co_res.err, "job-worker-1"));
	assert_int_equal(w.s[1].rc, GX_ERDZV);
	assert_int_equal(w.s[2].rc, GX_ERDZV);
	rh_free(&w);
}

/* ---- the path: bound to the device, the kernel's route both ways ---- */

/* A fake route answer: GX_EROUTE for one destination address, 0 for every other. */
struct fake_route {
	char bad_dst[46];
	int calls;
};

static int fake_route(void *arg, const char *src, const char *dst, int dst_plen, const char *iface,
		      char *why, size_t whylen)
{
	struct fake_route *f = arg;

	f->calls++;
	assert_string_equal(iface, "lo");
	if (strcmp(dst, f->bad_dst) != 0)
		return 0;
	snprintf(why, whylen, "the kernel routes %s from %s via 10.0.0.1 dev eth0 (/%d)", dst, src,
		 dst_plen);
	return GX_EROUTE;
}

/* Every connection bound to lo, the coordinator's VERIFY listener (127.0.0.1 bound to lo)
 * beside its wildcard ones on one port (SO_REUSEPORT): every member verifies through it. */
static void test_path_bound(void **state)
{
	struct rdzv_config cfg;
	struct fake_route f = {.bad_dst = "none"};
	struct rh w;
	uint32_t i;

	(void)state;
	w_init(&w, 4, 5000);
	rh_coord_cfg(&w, &cfg);
	cfg.bind_iface = 1;
	cfg.route = fake_route;
	cfg.route_arg = &f;
	/* the wildcard, as in a pod: the kernel looks up an exact address's listeners first
	 * (the device one), the wildcard's only when none matches */
	cfg.listen_addrlen = 0;
	rh_start_coord_cfg(&w, &cfg);
	for (i = 1; i < 4; i++) {
		rh_member_cfg(&w, i, &cfg);
		cfg.bind_iface = 1;
		cfg.route = fake_route;
		cfg.route_arg = &f;
		start_member_cfg(&w, i, &cfg);
	}
	pump(&w, 4, 5000);
	expect_all_ok(&w);
	assert_int_equal(f.calls, 6); /* each member to the coordinator, the coordinator back */
	rh_free(&w);
}

/* A member whose kernel routes MASTER_ADDR through another interface ends the job at once,
 * named with its line, long before the deadline; the others are not blamed. */
static void test_path_member_route(void **state)
{
	struct rdzv_config cfg;
	struct fake_route f = {.bad_dst = "127.0.0.1"}, ok = {.bad_dst = "none"};
	struct rh w;
	uint32_t i;

	(void)state;
	w_init(&w, 3, 20000);
	start_coord(&w);
	for (i = 1; i < 3; i++) {
		rh_member_cfg(&w, i, &cfg);
		cfg.route = fake_route;
		cfg.route_arg = i == 2 ? &f : &ok;
		start_member_cfg(&w, i, &cfg);
	}
	pump(&w, 3, 5000);
	assert_int_equal(w.co_done, 1);
	assert_int_equal(w.co_rc, GX_ERDZV);
	assert_non_null(strstr(w.co_res.err, "job-worker-2: the kernel routes 127.0.0.1 from "));
	assert_non_null(strstr(w.co_res.err, "via 10.0.0.1 dev eth0"));
	assert_null(strstr(w.co_res.err, "job-worker-1"));
	assert_int_equal(w.s[1].rc, GX_ERDZV);
	assert_int_equal(w.s[2].rc, GX_ERDZV);
	rh_free(&w);
}

/* The way back: the coordinator's kernel routes a member's address through another
 * interface: the job ends, the coordinator named first, then the member. */
static void test_path_route_back(void **state)
{
	struct rdzv_config cfg;
	struct fake_route f = {.calls = 0};
	struct rh w;

	(void)state;
	w_init(&w, 3, 20000);
	rh_member_cfg(&w, 1, &cfg);
	snprintf(f.bad_dst, sizeof(f.bad_dst), "%s", cfg.self.addr4);
	rh_coord_cfg(&w, &cfg);
	cfg.route = fake_route;
	cfg.route_arg = &f;
	rh_start_coord_cfg(&w, &cfg);
	start_member(&w, 1);
	start_member(&w, 2);
	pump(&w, 3, 5000);
	assert_int_equal(w.co_rc, GX_ERDZV);
	assert_non_null(strstr(w.co_res.err, "job-worker-0 (the coordinator), to job-worker-1: the "
					     "kernel routes "));
	assert_int_equal(w.s[1].rc, GX_ERDZV);
	assert_int_equal(w.s[2].rc, GX_ERDZV);
	rh_free(&w);
}

/*
 * Every member fails its route to the coordinator, and the coordinator's subnet holds none of
 * them: the line names the coordinator (after the others' outcomes, not at the first
 * failure). With its prefix covering the members, the first member's own line stands.
 */
static void run_all_fail(struct rh *w, int coord_plen)
{
	struct rdzv_config cfg;
	struct fake_route f = {.bad_dst = "127.0.0.1"};
	uint32_t i;

	w_init(w, 4, 20000);
	rh_coord_cfg(w, &cfg);
	cfg.self.plen4 = coord_plen;
	rh_start_coord_cfg(w, &cfg);
	for (i = 1; i < 4; i++) {
		rh_member_cfg(w, i, &cfg);
		cfg.self.plen4 = 24;
		cfg.route = fake_route;
		cfg.route_arg = &f;
		start_member_cfg(w, i, &cfg);
	}
	pump(w, 4, 5000);
	assert_int_equal(w->co_rc, GX_ERDZV);
}

static void test_path_coordinator_odd(void **state)
{
	struct rh w;

	(void)state;
	run_all_fail(&w, 32);
	assert_non_null(strstr(w.co_res.err, "job-worker-0 (the coordinator): its lo address "
					     "127.0.0.1/32 is outside the subnet of every member"));
	assert_non_null(strstr(w.co_res.err,
			       "job-worker-1 127.0.1.2/24, job-worker-2 127.0.1.3/24, "
			       "job-worker-3 127.0.1.4/24"));
	rh_free(&w);
	run_all_fail(&w, 8); /* 127.0.0.0/8 holds them all: not the subnet */
	assert_null(strstr(w.co_res.err, "(the coordinator)"));
	assert_non_null(strstr(w.co_res.err, ": the kernel routes 127.0.0.1 from 127.0.1."));
	rh_free(&w);
}

static void test_coordinator_without_token(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 2, 1500);
	rh_coord_cfg(&w, &cfg);
	cfg.token = NULL;
	cfg.token_len = 0;
	rh_start_coord_cfg(&w, &cfg);
	start_member(&w, 1);
	pump(&w, 2, 5000);
	assert_int_equal(w.s[1].rc, GX_EAUTH);
	assert_non_null(strstr(w.s[1].res.err, "failed authentication"));
	assert_int_equal(w.s[1].res.rank, -1); /* accepted nothing */
	assert_string_equal(w.s[1].res.master_addr, "");
	assert_int_equal(w.co_rc, GX_EPEERS);
	rh_free(&w);
}

static void test_netdetect_failure_aborts_all(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 3, 10000);
	start_coord(&w);
	start_member(&w, 1);
	rh_member_cfg(&w, 2, &cfg);
	cfg.self.addr4[0] = '\0';
	cfg.self.iface[0] = '\0';
	cfg.self.nd_err = GX_ENOSECONDARY;
	snprintf(cfg.self.nd_why, sizeof(cfg.self.nd_why), "net1 is down");
	start_member_cfg(&w, 2, &cfg);
	pump(&w, 3, 9000);
	assert_int_equal(w.co_rc, GX_ERDZV);
	assert_string_equal(w.co_res.err, "job-worker-2: net1 is down");
	assert_int_equal(w.s[1].rc, GX_ERDZV);
	assert_int_equal(w.s[2].rc, GX_ERDZV);
	rh_free(&w);
}

/* After COMMIT a serving coordinator hands a restarted pod its rank. */
static void test_keep_serving(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 3, 10000);
	rh_coord_cfg(&w, &cfg);
	cfg.keep_serving = 1;
	rh_start_coord_cfg(&w, &cfg);
	start_member(&w, 1);
	start_member(&w, 2);
	pump(&w, 3, 9000);
	expect_all_ok(&w);
	rdzv_member_free(w.s[2].m);
	w.s[2].m = NULL;
	w.ndone = 0;
	start_member(&w, 2);
	pump(&w, 1, 5000);
	assert_int_equal(w.s[2].done, 1);
	assert_int_equal(w.s[2].rc, 0);
	assert_int_equal(w.s[2].res.rank, 2);
	assert_int_equal(w.co_done, 1);
	rh_free(&w);
}

static void run_rdma(int fail)
{
	struct rh_rdma f = {.rc = fail ? -ETIMEDOUT : 0, .delay_ms = 50};
	struct rdzv_rdma_ops ops;
	struct rdzv_config cfg;
	struct rh w;

	rh_rdma_ops(&f, &ops);
	w_init(&w, 2, fail ? 1500 : 10000);
	rh_coord_cfg(&w, &cfg);
	snprintf(cfg.self.rdma_dev, sizeof(cfg.self.rdma_dev), "mlx5_0");
	rh_start_coord_cfg(&w, &cfg);
	rh_member_cfg(&w, 1, &cfg);
	snprintf(cfg.self.rdma_dev, sizeof(cfg.self.rdma_dev), "mlx5_1");
	cfg.rdma = &ops;
	start_member_cfg(&w, 1, &cfg);
	pump(&w, 2, 6000);
	assert_true(f.calls >= 1);
	if (fail) {
		assert_int_equal(w.co_rc, GX_ERDZV);
		assert_non_null(strstr(w.co_res.err, "RDMA-CM"));
		assert_int_equal(w.s[1].rc, GX_ERDZV);
	} else {
		expect_all_ok(&w);
		assert_int_equal(w.s[1].res.rdma_verified, 1);
		/* the check followed the ticket's TCP connect: no second handshake */
		assert_int_equal(w.co_res.ntickets, 1);
		assert_int_equal(f.calls, 1);
	}
	rh_free(&w);
}

static void test_rdma_ops(void **state)
{
	(void)state;
	run_rdma(0);
	run_rdma(1);
}

/*
 * The check runs in the member's loop. One that never answers blocks
 * nothing: the coordinator (same loop) still ends at its 1.5 s deadline, long
 * before the check's own 10 s, and the member's end cancels the check.
 */
static void test_rdma_check_in_loop(void **state)
{
	struct rh_rdma f = {.hang = 1};
	struct rdzv_rdma_ops ops;
	struct rdzv_config cfg;
	int64_t t0 = gx_now_ms();
	struct rh w;

	(void)state;
	rh_rdma_ops(&f, &ops);
	w_init(&w, 2, 1500);
	rh_coord_cfg(&w, &cfg);
	snprintf(cfg.self.rdma_dev, sizeof(cfg.self.rdma_dev), "mlx5_0");
	rh_start_coord_cfg(&w, &cfg);
	rh_member_cfg(&w, 1, &cfg);
	snprintf(cfg.self.rdma_dev, sizeof(cfg.self.rdma_dev), "mlx5_1");
	cfg.rdma = &ops;
	start_member_cfg(&w, 1, &cfg);
	pump(&w, 2, 8000);
	assert_int_equal(f.calls, 1);
	assert_int_equal(w.co_done, 1);
	assert_int_equal(w.co_rc, GX_ERDZV);
	assert_true(gx_now_ms() - t0 < 5000);
	assert_int_equal(w.s[1].done, 1);
	assert_int_equal(f.cancels, 1);
	assert_int_equal(w.s[1].res.rdma_verified, 0);
	rh_free(&w);
}

/* An observer (MPI launcher) gets no rank and the whole table,
 * also when it arrives after the COMMIT at a coordinator that keeps serving. */
static void start_observer(struct rh *w, uint32_t slot)
{
	struct rdzv_config cfg;

	rh_member_cfg(w, slot, &cfg);
	snprintf(cfg.self.name, sizeof(cfg.self.name), "mpi-launcher");
	cfg.self.index = RDZV_OBSERVER;
	cfg.self.addr4[0] = '\0';
	cfg.self.iface[0] = '\0';
	start_member_cfg(w, slot, &cfg);
}

static void test_observer(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 4, 10000);
	w.base.world = 3; /* slot 3 is the observer */
	rh_coord_cfg(&w, &cfg);
	cfg.keep_serving = 1;
	rh_start_coord_cfg(&w, &cfg);
	start_member(&w, 1);
	start_observer(&w, 3);
	start_member(&w, 2);
	pump(&w, 4, 9000);
	assert_int_equal(w.co_rc, 0);
	assert_int_equal(w.co_res.world, 3);
	assert_int_equal(w.s[2].rc, 0);
	assert_int_equal(w.s[2].res.rank, 2);
	assert_int_equal(w.s[3].done, 1);
	assert_int_equal(w.s[3].rc, 0);
	assert_int_equal(w.s[3].res.rank, -1);
	assert_int_equal(w.s[3].res.world, 3);
	assert_int_equal(w.s[3].ntable, 3);
	assert_string_equal(w.s[3].res.master_addr, "127.0.0.1");
	/* late: after the COMMIT */
	rdzv_member_free(w.s[3].m);
	w.s[3].m = NULL;
	w.ndone = 0;
	start_observer(&w, 3);
	pump(&w, 1, 5000);
	assert_int_equal(w.s[3].rc, 0);
	assert_int_equal(w.s[3].res.rank, -1);
	assert_int_equal(w.s[3].ntable, 3);
	rh_free(&w);
}

/* Members / observers with stay keep their session for the job-end notice. */
struct endrec {
	struct rh *w;
	int n, status;
	char why[200];
};

static void on_end(void *arg, int status, const char *why)
{
	struct endrec *e = arg;

	e->n++;
	e->status = status;
	snprintf(e->why, sizeof(e->why), "%s", why ? why : "");
	count_done(e->w);
}

static void test_job_end(void **state)
{
	struct endrec ce = {0}, me[4];
	struct rdzv_config cfg;
	uint32_t i;
	struct rh w;

	(void)state;
	w_init(&w, 4, 10000);
	w.base.world = 3; /* slot 3 is the observer */
	memset(me, 0, sizeof(me));
	rh_coord_cfg(&w, &cfg);
	cfg.keep_serving = 1;
	ce.w = &w;
	cfg.ended = on_end;
	cfg.ended_arg = &ce;
	rh_start_coord_cfg(&w, &cfg);
	for (i = 1; i < 4; i++) {
		me[i].w = &w;
		rh_member_cfg(&w, i, &cfg);
		if (i == 3) {
			snprintf(cfg.self.name, sizeof(cfg.self.name), "mpi-launcher");
			cfg.self.index = RDZV_OBSERVER;
			cfg.self.addr4[0] = '\0';
			cfg.self.iface[0] = '\0';
		}
		cfg.stay = 1;
		cfg.ended = on_end;
		cfg.ended_arg = &me[i];
		start_member_cfg(&w, i, &cfg);
	}
	pump(&w, 4, 9000);
	assert_int_equal(w.co_rc, 0);
	for (i = 1; i < 4; i++)
		assert_int_equal(w.s[i].rc, 0);
	/* the observer's CMD ended with 7: the coordinator hears it ... */
	w.ndone = 0;
	assert_int_equal(rdzv_member_end(w.s[3].m, 7), 0);
	pump(&w, 1, 3000);
	assert_int_equal(ce.n, 1);
	assert_int_equal(ce.status, 7);
	/* ... and tells every member that stayed (and the observer) */
	w.ndone = 0;
	assert_int_equal(rdzv_coord_end(w.co, 7), 0);
	pump(&w, 3, 3000);
	for (i = 1; i < 4; i++) {
		assert_int_equal(me[i].n, 1);
		assert_int_equal(me[i].status, 7);
	}
	assert_true(rdzv_coord_flushed(w.co));
	assert_int_equal(rdzv_member_end(w.s[1].m, 1), -ENOTCONN); /* over */
	rh_free(&w);
}

/* A member that stays sees the coordinator go away: ended(-1, why). */
static void test_job_end_dropped(void **state)
{
	struct endrec me = {0};
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 2, 10000);
	start_coord(&w);
	me.w = &w;
	rh_member_cfg(&w, 1, &cfg);
	cfg.stay = 1;
	cfg.ended = on_end;
	cfg.ended_arg = &me;
	start_member_cfg(&w, 1, &cfg);
	pump(&w, 2, 9000);
	assert_int_equal(w.s[1].rc, 0);
	assert_int_equal(me.n, 0);
	rdzv_coord_free(w.co);
	w.co = NULL;
	w.ndone = 0;
	pump(&w, 1, 3000);
	assert_int_equal(me.n, 1);
	assert_int_equal(me.status, -1);
	assert_non_null(strstr(me.why, "127.0.0.1"));
	assert_int_equal(rdzv_coord_end(NULL, 0), -ENOTCONN);
	rh_free(&w);
}

/* check: a pod whose netdetect failed stays in, flagged. */
static void test_soft_verify(void **state)
{
	struct rdzv_config cfg;
	struct rh w;

	(void)state;
	w_init(&w, 3, 10000);
	rh_coord_cfg(&w, &cfg);
	cfg.soft_verify = 1;
	rh_start_coord_cfg(&w, &cfg);
	rh_member_cfg(&w, 1, &cfg);
	cfg.full_table = 1;
	start_member_cfg(&w, 1, &cfg);
	rh_member_cfg(&w, 2, &cfg);
	cfg.self.addr4[0] = '\0';
	cfg.self.iface[0] = '\0';
	cfg.self.nd_err = GX_ENOSECONDARY;
	snprintf(cfg.self.nd_why, sizeof(cfg.self.nd_why), "net1 is down");
	start_member_cfg(&w, 2, &cfg);
	pump(&w, 3, 9000);
	assert_int_equal(w.co_rc, 0);
	assert_int_equal(w.s[1].rc, 0);
	assert_int_equal(w.s[1].ntable, 3);
	assert_int_equal(w.s[2].rc, 0);
	assert_int_equal(w.s[2].res.rank, 2);
	assert_true(w.co_res.table[2].flags & RDZV_PF_VFAILED);
	assert_string_equal(w.co_res.table[2].nd_why, "net1 is down");
	assert_false(w.co_res.table[1].flags & RDZV_PF_VFAILED);
	rh_free(&w);
}

/* The coordinator's listen()/close() fake; check()/cancel() are the harness's (rh_rdma,
 * first: one ops arg serves both). */
struct fake_listen {
	struct rh_rdma chk;
	int rc, listens, closes;
};

static int fl_listen(void *arg, struct gx_ev *ev, const struct rdzv_peer *self, uint16_t port,
		     char *why, size_t whylen)
{
	struct fake_listen *f = arg;

	(void)ev;
	(void)port;
	assert_string_equal(self->rdma_dev, "mlx5_0");
	f->listens++;
	if (f->rc)
		snprintf(why, whylen, "rdma_bind_addr: No such device");
	return f->rc;
}

static void fl_close(void *arg)
{
	((struct fake_listen *)arg)->closes++;
}

/* The coordinator's RDMA-CM listener; when it cannot start,
 * members verify over TCP only and the result carries one warning. */
static void run_listen(int fail)
{
	struct fake_listen f = {.rc = fail ? -ENODEV : 0};
	struct rdzv_rdma_ops ops;
	struct rdzv_config cfg;
	struct rh w;

	rh_rdma_ops(&f.chk, &ops);
	ops.listen = fl_listen;
	ops.close = fl_close;
	w_init(&w, 2, 10000);
	rh_coord_cfg(&w, &cfg);
	snprintf(cfg.self.rdma_dev, sizeof(cfg.self.rdma_dev), "mlx5_0");
	cfg.rdma = &ops;
	rh_start_coord_cfg(&w, &cfg);
	rh_member_cfg(&w, 1, &cfg);
	snprintf(cfg.self.rdma_dev, sizeof(cfg.self.rdma_dev), "mlx5_1");
	cfg.rdma = &ops;
	start_member_cfg(&w, 1, &cfg);
	pump(&w, 2, 9000);
	expect_all_ok(&w);
	assert_int_equal(f.listens, 1);
	assert_int_equal(f.chk.calls, fail ? 0 : 1);
	assert_int_equal(w.s[1].res.rdma_verified, !fail);
	if (fail)
		assert_non_null(strstr(w.co_res.rdma_warning, "rdma_bind_addr: No such device"));
	else
		assert_string_equal(w.co_res.rdma_warning, "");
	rdzv_coord_free(w.co);
	w.co = NULL;
	assert_int_equal(f.closes, fail ? 0 : 1);
	rh_free(&w);
}

static void test_rdma_listen(void **state)
{
	(void)state;
	run_listen(0);
	run_listen(1);
}

/* An elastic job (Ray): the head commits alone at once and keeps
 * serving; pods join by name whenever they start, a returning name keeps its
 * rank, and when every slot was used the one idle longest is handed over. */
static void start_elastic(struct rh *w, uint32_t slot, const char *name)
{
	struct rdzv_config cfg;

	rh_member_cfg(w, slot, &cfg);
	snprintf(cfg.self.name, sizeof(cfg.self.name), "%s", name);
	cfg.self.index = RDZV_ELASTIC;
	cfg.elastic = 1;
	cfg.nnames = 1;
	cfg.min_peers = 1;
	start_member_cfg(w, slot, &cfg);
}

static void count_changed(void *arg, const struct rdzv_peer *tab, size_t n)
{
	size_t *last = arg;

	assert_non_null(tab);
	assert_string_equal(tab[0].name, "job-worker-0");
	*last = n;
}

static void test_elastic(void **state)
{
	struct rdzv_config cfg;
	size_t changed = 0;
	struct rh w;

	(void)state;
	w_init(&w, 3, 10000); /* MAX = 3: the head and two slots */
	rh_coord_cfg(&w, &cfg);
	cfg.elastic = 1;
	cfg.nnames = 1;
	cfg.min_peers = 1;
	cfg.keep_serving = 1;
	cfg.changed = count_changed; /* the live table for `gxboot hosts` */
	cfg.changed_arg = &changed;
	w.base.elastic = 1;
	w.base.nnames = 1;
	w.base.min_peers = 1;
	rh_start_coord_cfg(&w, &cfg);
	pump(&w, 1, 3000);
	assert_int_equal(w.co_done, 1); /* nobody else needed */
	assert_int_equal(w.co_rc, 0);
	assert_int_equal(w.co_res.ntable, 1);
	w.ndone = 0;
	start_elastic(&w, 1, "ray-worker-a");
	start_elastic(&w, 2, "ray-worker-b");
	pump(&w, 2, 5000);
	assert_int_equal(w.s[1].rc, 0);
	assert_int_equal(w.s[2].rc, 0);
	assert_int_not_equal(w.s[1].res.rank, w.s[2].res.rank);
	assert_true(w.s[1].res.rank >= 1 && w.s[1].res.rank <= 2);
	assert_int_equal(w.s[1].res.world, 3);
	assert_string_equal(w.s[1].res.master_addr, "127.0.0.1");
	assert_string_equal(w.co_res.table[w.s[1].res.rank].name, "ray-worker-a");
	assert_int_equal(changed, 3); /* both late joiners reported */
	/* a returning name keeps its rank */
	rdzv_member_free(w.s[1].m);
	w.s[1].m = NULL;
	w.ndone = 0;
	{
		int old = w.s[1].res.rank;

		start_elastic(&w, 1, "ray-worker-a");
		pump(&w, 1, 5000);
		assert_int_equal(w.s[1].rc, 0);
		assert_int_equal(w.s[1].res.rank, old);
	}
	/* every slot used: a new name takes the slot idle longest */
	rdzv_member_free(w.s[2].m);
	w.s[2].m = NULL;
	w.ndone = 0;
	start_elastic(&w, 2, "ray-worker-c");
	pump(&w, 1, 5000);
	assert_int_equal(w.s[2].rc, 0);
	assert_true(w.s[2].res.rank >= 1 && w.s[2].res.rank <= 2);
	assert_string_equal(w.co_res.table[w.s[2].res.rank].name, "ray-worker-c");
	rh_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_n1),
	    cmocka_unit_test(test_n2),
	    cmocka_unit_test(test_n64),
	    cmocka_unit_test(test_n1024),
	    cmocka_unit_test(test_wildcard_no_token_full_table),
	    cmocka_unit_test(test_full_table_larger_than_read),
	    cmocka_unit_test(test_member_before_coordinator),
	    cmocka_unit_test(test_async_resolve),
	    cmocka_unit_test(test_conn_err),
	    cmocka_unit_test(test_new_incarnation),
	    cmocka_unit_test(test_coordinator_restart),
	    cmocka_unit_test(test_wrong_token_rejected_others_complete),
	    cmocka_unit_test(test_missing_token_deadline_names_it),
	    cmocka_unit_test(test_garbage_and_silent),
	    cmocka_unit_test(test_conflicting_peers),
	    cmocka_unit_test(test_deadline_missing_peer),
	    cmocka_unit_test(test_secondary_family_mismatch),
	    cmocka_unit_test(test_path_bound),
	    cmocka_unit_test(test_path_member_route),
	    cmocka_unit_test(test_path_route_back),
	    cmocka_unit_test(test_path_coordinator_odd),
	    cmocka_unit_test(test_coordinator_without_token),
	    cmocka_unit_test(test_netdetect_failure_aborts_all),
	    cmocka_unit_test(test_keep_serving),
	    cmocka_unit_test(test_rdma_ops),
	    cmocka_unit_test(test_rdma_check_in_loop),
	    cmocka_unit_test(test_observer),
	    cmocka_unit_test(test_soft_verify),
	    cmocka_unit_test(test_job_end),
	    cmocka_unit_test(test_job_end_dropped),
	    cmocka_unit_test(test_rdma_listen),
	    cmocka_unit_test(test_elastic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
