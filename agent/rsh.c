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
 */
#include "agent/rsh_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct client {
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

static const struct rsh_peer *find_in(const char *dir, const char *host, struct rsh_peer **p,
				      char *why, size_t whylen)
{
	char path[4200];
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/rendezvous.json", dir);
	free(*p);
	*p = NULL;
	if (rsh_peers_load(path, p, &n, NULL, why, whylen) < 0)
		return NULL;
	snprintf(why, whylen, "not in %.400s", path);
	return rsh_peer_find(*p, n, host);
}

/* HOST through rendezvous.json next to the credential, else in --out; an address as is. */
static int map_host(struct client *cl, const struct agent_opts *o, const char *keyfile)
{
	char dir[4096], why[512] = "";
	const struct rsh_peer *hit;
	struct rsh_peer *p = NULL;

	snprintf(dir, sizeof(dir), "%s", keyfile);
	hit = find_in(dirname(dir), cl->host, &p, why, sizeof(why));
	if (!hit)
		hit = find_in(o->out, cl->host, &p, why, sizeof(why));
	if (hit)
		gx_strlcpy(cl->addr, hit->addr, sizeof(cl->addr));
	else if (gx_addr_normalize(cl->host, cl->addr, sizeof(cl->addr)) != 0)
		snprintf(cl->err, sizeof(cl->err), "%.100s is not a peer of this job (%.300s)",
			 cl->host, why);
	free(p);
	return cl->addr[0] ? 0 : -ENOENT;
}

/* ---- blocking steps with a deadline, on the non-blocking socket ---- */
static int wait_fd(int fd, short what, int64_t deadline)
{
	struct pollfd pf = {.fd = fd, .events = what};
	int64_t left = deadline - gx_now_ms();
	int n;

	if (left <= 0)
		return -ETIMEDOUT;
	n = poll(&pf, 1, (int)left);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n == 0 ? -ETIMEDOUT : 0;
}

static int send_all(struct rsh_conn *c, int64_t deadline)
{
	int rc;

	while ((rc = rsh_conn_flush(c)) == 1) {
		rc = wait_fd(c->fd, POLLOUT, deadline);
		if (rc < 0)
			return rc;
	}
	return rc;
}

static int recv_n(struct rsh_conn *c, void *out, size_t n, int64_t deadline)
{
	int rc;

	while (!rsh_conn_take(c, out, n)) {
		if (c->eof)
			return -ECONNRESET;
		rc = wait_fd(c->fd, POLLIN, deadline);
		if (rc == 0)
			rc = rsh_conn_fill(c);
		if (rc < 0 && rc != -ECONNRESET)
			return rc;
	}
	return 0;
}

static int connect_to(struct client *cl, int64_t deadline)
{
	union gx_sockaddr sa;
	socklen_t len;
	int fd = -1, rc;

	rc = gx_addr_parse(cl->addr, (uint16_t)cl->key.port, &sa, &len);
	if (rc == 0)
		rc = gx_tcp_connect(&sa, len, NULL, 0, &fd);
	if (rc == 0)
		rc = rsh_conn_init(&cl->c, fd);
	else
		cl->c.fd = -1;
	while (rc == 0 && (rc = wait_fd(fd, POLLOUT, deadline)) == 0) {
		rc = gx_sock_error(fd);
		if (rc != -EINPROGRESS && rc != -EALREADY)
			break;
		rc = 0;
	}
	return rc;
}

/*
 * A refused connect is retried until the deadline: a worker's serve opens its
 * port right after its own rendezvous, which can end a moment after the
 * launcher's (mpirun / mpiexec start at once). The pause waits on the signalfd,
 * so a signal from mpirun ends it at once.
 */
