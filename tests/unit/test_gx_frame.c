/* SPDX-License-Identifier: MIT */
/*
 * test_gx_frame.c - the framed connection (rdzv/gx/gx_frame.c) with two wires of its own:
 * "T" (a 12-byte header: magic, version, type u16, length u32, per-type bounds, an optional
 * 16-byte keyed BLAKE2b trailer over seq | type | body, a type whose body grows under a
 * budget, one peeked, one sunk) and "L" (a 4-byte length, the type inside the seal, as a
 * secretstream frame carries it). Over socketpairs with 1-byte writes: frames come whole
 * and in order, the next frame stays in the socket; a header claiming 4 GiB allocates
 * nothing; a growing body is charged before each allocation and refused at its budget;
 * EAGAIN, EOF, and EINTR on reads and writes (real signals); fed and carried input and
 * output; cork, the output cap, raw handshake bytes, seals refused when forged or replayed;
 * the drain of a lingering close.
 */
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

/* ---- the "T" wire -------------------------------------------------------------------- */

#define T_MAGIC 0x47585431u /* "GXT1" */
#define T_TAG 16
enum {
	T_SMALL = 1,  /* <= 64 bytes */
	T_TABLE = 2,  /* <= 1 MiB, allocated whole */
	T_GROW = 3,   /* any length: grown from 4 KiB under the owner's budget */
	T_RANKED = 4, /* <= 1 MiB, grown; its first 8 bytes say whose it is */
	T_STREAM = 5, /* any length: read and dropped */
};

struct owner {
	unsigned char key[32];
	uint64_t seq_tx, seq_rx;
	size_t charged, peak, budget; /* bytes of body buffers (budget 0: none) */
	int ncharges, npeeks, nseals;
	uint64_t refuse_rank; /* T_RANKED: refused when its first 8 bytes say this */
};

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int t_decode(struct gx_frame *f, const unsigned char *h, unsigned *type, size_t *blen)
{
	size_t tag = f->sealed_rx ? T_TAG : 0, max;

	if (get32(h) != T_MAGIC)
		return GX_EPROTO;
	if (h[4] != 1)
		return GX_EVERSION;
	*type = (unsigned)h[6] << 8 | h[7];
	*blen = get32(h + 8);
	switch (*type) {
	case T_SMALL:
		max = 64;
		break;
	case T_TABLE:
		max = 1u << 20;
		break;
	case T_RANKED:
		max = 1u << 20;
		f->grow_from = 4096;
		f->peek_at = 8;
		break;
	case T_GROW:
		max = UINT32_MAX;
		f->grow_from = 4096;
		break;
	case T_STREAM:
		max = UINT32_MAX;
		f->sink = !f->sealed_rx;
		break;
	default:
		return GX_EPROTO;
	}
	return *blen < tag || *blen - tag > max ? GX_EPROTO : 0;
}

static int t_encode(const struct gx_frame *f, unsigned char *h, unsigned type, size_t blen)
{
	(void)f;
	if (type == T_SMALL && blen > 64 + (f->sealed_tx ? T_TAG : 0))
		return GX_EPROTO;
	put32(h, T_MAGIC);
	h[4] = 1;
	h[5] = 0;
	h[6] = (unsigned char)(type >> 8);
	h[7] = (unsigned char)type;
	put32(h + 8, (uint32_t)blen);
	return 0;
}

static int t_charge(struct gx_frame *f, size_t from, size_t to)
{
	struct owner *o = f->owner;

	o->ncharges++;
	if (to > from && o->budget && o->charged + (to - from) > o->budget)
		return -ENOBUFS;
	o->charged = o->charged + to - from;
	if (o->charged > o->peak)
		o->peak = o->charged;
	return 0;
}

static int t_peek(struct gx_frame *f, const unsigned char *body, size_t got)
{
	struct owner *o = f->owner;
	uint64_t r = 0;
	int i;

	o->npeeks++;
	assert_true(got >= 8);
	for (i = 0; i < 8; i++)
		r = r << 8 | body[i];
	return o->refuse_rank && r == o->refuse_rank ? GX_EPROTO : 0;
}

static void tag_of(const struct owner *o, uint64_t seq, unsigned type, const unsigned char *body,
		   size_t len, unsigned char out[T_TAG])
{
	crypto_generichash_state st;
	unsigned char pre[10];
	int i;

	for (i = 7; i >= 0; i--, seq >>= 8)
		pre[i] = (unsigned char)seq;
	pre[8] = (unsigned char)(type >> 8);
	pre[9] = (unsigned char)type;
	crypto_generichash_init(&st, o->key, sizeof(o->key), T_TAG);
	crypto_generichash_update(&st, pre, sizeof(pre));
	crypto_generichash_update(&st, body, len);
	crypto_generichash_final(&st, out, T_TAG);
}

