/* SPDX-License-Identifier: MIT */
/* rewrite_int.h - torchrun command-line rewriting (drop-in, issue 16). */
#ifndef AGENT_REWRITE_INT_H
#define AGENT_REWRITE_INT_H

#include "rdzv/gx.h"

struct agent_rewrite_ctx {
	const char *addr; /* elected MASTER_ADDR (coordinator's secondary IP) */
	long master_port;
	long rank, world;
	int is_coordinator;		/* localhost / 127.x name the coordinator only there */
	const char *const *coord_names; /* NULL-terminated: names and eth0 IPs of the coordinator */
	char **envp;			/* for ${VAR:=default} words in sh -c STR */
};

/*
 * If argv is a torchrun command (torchrun, python -m torch.distributed.run, or
 * sh|bash -c "torchrun ..."), rewrite the values that name the coordinator to
 * the secondary address, rank and world, and c10d to static. Returns 1 with a
 * new argv in *out (free with agent_argv_free), 0 when nothing changed, -errno.
 */
int agent_rewrite_cmd(char **argv, int argc, const struct agent_rewrite_ctx *c, char ***out);
void agent_argv_free(char **v);

/* 1 when argv runs a launcher that reads a hostfile on this pod (mpirun,
 * mpiexec[.hydra|.mpich...], orterun, prterun, horovodrun, deepspeed). */
int agent_cmd_is_launcher(char **argv, int argc);

#endif
