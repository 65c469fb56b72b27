/* SPDX-License-Identifier: MIT */
/*
 * check_rails.c - `gxboot check --rails`: every peer's rails come
 * from its JOIN (rdzv_peer.rails, "dev:port/netdev/addr,..."; a netdev rail
 * without RDMA device is ":0/net2/10.0.2.5"). Rails are matched across pods
 * by name (the netdev, else "dev:port"): rail net3 of one pod is probed
 * against rail net3 of every other pod, so a rail missing on one pod does
 * not shift the others. This file: parsing those lists, the rail set of the
 * world, the per-rail matrices and which pod's rail is broken.
 * Wire and phases: agent/check/CHECK.md "Rails".
 */
#include "agent/check/check_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bounded copy of s[0..n) into buf; -EINVAL when it does not fit. */
static int take(char *buf, size_t len, const char *s, size_t n)
{
	if (n >= len)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 0;
}

/* "dev:port" part: dev "" for a netdev rail. */
static int parse_devport(const char *s, size_t n, struct check_rail *out)
{
	const char *colon = memchr(s, ':', n);
	char port[8];
	long p = 0;

	if (!colon || take(out->dev, sizeof(out->dev), s, (size_t)(colon - s)) < 0 ||
	    take(port, sizeof(port), colon + 1, n - (size_t)(colon - s) - 1) < 0 ||
	    gx_parse_long(port, 0, 255, &p) < 0)
		return -EINVAL;
	if (out->dev[0] && !gx_valid_rdmadev(out->dev))
		return -EINVAL;
	out->port = (int)p;
	return 0;
}

/* One item "dev:port/netdev/addr" of n bytes. */
static int parse_item(const char *s, size_t n, struct check_rail *out)
{
	const char *s1 = memchr(s, '/', n), *s2;
	union gx_sockaddr sa;
	socklen_t sl;

	memset(out, 0, sizeof(*out));
	s2 = s1 ? memchr(s1 + 1, '/', n - (size_t)(s1 - s) - 1) : NULL;
	if (!s2 || parse_devport(s, (size_t)(s1 - s), out) < 0 ||
	    take(out->iface, sizeof(out->iface), s1 + 1, (size_t)(s2 - s1 - 1)) < 0 ||
	    take(out->addr, sizeof(out->addr), s2 + 1, n - (size_t)(s2 - s) - 1) < 0)
		return -EINVAL;
	if ((out->iface[0] && !gx_valid_ifname(out->iface)) ||
	    (out->addr[0] && gx_addr_parse(out->addr, 0, &sa, &sl) < 0))
		return -EINVAL;
	if (out->iface[0])
		gx_strlcpy(out->name, out->iface, sizeof(out->name));
	else if (out->dev[0])
		snprintf(out->name, sizeof(out->name), "%s:%d", out->dev, out->port);
	else
		return -EINVAL;
	return 0;
}

int agent_check_rails_item(const char *text, size_t k, struct check_rail *out)
{
	const char *p = text, *comma;
	size_t i;

	if (!text || !*text)
		return -ENOENT;
	for (i = 0; i < k; i++) {
		p = strchr(p, ',');
		if (!p)
			return -ENOENT;
		p++;
	}
	comma = strchr(p, ',');
	return parse_item(p, comma ? (size_t)(comma - p) : strlen(p), out);
}

int agent_check_rails_find(const char *text, const char *name, struct check_rail *out)
{
	size_t k;
	int rc;

	for (k = 0; k < 4 * CHECK_MAX_RAILS; k++) {
		rc = agent_check_rails_item(text, k, out);
		if (rc == -ENOENT)
			break;
		if (rc == 0 && strcmp(out->name, name) == 0)
			return 0;
	}
	return -ENOENT;
}

int agent_check_rail_peer(const struct rdzv_peer *src, const char *name, struct rdzv_peer *out)
{
	struct check_rail r;

	if (agent_check_rails_find(src->rails, name, &r) < 0 || !r.dev[0] || !r.addr[0])
		return -ENOENT;
	*out = *src;
	out->addr4[0] = out->addr6[0] = '\0';
	if (strchr(r.addr, ':'))
		gx_strlcpy(out->addr6, r.addr, sizeof(out->addr6));
	else
		gx_strlcpy(out->addr4, r.addr, sizeof(out->addr4));
	gx_strlcpy(out->iface, r.iface, sizeof(out->iface));
	gx_strlcpy(out->rdma_dev, r.dev, sizeof(out->rdma_dev));
	out->rdma_port = r.port;
	out->gid_index = -1;
	return 0;
}

