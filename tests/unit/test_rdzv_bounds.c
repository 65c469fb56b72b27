/* SPDX-License-Identifier: MIT */
/*
 * test_rdzv_bounds.c - resource bounds against hostile input: every limit of
 * rdzv/PROTOCOL.md "Bounds" and the per-connection deadlines of "Coordinator"
 * and "Member", driven through the real code, once at the bound (accepted) and
 * once past it (refused with the documented outcome): RDZV_MAX_BODY, the
 * 256-byte handshake cap, RDZV_MAX_TABLE_BODY, RDZV_MAX_WORLD,
 * RDZV_MAX_OBSERVERS, the connection bound, accept -> HELLO (RDZV_HELLO_MS),
 * HELLO -> JOIN (RDZV_HANDSHAKE_MS), RDZV_PING_MS, RDZV_DEADLINE_GRACE_MS, the
 * member's ASSIGN deadline and M_SILENCE_MS, RDZV_LIST_NAMES, string field
 * sizes, the TLV length, the RDMA ACC bounds. A coordinator runs in a gx_ev
 * loop on loopback; raw clients and a fake coordinator speak the wire format
 * with the module's own codec (rdzv_conn, rdzv_put_*, rdzv_proof). Time bounds
 * are checked as "not before the bound, within the bound plus the timer's
 * period and slack" (no speed assertions: they flake on a loaded machine). ~45 s wall.
 */
#include "rdzv/rdzv_coord_int.h"
#include "rdzv/rdzv_member_int.h"
#include "rdzv/rdma/rdzv_rdma_int.h"
#include "tests/unit/rdzv_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static const unsigned char TOKEN[] = "bounds-test-token-0123456789abcdef";
#define JOB "job-bounds"
#define T_UNKNOWN 999 /* a TLV no decoder knows: skipped (padding) */

/* The shared harness with 16 spare slots; the coordinator has 1 slot. */
static void h_init(struct rh *h, uint32_t n, int64_t deadline_ms)
{
	rh_init(h, n, 16, JOB, TOKEN, sizeof(TOKEN) - 1, deadline_ms);
	h->coord_slots = 1;
}

static void start_coord_at(struct rh *h, int64_t deadline_ms)
{
	struct rdzv_config cfg;

	rh_coord_cfg(h, &cfg);
	cfg.deadline_ms = deadline_ms;
	rh_start_coord_cfg(h, &cfg);
}

static void start_coord(struct rh *h)
{
	start_coord_at(h, h->base.deadline_ms);
}

/* Members here sit on 127.0.0.<1 + i>. */
static void member_cfg(struct rh *h, uint32_t i, struct rdzv_config *cfg)
{
	rh_member_cfg(h, i, cfg);
	snprintf(cfg->self.addr4, sizeof(cfg->self.addr4), "127.0.0.%u", 1 + i);
}

static void start_member(struct rh *h, uint32_t i)
{
	struct rdzv_config cfg;

	member_cfg(h, i, &cfg);
	rh_start_member_in(h, h->ev, i, &cfg);
}

static void pump(struct rh *h, int64_t ms)
{
	rh_pump_ev(h->ev, ms, NULL);
}

/* ---- a raw client speaking the wire format with the module's codec ------- */
struct cli {
	struct rdzv_conn c;
	unsigned char k[RDZV_KEY_LEN];
};

/* A connection to the coordinator from src (NULL: the kernel's choice, 127.0.0.1). */
static void cli_open_from(struct rh *h, struct cli *x, const char *src)
{
	union gx_sockaddr sa, ssa;
	socklen_t len, slen = 0;
	int fd = -1;

	assert_int_equal(gx_addr_parse("127.0.0.1", h->port, &sa, &len), 0);
	if (src)
		assert_int_equal(gx_addr_parse(src, 0, &ssa, &slen), 0);
	assert_int_equal(gx_tcp_connect(&sa, len, src ? &ssa : NULL, slen, &fd), 0);
	rdzv_conn_init(&x->c, fd, 0);
	randombytes_buf(x->c.nm, RDZV_NONCE_LEN);
	assert_int_equal(rdzv_auth_key(TOKEN, sizeof(TOKEN) - 1, JOB, x->k), 0);
}

static void cli_open(struct rh *h, struct cli *x)
{
	cli_open_from(h, x, NULL);
}

static void send_all(int fd, const unsigned char *p, size_t n)
{
	struct pollfd pf = {.fd = fd, .events = POLLOUT};
	ssize_t k;

	while (n > 0) {
		k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EAGAIN) {
			assert_int_equal(poll(&pf, 1, 2000), 1);
			continue;
		}
		assert_true(k > 0);
		p += k;
		n -= (size_t)k;
	}
}

/* One frame of body len (MAC'd once the session is up), written by hand so that
 * sizes past the bounds can be sent at all (rdzv_conn_send refuses them). */
static void cli_send(struct cli *x, uint16_t type, const unsigned char *body, size_t len)
{
	size_t mac = rdzv_conn_up(&x->c) ? RDZV_MAC_LEN : 0;
	unsigned char *f = malloc(RDZV_HDR_LEN + len + mac);

	assert_non_null(f);
	rdzv_hdr_encode(f, type, (uint32_t)(len + mac));
	memcpy(f + RDZV_HDR_LEN, body, len);
	if (mac)
		rdzv_mac(x->c.skey, 'M', x->c.seq_tx++, type, body, len, f + RDZV_HDR_LEN + len);
	send_all(x->c.f.fd, f, RDZV_HDR_LEN + len + mac);
	free(f);
}

/* The next frame's type (CHALLENGE: nc is kept), 0 when the coordinator closed
 * the connection without one, -1 when nothing came within ms. */
static int cli_expect(struct rh *h, struct cli *x, int64_t ms)
{
	int64_t until = gx_now_ms() + ms;
	struct rdzv_msg *m = malloc(sizeof(*m));
	unsigned char *body = NULL;
	uint16_t type = 0;
	size_t len;
	int rc;

	assert_non_null(m);
	for (;;) {
		rc = rdzv_conn_read(&x->c, &type, &body, &len);
		if (rc != 0 || gx_now_ms() >= until)
			break;
		pump(h, 20);
	}
	if (rc == 1 && type == RDZV_CHALLENGE) {
		assert_int_equal(rdzv_msg_decode(type, body, len, m), 0);
		memcpy(x->c.nc, m->nonce, RDZV_NONCE_LEN);
	}
	free(body);
	free(m);
	return rc == 1 ? type : rc < 0 ? 0 : -1;
}

/* Add an unknown TLV so the body is exactly `to` bytes. */
static void pad_to(struct rdzv_buf *b, size_t to)
{
	unsigned char *zeros = calloc(1, to);

	assert_non_null(zeros);
	assert_true(to >= b->len + 4);
	rdzv_put(b, T_UNKNOWN, zeros, to - b->len - 4);
	free(zeros);
	assert_int_equal(b->err, 0);
	assert_int_equal(b->len, to);
}

