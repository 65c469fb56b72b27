/* SPDX-License-Identifier: MIT */
/*
 * test_agent_opts.c - option parsing (agent/cli/opts.c): every option, the
 * GXBOOT_* environment fallback, a flag beating the env, bad values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/cli/cli_int.h"
#include "rdzv/gx/gx.h"

static char err[512];
static char *no_env[] = {NULL};

static int parse(char **argv, char **envp, struct agent_opts *o)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	err[0] = '\0';
	return agent_opts_parse(argc, argv, envp ? envp : no_env, o, err, sizeof(err));
}

/* A usage error with a one-line reason containing want. */
static void expect_usage(char **argv, char **envp, const char *want)
{
	struct agent_opts o;

	assert_int_equal(parse(argv, envp, &o), GX_EUSAGE);
	assert_null(strchr(err, '\n'));
	if (!strstr(err, want))
		fail_msg("error '%s' lacks '%s'", err, want);
}

static void test_defaults(void **state)
{
	char *argv[] = {"gxboot", "--", "true", NULL};
	struct agent_opts o;

	(void)state;
	assert_int_equal(parse(argv, NULL, &o), 0);
	assert_int_equal(o.cmd, AGENT_CMD_RUN);
	assert_int_equal(o.port, 29410);
	assert_int_equal(o.timeout, 600);
	assert_int_equal(o.master_port, 29500);
	assert_int_equal(o.size, 65536);
	assert_string_equal(o.out, "/run/gxboot");
	assert_int_equal(o.rdma, AGENT_RDMA_AUTO);
	assert_int_equal(o.hostfile_format, AGENT_HF_DEFAULT);
	assert_null(o.peers);
	assert_int_equal(o.nnodes_min, 0);
	assert_int_equal(o.slots, 0);
	assert_int_equal(o.argc, 1);
	assert_string_equal(o.argv[0], "true");
}

static void test_every_option(void **state)
{
	char *argv[] = {"gxboot",
			"init",
			"--peers",
			"w-{0..3}",
			"--nnodes=2:4",
			"--self",
			"w-1",
			"--job-id",
			"j1",
			"--port",
			"1234",
			"--timeout",
			"30",
			"--token-file",
			"/t",
			"--require-token",
			"--dns-server",
			"10.0.0.53:5353",
			"--full-table",
			"--dry-run",
			"--iface",
			"10.1.0.0/16",
			"--network",
			"rdma-net",
			"--network-status",
			"/etc/podinfo/annotations",
			"--allow-primary",
			"--rdma",
			"off",
			"--rdma-dev",
			"mlx5_0:1,mlx5_3",
			"--rails",
			"none",
			"--out=/tmp/o",
			"--master-port",
			"23456",
			"--slots",
			"8",
			"--hostfile-format",
			"horovod",
			"--override-env",
			"-v",
			"-v",
			"-q",
			NULL};
	char *check[] = {"gxboot", "check", "--check-port=1240", "--mode", "star", "--size", "4096",
			 "--json", NULL};
	char *run[] = {"gxboot", "--no-rewrite", "--supervise", "--expect-fabric",
		       "rdma",	 "--",		 "true",	NULL};
	char *fabric_env[] = {"GXBOOT_EXPECT_FABRIC=secondary", NULL};
	char *fabric_plain[] = {"gxboot", "--", "true", NULL};
	char *fabric_off[] = {"gxboot", "--expect-fabric=off", "--", "true", NULL};
	char *fabric_bad[] = {"gxboot", "--expect-fabric", "tcp", "--", "true", NULL};
	char *fabric_init[] = {"gxboot", "init", "--expect-fabric", "rdma", NULL};
	struct agent_opts o;

	(void)state;
	assert_int_equal(parse(argv, NULL, &o), 0);
	assert_int_equal(o.cmd, AGENT_CMD_INIT);
	assert_string_equal(o.peers, "w-{0..3}");
	assert_int_equal(o.nnodes_min, 2);
	assert_int_equal(o.nnodes_max, 4);
	assert_string_equal(o.self, "w-1");
	assert_string_equal(o.job_id, "j1");
	assert_int_equal(o.port, 1234);
	assert_int_equal(o.timeout, 30);
	assert_string_equal(o.token_file, "/t");
	assert_int_equal(o.require_token, 1);
	assert_string_equal(o.dns_server, "10.0.0.53:5353");
	assert_int_equal(o.full_table, 1);
	assert_int_equal(o.dry_run, 1);
	assert_string_equal(o.iface, "10.1.0.0/16");
	assert_string_equal(o.network, "rdma-net");
	assert_string_equal(o.network_status, "/etc/podinfo/annotations");
	assert_int_equal(o.allow_primary, 1);
	assert_int_equal(o.rdma, AGENT_RDMA_OFF);
	assert_string_equal(o.rdma_dev, "mlx5_0:1,mlx5_3");
	assert_string_equal(o.rails, "none");
	assert_string_equal(o.out, "/tmp/o");
	assert_int_equal(o.master_port, 23456);
	assert_int_equal(o.slots, 8);
	assert_int_equal(o.hostfile_format, AGENT_HF_HOROVOD);
	assert_int_equal(o.override_env, 1);
	assert_int_equal(o.verbosity, 1);
	assert_int_equal(o.argc, 0);
	/* the options only check and the run command take */
	assert_int_equal(parse(check, NULL, &o), 0);
	assert_int_equal(o.check_port, 1240);
	assert_int_equal(o.check_mode, AGENT_CHECK_STAR);
	assert_int_equal(o.size, 4096);
	assert_int_equal(o.json, 1);
	assert_int_equal(parse(run, NULL, &o), 0);
	assert_int_equal(o.no_rewrite, 1);
	assert_int_equal(o.supervise, 1);
	assert_int_equal(o.expect_fabric, AGENT_FABRIC_RDMA);
	/* --expect-fabric: its GXBOOT_ twin, off, a bad value, a command that does not take it */
	assert_int_equal(parse(fabric_plain, NULL, &o), 0);
	assert_int_equal(o.expect_fabric, AGENT_FABRIC_REPORT);
	assert_int_equal(parse(fabric_plain, fabric_env, &o), 0);
	assert_int_equal(o.expect_fabric, AGENT_FABRIC_SECONDARY);
	assert_int_equal(parse(fabric_off, fabric_env, &o), 0);
	assert_int_equal(o.expect_fabric, AGENT_FABRIC_OFF);
	assert_int_equal(parse(fabric_bad, NULL, &o), GX_EUSAGE);
	assert_int_equal(parse(fabric_init, NULL, &o), GX_EUSAGE);
}

