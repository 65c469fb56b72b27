/* SPDX-License-Identifier: MIT */
/*
 * bench_floor.c - what the kernel alone charges for one TCP exchange on this machine's
 * loopback: the floor under the scale rows of run.sh (section (h)), and the floor under
 * `gxboot check` all pairs (section (f), check_scale.sh FLOOR=1).
 *
 *   bench_floor N P
 *       N bare exchanges of the shape of one VERIFY connection: a client connects, sends
 *       100 bytes, reads 100 bytes and the server's close, closes. The server is one
 *       process with the coordinator's loop reduced to its syscalls (epoll; accept4 in
 *       batches; epoll_ctl ADD; one recv; one send; epoll_ctl DEL; close) and no protocol,
 *       crypto or bookkeeping at all; the clients are P processes (default 32), each one
 *       exchange at a time, so that up to P are in flight.
 * Prints one line: server_us (the server's user + system CPU per exchange), total_us (every
 * process's, the clients' included) and wall_ms. A member of the rendezvous makes two such
 * connections (phase 1 and its VERIFY) and sends more frames on the first, so run.sh runs
 * 2 (N - 1) exchanges for a row of N pods: server_us is then a lower bound of the
 * coordinator's CPU per connection, and wall_ms of the time to rendezvous N members on the
 * same cores under the same load.
 *
 *   bench_floor shape M P
 *       M members of the rendezvous' own message pattern, still with no protocol: the same
 *       connections, frames (count, sizes and order, as the coordinator sends and receives
 *       them on loopback) and closes, nothing computed. Phase 1: the client sends 89 bytes
 *       (HELLO), reads 56 (CHALLENGE), sends 191 (AUTH + JOIN), reads 252 (PROOF + ASSIGN);
 *       phase 2 while phase 1 stays open: it sends 100 (the ticket VERIFY), reads 52
 *       (VERIFIED) and the server's close; then the server sends 184 on phase 1 (COMMIT),
 *       the client reads it and closes, and the server closes. Prints "shape: ..." with the
 *       same figures per member. Against two bare exchanges it is what these messages cost
 *       the kernel before any code of ours runs: the least a rendezvous of this pattern can
 *       reach against the floor.
 *
 *   bench_floor pairs I PORT ADDR0 ADDR1 ...
 *       pod I of the list (run in its network namespace) does what `gxboot check --mode all`
 *       does per pair, with no protocol: it listens on ADDR_I:PORT and echoes every byte
 *       back, and probes every other address in ring order from I + 1, at most INFLIGHT at
 *       a time, each a TCP connect from ADDR_I, ECHO_K round trips of ECHO_LEN bytes and a
 *       close (the check's probe: a 12-byte header and 32 random bytes, 5 times, 16 in
 *       flight). A refused connect (the target's listener is not up yet) is tried again
 *       after 100 ms, as the check does. It exits when its own probes are done and every
 *       other pod's probe of it has closed; prints one line "pairs: ...".
 * Exit 0, or 1 with one line on stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG 100
#define MAXPROCS 256
#define MAXFD 65536

struct shared {
	int64_t server_us; /* the server's CPU, user + system */
	int server_failed;
};

static int64_t cpu_us(int who)
{
	struct rusage ru;

	if (getrusage(who, &ru) < 0)
		return -1;
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * Up to 256 waiting connections accepted and watched for input (epoll data: tag | fd), each
 * one's state reset by clear(fd, arg) first. 0, or -EMFILE: a descriptor past MAXFD, or
 * epoll_ctl failed.
 */
static int accept_batch(int ep, int lfd, uint64_t tag, void (*clear)(int fd, void *arg), void *arg)
{
	struct epoll_event ee = {.events = EPOLLIN};
	int j, fd;

	for (j = 0; j < 256; j++) {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			break;
		if (fd >= MAXFD)
			return -EMFILE;
		clear(fd, arg);
		ee.data.u64 = tag | (uint64_t)fd;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee) < 0)
			return -EMFILE;
	}
	return 0;
}

