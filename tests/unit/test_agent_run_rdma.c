/* SPDX-License-Identifier: MIT */
/*
 * test_agent_run_rdma.c - agent_rdma_verdict (agent/pipeline/run_rdma.c): `--rdma
 * require` means the RDMA-CM path to the coordinator was really exercised, never
 * that a device is merely present; a context or listen failure is never a silent TCP fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/pipeline/out_int.h"
#include "agent/pipeline/run_int.h"
#include "nd_fixture.h"

static struct agent_rdma_facts member(int mode)
{
	struct agent_rdma_facts f = {
	    .mode = mode,
	    .have_dev = 1,
	    .dev = "rxe1",
	    .listen_err = "",
	    .members = 2,
	    .verified = 1,
	    .verify_us = -1,
	    .coord_has_dev = 1,
	    .coord_name = "job-worker-0",
	    .coord_dev = "rxe0",
	};
	return f;
}

static struct agent_rdma_facts coord(int mode)
{
	struct agent_rdma_facts f = member(mode);

	f.is_coord = 1;
	f.dev = "rxe0";
	f.verified = 0;
	f.answered = 2;
	return f;
}

static void expect(const struct agent_rdma_facts *f, int state, int fail_rc, const char *why)
{
	struct agent_rdma_verdict v;

	agent_rdma_verdict(f, &v);
	assert_int_equal(v.state, state);
	assert_int_equal(v.fail_rc, fail_rc);
	if (why && strcmp(v.why, why) != 0)
		fail_msg("why: got \"%s\", want \"%s\"", v.why, why);
}

static void test_member(void **state)
{
	struct agent_rdma_facts f = member(AGENT_RDMA_REQUIRE);

	(void)state;
	expect(&f, 1, 0,
	       "RDMA-CM connect + send/recv from rxe1 to the coordinator job-worker-0 (rxe0) "
	       "passed");
	f.verify_us = 12345;
	expect(&f, 1, 0,
	       "RDMA-CM connect + send/recv from rxe1 to the coordinator job-worker-0 (rxe0) "
	       "passed in 12.3 ms");
	/* a device is present, but the coordinator has none (or its listen failed) */
	f.coord_has_dev = 0;
	f.verified = 0;
	expect(&f, 0, GX_ERDZV,
	       "the coordinator job-worker-0 has no usable RDMA device or RDMA-CM listener: "
	       "not verified");
	f = member(AGENT_RDMA_AUTO);
	f.coord_has_dev = 0;
	f.verified = 0;
	expect(&f, 0, 0, NULL); /* auto: said once, not a failure */
	/* the context could not be made: no silent TCP fallback under require */
	f = member(AGENT_RDMA_REQUIRE);
	f.ctx_rc = -ENODEV;
	f.verified = 0;
	expect(&f, 0, GX_ENORDMA, "RDMA-CM unavailable on rxe1: No such device");
	/* the verification was skipped for any other reason */
	f = member(AGENT_RDMA_REQUIRE);
	f.verified = 0;
	expect(&f, 0, GX_ERDZV, "RDMA-CM from rxe1 to the coordinator job-worker-0 was not run");
}

static void test_coordinator(void **state)
{
	struct agent_rdma_facts f = coord(AGENT_RDMA_REQUIRE);

	(void)state;
	expect(&f, 1, 0, "2 of 2 members verified RDMA-CM to rxe0");
	f.answered = 1;
	expect(&f, 1, 0, "1 of 2 members verified RDMA-CM to rxe0");
	f.answered = 5; /* retries: never more than the members */
	expect(&f, 1, 0, "2 of 2 members verified RDMA-CM to rxe0");
	/* listening, but nobody came over RDMA-CM */
	f.answered = 0;
	expect(&f, 0, GX_ERDZV,
	       "no member verified RDMA-CM to rxe0 (none of 2 has a usable device?)");
	/* the listen failed: the rendezvous went on over TCP, require fails here (exit 4) */
	f = coord(AGENT_RDMA_REQUIRE);
	f.listen_err = "RDMA-CM listen on rxe0 (192.168.1.10) failed: No such device; verifying "
		       "over TCP only";
	f.answered = 0;
	expect(&f, 0, GX_ENORDMA, f.listen_err);
	f.mode = AGENT_RDMA_AUTO;
	expect(&f, 0, 0, f.listen_err);
	/* a world of one: nothing to verify with */
	f = coord(AGENT_RDMA_REQUIRE);
	f.members = 0;
	f.answered = 0;
	expect(&f, 0, GX_ERDZV, "no other pod to verify RDMA-CM on rxe0 with");
}

