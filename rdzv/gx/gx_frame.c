/* SPDX-License-Identifier: MIT */
/*
 * gx_frame.c - one framed, bounded, optionally sealed connection (gx.h "framed
 * connections"): the rendezvous, check and remote exec read and write their frames here.
 *
 * The reader is c-ares' TCP reader (ares_process.c:read_tcp_data): the length prefix first
 * (tcp_lenbuf / tcp_lenbuf_pos), then a buffer of exactly that length (tcp_buffer /
 * tcp_buffer_pos), never a byte of the next message. Its bound is redis' (networking.c:
 * processMultibulkBuffer checks a bulk's length against proto-max-bulk-len, and against a
 * small cap before AUTH, before it reads the bulk): here fmt->decode, per type and state,
 * before a body byte is read or allocated. The output queue is redis' reply buffer
 * (buf / bufpos / sentlen) written once per loop turn by handleClientsWithPendingWrites:
 * here f->cork and the owner's one flush per event.
 */
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A sink frame's bytes go here and are never read back (scratch, not state): 64 KiB a recv,
 * as many as GX_FRAME_BURST a call, so a throughput stream is drained at line rate. */
static unsigned char sink_buf[1 << 16];

void gx_frame_init(struct gx_frame *f, int fd, const struct gx_frame_fmt *fmt,
		   const struct gx_frame_seal *seal, void *owner)
{
	memset(f, 0, sizeof(*f));
	f->fd = fd;
	f->fmt = fmt;
	f->seal = seal;
	f->owner = owner;
}

static void body_free(struct gx_frame *f)
{
	if (f->bcap && f->fmt->charge)
		f->fmt->charge(f, f->bcap, 0);
	free(f->body);
	f->body = NULL;
	f->blen = f->boff = f->bcap = 0;
}

void gx_frame_reset(struct gx_frame *f)
{
	if (f->fd >= 0)
		close(f->fd);
	body_free(f);
	free(f->out);
	gx_frame_init(f, -1, f->fmt, f->seal, f->owner);
}

void gx_frame_feed(struct gx_frame *f, const unsigned char *p, size_t n)
{
	f->in = p;
	f->inlen = n;
}

/* ---- input -------------------------------------------------------------------------- */

static int is_fed(const struct gx_frame *f)
{
	return f->fed || f->carried;
}

/*
 * Up to want - *off more bytes into buf (NULL: dropped into sink_buf): 1 when all are in,
 * 0 not yet (EAGAIN, the fed input used up, this call's recv budget spent), < 0 an error.
 */
