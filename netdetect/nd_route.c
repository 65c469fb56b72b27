/* SPDX-License-Identifier: MIT */
/*
 * nd_route.c - ask the kernel where a packet will go: RTM_GETROUTE "to DST from SRC", the
 * question `ip route get DST from SRC` asks (iproute2), through libnl-route.
 *
 * Why: Linux is a weak-host kernel. A socket bound only to the secondary address leaves
 * through whatever interface the routing table names for the destination, and NCCL's,
 * Gloo's and MPI's sockets are bound to an address at most. So the path a job will take is
 * the route, not the address: the rendezvous asks this before it calls a path verified
 * (README.md "The path check").
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/route.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nd_routes {
	struct nl_sock *sk;
};

int nd_routes_open(struct nd_routes **ret)
{
	struct nd_routes *rt = calloc(1, sizeof(*rt));
	char err[128];
	int rc;

	if (!rt)
		return -ENOMEM;
	rt->sk = nl_socket_alloc();
	if (!rt->sk) {
		free(rt);
		return -ENOMEM;
	}
	/* the answer is the route or an error: an ACK besides would wait in the socket and be
	 * read as the next question's answer */
	nl_socket_disable_auto_ack(rt->sk);
	rc = nl_connect(rt->sk, NETLINK_ROUTE);
	if (rc < 0) {
		rc = nd_nl_err(rc, "connect", err, sizeof(err));
		nd_routes_close(rt);
		return rc;
	}
	*ret = rt;
	return 0;
}

void nd_routes_close(struct nd_routes *rt)
{
	if (!rt)
		return;
	if (rt->sk)
		nl_socket_free(rt->sk);
	free(rt);
}

static void nl_addr_text(struct nl_addr *a, char *buf, size_t len)
{
	buf[0] = '\0';
	if (!a || nl_addr_get_len(a) == 0)
		return;
	if (!inet_ntop(nl_addr_get_family(a), nl_addr_get_binary_addr(a), buf, (socklen_t)len))
		buf[0] = '\0';
}

/* The one answer: the first nexthop's interface and gateway. */
static int on_route(struct nl_msg *msg, void *arg)
{
	struct nd_route *out = arg;
	struct rtnl_route *r = NULL;
	struct rtnl_nexthop *nh;

	if (rtnl_route_parse(nlmsg_hdr(msg), &r) < 0 || !r)
		return NL_SKIP;
	out->type = rtnl_route_get_type(r);
	nl_addr_text(rtnl_route_get_pref_src(r), out->prefsrc, sizeof(out->prefsrc));
	nh = rtnl_route_get_nnexthops(r) > 0 ? rtnl_route_nexthop_n(r, 0) : NULL;
	if (nh) {
		out->ifindex = rtnl_route_nh_get_ifindex(nh);
		nl_addr_text(rtnl_route_nh_get_gateway(nh), out->gateway, sizeof(out->gateway));
	}
	if (out->ifindex <= 0 || !if_indextoname((unsigned)out->ifindex, out->oif))
		snprintf(out->oif, sizeof(out->oif), "if%d", out->ifindex);
	rtnl_route_put(r);
	out->answered = 1;
	return NL_OK;
}

