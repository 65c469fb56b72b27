/* SPDX-License-Identifier: MIT */
/*
 * nd_rails.c - RDMA of the bootstrap interface, the rail set (a GPU node's HCAs,
 * or --rdma-dev's list), NCCL_IB_GID_INDEX and whether RDMA is usable here at
 * all (uverbs, memlock). README.md "Rails".
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nd_parse_devport(const char *s, size_t n, struct nd_devport *out)
{
	const char *colon = memchr(s, ':', n);
	size_t dn = colon ? (size_t)(colon - s) : n;
	char port[8];
	long p = 0;

	if (dn == 0 || dn >= sizeof(out->dev))
		return -EINVAL;
	memcpy(out->dev, s, dn);
	out->dev[dn] = '\0';
	if (!gx_valid_rdmadev(out->dev))
		return -EINVAL;
	if (colon) {
		if (n - dn - 1 == 0 || n - dn - 1 >= sizeof(port))
			return -EINVAL;
		memcpy(port, colon + 1, n - dn - 1);
		port[n - dn - 1] = '\0';
		if (gx_parse_long(port, 1, 255, &p) < 0)
			return -EINVAL;
	}
	out->port = (int)p;
	return 0;
}

/* Split a comma list; each item through fn. */
static int nd_split(const char *list, const char *opt, struct nd_ctx *c,
		    int (*fn)(struct nd_ctx *c, const char *s, size_t n))
{
	const char *p = list, *comma;
	size_t n;

	for (; *p; p = comma ? comma + 1 : p + n) {
		comma = strchr(p, ',');
		n = comma ? (size_t)(comma - p) : strlen(p);
		if (fn(c, p, n) < 0) {
			snprintf(c->err, c->errlen, "%s %.*s: invalid entry (DEV[:PORT] or netdev)",
				 opt, (int)(n > 64 ? 64 : n), p);
			return GX_EUSAGE;
		}
		if (!comma)
			break;
	}
	return 0;
}

static int nd_want_one(struct nd_ctx *c, const char *s, size_t n)
{
	if (c->nwant >= ND_MAX_WANT)
		return -E2BIG;
	return nd_parse_devport(s, n, &c->want[c->nwant++]);
}

static int nd_rails_one(struct nd_ctx *c, const char *s, size_t n)
{
	struct nd_devport dp;

	if (c->nrails_list >= ND_MAX_WANT || n == 0 || n >= ND_DEVSIZ)
		return -EINVAL;
	memcpy(c->rails_list[c->nrails_list], s, n);
	c->rails_list[c->nrails_list][n] = '\0';
	if (!gx_valid_ifname(c->rails_list[c->nrails_list]) && nd_parse_devport(s, n, &dp) < 0)
		return -EINVAL;
	c->nrails_list++;
	return 0;
}

int nd_parse_request(struct nd_ctx *c)
{
	const struct nd_request *q = c->req;
	int rc = 0;

	if (q->rdma_mode < ND_RDMA_AUTO || q->rdma_mode > ND_RDMA_OFF) {
		snprintf(c->err, c->errlen, "--rdma: unknown mode %d", q->rdma_mode);
		return GX_EUSAGE;
	}
	if (q->rdma_dev && *q->rdma_dev)
		rc = nd_split(q->rdma_dev, "--rdma-dev", c, nd_want_one);
	if (rc < 0)
		return rc;
	if (!q->rails || !*q->rails || strcmp(q->rails, "auto") == 0)
		c->rails_mode = ND_RAILS_AUTO;
	else if (strcmp(q->rails, "none") == 0)
		c->rails_mode = ND_RAILS_NONE;
	else
		c->rails_mode = ND_RAILS_LIST;
	if (c->rails_mode == ND_RAILS_LIST)
		rc = nd_split(q->rails, "--rails", c, nd_rails_one);
	return rc;
}

/* ---- environment: memlock and unusable devices ------------------------- */
static void nd_memlock_check(struct nd_ctx *c)
{
	const struct nd_inventory *inv = c->inv;

	c->memlock_low =
	    !inv->ipc_lock && inv->memlock != ND_MEMLOCK_INF && inv->memlock < ND_MEMLOCK_MIN;
	if (inv->memlock >= (1ull << 20))
		snprintf(c->memlock_txt, sizeof(c->memlock_txt), "%llu MiB",
			 (unsigned long long)(inv->memlock >> 20));
	else
		snprintf(c->memlock_txt, sizeof(c->memlock_txt), "%llu KiB",
			 (unsigned long long)(inv->memlock >> 10));
}

