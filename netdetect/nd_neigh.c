/* SPDX-License-Identifier: MIT */
/*
 * nd_neigh.c - why a pair failed at layer 2: the kernel's neighbour entry of the next hop
 * (RTM_GETNEIGH through libnl-route's neighbour cache, as `ip neigh show`). A probe that
 * timed out against an entry in FAILED or INCOMPLETE never had an ARP (IPv4) or ND (IPv6)
 * answer: the peer's link, its VLAN, or a neighbour table that dropped resolutions (the
 * node's table is shared by every pod on it: README.md "Layer 2").
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <linux/neighbour.h>
#include <netlink/netlink.h>
#include <netlink/route/neighbour.h>
#include <stdio.h>
#include <string.h>

int nd_neigh_state(int ifindex, const char *addr, int *state)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_cache *cache = NULL;
	struct nl_addr *a = NULL;
	struct rtnl_neigh *ne = NULL;
	char err[128];
	int rc;

	*state = 0;
	if (!sk)
		return -ENOMEM;
	rc = nl_connect(sk, NETLINK_ROUTE);
	if (rc == 0)
		rc = rtnl_neigh_alloc_cache(sk, &cache);
	if (rc == 0)
		rc = nl_addr_parse(addr, strchr(addr, ':') ? AF_INET6 : AF_INET, &a);
	if (rc < 0) {
		rc = nd_nl_err(rc, "neighbours", err, sizeof(err));
		goto out;
	}
	ne = rtnl_neigh_get(cache, ifindex, a);
	if (!ne) {
		rc = -ENOENT;
		goto out;
	}
	*state = rtnl_neigh_get_state(ne);
	rtnl_neigh_put(ne);
out:
	nl_addr_put(a);
	nl_cache_free(cache);
	nl_socket_free(sk);
	return rc;
}

int nd_neigh_why(int ifindex, const char *addr, char *why, size_t len)
{
	int state = 0;

	if (nd_neigh_state(ifindex, addr, &state) < 0 || !(state & (NUD_FAILED | NUD_INCOMPLETE)))
		return 0;
	snprintf(why, len, "no %s answer from %s", strchr(addr, ':') ? "ND" : "ARP", addr);
	return 1;
}
