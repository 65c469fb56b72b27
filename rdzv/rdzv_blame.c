/* SPDX-License-Identifier: MIT */
/*
 * rdzv_blame.c - whom the coordinator's final line names when members cannot reach it on
 * the secondary network.
 *
 * A member's own failure (its route, its address family: a final VFAIL) ends the job, but
 * not at the first one: when the coordinator's own attachment is the odd one (its net1 in
 * another subnet than everybody else's), every member fails, and the first to say so is a
 * healthy pod. So the coordinator waits until every member has joined and either verified
 * or failed, or RDZV_BLAME_WAIT_MS after the first failure, and then names the coordinator
 * when two or more members failed, none verified, and its secondary address lies outside
 * the subnet of every one that failed. Otherwise the first member's own line stands.
 */
#include "rdzv/rdzv_coord_int.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is addr in the plen-bit prefix of net? (plen 0: unknown, never) */
static int in_prefix(const char *addr, const char *net, int plen)
{
	unsigned char a[16], n[16];
	int fam = strchr(net, ':') ? AF_INET6 : AF_INET, k;

	if (plen <= 0 || !addr[0] || inet_pton(fam, addr, a) != 1 || inet_pton(fam, net, n) != 1)
		return 0;
	for (k = 0; plen >= 8; k++, plen -= 8)
		if (a[k] != n[k])
			return 0;
	return plen == 0 || ((a[k] ^ n[k]) & (0xff << (8 - plen)) & 0xff) == 0;
}

int rdzv_co_coord_odd(struct rdzv_coord *co, const uint8_t *failed, char *out, size_t len)
{
	const struct rdzv_peer *c = &co->tab[0];
	const char *master = co->res.master_addr;
	int v6 = strchr(master, ':') != NULL, plen = v6 ? c->plen6 : c->plen4;
	char list[600] = "";
	struct rdzv_list l = {.out = list, .cap = sizeof(list)};
	uint32_t i, nfail = 0;

	for (i = 1; i < co->world; i++) {
		const struct rdzv_peer *p = &co->tab[i];
		const char *a = rdzv_peer_addr(p, master);

		if (co->st[i].verified && !(p->flags & RDZV_PF_VFAILED))
			return 0; /* one member reached it: the coordinator's side works */
		if (!failed[i])
			continue;
		/* a member inside the coordinator's subnet that failed too: not the subnet */
		if (!plen || in_prefix(a, master, plen))
			return 0;
		rdzv_list_add(&l, "%s %s/%d", p->name, a, v6 ? p->plen6 : p->plen4);
		nfail++;
	}
	rdzv_list_end(&l);
	if (nfail < 2)
		return 0;
	snprintf(out, len,
		 "%s (the coordinator): its %s address %s/%d is outside the subnet of every "
		 "member that failed to reach it (%s): its secondary attachment is the one to fix",
		 c->name, c->iface, master, plen, list);
	return 1;
}

/* The members that failed for good, and whether anyone is still on its way. */
static int final_set(struct rdzv_coord *co, uint8_t *failed, uint32_t *first)
{
	uint32_t i;
	int pending = 0;

	*first = 0;
	for (i = 1; i < co->world; i++) {
		const struct cpeer *sp = &co->st[i];

		failed[i] = sp->final;
		if (sp->final && !*first)
			*first = i;
		pending |= !sp->final && !sp->verified;
	}
	return pending;
}

void rdzv_co_blame_due(struct rdzv_coord *co, int64_t now)
{
	uint8_t *failed;
	uint32_t first;
	char line[sizeof(co->res.err)];
	int pending;

	if (!co->nfinal || co->aborted || co->committed)
		return;
	failed = calloc(co->world, 1);
	if (!failed) {
		rdzv_co_abort(co, GX_ERDZV, 1, "out of memory naming a failed peer");
		return;
	}
	pending = final_set(co, failed, &first);
	if (pending && now < co->blame_at) {
		free(failed);
		return;
	}
	if (rdzv_co_coord_odd(co, failed, line, sizeof(line)))
		rdzv_co_abort(co, GX_ERDZV, 1, "%s", line);
	else
		rdzv_co_abort(co, GX_ERDZV, 1, "%s", co->st[first].note ? co->st[first].note : "");
	free(failed);
}

void rdzv_co_final_fail(struct rdzv_coord *co, uint32_t i, const char *why)
{
	struct cpeer *sp = &co->st[i];

	(void)why; /* already the slot's note */
	if (sp->final)
		return;
	sp->final = 1;
	if (!co->nfinal++)
		co->blame_at = gx_now_ms() + RDZV_BLAME_WAIT_MS;
	rdzv_co_blame_due(co, gx_now_ms());
}
