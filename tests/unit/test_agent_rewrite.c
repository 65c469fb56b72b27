/* SPDX-License-Identifier: MIT */
/* test_agent_rewrite.c - torchrun argument rewriting over every spelling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "agent/rewrite_int.h"

static const char *const coord_names[] = {"job-worker-0", "job-worker-0.job.default.svc",
					  "10.9.1.10", NULL};
static char *env_vc[] = {"VC_TRAINER_0_HOSTS=job-worker-0.job", NULL};

static struct agent_rewrite_ctx ctx(int is_coord)
{
	struct agent_rewrite_ctx c = {.addr = "192.168.9.10",
				      .master_port = 29500,
				      .rank = 2,
				      .world = 3,
				      .is_coordinator = is_coord,
				      .coord_names = coord_names,
				      .envp = env_vc};
	return c;
}

static char **rw(char **argv, int argc, int is_coord, int expect_rc)
{
	struct agent_rewrite_ctx c = ctx(is_coord);
	char **out = NULL;

	assert_int_equal(agent_rewrite_cmd(argv, argc, &c, &out), expect_rc);
	return out;
}

static void test_space_and_equals_forms(void **state)
{
	char *argv[] = {"torchrun",
			"--nnodes=1:3",
			"--node-rank",
			"0",
			"--master_addr",
			"job-worker-0",
			"--master-port=23456",
			"--rdzv_backend",
			"c10d",
			"--rdzv-endpoint",
			"job-worker-0:29400",
			"train.py",
			"--master_addr",
			"x"};
	char **o = rw(argv, 14, 0, 1);

	(void)state;
	assert_string_equal(o[1], "--nnodes=3");
	assert_string_equal(o[3], "2");
	assert_string_equal(o[5], "192.168.9.10");
	assert_string_equal(o[6], "--master-port=29500");
	assert_string_equal(o[8], "static");
	assert_string_equal(o[10], "192.168.9.10:29400");
	/* the script's own arguments are never touched */
	assert_string_equal(o[12], "--master_addr");
	assert_string_equal(o[13], "x");
	agent_argv_free(o);
}

static void test_python_m_and_ip(void **state)
{
	char *argv[] = {"/usr/bin/python3", "-m",	 "torch.distributed.run",
			"--master_addr",    "10.9.1.10", "x.py"};
	char **o = rw(argv, 6, 0, 1);

	(void)state;
	assert_string_equal(o[4], "192.168.9.10");
	agent_argv_free(o);
}

static void test_foreign_host_left_alone(void **state)
{
	char *argv[] = {"torchrun",	   "--rdzv_backend",   "c10d",
			"--rdzv_endpoint", "other-host:29500", "x.py"};

	(void)state;
	assert_null(rw(argv, 6, 0, 0));
}

static void test_localhost_only_on_coordinator(void **state)
{
	char *argv[] = {"torchrun", "--rdzv_endpoint", "localhost:29500", "x.py"};
	char **o;

	(void)state;
	assert_null(rw(argv, 4, 0, 0));
	o = rw(argv, 4, 1, 1);
	assert_string_equal(o[2], "192.168.9.10:29500");
	agent_argv_free(o);
}

static void test_not_torchrun(void **state)
{
	char *argv[] = {"python3", "train.py", "--master_addr", "job-worker-0"};

	(void)state;
	assert_null(rw(argv, 4, 0, 0));
}

static void test_torchx_shell(void **state)
{
	char *argv[] = {"bash", "-c",
			"torchrun --rdzv_backend c10d --rdzv_endpoint "
			"${VC_TRAINER_0_HOSTS:=localhost}:29500 --nnodes 3 --nproc_per_node 2 "
			"--tee 1 --role '' -m my.app --lr 'a b'"};
	char **o = rw(argv, 3, 0, 1);

	(void)state;
	assert_string_equal(o[0], "bash");
	assert_string_equal(o[2], "torchrun --rdzv_backend 'static' --rdzv_endpoint "
				  "'192.168.9.10:29500' --nnodes 3 --nproc_per_node 2 --tee 1 "
				  "--role '' -m my.app --lr 'a b'");
	agent_argv_free(o);
}

static void test_shell_too_complex(void **state)
{
	char *argv[] = {"sh", "-c", "cd /x && torchrun --master_addr job-worker-0 x.py"};

	(void)state;
	assert_null(rw(argv, 3, 0, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_space_and_equals_forms),
	    cmocka_unit_test(test_python_m_and_ip),
	    cmocka_unit_test(test_foreign_host_left_alone),
	    cmocka_unit_test(test_localhost_only_on_coordinator),
	    cmocka_unit_test(test_not_torchrun),
	    cmocka_unit_test(test_torchx_shell),
	    cmocka_unit_test(test_shell_too_complex),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
