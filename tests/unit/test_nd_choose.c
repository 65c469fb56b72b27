/* SPDX-License-Identifier: MIT */
/*
 * test_nd_choose.c - the choice rules (netdetect/README.md "The choice") over recorded
 * inventories:
 * --iface NAME/CIDR, --rdma-dev, network-status, RDMA netdev first, speed and
 * ifindex, exit-4 lines, --allow-primary; rails and NCCL_IB_GID_INDEX
 * (one index on every rail, --rdma-dev as given); --rdma auto/require/off with memlock / uverbs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/nd_fixture.h"

static struct nd_inventory *g_inv;
static char g_err[512];

static struct nd_result *detect(const char *fx, const struct nd_request *q, int expect)
{
	struct nd_result *r = NULL;
	int rc;

	if (fx) {
		nd_inventory_free(g_inv);
		g_inv = fx_load(fx);
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

static int teardown(void **state)
{
	(void)state;
	nd_inventory_free(g_inv);
	g_inv = NULL;
	return 0;
}

static void test_tcp_fastest_secondary(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("tcp_only.inv", &q, 0);

	(void)state;
	assert_string_equal(r->iface, "net2");
	assert_string_equal(r->addr4, "192.168.20.11");
	assert_int_equal(r->mtu, 9000);
	assert_false(r->is_primary);
	assert_non_null(strstr(r->reason, "4: net2"));
	assert_non_null(strstr(r->reason, "no RDMA devices"));
	assert_string_equal(passed_why(r, "eth0"), "is the pod network (eth0 in a pod)");
	assert_string_equal(passed_why(r, "net3"), "is down (no carrier)");
	assert_string_equal(passed_why(r, "net5"), "has only link-local addresses");
	assert_non_null(strstr(passed_why(r, "net1"), "slower than net2"));
	assert_string_equal(passed_why(r, "lo"), "is loopback");
	assert_int_equal(r->nrails, 0);
	assert_int_equal(r->nccl_gid_index, -1);
	assert_false(r->rdma_usable);
	assert_int_equal(r->nwarnings, 0);
	nd_result_free(r);
}

static void test_iface_name_and_cidr(void **state)
{
	struct nd_request q = {.iface = "net1"};
	struct nd_result *r = detect("tcp_only.inv", &q, 0);

	(void)state;
	assert_string_equal(r->iface, "net1");
	nd_result_free(r);
	q.iface = "192.168.20.0/24";
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net2");
	assert_non_null(strstr(r->reason, "--iface 192.168.20.0/24 matches net2"));
	nd_result_free(r);
	q.iface = "192.168.10.11";
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	nd_result_free(r);
	q.iface = "127.0.0.1/32"; /* benchmarks: lo by address */
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "lo");
	assert_string_equal(r->addr4, "127.0.0.1");
	nd_result_free(r);
	q.iface = "net7";
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_string_equal(g_err, "--iface net7: no such interface");
	q.iface = "net3";
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_string_equal(g_err, "net3 is down (no carrier)");
	q.iface = "172.16.0.0/12";
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_non_null(strstr(g_err, "no local interface has an address in it"));
	q.iface = "192.168.1.0/40";
	detect(NULL, &q, GX_EUSAGE);
}

static void test_only_primary(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;

	(void)state;
	detect("only_eth0.inv", &q, GX_ENOSECONDARY);
	assert_string_equal(g_err, "no secondary interface: only eth0 (default route) found");
	q.allow_primary = 1;
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "eth0");
	assert_true(r->is_primary);
	assert_int_equal(r->nwarnings, 1);
	assert_non_null(strstr(r->warnings[0], "--allow-primary"));
	nd_result_free(r);
	/* keep_on_error hands back the inventory and the passed-over list */
	q.allow_primary = 0;
	q.keep_on_error = 1;
	r = detect(NULL, &q, GX_ENOSECONDARY);
	assert_non_null(r);
	assert_string_equal(r->iface, "");
	assert_string_equal(passed_why(r, "eth0"), "is the pod network (eth0 in a pod)");
	nd_result_free(r);
}

