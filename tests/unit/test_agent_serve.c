/* SPDX-License-Identifier: MIT */
/*
 * test_agent_serve.c - the remote-exec server's budget against strangers, in one process:
 * a stranger (127.0.0.2, never proving) fills the 128 connections; a client at an address
 * outside the table that once proved the key (127.0.0.3: an MPI launcher that is an
 * observer) is then a known peer: its new connection pushes out a stranger's and is itself
 * never pushed out by the stranger's next ones. A client that resets while its command does
 * not read stdin ends its session.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/remote/rsh_int.h"
#include "rdzv/rdzv.h"
#include "rdzv/gx/gx.h"

static const unsigned char KEY[RSH_KEY_LEN] = {7, 7, 7};

#define MORE (RSH_MAX_CONNS + 20) /* the stranger's connections after the launcher's */

static int conn(uint16_t port, const char *src)
{
	union gx_sockaddr sa, ss;
	socklen_t sl, ssl;
	int fd = -1;

	assert_int_equal(gx_addr_parse("127.0.0.1", port, &sa, &sl), 0);
	assert_int_equal(gx_addr_parse(src, 0, &ss, &ssl), 0);
	assert_int_equal(gx_tcp_connect(&sa, sl, &ss, ssl, &fd), 0);
	return fd;
}

static void pump(struct gx_ev *ev, int64_t ms)
{
	gx_ev_run_until(ev, gx_now_ms() + ms);
}

