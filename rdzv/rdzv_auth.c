/* SPDX-License-Identifier: MIT */
/*
 * rdzv_auth.c - keys, proofs and message MACs (PROTOCOL.md "Authentication").
 * libsodium 1.0.18: BLAKE2b (crypto_generichash; keyed, it is the MAC: protocol 2),
 * crypto_kdf_derive_from_key, constant-time compares (sodium_memcmp).
 */
#include "rdzv/rdzv_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* ---- nonces: a ChaCha20 keystream, one stream nonce per draw: no syscall per nonce ---- */
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
 * coordinator's CPU.
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
