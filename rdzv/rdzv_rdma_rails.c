/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma_rails.c - the rendezvous' RDMA ops (struct rdzv_rdma_ops): the
 * member's check() (the bootstrap rail, then every other rail to the
 * coordinator's rail of the same interface) and the coordinator's listen()
 * (the bootstrap address and every rail address): the fabric gate per HCA
 * (issue 24 item 4). The client and server themselves: rdzv_rdma.c,
 * rdzv_rdma_srv.c. Steps: rdzv/PROTOCOL.md, "RDMA-CM".
 */
#include "rdzv/rdzv_rdma_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* One item of rdzv_peer.rails: "dev:port/netdev/addr". */
struct rail_item {
	char dev[64], netdev[16], addr[46];
};

static int rail_parse(const char *item, size_t len, struct rail_item *out)
{
	const char *colon = memchr(item, ':', len), *s1, *s2;

	s1 = memchr(item, '/', len);
	s2 = s1 ? memchr(s1 + 1, '/', len - (size_t)(s1 + 1 - item)) : NULL;
	if (!colon || !s1 || !s2 || colon > s1 || (size_t)(colon - item) >= sizeof(out->dev) ||
	    (size_t)(s2 - s1 - 1) >= sizeof(out->netdev) ||
	    len - (size_t)(s2 + 1 - item) >= sizeof(out->addr))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	memcpy(out->dev, item, (size_t)(colon - item));
	memcpy(out->netdev, s1 + 1, (size_t)(s2 - s1 - 1));
	memcpy(out->addr, s2 + 1, len - (size_t)(s2 + 1 - item));
	return out->dev[0] && out->netdev[0] && out->addr[0] ? 0 : -EINVAL;
}

/* The rails of a peer, at most RDZV_RDMA_MAX_RAILS; malformed items are skipped. */
static size_t rails_of(const struct rdzv_peer *p, struct rail_item *out)
{
	const char *s = p->rails, *e;
	size_t n = 0;

	while (*s && n < RDZV_RDMA_MAX_RAILS) {
		e = strchr(s, ',');
		if (!e)
			e = s + strlen(s);
		if (rail_parse(s, (size_t)(e - s), &out[n]) == 0)
			n++;
		s = *e ? e + 1 : e;
	}
	return n;
}

static int is_bootstrap(const struct rdzv_peer *p, const struct rail_item *r)
{
	return strcmp(r->addr, p->addr4) == 0 || strcmp(r->addr, p->addr6) == 0;
}

/* p with its secondary address replaced by the rail's. */
static void rail_peer(const struct rdzv_peer *p, const struct rail_item *r, struct rdzv_peer *out)
{
	*out = *p;
	out->addr4[0] = out->addr6[0] = '\0';
	if (strchr(r->addr, ':'))
		gx_strlcpy(out->addr6, r->addr, sizeof(out->addr6));
	else
		gx_strlcpy(out->addr4, r->addr, sizeof(out->addr4));
}

void rdzv_rdma_rails_reset(struct rdzv_rdma_ctx *c)
{
	size_t k;

	for (k = 0; k < RDZV_RDMA_MAX_RAILS; k++) {
		rdzv_rdma_ctx_free(c->rail_srv[k]);
		c->rail_srv[k] = NULL;
	}
	memset(c->rails, 0, sizeof(c->rails));
	c->nrails = 0;
}

static struct rdzv_rdma_rail *rail_add(struct rdzv_rdma_ctx *c, const struct rail_item *it,
				       int bootstrap)
{
	struct rdzv_rdma_rail *rl = &c->rails[c->nrails++];

	gx_strlcpy(rl->dev, it->dev, sizeof(rl->dev));
	gx_strlcpy(rl->netdev, it->netdev, sizeof(rl->netdev));
	rl->bootstrap = bootstrap;
	rl->gid_index = -1;
	return rl;
}

