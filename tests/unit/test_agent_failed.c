/* SPDX-License-Identifier: MIT */
/*
 * test_agent_failed.c - failure lines that name the right thing, and no stale answer:
 * - a run into a reused --out that fails removes the last good run's files and leaves
 *   failed.json (command, exit, line), which `exec` and `hosts` refuse with that line and
 *   exit code; only gxboot's own marker counts;
 * - the claim: a member whose host name is the coordinator's entry (and not its own);
 *   hostNetwork pods, whose host name is the node's, are not suspects;
 * - the list lines the listeners' rounds read ("peers missing after 8s: a, b (why)").
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

#include "agent/cli/cli_int.h"
#include "agent/pipeline/out_int.h"
#include "agent/pipeline/run_int.h"
#include "agent/remote/rsh_int.h"
#include "rdzv/gx/gx.h"

static char err[1024];

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

static int exists(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* The files of a committed run, as job 1 left them. */
static void good_run(const char *dir)
{
	put(dir, "env", "export MASTER_ADDR='192.168.9.10'\n", 0644);
	put(dir, "env.json", "{\"MASTER_ADDR\": \"192.168.9.10\"}\n", 0644);
	put(dir, "hostfile", "192.168.9.10 slots=1\n", 0644);
	put(dir, "rendezvous.json",
	    "{\"rank\": 0, \"world\": 1, \"job_id\": \"j\", \"written_by\": \"init\", \"peers\": "
	    "[{\"name\": \"job-worker-0\", \"addr4\": \"192.168.9.10\", \"slots\": 1}]}\n",
	    0644);
}

/* --out as a directory fd, as a run holds it (closed with the test's process) */
static int dfd(const char *dir)
{
	static int fd = -1;

	if (fd >= 0)
		close(fd);
	fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	return fd;
}

static void test_marker(void **state)
{
	char base[] = "/tmp/gxfailed.XXXXXX", *argv[] = {"/nonexistent/cmd", NULL};
	struct agent_opts o = {.out = base, .argv = argv, .argc = 1};
	struct agent_out_failed f;

	(void)state;
	assert_non_null(mkdtemp(base));
	assert_int_equal(agent_out_failed_load(base, &f), 0);
	assert_int_equal(agent_out_failed_refuse(base, err, sizeof(err)), 0);
	/* job 1 committed: exec gets past the marker check (then CMD is not found) */
	good_run(base);
	o.cmd = AGENT_CMD_EXEC;
	assert_int_equal(agent_cmd_exec(&o, err, sizeof(err)), GX_ECMDNOTFOUND);
	/* job 2 failed with exit 5: a marker with its line, even beside an env */
	assert_int_equal(agent_out_mark_failed(dfd(base), base, "init", GX_ERDZV,
					       "job-worker-0 (the coordinator): net1 is down"),
			 0);
	assert_int_equal(agent_out_failed_load(base, &f), 1);
	assert_string_equal(f.command, "init");
	assert_int_equal(f.exit, 5);
	assert_string_equal(f.error, "job-worker-0 (the coordinator): net1 is down");
	assert_int_equal(strlen(f.at), 20);
	assert_int_equal(agent_cmd_exec(&o, err, sizeof(err)), GX_ERDZV);
	assert_non_null(strstr(err, "the last 'gxboot init' into /tmp/gxfailed."));
	assert_non_null(strstr(err, "did not commit (exit 5, "));
	assert_non_null(strstr(err, "): job-worker-0 (the coordinator): net1 is down"));
	o.cmd = AGENT_CMD_HOSTS;
	assert_int_equal(agent_cmd_hosts(&o, err, sizeof(err)), GX_ERDZV);
	/* each exit status comes back as the code that gives it */
	assert_int_equal(agent_out_mark_failed(dfd(base), base, "run", GX_EPEERS, "peers missing"),
			 0);
	assert_int_equal(gx_exit_code(agent_out_failed_refuse(base, err, sizeof(err))), 3);
	assert_int_equal(agent_out_mark_failed(dfd(base), base, "run", GX_ENOSECONDARY, ""), 0);
	assert_int_equal(gx_exit_code(agent_out_failed_refuse(base, err, sizeof(err))), 4);
	assert_non_null(strstr(err, gx_strerror(GX_ENOSECONDARY))); /* no line: the code's text */
	assert_int_equal(agent_out_mark_failed(dfd(base), base, "serve", GX_EUSAGE, "bad"), 0);
	assert_int_equal(gx_exit_code(agent_out_failed_refuse(base, err, sizeof(err))), 2);
	/* a marker that does not parse still refuses, as exit 5; control bytes are not printed */
	put(base, AGENT_OUT_FAILED, "{not json\n", 0644);
	assert_int_equal(agent_out_failed_refuse(base, err, sizeof(err)), GX_ERDZV);
	put(base, AGENT_OUT_FAILED,
	    "{\"command\": \"init\", \"exit\": 3, \"error\": \"a\\u001bb\"}", 0644);
	assert_int_equal(agent_out_failed_load(base, &f), 1);
	assert_string_equal(f.error, "a?b");
	/* only gxboot's own marker counts: one writable by others is ignored */
	assert_int_equal(chmod(base, 0777), 0);
	put(base, AGENT_OUT_FAILED, "{\"exit\": 3}", 0666);
	assert_int_equal(agent_out_failed_refuse(base, err, sizeof(err)), 0);
	if (geteuid() == 0) {
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", base, AGENT_OUT_FAILED);
		assert_int_equal(chmod(path, 0644), 0);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(agent_out_failed_refuse(base, err, sizeof(err)), 0);
	}
	assert_int_equal(chmod(base, 0700), 0);
	/* the next run that meets removes the answer and the marker, env first */
	agent_out_clean(dfd(base), 1);
	assert_false(exists(base, "env"));
	assert_false(exists(base, "rendezvous.json"));
	assert_false(exists(base, AGENT_OUT_FAILED));
	assert_int_equal(rmdir(base), 0);
}

