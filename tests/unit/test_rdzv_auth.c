/* SPDX-License-Identifier: MIT */
/* test_rdzv_auth.c - keys, proofs, MACs and the session over a socketpair:
 * good / wrong / no token, MAC mismatch, replay, sequence gap, cross-connection. */
#include "rdzv/rdzv_int.h"

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

static const unsigned char TOK[] = "0123456789abcdef0123";
static const unsigned char TOK2[] = "0123456789abcdef0124";

static void test_derive_key(void **state)
{
	unsigned char a[32], b[32], master[32], want[32];

	(void)state;
	assert_int_equal(sodium_init() >= 0, 1);
	assert_int_equal(rdzv_derive_key(TOK, sizeof(TOK) - 1, "auth", a), 0);
	/* the documented formula: kdf(id 1, "gxbauth_", BLAKE2b-256(token)) */
	crypto_generichash(master, 32, TOK, sizeof(TOK) - 1, NULL, 0);
	crypto_kdf_derive_from_key(want, 32, 1, "gxbauth_", master);
	assert_memory_equal(a, want, 32);
	assert_int_equal(rdzv_derive_key(TOK, sizeof(TOK) - 1, "auth", b), 0);
	assert_memory_equal(a, b, 32);
	assert_int_equal(rdzv_derive_key(TOK2, sizeof(TOK2) - 1, "auth", b), 0);
	assert_memory_not_equal(a, b, 32);
	assert_int_equal(rdzv_derive_key(TOK, sizeof(TOK) - 1, "rsh:job-1", b), 0);
	assert_memory_not_equal(a, b, 32);
	assert_int_equal(rdzv_derive_key(TOK, sizeof(TOK) - 1, "rsh:job-2", a), 0);
	assert_memory_not_equal(a, b, 32);
	assert_int_equal(rdzv_derive_key(TOK, sizeof(TOK) - 1, "toolong", a), -EINVAL);
	assert_int_equal(rdzv_derive_key(TOK, sizeof(TOK) - 1, "", a), -EINVAL);
	assert_int_equal(rdzv_derive_key(TOK, sizeof(TOK) - 1, "Auth", a), -EINVAL);
	assert_int_equal(rdzv_derive_key(NULL, 0, "auth", a), -EINVAL);
}

struct hs {
	unsigned char km[32], kc[32], nm[32], nc[32];
};

/* Both proofs of the handshake; 0 when both sides accept each other. */
static int handshake(const unsigned char *tm, size_t lm, const char *jm, const unsigned char *tc,
		     size_t lc, const char *jc)
{
	struct hs h;
	unsigned char p[32];

	assert_int_equal(rdzv_auth_key(tm, lm, jm, h.km), 0);
	assert_int_equal(rdzv_auth_key(tc, lc, jc, h.kc), 0);
	randombytes_buf(h.nm, 32);
	randombytes_buf(h.nc, 32);
	rdzv_proof(h.km, 0, h.nm, h.nc, jm, p);
	if (rdzv_proof_verify(h.kc, 0, h.nm, h.nc, jc, p) < 0)
		return GX_EAUTH; /* the coordinator rejects the member */
	rdzv_proof(h.kc, 1, h.nm, h.nc, jc, p);
	return rdzv_proof_verify(h.km, 1, h.nm, h.nc, jm, p);
}

static void test_handshake_tokens(void **state)
{
	(void)state;
	assert_int_equal(handshake(TOK, 20, "j", TOK, 20, "j"), 0);
	assert_int_equal(handshake(TOK, 20, "j", TOK2, 20, "j"), GX_EAUTH);
	assert_int_equal(handshake(NULL, 0, "j", NULL, 0, "j"), 0);	   /* no token anywhere */
	assert_int_equal(handshake(NULL, 0, "j", TOK, 20, "j"), GX_EAUTH); /* member has none */
	assert_int_equal(handshake(TOK, 20, "j", NULL, 0, "j"), GX_EAUTH); /* coordinator none */
	assert_int_equal(handshake(TOK, 20, "j", TOK, 20, "k"), GX_EAUTH); /* job ids differ */
}

