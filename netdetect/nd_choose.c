/* SPDX-License-Identifier: MIT */
/*
 * nd_choose.c - the bootstrap interface, by these rules in order
 * (README.md "The choice"): 1 --iface / --rdma-dev, 2 network-status, 3 an up
 * secondary carrying an RDMA port, 4 any up addressed secondary, 5 nothing (or
 * the pod network with --allow-primary). Step 2 without network-status: a
 * netdev the SR-IOV device plugin names (PCIDEVICE_*, nd_pcidev.c). A
 * "secondary" is any link but the pod network (nd_primary.c) and CNI or kernel
 * plumbing. Each step is logged in reason.
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *nd_addr_why(const struct nd_link *l)
{
	size_t i;
	int linklocal = 0;

	if (nd_link_global(l, AF_INET) || nd_link_global(l, AF_INET6))
		return NULL;
	for (i = 0; i < l->naddrs; i++)
		linklocal |= l->addrs[i].scope == 253;
	return linklocal ? "has only link-local addresses" : "has no address";
}

const char *nd_secondary_why(const struct nd_result *r, const struct nd_link *l, char *buf,
			     size_t len)
{
	const char *why;

	if (l->is_loopback)
		return "is loopback";
	if (nd_link_is_primary(r, l))
		return nd_primary_why(r);
	if ((why = nd_virtual_why(r, l, buf, len)) != NULL)
		return why;
	if (!nd_link_is_up(l, &why))
		return !l->admin_up ? "is down (administratively)" : "is down (no carrier)";
	return nd_addr_why(l);
}

int nd_link_rank_speed(const struct nd_inventory *inv, const struct nd_link *l)
{
	const struct nd_device *d;
	const struct nd_port *p;
	int s = l->speed_mbps;

	if (nd_link_port(inv, l, &d, &p) == 0 && p->state == ND_PORT_ACTIVE && p->rate_mbps > s)
		s = p->rate_mbps;
	return s;
}

/* Rank for steps 3/4: higher speed first, then lower ifindex. */
static int nd_better(const struct nd_inventory *inv, const struct nd_link *a,
		     const struct nd_link *b)
{
	int sa, sb;

	if (!b)
		return 1;
	sa = nd_link_rank_speed(inv, a);
	sb = nd_link_rank_speed(inv, b);
	if (sa != sb)
		return sa > sb;
	/* by name (net1 before net2): the same on every pod, where ifindexes need not be */
	return strverscmp(a->name, b->name) < 0;
}

static int nd_has_rdma_port(const struct nd_inventory *inv, const struct nd_link *l)
{
	const struct nd_device *d;
	const struct nd_port *p;

	return nd_link_port(inv, l, &d, &p) == 0 && p->state == ND_PORT_ACTIVE;
}

/* Does an address of l lie in net/plen? */
static int nd_link_in_cidr(const struct nd_link *l, int fam, const unsigned char *net, int plen)
{
	size_t i;
	int k, bits;

	for (i = 0; i < l->naddrs; i++) {
		const unsigned char *a = l->addrs[i].a;

		if (l->addrs[i].family != fam)
			continue;
		for (k = 0, bits = plen; bits >= 8 && a[k] == net[k]; k++, bits -= 8)
			;
		if (bits <= 0 || (bits < 8 && ((a[k] ^ net[k]) & (0xff << (8 - bits)) & 0xff) == 0))
			return 1;
	}
	return 0;
}

static int nd_find_cidr(struct nd_ctx *c, const char *spec, const struct nd_link **out)
{
	char ip[ND_ADDR6SIZ];
	unsigned char net[16];
	const char *slash = strchr(spec, '/');
	long plen;
	size_t i, n = slash ? (size_t)(slash - spec) : strlen(spec);
	int fam = memchr(spec, ':', n) ? AF_INET6 : AF_INET, max = fam == AF_INET ? 32 : 128;

	if (n >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, spec, n);
	ip[n] = '\0';
	if (inet_pton(fam, ip, net) != 1)
		return -EINVAL;
	plen = max;
	if (slash && gx_parse_long(slash + 1, 0, max, &plen) < 0)
		return -EINVAL;
	for (i = 0; i < c->inv->nlinks; i++)
		if (nd_link_in_cidr(&c->inv->links[i], fam, net, (int)plen)) {
			*out = &c->inv->links[i];
			return 0;
		}
	return -ENOENT;
}