/* "help CMD" takes every command's name, "run" included (the man page prints each). */
static void test_help_topics(void **state)
{
	char *h_run[] = {"gxboot", "help", "run", NULL};
	char *h_check[] = {"gxboot", "help", "check", NULL};
	char *h_bad[] = {"gxboot", "help", "bogus", NULL};
	struct agent_opts o;

	(void)state;
	assert_int_equal(parse(h_run, NULL, &o), 0);
	assert_int_equal(o.cmd, AGENT_CMD_HELP);
	assert_string_equal(o.install_dir, "run");
	assert_int_equal(parse(h_check, NULL, &o), 0);
	assert_string_equal(o.install_dir, "check");
	expect_usage(h_bad, NULL, "unexpected argument 'bogus' for 'help'");
	/* each topic has its own text, and the run command's is not the overview */
	assert_ptr_not_equal(agent_usage(AGENT_CMD_RUN), agent_usage(AGENT_CMD_NONE));
	assert_non_null(strstr(agent_usage(AGENT_CMD_NONE), "Exit status:"));
}

static void test_commands_and_positionals(void **state)
{
	char *a1[] = {"gxboot", "install", "/opt/bin", NULL};
	char *a2[] = {"gxboot", "rsh", "-o", "StrictHostKeyChecking=no", "-x", "w-1", "orted",
		      "-mca",	"x",   NULL};
	char *a3[] = {"gxboot", "exec", "--out", "/o", "--", "python3", "x.py", NULL};
	char *a4[] = {"gxboot", "--serve", "--", "sleep", "1", NULL};
	char *a5[] = {"gxboot", "--require-rdma", "--dry-run", NULL};
	struct agent_opts o;

	(void)state;
	assert_int_equal(parse(a1, NULL, &o), 0);
	assert_int_equal(o.cmd, AGENT_CMD_INSTALL);
	assert_string_equal(o.install_dir, "/opt/bin");
	assert_int_equal(parse(a2, NULL, &o), 0);
	assert_int_equal(o.cmd, AGENT_CMD_RSH);
	assert_string_equal(o.rsh_host, "w-1");
	assert_int_equal(o.argc, 3);
	assert_string_equal(o.argv[0], "orted");
	assert_int_equal(parse(a3, NULL, &o), 0);
	assert_int_equal(o.cmd, AGENT_CMD_EXEC);
	assert_string_equal(o.out, "/o");
	assert_int_equal(o.argc, 2);
	assert_int_equal(parse(a4, NULL, &o), 0);
	assert_int_equal(o.serve, 1);
	assert_int_equal(o.supervise, 1);
	assert_int_equal(parse(a5, NULL, &o), 0);
	assert_int_equal(o.rdma, AGENT_RDMA_REQUIRE);
}

