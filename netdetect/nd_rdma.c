/* SPDX-License-Identifier: MIT */
/*
 * nd_rdma.c - the RDMA model: devices, ports and GID tables read through the
 * verbs ops seam (real: nd_verbs.c, tests: fakes), and the pure rules that bind
 * ports to this pod's netdevs and choose a GID (README.md "RDMA").
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nd_v4mapped(const unsigned char raw[16])
{
	static const unsigned char pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(raw, pfx, sizeof(pfx)) == 0;
}

void nd_gid_str(const unsigned char raw[16], char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, raw, buf, (socklen_t)len) && len)
		buf[0] = '\0';
}

/* The address of l the GID carries, or NULL (ifindex AND address: ifindexes repeat across
 * pods on one node, and the kernel's GID table has no namespace filter). */
static const struct nd_addr *nd_gid_addr(const struct nd_gid *g, const struct nd_link *l)
{
	size_t i;
	int mapped = nd_v4mapped(g->raw);

	if (!l || (int)g->ifindex != l->ifindex || g->ifindex == 0)
		return NULL;
	for (i = 0; i < l->naddrs; i++) {
		const struct nd_addr *a = &l->addrs[i];

		if (a->family == AF_INET && mapped && memcmp(g->raw + 12, a->a, 4) == 0)
			return a;
		if (a->family == AF_INET6 && !mapped && memcmp(g->raw, a->a, 16) == 0)
			return a;
	}
	return NULL;
}

int nd_gid_owned(const struct nd_gid *g, const struct nd_link *l)
{
	return nd_gid_addr(g, l) != NULL;
}

/* IB: the port GID (index 0) equals bytes 4..19 of the IPoIB lladdr (netlink, not sysfs). */
static int nd_ib_port_serves(const struct nd_port *p, const struct nd_link *l)
{
	size_t i;

	if (l->arptype != ND_ARPHRD_INFINIBAND || l->lladdr_len < 20)
		return 0;
	for (i = 0; i < p->ngids; i++)
		if (p->gids[i].index == 0)
			return memcmp(p->gids[i].raw, l->lladdr + 4, 16) == 0;
	return 0;
}

static int nd_port_serves(const struct nd_port *p, const struct nd_link *l)
{
	size_t i;

	if (p->link_layer == ND_LL_IB)
		return nd_ib_port_serves(p, l);
	for (i = 0; i < p->ngids; i++)
		if (nd_gid_owned(&p->gids[i], l))
			return 1;
	return 0;
}

const struct nd_link *nd_port_link(const struct nd_inventory *inv, const struct nd_port *p)
{
	size_t i;

	for (i = 0; i < inv->nlinks; i++)
		if (nd_port_serves(p, &inv->links[i]))
			return &inv->links[i];
	return NULL;
}

/* The port serving l: an active one of a usable device first. 0 or -ENOENT. */
int nd_link_port(const struct nd_inventory *inv, const struct nd_link *l,
		 const struct nd_device **dev, const struct nd_port **port)
{
	int best = -1, score;
	size_t i, j;

	for (i = 0; i < inv->ndevs; i++) {
		const struct nd_device *d = &inv->devs[i];

		for (j = 0; j < d->nports; j++) {
			if (!nd_port_serves(&d->ports[j], l))
				continue;
			score = (d->ports[j].state == ND_PORT_ACTIVE) * 2 + nd_dev_usable(d);
			if (score > best) {
				best = score;
				*dev = d;
				*port = &d->ports[j];
			}
		}
	}
	return best < 0 ? -ENOENT : 0;
}

static void nd_gid_scan(const struct nd_port *p, const struct nd_link *l, struct nd_gid_pick *o,
			int *v1_v4, int *v1_any)
{
	size_t i;

	for (i = 0; i < p->ngids; i++) {
		const struct nd_gid *g = &p->gids[i];
		const struct nd_addr *a = nd_gid_addr(g, l);
		int idx = (int)g->index;

		if (!a)
			continue;
		if (g->type == ND_GID_ROCE_V2 && a->family == AF_INET && o->v2_v4 < 0)
			o->v2_v4 = idx;
		else if (g->type == ND_GID_ROCE_V2 && a->family == AF_INET6 && a->scope == 0 &&
			 o->v2_v6 < 0)
			o->v2_v6 = idx;
		else if (g->type == ND_GID_ROCE_V1 && a->family == AF_INET && *v1_v4 < 0)
			*v1_v4 = idx;
		else if (g->type == ND_GID_ROCE_V1 && *v1_any < 0)
			*v1_any = idx;
	}
}

void nd_gid_choose(const struct nd_port *p, const struct nd_link *l, struct nd_gid_pick *out)
{
	int v1_v4 = -1, v1_any = -1;
	size_t i;

	out->index = -1;
	out->type = ND_GID_NONE;
	out->v2_v4 = -1;
	out->v2_v6 = -1;
	if (p->link_layer == ND_LL_IB) {
		for (i = 0; i < p->ngids; i++)
			if (p->gids[i].index == 0) {
				out->index = 0;
				out->type = ND_GID_IB;
			}
		return;
	}
	nd_gid_scan(p, l, out, &v1_v4, &v1_any);
	if (out->v2_v4 >= 0 || out->v2_v6 >= 0) {
		out->index = out->v2_v4 >= 0 ? out->v2_v4 : out->v2_v6;
		out->type = ND_GID_ROCE_V2;
	} else if (v1_v4 >= 0 || v1_any >= 0) {
		out->index = v1_v4 >= 0 ? v1_v4 : v1_any;
		out->type = ND_GID_ROCE_V1;
	}
}

