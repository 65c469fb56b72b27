/* SPDX-License-Identifier: MIT */
/*
 * nd_detect.c - the entry points: gather the inventory (netlink, verbs,
 * network-status, memlock), run the choice over it, and own the result.
 * README.md "Flow".
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define ND_CAP_IPC_LOCK 14

void nd_inventory_free(struct nd_inventory *inv)
{
	size_t i, j;

	if (!inv)
		return;
	for (i = 0; i < inv->nlinks; i++)
		free(inv->links[i].addrs);
	free(inv->links);
	for (i = 0; i < inv->ndevs; i++) {
		for (j = 0; j < inv->devs[i].nports; j++)
			free(inv->devs[i].ports[j].gids);
		free(inv->devs[i].ports);
	}
	free(inv->devs);
	nd_nets_free(inv->nets, inv->nnets);
	free(inv->pcidevs);
	free(inv);
}

void nd_result_free(struct nd_result *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	for (i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	free(r->passed);
	free(r->rails);
	nd_inventory_free(r->own_inv);
	free(r);
}

void nd_reason(struct nd_result *r, const char *fmt, ...)
{
	size_t off = strlen(r->reason);
	va_list ap;

	if (off && off + 2 < sizeof(r->reason)) {
		memcpy(r->reason + off, "; ", 3);
		off += 2;
	}
	if (off + 1 >= sizeof(r->reason))
		return;
	va_start(ap, fmt);
	vsnprintf(r->reason + off, sizeof(r->reason) - off, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 3, 0))) static int nd_lines_add(char ***lines, size_t *n,
							      const char *fmt, va_list ap)
{
	char buf[512], **grown;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	grown = realloc(*lines, (*n + 1) * sizeof(**lines));
	if (!grown)
		return -ENOMEM;
	*lines = grown;
	grown[*n] = strdup(buf);
	if (!grown[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

int nd_result_warn(struct nd_result *r, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = nd_lines_add(&r->warnings, &r->nwarnings, fmt, ap);
	va_end(ap);
	return rc;
}

int nd_result_note(struct nd_result *r, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = nd_lines_add(&r->notes, &r->nnotes, fmt, ap);
	va_end(ap);
	return rc;
}

int nd_result_pass(struct nd_result *r, const char *iface, const char *why)
{
	struct nd_passed *grown = realloc(r->passed, (r->npassed + 1) * sizeof(*r->passed));

	if (!grown)
		return -ENOMEM;
	r->passed = grown;
	gx_strlcpy(r->passed[r->npassed].iface, iface, sizeof(r->passed[0].iface));
	gx_strlcpy(r->passed[r->npassed].why, why, sizeof(r->passed[0].why));
	r->npassed++;
	return 0;
}

/* First address of family: global first, else any but link-local (lo, 127.x/32). */
static const struct nd_addr *nd_pick_addr(const struct nd_link *l, int family)
{
	const struct nd_addr *a = nd_link_global(l, family);
	size_t i;

	for (i = 0; !a && i < l->naddrs; i++)
		if (l->addrs[i].family == family && l->addrs[i].scope != 253)
			a = &l->addrs[i];
	return a;
}

/* --iface CIDR (or one address): the link's address inside it, not only its first one (two
 * subnets on one netdev; pods of a benchmark on lo with a /32 each). NULL: none there. */
static const struct nd_addr *nd_pick_in(const struct nd_link *l, const char *spec, int family)
{
	unsigned char net[16];
	char ip[ND_ADDR6SIZ];
	const char *slash = spec ? strchr(spec, '/') : NULL;
	size_t i, n = slash ? (size_t)(slash - spec) : spec ? strlen(spec) : 0;
	int fam, bits, k;
	long plen;

	if (!n || n >= sizeof(ip))
		return NULL;
	memcpy(ip, spec, n);
	ip[n] = '\0';
	fam = strchr(ip, ':') ? AF_INET6 : AF_INET;
	plen = fam == AF_INET ? 32 : 128;
	if (fam != family || inet_pton(fam, ip, net) != 1 ||
	    (slash && gx_parse_long(slash + 1, 0, plen, &plen) < 0))
		return NULL;
	for (i = 0; i < l->naddrs; i++) {
		const unsigned char *a = l->addrs[i].a;

		if (l->addrs[i].family != fam)
			continue;
		for (k = 0, bits = (int)plen; bits >= 8 && a[k] == net[k]; k++, bits -= 8)
			;
		if (bits <= 0 || (bits < 8 && ((a[k] ^ net[k]) & (0xff << (8 - bits)) & 0xff) == 0))
			return &l->addrs[i];
	}
	return NULL;
}