static void clear_byte(int fd, void *arg)
{
	((unsigned char *)arg)[fd] = 0;
}

/* a connection's 100 bytes in (one recv on loopback; more are waited for), then send, close */
static int serve(int lfd, long n, struct shared *sh)
{
	struct epoll_event evs[256], ee = {.events = EPOLLIN};
	unsigned char *got = calloc(MAXFD, 1); /* bytes in so far, by descriptor */
	char buf[512];
	long done = 0;
	ssize_t r;
	int ep, i, k, fd, rc = 1;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!got)
		goto out;
	ee.data.u64 = (uint64_t)lfd;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ee) < 0)
		goto out;
	while (done < n) {
		k = epoll_wait(ep, evs, 256, 10000);
		if (k <= 0) /* 10 s without an event: a client is gone */
			goto out;
		for (i = 0; i < k; i++) {
			fd = (int)evs[i].data.u64;
			if (fd == lfd) {
				if (accept_batch(ep, lfd, 0, clear_byte, got) < 0)
					goto out;
				continue;
			}
			r = recv(fd, buf, MSG - got[fd], 0);
			if (r <= 0)
				goto out;
			got[fd] += (unsigned char)r;
			if (got[fd] < MSG)
				continue;
			if (send(fd, buf, MSG, MSG_NOSIGNAL) != MSG)
				goto out;
			epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
			close(fd);
			done++;
		}
	}
	rc = 0;
out:
	sh->server_us = cpu_us(RUSAGE_SELF);
	sh->server_failed = rc;
	free(got);
	return rc;
}

static int client(const struct sockaddr_in *sa, long n, int p, int procs)
{
	char buf[MSG];
	ssize_t r;
	size_t got;
	long i;
	int fd;

	memset(buf, 'x', sizeof(buf));
	for (i = p; i < n; i += procs) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 ||
		    send(fd, buf, MSG, MSG_NOSIGNAL) != MSG)
			return 1;
		for (got = 0; got < MSG; got += (size_t)r) {
			r = recv(fd, buf, MSG - got, 0);
			if (r <= 0)
				return 1;
		}
		if (recv(fd, buf, 1, 0) != 0) /* the server's close */
			return 1;
		close(fd);
	}
	return 0;
}

/* ---- shape: the rendezvous' frames, sizes from an strace of bench_rdzv on loopback ---- */
#define SH_HELLO 89
#define SH_CHALLENGE 56
#define SH_JOIN 191   /* AUTH + JOIN */
#define SH_ASSIGN 252 /* PROOF + ASSIGN */
#define SH_VERIFY 100
#define SH_VERIFIED 52
#define SH_COMMIT 184

/* per accepted descriptor: what it is and how far; the first 5 bytes a client sends on
 * either connection are its member number and which connection it is (inside the frame's
 * size: no byte more) */
struct sh_conn {
	uint16_t got; /* bytes of the frame awaited so far */
	uint8_t step; /* 0: HELLO, 1: AUTH + JOIN, 2: waits for the COMMIT's turn, then EOF;
			 3: phase 2's VERIFY */
	uint8_t used;
	uint32_t member;
	unsigned char id[5]; /* the member number, then 'H' (phase 1) or 'V' (phase 2) */
};

static void sh_clear(int fd, void *arg)
{
	struct sh_conn *c = &((struct sh_conn *)arg)[fd];

	memset(c, 0, sizeof(*c));
	c->used = 1;
}

