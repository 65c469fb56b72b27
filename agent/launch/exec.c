/* SPDX-License-Identifier: MIT */
/*
 * exec.c - exec or supervise CMD. The supervisor follows tini: signals blocked
 * in the parent and restored in the child before exec, forwarded to the child's
 * process group, zombies reaped with waitpid(-1, WNOHANG) in a loop, exit code
 * 128+n for a signal, _exit() in the forked child.
 */
#include "agent/launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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

void agent_fail_line(const char *line)
{
	int fd;

	dprintf(STDERR_FILENO, "gxboot: %s\n", line);
	fd = open("/dev/termination-log", O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		dprintf(fd, "gxboot: %s\n", line);
		close(fd);
	}
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
	pid_t child; /* -1: no CMD */
	int status;
	int done;
	int sfd;
	const struct agent_sup_hooks *h;
	uint64_t tick;
	int signo; /* no CMD: the stop signal received */
	/* after CMD: ending what it left, in the same loop */
	int leftovers, killed, gone;
	int64_t kill_at;
};

static int signal_children(struct sup *s, int sig);

/* Nothing of CMD's left: its group is empty and no child of ours is alive. */
static int leftovers_gone(struct sup *s)
{
	return (s->child <= 0 || kill(-s->child, 0) < 0) && signal_children(s, 0) == 0;
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 1;
}

/* Every zombie: CMD's status is kept, the others go to the hooks. */
static void reap_all(struct sup *s)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == s->child) {
			s->status = status_code(st);
			s->done = 1;
		} else if (s->h && s->h->reaped) {
			s->h->reaped(s->h->arg, p, st);
		} else {
			gx_debug("reaped zombie %d", (int)p);
		}
	}
}

static void reap(struct gx_ev *ev, struct sup *s)
{
	int st;

	reap_all(s);
	if (s->leftovers) {
		s->gone = leftovers_gone(s);
		if (s->gone)
			gx_ev_stop(ev, 0);
		return;
	}
	if (!s->done && s->child < 0 && s->h && s->h->stop &&
	    s->h->stop(s->h->arg, s->signo, &st)) {
		s->status = st;
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
		if (s->child < 0) { /* nothing to forward to: a stop signal ends us */
			if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT ||
			    si.ssi_signo == SIGHUP) {
				s->signo = (int)si.ssi_signo;
				s->status = 128 + s->signo;
				s->done = !(s->h && s->h->stop); /* else the hook drains first */
			}
			continue;
		}
		gx_debug("forwarding signal %u to process group %d", si.ssi_signo, (int)s->child);
		if (kill(-s->child, (int)si.ssi_signo) < 0 && !s->done) /* done: reaped */
			kill(s->child, (int)si.ssi_signo);
	}
	reap(ev, s);
}

/*
 * In the child: its own process group, which gets the terminal when gxboot is PID 1 and
 * holds it (as tini: else a CMD that reads it stops on SIGTTIN and nobody continues it;
 * under a shell's job control gxboot keeps it), the mask gxboot found, then CMD. An exec
 * failure is the job's one line, to the termination log too (the parent sees 126/127).
 */
static void child_exec(char **argv, char **envp, const sigset_t *old, int tty)
{
	char line[512];
	int code;

	setpgid(0, 0);
	if (tty) {
		if (tcsetpgrp(STDIN_FILENO, getpgrp()) < 0) /* SIGTTOU ignored here */
			gx_debug("tcsetpgrp: %s", strerror(errno));
		signal(SIGTTIN, SIG_DFL);
		signal(SIGTTOU, SIG_DFL);
	}
	sigprocmask(SIG_SETMASK, old, NULL);
	code = agent_exec_failed(argv[0], agent_exec(argv, envp), line, sizeof(line));
	agent_fail_line(line);
	_exit(gx_exit_code(code));
}

/* Signal our children (orphans re-parented to us included) that hooks do not own. */
static int signal_children(struct sup *s, int sig)
{
	char path[64], buf[4096];
	int fd, n = 0;
	ssize_t len;
	long pid;
	char *p, *e;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[len > 0 ? len : 0] = '\0';
	for (p = buf; *p; p = e) {
		pid = strtol(p, &e, 10);
		if (e == p)
			break;
		if (pid <= 1 || (s->h && s->h->owns && s->h->owns(s->h->arg, (pid_t)pid)))
			continue;
		if (kill((pid_t)pid, sig) == 0)
			n++;
	}
	return n;
}

/*
 * CMD exited (or, with no CMD, serving ended): what is left (CMD's process
 * group; mpirun's local ranks, which OpenMPI puts in groups of their own and
 * which were re-parented to us; an orted's ranks on a server) would outlive
 * the job. SIGTERM, SIGKILL after 2 s; as their reaper we
 * collect them.
 */
static void leftover_tick(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct sup *s = arg;

	(void)id;
	s->tick = 0;
	reap(ev, s);
	if (s->gone)
		return;
	if (!s->killed && gx_now_ms() >= s->kill_at) {
		s->killed = 1;
		if (s->child > 0)
			kill(-s->child, SIGKILL);
		if (signal_children(s, SIGKILL))
			gx_warn("processes left by CMD ignored SIGTERM: killed");
	}
	/* SIGCHLD wakes us for our children; the group's other members have no
	 * signal to wake us, so look again now and then */
	s->tick = gx_ev_timer(ev, 20, leftover_tick, s);
}