static int connect_retry(struct client *cl, int64_t deadline)
{
	int64_t pause = 50;
	int rc;

	for (;;) {
		rc = connect_to(cl, deadline);
		if (rc != -ECONNREFUSED || gx_now_ms() + pause >= deadline)
			return rc;
		rsh_conn_free(&cl->c);
		if (wait_fd(cl->sfd, POLLIN, gx_now_ms() + pause) == 0)
			return -EINTR; /* a signal came: give up now */
		pause = pause < 800 ? pause * 2 : 800;
	}
}

static int handshake(struct client *cl, int64_t deadline)
{
	unsigned char m[RSH_HELLO_LEN], nc[RSH_NONCE_LEN], a[RSH_AUTH_LEN], acc[RSH_ACCEPT_LEN];
	unsigned char want[32], c2s[32], s2c[32];
	int rc;

	memcpy(m, RSH_MAGIC, 8);
	randombytes_buf(nc, sizeof(nc));
	memcpy(m + 8, nc, sizeof(nc));
	rc = rsh_conn_put(&cl->c, m, sizeof(m));
	rc = rc ?: send_all(&cl->c, deadline);
	rc = rc ?: recv_n(&cl->c, m, sizeof(m), deadline);
	if (rc < 0)
		return rc;
	if (memcmp(m, RSH_MAGIC, 8) != 0)
		return GX_EPROTO;
	rsh_proof(cl->key.k, 'C', nc, m + 8, a);
	rsh_stream_keys(cl->key.k, nc, m + 8, c2s, s2c);
	rc = rsh_conn_push_init(&cl->c, c2s, a + 32);
	rc = rc ?: rsh_conn_put(&cl->c, a, sizeof(a));
	rc = rc ?: send_all(&cl->c, deadline);
	rc = rc ?: recv_n(&cl->c, acc, 1, deadline);
	if (rc == 0 && acc[0] != 0)
		rc = GX_EAUTH;
	rc = rc ?: recv_n(&cl->c, acc + 1, sizeof(acc) - 1, deadline);
	rsh_proof(cl->key.k, 'S', nc, m + 8, want);
	if (rc == 0 && sodium_memcmp(acc + 1, want, 32) != 0)
		rc = GX_EAUTH;
	rc = rc ?: rsh_conn_pull_init(&cl->c, s2c, acc + 33);
	sodium_memzero(c2s, sizeof(c2s));
	sodium_memzero(s2c, sizeof(s2c));
	return rc;
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

static int sock_ready(struct client *cl)
{
	uint8_t type;
	size_t len;
	int rc, st;

	rc = rsh_conn_fill(&cl->c);
	if (rc < 0 && rc != -ECONNRESET)
		goto lost;
	while ((st = rsh_conn_next(&cl->c, &type, cl->buf, &len)) == 1) {
		st = on_frame(cl, type, cl->buf, len);
		if (st >= 0)
			return st;
	}
	if (st < 0 || rc == -ECONNRESET) {
		rc = st < 0 ? st : rc;
		goto lost;
	}
	return -1;
lost:
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
		return rsh_conn_send(&cl->c, RSH_STDIN, cl->buf, (size_t)n);
	cl->stdin_open = 0;
	return rsh_conn_send(&cl->c, RSH_STDIN_EOF, NULL, 0);
}

static int signal_ready(struct client *cl)
{
	struct signalfd_siginfo si;
	unsigned char sig;

	while (read(cl->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		sig = (unsigned char)si.ssi_signo;
		if (rsh_conn_send(&cl->c, RSH_SIGNAL, &sig, 1) < 0)
			return -EPIPE;
		if (getppid() != cl->ppid && !cl->orphan_at)
			cl->orphan_at = gx_now_ms() + RSH_KILL_GRACE_MS;
	}
	return 0;
}

static int session(struct client *cl)
{
	struct pollfd pf[3];
	int rc = 0, st = -1, n;

	while (st < 0) {
		pf[0] = (struct pollfd){.fd = cl->c.fd, .events = POLLIN};
		if (rsh_conn_queued(&cl->c))
			pf[0].events |= POLLOUT;
		pf[1] = (struct pollfd){.fd = cl->sfd, .events = POLLIN};
		pf[2] = (struct pollfd){
		    .fd = cl->stdin_open && rsh_conn_queued(&cl->c) < RSH_OUT_HIGH ? 0 : -1,
		    .events = POLLIN};
		n = poll(pf, 3, cl->orphan_at ? 200 : -1);
		if (n < 0 && errno != EINTR)
			return RSH_FAIL;
		if (cl->orphan_at && gx_now_ms() >= cl->orphan_at) {
			snprintf(cl->err, sizeof(cl->err),
				 "our parent exited: session on %s closed", cl->host);
			return RSH_FAIL; /* closing the connection kills the remote group */
		}
		if (n <= 0)
			continue;
		if (pf[1].revents)
			rc = signal_ready(cl);
		if (rc == 0 && (pf[2].revents & (POLLIN | POLLHUP | POLLERR)))
			rc = stdin_ready(cl);
		if (rc == 0 && (pf[0].revents & POLLOUT))
			rc = rsh_conn_flush(&cl->c) < 0 ? -EPIPE : 0;
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR))
			st = sock_ready(cl);
		else if (rc < 0)
			st = sock_ready(cl); /* a failed send: read why (EXIT / ERROR / EOF) */
	}
	return st;
}