__attribute__((format(printf, 3, 4))) static int nd_fail(struct nd_ctx *c, int rc, const char *fmt,
							 ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* An explicit interface must exist, be up and have an address (lo allowed). */
static int nd_check_explicit(struct nd_ctx *c, const struct nd_link *l, const char *what)
{
	const char *why;
	size_t i;
	int any = 0;

	if (!nd_link_is_up(l, &why))
		return nd_fail(c, GX_ENOSECONDARY, "%s is %s", l->name, why);
	for (i = 0; i < l->naddrs; i++)
		any |= l->addrs[i].scope != 253;
	if (!any)
		return nd_fail(c, GX_ENOSECONDARY, "%s: %s has no usable address", what, l->name);
	c->chosen = l;
	return 0;
}

static int nd_step1_iface(struct nd_ctx *c)
{
	const char *spec = c->req->iface;
	const struct nd_link *l = NULL;
	struct in_addr v4;
	int rc;

	if (strchr(spec, '/') || strchr(spec, ':') || inet_pton(AF_INET, spec, &v4) == 1) {
		rc = nd_find_cidr(c, spec, &l);
		if (rc == -EINVAL)
			return nd_fail(c, GX_EUSAGE, "--iface %s: not an interface name or CIDR",
				       spec);
		if (rc < 0)
			return nd_fail(c, GX_ENOSECONDARY,
				       "--iface %s: no local interface has an address in it", spec);
		nd_reason(c->r, "1: --iface %s matches %s", spec, l->name);
	} else {
		l = nd_link_by_name(c->inv, spec);
		if (!l)
			return nd_fail(c, GX_ENOSECONDARY, "--iface %s: no such interface", spec);
		nd_reason(c->r, "1: --iface %s", spec);
	}
	return nd_check_explicit(c, l, "--iface");
}

/* --rdma-dev without --iface: the netdev of the first listed device's port. */
static int nd_step1_rdmadev(struct nd_ctx *c)
{
	const struct nd_devport *w = &c->want[0];
	const struct nd_device *d = nd_dev_by_name(c->inv, w->dev);
	const struct nd_link *l = NULL;
	size_t j;

	if (!d)
		return nd_fail(c, GX_ENOSECONDARY, "--rdma-dev %s: no such RDMA device", w->dev);
	for (j = 0; j < d->nports && !l; j++)
		if (!w->port || d->ports[j].num == w->port)
			l = nd_port_link(c->inv, &d->ports[j]);
	if (!l)
		return nd_fail(c, GX_ENOSECONDARY,
			       "--rdma-dev %s: no GID of this pod's interfaces on it (%s)", w->dev,
			       d->open_err ? gx_strerror(d->open_err) : "another pod's device?");
	nd_reason(c->r, "1: --rdma-dev %s serves %s", w->dev, l->name);
	return nd_check_explicit(c, l, "--rdma-dev");
}

/* n's interface is the pod network: eth0's entry when it lacks "default": true. */
static int nd_net_on_primary(struct nd_ctx *c, const struct nd_net *n)
{
	const struct nd_link *l = nd_link_by_name(c->inv, n->iface);

	return l && nd_link_is_primary(c->r, l);
}

/* The first secondary network, or --network's (which may name any, rule 2). */
static const struct nd_net *nd_pick_net(struct nd_ctx *c)
{
	const struct nd_inventory *inv = c->inv;
	const char *want = c->req->network, *slash;
	size_t i;

	for (i = 0; i < inv->nnets; i++) {
		const struct nd_net *n = &inv->nets[i];

		if (n->is_default || !n->iface[0])
			continue;
		slash = strrchr(n->name, '/');
		if (want && (strcmp(n->name, want) == 0 || (slash && strcmp(slash + 1, want) == 0)))
			return n;
		if (want)
			continue;
		if (!nd_net_on_primary(c, n))
			return n;
		nd_reason(c->r, "2: network-status entry %s is on %s, the pod network", n->name,
			  n->iface);
	}
	return NULL;
}

/* Where a device's RDMA name came from, for the reason text. */
static void nd_pd_src(const struct nd_pcidev *pd, char *buf, size_t len)
{
	if (!pd->var[0])
		snprintf(buf, len, "device-info pci-address %s (sysfs)", pd->addr);
	else if (strcmp(pd->rdma_src, "_INFO") == 0)
		snprintf(buf, len, "%s_INFO", pd->var);
	else
		snprintf(buf, len, "%s (%s %s)", pd->var, pd->addr, pd->rdma_src);
}

/* 1 when a port of RDMA device dev serves link l. */
static int nd_dev_serves(const struct nd_inventory *inv, const char *dev, const struct nd_link *l)
{
	const struct nd_device *d = nd_dev_by_name(inv, dev);
	size_t j;

	for (j = 0; d && j < d->nports; j++)
		if (nd_port_link(inv, &d->ports[j]) == l)
			return 1;
	return 0;
}

/* The RDMA device a PCIDEVICE / device-info entry names for l: preferred when it serves l. */
static void nd_pd_rdma(struct nd_ctx *c, const struct nd_pcidev *pd, const struct nd_link *l)
{
	char src[256];

	if (!pd->rdma_dev[0])
		return;
	nd_pd_src(pd, src, sizeof(src));
	if (nd_dev_serves(c->inv, pd->rdma_dev, l)) {
		c->ns_rdma = pd->rdma_dev;
		nd_reason(c->r, "2: rdma-device %s from %s", pd->rdma_dev, src);
	} else if (c->req->rdma_mode != ND_RDMA_OFF && c->inv->ndevs) {
		nd_result_warn(c->r, "%s names RDMA device %s for %s, but it has no GID of %s", src,
			       pd->rdma_dev, l->name, l->name);
	}
}

/* network-status chose net n on l: the device plugin's word on its RDMA device. */
static void nd_net_pcidev(struct nd_ctx *c, const struct nd_net *n, const struct nd_link *l)
{
	const struct nd_pcidev *pd = nd_pcidev_by_addr(c->inv, n->pci);

	if (!pd)
		pd = nd_pcidev_by_netdev(c->inv, l->name);
	if (!pd || !pd->rdma_dev[0])
		return;
	if (!c->ns_rdma) {
		nd_pd_rdma(c, pd, l);
		return;
	}
	if (strcmp(pd->rdma_dev, c->ns_rdma) != 0)
		nd_result_warn(c->r, "network-status names rdma-device %s for %s, %s says %s",
			       c->ns_rdma, l->name, pd->var[0] ? pd->var : "sysfs", pd->rdma_dev);
}

/* The RDMA device network-status's device-info (or the device plugin) ties to n, or NULL. */
static const char *nd_net_rdma(const struct nd_inventory *inv, const struct nd_net *n)
{
	const struct nd_pcidev *pd;

	if (n->rdma_dev[0])
		return n->rdma_dev;
	pd = nd_pcidev_by_addr(inv, n->pci);
	return pd && pd->rdma_dev[0] ? pd->rdma_dev : NULL;
}

/*
 * The first listed network is taken (README "The choice"); when it has no RDMA and a later
 * listed one carries an RDMA device (a storage network listed before the RDMA one), say
 * that it was passed over and how to pick it.
 */
static void nd_rdma_net_later(struct nd_ctx *c, const struct nd_net *n, const struct nd_link *l)
{
	const struct nd_inventory *inv = c->inv;
	const char *dev;
	size_t i;

	if (c->req->network || c->req->rdma_mode == ND_RDMA_OFF || nd_net_rdma(inv, n) ||
	    nd_has_rdma_port(inv, l))
		return;
	for (i = (size_t)(n - inv->nets) + 1; i < inv->nnets; i++) {
		const struct nd_net *x = &inv->nets[i];

		if (x->is_default || !x->iface[0] || !(dev = nd_net_rdma(inv, x)))
			continue;
		nd_result_warn(c->r,
			       "network-status lists %s (%s) first, so it carries the bootstrap; "
			       "%s (%s) after it carries RDMA device %s: pick it with --network %s",
			       n->name, l->name, x->name, x->iface, dev, x->name);
		return;
	}
}

/* Step 2 without network-status: a netdev the SR-IOV device plugin handed this pod
 * (PCIDEVICE_*), the lowest name first. 1 chosen, 0 go on. */
static int nd_step2_pcidev(struct nd_ctx *c)
{
	const struct nd_pcidev *best = NULL;
	const struct nd_link *bl = NULL, *l;
	char buf[ND_WHY_MAX];
	const char *why;
	size_t i;

	for (i = 0; i < c->inv->npcidevs; i++) {
		const struct nd_pcidev *pd = &c->inv->pcidevs[i];

		l = pd->var[0] ? nd_link_by_name(c->inv, pd->netdev) : NULL;
		if (!l)
			continue;
		why = nd_secondary_why(c->r, l, buf, sizeof(buf));
		if (why)
			nd_reason(c->r, "2: %s from %s %s", l->name, pd->var, why);
		else if (!bl || strverscmp(l->name, bl->name) < 0) {
			best = pd;
			bl = l;
		}
	}
	if (!best)
		return 0;
	nd_reason(c->r, "2: %s is %s from %s", bl->name, best->addr, best->var);
	c->pd = best;
	c->chosen = bl;
	nd_pd_rdma(c, best, bl);
	return 1;
}

/* 1 chosen, 0 go on, <0 error. */
static int nd_step2(struct nd_ctx *c)
{
	const struct nd_net *n;
	const struct nd_link *l;
	const char *why;

	if (!c->inv->nets_loaded) {
		if (c->req->network && c->req->network_status)
			return nd_fail(c, GX_ENOSECONDARY,
				       "--network %s: %s holds no network-status annotation yet",
				       c->req->network, c->req->network_status);
		if (c->req->network)
			return nd_fail(c, GX_EUSAGE, "--network %s needs --network-status",
				       c->req->network);
		nd_reason(c->r, "2: no network-status");
		return nd_step2_pcidev(c);
	}
	n = nd_pick_net(c);
	if (!n && c->req->network)
		return nd_fail(c, GX_ENOSECONDARY, "--network %s: not in network-status",
			       c->req->network);
	if (!n) {
		nd_reason(c->r, "2: network-status lists no secondary network");
		return nd_step2_pcidev(c);
	}
	l = nd_link_by_name(c->inv, n->iface);
	if (!l)
		return nd_fail(c, GX_ENOSECONDARY,
			       "network-status names %s (%s) but this pod has no such interface",
			       n->iface, n->name);
	if (!nd_link_is_up(l, &why))
		return nd_fail(c, GX_ENOSECONDARY, "%s is %s", l->name, why);
	/* the same line as without network-status: never a choice without an address */
	if ((why = nd_addr_why(l)) != NULL)
		return nd_fail(c, GX_ENOSECONDARY, "%s %s", l->name, why);
	c->ns_rdma = n->rdma_dev[0] ? n->rdma_dev : NULL;
	c->ns_name = n->name;
	c->ns_net = n;
	gx_strlcpy(c->r->network, n->name, sizeof(c->r->network));
	nd_reason(c->r, "2: network-status network %s is %s%s%s", n->name, l->name,
		  c->ns_rdma ? " with rdma-device " : "", c->ns_rdma ? c->ns_rdma : "");
	c->chosen = l;
	nd_net_pcidev(c, n, l);
	nd_rdma_net_later(c, n, l);
	return 1;
}

static int nd_candidate(struct nd_ctx *c, const struct nd_link *l, int need_rdma)
{
	char buf[ND_WHY_MAX];

	return !nd_secondary_why(c->r, l, buf, sizeof(buf)) &&
	       (!need_rdma || nd_has_rdma_port(c->inv, l));
}

/*
 * Candidates as fast as best: the first by name wins, the same choice on every pod. Never in
 * silence: one note (info, as 8 rails of one speed are the normal case) with every name and
 * how to choose another.
 */
static int nd_name_cmp(const void *a, const void *b)
{
	return strverscmp(*(const char *const *)a, *(const char *const *)b);
}

static void nd_tie_note(struct nd_ctx *c, const struct nd_link *best, int need_rdma)
{
	const char *tied[16];
	char names[256], speed[32];
	size_t i, off = 0, n = 0, last = 0;
	int s = nd_link_rank_speed(c->inv, best);

	for (i = 0; i < c->inv->nlinks && n < sizeof(tied) / sizeof(tied[0]); i++) {
		const struct nd_link *l = &c->inv->links[i];

		if (l != best && nd_candidate(c, l, need_rdma) &&
		    nd_link_rank_speed(c->inv, l) == s)
			tied[n++] = l->name;
	}
	if (!n)
		return;
	qsort(tied, n, sizeof(tied[0]), nd_name_cmp);
	names[0] = '\0';
	for (i = 0; i < n && off + ND_IFNAMSIZ + 2 < sizeof(names); i++) {
		last = off;
		off += (size_t)snprintf(names + off, sizeof(names) - off, ", %s", tied[i]);
	}
	if (s > 0)
		snprintf(speed, sizeof(speed), "%d Mb/s", s);
	else
		snprintf(speed, sizeof(speed), "unknown speed");
	/* "a, b and c": the last ", " becomes " and " */
	nd_result_note(c->r,
		       "%s%.*s and %s tie (%s%s): %s is used, the first by name; name another "
		       "with --iface",
		       best->name, (int)last, names, names + last + 2, speed,
		       need_rdma ? ", each with an RDMA port" : "", best->name);
}

/* Steps 3 and 4: best up secondary, with an RDMA port (need_rdma) or any. */
static const struct nd_link *nd_best(struct nd_ctx *c, int need_rdma)
{
	const struct nd_link *best = NULL;
	size_t i;

	for (i = 0; i < c->inv->nlinks; i++) {
		const struct nd_link *l = &c->inv->links[i];

		if (nd_candidate(c, l, need_rdma) && nd_better(c->inv, l, best))
			best = l;
	}
	if (best)
		nd_tie_note(c, best, need_rdma);
	return best;
}

/* The pod network's links, "eth0 (default route)" or "eth0 (pod network)". */
static void nd_list_primary(const struct nd_ctx *c, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < c->inv->nlinks && off < len; i++) {
		const struct nd_link *l = &c->inv->links[i];

		if (nd_link_is_primary(c->r, l))
			off += (size_t)snprintf(buf + off, len - off, "%s%s (%s)", off ? ", " : "",
						l->name,
						l->is_default ? "default route" : "pod network");
	}
}

