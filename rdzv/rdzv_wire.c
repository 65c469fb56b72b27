/* SPDX-License-Identifier: MIT */
/*
 * rdzv_wire.c - framing and the TLV codec (PROTOCOL.md "Wire format"):
 * a 12-byte header in network order, a per-type length cap checked before
 * the body is read, and a body of (u16 type, u16 len, value) items where
 * unknown types are skipped. Nothing here trusts its input.
 */
#include "rdzv/rdzv_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rdzv_hdr_encode(unsigned char out[RDZV_HDR_LEN], uint16_t type, uint32_t len)
{
	uint32_t m = htonl(RDZV_MAGIC), l = htonl(len);
	uint16_t t = htons(type);

	memcpy(out, &m, 4);
	out[4] = RDZV_VMAJOR;
	out[5] = RDZV_VMINOR;
	memcpy(out + 6, &t, 2);
	memcpy(out + 8, &l, 4);
}

size_t rdzv_max_body(uint16_t type)
{
	switch (type) {
	case RDZV_CHALLENGE:
	case RDZV_AUTH:
	case RDZV_PROOF:
	case RDZV_PING:
	case RDZV_PONG:
	case RDZV_END:
		return 256;
	case RDZV_COMMIT:
		return RDZV_MAX_TABLE_BODY;
	case RDZV_CARRY:
		return RDZV_CARRY_MAX;
	default:
		return RDZV_MAX_BODY;
	}
}

int rdzv_hdr_decode(const unsigned char in[RDZV_HDR_LEN], int mac, struct rdzv_hdr *h)
{
	uint32_t m, l;
	uint16_t t;

	memcpy(&m, in, 4);
	memcpy(&t, in + 6, 2);
	memcpy(&l, in + 8, 4);
	h->magic = ntohl(m);
	h->vmaj = in[4];
	h->vmin = in[5];
	h->type = ntohs(t);
	h->len = ntohl(l);
	if (h->magic != RDZV_MAGIC)
		return GX_EPROTO;
	if (h->vmaj != RDZV_VMAJOR)
		return GX_EVERSION;
	if (mac && h->len < RDZV_MAC_LEN)
		return GX_EPROTO;
	/* before the session is up nothing may be large (no table from strangers) */
	if (!mac && h->len > RDZV_MAX_BODY)
		return GX_EPROTO;
	if (h->len > rdzv_max_body(h->type) + (mac ? RDZV_MAC_LEN : 0))
		return GX_EPROTO;
	return 0;
}