/* 1 when the coordinator closed x (EOF after what it sent), 0 while it is open. */
static int cli_closed(struct cli *x)
{
	char buf[4096];
	ssize_t n;

	for (;;) {
		n = recv(x->c.f.fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			continue;
		return n == 0 || (errno != EAGAIN && errno != EINTR);
	}
}

static void cli_hello(struct cli *x, size_t len)
{
	struct rdzv_buf b = {0};

	rdzv_put(&b, T_NONCE, x->c.nm, RDZV_NONCE_LEN);
	rdzv_put_u32(&b, T_HAS_TOKEN, 1);
	rdzv_put_str(&b, T_NAME, "job-worker-1");
	rdzv_put_u32(&b, T_INDEX, 1);
	rdzv_put_str(&b, T_JOB_ID, JOB);
	pad_to(&b, len);
	cli_send(x, RDZV_HELLO, b.p, b.len);
	rdzv_buf_free(&b);
}

static void cli_auth(struct cli *x, size_t len)
{
	unsigned char proof[RDZV_MAC_LEN];
	struct rdzv_buf b = {0};

	rdzv_proof(x->k, 0, x->c.nm, x->c.nc, JOB, proof);
	rdzv_put(&b, T_PROOF, proof, sizeof(proof));
	pad_to(&b, len);
	cli_send(x, RDZV_AUTH, b.p, b.len);
	rdzv_buf_free(&b);
}

/* HELLO, CHALLENGE, AUTH, PROOF: the session is up. */
static void cli_session(struct rh *h, struct cli *x)
{
	cli_open(h, x);
	cli_hello(x, 128);
	assert_int_equal(cli_expect(h, x, 3000), RDZV_CHALLENGE);
	cli_auth(x, 64);
	assert_int_equal(cli_expect(h, x, 3000), RDZV_PROOF);
	rdzv_conn_session(&x->c, x->k);
}

static void cli_join(struct cli *x, size_t len)
{
	struct rdzv_buf b = {0};
	struct rdzv_peer p;

	memset(&p, 0, sizeof(p));
	snprintf(p.name, sizeof(p.name), "job-worker-1");
	p.index = 1;
	p.incarnation = 42;
	snprintf(p.iface, sizeof(p.iface), "lo");
	snprintf(p.addr4, sizeof(p.addr4), "127.0.0.2");
	p.slots = 1;
	p.gid_index = -1;
	rdzv_put_peer(&b, T_PEER, &p);
	pad_to(&b, len);
	cli_send(x, RDZV_JOIN, b.p, b.len);
	rdzv_buf_free(&b);
}

/* ---- RDZV_MAX_BODY: every message a coordinator reads ---------------------- */
static void test_max_body_hello(void **state)
{
	struct cli at, past;
	struct rh h;

	(void)state;
	h_init(&h, 2, 10000);
	start_coord(&h);
	cli_open(&h, &at);
	cli_open(&h, &past);
	cli_hello(&at, RDZV_MAX_BODY);
	cli_hello(&past, RDZV_MAX_BODY + 1);
	assert_int_equal(cli_expect(&h, &at, 3000), RDZV_CHALLENGE);
	assert_int_equal(cli_expect(&h, &past, 3000), 0); /* dropped at the header */
	rdzv_conn_reset(&at.c);
	rdzv_conn_reset(&past.c);
	rh_free(&h);
}

static void test_max_body_join(void **state)
{
	struct cli at, past;
	struct rh h;

	(void)state;
	h_init(&h, 3, 10000); /* job-worker-2 never comes: an ASSIGN, no COMMIT */
	start_coord(&h);
	cli_session(&h, &at);
	cli_join(&at, RDZV_MAX_BODY);
	assert_int_equal(cli_expect(&h, &at, 3000), RDZV_ASSIGN);
	rdzv_conn_reset(&at.c);
	pump(&h, 100);
	cli_session(&h, &past);
	cli_join(&past, RDZV_MAX_BODY + 1); /* correctly MAC'd: only the size is wrong */
	assert_int_equal(cli_expect(&h, &past, 3000), 0);
	rdzv_conn_reset(&past.c);
	assert_int_equal(h.co_done, 0); /* the coordinator goes on */
	rh_free(&h);
}

/* CHALLENGE, AUTH, PROOF, PING, PONG: at most 256 bytes. */
static void test_handshake_cap(void **state)
{
	struct cli at, past;
	struct rh h;

	(void)state;
	assert_int_equal(rdzv_max_body(RDZV_AUTH), 256);
	h_init(&h, 2, 10000);
	start_coord(&h);
	cli_open(&h, &at);
	cli_open(&h, &past);
	cli_hello(&at, 128);
	cli_hello(&past, 128);
	assert_int_equal(cli_expect(&h, &at, 3000), RDZV_CHALLENGE);
	assert_int_equal(cli_expect(&h, &past, 3000), RDZV_CHALLENGE);
	cli_auth(&at, 256);
	cli_auth(&past, 257); /* a valid proof, one byte too long */
	assert_int_equal(cli_expect(&h, &at, 3000), RDZV_PROOF);
	assert_int_equal(cli_expect(&h, &past, 3000), 0);
	rdzv_conn_reset(&at.c);
	rdzv_conn_reset(&past.c);
	rh_free(&h);
}

/* ---- RDZV_MAX_TABLE_BODY: a COMMIT on a member; never on a coordinator ------ */
static void conn_pair(struct rdzv_conn *tx, int tx_coord, struct rdzv_conn *rx, int rx_coord)
{
	unsigned char k[RDZV_KEY_LEN];
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	rdzv_conn_init(tx, sv[0], tx_coord);
	rdzv_conn_init(rx, sv[1], rx_coord);
	randombytes_buf(k, sizeof(k));
	randombytes_buf(tx->nm, RDZV_NONCE_LEN);
	randombytes_buf(tx->nc, RDZV_NONCE_LEN);
	memcpy(rx->nm, tx->nm, RDZV_NONCE_LEN);
	memcpy(rx->nc, tx->nc, RDZV_NONCE_LEN);
	rdzv_conn_session(tx, k);
	rdzv_conn_session(rx, k);
}

/* Move one frame of len bytes from tx to rx: rx's read result. */
static int move_frame(struct rdzv_conn *tx, struct rdzv_conn *rx, uint16_t type,
		      const unsigned char *body, size_t len, size_t *got)
{
	unsigned char *in = NULL;
	uint16_t t;
	int rc, i;

	rc = rdzv_conn_send(tx, type, body, len);
	if (rc < 0)
		return rc;
	for (i = 0; i < 100000; i++) {
		assert_true(rdzv_conn_flush(tx) >= 0);
		rc = rdzv_conn_read(rx, &t, &in, got);
		if (rc != 0)
			break;
	}
	if (rc == 1) {
		assert_int_equal(t, type);
		assert_memory_equal(in, body, len);
	}
	free(in);
	return rc;
}

/* A header claiming len bytes (+ MAC in a session) on tx's socket: rx's read result. */
static int raw_header(struct rdzv_conn *tx, struct rdzv_conn *rx, uint16_t type, size_t len)
{
	unsigned char hdr[RDZV_HDR_LEN], *in = NULL;
	uint16_t t;
	size_t got;
	int rc;

	rdzv_hdr_encode(hdr, type, (uint32_t)(len + (rdzv_conn_up(rx) ? RDZV_MAC_LEN : 0)));
	send_all(tx->f.fd, hdr, sizeof(hdr));
	rc = rdzv_conn_read(rx, &t, &in, &got);
	free(in);
	return rc;
}

static void test_max_table_body(void **state)
{
	unsigned char *body = malloc(RDZV_MAX_TABLE_BODY + 1);
	struct rdzv_conn tx, rx;
	size_t got = 0, i;

	(void)state;
	assert_non_null(body);
	for (i = 0; i < RDZV_MAX_TABLE_BODY + 1; i++)
		body[i] = (unsigned char)(i * 131);
	/* member side: a COMMIT of exactly RDZV_MAX_TABLE_BODY is read whole */
	conn_pair(&tx, 1, &rx, 0);
	assert_int_equal(move_frame(&tx, &rx, RDZV_COMMIT, body, RDZV_MAX_TABLE_BODY, &got), 1);
	assert_int_equal(got, RDZV_MAX_TABLE_BODY);
	/* one byte more: the sender refuses, a header claiming it is refused before reading */
	assert_int_equal(rdzv_conn_send(&tx, RDZV_COMMIT, body, RDZV_MAX_TABLE_BODY + 1),
			 GX_EPROTO);
	assert_int_equal(raw_header(&tx, &rx, RDZV_COMMIT, RDZV_MAX_TABLE_BODY + 1), GX_EPROTO);
	assert_null(rx.f.body); /* nothing was allocated for it */
	rdzv_conn_reset(&tx);
	rdzv_conn_reset(&rx);
	/* before the session even a COMMIT is held to RDZV_MAX_BODY (no table from strangers) */
	conn_pair(&tx, 1, &rx, 0);
	tx.f.sealed_tx = tx.f.sealed_rx = rx.f.sealed_tx = rx.f.sealed_rx = 0;
	assert_int_equal(move_frame(&tx, &rx, RDZV_COMMIT, body, RDZV_MAX_BODY, &got), 1);
	assert_int_equal(raw_header(&tx, &rx, RDZV_COMMIT, RDZV_MAX_BODY + 1), GX_EPROTO);
	rdzv_conn_reset(&tx);
	rdzv_conn_reset(&rx);
	/* other types on a member: RDZV_MAX_BODY */
	conn_pair(&tx, 1, &rx, 0);
	assert_int_equal(move_frame(&tx, &rx, RDZV_ASSIGN, body, RDZV_MAX_BODY, &got), 1);
	assert_int_equal(raw_header(&tx, &rx, RDZV_ASSIGN, RDZV_MAX_BODY + 1), GX_EPROTO);
	rdzv_conn_reset(&tx);
	rdzv_conn_reset(&rx);
	/* a coordinator never accepts more than RDZV_MAX_BODY, COMMIT included */
	conn_pair(&tx, 0, &rx, 1);
	assert_int_equal(move_frame(&tx, &rx, RDZV_COMMIT, body, RDZV_MAX_BODY, &got), 1);
	assert_int_equal(raw_header(&tx, &rx, RDZV_COMMIT, RDZV_MAX_BODY + 1), GX_EPROTO);
	rdzv_conn_reset(&tx);
	rdzv_conn_reset(&rx);
	/* but a relay's CARRY: up to RDZV_CARRY_MAX, in a session */
	conn_pair(&tx, 0, &rx, 1);
	assert_int_equal(move_frame(&tx, &rx, RDZV_CARRY, body, RDZV_CARRY_MAX, &got), 1);
	assert_int_equal(got, RDZV_CARRY_MAX);
	assert_int_equal(rdzv_conn_send(&tx, RDZV_CARRY, body, RDZV_CARRY_MAX + 1), GX_EPROTO);
	assert_int_equal(raw_header(&tx, &rx, RDZV_CARRY, RDZV_CARRY_MAX + 1), GX_EPROTO);
	rdzv_conn_reset(&tx);
	rdzv_conn_reset(&rx);
	free(body);
}

/* ---- RDZV_MAX_WORLD ---------------------------------------------------------- */
static void test_max_world(void **state)
{
	uint32_t n = RDZV_MAX_WORLD + 1, i;
	struct rdzv_coord *co = NULL;
	struct rdzv_member *m = NULL;
	struct rdzv_config cfg;
	struct rh h;

	(void)state;
	h_init(&h, n, 10000);
	h.base.world = RDZV_MAX_WORLD;
	rh_coord_cfg(&h, &cfg);
	assert_int_equal(rdzv_coord_start(h.ev, &cfg, rh_co_done, &h, &co), 0);
	rdzv_coord_free(co);
	co = NULL;
	cfg.world = RDZV_MAX_WORLD + 1;
	assert_int_equal(rdzv_coord_start(h.ev, &cfg, rh_co_done, &h, &co), GX_EUSAGE);
	assert_null(co);
	member_cfg(&h, 1, &cfg);
	cfg.world = RDZV_MAX_WORLD + 1;
	assert_int_equal(rdzv_member_start(h.ev, &cfg, rh_m_done, &h.s[1], &m), GX_EUSAGE);
	assert_null(m);
	cfg.world = RDZV_MAX_WORLD;
	assert_int_equal(rdzv_member_start(h.ev, &cfg, rh_m_done, &h.s[1], &m), 0);
	rdzv_member_free(m);
	for (i = 0; i < 2; i++)
		assert_int_equal(h.s[i].done, 0);
	rh_free(&h);
}

/* ---- RDZV_MAX_OBSERVERS ---------------------------------------------------- */
static void start_observer(struct rh *h, uint32_t slot)
{
	struct rdzv_config cfg;

	member_cfg(h, 1, &cfg);
	snprintf(cfg.self.name, sizeof(cfg.self.name), "mpi-launcher-%u", slot);
	cfg.self.index = RDZV_OBSERVER;
	cfg.self.addr4[0] = '\0';
	cfg.self.iface[0] = '\0';
	rh_start_member_in(h, h->ev, slot, &cfg);
}

static void test_max_observers(void **state)
{
	uint32_t i, first = 2, extra = 2 + RDZV_MAX_OBSERVERS;
	struct rh h;

	(void)state;
	h_init(&h, 2, 15000);
	start_coord(&h);
	for (i = 0; i < RDZV_MAX_OBSERVERS; i++)
		start_observer(&h, first + i);
	pump(&h, 500);
	assert_int_equal(h.co->nobservers, RDZV_MAX_OBSERVERS);
	start_observer(&h, extra); /* one past the bound */
	rh_pump_ev(h.ev, 3000, &h.s[extra].done);
	assert_int_equal(h.s[extra].done, 1);
	assert_int_equal(h.s[extra].rc, GX_EREJECTED);
	assert_non_null(strstr(h.s[extra].err, "too many observers"));
	start_member(&h, 1);
	rh_pump_ev(h.ev, 5000, &h.co_done);
	pump(&h, 300);
	assert_int_equal(h.co_rc, 0);
	for (i = 0; i < RDZV_MAX_OBSERVERS; i++) {
		assert_int_equal(h.s[first + i].done, 1);
		assert_int_equal(h.s[first + i].rc, 0);
		assert_int_equal(h.s[first + i].rank, -1);
	}
	rh_free(&h);
}

/* ---- connections: min(max(2N + 64, RDZV_MIN_CONNS), RDZV_MAX_CONNS, NOFILE - 64) */
static size_t conn_bound(uint32_t world)
{
	size_t bound = 2 * (size_t)world + 64;
	struct rlimit rl;

#ifdef RDZV_MIN_CONNS
	if (bound < RDZV_MIN_CONNS)
		bound = RDZV_MIN_CONNS;
#endif
	if (bound > RDZV_MAX_CONNS)
		bound = RDZV_MAX_CONNS;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 128 && rl.rlim_cur - 64 < bound)
		bound = rl.rlim_cur - 64;
	return bound;
}

