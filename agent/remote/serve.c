/* SPDX-License-Identifier: MIT */
/*
 * serve.c - the remote-exec server: listens on the secondary
 * address only, authenticates each client with the job's rsh key (the client
 * proves first), runs one command per connection under /bin/sh -c in its own
 * session (process group), and streams stdin / stdout / stderr with bounded
 * buffers: a producer is paused while more than RSH_OUT_HIGH bytes wait, so a
 * flooding command blocks on its pipe instead of growing our memory. Children
 * are reaped by the supervisor (agent_serve_reaped); a client that goes away
 * gets its session's process group killed. One log line per session.
 */
#include "agent/remote/rsh_int.h"
#include "rdzv/rdzv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum sess_state {
	S_HELLO = 0, /* waiting for the client's magic + nonce */
	S_AUTH,	     /* waiting for its proof + stream header */
	S_EXEC,	     /* streams up, waiting for EXEC */
	S_RUN,	     /* the command runs */
	S_CLOSING,   /* flushing a refusal / error / EXIT, then close */
	S_ORPHAN,    /* the client left: the group is being killed, waiting for the reap */
};

struct sess {
	struct agent_serve *sv;
	struct sess *prev, *next;
	struct rsh_conn c;
	enum sess_state st;
	unsigned char nc[RSH_NONCE_LEN], ns[RSH_NONCE_LEN];
	pid_t pid; /* = its process group; 0 before EXEC, -1 once reaped */
	int status;
	int in_fd, out_fd, err_fd;
	unsigned char *ib; /* stdin waiting for the child */
	size_t ilen;
	int stdin_eof;
	int64_t t0, deadline;
	uint64_t kill_id;
	int client_sig; /* the last signal the client forwarded (mpirun ending its daemons) */
	int linger;	/* closing after EXIT: half-close, then read to the client's EOF */
	int wr_shut;	/* ... and the write side is shut: only draining is left */
	char peer[64];
	char first[64];	     /* the command's first word, for the log */
	struct gx_pa_ent pa; /* in sv->pa until its proof is checked */
};

struct agent_serve {
	struct gx_ev *ev;
	struct agent_serve_cfg cfg;
	unsigned char key[RSH_KEY_LEN];
	int lfd[2], nlfd;
	struct sess *list;
	size_t nconns, nrunning;
	uint64_t sweep_id;
	int stopping;
	unsigned char *buf; /* RSH_MAX_PLAIN scratch */
	struct gx_pa pa;    /* unauthenticated connections: a stranger's budget */
	char (*known)[46];  /* the table's addresses (addr4, addr6 per peer) */
	size_t nknown;
	char learned[RSH_LEARNED][46]; /* sources that proved the key (an MPI launcher that is
					* no table entry), a ring */
	size_t nlearned;
	struct gx_rl rl; /* warnings about them */
};

static void sess_event(struct gx_ev *ev, int fd, uint32_t events, void *arg);
static void pipe_event(struct gx_ev *ev, int fd, uint32_t events, void *arg);

/* ---- bookkeeping ---- */
static void close_fd(struct agent_serve *sv, int *fd)
{
	if (*fd < 0)
		return;
	gx_ev_del(sv->ev, *fd);
	close(*fd);
	*fd = -1;
}

/* The client's connection, its pre-authentication entry and the command's pipes. */
static void drop_io(struct sess *s)
{
	struct agent_serve *sv = s->sv;

	if (s->c.f.fd >= 0)
		gx_ev_del(sv->ev, s->c.f.fd);
	agent_rsh_conn_free(&s->c);
	gx_pa_del(&sv->pa, &s->pa);
	close_fd(sv, &s->in_fd);
	close_fd(sv, &s->out_fd);
	close_fd(sv, &s->err_fd);
}

static void sess_free(struct sess *s)
{
	struct agent_serve *sv = s->sv;

	drop_io(s);
	gx_ev_timer_cancel(sv->ev, s->kill_id);
	if (s->prev)
		s->prev->next = s->next;
	else
		sv->list = s->next;
	if (s->next)
		s->next->prev = s->prev;
	sv->nconns--;
	free(s->ib);
	free(s);
}

