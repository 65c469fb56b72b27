/* SPDX-License-Identifier: MIT */
/*
 * nd_primary.c - which network is the pod's own (the primary, README.md "The
 * pod network"), whether this namespace is the node's (a hostNetwork pod), which
 * links are CNI or kernel plumbing that never carries a job, and whether the
 * chosen secondary's prefix overlaps the primary's.
 *
 * Every CRI runtime calls the pod network's CNI plugin with CNI_IFNAME=eth0 and
 * Multus names attachments net1, net2, ...: that naming is stronger evidence
 * than the default route, which Multus can move onto an attachment.
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#define ND_POD_IFACE "eth0"

/* Kinds a CNI plugin makes a pod's eth0 with (netkit: Cilium's newer datapath). */
static const char *const nd_pod_kinds[] = {"veth",    "netkit", "macvlan", "ipvlan",
					   "macvtap", "ipvtap", NULL};
/* Kernel virtual devices that never carry a job: dummies (kube-ipvs0, nodelocaldns), ifb,
 * tunnels and overlays (tunl0, flannel.1, vxlan.calico, cilium_vxlan, genev_sys_6081) and
 * the per-namespace fallback devices their modules create (tunl0, sit0, gre0, ...). */
static const char *const nd_virtual_kinds[] = {
    "dummy", "ifb",    "vxlan",	 "geneve", "bareudp",	"ipip",	  "sit",
    "gre",   "gretap", "ip6tnl", "ip6gre", "ip6gretap", "erspan", "ip6erspan",
    "vti",   "vti6",   "ip_vti", "nlmon",  NULL};
/* Overlays a node's CNI runs (an up one marks the node's namespace). */
static const char *const nd_overlay_kinds[] = {"vxlan", "geneve", "ipip", NULL};
/* Kinds whose ports are the node's own uplinks (a bridge over one is a real network). */
static const char *const nd_uplink_kinds[] = {"physical", "bond", "team", "vlan", "ipoib", NULL};
/* Masters whose ports carry no address of their own (a VRF's ports do: not here). */
static const char *const nd_l2_masters[] = {"bridge", "bond", "team", "openvswitch", NULL};
/* Names CNI plugins and container runtimes give their plumbing in a node's namespace.
 * A second signal beside kinds and flags, for devices those do not tell apart (veth host
 * ends, Open vSwitch internal ports). */
static const char *const nd_cni_prefixes[] = {
    "cilium_",	    "lxc",     "cali",	  "flannel.", "vxlan.calico", "cni0",
    "cni-",	    "docker0", "veth",	  "tunl0",    "kube-ipvs0",   "kube-bridge",
    "nodelocaldns", "weave",   "antrea-", "ovn-k8s-", "genev_sys_",   NULL};

