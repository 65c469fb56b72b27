/* SPDX-License-Identifier: MIT */
/*
 * rdzv_fabric.c - FABRIC (PROTOCOL.md "Fabric reports"): after the COMMIT a member that
 * stays sends the coordinator its transport report on its phase-1 session, MAC'd as every
 * session frame. A coordinator of a build before it skips the frame (an unknown type once
 * authenticated; its body is a TLV list within RDZV_MAX_BODY): no version bump.
 */
#include "rdzv/rdzv_coord_int.h"
#include "rdzv/rdzv_member_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rdzv_member_fabric(struct rdzv_member *m, const struct rdzv_fabric *f)
{
	struct rdzv_buf b = {0};
	size_t i;

	if (!m || m->st != M_STAYING || m->c1.rc.state != RC_SESSION)
		return -ENOTCONN;
	rdzv_put_u32(&b, T_CODE, f->verdict);
	rdzv_put_u32(&b, T_FLAGS, f->flags);
	rdzv_put_u32(&b, T_COUNT, f->rails);
	rdzv_put_str(&b, T_IFACE, f->primary_if);
	rdzv_put_str(&b, T_TEXT, f->line);
	for (i = 0; i < f->nremotes && i < RDZV_FABRIC_REMOTES; i++) {
		unsigned char v[8 + 45];
		size_t l = strnlen(f->remotes[i].addr, 45);
		uint64_t x = f->remotes[i].bytes;
		int k;

		for (k = 7; k >= 0; k--, x >>= 8)
			v[k] = (unsigned char)x;
		memcpy(v + 8, f->remotes[i].addr, l);
		rdzv_put(&b, T_FREMOTE, v, 8 + l);
	}
	return rdzv_mb_send(m, &m->c1, RDZV_FABRIC, &b);
}

static int fab_u32(const unsigned char *v, uint16_t n, uint32_t *out)
{
	uint32_t x;

	if (n != 4)
		return GX_EPROTO;
	memcpy(&x, v, 4);
	*out = ntohl(x);
	return 0;
}

static int fab_str(const unsigned char *v, uint16_t n, char *out, size_t outlen)
{
	if (n >= outlen || memchr(v, '\0', n))
		return GX_EPROTO;
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

/* u64 bytes then the address, re-printed (never copied as sent) */
static int fab_remote(const unsigned char *v, uint16_t n, struct rdzv_fabric *f)
{
	char addr[46];
	uint64_t x = 0;
	int i, rc;

	if (n <= 8 || n > 8 + 45 || f->nremotes >= RDZV_FABRIC_REMOTES)
		return GX_EPROTO;
	for (i = 0; i < 8; i++)
		x = x << 8 | v[i];
	rc = fab_str(v + 8, (uint16_t)(n - 8), addr, sizeof(addr));
	if (rc == 0)
		rc = gx_addr_normalize(addr, f->remotes[f->nremotes].addr,
				       sizeof(f->remotes[0].addr));
	if (rc < 0)
		return GX_EPROTO;
	f->remotes[f->nremotes++].bytes = x;
	return 0;
}

static int fab_decode(const unsigned char *body, size_t len, struct rdzv_fabric *f)
{
	char text[RDZV_FABRIC_LINE];
	size_t off = 0;
	const unsigned char *v;
	uint16_t t, n;
	int rc;

	memset(f, 0, sizeof(*f));
	text[0] = '\0';
	while ((rc = rdzv_tlv_next(body, len, &off, &t, &v, &n)) == 1) {
		switch (t) {
		case T_CODE:
			rc = fab_u32(v, n, &f->verdict);
			break;
		case T_FLAGS:
			rc = fab_u32(v, n, &f->flags);
			break;
		case T_COUNT:
			rc = fab_u32(v, n, &f->rails);
			break;
		case T_IFACE:
			rc = fab_str(v, n, f->primary_if, sizeof(f->primary_if));
			if (rc == 0 && f->primary_if[0] && !gx_valid_ifname(f->primary_if))
				rc = GX_EPROTO;
			break;
		case T_TEXT:
			rc = fab_str(v, n, text, sizeof(text));
			break;
		case T_FREMOTE:
			rc = fab_remote(v, n, f);
			break;
		default:
			rc = 0; /* unknown: skipped */
		}
		if (rc < 0)
			return rc;
	}
	if (rc < 0)
		return rc;
	rdzv_sanitize(f->line, sizeof(f->line), text);
	return 0;
}

int rdzv_co_fabric(struct rdzv_coord *co, struct cconn *cc, const unsigned char *body, size_t len)
{
	struct rdzv_fabric *f;

	/* a member's session after the COMMIT only; anything else is skipped as before */
	if (cc->role != ROLE_MEMBER || !co->committed || cc->peer <= 0 ||
	    (uint32_t)cc->peer >= co->world)
		return 0;
	f = malloc(sizeof(*f));
	if (!f) {
		rdzv_co_drop(co, cc, "out of memory");
		return 1;
	}
	if (fab_decode(body, len, f) < 0) {
		gx_warn("rdzv: malformed FABRIC from %s (%s): dropped", co->names[cc->peer],
			cc->rc.peer_str);
		rdzv_co_drop(co, cc, "malformed message");
		free(f);
		return 1;
	}
	if (co->cfg.fabric)
		co->cfg.fabric(co->cfg.fabric_arg, (uint32_t)cc->peer, f);
	free(f);
	return 0;
}