static int fill(struct gx_frame *f, unsigned char *buf, size_t want, size_t *off, int *burst)
{
	if (is_fed(f)) {
		size_t n = want - *off < f->inlen ? want - *off : f->inlen;

		if (n && buf)
			memcpy(buf + *off, f->in, n);
		*off += n;
		f->in += n;
		f->inlen -= n;
		return *off == want;
	}
	while (*off < want) {
		size_t ask = want - *off;
		ssize_t n;

		if (!buf && ask > sizeof(sink_buf))
			ask = sizeof(sink_buf);
		if ((*burst)-- <= 0)
			return 0;
		n = recv(f->fd, buf ? buf + *off : sink_buf, ask, 0);
		if (n > 0) {
			*off += (size_t)n;
			continue;
		}
		if (n == 0) {
			f->eof = 1;
			return -ECONNRESET;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
	return 1;
}

/* The body buffer's first allocation or its next doubling, charged first. */
static int body_grow(struct gx_frame *f)
{
	size_t cap = f->bcap ? f->bcap * 2 : (f->grow_from ? f->grow_from : f->blen);
	unsigned char *p;
	int rc;

	if (cap > f->blen || cap < f->bcap) /* cap < bcap: the doubling wrapped */
		cap = f->blen;
	if (f->fmt->charge) {
		rc = f->fmt->charge(f, f->bcap, cap);
		if (rc < 0)
			return rc;
	}
	p = realloc(f->body, cap ? cap : 1); /* an empty body is a buffer too: the caller frees */
	if (!p) {
		if (f->fmt->charge)
			f->fmt->charge(f, cap, f->bcap);
		return -ENOMEM;
	}
	f->body = p;
	f->bcap = cap;
	return 0;
}

static int read_header(struct gx_frame *f, int *burst)
{
	int rc = fill(f, f->hdr, f->fmt->hdr_len, &f->hoff, burst);

	if (rc <= 0)
		return rc;
	f->sink = 0;
	f->grow_from = 0;
	f->peek_at = 0;
	f->peeked = 0;
	rc = f->fmt->decode(f, f->hdr, &f->type, &f->blen);
	if (rc < 0)
		return rc;
	/* the open hook takes its trailer off the end: a body shorter than it is no frame */
	if (f->sealed_rx && f->seal && !f->sink && f->blen < f->seal->over)
		return GX_EPROTO;
	f->in_body = 1;
	f->boff = 0;
	if (f->sink)
		return 1;
	rc = body_grow(f);
	return rc < 0 ? rc : 1;
}

/* The peek is due: its bytes are in and it has not run. */
static int peek_due(const struct gx_frame *f)
{
	return f->peek_at && f->fmt->peek && !f->peeked;
}

static int read_body(struct gx_frame *f, int *burst)
{
	size_t want;
	int rc, got;

	if (f->sink)
		return fill(f, NULL, f->blen, &f->boff, burst);
	while (f->boff < f->blen) {
		if (f->boff == f->bcap) {
			rc = body_grow(f);
			if (rc < 0)
				return rc;
		}
		want = f->bcap;
		if (peek_due(f) && f->peek_at > f->boff && f->peek_at < want)
			want = f->peek_at; /* stop there: the peek may refuse the rest */
		got = fill(f, f->body, want, &f->boff, burst);
		if (got < 0)
			return got;
		if (peek_due(f) && f->boff >= f->peek_at) {
			f->peeked = 1;
			rc = f->fmt->peek(f, f->body, f->boff);
			if (rc < 0)
				return rc;
		}
		if (got == 0)
			return 0;
	}
	return 1;
}

int gx_frame_read(struct gx_frame *f, unsigned *type, unsigned char **body, size_t *len)
{
	int burst = GX_FRAME_BURST, rc;
	unsigned t;
	size_t n;

	if (f->fd < 0 && !is_fed(f))
		return -EBADF;
	if (f->in_raw)
		return -EBUSY;
	if (!f->in_body) {
		rc = read_header(f, &burst);
		if (rc <= 0)
			return rc;
	}
	rc = read_body(f, &burst);
	if (rc <= 0)
		return rc;
	t = f->type;
	n = f->blen;
	if (!f->sink && f->sealed_rx && f->seal) {
		rc = f->seal->open(f, &t, f->body, &n);
		if (rc < 0)
			return rc;
	}
	*type = t;
	*len = n;
	*body = f->sink ? NULL : f->body;
	if (!f->sink)
		f->body = NULL; /* the caller's now; its charge is released below */
	if (f->bcap && f->fmt->charge)
		f->fmt->charge(f, f->bcap, 0);
	f->blen = f->boff = f->bcap = f->hoff = 0;
	f->in_body = 0;
	return 1;
}

int gx_frame_read_raw(struct gx_frame *f, void *buf, size_t n)
{
	int burst = GX_FRAME_BURST, rc;

	if (f->fd < 0 && !is_fed(f))
		return -EBADF;
	if (f->in_body || f->hoff)
		return -EBUSY;
	if (!f->in_raw) {
		f->body = malloc(n ? n : 1); /* handshake sizes: the caller's constants */
		if (!f->body)
			return -ENOMEM;
		f->in_raw = 1;
		f->blen = n;
		f->boff = 0;
	} else if (f->blen != n) {
		return -EINVAL;
	}
	rc = fill(f, f->body, n, &f->boff, &burst);
	if (rc <= 0)
		return rc;
	memcpy(buf, f->body, n);
	free(f->body);
	f->body = NULL;
	f->blen = f->boff = 0;
	f->in_raw = 0;
	return 1;
}

ssize_t gx_frame_recv(struct gx_frame *f, void *buf, size_t cap)
{
	ssize_t n;

	if (f->fd < 0)
		return -EBADF;
	n = recv(f->fd, buf, cap, 0);
	if (n > 0)
		return n;
	if (n == 0) {
		f->eof = 1;
		return -ECONNRESET;
	}
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
}

int gx_frame_drain(struct gx_frame *f)
{
	ssize_t n;
	int k;

	if (f->fd < 0)
		return -EBADF;
	for (k = 0; k < GX_FRAME_BURST; k++) {
		n = recv(f->fd, sink_buf, sizeof(sink_buf), 0);
		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		if (n == 0)
			f->eof = 1;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : 1;
	}
	return 0;
}

/* ---- output ------------------------------------------------------------------------- */

static void out_free(struct gx_frame *f)
{
	free(f->out);
	f->out = NULL;
	f->olen = f->ooff = f->ocap = 0;
}

/* Room for n more bytes at f->out + f->olen, within omax. */
static int out_room(struct gx_frame *f, size_t n)
{
	size_t used = f->olen - f->ooff, cap;
	unsigned char *p;

	if (n > SIZE_MAX / 4 - used || (f->omax && used + n > f->omax))
		return -ENOBUFS;
	if (f->olen + n <= f->ocap)
		return 0;
	if (f->ooff) { /* what was written is dropped first */
		memmove(f->out, f->out + f->ooff, used);
		f->olen = used;
		f->ooff = 0;
		if (f->olen + n <= f->ocap)
			return 0;
	}
	cap = f->ocap ? f->ocap : 512;
	while (cap < f->olen + n)
		cap *= 2;
	p = realloc(f->out, cap);
	if (!p)
		return -ENOMEM;
	f->out = p;
	f->ocap = cap;
	return 0;
}

static int can_send(const struct gx_frame *f)
{
	return f->fd >= 0 || f->carried ? 0 : -EBADF;
}

/* As much of p as the socket takes now (EINTR retried, EAGAIN ends it): the count, or < 0
 * a write error. */
static ssize_t write_some(int fd, const unsigned char *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t k = send(fd, p + off, n - off, MSG_NOSIGNAL);

		if (k > 0) {
			off += (size_t)k;
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		return k < 0 ? -errno : -EIO;
	}
	return (ssize_t)off;
}

/* After a frame is queued: written at once unless corked or carried. */
static int send_now(struct gx_frame *f)
{
	int rc;

	if (f->cork || f->fd < 0)
		return 0;
	rc = gx_frame_flush(f);
	return rc < 0 ? rc : 0;
}

int gx_frame_send(struct gx_frame *f, unsigned type, const void *body, size_t len)
{
	int sealed = f->sealed_tx && f->seal, rc = can_send(f);
	size_t hl = f->fmt->hdr_len, blen = len + (sealed ? f->seal->over : 0);
	unsigned char hdr[GX_FRAME_HDR_MAX], *p;

	if (rc < 0)
		return rc;
	if (blen < len)
		return -EMSGSIZE;
	rc = f->fmt->encode(f, hdr, type, blen);
	if (rc == 0)
		rc = out_room(f, hl + blen);
	if (rc < 0)
		return rc;
	p = f->out + f->olen;
	memcpy(p, hdr, hl);
	if (sealed)
		rc = f->seal->seal(f, type, body, len, p + hl);
	else if (len)
		memcpy(p + hl, body, len);
	if (rc < 0)
		return rc;
	f->olen += hl + blen;
	return send_now(f);
}

int gx_frame_send_hdr(struct gx_frame *f, unsigned type, size_t blen)
{
	unsigned char hdr[GX_FRAME_HDR_MAX];
	int rc = can_send(f);

	if (rc == 0 && f->sealed_tx)
		rc = -EINVAL; /* a sealed body cannot follow raw */
	if (rc == 0)
		rc = f->fmt->encode(f, hdr, type, blen);
	if (rc < 0)
		return rc;
	return gx_frame_send_raw(f, hdr, f->fmt->hdr_len);
}

int gx_frame_send_raw(struct gx_frame *f, const void *p, size_t n)
{
	int rc = can_send(f), direct = !f->cork && f->fd >= 0 && !gx_frame_pending(f);
	size_t put = 0;
	ssize_t k;

	if (rc == 0 && f->omax && n > f->omax)
		rc = -ENOBUFS; /* refused whole, as out_room refuses a queued one */
	if (rc < 0)
		return rc;
	/* nothing queued: written straight from p, and only what the socket does not take now
	 * is copied (a throughput stream's chunks are not copied twice; libuv's uv_write) */
	if (direct) {
		k = write_some(f->fd, p, n);
		if (k < 0)
			return (int)k;
		put = (size_t)k;
		if (put == n)
			return 0;
	}
	rc = out_room(f, n - put);
	if (rc < 0)
		return rc;
	if (n > put)
		memcpy(f->out + f->olen, (const unsigned char *)p + put, n - put);
	f->olen += n - put;
	return direct ? 0 : send_now(f); /* direct: the socket took what it could */
}

int gx_frame_flush(struct gx_frame *f)
{
	ssize_t n;

	if (f->fd < 0)
		return f->carried ? gx_frame_pending(f) > 0 : -EBADF;
	n = write_some(f->fd, f->out + f->ooff, f->olen - f->ooff);
	if (n < 0)
		return (int)n;
	f->ooff += (size_t)n;
	if (f->ooff < f->olen)
		return 1;
	/* idle connections hold no buffer: a coordinator keeps thousands open */
	out_free(f);
	return 0;
}

size_t gx_frame_out_peek(const struct gx_frame *f, const unsigned char **p)
{
	*p = f->out ? f->out + f->ooff : NULL; /* a drained queue holds no buffer */
	return gx_frame_pending(f);
}

void gx_frame_out_drop(struct gx_frame *f, size_t n)
{
	if (n > gx_frame_pending(f))
		n = gx_frame_pending(f);
	f->ooff += n;
	if (f->ooff == f->olen)
		out_free(f);
}
