/* SPDX-License-Identifier: MIT */
/*
 * test_agent_fabric_tcp.c - the kernel's side of the transport report, on this machine's
 * kernel and loopback: a NETLINK_SOCK_DIAG dump finds a connection of ours by its inode with
 * the bytes it moved (tcp_info), the destroy group says its last counters when it closes,
 * the fd tables name the process that holds it, the tree walk finds a grandchild; the
 * parser refuses truncated and lying lengths; the classification of remote addresses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/fabric/fabric_int.h"

struct pair {
	int lfd, cfd, sfd;
	uint32_t cino, sino;
};

static uint32_t ino_of(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return (uint32_t)st.st_ino;
}

/* a connected pair on 127.0.0.1 */
static void pair_open(struct pair *p)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t l = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(p->lfd >= 0);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(p->lfd, 4), 0);
	assert_int_equal(getsockname(p->lfd, (struct sockaddr *)&a, &l), 0);
	p->cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(p->cfd, (struct sockaddr *)&a, sizeof(a)), 0);
	p->sfd = accept(p->lfd, NULL, NULL);
	assert_true(p->sfd >= 0);
	p->cino = ino_of(p->cfd);
	p->sino = ino_of(p->sfd);
}

static void move(int from, int to, size_t n)
{
	char buf[8192];
	size_t sent = 0, got = 0;

	memset(buf, 'x', sizeof(buf));
	while (got < n) {
		if (sent < n) {
			ssize_t w = send(from, buf, n - sent < sizeof(buf) ? n - sent : sizeof(buf),
					 MSG_DONTWAIT);

			if (w > 0)
				sent += (size_t)w;
		}
		ssize_t r = recv(to, buf, sizeof(buf), MSG_DONTWAIT);

		if (r > 0)
			got += (size_t)r;
	}
}

struct found {
	uint32_t want[2];
	struct fabric_sock s[2];
	int n[2];
};

static void on_sock(void *arg, const struct fabric_sock *s)
{
	struct found *f = arg;
	int i;

	for (i = 0; i < 2; i++)
		if (s->inode && s->inode == f->want[i]) {
			f->s[i] = *s;
			f->n[i]++;
		}
}

static void test_dump_bytes(void **state)
{
	char local[FABRIC_ADDR_LEN], remote[FABRIC_ADDR_LEN];
	struct pair p;
	struct found f;

	(void)state;
	pair_open(&p);
	move(p.cfd, p.sfd, 300000);
	move(p.sfd, p.cfd, 5000);
	memset(&f, 0, sizeof(f));
	f.want[0] = p.cino;
	f.want[1] = p.sino;
	assert_int_equal(agent_fabric_diag_dump(AF_INET, on_sock, &f), 0);
	assert_int_equal(f.n[0], 1);
	assert_int_equal(f.n[1], 1);
	assert_true(f.s[0].have_bytes && f.s[1].have_bytes);
	/* the counters follow the sequence numbers: the SYN is one byte acked (and a FIN one
	 * received); what each side read is exact, what was acked may still be on its way */
	assert_int_equal(f.s[1].bytes_received, 300000);
	assert_int_equal(f.s[0].bytes_received, 5000);
	if (f.s[0].bytes_acked > 300001)
		fail_msg("acked %llu of 300000 + the SYN", (unsigned long long)f.s[0].bytes_acked);
	agent_fabric_sock_addrs(&f.s[0], local, remote);
	assert_string_equal(local, "127.0.0.1");
	assert_string_equal(remote, "127.0.0.1");
	assert_int_equal(f.s[0].rport, f.s[1].lport);
	assert_true(f.s[0].cookie != f.s[1].cookie);
	close(p.cfd);
	close(p.sfd);
	close(p.lfd);
}

/* a connected pair on ::1; 0 when this host has no IPv6 loopback */
static int pair6_open(struct pair *p)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	socklen_t l = sizeof(a);

	p->lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (p->lfd >= 0)
			close(p->lfd);
		return 0;
	}
	assert_int_equal(listen(p->lfd, 4), 0);
	assert_int_equal(getsockname(p->lfd, (struct sockaddr *)&a, &l), 0);
	p->cfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(p->cfd, (struct sockaddr *)&a, sizeof(a)), 0);
	p->sfd = accept(p->lfd, NULL, NULL);
	assert_true(p->sfd >= 0);
	p->cino = ino_of(p->cfd);
	p->sino = ino_of(p->sfd);
	return 1;
}