/* Names and causes of visible devices that cannot be used from here. */
static int nd_unusable_text(const struct nd_inventory *inv, char *buf, size_t len)
{
	size_t i, off = 0;
	int n = 0;

	buf[0] = '\0';
	for (i = 0; i < inv->ndevs && off < len; i++) {
		const struct nd_device *d = &inv->devs[i];

		if (nd_dev_usable(d))
			continue;
		n++;
		if (!d->uverbs_ok)
			off += (size_t)snprintf(buf + off, len - off,
						"%s%s (no /dev/infiniband/%s)", off ? ", " : "",
						d->name, d->uverbs[0] ? d->uverbs : "uverbs*");
		else
			off += (size_t)snprintf(buf + off, len - off, "%s%s (%s)", off ? ", " : "",
						d->name, gx_strerror(d->open_err));
	}
	return n;
}

/* ---- the bootstrap interface's port ------------------------------------ */
static int nd_port_of(const struct nd_device *d, int num, const struct nd_port **p)
{
	size_t j;

	for (j = 0; j < d->nports; j++)
		if (d->ports[j].num == num) {
			*p = &d->ports[j];
			return 0;
		}
	return -ENOENT;
}

/* A named device (network-status or --rdma-dev) if it serves the chosen link. */
static int nd_named_port(struct nd_ctx *c, const char *dev, int port, const struct nd_device **d,
			 const struct nd_port **p)
{
	const struct nd_device *nd = nd_dev_by_name(c->inv, dev);
	size_t j;

	for (j = 0; nd && j < nd->nports; j++) {
		if ((port && nd->ports[j].num != port) ||
		    nd_port_link(c->inv, &nd->ports[j]) != c->chosen)
			continue;
		*d = nd;
		*p = &nd->ports[j];
		return 0;
	}
	return -ENOENT;
}

static void nd_choice_rdma(struct nd_ctx *c)
{
	struct nd_result *r = c->r;
	const struct nd_device *d = NULL;
	const struct nd_port *p = NULL;
	struct nd_gid_pick g;
	int rc = -ENOENT;

	if (c->ns_rdma && (rc = nd_named_port(c, c->ns_rdma, 0, &d, &p)) < 0)
		nd_result_warn(r, "network-status names rdma-device %s, but it has no GID of %s",
			       c->ns_rdma, c->chosen->name);
	if (rc < 0 && c->nwant)
		rc = nd_named_port(c, c->want[0].dev, c->want[0].port, &d, &p);
	if (rc < 0)
		rc = nd_link_port(c->inv, c->chosen, &d, &p);
	if (rc < 0) {
		nd_reason(r, "no RDMA port serves %s", c->chosen->name);
		return;
	}
	nd_gid_choose(p, c->chosen, &g);
	gx_strlcpy(r->rdma_dev, d->name, sizeof(r->rdma_dev));
	r->rdma_port = p->num;
	r->link_layer = p->link_layer;
	r->gid_index = (r->family == AF_INET6 && g.v2_v6 >= 0) ? g.v2_v6 : g.index;
	r->gid_type = r->gid_index < 0		? ND_GID_NONE
		      : r->gid_index == g.v2_v6 ? ND_GID_ROCE_V2
						: g.type;
	r->rdma_usable = nd_dev_usable(d) && p->state == ND_PORT_ACTIVE;
	nd_reason(r, "%s port %d serves %s (GID %d, %s)", d->name, p->num, c->chosen->name,
		  r->gid_index, nd_gid_type_str(r->gid_type));
}

/* ---- rails ------------------------------------------------------------- */
/* The netdev part of a rail: name, ifindex, MTU, first global address of the bootstrap family. */
static void nd_rail_netdev(const struct nd_result *r, struct nd_rail *x, const struct nd_link *l)
{
	const struct nd_addr *a;

	gx_strlcpy(x->iface, l->name, sizeof(x->iface));
	x->ifindex = l->ifindex;
	x->netdev_mtu = l->mtu;
	/* the bootstrap iface: the address chosen for it (network-status may name another) */
	a = l->ifindex == r->ifindex
		? nd_link_addr_of(l, r->family == AF_INET6 ? r->addr6 : r->addr4)
		: NULL;
	if (!a || a->scope != 0)
		a = nd_link_global(l, r->family == AF_INET6 ? AF_INET6 : AF_INET);
	if (!a)
		a = nd_link_global(l, r->family == AF_INET6 ? AF_INET : AF_INET6);
	if (a)
		gx_strlcpy(x->addr, a->str, sizeof(x->addr));
}

