/* SPDX-License-Identifier: MIT */
/*
 * rsh.c - `gxboot rsh [ssh flags] HOST CMD...`, the remote shell mpirun calls
 * (OMPI_MCA_plm_rsh_agent): like ssh it joins CMD's words with spaces and runs
 * them under /bin/sh -c on HOST, streams stdin / stdout / stderr, forwards
 * SIGINT / SIGTERM / SIGHUP, and exits with the remote status (128+n for a
 * signal), or 255 when HOST cannot be reached or refuses. The credential is
 * GXBOOT_RSH_KEY_FILE (else --out/rsh.key): never the job token. Output is
 * written with blocking writes to our stdout / stderr (they are shared with
 * mpirun: never switched to non-blocking), which is the back-pressure.
 * Everything else runs in one gx_ev loop: the connect and its
 * retries (timers), the handshake, the signalfd, stdin and the socket.
 */
#include "agent/remote/rsh_int.h"
#include "agent/peers/peers.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

enum cl_phase {
	CL_CONNECT,
	CL_PAUSE,
	CL_HELLO,
	CL_AUTH,
	CL_ACCEPT,
	CL_SESSION
};

struct client {
	struct gx_ev *ev;
	enum cl_phase phase;
	int64_t deadline; /* connect + handshake */
	int64_t pause;	  /* the next retry's pause after a refused connect */
	uint64_t deadline_id, retry_id, orphan_id, stdin_id;
	int st;		   /* the exit status once known, else -1 */
	int stdin_in_loop; /* fd 0 is in the loop (a pipe / tty / socket) */
	int stdin_polls;   /* 0: fd 0 cannot be polled (a file, /dev/null): read it from a timer */
	unsigned char nc[RSH_NONCE_LEN], ns[RSH_NONCE_LEN];
	char *cmd;
	const char *host;
	char addr[46];
	struct rsh_key key;
	struct rsh_conn c;
	int sfd;
	int stdin_open;
	int out_broken[3];
	pid_t ppid;
	int64_t orphan_at; /* our parent (mpirun) died: give up at this time */
	unsigned char *buf;
	char err[512];
};

#define RSH_FAIL 255

/* ---- HOST -> address, credential ---- */
static int key_path(const struct agent_opts *o, char *path, size_t cap)
{
	const char *k = getenv("GXBOOT_RSH_KEY_FILE");

	if (k && k[0])
		return snprintf(path, cap, "%s", k) < (int)cap ? 0 : -ENAMETOOLONG;
	return snprintf(path, cap, "%s/rsh.key", o->out) < (int)cap ? 0 : -ENAMETOOLONG;
}

/* 1 with *hit when dir/rendezvous.json lists host, 0 when it does not (why: "not in F"),
 * < 0 when it cannot be read (why: the file and the reason). */
static int find_in(const char *dir, const char *host, const struct agent_domain *d,
		   struct rsh_peer **p, const struct rsh_peer **hit, char *why, size_t whylen)
{
	char path[4200];
	size_t n = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/rendezvous.json", dir);
	free(*p);
	*p = NULL;
	rc = agent_rsh_peers_load(path, p, &n, NULL, why, whylen);
	if (rc < 0)
		return rc;
	snprintf(why, whylen, "not in %.400s", path);
	*hit = agent_rsh_peer_find(*p, n, host, d);
	return *hit ? 1 : 0;
}

/* This pod's DNS domain: which multi-label names reach a peer from here. */
static void this_domain(struct agent_domain *d)
{
	char host[256] = "";

	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	agent_domain_of("", host, d);
}

/*
 * HOST through rendezvous.json next to the credential, else in --out; an address as is.
 * A miss names the files that were read and do not list HOST: a fallback that cannot be
 * opened (the default --out when mpirun's agent has only GXBOOT_RSH_KEY_FILE) is not why.
 */
static int map_host(struct client *cl, const struct agent_opts *o, const char *keyfile)
{
	char dir[4096], why[512] = "", why2[512] = "";
	const struct rsh_peer *hit = NULL;
	struct rsh_peer *p = NULL;
	struct agent_domain dom;
	const char *kdir;
	int r1, r2 = -ENOENT;

	this_domain(&dom);
	snprintf(dir, sizeof(dir), "%s", keyfile);
	kdir = dirname(dir);
	r1 = find_in(kdir, cl->host, &dom, &p, &hit, why, sizeof(why));
	if (r1 <= 0 && strcmp(kdir, o->out) != 0)
		r2 = find_in(o->out, cl->host, &dom, &p, &hit, why2, sizeof(why2));
	if (r1 == 0 && r2 == 0)
		snprintf(why + strlen(why), sizeof(why) - strlen(why), " nor %.200s", why2 + 7);
	else if (r1 < 0 && r2 >= 0)
		snprintf(why, sizeof(why), "%s", why2);
	if (hit)
		gx_strlcpy(cl->addr, hit->addr, sizeof(cl->addr));
	else if (gx_addr_normalize(cl->host, cl->addr, sizeof(cl->addr)) != 0)
		snprintf(cl->err, sizeof(cl->err), "%.100s is not a peer of this job (%.300s)",
			 cl->host, why);
	free(p);
	return cl->addr[0] ? 0 : -ENOENT;
}

