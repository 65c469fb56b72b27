/* SPDX-License-Identifier: MIT */
/*
 * main.c - gxboot's entry point: the command dispatcher. The only file with
 * global mutable state (parsed options, log level) and the only one that exits.
 */
#include "agent/agent.h"
#include "agent/cli/cli_int.h"
#include "agent/launch/launch.h"
#include "agent/peers/peers.h"
#include "agent/remote/remote.h"
#include "agent/pipeline/pipeline.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct agent_opts g_opts;

static int cmd_version(void)
{
	printf("gxboot %s (%s)\n", GX_VERSION, GX_GIT_REV);
	return 0;
}

static int cmd_install(const struct agent_opts *o, char *err, size_t errlen)
{
	int rc = agent_install(o->install_dir, err, errlen);

	if (rc == 0)
		gx_info("installed %s/gxboot", o->install_dir);
	return rc;
}

static int dispatch(struct agent_opts *o, char *err, size_t errlen)
{
	switch (o->cmd) {
	case AGENT_CMD_VERSION:
		return cmd_version();
	case AGENT_CMD_INSTALL:
		return cmd_install(o, err, errlen);
	case AGENT_CMD_RUN:
	case AGENT_CMD_INIT:
		return agent_cmd_run(o, err, errlen);
	case AGENT_CMD_EXEC:
		return agent_cmd_exec(o, err, errlen);
	case AGENT_CMD_NETDETECT:
		return agent_cmd_netdetect(o, err, errlen);
	case AGENT_CMD_CHECK:
		return agent_cmd_check(o, err, errlen);
	case AGENT_CMD_SERVE:
		return agent_cmd_run(o, err, errlen);
	case AGENT_CMD_RSH:
		return agent_cmd_rsh(o, err, errlen);
	case AGENT_CMD_HOSTS:
		return agent_cmd_hosts(o, err, errlen);
	case AGENT_CMD_TOKEN:
		return agent_cmd_token(err, errlen);
	case AGENT_CMD_NONE:
	case AGENT_CMD_HELP:
		break;
	}
	fputs(agent_usage(AGENT_CMD_NONE), stdout);
	return 0;
}

static enum agent_cmd help_topic(const struct agent_opts *o)
{
	int i;

	if (o->cmd != AGENT_CMD_HELP)
		return o->cmd;
	for (i = AGENT_CMD_RUN; o->install_dir && i <= AGENT_CMD_VERSION; i++) {
		if (strcmp(agent_cmd_name((enum agent_cmd)i), o->install_dir) == 0)
			return (enum agent_cmd)i;
	}
	return AGENT_CMD_NONE;
}

/*
 * Called as ".../gxboot-rsh ARGS" (the --out link Hydra's launcher exec
 * names: it takes one executable path, no arguments): "gxboot rsh ARGS". NULL otherwise.
 */
static char **rsh_link_argv(int argc, char **argv)
{
	const char *b = strrchr(argv[0], '/');
	char **v;
	int i;

	if (strcmp(b ? b + 1 : argv[0], "gxboot-rsh") != 0)
		return NULL;
	v = calloc((size_t)argc + 2, sizeof(*v));
	if (!v)
		return NULL;
	v[0] = argv[0];
	v[1] = "rsh";
	for (i = 1; i < argc; i++)
		v[i + 1] = argv[i];
	return v;
}

/* errno values the environment causes (I/O, space, permissions), not our bugs. */
static int env_errno(int e)
{
	switch (e) {
	case EIO:
	case ENOSPC:
	case EPIPE:
	case EACCES:
	case EPERM:
	case EROFS:
	case EDQUOT:
	case ENOMEM:
	case EMFILE:
	case ENFILE:
		return 1;
	default:
		return 0;
	}
}

int main(int argc, char **argv)
{
	char err[1024] = "";
	char **rsh_argv = argc > 0 ? rsh_link_argv(argc, argv) : NULL;
	int rc;

	if (rsh_argv) {
		argv = rsh_argv; /* lives until exit */
		argc++;
	}
	rc = agent_opts_parse(argc, argv, NULL, &g_opts, err, sizeof(err));
	if (rc < 0) {
		agent_fail_line(err);
		exit(2);
	}
	gx_log_set_level(GX_LOG_INFO + g_opts.verbosity);
	if (g_opts.help || g_opts.cmd == AGENT_CMD_HELP) {
		fputs(agent_usage(help_topic(&g_opts)), stdout);
		exit(0);
	}
	rc = agent_dns_library_init();
	if (rc == 0) {
		rc = dispatch(&g_opts, err, sizeof(err));
		agent_dns_library_cleanup();
	}
	if (rc < 0) {
		/* a plain errno that no layer turned into its own line is our bug, not
		 * a rendezvous outcome: say so instead of a bare strerror */
		if (!err[0] && rc > -GX_EBASE && env_errno(-rc))
			snprintf(err, sizeof(err), "'%s' failed: %s", agent_cmd_name(g_opts.cmd),
				 strerror(-rc));
		else if (!err[0] && rc > -GX_EBASE)
			snprintf(err, sizeof(err),
				 "internal error in '%s': %s (errno %d); please report it with "
				 "the lines above",
				 agent_cmd_name(g_opts.cmd), strerror(-rc), -rc);
		agent_fail_line(err[0] ? err : gx_strerror(rc));
		exit(gx_exit_code(rc));
	}
	exit(rc);
}