/* Names: netdevs or "dev:port" (letters, digits, "_-.:"). */
static int name_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("_-.:", s[i])))
			return 0;
	return i > 0 && i < CHECK_RAIL_NAME;
}

int agent_check_rail_index(struct check_world *w, const char *name)
{
	uint32_t k;

	if (!name_ok(name))
		return -EINVAL;
	for (k = 0; k < w->nrails; k++)
		if (strcmp(w->rails[k], name) == 0)
			return (int)k + 1;
	if (w->nrails == CHECK_MAX_RAILS)
		return -E2BIG;
	gx_strlcpy(w->rails[w->nrails++], name, sizeof(w->rails[0]));
	return (int)w->nrails;
}

const char *agent_check_rail_name(const struct check_world *w, int rail)
{
	if (rail <= 0 || (uint32_t)rail > w->nrails)
		return "";
	return w->rails[rail - 1];
}

static int rail_cmp(const void *a, const void *b)
{
	return strverscmp(a, b);
}

int agent_check_rails_plan(struct check_world *w, const struct rdzv_peer *table, uint32_t n)
{
	struct check_rail r;
	uint32_t i;
	size_t k;
	int rc;

	w->nrails = 0;
	for (i = 0; i < n; i++) {
		for (k = 0; k < 4 * CHECK_MAX_RAILS; k++) {
			rc = agent_check_rails_item(table[i].rails, k, &r);
			if (rc == -ENOENT)
				break;
			if (rc < 0)
				continue;
			if (agent_check_rail_index(w, r.name) == -E2BIG)
				gx_debug("check: more than %d rails; %s not probed",
					 CHECK_MAX_RAILS, r.name);
		}
	}
	qsort(w->rails, w->nrails, sizeof(w->rails[0]), rail_cmp);
	return (int)w->nrails;
}

void agent_check_rail_order(const struct check_world *w, int order[CHECK_MAX_RAILS])
{
	uint32_t i, j;
	int t;

	for (i = 0; i < w->nrails; i++)
		order[i] = (int)i + 1;
	for (i = 1; i < w->nrails; i++)
		for (j = i;
		     j > 0 && strverscmp(w->rails[order[j] - 1], w->rails[order[j - 1] - 1]) < 0;
		     j--) {
			t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
}

/* Failed probes of one rail: the total, and per pod the ones it takes part in. */
static size_t rail_failures(const struct check_world *w, int rail, size_t *per)
{
	size_t total = 0, k;
	uint32_t i;

	memset(per, 0, w->n * sizeof(*per));
	for (i = 0; i < w->n; i++) {
		for (k = 0; k < w->rows[i].nprobes; k++) {
			const struct check_probe *p = &w->rows[i].probes[k];

			if (p->rail != rail || p->ok || !agent_check_pair_probed(w, i, p->to))
				continue;
			total++;
			per[i]++;
			per[p->to]++;
		}
	}
	return total;
}

/*
 * The pods in more than half of the rail's failed probes, else every pod of a
 * failed probe; a pod that failed its own checks (row why) is named by the
 * caller already and left out here.
 */
static size_t name_rail(const struct check_world *w, int rail, const size_t *per, size_t total,
			char *buf, size_t len, size_t *off)
{
	size_t named = 0;
	uint32_t i;
	int majority = 0;

	for (i = 0; i < w->n; i++)
		majority |= 2 * per[i] > total;
	for (i = 0; i < w->n; i++) {
		if (w->rows[i].why[0] || !(majority ? 2 * per[i] > total : per[i] > 0))
			continue;
		named++;
		if (*off < len)
			*off += (size_t)snprintf(buf + *off, len - *off, " %s (rail %s)",
						 w->names[i], agent_check_rail_name(w, rail));
	}
	return named;
}

size_t agent_check_rails_broken(const struct check_world *w, char *buf, size_t len)
{
	int order[CHECK_MAX_RAILS];
	size_t *per, named = 0, off = 0, total;
	uint32_t k;

	if (len)
		buf[0] = '\0';
	per = calloc(w->n, sizeof(*per));
	if (!per)
		return 0;
	agent_check_rail_order(w, order);
	for (k = 0; k < w->nrails; k++) {
		total = rail_failures(w, order[k], per);
		if (total)
			named += name_rail(w, order[k], per, total, buf, len, &off);
	}
	free(per);
	return named;
}