static void update_sock(struct sess *s)
{
	uint32_t ev = 0;

	if (s->c.f.fd < 0)
		return;
	if (s->st != S_CLOSING && s->ilen < RSH_OUT_HIGH)
		ev |= EPOLLIN;
	if (rsh_conn_queued(&s->c))
		ev |= EPOLLOUT;
	gx_ev_mod(s->sv->ev, s->c.f.fd, ev);
}

/* Producers (the child's stdout / stderr) pause while the socket lags. */
static void update_pipes(struct sess *s)
{
	uint32_t ev = rsh_conn_queued(&s->c) < RSH_OUT_HIGH ? EPOLLIN : 0;

	if (s->out_fd >= 0)
		gx_ev_mod(s->sv->ev, s->out_fd, ev);
	if (s->err_fd >= 0)
		gx_ev_mod(s->sv->ev, s->err_fd, ev);
	if (s->in_fd >= 0)
		gx_ev_mod(s->sv->ev, s->in_fd, s->ilen ? EPOLLOUT : 0);
}

static void log_end(struct sess *s, const char *how)
{
	gx_info("rsh: %s ran '%s': %s (%.1f s)", s->peer, s->first, how,
		(double)(gx_now_ms() - s->t0) / 1000.0);
}

/* The command's process group; the command alone before its setsid() made the group. */
static void kill_cmd(pid_t pid, int sig)
{
	if (kill(-pid, sig) < 0 && errno == ESRCH)
		kill(pid, sig);
}

static void kill_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct sess *s = arg;

	(void)ev;
	(void)id;
	s->kill_id = 0;
	if (s->pid > 0)
		kill_cmd(s->pid, SIGKILL);
}

/* The client is gone (or we stop): end the command's whole process group. */
static void orphan(struct sess *s, const char *why)
{
	struct agent_serve *sv = s->sv;

	if (s->st == S_ORPHAN)
		return;
	drop_io(s);
	if (s->pid <= 0) {
		if (s->pid < 0 || s->st == S_RUN)
			log_end(s, why);
		sess_free(s);
		return;
	}
	s->st = S_ORPHAN;
	log_end(s, why);
	kill_cmd(s->pid, SIGTERM);
	kill_cmd(s->pid, SIGCONT);
	s->kill_id = gx_ev_timer(sv->ev, RSH_KILL_GRACE_MS, kill_fired, s);
}

/*
 * Everything is sent. After an EXIT the close is a lingering one: shut our write side and
 * read (and drop) what the client still sends until its EOF, bounded by s->deadline.
 * A close() with unread bytes (the client's stdin EOF, a forwarded signal) sends a reset
 * instead of a FIN (RFC 1122 4.2.2.13), and the client then read "Connection reset by
 * peer" in place of its EXIT: case_rsh_flood saw it under load. Refusals close at once:
 * a stranger must not hold a socket for the linger.
 */
static void sent_all(struct sess *s)
{
	if (!s->linger || s->c.f.fd < 0 || shutdown(s->c.f.fd, SHUT_WR) < 0) {
		sess_free(s);
		return;
	}
	s->wr_shut = 1;
	s->deadline = gx_now_ms() + 2000; /* for the client's EOF */
	gx_ev_mod(s->sv->ev, s->c.f.fd, EPOLLIN);
}

/*
 * Past its deadline: a handshake, a refusal, the linger. Not a command's session, nor one
 * whose EXIT still waits behind CMD's output for a slow reader (authenticated, as while
 * CMD ran: the tail of 30 MB was lost, exit 255, for a reader that paused 4 s).
 */
static int expired(struct sess *s, int64_t now)
{
	if (!s->deadline || now < s->deadline || s->st == S_RUN || s->st == S_ORPHAN)
		return 0;
	return !(s->st == S_CLOSING && s->linger && !s->wr_shut && rsh_conn_queued(&s->c));
}