/* Step 5 failure: name the secondaries that were there but unusable. */
static int nd_fail_none(struct nd_ctx *c)
{
	char defs[128], buf[ND_WHY_MAX];
	size_t i, off = 0;
	const char *why;

	for (i = 0; i < c->inv->nlinks && off < c->errlen; i++) {
		const struct nd_link *l = &c->inv->links[i];

		/* lo, the pod network and plumbing are not what was missing */
		if (l->is_loopback || nd_link_is_primary(c->r, l) ||
		    nd_virtual_why(c->r, l, buf, sizeof(buf)) ||
		    !(why = nd_secondary_why(c->r, l, buf, sizeof(buf))))
			continue;
		off += (size_t)snprintf(c->err + off, c->errlen - off, "%s%s %s", off ? "; " : "",
					l->name, why);
	}
	if (off)
		return GX_ENOSECONDARY;
	nd_list_primary(c, defs, sizeof(defs));
	if (defs[0])
		snprintf(c->err, c->errlen, "no secondary interface: only %s found", defs);
	else
		snprintf(c->err, c->errlen, "no secondary interface: only loopback found");
	return GX_ENOSECONDARY;
}

static int nd_step5(struct nd_ctx *c)
{
	size_t i;
	const char *why;

	if (!c->req->allow_primary)
		return nd_fail_none(c);
	for (i = 0; i < c->inv->nlinks; i++) {
		const struct nd_link *l = &c->inv->links[i];

		if (nd_link_is_primary(c->r, l) && nd_link_is_up(l, &why) && !nd_addr_why(l)) {
			c->chosen = l;
			nd_reason(c->r, "5: no secondary; --allow-primary: %s", l->name);
			nd_result_warn(
			    c->r,
			    "no secondary interface: using %s (%s) because of --allow-primary",
			    l->name, l->is_default ? "default route" : "the pod network");
			return 0;
		}
	}
	return nd_fail_none(c);
}

