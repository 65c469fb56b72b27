/* SPDX-License-Identifier: MIT */
/*
 * rdzv_coord_io.c - the coordinator's sockets: its listeners (wildcard, or cfg.listen_addr,
 * and those bound to its secondary interface) and their accept loop, paused at the
 * connection bound (PROTOCOL.md "Coordinator"); each connection's admission under the
 * pre-authentication budget and its input, read once per readiness and handed frame by
 * frame to rdzv_coord_msg.c; and a relay's carried children, opened and fed from its
 * CARRY records as if accepted here (PROTOCOL.md "Relays").
 */
#include "rdzv/rdzv_coord_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static void conn_event(struct gx_ev *ev, int fd, uint32_t events, void *arg);
static void rdzv_co_conn_new(struct rdzv_coord *co, int fd, const union gx_sockaddr *sa,
			     int via_sec);
static int rdzv_co_carry(struct rdzv_coord *co, struct cconn *r, const unsigned char *body,
			 size_t len);

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

/* ---- connection events ---- */
/*
 * The pre-authentication budget, so a stranger cannot crowd out members: at most
 * RDZV_PREAUTH_PER_SRC unauthenticated connections per source (and per IPv6 /64, gx_pa); at the
 * connection bound the oldest unauthenticated one goes. Connections from the table's addresses (a
 * member's VERIFY from its secondary address, its phase 1 again from its primary) are known: a
 * stranger's newcomer never closes one, and one of them closes a stranger's for its room (the
 * budget serve keeps for its table). Carried children have their own budget (kid_open).
 */
static int co_admit(struct rdzv_coord *co, struct cconn *cc)
{
	int known = gx_aset_has(&co->known, cc->rc.peer_str);
	struct gx_pa_ent *old = NULL;
	char why[160];

	if (gx_pa_admit(&co->pa, cc->rc.peer_str, known, co->nconns >= co->maxconns, &old) < 0) {
		gx_rl_log(&co->rl_pre, "rdzv: refused a connection from %s: %s", cc->rc.peer_str,
			  gx_pa_why(&co->pa, cc->rc.peer_str, why, sizeof(why)));
		return -EBUSY;
	}
	if (old) {
		struct cconn *oc = (struct cconn *)((char *)old - offsetof(struct cconn, pa));

		gx_rl_log(&co->rl_pre,
			  "rdzv: closed the oldest unauthenticated connection (from %s) for one "
			  "from %s: %zu open",
			  oc->rc.peer_str, cc->rc.peer_str, co->nconns);
		co->res.nevicted++;
		rdzv_co_drop(co, oc, NULL);
	}
	gx_pa_add(&co->pa, &cc->pa, cc->rc.peer_str, known);
	return 0;
}

/* sa: the peer's address from accept4 (no getpeername per connection); via_sec: accepted
 * on a listener bound to the secondary interface */
static void rdzv_co_conn_new(struct rdzv_coord *co, int fd, const union gx_sockaddr *sa,
			     int via_sec)
{
	struct cconn *cc = calloc(1, sizeof(*cc));

	if (!cc) {
		close(fd);
		return;
	}
	rdzv_conn_init(&cc->rc, fd, 1);
	cc->rc.f.fed = 1;
	gx_addr_str(sa, cc->rc.peer_str, sizeof(cc->rc.peer_str));
	if (co_admit(co, cc) < 0 || gx_ev_add(co->ev, fd, EPOLLIN, conn_event, cc) < 0) {
		gx_pa_del(&co->pa, &cc->pa);
		rdzv_conn_reset(&cc->rc);
		free(cc);
		return;
	}
	cc->co = co;
	cc->peer = -1;
	cc->claimed = -1;
	cc->via_sec = (uint8_t)(via_sec != 0);
	cc->deadline = gx_now_ms() + RDZV_HELLO_MS;
	cc->next = co->conns;
	if (co->conns)
		co->conns->prev = cc;
	co->conns = cc;
	co->nconns++;
}

static void read_error(struct rdzv_coord *co, struct cconn *cc, int rc)
{
	struct rdzv_buf b = {0};

	if (rc == GX_EVERSION) {
		/* anyone can send one: rate-limited as every pre-session warning, so a
		 * stranger cannot flood the log */
		gx_rl_log(
		    &co->rl_pre, "rdzv: %s speaks protocol %u.%u, this coordinator %u.%u: dropped",
		    cc->rc.peer_str, cc->rc.peer_vmaj, cc->rc.peer_vmin, RDZV_VMAJOR, RDZV_VMINOR);
		rdzv_put_u32(&b, T_CODE, (uint32_t)GX_EVERSION);
		rdzv_co_send(co, cc, RDZV_REJECT, &b);
		rdzv_buf_free(&b);
		rdzv_co_close_later(co, cc);
		return;
	}
	if (rc == GX_EPROTO || rc == GX_EMAC) {
		co->njunk++;
		gx_rl_log(&co->rl_pre, "rdzv: dropped a message from %s: %s", cc->rc.peer_str,
			  gx_strerror(rc));
	}
	rdzv_co_drop(co, cc, gx_strerror(rc));
}