/* Draining after the half-close: 1 when the client's EOF (or an error) has come. */
static int drain(struct sess *s)
{
	return gx_frame_drain(&s->c.f) != 0;
}

static void closing(struct sess *s)
{
	s->st = S_CLOSING;
	s->deadline = gx_now_ms() + 2000;
	if (agent_rsh_conn_flush(&s->c) != 1) {
		sent_all(s);
		return;
	}
	update_sock(s);
}

static void send_error(struct sess *s, const char *line)
{
	agent_rsh_conn_send(&s->c, RSH_ERROR, line, strlen(line));
	gx_warn("rsh: %s: %s", s->peer, line);
	closing(s);
}

/* Child reaped and both pipes at EOF: the EXIT frame, then close. */
static void maybe_exit(struct sess *s)
{
	unsigned char ex[2];
	char how[64];

	if (s->st != S_RUN || s->pid >= 0 || s->out_fd >= 0 || s->err_fd >= 0)
		return;
	ex[0] = WIFSIGNALED(s->status) ? 1 : 0;
	ex[1] = (unsigned char)(ex[0] ? WTERMSIG(s->status) : WEXITSTATUS(s->status));
	/* mpirun ends its daemons with a signal at every job's end (ssh: SIGHUP) */
	if (ex[0] && ex[1] == s->client_sig)
		snprintf(how, sizeof(how), "ended by signal %d from the client (a normal end)",
			 ex[1]);
	else if (ex[0])
		snprintf(how, sizeof(how), "killed by signal %d", ex[1]);
	else
		snprintf(how, sizeof(how), "exit %d", ex[1]);
	log_end(s, how);
	close_fd(s->sv, &s->in_fd);
	agent_rsh_conn_send(&s->c, RSH_EXIT, ex, sizeof(ex));
	s->linger = 1;
	closing(s);
}

/* ---- the command ---- */
static void child(struct sess *s, const char *cmd, int pin[2], int pout[2], int perr[2])
{
	char *argv[] = {"sh", "-c", (char *)cmd, NULL};
	sigset_t none;

	setsid(); /* its own session and process group: killed as one */
	if (dup2(pin[0], 0) < 0 || dup2(pout[1], 1) < 0 || dup2(perr[1], 2) < 0)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTTIN, SIG_DFL); /* ignored by a PID-1 gxboot whose CMD holds the terminal */
	signal(SIGTTOU, SIG_DFL);
	execve("/bin/sh", argv, s->sv->cfg.envp);
	dprintf(2, "gxboot serve: cannot run /bin/sh: %s\n", strerror(errno));
	_exit(127);
}

static void first_word(const char *cmd, char *out, size_t cap)
{
	size_t i = 0;

	while (*cmd == ' ' || *cmd == '\t')
		cmd++;
	while (cmd[i] && cmd[i] != ' ' && cmd[i] != '\t' && i + 1 < cap) {
		out[i] = (char)(cmd[i] > 0x20 && cmd[i] < 0x7f ? cmd[i] : '?');
		i++;
	}
	out[i] = '\0';
}

static int spawn(struct sess *s, const char *cmd)
{
	int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
	struct agent_serve *sv = s->sv;
	int rc = 0;

	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out;
	}
	s->pid = fork();
	if (s->pid < 0) {
		rc = -errno;
		s->pid = 0;
		goto out;
	}
	if (s->pid == 0)
		child(s, cmd, pin, pout, perr);
	/* no setpgid(pid, pid) here: it made the child a group leader before its setsid(),
	 * which then failed (EPERM) and left the command in our session; kill_cmd reaches
	 * the child alone until its setsid() has run */
	sv->nrunning++;
	s->in_fd = pin[1], s->out_fd = pout[0], s->err_fd = perr[0];
	pin[1] = pout[0] = perr[0] = -1;
	fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
	fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	if (gx_ev_add(sv->ev, s->in_fd, 0, pipe_event, s) < 0 ||
	    gx_ev_add(sv->ev, s->out_fd, EPOLLIN, pipe_event, s) < 0 ||
	    gx_ev_add(sv->ev, s->err_fd, EPOLLIN, pipe_event, s) < 0)
		rc = -ENOMEM; /* the session is orphaned by the caller; its group killed */