/* A run that fails into a reused --out, in process: init with a peer that never comes. */
static void test_run_fails(void **state)
{
	char base[] = "/tmp/gxfailed.XXXXXX", port[16];
	char *args[] = {"gxboot",    "init", "--peers", "127.0.0.1,127.0.0.2",
			"--iface",   "lo",   "--port",	port,
			"--timeout", "1",    "--out",	base,
			"-q",	     NULL,   NULL};
	struct agent_opts o;
	struct agent_out_failed f;
	int rc;

	(void)state;
	assert_non_null(mkdtemp(base));
	snprintf(port, sizeof(port), "%d", 21000 + getpid() % 8000);
	good_run(base);
	assert_int_equal(agent_opts_parse(13, args, NULL, &o, err, sizeof(err)), 0);
	rc = agent_cmd_run(&o, err, sizeof(err));
	assert_int_equal(rc, GX_EPEERS);
	assert_false(exists(base, "env"));
	assert_false(exists(base, "env.json"));
	assert_false(exists(base, "hostfile"));
	assert_false(exists(base, "rendezvous.json"));
	assert_int_equal(agent_out_failed_load(base, &f), 1);
	assert_string_equal(f.command, "init");
	assert_int_equal(f.exit, 3);
	assert_string_equal(f.error, err);
	assert_non_null(strstr(f.error, "peers missing after 1s: 127.0.0.2"));
	/* a dry run touches nothing */
	args[13] = "--dry-run";
	assert_int_equal(agent_opts_parse(14, args, NULL, &o, err, sizeof(err)), 0);
	agent_out_clean(dfd(base), 1);
	good_run(base);
	assert_int_equal(agent_cmd_run(&o, err, sizeof(err)), 0);
	assert_true(exists(base, "env"));
	assert_false(exists(base, AGENT_OUT_FAILED));
	agent_out_clean(dfd(base), 1);
	assert_int_equal(rmdir(base), 0);
}

static void test_claims_coord(void **state)
{
	char *names[] = {"job-worker-0", "job-worker-1", "job-worker-2", NULL};
	char *ips[] = {"10.0.0.5", "10.0.0.6", NULL};
	struct agent_peers p = {.names = names, .n = 3, .self = 1};

	(void)state;
	/* pod 0 given --self job-worker-1 */
	assert_true(agent_claims_coord(&p, "job-worker-0"));
	assert_true(agent_claims_coord(&p, "JOB-WORKER-0"));
	assert_true(agent_claims_coord(&p, "job-worker-0.job.default.svc.cluster.local"));
	/* its own name, or a host name that is no entry (hostNetwork: the node's) */
	assert_false(agent_claims_coord(&p, "job-worker-1"));
	assert_false(agent_claims_coord(&p, "node-a"));
	assert_false(agent_claims_coord(&p, "job-worker-00"));
	assert_false(agent_claims_coord(&p, ""));
	/* the coordinator itself, an observer, an elastic joiner */
	p.self = 0;
	assert_false(agent_claims_coord(&p, "job-worker-0"));
	p.self = AGENT_SELF_NONE;
	assert_false(agent_claims_coord(&p, "job-worker-0"));
	p.self = 2;
	p.observer = 1;
	assert_false(agent_claims_coord(&p, "job-worker-0"));
	p.observer = 0;
	p.elastic = 1;
	assert_false(agent_claims_coord(&p, "job-worker-0"));
	/* a coordinator listed by address: several pods may share it (hostNetwork) */
	p = (struct agent_peers){.names = ips, .n = 2, .self = 1};
	assert_false(agent_claims_coord(&p, "10.0.0.5"));
}

static void test_line_lists(void **state)
{
	const char *l = "peers missing after 8s: job-worker-1, job-worker-12 (rejected JOIN from "
			"10.1.2.3: bad token), w-3; unproven: 2 JOINs refused, the last claiming "
			"job-worker-4";

	(void)state;
	assert_true(agent_line_lists(l, "job-worker-1"));
	assert_true(agent_line_lists(l, "job-worker-12"));
	assert_true(agent_line_lists(l, "w-3"));
	assert_false(agent_line_lists(l, "job-worker-2"));
	assert_false(agent_line_lists(l, "worker-1"));
	assert_false(agent_line_lists(l, "job-worker"));
	assert_false(agent_line_lists(l, "job-worker-4")); /* not a list item */
	assert_false(agent_line_lists(l, ""));
	assert_true(agent_line_lists("joined 2/3, verified 2/3, waiting for: a.b", "a.b"));
	assert_false(agent_line_lists("joined 2/3, verified 2/3, waiting for: a.b", "a"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_marker),
	    cmocka_unit_test(test_run_fails),
	    cmocka_unit_test(test_claims_coord),
	    cmocka_unit_test(test_line_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