static void test_nothing_to_verify(void **state)
{
	struct agent_rdma_facts f = member(AGENT_RDMA_AUTO);

	(void)state;
	f.have_dev = 0; /* no device here: no verdict, no env key */
	expect(&f, -1, 0, "");
	f = coord(AGENT_RDMA_OFF);
	expect(&f, -1, 0, "");
}

static void test_gate(void **state)
{
	struct rdzv_rdma_rail r[3] = {
	    {.dev = "rxe0",
	     .netdev = "net1",
	     .bootstrap = 1,
	     .checked = 1,
	     .ok = 1,
	     .gid_index = 1},
	    {.dev = "rxe3", .netdev = "net2", .checked = 1, .ok = 1, .gid_index = 1},
	    {.dev = "mlx5_1", .netdev = "net3", .checked = 1, .ok = 1, .gid_index = 1},
	};
	char out[256], dropped[256];
	int gid = 7;

	(void)state;
	/* every rail verified: all kept, the index that carried them */
	assert_int_equal(agent_rdma_gate("rxe0:1,rxe3:1,mlx5_1:1", r, 3, 0, out, sizeof(out), &gid,
					 dropped, sizeof(dropped)),
			 0);
	assert_string_equal(out, "rxe0:1,rxe3:1,mlx5_1:1");
	assert_int_equal(gid, 1);
	assert_string_equal(dropped, "");
	/* one rail broken: left out and named; the indexes of the others differ: none */
	r[1].ok = 0;
	snprintf(r[1].why, sizeof(r[1].why), "to rxe9 (10.1.0.1): connect: timed out");
	r[2].gid_index = 3;
	assert_int_equal(agent_rdma_gate("rxe0:1,rxe3:1,mlx5_1:1", r, 3, 0, out, sizeof(out), &gid,
					 dropped, sizeof(dropped)),
			 1);
	assert_string_equal(out, "rxe0:1,mlx5_1:1");
	assert_int_equal(gid, -1);
	assert_string_equal(dropped, "net2 (rxe3): to rxe9 (10.1.0.1): connect: timed out");
	/* a rail the coordinator has no partner for is not verified either */
	r[2].ok = 0;
	r[2].checked = 0;
	snprintf(r[2].why, sizeof(r[2].why), "the coordinator has no rail on net3");
	assert_int_equal(agent_rdma_gate("rxe0:1,rxe3:1,mlx5_1:1", r, 3, 0, out, sizeof(out), &gid,
					 dropped, sizeof(dropped)),
			 2);
	assert_string_equal(out, "rxe0:1");
	assert_int_equal(gid, 1);
	/* coordinator: a rail no member verified on, a rail without listener */
	memset(r, 0, sizeof(r));
	snprintf(r[0].dev, sizeof(r[0].dev), "rxe0");
	r[0].bootstrap = r[0].served = 1;
	snprintf(r[1].dev, sizeof(r[1].dev), "rxe3");
	snprintf(r[1].netdev, sizeof(r[1].netdev), "net2");
	r[1].served = 1;
	r[1].answered = 2;
	snprintf(r[2].dev, sizeof(r[2].dev), "rxe6");
	snprintf(r[2].netdev, sizeof(r[2].netdev), "net3");
	r[2].served = 1;
	gid = 5;
	assert_int_equal(agent_rdma_gate("rxe0:1,rxe3:1,rxe6:1", r, 3, 1, out, sizeof(out), &gid,
					 dropped, sizeof(dropped)),
			 1);
	assert_string_equal(out, "rxe0:1,rxe3:1");
	assert_string_equal(dropped, "net3 (rxe6): no member verified RDMA-CM on it");
	assert_int_equal(gid, 5); /* the coordinator keeps netdetect's */
	r[1].served = 0;
	snprintf(r[1].why, sizeof(r[1].why), "rdma_bind_addr(10.1.0.1 port 29400): No such device");
	assert_int_equal(agent_rdma_gate("rxe0:1,rxe3:1,rxe6:1", r, 3, 1, out, sizeof(out), &gid,
					 dropped, sizeof(dropped)),
			 2);
	assert_string_equal(out, "rxe0:1");
	/* a device the rails do not know stays; too small an output is an error */
	assert_int_equal(
	    agent_rdma_gate("other:1", r, 3, 1, out, sizeof(out), &gid, dropped, sizeof(dropped)),
	    0);
	assert_string_equal(out, "other:1");
	assert_int_equal(agent_rdma_gate("rxe0:1", r, 3, 1, out, 4, &gid, dropped, sizeof(dropped)),
			 -ENOSPC);
}