/* AF_UNSPEC: one walk of the kernel's TCP hash tells both families' sockets, with bytes */
static void test_dump_both_families(void **state)
{
	struct pair p4, p6;
	struct found f4, f6;
	int have6;

	(void)state;
	pair_open(&p4);
	have6 = pair6_open(&p6);
	move(p4.cfd, p4.sfd, 40000);
	memset(&f4, 0, sizeof(f4));
	f4.want[0] = p4.cino;
	f4.want[1] = p4.sino;
	assert_int_equal(agent_fabric_diag_dump(AF_UNSPEC, on_sock, &f4), 0);
	assert_int_equal(f4.n[0], 1);
	assert_int_equal(f4.n[1], 1);
	assert_int_equal(f4.s[1].family, AF_INET);
	assert_int_equal(f4.s[1].bytes_received, 40000);
	if (have6) {
		move(p6.sfd, p6.cfd, 30000);
		memset(&f6, 0, sizeof(f6));
		f6.want[0] = p6.cino;
		f6.want[1] = p6.sino;
		assert_int_equal(agent_fabric_diag_dump(AF_UNSPEC, on_sock, &f6), 0);
		assert_int_equal(f6.n[0], 1);
		assert_int_equal(f6.n[1], 1);
		assert_int_equal(f6.s[0].family, AF_INET6);
		assert_int_equal(f6.s[0].bytes_received, 30000);
		close(p6.cfd);
		close(p6.sfd);
		close(p6.lfd);
	} else {
		print_message("no IPv6 loopback here: IPv4 only\n");
	}
	close(p4.cfd);
	close(p4.sfd);
	close(p4.lfd);
}

static void test_owners_and_tree(void **state)
{
	struct fabric_owner *o = NULL;
	const struct fabric_owner *hit;
	size_t n = 0, unread = 0, np = 0, i;
	pid_t self = getpid(), pids[64], child;
	int go[2], ready[2], seen = 0;
	struct pair p;
	char c;

	(void)state;
	pair_open(&p);
	assert_int_equal(agent_fabric_socket_owners(&self, 1, &o, &n, &unread), 0);
	assert_int_equal(unread, 0);
	hit = agent_fabric_owner_find(o, n, p.cino);
	assert_non_null(hit);
	assert_int_equal(hit->pid, self);
	assert_non_null(agent_fabric_owner_find(o, n, p.sino));
	assert_null(agent_fabric_owner_find(o, n, 1));
	for (i = 1; i < n; i++)
		assert_true(o[i - 1].ino <= o[i].ino);
	free(o);
	/* a child and its child, both waiting on a pipe: both descendants */
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(go[1]); /* the pipe's EOF is the go */
		if (fork() == 0) {
			close(ready[1]);
			(void)read(go[0], &c, 1);
			_exit(0);
		}
		(void)write(ready[1], "r", 1);
		(void)read(go[0], &c, 1);
		while (wait(NULL) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(agent_fabric_tree(self, pids, 64, &np), 0);
	for (i = 0; i < np; i++)
		seen += pids[i] == child;
	assert_int_equal(seen, 1);
	assert_true(np >= 2); /* the grandchild too (valgrind adds none of its own) */
	close(go[1]);
	waitpid(child, NULL, 0);
	close(go[0]);
	close(ready[0]);
	close(p.cfd);
	close(p.sfd);
	close(p.lfd);
}

/* A child between its fork and its exec holds a copy of every fd of ours (gxboot's session
 * among them): those are ours, not the child's; a socket the child made itself stays its. */
static void test_owners_drop_mine(void **state)
{
	struct fabric_owner *tree = NULL, *mine = NULL;
	size_t nt = 0, nm = 0, unread = 0, np = 0;
	pid_t self = getpid(), pids[64], child;
	int go[2], ready[2];
	struct pair p, q;
	char c;

	(void)state;
	pair_open(&p);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) { /* as before an exec: our fds, and one pair of its own */
		close(go[1]);
		pair_open(&q);
		(void)write(ready[1], &q.cino, sizeof(q.cino));
		(void)read(go[0], &c, 1);
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &q.cino, sizeof(q.cino)), (ssize_t)sizeof(q.cino));
	assert_int_equal(agent_fabric_tree(self, pids, 64, &np), 0);
	assert_int_equal(agent_fabric_socket_owners(pids, np, &tree, &nt, &unread), 0);
	assert_non_null(agent_fabric_owner_find(tree, nt, p.cino)); /* the child's copy */
	assert_non_null(agent_fabric_owner_find(tree, nt, q.cino));
	assert_int_equal(agent_fabric_socket_owners(&self, 1, &mine, &nm, &unread), 0);
	agent_fabric_owners_drop(tree, &nt, mine, nm);
	assert_null(agent_fabric_owner_find(tree, nt, p.cino));
	assert_null(agent_fabric_owner_find(tree, nt, p.sino));
	assert_non_null(agent_fabric_owner_find(tree, nt, q.cino));
	free(tree);
	free(mine);
	close(go[1]);
	waitpid(child, NULL, 0);
	close(go[0]);
	close(ready[0]);
	close(p.cfd);
	close(p.sfd);
	close(p.lfd);
}