/* ---- connect (refused: retried until the deadline) and handshake, in the loop ---- */
static void fd_event(struct gx_ev *ev, int fd, uint32_t events, void *arg);
static void sig_event(struct gx_ev *ev, int fd, uint32_t events, void *arg);
static void session_begin(struct client *cl);

/* The end: the status (RSH_FAIL with cl->err) stops the loop. */
static void finish(struct client *cl, int st)
{
	if (cl->st >= 0)
		return;
	cl->st = st;
	gx_ev_stop(cl->ev, 0);
}

static void fail_reach(struct client *cl, int rc)
{
	snprintf(cl->err, sizeof(cl->err), "cannot reach %s (%s port %ld): %s", cl->host, cl->addr,
		 cl->key.port, gx_strerror(rc));
	finish(cl, RSH_FAIL);
}

static void fail_handshake(struct client *cl, int rc)
{
	snprintf(cl->err, sizeof(cl->err), "%s (%s) %s", cl->host, cl->addr,
		 rc == GX_EAUTH ? "refused our credential (another job's token?)"
				: gx_strerror(rc));
	finish(cl, RSH_FAIL);
}

static void conn_close(struct client *cl)
{
	if (cl->c.f.fd >= 0)
		gx_ev_del(cl->ev, cl->c.f.fd);
	agent_rsh_conn_free(&cl->c); /* closes; fd -1 */
}

static void sock_arm(struct client *cl)
{
	uint32_t ev = EPOLLIN;

	if (cl->phase == CL_CONNECT || rsh_conn_queued(&cl->c))
		ev |= EPOLLOUT;
	gx_ev_mod(cl->ev, cl->c.f.fd, ev);
}

static void connect_start(struct client *cl);

static void retry_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct client *cl = arg;

	(void)id;
	cl->retry_id = 0;
	gx_ev_del(ev, cl->sfd);
	connect_start(cl);
}

/*
 * A refused connect is retried until the deadline: a worker's serve opens its
 * port right after its own rendezvous, which can end a moment after the
 * launcher's (mpirun / mpiexec start at once). The pause listens to the
 * signalfd, so a signal from mpirun ends it at once.
 */
static void connect_failed(struct client *cl, int rc)
{
	if (rc != -ECONNREFUSED || gx_now_ms() + cl->pause >= cl->deadline) {
		fail_reach(cl, rc);
		return;
	}
	conn_close(cl);
	cl->phase = CL_PAUSE;
	cl->retry_id = gx_ev_timer(cl->ev, cl->pause, retry_fired, cl);
	rc = cl->retry_id ? gx_ev_add(cl->ev, cl->sfd, EPOLLIN, sig_event, cl) : -ENOMEM;
	if (rc < 0)
		fail_reach(cl, rc);
	cl->pause = cl->pause < 800 ? cl->pause * 2 : 800;
}

static void connect_start(struct client *cl)
{
	union gx_sockaddr sa;
	socklen_t len;
	int fd = -1, rc;

	cl->phase = CL_CONNECT;
	rc = gx_addr_parse(cl->addr, (uint16_t)cl->key.port, &sa, &len);
	if (rc == 0)
		rc = gx_tcp_connect(&sa, len, NULL, 0, &fd);
	if (rc == 0) {
		agent_rsh_conn_init(&cl->c, fd);
		rc = gx_ev_add(cl->ev, fd, EPOLLOUT | EPOLLIN, fd_event, cl);
	}
	if (rc < 0)
		connect_failed(cl, rc);
}

static void deadline_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct client *cl = arg;

	(void)ev;
	(void)id;
	cl->deadline_id = 0;
	if (cl->phase == CL_CONNECT || cl->phase == CL_PAUSE)
		fail_reach(cl, -ETIMEDOUT);
	else if (cl->phase != CL_SESSION)
		fail_handshake(cl, -ETIMEDOUT);
}

