/* SPDX-License-Identifier: MIT */
/*
 * test_nd_primary.c - the pod network before the choice (nd_primary.c): network-status's
 * default entry (rule 1), eth0 in a pod (rule 3) even when Multus moved the default route
 * onto net1, the default route in a hostNetwork pod (rule 4); how a node's namespace is
 * recognised; CNI and kernel plumbing passed over on a node (Cilium, flannel, IPVS, IPIP)
 * while every shape of pod attachment, bonds and VLANs stay candidates; overlapping
 * prefixes; ties said with every name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/nd_fixture.h"

static struct nd_inventory *g_inv;
static char g_err[512];

/* fx (NULL: keep the inventory), with network-status ns (NULL: none) */
static struct nd_result *detect(const char *fx, const char *ns, const struct nd_request *q,
				int expect)
{
	struct nd_result *r = NULL;
	char path[PATH_MAX];
	int rc;

	if (fx) {
		nd_inventory_free(g_inv);
		g_inv = fx_load(fx);
		if (ns)
			assert_int_equal(nd_netstatus_load(fx_path(ns, path, sizeof(path)), g_inv,
							   g_err, sizeof(g_err)),
					 0);
	}
	g_err[0] = '\0';
	rc = nd_detect_with(q, g_inv, &r, g_err, sizeof(g_err));
	if (rc != expect)
		fail_msg("%s: rc %d (%s), want %d", fx ? fx : "-", rc, g_err, expect);
	if (rc == 0)
		assert_non_null(r);
	return r;
}

static const char *passed_why(const struct nd_result *r, const char *iface)
{
	size_t i;

	for (i = 0; i < r->npassed; i++)
		if (!strcmp(r->passed[i].iface, iface))
			return r->passed[i].why;
	fail_msg("%s not in passed_over", iface);
	return NULL;
}

static const char *line_with(char *const *lines, size_t n, const char *text)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strstr(lines[i], text))
			return lines[i];
	return NULL;
}

static int teardown(void **state)
{
	(void)state;
	nd_inventory_free(g_inv);
	g_inv = NULL;
	return 0;
}

/* Multus moved the default route onto net1: eth0 is still the pod network (rule 3). */
/* Outside Kubernetes (podman kube play, docker: no KUBERNETES_SERVICE_HOST) eth0 is any of
 * the pod's networks: the default route marks the primary (rule 4), and the reason says why
 * rule 3 did not. */
static void test_not_kubernetes(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("podman_two_nets.inv", NULL, &q, 0);

	(void)state;
	assert_string_equal(r->iface, "eth0");
	assert_string_equal(r->addr4, "192.168.150.11");
	assert_string_equal(r->primary, "eth1");
	assert_int_equal(r->primary_rule, 4);
	assert_non_null(strstr(r->reason, "rule 3 not applied: no KUBERNETES_SERVICE_HOST"));
	nd_result_free(r);
	/* the same links in a Kubernetes pod: eth0 is the pod network, eth1 the secondary */
	nd_inventory_free(g_inv);
	g_inv = fx_load("podman_two_nets.inv");
	g_inv->kubernetes = 1;
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->iface, "eth1");
	assert_int_equal(r->primary_rule, 3);
	nd_result_free(r);
}

static void test_default_route_on_net1(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("pod_default_net1.inv", NULL, &q, 0);

	(void)state;
	assert_string_equal(r->iface, "net1");
	assert_string_equal(r->addr4, "192.168.77.10");
	assert_false(r->is_primary);
	assert_false(r->host_network);
	assert_string_equal(r->primary, "eth0");
	assert_int_equal(r->primary_rule, 3);
	assert_non_null(strstr(r->reason, "pod network eth0 (rule 3: in a pod, eth0 is the pod "
					  "network)"));
	assert_string_equal(passed_why(r, "eth0"), "is the pod network (eth0 in a pod)");
	/* allowed, said once at info, not as a warning */
	assert_int_equal(r->nwarnings, 0);
	assert_int_equal(r->nnotes, 1);
	assert_string_equal(r->notes[0], "net1 holds the default route: allowed, it is the "
					 "secondary network all the same (eth0 is the pod network, "
					 "rule 3)");
	assert_string_equal(r->overlap, "");
	nd_result_free(r);
	/* --allow-primary takes the pod network, not the default route's link */
	nd_inventory_free(g_inv);
	g_inv = fx_load("pod_default_net1.inv");
	g_inv->links[2].admin_up = 0;
	q.allow_primary = 1;
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->iface, "eth0");
	assert_true(r->is_primary);
	assert_non_null(line_with(r->warnings, r->nwarnings, "using eth0 (the pod network)"));
	nd_result_free(r);
}

