/* SPDX-License-Identifier: MIT */
/*
 * test_nd_rails_tcp.c - netdev rails (netdetect/README.md "Rails"):
 * with no RDMA rail, `--rails LIST` of netdevs and nd_rails_netdevs() (check
 * --rails auto) list up secondary netdevs with a global address as rails
 * without a device; auto stays RDMA-only; nothing of it reaches the RDMA
 * verdicts (rdma_usable, NCCL GID index). Fixtures: tests/fixtures/netdetect.
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
	else
		nd_result_free(r);
	return rc == 0 ? r : NULL;
}

static void assert_netdev_rail(const struct nd_rail *x, const char *iface, const char *addr,
			       int speed, int mtu)
{
	assert_string_equal(x->dev, "");
	assert_int_equal(x->port, 0);
	assert_string_equal(x->iface, iface);
	assert_string_equal(x->addr, addr);
	assert_int_equal(x->gid_index, -1);
	assert_int_equal(x->gid_type, ND_GID_NONE);
	assert_int_equal(x->gid_v2_v4, -1);
	assert_int_equal(x->link_layer, ND_LL_UNSPEC);
	assert_int_equal(x->rate_mbps, speed);
	assert_int_equal(x->netdev_mtu, mtu);
	assert_int_equal(x->mtu, 0);
	assert_true(x->ifindex > 0);
}

/* auto stays RDMA-only; nd_rails_netdevs() adds every usable secondary, name order. */
static void test_auto_and_netdevs(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("tcp_only.inv", &q, 0);
	char hca[64];

	(void)state;
	assert_int_equal(r->nrails, 0);
	assert_int_equal(nd_rails_hca(r, hca, sizeof(hca)), -ENOENT);
	/* net3 no carrier, net5 link-local only, eth0 default route, lo: not rails */
	assert_int_equal(nd_rails_netdevs(r), 2);
	assert_int_equal(r->nrails, 2);
	assert_netdev_rail(&r->rails[0], "net1", "192.168.10.11", 10000, 1500);
	assert_netdev_rail(&r->rails[1], "net2", "192.168.20.11", 100000, 9000);
	/* the RDMA verdicts are untouched: no device, no GID index for NCCL */
	assert_false(r->rdma_usable);
	assert_int_equal(r->nccl_gid_index, -1);
	assert_string_equal(r->rdma_dev, "");
	/* idempotent: rails present -> nothing added */
	assert_int_equal(nd_rails_netdevs(r), 2);
	assert_int_equal(r->nrails, 2);
	nd_result_free(r);
}

/* An RDMA node: nd_rails_netdevs() leaves the RDMA rails alone. */
static void test_netdevs_keeps_rdma_rails(void **state)
{
	struct nd_request q = {0};
	struct nd_result *r = detect("rails4.inv", &q, 0);
	char hca[128];

	(void)state;
	assert_int_equal(r->nrails, 4);
	assert_int_equal(nd_rails_netdevs(r), 4);
	assert_int_equal(nd_rails_hca(r, hca, sizeof(hca)), 0);
	assert_string_equal(hca, "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
	nd_result_free(r);
}

static void test_list_of_netdevs(void **state)
{
	struct nd_request q = {.rails = "net2,net1"};
	struct nd_result *r = detect("tcp_only.inv", &q, 0);

	(void)state;
	assert_int_equal(r->nrails, 2); /* name order, not list order */
	assert_netdev_rail(&r->rails[0], "net1", "192.168.10.11", 10000, 1500);
	assert_netdev_rail(&r->rails[1], "net2", "192.168.20.11", 100000, 9000);
	assert_non_null(strstr(r->reason, "rails: netdevs net2,net1 (TCP only"));
	assert_string_equal(r->nccl_gid_why, "no RDMA rails");
	assert_false(r->rdma_usable);
	assert_int_equal(r->nwarnings, 0);
	assert_string_equal(r->iface, "net2"); /* the bootstrap choice is unchanged */
	nd_result_free(r);
	/* a repeated entry is one rail */
	q.rails = "net1,net1";
	r = detect(NULL, &q, 0);
	assert_int_equal(r->nrails, 1);
	nd_result_free(r);
	/* --rdma off: the same */
	q.rails = "net1";
	q.rdma_mode = ND_RDMA_OFF;
	r = detect(NULL, &q, 0);
	assert_int_equal(r->nrails, 1);
	assert_string_equal(r->rails[0].iface, "net1");
	assert_string_equal(r->nccl_gid_why, "--rdma off");
	nd_result_free(r);
}

static void test_list_errors(void **state)
{
	static const struct {
		const char *list, *why;
	} bad[] = {
	    {"net1,net3", "--rails net3: not an RDMA rail, nor an up netdev with a global address "
			  "(is down (no carrier))"},
	    {"net5", "(has only link-local addresses)"},
	    {"eth0", "(is the pod network (eth0 in a pod))"},
	    {"lo", "(is loopback)"},
	    {"net9", "--rails net9: not an RDMA rail, nor an up netdev with a global address (no "
		     "such netdev)"},
	    {"mlx5_0:1", "--rails mlx5_0:1: "},
	};
	struct nd_request q = {0};
	size_t i;

	(void)state;
	nd_inventory_free(g_inv);
	g_inv = fx_load("tcp_only.inv");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q.rails = bad[i].list;
		detect(NULL, &q, GX_ENOSECONDARY);
		if (!strstr(g_err, bad[i].why))
			fail_msg("%s: '%s' lacks '%s'", bad[i].list, g_err, bad[i].why);
	}
	q.rails = "net1,bad name";
	detect(NULL, &q, GX_EUSAGE);
}

/* RDMA on the node: a list naming a netdev without a port is still an error. */
static void test_list_with_rdma(void **state)
{
	struct nd_request q = {.rails = "net4"};
	struct nd_result *r;

	(void)state;
	detect("rails_mixed.inv", &q, GX_ENOSECONDARY);
	assert_non_null(strstr(g_err, "--rails net4: not an RDMA rail of this pod"));
	q.rails = "net1";
	r = detect(NULL, &q, 0);
	assert_int_equal(r->nrails, 1);
	assert_string_equal(r->rails[0].dev, "mlx5_0");
	nd_result_free(r);
}

static int teardown(void **state)
{
	(void)state;
	nd_inventory_free(g_inv);
	g_inv = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_auto_and_netdevs),
	    cmocka_unit_test(test_netdevs_keeps_rdma_rails),
	    cmocka_unit_test(test_list_of_netdevs),
	    cmocka_unit_test(test_list_errors),
	    cmocka_unit_test(test_list_with_rdma),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
