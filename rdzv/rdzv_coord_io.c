/* SPDX-License-Identifier: MIT */
/*
 * rdzv_coord_io.c - the coordinator's sockets: its listeners (wildcard, or cfg.listen_addr,
 * and those bound to its secondary interface) and their accept loop, paused at the
 * connection bound (PROTOCOL.md "Coordinator").
 */
#include "rdzv/rdzv_coord_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- coordinator listeners: accept loop, paused at the connection bound ---- */
static void pause_accept(struct rdzv_coord *co)
{
	int i;

	co->paused = 1;
	for (i = 0; i < co->nlfd; i++)
		gx_ev_mod(co->ev, co->lsn[i].fd, 0);
}

void rdzv_co_listen_resume(struct rdzv_coord *co)
{
	int i;

	co->paused = 0;
	for (i = 0; i < co->nlfd; i++)
		gx_ev_mod(co->ev, co->lsn[i].fd, EPOLLIN);
}

static void on_accept(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct rdzv_lsn *l = arg;
	struct rdzv_coord *co = l->co;
	union gx_sockaddr sa;
	socklen_t sl;
	int i, cfd;

	(void)ev;
	(void)events;
	for (i = 0; i < 256; i++) {
		/* at the bound the oldest unauthenticated connection makes room (rdzv_co_conn_new);
		 * only authenticated ones can fill it */
		if (co->nconns >= co->maxconns && co->pa.n == 0) {
			pause_accept(co); /* the sweep resumes; members wait in the backlog */
			return;
		}
		sl = sizeof(sa);
		memset(&sa, 0, sizeof(sa));
		cfd = accept4(fd, &sa.sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				pause_accept(co);
			if (errno != ECONNABORTED && errno != EINTR)
				return;
			continue;
		}
		/* TCP_NODELAY comes from the listener (Linux copies it at accept) */
		rdzv_co_conn_new(co, cfd, &sa, l->secondary);
	}
}

static int listen_add(struct rdzv_coord *co, int fd, int secondary)
{
	struct rdzv_lsn *l;
	int rc, one = 1;

	if (co->nlfd >= RDZV_MAX_LISTEN) {
		close(fd);
		return -ENOSPC;
	}
	/* once here, not per accepted connection: they inherit it: one syscall less per member */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	l = &co->lsn[co->nlfd];
	l->co = co;
	l->fd = fd;
	l->secondary = secondary;
	rc = gx_ev_add(co->ev, fd, EPOLLIN, on_accept, l);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	co->nlfd++;
	return 0;
}

static int listen_one(struct rdzv_coord *co, const union gx_sockaddr *sa, socklen_t len, int flags)
{
	int fd = -1, rc;

	rc = gx_tcp_listen_opt(sa, len, NULL, flags, &fd);
	return rc < 0 ? rc : listen_add(co, fd, 0);
}

/*
 * The secondary listeners: the coordinator's secondary addresses, bound to its secondary
 * interface. Linux takes a packet for any of its addresses on any interface (weak host):
 * only a socket bound to the device tells a VERIFY that came in on net1 from one that came
 * through eth0 (a host route, an overlapping range). A connection that does not match goes
 * to the wildcard listener, where a VERIFY is refused. 1 when they are up, 0 when the
 * kernel refused the device (the VERIFY check falls back to the address), < 0 an error.
 */
static int listen_secondary(struct rdzv_coord *co)
{
	const struct rdzv_peer *s = &co->tab[0];
	int fds[2], why, i, n, rc = 0;

	if (!co->cfg.bind_iface || !s->iface[0])
		return 0;
	n = gx_tcp_listen_secondary(s->addr4, s->addr6, co->cfg.port, s->iface, fds, &why);
	if (n < 0)
		return n;
	if (why)
		gx_warn("rdzv: cannot bind the coordinator's VERIFY listener to %s (%s%s): a "
			"VERIFY to %s is taken whatever interface it came in on",
			s->iface, gx_strerror(why),
			why == -EPERM ? ": Linux before 5.7 needs CAP_NET_RAW" : "",
			co->res.master_addr);
	for (i = 0; i < 2; i++)
		if (fds[i] >= 0 && rc == 0)
			rc = listen_add(co, fds[i], 1);
		else if (fds[i] >= 0)
			close(fds[i]);
	return rc < 0 ? rc : n > 0;
}

int rdzv_co_listen_open(struct rdzv_coord *co)
{
	union gx_sockaddr sa;
	socklen_t len;
	int rc, flags;

	rc = listen_secondary(co);
	if (rc < 0)
		return rc;
	co->sec_bound = rc;
	flags = rc ? GX_LISTEN_SHARED : 0;
	if (co->cfg.listen_addrlen) {
		sa = co->cfg.listen_addr;
		if (sa.sa.sa_family == AF_INET)
			sa.in4.sin_port = htons(co->cfg.port);
		else
			sa.in6.sin6_port = htons(co->cfg.port);
		return listen_one(co, &sa, co->cfg.listen_addrlen, flags);
	}
	gx_addr_parse("0.0.0.0", co->cfg.port, &sa, &len);
	rc = listen_one(co, &sa, len, flags);
	if (rc < 0)
		return rc;
	gx_addr_parse("::", co->cfg.port, &sa, &len);
	rc = listen_one(co, &sa, len, flags);
	if (rc == -EAFNOSUPPORT || rc == -EADDRNOTAVAIL)
		rc = 0; /* no IPv6 here */
	return rc;
}

void rdzv_co_listen_close(struct rdzv_coord *co)
{
	int i;

	for (i = 0; i < co->nlfd; i++) {
		gx_ev_del(co->ev, co->lsn[i].fd);
		close(co->lsn[i].fd);
		co->lsn[i].fd = -1;
	}
	co->nlfd = 0;
}