/* The same pod with network-status: Calico's default entry names no interface (rule 1
 * by its address). */
static void test_default_route_on_net1_network_status(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("pod_default_net1.inv", "ns_default_net1.json", &q, 0);

	(void)state;
	assert_string_equal(r->iface, "net1");
	assert_string_equal(r->network, "default/routed");
	assert_int_equal(r->primary_rule, 1);
	assert_string_equal(r->primary, "eth0");
	assert_non_null(strstr(r->reason, "pod network eth0 (rule 1: network-status calls "
					  "k8s-pod-network the default)"));
	assert_string_equal(passed_why(r, "eth0"), "is the pod network (network-status: default)");
	assert_int_equal(r->nnotes, 1);
	assert_non_null(strstr(r->notes[0], "net1 holds the default route"));
	nd_result_free(r);
}

/* network-status whose eth0 entry lacks "default": true: eth0 is no candidate (rule 3). */
static void test_eth0_entry_without_default(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("tcp_only.inv", "ns_eth0_nodefault.json", &q, 0);

	(void)state;
	assert_string_equal(r->iface, "net1");
	assert_string_equal(r->network, "default/macvlan-conf");
	assert_false(r->is_primary);
	assert_int_equal(r->primary_rule, 3);
	assert_non_null(strstr(r->reason, "2: network-status entry cbr0 is on eth0, the pod "
					  "network"));
	assert_non_null(strstr(r->reason, "2: network-status network default/macvlan-conf is "
					  "net1"));
	nd_result_free(r);
	/* an explicit --network still names it (rule 2 before rules 3 and 4) */
	q.network = "cbr0";
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->iface, "eth0");
	assert_true(r->is_primary);
	nd_result_free(r);
}

/* A hostNetwork pod: no eth0; the node's NIC holds the default route (rule 4). */
static void test_host_network_two_nics(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("host_two_nics.inv", NULL, &q, 0);

	(void)state;
	assert_string_equal(r->iface, "ens1f0");
	assert_true(r->host_network);
	assert_string_equal(r->host_network_why, "no eth0");
	assert_int_equal(r->primary_rule, 4);
	assert_string_equal(r->primary, "eno1");
	assert_non_null(strstr(r->reason, "node network eno1 (rule 4: the default route; "
					  "hostNetwork: no eth0)"));
	assert_string_equal(passed_why(r, "eno1"), "holds the default route");
	assert_int_equal(r->nwarnings, 0);
	assert_int_equal(r->nnotes, 0);
	nd_result_free(r);
	/* only the node's NIC: the same line as before */
	nd_inventory_free(g_inv);
	g_inv = fx_load("host_two_nics.inv");
	free(g_inv->links[2].addrs);
	g_inv->nlinks = 2;
	detect(NULL, NULL, &q, GX_ENOSECONDARY);
	assert_string_equal(g_err, "no secondary interface: only eno1 (default route) found");
}

/* Cilium node: cilium_host ties the NIC's speed at a lower ifindex; it is plumbing. */
static void test_host_network_cilium(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("host_cilium.inv", NULL, &q, 0);

	(void)state;
	assert_string_equal(r->iface, "ens1f0");
	assert_string_equal(r->addr4, "172.30.4.21");
	assert_true(r->host_network);
	assert_non_null(strstr(passed_why(r, "cilium_host"), "veth pair inside this namespace"));
	assert_non_null(strstr(passed_why(r, "cilium_net"), "veth pair inside this namespace"));
	assert_string_equal(passed_why(r, "cilium_vxlan"), "is a virtual device (kind vxlan)");
	assert_string_equal(passed_why(r, "lxc_health"),
			    "is named like a CNI device (lxc*) in the node's namespace");
	assert_int_equal(r->nwarnings, 0); /* no tie: cilium_host is no candidate */
	nd_result_free(r);
	/* by its NOARP flag and /32 alone too, were its peer elsewhere */
	g_inv->links[3].peer_here = 0;
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->iface, "ens1f0");
	assert_string_equal(passed_why(r, "cilium_host"), "is NOARP (a tunnel or CNI device)");
	nd_result_free(r);
	g_inv->links[3].flags &= ~(unsigned int)IFF_NOARP;
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->iface, "ens1f0");
	assert_non_null(strstr(passed_why(r, "cilium_host"), "has only host addresses (/32"));
	nd_result_free(r);
}

