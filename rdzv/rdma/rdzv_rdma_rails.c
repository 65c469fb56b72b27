/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma_rails.c - the rendezvous' RDMA ops (struct rdzv_rdma_ops): the
 * member's check() (the bootstrap rail, then every other rail to the
 * coordinator's rail of the same interface) and the coordinator's listen()
 * (the bootstrap address and every rail address): the fabric gate per HCA
 * (NCCL gets only the rails that passed). The client and server themselves:
 * rdzv_rdma.c, rdzv_rdma_srv.c. Steps: rdzv/PROTOCOL.md, "RDMA-CM".
 */
#include "rdzv/rdma/rdzv_rdma_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

/*
 * Member: the check() in the caller's loop (one event loop, no private
 * one), a state machine over
 * probes: the bootstrap rail, then each other rail in turn.
 */
struct rdzv_rdma_chk {
	struct rdzv_rdma_ctx *c;
	struct gx_ev *ev;
	struct rdzv_peer self, coord;
	uint16_t port;
	int64_t deadline_ms, end; /* end: the rails' share of the time */
	rdzv_rdma_check_fn *done;
	void *done_arg;
	struct rail_item mine[RDZV_RDMA_MAX_RAILS], theirs[RDZV_RDMA_MAX_RAILS];
	size_t nm, nt, i, left;
	struct rdzv_rdma_rail *rl; /* the rail being probed */
	struct rdzv_rdma_cli *cli; /* the probe running */
};

static void chk_cancel(struct rdzv_rdma_ctx *c)
{
	if (!c->chk)
		return;
	rdzv_rdma_probe_cancel(c->chk->cli);
	free(c->chk);
	c->chk = NULL;
}

void rdzv_rdma_ops_cancel(void *arg)
{
	chk_cancel(arg);
}

void rdzv_rdma_rails_reset(struct rdzv_rdma_ctx *c)
{
	size_t k;

	chk_cancel(c);
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

/* The end of a check: the context forgets it, then done (which may free the context). */
static void chk_finish(struct rdzv_rdma_chk *k, int rc, const char *why)
{
	rdzv_rdma_check_fn *done = k->done;
	void *arg = k->done_arg;
	char line[256];

	gx_strlcpy(line, why, sizeof(line));
	k->c->chk = NULL;
	free(k);
	done(arg, rc, line);
}

static void rail_done(void *arg, const struct rdzv_rdma_probe *p);

/*
 * Member: every rail besides the bootstrap one, to the coordinator's rail of
 * that name, one probe at a time; then the check is done (a broken rail is
 * recorded, not a failure). The rails share half of what is left of the
 * deadline, in equal parts: the coordinator's phase-2 connection waits for
 * our VERIFY meanwhile, and a broken rail's connect only ends at its deadline.
 */
static void next_rail(struct rdzv_rdma_chk *k)
{
	struct rdzv_peer me, them;
	struct rdzv_rdma_rail *rl;
	int64_t now, dl;
	size_t j, i;

	for (; k->i < k->nm; k->i++) {
		i = k->i;
		rl = rail_add(k->c, &k->mine[i], is_bootstrap(&k->self, &k->mine[i]));
		if (rl->bootstrap) {
			rl->checked = rl->ok = 1;
			rl->gid_index = k->c->last.gid_index;
			continue;
		}
		for (j = 0; j < k->nt && strcmp(k->theirs[j].netdev, k->mine[i].netdev) != 0; j++)
			;
		if (j == k->nt) {
			snprintf(rl->why, sizeof(rl->why), "the coordinator has no rail on %s",
				 k->mine[i].netdev);
			if (k->left)
				k->left--;
			continue;
		}
		rail_peer(&k->self, &k->mine[i], &me);
		rail_peer(&k->coord, &k->theirs[j], &them);
		rl->checked = 1;
		now = gx_now_ms();
		dl = now + (k->end > now ? (k->end - now) / (int64_t)(k->left ? k->left : 1) : 0);
		if (k->left)
			k->left--;
		k->rl = rl;
		k->i++;
		if (rdzv_rdma_probe_start(k->c, k->ev, &me, &them, k->port, 0, dl, rail_done, k,
					  &k->cli) == 0)
			return;
		k->cli = NULL;
		snprintf(rl->why, sizeof(rl->why), "probe failed to start");
		k->i--;
	}
	chk_finish(k, 0, "");
}

static void rail_done(void *arg, const struct rdzv_rdma_probe *p)
{
	struct rdzv_rdma_chk *k = arg;
	const struct rail_item *t;
	size_t j;

	k->cli = NULL;
	k->rl->ok = p->ok;
	k->rl->gid_index = p->gid_index;
	if (!p->ok) {
		for (j = 0; j < k->nt && strcmp(k->theirs[j].netdev, k->rl->netdev) != 0; j++)
			;
		t = &k->theirs[j < k->nt ? j : 0];
		snprintf(k->rl->why, sizeof(k->rl->why), "to %.63s (%.45s): %.80s", t->dev, t->addr,
			 p->why);
	}
	next_rail(k);
}

static void boot_done(void *arg, const struct rdzv_rdma_probe *p)
{
	struct rdzv_rdma_chk *k = arg;
	int64_t now = gx_now_ms();
	size_t i;

	k->cli = NULL;
	if (!p->ok) {
		chk_finish(k, GX_ERDZV, p->why);
		return;
	}
	k->c->last = *p;
	if (!k->c->rails_on) {
		chk_finish(k, 0, "");
		return;
	}
	k->nm = rails_of(&k->self, k->mine);
	k->nt = rails_of(&k->coord, k->theirs);
	for (i = 0; i < k->nm; i++)
		k->left += !is_bootstrap(&k->self, &k->mine[i]);
	k->end = now + (k->deadline_ms > now ? (k->deadline_ms - now) / 2 : 0);
	next_rail(k);
}

int rdzv_rdma_ops_check(void *arg, struct gx_ev *ev, const struct rdzv_peer *self,
			const struct rdzv_peer *coord, uint16_t port, int64_t deadline_ms,
			rdzv_rdma_check_fn *done, void *done_arg)
{
	struct rdzv_rdma_ctx *c = arg;
	struct rdzv_rdma_chk *k;
	int rc;

	if (!c || !ev || !self || !coord || !done)
		return -EINVAL;
	rdzv_rdma_rails_reset(c);
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (struct rdzv_rdma_chk){.c = c,
				    .ev = ev,
				    .self = *self,
				    .coord = *coord,
				    .port = port,
				    .deadline_ms = deadline_ms,
				    .done = done,
				    .done_arg = done_arg};
	rc = rdzv_rdma_probe_start(c, ev, self, coord, port, 0, deadline_ms, boot_done, k, &k->cli);
	if (rc < 0) {
		free(k);
		return rc;
	}
	c->chk = k;
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
