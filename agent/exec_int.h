/* SPDX-License-Identifier: MIT */
/* exec_int.h - exec CMD, or fork it and stay as its PID-1-like parent (after tini). */
#ifndef AGENT_EXEC_INT_H
#define AGENT_EXEC_INT_H

#include "rdzv/gx.h"

/* Signals that stop gxboot while it waits, and that it forwards while supervising. */
#define AGENT_FWD_SIGNALS                                                                          \
	{                                                                                          \
		SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGWINCH                       \
	}

/*
 * While waiting: SIGTERM/SIGINT/SIGHUP end gxboot at once with 128+n (also as
 * PID 1, where the default action would be to ignore them). No files are
 * half-written: agent_signals_block() covers file writes.
 */
int agent_signals_wait_mode(void);
/* Block / unblock the terminating signals around a critical section. */
void agent_signals_block(int block);

/* execvpe(argv[0], argv, envp). Returns only on failure: -errno. */
int agent_exec(char **argv, char **envp);
/*
 * The one line for an exec failure (-errno from agent_exec) and its code:
 * GX_ECMDNOTFOUND (exit 127) for ENOENT, GX_ECMDEXEC (126) otherwise, as a shell.
 */
int agent_exec_failed(const char *cmd, int err, char *line, size_t len);

/*
 * Fork CMD into its own process group and supervise it on ev (which may carry
 * other work, e.g. a coordinator that keeps serving): forward signals to the
 * child's process group, reap every zombie, and return the child's exit code
 * (128+n when it died of signal n) once it exits. Returns -errno when CMD could
 * not be started; exec failure in the child gives 126/127.
 */
int agent_supervise(struct gx_ev *ev, char **argv, char **envp);

#endif
