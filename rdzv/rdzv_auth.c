/* SPDX-License-Identifier: MIT */
/*
 * rdzv_auth.c - keys, proofs and message MACs (PROTOCOL.md "Authentication").
 * libsodium 1.0.18: BLAKE2b (crypto_generichash; keyed, it is the MAC: protocol 2),
 * crypto_kdf_derive_from_key, constant-time compares (sodium_memcmp).
 */
#include "rdzv/rdzv_coord_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- nonces: a ChaCha20 keystream, one stream nonce per draw (issue 26) ---- */
struct rdzv_rng {
	unsigned char key[crypto_stream_chacha20_KEYBYTES];
	uint64_t ctr;
	int seeded; /* 0 in a forked child: its page is MADV_WIPEONFORK */
};

struct rdzv_rng *rdzv_rng_new(void)
{
	struct rdzv_rng *r =
	    mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED)
		return NULL;
	if (madvise(r, sizeof(*r), MADV_WIPEONFORK) < 0) { /* Linux < 4.14 */
		munmap(r, sizeof(*r));
		return NULL;
	}
	return r;
}

void rdzv_rng_buf(struct rdzv_rng *r, void *out, size_t n)
{
	unsigned char nonce[crypto_stream_chacha20_NONCEBYTES] = {0};
	uint64_t c;
	int i;

	if (!r) {
		randombytes_buf(out, n);
		return;
	}
	if (!r->seeded) {
		randombytes_buf(r->key, sizeof(r->key));
		r->ctr = 0;
		r->seeded = 1;
	}
	c = r->ctr++;
	for (i = 0; i < 8; i++)
		nonce[i] = (unsigned char)(c >> (8 * i));
	crypto_stream_chacha20(out, n, nonce, r->key);
}

void rdzv_rng_free(struct rdzv_rng *r)
{
	if (!r)
		return;
	sodium_memzero(r, sizeof(*r));
	munmap(r, sizeof(*r));
}

static const char member_label[] = "gxboot member";
static const char coord_label[] = "gxboot coord";
static const char session_label[] = "session";
static const char ticket_label[] = "gxboot verify";

/* label 1..5 of [a-z] before an optional ':' -> ctx "gxb<label>___". */
static int purpose_ctx(const char *purpose, char ctx[crypto_kdf_CONTEXTBYTES + 1],
		       const char **rest)
{
	size_t i;

	memcpy(ctx, "gxb_____", crypto_kdf_CONTEXTBYTES + 1);
	for (i = 0; purpose[i] && purpose[i] != ':'; i++) {
		if (i >= 5 || purpose[i] < 'a' || purpose[i] > 'z')
			return -EINVAL;
		ctx[3 + i] = purpose[i];
	}
	if (i == 0)
		return -EINVAL;
	*rest = purpose[i] == ':' ? purpose + i + 1 : NULL;
	return 0;
}

int rdzv_derive_key(const unsigned char *token, size_t len, const char *purpose,
		    unsigned char out[32])
{
	unsigned char master[crypto_kdf_KEYBYTES], mixed[crypto_kdf_KEYBYTES];
	char ctx[crypto_kdf_CONTEXTBYTES + 1];
	const char *rest = NULL;
	int rc = -EINVAL;

	if (!token || !purpose || sodium_init() < 0 || purpose_ctx(purpose, ctx, &rest) < 0)
		goto out;
	crypto_generichash(master, sizeof(master), token, len, NULL, 0);
	if (rest) {
		crypto_generichash(mixed, sizeof(mixed), (const unsigned char *)rest, strlen(rest),
				   master, sizeof(master));
		memcpy(master, mixed, sizeof(master));
	}
	if (crypto_kdf_derive_from_key(out, 32, 1, ctx, master) != 0)
		goto out;
	rc = 0;
out:
	sodium_memzero(master, sizeof(master));
	sodium_memzero(mixed, sizeof(mixed));
	return rc;
}

int rdzv_auth_key(const unsigned char *token, size_t len, const char *job_id,
		  unsigned char k[RDZV_KEY_LEN])
{
	if (token)
		return rdzv_derive_key(token, len, "auth", k);
	/* no token: anyone who knows the job id can compute this (PROTOCOL.md) */
	return rdzv_derive_key((const unsigned char *)job_id, strlen(job_id), "anon", k);
}

/*
 * Every keyed function of the protocol is BLAKE2b-256 keyed with a 32-byte key (protocol
 * 2; 1 had HMAC-SHA-256): a PRF, as HMAC is, and two compressions for a frame (the key
 * block, then the input) where HMAC takes four; at N=16384 HMAC was a quarter of the
 * coordinator's CPU (issue 26).
 */
