/* SPDX-License-Identifier: MIT */
/*
 * fabric_tcp.c - CMD's TCP connections as the kernel sees them: the process tree from
 * /proc/PID/stat (parent links), each process's socket inodes from /proc/PID/fd, and every
 * TCP socket's bytes from a NETLINK_SOCK_DIAG dump (inet_diag with INET_DIAG_INFO: struct
 * tcp_info's bytes_acked and bytes_received, Linux >= 4.2). libnl-route has no sock_diag
 * support, so the request and the reply's walk are here, every length checked first.
 */
#include "agent/fabric/fabric_int.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* tcp_info up to bytes_received: what an older kernel's shorter struct must reach */
#define TCPI_NEED (offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(uint64_t))

void agent_fabric_sock_addrs(const struct fabric_sock *s, char *local, char *remote)
{
	inet_ntop(s->family, s->src, local, FABRIC_ADDR_LEN);
	inet_ntop(s->family, s->dst, remote, FABRIC_ADDR_LEN);
}

/* The attributes after one inet_diag_msg: INET_DIAG_INFO's counters when long enough. */
static void diag_attrs(const struct nlmsghdr *h, struct fabric_sock *s)
{
	size_t off = NLMSG_ALIGN(NLMSG_LENGTH(sizeof(struct inet_diag_msg)));
	size_t end = h->nlmsg_len;
	const unsigned char *base = (const unsigned char *)h;

	while (off + sizeof(struct rtattr) <= end) {
		const struct rtattr *a = (const struct rtattr *)(base + off);
		size_t alen = a->rta_len;

		if (alen < sizeof(*a) || off + alen > end)
			return; /* truncated: what was read stays */
		if (a->rta_type == INET_DIAG_INFO && alen - RTA_LENGTH(0) >= TCPI_NEED) {
			struct tcp_info ti;
			size_t n = alen - RTA_LENGTH(0);

			memset(&ti, 0, sizeof(ti));
			memcpy(&ti, RTA_DATA(a), n < sizeof(ti) ? n : sizeof(ti));
			s->bytes_acked = ti.tcpi_bytes_acked;
			s->bytes_received = ti.tcpi_bytes_received;
			s->have_bytes = 1;
		}
		off += RTA_ALIGN(alen);
	}
}

int agent_fabric_diag_parse(const void *buf, size_t len, fabric_sock_fn *fn, void *arg)
{
	const unsigned char *p = buf;
	size_t off = 0;

	while (off + sizeof(struct nlmsghdr) <= len) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)(p + off);
		const struct inet_diag_msg *m;
		struct fabric_sock s;

		if (h->nlmsg_len < sizeof(*h) || h->nlmsg_len > len - off)
			return GX_EPROTO;
		if (h->nlmsg_type == NLMSG_DONE)
			return 1;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				return GX_EPROTO;
			return e->error < 0 ? e->error : -EIO;
		}
		/* a dump of the first request's form answers in its type */
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY || h->nlmsg_type == TCPDIAG_GETSOCK) {
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				return GX_EPROTO;
			m = NLMSG_DATA(h);
			memset(&s, 0, sizeof(s));
			s.family = m->idiag_family;
			s.state = m->idiag_state;
			s.inode = m->idiag_inode;
			s.cookie = (uint64_t)m->id.idiag_cookie[1] << 32 | m->id.idiag_cookie[0];
			s.lport = ntohs(m->id.idiag_sport);
			s.rport = ntohs(m->id.idiag_dport);
			if (s.family == AF_INET || s.family == AF_INET6) {
				memcpy(s.src, m->id.idiag_src, sizeof(s.src));
				memcpy(s.dst, m->id.idiag_dst, sizeof(s.dst));
				diag_attrs(h, &s);
				fn(arg, &s);
			}
		}
		off += NLMSG_ALIGN(h->nlmsg_len);
	}
	return 0;
}

/* TCP states but LISTEN (10), and TIME_WAIT (6) and SYN_RECV (3), which carry no tcp_info of a
 * process's socket (a time-wait or request socket) */
#define DIAG_STATES (((1u << 12) - 1) & ~((1u << 10) | (1u << 6) | (1u << 3)))

/* a dump's part is at most 32 KiB (netlink_dump's allocation) */
#define DIAG_BUF 32768