static void test_env_fallback_and_flag_wins(void **state)
{
	char *env[] = {
	    "GXBOOT_PEERS=a,b",	     "GXBOOT_PORT=4000",      "GXBOOT_TOKEN_FILE=/s",
	    "GXBOOT_NNODES=2",	     "GXBOOT_FULL_TABLE=yes", "GXBOOT_OVERRIDE_ENV=TRUE",
	    "GXBOOT_DRY_RUN=0",	     "GXBOOT_RDMA=require",   "GXBOOT_HOSTFILE_FORMAT=mpich",
	    "GXBOOT_MASTER_PORT=23", "GXBOOT_SELF=",	      NULL};
	char *plain[] = {"gxboot", "--", "x", NULL};
	char *flags[] = {"gxboot", "--peers", "c,d", "--port=5000", "--dry-run", "--", "x", NULL};
	struct agent_opts o;

	(void)state;
	assert_int_equal(parse(plain, env, &o), 0);
	assert_string_equal(o.peers, "a,b");
	assert_int_equal(o.port, 4000);
	assert_string_equal(o.token_file, "/s");
	assert_int_equal(o.nnodes_min, 2);
	assert_int_equal(o.nnodes_max, 2);
	assert_int_equal(o.full_table, 1);
	assert_int_equal(o.override_env, 1);
	assert_int_equal(o.dry_run, 0);
	assert_int_equal(o.rdma, AGENT_RDMA_REQUIRE);
	assert_int_equal(o.hostfile_format, AGENT_HF_MPICH);
	assert_int_equal(o.master_port, 23);
	assert_null(o.self); /* empty means unset */
	assert_int_equal(parse(flags, env, &o), 0);
	assert_string_equal(o.peers, "c,d");
	assert_int_equal(o.port, 5000);
	assert_int_equal(o.dry_run, 1);
}

static void test_env_booleans(void **state)
{
	static const char *const yes[] = {"1", "true", "yes", "YES"};
	static const char *const no[] = {"0", "false", "no", "No"};
	static const char *const bad[] = {"on", "2", "y", "truee"};
	char *argv[] = {"gxboot", "--", "x", NULL};
	char var[64];
	char *env[] = {var, NULL};
	struct agent_opts o;
	size_t i;

	(void)state;
	for (i = 0; i < 4; i++) {
		snprintf(var, sizeof(var), "GXBOOT_REQUIRE_TOKEN=%s", yes[i]);
		assert_int_equal(parse(argv, env, &o), 0);
		assert_int_equal(o.require_token, 1);
		snprintf(var, sizeof(var), "GXBOOT_REQUIRE_TOKEN=%s", no[i]);
		assert_int_equal(parse(argv, env, &o), 0);
		assert_int_equal(o.require_token, 0);
		snprintf(var, sizeof(var), "GXBOOT_REQUIRE_TOKEN=%s", bad[i]);
		expect_usage(argv, env, "GXBOOT_REQUIRE_TOKEN");
	}
	snprintf(var, sizeof(var), "GXBOOT_REQUIRE_RDMA=maybe");
	expect_usage(argv, env, "GXBOOT_REQUIRE_RDMA");
	snprintf(var, sizeof(var), "GXBOOT_REQUIRE_RDMA=yes");
	assert_int_equal(parse(argv, env, &o), 0);
	assert_int_equal(o.rdma, AGENT_RDMA_REQUIRE);
	/* a boolean flag given a value */
	{
		char *a[] = {"gxboot", "--full-table=no", "--", "x", NULL};
		char *b[] = {"gxboot", "--full-table=perhaps", "--", "x", NULL};

		assert_int_equal(parse(a, NULL, &o), 0);
		assert_int_equal(o.full_table, 0);
		expect_usage(b, NULL, "--full-table");
	}
}