/* NCCL_IB_DISABLE=1 exactly when netdetect found a device serving net1 that gxboot could not
 * use: memlock without IPC_LOCK here (NCCL's ibv_reg_mr would fail the same way), or its
 * port down; never with no device, a usable one, or --rdma off. */
static int ib_disabled(const char *fixture, long memlock, int ipc_lock, int mode)
{
	struct nd_request q = {.rdma_mode = mode};
	struct nd_inventory *inv = fx_load(fixture);
	struct agent_env_input in = {.master_addr = "192.168.10.10",
				     .master_port = 29500,
				     .world = 2,
				     .iface = "net1",
				     .addr = "192.168.10.11",
				     .nccl_gid_index = -1};
	struct agent_env e = {0};
	struct nd_result *r = NULL;
	char rails[256] = "", e2[512];
	int rc;

	if (memlock)
		inv->memlock = (uint64_t)memlock;
	inv->ipc_lock = ipc_lock;
	assert_int_equal(nd_detect_with(&q, inv, &r, e2, sizeof(e2)), 0);
	if (r->rdma_usable && nd_rails_hca(r, rails, sizeof(rails)) < 0)
		rails[0] = '\0';
	in.rails = rails;
	in.rdma_unusable = agent_rdma_unusable(r, mode);
	assert_int_equal(agent_env_ours(&in, &e, e2, sizeof(e2)), 0);
	rc = agent_env_get(&e, "NCCL_IB_DISABLE") != NULL;
	if (rc)
		assert_string_equal(agent_env_get(&e, "NCCL_IB_DISABLE"), "1");
	/* UCX is kept off the device by naming the interface alone */
	assert_string_equal(agent_env_get(&e, "UCX_NET_DEVICES"), rails[0] ? rails : "net1");
	agent_env_free(&e);
	nd_result_free(r);
	nd_inventory_free(inv);
	return rc;
}

static void test_tcp_for_memlock_disables_ib(void **state)
{
	(void)state;
	assert_true(ib_disabled("shared_roce.inv", 64 << 10, 0, AGENT_RDMA_AUTO));
	assert_false(ib_disabled("shared_roce.inv", 64 << 10, 1, AGENT_RDMA_AUTO)); /* IPC_LOCK */
	assert_false(ib_disabled("shared_roce.inv", 0, 0, AGENT_RDMA_AUTO));	    /* usable */
	assert_false(ib_disabled("shared_roce.inv", 64 << 10, 0, AGENT_RDMA_OFF));
	assert_true(ib_disabled("port_down.inv", 0, 0, AGENT_RDMA_AUTO));
	assert_false(ib_disabled("tcp_only.inv", 64 << 10, 0, AGENT_RDMA_AUTO)); /* no device */
	assert_false(agent_rdma_unusable(NULL, AGENT_RDMA_AUTO));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tcp_for_memlock_disables_ib),
	    cmocka_unit_test(test_member),
	    cmocka_unit_test(test_coordinator),
	    cmocka_unit_test(test_nothing_to_verify),
	    cmocka_unit_test(test_gate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