static int nd_rail_add(struct nd_ctx *c, const struct nd_device *d, const struct nd_port *p,
		       const struct nd_link *l)
{
	struct nd_result *r = c->r;
	struct nd_rail *grown, *x;
	struct nd_gid_pick g;

	grown = realloc(r->rails, (r->nrails + 1) * sizeof(*r->rails));
	if (!grown)
		return -ENOMEM;
	r->rails = grown;
	x = &r->rails[r->nrails++];
	memset(x, 0, sizeof(*x));
	gx_strlcpy(x->dev, d->name, sizeof(x->dev));
	x->port = p->num;
	x->link_layer = p->link_layer;
	x->rate_mbps = p->rate_mbps;
	x->mtu = p->mtu;
	nd_gid_choose(p, l, &g);
	x->gid_v2_v4 = g.v2_v4;
	x->gid_v2_v6 = g.v2_v6;
	x->gid_index = (r->family == AF_INET6 && g.v2_v6 >= 0) ? g.v2_v6 : g.index;
	x->gid_type = x->gid_index < 0		? ND_GID_NONE
		      : x->gid_index == g.v2_v6 ? ND_GID_ROCE_V2
						: g.type;
	if (l)
		nd_rail_netdev(r, x, l);
	return 0;
}

static int nd_rails_explicit(struct nd_ctx *c)
{
	const struct nd_device *d;
	const struct nd_port *p = NULL;
	const struct nd_link *l = NULL;
	size_t i, j;
	int rc = 0;

	for (i = 0; i < c->nwant && rc == 0; i++) {
		struct nd_devport *w = &c->want[i];

		d = nd_dev_by_name(c->inv, w->dev);
		if (!d) {
			snprintf(c->err, c->errlen, "--rdma-dev %s: no such RDMA device", w->dev);
			return GX_ENOSECONDARY;
		}
		if (!nd_dev_usable(d)) {
			nd_result_warn(c->r, "--rdma-dev %s: unusable (%s); leaving it out", w->dev,
				       d->uverbs_ok ? gx_strerror(d->open_err)
						    : "no /dev/infiniband/uverbs*");
			continue;
		}
		for (j = 0, l = NULL; !w->port && j < d->nports && !l; j++)
			if ((l = nd_port_link(c->inv, &d->ports[j])))
				w->port = d->ports[j].num;
		if (nd_port_of(d, w->port ? w->port : 1, &p) < 0 || p->state != ND_PORT_ACTIVE) {
			snprintf(c->err, c->errlen, "--rdma-dev %s:%d: port %s", w->dev,
				 w->port ? w->port : 1, p ? "is not active" : "does not exist");
			return GX_ENOSECONDARY;
		}
		l = nd_port_link(c->inv, p);
		if (!l)
			nd_result_warn(c->r, "--rdma-dev %s:%d: no GID of this pod's interfaces",
				       w->dev, p->num);
		rc = nd_rail_add(c, d, p, l);
	}
	return rc;
}

static int nd_name_cmp(const void *a, const void *b)
{
	const struct nd_link *const *x = a, *const *y = b;

	return strverscmp((*x)->name, (*y)->name);
}

static int nd_rail_listed(struct nd_ctx *c, const struct nd_link *l, const struct nd_device *d,
			  const struct nd_port *p)
{
	char dp[ND_DEVSIZ + 8];
	size_t i;

	if (c->rails_mode != ND_RAILS_LIST)
		return 1;
	snprintf(dp, sizeof(dp), "%s:%d", d->name, p->num);
	for (i = 0; i < c->nrails_list; i++)
		if (strcmp(c->rails_list[i], l->name) == 0 ||
		    strcmp(c->rails_list[i], d->name) == 0 || strcmp(c->rails_list[i], dp) == 0)
			return 1;
	return 0;
}

/* Why a link that is not the chosen one cannot carry a rail: down or unaddressed (not lo,
 * not the pod network: those never carry one); NULL when it can. */