out:
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
	}
	return rc;
}

static int on_exec(struct sess *s, const unsigned char *p, size_t len)
{
	struct agent_serve *sv = s->sv;
	char *cmd;
	int rc;

	if (len == 0 || len > RSH_MAX_CMD || memchr(p, '\0', len))
		return GX_EPROTO;
	if (sv->stopping || sv->nrunning >= RSH_MAX_SESSIONS) {
		send_error(s, sv->stopping ? "the job is ending"
					   : "too many remote commands at once on this pod");
		return 1;
	}
	cmd = strndup((const char *)p, len);
	if (!cmd)
		return -ENOMEM;
	first_word(cmd, s->first, sizeof(s->first));
	s->st = S_RUN;
	s->t0 = gx_now_ms();
	s->deadline = 0;
	rc = spawn(s, cmd);
	free(cmd);
	if (rc < 0 && s->pid == 0) {
		send_error(s, "cannot start the command");
		return 1;
	}
	return rc;
}

static int on_stdin(struct sess *s, const unsigned char *p, size_t len)
{
	unsigned char *q;

	if (s->in_fd < 0 || s->stdin_eof)
		return 0; /* the command closed its stdin: drop, as a pipe would */
	q = realloc(s->ib, s->ilen + len);
	if (!q)
		return -ENOMEM;
	s->ib = q;
	memcpy(s->ib + s->ilen, p, len);
	s->ilen += len;
	return 0;
}

static int allowed_signal(int sig)
{
	return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT ||
	       sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGKILL || sig == SIGWINCH;
}

static int on_frame(struct sess *s, uint8_t type, const unsigned char *p, size_t len)
{
	if (s->st == S_EXEC)
		return type == RSH_EXEC ? on_exec(s, p, len) : GX_EPROTO;
	switch (type) {
	case RSH_STDIN:
		return on_stdin(s, p, len);
	case RSH_STDIN_EOF:
		s->stdin_eof = 1;
		if (!s->ilen)
			close_fd(s->sv, &s->in_fd);
		return 0;
	case RSH_SIGNAL:
		if (len == 1 && allowed_signal(p[0]) && s->pid > 0) {
			s->client_sig = p[0];
			kill_cmd(s->pid, p[0]);
		}
		return 0;
	default:
		return GX_EPROTO;
	}
}

static int is_known(const struct agent_serve *sv, const char *peer);

/* ---- handshake: HELLO -> CHALLENGE, AUTH -> ACCEPT | refusal ---- */
static int on_hello(struct sess *s)
{
	unsigned char m[RSH_HELLO_LEN];
	int rc = agent_rsh_conn_take(&s->c, m, sizeof(m));

	if (rc <= 0)
		return rc;
	if (memcmp(m, RSH_MAGIC, 8) != 0)
		return GX_EPROTO;
	memcpy(s->nc, m + 8, RSH_NONCE_LEN);
	randombytes_buf(s->ns, RSH_NONCE_LEN);
	memcpy(m + 8, s->ns, RSH_NONCE_LEN);
	s->st = S_AUTH;
	return agent_rsh_conn_put(&s->c, m, sizeof(m));
}