static void test_proof_labels(void **state)
{
	unsigned char k[32], nm[32], nc[32], p[32];

	(void)state;
	rdzv_auth_key(TOK, 20, "j", k);
	randombytes_buf(nm, 32);
	randombytes_buf(nc, 32);
	rdzv_proof(k, 0, nm, nc, "j", p);
	assert_int_equal(rdzv_proof_verify(k, 0, nm, nc, "j", p), 0);
	/* a member proof cannot be reflected as the coordinator's */
	assert_int_equal(rdzv_proof_verify(k, 1, nm, nc, "j", p), GX_EAUTH);
	/* nor replayed against fresh nonces */
	nc[0] ^= 1;
	assert_int_equal(rdzv_proof_verify(k, 0, nm, nc, "j", p), GX_EAUTH);
}

static void test_mac(void **state)
{
	unsigned char s[32], mac[32];
	const unsigned char body[] = "body";

	(void)state;
	randombytes_buf(s, 32);
	rdzv_mac(s, 'C', 5, RDZV_COMMIT, body, 4, mac);
	assert_int_equal(rdzv_mac_verify(s, 'C', 5, RDZV_COMMIT, body, 4, mac), 0);
	assert_int_equal(rdzv_mac_verify(s, 'M', 5, RDZV_COMMIT, body, 4, mac), GX_EMAC);
	assert_int_equal(rdzv_mac_verify(s, 'C', 6, RDZV_COMMIT, body, 4, mac), GX_EMAC);
	assert_int_equal(rdzv_mac_verify(s, 'C', 5, RDZV_ASSIGN, body, 4, mac), GX_EMAC);
	assert_int_equal(rdzv_mac_verify(s, 'C', 5, RDZV_COMMIT, body, 3, mac), GX_EMAC);
	mac[31] ^= 0x80;
	assert_int_equal(rdzv_mac_verify(s, 'C', 5, RDZV_COMMIT, body, 4, mac), GX_EMAC);
}

/* want = BLAKE2b-256 keyed with k over label (with its NUL) | a | b | c, one shot */
static void one_shot(unsigned char want[32], const unsigned char k[32], const char *label,
		     const void *a, size_t alen, const void *b, size_t blen, const void *c,
		     size_t clen)
{
	unsigned char in[256];
	size_t n = strlen(label) + 1;

	assert_true(n + alen + blen + clen <= sizeof(in));
	memcpy(in, label, n);
	memcpy(in + n, a, alen);
	memcpy(in + n + alen, b, blen);
	memcpy(in + n + alen + blen, c, clen);
	crypto_generichash(want, 32, in, n + alen + blen + clen, k, 32);
}

/* Protocol 2's keyed functions are keyed BLAKE2b-256 over PROTOCOL.md's inputs: each
 * against libsodium's one-shot crypto_generichash of the same bytes, so that a change of
 * construction (protocol 1's HMAC-SHA-256, a label, the byte order) shows here. */