int agent_fabric_diag_dump(int family, fabric_sock_fn *fn, void *arg)
{
	return agent_fabric_diag_dump_states(family, DIAG_STATES, fn, arg);
}

/* Send one dump request and walk its reply. */
static int diag_request(const void *req, size_t len, fabric_sock_fn *fn, void *arg)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	unsigned char *buf = NULL;
	int fd = -1, rc = 0;
	ssize_t n;

	buf = malloc(DIAG_BUF);
	if (!buf)
		return -ENOMEM;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if (sendto(fd, req, len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		goto out;
	}
	/* the kernel builds the dump as it is read: no wait on anything but ourselves */
	while (rc == 0) {
		n = recv(fd, buf, DIAG_BUF, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		rc = agent_fabric_diag_parse(buf, (size_t)n, fn, arg);
	}
	if (rc == 1)
		rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

/*
 * Both families in one walk of the kernel's TCP hash (a dump's cost is that walk, 262,144
 * buckets here, whatever the namespace holds: half the cost of one dump per family): the
 * request's first form, TCPDIAG_GETSOCK, dumps every family (inet_diag_dump_compat). A kernel
 * that refuses it gets one v2 dump per family (a socket told twice counts once: by cookie).
 */
static int dump_unspec(uint32_t states, fabric_sock_fn *fn, void *arg)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req r;
	} req;
	int rc;

	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = TCPDIAG_GETSOCK;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_seq = 1;
	req.r.idiag_family = AF_INET;
	req.r.idiag_states = states;
	req.r.idiag_ext = 1u << (INET_DIAG_INFO - 1);
	rc = diag_request(&req, sizeof(req), fn, arg);
	if (rc != -EINVAL && rc != -ENOENT && rc != -EOPNOTSUPP)
		return rc;
	rc = agent_fabric_diag_dump_states(AF_INET, states, fn, arg);
	return rc < 0 ? rc : agent_fabric_diag_dump_states(AF_INET6, states, fn, arg);
}

int agent_fabric_diag_dump_states(int family, uint32_t states, fabric_sock_fn *fn, void *arg)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req;

	if (family == AF_UNSPEC)
		return dump_unspec(states, fn, arg);
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_seq = 1;
	req.r.sdiag_family = (uint8_t)family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = states;
	req.r.idiag_ext = 1u << (INET_DIAG_INFO - 1);
	return diag_request(&req, sizeof(req), fn, arg);
}

/*
 * The kernel's word when a TCP socket of this network namespace is freed (sock_diag's
 * SKNLGRP_INET{,6}_TCP_DESTROY groups, what `ss -E` reads): its last tcp_info, cookie
 * included, inode not (the struct socket is gone). Without it a connection's last bytes are
 * those of the sample before its close.
 */
int agent_fabric_diag_listen(int *fd_out)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int fd, buf = 1 << 20;

	*fd_out = -1;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	sa.nl_groups = 1u << (SKNLGRP_INET_TCP_DESTROY - 1) | 1u << (SKNLGRP_INET6_TCP_DESTROY - 1);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	*fd_out = fd;
	return 0;
}

int agent_fabric_diag_events(int fd, fabric_sock_fn *fn, void *arg)
{
	unsigned char buf[8192];
	int n_msgs = 0;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ENOBUFS) /* a burst overran the buffer: sampling covers it */
			continue;
		if (n <= 0)
			break;
		(void)agent_fabric_diag_parse(buf, (size_t)n, fn, arg);
		n_msgs++;
	}
	return n_msgs;
}

/* "TCP: inuse N" of /proc/net/sockstat (and TCP6 of sockstat6): this namespace's hashed TCP
 * sockets, moved by every connect, accept and close; -errno when neither file reads */
int agent_fabric_tcp_inuse(long *n)
{
	static const char *const files[][2] = {{"/proc/net/sockstat", "TCP: inuse "},
					       {"/proc/net/sockstat6", "TCP6: inuse "}};
	char buf[512], *p;
	size_t i;
	long v;
	int got = 0;

	*n = 0;
	for (i = 0; i < 2; i++) {
		int fd = open(files[i][0], O_RDONLY | O_CLOEXEC);
		ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

		if (fd >= 0)
			close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		p = strstr(buf, files[i][1]);
		if (p && sscanf(p + strlen(files[i][1]), "%ld", &v) == 1) {
			*n += v;
			got = 1;
		}
	}
	return got ? 0 : -ENOENT;
}

