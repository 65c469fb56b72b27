/* SPDX-License-Identifier: MIT */
/*
 * peers_domain.c - whether a host name a user wrote (mpirun -H, torchrun
 * --master_addr, gxboot rsh HOST) names a peer of this job.
 *
 * A kubelet's resolver expands a name with fewer than 5 dots through the pod's
 * search list "<ns>.svc.<cluster> svc.<cluster> <cluster>", so
 * "w-1.job", "w-1.job.<ns>", "w-1.job.<ns>.svc" and the FQDN all reach the pod
 * w-1 of the headless Service job in this namespace, while "w-1.job.otherns"
 * is another namespace's pod that happens to share the first label. A name is
 * therefore compared by the full name it resolves to from this pod, never by
 * its first label alone (which would retarget a stranger's host onto a peer).
 */
#include "agent/peers/peers_int.h"
#include "rdzv/gx/gx.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The labels of domain "sub.ns.svc.cluster" into d (only that shape says which is which). */
static void split_pod_domain(const char *dom, struct agent_domain *d)
{
	const char *ns = strchr(dom, '.'), *svc = ns ? strchr(ns + 1, '.') : NULL;

	if (!svc || strncasecmp(svc, ".svc.", 5) != 0 || !svc[5])
		return;
	snprintf(d->sub, sizeof(d->sub), "%.*s", (int)(ns - dom), dom);
	snprintf(d->ns, sizeof(d->ns), "%.*s", (int)(svc - ns - 1), ns + 1);
	snprintf(d->cluster, sizeof(d->cluster), "%s", svc + 5);
}

void agent_domain_detect(const struct agent_detect *c, struct agent_domain *d)
{
	char dom[256], ip[64];
	const char *dot;

	memset(d, 0, sizeof(*d));
	dom[0] = '\0';
	if (c->self && *c->self && gx_addr_normalize(c->self, ip, sizeof(ip)) != 0)
		agent_detect_hosts_domain(c, c->self, dom, sizeof(dom));
	if (!dom[0] && c->host && *c->host && gx_addr_normalize(c->host, ip, sizeof(ip)) != 0)
		agent_detect_hosts_domain(c, c->host, dom, sizeof(dom));
	if (dom[0] && dom[strlen(dom) - 1] == '.')
		dom[strlen(dom) - 1] = '\0';
	split_pod_domain(dom, d);
	if (d->cluster[0])
		return;
	/* no subdomain: the namespace and cluster domain from the search list's first entry */
	agent_detect_search_domain(c, "", dom, sizeof(dom));
	dot = strchr(dom, '.');
	if (dot && strncasecmp(dot, ".svc.", 5) == 0 && dot[5]) {
		snprintf(d->ns, sizeof(d->ns), "%.*s", (int)(dot - dom), dom);
		snprintf(d->cluster, sizeof(d->cluster), "%s", dot + 5);
	}
}

void agent_domain_of(const char *root, const char *host, struct agent_domain *d)
{
	struct agent_detect c = {.root = root, .self = host, .host = host};

	agent_domain_detect(&c, d);
}

/*
 * The full name (no trailing dot) name reaches from this pod, "" when that depends on a
 * part of the domain this pod does not know:
 *   w-1                 -> w-1.<sub>.<ns>.svc.<cluster> (a bare name is a sibling: gxboot
 *                          qualifies it with this pod's subdomain)
 *   w-1.job             -> w-1.job.<ns>.svc.<cluster>
 *   w-1.job.ns          -> w-1.job.ns.svc.<cluster>
 *   w-1.job.ns.svc      -> w-1.job.ns.svc.<cluster>
 *   w-1.job.ns.svc.X, a name with a trailing dot, any other name of 4+ labels: itself
 */
static void full_name(const char *name, const struct agent_domain *d, char *out, size_t cap)
{
	size_t l = strlen(name), labels = 1, i, svc = 0;
	int absolute = l && name[l - 1] == '.';

	out[0] = '\0';
	while (l && name[l - 1] == '.')
		l--;
	for (i = 0; i < l; i++) {
		if (name[i] != '.')
			continue;
		labels++;
		if (!svc && strncasecmp(name + i, ".svc", 4) == 0 &&
		    (i + 4 == l || name[i + 4] == '.'))
			svc = labels;
	}
	if (absolute || (svc && svc < labels) || (!svc && labels >= 4))
		snprintf(out, cap, "%.*s", (int)l, name);
	else if (svc && d->cluster[0])
		snprintf(out, cap, "%.*s.%s", (int)l, name, d->cluster);
	else if (labels == 3 && d->cluster[0])
		snprintf(out, cap, "%.*s.svc.%s", (int)l, name, d->cluster);
	else if (labels == 2 && d->ns[0] && d->cluster[0])
		snprintf(out, cap, "%.*s.%s.svc.%s", (int)l, name, d->ns, d->cluster);
	else if (labels == 1 && d->sub[0] && d->ns[0] && d->cluster[0])
		snprintf(out, cap, "%.*s.%s.%s.svc.%s", (int)l, name, d->sub, d->ns, d->cluster);
}

/* 1 when a kubelet's resolver may answer host with full (no trailing dot): host itself, or
 * host through one entry of the search list "<ns>.svc.<cluster> svc.<cluster> <cluster>". */
static int reaches(const char *host, size_t lh, int absolute, const char *full,
		   const struct agent_domain *d)
{
	char c[600];

	if (strlen(full) == lh && strncasecmp(full, host, lh) == 0)
		return 1;
	if (absolute || !d->cluster[0])
		return 0;
	if (d->ns[0]) {
		snprintf(c, sizeof(c), "%.*s.%s.svc.%s", (int)lh, host, d->ns, d->cluster);
		if (strcasecmp(c, full) == 0)
			return 1;
	}
	snprintf(c, sizeof(c), "%.*s.svc.%s", (int)lh, host, d->cluster);
	if (strcasecmp(c, full) == 0)
		return 1;
	snprintf(c, sizeof(c), "%.*s.%s", (int)lh, host, d->cluster);
	return strcasecmp(c, full) == 0;
}

int agent_host_names(const char *peer, const char *host, const struct agent_domain *d)
{
	static const struct agent_domain none;
	size_t lp = strlen(peer), lh = strlen(host), fp, fh;
	int absolute = lh && host[lh - 1] == '.';
	char a[600];

	while (lp && peer[lp - 1] == '.')
		lp--;
	while (lh && host[lh - 1] == '.')
		lh--;
	if (lh == 0 || lp == 0)
		return 0;
	if (lp == lh && strncasecmp(peer, host, lp) == 0)
		return 1;
	fp = strcspn(peer, ".");
	fh = strcspn(host, ".");
	if (fh >= lh) /* a bare name: the sibling whose first label it is */
		return (fp >= lp ? lp : fp) == lh && strncasecmp(peer, host, lh) == 0;
	if (fp > lp)
		fp = lp;
	if (fp != fh || strncasecmp(peer, host, fh) != 0)
		return 0;
	full_name(peer, d ? d : &none, a, sizeof(a));
	return a[0] && reaches(host, lh, absolute, a, d ? d : &none);
}