static void test_max_conns(void **state)
{
	struct rlimit rl;
	struct cli *x;
	size_t bound, i;
	struct rh h;

	(void)state;
	h_init(&h, 2, 15000);
	start_coord(&h);
	bound = conn_bound(2);
	assert_int_equal(h.co->maxconns, bound);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur != RLIM_INFINITY && 2 * bound + 128 > rl.rlim_cur) {
		/* both ends live in this process */
		printf("# skipped: RLIMIT_NOFILE %llu < 2 x %zu + 128\n",
		       (unsigned long long)rl.rlim_cur, bound);
		rh_free(&h);
		skip();
	}
	x = calloc(bound + 2, sizeof(*x));
	assert_non_null(x);
	for (i = 0; i < bound; i++) { /* each sends a HELLO: it holds its slot for a while */
		cli_open(&h, &x[i]);
		cli_hello(&x[i], 128);
	}
	pump(&h, 400);
	assert_int_equal(h.co->nconns, bound); /* at the bound: all accepted */
	assert_int_equal(h.co->pa.n, bound);   /* none authenticated */
	cli_open(&h, &x[bound]);	       /* past it: the oldest unauthenticated one goes */
	pump(&h, 300);
	assert_false(h.co->paused);
	assert_int_equal(h.co->nconns, bound);
	assert_true(cli_closed(&x[0]));
	assert_false(cli_closed(&x[1]));
	start_member(&h, 1); /* a member gets in while the strangers hold the bound */
	rh_pump_ev(h.ev, 5000, &h.co_done);
	pump(&h, 300);
	assert_int_equal(h.co_rc, 0);
	assert_int_equal(h.s[1].rc, 0);
	for (i = 0; i <= bound; i++)
		rdzv_conn_reset(&x[i].c);
	free(x);
	rh_free(&h);
}

/* ---- the open-file limit below the job -------------------------------------
 * Every member holds its session until the COMMIT: a coordinator whose limit leaves it fewer
 * than world connections cannot commit, and its failure line says why before the list of
 * missing peers (which a long list would otherwise cut off). In a child: the hard limit
 * cannot be raised back. Not under valgrind, which refuses a new hard limit. */
#define T_NOFILE 1100
static int nofile_child(void)
{
	struct rlimit rl = {T_NOFILE, T_NOFILE};
	struct rh h;
	int ok;

	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 77;
	h_init(&h, T_NOFILE + 100, 1500);
	start_coord(&h);
	rh_pump_ev(h.ev, 5000, &h.co_done);
	ok = h.co_done && h.co_rc == GX_EPEERS && h.co->maxconns == T_NOFILE - 64 &&
	     strstr(h.co_err, "(this coordinator can hold 1036 connections, open-file limit "
			      "1100, and 1200 pods need 1200: raise the pod's nofile limit): ") &&
	     strstr(h.co_err, "job-worker-1");
	if (!ok)
		fprintf(stderr, "nofile: rc %d, line: %s\n", h.co_rc, h.co_err);
	rh_free(&h);
	return ok ? 0 : 1;
}