static int sh_serve(int lfd, long n, struct shared *sh)
{
	struct sh_conn *cs = calloc(MAXFD, sizeof(*cs));
	int *p1 = malloc((size_t)n * sizeof(*p1)); /* member -> its phase-1 descriptor */
	struct epoll_event evs[256], ee = {.events = EPOLLIN};
	unsigned char buf[512];
	long closed = 0;
	ssize_t r;
	int ep, i, k, fd, rc = 1;

	memset(buf, 'y', sizeof(buf));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!cs || !p1)
		goto out;
	for (i = 0; i < n; i++) /* a VERIFY for a member whose phase 1 never came fails the run */
		p1[i] = -1;
	ee.data.u64 = (uint64_t)lfd;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ee) < 0)
		goto out;
	while (closed < 2 * n) { /* every member's two connections closed */
		k = epoll_wait(ep, evs, 256, 10000);
		if (k <= 0)
			goto out;
		for (i = 0; i < k; i++) {
			struct sh_conn *c;
			size_t want;

			fd = (int)evs[i].data.u64;
			if (fd == lfd) {
				if (accept_batch(ep, lfd, 0, sh_clear, cs) < 0)
					goto out;
				continue;
			}
			c = &cs[fd];
			/* the first frame: a HELLO (the shorter) until its 5th byte says VERIFY */
			want = c->step == 1			? SH_JOIN
			       : c->got >= 5 && c->id[4] == 'V' ? SH_VERIFY
								: SH_HELLO;
			if (c->step == 2) { /* phase 1 after its COMMIT: the member's close */
				r = recv(fd, buf, sizeof(buf), 0);
				if (r != 0)
					goto out;
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
				c->used = 0;
				closed++;
				continue;
			}
			r = recv(fd, buf, want - c->got, 0);
			if (r <= 0)
				goto out;
			if (c->step == 0 && c->got < 5)
				memcpy(c->id + c->got, buf,
				       (size_t)r < 5u - c->got ? (size_t)r : 5u - c->got);
			c->got += (uint16_t)r;
			if (c->step == 0 && c->got >= 5 && c->id[4] == 'V')
				want = SH_VERIFY;
			if (c->got < want)
				continue;
			c->got = 0;
			memcpy(&c->member, c->id, 4);
			if (c->member >= (uint32_t)n)
				goto out;
			if (c->step == 0) { /* a HELLO or a VERIFY: the first frame says which */
				if (c->id[4] == 'V') { /* phase 2 */
					if (send(fd, buf, SH_VERIFIED, MSG_NOSIGNAL) != SH_VERIFIED)
						goto out;
					epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
					close(fd);
					c->used = 0;
					closed++;
					/* this member's COMMIT (the real one waits for all: same
					 * bytes) */
					if (p1[c->member] < 0 || send(p1[c->member], buf, SH_COMMIT,
								      MSG_NOSIGNAL) != SH_COMMIT)
						goto out;
					continue;
				}
				p1[c->member] = fd;
				c->step = 1;
				if (send(fd, buf, SH_CHALLENGE, MSG_NOSIGNAL) != SH_CHALLENGE)
					goto out;
				continue;
			}
			c->step = 2; /* AUTH + JOIN in: PROOF + ASSIGN out */
			if (send(fd, buf, SH_ASSIGN, MSG_NOSIGNAL) != SH_ASSIGN)
				goto out;
		}
	}
	rc = 0;
out:
	sh->server_us = cpu_us(RUSAGE_SELF);
	sh->server_failed = rc;
	free(cs);
	free(p1);
	return rc;
}

/* Nagle off, as both ends of the rendezvous have it (the coordinator's listener passes it
 * to what it accepts): frames that follow an unacknowledged one would wait for the peer's
 * delayed ACK */
static int nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0;
}

/* exactly n bytes in */
static int sh_read(int fd, unsigned char *buf, size_t n)
{
	size_t got;
	ssize_t r;

	for (got = 0; got < n; got += (size_t)r) {
		r = recv(fd, buf + got, n - got, 0);
		if (r <= 0)
			return 1;
	}
	return 0;
}

