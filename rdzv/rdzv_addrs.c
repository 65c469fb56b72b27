/* SPDX-License-Identifier: MIT */
/*
 * rdzv_addrs.c - two pods with one secondary address (PROTOCOL.md "One address, two
 * pods"). An IPAM conflict (whereabouts after a restore, two attachments given one static
 * IP) makes the hostfile list an address twice and sends two ranks' traffic to one pod;
 * on the wire it shows as a phase 2 that sometimes passes. The coordinator has every
 * pod's own address from its JOIN, so it names the conflict at the second JOIN, whether
 * or not anything else is checked: one hash lookup per JOIN (address -> slot, open
 * addressing; an entry counts only while its slot still holds that address).
 */
#include "rdzv/rdzv_coord_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct rdzv_addrs {
	uint32_t *b; /* slot + 1, 0 empty */
	size_t mask, used;
};

int rdzv_co_addrs_init(struct rdzv_coord *co)
{
	struct rdzv_addrs *a = calloc(1, sizeof(*a));
	size_t cap = 16;

	if (!a)
		return -ENOMEM;
	while (cap < 4 * (size_t)co->world) /* two addresses a pod, at most half full */
		cap *= 2;
	a->b = calloc(cap, sizeof(*a->b));
	if (!a->b) {
		free(a);
		return -ENOMEM;
	}
	a->mask = cap - 1;
	co->addrs = a;
	return 0;
}

void rdzv_co_addrs_free(struct rdzv_coord *co)
{
	if (!co->addrs)
		return;
	free(co->addrs->b);
	free(co->addrs);
	co->addrs = NULL;
}

static size_t hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a: addresses are short, validated text */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int holds(const struct rdzv_peer *t, const char *addr)
{
	return strcmp(t->addr4, addr) == 0 || strcmp(t->addr6, addr) == 0;
}

/* The slot whose entry holds addr, or -1; *at: its bucket, or where addr would go. */
static long lookup(const struct rdzv_coord *co, const char *addr, size_t *at)
{
	const struct rdzv_addrs *a = co->addrs;
	size_t k = hash(addr) & a->mask;
	uint32_t e;

	while ((e = a->b[k]) != 0) {
		if (e - 1 < co->world && holds(&co->tab[e - 1], addr))
			break;
		k = (k + 1) & a->mask;
	}
	*at = k;
	return e ? (long)(e - 1) : -1;
}

static void put(struct rdzv_coord *co, const char *addr, uint32_t slot)
{
	size_t k;

	if (lookup(co, addr, &k) < 0) /* else the same key moves to the new holder */
		co->addrs->used++;
	co->addrs->b[k] = slot + 1;
}

/* Stale entries (slots that rejoined with other addresses) only lengthen the chains:
 * rebuilt from the table when half the buckets are used. */
static void rebuild(struct rdzv_coord *co)
{
	struct rdzv_addrs *a = co->addrs;
	uint32_t i;

	memset(a->b, 0, (a->mask + 1) * sizeof(*a->b));
	a->used = 0;
	for (i = 0; i < co->world; i++) {
		if (i && !co->st[i].joined)
			continue;
		if (co->tab[i].addr4[0])
			put(co, co->tab[i].addr4, i);
		if (co->tab[i].addr6[0])
			put(co, co->tab[i].addr6, i);
	}
}

void rdzv_co_addrs_claim(struct rdzv_coord *co, uint32_t slot)
{
	const struct rdzv_peer *t = &co->tab[slot];

	if (!co->addrs || slot >= co->world)
		return;
	if (co->addrs->used + 2 > (co->addrs->mask + 1) / 2)
		rebuild(co);
	if (t->addr4[0])
		put(co, t->addr4, slot);
	if (t->addr6[0])
		put(co, t->addr6, slot);
}

/* 1 when addr is one of this host's (a socket binds to it), loopback included. */
static int local_addr(const char *addr)
{
	union gx_sockaddr sa;
	socklen_t len;
	int fd, ok;

	if (gx_addr_is_loopback(addr))
		return 1;
	if (gx_addr_parse(addr, 0, &sa, &len) < 0)
		return 0;
	fd = socket(sa.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ok = fd >= 0 && bind(fd, &sa.sa, len) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * One host (hostNetwork pods of a node, the pods of a benchmark on loopback) shares its
 * addresses legitimately: the other pod is on our host when its JOIN came from the address
 * this one came from (members), or this one came from one of our own addresses (the
 * coordinator's). Asked only when an address is taken already.
 */
static int same_host(const struct rdzv_coord *co, long other, const struct cconn *cc)
{
	if (other)
		return strcmp(co->tab[other].primary, cc->rc.peer_str) == 0;
	return cc->rc.f.carried ? 1 : local_addr(cc->rc.peer_str); /* carried: not accused */
}

int rdzv_co_addrs_check(struct rdzv_coord *co, uint32_t slot, const struct rdzv_peer *p,
			const struct cconn *cc, char *why, size_t len)
{
	const char *addrs[2] = {p->addr4, p->addr6};
	size_t empty;
	long s;
	int k;

	if (!co->addrs || slot >= co->world)
		return 0;
	for (k = 0; k < 2; k++) {
		if (!addrs[k][0])
			continue;
		s = lookup(co, addrs[k], &empty);
		/* another pod that is live now: the coordinator, or one with a session */
		if (s < 0 || (uint32_t)s == slot || (s && !co->st[s].conn) || same_host(co, s, cc))
			continue;
		snprintf(why, len,
			 "%s and %s both have %s on %s: two pods with one secondary address (an "
			 "IPAM conflict: a restored or duplicated allocation, two attachments with "
			 "one static IP) would run two ranks on one address",
			 (uint32_t)s < slot ? co->tab[s].name : p->name,
			 (uint32_t)s < slot ? p->name : co->tab[s].name, addrs[k],
			 p->iface[0] ? p->iface : "the secondary");
		return GX_ECONFLICT;
	}
	return 0;
}