/* ---- output buffer ---- */
void rdzv_buf_free(struct rdzv_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void rdzv_put_raw(struct rdzv_buf *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		unsigned char *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

void rdzv_put(struct rdzv_buf *b, uint16_t t, const void *v, size_t n)
{
	uint16_t nt = htons(t), nn = htons((uint16_t)n);

	if (n > 0xffff) {
		b->err = b->err ? b->err : GX_EPROTO;
		return;
	}
	rdzv_put_raw(b, &nt, 2);
	rdzv_put_raw(b, &nn, 2);
	rdzv_put_raw(b, v, n);
}

void rdzv_put_rec(struct rdzv_buf *b, uint32_t id, uint8_t kind, const void *p, size_t n)
{
	unsigned char h[RDZV_CARRY_REC];
	uint32_t v = htonl(id), l = htonl((uint32_t)n);

	memcpy(h, &v, 4);
	h[4] = kind;
	memcpy(h + 5, &l, 4);
	rdzv_put_raw(b, h, sizeof(h));
	if (n)
		rdzv_put_raw(b, p, n);
}

int rdzv_rec_next(const unsigned char *body, size_t len, size_t *off, uint32_t *id, uint8_t *kind,
		  const unsigned char **p, uint32_t *n)
{
	if (*off >= len)
		return 0;
	if (len - *off < RDZV_CARRY_REC)
		return GX_EPROTO;
	memcpy(id, body + *off, 4);
	*kind = body[*off + 4];
	memcpy(n, body + *off + 5, 4);
	*id = ntohl(*id);
	*n = ntohl(*n);
	if (*n > len - *off - RDZV_CARRY_REC)
		return GX_EPROTO;
	*p = body + *off + RDZV_CARRY_REC;
	*off += RDZV_CARRY_REC + *n;
	return 1;
}

void rdzv_put_str(struct rdzv_buf *b, uint16_t t, const char *s)
{
	if (s && *s)
		rdzv_put(b, t, s, strlen(s));
}

void rdzv_put_u32(struct rdzv_buf *b, uint16_t t, uint32_t v)
{
	uint32_t n = htonl(v);

	rdzv_put(b, t, &n, 4);
}

void rdzv_put_u64(struct rdzv_buf *b, uint16_t t, uint64_t v)
{
	unsigned char x[8];
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		x[i] = (unsigned char)(v & 0xff);
	rdzv_put(b, t, x, 8);
}

void rdzv_put_peer(struct rdzv_buf *b, uint16_t t, const struct rdzv_peer *p)
{
	struct rdzv_buf in = {0};

	rdzv_put_str(&in, T_NAME, p->name);
	rdzv_put_u32(&in, T_INDEX, p->index);
	rdzv_put_u64(&in, T_INCARNATION, p->incarnation);
	rdzv_put_str(&in, T_IFACE, p->iface);
	rdzv_put_str(&in, T_ADDR4, p->addr4);
	rdzv_put_str(&in, T_ADDR6, p->addr6);
	rdzv_put_str(&in, T_RDMA_DEV, p->rdma_dev);
	rdzv_put_u32(&in, T_RDMA_PORT, (uint32_t)p->rdma_port);
	rdzv_put_u32(&in, T_GID_INDEX, (uint32_t)p->gid_index);
	rdzv_put_u32(&in, T_LINK_LAYER, (uint32_t)p->link_layer);
	rdzv_put_u32(&in, T_SLOTS, p->slots);
	rdzv_put_u32(&in, T_FLAGS, p->flags);
	if (p->nd_err)
		rdzv_put_u32(&in, T_ND_ERR, (uint32_t)p->nd_err);
	if (p->nd_err || p->nd_why[0])
		rdzv_put_str(&in, T_ND_WHY, p->nd_why);
	rdzv_put_str(&in, T_SEEN_FROM, p->seen_from);
	if (p->primary[0])
		rdzv_put_str(&in, T_PRIMARY, p->primary);
	if (p->mtu)
		rdzv_put_u32(&in, T_MTU, (uint32_t)p->mtu);
	if (p->rails[0])
		rdzv_put_str(&in, T_RAILS, p->rails);
	if (p->plen4 || p->plen6)
		rdzv_put_u32(&in, T_PLENS, (uint32_t)p->plen4 | (uint32_t)p->plen6 << 8);
	if (in.err)
		b->err = b->err ? b->err : in.err;
	else
		rdzv_put(b, t, in.p, in.len);
	rdzv_buf_free(&in);
}

/* ---- TLV reader ---- */
int rdzv_tlv_next(const unsigned char *p, size_t len, size_t *off, uint16_t *t,
		  const unsigned char **v, uint16_t *n)
{
	uint16_t nt, nn;

	if (*off == len)
		return 0;
	if (*off > len || len - *off < 4)
		return GX_EPROTO;
	memcpy(&nt, p + *off, 2);
	memcpy(&nn, p + *off + 2, 2);
	*t = ntohs(nt);
	*n = ntohs(nn);
	if (len - *off - 4 < *n)
		return GX_EPROTO;
	*v = p + *off + 4;
	*off += 4 + (size_t)*n;
	return 1;
}

static int get_str(const unsigned char *v, uint16_t n, char *out, size_t outlen)
{
	if (n >= outlen || memchr(v, '\0', n))
		return GX_EPROTO;
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

static int get_u32(const unsigned char *v, uint16_t n, uint32_t *out)
{
	uint32_t x;

	if (n != 4)
		return GX_EPROTO;
	memcpy(&x, v, 4);
	*out = ntohl(x);
	return 0;
}

static int get_i32(const unsigned char *v, uint16_t n, int *out)
{
	uint32_t x;
	int rc = get_u32(v, n, &x);

	if (rc == 0)
		*out = (int)(int32_t)x;
	return rc;
}

static int get_u64(const unsigned char *v, uint16_t n, uint64_t *out)
{
	uint64_t x = 0;
	int i;

	if (n != 8)
		return GX_EPROTO;
	for (i = 0; i < 8; i++)
		x = (x << 8) | v[i];
	*out = x;
	return 0;
}

static int peer_field(struct rdzv_peer *p, uint16_t t, const unsigned char *v, uint16_t n)
{
	switch (t) {
	case T_NAME:
		return get_str(v, n, p->name, sizeof(p->name));
	case T_INDEX:
		return get_u32(v, n, &p->index);
	case T_INCARNATION:
		return get_u64(v, n, &p->incarnation);
	case T_IFACE:
		return get_str(v, n, p->iface, sizeof(p->iface));
	case T_ADDR4:
		return get_str(v, n, p->addr4, sizeof(p->addr4));
	case T_ADDR6:
		return get_str(v, n, p->addr6, sizeof(p->addr6));
	case T_RDMA_DEV:
		return get_str(v, n, p->rdma_dev, sizeof(p->rdma_dev));
	case T_RDMA_PORT:
		return get_i32(v, n, &p->rdma_port);
	case T_GID_INDEX:
		return get_i32(v, n, &p->gid_index);
	case T_LINK_LAYER:
		return get_i32(v, n, &p->link_layer);
	case T_SLOTS:
		return get_u32(v, n, &p->slots);
	case T_FLAGS:
		return get_u32(v, n, &p->flags);
	case T_ND_ERR:
		return get_i32(v, n, &p->nd_err);
	case T_ND_WHY:
		return get_str(v, n, p->nd_why, sizeof(p->nd_why));
	case T_SEEN_FROM:
		return get_str(v, n, p->seen_from, sizeof(p->seen_from));
	case T_PRIMARY:
		return get_str(v, n, p->primary, sizeof(p->primary));
	case T_MTU:
		return get_i32(v, n, &p->mtu);
	case T_RAILS:
		return get_str(v, n, p->rails, sizeof(p->rails));
	case T_PLENS: {
		uint32_t u = 0;
		int rc = get_u32(v, n, &u);

		p->plen4 = (int)(u & 0xff);
		p->plen6 = (int)(u >> 8 & 0xff);
		return rc < 0 ? rc : (u >> 16 ? GX_EPROTO : 0);
	}
	default:
		return 0; /* unknown: skipped */
	}
}

int rdzv_peer_decode(const unsigned char *p, size_t len, struct rdzv_peer *peer)
{
	size_t off = 0;
	const unsigned char *v;
	uint16_t t, n;
	int rc;

	memset(peer, 0, sizeof(*peer));
	peer->gid_index = -1;
	while ((rc = rdzv_tlv_next(p, len, &off, &t, &v, &n)) == 1) {
		rc = peer_field(peer, t, v, n);
		if (rc < 0)
			return rc;
	}
	return rc;
}

static int msg_field(struct rdzv_msg *m, uint16_t t, const unsigned char *v, uint16_t n)
{
	switch (t) {
	case T_NONCE:
		m->has_nonce = n == RDZV_NONCE_LEN;
		if (m->has_nonce)
			memcpy(m->nonce, v, n);
		return m->has_nonce ? 0 : GX_EPROTO;
	case T_VTICKET:
		m->has_vticket = n == RDZV_TICKET_LEN;
		if (m->has_vticket)
			memcpy(m->vticket, v, n);
		return m->has_vticket ? 0 : GX_EPROTO;
	case T_PROOF:
		m->has_proof = n == RDZV_MAC_LEN;
		if (m->has_proof)
			memcpy(m->proof, v, n);
		return m->has_proof ? 0 : GX_EPROTO;
	case T_HAS_TOKEN:
		return get_i32(v, n, &m->has_token);
	case T_NAME:
		return get_str(v, n, m->name, sizeof(m->name));
	case T_JOB_ID:
		return get_str(v, n, m->job_id, sizeof(m->job_id));
	case T_CODE:
		return get_i32(v, n, &m->code);
	case T_TEXT:
		return get_str(v, n, m->text, sizeof(m->text));
	case T_INDEX:
		return get_u32(v, n, &m->index);
	case T_RANK:
		return get_u32(v, n, &m->rank);
	case T_WORLD:
		return get_u32(v, n, &m->world);
	case T_COUNT:
		return get_u32(v, n, &m->count);
	case T_FLAGS:
		return get_u32(v, n, &m->flags);
	case T_INCARNATION:
		return get_u64(v, n, &m->incarnation);
	case T_ROUND:
		return get_u64(v, n, &m->round);
	case T_MASTER:
		return get_str(v, n, m->master, sizeof(m->master));
	case T_PFDATA: /* bounded by the frame: at most RDZV_MAX_BODY */
		m->pf = v;
		m->pflen = n;
		return 0;
	case T_JRANK:
		m->has_jrank = 1;
		return get_u32(v, n, &m->jrank);
	case T_JWORLD:
		return get_u32(v, n, &m->jworld);
	default:
		return 0;
	}
}

/* T_PEER: the sender's / coordinator's entry; T_ENTRY: table rows (COMMIT). */
int rdzv_msg_decode(uint16_t type, const unsigned char *body, size_t len, struct rdzv_msg *m)
{
	size_t off = 0;
	const unsigned char *v;
	uint16_t t, n;
	int rc;

	memset(m, 0, sizeof(*m));
	m->type = type;
	while ((rc = rdzv_tlv_next(body, len, &off, &t, &v, &n)) == 1) {
		if (t == T_PEER) {
			rc = rdzv_peer_decode(v, n, &m->peer);
			m->has_peer = 1;
		} else if (t == T_ENTRY) {
			if (!m->table)
				m->table = v - 4;
			m->table_len = (size_t)(v + n - m->table);
			m->ntable++;
			rc = 0;
		} else {
			rc = msg_field(m, t, v, n);
		}
		if (rc < 0)
			return rc;
	}
	return rc;
}

const char *rdzv_peer_addr(const struct rdzv_peer *p, const char *master)
{
	return master && strchr(master, ':') ? p->addr6 : p->addr4;
}

/* ---- validation of peer data: it ends up in files and command lines ---- */
static int check_addr(char *a, size_t alen, const char *what, char *why, size_t whylen)
{
	char tmp[INET6_ADDRSTRLEN];

	if (!a[0])
		return 0;
	if (gx_addr_normalize(a, tmp, sizeof(tmp)) < 0 || strlen(tmp) >= alen) {
		snprintf(why, whylen, "invalid %s address", what);
		return GX_EINVAL_NAME;
	}
	memcpy(a, tmp, strlen(tmp) + 1);
	return 0;
}

/* "dev:port/netdev/addr" items joined by ',': names, digits, '.', ':' only. */
static int rails_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.:/,", s[i]))
			return 0;
	return 1;
}

int rdzv_peer_check(struct rdzv_peer *p, char *why, size_t whylen)
{
	int rc = GX_EINVAL_NAME;

	if (!gx_valid_hostname(p->name))
		snprintf(why, whylen, "invalid peer name");
	else if (p->iface[0] && !gx_valid_ifname(p->iface))
		snprintf(why, whylen, "invalid interface name");
	else if (p->rdma_dev[0] && !gx_valid_rdmadev(p->rdma_dev))
		snprintf(why, whylen, "invalid RDMA device name");
	else if (!gx_safe_text(p->nd_why, sizeof(p->nd_why) - 1))
		snprintf(why, whylen, "unsafe text in the netdetect reason");
	else if (p->addr4[0] && strchr(p->addr4, ':'))
		snprintf(why, whylen, "invalid IPv4 address");
	else if (p->addr6[0] && !strchr(p->addr6, ':'))
		snprintf(why, whylen, "invalid IPv6 address");
	else if (p->rdma_port < 0 || p->rdma_port > 255 || p->gid_index < -1 ||
		 p->gid_index > 65535 || p->link_layer < 0 || p->link_layer > 255)
		snprintf(why, whylen, "RDMA port / GID index out of range");
	else if (p->mtu < 0 || p->mtu > 65536)
		snprintf(why, whylen, "MTU out of range");
	else if (p->plen4 < 0 || p->plen4 > 32 || p->plen6 < 0 || p->plen6 > 128)
		snprintf(why, whylen, "prefix length out of range");
	else if (!rails_ok(p->rails))
		snprintf(why, whylen, "invalid rails list");
	else
		rc = 0;
	if (rc == 0)
		rc = check_addr(p->addr4, sizeof(p->addr4), "IPv4", why, whylen);
	if (rc == 0)
		rc = check_addr(p->addr6, sizeof(p->addr6), "IPv6", why, whylen);
	if (rc == 0)
		rc = check_addr(p->seen_from, sizeof(p->seen_from), "source", why, whylen);
	if (rc == 0)
		rc = check_addr(p->primary, sizeof(p->primary), "primary", why, whylen);
	return rc;
}

void rdzv_sanitize(char *out, size_t outlen, const char *s)
{
	size_t i;

	if (!outlen)
		return;
	for (i = 0; s && s[i] && i + 1 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];
		char one[2] = {(char)c, '\0'};

		out[i] = gx_safe_text(one, 1) ? (char)c : '?';
	}
	out[i] = '\0';
}

void rdzv_quote_unauth(char *out, size_t outlen, const char *who, const char *s)
{
	char text[RDZV_UNAUTH_TEXT + 1];
	size_t n = s ? strlen(s) : 0;

	/* sanitized first: no quote, backslash, '$', backtick or control byte is left, so the
	 * closing quote is ours */
	rdzv_sanitize(text, sizeof(text), s ? s : "");
	snprintf(out, outlen, "(%s said, unauthenticated: \"%s%s\")", who, text,
		 n > RDZV_UNAUTH_TEXT ? "..." : "");
}

void rdzv_list_add(struct rdzv_list *l, const char *fmt, ...)
{
	char item[400];
	size_t need;
	va_list ap;

	l->n++;
	if (l->full || !l->cap)
		return;
	va_start(ap, fmt);
	vsnprintf(item, sizeof(item), fmt, ap);
	va_end(ap);
	need = strlen(item) + 2;
	/* keep room for " and 99999 more" */
	if (l->shown >= RDZV_LIST_NAMES || l->len + need + 24 > l->cap) {
		l->full = 1;
		return;
	}
	l->len +=
	    (size_t)snprintf(l->out + l->len, l->cap - l->len, "%s%s", l->shown ? ", " : "", item);
	l->shown++;
}

void rdzv_list_end(struct rdzv_list *l)
{
	if (l->cap && l->n > l->shown)
		snprintf(l->out + l->len, l->cap - l->len, " and %zu more", l->n - l->shown);
}
