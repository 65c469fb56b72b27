/* SPDX-License-Identifier: MIT */
/*
 * exec.c - exec or supervise CMD. The supervisor follows tini: signals blocked
 * in the parent and restored in the child before exec, forwarded to the child's
 * process group, zombies reaped with waitpid(-1, WNOHANG) in a loop, exit code
 * 128+n for a signal, _exit() in the forked child.
 */
#include "agent/exec_int.h"

#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static void wait_mode_handler(int sig)
{
	_exit(128 + sig);
}

int agent_signals_wait_mode(void)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = wait_mode_handler;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return -errno;
	}
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

void agent_signals_block(int block)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

int agent_exec(char **argv, char **envp)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	execvpe(argv[0], argv, envp);
	return -errno;
}

int agent_exec_failed(const char *cmd, int err, char *line, size_t len)
{
	snprintf(line, len, "cannot run %s: %s", cmd, strerror(-err));
	return err == -ENOENT ? GX_ECMDNOTFOUND : GX_ECMDEXEC;
}

struct sup {
	pid_t child;
	int status;
	int done;
	int sfd;
};

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 1;
}

static void reap(struct gx_ev *ev, struct sup *s)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p != s->child) {
			gx_debug("reaped zombie %d", (int)p);
			continue;
		}
		s->status = status_code(st);
		s->done = 1;
	}
	if (s->done)
		gx_ev_stop(ev, 0);
}

static void sup_signal(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct signalfd_siginfo si;
	struct sup *s = arg;

	(void)events;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		gx_debug("forwarding signal %u to process group %d", si.ssi_signo, (int)s->child);
		if (kill(-s->child, (int)si.ssi_signo) < 0)
			kill(s->child, (int)si.ssi_signo);
	}
	reap(ev, s);
}

static void child_exec(char **argv, char **envp, const sigset_t *old)
{
	char line[512];
	int code;

	setpgid(0, 0);
	sigprocmask(SIG_SETMASK, old, NULL);
	code = agent_exec_failed(argv[0], agent_exec(argv, envp), line, sizeof(line));
	gx_error("%s", line);
	_exit(gx_exit_code(code));
}

int agent_supervise(struct gx_ev *ev, char **argv, char **envp)
{
	static const int fwd[] = AGENT_FWD_SIGNALS;
	struct sup s = {.child = -1, .sfd = -1};
	sigset_t set, old;
	size_t i;
	int rc = 0;

	sigemptyset(&set);
	for (i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaddset(&set, fwd[i]);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	s.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s.sfd < 0) {
		rc = -errno;
		goto out;
	}
	/* not PID 1: become the reaper of CMD's orphans, as tini -s does */
	if (getpid() != 1)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	s.child = fork();
	if (s.child < 0) {
		rc = -errno;
		goto out;
	}
	if (s.child == 0)
		child_exec(argv, envp, &old);
	setpgid(s.child, s.child); /* also here: no race with an early kill(-pgid) */
	rc = gx_ev_add(ev, s.sfd, EPOLLIN, sup_signal, &s);
	if (rc < 0)
		goto out;
	reap(ev, &s);
	while (!s.done && rc >= 0)
		rc = gx_ev_run(ev);
	rc = s.done ? s.status : rc;
out:
	if (s.sfd >= 0) {
		gx_ev_del(ev, s.sfd);
		close(s.sfd);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}