static void test_mac_construction(void **state)
{
	unsigned char k[32], nm[32], nc[32], vn[RDZV_TICKET_LEN], got[32], want[32], in[16];
	const unsigned char body[] = "body";
	const char *job = "job-1";

	(void)state;
	randombytes_buf(k, 32);
	randombytes_buf(nm, 32);
	randombytes_buf(nc, 32);
	randombytes_buf(vn, sizeof(vn));
	/* MAC = BLAKE2b(S; dir | seq u64 BE | type u16 BE | body) */
	rdzv_mac(k, 'M', 0x0102030405060708ull, RDZV_JOIN, body, 4, got);
	memcpy(in, "M\x01\x02\x03\x04\x05\x06\x07\x08", 9);
	in[9] = (unsigned char)(RDZV_JOIN >> 8);
	in[10] = (unsigned char)(RDZV_JOIN & 0xff);
	memcpy(in + 11, body, 4);
	crypto_generichash(want, 32, in, 15, k, 32);
	assert_memory_equal(got, want, 32);
	/* proof_m = BLAKE2b(K; "gxboot member\0" | nonce_m | nonce_c | job id) */
	rdzv_proof(k, 0, nm, nc, job, got);
	one_shot(want, k, "gxboot member", nm, 32, nc, 32, job, strlen(job));
	assert_memory_equal(got, want, 32);
	/* proof_c: "gxboot coord\0" */
	rdzv_proof(k, 1, nm, nc, job, got);
	one_shot(want, k, "gxboot coord", nm, 32, nc, 32, job, strlen(job));
	assert_memory_equal(got, want, 32);
	/* S = BLAKE2b(K; "session\0" | nonce_m | nonce_c) */
	rdzv_session_key(k, nm, nc, got);
	one_shot(want, k, "session", nm, 32, nc, 32, "", 0);
	assert_memory_equal(got, want, 32);
	/* V = BLAKE2b(S1; "gxboot verify\0" | vn) */
	rdzv_ticket_key(k, vn, got);
	one_shot(want, k, "gxboot verify", vn, sizeof(vn), "", 0, "", 0);
	assert_memory_equal(got, want, 32);
}

/* ---- the session over a socketpair: member side a, coordinator side b ---- */
struct pair {
	struct rdzv_conn a, b;
	int raw; /* fd of a's socket kept for injecting bytes into b */
};

static void pair_open(struct pair *p, const unsigned char *nm, const unsigned char *nc)
{
	unsigned char k[32];
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	rdzv_conn_init(&p->a, sv[0], 0);
	rdzv_conn_init(&p->b, sv[1], 1);
	p->raw = sv[0];
	rdzv_auth_key(TOK, 20, "j", k);
	memcpy(p->a.nm, nm, 32);
	memcpy(p->a.nc, nc, 32);
	memcpy(p->b.nm, nm, 32);
	memcpy(p->b.nc, nc, 32);
	rdzv_conn_session(&p->a, k);
	rdzv_conn_session(&p->b, k);
}

static void pair_close(struct pair *p)
{
	rdzv_conn_reset(&p->a);
	rdzv_conn_reset(&p->b);
}

static int recv_one(struct rdzv_conn *c, uint16_t *type, char *text, size_t len)
{
	unsigned char *body = NULL;
	struct rdzv_msg m;
	size_t n;
	int rc = rdzv_conn_read(c, type, &body, &n);

	if (rc == 1) {
		assert_int_equal(rdzv_msg_decode(*type, body, n, &m), 0);
		snprintf(text, len, "%s", m.text);
	}
	free(body);
	return rc;
}

/* Send one frame from a, but capture its bytes instead of delivering them. */
static size_t capture(struct pair *p, const char *text, unsigned char *out, size_t cap)
{
	struct rdzv_buf b = {0};
	size_t n;

	rdzv_put_str(&b, T_TEXT, text);
	assert_int_equal(rdzv_conn_send(&p->a, RDZV_VFAIL, b.p, b.len), 0);
	rdzv_buf_free(&b);
	n = (size_t)recv(p->b.f.fd, out, cap, 0);
	assert_true(n > RDZV_HDR_LEN + RDZV_MAC_LEN);
	return n;
}

static void inject(struct pair *p, const unsigned char *buf, size_t n)
{
	assert_int_equal(send(p->raw, buf, n, 0), (ssize_t)n);
}

