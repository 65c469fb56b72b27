/* SPDX-License-Identifier: MIT */
/*
 * fabric_net.c - which network a connection of CMD's uses: its local address names the
 * interface (getifaddrs: the pod's addresses now), the interface's role (the bootstrap
 * interface and the rails' netdevs are the secondary network; an interface holding a
 * default route is the primary one), and its remote address names the peer when this pod
 * knows it (the coordinator knows every pod's addresses; a member the coordinator's and its
 * own, every pod's with --full-table or a launcher; FABRIC.md "Who knows which peers").
 */
#include "agent/fabric/fabric_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Interfaces holding a default route (IPv4 /proc/net/route, IPv6 /proc/net/ipv6_route). */
static int default_route_if(const char *ifname)
{
	char line[256], name[32], dst[64], mask[64];
	int found = 0, plen;
	FILE *f;

	f = fopen("/proc/net/route", "re");
	if (f) {
		while (!found && fgets(line, sizeof(line), f))
			found = sscanf(line, "%31s %63s %*s %*s %*s %*s %*s %63s", name, dst,
				       mask) == 3 &&
				strcmp(dst, "00000000") == 0 && strcmp(mask, "00000000") == 0 &&
				strcmp(name, ifname) == 0;
		fclose(f);
	}
	f = found ? NULL : fopen("/proc/net/ipv6_route", "re");
	if (f) {
		while (!found && fgets(line, sizeof(line), f))
			found = sscanf(line, "%63s %x %*s %*s %*s %*s %*s %*s %*s %31s", dst,
				       (unsigned *)&plen, name) == 3 &&
				plen == 0 && strspn(dst, "0") == 32 && strcmp(name, ifname) == 0;
		fclose(f);
	}
	return found;
}

static int named(char *const *list, const char *name)
{
	for (; list && *list; list++)
		if (strcmp(*list, name) == 0)
			return 1;
	return 0;
}

static int mask_len(const struct sockaddr *m)
{
	const unsigned char *b;
	size_t n, i;
	int len = 0;

	if (!m)
		return 0;
	if (m->sa_family == AF_INET) {
		b = (const unsigned char *)&((const struct sockaddr_in *)m)->sin_addr;
		n = 4;
	} else if (m->sa_family == AF_INET6) {
		b = (const unsigned char *)&((const struct sockaddr_in6 *)m)->sin6_addr;
		n = 16;
	} else {
		return 0;
	}
	for (i = 0; i < n; i++)
		len += __builtin_popcount(b[i]);
	return len;
}

int agent_fabric_net_load(char *const *secondary, struct fabric_net *net)
{
	struct ifaddrs *ifa = NULL, *a;
	size_t n = 0;
	int rc = 0;

	memset(net, 0, sizeof(*net));
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (a = ifa; a; a = a->ifa_next)
		n++;
	net->locals = calloc(n ? n : 1, sizeof(*net->locals));
	if (!net->locals) {
		rc = -ENOMEM;
		goto out;
	}
	for (a = ifa; a; a = a->ifa_next) {
		struct fabric_local *l = &net->locals[net->nlocals];
		union gx_sockaddr sa;

		if (!a->ifa_addr ||
		    (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
			continue;
		memset(&sa, 0, sizeof(sa));
		memcpy(&sa, a->ifa_addr,
		       a->ifa_addr->sa_family == AF_INET ? sizeof(sa.in4) : sizeof(sa.in6));
		gx_addr_str(&sa, l->addr, sizeof(l->addr));
		gx_strlcpy(l->ifname, a->ifa_name, sizeof(l->ifname));
		l->family = a->ifa_addr->sa_family;
		l->prefix = mask_len(a->ifa_netmask);
		l->role = (a->ifa_flags & IFF_LOOPBACK)	  ? FI_LOOPBACK
			  : named(secondary, a->ifa_name) ? FI_SECONDARY
			  : default_route_if(a->ifa_name) ? FI_PRIMARY
							  : FI_OTHER;
		net->nlocals++;
	}
out:
	freeifaddrs(ifa);
	return rc;
}

void agent_fabric_net_free(struct fabric_net *net)
{
	free(net->locals);
	memset(net, 0, sizeof(*net));
}

const struct fabric_local *agent_fabric_net_find(const struct fabric_net *net, const char *addr)
{
	size_t i;

	for (i = 0; i < net->nlocals; i++)
		if (strcmp(net->locals[i].addr, addr) == 0)
			return &net->locals[i];
	return NULL;
}

/* The first plen bits of a and b agree. */
static int same_prefix(const unsigned char *a, const unsigned char *b, int plen)
{
	int full = plen / 8, rest = plen % 8;

	if (memcmp(a, b, (size_t)full) != 0)
		return 0;
	return !rest || ((a[full] ^ b[full]) & (0xff << (8 - rest))) == 0;
}

int agent_fabric_net_onlink(const struct fabric_net *net, const char *addr, int role)
{
	unsigned char x[16], y[16];
	int fam = strchr(addr, ':') ? AF_INET6 : AF_INET;
	size_t i;

	if (inet_pton(fam, addr, x) != 1)
		return 0;
	for (i = 0; i < net->nlocals; i++) {
		const struct fabric_local *l = &net->locals[i];

		if (l->role != role || l->family != fam || l->prefix <= 0 ||
		    inet_pton(fam, l->addr, y) != 1)
			continue;
		if (same_prefix(x, y, l->prefix))
			return 1;
	}
	return 0;
}

/* An IPv4-mapped IPv6 address as the IPv4 text (a v6 socket talking to a v4 peer). */
static const char *unmap(const char *a, char *buf, size_t len)
{
	if (strncmp(a, "::ffff:", 7) == 0 && strchr(a + 7, '.')) {
		gx_strlcpy(buf, a + 7, len);
		return buf;
	}
	return a;
}

int agent_fabric_classify(const struct fabric_net *net, const struct fabric_peer_addr *peers,
			  size_t npeers, const char *remote, const char **peer_name)
{
	char buf[FABRIC_ADDR_LEN];
	const char *r = unmap(remote, buf, sizeof(buf));
	size_t i;

	*peer_name = NULL;
	if (gx_addr_is_loopback(r) || agent_fabric_net_find(net, r))
		return FR_LOOPBACK; /* this pod talking to itself */
	for (i = 0; i < npeers; i++)
		if (strcmp(peers[i].addr, r) == 0) {
			*peer_name = peers[i].name;
			return peers[i].primary ? FR_PRIMARY : FR_SECONDARY;
		}
	/* a member without the table: the secondary network is the job's */
	if (agent_fabric_net_onlink(net, r, FI_SECONDARY))
		return FR_SECONDARY;
	return FR_OTHER;
}