/* Member: every rail besides the bootstrap one, to the coordinator's rail of that name. */
static void check_rails(struct rdzv_rdma_ctx *c, const struct rdzv_peer *self,
			const struct rdzv_peer *coord, uint16_t port, int64_t deadline_ms,
			const struct rdzv_rdma_probe *boot)
{
	struct rail_item mine[RDZV_RDMA_MAX_RAILS], theirs[RDZV_RDMA_MAX_RAILS];
	size_t nm = rails_of(self, mine), nt = rails_of(coord, theirs), i, j, left = 0;
	struct rdzv_peer me, them;
	struct rdzv_rdma_rail *rl;
	struct rdzv_rdma_probe p;
	int64_t now = gx_now_ms(), end, dl;

	/*
	 * The rails share half of what is left of the deadline, in equal parts: the
	 * coordinator's phase-2 connection waits for our VERIFY meanwhile, and a
	 * broken rail's connect only ends at its deadline.
	 */
	for (i = 0; i < nm; i++)
		left += !is_bootstrap(self, &mine[i]);
	end = now + (deadline_ms > now ? (deadline_ms - now) / 2 : 0);
	for (i = 0; i < nm; i++) {
		rl = rail_add(c, &mine[i], is_bootstrap(self, &mine[i]));
		if (rl->bootstrap) {
			rl->checked = rl->ok = 1;
			rl->gid_index = boot->gid_index;
			continue;
		}
		for (j = 0; j < nt && strcmp(theirs[j].netdev, mine[i].netdev) != 0; j++)
			;
		if (j == nt) {
			snprintf(rl->why, sizeof(rl->why), "the coordinator has no rail on %s",
				 mine[i].netdev);
			if (left)
				left--;
			continue;
		}
		rail_peer(self, &mine[i], &me);
		rail_peer(coord, &theirs[j], &them);
		rl->checked = 1;
		now = gx_now_ms();
		dl = now + (end > now ? (end - now) / (int64_t)(left ? left : 1) : 0);
		if (left)
			left--;
		if (rdzv_rdma_probe_run(c, &me, &them, port, 0, dl, &p) < 0) {
			snprintf(rl->why, sizeof(rl->why), "probe failed to start");
			continue;
		}
		rl->ok = p.ok;
		rl->gid_index = p.gid_index;
		if (!p.ok)
			snprintf(rl->why, sizeof(rl->why), "to %.63s (%.45s): %.80s", theirs[j].dev,
				 theirs[j].addr, p.why);
	}
}

int rdzv_rdma_ops_check(void *arg, const struct rdzv_peer *self, const struct rdzv_peer *coord,
			uint16_t port, int64_t deadline_ms, char *why, size_t whylen)
{
	struct rdzv_rdma_ctx *c = arg;
	struct rdzv_rdma_probe p;
	int rc;

	rdzv_rdma_rails_reset(c);
	rc = rdzv_rdma_probe_run(c, self, coord, port, 0, deadline_ms, &p);
	if (rc < 0) {
		snprintf(why, whylen, "%s", gx_strerror(rc));
		return rc;
	}
	if (!p.ok) {
		gx_strlcpy(why, p.why, whylen);
		return GX_ERDZV;
	}
	c->last = p;
	if (c->rails_on)
		check_rails(c, self, coord, port, deadline_ms, &p);
	return 0;
}

/* Coordinator: the bootstrap address, then a listener on every other rail's address. */
int rdzv_rdma_ops_listen(void *arg, struct gx_ev *ev, const struct rdzv_peer *self, uint16_t port,
			 char *why, size_t whylen)
{
	struct rdzv_rdma_ctx *c = arg;
	struct rail_item mine[RDZV_RDMA_MAX_RAILS];
	struct rdzv_rdma_rail *rl;
	struct rdzv_peer me;
	size_t n, i;
	int rc;

	rdzv_rdma_rails_reset(c);
	rc = rdzv_rdma_serve(c, ev, self, port, why, whylen);
	if (rc < 0)
		return rc;
	n = c->rails_on ? rails_of(self, mine) : 0;
	for (i = 0; i < n; i++) {
		rl = rail_add(c, &mine[i], is_bootstrap(self, &mine[i]));
		if (rl->bootstrap) {
			rl->served = 1;
			continue;
		}
		rail_peer(self, &mine[i], &me);
		rc = rdzv_rdma_ctx_new(c->cm, c->max_write, &c->rail_srv[i]);
		if (rc == 0)
			rc = rdzv_rdma_share_key(c->rail_srv[i], c);
		if (rc == 0)
			rc = rdzv_rdma_serve(c->rail_srv[i], ev, &me, port, rl->why,
					     sizeof(rl->why));
		if (rc < 0 && !rl->why[0])
			snprintf(rl->why, sizeof(rl->why), "%s", gx_strerror(rc));
		rl->served = rc == 0;
	}
	return 0;
}

void rdzv_rdma_ops_close(void *arg)
{
	struct rdzv_rdma_ctx *c = arg;
	size_t k;

	rdzv_rdma_stop(c);
	for (k = 0; k < RDZV_RDMA_MAX_RAILS; k++)
		rdzv_rdma_stop(c->rail_srv[k]);
}

size_t rdzv_rdma_rails(struct rdzv_rdma_ctx *c, const struct rdzv_rdma_rail **ret)
{
	size_t k;

	*ret = NULL;
	if (!c)
		return 0;
	for (k = 0; k < c->nrails; k++)
		c->rails[k].answered = c->rails[k].bootstrap ? c->answered
				       : c->rail_srv[k]	     ? c->rail_srv[k]->answered
							     : 0;
	*ret = c->rails;
	return c->nrails;
}

void rdzv_rdma_set_rails(struct rdzv_rdma_ctx *c, int on)
{
	if (c)
		c->rails_on = on;
}
