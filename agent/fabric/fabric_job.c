/* SPDX-License-Identifier: MIT */
/*
 * fabric_job.c - the coordinator's job-wide line from every pod's report (the members send
 * theirs over their rendezvous session; FABRIC.md "The job-wide line"): how many pods run on
 * which verdict, how many sent peer traffic over the primary network, and which pods differ.
 */
#include "agent/fabric/fabric_int.h"

#include <stdio.h>
#include <string.h>

#define NAMES_SHOWN 8

static const char *verdict_words(int v)
{
	switch (v) {
	case FABRIC_RDMA:
		return "on RDMA";
	case FABRIC_SECONDARY:
		return "on the secondary network (TCP)";
	case FABRIC_PRIMARY:
		return "on the primary network";
	default:
		return "without evidence yet";
	}
}

/* ", job-worker-1, job-worker-3 and 5 more" of the pods that match. */
static size_t names(const struct fabric_pod *pods, size_t n,
		    int (*match)(const struct fabric_pod *, int), int arg, char *buf, size_t len)
{
	size_t i, shown = 0, total = 0, l = 0;

	for (i = 0; i < n; i++) {
		if (!match(&pods[i], arg))
			continue;
		if (shown < NAMES_SHOWN && l < len) {
			l += (size_t)snprintf(buf + l, len - l, "%s%s", shown ? ", " : "",
					      pods[i].name);
			shown++;
		}
		total++;
	}
	if (total > shown && l < len)
		l += (size_t)snprintf(buf + l, len - l, " and %zu more", total - shown);
	return l;
}

static int is_verdict(const struct fabric_pod *p, int v)
{
	return p->reported && p->s.verdict == v;
}

static int has_primary(const struct fabric_pod *p, int unused)
{
	(void)unused;
	return p->reported && (p->s.flags & FS_PRIMARY_PEER);
}

static int not_reported(const struct fabric_pod *p, int unused)
{
	(void)unused;
	return !p->reported;
}

/* "(2 rails each)" or "(1-2 rails)" over the pods on RDMA */
static size_t rails_note(const struct fabric_pod *pods, size_t n, char *buf, size_t len)
{
	uint32_t lo = UINT32_MAX, hi = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!is_verdict(&pods[i], FABRIC_RDMA))
			continue;
		lo = pods[i].s.rails < lo ? pods[i].s.rails : lo;
		hi = pods[i].s.rails > hi ? pods[i].s.rails : hi;
	}
	if (hi == 0)
		return 0;
	if (lo == hi)
		return (size_t)snprintf(buf, len, " (%u rail%s each)", hi, hi == 1 ? "" : "s");
	return (size_t)snprintf(buf, len, " (%u-%u rails)", lo, hi);
}

void agent_fabric_job_line(const struct fabric_pod *pods, size_t n, char *buf, size_t len)
{
	size_t count[4] = {0}, i, l, nprim = 0, nrep = 0;
	const char *pif = NULL;
	int head = FABRIC_UNKNOWN, v;

	for (i = 0; i < n; i++) {
		if (!pods[i].reported)
			continue;
		nrep++;
		count[pods[i].s.verdict & 3]++;
		nprim += (pods[i].s.flags & FS_PRIMARY_PEER) != 0;
		if (!pif && pods[i].s.primary_if[0])
			pif = pods[i].s.primary_if;
	}
	for (v = 0; v < 4; v++)
		if (count[v] > count[head])
			head = v;
	l = (size_t)snprintf(buf, len, "fabric: job: %zu of %zu pods %s", count[head], n,
			     verdict_words(head));
	if (head == FABRIC_RDMA && l < len)
		l += rails_note(pods, n, buf + l, len - l);
	for (v = 0; v < 4 && l < len; v++) {
		if (v == head || !count[v])
			continue;
		l += (size_t)snprintf(buf + l, len - l, "; %zu %s: ", count[v], verdict_words(v));
		if (l < len)
			l += names(pods, n, is_verdict, v, buf + l, len - l);
	}
	if (l < len)
		l += (size_t)snprintf(buf + l, len - l, ", %zu with peer traffic on %s", nprim,
				      pif ? pif : "the primary network");
	if (nprim && l < len) {
		l += (size_t)snprintf(buf + l, len - l, ": ");
		if (l < len)
			l += names(pods, n, has_primary, 0, buf + l, len - l);
	}
	if (nrep < n && l < len) {
		l += (size_t)snprintf(buf + l, len - l, "; no report from ");
		if (l < len)
			names(pods, n, not_reported, 0, buf + l, len - l);
	}
}

int agent_fabric_job_reclassify(struct fabric_pod *p, const struct fabric_peer_addr *peers,
				size_t npeers)
{
	size_t i, j, l = strlen(p->primary_via);
	int found = 0;
	char b[32];

	for (i = 0; i < p->s.nremotes; i++) {
		for (j = 0; j < npeers; j++) {
			if (!peers[j].primary || strcmp(peers[j].addr, p->s.remotes[i].addr) != 0)
				continue;
			agent_fabric_bytes_str(p->s.remotes[i].bytes, b, sizeof(b));
			if (!strstr(p->primary_via, peers[j].addr) && l < sizeof(p->primary_via))
				l +=
				    (size_t)snprintf(p->primary_via + l, sizeof(p->primary_via) - l,
						     "%s%s to %s (%s)", l ? ", " : "", b,
						     peers[j].name, peers[j].addr);
			found = 1;
			break;
		}
	}
	if (found)
		p->s.flags |= FS_PRIMARY_PEER;
	return found;
}
