/* SPDX-License-Identifier: MIT */
/*
 * test_agent_exec.c - what `gxboot exec` trusts: every variable
 * agent_env_ours() writes, over all its input combinations, is on exec's allow-list
 * (property), the loader's dangerous names are not; --out and its env file must be this
 * user's own, not group/world-writable, and not symlinks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/launch/launch.h"
#include "agent/pipeline/run_int.h"
#include "agent/pipeline/out_int.h"
#include "rdzv/gx/gx.h"

static char err[512];

static void test_written_names_allowed(void **state)
{
	unsigned combo, i, nnames = 0;

	(void)state;
	for (combo = 0; combo < 128; combo++) {
		struct agent_env_input in = {.master_addr = "192.168.9.10",
					     .master_port = 29500,
					     .rank = 2,
					     .world = 4,
					     .iface = "net1",
					     .addr = "192.168.9.12",
					     .nccl_gid_index = -1};
		struct agent_env e = {0};

		if (combo & 1) {
			in.rails = "mlx5_0:1,mlx5_3:1";
			in.nccl_gid_index = 3;
		}
		if (combo & 2)
			in.hostfile = "/gxboot/hostfile";
		if (combo & 4) {
			in.rsh_agent = "/gxboot/gxboot rsh";
			in.rsh_key_file = "/gxboot/rsh.key";
		}
		if (combo & 8)
			in.ray_port = 6379;
		if (combo & 16)
			in.ray_worker = 1;
		if (combo & 32) {
			in.master_addr = "fd00::10";
			in.addr = "fd00::12";
		}
		if (combo & 64) {
			in.observer = 1;
			in.rank = -1;
			in.addr = NULL;
		}
		if (agent_env_ours(&in, &e, err, sizeof(err)) < 0)
			continue;
		for (i = 0; i < e.n; i++) {
			if (!agent_exec_var_allowed(e.v[i].name))
				fail_msg("gxboot writes %s but exec would refuse it", e.v[i].name);
			nnames++;
		}
		agent_env_free(&e);
	}
	assert_true(nnames > 128 * 10); /* the combinations really produced variables */
	assert_false(agent_exec_var_allowed("LD_PRELOAD"));
	assert_false(agent_exec_var_allowed("LD_LIBRARY_PATH"));
	assert_false(agent_exec_var_allowed("BASH_ENV"));
	assert_false(agent_exec_var_allowed("ENV"));
	assert_false(agent_exec_var_allowed("PATH"));
	assert_false(agent_exec_var_allowed("PYTHONPATH"));
	assert_false(agent_exec_var_allowed("GXBOOT_TOKEN"));
}

static void put(const char *dir, const char *name, const char *text, mode_t mode)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_out_checks(void **state)
{
	char base[] = "/tmp/gxexec.XXXXXX", out[64], link[128], env[128];

	(void)state;
	assert_non_null(mkdtemp(base));
	snprintf(out, sizeof(out), "%s/out", base);
	snprintf(link, sizeof(link), "%s/link", base);
	snprintf(env, sizeof(env), "%s/env", out);
	assert_int_equal(mkdir(out, 0700), 0);
	put(out, "env", "export MASTER_ADDR='192.168.9.10'\n", 0644);
	assert_int_equal(agent_exec_out_check(out, err, sizeof(err)), 0);
	/* a world-writable --out (a Kubernetes emptyDir is 0777) is judged by its files: ours
	 * are accepted, a group/world-writable env is not */
	assert_int_equal(chmod(out, 0777), 0);
	assert_int_equal(agent_exec_out_check(out, err, sizeof(err)), 0);
	assert_int_equal(chmod(env, 0666), 0);
	assert_int_equal(agent_exec_out_check(out, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "writable by group or others"));
	assert_int_equal(chmod(env, 0644), 0);
	assert_int_equal(chmod(out, 0755), 0);
	/* a parent another user can write without the sticky bit: it could move --out between
	 * our checks and our read (9740b38 read env by its path again after the checks) */
	assert_int_equal(chmod(base, 0777), 0);
	assert_int_equal(agent_exec_out_check(out, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "without the sticky bit, so another user could move --out"));
	assert_int_equal(chmod(base, 01777), 0);
	assert_int_equal(agent_exec_out_check(out, err, sizeof(err)), 0);
	assert_int_equal(chmod(base, 0700), 0);
	/* --out through a symlink */
	assert_int_equal(symlink(out, link), 0);
	assert_int_equal(agent_exec_out_check(link, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "symlink"));
	/* env group-writable, env a symlink */
	put(out, "env", "export MASTER_ADDR='192.168.9.10'\n", 0664);
	assert_int_equal(agent_exec_out_check(out, err, sizeof(err)), GX_EUSAGE);
	put(base, "victim", "export MASTER_ADDR='192.168.9.10'\n", 0600);
	unlink(env);
	snprintf(link, sizeof(link), "%s/victim", base);
	assert_int_equal(symlink(link, env), 0);
	assert_int_equal(agent_exec_out_check(out, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "symlink"));
	unlink(env);
	/* owned by another user (as root only) */
	put(out, "env", "export MASTER_ADDR='192.168.9.10'\n", 0644);
	if (geteuid() == 0) {
		assert_int_equal(chown(out, 65534, 65534), 0);
		assert_int_equal(agent_exec_out_check(out, err, sizeof(err)), GX_EUSAGE);
		assert_non_null(strstr(err, "another user"));
		assert_int_equal(chown(out, 0, 0), 0);
		assert_int_equal(chown(env, 65534, 65534), 0);
		assert_int_equal(agent_exec_out_check(out, err, sizeof(err)), GX_EUSAGE);
	}
	unlink(env);
	snprintf(link, sizeof(link), "%s/victim", base);
	unlink(link);
	snprintf(link, sizeof(link), "%s/link", base);
	unlink(link);
	rmdir(out);
	rmdir(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_written_names_allowed),
	    cmocka_unit_test(test_out_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
