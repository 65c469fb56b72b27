/* SPDX-License-Identifier: MIT */
/*
 * nd_fixture.h - test helper (header only, static inline): load an inventory
 * fixture from tests/fixtures/netdetect/NAME.inv. Links go straight into the
 * inventory; RDMA devices go through a fake verbs ops table, so
 * nd_rdma_collect() builds the model exactly as it does from libibverbs.
 *
 * Lines:  link IFINDEX NAME kind=K state=up|down|nocarrier mtu=N [default]
 *              [speed=N] [arp=N] [ll=HEX:HEX..] [addr=IP/PLEN]...
 *              [noarp] [p2p] [master=IFINDEX] [peer=here]
 *              (IFF_NOARP, IFF_POINTOPOINT, IFLA_MASTER, a veth whose peer is in the
 *              same namespace)
 *         dev NAME guid=HEX [uverbs=missing] [open=ERRNO]
 *         port NUM ACTIVE|DOWN eth|ib mtu=N rate=N tbl=N
 *         gid INDEX ib|v1|v2 NDEV_IFINDEX GID
 *         memlock BYTES|unlimited     ipc_lock 0|1     rdma_err -ERRNO
 *         kubernetes 0|1 (default 1: a pod, as the kubelet's KUBERNETES_SERVICE_HOST says)
 */
#ifndef ND_FIXTURE_H
#define ND_FIXTURE_H

#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fx_port {
	struct nd_port_attr a;
	struct nd_gid gids[64];
	size_t ngids;
};

struct fx_dev {
	struct nd_vdev v;
	int open_err;
	uint64_t guid;
	struct fx_port ports[4];
	int nports;
};

struct fx {
	struct fx_dev devs[16];
	int ndevs;
	int list_err;
	int opens; /* open/close balance */
};

static inline const char *fx_dir(void)
{
	static char dir[PATH_MAX + 64];
	char exe[PATH_MAX], *slash;
	ssize_t n;
	int up;

	if (access("tests/fixtures/netdetect", R_OK) == 0)
		return "tests/fixtures/netdetect";
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return "tests/fixtures/netdetect";
	exe[n] = '\0';
	for (up = 0; up < 6 && (slash = strrchr(exe, '/')); up++) {
		*slash = '\0';
		if (snprintf(dir, sizeof(dir), "%s/tests/fixtures/netdetect", exe) <
			(int)sizeof(dir) &&
		    access(dir, R_OK) == 0)
			return dir;
	}
	return "tests/fixtures/netdetect";
}

static inline char *fx_path(const char *name, char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/%s", fx_dir(), name) >= (int)len)
		abort();
	return buf;
}

static inline long fx_kv(const char *tok, const char *key, long dflt)
{
	size_t k = strlen(key);

	if (strncmp(tok, key, k) == 0 && tok[k] == '=')
		return strtol(tok + k + 1, NULL, 0);
	return dflt;
}

static inline void fx_addr(struct nd_link *l, const char *spec)
{
	struct nd_addr *a;
	char ip[64];
	const char *slash = strchr(spec, '/');
	size_t n = slash ? (size_t)(slash - spec) : strlen(spec);

	l->addrs = realloc(l->addrs, (l->naddrs + 1) * sizeof(*l->addrs));
	a = &l->addrs[l->naddrs++];
	memset(a, 0, sizeof(*a));
	memcpy(ip, spec, n);
	ip[n] = '\0';
	a->family = strchr(ip, ':') ? AF_INET6 : AF_INET;
	inet_pton(a->family, ip, a->a);
	inet_ntop(a->family, a->a, a->str, sizeof(a->str));
	a->prefixlen = slash ? (int)strtol(slash + 1, NULL, 10) : (a->family == AF_INET ? 32 : 128);
	if (a->family == AF_INET6 && a->a[0] == 0xfe && (a->a[1] & 0xc0) == 0x80)
		a->scope = 253;
	else if ((a->family == AF_INET && a->a[0] == 127) ||
		 (a->family == AF_INET6 && !strcmp(a->str, "::1")))
		a->scope = 254;
}

static inline void fx_ll(struct nd_link *l, const char *hex)
{
	size_t off = 0;

	while (*hex && l->lladdr_len < (int)sizeof(l->lladdr)) {
		l->lladdr[l->lladdr_len++] = (unsigned char)strtoul(hex, NULL, 16);
		hex = strchr(hex, ':');
		if (!hex)
			break;
		hex++;
	}
	for (int i = 0; i < l->lladdr_len && off + 4 < sizeof(l->mac); i++)
		off += (size_t)snprintf(l->mac + off, sizeof(l->mac) - off, "%s%02x", i ? ":" : "",
					l->lladdr[i]);
}