/* ---- the process tree ---- */

/* ppid of /proc/PID/stat: the field after the state, past the last ')' of the name */
static int read_ppid(const char *pid, pid_t *ppid)
{
	char path[64], buf[512], *p;
	long v;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %ld", &v) != 1)
		return -EIO;
	*ppid = (pid_t)v;
	return 0;
}

struct proc_ent {
	pid_t pid, ppid;
};

static int all_procs(struct proc_ent **out, size_t *n)
{
	struct proc_ent *v = NULL, *nv;
	size_t cap = 0, k = 0;
	struct dirent *de;
	DIR *d;
	long pid;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		pid_t pp;

		if (gx_parse_long(de->d_name, 1, 1L << 30, &pid) < 0 || read_ppid(de->d_name, &pp))
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[k].pid = (pid_t)pid;
		v[k++].ppid = pp;
	}
	closedir(d);
	*out = v;
	*n = k;
	return 0;
}

int agent_fabric_tree(pid_t root, pid_t *pids, size_t cap, size_t *n)
{
	struct proc_ent *all = NULL;
	size_t nall = 0, k = 0, head = 0, i;
	int rc;

	rc = all_procs(&all, &nall);
	if (rc < 0)
		return rc;
	/* breadth first from root: pids[head..k) are the ones whose children are next */
	for (i = 0; i < nall && k < cap; i++)
		if (all[i].ppid == root && all[i].pid != root)
			pids[k++] = all[i].pid;
	while (head < k) {
		pid_t p = pids[head++];

		for (i = 0; i < nall && k < cap; i++)
			if (all[i].ppid == p && all[i].pid != root)
				pids[k++] = all[i].pid;
	}
	free(all);
	*n = k;
	return 0;
}

/* ---- socket inodes of the tree ---- */

struct owners {
	struct fabric_owner *v;
	size_t n, cap;
};

static int owners_add(struct owners *s, uint32_t ino, pid_t pid)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct fabric_owner *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n].ino = ino;
	s->v[s->n++].pid = pid;
	return 0;
}

/* one process's "socket:[N]" links; -EACCES when its fd table is not ours to read */
static int proc_sockets(pid_t pid, struct owners *s)
{
	char path[64], link[64];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno; /* gone meanwhile: nothing */
	while (rc == 0 && (de = readdir(d)) != NULL) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		unsigned long ino;

		if (n <= 8)
			continue;
		link[n] = '\0';
		if (strncmp(link, "socket:[", 8) == 0 && sscanf(link + 8, "%lu]", &ino) == 1)
			rc = owners_add(s, (uint32_t)ino, pid);
	}
	closedir(d);
	return rc;
}

static int owner_cmp(const void *a, const void *b)
{
	const struct fabric_owner *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

int agent_fabric_socket_owners(const pid_t *pids, size_t n, struct fabric_owner **out,
			       size_t *count, size_t *unreadable)
{
	struct owners s = {0};
	size_t i;
	int rc = 0;

	*unreadable = 0;
	for (i = 0; i < n && rc >= 0; i++) {
		rc = proc_sockets(pids[i], &s);
		if (rc == -EACCES || rc == -EPERM) {
			(*unreadable)++;
			rc = 0;
		}
	}
	if (rc < 0) {
		free(s.v);
		return rc;
	}
	if (s.n)
		qsort(s.v, s.n, sizeof(*s.v), owner_cmp);
	*out = s.v;
	*count = s.n;
	return 0;
}

const struct fabric_owner *agent_fabric_owner_find(const struct fabric_owner *v, size_t n,
						   uint32_t ino)
{
	struct fabric_owner key = {.ino = ino};

	return n ? bsearch(&key, v, n, sizeof(*v), owner_cmp) : NULL;
}

void agent_fabric_owners_drop(struct fabric_owner *v, size_t *n, const struct fabric_owner *mine,
			      size_t nmine)
{
	size_t i, k = 0;

	for (i = 0; i < *n; i++)
		if (!agent_fabric_owner_find(mine, nmine, v[i].ino))
			v[k++] = v[i];
	*n = k;
}
