/* SPDX-License-Identifier: MIT */
/*
 * test_wire_golden.c - the bytes of the three stream wires, pinned: the rendezvous (a clear
 * HELLO, session frames with their BLAKE2b MAC both ways, read direct, buffered and carried),
 * check (the ECHO and STREAM headers, sealed REPORT and RESULT frames, what the real
 * check service answers to an ECHO and to a STREAM, and what a prober sends as its STREAM)
 * and remote exec (handshake sizes and
 * proofs, the 4-byte length prefix of secretstream frames checked against a reference push
 * and pull written here, and the real server's handshake). Fixed keys, nonces, sequences,
 * rounds and ranks give fixed bytes: a change to how frames are read or written that moves
 * one byte fails here; only a commit that bumps a wire version on purpose changes these.
 */
#include "agent/check/check_int.h"
#include "agent/remote/rsh_int.h"
#include "rdzv/rdzv_int.h"
#include "tests/unit/check_fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

/* Compares n bytes with a hex string; on a mismatch prints both and fails. */
static void expect_hex(const unsigned char *p, size_t n, const char *hex)
{
	char *got = malloc(2 * n + 1);
	size_t i;
	int same;

	assert_non_null(got);
	got[0] = '\0';
	for (i = 0; i < n; i++)
		snprintf(got + 2 * i, 3, "%02x", p[i]);
	same = strcmp(got, hex) == 0;
	if (!same)
		print_error("want %s\n got  %s\n", hex, got);
	free(got);
	assert_true(same);
}

static void fill_seq(unsigned char *p, size_t n, unsigned char from)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(from + i);
}

/* A connected, non-blocking AF_UNIX stream pair. */
static void sock_pair(int fds[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds),
			 0);
}