static inline void fx_link(struct nd_inventory *inv, char *save)
{
	struct nd_link *l;
	char *t;

	inv->links = realloc(inv->links, (inv->nlinks + 1) * sizeof(*inv->links));
	l = &inv->links[inv->nlinks++];
	memset(l, 0, sizeof(*l));
	l->ifindex = (int)strtol(strtok_r(NULL, " ", &save), NULL, 10);
	gx_strlcpy(l->name, strtok_r(NULL, " ", &save), sizeof(l->name));
	l->speed_mbps = -1;
	l->arptype = 1;
	while ((t = strtok_r(NULL, " ", &save))) {
		if (!strncmp(t, "kind=", 5))
			gx_strlcpy(l->kind, t + 5, sizeof(l->kind));
		else if (!strcmp(t, "state=up"))
			l->admin_up = l->carrier = 1, l->operstate = 6;
		else if (!strcmp(t, "state=nocarrier"))
			l->admin_up = 1, l->operstate = 2;
		else if (!strcmp(t, "default"))
			l->is_default = 1;
		else if (!strcmp(t, "noarp"))
			l->flags |= IFF_NOARP;
		else if (!strcmp(t, "p2p"))
			l->flags |= IFF_POINTOPOINT;
		else if (!strcmp(t, "peer=here"))
			l->peer_here = 1;
		else if (!strncmp(t, "addr=", 5))
			fx_addr(l, t + 5);
		else if (!strncmp(t, "ll=", 3))
			fx_ll(l, t + 3);
		l->mtu = (int)fx_kv(t, "mtu", l->mtu);
		l->speed_mbps = (int)fx_kv(t, "speed", l->speed_mbps);
		l->arptype = (int)fx_kv(t, "arp", l->arptype);
		l->master = (int)fx_kv(t, "master", l->master);
	}
	l->is_loopback = !strcmp(l->kind, "loopback");
	l->flags |= (l->admin_up ? IFF_UP : 0) | (l->is_loopback ? IFF_LOOPBACK : 0);
	if (l->is_loopback)
		l->operstate = 0;
}

static inline void fx_dev_line(struct fx *f, char *save)
{
	struct fx_dev *d = &f->devs[f->ndevs++];
	char *t;

	memset(d, 0, sizeof(*d));
	gx_strlcpy(d->v.name, strtok_r(NULL, " ", &save), sizeof(d->v.name));
	snprintf(d->v.uverbs, sizeof(d->v.uverbs), "uverbs%d", f->ndevs - 1);
	d->v.uverbs_ok = 1;
	while ((t = strtok_r(NULL, " ", &save))) {
		if (!strncmp(t, "guid=", 5))
			d->guid = strtoull(t + 5, NULL, 16);
		else if (!strcmp(t, "uverbs=missing"))
			d->v.uverbs_ok = 0;
		d->open_err = (int)fx_kv(t, "open", d->open_err);
	}
}

static inline void fx_port_line(struct fx *f, char *save)
{
	struct fx_dev *d = &f->devs[f->ndevs - 1];
	struct fx_port *p = &d->ports[d->nports++];
	char *t;

	memset(p, 0, sizeof(*p));
	strtok_r(NULL, " ", &save); /* port number: ports are 1..n in order */
	p->a.state = !strcmp(strtok_r(NULL, " ", &save), "ACTIVE") ? ND_PORT_ACTIVE : 1;
	p->a.link_layer = !strcmp(strtok_r(NULL, " ", &save), "ib") ? ND_LL_IB : ND_LL_ETH;
	while ((t = strtok_r(NULL, " ", &save))) {
		p->a.mtu = (int)fx_kv(t, "mtu", p->a.mtu);
		p->a.rate_mbps = (int)fx_kv(t, "rate", p->a.rate_mbps);
		p->a.gid_tbl_len = (int)fx_kv(t, "tbl", p->a.gid_tbl_len);
	}
}

static inline void fx_gid_line(struct fx *f, char *save)
{
	struct fx_dev *d = &f->devs[f->ndevs - 1];
	struct fx_port *p = &d->ports[d->nports - 1];
	struct nd_gid *g = &p->gids[p->ngids++];
	const char *type;

	g->index = (uint32_t)strtoul(strtok_r(NULL, " ", &save), NULL, 10);
	type = strtok_r(NULL, " ", &save);
	g->type = !strcmp(type, "ib")	? ND_GID_IB
		  : !strcmp(type, "v1") ? ND_GID_ROCE_V1
					: ND_GID_ROCE_V2;
	g->ifindex = (uint32_t)strtoul(strtok_r(NULL, " ", &save), NULL, 10);
	g->port = (uint32_t)d->nports;
	inet_pton(AF_INET6, strtok_r(NULL, " ", &save), g->raw);
}