int nd_dev_usable(const struct nd_device *d)
{
	return d->open_err == 0 && d->uverbs_ok;
}

const struct nd_device *nd_dev_by_name(const struct nd_inventory *inv, const char *name)
{
	size_t i;

	for (i = 0; i < inv->ndevs; i++)
		if (strcmp(inv->devs[i].name, name) == 0)
			return &inv->devs[i];
	return NULL;
}

/* Hand the flat GID table out to the ports (entries of unknown ports dropped). */
static int nd_split_gids(struct nd_device *d, const struct nd_gid *g, size_t n)
{
	size_t i, j, k;

	for (j = 0; j < d->nports; j++) {
		struct nd_port *p = &d->ports[j];

		for (i = 0, k = 0; i < n; i++)
			k += (int)g[i].port == p->num;
		p->gids = calloc(k ? k : 1, sizeof(*p->gids));
		if (!p->gids)
			return -ENOMEM;
		for (i = 0; i < n; i++)
			if ((int)g[i].port == p->num)
				p->gids[p->ngids++] = g[i];
	}
	return 0;
}

static int nd_query_ports(const struct nd_verbs_ops *ops, void *h, struct nd_device *d,
			  size_t *gid_total)
{
	struct nd_port_attr pa;
	size_t j;
	int rc;

	for (j = 0; j < d->nports; j++) {
		memset(&pa, 0, sizeof(pa));
		rc = ops->query_port(ops->arg, h, (int)j + 1, &pa);
		if (rc < 0)
			return rc;
		d->ports[j].num = (int)j + 1;
		d->ports[j].state = pa.state;
		d->ports[j].link_layer = pa.link_layer;
		d->ports[j].mtu = pa.mtu;
		d->ports[j].rate_mbps = pa.rate_mbps;
		if (pa.gid_tbl_len > 0)
			*gid_total += (size_t)pa.gid_tbl_len;
	}
	return 0;
}

static int nd_dev_fill(const struct nd_verbs_ops *ops, struct nd_device *d)
{
	struct nd_gid *g = NULL;
	void *h = NULL;
	size_t total = 0, n = 0;
	int nports = 0, rc;

	rc = ops->open(ops->arg, d->name, &h);
	if (rc == 0)
		rc = ops->query_device(ops->arg, h, &d->guid, &nports);
	if (rc < 0)
		goto out;
	d->nports = nports > 0 ? (size_t)(nports > 32 ? 32 : nports) : 0;
	d->ports = calloc(d->nports ? d->nports : 1, sizeof(*d->ports));
	rc = d->ports ? nd_query_ports(ops, h, d, &total) : -ENOMEM;
	if (rc < 0)
		goto out;
	total = total > ND_MAX_GIDS ? ND_MAX_GIDS : total;
	g = calloc(total ? total : 1, sizeof(*g));
	rc = g ? ops->query_gids(ops->arg, h, g, total, &n) : -ENOMEM;
	if (rc == 0)
		rc = nd_split_gids(d, g, n);
out:
	if (h)
		ops->close(ops->arg, h);
	free(g);
	d->open_err = rc;
	if (rc < 0)
		gx_debug("rdma %s: %s", d->name, gx_strerror(rc));
	return rc == -ENOMEM ? rc : 0;
}

int nd_rdma_collect(const struct nd_verbs_ops *ops, struct nd_inventory *inv)
{
	struct nd_vdev *v = NULL;
	size_t n = 0, i;
	int rc;

	rc = ops->list(ops->arg, &v, &n);
	if (rc < 0) {
		inv->rdma_err = rc;
		gx_debug("rdma: no device list: %s", gx_strerror(rc));
		rc = 0;
		goto out;
	}
	inv->devs = calloc(n ? n : 1, sizeof(*inv->devs));
	if (!inv->devs) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n && rc == 0; i++) {
		struct nd_device *d = &inv->devs[inv->ndevs++];

		gx_strlcpy(d->name, v[i].name, sizeof(d->name));
		gx_strlcpy(d->uverbs, v[i].uverbs, sizeof(d->uverbs));
		d->uverbs_ok = v[i].uverbs_ok;
		rc = nd_dev_fill(ops, d);
	}
out:
	free(v);
	return rc;
}

const char *nd_gid_type_str(int type)
{
	switch (type) {
	case ND_GID_IB:
		return "IB";
	case ND_GID_ROCE_V1:
		return "RoCE v1";
	case ND_GID_ROCE_V2:
		return "RoCE v2";
	default:
		return "none";
	}
}

const char *nd_link_layer_str(int ll)
{
	switch (ll) {
	case ND_LL_IB:
		return "InfiniBand";
	case ND_LL_ETH:
		return "Ethernet";
	default:
		return "unspecified";
	}
}