static int on_auth(struct sess *s)
{
	unsigned char a[RSH_AUTH_LEN], want[32], acc[RSH_ACCEPT_LEN], c2s[32], s2c[32];
	int rc;

	rc = agent_rsh_conn_take(&s->c, a, sizeof(a));
	if (rc <= 0)
		return rc;
	agent_rsh_proof(s->sv->key, 'C', s->nc, s->ns, want);
	if (sodium_memcmp(a, want, 32) != 0) {
		acc[0] = 1;
		agent_rsh_conn_put(&s->c, acc, 1);
		gx_rl_log(&s->sv->rl, "rsh: refused %s: wrong credential (another job's token?)",
			  s->peer);
		closing(s);
		return 1;
	}
	gx_pa_del(&s->sv->pa, &s->pa); /* authenticated: out of the budget */
	if (!is_known(s->sv, s->peer)) /* its next handshakes are a peer's */
		gx_strlcpy(s->sv->learned[s->sv->nlearned++ % RSH_LEARNED], s->peer, 46);
	s->deadline = s->t0 + RSH_HANDSHAKE_MS;
	agent_rsh_stream_keys(s->sv->key, s->nc, s->ns, c2s, s2c);
	acc[0] = 0;
	agent_rsh_proof(s->sv->key, 'S', s->nc, s->ns, acc + 1);
	rc = agent_rsh_conn_push_init(&s->c, s2c, acc + 33);
	rc = rc ?: agent_rsh_conn_pull_init(&s->c, c2s, a + 32);
	sodium_memzero(c2s, sizeof(c2s));
	sodium_memzero(s2c, sizeof(s2c));
	if (rc == 0)
		rc = agent_rsh_conn_put(&s->c, acc, sizeof(acc));
	s->st = S_EXEC;
	return rc;
}

/*
 * What the socket brought: 0 go on, 1 s is gone or closing, < 0 error (-ECONNRESET: the
 * client closed). The handshake's steps, then a few frames, unless the child's stdin is
 * full: what the client sends then stays in the socket, and update_sock asks for it again
 * once the child reads (nothing is read ahead of its turn, so nothing waits in a buffer).
 */
static int sock_input(struct sess *s)
{
	enum sess_state was;
	uint8_t type;
	size_t len;
	int rc = 0, k;

	for (k = 0; rc == 0 && k < RSH_FRAMES_PER_EVENT; k++) {
		was = s->st;
		if (s->st == S_HELLO)
			rc = on_hello(s);
		else if (s->st == S_AUTH)
			rc = on_auth(s);
		else if (s->ilen >= RSH_OUT_HIGH)
			break; /* the child is not reading its stdin: leave the rest in the socket
				*/
		else if ((rc = agent_rsh_conn_next(&s->c, &type, s->sv->buf, &len)) == 1)
			rc = on_frame(s, type, s->sv->buf, len);
		else
			break;
		if (rc != 0)
			break; /* 1: s may be gone */
		if (s->st == was && (was == S_HELLO || was == S_AUTH))
			break; /* the step's bytes are not all in */
	}
	return rc;
}

static void sess_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct sess *s = arg;
	int rc = 0;

	(void)ev;
	(void)fd;
	if (s->wr_shut) {
		if (drain(s))
			sess_free(s);
		return;
	}
	if (events & EPOLLOUT) {
		rc = agent_rsh_conn_flush(&s->c);
		if (rc == 0 && s->st == S_CLOSING) {
			sent_all(s);
			return;
		}
	}
	if (rc >= 0 && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && s->st != S_CLOSING) {
		rc = sock_input(s);
		if (rc == 1)
			return; /* s may be gone */
		/* a hang-up while the child's stdin is full: nothing more is read from this
		 * client, and the hang-up would be reported again at once */
		if (rc == 0 && (events & (EPOLLERR | EPOLLHUP)) && s->ilen >= RSH_OUT_HIGH)
			rc = -ECONNRESET;
	}
	if (rc < 0) {
		if (rc != -ECONNRESET)
			gx_debug("rsh: %s: %s", s->peer, gx_strerror(rc));
		orphan(s, s->st == S_RUN ? "the client went away: session killed" : "closed");
		return;
	}
	if (agent_rsh_conn_flush(&s->c) < 0) {
		orphan(s, "the client went away: session killed");
		return;
	}
	update_sock(s);
	update_pipes(s);
}