int nd_routes_get(struct nd_routes *rt, const char *src, const char *dst, struct nd_route *out)
{
	struct rtmsg rtm;
	struct nl_msg *msg = NULL;
	unsigned char s[16], d[16];
	int fam = strchr(dst, ':') ? AF_INET6 : AF_INET, alen = fam == AF_INET ? 4 : 16;
	char err[128];
	int rc;

	memset(out, 0, sizeof(*out));
	if (inet_pton(fam, dst, d) != 1 || (src && inet_pton(fam, src, s) != 1))
		return -EINVAL;
	memset(&rtm, 0, sizeof(rtm));
	rtm.rtm_family = (unsigned char)fam;
	rtm.rtm_dst_len = (unsigned char)(alen * 8);
	rtm.rtm_src_len = src ? (unsigned char)(alen * 8) : 0;
	msg = nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_REQUEST);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 ||
	    nla_put(msg, RTA_DST, alen, d) < 0 || (src && nla_put(msg, RTA_SRC, alen, s) < 0)) {
		rc = -ENOMEM;
		goto out;
	}
	rc = nl_socket_modify_cb(rt->sk, NL_CB_VALID, NL_CB_CUSTOM, on_route, out);
	if (rc >= 0)
		rc = nl_send_auto(rt->sk, msg);
	if (rc >= 0)
		rc = nl_recvmsgs_default(rt->sk);
	/* libnl folds the kernel's errno into NLE_*: ENETUNREACH and EHOSTUNREACH become
	 * NLE_FAILURE, a source that is not ours (EINVAL) NLE_INVAL */
	if (rc == -NLE_NOADDR)
		rc = -EADDRNOTAVAIL;
	else if (rc == -NLE_FAILURE || rc == -NLE_OBJ_NOTFOUND)
		rc = -ENETUNREACH;
	else if (rc == -NLE_INVAL)
		rc = -EINVAL;
	else if (rc < 0)
		rc = nd_nl_err(rc, "route get", err, sizeof(err));
	else
		rc = out->answered ? 0 : -ENETUNREACH;
out:
	nlmsg_free(msg);
	return rc;
}

/* "192.168.66.0/24" for addr in its plen-bit prefix; addr itself when plen is unknown. */
static void prefix_text(const char *addr, int plen, char *buf, size_t len)
{
	unsigned char a[16];
	int fam = strchr(addr, ':') ? AF_INET6 : AF_INET, bits = fam == AF_INET ? 32 : 128, k;
	char net[INET6_ADDRSTRLEN];

	if (plen <= 0 || plen > bits || inet_pton(fam, addr, a) != 1) {
		snprintf(buf, len, "%s", addr);
		return;
	}
	for (k = 0; k < bits / 8; k++) {
		int keep = plen - k * 8;

		a[k] &= keep >= 8 ? 0xff : keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
	}
	inet_ntop(fam, a, net, sizeof(net));
	snprintf(buf, len, "%s/%d", net, plen);
}

void nd_route_why(const struct nd_route *rt, const char *src, const char *dst, int dst_plen,
		  const char *iface, const char *overlap, char *why, size_t len)
{
	char net[INET6_ADDRSTRLEN + 4];

	prefix_text(dst, dst_plen, net, sizeof(net));
	/* an overlap is the reason when there is one: the attachment has the route then, and
	 * the primary's wins */
	if (overlap && overlap[0])
		snprintf(why, len, "the kernel routes %s from %s %s%s%sdev %s, not through %s: %s",
			 dst, src, rt->gateway[0] ? "via " : "", rt->gateway,
			 rt->gateway[0] ? " " : "", rt->oif, iface, overlap);
	else
		snprintf(
		    why, len,
		    "the kernel routes %s from %s %s%s%sdev %s: its %s attachment has no route "
		    "to %s",
		    dst, src, rt->gateway[0] ? "via " : "", rt->gateway, rt->gateway[0] ? " " : "",
		    rt->oif, iface, net);
}

int nd_route_check(struct nd_routes *rt, const char *src, const char *dst, int dst_plen,
		   const char *iface, const char *overlap, char *why, size_t len)
{
	struct nd_route r;
	int rc = nd_routes_get(rt, src, dst, &r);

	if (rc < 0) {
		snprintf(why, len, "the kernel has no route to %s from %s (%s)", dst, src,
			 gx_strerror(rc));
		return GX_EROUTE;
	}
	/* one of this host's own addresses (hostNetwork pods of one node): it never leaves */
	if (r.type == RTN_LOCAL || strcmp(r.oif, iface) == 0)
		return 0;
	nd_route_why(&r, src, dst, dst_plen, iface, overlap, why, len);
	return GX_EROUTE;
}