static void mac_start(crypto_generichash_state *st, const unsigned char k[RDZV_KEY_LEN],
		      const char *label)
{
	crypto_generichash_init(st, k, RDZV_KEY_LEN, RDZV_MAC_LEN);
	if (label)
		crypto_generichash_update(st, (const unsigned char *)label, strlen(label) + 1);
}

void rdzv_proof(const unsigned char k[RDZV_KEY_LEN], int coord,
		const unsigned char nm[RDZV_NONCE_LEN], const unsigned char nc[RDZV_NONCE_LEN],
		const char *job_id, unsigned char out[RDZV_MAC_LEN])
{
	crypto_generichash_state st;

	mac_start(&st, k, coord ? coord_label : member_label);
	crypto_generichash_update(&st, nm, RDZV_NONCE_LEN);
	crypto_generichash_update(&st, nc, RDZV_NONCE_LEN);
	crypto_generichash_update(&st, (const unsigned char *)job_id, strlen(job_id));
	crypto_generichash_final(&st, out, RDZV_MAC_LEN);
	sodium_memzero(&st, sizeof(st));
}

int rdzv_proof_verify(const unsigned char k[RDZV_KEY_LEN], int coord,
		      const unsigned char nm[RDZV_NONCE_LEN],
		      const unsigned char nc[RDZV_NONCE_LEN], const char *job_id,
		      const unsigned char proof[RDZV_MAC_LEN])
{
	unsigned char want[RDZV_MAC_LEN];
	int rc;

	rdzv_proof(k, coord, nm, nc, job_id, want);
	rc = sodium_memcmp(want, proof, RDZV_MAC_LEN) == 0 ? 0 : GX_EAUTH;
	sodium_memzero(want, sizeof(want));
	return rc;
}

void rdzv_session_key(const unsigned char k[RDZV_KEY_LEN], const unsigned char nm[RDZV_NONCE_LEN],
		      const unsigned char nc[RDZV_NONCE_LEN], unsigned char s[RDZV_KEY_LEN])
{
	crypto_generichash_state st;

	mac_start(&st, k, session_label);
	crypto_generichash_update(&st, nm, RDZV_NONCE_LEN);
	crypto_generichash_update(&st, nc, RDZV_NONCE_LEN);
	crypto_generichash_final(&st, s, RDZV_KEY_LEN);
	sodium_memzero(&st, sizeof(st));
}

void rdzv_ticket_key(const unsigned char s1[RDZV_KEY_LEN], const unsigned char vn[RDZV_TICKET_LEN],
		     unsigned char out[RDZV_KEY_LEN])
{
	crypto_generichash_state st;

	mac_start(&st, s1, ticket_label);
	crypto_generichash_update(&st, vn, RDZV_TICKET_LEN);
	crypto_generichash_final(&st, out, RDZV_KEY_LEN);
	sodium_memzero(&st, sizeof(st));
}

void rdzv_mac(const unsigned char s[RDZV_KEY_LEN], uint8_t dir, uint64_t seq, uint16_t type,
	      const unsigned char *body, size_t len, unsigned char out[RDZV_MAC_LEN])
{
	crypto_generichash_state st;
	unsigned char pre[11];
	uint16_t nt = htons(type);
	int i;

	pre[0] = dir;
	for (i = 8; i >= 1; i--, seq >>= 8)
		pre[i] = (unsigned char)(seq & 0xff);
	memcpy(pre + 9, &nt, 2);
	mac_start(&st, s, NULL);
	crypto_generichash_update(&st, pre, sizeof(pre));
	crypto_generichash_update(&st, body, len);
	crypto_generichash_final(&st, out, RDZV_MAC_LEN);
	sodium_memzero(&st, sizeof(st));
}

int rdzv_mac_verify(const unsigned char s[RDZV_KEY_LEN], uint8_t dir, uint64_t seq, uint16_t type,
		    const unsigned char *body, size_t len, const unsigned char mac[RDZV_MAC_LEN])
{
	unsigned char want[RDZV_MAC_LEN];
	int rc;

	rdzv_mac(s, dir, seq, type, body, len, want);
	rc = crypto_verify_32(want, mac) == 0 ? 0 : GX_EMAC;
	sodium_memzero(want, sizeof(want));
	return rc;
}