/*
 * A relay that is told to go (ABORT, END) may still be sending us its children's records;
 * a close with them unread would be a RST, which can discard what it has not read of ours
 * (their ABORTs): our side is shut down instead and its input read to its EOF (the close
 * deadline, 1 s, bounds it). 1 when cc waits so.
 */
static int relay_shut(struct rdzv_coord *co, struct cconn *cc)
{
	if (!cc->is_relay || cc->shut || cc->rc.f.fd < 0)
		return 0;
	cc->shut = 1;
	(void)shutdown(cc->rc.f.fd, SHUT_WR);
	rdzv_co_update_out(co, cc);
	return 1;
}

/*
 * Frames in buf for cc: every whole one handled (a partial one waits in the connection),
 * and what they answered written with one send at the end (17 recv and 7 send
 * per member before, most of them one frame each), or moved into the relay's records
 * when cc is carried. 1 when cc is gone.
 */
static int rdzv_co_input(struct rdzv_coord *co, struct cconn *cc, const unsigned char *buf,
			 size_t n)
{
	unsigned char *body;
	uint16_t type;
	size_t len;
	int rc = 0;

	if (cc->rc.state == RC_CLOSING)
		return 0;
	gx_frame_feed(&cc->rc.f, buf, n);
	/* carried: each answer becomes a record at once, so that an ABORT this input causes
	 * for everyone reaches the relay's record stream ahead of the relay's own */
	cc->rc.f.cork = !cc->rc.f.carried;
	while (cc->rc.state != RC_CLOSING) {
		rc = rdzv_conn_read(&cc->rc, &type, &body, &len);
		if (rc <= 0)
			break;
		/* it measures the peer's silence, not our backlog; before the proof it stays short
		 */
		if (cc->deadline && rdzv_conn_up(&cc->rc))
			cc->deadline = gx_now_ms() + RDZV_HANDSHAKE_MS;
		/* CARRY is records, not a message: a relay's children, each fed back in here */
		if (type == RDZV_CARRY && cc->rc.state == RC_SESSION)
			rc = rdzv_co_carry(co, cc, body, len);
		else
			rc = rdzv_co_handle(co, cc, type, body, len);
		free(body);
		if (rc == 1) /* cc is gone */
			return 1;
	}
	gx_frame_feed(&cc->rc.f, NULL, 0); /* buf is the caller's, for this event only */
	cc->rc.f.cork = 0;
	if (rc < 0) {
		read_error(co, cc, rc);
		return 1;
	}
	if (cc->rc.f.carried) {
		rdzv_co_update_out(co, cc);
		if (cc->rc.state == RC_CLOSING) { /* its CK_CLOSE is queued behind its bytes */
			rdzv_co_drop(co, cc, NULL);
			return 1;
		}
		return 0;
	}
	if (cc->is_relay && (cc->carry.len || cc->carry.err)) /* with this event's one send */
		rdzv_co_carry_flush(co);
	rc = rdzv_conn_flush(&cc->rc);
	if (rc == 0 && cc->rc.state == RC_CLOSING && relay_shut(co, cc))
		return 0;
	/* all written and closing (VERIFIED, a REJECT): close now, as the EPOLLOUT that
	 * rdzv_co_update_out would wait for does (one epoll_ctl and wakeup less) */
	if (rc == 0 && cc->rc.state == RC_CLOSING) {
		rdzv_co_drop(co, cc, NULL);
		return 1;
	}
	if (rc < 0) {
		read_error(co, cc, rc);
		return 1;
	}
	rdzv_co_update_out(co, cc);
	return 0;
}

/* One recv per readiness into co->rbuf, every whole frame in it handled (rdzv_co_input). */
static void conn_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct cconn *cc = arg;
	struct rdzv_coord *co = cc->co;
	ssize_t n;
	int rc = 0;

	(void)ev;
	(void)fd; /* cc->rc.f's */
	if (events & EPOLLOUT) {
		rc = rdzv_conn_flush(&cc->rc);
		if (rc == 0 && cc->rc.state == RC_CLOSING && relay_shut(co, cc))
			goto out;
		rdzv_co_update_out(co, cc);
		if (rc < 0 || (rc == 0 && cc->rc.state == RC_CLOSING)) {
			rdzv_co_drop(co, cc, rc < 0 ? gx_strerror(rc) : NULL);
			goto out;
		}
	}
	if (cc->shut && (events & (EPOLLIN | EPOLLERR | EPOLLHUP))) {
		/* what a closing relay still sends is read and dropped, up to its EOF */
		if (gx_frame_drain(&cc->rc.f) != 0)
			rdzv_co_drop(co, cc, NULL);
		goto out;
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)) || cc->rc.state == RC_CLOSING)
		goto out;
	n = gx_frame_recv(&cc->rc.f, co->rbuf, sizeof(co->rbuf));
	if (n > 0)
		(void)rdzv_co_input(co, cc, co->rbuf, (size_t)n);
	else if (n < 0)
		read_error(co, cc, (int)n);
out:
	rdzv_co_maybe_done(co);
}