/* A cloud node whose NIC is named eth0, with flannel, IPVS, IPIP, docker0, wireguard. */
static void test_host_network_cloud_node(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("host_flannel.inv", NULL, &q, 0);

	(void)state;
	assert_string_equal(r->iface, "eth1");
	assert_true(r->host_network);
	assert_string_equal(r->host_network_why,
			    "eth0 is a physical link, not one a CNI plugin makes");
	assert_int_equal(r->primary_rule, 4);
	assert_string_equal(passed_why(r, "eth0"), "holds the default route");
	assert_string_equal(passed_why(r, "cni0"),
			    "is a bridge without a physical port (a CNI or container bridge)");
	assert_string_equal(passed_why(r, "docker0"),
			    "is a bridge without a physical port (a CNI or container bridge)");
	assert_string_equal(passed_why(r, "flannel.1"), "is a virtual device (kind vxlan)");
	assert_string_equal(passed_why(r, "kube-ipvs0"), "is a virtual device (kind dummy)");
	assert_string_equal(passed_why(r, "tunl0"), "is a virtual device (kind ipip)");
	assert_string_equal(passed_why(r, "veth1a2b3c4d"),
			    "is a port of bridge cni0 (its master carries the address)");
	assert_string_equal(passed_why(r, "wg0"), "is point-to-point (a tunnel or CNI device)");
	assert_int_equal(r->nwarnings, 0);
	nd_result_free(r);
	/* a node whose own eth0 is a veth (a node in a container): its CNI plumbing says so */
	gx_strlcpy(g_inv->links[1].kind, "veth", sizeof(g_inv->links[1].kind));
	r = detect(NULL, NULL, &q, 0);
	assert_true(r->host_network);
	assert_string_equal(r->host_network_why, "docker0 is named like a CNI device (docker0*)");
	assert_string_equal(r->iface, "eth1");
	nd_result_free(r);
}

/* Bonds and VLANs are a node's own networks; the bond's ports are passed over. */
static void test_host_network_bond_vlan(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("host_bond.inv", NULL, &q, 0);

	(void)state;
	assert_string_equal(r->iface, "bond0.100");
	assert_string_equal(passed_why(r, "ens1f0"),
			    "is a port of bond bond0 (its master carries the address)");
	assert_string_equal(passed_why(r, "bond0"), "has no address");
	nd_result_free(r);
}

/* In a pod every attachment shape stays a candidate: veth (bridge CNI), ipvlan L3 (NOARP),
 * macvlan, a whole VF; ranked by speed as before. */
static void test_pod_attachment_kinds(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("pod_attachment_kinds.inv", NULL, &q, 0);
	static const char *const slower[] = {"net1", "net2", "net3"};
	size_t i;

	(void)state;
	assert_false(r->host_network);
	assert_string_equal(r->iface, "net4");
	for (i = 0; i < 3; i++)
		assert_non_null(strstr(passed_why(r, slower[i]), "slower than net4"));
	nd_result_free(r);
	for (i = 3; i < 6; i++) /* only the veth left, then the ipvlan back */
		g_inv->links[i].admin_up = 0;
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	nd_result_free(r);
	g_inv->links[3].admin_up = 1;
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->iface, "net2");
	nd_result_free(r);
}

/* A secondary range that overlaps the pod network: named with both prefixes, not fatal. */
static void test_overlap(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("pod_overlap.inv", NULL, &q, 0);

	(void)state;
	assert_string_equal(r->iface, "net1");
	assert_string_equal(r->overlap, "net1 10.66.0.102/24 overlaps eth0 10.66.0.12/24: "
					"the kernel cannot keep the two apart");
	assert_int_equal(r->nwarnings, 1);
	assert_string_equal(r->warnings[0], r->overlap);
	nd_result_free(r);
	/* a wider secondary prefix holding the pod network's overlaps too */
	g_inv->links[2].addrs[0].prefixlen = 16;
	r = detect(NULL, NULL, &q, 0);
	assert_non_null(strstr(r->overlap, "net1 10.66.0.102/16 overlaps eth0 10.66.0.12/24"));
	nd_result_free(r);
	/* disjoint: none */
	g_inv->links[2].addrs[0].prefixlen = 24;
	g_inv->links[2].addrs[0].a[2] = 1;
	gx_strlcpy(g_inv->links[2].addrs[0].str, "10.66.1.102",
		   sizeof(g_inv->links[2].addrs[0].str));
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->overlap, "");
	assert_int_equal(r->nwarnings, 0);
	nd_result_free(r);
}