static void test_session_good_replay_gap(void **state)
{
	unsigned char nm[32], nc[32], f1[512], f2[512];
	char text[64];
	size_t n1, n2;
	uint16_t type;
	struct pair p;

	(void)state;
	randombytes_buf(nm, 32);
	randombytes_buf(nc, 32);
	pair_open(&p, nm, nc);
	n1 = capture(&p, "one", f1, sizeof(f1));
	inject(&p, f1, n1);
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), 1);
	assert_int_equal(type, RDZV_VFAIL);
	assert_string_equal(text, "one");
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), 0); /* nothing more */
	inject(&p, f1, n1);						/* replayed */
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), GX_EMAC);
	pair_close(&p);

	/* a sequence gap: frame 2 arrives without frame 1 */
	pair_open(&p, nm, nc);
	n1 = capture(&p, "one", f1, sizeof(f1));
	n2 = capture(&p, "two", f2, sizeof(f2));
	inject(&p, f2, n2);
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), GX_EMAC);
	pair_close(&p);

	/* reordered: 2 then 1 */
	pair_open(&p, nm, nc);
	n1 = capture(&p, "one", f1, sizeof(f1));
	n2 = capture(&p, "two", f2, sizeof(f2));
	inject(&p, f2, n2);
	inject(&p, f1, n1);
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), GX_EMAC);
	pair_close(&p);
}

static void test_session_mac_mismatch_and_cross(void **state)
{
	unsigned char nm[32], nc[32], f[512];
	char text[64];
	uint16_t type;
	struct pair p, q;
	size_t n;

	(void)state;
	randombytes_buf(nm, 32);
	randombytes_buf(nc, 32);
	pair_open(&p, nm, nc);
	n = capture(&p, "flip", f, sizeof(f));
	f[RDZV_HDR_LEN + 5] ^= 1; /* a body byte */
	inject(&p, f, n);
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), GX_EMAC);
	pair_close(&p);

	/* a frame from one connection injected into another (other nonces) */
	pair_open(&p, nm, nc);
	n = capture(&p, "cross", f, sizeof(f));
	nc[0] ^= 1;
	pair_open(&q, nm, nc);
	inject(&q, f, n);
	assert_int_equal(recv_one(&q.b, &type, text, sizeof(text)), GX_EMAC);
	/* the right one still accepts it */
	inject(&p, f, n);
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), 1);
	assert_string_equal(text, "cross");
	pair_close(&p);
	pair_close(&q);
}

static void test_conn_framing(void **state)
{
	unsigned char nm[32] = {0}, nc[32] = {0}, h[RDZV_HDR_LEN];
	char text[64];
	uint16_t type;
	struct pair p;

	(void)state;
	pair_open(&p, nm, nc);
	/* bad magic */
	rdzv_hdr_encode(h, RDZV_VFAIL, 40);
	h[1] = 'Y';
	inject(&p, h, sizeof(h));
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), GX_EPROTO);
	pair_close(&p);
	/* another major version: reported, with the peer's numbers */
	pair_open(&p, nm, nc);
	rdzv_hdr_encode(h, RDZV_VFAIL, 40);
	h[4] = RDZV_VMAJOR + 1;
	inject(&p, h, sizeof(h));
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), GX_EVERSION);
	assert_int_equal(p.b.peer_vmaj, RDZV_VMAJOR + 1);
	pair_close(&p);
	/* a header in two pieces, then EOF mid-body */
	pair_open(&p, nm, nc);
	rdzv_hdr_encode(h, RDZV_VFAIL, 40);
	inject(&p, h, 5);
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), 0);
	inject(&p, h + 5, sizeof(h) - 5);
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), 0);
	shutdown(p.raw, SHUT_WR);
	assert_int_equal(recv_one(&p.b, &type, text, sizeof(text)), -ECONNRESET);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_derive_key),
	    cmocka_unit_test(test_handshake_tokens),
	    cmocka_unit_test(test_proof_labels),
	    cmocka_unit_test(test_mac),
	    cmocka_unit_test(test_mac_construction),
	    cmocka_unit_test(test_session_good_replay_gap),
	    cmocka_unit_test(test_session_mac_mismatch_and_cross),
	    cmocka_unit_test(test_conn_framing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
