/* SPDX-License-Identifier: MIT */
/*
 * nd_links.c - links (with their flags, master and veth peer), addresses and
 * default routes through libnl-route-3: one dump each into libnl caches
 * (README.md "Netlink"). libnl's negative NLE_* codes collide with errno
 * values, so they are translated here and nowhere else.
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum {
	ND_OPER_UNKNOWN = 0,
	ND_OPER_NOTPRESENT = 1,
	ND_OPER_DOWN = 2,
	ND_OPER_LOWERLAYERDOWN = 3,
	ND_OPER_UP = 6,
};

/* The boundary: NLE_* (positive numbers, returned negated) to -errno / GX_ENETLINK. */
int nd_nl_err(int nle, const char *what, char *err, size_t errlen)
{
	int e = nle < 0 ? -nle : nle;

	if (e == NLE_NOMEM)
		return -ENOMEM;
	snprintf(err, errlen, "netlink %s: %s", what, nl_geterror(e));
	if (e == NLE_PERM || e == NLE_NOACCESS)
		return -EPERM;
	return GX_ENETLINK;
}

static int nd_link_cmp(const void *a, const void *b)
{
	const struct nd_link *x = a, *y = b;

	return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

const struct nd_link *nd_link_by_index(const struct nd_inventory *inv, int ifindex)
{
	struct nd_link key;

	if (!inv->nlinks)
		return NULL;
	key.ifindex = ifindex;
	return bsearch(&key, inv->links, inv->nlinks, sizeof(key), nd_link_cmp);
}

const struct nd_link *nd_link_by_name(const struct nd_inventory *inv, const char *name)
{
	size_t i;

	for (i = 0; i < inv->nlinks; i++)
		if (strcmp(inv->links[i].name, name) == 0)
			return &inv->links[i];
	return NULL;
}

const struct nd_addr *nd_link_global(const struct nd_link *l, int family)
{
	size_t i;

	for (i = 0; i < l->naddrs; i++)
		if (l->addrs[i].family == family && l->addrs[i].scope == 0)
			return &l->addrs[i];
	return NULL;
}

int nd_link_is_up(const struct nd_link *l, const char **why)
{
	const char *w = NULL;

	if (!l->admin_up)
		w = "down (administratively)";
	else if (!l->carrier && !l->is_loopback)
		w = "down (no carrier)";
	else if (l->operstate == ND_OPER_DOWN || l->operstate == ND_OPER_LOWERLAYERDOWN ||
		 l->operstate == ND_OPER_NOTPRESENT)
		w = "down (operstate)";
	if (why)
		*why = w;
	return w == NULL;
}

/* Ethtool link speed in Mb/s, -1 when unknown (virtual links, no permission). */
static int nd_link_speed(int fd, const char *name)
{
	struct ethtool_cmd cmd;
	struct ifreq ifr;
	uint32_t speed;

	memset(&cmd, 0, sizeof(cmd));
	memset(&ifr, 0, sizeof(ifr));
	cmd.cmd = ETHTOOL_GSET;
	gx_strlcpy(ifr.ifr_name, name, sizeof(ifr.ifr_name));
	ifr.ifr_data = (void *)&cmd;
	if (fd < 0 || ioctl(fd, SIOCETHTOOL, &ifr) < 0)
		return -1;
	speed =
	    ((uint32_t)cmd.speed_hi << 16) | cmd.speed; /* not ethtool_cmd_speed(): int shift UB */
	if (speed == 0 || speed == (uint32_t)SPEED_UNKNOWN || speed > 10000000)
		return -1;
	return (int)speed;
}

static void nd_fill_lladdr(struct nd_link *l, struct nl_addr *a)
{
	const unsigned char *b;
	unsigned int n, i;
	size_t off = 0;

	l->mac[0] = '\0';
	if (!a)
		return;
	n = nl_addr_get_len(a);
	b = nl_addr_get_binary_addr(a);
	if (n > sizeof(l->lladdr))
		n = sizeof(l->lladdr);
	memcpy(l->lladdr, b, n);
	l->lladdr_len = (int)n;
	for (i = 0; i < n && off + 4 <= sizeof(l->mac); i++)
		off += (size_t)snprintf(l->mac + off, sizeof(l->mac) - off, "%s%02x", i ? ":" : "",
					b[i]);
}

/*
 * A veth (or netkit) pair whose two ends are both here: the kernel names the peer's
 * namespace (IFLA_LINK_NETNSID) only when it is another one. cilium_host/cilium_net are
 * such a pair; a pod's eth0 and a node's pod-facing host ends are not.
 */
static int nd_peer_here(struct rtnl_link *rl, const char *kind)
{
	int32_t nsid;

	if (!kind || (strcmp(kind, "veth") != 0 && strcmp(kind, "netkit") != 0))
		return 0;
	return rtnl_link_get_link(rl) > 0 && rtnl_link_get_link_netnsid(rl, &nsid) < 0;
}

static void nd_fill_link(struct nd_link *l, struct rtnl_link *rl, int fd)
{
	const char *kind = rtnl_link_get_type(rl);
	unsigned int flags = rtnl_link_get_flags(rl);

	memset(l, 0, sizeof(*l));
	gx_strlcpy(l->name, rtnl_link_get_name(rl) ? rtnl_link_get_name(rl) : "?", sizeof(l->name));
	l->ifindex = rtnl_link_get_ifindex(rl);
	l->flags = flags;
	l->master = rtnl_link_get_master(rl);
	l->peer_here = nd_peer_here(rl, kind);
	l->admin_up = !!(flags & IFF_UP);
	l->is_loopback = !!(flags & IFF_LOOPBACK);
	l->carrier = rtnl_link_get_carrier(rl) ? 1 : 0;
	l->operstate = rtnl_link_get_operstate(rl);
	l->mtu = (int)rtnl_link_get_mtu(rl);
	l->arptype = (int)rtnl_link_get_arptype(rl);
	nd_fill_lladdr(l, rtnl_link_get_addr(rl));
	if (kind)
		gx_strlcpy(l->kind, kind, sizeof(l->kind));
	else if (l->is_loopback)
		gx_strlcpy(l->kind, "loopback", sizeof(l->kind));
	else if (l->arptype == ND_ARPHRD_INFINIBAND)
		gx_strlcpy(l->kind, "ipoib", sizeof(l->kind));
	else
		gx_strlcpy(l->kind, "physical", sizeof(l->kind));
	l->speed_mbps = (l->admin_up && !l->is_loopback) ? nd_link_speed(fd, l->name) : -1;
}

static int nd_add_links(struct nd_inventory *inv, struct nl_cache *cache)
{
	struct nl_object *o;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int n = nl_cache_nitems(cache), rc = 0;

	if (n > ND_MAX_LINKS)
		n = ND_MAX_LINKS;
	inv->links = calloc(n > 0 ? (size_t)n : 1, sizeof(*inv->links));
	if (!inv->links) {
		rc = -ENOMEM;
		goto out;
	}
	for (o = nl_cache_get_first(cache); o && inv->nlinks < (size_t)n; o = nl_cache_get_next(o))
		nd_fill_link(&inv->links[inv->nlinks++], (struct rtnl_link *)o, fd);
	qsort(inv->links, inv->nlinks, sizeof(*inv->links), nd_link_cmp);
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

static int nd_add_addr(struct nd_inventory *inv, struct rtnl_addr *ra)
{
	struct nd_link *l = (struct nd_link *)nd_link_by_index(inv, rtnl_addr_get_ifindex(ra));
	struct nl_addr *loc = rtnl_addr_get_local(ra);
	struct nd_addr *a, *grown;
	int fam = rtnl_addr_get_family(ra);
	unsigned int blen;

	if (!l || !loc || (fam != AF_INET && fam != AF_INET6))
		return 0;
	blen = nl_addr_get_len(loc);
	if (blen != (fam == AF_INET ? 4u : 16u) || l->naddrs >= 256)
		return 0;
	grown = realloc(l->addrs, (l->naddrs + 1) * sizeof(*l->addrs));
	if (!grown)
		return -ENOMEM;
	l->addrs = grown;
	a = &l->addrs[l->naddrs++];
	memset(a, 0, sizeof(*a));
	a->family = fam;
	a->prefixlen = rtnl_addr_get_prefixlen(ra);
	a->scope = rtnl_addr_get_scope(ra);
	memcpy(a->a, nl_addr_get_binary_addr(loc), blen);
	inet_ntop(fam, a->a, a->str, sizeof(a->str));
	return 0;
}

static void nd_mark_default(struct nd_inventory *inv, struct rtnl_route *rt)
{
	struct nl_addr *dst = rtnl_route_get_dst(rt);
	struct rtnl_nexthop *nh;
	struct nd_link *l;
	int i;

	if (rtnl_route_get_table(rt) != RT_TABLE_MAIN || rtnl_route_get_type(rt) != RTN_UNICAST)
		return;
	if (dst && nl_addr_get_prefixlen(dst) != 0)
		return;
	for (i = 0; i < rtnl_route_get_nnexthops(rt); i++) {
		nh = rtnl_route_nexthop_n(rt, i);
		l = nh ? (struct nd_link *)nd_link_by_index(inv, rtnl_route_nh_get_ifindex(nh))
		       : NULL;
		if (l)
			l->is_default = 1;
	}
}

static int nd_walk_addrs_routes(struct nd_inventory *inv, struct nl_cache *ac, struct nl_cache *rc)
{
	struct nl_object *o;
	int ret = 0;

	for (o = nl_cache_get_first(ac); o && ret == 0; o = nl_cache_get_next(o))
		ret = nd_add_addr(inv, (struct rtnl_addr *)o);
	for (o = nl_cache_get_first(rc); o; o = nl_cache_get_next(o))
		nd_mark_default(inv, (struct rtnl_route *)o);
	return ret;
}

int nd_links_collect(struct nd_inventory *inv, char *err, size_t errlen)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_cache *lc = NULL, *ac = NULL, *rc = NULL;
	int ret;

	if (!sk) {
		ret = -ENOMEM;
		goto out;
	}
	ret = nl_connect(sk, NETLINK_ROUTE);
	if (ret < 0) {
		ret = nd_nl_err(ret, "connect", err, errlen);
		goto out;
	}
	if ((ret = rtnl_link_alloc_cache(sk, AF_UNSPEC, &lc)) < 0 ||
	    (ret = rtnl_addr_alloc_cache(sk, &ac)) < 0 ||
	    (ret = rtnl_route_alloc_cache(sk, AF_UNSPEC, 0, &rc)) < 0) {
		ret = nd_nl_err(ret, "dump", err, errlen);
		goto out;
	}
	ret = nd_add_links(inv, lc);
	if (ret == 0)
		ret = nd_walk_addrs_routes(inv, ac, rc);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "netlink: out of memory");
out:
	if (rc)
		nl_cache_free(rc);
	if (ac)
		nl_cache_free(ac);
	if (lc)
		nl_cache_free(lc);
	if (sk)
		nl_socket_free(sk);
	return ret;
}

const char *nd_operstate_str(int op)
{
	static const char *const names[] = {"unknown", "notpresent", "down", "lowerlayerdown",
					    "testing", "dormant",    "up"};

	if (op < 0 || op > ND_OPER_UP)
		return "unknown";
	return names[op];
}

int nd_addr_on_local_iface(const char *ip)
{
	unsigned char want[16], have[16];
	struct ifaddrs *ifa = NULL, *i;
	int fam = strchr(ip, ':') ? AF_INET6 : AF_INET, found = 0;
	size_t n = fam == AF_INET ? 4 : 16;

	if (inet_pton(fam, ip, want) != 1)
		return -EINVAL;
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != fam)
			continue;
		if (fam == AF_INET)
			memcpy(have, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, 4);
		else
			memcpy(have, &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr, 16);
		found = memcmp(have, want, n) == 0;
	}
	freeifaddrs(ifa);
	return found;
}