static int t_seal(struct gx_frame *f, unsigned type, const unsigned char *body, size_t len,
		  unsigned char *out)
{
	struct owner *o = f->owner;

	o->nseals++;
	if (len)
		memcpy(out, body, len);
	tag_of(o, o->seq_tx++, type, body, len, out + len);
	return 0;
}

static int t_open(struct gx_frame *f, unsigned *type, unsigned char *body, size_t *len)
{
	struct owner *o = f->owner;
	unsigned char want[T_TAG];

	tag_of(o, o->seq_rx, *type, body, *len - T_TAG, want);
	if (sodium_memcmp(want, body + *len - T_TAG, T_TAG) != 0)
		return GX_EMAC;
	o->seq_rx++;
	*len -= T_TAG;
	return 0;
}

static const struct gx_frame_fmt T = {
    .hdr_len = 12, .decode = t_decode, .encode = t_encode, .charge = t_charge, .peek = t_peek};
static const struct gx_frame_seal T_SEAL = {.over = T_TAG, .seal = t_seal, .open = t_open};

/* ---- the "L" wire: 4-byte length, type | payload | tag sealed ------------------------- */

static int l_decode(struct gx_frame *f, const unsigned char *h, unsigned *type, size_t *blen)
{
	*type = 0; /* inside the seal */
	*blen = get32(h);
	/* no lower bound here: gx_frame refuses a sealed body shorter than its seal */
	return f->sealed_rx && *blen > 1000 ? GX_EPROTO : 0;
}

static int l_encode(const struct gx_frame *f, unsigned char *h, unsigned type, size_t blen)
{
	(void)f;
	(void)type;
	put32(h, (uint32_t)blen);
	return 0;
}

static int l_seal(struct gx_frame *f, unsigned type, const unsigned char *body, size_t len,
		  unsigned char *out)
{
	struct owner *o = f->owner;

	out[0] = (unsigned char)type;
	if (len)
		memcpy(out + 1, body, len);
	tag_of(o, o->seq_tx++, 0, out, len + 1, out + 1 + len);
	return 0;
}

static int l_open(struct gx_frame *f, unsigned *type, unsigned char *body, size_t *len)
{
	struct owner *o = f->owner;
	unsigned char want[T_TAG];

	tag_of(o, o->seq_rx, 0, body, *len - T_TAG, want);
	if (sodium_memcmp(want, body + *len - T_TAG, T_TAG) != 0)
		return GX_EMAC;
	o->seq_rx++;
	*type = body[0];
	*len -= 1 + T_TAG;
	memmove(body, body + 1, *len);
	return 0;
}

static const struct gx_frame_fmt L = {.hdr_len = 4, .decode = l_decode, .encode = l_encode};
static const struct gx_frame_seal L_SEAL = {.over = 1 + T_TAG, .seal = l_seal, .open = l_open};

/* ---- helpers --------------------------------------------------------------------------- */

static void pair(int fds[2], int nonblock)
{
	assert_int_equal(socketpair(AF_UNIX,
				    SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0,
				    fds),
			 0);
}

/* Bytes waiting unread on fd. */
static int unread(int fd)
{
	int n = -1;

	assert_int_equal(ioctl(fd, FIONREAD, &n), 0);
	return n;
}

/* A T frame, clear, into buf; its length. */
static size_t t_frame(unsigned char *buf, unsigned type, const void *body, uint32_t len)
{
	struct gx_frame f;

	gx_frame_init(&f, -1, &T, NULL, NULL);
	assert_int_equal(t_encode(&f, buf, type, len), 0);
	if (len)
		memcpy(buf + 12, body, len);
	return 12 + (size_t)len;
}