static int sh_client(const struct sockaddr_in *sa, long n, int p, int procs)
{
	unsigned char buf[512];
	uint32_t id;
	long i;
	int f1, f2;

	memset(buf, 'x', sizeof(buf));
	for (i = p; i < n; i += procs) {
		id = (uint32_t)i;
		memcpy(buf, &id, 4);
		buf[4] = 'H';
		f1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (f1 < 0 || nodelay(f1) ||
		    connect(f1, (const struct sockaddr *)sa, sizeof(*sa)) < 0 ||
		    send(f1, buf, SH_HELLO, MSG_NOSIGNAL) != SH_HELLO ||
		    sh_read(f1, buf + 8, SH_CHALLENGE) ||
		    send(f1, buf, SH_JOIN, MSG_NOSIGNAL) != SH_JOIN ||
		    sh_read(f1, buf + 8, SH_ASSIGN))
			return 1;
		buf[4] = 'V';
		f2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (f2 < 0 || nodelay(f2) ||
		    connect(f2, (const struct sockaddr *)sa, sizeof(*sa)) < 0 ||
		    send(f2, buf, SH_VERIFY, MSG_NOSIGNAL) != SH_VERIFY ||
		    sh_read(f2, buf + 8, SH_VERIFIED) || recv(f2, buf + 8, 1, 0) != 0)
			return 1;
		close(f2);
		if (sh_read(f1, buf + 8, SH_COMMIT))
			return 1;
		close(f1);
	}
	return 0;
}

#define INFLIGHT 16 /* the check's probes in flight per pod */
#define ECHO_K 5    /* the check's echo round trips per probe */
#define ECHO_LEN 44 /* the check's ECHO frame: 12-byte header, 32 bytes */
#define RETRY_US 100000
#define STALL_MS 120000 /* no probe done and none served this long: a pod is gone */

struct probe {
	int fd, target, k; /* fd -1: the slot is free; k: round trips done */
	int connected;
	size_t off;	  /* bytes of this round trip received */
	int64_t retry_at; /* > 0: refused, connect again then */
	unsigned char buf[ECHO_LEN];
};

/* epoll data: the listener, a probe slot, or an accepted connection by descriptor */
#define TAG_LISTEN 0
#define TAG_PROBE (1ull << 32)
#define TAG_CONN (2ull << 32)

static int probe_connect(int ep, struct probe *pr, const struct sockaddr_in *self,
			 const struct sockaddr_in *to, int slot)
{
	struct epoll_event ee = {.events = EPOLLOUT, .data.u64 = TAG_PROBE | (uint64_t)slot};
	struct sockaddr_in src = *self;

	src.sin_port = 0;
	pr->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (pr->fd < 0 || bind(pr->fd, (const struct sockaddr *)&src, sizeof(src)) < 0)
		return -errno;
	if (connect(pr->fd, (const struct sockaddr *)to, sizeof(*to)) < 0 && errno != EINPROGRESS)
		return -errno;
	pr->k = 0;
	pr->off = 0;
	pr->connected = 0;
	pr->retry_at = 0;
	return epoll_ctl(ep, EPOLL_CTL_ADD, pr->fd, &ee) < 0 ? -errno : 0;
}

static int probe_send(struct probe *pr)
{
	memset(pr->buf, 'x', sizeof(pr->buf));
	if (send(pr->fd, pr->buf, ECHO_LEN, MSG_NOSIGNAL) != ECHO_LEN)
		return -EIO;
	pr->off = 0;
	return 0;
}