struct last {
	uint64_t cookie;
	struct fabric_sock s;
	int n;
};

static void on_destroy(void *arg, const struct fabric_sock *s)
{
	struct last *l = arg;

	if (s->cookie == l->cookie) {
		l->s = *s;
		l->n++;
	}
}

/* The kernel says a connection's last bytes when it is freed (asynchronously: a workqueue). */
static void test_destroy_event(void **state)
{
	struct found f;
	struct last l;
	struct pair p;
	int dfd, i;

	(void)state;
	assert_int_equal(agent_fabric_diag_listen(&dfd), 0);
	pair_open(&p);
	move(p.cfd, p.sfd, 70000);
	memset(&f, 0, sizeof(f));
	f.want[0] = p.sino;
	f.want[1] = p.cino;
	assert_int_equal(agent_fabric_diag_dump(AF_INET, on_sock, &f), 0);
	memset(&l, 0, sizeof(l));
	l.cookie = f.s[0].cookie; /* the receiving side: bytes_received is exact */
	close(p.sfd);
	close(p.cfd);
	close(p.lfd);
	for (i = 0; i < 50 && !l.n; i++) {
		struct pollfd pf = {.fd = dfd, .events = POLLIN};

		if (poll(&pf, 1, 100) > 0)
			agent_fabric_diag_events(dfd, on_destroy, &l);
	}
	assert_int_equal(l.n, 1);
	assert_int_equal(l.s.inode, 0); /* gone with the struct socket */
	assert_true(l.s.have_bytes);
	assert_int_equal(l.s.bytes_received, 70000 + 1); /* and the peer's FIN */
	close(dfd);
}

static unsigned char msg[4096];

static size_t put_hdr(size_t off, uint32_t len, uint16_t type)
{
	struct nlmsghdr h = {.nlmsg_len = len, .nlmsg_type = type};

	memcpy(msg + off, &h, sizeof(h));
	return off + NLMSG_ALIGN(len);
}

static void count(void *arg, const struct fabric_sock *s)
{
	(void)s;
	(*(int *)arg)++;
}

