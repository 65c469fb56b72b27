/* SPDX-License-Identifier: MIT */
/* cli_int.h - the commands cli composes from the folders below it. */
#ifndef AGENT_CLI_INT_H
#define AGENT_CLI_INT_H

#include "agent/agent.h"

#include <stddef.h>

/*
 * gxboot check: a GX_E* / -errno code with one line in err, or the exit
 * status: 0 every pair OK, 1 any pair failed.
 */
int agent_cmd_check(struct agent_opts *o, char *err, size_t errlen);

#endif
