/* SPDX-License-Identifier: MIT */
/* run_int.h - the commands that meet peers: run, init, serve; exec; the job token. */
#ifndef AGENT_RUN_INT_H
#define AGENT_RUN_INT_H

#include "agent/agent.h"
#include "rdzv/gx.h"

struct agent_token {
	unsigned char *data; /* NULL = no token */
	size_t len;
};

/* Load the token (--token-file or GXBOOT_TOKEN, which is then removed from environ). */
int agent_token_load(const struct agent_opts *o, struct agent_token *t, char *err, size_t errlen);
void agent_token_free(struct agent_token *t);

/*
 * run / init: meet the peers, write the files, then (run) exec or supervise CMD.
 * Returns a GX_E* / -errno code with the one line in err, or an exit status >= 0.
 */
int agent_cmd_run(struct agent_opts *o, char *err, size_t errlen);
/* exec: load --out/env, apply the variable rules against our environment, exec CMD. */
int agent_cmd_exec(struct agent_opts *o, char *err, size_t errlen);

#endif