/* one event on a probe: the connect's result, then ECHO_K echoes; 1 when done */
static int probe_event(int ep, struct probe *pr, int slot)
{
	struct epoll_event ee = {.events = EPOLLIN, .data.u64 = TAG_PROBE | (uint64_t)slot};
	socklen_t sl = sizeof(int);
	int err = 0;
	ssize_t r;

	if (!pr->connected) {
		if (getsockopt(pr->fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
			return -errno;
		if (err == ECONNREFUSED) {
			epoll_ctl(ep, EPOLL_CTL_DEL, pr->fd, NULL);
			close(pr->fd);
			pr->fd = -1;
			pr->retry_at = now_us() + RETRY_US;
			return 0;
		}
		if (err)
			return -err;
		if (epoll_ctl(ep, EPOLL_CTL_MOD, pr->fd, &ee) < 0)
			return -errno;
		pr->connected = 1;
		return probe_send(pr);
	}
	r = recv(pr->fd, pr->buf + pr->off, ECHO_LEN - pr->off, 0);
	if (r < 0 && errno == EAGAIN)
		return 0;
	if (r <= 0)
		return r < 0 ? -errno : -ECONNRESET;
	pr->off += (size_t)r;
	if (pr->off < ECHO_LEN)
		return 0;
	if (++pr->k < ECHO_K)
		return probe_send(pr);
	epoll_ctl(ep, EPOLL_CTL_DEL, pr->fd, NULL);
	close(pr->fd);
	pr->fd = -1;
	return 1;
}

static void clear_u32(int fd, void *arg)
{
	((uint32_t *)arg)[fd] = 0;
}

static int pairs(int self, uint16_t port, int n, char **addrs)
{
	struct sockaddr_in *sa = calloc((size_t)n, sizeof(*sa));
	struct probe pr[INFLIGHT];
	struct epoll_event evs[256], ee = {.events = EPOLLIN, .data.u64 = TAG_LISTEN};
	uint32_t *got = calloc(MAXFD, sizeof(*got)); /* bytes echoed so far, by descriptor */
	int next = 1, done = 0, served = 0, ep = -1, lfd = -1, one = 1, i, k, rc = -ENOMEM;
	int64_t t0 = now_us(), last = t0, t;
	char buf[512];
	const char *what = "setup";

	if (!sa || !got)
		goto out;
	for (i = 0; i < n; i++) {
		sa[i].sin_family = AF_INET;
		sa[i].sin_port = htons(port);
		if (inet_pton(AF_INET, addrs[i], &sa[i].sin_addr) != 1) {
			rc = -EINVAL;
			goto out;
		}
	}
	for (i = 0; i < INFLIGHT; i++)
		pr[i].fd = -1, pr[i].target = -1, pr[i].retry_at = 0;
	ep = epoll_create1(EPOLL_CLOEXEC);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ep < 0 || lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (const struct sockaddr *)&sa[self], sizeof(sa[self])) < 0 ||
	    listen(lfd, 4096) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ee) < 0) {
		rc = -errno;
		what = "listen";
		goto out;
	}
	while (done < n - 1 || served < n - 1) {
		t = now_us();
		for (i = 0; i < INFLIGHT;
		     i++) { /* free slots take the next target; refused retry */
			struct probe *p = &pr[i];

			if (p->fd < 0 && p->retry_at == 0 && next < n)
				p->target = (self + next++) % n, p->retry_at = 1;
			if (p->fd < 0 && p->retry_at > 0 && p->retry_at <= t) {
				what = "connect";
				rc = probe_connect(ep, p, &sa[self], &sa[p->target], i);
				if (rc < 0)
					goto out;
			}
		}
		k = epoll_wait(ep, evs, 256, 10);
		if (k < 0 && errno != EINTR) {
			rc = -errno;
			goto out;
		}
		/* events alone are no progress: a dead target refuses every 100 ms forever */
		if (now_us() - last > (int64_t)STALL_MS * 1000) {
			rc = -ETIMEDOUT;
			what = "stalled";
			goto out;
		}
		for (i = 0; i < k; i++) {
			uint64_t tag = evs[i].data.u64 & ~0xffffffffull;
			int fd = (int)(evs[i].data.u64 & 0xffffffffu);
			ssize_t r;

			if (tag == TAG_LISTEN) {
				rc = accept_batch(ep, lfd, TAG_CONN, clear_u32, got);
				if (rc < 0) {
					what = "accept";
					goto out;
				}
			} else if (tag == TAG_PROBE) {
				what = "probe";
				rc = probe_event(ep, &pr[fd], fd);
				if (rc < 0)
					goto out;
				if (rc == 1) {
					done++;
					last = now_us();
					pr[fd].retry_at = 0;
				}
			} else {
				r = recv(fd, buf, sizeof(buf), 0);
				if (r < 0 && errno == EAGAIN)
					continue;
				if (r > 0 && send(fd, buf, (size_t)r, MSG_NOSIGNAL) == r) {
					got[fd] += (uint32_t)r;
					continue;
				}
				/* the prober's close after its round trips: one pair served */
				if (r == 0 && got[fd] >= ECHO_K * ECHO_LEN) {
					served++;
					last = now_us();
				}
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
			}
		}
	}
	printf("pairs: pod %d of %d probed %d served %d wall_ms=%.0f\n", self, n, done, served,
	       (double)(now_us() - t0) / 1000.0);
	rc = 0;