/*
 * With a network-status choice, the address it lists for the network (the kernel's first
 * may be another one on the same link); when it lists one l does not hold, say so and keep
 * the kernel's.
 */
static const struct nd_addr *nd_ns_addr(struct nd_ctx *c, const struct nd_link *l, int fam,
					const struct nd_addr *dflt)
{
	const struct nd_net *n = c->ns_net;
	const struct nd_addr *a;
	const char *listed = NULL;
	size_t i;

	for (i = 0; n && i < n->nips; i++) {
		if ((strchr(n->ips[i], ':') ? AF_INET6 : AF_INET) != fam)
			continue;
		a = nd_link_addr_of(l, n->ips[i]);
		if (a && a->scope != 253) {
			if (a != dflt)
				nd_reason(c->r, "2: address %s as network-status lists it", a->str);
			return a;
		}
		if (!listed)
			listed = n->ips[i];
	}
	if (listed && dflt)
		nd_result_warn(c->r,
			       "network-status lists %s for %s, which %s does not hold as a usable "
			       "address: using %s",
			       listed, n->name, l->name, dflt->str);
	return dflt;
}

/* The default route on the chosen secondary is allowed: said at info, once. */
static void nd_default_note(const struct nd_ctx *c)
{
	struct nd_result *r = c->r;

	if (c->chosen->is_default && !r->is_primary && r->primary_rule)
		nd_result_note(r,
			       "%s holds the default route: allowed, it is the secondary network "
			       "all the same (%s is the pod network, rule %d)",
			       c->chosen->name, r->primary, r->primary_rule);
}

static void nd_fill_choice(struct nd_ctx *c)
{
	const struct nd_link *l = c->chosen;
	struct nd_result *r = c->r;
	const struct nd_addr *a4 = nd_pick_in(l, c->req->iface, AF_INET),
			     *a6 = nd_pick_in(l, c->req->iface, AF_INET6);

	if (!a4)
		a4 = nd_ns_addr(c, l, AF_INET, nd_pick_addr(l, AF_INET));
	if (!a6)
		a6 = nd_ns_addr(c, l, AF_INET6, nd_pick_addr(l, AF_INET6));

	gx_strlcpy(r->iface, l->name, sizeof(r->iface));
	r->ifindex = l->ifindex;
	r->mtu = l->mtu;
	r->is_primary = nd_link_is_primary(r, l);
	if (a4) {
		gx_strlcpy(r->addr4, a4->str, sizeof(r->addr4));
		r->prefix4 = a4->prefixlen;
	}
	if (a6) {
		gx_strlcpy(r->addr6, a6->str, sizeof(r->addr6));
		r->prefix6 = a6->prefixlen;
	}
	r->family = a4 ? AF_INET : a6 ? AF_INET6 : 0;
	nd_reason(r, "chosen %s", l->name);
	nd_default_note(c);
	nd_overlap_check(c);
}

int nd_detect_with(const struct nd_request *req, const struct nd_inventory *inv,
		   struct nd_result **ret, char *err, size_t errlen)
{
	struct nd_ctx c;
	struct nd_result *r = calloc(1, sizeof(*r));
	int rc;

