/* SPDX-License-Identifier: MIT */
/*
 * test_nd_route.c - the kernel's route answer (RTM_GETROUTE) against this machine's own
 * namespace, read-only: loopback is always there. The routed-leaf, overlapping and
 * weak-host shapes run on real namespaces in tests/e2e/case_path_*.sh; here the question
 * itself, its errors and the line it writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "netdetect/netdetect.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <string.h>

static void test_route_loopback_is_local(void **state)
{
	struct nd_routes *rt = NULL;
	struct nd_route r;
	char why[512] = "";

	(void)state;
	assert_int_equal(nd_routes_open(&rt), 0);
	assert_int_equal(nd_routes_get(rt, "127.0.0.1", "127.0.0.1", &r), 0);
	assert_int_equal(r.type, RTN_LOCAL);
	assert_string_equal(r.oif, "lo");
	/* a second question on the same socket */
	assert_int_equal(nd_routes_get(rt, NULL, "127.0.0.2", &r), 0);
	assert_string_equal(r.oif, "lo");
	/* this host's own address: the path never leaves it, whatever iface is asked for */
	assert_int_equal(
	    nd_route_check(rt, "127.0.0.1", "127.0.0.1", 8, "net1", NULL, why, sizeof(why)), 0);
	nd_routes_close(rt);
}

static void test_route_errors(void **state)
{
	struct nd_routes *rt = NULL;
	struct nd_route r;
	char why[512] = "";
	int rc;

	(void)state;
	assert_int_equal(nd_routes_open(&rt), 0);
	assert_int_equal(nd_routes_get(rt, NULL, "not-an-address", &r), -EINVAL);
	assert_int_equal(nd_routes_get(rt, "::1", "127.0.0.1", &r), -EINVAL); /* families */
	/* a source address that is not this host's: the kernel refuses the question */
	rc = nd_routes_get(rt, "192.0.2.77", "127.0.0.1", &r);
	assert_true(rc < 0);
	rc = nd_route_check(rt, "192.0.2.77", "127.0.0.1", 0, "lo", NULL, why, sizeof(why));
	assert_int_equal(rc, GX_EROUTE);
	assert_non_null(strstr(why, "the kernel has no route to 127.0.0.1 from 192.0.2.77"));
	nd_routes_close(rt);
	nd_routes_close(NULL);
}

/* The line names both ends, the interface taken, the gateway and the prefix missing. */
static void test_route_why_line(void **state)
{
	struct nd_route r;
	char why[512];

	(void)state;
	memset(&r, 0, sizeof(r));
	strcpy(r.oif, "eth0");
	strcpy(r.gateway, "10.66.0.1");
	nd_route_why(&r, "192.168.67.102", "192.168.66.100", 24, "net1", NULL, why, sizeof(why));
	assert_string_equal(why,
			    "the kernel routes 192.168.66.100 from 192.168.67.102 via 10.66.0.1 "
			    "dev eth0: its net1 attachment has no route to 192.168.66.0/24");
	r.gateway[0] = '\0';
	nd_route_why(&r, "10.66.0.102", "10.66.0.100", 24, "net1",
		     "net1 10.66.0.102/24 overlaps eth0 10.66.0.12/24", why, sizeof(why));
	assert_string_equal(why, "the kernel routes 10.66.0.100 from 10.66.0.102 dev eth0, not "
				 "through net1: net1 10.66.0.102/24 overlaps eth0 10.66.0.12/24");
	nd_route_why(&r, "fd66::102", "fd66:1::100", 64, "net1", "", why, sizeof(why));
	assert_non_null(strstr(why, "has no route to fd66:1::/64"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_route_loopback_is_local),
	    cmocka_unit_test(test_route_errors),
	    cmocka_unit_test(test_route_why_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
