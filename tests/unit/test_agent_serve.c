/* SPDX-License-Identifier: MIT */
/*
 * test_agent_serve.c - the remote-exec server's budget against strangers, in one process:
 * a stranger (127.0.0.2, never proving) fills the 128 connections; a client at an address
 * outside the table that once proved the key (127.0.0.3: an MPI launcher that is an
 * observer) is then a known peer: its new connection pushes out a stranger's and is itself
 * never pushed out by the stranger's next ones.
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
#include <sys/socket.h>
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

/* The whole client handshake; 0 when the server accepted the proof. */
static int prove(struct gx_ev *ev, int fd)
{
	unsigned char nc[RSH_NONCE_LEN], ns[RSH_NONCE_LEN], a[RSH_AUTH_LEN], acc[RSH_ACCEPT_LEN];
	unsigned char c2s[32], s2c[32];
	crypto_secretstream_xchacha20poly1305_state st;
	size_t got = 0;
	ssize_t n;
	int k;

	if (hello(ev, fd, nc, ns) < 0)
		return -1;
	agent_rsh_proof(KEY, 'C', nc, ns, a);
	agent_rsh_stream_keys(KEY, nc, ns, c2s, s2c);
	crypto_secretstream_xchacha20poly1305_init_push(&st, a + 32, c2s);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_learned_launcher_not_pushed_out),
	    cmocka_unit_test(test_stranger_pool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
