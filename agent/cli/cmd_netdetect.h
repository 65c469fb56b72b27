/* SPDX-License-Identifier: MIT */
/* cmd_netdetect.h - `gxboot netdetect [--json] [...]`: interfaces, RDMA, the choice and why. */
#ifndef AGENT_CMD_NETDETECT_H
#define AGENT_CMD_NETDETECT_H

#include "agent/agent.h"

#include <stddef.h>

/*
 * Print the table (or --json) to stdout. Returns 0, or GX_ENOSECONDARY /
 * GX_ENORDMA (exit 4), GX_EUSAGE, GX_EJSON, ... with the one line in err; the
 * table is still printed when the inventory could be read.
 */
int agent_cmd_netdetect(const struct agent_opts *o, char *err, size_t errlen);

#endif
