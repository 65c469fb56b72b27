/* SPDX-License-Identifier: MIT */
/*
 * rdzv_conn.c - one rendezvous connection: its frames through gx_frame (rdzv/gx/gx.h), with
 * the rendezvous header (rdzv_hdr_decode: magic, major version, the per-type cap and the
 * coordinator's own cap, checked before the body is read) and, once the session is up, a
 * MAC(S, dir | seq | type | body) trailer on every frame checked against the next expected
 * sequence number (PROTOCOL.md "Session").
 */
#include "rdzv/rdzv_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

/* The hooks find their connection around their gx_frame (not through f->owner, which a
 * struct copied elsewhere would leave pointing at the old place). */
static struct rdzv_conn *conn_of(const struct gx_frame *f)
{
	return (struct rdzv_conn *)((char *)f - offsetof(struct rdzv_conn, f));
}

static int rc_decode(struct gx_frame *f, const unsigned char *hdr, unsigned *type, size_t *blen)
{
	struct rdzv_conn *c = conn_of(f);
	struct rdzv_hdr h;
	int rc = rdzv_hdr_decode(hdr, f->sealed_rx, &h);

	c->peer_vmaj = h.vmaj;
	c->peer_vmin = h.vmin;
	/* a coordinator never receives a table; a relay's CARRY has its own cap, in its session
	 * only (not before a proof, not from a carried child) */
	if (rc == 0 && c->is_coord && !(h.type == RDZV_CARRY && f->sealed_rx && !f->carried) &&
	    h.len > RDZV_MAX_BODY + RDZV_MAC_LEN)
		rc = GX_EPROTO;
	*type = h.type;
	*blen = h.len;
	return rc;
}

static int rc_encode(const struct gx_frame *f, unsigned char *hdr, unsigned type, size_t blen)
{
	size_t mac = f->sealed_tx ? RDZV_MAC_LEN : 0;

	if (type > UINT16_MAX || blen - mac > rdzv_max_body((uint16_t)type))
		return GX_EPROTO;
	rdzv_hdr_encode(hdr, (uint16_t)type, (uint32_t)blen);
	return 0;
}

static const struct gx_frame_fmt rdzv_fmt = {
    .hdr_len = RDZV_HDR_LEN,
    .decode = rc_decode,
    .encode = rc_encode,
};

static int rc_seal(struct gx_frame *f, unsigned type, const unsigned char *body, size_t len,
		   unsigned char *out)
{
	struct rdzv_conn *c = conn_of(f);

	if (len)
		memcpy(out, body, len);
	rdzv_mac(c->skey, c->is_coord ? 'C' : 'M', c->seq_tx++, (uint16_t)type, body, len,
		 out + len);
	return 0;
}

static int rc_open(struct gx_frame *f, unsigned *type, unsigned char *body, size_t *len)
{
	struct rdzv_conn *c = conn_of(f);
	size_t n = *len - RDZV_MAC_LEN; /* gx_frame: a sealed body is at least the MAC */
	int rc = rdzv_mac_verify(c->skey, c->is_coord ? 'M' : 'C', c->seq_rx, (uint16_t)*type, body,
				 n, body + n);

	if (rc < 0)
		return rc;
	c->seq_rx++;
	*len = n;
	return 0;
}

static const struct gx_frame_seal rdzv_seal = {
    .over = RDZV_MAC_LEN,
    .seal = rc_seal,
    .open = rc_open,
};

void rdzv_conn_init(struct rdzv_conn *c, int fd, int is_coord)
{
	memset(c, 0, sizeof(*c));
	gx_frame_init(&c->f, fd, &rdzv_fmt, &rdzv_seal, c);
	c->is_coord = is_coord;
	c->state = is_coord ? RC_HELLO : RC_CONNECTING;
}

void rdzv_conn_reset(struct rdzv_conn *c)
{
	gx_frame_reset(&c->f);
	sodium_memzero(c->skey, sizeof(c->skey));
	rdzv_conn_init(c, -1, c->is_coord);
	c->state = RC_CLOSED;
}

void rdzv_conn_session(struct rdzv_conn *c, const unsigned char k[RDZV_KEY_LEN])
{
	rdzv_session_key(k, c->nm, c->nc, c->skey);
	if (!rdzv_conn_early(c)) /* else the sequence goes on from rdzv_conn_session_tx */
		c->seq_tx = 0;
	c->f.sealed_tx = c->f.sealed_rx = 1;
	c->seq_rx = 0;
	c->state = RC_SESSION;
}

void rdzv_conn_session_tx(struct rdzv_conn *c, const unsigned char k[RDZV_KEY_LEN])
{
	rdzv_session_key(k, c->nm, c->nc, c->skey);
	c->f.sealed_tx = 1;
	c->seq_tx = 0;
}

void rdzv_conn_session_ticket(struct rdzv_conn *c, const unsigned char vkey[RDZV_KEY_LEN])
{
	memcpy(c->skey, vkey, RDZV_KEY_LEN);
	c->f.sealed_tx = c->f.sealed_rx = 1;
	c->seq_tx = 0;
	c->seq_rx = c->is_coord; /* the ticket frame was the member's 0 */
	c->state = RC_SESSION;
}

int rdzv_conn_read(struct rdzv_conn *c, uint16_t *type, unsigned char **body, size_t *len)
{
	unsigned t;
	int rc = gx_frame_read(&c->f, &t, body, len);

	if (rc == 1)
		*type = (uint16_t)t;
	return rc;
}

int rdzv_conn_send(struct rdzv_conn *c, uint16_t type, const unsigned char *body, size_t len)
{
	return gx_frame_send(&c->f, type, body, len);
}

int rdzv_conn_flush(struct rdzv_conn *c)
{
	return gx_frame_flush(&c->f);
}

void rdzv_conn_watch(struct gx_ev *ev, const struct rdzv_conn *c)
{
	if (c->f.fd >= 0)
		gx_ev_mod(ev, c->f.fd, EPOLLIN | (rdzv_conn_pending(c) ? EPOLLOUT : 0));
}

void rdzv_conn_close(struct gx_ev *ev, struct rdzv_conn *c)
{
	if (c->f.fd >= 0) {
		gx_ev_del(ev, c->f.fd);
		/* a close with unread input sends a RST: the last member's VERIFIED often
		 * waits unread on phase 2 when its COMMIT is read first (it was the one
		 * reset of every bench run) */
		(void)gx_frame_drain(&c->f);
	}
	rdzv_conn_reset(c);
}
