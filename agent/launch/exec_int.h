/* SPDX-License-Identifier: MIT */
/* exec_int.h - exec CMD, or fork it and stay as its PID-1-like parent (after tini). */
#ifndef AGENT_EXEC_INT_H
#define AGENT_EXEC_INT_H

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

#endif