static int nd_in(const char *s, const char *const *list)
{
	size_t i;

	for (i = 0; list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return 1;
	return 0;
}

static const char *nd_cni_prefix(const char *name)
{
	size_t i;

	for (i = 0; nd_cni_prefixes[i]; i++)
		if (strncmp(name, nd_cni_prefixes[i], strlen(nd_cni_prefixes[i])) == 0)
			return nd_cni_prefixes[i];
	return NULL;
}

/* A port of br of one of kinds (ports: links whose master is br). */
static const struct nd_link *nd_port_of_kind(const struct nd_inventory *inv,
					     const struct nd_link *br, const char *const *kinds)
{
	size_t i;

	for (i = 0; i < inv->nlinks; i++)
		if (inv->links[i].master == br->ifindex && nd_in(inv->links[i].kind, kinds))
			return &inv->links[i];
	return NULL;
}

static const char *const nd_veth_kinds[] = {"veth", "netkit", "tun", NULL};

/* What marks l as a node's CNI plumbing (hostNetwork), into why; 0 when nothing does. */
static int nd_node_mark(const struct nd_inventory *inv, const struct nd_link *l, char *why,
			size_t len)
{
	const struct nd_link *port;
	const char *pre;

	if (l->peer_here) {
		snprintf(why, len, "%s is one end of a %s pair inside this namespace", l->name,
			 l->kind);
		return 1;
	}
	if (strcmp(l->kind, "bridge") == 0 && (port = nd_port_of_kind(inv, l, nd_veth_kinds))) {
		snprintf(why, len, "%s is a bridge with %s port %s", l->name, port->kind,
			 port->name);
		return 1;
	}
	if (l->admin_up && nd_in(l->kind, nd_overlay_kinds)) {
		snprintf(why, len, "%s is an up %s overlay", l->name, l->kind);
		return 1;
	}
	if ((pre = nd_cni_prefix(l->name)) != NULL) {
		snprintf(why, len, "%s is named like a CNI device (%s*)", l->name, pre);
		return 1;
	}
	return 0;
}

/*
 * A pod's namespace holds an eth0 of a kind CNI plugins make and none of a node's CNI
 * plumbing. Anything else is the node's namespace (README "hostNetwork").
 */
static int nd_host_network(const struct nd_inventory *inv, char *why, size_t len)
{
	const struct nd_link *eth0 = nd_link_by_name(inv, ND_POD_IFACE);
	size_t i;

	if (!eth0) {
		snprintf(why, len, "no %s", ND_POD_IFACE);
		return 1;
	}
	if (!nd_in(eth0->kind, nd_pod_kinds)) {
		snprintf(why, len, "%s is a %s link, not one a CNI plugin makes", eth0->name,
			 eth0->kind);
		return 1;
	}
	for (i = 0; i < inv->nlinks; i++)
		if (nd_node_mark(inv, &inv->links[i], why, len))
			return 1;
	why[0] = '\0';
	return 0;
}

const struct nd_addr *nd_link_addr_of(const struct nd_link *l, const char *ip)
{
	unsigned char b[16];
	char txt[ND_ADDR6SIZ];
	size_t i, n = strcspn(ip, "/");
	int fam = memchr(ip, ':', n) ? AF_INET6 : AF_INET;

	if (n >= sizeof(txt))
		return NULL;
	memcpy(txt, ip, n);
	txt[n] = '\0';
	if (inet_pton(fam, txt, b) != 1)
		return NULL;
	for (i = 0; i < l->naddrs; i++)
		if (l->addrs[i].family == fam &&
		    memcmp(l->addrs[i].a, b, fam == AF_INET ? 4 : 16) == 0)
			return &l->addrs[i];
	return NULL;
}

/* Rule 1: the link of network-status's default network: by interface, else by its ips
 * (Calico's entry names no interface). */
static const struct nd_link *nd_ns_default(struct nd_ctx *c, const struct nd_net **out)
{
	const struct nd_inventory *inv = c->inv;
	size_t i, j, k;

	for (i = 0; i < inv->nnets; i++) {
		const struct nd_net *n = &inv->nets[i];

		if (!n->is_default)
			continue;
		*out = n;
		if (n->iface[0])
			return nd_link_by_name(inv, n->iface);
		for (j = 0; j < inv->nlinks; j++)
			for (k = 0; k < n->nips; k++)
				if (!inv->links[j].is_loopback &&
				    nd_link_addr_of(&inv->links[j], n->ips[k]))
					return &inv->links[j];
		return NULL;
	}
	return NULL;
}

static const struct nd_link *nd_first_default(const struct nd_inventory *inv)
{
	size_t i;

	for (i = 0; i < inv->nlinks; i++)
		if (inv->links[i].is_default && !inv->links[i].is_loopback)
			return &inv->links[i];
	return NULL;
}

void nd_primary_decide(struct nd_ctx *c)
{
	struct nd_result *r = c->r;
	const struct nd_net *net = NULL;
	const struct nd_link *l;

	r->host_network = nd_host_network(c->inv, r->host_network_why, sizeof(r->host_network_why));
	if ((l = nd_ns_default(c, &net)) != NULL) {
		r->primary_rule = 1;
		nd_reason(r, "pod network %s (rule 1: network-status calls %s the default)",
			  l->name, net->name[0] ? net->name : "it");
	} else if (net) {
		nd_reason(r, "network-status's default network %s matches no link here",
			  net->name[0] ? net->name : "(unnamed)");
	}
	if (!l && !r->host_network && c->inv->kubernetes &&
	    (l = nd_link_by_name(c->inv, ND_POD_IFACE)) != NULL) {
		r->primary_rule = 3;
		nd_reason(r, "pod network %s (rule 3: in a pod, %s is the pod network)", l->name,
			  ND_POD_IFACE);
	} else if (!l && !r->host_network && nd_link_by_name(c->inv, ND_POD_IFACE)) {
		nd_reason(r, "rule 3 not applied: no KUBERNETES_SERVICE_HOST, not a Kubernetes pod "
			     "(podman, docker: eth0 may be any of its networks)");
	}
	if (!l && (l = nd_first_default(c->inv)) != NULL) {
		r->primary_rule = 4;
		nd_reason(r, "node network %s (rule 4: the default route; hostNetwork: %s)",
			  l->name, r->host_network_why);
	}
	if (!l) {
		nd_reason(r, "no pod network (%s%s, no default route)",
			  r->host_network ? "hostNetwork: " : "", r->host_network_why);
		return;
	}
	gx_strlcpy(r->primary, l->name, sizeof(r->primary));
	r->primary_ifindex = l->ifindex;
}

int nd_link_is_primary(const struct nd_result *r, const struct nd_link *l)
{
	if (!r->primary_rule || l->is_loopback)
		return 0;
	if (r->primary_rule == 4)
		return l->is_default;
	return l->ifindex == r->primary_ifindex;
}

const char *nd_primary_why(const struct nd_result *r)
{
	if (r->primary_rule == 1)
		return "is the pod network (network-status: default)";
	if (r->primary_rule == 3)
		return "is the pod network (eth0 in a pod)";
	return "holds the default route";
}

/* Every global address is a host route (/32, /128): a CNI gateway or tunnel end. */
static int nd_host_addrs_only(const struct nd_link *l)
{
	size_t i;
	int any = 0;

	for (i = 0; i < l->naddrs; i++) {
		const struct nd_addr *a = &l->addrs[i];

		if (a->scope != 0)
			continue;
		if (a->prefixlen != (a->family == AF_INET ? 32 : 128))
			return 0;
		any = 1;
	}
	return any;
}

/* In the node's namespace (hostNetwork): plumbing that kinds alone do not name. */
static const char *nd_node_virtual_why(const struct nd_result *r, const struct nd_link *l,
				       char *buf, size_t len)
{
	const char *pre;

	if (strcmp(l->kind, "bridge") == 0 && !nd_port_of_kind(r->inv, l, nd_uplink_kinds))
		return "is a bridge without a physical port (a CNI or container bridge)";
	if ((l->flags & (IFF_NOARP | IFF_POINTOPOINT)) && l->arptype != ND_ARPHRD_INFINIBAND)
		return (l->flags & IFF_POINTOPOINT) ? "is point-to-point (a tunnel or CNI device)"
						    : "is NOARP (a tunnel or CNI device)";
	if (nd_host_addrs_only(l))
		return "has only host addresses (/32, /128): a CNI gateway or tunnel end, not a "
		       "network";
	if ((pre = nd_cni_prefix(l->name)) != NULL) {
		snprintf(buf, len, "is named like a CNI device (%s*) in the node's namespace", pre);
		return buf;
	}
	return NULL;
}

const char *nd_virtual_why(const struct nd_result *r, const struct nd_link *l, char *buf,
			   size_t len)
{
	const struct nd_link *m = l->master ? nd_link_by_index(r->inv, l->master) : NULL;

	if (m && nd_in(m->kind, nd_l2_masters)) {
		snprintf(buf, len, "is a port of %s %s (its master carries the address)", m->kind,
			 m->name);
		return buf;
	}
	if (nd_in(l->kind, nd_virtual_kinds)) {
		snprintf(buf, len, "is a virtual device (kind %s)", l->kind);
		return buf;
	}
	if (l->peer_here)
		return "is one end of a veth pair inside this namespace (CNI plumbing such as "
		       "cilium_host): it leads nowhere out";
	return r->host_network ? nd_node_virtual_why(r, l, buf, len) : NULL;
}

/* The first min(pa, pb) bits of a and b agree: one prefix holds the other. */
static int nd_prefix_overlap(const unsigned char *a, int pa, const unsigned char *b, int pb)
{
	int bits = pa < pb ? pa : pb, k;

	for (k = 0; bits >= 8; k++, bits -= 8)
		if (a[k] != b[k])
			return 0;
	return bits == 0 || ((a[k] ^ b[k]) & (0xff << (8 - bits)) & 0xff) == 0;
}

/* The chosen address of family fam against every global address of primary link p. */
static int nd_overlap_one(struct nd_ctx *c, const struct nd_link *p, int fam)
{
	struct nd_result *r = c->r;
	const char *mine = fam == AF_INET ? r->addr4 : r->addr6;
	int plen = fam == AF_INET ? r->prefix4 : r->prefix6;
	unsigned char a[16];
	size_t i;

	if (!mine[0] || inet_pton(fam, mine, a) != 1)
		return 0;
	for (i = 0; i < p->naddrs; i++) {
		const struct nd_addr *x = &p->addrs[i];

		if (x->family != fam || x->scope != 0 ||
		    !nd_prefix_overlap(a, plen, x->a, x->prefixlen))
			continue;
		snprintf(r->overlap, sizeof(r->overlap),
			 "%s %s/%d overlaps %s %s/%d: the kernel cannot keep the two apart",
			 r->iface, mine, plen, p->name, x->str, x->prefixlen);
		nd_result_warn(r, "%s", r->overlap);
		return 1;
	}
	return 0;
}

void nd_overlap_check(struct nd_ctx *c)
{
	size_t i;

	if (!c->chosen || nd_link_is_primary(c->r, c->chosen))
		return;
	for (i = 0; i < c->inv->nlinks; i++) {
		const struct nd_link *p = &c->inv->links[i];

		if (p != c->chosen && nd_link_is_primary(c->r, p) &&
		    (nd_overlap_one(c, p, AF_INET) || nd_overlap_one(c, p, AF_INET6)))
			return;
	}
}