	if (errlen)
		err[0] = '\0';
	if (!r)
		return -ENOMEM;
	memset(&c, 0, sizeof(c));
	c.req = req;
	c.inv = inv;
	c.r = r;
	c.err = err;
	c.errlen = errlen;
	r->inv = inv;
	r->gid_index = -1;
	r->gid_type = ND_GID_NONE;
	r->nccl_gid_index = -1;
	nd_primary_decide(&c);
	if (inv->nets_loaded && inv->nets_old_key)
		nd_result_note(r, "network-status read from the older "
				  "k8s.v1.cni.cncf.io/networks-status annotation");
	nd_pcidev_absent(inv, r);
	rc = nd_parse_request(&c);
	if (rc == 0)
		rc = nd_choose_iface(&c);
	if (rc == 0) {
		nd_fill_choice(&c);
		rc = nd_choose_rdma(&c);
	}
	nd_fill_passed(&c);
	if (rc == 0 || (req->keep_on_error && (rc == GX_ENOSECONDARY || rc == GX_ENORDMA))) {
		*ret = r;
		r = NULL;
	}
	nd_result_free(r);
	return rc;
}

/* CAP_IPC_LOCK in CapEff of /proc/self/status (no libcap). */
static int nd_has_ipc_lock(void)
{
	char line[256];
	unsigned long long caps = 0;
	FILE *f = fopen("/proc/self/status", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &caps) == 1;
	fclose(f);
	return found && (caps >> ND_CAP_IPC_LOCK) & 1;
}

static void nd_env_facts(struct nd_inventory *inv)
{
	struct rlimit rl;

	inv->memlock = ND_MEMLOCK_INF;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		inv->memlock = (uint64_t)rl.rlim_cur;
	inv->ipc_lock = nd_has_ipc_lock();
	inv->kubernetes = getenv("KUBERNETES_SERVICE_HOST") && *getenv("KUBERNETES_SERVICE_HOST");
}

/* SR-IOV device plugin env (nd_pcidev.c): a rejected variable is a warning, not a failure. */
static int nd_pcidev_env(const struct nd_request *req, struct nd_inventory *inv, char *warn,
			 size_t len)
{
	int rc = nd_pcidev_load(NULL, req->sysfs_root, inv, warn, len);

	if (rc == -ENOMEM)
		return rc;
	if (rc == 0)
		warn[0] = '\0';
	return 0;
}

int nd_detect(const struct nd_request *req, struct nd_result **ret, char *err, size_t errlen)
{
	struct nd_inventory *inv = calloc(1, sizeof(*inv));
	struct nd_result *r = NULL;
	char nswarn[256] = "", pdwarn[256] = "";
	int64_t t0 = gx_now_us();
	int rc;

	if (!inv)
		return -ENOMEM;
	rc = nd_links_collect(inv, err, errlen);
	if (rc == 0 && req->rdma_mode != ND_RDMA_OFF)
		rc = nd_rdma_collect(nd_verbs_real(), inv);
	if (rc == 0 && req->network_status) {
		rc = nd_netstatus_load(req->network_status, inv, nswarn, sizeof(nswarn));
		if (rc == -ENOENT) /* empty, or no annotation yet: go on without */
			rc = 0;
		else if (rc < 0)
			snprintf(err, errlen, "%s", nswarn);
		if (inv->nets_loaded)
			nswarn[0] = '\0';
	}
	if (rc == 0)
		rc = nd_pcidev_env(req, inv, pdwarn, sizeof(pdwarn));
	if (rc < 0)
		goto out;
	nd_env_facts(inv);
	rc = nd_detect_with(req, inv, &r, err, errlen);
	if (r) {
		r->own_inv = inv;
		inv = NULL;
		if (nswarn[0])
			nd_result_warn(r, "%s", nswarn);
		if (pdwarn[0])
			nd_result_warn(r, "%s", pdwarn);
		*ret = r;
	}
	gx_debug("netdetect: %lld us, %s", (long long)(gx_now_us() - t0), gx_strerror(rc));
out:
	nd_inventory_free(inv);
	return rc;
}

int nd_rails_hca(const struct nd_result *r, char *buf, size_t len)
{
	size_t i, off = 0;
	int n;

	if (len)
		buf[0] = '\0';
	if (!r->nrails)
		return -ENOENT;
	for (i = 0; i < r->nrails; i++) {
		n = snprintf(buf + off, len - off, "%s%s:%d", i ? "," : "", r->rails[i].dev,
			     r->rails[i].port);
		if (n < 0 || (size_t)n >= len - off) {
			if (len)
				buf[0] = '\0';
			return -ENOSPC;
		}
		off += (size_t)n;
	}
	return 0;
}
