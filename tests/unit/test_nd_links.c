/* SPDX-License-Identifier: MIT */
/*
 * test_nd_links.c - the netlink collector against this machine's own
 * namespace (read-only: lo is always there), nd_addr_on_local_iface, and the
 * real verbs ops where the kernel has no RDMA (list fails, nothing crashes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/nd_fixture.h"

static void test_collect_lo(void **state)
{
	struct nd_inventory *inv = calloc(1, sizeof(*inv));
	struct nd_result r0 = {0};
	const struct nd_link *lo;
	char buf[ND_WHY_MAX];
	const char *why = NULL;
	char err[256] = "";
	size_t i;
	int has127 = 0;

	(void)state;
	assert_int_equal(nd_links_collect(inv, err, sizeof(err)), 0);
	assert_true(inv->nlinks >= 1);
	for (i = 1; i < inv->nlinks; i++) /* sorted for bsearch */
		assert_true(inv->links[i - 1].ifindex < inv->links[i].ifindex);
	lo = nd_link_by_name(inv, "lo");
	assert_non_null(lo);
	assert_ptr_equal(nd_link_by_index(inv, lo->ifindex), lo);
	assert_true(lo->is_loopback);
	assert_string_equal(lo->kind, "loopback");
	assert_true(lo->flags & IFF_LOOPBACK);
	assert_false(lo->peer_here);
	assert_int_equal(lo->master, 0);
	r0.inv = inv;
	assert_string_equal(nd_secondary_why(&r0, lo, buf, sizeof(buf)), "is loopback");
	for (i = 0; i < lo->naddrs; i++)
		has127 |= lo->addrs[i].family == AF_INET && !strcmp(lo->addrs[i].str, "127.0.0.1");
	if (lo->admin_up) {
		assert_true(nd_link_is_up(lo, &why));
		assert_true(has127);
		assert_int_equal(lo->addrs[0].scope, 254);
	}
	assert_null(nd_link_by_name(inv, "no-such-if0"));
	nd_inventory_free(inv);
}

static void test_addr_on_local_iface(void **state)
{
	(void)state;
	assert_int_equal(nd_addr_on_local_iface("127.0.0.1"), 1);
	assert_int_equal(nd_addr_on_local_iface("203.0.113.77"), 0);
	assert_int_equal(nd_addr_on_local_iface("2001:db8::77"), 0);
	assert_int_equal(nd_addr_on_local_iface("not-an-ip"), -EINVAL);
}

static void test_real_verbs_without_rdma(void **state)
{
	struct nd_inventory *inv = calloc(1, sizeof(*inv));

	(void)state;
	/* here: ibv_get_device_list() == NULL (ENOSYS) or a list; either way no crash */
	assert_int_equal(nd_rdma_collect(nd_verbs_real(), inv), 0);
	if (inv->rdma_err)
		assert_int_equal(inv->ndevs, 0);
	nd_inventory_free(inv);
}

static void test_detect_real_lo(void **state)
{
	struct nd_request q = {.iface = "lo", .rdma_mode = ND_RDMA_AUTO};
	struct nd_result *r = NULL;
	char err[256] = "";
	json_t *j;

	(void)state;
	assert_int_equal(nd_detect(&q, &r, err, sizeof(err)), 0);
	assert_string_equal(r->iface, "lo");
	assert_string_equal(r->addr4, "127.0.0.1");
	j = nd_result_json(r);
	assert_non_null(j);
	assert_true(json_array_size(json_object_get(j, "links")) >= 1);
	json_decref(j);
	nd_result_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_collect_lo),
	    cmocka_unit_test(test_addr_on_local_iface),
	    cmocka_unit_test(test_real_verbs_without_rdma),
	    cmocka_unit_test(test_detect_real_lo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