static void test_parse_bounds(void **state)
{
	struct nlmsgerr e = {.error = -EPERM};
	size_t off;
	int n = 0;

	(void)state;
	memset(msg, 0, sizeof(msg));
	/* a message that claims more than the buffer holds */
	put_hdr(0, 4000, SOCK_DIAG_BY_FAMILY);
	assert_int_equal(agent_fabric_diag_parse(msg, 100, count, &n), GX_EPROTO);
	/* a diag message shorter than inet_diag_msg */
	put_hdr(0, NLMSG_LENGTH(8), SOCK_DIAG_BY_FAMILY);
	assert_int_equal(agent_fabric_diag_parse(msg, NLMSG_LENGTH(8), count, &n), GX_EPROTO);
	/* a length below the header's */
	put_hdr(0, 4, SOCK_DIAG_BY_FAMILY);
	assert_int_equal(agent_fabric_diag_parse(msg, 64, count, &n), GX_EPROTO);
	/* an error reply */
	off = put_hdr(0, NLMSG_LENGTH(sizeof(e)), NLMSG_ERROR);
	memcpy(msg + NLMSG_HDRLEN, &e, sizeof(e));
	assert_int_equal(agent_fabric_diag_parse(msg, off, count, &n), -EPERM);
	/* a whole socket with an INET_DIAG_INFO too short for the counters: no bytes */
	{
		struct inet_diag_msg m = {.idiag_family = AF_INET, .idiag_inode = 9};
		struct rtattr a = {.rta_len = RTA_LENGTH(16), .rta_type = INET_DIAG_INFO};
		size_t len = NLMSG_LENGTH(sizeof(m)) + RTA_LENGTH(16);

		memset(msg, 0, sizeof(msg));
		put_hdr(0, (uint32_t)len, SOCK_DIAG_BY_FAMILY);
		memcpy(msg + NLMSG_HDRLEN, &m, sizeof(m));
		memcpy(msg + NLMSG_ALIGN(NLMSG_LENGTH(sizeof(m))), &a, sizeof(a));
		n = 0;
		assert_int_equal(agent_fabric_diag_parse(msg, len, count, &n), 0);
		assert_int_equal(n, 1);
	}
	/* DONE ends it */
	off = put_hdr(0, NLMSG_LENGTH(4), NLMSG_DONE);
	assert_int_equal(agent_fabric_diag_parse(msg, off, count, &n), 1);
}

static void test_classify(void **state)
{
	struct fabric_local locals[] = {
	    {"127.0.0.1", "lo", AF_INET, 8, FI_LOOPBACK},
	    {"10.1.1.11", "eth0", AF_INET, 24, FI_PRIMARY},
	    {"192.168.2.11", "net1", AF_INET, 24, FI_SECONDARY},
	};
	struct fabric_net net = {locals, 3};
	struct fabric_peer_addr peers[] = {
	    {"192.168.2.10", "job-worker-0", 0},
	    {"10.1.1.10", "job-worker-0", 1},
	};
	const char *name;

	(void)state;
	assert_int_equal(agent_fabric_classify(&net, peers, 2, "127.0.0.1", &name), FR_LOOPBACK);
	assert_int_equal(agent_fabric_classify(&net, peers, 2, "192.168.2.11", &name),
			 FR_LOOPBACK); /* the pod itself */
	assert_int_equal(agent_fabric_classify(&net, peers, 2, "192.168.2.10", &name),
			 FR_SECONDARY);
	assert_string_equal(name, "job-worker-0");
	assert_int_equal(agent_fabric_classify(&net, peers, 2, "::ffff:10.1.1.10", &name),
			 FR_PRIMARY);
	/* a member without the table: the secondary subnet is the job's */
	assert_int_equal(agent_fabric_classify(&net, peers, 2, "192.168.2.77", &name),
			 FR_SECONDARY);
	assert_null(name);
	/* eth0's subnet holds other pods and services: not known as peers */
	assert_int_equal(agent_fabric_classify(&net, peers, 2, "10.1.1.12", &name), FR_OTHER);
	assert_int_equal(agent_fabric_classify(&net, peers, 2, "8.8.8.8", &name), FR_OTHER);
	assert_int_equal(agent_fabric_net_onlink(&net, "192.168.3.1", FI_SECONDARY), 0);
	assert_non_null(agent_fabric_net_find(&net, "10.1.1.11"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dump_bytes),	    cmocka_unit_test(test_dump_both_families),
	    cmocka_unit_test(test_owners_and_tree), cmocka_unit_test(test_owners_drop_mine),
	    cmocka_unit_test(test_destroy_event),   cmocka_unit_test(test_parse_bounds),
	    cmocka_unit_test(test_classify),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