/* ---- the child's pipes ---- */
static void pipe_out(struct sess *s, int *fd, uint8_t type)
{
	ssize_t n = read(*fd, s->sv->buf, RSH_CHUNK);

	if (n > 0) {
		if (agent_rsh_conn_send(&s->c, type, s->sv->buf, (size_t)n) < 0)
			gx_debug("rsh: %s: output lost", s->peer);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	close_fd(s->sv, fd);
}

static void pipe_in(struct sess *s)
{
	ssize_t n = write(s->in_fd, s->ib, s->ilen);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) { /* the command closed its stdin */
		s->ilen = 0;
		s->stdin_eof = 1;
		close_fd(s->sv, &s->in_fd);
		return;
	}
	memmove(s->ib, s->ib + n, s->ilen - (size_t)n);
	s->ilen -= (size_t)n;
	if (!s->ilen && s->stdin_eof)
		close_fd(s->sv, &s->in_fd);
}

static void pipe_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct sess *s = arg;

	(void)ev;
	if (fd == s->in_fd && (events & (EPOLLERR | EPOLLHUP))) {
		s->ilen = 0; /* the command closed its stdin */
		s->stdin_eof = 1;
		close_fd(s->sv, &s->in_fd);
	} else if (fd == s->out_fd)
		pipe_out(s, &s->out_fd, RSH_STDOUT);
	else if (fd == s->err_fd)
		pipe_out(s, &s->err_fd, RSH_STDERR);
	else if (fd == s->in_fd)
		pipe_in(s);
	if (s->st == S_RUN && s->pid < 0 && s->out_fd < 0 && s->err_fd < 0) {
		maybe_exit(s);
		return;
	}
	/* the client's frames wait in the socket while the child's stdin is full: update_sock
	 * asks for them again */
	update_sock(s);
	update_pipes(s);
}

/* ---- listening ---- */
/*
 * The pre-authentication budget (strangers cannot crowd out peers): at most RSH_PREAUTH_PER_SRC
 * unauthenticated connections per address; at RSH_MAX_CONNS the oldest unauthenticated one is
 * closed (1). Table peers and learned launchers keep the slots; every other address shares a pool
 * of RSH_UNKNOWN_POOL, whose oldest is closed for a newcomer from outside, so strangers cannot hold
 * the peers' slots. Not a strict filter: the MPI Operator's launcher is an observer outside the
 * table and must get in once to be learned.
 */
static int is_known(const struct agent_serve *sv, const char *peer)
{
	size_t i;

	for (i = 0; i < sv->nknown; i++)
		if (strcmp(sv->known[i], peer) == 0)
			return 1;
	for (i = 0; i < sv->nlearned && i < RSH_LEARNED; i++)
		if (strcmp(sv->learned[i], peer) == 0)
			return 1;
	return 0;
}

/* The oldest unauthenticated connection from outside the table, and how many there are. */
static struct gx_pa_ent *oldest_unknown(const struct agent_serve *sv, size_t *n)
{
	struct gx_pa_ent *e, *first = NULL;

	*n = 0;
	for (e = sv->pa.oldest; e; e = e->newer) {
		if (e->known)
			continue;
		if (!first)
			first = e;
		(*n)++;
	}
	return first;
}

static int admit(struct agent_serve *sv, const char *peer, int known)
{
	struct gx_pa_ent *old = NULL, *v;
	struct sess *os;
	size_t nunknown;
	char why[160];

	if (sv->stopping)
		return -ESHUTDOWN;
	if (gx_pa_admit(&sv->pa, peer, known, sv->nconns >= RSH_MAX_CONNS, &old) < 0) {
		gx_rl_log(&sv->rl, "rsh: refused a connection from %s: %s", peer,
			  gx_pa_why(&sv->pa, peer, why, sizeof(why)));
		return -EBUSY;
	}
	if (!old && !known) {
		v = oldest_unknown(sv, &nunknown);
		if (nunknown >= RSH_UNKNOWN_POOL)
			old = v;
	}
	if (old) {
		os = (struct sess *)((char *)old - offsetof(struct sess, pa));
		gx_rl_log(
		    &sv->rl,
		    "rsh: closed the oldest unauthenticated connection (from %s) for one from %s",
		    os->peer, peer);
		sess_free(os);
		return 1;
	}
	return 0;
}