/* The handshake's next step, reading its own bytes (never the session's): 0 wait, 1 advanced,
 * < 0 failed (-ECONNRESET: the server closed before the step's bytes were all in). */
static int hs_step(struct client *cl)
{
	unsigned char m[RSH_HELLO_LEN], a[RSH_AUTH_LEN], acc[RSH_ACCEPT_LEN - 1];
	unsigned char want[32], c2s[32], s2c[32];
	int rc = 0;

	switch (cl->phase) {
	case CL_HELLO:
		rc = agent_rsh_conn_take(&cl->c, m, sizeof(m));
		if (rc <= 0)
			return rc;
		if (memcmp(m, RSH_MAGIC, 8) != 0)
			return GX_EPROTO;
		memcpy(cl->ns, m + 8, sizeof(cl->ns));
		agent_rsh_proof(cl->key.k, 'C', cl->nc, cl->ns, a);
		agent_rsh_stream_keys(cl->key.k, cl->nc, cl->ns, c2s, s2c);
		rc = agent_rsh_conn_push_init(&cl->c, c2s, a + 32);
		rc = rc ?: agent_rsh_conn_put(&cl->c, a, sizeof(a));
		sodium_memzero(c2s, sizeof(c2s));
		sodium_memzero(s2c, sizeof(s2c));
		cl->phase = CL_AUTH;
		return rc ?: 1;
	case CL_AUTH:
		rc = agent_rsh_conn_take(&cl->c, acc, 1);
		if (rc <= 0)
			return rc;
		if (acc[0] != 0)
			return GX_EAUTH;
		cl->phase = CL_ACCEPT;
		return 1;
	case CL_ACCEPT:
		rc = agent_rsh_conn_take(&cl->c, acc, sizeof(acc));
		if (rc <= 0)
			return rc;
		agent_rsh_proof(cl->key.k, 'S', cl->nc, cl->ns, want);
		if (sodium_memcmp(acc, want, 32) != 0)
			return GX_EAUTH;
		agent_rsh_stream_keys(cl->key.k, cl->nc, cl->ns, c2s, s2c);
		rc = agent_rsh_conn_pull_init(&cl->c, s2c, acc + 32);
		sodium_memzero(c2s, sizeof(c2s));
		sodium_memzero(s2c, sizeof(s2c));
		rc = rc ?: agent_rsh_conn_send(&cl->c, RSH_EXEC, cl->cmd, strlen(cl->cmd));
		if (rc == 0)
			session_begin(cl);
		return rc;
	default:
		return 0;
	}
}

static void connected(struct client *cl)
{
	unsigned char m[RSH_HELLO_LEN];
	int rc;

	memcpy(m, RSH_MAGIC, 8);
	randombytes_buf(cl->nc, sizeof(cl->nc));
	memcpy(m + 8, cl->nc, sizeof(cl->nc));
	cl->phase = CL_HELLO;
	rc = agent_rsh_conn_put(&cl->c, m, sizeof(m));
	if (rc < 0)
		fail_handshake(cl, rc);
	else
		sock_arm(cl);
}

static void hs_event(struct client *cl, uint32_t events)
{
	int rc = 0;

	if (events & EPOLLOUT)
		rc = agent_rsh_conn_flush(&cl->c) < 0 ? -EPIPE : 0;
	while (rc == 0 && cl->phase != CL_SESSION && (rc = hs_step(cl)) == 1)
		rc = 0;
	if (rc < 0)
		fail_handshake(cl, rc);
	else if (cl->phase != CL_SESSION)
		sock_arm(cl);
}