static void test_nofile_below_world(void **state)
{
	int st = 0;
	pid_t pid;

	(void)state;
	if (getenv("GX_TEST_VALGRIND"))
		skip();
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(nofile_child());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- per-connection deadlines on the coordinator ---------------------------
 * accept -> HELLO: RDZV_HELLO_MS (where the build has it; else RDZV_HANDSHAKE_MS);
 * HELLO -> JOIN processed: RDZV_HANDSHAKE_MS. */
#ifdef RDZV_HELLO_MS
#define T_HELLO_MS RDZV_HELLO_MS
#else
#define T_HELLO_MS RDZV_HANDSHAKE_MS
#endif

/* Pump until fd is readable (closed or data) or ms pass; the time it took, -1 none. */
static int64_t wait_readable(struct rh *h, int fd, int64_t ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int64_t t0 = gx_now_ms();

	while (poll(&p, 1, 0) == 0 && gx_now_ms() - t0 < ms)
		pump(h, 20);
	return poll(&p, 1, 0) == 1 ? gx_now_ms() - t0 : -1;
}

/*
 * Few connections unauthenticated: one whose HELLO is late is a slow member (its node
 * loaded), not a flood. Its deadline is extended once to RDZV_HANDSHAKE_MS from accept
 * (closing it was a RST and a reconnect per starved member at N=16384), so a
 * HELLO 1.5 s late is answered; a connection that stays silent is closed at that bound.
 */
static void test_hello_deadline(void **state)
{
	struct cli silent, late;
	struct pollfd p;
	int64_t t0;
	char c;
	struct rh h;

	(void)state;
	h_init(&h, 2, 20000);
	start_coord(&h);
	t0 = gx_now_ms();
	cli_open(&h, &silent);
	cli_open(&h, &late);
	pump(&h, T_HELLO_MS + 500);
	p = (struct pollfd){.fd = silent.c.f.fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 0); /* past RDZV_HELLO_MS, spared: still open */
	cli_hello(&late, 128);		     /* the slow member's HELLO is answered */
	assert_int_equal(cli_expect(&h, &late, 1500), RDZV_CHALLENGE); /* 5 s from accept */
	assert_true(h.co->res.nslow >= 1);
	/* closed at RDZV_HANDSHAKE_MS from accept, by the next sweeps (slack 1 s) */
	assert_true(wait_readable(&h, silent.c.f.fd, RDZV_HANDSHAKE_MS + 1000) >= 0);
	assert_int_equal(recv(silent.c.f.fd, &c, 1, 0), 0); /* closed */
	assert_true(gx_now_ms() - t0 >= RDZV_HANDSHAKE_MS);
	assert_int_equal(h.co->res.nhs_late, 1);
	rdzv_conn_reset(&silent.c);
	rdzv_conn_reset(&late.c);
	rh_free(&h);
}

/* The same for AUTH: due RDZV_PROOF_MS after the HELLO, a slow member's comes later and is
 * answered while there is room. */
static void test_auth_deadline_slow(void **state)
{
	struct cli x;
	struct rh h;

	(void)state;
	h_init(&h, 2, 20000);
	start_coord(&h);
	cli_open(&h, &x);
	cli_hello(&x, 128);
	assert_int_equal(cli_expect(&h, &x, 3000), RDZV_CHALLENGE);
	pump(&h, RDZV_PROOF_MS + 700);
	assert_false(cli_closed(&x));
	cli_auth(&x, 64);
	assert_int_equal(cli_expect(&h, &x, 1000), RDZV_PROOF);
	assert_true(h.co->res.nslow >= 1);
	assert_int_equal(h.co->res.nhs_late, 0);
	rdzv_conn_reset(&x.c);
	rh_free(&h);
}

/* n connections that send nothing yet, all accepted (their HELLO deadlines run). */
static struct cli *cli_open_many(struct rh *h, int n)
{
	struct cli *f = calloc((size_t)n, sizeof(*f));
	int i;

	assert_non_null(f);
	for (i = 0; i < n; i++)
		cli_open(h, &f[i]);
	pump(h, 300);
	assert_int_equal(h->co->nconns, n);
	return f;
}

static void cli_free_many(struct cli *f, int n)
{
	int i;

	for (i = 0; i < n; i++)
		rdzv_conn_reset(&f[i].c);
	free(f);
}

/* A flood (a quarter of the connection bound unauthenticated, RDZV_PREAUTH_ROOM_DIV):
 * no slow-member extension, every silent connection is closed at RDZV_HELLO_MS. */
#define T_FLOOD 300 /* > 1024 / 4: the bound of a small job is RDZV_MIN_CONNS */
static void test_hello_deadline_flood(void **state)
{
	struct cli *f;
	int64_t t0;
	int i;
	struct rh h;

	(void)state;
	h_init(&h, 2, 20000);
	start_coord(&h);
	assert_true(T_FLOOD * RDZV_PREAUTH_ROOM_DIV >= h.co->maxconns);
	t0 = gx_now_ms();
	f = cli_open_many(&h, T_FLOOD);
	for (i = 0; i < T_FLOOD; i++) /* closed by the sweeps after RDZV_HELLO_MS (slack 2 s) */
		assert_true(wait_readable(&h, f[i].c.f.fd, t0 + T_HELLO_MS + 2000 - gx_now_ms()) >=
			    0);
	assert_true(gx_now_ms() - t0 >= T_HELLO_MS);
	assert_int_equal(h.co->res.nslow, 0);
	assert_int_equal(h.co->res.nhs_late, T_FLOOD);
	cli_free_many(f, T_FLOOD);
	rh_free(&h);
}

/* The coordinator's loop is behind (more ready connections than one
 * epoll_wait returns) and the sweep finds a HELLO that waits unread past its deadline:
 * the connection is served, not closed (closing it was a RST and a retry per member at
 * N=16384 on a loaded node). */
#define T_FILLERS 260 /* > the 256 events one gx_ev iteration handles */
static void test_hello_deadline_slow_loop(void **state)
{
	struct cli *f, *last;
	int i;
	struct rh h;

	(void)state;
	h_init(&h, 2, 20000);
	start_coord(&h);
	f = cli_open_many(&h, T_FILLERS + 1); /* the fillers, then the last one */
	last = &f[T_FILLERS];
	for (i = 0; i < T_FILLERS; i++)
		cli_hello(&f[i], 128);
	cli_hello(last, 128); /* ready last: not in the first epoll_wait's 256 */
	usleep((T_HELLO_MS + 300) * 1000);
	/* first iteration: 256 fillers, then the sweep with the last HELLO unread */
	assert_int_equal(cli_expect(&h, last, 1500), RDZV_CHALLENGE);
	cli_free_many(f, T_FILLERS + 1);
	rh_free(&h);
}

static void test_handshake_deadline(void **state)
{
	struct cli idle, late;
	int64_t t0;
	struct rh h;

	(void)state;
	h_init(&h, 3, 20000); /* job-worker-2 never comes: an ASSIGN, no COMMIT */
	start_coord(&h);
	cli_session(&h, &idle); /* HELLO, AUTH; then no JOIN */
	t0 = gx_now_ms();
	cli_session(&h, &late);
	pump(&h, RDZV_HANDSHAKE_MS - 1000);
	cli_join(&late, 256); /* inside the bound: joined */
	assert_int_equal(cli_expect(&h, &late, 800), RDZV_ASSIGN);
	/* past it: the session without a JOIN loses its slot */
	assert_true(wait_readable(&h, idle.c.f.fd, 2500) >= 0);
	assert_int_equal(cli_expect(&h, &idle, 100), 0);
	assert_true(gx_now_ms() - t0 >= RDZV_HANDSHAKE_MS - 200); /* idle's HELLO came first */
	rdzv_conn_reset(&idle.c);
	rdzv_conn_reset(&late.c);
	rh_free(&h);
}

/* ---- RDZV_PING_MS: the old connection's window to answer (same name) -------- */
static void ping_window(int answer)
{
	struct gx_ev *ev2 = NULL;
	struct rdzv_config cfg;
	int64_t until, t_pend;
	struct rh h;

	h_init(&h, 3, 20000); /* job-worker-2 comes last: no COMMIT before it */
	assert_int_equal(gx_ev_new(&ev2), 0);
	start_coord(&h);
	member_cfg(&h, 1, &cfg); /* A: joins in its own loop, which is then frozen */
	rh_start_member_in(&h, ev2, 3, &cfg);
	until = gx_now_ms() + 3000;
	/* (fault-3 needs A verified too: then only the PING window holds the COMMIT) */
	while ((h.co->njoined < 1 || (answer == 2 && h.co->nverified < 1)) && gx_now_ms() < until) {
		pump(&h, 10);
		rh_pump_ev(ev2, 10, NULL);
	}
	assert_int_equal(h.co->njoined, 1);
	start_member(&h, 1); /* B: the same name, a new incarnation */
	/* waited for, not slept for: B's handshake under valgrind on a loaded machine */
	until = gx_now_ms() + 5000;
	while (!h.co->st[1].pending && gx_now_ms() < until)
		pump(&h, 10);
	assert_non_null(h.co->st[1].pending); /* B waits while A may answer */
	t_pend = gx_now_ms();		      /* B's JOIN came at most one pump before */
	if (answer == 2) {
		/* fault-3: the last peer joins inside the window: no COMMIT while B waits
		 * (the coordinator used to COMMIT with the frozen A; B then exited 3) */
		start_member(&h, 2);
		pump(&h, RDZV_PING_MS / 4);
		assert_int_equal(h.co_done, 0);
		assert_non_null(h.co->st[1].pending);
		rh_pump_ev(h.ev, 5000, &h.co_done);
		pump(&h, 300);
		assert_int_equal(h.co_rc, 0);
		assert_int_equal(h.s[1].rc, 0); /* B, not A, is rank 1 */
		assert_int_equal(h.s[1].rank, 1);
		assert_int_equal(h.s[2].rc, 0);
	} else if (answer) {
		rh_pump_ev(ev2, 100, NULL); /* A answers the PING inside the window */
		rh_pump_ev(h.ev, 3000, &h.co_done);
		assert_int_equal(h.co_done, 1);
		assert_int_equal(h.co_rc, GX_ECONFLICT);
		assert_non_null(strstr(h.co_err, "conflicting peers"));
	} else {
		until = t_pend + RDZV_PING_MS + 2 * RDZV_SWEEP_MS + 5000;
		while (h.co->st[1].pending && gx_now_ms() < until)
			pump(&h, 10);
		assert_int_equal(h.co_done, 0);
		assert_null(h.co->st[1].pending); /* no PONG in the window: B took the slot */
		assert_true(gx_now_ms() - t_pend >= RDZV_PING_MS - 50); /* after the window */
		assert_non_null(h.co->st[1].conn);
		start_member(&h, 2);
		rh_pump_ev(h.ev, 5000, &h.co_done);
		pump(&h, 300);
		assert_int_equal(h.co_rc, 0);
		assert_int_equal(h.s[1].rc, 0); /* B is rank 1 */
		assert_int_equal(h.s[1].rank, 1);
		assert_int_equal(h.s[2].rc, 0);
	}
	rdzv_member_free(h.s[3].m);
	h.s[3].m = NULL;
	gx_ev_free(ev2);
	rh_free(&h);
}

static void test_ping_window(void **state)
{
	(void)state;
	ping_window(1);
	ping_window(0);
	ping_window(2);
}

/* ---- RDZV_DEADLINE_GRACE_MS: a joined member waits for the coordinator's ABORT */
static void grace(int64_t coord_after)
{
	int64_t d;
	struct rh h;

	h_init(&h, 3, 1500); /* member 2 never comes */
	d = h.base.deadline_ms;
	start_coord_at(&h, d + coord_after);
	start_member(&h, 1);
	rh_pump_ev(h.ev, coord_after + RDZV_DEADLINE_GRACE_MS + 4000, &h.s[1].done);
	assert_int_equal(h.s[1].done, 1);
	assert_int_equal(h.s[1].rc, GX_EPEERS);
	if (coord_after < RDZV_DEADLINE_GRACE_MS) {
		/* inside the grace: the coordinator's ABORT and its line */
		assert_int_equal(h.co_done, 1);
		assert_string_equal(h.s[1].err, h.co_err);
		assert_non_null(strstr(h.s[1].err, "job-worker-2"));
	} else {
		/* past it: the member's own line, not before deadline + grace */
		assert_int_equal(h.co_done, 0);
		assert_true(h.s[1].at >= d + RDZV_DEADLINE_GRACE_MS);
	}
	rh_free(&h);
}

static void test_deadline_grace(void **state)
{
	(void)state;
	grace(RDZV_DEADLINE_GRACE_MS - 2000);
	grace(RDZV_DEADLINE_GRACE_MS + 2000);
}

/* ---- the member's per-connection deadlines (PROTOCOL.md "Member") ----------
 * Until the coordinator proves the token, its silence ends a phase-1 connection
 * after RDZV_HANDSHAKE_MS; after the proof, a slow ASSIGN and silence are waited
 * for (TCP keepalive watches the connection). A fake coordinator built from the
 * codec answers the handshake and then ASSIGNs / pushes WAITING when told. */
#define FK_MAX 48

struct fk_conn {
	struct rdzv_conn c;
	int open, idx; /* idx: the JOIN's index, -1 before (or a phase-2 connection) */
	int64_t t_open, t_closed, t_assigned, t_waiting;
};

struct fake {
	int lfd;
	int hold_proof; /* read the member's session frames but never send PROOF */
	unsigned char k[RDZV_KEY_LEN];
	struct fk_conn v[FK_MAX];
	size_t n;
};

static void fk_send(struct fk_conn *x, uint16_t type, struct rdzv_buf *b)
{
	assert_int_equal(b->err, 0);
	assert_int_equal(rdzv_conn_send(&x->c, type, b->p, b->len), 0);
	rdzv_buf_free(b);
}

static void fk_frame(struct fake *f, struct fk_conn *x, uint16_t type, const unsigned char *body,
		     size_t len)
{
	struct rdzv_msg *m = malloc(sizeof(*m));
	unsigned char proof[RDZV_MAC_LEN];
	struct rdzv_buf b = {0};

	assert_non_null(m);
	assert_int_equal(rdzv_msg_decode(type, body, len, m), 0);
	if (type == RDZV_HELLO) {
		memcpy(x->c.nm, m->nonce, RDZV_NONCE_LEN);
		randombytes_buf(x->c.nc, RDZV_NONCE_LEN);
		rdzv_put(&b, T_NONCE, x->c.nc, RDZV_NONCE_LEN);
		rdzv_put_u32(&b, T_HAS_TOKEN, 1);
		fk_send(x, RDZV_CHALLENGE, &b);
	} else if (type == RDZV_AUTH) {
		assert_int_equal(rdzv_proof_verify(f->k, 0, x->c.nm, x->c.nc, JOB, m->proof), 0);
		if (!f->hold_proof) {
			rdzv_proof(f->k, 1, x->c.nm, x->c.nc, JOB, proof);
			rdzv_put(&b, T_PROOF, proof, sizeof(proof));
			fk_send(x, RDZV_PROOF, &b);
		}
		rdzv_conn_session(&x->c, f->k);
	} else if (type == RDZV_JOIN) {
		x->idx = (int)m->peer.index; /* VERIFY (phase 2) is never answered */
	}
	free(m);
}

static void fk_poll(struct fake *f)
{
	unsigned char *body;
	uint16_t type;
	size_t i, len;
	int fd, rc;

	while ((fd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct fk_conn *x = &f->v[f->n++];

		assert_true(f->n <= FK_MAX);
		memset(x, 0, sizeof(*x));
		rdzv_conn_init(&x->c, fd, 1);
		x->open = 1;
		x->idx = -1;
		x->t_open = gx_now_ms();
	}
	for (i = 0; i < f->n; i++) {
		struct fk_conn *x = &f->v[i];

		while (x->open && (rc = rdzv_conn_read(&x->c, &type, &body, &len)) != 0) {
			if (rc < 0) {
				x->open = 0;
				x->t_closed = gx_now_ms();
				rdzv_conn_reset(&x->c);
				break;
			}
			fk_frame(f, x, type, body, len);
			free(body);
		}
	}
}

static void fk_assign(struct fk_conn *x, uint32_t world)
{
	struct rdzv_buf b = {0};
	struct rdzv_peer co;

	memset(&co, 0, sizeof(co));
	snprintf(co.name, sizeof(co.name), "job-worker-0");
	co.incarnation = 1;
	snprintf(co.iface, sizeof(co.iface), "lo");
	snprintf(co.addr4, sizeof(co.addr4), "127.0.0.1");
	co.slots = 1;
	co.gid_index = -1;
	rdzv_put_u32(&b, T_RANK, (uint32_t)x->idx);
	rdzv_put_u32(&b, T_WORLD, world);
	rdzv_put_u64(&b, T_ROUND, 7);
	rdzv_put_str(&b, T_MASTER, "127.0.0.1");
	rdzv_put_peer(&b, T_PEER, &co);
	fk_send(x, RDZV_ASSIGN, &b);
	x->t_assigned = gx_now_ms();
}

static void fk_waiting(struct fk_conn *x)
{
	struct rdzv_buf b = {0};

	rdzv_put_u32(&b, T_COUNT, 1);
	rdzv_put_str(&b, T_TEXT, "job-worker-9");
	fk_send(x, RDZV_WAITING, &b);
	x->t_waiting = gx_now_ms();
}

/* The nth (0-based) phase-1 connection that JOINed as index idx, or NULL. */
static struct fk_conn *fk_join(struct fake *f, int idx, int nth)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->v[i].idx == idx && nth-- == 0)
			return &f->v[i];
	return NULL;
}