static void accept_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct agent_serve *sv = arg;
	union gx_sockaddr sa;
	socklen_t len = sizeof(sa);
	int cfd, i, rc, known, evicted = 0;
	char peer[64];
	struct sess *s;

	(void)events;
	/* few evictions per loop turn: a client's handshake (a few turns) outlives a backlog
	 * full of a stranger's connections */
	for (i = 0; i < 64 && evicted < RSH_EVICT_PER_EVENT; i++) {
		len = sizeof(sa);
		cfd = accept4(fd, &sa.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;
		gx_addr_str(&sa, peer, sizeof(peer));
		known = is_known(sv, peer);
		rc = admit(sv, peer, known);
		if (rc < 0) {
			close(cfd);
			continue;
		}
		evicted += rc;
		s = calloc(1, sizeof(*s));
		if (!s) {
			close(cfd);
			continue;
		}
		agent_rsh_conn_init(&s->c, cfd);
		s->sv = sv;
		s->in_fd = s->out_fd = s->err_fd = -1;
		s->t0 = gx_now_ms();
		s->deadline = s->t0 + RSH_PROOF_MS;
		gx_strlcpy(s->peer, peer, sizeof(s->peer));
		if (gx_ev_add(ev, cfd, EPOLLIN, sess_event, s) < 0) {
			agent_rsh_conn_free(&s->c);
			free(s);
			continue;
		}
		gx_pa_add(&sv->pa, &s->pa, s->peer, known);
		s->next = sv->list;
		if (sv->list)
			sv->list->prev = s;
		sv->list = s;
		sv->nconns++;
	}
}

static void sweep(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct agent_serve *sv = arg;
	int64_t now = gx_now_ms();
	struct sess *s, *next;

	(void)id;
	for (s = sv->list; s; s = next) {
		next = s->next;
		if (expired(s, now)) {
			if (s->st != S_CLOSING)
				gx_debug("rsh: %s: handshake deadline", s->peer);
			sess_free(s);
		}
	}
	gx_rl_flush(&sv->rl);
	sv->sweep_id = gx_ev_timer(ev, 1000, sweep, sv);
}

static int listen_on(struct agent_serve *sv, const char *addr, char *err, size_t errlen)
{
	union gx_sockaddr sa;
	socklen_t len;
	int fd = -1, rc;

	if (!addr || !addr[0])
		return 0;
	rc = gx_addr_parse(addr, sv->cfg.port, &sa, &len);
	if (rc == 0)
		rc = gx_tcp_listen(&sa, len, &fd);
	if (rc == 0)
		rc = gx_ev_add(sv->ev, fd, EPOLLIN, accept_event, sv);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "cannot serve remote exec on %s port %u: %s", addr,
			 sv->cfg.port, gx_strerror(rc));
		return rc == -EADDRINUSE ? GX_EUSAGE : rc;
	}
	sv->lfd[sv->nlfd++] = fd;
	return 0;
}

/* ---- public ---- */
static int known_copy(struct agent_serve *sv, const struct agent_serve_cfg *cfg)
{
	size_t i;

	sv->known = calloc(2 * cfg->ntable + 1, sizeof(*sv->known));
	if (!sv->known)
		return -ENOMEM;
	for (i = 0; cfg->table && i < cfg->ntable; i++) {
		if (cfg->table[i].addr4[0])
			gx_strlcpy(sv->known[sv->nknown++], cfg->table[i].addr4, 46);
		if (cfg->table[i].addr6[0])
			gx_strlcpy(sv->known[sv->nknown++], cfg->table[i].addr6, 46);
	}
	sv->cfg.table = NULL;
	sv->cfg.ntable = 0;
	return 0;
}