/* ---- the session ---- */
static void write_all(struct client *cl, int fd, const unsigned char *p, size_t len)
{
	ssize_t n;

	while (len && !cl->out_broken[fd]) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			cl->out_broken[fd] = 1; /* EPIPE: keep draining, as the command runs on */
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

/* A frame from the server: -1 go on, else the exit status. */
static int on_frame(struct client *cl, uint8_t type, const unsigned char *p, size_t len)
{
	char line[512];

	switch (type) {
	case RSH_STDOUT:
		write_all(cl, 1, p, len);
		return -1;
	case RSH_STDERR:
		write_all(cl, 2, p, len);
		return -1;
	case RSH_EXIT:
		if (len != 2)
			return RSH_FAIL;
		return p[0] ? 128 + p[1] : p[1];
	case RSH_ERROR:
		snprintf(line, sizeof(line), "%.*s", (int)(len < 400 ? len : 400), (const char *)p);
		snprintf(cl->err, sizeof(cl->err), "%.100s refused the command: %.380s", cl->host,
			 gx_safe_text(line, sizeof(line)) ? line : "(unprintable reason)");
		return RSH_FAIL;
	default:
		return -1; /* unknown: skipped */
	}
}

/* The server's frames, a few a readiness (what came before its EOF is read first). */
static int sock_ready(struct client *cl)
{
	uint8_t type;
	size_t len;
	int rc = 0, st, k;

	for (k = 0; k < RSH_FRAMES_PER_EVENT; k++) {
		rc = agent_rsh_conn_next(&cl->c, &type, cl->buf, &len);
		if (rc <= 0)
			break;
		st = on_frame(cl, type, cl->buf, len);
		if (st >= 0)
			return st;
	}
	if (rc >= 0)
		return -1;
	snprintf(cl->err, sizeof(cl->err), "connection to %s (%s) lost: %s", cl->host, cl->addr,
		 rc == -ECONNRESET ? "closed by the server" : gx_strerror(rc));
	return RSH_FAIL;
}

static int stdin_ready(struct client *cl)
{
	ssize_t n = read(0, cl->buf, RSH_CHUNK);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n > 0)
		return agent_rsh_conn_send(&cl->c, RSH_STDIN, cl->buf, (size_t)n);
	cl->stdin_open = 0;
	return agent_rsh_conn_send(&cl->c, RSH_STDIN_EOF, NULL, 0);
}

static int signal_ready(struct client *cl)
{
	struct signalfd_siginfo si;
	unsigned char sig;

	while (read(cl->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		sig = (unsigned char)si.ssi_signo;
		if (agent_rsh_conn_send(&cl->c, RSH_SIGNAL, &sig, 1) < 0)
			return -EPIPE;
		if (getppid() != cl->ppid && !cl->orphan_at)
			cl->orphan_at = gx_now_ms() + RSH_KILL_GRACE_MS;
	}
	return 0;
}

/* ---- the session: socket, signals, stdin (a timer when fd 0 cannot be polled) ---- */
static void stdin_arm(struct client *cl);

/* A failed send (-1 go on): read why (EXIT / ERROR / EOF). */
static void after(struct client *cl, int rc)
{
	int st = rc < 0 ? sock_ready(cl) : -1;

	if (st >= 0) {
		finish(cl, st);
		return;
	}
	sock_arm(cl);
	stdin_arm(cl);
}

static void stdin_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	(void)ev;
	(void)fd;
	(void)events;
	after(arg, stdin_ready(arg));
}

static void stdin_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct client *cl = arg;

	(void)ev;
	(void)id;
	cl->stdin_id = 0;
	if (cl->st < 0)
		after(cl, stdin_ready(cl));
}

static void stdin_arm(struct client *cl)
{
	int want = cl->st < 0 && cl->stdin_open && rsh_conn_queued(&cl->c) < RSH_OUT_HIGH;

	if (!want && cl->stdin_in_loop)
		gx_ev_del(cl->ev, 0);
	if (!want)
		cl->stdin_in_loop = 0;
	if (!want || cl->stdin_in_loop || cl->stdin_id)
		return;
	if (cl->stdin_polls && gx_ev_add(cl->ev, 0, EPOLLIN, stdin_event, cl) == 0) {
		cl->stdin_in_loop = 1;
		return;
	}
	cl->stdin_polls = 0; /* EPERM: a regular file or /dev/null is always readable */
	cl->stdin_id = gx_ev_timer(cl->ev, 0, stdin_fired, cl);
}

static void orphan_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct client *cl = arg;

	(void)ev;
	(void)id;
	cl->orphan_id = 0;
	if (cl->st >= 0)
		return; /* a timer due in the turn that ended the session */
	snprintf(cl->err, sizeof(cl->err), "our parent exited: session on %s closed", cl->host);
	finish(cl, RSH_FAIL); /* closing the connection kills the remote group */
}

static void sig_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct client *cl = arg;
	int rc;

	(void)ev;
	(void)fd;
	(void)events;
	if (cl->phase == CL_PAUSE) { /* a signal came while we wait to retry: give up now */
		fail_reach(cl, -EINTR);
		return;
	}
	rc = signal_ready(cl);
	if (cl->orphan_at && !cl->orphan_id) {
		cl->orphan_id = gx_ev_timer(cl->ev, cl->orphan_at - gx_now_ms(), orphan_fired, cl);
		if (!cl->orphan_id)
			orphan_fired(cl->ev, 0, cl);
	}
	if (cl->st < 0)
		after(cl, rc);
}