static const char *nd_left_out_why(struct nd_ctx *c, const struct nd_link *l, char *buf, size_t len)
{
	if (l == c->chosen || l->is_loopback || nd_link_is_primary(c->r, l))
		return NULL;
	return nd_secondary_why(c->r, l, buf, len);
}

/* 1 when one of v[0..n) (or of the links before idx) serves the same device port. */
static int nd_port_served(struct nd_ctx *c, const struct nd_link **v, size_t n, size_t idx,
			  const struct nd_device *d, const struct nd_port *p)
{
	const struct nd_device *d2;
	const struct nd_port *p2;
	char buf[ND_WHY_MAX];
	size_t i;

	for (i = 0; i < n; i++)
		if (nd_link_port(c->inv, v[i], &d2, &p2) == 0 && d2 == d && p2 == p)
			return 1;
	for (i = 0; i < idx; i++) /* said once for a port */
		if (nd_link_port(c->inv, &c->inv->links[i], &d2, &p2) == 0 && d2 == d && p2 == p &&
		    nd_left_out_why(c, &c->inv->links[i], buf, sizeof(buf)))
			return 1;
	return 0;
}

/*
 * An active port of a usable device that no rail serves, because its netdev cannot carry
 * the bootstrap (IPoIB down or without an address): said, not dropped in silence (one
 * rail less). A port another netdev serves (a VLAN or pkey child) is not left out.
 */
static void nd_rails_left_out(struct nd_ctx *c, const struct nd_link **v, size_t n)
{
	const struct nd_device *d;
	const struct nd_port *p;
	char buf[ND_WHY_MAX];
	const char *why;
	size_t i;

	for (i = 0; i < c->inv->nlinks; i++) {
		const struct nd_link *l = &c->inv->links[i];

		why = nd_left_out_why(c, l, buf, sizeof(buf));
		if (!why || nd_link_port(c->inv, l, &d, &p) < 0 || p->state != ND_PORT_ACTIVE ||
		    !nd_dev_usable(d) || !nd_rail_listed(c, l, d, p) ||
		    nd_port_served(c, v, n, i, d, p))
			continue;
		nd_result_warn(c->r, "%s:%d left out of the rails: its netdev %s %s", d->name,
			       p->num, l->name, why);
	}
}

static int nd_rails_auto(struct nd_ctx *c)
{
	const struct nd_link **v = NULL;
	const struct nd_device *d;
	const struct nd_port *p;
	char buf[ND_WHY_MAX];
	size_t i, n = 0;
	int rc = 0;

	v = calloc(c->inv->nlinks + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < c->inv->nlinks; i++) {
		const struct nd_link *l = &c->inv->links[i];

		if ((l == c->chosen || !nd_secondary_why(c->r, l, buf, sizeof(buf))) &&
		    nd_link_port(c->inv, l, &d, &p) == 0 && p->state == ND_PORT_ACTIVE &&
		    nd_dev_usable(d))
			v[n++] = l;
	}
	nd_rails_left_out(c, v, n);
	qsort(v, n, sizeof(*v), nd_name_cmp);
	for (i = 0; i < n && rc == 0; i++) {
		nd_link_port(c->inv, v[i], &d, &p);
		if (nd_rail_listed(c, v[i], d, p))
			rc = nd_rail_add(c, d, p, v[i]);
	}
	free(v);
	return rc;
}

/* Each --rails entry must have become a rail. */
static int nd_rails_check_list(struct nd_ctx *c)
{
	char dp[ND_DEVSIZ + 8];
	size_t i, j;
	int hit;

	for (i = 0; c->rails_mode == ND_RAILS_LIST && i < c->nrails_list; i++) {
		for (j = 0, hit = 0; j < c->r->nrails && !hit; j++) {
			const struct nd_rail *x = &c->r->rails[j];

			snprintf(dp, sizeof(dp), "%s:%d", x->dev, x->port);
			hit = !strcmp(c->rails_list[i], x->iface) ||
			      !strcmp(c->rails_list[i], x->dev) || !strcmp(c->rails_list[i], dp);
		}
		if (!hit) {
			snprintf(c->err, c->errlen,
				 "--rails %s: not an RDMA rail of this pod (no usable active port "
				 "bound to it)",
				 c->rails_list[i]);
			return GX_ENOSECONDARY;
		}
	}
	return 0;
}

