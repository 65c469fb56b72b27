/* SPDX-License-Identifier: MIT */
/*
 * fuzz_frame.c - libFuzzer target for the framed connection (rdzv/gx/gx_frame.c) under the
 * three wires' headers, decoded by their own functions: the rendezvous' (rdzv_hdr_decode:
 * 12 bytes, per-type caps, a BLAKE2b trailer once sealed), check's (agent_check_hdr_get: a
 * growing body under a budget, the rank peeked after 36 bytes, STREAM sunk) and remote
 * exec's (a 4-byte length, the type inside a secretstream seal).
 *
 * Input: byte 0: bits 0-1 the fmt (0 and 3 the rendezvous', 1 check's, 2 remote exec's), bit 2 fed
 * input (else a socketpair, written in chunks), bit 3 sealed reads, bit 4 a 40-byte raw prelude (a
 * handshake) before the frames, bit 5 the coordinator's side (rendezvous); byte 1: the chunk size
 * (1..64); then the stream. Invariants (abort on violation): a frame's length is within its
 * header's bound, a sink frame has no body, the budget is never passed and is all released at the
 * end, fed input is taken whole whenever a read says "not yet".
 */
#include "agent/check/check_int.h"
#include "agent/remote/rsh_int.h"
#include "rdzv/rdzv_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BUDGET (256u * 1024)

struct fz {
	int coord;
	size_t charged, max_len;
	uint64_t seq_rx;
	crypto_secretstream_xchacha20poly1305_state rx;
};

static const unsigned char key[32] = {1, 2, 3};

/* ---- rendezvous ---- */
static int r_decode(struct gx_frame *f, const unsigned char *h, unsigned *type, size_t *blen)
{
	struct fz *z = f->owner;
	struct rdzv_hdr rh;
	int rc = rdzv_hdr_decode(h, f->sealed_rx, &rh);

	if (rc == 0 && z->coord && rh.type != RDZV_CARRY && rh.len > RDZV_MAX_BODY + RDZV_MAC_LEN)
		rc = GX_EPROTO;
	*type = rh.type;
	*blen = rh.len;
	z->max_len = rdzv_max_body(rh.type) + (f->sealed_rx ? RDZV_MAC_LEN : 0);
	return rc;
}

static int r_encode(const struct gx_frame *f, unsigned char *h, unsigned type, size_t blen)
{
	(void)f;
	rdzv_hdr_encode(h, (uint16_t)type, (uint32_t)blen);
	return 0;
}

static int r_open(struct gx_frame *f, unsigned *type, unsigned char *body, size_t *len)
{
	struct fz *z = f->owner;
	size_t n = *len - RDZV_MAC_LEN;
	int rc = rdzv_mac_verify(key, z->coord ? 'M' : 'C', z->seq_rx, (uint16_t)*type, body, n,
				 body + n);

	if (rc < 0)
		return rc;
	z->seq_rx++;
	*len = n;
	return 0;
}

/* ---- check ---- */
static int c_decode(struct gx_frame *f, const unsigned char *h, unsigned *type, size_t *blen)
{
	struct fz *z = f->owner;
	uint32_t len = 0;
	int t = 0, rc = agent_check_hdr_get(h, &t, &len);

	*type = (unsigned)t;
	*blen = len;
	z->max_len = t == CHECK_RESULT ? CHECK_MAX_RESULT : CHECK_STREAM_MAX;
	if (rc < 0)
		return rc;
	f->grow_from = 4096;
	f->peek_at = t == CHECK_REPORT ? CHECK_MAC_LEN + 4 : 0;
	f->sink = t == CHECK_STREAM;
	return 0;
}

static int c_encode(const struct gx_frame *f, unsigned char *h, unsigned type, size_t blen)
{
	(void)f;
	agent_check_hdr_put(h, (int)type, (uint32_t)blen);
	return 0;
}

static int c_charge(struct gx_frame *f, size_t from, size_t to)
{
	struct fz *z = f->owner;

	if (to > from && z->charged + (to - from) > BUDGET)
		return -ENOBUFS;
	if (from > z->charged + to)
		abort(); /* more released than charged */
	z->charged = z->charged + to - from;
	return 0;
}

static int c_peek(struct gx_frame *f, const unsigned char *body, size_t got)
{
	(void)f;
	if (got < CHECK_MAC_LEN + 4)
		abort();
	return body[CHECK_MAC_LEN] ? GX_EPROTO : 0; /* a rank >= 2^24: refused early */
}