/* The fake coordinator listens where the harness's members look for theirs. */
static void fk_listen(struct fake *f, struct rh *h)
{
	union gx_sockaddr sa;
	socklen_t len;

	assert_int_equal(rdzv_auth_key(TOKEN, sizeof(TOKEN) - 1, JOB, f->k), 0);
	assert_int_equal(gx_addr_parse("127.0.0.1", h->port, &sa, &len), 0);
	assert_int_equal(gx_tcp_listen(&sa, len, &f->lfd), 0);
}

static void fk_close(struct fake *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		rdzv_conn_reset(&f->v[i].c);
	close(f->lfd);
}

static void test_member_deadlines(void **state)
{
	struct fk_conn *a = NULL, *b1 = NULL;
	struct fake f;
	int64_t t0;
	struct rh h;

	(void)state;
	h_init(&h, 3, 60000);
	memset(&f, 0, sizeof(f));
	fk_listen(&f, &h);
	t0 = gx_now_ms();
	start_member(&h, 1); /* a: ASSIGN late (3.5 s); WAITING before 16 s */
	start_member(&h, 2); /* b: its JOIN is answered only after 16 s; silence after */
	while (!(b1 && b1->t_assigned &&
		 gx_now_ms() - b1->t_assigned >= M_SILENCE_MS + 3 * M_TICK_MS) &&
	       !(b1 && !b1->open) && gx_now_ms() - t0 < 45000) {
		pump(&h, 20);
		fk_poll(&f);
		a = fk_join(&f, 1, 0);
		b1 = fk_join(&f, 2, 0);
		if (a && a->open && !a->t_assigned &&
		    gx_now_ms() - a->t_open >= RDZV_HANDSHAKE_MS - 1500)
			fk_assign(a, 3);
		if (a && a->open && a->t_assigned && !a->t_waiting &&
		    gx_now_ms() - a->t_assigned >= M_SILENCE_MS - 2000)
			fk_waiting(a);
		if (b1 && b1->open && !b1->t_assigned && gx_now_ms() - b1->t_open >= M_SILENCE_MS)
			fk_assign(b1, 3);
	}
	assert_non_null(a);
	assert_non_null(b1);
	/* the coordinator proved the token: however slow its ASSIGN (16 s) and however long
	 * it is silent after (16 s + 3 ticks), b keeps its one connection (a member
	 * never abandons a connection the coordinator serves), watched by TCP keepalive
	 * (answered here by the fake's kernel) */
	assert_int_equal(b1->open, 1);
	assert_true(b1->t_assigned - b1->t_open >= M_SILENCE_MS);
	assert_true(gx_now_ms() - b1->t_assigned >= M_SILENCE_MS + 2 * M_TICK_MS);
	assert_null(fk_join(&f, 2, 1));
	{
		int on = 0, idle = 0, cnt = 0;
		unsigned int uto = 0;
		socklen_t sl = sizeof(on);
		int fd = h.s[2].m->c1.rc.f.fd;

		assert_true(fd >= 0);
		assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, &sl), 0);
		sl = sizeof(idle);
		assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &sl), 0);
		sl = sizeof(cnt);
		assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, &sl), 0);
		sl = sizeof(uto);
		assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, &sl), 0);
		assert_int_equal(on, 1);
		assert_int_equal(idle, M_KA_IDLE_S);
		assert_int_equal(cnt, M_KA_CNT);
		assert_int_equal(uto, (M_KA_IDLE_S + M_KA_CNT * M_KA_INTVL_S) * 1000);
	}
	assert_int_equal(a->open, 1);
	assert_true(a->t_waiting > 0);
	assert_true(gx_now_ms() - a->t_assigned >= M_SILENCE_MS);
	assert_int_equal(h.s[1].done + h.s[2].done, 0); /* both still waiting */
	fk_close(&f);
	rh_free(&h);
}

/* ---- what an impostor at the coordinator's address writes into a final line ----
 * Whoever answers at the coordinator's address can send a clear REJECT with ~1,000
 * printable bytes of its choosing. The member's line quotes them, bounded and marked as
 * the unauthenticated sender's (on 9740b38 they were the line's own tail). */