static void test_bad_values(void **state)
{
	char *neg_port[] = {"gxboot", "--port", "-1", "--", "x", NULL};
	char *big_port[] = {"gxboot", "--port=65536", "--", "x", NULL};
	char *timeout[] = {"gxboot", "--timeout", "abc", "--", "x", NULL};
	char *zero_to[] = {"gxboot", "--timeout=0", "--", "x", NULL};
	char *unknown[] = {"gxboot", "--frobnicate", "--", "x", NULL};
	char *short_unknown[] = {"gxboot", "-z", "--", "x", NULL};
	char *no_dashdash[] = {"gxboot", "--peers", "a,b", "python3", "train.py", NULL};
	char *missing_val[] = {"gxboot", "--peers", NULL};
	char *rdma[] = {"gxboot", "--rdma", "sometimes", "--", "x", NULL};
	char *hff[] = {"gxboot", "--hostfile-format=slurm", "--", "x", NULL};
	char *nn1[] = {"gxboot", "--nnodes", "4:2", "--", "x", NULL};
	char *nn2[] = {"gxboot", "--nnodes", "0", "--", "x", NULL};
	char *nn3[] = {"gxboot", "--nnodes", "two", "--", "x", NULL};
	char *slots[] = {"gxboot", "--slots", "-3", "--", "x", NULL};
	char *empty[] = {"gxboot", "--peers=", "--", "x", NULL};
	char *no_cmd[] = {"gxboot", "--peers", "a", NULL};
	char *init_cmd[] = {"gxboot", "init", "--", "x", NULL};
	char *exec_nocmd[] = {"gxboot", "exec", NULL};
	char *inst[] = {"gxboot", "install", NULL};
	char *env_port[] = {"GXBOOT_PORT=http", NULL};
	char *plain[] = {"gxboot", "--", "x", NULL};

	(void)state;
	expect_usage(neg_port, NULL, "--port");
	expect_usage(big_port, NULL, "--port");
	expect_usage(timeout, NULL, "--timeout: 'abc'");
	expect_usage(zero_to, NULL, "--timeout");
	expect_usage(unknown, NULL, "--frobnicate");
	expect_usage(short_unknown, NULL, "-z");
	expect_usage(no_dashdash, NULL, "'--'");
	expect_usage(missing_val, NULL, "needs a value");
	expect_usage(rdma, NULL, "--rdma");
	expect_usage(hff, NULL, "--hostfile-format");
	expect_usage(nn1, NULL, "--nnodes");
	expect_usage(nn2, NULL, "--nnodes");
	expect_usage(nn3, NULL, "--nnodes");
	expect_usage(slots, NULL, "--slots");
	expect_usage(empty, NULL, "--peers");
	expect_usage(no_cmd, NULL, "no command");
	expect_usage(init_cmd, NULL, "init");
	expect_usage(exec_nocmd, NULL, "exec");
	expect_usage(inst, NULL, "install DIR");
	expect_usage(plain, env_port, "GXBOOT_PORT");
}

/* A flag the command ignores is a usage error naming who takes it. */
static void test_option_not_taken(void **state)
{
	char *json_run[] = {"gxboot", "--json", "--", "true", NULL};
	char *mode_init[] = {"gxboot", "init", "--mode", "all", NULL};
	char *size_serve[] = {"gxboot", "serve", "--size", "4096", NULL};
	char *peers_nd[] = {"gxboot", "netdetect", "--peers", "a,b", NULL};
	char *out_install[] = {"gxboot", "install", "--out", "/x", "/tmp", NULL};
	char *rdma_exec[] = {"gxboot", "exec", "--require-rdma", "--", "true", NULL};
	char *ok_check[] = {"gxboot", "check", "--json", "--mode", "all", "--size", "8", NULL};
	char *ok_nd[] = {"gxboot", "netdetect", "--json", "--iface", "net1", NULL};
	char *ok_help[] = {"gxboot", "init", "--mode", "all", "--help", NULL};
	char *ok_hosts[] = {"gxboot", "hosts", "--out", "/run/x", NULL};
	char *env_json[] = {"GXBOOT_JSON=1", "GXBOOT_MODE=all", NULL};
	char *run[] = {"gxboot", "--", "true", NULL};
	struct agent_opts o;

	(void)state;
	expect_usage(json_run, NULL,
		     "'gxboot -- CMD' does not take --json (it is an option of: "
		     "netdetect, check)");
	expect_usage(mode_init, NULL, "'init' does not take --mode (it is an option of: check)");
	expect_usage(size_serve, NULL, "'serve' does not take --size");
	expect_usage(peers_nd, NULL, "'netdetect' does not take --peers");
	expect_usage(out_install, NULL, "'install' does not take --out");
	expect_usage(rdma_exec, NULL, "'exec' does not take --rdma");
	assert_int_equal(parse(ok_check, NULL, &o), 0);
	assert_int_equal(parse(ok_nd, NULL, &o), 0);
	assert_int_equal(parse(ok_help, NULL, &o), 0);
	assert_int_equal(parse(ok_hosts, NULL, &o), 0);
	/* pod-wide GXBOOT_* variables are not flags: every command accepts them */
	assert_int_equal(parse(run, env_json, &o), 0);
}

