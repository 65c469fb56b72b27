/* SPDX-License-Identifier: MIT */
/*
 * test_nd_gid.c - the RDMA model over recorded shapes: GID ownership
 * (ifindex AND address), port -> netdev binding (RoCE by ifindex+address, IB by IPoIB
 * lladdr), the GID choice (RoCE v2 IPv4, v2 IPv6, v1; IB 0), port down, empty
 * table, no RDMA in the kernel, devices that cannot be opened.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/nd_fixture.h"

static const struct nd_link *link_named(const struct nd_inventory *inv, const char *n)
{
	const struct nd_link *l = nd_link_by_name(inv, n);

	assert_non_null(l);
	return l;
}

static void test_shared_ownership(void **state)
{
	struct nd_inventory *inv = fx_load("shared_roce.inv");
	const struct nd_port *p = fx_port(inv, "mlx5_0", 1);
	const struct nd_link *net1 = link_named(inv, "net1");
	size_t i, owned = 0;

	(void)state;
	assert_non_null(p);
	assert_int_equal(p->ngids, 14); /* holes at 4-5 kept out */
	for (i = 0; i < p->ngids; i++) {
		int mine = nd_gid_owned(&p->gids[i], net1);

		owned += (size_t)mine;
		/* the other pod's macvlan shares ifindex 3 but not the address */
		if (p->gids[i].index >= 6 && p->gids[i].index <= 9)
			assert_false(mine);
		if (p->gids[i].index >= 10)
			assert_true(mine);
	}
	assert_int_equal(owned, 6);
	assert_ptr_equal(nd_port_link(inv, p), net1);
	/* mlx5_1 only carries the host's netdev: not ours */
	assert_null(nd_port_link(inv, fx_port(inv, "mlx5_1", 1)));
	nd_inventory_free(inv);
}

static void test_shared_choice_v2_ipv4(void **state)
{
	struct nd_inventory *inv = fx_load("shared_roce.inv");
	struct nd_gid_pick g;

	(void)state;
	nd_gid_choose(fx_port(inv, "mlx5_0", 1), link_named(inv, "net1"), &g);
	assert_int_equal(g.index, 13); /* not 9: that is the other pod's 192.168.10.12 */
	assert_int_equal(g.type, ND_GID_ROCE_V2);
	assert_int_equal(g.v2_v4, 13);
	assert_int_equal(g.v2_v6, 15);
	nd_inventory_free(inv);
}

static void test_ifindex_alone_is_not_enough(void **state)
{
	struct nd_inventory *inv = fx_load("shared_roce.inv");
	struct nd_link *net1 = (struct nd_link *)link_named(inv, "net1");
	struct nd_gid_pick g;

	(void)state;
	/* drop our IPv4: the other pod's v4 entries (same ifindex) must still not count */
	net1->addrs[0].a[3] = 99;
	nd_gid_choose(fx_port(inv, "mlx5_0", 1), net1, &g);
	assert_int_equal(g.v2_v4, -1);
	assert_int_equal(g.index, 15); /* RoCE v2 IPv6 global next */
	assert_int_equal(g.type, ND_GID_ROCE_V2);
	/* and without the global IPv6 address: v1 remains, never a foreign entry */
	net1->addrs[1].a[15] = 0x99;
	nd_gid_choose(fx_port(inv, "mlx5_0", 1), net1, &g);
	assert_int_equal(g.v2_v6, -1);
	assert_int_equal(g.type, ND_GID_ROCE_V1);
	assert_int_equal(g.index, 10); /* our link-local v1 entry */
	nd_inventory_free(inv);
}

static void test_v1_only(void **state)
{
	struct nd_inventory *inv = fx_load("shared_roce.inv");
	struct nd_device *d = (struct nd_device *)nd_dev_by_name(inv, "mlx5_0");
	struct nd_port *p = &d->ports[0];
	struct nd_gid_pick g;
	size_t i;

	(void)state;
	for (i = 0; i < p->ngids; i++)
		if (p->gids[i].type == ND_GID_ROCE_V2)
			p->gids[i].type = ND_GID_ROCE_V1;
	nd_gid_choose(p, link_named(inv, "net1"), &g);
	assert_int_equal(g.type, ND_GID_ROCE_V1);
	assert_int_equal(g.index, 12); /* v1 of the IPv4 address first */
	assert_int_equal(g.v2_v4, -1);
	nd_inventory_free(inv);
}