/* ---- the fake verbs ops ---- */
static inline int fx_list(void *arg, struct nd_vdev **devs, size_t *n)
{
	struct fx *f = arg;

	if (f->list_err)
		return f->list_err;
	*devs = calloc((size_t)f->ndevs + 1, sizeof(**devs));
	for (int i = 0; i < f->ndevs; i++)
		(*devs)[i] = f->devs[i].v;
	*n = (size_t)f->ndevs;
	return 0;
}

static inline int fx_open(void *arg, const char *name, void **h)
{
	struct fx *f = arg;

	for (int i = 0; i < f->ndevs; i++)
		if (!strcmp(f->devs[i].v.name, name)) {
			if (f->devs[i].open_err)
				return f->devs[i].open_err;
			*h = &f->devs[i];
			f->opens++;
			return 0;
		}
	return -ENODEV;
}

static inline void fx_close(void *arg, void *h)
{
	struct fx *f = arg;

	(void)h;
	f->opens--;
}

static inline int fx_qdev(void *arg, void *h, uint64_t *guid, int *nports)
{
	struct fx_dev *d = h;

	(void)arg;
	*guid = d->guid;
	*nports = d->nports;
	return 0;
}

static inline int fx_qport(void *arg, void *h, int port, struct nd_port_attr *pa)
{
	struct fx_dev *d = h;

	(void)arg;
	*pa = d->ports[port - 1].a;
	return 0;
}

static inline int fx_qgids(void *arg, void *h, struct nd_gid *out, size_t max, size_t *n)
{
	struct fx_dev *d = h;
	size_t k = 0;

	(void)arg;
	for (int j = 0; j < d->nports; j++)
		for (size_t i = 0; i < d->ports[j].ngids; i++) {
			if (k >= max)
				return -ENOMEM;
			out[k++] = d->ports[j].gids[i];
		}
	*n = k;
	return 0;
}

static inline struct nd_verbs_ops fx_ops(struct fx *f)
{
	struct nd_verbs_ops o = {fx_list, fx_open, fx_close, fx_qdev, fx_qport, fx_qgids, f};

	return o;
}

static inline int fx_compare_links(const void *a, const void *b)
{
	const struct nd_link *x = a, *y = b;

	return x->ifindex - y->ifindex;
}

/* Load NAME into a new inventory; the fake verbs state goes into *f. */
static inline struct nd_inventory *fx_load_with(const char *name, struct fx *f)
{
	struct nd_inventory *inv = calloc(1, sizeof(*inv));
	struct nd_verbs_ops ops;
	char path[PATH_MAX], line[512], *save, *kw;
	FILE *fp = fopen(fx_path(name, path, sizeof(path)), "r");

	if (!fp || !inv) {
		fprintf(stderr, "fixture %s: cannot open\n", path);
		abort();
	}
	memset(f, 0, sizeof(*f));
	inv->memlock = ND_MEMLOCK_INF;
	inv->kubernetes = 1;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\r\n")] = '\0';
		kw = strtok_r(line, " ", &save);
		if (!kw || kw[0] == '#')
			continue;
		if (!strcmp(kw, "link"))
			fx_link(inv, save);
		else if (!strcmp(kw, "dev"))
			fx_dev_line(f, save);
		else if (!strcmp(kw, "port"))
			fx_port_line(f, save);
		else if (!strcmp(kw, "gid"))
			fx_gid_line(f, save);
		else if (!strcmp(kw, "memlock"))
			inv->memlock =
			    !strcmp(save, "unlimited") ? ND_MEMLOCK_INF : strtoull(save, NULL, 0);
		else if (!strcmp(kw, "ipc_lock"))
			inv->ipc_lock = (int)strtol(save, NULL, 10);
		else if (!strcmp(kw, "kubernetes"))
			inv->kubernetes = (int)strtol(save, NULL, 10);
		else if (!strcmp(kw, "rdma_err"))
			f->list_err = (int)strtol(save, NULL, 10);
	}
	fclose(fp);
	qsort(inv->links, inv->nlinks, sizeof(*inv->links), fx_compare_links);
	ops = fx_ops(f);
	if (nd_rdma_collect(&ops, inv) != 0 || f->opens != 0)
		abort();
	return inv;
}

static inline struct nd_inventory *fx_load(const char *name)
{
	static struct fx f;

	return fx_load_with(name, &f);
}

static inline const struct nd_port *fx_port(const struct nd_inventory *inv, const char *dev,
					    int port)
{
	const struct nd_device *d = nd_dev_by_name(inv, dev);

	return d && port >= 1 && (size_t)port <= d->nports ? &d->ports[port - 1] : NULL;
}

#endif