/* Equal speeds: the first by name, the same on every pod; every tied name in one note (info:
 * 8 rails of one speed are the normal case), and how to choose another. */
static void test_tie_said(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("pod_attachment_kinds.inv");
	g_inv->links[4].speed_mbps = 100000; /* net3 as fast as net4 */
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->iface, "net3");
	assert_int_equal(r->nwarnings, 0);
	assert_non_null(
	    line_with(r->notes, r->nnotes,
		      "net3 and net4 tie (100000 Mb/s): net3 is used, the first by name; "
		      "name another with --iface"));
	assert_string_equal(passed_why(r, "net4"), "same speed as net3, later by name");
	nd_result_free(r);
	g_inv->links[4].speed_mbps = g_inv->links[5].speed_mbps = -1; /* veths, macvlans */
	g_inv->links[2].speed_mbps = g_inv->links[3].speed_mbps = -1;
	r = detect(NULL, NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	assert_non_null(
	    line_with(r->notes, r->nnotes,
		      "net1, net2, net3 and net4 tie (unknown speed): net1 is used, the "
		      "first by name; name another with --iface"));
	nd_result_free(r);
	/* net4 holds the lowest ifindex here: the name decides, not the ifindex */
	r = detect("rails4.inv", NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	assert_non_null(
	    line_with(r->notes, r->nnotes,
		      "net1, net2, net3 and net4 tie (400000 Mb/s, each with an RDMA "
		      "port): net1 is used, the first by name; name another with --iface"));
	nd_result_free(r);
	q.iface = "net2"; /* an explicit choice has no tie */
	r = detect(NULL, NULL, &q, 0);
	assert_null(line_with(r->notes, r->nnotes, "tie"));
	nd_result_free(r);
}

static void test_json(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("pod_default_net1.inv", NULL, &q, 0);
	json_t *j = nd_result_json(r), *p, *l;

	(void)state;
	assert_non_null(j);
	p = json_object_get(j, "primary");
	assert_string_equal(json_string_value(json_object_get(p, "iface")), "eth0");
	assert_int_equal(json_integer_value(json_object_get(p, "rule")), 3);
	assert_true(json_is_false(json_object_get(j, "host_network")));
	assert_true(json_is_null(json_object_get(j, "overlap")));
	assert_int_equal(json_array_size(json_object_get(j, "notes")), 1);
	l = json_array_get(json_object_get(j, "links"), 1);
	assert_string_equal(json_string_value(json_object_get(l, "name")), "eth0");
	assert_true(json_is_true(json_object_get(l, "primary")));
	assert_true(json_is_false(json_object_get(l, "default_route")));
	/* the keys of before are all still there */
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(j, "choice"), "iface")), "net1");
	assert_true(json_is_array(json_object_get(j, "warnings")));
	json_decref(j);
	nd_result_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_not_kubernetes, teardown),
	    cmocka_unit_test_teardown(test_default_route_on_net1, teardown),
	    cmocka_unit_test_teardown(test_default_route_on_net1_network_status, teardown),
	    cmocka_unit_test_teardown(test_eth0_entry_without_default, teardown),
	    cmocka_unit_test_teardown(test_host_network_two_nics, teardown),
	    cmocka_unit_test_teardown(test_host_network_cilium, teardown),
	    cmocka_unit_test_teardown(test_host_network_cloud_node, teardown),
	    cmocka_unit_test_teardown(test_host_network_bond_vlan, teardown),
	    cmocka_unit_test_teardown(test_pod_attachment_kinds, teardown),
	    cmocka_unit_test_teardown(test_overlap, teardown),
	    cmocka_unit_test_teardown(test_tie_said, teardown),
	    cmocka_unit_test_teardown(test_json, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