static void test_ib_ipoib_mapping(void **state)
{
	struct nd_inventory *inv = fx_load("ib_port.inv");
	const struct nd_port *p = fx_port(inv, "mlx5_2", 1);
	const struct nd_link *ib0 = link_named(inv, "ib0");
	struct nd_gid_pick g;

	(void)state;
	assert_int_equal(p->link_layer, ND_LL_IB);
	assert_ptr_equal(nd_port_link(inv, p), ib0);
	assert_null(nd_port_link(inv, fx_port(inv, "mlx5_3", 1)));
	nd_gid_choose(p, ib0, &g);
	assert_int_equal(g.index, 0);
	assert_int_equal(g.type, ND_GID_IB);
	nd_inventory_free(inv);
}

static void test_port_down_and_empty(void **state)
{
	struct nd_inventory *inv = fx_load("port_down.inv");
	const struct nd_device *d;
	const struct nd_port *p;
	struct nd_gid_pick g;

	(void)state;
	assert_int_equal(nd_link_port(inv, link_named(inv, "net1"), &d, &p), 0);
	assert_int_not_equal(p->state, ND_PORT_ACTIVE);
	nd_gid_choose(p, link_named(inv, "net1"), &g);
	assert_int_equal(g.index, 3); /* still reported */
	nd_inventory_free(inv);

	inv = fx_load("empty_table.inv");
	p = fx_port(inv, "mlx5_0", 1);
	assert_int_equal(p->ngids, 0);
	assert_null(nd_port_link(inv, p));
	nd_gid_choose(p, link_named(inv, "net1"), &g);
	assert_int_equal(g.index, -1);
	assert_int_equal(g.type, ND_GID_NONE);
	assert_int_equal(nd_link_port(inv, link_named(inv, "net1"), &d, &p), -ENOENT);
	nd_inventory_free(inv);
}

static void test_no_rdma_kernel(void **state)
{
	struct nd_inventory *inv = fx_load("tcp_only.inv");

	(void)state;
	assert_int_equal(inv->rdma_err, -ENOSYS);
	assert_int_equal(inv->ndevs, 0);
	nd_inventory_free(inv);
}

static void test_open_failure(void **state)
{
	static struct fx f;
	struct nd_inventory *inv = fx_load_with("shared_roce.inv", &f);
	struct nd_verbs_ops ops;
	struct nd_inventory *again = calloc(1, sizeof(*again));

	(void)state;
	nd_inventory_free(inv);
	f.devs[0].open_err = -EACCES;
	f.devs[1].v.uverbs_ok = 0;
	ops = fx_ops(&f);
	assert_int_equal(nd_rdma_collect(&ops, again), 0);
	assert_int_equal(f.opens, 0);
	assert_int_equal(again->ndevs, 2);
	assert_int_equal(again->devs[0].open_err, -EACCES);
	assert_int_equal(again->devs[0].nports, 0);
	assert_false(nd_dev_usable(&again->devs[0]));
	assert_false(nd_dev_usable(&again->devs[1]));
	assert_int_equal(again->devs[1].nports, 1);
	nd_inventory_free(again);
}

static void test_gid_text(void **state)
{
	struct nd_inventory *inv = fx_load("shared_roce.inv");
	char buf[64];

	(void)state;
	nd_gid_str(fx_port(inv, "mlx5_0", 1)->gids[11].raw, buf, sizeof(buf));
	assert_string_equal(buf, "::ffff:192.168.10.11");
	assert_string_equal(nd_gid_type_str(ND_GID_ROCE_V2), "RoCE v2");
	assert_string_equal(nd_link_layer_str(ND_LL_IB), "InfiniBand");
	nd_inventory_free(inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shared_ownership),
	    cmocka_unit_test(test_shared_choice_v2_ipv4),
	    cmocka_unit_test(test_ifindex_alone_is_not_enough),
	    cmocka_unit_test(test_v1_only),
	    cmocka_unit_test(test_ib_ipoib_mapping),
	    cmocka_unit_test(test_port_down_and_empty),
	    cmocka_unit_test(test_no_rdma_kernel),
	    cmocka_unit_test(test_open_failure),
	    cmocka_unit_test(test_gid_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