static void fd_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct client *cl = arg;
	int rc = 0, st = -1;

	(void)ev;
	if (cl->phase == CL_CONNECT) {
		rc = gx_sock_error(fd);
		if (rc == 0 && !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (rc == -EINPROGRESS || rc == -EALREADY)
			return;
		if (rc < 0)
			connect_failed(cl, rc);
		else
			connected(cl);
		return;
	}
	if (cl->phase != CL_SESSION) {
		hs_event(cl, events);
		return;
	}
	if (events & EPOLLOUT)
		rc = agent_rsh_conn_flush(&cl->c) < 0 ? -EPIPE : 0;
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		st = sock_ready(cl);
	else if (rc < 0)
		st = sock_ready(cl);
	if (st >= 0)
		finish(cl, st);
	else {
		sock_arm(cl);
		stdin_arm(cl);
	}
}

static void session_begin(struct client *cl)
{
	int rc;

	gx_ev_timer_cancel(cl->ev, cl->deadline_id);
	cl->deadline_id = 0;
	cl->phase = CL_SESSION;
	rc = gx_ev_add(cl->ev, cl->sfd, EPOLLIN, sig_event, cl);
	if (rc < 0) {
		snprintf(cl->err, sizeof(cl->err), "signals: %s", gx_strerror(rc));
		finish(cl, RSH_FAIL);
		return;
	}
	sock_arm(cl);
	stdin_arm(cl);
}

static int start(struct client *cl, struct agent_opts *o)
{
	int rc;

	rc = agent_rsh_join_args(o->argv, o->argc, &cl->cmd);
	if (rc < 0) {
		snprintf(cl->err, sizeof(cl->err), "the command is too long (%d bytes at most)",
			 RSH_MAX_CMD);
		return rc;
	}
	rc = gx_ev_new(&cl->ev);
	if (rc < 0)
		return rc;
	cl->deadline = gx_now_ms() + RSH_CONNECT_MS;
	cl->pause = 50;
	cl->deadline_id = gx_ev_timer(cl->ev, RSH_CONNECT_MS, deadline_fired, cl);
	if (!cl->deadline_id)
		return -ENOMEM;
	connect_start(cl);
	gx_ev_run(cl->ev);
	return 0;
}

static int signals_on(struct client *cl)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	cl->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	/* mpirun gone: we get SIGTERM, forward it, and close (the server kills the rest) */
	cl->ppid = getppid();
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != cl->ppid)
		kill(getpid(), SIGTERM);
	return cl->sfd < 0 ? -errno : 0;
}

int agent_cmd_rsh(struct agent_opts *o, char *err, size_t errlen)
{
	struct client cl;
	char keyfile[4096];
	int rc, st = RSH_FAIL;

	memset(&cl, 0, sizeof(cl));
	cl.c.f.fd = cl.sfd = -1;
	cl.host = o->rsh_host;
	cl.stdin_open = cl.stdin_polls = 1;
	cl.st = -1;
	(void)err;
	(void)errlen;
	cl.buf = malloc(RSH_MAX_PLAIN);
	rc = cl.buf ? key_path(o, keyfile, sizeof(keyfile)) : -ENOMEM;
	if (rc == 0 && (rc = agent_rsh_key_load(keyfile, &cl.key, cl.err, sizeof(cl.err))) < 0 &&
	    !getenv("GXBOOT_RSH_KEY_FILE"))
		snprintf(
		    cl.err, sizeof(cl.err),
		    "no remote-exec credential: GXBOOT_RSH_KEY_FILE is not set and %.250s cannot "
		    "be read (run under 'gxboot -- mpirun ...' with peers that serve)",
		    keyfile);
	rc = rc ?: map_host(&cl, o, keyfile);
	rc = rc ?: signals_on(&cl);
	rc = rc ?: start(&cl, o);
	if (rc == 0 && cl.st >= 0)
		st = cl.st;
	if (st == RSH_FAIL)
		dprintf(2, "gxboot rsh: %s\n", cl.err[0] ? cl.err : gx_strerror(rc));
	if (cl.ev) {
		conn_close(&cl);
		gx_ev_del(cl.ev, 0);
		if (cl.sfd >= 0)
			gx_ev_del(cl.ev, cl.sfd);
	} else if (cl.c.f.fd >= 0) {
		close(cl.c.f.fd);
	}
	if (cl.sfd >= 0)
		close(cl.sfd);
	gx_ev_free(cl.ev);
	free(cl.cmd);
	sodium_memzero(&cl.key, sizeof(cl.key));
	free(cl.buf);
	return st;
}