/* ---- carried connections: a relay's children, fed from its CARRY records ---- */
/* A child connected to the relay: a new connection, as if accepted here. */
static int kid_open(struct rdzv_coord *co, struct cconn *r, uint32_t id, const unsigned char *p,
		    size_t n)
{
	char addr[INET6_ADDRSTRLEN], norm[INET6_ADDRSTRLEN], why[160];
	struct gx_pa_ent *old = NULL;
	struct cconn *k;
	int known;

	if (r->kids[id % RDZV_RELAY_KIDS] || n == 0 || n >= sizeof(addr))
		return GX_EPROTO;
	memcpy(addr, p, n);
	addr[n] = '\0';
	if (gx_addr_normalize(addr, norm, sizeof(norm)) != 0) /* parsed and printed again */
		return GX_EPROTO;
	/*
	 * The carried children's own pre-authentication budget (pa_kids), as for an accepted
	 * socket: a stranger behind a relay holds at most RDZV_PREAUTH_PER_SRC handshakes (its
	 * others are closed at once: the relay frees their slots), never the relay's session;
	 * at its bound the oldest carried one from outside the table is closed for the newcomer.
	 * Apart from the direct connections' budget: carried children, which hold no fd of ours,
	 * never take the room of a VERIFY or a member's reconnect (on 9740b38 they were known
	 * entries of one budget, never closed, and a stranger filling relays' slots refused
	 * every direct connection until their deadlines passed).
	 */
	known = gx_aset_has(&co->known, norm);
	if (gx_pa_admit(&co->pa_kids, norm, known, 0, &old) < 0) {
		gx_rl_log(&co->rl_pre, "rdzv: refused a connection from %s through relay %s: %s",
			  norm, r->peer >= 0 ? co->names[r->peer] : r->rc.peer_str,
			  gx_pa_why(&co->pa_kids, norm, why, sizeof(why)));
		rdzv_co_carry_rec(co, r, id, CK_CLOSE, NULL, 0);
		return 0;
	}
	if (old) {
		struct cconn *oc = (struct cconn *)((char *)old - offsetof(struct cconn, pa));

		gx_rl_log(
		    &co->rl_pre,
		    "rdzv: closed the oldest unauthenticated connection through a relay (from "
		    "%s) for one from %s",
		    oc->rc.peer_str, norm);
		co->res.nevicted++;
		rdzv_co_drop(co, oc, NULL); /* its relay's slot too: CK_CLOSE queued */
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	rdzv_conn_init(&k->rc, -1, 1);
	k->rc.f.carried = 1;
	gx_strlcpy(k->rc.peer_str, norm, sizeof(k->rc.peer_str));
	gx_pa_add(&co->pa_kids, &k->pa, norm, known);
	k->co = co;
	k->peer = -1;
	k->claimed = -1;
	k->relay = r;
	k->kid = id;
	k->deadline = gx_now_ms() + RDZV_HELLO_MS;
	k->next = co->conns;
	if (co->conns)
		co->conns->prev = k;
	co->conns = k;
	r->kids[id % RDZV_RELAY_KIDS] = k;
	r->nkids++;
	co->ncarried++;
	co->res.ncarried++;
	return 0;
}

/* A CARRY from a relay: 0, or 1 when the relay's connection is gone. */
static int rdzv_co_carry(struct rdzv_coord *co, struct cconn *r, const unsigned char *body,
			 size_t len)
{
	const unsigned char *p;
	size_t off = 0;
	uint32_t id, n;
	uint8_t kind;
	int rc = 0;

	if (!r->is_relay) {
		rdzv_co_drop(co, r, "CARRY from a member that is not a relay");
		return 1;
	}
	if (r->rc.state != RC_SESSION) /* closing: nothing new for it */
		return 0;
	/* an ABORT one of these records causes may close the relay: the rest is not read */
	while (r->rc.state == RC_SESSION &&
	       (rc = rdzv_rec_next(body, len, &off, &id, &kind, &p, &n)) == 1) {
		struct cconn *k;

		rc = 0;
		/* ids are never reused in a session (a slot is): a stale one finds nothing */
		k = r->kids[id % RDZV_RELAY_KIDS];
		if (k && k->kid != id)
			k = NULL;
		if (kind == CK_OPEN)
			rc = kid_open(co, r, id, p, n);
		else if (kind == CK_DATA && k) /* none: we closed it, its bytes were in flight */
			(void)rdzv_co_input(co, k, p, n);
		else if (kind == CK_CLOSE && k) {
			k->close_sent = 1; /* the relay has closed it already */
			rdzv_co_drop(co, k, NULL);
		} else if (kind != CK_DATA && kind != CK_CLOSE)
			rc = GX_EPROTO;
		if (rc < 0)
			break;
	}
	if (rc < 0) {
		gx_warn("rdzv: relay %s sent a malformed CARRY (%s): dropped with its children",
			r->peer >= 0 ? co->names[r->peer] : r->rc.peer_str, gx_strerror(rc));
		rdzv_co_drop(co, r, "malformed CARRY");
		return 1;
	}
	return 0;
}