/* ---- netdev rails: TCP only, when no RDMA rail exists (README "Rails") ---- */
static int nd_netdev_rail_add(struct nd_result *r, const struct nd_link *l)
{
	struct nd_rail *grown, *x;

	grown = realloc(r->rails, (r->nrails + 1) * sizeof(*r->rails));
	if (!grown)
		return -ENOMEM;
	r->rails = grown;
	x = &r->rails[r->nrails++];
	memset(x, 0, sizeof(*x)); /* dev "", port 0: no RDMA device */
	x->gid_index = x->gid_v2_v4 = x->gid_v2_v6 = -1;
	x->gid_type = ND_GID_NONE;
	x->link_layer = ND_LL_UNSPEC;
	x->rate_mbps = l->speed_mbps > 0 ? l->speed_mbps : 0;
	nd_rail_netdev(r, x, l);
	return 0;
}

/* l may carry a netdev rail: the bootstrap iface, or an up secondary with a global address. */
static int nd_netdev_rail_ok(const struct nd_result *r, const struct nd_link *l)
{
	char buf[ND_WHY_MAX];

	if (l->ifindex == r->ifindex && strcmp(l->name, r->iface) == 0)
		return 1;
	return nd_secondary_why(r, l, buf, sizeof(buf)) == NULL;
}

/* Sort v[0..n), drop repeats, add each as a netdev rail. */
static int nd_netdev_rails_add(struct nd_result *r, const struct nd_link **v, size_t n)
{
	size_t i;
	int rc = 0;

	qsort(v, n, sizeof(*v), nd_name_cmp);
	for (i = 0; i < n && rc == 0; i++)
		if (i == 0 || v[i] != v[i - 1])
			rc = nd_netdev_rail_add(r, v[i]);
	return rc;
}

/* --rails net1,net2,... with no RDMA rail among them: every entry must be a usable netdev. */
static int nd_rails_netdev_list(struct nd_ctx *c)
{
	const struct nd_link *v[ND_MAX_WANT], *l;
	char buf[ND_WHY_MAX];
	size_t i;

	for (i = 0; i < c->nrails_list; i++) {
		l = nd_link_by_name(c->inv, c->rails_list[i]);
		if (!l || !nd_netdev_rail_ok(c->r, l)) {
			snprintf(c->err, c->errlen,
				 "--rails %s: not an RDMA rail, nor an up netdev with a global "
				 "address (%s)",
				 c->rails_list[i],
				 l ? nd_secondary_why(c->r, l, buf, sizeof(buf))
				   : "no such netdev");
			return GX_ENOSECONDARY;
		}
		v[i] = l;
	}
	nd_reason(c->r, "rails: netdevs %s (TCP only: no RDMA rail)", c->req->rails);
	return nd_netdev_rails_add(c->r, v, c->nrails_list);
}

int nd_rails_netdevs(struct nd_result *r)
{
	const struct nd_inventory *inv = r->inv;
	const struct nd_link **v = NULL;
	size_t i, n = 0;
	int rc;

	if (r->nrails || !inv)
		return (int)r->nrails;
	v = calloc(inv->nlinks + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < inv->nlinks; i++)
		if (nd_netdev_rail_ok(r, &inv->links[i]) && !inv->links[i].is_loopback)
			v[n++] = &inv->links[i];
	rc = nd_netdev_rails_add(r, v, n);
	free(v);
	return rc < 0 ? rc : (int)r->nrails;
}

/* One index that is the bootstrap family's RoCE v2 entry on every rail, or none: NCCL
 * applies NCCL_IB_GID_INDEX to every HCA, and RoCE v1 or IB entries are never exported. */