int agent_serve_start(struct gx_ev *ev, const struct agent_serve_cfg *cfg, struct agent_serve **ret,
		      char *err, size_t errlen)
{
	struct agent_serve *sv = calloc(1, sizeof(*sv));
	int rc = -ENOMEM;

	if (!sv)
		return rc;
	sv->ev = ev;
	sv->cfg = *cfg;
	memcpy(sv->key, cfg->key, RSH_KEY_LEN);
	sv->cfg.key = NULL;
	sv->rl.what = "rsh: unauthenticated connections refused or closed";
	if (known_copy(sv, cfg) < 0)
		goto out;
	sv->buf = malloc(RSH_MAX_PLAIN);
	if (!sv->buf || gx_pa_init(&sv->pa, RSH_MAX_CONNS, RSH_PREAUTH_PER_SRC) < 0)
		goto out;
	rc = listen_on(sv, cfg->addr4, err, errlen);
	if (rc == 0)
		rc = listen_on(sv, cfg->addr6, err, errlen);
	if (rc == 0 && sv->nlfd == 0) {
		snprintf(err, errlen, "no secondary address to serve remote exec on");
		rc = GX_ENOSECONDARY;
	}
	if (rc < 0)
		goto out;
	sv->sweep_id = gx_ev_timer(ev, 1000, sweep, sv);
	gx_info("serving remote exec on %s%s%s port %u", cfg->addr4 ? cfg->addr4 : "",
		cfg->addr4 && cfg->addr4[0] && cfg->addr6 && cfg->addr6[0] ? " and " : "",
		cfg->addr6 ? cfg->addr6 : "", cfg->port);
	*ret = sv;
	sv = NULL;
out:
	agent_serve_free(sv);
	return rc;
}

int agent_serve_reaped(struct agent_serve *sv, pid_t pid, int status)
{
	struct sess *s;

	if (!sv)
		return 0;
	for (s = sv->list; s; s = s->next) {
		if (s->pid != pid)
			continue;
		s->pid = -1;
		s->status = status;
		sv->nrunning--;
		kill(-pid, SIGKILL); /* what the command left in its group */
		if (s->st == S_ORPHAN)
			sess_free(s);
		else
			maybe_exit(s);
		return 1;
	}
	return 0;
}

int agent_serve_owns(const struct agent_serve *sv, pid_t pid)
{
	const struct sess *s;

	for (s = sv ? sv->list : NULL; s; s = s->next) {
		if (s->pid == pid)
			return 1;
	}
	return 0;
}

void agent_serve_shutdown(struct agent_serve *sv)
{
	struct sess *s, *next;
	int i;

	if (!sv || sv->stopping)
		return;
	sv->stopping = 1;
	for (i = 0; i < sv->nlfd; i++) {
		gx_ev_del(sv->ev, sv->lfd[i]);
		close(sv->lfd[i]);
	}
	sv->nlfd = 0;
	for (s = sv->list; s; s = next) {
		next = s->next;
		if (s->st == S_RUN)
			orphan(s, "the job ended: session killed");
		else if (s->st != S_ORPHAN && s->st != S_CLOSING)
			sess_free(s);
	}
}

size_t agent_serve_running(const struct agent_serve *sv)
{
	return sv ? sv->nrunning : 0;
}

void agent_serve_free(struct agent_serve *sv)
{
	int i;

	if (!sv)
		return;
	while (sv->list) {
		if (sv->list->pid > 0)
			kill_cmd(sv->list->pid, SIGKILL);
		sess_free(sv->list);
	}
	for (i = 0; i < sv->nlfd; i++) {
		gx_ev_del(sv->ev, sv->lfd[i]);
		close(sv->lfd[i]);
	}
	gx_ev_timer_cancel(sv->ev, sv->sweep_id);
	sodium_memzero(sv->key, sizeof(sv->key));
	gx_rl_final(&sv->rl);
	gx_pa_free(&sv->pa);
	free(sv->known);
	free(sv->buf);
	free(sv);
}
