/* SPDX-License-Identifier: MIT */
/*
 * bench_floor.c - what the kernel alone charges for one TCP exchange on this machine's
 * loopback: the floor under issue 26's rows (run.sh section (h)).
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
 * connections (phase 1 and its VERIFY) and sends more frames on the first, so twice these
 * are lower bounds: of the coordinator's CPU per member (2 x server_us; 1 x in a relay tree,
 * where only VERIFY is direct), and, with the members on the same cores, of the time to
 * rendezvous N members (N x 2 x total_us / cores).
 * Exit 0, or 1 with one line on stderr.
 */
#include <errno.h>
#include <netinet/in.h>
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
	ee.data.fd = lfd;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ee) < 0)
		goto out;
	while (done < n) {
		k = epoll_wait(ep, evs, 256, 10000);
		if (k <= 0) /* 10 s without an event: a client is gone */
			goto out;
		for (i = 0; i < k; i++) {
			fd = evs[i].data.fd;
			if (fd == lfd) {
				int j;

				for (j = 0; j < 256; j++) {
					fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
					if (fd < 0)
						break;
					if (fd >= MAXFD)
						goto out;
					got[fd] = 0;
					ee.data.fd = fd;
					if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee) < 0)
						goto out;
				}
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

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 16384;
	int procs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 32, p, st, bad = 0;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	pid_t server, kids[MAXPROCS];
	struct shared *sh;
	int64_t t0, t1, all;
	int lfd;

	if (n < 1 || n > 1000000 || procs < 1 || procs > MAXPROCS) {
		fprintf(stderr, "usage: bench_floor N P (N <= 1000000, P <= %d)\n", MAXPROCS);
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
		_exit(serve(lfd, n, sh));
	close(lfd);
	for (p = 0; p < procs; p++) {
		kids[p] = fork();
		if (kids[p] == 0)
			_exit(client(&sa, n, p, procs));
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
	printf("floor: N=%ld procs=%d server_us=%.1f total_us=%.1f wall_ms=%.0f\n", n, procs,
	       (double)sh->server_us / (double)n, (double)all / (double)n,
	       (double)(t1 - t0) / 1000.0);
	return 0;
}
