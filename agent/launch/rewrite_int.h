/* SPDX-License-Identifier: MIT */
/* rewrite_int.h - torchrun command-line rewriting (drop-in, issue 16). */
#ifndef AGENT_REWRITE_INT_H
#define AGENT_REWRITE_INT_H

#include "rdzv/gx/gx.h"

/* A peer as an MPI launch line may name it (issue 27). */
struct agent_rw_host {
	const char *name;    /* its name in the peer list */
	const char *primary; /* the eth0 address the coordinator saw, or NULL / "" */
	const char *addr;    /* its secondary address */
};

struct agent_rewrite_ctx {
	const char *addr; /* elected MASTER_ADDR (coordinator's secondary IP) */
	long master_port;
	long rank, world;
	int is_coordinator;		/* localhost / 127.x name the coordinator only there */
	const char *const *coord_names; /* NULL-terminated: names and eth0 IPs of the coordinator */
	char **envp;			/* for ${VAR:=default} words in sh -c STR */
	/* MPI launch lines (issue 27): every peer, or nhosts 0 when this pod does not
	 * know the table (then they are left alone) */
	const struct agent_rw_host *hosts;
	size_t nhosts;
	const char *launch_hostfile; /* where a translated --hostfile / -f goes */
	const char *iface;	     /* DeepSpeed's openmpi launcher: btl_tcp_if_include */
	char **launch_text;	     /* gets its text (malloc'd) when one is made */
};

/*
 * An MPI launcher (mpirun, mpiexec[.hydra|.mpich], orterun, prterun, horovodrun) before its
 * program: `--hostfile F` / `-hostfile` / `--machinefile` / `-machinefile` /
 * `-f F` point at ctx->launch_hostfile, whose text (F's lines with each host
 * mapped to its secondary address, slots and the rest kept) goes to
 * *ctx->launch_text; `-H` / `--host` / `-host` / `-hosts` / `--hosts a,b:2` are mapped in
 * place. A host that is no peer leaves that option alone (warned); an IPv6
 * secondary is left as named (neither `host:N` form can carry it).
 *
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
