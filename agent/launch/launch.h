/* SPDX-License-Identifier: MIT */
/*
 * launch.h - launch's face: exec CMD, or fork it and stay as its PID-1-like parent (after
 * tini) (exec.c); launch-line rewrites, torchrun's and MPI launchers', for lines written for
 * eth0 (rewrite.c).
 */
#ifndef AGENT_LAUNCH_H
#define AGENT_LAUNCH_H

#include "rdzv/gx/gx.h"

#include <sys/types.h>

/*
 * While waiting: SIGTERM/SIGINT/SIGHUP end gxboot at once with 128+n (also as
 * PID 1, where the default action would be to ignore them). No files are
 * half-written: agent_signals_block() covers file writes.
 */
int agent_signals_wait_mode(void);
/* Block / unblock the terminating signals around a critical section. */
void agent_signals_block(int block);

/* The one clear line for a non-zero exit: stderr, and /dev/termination-log when writable. */
void agent_fail_line(const char *line);
/* execvpe(argv[0], argv, envp). Returns only on failure: -errno. */
int agent_exec(char **argv, char **envp);
/*
 * The one line for an exec failure (-errno from agent_exec) and its code:
 * GX_ECMDNOTFOUND (exit 127) for ENOENT, GX_ECMDEXEC (126) otherwise, as a shell.
 */
int agent_exec_failed(const char *cmd, int err, char *line, size_t len);

/* What a supervisor that carries other work needs (serve). */
struct agent_sup_hooks {
	/* a child that is not CMD was reaped (status as from waitpid) */
	void (*reaped)(void *arg, pid_t pid, int status);
	/* a child the hooks' owner manages (spared when CMD's leftovers are killed) */
	int (*owns)(void *arg, pid_t pid);
	/*
	 * No CMD only, asked after every signal and every 200 ms: 1 stops
	 * supervising with *code. signo: SIGTERM / SIGINT / SIGHUP received
	 * (0 none): the hook winds its work down, then says stop.
	 */
	int (*stop)(void *arg, int signo, int *code);
	void *arg;
	/* no CMD: read every signal as with CMD (a drain that must end its sessions' commands:
	 * only SIGTERM / SIGINT / SIGHUP stop it), not only the 7 of a plain serve */
	int all_signals;
};

/*
 * Fork CMD into its own process group (given the terminal when gxboot is PID 1 and holds
 * it) and supervise it on ev (which may carry other work, e.g. a coordinator that keeps
 * serving): forward every signal but its own to the child's process group, reap every zombie, and
 * return the child's exit code (128+n when it died of signal n) once it exits. Returns -errno when
 * CMD could not be started; exec failure in the child gives 126/127. argv NULL: no CMD; run until
 * hooks->stop() says so or SIGTERM / SIGINT / SIGHUP (128+n).
 */
int agent_supervise(struct gx_ev *ev, char **argv, char **envp, const struct agent_sup_hooks *h);

/* ---- rewrite.c: launch lines (drop-in for lines written for eth0) ---- */
/* A peer as a launch line may name it. */
struct agent_rw_host {
	const char *name;    /* its name in the peer list */
	const char *primary; /* its eth0 address (the coordinator saw it), or NULL / "" */
	const char *addr;    /* its secondary address */
};

struct agent_domain;

#define AGENT_RW_UNSET_MAX 4

struct agent_rewrite_ctx {
	const char *addr; /* elected MASTER_ADDR (coordinator's secondary IP) */
	long master_port;
	long rank, world;
	/* gxboot's own --nnodes MIN:MAX (0:0 none) and --elastic: a torchrun elastic range is
	 * kept only as that same range of gxboot's */
	long nnodes_min, nnodes_max;
	int elastic;
	int is_coordinator; /* localhost / 127.x name the coordinator only there */
	/* the coordinator: peer name, its eth0 address as this pod knows it, secondary */
	struct agent_rw_host coord;
	const char *coord_fqdn;		    /* its full name as gxboot looks it up, or NULL */
	const struct agent_domain *dom;	    /* this pod's DNS domain, or NULL */
	int (*is_local_ip)(const char *ip); /* 1: an address of this pod (NULL: none known) */
	char **envp; /* CMD's environment: ${VAR:=default} words in sh -c STR */
	/* gxboot's own values of the variables it sets ("NAME=value", NULL-terminated):
	 * what a launch line's interface pin is compared with, and replaced by under
	 * override_env */
	char **ours;
	int override_env;
	/* MPI launch lines: every peer, or nhosts 0 when this pod does not
	 * know the table (then they are left alone); self: this pod's index, -1 none */
	const struct agent_rw_host *hosts;
	size_t nhosts;
	long self;
	const char *launch_hostfile; /* where a translated --hostfile / -f goes */
	const char *iface;	     /* DeepSpeed's openmpi launcher: btl_tcp_if_include */
	const char *self_fqdn;	     /* this pod's full name (Hydra's -localhost), or NULL */
	char **launch_text;	     /* gets its text (malloc'd) when one is made */
	/* out: gxboot's variables CMD must not get (a kept exclude list would contradict
	 * them), NULL-terminated; may be NULL */
	const char **unset;
	char *err; /* out: the line when a launch line is refused (GX_EUSAGE) */
	size_t errlen;
};

/*
 * An MPI launcher (mpirun, mpiexec[.hydra|.mpich], orterun, prterun, horovodrun) before its
 * program: `--hostfile F` / `-hostfile` / `--machinefile` / `-machinefile` /
 * `-f F` point at ctx->launch_hostfile, whose text (F's lines with each host
 * mapped to its secondary address, slots and the rest kept) goes to
 * *ctx->launch_text; `-H` / `--host` / `-host` / `-hosts` / `--hosts a,b:2` are mapped in
 * place. A host that is no peer (agent_host_names) leaves that option alone (warned); an
 * IPv6 secondary is left as named (neither `host:N` form can carry it). Interface pins
 * (`--mca {btl,oob}_tcp_if_{include,exclude} V`, `-x NAME=V`, Hydra's `-genv NAME V` and
 * `-iface V`) that differ from gxboot's choice are kept with a warning, or replaced under
 * override_env. Hydra on an IPv6-only secondary gets `-localhost <self_fqdn>`.
 *
 * If argv is a torchrun command (torchrun, python -m torch.distributed.run, or
 * sh|bash -c "torchrun ..."), rewrite the values that name the coordinator to
 * the secondary address, rank and world, and c10d to static; every change of meaning
 * (rank, count, port, backend) is a warning saying what was asked and why. A torchrun
 * elastic range that gxboot's own --nnodes does not carry: GX_EUSAGE with ctx->err.
 * Returns 1 with a new argv in *out (free with agent_argv_free), 0 when nothing changed,
 * -errno.
 */
int agent_rewrite_cmd(char **argv, int argc, const struct agent_rewrite_ctx *c, char ***out);
void agent_argv_free(char **v);

/* 1 when argv runs a launcher that reads a hostfile on this pod (mpirun,
 * mpiexec[.hydra|.mpich...], orterun, prterun, horovodrun, deepspeed). */
int agent_cmd_is_launcher(char **argv, int argc);

#endif
