/* SPDX-License-Identifier: MIT */
/*
 * rdzv_conn.c - one non-blocking, buffered rendezvous connection: partial
 * reads and writes tracked as (buf, len, off), the header decoded and its
 * length capped before the body is read, and once the session is up every
 * frame carries MAC(S, dir | seq | type | body) checked against the next
 * expected sequence number (PROTOCOL.md "Session").
 */
#include "rdzv/rdzv_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

void rdzv_conn_init(struct rdzv_conn *c, int fd, int is_coord)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->is_coord = is_coord;
	c->state = is_coord ? RC_HELLO : RC_CONNECTING;
}

void rdzv_conn_reset(struct rdzv_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->body);
	free(c->out);
	sodium_memzero(c->skey, sizeof(c->skey));
	rdzv_conn_init(c, -1, c->is_coord);
	c->state = RC_CLOSED;
}

void rdzv_conn_session(struct rdzv_conn *c, const unsigned char k[RDZV_KEY_LEN])
{
	rdzv_session_key(k, c->nm, c->nc, c->skey);
	if (!c->tx_early)
		c->seq_tx = 0;
	c->tx_early = 0;
	c->session = 1;
	c->seq_rx = 0;
	c->state = RC_SESSION;
}

void rdzv_conn_session_tx(struct rdzv_conn *c, const unsigned char k[RDZV_KEY_LEN])
{
	rdzv_session_key(k, c->nm, c->nc, c->skey);
	c->tx_early = 1;
	c->seq_tx = 0;
}

void rdzv_conn_session_ticket(struct rdzv_conn *c, const unsigned char vkey[RDZV_KEY_LEN])
{
	memcpy(c->skey, vkey, RDZV_KEY_LEN);
	c->tx_early = 0;
	c->session = 1;
	c->seq_tx = 0;
	c->seq_rx = c->is_coord; /* the ticket frame was the member's 0 */
	c->state = RC_SESSION;
}

/* recv into buf+*off up to want; 1 complete, 0 EAGAIN, < 0 error. A buffered
 * connection (the coordinator's) takes its bytes from c->in (one recv per readiness,
 * conn_event) instead: 0 there means that input is used up. */
static int fill(struct rdzv_conn *c, unsigned char *buf, size_t want, size_t *off)
{
	if (c->buffered) {
		size_t n = want - *off < c->inlen ? want - *off : c->inlen;

		if (n) {
			memcpy(buf + *off, c->in, n);
			*off += n;
			c->in += n;
			c->inlen -= n;
		}
		return *off == want;
	}
	while (*off < want) {
		ssize_t n = recv(c->fd, buf + *off, want - *off, 0);

		if (n > 0) {
			*off += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
	return 1;
}

static int read_header(struct rdzv_conn *c)
{
	int rc = fill(c, c->hdr, RDZV_HDR_LEN, &c->hoff);

	if (rc <= 0)
		return rc;
	rc = rdzv_hdr_decode(c->hdr, c->session, &c->h);
	c->peer_vmaj = c->h.vmaj;
	c->peer_vmin = c->h.vmin;
	/* a coordinator never receives a table; a relay's CARRY has its own cap, in its session
	 * only (not before a proof, not from a carried child) */
	if (rc == 0 && c->is_coord && !(c->h.type == RDZV_CARRY && c->session && !c->carried) &&
	    c->h.len > RDZV_MAX_BODY + RDZV_MAC_LEN)
		rc = GX_EPROTO;
	if (rc < 0)
		return rc;
	c->body = malloc(c->h.len ? c->h.len : 1);
	if (!c->body)
		return -ENOMEM;
	c->boff = 0;
	return 1;
}

int rdzv_conn_read(struct rdzv_conn *c, uint16_t *type, unsigned char **body, size_t *len)
{
	uint8_t dir = c->is_coord ? 'M' : 'C';
	size_t blen;
	int rc;

	if (c->fd < 0 && !c->carried)
		return -EBADF;
	if (c->hoff < RDZV_HDR_LEN || !c->body) {
		rc = read_header(c);
		if (rc <= 0)
			return rc;
	}
	rc = fill(c, c->body, c->h.len, &c->boff);
	if (rc <= 0)
		return rc;
	blen = c->h.len;
	if (c->session) {
		blen -= RDZV_MAC_LEN;
		rc = rdzv_mac_verify(c->skey, dir, c->seq_rx, c->h.type, c->body, blen,
				     c->body + blen);
		if (rc < 0)
			return rc;
		c->seq_rx++;
	}
	*type = c->h.type;
	*body = c->body;
	*len = blen;
	c->body = NULL;
	c->boff = 0;
	c->hoff = 0;
	return 1;
}

static int out_reserve(struct rdzv_conn *c, size_t n)
{
	unsigned char *p;
	size_t cap;

	if (c->ooff == c->olen)
		c->ooff = c->olen = 0;
	if (c->olen + n <= c->ocap)
		return 0;
	cap = c->ocap ? c->ocap : 512;
	while (cap < c->olen + n)
		cap *= 2;
	p = realloc(c->out, cap);
	if (!p)
		return -ENOMEM;
	c->out = p;
	c->ocap = cap;
	return 0;
}

int rdzv_conn_send(struct rdzv_conn *c, uint16_t type, const unsigned char *body, size_t len)
{
	size_t mac = c->session || c->tx_early ? RDZV_MAC_LEN : 0;
	unsigned char *p;
	int rc;

	if (c->fd < 0 && !c->carried)
		return -EBADF;
	if (len > rdzv_max_body(type))
		return GX_EPROTO;
	rc = out_reserve(c, RDZV_HDR_LEN + len + mac);
	if (rc < 0)
		return rc;
	p = c->out + c->olen;
	rdzv_hdr_encode(p, type, (uint32_t)(len + mac));
	if (len)
		memcpy(p + RDZV_HDR_LEN, body, len);
	if (mac)
		rdzv_mac(c->skey, c->is_coord ? 'C' : 'M', c->seq_tx++, type, body, len,
			 p + RDZV_HDR_LEN + len);
	c->olen += RDZV_HDR_LEN + len + mac;
	if (c->cork || c->carried) /* carried: the coordinator moves it into CARRY records */
		return 0;
	rc = rdzv_conn_flush(c);
	return rc < 0 ? rc : 0;
}

int rdzv_conn_flush(struct rdzv_conn *c)
{
	if (c->carried) /* written by its relay (rdzv_co_carry_out) */
		return rdzv_conn_pending(c);
	while (c->ooff < c->olen) {
		ssize_t n = send(c->fd, c->out + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL);

		if (n > 0) {
			c->ooff += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		return n < 0 ? -errno : -EIO;
	}
	/* idle connections hold no buffer: 8192 open phase-1 sessions cost
	 * ~1 KiB each otherwise, the bulk of the coordinator's RSS */
	c->ooff = c->olen = c->ocap = 0;
	free(c->out);
	c->out = NULL;
	return 0;
}

void rdzv_conn_watch(struct gx_ev *ev, const struct rdzv_conn *c)
{
	if (c->fd >= 0)
		gx_ev_mod(ev, c->fd, EPOLLIN | (rdzv_conn_pending(c) ? EPOLLOUT : 0));
}

void rdzv_conn_close(struct gx_ev *ev, struct rdzv_conn *c)
{
	if (c->fd >= 0) {
		unsigned char sink[512];

		gx_ev_del(ev, c->fd);
		/* a close with unread input sends a RST: the last member's VERIFIED often
		 * waits unread on phase 2 when its COMMIT is read first (it was the one
		 * reset of every bench run) */
		(void)recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
	}
	rdzv_conn_reset(c);
}