/* ---- coordinator side of the handshake (PROTOCOL.md "Handshake") ---- */
void rdzv_co_reject(struct rdzv_coord *co, struct cconn *cc, int code, const char *why)
{
	struct rdzv_buf b = {0};
	char note[300];
	const char *who = cc->claimed > 0 ? co->names[cc->claimed] : "a peer";

	/* a trace, not an error print: the agent reports the outcome. Before the session
	 * anyone can cause it: rate-limited, and never a note on the claimed peer (issue 25) */
	if (!cc->rc.session) {
		gx_rl_log(&co->rl_pre, "rdzv: rejected JOIN of %s from %s: %s", who,
			  cc->rc.peer_str, why);
		co->nunauth_refused++;
		snprintf(co->unauth_note, sizeof(co->unauth_note), "from %s claiming %s: %s",
			 cc->rc.peer_str, who, why);
	} else {
		gx_warn("rdzv: rejected JOIN of %s from %s: %s", who, cc->rc.peer_str, why);
	}
	if (cc->rc.session && cc->claimed > 0 && !co->st[cc->claimed].joined) {
		snprintf(note, sizeof(note), "rejected JOIN from %s: %s", cc->rc.peer_str, why);
		free(co->st[cc->claimed].note);
		co->st[cc->claimed].note = strdup(note);
	}
	rdzv_put_u32(&b, T_CODE, (uint32_t)code);
	rdzv_put_str(&b, T_TEXT, why);
	rdzv_co_send(co, cc, RDZV_REJECT, &b);
	rdzv_buf_free(&b);
	rdzv_co_close_later(co, cc);
}

static int co_hello(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_msg *m)
{
	struct rdzv_buf b = {0};
	int rc;

	if (!m->has_nonce) {
		rdzv_co_drop(co, cc, "HELLO without a nonce");
		return 1;
	}
	memcpy(cc->rc.nm, m->nonce, RDZV_NONCE_LEN);
	if (m->index > 0 && m->index < co->world && strcmp(co->names[m->index], m->name) == 0)
		cc->claimed = (int)m->index;
	if (strcmp(m->job_id, co->job_id) != 0) {
		rdzv_co_reject(co, cc, GX_EJOB, "job id mismatch");
		return 0;
	}
	if (co->has_token && !m->has_token) {
		rdzv_co_reject(co, cc, GX_EAUTH, "missing token");
		return 0;
	}
	rdzv_rng_buf(co->rng, cc->rc.nc, RDZV_NONCE_LEN);
	rdzv_put(&b, T_NONCE, cc->rc.nc, RDZV_NONCE_LEN);
	rdzv_put_u32(&b, T_HAS_TOKEN, (uint32_t)co->has_token);
	rc = rdzv_co_send(co, cc, RDZV_CHALLENGE, &b);
	rdzv_buf_free(&b);
	cc->rc.state = RC_AUTH;
	if (rc < 0) {
		rdzv_co_drop(co, cc, gx_strerror(rc));
		return 1;
	}
	return 0;
}

static int co_auth(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_msg *m)
{
	unsigned char proof[RDZV_MAC_LEN];
	struct rdzv_buf b = {0};
	int rc;

	if (!m->has_proof) {
		rdzv_co_drop(co, cc, "AUTH without a proof");
		return 1;
	}
	if (rdzv_proof_verify(co->k, 0, cc->rc.nm, cc->rc.nc, co->job_id, m->proof) < 0) {
		rdzv_co_reject(co, cc, GX_EAUTH,
			       co->has_token ? "bad token"
					     : "bad proof (this coordinator has no token)");
		return 0;
	}
	rdzv_proof(co->k, 1, cc->rc.nm, cc->rc.nc, co->job_id, proof);
	rdzv_put(&b, T_PROOF, proof, sizeof(proof));
	rc = rdzv_co_send(co, cc, RDZV_PROOF, &b);
	rdzv_buf_free(&b);
	rdzv_conn_session(&cc->rc, co->k);
	rdzv_co_pa_del(co, cc); /* authenticated: out of the budget */
	cc->deadline = gx_now_ms() + RDZV_HANDSHAKE_MS;
	if (rc < 0) {
		rdzv_co_drop(co, cc, gx_strerror(rc));
		return 1;
	}
	return 0;
}

int rdzv_co_handshake(struct rdzv_coord *co, struct cconn *cc, uint16_t type,
		      const unsigned char *body, size_t len)
{
	struct rdzv_msg *m;
	int rc = 1;

	if (cc->rc.state == RC_HELLO && type == RDZV_TVERIFY) /* body, then its MAC */
		return rdzv_co_tverify(co, cc, body, len);
	m = malloc(sizeof(*m));
	if (!m || rdzv_msg_decode(type, body, len, m) < 0) {
		gx_rl_log(&co->rl_pre, "rdzv: malformed handshake from %s: dropped",
			  cc->rc.peer_str);
		rdzv_co_drop(co, cc, "malformed handshake");
	} else if (cc->rc.state == RC_HELLO && type == RDZV_HELLO) {
		cc->deadline = gx_now_ms() + RDZV_PROOF_MS;
		rc = co_hello(co, cc, m);
	} else if (cc->rc.state == RC_AUTH && type == RDZV_AUTH) {
		rc = co_auth(co, cc, m);
	} else {
		gx_rl_log(&co->rl_pre,
			  "rdzv: unexpected message type %u from %s before authentication: dropped",
			  type, cc->rc.peer_str);
		rdzv_co_drop(co, cc, "unexpected message");
	}
	free(m);
	return rc;
}