out:
	if (rc < 0)
		fprintf(stderr, "bench_floor pairs: pod %d: %s: %s (probed %d, served %d)\n", self,
			what, strerror(-rc), done, served);
	if (lfd >= 0)
		close(lfd);
	if (ep >= 0)
		close(ep);
	free(sa);
	free(got);
	return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 16384;
	int procs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 32, p, st, bad = 0, shape = 0;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	pid_t server, kids[MAXPROCS];
	struct shared *sh;
	int64_t t0, t1, all;
	int lfd;

	if (argc > 1 && strcmp(argv[1], "pairs") == 0) {
		long self = argc > 2 ? strtol(argv[2], NULL, 10) : -1;
		long port = argc > 3 ? strtol(argv[3], NULL, 10) : 0;

		if (argc < 6 || self < 0 || self >= argc - 4 || port < 1 || port > 65535) {
			fprintf(stderr, "usage: bench_floor pairs I PORT ADDR0 ADDR1 ...\n");
			return 1;
		}
		return pairs((int)self, (uint16_t)port, argc - 4, argv + 4);
	}
	if (argc > 1 && strcmp(argv[1], "shape") == 0) {
		shape = 1;
		n = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
		procs = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 32;
	}
	if (n < 1 || n > 1000000 || procs < 1 || procs > MAXPROCS) {
		fprintf(stderr, "usage: bench_floor [shape] N P (N <= 1000000, P <= %d)\n",
			MAXPROCS);
		return 1;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sh == MAP_FAILED || lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 4096) < 0 || getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
		fprintf(stderr, "bench_floor: cannot listen on 127.0.0.1: %s\n", strerror(errno));
		return 1;
	}
	t0 = now_us();
	server = fork();
	if (server == 0)
		_exit(shape ? (nodelay(lfd) ? 1 : sh_serve(lfd, n, sh)) : serve(lfd, n, sh));
	close(lfd);
	for (p = 0; p < procs; p++) {
		kids[p] = fork();
		if (kids[p] == 0)
			_exit(shape ? sh_client(&sa, n, p, procs) : client(&sa, n, p, procs));
		if (kids[p] < 0)
			bad = 1;
	}
	for (p = 0; p < procs; p++)
		if (kids[p] > 0 &&
		    (waitpid(kids[p], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)))
			bad = 1;
	if (server < 0 || waitpid(server, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		bad = 1;
	t1 = now_us();
	all = cpu_us(RUSAGE_CHILDREN);
	if (bad || sh->server_failed || all < 0) {
		fprintf(stderr, "bench_floor: an exchange failed\n");
		return 1;
	}
	printf("%s: N=%ld procs=%d server_us=%.1f total_us=%.1f wall_ms=%.0f\n",
	       shape ? "shape" : "floor", n, procs, (double)sh->server_us / (double)n,
	       (double)all / (double)n, (double)(t1 - t0) / 1000.0);
	return 0;
}