static int start(struct client *cl, struct agent_opts *o)
{
	int64_t deadline = gx_now_ms() + RSH_CONNECT_MS;
	char *cmd = NULL;
	int rc;

	rc = rsh_join_args(o->argv, o->argc, &cmd);
	if (rc < 0) {
		snprintf(cl->err, sizeof(cl->err), "the command is too long (%d bytes at most)",
			 RSH_MAX_CMD);
		return rc;
	}
	rc = connect_retry(cl, deadline);
	if (rc < 0)
		snprintf(cl->err, sizeof(cl->err), "cannot reach %s (%s port %ld): %s", cl->host,
			 cl->addr, cl->key.port, gx_strerror(rc));
	if (rc == 0) {
		rc = handshake(cl, deadline);
		if (rc < 0)
			snprintf(cl->err, sizeof(cl->err), "%s (%s) %s", cl->host, cl->addr,
				 rc == GX_EAUTH ? "refused our credential (another job's token?)"
						: gx_strerror(rc));
	}
	if (rc == 0)
		rc = rsh_conn_send(&cl->c, RSH_EXEC, cmd, strlen(cmd));
	free(cmd);
	return rc;
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
	cl.c.fd = cl.sfd = -1;
	cl.host = o->rsh_host;
	cl.stdin_open = 1;
	(void)err;
	(void)errlen;
	cl.buf = malloc(RSH_MAX_PLAIN);
	rc = cl.buf ? key_path(o, keyfile, sizeof(keyfile)) : -ENOMEM;
	if (rc == 0 && (rc = rsh_key_load(keyfile, &cl.key, cl.err, sizeof(cl.err))) < 0 &&
	    !getenv("GXBOOT_RSH_KEY_FILE"))
		snprintf(
		    cl.err, sizeof(cl.err),
		    "no remote-exec credential: GXBOOT_RSH_KEY_FILE is not set and %.250s cannot "
		    "be read (run under 'gxboot -- mpirun ...' with peers that serve)",
		    keyfile);
	rc = rc ?: map_host(&cl, o, keyfile);
	rc = rc ?: signals_on(&cl);
	rc = rc ?: start(&cl, o);
	if (rc == 0)
		st = session(&cl);
	if (st == RSH_FAIL)
		dprintf(2, "gxboot rsh: %s\n", cl.err[0] ? cl.err : gx_strerror(rc));
	if (cl.sfd >= 0)
		close(cl.sfd);
	if (cl.c.in)
		rsh_conn_free(&cl.c);
	else if (cl.c.fd >= 0)
		close(cl.c.fd);
	sodium_memzero(&cl.key, sizeof(cl.key));
	free(cl.buf);
	return st;
}