/* ---- remote exec ---- */
static int s_decode(struct gx_frame *f, const unsigned char *h, unsigned *type, size_t *blen)
{
	struct fz *z = f->owner;
	uint32_t n = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];

	*type = 0;
	*blen = n;
	z->max_len = RSH_MAX_CT;
	return n < crypto_secretstream_xchacha20poly1305_ABYTES + 1 || n > RSH_MAX_CT ? GX_EPROTO
										      : 0;
}

static int s_encode(const struct gx_frame *f, unsigned char *h, unsigned type, size_t blen)
{
	(void)f;
	(void)type;
	h[0] = (unsigned char)(blen >> 24);
	h[1] = (unsigned char)(blen >> 16);
	h[2] = (unsigned char)(blen >> 8);
	h[3] = (unsigned char)blen;
	return 0;
}

static int s_open(struct gx_frame *f, unsigned *type, unsigned char *body, size_t *len)
{
	static unsigned char pt[RSH_MAX_PLAIN];
	struct fz *z = f->owner;
	unsigned long long plen = 0;
	unsigned char tag;

	if (crypto_secretstream_xchacha20poly1305_pull(&z->rx, pt, &plen, &tag, body, *len, NULL,
						       0) != 0)
		return GX_EMAC;
	*type = pt[0];
	*len = (size_t)plen - 1;
	memcpy(body, pt + 1, *len);
	return 0;
}

static const struct gx_frame_fmt fmts[3] = {
    {.hdr_len = RDZV_HDR_LEN, .decode = r_decode, .encode = r_encode},
    {.hdr_len = CHECK_HDR_LEN,
     .decode = c_decode,
     .encode = c_encode,
     .charge = c_charge,
     .peek = c_peek},
    {.hdr_len = 4, .decode = s_decode, .encode = s_encode},
};
static const struct gx_frame_seal seals[3] = {
    {.over = RDZV_MAC_LEN, .open = r_open},
    {0},
    {.over = 1 + crypto_secretstream_xchacha20poly1305_ABYTES, .open = s_open},
};

/* Every frame there is now: 1 go on, 0 not yet, < 0 the connection ends. */
static int drain(struct gx_frame *f, struct fz *z, unsigned char *raw, int *need_raw)
{
	unsigned char *body;
	unsigned type;
	size_t len;
	int rc;

	if (*need_raw) {
		rc = gx_frame_read_raw(f, raw, 40);
		if (rc <= 0)
			return rc;
		*need_raw = 0;
	}
	while ((rc = gx_frame_read(f, &type, &body, &len)) == 1) {
		if (len > z->max_len)
			abort();
		if (f->sink != !body)
			abort();
		free(body);
	}
	if (rc == 0 && f->fed && f->inlen)
		abort(); /* "not yet" with fed input left */
	if (z->charged > BUDGET)
		abort();
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char hdr[RSH_HDR_LEN] = {9};
	unsigned char raw[40];
	struct gx_frame f;
	struct fz z;
	size_t off, chunk, n;
	int k, fed, sv[2] = {-1, -1}, rc = 0, need_raw;

	if (size < 2 || size > 200000)
		return 0;
	if (sodium_init() < 0)
		return 0;
	memset(&z, 0, sizeof(z));
	k = (data[0] & 3) % 3;
	fed = !!(data[0] & 4);
	need_raw = !!(data[0] & 16);
	z.coord = !!(data[0] & 32);
	chunk = (size_t)(data[1] % 64) + 1;
	crypto_secretstream_xchacha20poly1305_init_pull(&z.rx, hdr, key);
	if (!fed && socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
		return 0;
	gx_frame_init(&f, fed ? -1 : sv[1], &fmts[k], k == 1 ? NULL : &seals[k], &z);
	f.fed = (uint8_t)fed;
	f.sealed_rx = (uint8_t)(k != 1 && (data[0] & 8));
	for (off = 2; off < size && rc >= 0; off += n) {
		n = size - off < chunk ? size - off : chunk;
		if (fed) {
			gx_frame_feed(&f, data + off, n);
		} else if (send(sv[0], data + off, n, 0) != (ssize_t)n) {
			n = 0; /* the socket is full: read, then try again */
		}
		rc = drain(&f, &z, raw, &need_raw);
	}
	if (!fed && rc >= 0) {
		close(sv[0]);
		sv[0] = -1;
		while ((rc = drain(&f, &z, raw, &need_raw)) == 0)
			; /* up to the EOF */
		if (rc != -ECONNRESET && rc != GX_EPROTO && rc != GX_EVERSION && rc != GX_EMAC &&
		    rc != -ENOBUFS)
			abort();
	}
	gx_frame_reset(&f);
	if (z.charged != 0)
		abort();
	if (sv[0] >= 0)
		close(sv[0]);
	sodium_memzero(&z.rx, sizeof(z.rx));
	return 0;
}