/* Exactly n bytes wait on fd, and no more. */
static void read_exact(int fd, unsigned char *p, size_t n)
{
	unsigned char extra;

	assert_int_equal(recv(fd, p, n, MSG_DONTWAIT), (ssize_t)n);
	assert_int_equal(recv(fd, &extra, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
}

static void pump(struct gx_ev *ev, int64_t ms)
{
	gx_ev_run_until(ev, gx_now_ms() + ms);
}

/* n bytes from fd, pumping ev meanwhile (at most 2 s); 0 at EOF first. */
static size_t recv_pumped(struct gx_ev *ev, int fd, unsigned char *p, size_t n)
{
	size_t got = 0;
	ssize_t r;
	int k;

	for (k = 0; k < 400 && got < n; k++) {
		pump(ev, 5);
		r = recv(fd, p + got, n - got, MSG_DONTWAIT);
		if (r == 0)
			break;
		if (r > 0)
			got += (size_t)r;
	}
	return got;
}

/* n bytes to fd, pumping ev whenever the socket is full. */
static void send_pumped(struct gx_ev *ev, int fd, const unsigned char *p, size_t n)
{
	size_t off = 0;
	ssize_t w;
	int k;

	for (k = 0; k < 4000 && off < n; k++) {
		w = send(fd, p + off, n - off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0)
			off += (size_t)w;
		else
			pump(ev, 2);
	}
	assert_int_equal(off, n);
}

/* A TCP connection from 127.0.0.1 to 127.0.0.1:port, connected. */
static int tcp_to(uint16_t port)
{
	union gx_sockaddr sa;
	socklen_t sl;
	int fd = -1;

	assert_int_equal(gx_addr_parse("127.0.0.1", port, &sa, &sl), 0);
	assert_int_equal(gx_tcp_connect(&sa, sl, NULL, 0, &fd), 0);
	return fd;
}

/* ---- rendezvous ---------------------------------------------------------- */

/* the session keys' inputs: K (the job's key), the member's and the coordinator's nonces */
static void rdzv_keys(struct rdzv_conn *c, unsigned char k[RDZV_KEY_LEN])
{
	fill_seq(k, RDZV_KEY_LEN, 0x40);
	fill_seq(c->nm, RDZV_NONCE_LEN, 0x00);
	fill_seq(c->nc, RDZV_NONCE_LEN, 0x20);
}

static void hello_body(struct rdzv_buf *b)
{
	unsigned char nm[RDZV_NONCE_LEN];

	fill_seq(nm, sizeof(nm), 0x00);
	rdzv_put(b, T_NONCE, nm, sizeof(nm));
	rdzv_put_u32(b, T_HAS_TOKEN, 1);
	rdzv_put_str(b, T_NAME, "job-worker-1");
	rdzv_put_u32(b, T_INDEX, 1);
	rdzv_put_str(b, T_JOB_ID, "job-1");
	assert_int_equal(b->err, 0);
}

static void join_body(struct rdzv_buf *b)
{
	rdzv_put_str(b, T_NAME, "job-worker-1");
	rdzv_put_u32(b, T_INDEX, 1);
	rdzv_put_str(b, T_ADDR4, "192.168.2.11");
	rdzv_put_u32(b, T_SLOTS, 8);
	assert_int_equal(b->err, 0);
}

/* "GXB1" 2.0, type 1, length 77 | T_NONCE | T_HAS_TOKEN 1 | T_NAME | T_INDEX 1 | T_JOB_ID */
#define HELLO_HEX                                                                                  \
	"47584231020000010000004d"                                                                 \
	"00010020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"                 \
	"0002000400000001"                                                                         \
	"0003000c6a6f622d776f726b65722d31"                                                         \
	"0008000400000001"                                                                         \
	"000400056a6f622d31"

/* The member's HELLO (its TLVs in its order), clear; the coordinator reads it one byte at a
 * time from its socket, and buffered from what one recv brought, 5 bytes at a time. */
static void test_rdzv_hello(void **state)
{
	struct rdzv_conn m, co;
	struct rdzv_buf b = {0};
	unsigned char wire[256], *body = NULL;
	size_t n, k, len = 0;
	uint16_t type = 0;
	int a[2], z[2], rc = 0;

	(void)state;
	hello_body(&b);
	n = RDZV_HDR_LEN + b.len;
	assert_true(n <= sizeof(wire));
	sock_pair(a);
	rdzv_conn_init(&m, a[0], 0);
	assert_int_equal(rdzv_conn_send(&m, RDZV_HELLO, b.p, b.len), 0);
	read_exact(a[1], wire, n);
	expect_hex(wire, n, HELLO_HEX);
	rdzv_conn_init(&co, a[1], 1);
	for (k = 0; k < n; k++) {
		assert_int_equal(send(a[0], wire + k, 1, 0), 1);
		rc = rdzv_conn_read(&co, &type, &body, &len);
		assert_int_equal(rc, k + 1 < n ? 0 : 1);
	}
	assert_int_equal(type, RDZV_HELLO);
	assert_int_equal(len, b.len);
	assert_memory_equal(body, b.p, b.len);
	free(body);
	rdzv_conn_reset(&co);
	rdzv_conn_reset(&m);
	sock_pair(z);
	rdzv_conn_init(&co, z[0], 1);
	co.f.fed = 1;
	for (k = 0; k < n; k += 5) {
		gx_frame_feed(&co.f, wire + k, n - k < 5 ? n - k : 5);
		rc = rdzv_conn_read(&co, &type, &body, &len);
		assert_int_equal(rc, k + 5 < n ? 0 : 1);
		assert_int_equal(co.f.inlen, 0);
	}
	assert_memory_equal(body, b.p, b.len);
	free(body);
	rdzv_conn_reset(&co);
	close(z[1]);
	rdzv_buf_free(&b);
}

/* The trailer by hand: keyed BLAKE2b-256 under the session key S over dir u8 | seq u64 |
 * type u16 | body, all in network order. */
static void expect_trailer(const struct rdzv_conn *c, const unsigned char k[RDZV_KEY_LEN],
			   uint8_t dir, uint64_t seq, const unsigned char *frame, size_t n)
{
	unsigned char s[RDZV_KEY_LEN], pre[11], mac[RDZV_MAC_LEN];
	crypto_generichash_state st;
	int i;

	rdzv_session_key(k, c->nm, c->nc, s);
	pre[0] = dir;
	for (i = 8; i >= 1; i--, seq >>= 8)
		pre[i] = (unsigned char)(seq & 0xff);
	memcpy(pre + 9, frame + 6, 2);
	crypto_generichash_init(&st, s, sizeof(s), sizeof(mac));
	crypto_generichash_update(&st, pre, sizeof(pre));
	crypto_generichash_update(&st, frame + RDZV_HDR_LEN, n - RDZV_HDR_LEN - RDZV_MAC_LEN);
	crypto_generichash_final(&st, mac, sizeof(mac));
	assert_memory_equal(frame + n - RDZV_MAC_LEN, mac, sizeof(mac));
}

/* type 10, length 48 + 32 | T_NAME | T_INDEX 1 | T_ADDR4 | T_SLOTS 8 | MAC('M', seq 0) */
#define JOIN_HEX                                                                                   \
	"475842310200000a00000050"                                                                 \
	"0003000c6a6f622d776f726b65722d31"                                                         \
	"0008000400000001"                                                                         \
	"000b000c3139322e3136382e322e3131"                                                         \
	"0011000400000008"                                                                         \
	"59836be6ef37cd5e6e32bd9ff631d3b63c033a4d310f692878da74b02e17dbd9"
/* type 18, length 0 + 32 | MAC('M', seq 1) */
#define PING_HEX                                                                                   \
	"475842310200001200000020"                                                                 \
	"431b3684e5ffcc15cb756fc9364189ff08aab46f1cd788213fd65048220648c5"
/* type 19, length 0 + 32 | MAC('C', seq 0) */
#define PONG_HEX                                                                                   \
	"475842310200001300000020"                                                                 \
	"82c0bfcb8a09c47046587e655e07aaefdcaa009353db6be94c2ebfec26c83886"

/*
 * Session frames: the member's JOIN (seq 0) and PING (seq 1) under MAC(S, 'M' | seq | type |
 * body), the coordinator's PONG (seq 0) under 'C'. The coordinator reads the member's, and a
 * replayed JOIN fails its MAC; a member that sends before the PROOF (AUTH and JOIN in one
 * flight) sends the same JOIN; a carried connection queues the same PONG for its relay.
 */
static void test_rdzv_session(void **state)
{
	struct rdzv_conn m, co, early, carried;
	struct rdzv_buf b = {0};
	unsigned char k[RDZV_KEY_LEN], wire[512], *body = NULL;
	size_t njoin, nping = RDZV_HDR_LEN + RDZV_MAC_LEN, len = 0;
	uint16_t type = 0;
	int a[2], e[2];

	(void)state;
	join_body(&b);
	njoin = RDZV_HDR_LEN + b.len + RDZV_MAC_LEN;
	sock_pair(a);
	rdzv_conn_init(&m, a[0], 0);
	rdzv_conn_init(&co, a[1], 1);
	rdzv_keys(&m, k);
	rdzv_keys(&co, k);
	rdzv_conn_session(&m, k);
	rdzv_conn_session(&co, k);
	assert_int_equal(rdzv_conn_send(&m, RDZV_JOIN, b.p, b.len), 0);
	assert_int_equal(rdzv_conn_send(&m, RDZV_PING, NULL, 0), 0);
	read_exact(a[1], wire, njoin + nping);
	expect_hex(wire, njoin, JOIN_HEX);
	expect_hex(wire + njoin, nping, PING_HEX);
	expect_trailer(&m, k, 'M', 0, wire, njoin);
	expect_trailer(&m, k, 'M', 1, wire + njoin, nping);
	/* the coordinator reads both, in order, then a replay of the JOIN fails */
	assert_int_equal(send(a[0], wire, njoin + nping, 0), (ssize_t)(njoin + nping));
	assert_int_equal(rdzv_conn_read(&co, &type, &body, &len), 1);
	assert_int_equal(type, RDZV_JOIN);
	assert_int_equal(len, b.len);
	assert_memory_equal(body, b.p, b.len);
	free(body);
	assert_int_equal(rdzv_conn_read(&co, &type, &body, &len), 1);
	assert_int_equal(type, RDZV_PING);
	assert_int_equal(len, 0);
	free(body);
	assert_int_equal(send(a[0], wire, njoin, 0), (ssize_t)njoin);
	assert_int_equal(rdzv_conn_read(&co, &type, &body, &len), GX_EMAC);
	rdzv_conn_reset(&co);
	/* the coordinator's PONG, seq 0 of its direction, read by the member */
	sock_pair(e);
	rdzv_conn_init(&co, e[1], 1);
	rdzv_keys(&co, k);
	rdzv_conn_session(&co, k);
	assert_int_equal(rdzv_conn_send(&co, RDZV_PONG, NULL, 0), 0);
	read_exact(e[0], wire, nping);
	expect_hex(wire, nping, PONG_HEX);
	expect_trailer(&co, k, 'C', 0, wire, nping);
	rdzv_conn_reset(&co);
	rdzv_conn_reset(&m);
	/* the member reads the PONG */
	sock_pair(a);
	rdzv_conn_init(&m, a[0], 0);
	rdzv_keys(&m, k);
	rdzv_conn_session(&m, k);
	assert_int_equal(send(a[1], wire, nping, 0), (ssize_t)nping);
	assert_int_equal(rdzv_conn_read(&m, &type, &body, &len), 1);
	assert_int_equal(type, RDZV_PONG);
	free(body);
	rdzv_conn_reset(&m);
	close(a[1]);
	close(e[0]);
	/* AUTH and JOIN in one flight: the same JOIN */
	sock_pair(a);
	rdzv_conn_init(&early, a[0], 0);
	rdzv_keys(&early, k);
	rdzv_conn_session_tx(&early, k);
	assert_int_equal(rdzv_conn_send(&early, RDZV_JOIN, b.p, b.len), 0);
	read_exact(a[1], wire, njoin);
	expect_hex(wire, njoin, JOIN_HEX);
	rdzv_conn_reset(&early);
	close(a[1]);
	/* carried (a child behind a relay): queued for the relay's records, not written */
	rdzv_conn_init(&carried, -1, 1);
	carried.f.carried = 1;
	rdzv_keys(&carried, k);
	rdzv_conn_session(&carried, k);
	assert_int_equal(rdzv_conn_send(&carried, RDZV_PONG, NULL, 0), 0);
	assert_true(rdzv_conn_pending(&carried));
	{
		const unsigned char *q;

		assert_int_equal(gx_frame_out_peek(&carried.f, &q), nping);
		expect_hex(q, nping, PONG_HEX);
	}
	rdzv_conn_reset(&carried);
	rdzv_buf_free(&b);
}

/* ---- check --------------------------------------------------------------- */

#define ECHO_HDR_HEX "4758434b0101000000000010"
#define STREAM_HDR_HEX "4758434b0106000000100000"
/* "GXCK" 1, REPORT, reserved, length 46 | MAC | rank 1 | payload */
#define REPORT_HEX                                                                                 \
	"4758434b010200000000002e"                                                                 \
	"6f203a8439f10b9ba20148658fae87d49db321df394db7405814cf9d2dad180a"                         \
	"00000001"                                                                                 \
	"7b2272616e6b223a317d"
/* RESULT, length 47 | MAC | rank 1 | payload */
#define RESULT_HEX                                                                                 \
	"4758434b010300000000002f"                                                                 \
	"9073d00f26990651be5e5c92720ea2ca05afa8a4b9d362bbece4f17f3a54ac0f"                         \
	"00000001"                                                                                 \
	"7b226f6b223a747275657d"

/* The MAC at the front of a sealed body by hand: HMAC-SHA-256(key, label NUL | round u64 |
 * rank u32 | payload), network order. */
static void expect_check_mac(const unsigned char *key, const char *label, const unsigned char *f,
			     size_t n)
{
	unsigned char pre[12], mac[CHECK_MAC_LEN];
	crypto_auth_hmacsha256_state st;
	uint64_t round = CF_ROUND;
	int i;

	for (i = 7; i >= 0; i--, round >>= 8)
		pre[i] = (unsigned char)(round & 0xff);
	memcpy(pre + 8, f + CHECK_HDR_LEN + CHECK_MAC_LEN, 4);
	crypto_auth_hmacsha256_init(&st, key, CHECK_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label) + 1);
	crypto_auth_hmacsha256_update(&st, pre, sizeof(pre));
	crypto_auth_hmacsha256_update(&st, f + CHECK_HDR_LEN + CHECK_MAC_LEN + 4,
				      n - CHECK_HDR_LEN - CHECK_MAC_LEN - 4);
	crypto_auth_hmacsha256_final(&st, mac);
	assert_memory_equal(f + CHECK_HDR_LEN, mac, sizeof(mac));
}

static void test_check_frames(void **state)
{
	static const unsigned char key[CHECK_KEY_LEN] = CF_KEY;
	static const char report[] = "{\"rank\":1}", result[] = "{\"ok\":true}";
	unsigned char h[CHECK_HDR_LEN], *f = NULL;
	const char *payload;
	size_t flen = 0, plen;
	uint32_t rank, blen;
	int type;

	(void)state;
	agent_check_hdr_put(h, CHECK_ECHO, 16);
	expect_hex(h, sizeof(h), ECHO_HDR_HEX);
	agent_check_hdr_put(h, CHECK_STREAM, 1u << 20);
	expect_hex(h, sizeof(h), STREAM_HDR_HEX);
	assert_int_equal(agent_check_hdr_get(h, &type, &blen), 0);
	assert_int_equal(type, CHECK_STREAM);
	assert_int_equal(blen, 1u << 20);
	assert_int_equal(
	    agent_check_seal(key, CHECK_REPORT, CF_ROUND, 1, report, sizeof(report) - 1, &f, &flen),
	    0);
	expect_hex(f, flen, REPORT_HEX);
	expect_check_mac(key, "gxboot-check-report", f, flen);
	assert_int_equal(agent_check_hdr_get(f, &type, &blen), 0);
	assert_int_equal(blen, flen - CHECK_HDR_LEN);
	assert_int_equal(agent_check_open(key, CHECK_REPORT, CF_ROUND, 2, f + CHECK_HDR_LEN, blen,
					  &rank, &payload, &plen),
			 0);
	assert_int_equal(rank, 1);
	assert_int_equal(plen, sizeof(report) - 1);
	assert_memory_equal(payload, report, plen);
	free(f);
	assert_int_equal(
	    agent_check_seal(key, CHECK_RESULT, CF_ROUND, 1, result, sizeof(result) - 1, &f, &flen),
	    0);
	expect_hex(f, flen, RESULT_HEX);
	expect_check_mac(key, "gxboot-check-result", f, flen);
	free(f);
}

/* ECHO with reserved bytes 0xbeef, length 16 | body: sent, and answered, as is */
#define ECHO_HEX                                                                                   \
	"4758434b0101beef00000010"                                                                 \
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"
/* STREAMED, length 8 | u64 70,000 */
#define STREAMED_HEX                                                                               \
	"4758434b0107000000000008"                                                                 \
	"0000000000011170"
#define STREAM_BYTES 70000
/* STREAM, length 70,000: the header a prober sends before its zeros */
#define STREAM_HDR_70000_HEX "4758434b0106000000011170"

/*
 * The real service: an ECHO comes back byte for byte, its reserved header bytes too (a
 * prober compares the whole frame); a STREAM of 70,000 bytes is answered STREAMED with the
 * count.
 */
static void test_check_service(void **state)
{
	static unsigned char zeros[STREAM_BYTES];
	unsigned char f[CHECK_HDR_LEN + 16], back[CHECK_HDR_LEN + 16], h[CHECK_HDR_LEN];
	unsigned char ans[CHECK_HDR_LEN + 8];
	struct gx_ev *ev = NULL;
	struct cf_pod p;
	int fd;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	cf_serve(&p, ev, 2, 0);
	fd = tcp_to(p.n.port);
	agent_check_hdr_put(f, CHECK_ECHO, 16);
	f[6] = 0xbe;
	f[7] = 0xef;
	fill_seq(f + CHECK_HDR_LEN, 16, 0xa0);
	send_pumped(ev, fd, f, sizeof(f));
	assert_int_equal(recv_pumped(ev, fd, back, sizeof(back)), sizeof(back));
	expect_hex(back, sizeof(back), ECHO_HEX);
	assert_memory_equal(back, f, sizeof(f));
	agent_check_hdr_put(h, CHECK_STREAM, STREAM_BYTES);
	send_pumped(ev, fd, h, sizeof(h));
	send_pumped(ev, fd, zeros, sizeof(zeros));
	assert_int_equal(recv_pumped(ev, fd, ans, sizeof(ans)), sizeof(ans));
	expect_hex(ans, sizeof(ans), STREAMED_HEX);
	close(fd);
	cf_pod_free(&p);
	gx_ev_free(ev);
}

static int streamed;

static void on_streamed(struct check_net *n)
{
	(void)n;
	streamed = 1;
}

/*
 * The prober's side of a STREAM (the preflight's throughput): to a target whose echo passed it
 * sends the STREAM header and exactly that many zero bytes, nothing else; the STREAMED answer
 * ends it with every byte counted.
 */
static void test_check_streamer(void **state)
{
	static unsigned char body[STREAM_BYTES], nil[STREAM_BYTES];
	struct check_probe pr = cf_probe(1, 0, 1, NULL);
	unsigned char h[CHECK_HDR_LEN], ans[CHECK_HDR_LEN + 8];
	const struct check_probe *p;
	union gx_sockaddr sa;
	struct gx_ev *ev = NULL;
	struct cf_pod cli;
	size_t bin_len = 0;
	socklen_t sl;
	int lfd = -1, fd = -1, k;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	assert_int_equal(gx_addr_parse("127.0.0.1", 0, &sa, &sl), 0);
	assert_int_equal(gx_tcp_listen(&sa, sl, &lfd), 0);
	sl = sizeof(sa);
	assert_int_equal(getsockname(lfd, &sa.sa, &sl), 0);
	cf_pod_init(&cli, ev, 2, 0, ntohs(sa.in4.sin_port));
	assert_int_equal(agent_check_row_add(&cli.w, 0, &pr), 0);
	streamed = 0;
	assert_int_equal(agent_check_streams_start(&cli.n, STREAM_BYTES, 5000, 1, on_streamed), 0);
	for (k = 0; k < 400 && fd < 0; k++) {
		pump(ev, 5);
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	}
	assert_true(fd >= 0);
	assert_int_equal(recv_pumped(ev, fd, h, sizeof(h)), sizeof(h));
	expect_hex(h, sizeof(h), STREAM_HDR_70000_HEX);
	assert_int_equal(recv_pumped(ev, fd, body, sizeof(body)), sizeof(body));
	assert_memory_equal(body, nil, sizeof(body));
	pump(ev, 20);
	/* nothing after the body: it waits for the answer */
	assert_int_equal(recv(fd, h, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(sodium_hex2bin(ans, sizeof(ans), STREAMED_HEX, strlen(STREAMED_HEX), NULL,
					&bin_len, NULL),
			 0);
	assert_int_equal(bin_len, sizeof(ans));
	send_pumped(ev, fd, ans, sizeof(ans));
	cf_run_until(ev, &streamed, 2000);
	assert_true(streamed);
	p = agent_check_find(&cli.w, 0, 1, CHECK_TCP);
	assert_true(p->ok);
	assert_int_equal(p->bytes, STREAM_BYTES);
	agent_check_streams_stop(&cli.n);
	cf_pod_free(&cli);
	close(fd);
	close(lfd);
	gx_ev_free(ev);
}

/* ---- remote exec ----------------------------------------------------------- */

#define PROOF_C_HEX "6d15d1bf315074faaedac5ec6e762eb2a76bc60b0ee204a31d7c0232721e2608"
#define PROOF_S_HEX "8d6f5af977ff34820266e9e702091dd6482b5d38b4d0fcee51daa7f1e9d2fff2"
#define C2S_HEX "b4e3967db9a901e15d5fddbb39c6bbc4133706345a0a1ad25de4666ba8a2b243"
#define S2C_HEX "7b489b48c0d329203735cb2e8f4ea599650dbd0bb66964571b4c134e0b62fb32"

static void rsh_nonces(unsigned char k[RSH_KEY_LEN], unsigned char nc[RSH_NONCE_LEN],
		       unsigned char ns[RSH_NONCE_LEN])
{
	fill_seq(k, RSH_KEY_LEN, 0x60);
	fill_seq(nc, RSH_NONCE_LEN, 0x80);
	fill_seq(ns, RSH_NONCE_LEN, 0xa0);
}

/* The handshake's sizes, magic and proofs; the two stream keys. */
static void test_rsh_handshake_bytes(void **state)
{
	unsigned char k[RSH_KEY_LEN], nc[RSH_NONCE_LEN], ns[RSH_NONCE_LEN], out[32], s2c[32];

	(void)state;
	assert_int_equal(RSH_HELLO_LEN, 40);
	assert_int_equal(RSH_AUTH_LEN, 56);
	assert_int_equal(RSH_ACCEPT_LEN, 57);
	assert_int_equal(RSH_HDR_LEN, 24);
	expect_hex((const unsigned char *)RSH_MAGIC, 8, "4758525348310a00");
	rsh_nonces(k, nc, ns);
	agent_rsh_proof(k, 'C', nc, ns, out);
	expect_hex(out, 32, PROOF_C_HEX);
	agent_rsh_proof(k, 'S', nc, ns, out);
	expect_hex(out, 32, PROOF_S_HEX);
	agent_rsh_stream_keys(k, nc, ns, out, s2c);
	expect_hex(out, 32, C2S_HEX);
	expect_hex(s2c, 32, S2C_HEX);
}

/*
 * A frame is len u32 (the ciphertext's) and a secretstream ciphertext of type | payload,
 * tag 0, no additional data: pulled here by a reference pull, and a reference push read by
 * the connection.
 */
static void test_rsh_frames(void **state)
{
	crypto_secretstream_xchacha20poly1305_state st;
	unsigned char k[RSH_KEY_LEN], nc[RSH_NONCE_LEN], ns[RSH_NONCE_LEN];
	unsigned char hdr[RSH_HDR_LEN], wire[64], pt[64], buf[RSH_MAX_PLAIN];
	unsigned long long plen = 0, clen = 0;
	unsigned char tag = 0xff;
	struct rsh_conn a, b;
	size_t len = 0;
	uint8_t type = 0;
	int fds[2];

	(void)state;
	rsh_nonces(k, nc, ns);
	sock_pair(fds);
	agent_rsh_conn_init(&a, fds[0]);
	agent_rsh_conn_init(&b, fds[1]);
	assert_int_equal(agent_rsh_conn_push_init(&a, k, hdr), 0);
	assert_int_equal(crypto_secretstream_xchacha20poly1305_init_pull(&st, hdr, k), 0);
	assert_int_equal(agent_rsh_conn_send(&a, RSH_STDOUT, "hello", 5), 0);
	read_exact(fds[1], wire, 4 + 1 + 5 + 17);
	expect_hex(wire, 4, "00000017");
	assert_int_equal(
	    crypto_secretstream_xchacha20poly1305_pull(&st, pt, &plen, &tag, wire + 4, 23, NULL, 0),
	    0);
	assert_int_equal(plen, 6);
	assert_int_equal(tag, 0);
	expect_hex(pt, 6, "0568656c6c6f");
	assert_int_equal(agent_rsh_conn_send(&a, RSH_STDIN_EOF, NULL, 0), 0);
	read_exact(fds[1], wire, 4 + 1 + 17);
	expect_hex(wire, 4, "00000012");
	assert_int_equal(
	    crypto_secretstream_xchacha20poly1305_pull(&st, pt, &plen, &tag, wire + 4, 18, NULL, 0),
	    0);
	assert_int_equal(plen, 1);
	assert_int_equal(pt[0], RSH_STDIN_EOF);
	/* the other way: a reference push, read by the connection */
	assert_int_equal(crypto_secretstream_xchacha20poly1305_init_push(&st, hdr, k), 0);
	assert_int_equal(agent_rsh_conn_pull_init(&b, k, hdr), 0);
	pt[0] = RSH_STDERR;
	memcpy(pt + 1, "oops", 4);
	crypto_secretstream_xchacha20poly1305_push(&st, wire + 4, &clen, pt, 5, NULL, 0, 0);
	assert_int_equal(clen, 5 + 17);
	wire[0] = wire[1] = wire[2] = 0;
	wire[3] = (unsigned char)clen;
	assert_int_equal(send(fds[0], wire, 4 + clen, 0), (ssize_t)(4 + clen));
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), 1);
	assert_int_equal(type, RSH_STDERR);
	assert_int_equal(len, 4);
	assert_memory_equal(buf, "oops", 4);
	agent_rsh_conn_free(&a);
	agent_rsh_conn_free(&b);
}

/* The real server: HELLO answered with the magic and its nonce; the client's proof with
 * 0 | its proof | its stream header (57 bytes); a wrong proof with the single byte 1. */
static void test_rsh_server(void **state)
{
	static const unsigned char key[RSH_KEY_LEN] = {7, 7, 7};
	unsigned char nc[RSH_NONCE_LEN], ns[RSH_NONCE_LEN], m[RSH_HELLO_LEN], a[RSH_AUTH_LEN];
	unsigned char acc[RSH_ACCEPT_LEN + 1], want[32], c2s[32], s2c[32];
	crypto_secretstream_xchacha20poly1305_state st;
	struct agent_serve_cfg cfg;
	struct agent_serve *sv = NULL;
	struct gx_ev *ev = NULL;
	char *envp[] = {NULL};
	int fd, bad, k, rc = -1;

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.addr4 = "127.0.0.1";
	cfg.key = key;
	cfg.envp = envp;
	for (k = 0; k < 50 && rc < 0; k++) {
		cfg.port = (uint16_t)(30000 + (getpid() * 17 + k * 157) % 20000);
		rc = agent_serve_start(ev, &cfg, &sv, (char[256]){0}, 256);
	}
	assert_int_equal(rc, 0);
	for (bad = 0; bad < 2; bad++) {
		fd = tcp_to(cfg.port);
		memcpy(m, RSH_MAGIC, 8);
		fill_seq(nc, sizeof(nc), 0x80);
		memcpy(m + 8, nc, sizeof(nc));
		send_pumped(ev, fd, m, sizeof(m));
		assert_int_equal(recv_pumped(ev, fd, m, sizeof(m)), sizeof(m));
		assert_memory_equal(m, RSH_MAGIC, 8);
		memcpy(ns, m + 8, sizeof(ns));
		agent_rsh_proof(key, 'C', nc, ns, a);
		a[0] ^= (unsigned char)bad;
		agent_rsh_stream_keys(key, nc, ns, c2s, s2c);
		assert_int_equal(crypto_secretstream_xchacha20poly1305_init_push(&st, a + 32, c2s),
				 0);
		send_pumped(ev, fd, a, sizeof(a));
		if (bad) {
			/* one byte, then the server closes */
			assert_int_equal(recv_pumped(ev, fd, acc, sizeof(acc)), 1);
			assert_int_equal(acc[0], 1);
		} else {
			assert_int_equal(recv_pumped(ev, fd, acc, RSH_ACCEPT_LEN), RSH_ACCEPT_LEN);
			assert_int_equal(acc[0], 0);
			agent_rsh_proof(key, 'S', nc, ns, want);
			assert_memory_equal(acc + 1, want, 32);
			assert_int_equal(
			    crypto_secretstream_xchacha20poly1305_init_pull(&st, acc + 33, s2c), 0);
		}
		close(fd);
	}
	agent_serve_free(sv);
	gx_ev_free(ev);
}

static int setup(void **state)
{
	(void)state;
	return sodium_init() < 0 ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rdzv_hello),	   cmocka_unit_test(test_rdzv_session),
	    cmocka_unit_test(test_check_frames),   cmocka_unit_test(test_check_service),
	    cmocka_unit_test(test_check_streamer), cmocka_unit_test(test_rsh_handshake_bytes),
	    cmocka_unit_test(test_rsh_frames),	   cmocka_unit_test(test_rsh_server),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