static void nd_nccl_gid(struct nd_result *r)
{
	const char *fam = r->family == AF_INET6 ? "IPv6" : "IPv4";
	int idx = -1, v;
	size_t i;

	r->nccl_gid_index = -1;
	if (!r->nrails) {
		snprintf(r->nccl_gid_why, sizeof(r->nccl_gid_why), "no RDMA rails");
		return;
	}
	for (i = 0; i < r->nrails; i++) {
		const struct nd_rail *x = &r->rails[i];

		v = r->family == AF_INET6 ? x->gid_v2_v6 : x->gid_v2_v4;
		if (x->link_layer == ND_LL_IB) {
			snprintf(r->nccl_gid_why, sizeof(r->nccl_gid_why),
				 "%s:%d is InfiniBand: no GID index needed", x->dev, x->port);
			return;
		}
		if (v < 0) {
			snprintf(r->nccl_gid_why, sizeof(r->nccl_gid_why),
				 "%s:%d (%s) has no RoCE v2 GID for its %s address", x->dev,
				 x->port, x->iface[0] ? x->iface : "no netdev", fam);
			return;
		}
		if (idx >= 0 && v != idx) {
			snprintf(
			    r->nccl_gid_why, sizeof(r->nccl_gid_why),
			    "the RoCE v2 %s GID index differs between rails (%s:%d has %d, %s:%d "
			    "has %d)",
			    fam, r->rails[0].dev, r->rails[0].port, idx, x->dev, x->port, v);
			return;
		}
		idx = v;
	}
	r->nccl_gid_index = idx;
	snprintf(r->nccl_gid_why, sizeof(r->nccl_gid_why),
		 "index %d is the RoCE v2 %s entry on every rail", idx, fam);
}

static int nd_rdma_env(struct nd_ctx *c)
{
	const struct nd_inventory *inv = c->inv;
	const struct nd_result *r = c->r;
	int have = r->rdma_usable || r->nrails, warn = 0;
	char txt[512], bad[384];

	if (inv->rdma_err && !inv->ndevs)
		snprintf(txt, sizeof(txt), "no RDMA devices (%s)", gx_strerror(inv->rdma_err));
	else if (!inv->ndevs)
		snprintf(txt, sizeof(txt), "no RDMA devices");
	else if (have && (warn = c->memlock_low))
		snprintf(
		    txt, sizeof(txt),
		    "RLIMIT_MEMLOCK is %s and IPC_LOCK is missing: RDMA cannot register memory "
		    "(add IPC_LOCK or raise the memlock limit)",
		    c->memlock_txt);
	else if (have)
		return 0;
	else if ((warn = nd_unusable_text(inv, bad, sizeof(bad))))
		snprintf(txt, sizeof(txt), "RDMA devices visible but unusable: %s", bad);
	else if (r->rdma_dev[0])
		snprintf(txt, sizeof(txt), "%s port %d of %s is not active", r->rdma_dev,
			 r->rdma_port, r->iface);
	else
		snprintf(txt, sizeof(txt),
			 "no active RDMA port has a GID of this pod's interfaces");
	if (c->req->rdma_mode == ND_RDMA_REQUIRE) {
		snprintf(c->err, c->errlen, "--rdma require: %s", txt);
		return GX_ENORDMA;
	}
	if (warn)
		nd_result_warn(c->r, "%s; using TCP", txt);
	nd_reason(c->r, "%s", txt);
	return 0;
}

int nd_choose_rdma(struct nd_ctx *c)
{
	struct nd_result *r = c->r;
	int rc = 0, netdevs;

	r->nccl_gid_index = -1;
	r->gid_index = -1;
	r->gid_type = ND_GID_NONE;
	if (c->req->rdma_mode == ND_RDMA_OFF) {
		snprintf(r->nccl_gid_why, sizeof(r->nccl_gid_why), "--rdma off");
		nd_reason(r, "RDMA off");
		return c->rails_mode == ND_RAILS_LIST ? nd_rails_netdev_list(c) : 0;
	}
	nd_memlock_check(c);
	nd_choice_rdma(c);
	if (c->nwant && c->rails_mode != ND_RAILS_NONE)
		rc = nd_rails_explicit(c);
	else if (c->rails_mode != ND_RAILS_NONE)
		rc = nd_rails_auto(c);
	/* no RDMA at all: the list names netdev rails (never in NCCL_IB_HCA) */
	netdevs =
	    rc == 0 && !c->nwant && c->rails_mode == ND_RAILS_LIST && !r->nrails && !r->rdma_usable;
	if (rc == 0 && !c->nwant && !netdevs)
		rc = nd_rails_check_list(c);
	if (rc == 0)
		rc = nd_rdma_env(c);
	if (rc == 0 && c->memlock_low) {
		r->nrails = 0;
		r->rdma_usable = 0;
	}
	nd_nccl_gid(r);
	if (c->memlock_low)
		snprintf(r->nccl_gid_why, sizeof(r->nccl_gid_why), "RDMA unusable (memlock)");
	/* after the RDMA verdicts: netdev rails never count as RDMA */
	if (rc == 0 && netdevs)
		rc = nd_rails_netdev_list(c);
	return rc;
}