static void kill_leftovers(struct gx_ev *ev, struct sup *s)
{
	int64_t end;
	int left;

	if (s->child > 0) {
		kill(-s->child, SIGTERM);
		kill(-s->child, SIGCONT);
	}
	left = signal_children(s, SIGTERM);
	if (left)
		gx_debug("%d processes outlived CMD: terminating", left);
	s->leftovers = 1;
	s->kill_at = gx_now_ms() + 2000;
	end = s->kill_at + 1000; /* SIGKILL'd processes get a second to be reaped */
	gx_ev_timer_cancel(ev, s->tick);
	s->tick = gx_ev_timer(ev, 0, leftover_tick, s);
	while (!s->gone && gx_now_ms() < end)
		(void)gx_ev_run_until(ev, end);
	reap_all(s);
}

/* Wake the loop now and then so hooks->stop() is asked even when idle. */
static void stop_tick(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct sup *s = arg;

	(void)id;
	s->tick = 0;
	reap(ev, s);
	if (!s->done)
		s->tick = gx_ev_timer(ev, 200, stop_tick, s);
}

/*
 * With CMD, every signal is CMD's (as tini): all are read from the signalfd and forwarded,
 * except SIGCHLD (ours), the terminal's job control (SIGTTIN, SIGTTOU), SIGPIPE (our own
 * writes to a closed socket) and the synchronous faults. Before, only 7 were: as PID 1 the
 * others were lost, and with --supervise a SIGALRM or SIGPWR ended gxboot and left CMD
 * orphaned. Without CMD (serve), the 7 of before: the others keep their default action.
 */
static void sup_signal_set(sigset_t *set, int cmd)
{
	static const int own[] = {SIGCHLD, SIGTTIN, SIGTTOU, SIGPIPE, SIGSEGV, SIGBUS, SIGFPE,
				  SIGILL,  SIGTRAP, SIGSYS,  SIGABRT, SIGKILL, SIGSTOP};
	static const int nocmd[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGWINCH};
	size_t i;

	if (cmd) {
		sigfillset(set);
		for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
			sigdelset(set, own[i]);
	} else {
		sigemptyset(set);
		for (i = 0; i < sizeof(nocmd) / sizeof(nocmd[0]); i++)
			sigaddset(set, nocmd[i]);
	}
	sigaddset(set, SIGCHLD); /* read too, for reaping */
}

/* CMD gets the terminal: gxboot is PID 1 (a container's, no job control above it), leads
 * its own process group (as a runtime's init after setsid: under a bare `unshare -fp` the
 * group is outside the namespace and reads as 0, and so may the terminal's), and that
 * group holds the terminal. */
static int hand_tty(void)
{
	return getpid() == 1 && getpgrp() == 1 && isatty(STDIN_FILENO) &&
	       tcgetpgrp(STDIN_FILENO) == 1;
}

int agent_supervise(struct gx_ev *ev, char **argv, char **envp, const struct agent_sup_hooks *h)
{
	struct sup s = {.child = -1, .sfd = -1, .h = h};
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_ttin, old_ttou;
	sigset_t set, old;
	int rc = 0, tty = argv && hand_tty();

	/* an inherited SIGCHLD SIG_IGN reaps CMD in the kernel: waitpid would never see it
	 * (for the rest of gxboot's life: the serve drain reaps after this returns) */
	signal(SIGCHLD, SIG_DFL);
	if (tty) { /* in the background while CMD holds the terminal: never stopped by it */
		sigaction(SIGTTIN, &ign, &old_ttin);
		sigaction(SIGTTOU, &ign, &old_ttou);
	}
	sup_signal_set(&set, argv || (h && h->all_signals));
	sigprocmask(SIG_BLOCK, &set, &old);
	s.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s.sfd < 0) {
		rc = -errno;
		goto out;
	}
	/* not PID 1: become the reaper of CMD's orphans, as tini -s does */
	if (getpid() != 1)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if (argv) {
		s.child = fork();
		if (s.child < 0) {
			rc = -errno;
			goto out;
		}
		if (s.child == 0)
			child_exec(argv, envp, &old, tty);
		setpgid(s.child, s.child); /* also here: no race with an early kill(-pgid) */
	} else {
		s.tick = gx_ev_timer(ev, 200, stop_tick, &s);
	}
	rc = gx_ev_add(ev, s.sfd, EPOLLIN, sup_signal, &s);
	if (rc < 0)
		goto out;
	reap(ev, &s);
	while (!s.done && rc >= 0)
		rc = gx_ev_run(ev);
	rc = s.done ? s.status : rc;
	kill_leftovers(ev, &s);
out:
	gx_ev_timer_cancel(ev, s.tick);
	if (s.sfd >= 0) {
		gx_ev_del(ev, s.sfd);
		close(s.sfd);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (tty) { /* the terminal back to gxboot's group, then its dispositions */
		tcsetpgrp(STDIN_FILENO, getpgrp());
		sigaction(SIGTTIN, &old_ttin, NULL);
		sigaction(SIGTTOU, &old_ttou, NULL);
	}
	return rc;
}