static void impostor(uint32_t token)
{
	char text[1000], want[200];
	struct rdzv_config cfg;
	struct rdzv_buf b = {0};
	unsigned char *frame;
	union gx_sockaddr sa;
	socklen_t len;
	int lfd = -1, fd, i;
	size_t n;
	int64_t t0;
	struct rh h;

	/* a forged log line, then padding, then the part that must not come through */
	n = (size_t)snprintf(text, sizeof(text),
			     "bad token\n2026-01-01T00:00:00Z gxboot[1] info: all fine; ");
	memset(text + n, 'x', sizeof(text) - n - 12);
	snprintf(text + sizeof(text) - 12, 12, " curl x|sh");
	rdzv_put_u32(&b, T_CODE, (uint32_t)GX_EAUTH);
	rdzv_put_str(&b, T_TEXT, text);
	frame = malloc(RDZV_HDR_LEN + b.len);
	assert_non_null(frame);
	rdzv_hdr_encode(frame, RDZV_REJECT, (uint32_t)b.len);
	memcpy(frame + RDZV_HDR_LEN, b.p, b.len);

	h_init(&h, 2, 60000);
	assert_int_equal(gx_addr_parse("127.0.0.1", h.port, &sa, &len), 0);
	assert_int_equal(gx_tcp_listen(&sa, len, &lfd), 0);
	member_cfg(&h, 1, &cfg);
	cfg.deadline_ms = gx_now_ms() + 1500;
	if (!token) {
		cfg.token = NULL;
		cfg.token_len = 0;
	}
	rh_start_member_in(&h, h.ev, 1, &cfg);
	t0 = gx_now_ms();
	while (!h.s[1].done && gx_now_ms() - t0 < 6000) {
		pump(&h, 20);
		for (i = 0; i < 8 && (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0; i++) {
			send_all(fd, frame, RDZV_HDR_LEN + b.len);
			close(fd);
		}
	}
	assert_int_equal(h.s[1].done, 1);
	assert_int_equal(h.s[1].rc, GX_EREJECTED);
	printf("# %s\n", h.s[1].err);
	snprintf(want, sizeof(want),
		 "(the coordinator said, unauthenticated: \"bad token?2026-01-01T00:00:00Z "
		 "gxboot[1] info: all fine; xx");
	assert_non_null(strstr(h.s[1].err, want));
	assert_non_null(strstr(h.s[1].err, "x...\")"));
	assert_null(strstr(h.s[1].err, "curl"));
	assert_true(strlen(h.s[1].err) < 100 + RDZV_UNAUTH_TEXT + 30);
	close(lfd);
	rdzv_buf_free(&b);
	free(frame);
	rh_free(&h);
}

static void test_impostor_reject_text(void **state)
{
	(void)state;
	impostor(1); /* retried until the deadline, then the line */
	impostor(0); /* no token: at once */
}

/* ---- what a member says when it was accepted and closed, then refused ----------
 * For 1.5 s the coordinator's address accepts every connection and closes it before any
 * answer (a full budget, a full relay), then nothing listens there (the coordinator gone
 * at its own deadline). The line names both: on 9740b38 it said only "Connection refused",
 * the last failure, as if nothing had ever listened. */
static void test_member_closed_then_refused(void **state)
{
	union gx_sockaddr sa;
	struct rdzv_config cfg;
	socklen_t len;
	int lfd = -1, fd, n = 0;
	int64_t t0;
	struct rh h;

	(void)state;
	h_init(&h, 2, 60000);
	assert_int_equal(gx_addr_parse("127.0.0.1", h.port, &sa, &len), 0);
	assert_int_equal(gx_tcp_listen(&sa, len, &lfd), 0);
	member_cfg(&h, 1, &cfg);
	cfg.deadline_ms = gx_now_ms() + 3000;
	rh_start_member_in(&h, h.ev, 1, &cfg);
	t0 = gx_now_ms();
	while (!h.s[1].done && gx_now_ms() - t0 < 8000) {
		pump(&h, 10);
		while (lfd >= 0 && (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
			close(fd);
			n++;
		}
		if (lfd >= 0 && gx_now_ms() - t0 >= 1500) {
			close(lfd);
			lfd = -1;
		}
	}
	printf("# %d connections accepted and closed; then: %s\n", n, h.s[1].err);
	assert_true(n > 0);
	assert_int_equal(h.s[1].rc, GX_EPEERS);
	assert_non_null(strstr(h.s[1].err, "never answered in 3s (127.0.0.1:"));
	assert_non_null(strstr(h.s[1].err, "Connection refused; before:"));
	assert_non_null(strstr(h.s[1].err, "accepted, then closed before any answer"));
	rh_free(&h);
}

/* ---- pipelined AUTH: the JOIN comes in the AUTH's flight --------------------
 * A coordinator that verifies AUTH and never sends PROOF still gets a JOIN whose MAC
 * checks under the session key with sequence 0; the member accepts nothing meanwhile. */
static void test_member_pipelined_join(void **state)
{
	struct fk_conn *a = NULL;
	struct fake f;
	int64_t t0;
	struct rh h;

	(void)state;
	h_init(&h, 2, 60000);
	memset(&f, 0, sizeof(f));
	f.hold_proof = 1;
	fk_listen(&f, &h);
	t0 = gx_now_ms();
	start_member(&h, 1);
	while (!a && gx_now_ms() - t0 < 3000) {
		pump(&h, 20);
		fk_poll(&f);
		a = fk_join(&f, 1, 0);
	}
	assert_non_null(a); /* the JOIN arrived, MAC'd, without any PROOF sent */
	assert_int_equal(a->open, 1);
	assert_int_equal(h.s[1].done, 0);
	/* an answer without the proof of the token does not hold the member: silent
	 * RDZV_HANDSHAKE_MS after its CHALLENGE, the connection is dropped and retried */
	while (a->open && gx_now_ms() - t0 < RDZV_HANDSHAKE_MS + 4 * M_TICK_MS) {
		pump(&h, 20);
		fk_poll(&f);
	}
	assert_int_equal(a->open, 0);
	assert_true(a->t_closed - a->t_open >= RDZV_HANDSHAKE_MS);
	rh_free(&h);
}

/* ---- a COMMIT that found no live session waits for the member --------------
 * Member 1 verifies, then its phase-1 session breaks (the coordinator's side
 * cannot write) while member 1's own loop (ev2) stands still, as a loaded pod's
 * does; member 2's VERIFY completes the world.
 * The COMMIT cannot reach member 1, so the coordinator is not done until member
 * 1 reconnects and takes it (before: done at once, and member 1 looped on a
 * closed port until its deadline).
 */
static void test_commit_waits_for_lost_session(void **state)
{
	struct rdzv_config cfg;
	struct gx_ev *ev2 = NULL;
	int64_t until;
	struct rh h;

	(void)state;
	h_init(&h, 3, 20000);
	assert_int_equal(gx_ev_new(&ev2), 0);
	start_coord(&h);
	member_cfg(&h, 1, &cfg);
	rh_start_member_in(&h, ev2, 1, &cfg);
	until = gx_now_ms() + 5000;
	while (h.co->nverified < 1 && gx_now_ms() < until) {
		rh_pump_ev(h.ev, 10, NULL);
		rh_pump_ev(ev2, 10, NULL);
	}
	assert_int_equal(h.co->nverified, 1);
	assert_non_null(h.co->st[1].conn);
	/* the session breaks under the COMMIT: its write fails (EPIPE) */
	assert_int_equal(shutdown(h.co->st[1].conn->rc.f.fd, SHUT_WR), 0);
	start_member(&h, 2);
	until = gx_now_ms() + 5000;
	while (!h.s[2].done && gx_now_ms() < until)
		pump(&h, 10);
	assert_int_equal(h.s[2].rc, 0);
	assert_true(h.co->committed);
	pump(&h, 600); /* sweeps: without a live session for member 1 it is not done */
	assert_int_equal(h.co_done, 0);
	assert_int_equal(h.s[1].done, 0);
	until = gx_now_ms() + 10000;
	while ((!h.s[1].done || !h.co_done) && gx_now_ms() < until) {
		rh_pump_ev(ev2, 10, NULL);
		pump(&h, 10);
	}
	assert_int_equal(h.s[1].rc, 0);
	assert_int_equal(h.s[1].rank, 1);
	assert_int_equal(h.co_rc, 0);
	assert_true(h.co_at >= h.s[1].at - 1000);
	rh_free(&h);
	gx_ev_free(ev2);
}

/* ---- the phase-2 ticket ----------------------------------------------------- */
/* The next frame decoded into m: its type, 0 when the coordinator closed the connection
 * without one, -1 when nothing came within ms. */
static int cli_msg(struct rh *h, struct cli *x, int64_t ms, struct rdzv_msg *m)
{
	int64_t until = gx_now_ms() + ms;
	unsigned char *body = NULL;
	uint16_t type = 0;
	size_t len;
	int rc;

	for (;;) {
		rc = rdzv_conn_read(&x->c, &type, &body, &len);
		if (rc != 0 || gx_now_ms() >= until)
			break;
		pump(h, 20);
	}
	if (rc == 1)
		assert_int_equal(rdzv_msg_decode(type, body, len, m), 0);
	free(body);
	return rc == 1 ? type : rc < 0 ? 0 : -1;
}

/* Member i's VERIFY (incarnation 42, as cli_join's) sent on x, in its session. */
static void cli_verify(struct cli *x, uint16_t type, uint32_t i, uint64_t round, uint32_t flags)
{
	struct rdzv_buf b = {0};
	char name[32];

	snprintf(name, sizeof(name), "job-worker-%u", i);
	rdzv_put_str(&b, T_NAME, name);
	rdzv_put_u32(&b, T_INDEX, i);
	rdzv_put_u64(&b, T_INCARNATION, 42);
	rdzv_put_u64(&b, T_ROUND, round);
	rdzv_put_u32(&b, T_FLAGS, flags);
	cli_send(x, type, b.p, b.len);
	rdzv_buf_free(&b);
}

/* A phase-2 connection from src whose first frame is member 1's VERIFY MAC'd under vkey. */
static void cli_tverify_from(struct rh *h, struct cli *x, const char *src,
			     const unsigned char vkey[RDZV_KEY_LEN], uint64_t round, uint32_t flags)
{
	cli_open_from(h, x, src);
	rdzv_conn_session_ticket(&x->c, vkey);
	cli_verify(x, RDZV_TVERIFY, 1, round, flags);
}

/* The same from member 1's secondary address (cli_join's 127.0.0.2). */
static void cli_tverify(struct rh *h, struct cli *x, const unsigned char vkey[RDZV_KEY_LEN],
			uint64_t round, uint32_t flags)
{
	cli_open_from(h, x, "127.0.0.2");
	rdzv_conn_session_ticket(&x->c, vkey);
	cli_verify(x, RDZV_TVERIFY, 1, round, flags);
}

/* Member 1 joined on p1 (session, JOIN, ASSIGN in m): vkey is its ticket's key. */
static void cli_joined_ticket(struct rh *h, struct cli *p1, struct rdzv_msg *m,
			      unsigned char vkey[RDZV_KEY_LEN])
{
	cli_session(h, p1);
	cli_join(p1, 256);
	assert_int_equal(cli_msg(h, p1, 3000, m), RDZV_ASSIGN);
	assert_true(m->has_vticket);
	rdzv_ticket_key(p1->c.skey, m->vticket, vkey);
}

/*
 * The ASSIGN carries a ticket; a VERIFY MAC'd under its key, as the first frame of a
 * connection, verifies without a handshake and is answered under the same key. A MAC
 * under another key is dropped unanswered and spends nothing; the ticket proves once.
 */
static void test_phase2_ticket(void **state)
{
	struct rdzv_msg *m = malloc(sizeof(*m));
	unsigned char vkey[RDZV_KEY_LEN], bad[RDZV_KEY_LEN];
	struct cli p1, p2, replay, wrong;
	uint64_t round;
	struct rh h;

	(void)state;
	assert_non_null(m);
	h_init(&h, 3, 20000); /* member 2 never comes: no COMMIT closes the listener */
	start_coord(&h);
	cli_joined_ticket(&h, &p1, m, vkey);
	round = m->round;

	memcpy(bad, vkey, sizeof(bad));
	bad[0] ^= 1;
	cli_tverify(&h, &wrong, bad, round, 0);
	assert_int_equal(cli_msg(&h, &wrong, 3000, m), 0);
	assert_int_equal(h.co->nverified, 0);

	cli_tverify(&h, &p2, vkey, round, 0);
	assert_int_equal(cli_msg(&h, &p2, 3000, m), RDZV_VERIFIED);
	assert_int_equal(m->code, 0);
	assert_int_equal(h.co->nverified, 1);
	assert_int_equal(h.co->res.ntickets, 1);

	cli_tverify(&h, &replay, vkey, round, 0);
	assert_int_equal(cli_msg(&h, &replay, 3000, m), 0);
	assert_int_equal(h.co->res.ntickets, 1);

	rdzv_conn_reset(&p1.c);
	rdzv_conn_reset(&p2.c);
	rdzv_conn_reset(&replay.c);
	rdzv_conn_reset(&wrong.c);
	rh_free(&h);
	free(m);
}

/*
 * A ticket is bound to the secondary address of its member's JOIN: the right TVERIFY,
 * copied on the path and sent first from another address, is refused (a VERIFIED error,
 * nothing verified, the ticket not spent), and the member's own still verifies. On 9740b38
 * it verified the member, with a warning.
 */
static void test_phase2_ticket_foreign(void **state)
{
	struct rdzv_msg *m = malloc(sizeof(*m));
	unsigned char vkey[RDZV_KEY_LEN];
	struct cli p1, own, copy;
	uint64_t round;
	struct rh h;

	(void)state;
	assert_non_null(m);
	h_init(&h, 3, 20000);
	start_coord(&h);
	cli_joined_ticket(&h, &p1, m, vkey);
	round = m->round;

	cli_tverify_from(&h, &copy, "127.0.0.3", vkey, round, 0);
	assert_int_equal(cli_msg(&h, &copy, 3000, m), RDZV_VERIFIED);
	assert_int_not_equal(m->code, 0);
	assert_non_null(
	    strstr(m->text, "from 127.0.0.3, not from the secondary address 127.0.0.2"));
	assert_int_equal(h.co->nverified, 0);
	assert_true(h.co->st[1].vt); /* not spent */
	assert_string_equal(h.co->tab[1].seen_from, "");

	cli_tverify(&h, &own, vkey, round, 0);
	assert_int_equal(cli_msg(&h, &own, 3000, m), RDZV_VERIFIED);
	assert_int_equal(m->code, 0);
	assert_int_equal(h.co->nverified, 1);
	assert_string_equal(h.co->tab[1].seen_from, "127.0.0.2");

	rdzv_conn_reset(&p1.c);
	rdzv_conn_reset(&own.c);
	rdzv_conn_reset(&copy.c);
	rh_free(&h);
	free(m);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median over 31 batches of 4000 calls (200 under valgrind) to the ticket check of m,
 * in ns per call. */
static int64_t ticket_check_ns(struct rh *h, const struct rdzv_msg *m, const unsigned char *body,
			       size_t blen, const char *want)
{
	int n = getenv("GX_TEST_VALGRIND") ? 200 : 4000;
	int64_t t[31];
	struct cpeer *sp;
	int i, k;

	for (i = 0; i < 31; i++) {
		int64_t t0 = gx_now_us();

		for (k = 0; k < n; k++)
			assert_string_equal(rdzv_co_ticket_check(h->co, m, body, blen, &sp), want);
		t[i] = (gx_now_us() - t0) * 1000 / n;
	}
	qsort(t, 31, sizeof(t[0]), cmp_i64);
	return t[15];
}

/*
 * A TVERIFY for a slot without an unused ticket costs the same MAC work as one for a slot
 * with one (a decoy key): its time tells no one who holds a ticket. Printed, not asserted
 * (timing assertions flake on a loaded machine): the check of a wrong MAC for a slot with a ticket,
 * for a slot without one, and for an unknown peer; runs alternate so the machine's load falls on
 * all three alike.
 */
static void test_phase2_ticket_timing(void **state)
{
	struct rdzv_msg *m = malloc(sizeof(*m)), *v = malloc(sizeof(*v));
	unsigned char vkey[RDZV_KEY_LEN], frame[512];
	int64_t with[5], without[5], unknown[5];
	struct rdzv_buf b = {0};
	struct cli p1;
	struct rh h;
	size_t blen;
	int r;

	(void)state;
	assert_non_null(m);
	assert_non_null(v);
	h_init(&h, 3, 20000);
	start_coord(&h);
	cli_joined_ticket(&h, &p1, m, vkey);
	rdzv_put_str(&b, T_NAME, "job-worker-1");
	rdzv_put_u32(&b, T_INDEX, 1);
	rdzv_put_u64(&b, T_INCARNATION, 42);
	rdzv_put_u64(&b, T_ROUND, m->round);
	rdzv_put_u32(&b, T_FLAGS, 0);
	blen = b.len;
	assert_true(blen + RDZV_MAC_LEN <= sizeof(frame));
	memcpy(frame, b.p, blen);
	randombytes_buf(frame + blen, RDZV_MAC_LEN); /* a guess: never the right MAC */
	rdzv_buf_free(&b);
	assert_int_equal(rdzv_msg_decode(RDZV_VERIFY, frame, blen, v), 0);
	for (r = 0; r < 5; r++) {
		h.co->st[1].vt = 1;
		with[r] = ticket_check_ns(&h, v, frame, blen, "wrong ticket");
		h.co->st[1].vt = 0;
		without[r] = ticket_check_ns(&h, v, frame, blen, "no unused ticket for it");
		v->index = 2; /* job-worker-2's index, job-worker-1's name */
		unknown[r] =
		    ticket_check_ns(&h, v, frame, blen, "ticket VERIFY for an unknown peer");
		v->index = 1;
	}
	qsort(with, 5, sizeof(with[0]), cmp_i64);
	qsort(without, 5, sizeof(without[0]), cmp_i64);
	qsort(unknown, 5, sizeof(unknown[0]), cmp_i64);
	printf("# TVERIFY ticket check, ns per call (median of 5 runs of 31 batches): ticket held, "
	       "wrong MAC %lld; no ticket %lld (%.2fx); unknown peer %lld (%.2fx)\n",
	       (long long)with[2], (long long)without[2], (double)without[2] / (double)with[2],
	       (long long)unknown[2], (double)unknown[2] / (double)with[2]);
	rdzv_conn_reset(&p1.c);
	rh_free(&h);
	free(m);
	free(v);
}

/*
 * With RDMA-CM due the TVERIFY says the check follows (RDZV_VF_RDMA_PENDING): the ticket is
 * spent and the session is up, but nothing is verified or answered until the member's
 * VERIFY comes in it (seq 1), and only the ticket's own member's VERIFY: one for another
 * peer, or a JOIN, drops the connection.
 */
static void ticket_pending(uint32_t vi, int join)
{
	struct rdzv_msg *m = malloc(sizeof(*m));
	unsigned char vkey[RDZV_KEY_LEN];
	struct cli p1, p2;
	struct rh h;

	assert_non_null(m);
	h_init(&h, 3, 20000);
	start_coord(&h);
	cli_joined_ticket(&h, &p1, m, vkey);
	cli_tverify(&h, &p2, vkey, m->round, RDZV_VF_RDMA_PENDING);
	assert_int_equal(cli_msg(&h, &p2, 300, m), -1); /* open, unanswered */
	assert_false(h.co->st[1].vt);			/* spent */
	assert_int_equal(h.co->nverified, 0);
	if (join)
		cli_join(&p2, 256); /* a JOIN in the ticket's session: dropped */
	else
		cli_verify(&p2, RDZV_VERIFY, vi, h.co->round, RDZV_VF_RDMA);
	assert_int_equal(cli_msg(&h, &p2, 3000, m), vi == 1 && !join ? RDZV_VERIFIED : 0);
	if (vi == 1 && !join)
		assert_int_equal(m->code, 0);
	assert_int_equal(h.co->njoined, 1);
	assert_int_equal(h.co->nverified, vi == 1 && !join);
	assert_int_equal(h.co->res.ntickets, vi == 1 && !join);
	rdzv_conn_reset(&p1.c);
	rdzv_conn_reset(&p2.c);
	rh_free(&h);
	free(m);
}

static void test_phase2_ticket_pending(void **state)
{
	(void)state;
	ticket_pending(1, 0);
	ticket_pending(2, 0);
	ticket_pending(1, 1);
}

/*
 * A member whose ticket the coordinator no longer holds (its TVERIFY is dropped
 * unanswered) verifies with the full handshake on its retry: the ticket saves work, it is
 * never needed. With RDMA-CM due the same: its TVERIFY only opened the session (the
 * check follows it unacknowledged), so the check it started then may run a second time on
 * the retry, after the PROOF.
 */
static void ticket_fallback(int rdma)
{
	struct rh_rdma f = {.delay_ms = 1};
	struct rdzv_rdma_ops ops;
	struct rdzv_config cfg;
	struct gx_ev *ev2 = NULL;
	int64_t until;
	struct rh h;

	rh_rdma_ops(&f, &ops);
	h_init(&h, 2, 20000);
	assert_int_equal(gx_ev_new(&ev2), 0);
	rh_coord_cfg(&h, &cfg);
	if (rdma)
		snprintf(cfg.self.rdma_dev, sizeof(cfg.self.rdma_dev), "mlx5_0");
	rh_start_coord_cfg(&h, &cfg);
	member_cfg(&h, 1, &cfg);
	if (rdma) {
		snprintf(cfg.self.rdma_dev, sizeof(cfg.self.rdma_dev), "mlx5_1");
		cfg.rdma = &ops;
	}
	rh_start_member_in(&h, ev2, 1, &cfg);
	until = gx_now_ms() + 5000;
	while (!h.co->st[1].vt && gx_now_ms() < until) {
		rh_pump_ev(ev2, 10, NULL);
		rh_pump_ev(h.ev, 10, NULL); /* the member reads the ASSIGN only in ev2 */
	}
	assert_true(h.co->st[1].vt);
	h.co->st[1].vt = 0; /* as if replaced: its TVERIFY finds no ticket */
	until = gx_now_ms() + 8000;
	while ((!h.s[1].done || !h.co_done) && gx_now_ms() < until) {
		rh_pump_ev(ev2, 10, NULL);
		pump(&h, 10);
	}
	assert_int_equal(h.s[1].rc, 0);
	assert_int_equal(h.co_rc, 0);
	assert_int_equal(h.co_res.ntickets, 0);
	assert_int_equal(h.s[1].m->attempt2, 1); /* one failed phase 2: the dropped TVERIFY */
	if (rdma) {
		assert_in_range(f.calls, 1, 2);
		assert_int_equal(h.s[1].res.rdma_verified, 1);
	}
	rh_free(&h);
	gx_ev_free(ev2);
}

static void test_phase2_ticket_fallback(void **state)
{
	(void)state;
	ticket_fallback(0);
	ticket_fallback(1);
}

/* A VFAIL ends the member's ticket on the coordinator too: a TVERIFY it gave up on (its
 * bytes seen on the secondary network) is dropped later. */
static void test_phase2_ticket_vfail(void **state)
{
	struct rdzv_msg *m = malloc(sizeof(*m));
	unsigned char vkey[RDZV_KEY_LEN];
	struct rdzv_buf b = {0};
	struct cli p1, late;
	struct rh h;

	(void)state;
	assert_non_null(m);
	h_init(&h, 3, 20000);
	start_coord(&h);
	cli_joined_ticket(&h, &p1, m, vkey);
	rdzv_put_str(&b, T_TEXT, "connect: timed out");
	cli_send(&p1, RDZV_VFAIL, b.p, b.len);
	rdzv_buf_free(&b);
	pump(&h, 100);
	assert_false(h.co->st[1].vt);
	cli_tverify(&h, &late, vkey, m->round, 0);
	assert_int_equal(cli_msg(&h, &late, 3000, m), 0);
	assert_int_equal(h.co->nverified, 0);
	rdzv_conn_reset(&p1.c);
	rdzv_conn_reset(&late.c);
	rh_free(&h);
	free(m);
}

/* ---- RDZV_LIST_NAMES: names quoted in one line ----------------------------- */
static void list_names(uint32_t missing, const char *tail)
{
	char last[32];
	struct rh h;

	h_init(&h, missing + 1, 600);
	start_coord(&h);
	rh_pump_ev(h.ev, 5000, &h.co_done);
	assert_int_equal(h.co_rc, GX_EPEERS);
	snprintf(last, sizeof(last), "job-worker-%u", RDZV_LIST_NAMES);
	assert_non_null(strstr(h.co_err, last));
	snprintf(last, sizeof(last), "job-worker-%u", RDZV_LIST_NAMES + 1);
	assert_null(strstr(h.co_err, last));
	if (tail)
		assert_string_equal(h.co_err + strlen(h.co_err) - strlen(tail), tail);
	else
		assert_null(strstr(h.co_err, " more"));
	rh_free(&h);
}

static void test_list_names(void **state)
{
	(void)state;
	list_names(RDZV_LIST_NAMES, NULL);
	list_names(RDZV_LIST_NAMES + 1, " and 1 more");
}

/* ---- string fields and TLV lengths ------------------------------------------ */
static int peer_with(uint16_t t, size_t n)
{
	char *s = malloc(n + 1);
	struct rdzv_buf b = {0};
	struct rdzv_peer p;
	int rc;

	assert_non_null(s);
	memset(s, 'a', n);
	s[n] = '\0';
	rdzv_put_str(&b, t, s);
	assert_int_equal(b.err, 0);
	rc = rdzv_peer_decode(b.p, b.len, &p);
	rdzv_buf_free(&b);
	free(s);
	return rc;
}

static void test_field_sizes(void **state)
{
	static const struct {
		uint16_t t;
		size_t max;
	} f[] = {
	    {T_NAME, 253}, {T_IFACE, 15}, {T_RDMA_DEV, 63}, {T_ADDR6, 45}, {T_ND_WHY, 255},
	};
	struct rdzv_buf b = {0};
	struct rdzv_msg *m = malloc(sizeof(*m));
	unsigned char *big = calloc(1, 0x10000);
	size_t i;

	(void)state;
	assert_non_null(m);
	assert_non_null(big);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		assert_int_equal(peer_with(f[i].t, f[i].max), 0);
		assert_int_equal(peer_with(f[i].t, f[i].max + 1), GX_EPROTO);
	}
	/* free text (REJECT / ABORT reason): 1023 */
	memset(big, 't', 1024);
	rdzv_put(&b, T_TEXT, big, 1023);
	assert_int_equal(rdzv_msg_decode(RDZV_ABORT, b.p, b.len, m), 0);
	rdzv_buf_free(&b);
	rdzv_put(&b, T_TEXT, big, 1024);
	assert_int_equal(rdzv_msg_decode(RDZV_ABORT, b.p, b.len, m), GX_EPROTO);
	rdzv_buf_free(&b);
	/* one TLV value: a u16 length */
	memset(big, 0, 0x10000);
	rdzv_put(&b, T_UNKNOWN, big, 0xffff);
	assert_int_equal(b.err, 0);
	rdzv_buf_free(&b);
	rdzv_put(&b, T_UNKNOWN, big, 0x10000);
	assert_int_equal(b.err, GX_EPROTO);
	rdzv_buf_free(&b);
	free(big);
	free(m);
}

/* ---- RDMA-CM ACC: mtu 256..4096 (power of two), max_write <= RDZV_RDMA_MAX_WRITE */
static int acc_with(uint32_t mtu, uint32_t max_write)
{
	struct rdzv_rdma_acc a = {.mtu = mtu, .max_write = max_write, .nonce = {7}};
	unsigned char buf[RDZV_RDMA_ACC_LEN];

	rdzv_rdma_enc_acc(&a, buf);
	memset(&a, 0, sizeof(a));
	return rdzv_rdma_dec_acc(buf, sizeof(buf), &a);
}

static void test_rdma_acc_bounds(void **state)
{
	(void)state;
	assert_int_equal(acc_with(4096, RDZV_RDMA_MAX_WRITE), 0);
	assert_int_equal(acc_with(256, 1), 0);
	assert_int_equal(acc_with(0, 1), 0); /* unknown MTU */
	assert_int_equal(acc_with(4096, RDZV_RDMA_MAX_WRITE + 1), GX_EPROTO);
	assert_int_equal(acc_with(8192, 1), GX_EPROTO);
	assert_int_equal(acc_with(128, 1), GX_EPROTO);
	assert_int_equal(acc_with(1000, 1), GX_EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_max_body_hello),
	    cmocka_unit_test(test_max_body_join),
	    cmocka_unit_test(test_handshake_cap),
	    cmocka_unit_test(test_max_table_body),
	    cmocka_unit_test(test_max_world),
	    cmocka_unit_test(test_max_observers),
	    cmocka_unit_test(test_max_conns),
	    cmocka_unit_test(test_nofile_below_world),
	    cmocka_unit_test(test_hello_deadline),
	    cmocka_unit_test(test_hello_deadline_flood),
	    cmocka_unit_test(test_auth_deadline_slow),
	    cmocka_unit_test(test_hello_deadline_slow_loop),
	    cmocka_unit_test(test_handshake_deadline),
	    cmocka_unit_test(test_ping_window),
	    cmocka_unit_test(test_deadline_grace),
	    cmocka_unit_test(test_member_deadlines),
	    cmocka_unit_test(test_member_pipelined_join),
	    cmocka_unit_test(test_commit_waits_for_lost_session),
	    cmocka_unit_test(test_impostor_reject_text),
	    cmocka_unit_test(test_member_closed_then_refused),
	    cmocka_unit_test(test_phase2_ticket),
	    cmocka_unit_test(test_phase2_ticket_foreign),
	    cmocka_unit_test(test_phase2_ticket_timing),
	    cmocka_unit_test(test_phase2_ticket_pending),
	    cmocka_unit_test(test_phase2_ticket_fallback),
	    cmocka_unit_test(test_phase2_ticket_vfail),
	    cmocka_unit_test(test_list_names),
	    cmocka_unit_test(test_field_sizes),
	    cmocka_unit_test(test_rdma_acc_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
