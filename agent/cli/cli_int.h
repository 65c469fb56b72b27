/* SPDX-License-Identifier: MIT */
/*
 * cli_int.h - cli: option parsing, usage, install, and the commands cli composes from the
 * folders below it (netdetect, check). Nothing below cli includes it.
 */
#ifndef AGENT_CLI_INT_H
#define AGENT_CLI_INT_H

#include "agent/agent.h"

#include <stddef.h>

/*
 * Parse the command line and GXBOOT_* environment (a flag wins over the env).
 * envp may be NULL (then environ). On a usage error returns GX_EUSAGE with a
 * one-line reason in err.
 */
int agent_opts_parse(int argc, char **argv, char **envp, struct agent_opts *o, char *err,
		     size_t errlen);
/* The usage text of one command (AGENT_CMD_NONE: the whole program). */
const char *agent_usage(enum agent_cmd cmd);
/* install DIR: copy /proc/self/exe to DIR/gxboot atomically (0755). */
int agent_install(const char *dir, char *err, size_t errlen);

/*
 * gxboot netdetect [--json] [...]: interfaces, RDMA, the choice and why. Print the table (or
 * --json) to stdout. Returns 0, or GX_ENOSECONDARY / GX_ENORDMA (exit 4), GX_EUSAGE, GX_EJSON, ...
 * with the one line in err; the table is still printed when the inventory could be read.
 */
int agent_cmd_netdetect(const struct agent_opts *o, char *err, size_t errlen);
/*
 * gxboot check: a GX_E* / -errno code with one line in err, or the exit
 * status: 0 every pair OK, 1 any pair failed.
 */
int agent_cmd_check(struct agent_opts *o, char *err, size_t errlen);

#endif