static void test_net1_down_named(void **state)
{
	struct nd_request q = {.allow_primary = 0};

	(void)state;
	detect("net1_down.inv", &q, GX_ENOSECONDARY);
	assert_string_equal(g_err, "net1 is down (no carrier)");
}

static void test_shared_rdma_choice(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("shared_roce.inv", &q, 0);
	char hca[64];

	(void)state;
	assert_string_equal(r->iface, "net1");
	assert_non_null(strstr(r->reason, "3: net1 carries an active RDMA port"));
	assert_string_equal(r->rdma_dev, "mlx5_0");
	assert_int_equal(r->rdma_port, 1);
	assert_int_equal(r->gid_index, 13);
	assert_int_equal(r->gid_type, ND_GID_ROCE_V2);
	assert_int_equal(r->link_layer, ND_LL_ETH);
	assert_true(r->rdma_usable);
	assert_int_equal(r->nrails, 1); /* mlx5_1 holds only the host's GIDs */
	assert_string_equal(r->rails[0].iface, "net1");
	assert_int_equal(r->nccl_gid_index, 13);
	assert_int_equal(nd_rails_hca(r, hca, sizeof(hca)), 0);
	assert_string_equal(hca, "mlx5_0:1");
	assert_int_equal(nd_rails_hca(r, hca, 5), -ENOSPC);
	assert_int_equal(r->nwarnings, 0);
	nd_result_free(r);
}