static void fill_seq(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static void expect_frame(struct gx_frame *f, unsigned type, const void *body, size_t len)
{
	unsigned char *b = NULL;
	unsigned t = 0;
	size_t n = 0;

	assert_int_equal(gx_frame_read(f, &t, &b, &n), 1);
	assert_int_equal(t, type);
	assert_int_equal(n, len);
	assert_non_null(b);
	assert_memory_equal(b, body, len);
	free(b);
}

static int read_rc(struct gx_frame *f)
{
	unsigned char *b = NULL;
	unsigned t;
	size_t n;
	int rc = gx_frame_read(f, &t, &b, &n);

	free(b);
	return rc;
}

/* ---- tests ----------------------------------------------------------------------------- */

/* One byte at a time: nothing until the last byte, then the frame; two frames in one write:
 * the first read takes the first only, the second's bytes stay in the socket. */
static void test_one_byte_writes(void **state)
{
	unsigned char body[300], wire[2 * (12 + 300)];
	struct gx_frame f;
	struct owner o = {0};
	size_t n, k;
	int fds[2];

	(void)state;
	pair(fds, 1);
	gx_frame_init(&f, fds[0], &T, NULL, &o);
	fill_seq(body, sizeof(body), 3);
	n = t_frame(wire, T_TABLE, body, sizeof(body));
	for (k = 0; k + 1 < n; k++) {
		assert_int_equal(write(fds[1], wire + k, 1), 1);
		assert_int_equal(read_rc(&f), 0);
	}
	assert_int_equal(write(fds[1], wire + k, 1), 1);
	expect_frame(&f, T_TABLE, body, sizeof(body));
	assert_int_equal(o.charged, 0); /* handed over: released */
	/* pipelined: a 0-byte frame and a small one in one write */
	n = t_frame(wire, T_SMALL, NULL, 0);
	n += t_frame(wire + n, T_SMALL, "abc", 3);
	assert_int_equal(write(fds[1], wire, n), (ssize_t)n);
	expect_frame(&f, T_SMALL, "", 0);
	assert_int_equal(unread(fds[0]), 15);
	expect_frame(&f, T_SMALL, "abc", 3);
	assert_int_equal(read_rc(&f), 0); /* EAGAIN */
	assert_int_equal(f.eof, 0);
	gx_frame_reset(&f);
	assert_int_equal(f.fd, -1);
	assert_int_equal(read_rc(&f), -EBADF);
	close(fds[1]);
}

/* A header that claims 4 GiB - 1 for a type bounded at 1 MiB: refused at the header,
 * nothing allocated or charged, no body byte read. One whose type allows it: its buffer
 * grows with what came, charged before each allocation, and is refused at the budget. */
static void test_header_bounds(void **state)
{
	static unsigned char chunk[10000];
	unsigned char h[12];
	struct gx_frame f;
	struct owner o = {.budget = 64 * 1024};
	size_t sent = 0;
	int fds[2], rc = 0, k;

	(void)state;
	pair(fds, 1);
	gx_frame_init(&f, fds[0], &T, NULL, &o);
	t_frame(h, T_TABLE, NULL, 0);
	put32(h + 8, UINT32_MAX);
	assert_int_equal(write(fds[1], h, sizeof(h)), 12);
	assert_int_equal(write(fds[1], chunk, 100), 100);
	assert_int_equal(read_rc(&f), GX_EPROTO);
	assert_null(f.body);
	assert_int_equal(f.bcap, 0);
	assert_int_equal(o.ncharges, 0);
	assert_int_equal(unread(fds[0]), 100); /* the claimed body was never read */
	gx_frame_reset(&f);
	close(fds[1]);
	/* the same claim for a growing type: 4 KiB first, then doubling with what came */
	pair(fds, 1);
	gx_frame_init(&f, fds[0], &T, NULL, &o);
	t_frame(h, T_GROW, NULL, 0);
	put32(h + 8, UINT32_MAX);
	assert_int_equal(write(fds[1], h, sizeof(h)), 12);
	assert_int_equal(read_rc(&f), 0);
	assert_int_equal(f.bcap, 4096);
	assert_int_equal(o.charged, 4096);
	for (k = 0; k < 100 && rc == 0; k++) {
		assert_int_equal(write(fds[1], chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
		sent += sizeof(chunk);
		rc = read_rc(&f);
		assert_true(f.bcap < 2 * (sent + 4096)); /* never far ahead of the bytes */
	}
	assert_int_equal(rc, -ENOBUFS);
	assert_true(o.peak <= o.budget);
	assert_int_equal(o.peak, 64 * 1024);
	printf("  4 GiB claim: refused after %zu bytes with %zu buffered (budget %zu)\n", sent,
	       o.peak, o.budget);
	gx_frame_reset(&f);
	assert_int_equal(o.charged, 0); /* released with the connection */
	close(fds[1]);
}

/* The peek sees the first bytes before the rest is read, and may refuse there. */
static void test_peek(void **state)
{
	unsigned char body[20000], wire[12 + 20000];
	struct gx_frame f;
	struct owner o = {.refuse_rank = 7};
	size_t n;
	int fds[2];

	(void)state;
	pair(fds, 1);
	gx_frame_init(&f, fds[0], &T, NULL, &o);
	memset(body, 0, sizeof(body));
	body[7] = 3;
	n = t_frame(wire, T_RANKED, body, sizeof(body));
	assert_int_equal(write(fds[1], wire, n), (ssize_t)n);
	expect_frame(&f, T_RANKED, body, sizeof(body));
	assert_int_equal(o.npeeks, 1);
	body[7] = 7; /* refused after its 8 bytes: the rest stays unread */
	n = t_frame(wire, T_RANKED, body, sizeof(body));
	assert_int_equal(write(fds[1], wire, n), (ssize_t)n);
	assert_int_equal(read_rc(&f), GX_EPROTO);
	assert_int_equal(o.npeeks, 2);
	assert_int_equal(f.boff, 8);
	assert_int_equal(unread(fds[0]), (int)sizeof(body) - 8);
	gx_frame_reset(&f);
	close(fds[1]);
}

/* A sink frame of 1 MiB: read and dropped, nothing allocated; then a frame after it. */
static void test_sink(void **state)
{
	static unsigned char zeros[1 << 16];
	unsigned char h[12], *b = (unsigned char *)"x";
	struct gx_frame f;
	struct owner o = {0};
	size_t sent = 0, n = 0;
	unsigned t = 0;
	int fds[2], rc = 0;
	ssize_t w;

	(void)state;
	pair(fds, 1);
	gx_frame_init(&f, fds[0], &T, NULL, &o);
	t_frame(h, T_STREAM, NULL, 0);
	put32(h + 8, 1u << 20);
	assert_int_equal(write(fds[1], h, sizeof(h)), 12);
	while (rc == 0) {
		if (sent < (1u << 20)) {
			w = write(fds[1], zeros, sizeof(zeros));
			sent += w > 0 ? (size_t)w : 0;
		}
		rc = gx_frame_read(&f, &t, &b, &n);
		assert_null(f.body);
	}
	assert_int_equal(rc, 1);
	assert_int_equal(t, T_STREAM);
	assert_null(b);
	assert_int_equal(n, 1u << 20);
	assert_int_equal(o.ncharges, 0);
	n = t_frame(h, T_SMALL, NULL, 0);
	assert_int_equal(write(fds[1], h, n), (ssize_t)n);
	expect_frame(&f, T_SMALL, "", 0);
	gx_frame_reset(&f);
	close(fds[1]);
}

/* EOF inside a header and inside a body: -ECONNRESET, eof set; EAGAIN before. */
static void test_eof(void **state)
{
	unsigned char wire[12 + 10];
	struct gx_frame f;
	struct owner o = {0};
	int fds[2], cut;

	(void)state;
	t_frame(wire, T_SMALL, "0123456789", 10);
	for (cut = 0; cut < (int)sizeof(wire); cut += 5) {
		pair(fds, 1);
		gx_frame_init(&f, fds[0], &T, NULL, &o);
		assert_int_equal(write(fds[1], wire, (size_t)cut), cut);
		assert_int_equal(read_rc(&f), 0);
		close(fds[1]);
		assert_int_equal(read_rc(&f), -ECONNRESET);
		assert_int_equal(f.eof, 1);
		gx_frame_reset(&f);
		assert_int_equal(o.charged, 0);
	}
}

/* ---- EINTR: a real signal while blocked in recv / send ---- */

static int ack_fd = -1;

static void on_usr1(int sig)
{
	char c = 1;

	(void)sig;
	if (write(ack_fd, &c, 1) != 1)
		_exit(9);
}

/* 1 when pid is blocked in the system call nr (read from /proc, as root or its parent
 * may), or, where that file cannot be read, when it is asleep. */
static int blocked_in(pid_t pid, long nr)
{
	char path[64], buf[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			return strtol(buf, NULL, 10) == nr;
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	return strchr(buf, ')') && strchr(buf, ')')[2] == 'S';
}

/* Waits (5 s at most) until pid blocks in nr. */
static void wait_blocked(pid_t pid, long nr)
{
	struct timespec ms = {0, 1000000};

	int k, st;

	for (k = 0; k < 5000 && !blocked_in(pid, nr); k++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			fail_msg(
			    "the child ended (status 0x%x): the interrupted call was not retried",
			    st);
		nanosleep(&ms, NULL);
	}
	assert_true(k < 5000);
}

/*
 * The child blocks in gx_frame_read (recv) or gx_frame_flush (send) on a blocking socket;
 * the parent interrupts that call with a signal whose handler does not restart it (twice),
 * waits until the child is blocked in the same call again (gx_frame retried), then unblocks it:
 * writes the frame, or drains the socket. The child exits 0 when it got the frame / wrote
 * everything.
 */
static void test_eintr(void **state)
{
	static unsigned char big[1 << 20], sink[1 << 16];
	unsigned char wire[12 + 3];
	struct sigaction sa;
	struct gx_frame f;
	struct owner o = {0};
	int fds[2], ack[2], status, op, k;
	size_t got;
	ssize_t r;
	pid_t pid;
	char c;

	(void)state;
	for (op = 0; op < 2; op++) {
		pair(fds, 0);
		assert_int_equal(pipe2(ack, O_CLOEXEC), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = on_usr1; /* no SA_RESTART: the call returns EINTR */
			sigaction(SIGUSR1, &sa, NULL);
			ack_fd = ack[1];
			gx_frame_init(&f, fds[0], &T, NULL, &o);
			if (op == 0)
				_exit(read_rc(&f) == 1 ? 0 : 1);
			/* more than the socket holds: send blocks until the parent drains */
			_exit(gx_frame_send_raw(&f, big, sizeof(big)) == 0 &&
				      gx_frame_pending(&f) == 0
				  ? 0
				  : 2);
		}
		/* twice: a send the first signal interrupts returns what it wrote; the next one,
		 * with nothing written, is the one that fails EINTR */
		for (k = 0; k < 2; k++) {
			wait_blocked(pid, op == 0 ? SYS_recvfrom : SYS_sendto);
			assert_int_equal(kill(pid, SIGUSR1), 0);
			assert_int_equal(read(ack[0], &c, 1), 1); /* its handler ran */
		}
		wait_blocked(pid, op == 0 ? SYS_recvfrom : SYS_sendto);
		if (op == 0) {
			t_frame(wire, T_SMALL, "abc", 3);
			assert_int_equal(write(fds[1], wire, sizeof(wire)), (ssize_t)sizeof(wire));
		} else {
			for (got = 0; got < sizeof(big); got += (size_t)r) {
				r = read(fds[1], sink, sizeof(sink));
				assert_true(r > 0);
			}
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		close(fds[0]);
		close(fds[1]);
		close(ack[0]);
		close(ack[1]);
	}
}

/* Fed input (one recv's worth, a relay's records): frames across chunk borders of every
 * size from 1 to 13, each input taken whole; read never touches the fd. */
static void test_fed(void **state)
{
	unsigned char wire[3 * (12 + 64)], body[64];
	struct gx_frame f;
	struct owner o = {0};
	size_t n = 0, off, chunk;
	int fds[2], got;
	unsigned char *b;
	unsigned t;
	size_t len;

	(void)state;
	fill_seq(body, sizeof(body), 11);
	n += t_frame(wire + n, T_SMALL, body, 64);
	n += t_frame(wire + n, T_SMALL, body, 1);
	n += t_frame(wire + n, T_TABLE, body, 40);
	pair(fds, 1);
	for (chunk = 1; chunk <= 13; chunk++) {
		gx_frame_init(&f, fds[0], &T, NULL, &o);
		f.fed = 1;
		assert_int_equal(write(fds[1], "junk", 4), 4); /* in the socket: never read */
		got = 0;
		for (off = 0; off < n; off += chunk) {
			gx_frame_feed(&f, wire + off, n - off < chunk ? n - off : chunk);
			while (gx_frame_read(&f, &t, &b, &len) == 1) {
				assert_int_equal(len, got == 0 ? 64 : got == 1 ? 1 : 40);
				assert_memory_equal(b, body, len);
				free(b);
				got++;
			}
			assert_int_equal(f.inlen, 0);
		}
		assert_int_equal(got, 3);
		assert_int_equal(unread(fds[0]), 4);
		assert_int_equal(recv(fds[0], wire + n, 4, 0), 4);
		f.fd = -1; /* the socket is the test's */
		gx_frame_reset(&f);
	}
	close(fds[0]);
	close(fds[1]);
}

/* Carried (no fd): input fed, output queued for the owner, the same bytes a socket gets. */
static void test_carried(void **state)
{
	unsigned char direct[64];
	const unsigned char *p;
	struct gx_frame f, d;
	struct owner o = {0}, od = {0};
	int fds[2];
	size_t n;

	(void)state;
	gx_frame_init(&f, -1, &T, &T_SEAL, &o);
	assert_int_equal(gx_frame_send(&f, T_SMALL, "hi", 2), -EBADF); /* reset, not carried */
	f.carried = 1;
	f.sealed_tx = 1;
	assert_int_equal(gx_frame_send(&f, T_SMALL, "hi", 2), 0);
	assert_int_equal(gx_frame_send(&f, T_SMALL, "yo", 2), 0);
	assert_int_equal(gx_frame_flush(&f), 1);
	n = gx_frame_out_peek(&f, &p);
	assert_int_equal(n, 2 * (12 + 2 + T_TAG));
	/* the same frames written to a socket */
	pair(fds, 1);
	gx_frame_init(&d, fds[0], &T, &T_SEAL, &od);
	d.sealed_tx = 1;
	assert_int_equal(gx_frame_send(&d, T_SMALL, "hi", 2), 0);
	assert_int_equal(gx_frame_send(&d, T_SMALL, "yo", 2), 0);
	assert_int_equal(read(fds[1], direct, sizeof(direct)), (ssize_t)n);
	assert_memory_equal(p, direct, n);
	gx_frame_out_drop(&f, 5);
	assert_int_equal(gx_frame_pending(&f), n - 5);
	gx_frame_out_drop(&f, n);
	assert_int_equal(gx_frame_pending(&f), 0);
	assert_null(f.out);
	assert_int_equal(gx_frame_flush(&f), 0);
	/* its input comes fed */
	f.sealed_rx = 1;
	gx_frame_feed(&f, direct, n);
	expect_frame(&f, T_SMALL, "hi", 2);
	expect_frame(&f, T_SMALL, "yo", 2);
	assert_int_equal(read_rc(&f), 0);
	gx_frame_reset(&f);
	gx_frame_reset(&d);
	close(fds[1]);
}

/* Cork: frames queue until the owner flushes; a drained queue holds no buffer. The output
 * cap refuses a frame that would pass it and keeps the queue as it was. */
static void test_cork_and_cap(void **state)
{
	unsigned char buf[256], body[65] = {0};
	struct gx_frame f;
	int fds[2];

	(void)state;
	pair(fds, 1);
	gx_frame_init(&f, fds[0], &T, NULL, NULL);
	f.cork = 1;
	f.omax = 110;
	assert_int_equal(gx_frame_send(&f, T_SMALL, body, 40), 0);
	assert_int_equal(gx_frame_send_raw(&f, "raw", 3), 0);
	assert_int_equal(unread(fds[1]), 0);
	assert_int_equal(gx_frame_pending(&f), 55);
	assert_int_equal(gx_frame_send(&f, T_SMALL, body, 44), -ENOBUFS); /* 55 + 56 > 110 */
	assert_int_equal(gx_frame_pending(&f), 55);
	assert_int_equal(gx_frame_send(&f, T_SMALL, body, 43), 0);	   /* 110 */
	assert_int_equal(gx_frame_send(&f, T_SMALL, body, 65), GX_EPROTO); /* encode's bound */
	assert_int_equal(gx_frame_flush(&f), 0);
	assert_null(f.out);
	assert_int_equal(read(fds[1], buf, sizeof(buf)), 110);
	assert_memory_equal(buf + 52, "raw", 3);
	f.cork = 0; /* written at once */
	assert_int_equal(gx_frame_send_hdr(&f, T_STREAM, 5), 0);
	assert_int_equal(gx_frame_send_raw(&f, "abcde", 5), 0);
	assert_int_equal(read(fds[1], buf, sizeof(buf)), 17);
	assert_int_equal(get32(buf + 8), 5);
	assert_memory_equal(buf + 12, "abcde", 5);
	gx_frame_reset(&f);
	close(fds[1]);
}

/* A peer that does not read: flush says 1 (EPOLLOUT), later writes the rest; a closed
 * peer: an error, no SIGPIPE. */
static void test_flush_backpressure(void **state)
{
	static unsigned char big[1 << 20], sink[1 << 16];
	struct gx_frame f;
	size_t got = 0;
	int fds[2], rc;
	ssize_t r;

	(void)state;
	pair(fds, 1);
	gx_frame_init(&f, fds[0], &T, NULL, NULL);
	assert_int_equal(gx_frame_send_raw(&f, big, sizeof(big)), 0);
	assert_true(gx_frame_pending(&f) > 0);
	assert_int_equal(gx_frame_flush(&f), 1);
	do {
		r = read(fds[1], sink, sizeof(sink));
		got += r > 0 ? (size_t)r : 0;
		rc = gx_frame_flush(&f);
	} while (rc == 1);
	assert_int_equal(rc, 0);
	while ((r = read(fds[1], sink, sizeof(sink))) > 0)
		got += (size_t)r;
	assert_int_equal(got, sizeof(big));
	close(fds[1]);
	assert_int_equal(gx_frame_send_raw(&f, "x", 1), -EPIPE);
	gx_frame_reset(&f);
}

/* Seals: frames opened in order; a flipped byte, a replay or a reorder fails the MAC; a
 * sender may seal before its peer does (sealed_tx only); the type may live in the seal. */
static void test_seal(void **state)
{
	unsigned char wire[512], *b = NULL;
	struct gx_frame tx, rx;
	struct owner a = {0}, z = {0};
	int fds[2];
	size_t n, n1;
	unsigned t = 0;

	(void)state;
	memset(a.key, 5, sizeof(a.key));
	memset(z.key, 5, sizeof(z.key));
	pair(fds, 1);
	gx_frame_init(&tx, fds[0], &T, &T_SEAL, &a);
	gx_frame_init(&rx, fds[1], &T, &T_SEAL, &z);
	tx.sealed_tx = 1;
	rx.sealed_rx = 1;
	assert_int_equal(gx_frame_send(&tx, T_SMALL, "one", 3), 0);
	assert_int_equal(gx_frame_send(&tx, T_TABLE, "two", 3), 0);
	n1 = 12 + 3 + T_TAG;
	assert_int_equal(recv(fds[1], wire, sizeof(wire), MSG_PEEK), (ssize_t)(2 * n1));
	expect_frame(&rx, T_SMALL, "one", 3);
	expect_frame(&rx, T_TABLE, "two", 3);
	assert_int_equal(z.seq_rx, 2);
	/* a replay of frame 1 (seq 0 again) */
	assert_int_equal(send(fds[0], wire, n1, 0), (ssize_t)n1);
	assert_int_equal(read_rc(&rx), GX_EMAC);
	gx_frame_reset(&rx);
	/* a flipped body byte (tx keeps the first pair's fds[0]) */
	pair(fds, 1);
	gx_frame_init(&rx, fds[1], &T, &T_SEAL, &z);
	rx.sealed_rx = 1;
	z.seq_rx = 0;
	wire[13] ^= 1;
	assert_int_equal(send(fds[0], wire, n1, 0), (ssize_t)n1);
	assert_int_equal(read_rc(&rx), GX_EMAC);
	/* a sealed header shorter than its tag */
	gx_frame_reset(&rx);
	close(fds[0]);
	pair(fds, 1);
	gx_frame_init(&rx, fds[1], &T, &T_SEAL, &z);
	rx.sealed_rx = 1;
	n = t_frame(wire, T_SMALL, "x", 1);
	assert_int_equal(send(fds[0], wire, n, 0), (ssize_t)n);
	assert_int_equal(read_rc(&rx), GX_EPROTO);
	gx_frame_reset(&rx);
	close(fds[0]);
	gx_frame_reset(&tx);
	/* L: the type inside the seal, the payload moved to the buffer's start */
	pair(fds, 1);
	a.seq_tx = z.seq_rx = 0;
	gx_frame_init(&tx, fds[0], &L, &L_SEAL, &a);
	gx_frame_init(&rx, fds[1], &L, &L_SEAL, &z);
	tx.sealed_tx = rx.sealed_rx = 1;
	assert_int_equal(gx_frame_send(&tx, 5, "hello", 5), 0);
	assert_int_equal(gx_frame_send(&tx, 3, NULL, 0), 0);
	assert_int_equal(recv(fds[1], wire, 4, MSG_PEEK), 4);
	assert_int_equal(get32(wire), 1 + 5 + T_TAG);
	assert_int_equal(gx_frame_read(&rx, &t, &b, &n), 1);
	assert_int_equal(t, 5);
	assert_int_equal(n, 5);
	assert_memory_equal(b, "hello", 5);
	free(b);
	assert_int_equal(gx_frame_read(&rx, &t, &b, &n), 1);
	assert_int_equal(t, 3);
	assert_int_equal(n, 0);
	free(b);
	/* a sealed length shorter than type and tag, which the decoder lets through: refused
	 * before the open hook could take a trailer off a body too short for it */
	put32(wire, T_TAG);
	assert_int_equal(send(fds[0], wire, 4 + T_TAG, 0), 4 + T_TAG);
	assert_int_equal(read_rc(&rx), GX_EPROTO);
	assert_null(rx.body);
	gx_frame_reset(&tx);
	gx_frame_reset(&rx);
}

/* Raw bytes of fixed size (a handshake), one at a time, then frames on the same stream;
 * a raw read inside a frame, or of another size midway, is refused. */
static void test_raw(void **state)
{
	unsigned char hello[40], got[40], wire[64];
	struct gx_frame f;
	int fds[2], k;
	size_t n;

	(void)state;
	pair(fds, 1);
	gx_frame_init(&f, fds[0], &L, NULL, NULL);
	fill_seq(hello, sizeof(hello), 1);
	for (k = 0; k < 39; k++) {
		assert_int_equal(write(fds[1], hello + k, 1), 1);
		assert_int_equal(gx_frame_read_raw(&f, got, sizeof(got)), 0);
	}
	assert_int_equal(read_rc(&f), -EBUSY);
	assert_int_equal(gx_frame_read_raw(&f, got, 8), -EINVAL);
	put32(wire, 3);
	memcpy(wire + 4, "abc", 3);
	assert_int_equal(write(fds[1], hello + 39, 1), 1);
	assert_int_equal(write(fds[1], wire, 7), 7); /* a frame right behind it */
	assert_int_equal(gx_frame_read_raw(&f, got, sizeof(got)), 1);
	assert_memory_equal(got, hello, sizeof(hello));
	assert_int_equal(unread(fds[0]), 7);
	assert_int_equal(write(fds[1], wire, 2), 2);
	expect_frame(&f, 0, "abc", 3);
	assert_int_equal(read_rc(&f), 0);
	assert_int_equal(gx_frame_read_raw(&f, got, 1), -EBUSY); /* 2 bytes of a header in */
	assert_int_equal(write(fds[1], wire + 2, 5), 5);
	expect_frame(&f, 0, "abc", 3);
	n = 1;
	assert_int_equal(write(fds[1], "!", n), 1);
	assert_int_equal(gx_frame_read_raw(&f, got, 1), 1);
	assert_int_equal(got[0], '!');
	gx_frame_reset(&f);
	close(fds[1]);
}

/* A lingering close: what the peer still sends is read and dropped, up to its EOF. */
static void test_drain(void **state)
{
	static unsigned char junk[100000];
	struct gx_frame f;
	int fds[2];

	(void)state;
	pair(fds, 1);
	gx_frame_init(&f, fds[0], &T, NULL, NULL);
	assert_int_equal(write(fds[1], junk, sizeof(junk)), (ssize_t)sizeof(junk));
	assert_int_equal(gx_frame_drain(&f), 0); /* all of it dropped, the peer still there */
	assert_int_equal(unread(fds[0]), 0);
	assert_int_equal(f.eof, 0);
	assert_int_equal(write(fds[1], junk, 10), 10);
	assert_int_equal(shutdown(fds[1], SHUT_WR), 0);
	assert_int_equal(gx_frame_drain(&f), 1);
	assert_int_equal(f.eof, 1);
	gx_frame_reset(&f);
	assert_int_equal(gx_frame_drain(&f), -EBADF);
	close(fds[1]);
}

/*
 * A byte stream (no fmt: a relay's child) and the owner's own recv (the coordinator's one
 * recv per readiness): what came, 0 on EAGAIN, -ECONNRESET and eof at the peer's close,
 * -EBADF after the reset; raw bytes queued past omax are refused whole.
 */
static void test_recv_and_stream(void **state)
{
	unsigned char buf[64], big[100];
	struct gx_frame f;
	int fds[2];

	(void)state;
	memset(big, 7, sizeof(big));
	pair(fds, 1);
	gx_frame_init(&f, fds[0], NULL, NULL, NULL);
	f.omax = 150;
	assert_int_equal(gx_frame_recv(&f, buf, sizeof(buf)), 0);
	assert_int_equal(write(fds[1], "abcdef", 6), 6);
	assert_int_equal(gx_frame_recv(&f, buf, 4), 4);
	assert_memory_equal(buf, "abcd", 4);
	assert_int_equal(gx_frame_recv(&f, buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "ef", 2);
	assert_int_equal(gx_frame_send_raw(&f, big, sizeof(big)), 0);
	assert_int_equal(read(fds[1], buf, sizeof(buf)), (ssize_t)sizeof(buf));
	assert_int_equal(unread(fds[1]), (int)sizeof(big) - (int)sizeof(buf));
	f.cork = 1;
	assert_int_equal(gx_frame_send_raw(&f, big, sizeof(big)), 0);
	assert_int_equal(gx_frame_send_raw(&f, big, 51), -ENOBUFS); /* 151 > omax: none of it */
	assert_int_equal(gx_frame_pending(&f), sizeof(big));
	assert_int_equal(gx_frame_flush(&f), 0);
	assert_int_equal(gx_frame_pending(&f), 0);
	assert_null(f.out); /* drained: no buffer held */
	assert_int_equal(shutdown(fds[1], SHUT_WR), 0);
	assert_int_equal(gx_frame_recv(&f, buf, sizeof(buf)), -ECONNRESET);
	assert_int_equal(f.eof, 1);
	gx_frame_reset(&f);
	assert_int_equal(gx_frame_recv(&f, buf, sizeof(buf)), -EBADF);
	close(fds[1]);
}

/* Bad magic, another version, an unknown type: the decoder's codes. */
static void test_bad_headers(void **state)
{
	unsigned char h[12];
	struct gx_frame f;
	int fds[2], k;
	static const int want[] = {GX_EPROTO, GX_EVERSION, GX_EPROTO};

	(void)state;
	for (k = 0; k < 3; k++) {
		pair(fds, 1);
		gx_frame_init(&f, fds[0], &T, NULL, NULL);
		t_frame(h, k == 2 ? 9 : T_SMALL, NULL, 0);
		if (k == 0)
			h[0] ^= 0xff;
		if (k == 1)
			h[4] = 2;
		assert_int_equal(write(fds[1], h, sizeof(h)), 12);
		assert_int_equal(read_rc(&f), want[k]);
		assert_null(f.body);
		gx_frame_reset(&f);
		close(fds[1]);
	}
}

static int setup(void **state)
{
	(void)state;
	return sodium_init() < 0 ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_byte_writes),
	    cmocka_unit_test(test_header_bounds),
	    cmocka_unit_test(test_peek),
	    cmocka_unit_test(test_sink),
	    cmocka_unit_test(test_eof),
	    cmocka_unit_test(test_eintr),
	    cmocka_unit_test(test_fed),
	    cmocka_unit_test(test_carried),
	    cmocka_unit_test(test_cork_and_cap),
	    cmocka_unit_test(test_flush_backpressure),
	    cmocka_unit_test(test_seal),
	    cmocka_unit_test(test_raw),
	    cmocka_unit_test(test_bad_headers),
	    cmocka_unit_test(test_drain),
	    cmocka_unit_test(test_recv_and_stream),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
