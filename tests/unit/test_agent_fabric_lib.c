/* SPDX-License-Identifier: MIT */
/*
 * test_agent_fabric_lib.c - NCCL's and UCX's lines as the transport report reads them. Every
 * line comes from tests/fixtures/fabric/upstream.json, rendered from formats pinned there to
 * the upstream source (NVIDIA/nccl v2.30.7-1 73cf1122 and v2.21.5-1 ab2b89c4, e.g.
 * src/init.cc:486 "Using network %s", src/transport/net_ib/init.cc:513 "NET/IB : Using%s %s;
 * OOB %s:%s", src/transport/net_socket.cc:77; openucx/ucx v1.13.1 09f27c0e,
 * src/ucp/core/ucp_worker.c:1689 "ep_cfg[%d]: " and :1763, src/ucs/config/parser.c:1916); each
 * is parsed alone and its 'expect' checked ("told": 0 when the line says nothing of ours). Then the
 * variables gxboot sets for CMD, and what the libraries' kinds are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "agent/fabric/fabric_int.h"

#define FIX "tests/fixtures/fabric/upstream.json"

static json_t *fixture(void)
{
	json_error_t je;
	json_t *j = json_load_file(FIX, 0, &je);

	if (!j)
		fail_msg("%s: %s (line %d)", FIX, je.text, je.line);
	return j;
}

/* The strings of an expect list against a parsed list. */
static void same_list(json_t *want, const char (*got)[72], size_t n, const char *text)
{
	size_t i;

	if (!want)
		return;
	if (json_array_size(want) != n)
		fail_msg("'%s': %zu entries, want %zu", text, n, json_array_size(want));
	for (i = 0; i < n; i++)
		if (strcmp(json_string_value(json_array_get(want, i)), got[i]) != 0)
			fail_msg("'%s': entry %zu '%s', want '%s'", text, i, got[i],
				 json_string_value(json_array_get(want, i)));
}

static void same_list128(json_t *want, const char (*got)[128], size_t n, const char *text)
{
	size_t i;

	if (!want)
		return;
	if (json_array_size(want) != n)
		fail_msg("'%s': %zu entries, want %zu", text, n, json_array_size(want));
	for (i = 0; i < n; i++)
		assert_string_equal(json_string_value(json_array_get(want, i)), got[i]);
}

static int want_int(json_t *e, const char *k, int dflt)
{
	json_t *v = json_object_get(e, k);

	return v ? (int)json_integer_value(v) : dflt;
}

static void check_nccl(const char *text, json_t *e)
{
	struct fabric_nccl n;
	int told;

	memset(&n, 0, sizeof(n));
	told = agent_fabric_nccl_line(text, &n);
	assert_int_equal(told, want_int(e, "told", 1));
	if (json_object_get(e, "network"))
		assert_string_equal(n.network, json_string_value(json_object_get(e, "network")));
	assert_int_equal(n.comms, want_int(e, "comms", 0));
	assert_int_equal(n.net_ib, want_int(e, "net_ib", 0));
	assert_int_equal(n.net_socket, want_int(e, "net_socket", 0));
	assert_int_equal(n.ib_none, want_int(e, "ib_none", 0));
	assert_int_equal((int)n.nwarns, want_int(e, "warns", 0));
	same_list(json_object_get(e, "ib_devs"), n.ib_devs, n.nib_devs, text);
	same_list(json_object_get(e, "sock_devs"), n.sock_devs, n.nsock_devs, text);
	same_list128(json_object_get(e, "env"), n.env, n.nenv, text);
}

static void check_ucx(const char *text, json_t *e)
{
	struct fabric_ucx u;

	memset(&u, 0, sizeof(u));
	assert_int_equal(agent_fabric_ucx_line(text, &u), 1);
	assert_int_equal(u.eps, want_int(e, "eps", 0));
	assert_int_equal((int)u.nwarns, want_int(e, "uwarns", 0));
	same_list(json_object_get(e, "tls"), u.tls, u.ntls, text);
	same_list128(json_object_get(e, "uenv"), u.env, u.nenv, text);
}

static void test_pinned_lines(void **state)
{
	json_t *j = fixture(), *lines = json_object_get(j, "lines"), *l;
	size_t i, formats = json_array_size(json_object_get(j, "formats"));

	(void)state;
	assert_true(formats >= 30);
	assert_true(json_array_size(lines) >= 20);
	json_array_foreach(lines, i, l)
	{
		const char *kind = json_string_value(json_object_get(l, "kind"));
		const char *text = json_string_value(json_object_get(l, "text"));
		json_t *e = json_object_get(l, "expect");

		if (strcmp(kind, "nccl") == 0)
			check_nccl(text, e);
		else
			check_ucx(text, e);
		/* a line of one library says nothing to the other's parser */
		if (strcmp(kind, "nccl") == 0) {
			struct fabric_ucx u;

			memset(&u, 0, sizeof(u));
			assert_int_equal(agent_fabric_ucx_line(text, &u), 0);
		} else {
			struct fabric_nccl n;

			memset(&n, 0, sizeof(n));
			assert_int_equal(agent_fabric_nccl_line(text, &n), 0);
		}
	}
	json_decref(j);
}

/* A whole NCCL file of one process: communicators counted, devices once, the cause kept. */
static void test_nccl_process(void **state)
{
	static const char *const file[] = {
	    "h:7:7 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.",
	    "h:7:7 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.1.10<0>",
	    "h:7:7 [0] NCCL INFO Using network Socket",
	    "h:7:7 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.1.10<0>",
	    "h:7:7 [0] NCCL INFO Using network Socket",
	};
	struct fabric_nccl n;
	size_t i;

	(void)state;
	memset(&n, 0, sizeof(n));
	for (i = 0; i < sizeof(file) / sizeof(file[0]); i++)
		assert_int_equal(agent_fabric_nccl_line(file[i], &n), 1);
	assert_int_equal(n.comms, 2);
	assert_int_equal(n.net_socket, 2);
	assert_int_equal(n.nsock_devs, 1);
	assert_string_equal(n.sock_devs[0], "eth0");
	assert_int_equal(n.nenv, 1);
	assert_string_equal(n.env[0], "NCCL_IB_DISABLE=1");
}