int nd_choose_iface(struct nd_ctx *c)
{
	const struct nd_link *l;
	int rc;

	c->step = 1;
	if (c->req->iface)
		return nd_step1_iface(c);
	if (c->nwant)
		return nd_step1_rdmadev(c);
	nd_reason(c->r, "1: no --iface/--rdma-dev");
	c->step = 2;
	rc = nd_step2(c);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	c->step = 3;
	l = c->req->rdma_mode == ND_RDMA_OFF ? NULL : nd_best(c, 1);
	if (l) {
		nd_reason(c->r, "3: %s carries an active RDMA port", l->name);
		c->chosen = l;
		return 0;
	}
	nd_reason(c->r, "3: no up secondary carries an RDMA port");
	c->step = 4;
	l = nd_best(c, 0);
	if (l) {
		nd_reason(c->r, "4: %s is up and addressed", l->name);
		c->chosen = l;
		return 0;
	}
	c->step = 5;
	return nd_step5(c);
}

static void nd_rank_why(struct nd_ctx *c, const struct nd_link *l, char *buf, size_t len)
{
	const struct nd_link *ch = c->chosen;
	int sl = nd_link_rank_speed(c->inv, l), sc = nd_link_rank_speed(c->inv, ch);

	if (c->step == 1)
		snprintf(buf, len, "not the one asked for (%s)", ch->name);
	else if (c->step == 2 && c->pd)
		snprintf(buf, len, "%s names %s", c->pd->var, ch->name);
	else if (c->step == 2)
		snprintf(buf, len, "network-status names %s", ch->name);
	else if (c->step == 3 && !nd_has_rdma_port(c->inv, l))
		snprintf(buf, len, "carries no RDMA port (%s does)", ch->name);
	else if (sl != sc)
		snprintf(buf, len, "slower than %s (%d vs %d Mb/s)", ch->name, sl, sc);
	else
		snprintf(buf, len, "same speed as %s, later by name", ch->name);
}

void nd_fill_passed(struct nd_ctx *c)
{
	char buf[ND_WHY_MAX];
	const char *why;
	size_t i;

	for (i = 0; i < c->inv->nlinks; i++) {
		const struct nd_link *l = &c->inv->links[i];

		if (l == c->chosen)
			continue;
		why = nd_secondary_why(c->r, l, buf, sizeof(buf));
		if (!why && c->chosen) {
			nd_rank_why(c, l, buf, sizeof(buf));
			why = buf;
		} else if (!why) {
			why = "not usable";
		}
		nd_result_pass(c->r, l->name, why);
	}
}