static int closed(int fd)
{
	char b[256];
	ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

/* HELLO, then read the server's HELLO (ns); 0 or -1. */
static int hello(struct gx_ev *ev, int fd, unsigned char nc[RSH_NONCE_LEN],
		 unsigned char ns[RSH_NONCE_LEN])
{
	unsigned char m[RSH_HELLO_LEN];
	size_t got = 0;
	ssize_t n;
	int k;

	memcpy(m, RSH_MAGIC, 8);
	randombytes_buf(nc, RSH_NONCE_LEN);
	memcpy(m + 8, nc, RSH_NONCE_LEN);
	if (write(fd, m, sizeof(m)) != (ssize_t)sizeof(m))
		return -1;
	for (k = 0; k < 200 && got < sizeof(m); k++) {
		pump(ev, 5);
		n = recv(fd, m + got, sizeof(m) - got, MSG_DONTWAIT);
		if (n == 0)
			return -1;
		if (n > 0)
			got += (size_t)n;
	}
	if (got < sizeof(m))
		return -1;
	memcpy(ns, m + 8, RSH_NONCE_LEN);
	return 0;
}

/* The whole client handshake, its push stream into st; 0 when the server accepted the proof. */
static int prove_st(struct gx_ev *ev, int fd, crypto_secretstream_xchacha20poly1305_state *st)
{
	unsigned char nc[RSH_NONCE_LEN], ns[RSH_NONCE_LEN], a[RSH_AUTH_LEN], acc[RSH_ACCEPT_LEN];
	unsigned char c2s[32], s2c[32];
	size_t got = 0;
	ssize_t n;
	int k;

	if (hello(ev, fd, nc, ns) < 0)
		return -1;
	agent_rsh_proof(KEY, 'C', nc, ns, a);
	agent_rsh_stream_keys(KEY, nc, ns, c2s, s2c);
	crypto_secretstream_xchacha20poly1305_init_push(st, a + 32, c2s);
	if (write(fd, a, sizeof(a)) != (ssize_t)sizeof(a))
		return -1;
	for (k = 0; k < 200 && got < sizeof(acc); k++) {
		pump(ev, 5);
		n = recv(fd, acc + got, sizeof(acc) - got, MSG_DONTWAIT);
		if (n == 0)
			return -1;
		if (n > 0)
			got += (size_t)n;
	}
	return got == sizeof(acc) && acc[0] == 0 ? 0 : -1;
}

static int prove(struct gx_ev *ev, int fd)
{
	crypto_secretstream_xchacha20poly1305_state st;

	return prove_st(ev, fd, &st);
}

/* One sealed client frame, written whole while the server's loop runs. */
static void send_frame(struct gx_ev *ev, int fd, crypto_secretstream_xchacha20poly1305_state *st,
		       uint8_t type, const void *p, size_t len)
{
	static unsigned char plain[RSH_MAX_PLAIN], wire[4 + RSH_MAX_CT];
	unsigned long long clen = 0;
	size_t off = 0;
	uint32_t n;
	ssize_t w;
	int k;

	assert_true(len + 1 <= RSH_MAX_PLAIN);
	plain[0] = type;
	memcpy(plain + 1, p, len);
	crypto_secretstream_xchacha20poly1305_push(st, wire + 4, &clen, plain, len + 1, NULL, 0, 0);
	n = htonl((uint32_t)clen);
	memcpy(wire, &n, 4);
	for (k = 0; k < 5000 && off < 4 + clen; k++) {
		w = send(fd, wire + off, 4 + clen - off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0)
			off += (size_t)w;
		else
			pump(ev, 1);
	}
	assert_int_equal(off, 4 + clen);
}

static void test_learned_launcher_not_pushed_out(void **state)
{
	struct agent_serve_cfg cfg;
	struct agent_serve *sv = NULL;
	struct gx_ev *ev = NULL;
	char *envp[] = {NULL};
	int fd[RSH_MAX_CONNS + MORE], l1, l2, i, k, rc = -1;
	unsigned char nc[RSH_NONCE_LEN], ns[RSH_NONCE_LEN];

	(void)state;
	assert_true(sodium_init() >= 0);
	assert_int_equal(gx_ev_new(&ev), 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.addr4 = "127.0.0.1";
	cfg.key = KEY;
	cfg.envp = envp;
	for (k = 0; k < 50 && rc < 0; k++) {
		cfg.port = (uint16_t)(30000 + (getpid() * 13 + k * 151) % 20000);
		rc = agent_serve_start(ev, &cfg, &sv, (char[256]){0}, 256);
	}
	assert_int_equal(rc, 0);
	/* the launcher proves once: its address is learned */
	l1 = conn(cfg.port, "127.0.0.3");
	assert_int_equal(prove(ev, l1), 0);
	close(l1);
	pump(ev, 50);
	/* a stranger fills every slot (loopback is exempt from the per-source cap) */
	for (i = 0; i < RSH_MAX_CONNS; i++) {
		fd[i] = conn(cfg.port, "127.0.0.2");
		pump(ev, 1);
	}
	pump(ev, 100);
	/* the launcher again: it gets a slot, and the stranger's next MORE (more than every
	 * slot) do not take it */
	l2 = conn(cfg.port, "127.0.0.3");
	pump(ev, 50);
	assert_int_equal(hello(ev, l2, nc, ns), 0);
	for (i = RSH_MAX_CONNS; i < RSH_MAX_CONNS + MORE; i++) {
		fd[i] = conn(cfg.port, "127.0.0.2");
		pump(ev, 2);
	}
	pump(ev, 100);
	assert_false(closed(l2));
	for (k = 0, i = 0; i < RSH_MAX_CONNS + MORE; i++)
		k += closed(fd[i]);
	assert_true(k >= MORE); /* the stranger's oldest went instead */
	close(l2);
	for (i = 0; i < RSH_MAX_CONNS + MORE; i++)
		close(fd[i]);
	agent_serve_free(sv);
	gx_ev_free(ev);
}

/*
 * Addresses outside the table share RSH_UNKNOWN_POOL unauthenticated slots: a stranger's
 * RSH_MAX_CONNS connections leave at most that many open, and a table peer's handshakes
 * (more than the pool) all get through beside them.
 */
static void test_stranger_pool(void **state)
{
	struct agent_serve_cfg cfg;
	struct agent_serve *sv = NULL;
	struct gx_ev *ev = NULL;
	struct rdzv_peer table[1];
	char *envp[] = {NULL};
	int fd[RSH_MAX_CONNS], p[RSH_UNKNOWN_POOL + 4], i, k, open_, rc = -1;
	unsigned char nc[RSH_NONCE_LEN], ns[RSH_NONCE_LEN];

	(void)state;
	assert_true(sodium_init() >= 0);
	assert_int_equal(gx_ev_new(&ev), 0);
	memset(&cfg, 0, sizeof(cfg));
	memset(table, 0, sizeof(table));
	snprintf(table[0].addr4, sizeof(table[0].addr4), "127.0.0.4");
	cfg.addr4 = "127.0.0.1";
	cfg.key = KEY;
	cfg.envp = envp;
	cfg.table = table;
	cfg.ntable = 1;
	for (k = 0; k < 50 && rc < 0; k++) {
		cfg.port = (uint16_t)(30000 + (getpid() * 17 + k * 151) % 20000);
		rc = agent_serve_start(ev, &cfg, &sv, (char[256]){0}, 256);
	}
	assert_int_equal(rc, 0);
	for (i = 0; i < RSH_MAX_CONNS; i++) {
		fd[i] = conn(cfg.port, "127.0.0.2");
		pump(ev, 1);
	}
	pump(ev, 100);
	for (open_ = 0, i = 0; i < RSH_MAX_CONNS; i++)
		open_ += !closed(fd[i]);
	printf("# a stranger's %d connections: %d left open (pool %d)\n", RSH_MAX_CONNS, open_,
	       RSH_UNKNOWN_POOL);
	assert_true(open_ <= RSH_UNKNOWN_POOL);
	/* the table peer: more handshakes than the pool, all answered (loopback: no per-source
	 * cap), none pushed out by the stranger's next ones */
	for (i = 0; i < RSH_UNKNOWN_POOL + 4; i++) {
		p[i] = conn(cfg.port, "127.0.0.4");
		pump(ev, 2);
	}
	for (i = 0; i < RSH_MAX_CONNS; i++) {
		close(fd[i]);
		fd[i] = conn(cfg.port, "127.0.0.2");
		pump(ev, 1);
	}
	pump(ev, 50);
	for (i = 0; i < RSH_UNKNOWN_POOL + 4; i++) {
		assert_false(closed(p[i]));
		assert_int_equal(hello(ev, p[i], nc, ns), 0);
	}
	close(p[0]);
	p[0] = conn(cfg.port, "127.0.0.4");
	assert_int_equal(prove(ev, p[0]), 0);
	for (i = 0; i < RSH_UNKNOWN_POOL + 4; i++)
		close(p[i]);
	for (i = 0; i < RSH_MAX_CONNS; i++)
		close(fd[i]);
	agent_serve_free(sv);
	gx_ev_free(ev);
}

/*
 * A client that resets its connection while its command does not read stdin (the server's
 * queue for it full, the rest of its frames left in the socket): the hang-up is the end of
 * the session, its command is killed. Nothing more is read from that socket, so the
 * hang-up itself must end it: otherwise it is reported again at every loop turn and the
 * command runs on.
 */
static void test_reset_while_stdin_full(void **state)
{
	static unsigned char chunk[RSH_CHUNK];
	crypto_secretstream_xchacha20poly1305_state st;
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	struct agent_serve_cfg cfg;
	struct agent_serve *sv = NULL;
	struct gx_ev *ev = NULL;
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	const char *cmd = "exec sleep 30";
	int fd, k, rc = -1, status = 0;
	pid_t pid = 0;

	(void)state;
	assert_true(sodium_init() >= 0);
	assert_int_equal(gx_ev_new(&ev), 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.addr4 = "127.0.0.1";
	cfg.key = KEY;
	cfg.envp = envp;
	for (k = 0; k < 50 && rc < 0; k++) {
		cfg.port = (uint16_t)(30000 + (getpid() * 17 + k * 157) % 20000);
		rc = agent_serve_start(ev, &cfg, &sv, (char[256]){0}, 256);
	}
	assert_int_equal(rc, 0);
	fd = conn(cfg.port, "127.0.0.3");
	assert_int_equal(prove_st(ev, fd, &st), 0);
	send_frame(ev, fd, &st, RSH_EXEC, cmd, strlen(cmd));
	/* more stdin than the pipe and the server's queue hold together */
	for (k = 0; k < (int)((2 * RSH_OUT_HIGH) / sizeof(chunk)); k++)
		send_frame(ev, fd, &st, RSH_STDIN, chunk, sizeof(chunk));
	pump(ev, 200);
	assert_int_equal(agent_serve_running(sv), 1);
	assert_int_equal(waitpid(-1, &status, WNOHANG), 0); /* the command runs */
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(fd); /* a reset */
	for (k = 0; k < 500 && pid == 0; k++) {
		pump(ev, 10);
		pid = waitpid(-1, &status, WNOHANG);
	}
	assert_true(pid > 0);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
	assert_int_equal(agent_serve_reaped(sv, pid, status), 1);
	assert_int_equal(agent_serve_running(sv), 0);
	agent_serve_free(sv);
	gx_ev_free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_learned_launcher_not_pushed_out),
	    cmocka_unit_test(test_stranger_pool),
	    cmocka_unit_test(test_reset_while_stdin_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