static void test_rails_name_order_and_gid(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("rails4.inv", &q, 0);
	char hca[128];

	(void)state;
	/* same speed everywhere: the first by name (net1) bootstraps, though net4 holds the
	 * lowest ifindex: the same choice on every pod */
	assert_string_equal(r->iface, "net1");
	assert_non_null(strstr(passed_why(r, "net4"), "later by name"));
	assert_int_equal(r->nrails, 4);
	assert_int_equal(nd_rails_hca(r, hca, sizeof(hca)), 0);
	assert_string_equal(hca, "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
	assert_string_equal(r->rails[2].iface, "net3");
	assert_string_equal(r->rails[2].addr, "192.168.3.11");
	assert_int_equal(r->rails[2].rate_mbps, 400000);
	assert_int_equal(r->nccl_gid_index, 3);
	nd_result_free(r);
}

static void test_rails_ipv6_only(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;
	size_t i, j;

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("rails4.inv");
	/* an IPv6-only secondary network: drop every IPv4 address but lo's */
	for (i = 0; i < g_inv->nlinks; i++)
		for (j = 0; j < g_inv->links[i].naddrs; j++)
			if (g_inv->links[i].addrs[j].family == AF_INET &&
			    !g_inv->links[i].is_loopback)
				g_inv->links[i].addrs[j].family = AF_UNSPEC;
	r = detect(NULL, &q, 0);
	assert_string_equal(r->addr4, "");
	assert_string_equal(r->addr6, "fd00:1::11"); /* net1: the first by name */
	assert_int_equal(r->family, AF_INET6);
	assert_int_equal(r->gid_index, 5);
	assert_int_equal(r->nccl_gid_index, 5);
	assert_non_null(strstr(r->nccl_gid_why, "IPv6"));
	nd_result_free(r);
}

static void test_rails_select(void **state)
{
	struct nd_request q = {.rails = "none"};
	struct nd_result *r = detect("rails4.inv", &q, 0);
	char hca[128];

	(void)state;
	assert_int_equal(r->nrails, 0);
	assert_int_equal(r->nccl_gid_index, -1);
	assert_string_equal(r->rdma_dev,
			    "mlx5_0"); /* the bootstrap port (net1) is still reported */
	nd_result_free(r);
	q.rails = "net2,mlx5_3:1";
	r = detect(NULL, &q, 0);
	assert_int_equal(nd_rails_hca(r, hca, sizeof(hca)), 0);
	assert_string_equal(hca, "mlx5_1:1,mlx5_3:1");
	nd_result_free(r);
	q.rails = "net9";
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_non_null(strstr(g_err, "--rails net9"));
	q.rails = "net1,bad name";
	detect(NULL, &q, GX_EUSAGE);
}

static void test_rdma_dev_is_the_rail_set(void **state)
{
	struct nd_request q = {.rdma_dev = "mlx5_2,mlx5_0:1"};
	struct nd_result *r = detect("rails4.inv", &q, 0);
	char hca[128];

	(void)state;
	assert_string_equal(r->iface, "net3"); /* the first device's netdev */
	assert_non_null(strstr(r->reason, "1: --rdma-dev mlx5_2 serves net3"));
	assert_int_equal(nd_rails_hca(r, hca, sizeof(hca)), 0);
	assert_string_equal(hca, "mlx5_2:1,mlx5_0:1");
	nd_result_free(r);
	q.rdma_dev = "mlx5_9";
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_string_equal(g_err, "--rdma-dev mlx5_9: no such RDMA device");
	q.rdma_dev = "mlx5_0:2";
	q.iface = "net1";
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_non_null(strstr(g_err, "mlx5_0:2"));
	q.rdma_dev = "mlx5_0:x";
	detect(NULL, &q, GX_EUSAGE);
}

static void test_mixed_rails(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("rails_mixed.inv", &q, 0);
	char hca[128];

	(void)state;
	assert_int_equal(nd_rails_hca(r, hca, sizeof(hca)), 0);
	assert_string_equal(hca, "mlx5_0:1,mlx5_2:1,mlx5_9:1"); /* net1, net2, net10 */
	assert_int_equal(r->rails[1].gid_index, 5);
	assert_int_equal(r->nccl_gid_index, -1);
	assert_non_null(strstr(r->nccl_gid_why, "differs"));
	nd_result_free(r);
}

static void test_ib(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("ib_port.inv", &q, 0);

	(void)state;
	assert_string_equal(r->iface, "ib0");
	assert_string_equal(r->rdma_dev, "mlx5_2");
	assert_int_equal(r->gid_index, 0);
	assert_int_equal(r->gid_type, ND_GID_IB);
	assert_int_equal(r->link_layer, ND_LL_IB);
	assert_int_equal(r->nrails, 1);
	assert_int_equal(r->nccl_gid_index, -1);
	assert_non_null(strstr(r->nccl_gid_why, "InfiniBand"));
	nd_result_free(r);
}

/* An IB rail whose IPoIB netdev is down: left out of the rails, with a warning naming it. */
static void test_ib_rail_netdev_down(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("ib_rail_down.inv", &q, 0);

	(void)state;
	assert_string_equal(r->iface, "ib0");
	assert_int_equal(r->nrails, 1);
	assert_string_equal(r->rails[0].dev, "mlx5_2");
	assert_int_equal(r->nwarnings, 1);
	assert_string_equal(
	    r->warnings[0],
	    "mlx5_3:1 left out of the rails: its netdev ib1 is down (administratively)");
	nd_result_free(r);
}

/* A VLAN child serves the port: its link-local-only parent is not "left out". */
static void test_vlan_rail_no_false_warning(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("vlan_rail.inv", &q, 0);

	(void)state;
	assert_string_equal(r->iface, "eth1.100");
	assert_int_equal(r->nrails, 1);
	assert_string_equal(r->rails[0].iface, "eth1.100");
	assert_int_equal(r->nwarnings, 0);
	nd_result_free(r);
}

static void test_network_status_step(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;
	char path[PATH_MAX];

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("tcp_only.inv");
	assert_int_equal(
	    nd_netstatus_load(fx_path("ns_macvlan.json", path, sizeof(path)), g_inv, g_err, 512),
	    0);
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1"); /* not the faster net2: Multus said net1 */
	assert_string_equal(r->network, "default/macvlan-conf");
	assert_non_null(strstr(passed_why(r, "net2"), "network-status names net1"));
	nd_result_free(r);
	q.network = "macvlan-conf";
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	nd_result_free(r);
	q.network = "other";
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_string_equal(g_err, "--network other: not in network-status");
}

static void test_network_status_rdma_device(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;
	char path[PATH_MAX];

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("shared_roce.inv");
	assert_int_equal(
	    nd_netstatus_load(fx_path("ns_sriov.json", path, sizeof(path)), g_inv, g_err, 512), 0);
	/* Multus names net1 with mlx5_4, which has no GID of net1 here: warn, use the GID table;
	 * and an address net1 does not hold (this file is another pod's): warn, keep net1's */
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	assert_string_equal(r->rdma_dev, "mlx5_0");
	assert_string_equal(r->addr4, "192.168.10.11");
	assert_int_equal(r->nwarnings, 2);
	assert_non_null(strstr(r->warnings[0], "lists 192.168.20.11 for default/sriov-rdma-a, "
					       "which net1 does not hold"));
	assert_non_null(strstr(r->warnings[1], "mlx5_4"));
	nd_result_free(r);
	q.network = "sriov-rdma-b"; /* net2 does not exist in this pod */
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_non_null(strstr(g_err, "net2"));
}

/* network-status only under the older networks-status key (a downward-API file): used. */
static void test_network_status_older_key(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;
	char path[PATH_MAX];

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("tcp_only.inv");
	assert_int_equal(nd_netstatus_load(fx_path("ns_annotations_old.txt", path, sizeof(path)),
					   g_inv, g_err, 512),
			 0);
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1"); /* not the faster net2: Multus said net1 */
	assert_string_equal(r->network, "default/macvlan-conf");
	assert_int_equal(r->nnotes, 1);
	assert_non_null(strstr(r->notes[0], "older k8s.v1.cni.cncf.io/networks-status"));
	nd_result_free(r);
}

/* network-status names a link with only a link-local address: exit 4, the same line as
 * without network-status (never a choice with no address). */
static void test_network_status_link_local(void **state)
{
	struct nd_request q = {0};
	char path[PATH_MAX];

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("tcp_only.inv");
	assert_int_equal(
	    nd_netstatus_load(fx_path("ns_linklocal.json", path, sizeof(path)), g_inv, g_err, 512),
	    0);
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_string_equal(g_err, "net5 has only link-local addresses");
	/* and the same link without network-status, when it is the only secondary */
	nd_inventory_free(g_inv);
	g_inv = fx_load("tcp_only.inv");
	g_inv->links[2].admin_up = g_inv->links[3].admin_up = g_inv->links[4].admin_up = 0;
	detect(NULL, &q, GX_ENOSECONDARY);
	assert_non_null(strstr(g_err, "net5 has only link-local addresses"));
}

/* net1 holds two IPv4 addresses; network-status lists the second: that one is used. */
static void test_network_status_address(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;
	char path[PATH_MAX];

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("pod_two_addrs.inv");
	r = detect(NULL, &q, 0);
	assert_string_equal(r->addr4, "192.168.10.11"); /* without network-status: the first */
	nd_result_free(r);
	assert_int_equal(nd_netstatus_load(fx_path("ns_second_addr.json", path, sizeof(path)),
					   g_inv, g_err, 512),
			 0);
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	assert_string_equal(r->addr4, "192.168.10.12");
	assert_int_equal(r->prefix4, 24);
	assert_non_null(strstr(r->reason, "2: address 192.168.10.12 as network-status lists it"));
	assert_int_equal(r->nwarnings, 0);
	nd_result_free(r);
	/* it lists one net1 does not hold: said, and the kernel's is kept */
	free(g_inv->nets[1].ips[0]);
	g_inv->nets[1].ips[0] = strdup("192.168.10.99");
	r = detect(NULL, &q, 0);
	assert_string_equal(r->addr4, "192.168.10.11");
	assert_int_equal(r->nwarnings, 1);
	assert_string_equal(r->warnings[0], "network-status lists 192.168.10.99 for "
					    "default/macvlan-conf, which net1 does not hold as a "
					    "usable address: using 192.168.10.11");
	nd_result_free(r);
}

/* A storage network listed before the RDMA one: the first is taken, the RDMA one named. */
static void test_network_status_rdma_listed_later(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;
	char path[PATH_MAX];

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("storage_rdma.inv");
	assert_int_equal(nd_netstatus_load(fx_path("ns_storage_rdma.json", path, sizeof(path)),
					   g_inv, g_err, 512),
			 0);
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	assert_string_equal(r->network, "default/storage-net");
	assert_int_equal(r->nwarnings, 1);
	assert_string_equal(r->warnings[0],
			    "network-status lists default/storage-net (net1) first, so it carries "
			    "the bootstrap; default/rdma-net (net2) after it carries RDMA device "
			    "mlx5_4: pick it with --network default/rdma-net");
	nd_result_free(r);
	q.network = "rdma-net";
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net2");
	assert_string_equal(r->rdma_dev, "mlx5_4");
	assert_int_equal(r->nwarnings, 0);
	nd_result_free(r);
	q.network = NULL; /* --rdma off: RDMA is not wanted, nothing to say */
	q.rdma_mode = ND_RDMA_OFF;
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	assert_int_equal(r->nwarnings, 0);
	nd_result_free(r);
}

static void test_memlock(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("shared_roce.inv");
	g_inv->memlock = 64 << 10;
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	assert_false(r->rdma_usable);
	assert_int_equal(r->nrails, 0);
	assert_int_equal(r->nwarnings, 1);
	assert_non_null(strstr(r->warnings[0], "RLIMIT_MEMLOCK is 64 KiB"));
	assert_non_null(strstr(r->warnings[0], "IPC_LOCK"));
	nd_result_free(r);
	q.rdma_mode = ND_RDMA_REQUIRE;
	detect(NULL, &q, GX_ENORDMA);
	assert_non_null(strstr(g_err, "--rdma require: RLIMIT_MEMLOCK"));
	g_inv->ipc_lock = 1; /* IPC_LOCK makes the limit irrelevant */
	r = detect(NULL, &q, 0);
	assert_true(r->rdma_usable);
	assert_int_equal(r->nrails, 1);
	nd_result_free(r);
}

static void test_uverbs_missing(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r;

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("shared_roce.inv");
	for (size_t i = 0; i < g_inv->ndevs; i++)
		g_inv->devs[i].uverbs_ok = 0;
	r = detect(NULL, &q, 0);
	assert_string_equal(r->iface, "net1");
	assert_false(r->rdma_usable);
	assert_int_equal(r->nrails, 0);
	assert_int_equal(r->nwarnings, 1);
	assert_non_null(strstr(r->warnings[0], "mlx5_0 (no /dev/infiniband/uverbs0)"));
	assert_non_null(strstr(r->warnings[0], "using TCP"));
	nd_result_free(r);
	q.rdma_mode = ND_RDMA_REQUIRE;
	detect(NULL, &q, GX_ENORDMA);
	assert_non_null(strstr(g_err, "visible but unusable"));
}

static void test_rdma_off_and_require_without_devices(void **state)
{
	struct nd_request q = {.rdma_mode = ND_RDMA_OFF};
	struct nd_result *r = detect("shared_roce.inv", &q, 0);

	(void)state;
	assert_string_equal(r->iface, "net1");
	assert_non_null(strstr(r->reason, "4: net1"));
	assert_string_equal(r->rdma_dev, "");
	assert_int_equal(r->nrails, 0);
	assert_string_equal(r->nccl_gid_why, "--rdma off");
	nd_result_free(r);
	q.rdma_mode = ND_RDMA_REQUIRE;
	detect("tcp_only.inv", &q, GX_ENORDMA);
	assert_string_equal(g_err, "--rdma require: no RDMA devices (Function not implemented)");
	q.rdma_mode = ND_RDMA_AUTO;
	r = detect("port_down.inv", &q, 0);
	assert_string_equal(r->iface, "net1");
	assert_non_null(strstr(r->reason, "4: net1"));
	assert_non_null(strstr(r->reason, "mlx5_0 port 1 of net1 is not active"));
	assert_false(r->rdma_usable);
	nd_result_free(r);
}

static void test_json_and_table(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("shared_roce.inv", &q, 0);
	json_t *j = nd_result_json(r), *c, *dev;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(j);
	c = json_object_get(j, "choice");
	assert_string_equal(json_string_value(json_object_get(c, "iface")), "net1");
	assert_int_equal(json_integer_value(json_object_get(c, "gid_index")), 13);
	assert_string_equal(json_string_value(json_object_get(c, "gid_type")), "RoCE v2");
	assert_string_equal(json_string_value(json_object_get(c, "link_layer")), "Ethernet");
	assert_int_equal(json_array_size(json_object_get(c, "addrs")), 3);
	assert_int_equal(json_array_size(json_object_get(j, "links")), 3);
	assert_int_equal(json_array_size(json_object_get(j, "rails")), 1);
	assert_int_equal(json_array_size(json_object_get(j, "passed_over")), 2);
	assert_true(json_is_array(json_object_get(j, "warnings")));
	dev = json_array_get(json_object_get(j, "rdma"), 0);
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(dev, "ports"), 0), "netdev")),
			    "net1");
	json_decref(j);
	f = open_memstream(&buf, &len);
	nd_result_print(f, r);
	fclose(f);
	assert_non_null(strstr(buf, "<- chosen"));
	assert_non_null(strstr(buf, "NCCL_IB_GID_INDEX: 13"));
	assert_non_null(strstr(buf, "passed over: eth0 is the pod network (eth0 in a pod)"));
	free(buf);
	nd_result_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_tcp_fastest_secondary, teardown),
	    cmocka_unit_test_teardown(test_iface_name_and_cidr, teardown),
	    cmocka_unit_test_teardown(test_only_primary, teardown),
	    cmocka_unit_test_teardown(test_net1_down_named, teardown),
	    cmocka_unit_test_teardown(test_shared_rdma_choice, teardown),
	    cmocka_unit_test_teardown(test_rails_name_order_and_gid, teardown),
	    cmocka_unit_test_teardown(test_rails_ipv6_only, teardown),
	    cmocka_unit_test_teardown(test_rails_select, teardown),
	    cmocka_unit_test_teardown(test_rdma_dev_is_the_rail_set, teardown),
	    cmocka_unit_test_teardown(test_mixed_rails, teardown),
	    cmocka_unit_test_teardown(test_ib, teardown),
	    cmocka_unit_test_teardown(test_ib_rail_netdev_down, teardown),
	    cmocka_unit_test_teardown(test_vlan_rail_no_false_warning, teardown),
	    cmocka_unit_test_teardown(test_network_status_step, teardown),
	    cmocka_unit_test_teardown(test_network_status_rdma_device, teardown),
	    cmocka_unit_test_teardown(test_network_status_older_key, teardown),
	    cmocka_unit_test_teardown(test_network_status_link_local, teardown),
	    cmocka_unit_test_teardown(test_network_status_address, teardown),
	    cmocka_unit_test_teardown(test_network_status_rdma_listed_later, teardown),
	    cmocka_unit_test_teardown(test_memlock, teardown),
	    cmocka_unit_test_teardown(test_uverbs_missing, teardown),
	    cmocka_unit_test_teardown(test_rdma_off_and_require_without_devices, teardown),
	    cmocka_unit_test_teardown(test_json_and_table, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