/* Lines that are not whole, or hostile: nothing read past them, nothing taken that is not
 * printable, bounded lists. */
static void test_hostile_lines(void **state)
{
	char lng[4096];
	struct fabric_nccl n;
	struct fabric_ucx u;
	int i;

	(void)state;
	memset(&n, 0, sizeof(n));
	memset(&u, 0, sizeof(u));
	assert_int_equal(agent_fabric_nccl_line("x NCCL INFO NET/IB : Using [", &n), 1);
	assert_int_equal(agent_fabric_nccl_line("x NCCL INFO NET/IB : Using [0", &n), 1);
	assert_int_equal(agent_fabric_nccl_line("x NCCL INFO NET/IB : Using [0]", &n), 1);
	assert_int_equal(agent_fabric_nccl_line("x NCCL INFO NET/IB : Using [0]mlx5_0", &n), 1);
	assert_int_equal(n.nib_devs, 0);
	assert_int_equal(agent_fabric_nccl_line("x NCCL INFO Using network \x01\x7f"
						"bad",
						&n),
			 1);
	assert_string_equal(n.network, "??bad");
	assert_int_equal(agent_fabric_ucx_line("x UCX  INFO  ep_cfg[0]: tag(", &u), 1);
	assert_int_equal(agent_fabric_ucx_line("x UCX  INFO  ep_cfg[0]: tag(a/b", &u), 1);
	assert_int_equal(agent_fabric_ucx_line("x UCX ", &u), 0);
	assert_int_equal(u.ntls, 0);
	/* more devices than kept: the first FABRIC_MAX_DEVS */
	strcpy(lng, "x NCCL INFO NET/IB : Using");
	for (i = 0; i < 40; i++)
		snprintf(lng + strlen(lng), sizeof(lng) - strlen(lng), " [%d]mlx5_%d:1/RoCE", i, i);
	assert_int_equal(agent_fabric_nccl_line(lng, &n), 1);
	assert_int_equal(n.nib_devs, FABRIC_MAX_DEVS);
	for (i = 0; i < 10; i++)
		agent_fabric_nccl_line("x y:1 NCCL WARN again", &n);
	assert_int_equal(n.nwarns, FABRIC_MAX_WARNS);
	assert_int_equal(n.warns_total, 10);
}

static void test_kinds(void **state)
{
	(void)state;
	assert_int_equal(agent_fabric_nccl_net_kind("IB"), 1);
	assert_int_equal(agent_fabric_nccl_net_kind("IBext_v8"), 1);
	assert_int_equal(agent_fabric_nccl_net_kind("Socket"), 2);
	assert_int_equal(agent_fabric_nccl_net_kind("GPUDirectTCPX_v7"), 0);
	assert_int_equal(agent_fabric_ucx_tl_kind("rc_verbs/rxe0:1"), 1);
	assert_int_equal(agent_fabric_ucx_tl_kind("dc_mlx5/mlx5_0:1"), 1);
	assert_int_equal(agent_fabric_ucx_tl_kind("tcp/net1"), 2);
	assert_int_equal(agent_fabric_ucx_tl_kind("tcpx/net1"), 0);
	assert_int_equal(agent_fabric_ucx_tl_kind("sysv/memory"), 0);
	assert_int_equal(agent_fabric_ucx_tl_kind("cuda_ipc/cuda"), 0);
}

/* The variables: set only when the user set none of a library's. */
static void test_libvars(void **state)
{
	char *none[] = {"PATH=/bin", NULL};
	char *user_nccl[] = {"NCCL_DEBUG=WARN", NULL};
	char *user_ucx[] = {"UCX_LOG_FILE=/tmp/x", "NCCL_DEBUG_FILE=/tmp/n", NULL};
	struct fabric_libvars v;

	(void)state;
	agent_fabric_libvars(none, "/run/gxboot", &v);
	assert_true(v.nccl_ours && v.ucx_ours);
	assert_int_equal(v.n, 5);
	assert_string_equal(v.names[0], "NCCL_DEBUG");
	assert_string_equal(v.values[0], "INFO");
	assert_string_equal(v.values[1], "INIT,NET,ENV");
	assert_string_equal(v.values[2], "/run/gxboot/nccl.%h.%p.log");
	assert_string_equal(v.names[3], "UCX_LOG_LEVEL");
	assert_string_equal(v.values[4], "/run/gxboot/ucx.%h.%p.log");
	agent_fabric_libvars(user_nccl, "/run/gxboot", &v);
	assert_false(v.nccl_ours);
	assert_true(v.ucx_ours);
	assert_string_equal(v.nccl_user, "NCCL_DEBUG");
	assert_int_equal(v.n, 2);
	agent_fabric_libvars(user_ucx, "/run/gxboot", &v);
	assert_false(v.nccl_ours || v.ucx_ours);
	assert_string_equal(v.nccl_user, "NCCL_DEBUG_FILE");
	assert_string_equal(v.ucx_user, "UCX_LOG_FILE");
	assert_int_equal(v.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pinned_lines),  cmocka_unit_test(test_nccl_process),
	    cmocka_unit_test(test_hostile_lines), cmocka_unit_test(test_kinds),
	    cmocka_unit_test(test_libvars),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