/* --preflight and its options, the GXBOOT_ twins, bad values, the commands that take them. */
static void test_preflight_options(void **state)
{
	char *flags[] = {"gxboot",	"init",
			 "--preflight", "--preflight-bytes",
			 "1048576",	"--preflight-slow",
			 "0.25",	"--preflight-shape",
			 "all",		"--preflight-settle",
			 "12",		NULL};
	char *env[] = {"GXBOOT_PREFLIGHT=yes", "GXBOOT_PREFLIGHT_BYTES=65536",
		       "GXBOOT_PREFLIGHT_SLOW=0.7", "GXBOOT_PREFLIGHT_SHAPE=ring", NULL};
	char *run[] = {"gxboot", "--", "true", NULL};
	char *slow0[] = {"gxboot", "--preflight-slow", "0", "--", "x", NULL};
	char *slow1[] = {"gxboot", "--preflight-slow=1.5", "--", "x", NULL};
	char *slowx[] = {"gxboot", "--preflight-slow=half", "--", "x", NULL};
	char *bytes[] = {"gxboot", "--preflight-bytes", "67108865", "--", "x", NULL};
	char *shape[] = {"gxboot", "--preflight-shape", "star", "--", "x", NULL};
	char *check[] = {"gxboot", "check", "--preflight", NULL};
	char *env_bad[] = {"GXBOOT_PREFLIGHT_SLOW=2", NULL};
	struct agent_opts o;

	(void)state;
	assert_int_equal(parse(flags, NULL, &o), 0);
	assert_true(o.preflight);
	assert_int_equal(o.preflight_bytes, 1048576);
	assert_true(o.preflight_slow > 0.24 && o.preflight_slow < 0.26);
	assert_int_equal(o.preflight_shape, AGENT_PF_SHAPE_ALL);
	assert_int_equal(o.preflight_settle, 12);
	assert_int_equal(parse(run, env, &o), 0);
	assert_true(o.preflight);
	assert_int_equal(o.preflight_bytes, 65536);
	assert_true(o.preflight_slow > 0.69 && o.preflight_slow < 0.71);
	assert_int_equal(o.preflight_shape, AGENT_PF_SHAPE_RING);
	assert_int_equal(parse(run, NULL, &o), 0);
	assert_false(o.preflight); /* off unless asked */
	expect_usage(slow0, NULL, "--preflight-slow");
	expect_usage(slow1, NULL, "--preflight-slow");
	expect_usage(slowx, NULL, "--preflight-slow: 'half'");
	expect_usage(bytes, NULL, "--preflight-bytes");
	expect_usage(shape, NULL, "--preflight-shape");
	expect_usage(check, NULL,
		     "'check' does not take --preflight (it is an option of: run, init, serve)");
	expect_usage(run, env_bad, "GXBOOT_PREFLIGHT_SLOW");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_every_option),
	    cmocka_unit_test(test_commands_and_positionals),
	    cmocka_unit_test(test_help_topics),
	    cmocka_unit_test(test_env_fallback_and_flag_wins),
	    cmocka_unit_test(test_env_booleans),
	    cmocka_unit_test(test_bad_values),
	    cmocka_unit_test(test_option_not_taken),
	    cmocka_unit_test(test_preflight_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
