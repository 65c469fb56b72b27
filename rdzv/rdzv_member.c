/* SPDX-License-Identifier: MIT */
/*
 * rdzv_member.c - a member (every peer but 0): phase 1 JOIN over the
 * coordinator's primary address, phase 2 VERIFY from its own secondary
 * address to the coordinator's secondary address, then COMMIT. Reconnects
 * with capped, jittered backoff until the deadline (PROTOCOL.md "Member").
 */
#include "rdzv/rdzv_member_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static void conn_event(struct gx_ev *ev, int fd, uint32_t events, void *arg);
static void p1_connect(struct rdzv_member *m);
static void rdzv_mb_fail2_final(struct rdzv_member *m, int code, const char *why);
static void rdzv_mb_fail1(struct rdzv_member *m, const char *why);

void rdzv_mb_close(struct rdzv_member *m, struct mconn *c)
{
	if (c == &m->c2 && m->rdma_checking) { /* the VERIFY it was for is not coming */
		m->rdma_checking = 0;
		if (m->cfg.rdma->cancel)
			m->cfg.rdma->cancel(m->cfg.rdma->arg);
	}
	rdzv_conn_close(m->ev, &c->rc);
}

void rdzv_mb_update(struct rdzv_member *m, struct mconn *c)
{
	rdzv_conn_watch(m->ev, &c->rc);
}

int rdzv_mb_send(struct rdzv_member *m, struct mconn *c, uint16_t type, struct rdzv_buf *b)
{
	int rc = b->err;

	if (rc == 0)
		rc = rdzv_conn_send(&c->rc, type, b->p, b->len);
	rdzv_buf_free(b);
	rdzv_mb_update(m, c);
	return rc;
}

void rdzv_mb_cancel_timers(struct rdzv_member *m)
{
	gx_ev_timer_cancel(m->ev, m->retry1_id);
	gx_ev_timer_cancel(m->ev, m->retry2_id);
	gx_ev_timer_cancel(m->ev, m->tick_id);
	gx_ev_timer_cancel(m->ev, m->deadline_id);
	m->retry1_id = m->retry2_id = m->tick_id = m->deadline_id = 0;
}

void rdzv_mb_finish(struct rdzv_member *m, int rc, const char *fmt, ...)
{
	va_list ap;

	if (m->st == M_DONE)
		return;
	m->st = M_DONE;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(m->res.err, sizeof(m->res.err), fmt, ap);
		va_end(ap);
	}
	rdzv_mb_cancel_timers(m);
	rdzv_mb_relay_free(m); /* our children reconnect: to a new relay, or the coordinator */
	rdzv_mb_close(m, &m->c1);
	rdzv_mb_close(m, &m->c2);
	m->done(m->arg, rc, &m->res);
}

static void retry1_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rdzv_member *m = arg;

	(void)ev;
	(void)id;
	m->retry1_id = 0;
	p1_connect(m);
}

static void retry2_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rdzv_member *m = arg;

	(void)ev;
	(void)id;
	m->retry2_id = 0;
	if (m->st == M_ASSIGNED)
		rdzv_mb_p2_connect(m);
}

void rdzv_mb_ticket_end(struct rdzv_member *m)
{
	m->vt = 0;
	sodium_memzero(m->vkey, sizeof(m->vkey));
}

/*
 * Phase 1 through our relay failed. Its failures: refused, unreachable, no DNS record, a
 * close or reset before any answer (a full relay, a stranger's port). A connection it
 * accepted that is merely late is not: it holds us while its own session is not up (the
 * coordinator may start last). We go to the coordinator after two failures over
 * RDZV_RELAY_PATIENCE_MS (it may start after us), after two drops of a session it carried,
 * or at once when a relay that carried us fails us (it went, or ended after its COMMIT).
 */
static void relay_failed(struct rdzv_member *m, const char *why)
{
	int64_t now = gx_now_ms();
	int reached = m->c1.rc.f.fd >= 0 && m->c1.rc.state != RC_CONNECTING;
	int failed = !(reached && m->c1_late), carried = m->relay_drops > 0;

	if (m->c1_up)
		m->relay_drops++;
	else if (failed && !m->relay_fails++)
		m->relay_first_ms = now;
	if (m->relay_drops < 2 && !(carried && failed && !m->c1_up) &&
	    (m->relay_fails < 2 ||
	     now - m->relay_first_ms < (m->cfg.relay_patience_ms > 0 ? m->cfg.relay_patience_ms
								     : RDZV_RELAY_PATIENCE_MS))) {
		m->c1_relay = m->c1_up = 0;
		return;
	}
	m->c1_relay = m->c1_up = 0;
	m->via_relay = 0;
	m->nrefused = 0;
	gx_warn("rdzv: %s: relay %s failed (%s): joining the coordinator %s directly", m->self.name,
		m->cfg.names[m->relay_idx], why, m->cfg.coord_name);
}

/*
 * The coordinator could not hold us directly (its connection bound; we belong behind a
 * relay, ours failed us): through the relay it named, with a fresh patience, or, when none
 * is in session, to it again after a backoff. Its words stay as the cause in our line.
 */
int rdzv_mb_redirected(struct rdzv_member *m, const struct rdzv_msg *msg)
{
	uint32_t f = m->cfg.relay_fanout, r = msg->index;
	char text[sizeof(msg->text)];

	rdzv_sanitize(text, sizeof(text), msg->text);
	snprintf(m->redirect, sizeof(m->redirect), "%.290s",
		 text[0] ? text : "the coordinator has no room for members behind a relay");
	if (f >= 2 && r >= f && r % f == 0 && r < m->cfg.world && r != m->self.index &&
	    m->cfg.relay_resolve) {
		gx_info("rdzv: %s: joining through relay %s: %s", m->self.name, m->cfg.names[r],
			m->redirect);
		m->relay_idx = r;
		m->via_relay = 1;
		m->relay_fails = m->relay_drops = 0;
		m->attempt1 = 0;
	}
	m->nrefused = 0;
	rdzv_mb_fail1(m, m->redirect);
	return 1;
}

/* Phase 1 lost: start again from JOIN after a backoff. */
static void rdzv_mb_fail1(struct rdzv_member *m, const char *why)
{
	gx_debug("rdzv: %s: %s; retrying", m->self.name, why);
	if (why != m->err1)
		gx_strlcpy(m->err1, why, sizeof(m->err1));
	if (m->c1_relay)
		relay_failed(m, why);
	rdzv_mb_relay_lost(m); /* a relay's children had their path through this session */
	rdzv_mb_close(m, &m->c1);
	rdzv_mb_close(m, &m->c2);
	rdzv_mb_ticket_end(m); /* the next ASSIGN brings a new one */
	gx_ev_timer_cancel(m->ev, m->retry2_id);
	m->retry2_id = 0;
	m->st = M_CONNECT;
	if (!m->retry1_id) {
		int a = m->attempt1++;
		/* a RST costs nothing: retry soon, at a pace set by the job's size (no SYN
		 * storm at N=16384) */
		/* behind a relay, its F children share its listener, not the world */
		int64_t d = m->nrefused
				? rdzv_refused_ms(m->via_relay ? m->cfg.relay_fanout : m->cfg.world,
						  m->nrefused == 1)
				: rdzv_backoff_ms(a);

		m->retry1_id = gx_ev_timer(m->ev, d, retry1_fired, m);
	}
}

/* Phase 2 failed: tell the coordinator why (VFAIL), retry after a backoff. */
void rdzv_mb_fail2(struct rdzv_member *m, const char *why)
{
	rdzv_mb_fail2_final(m, 0, why);
}

/* The same, final: code (GX_EROUTE, ...) tells the coordinator that this member's own
 * configuration failed it, so the job ends now (the member still retries, in case). */
static void rdzv_mb_fail2_final(struct rdzv_member *m, int code, const char *why)
{
	struct rdzv_buf b = {0};

	gx_debug("rdzv: %s: secondary check: %s; retrying", m->self.name, why);
	if (why != m->err2)
		gx_strlcpy(m->err2, why, sizeof(m->err2));
	rdzv_mb_close(m, &m->c2);
	/* a phase-2 failure ends the ticket on both sides (the VFAIL tells the coordinator):
	 * the retry does the handshake, and bytes of a TVERIFY that went astray prove nothing */
	rdzv_mb_ticket_end(m);
	if (m->c1.rc.state == RC_SESSION) {
		rdzv_put_str(&b, T_TEXT, m->err2);
		if (code) /* our own configuration: retrying will not mend it */
			rdzv_put_u32(&b, T_CODE, (uint32_t)code);
		rdzv_mb_send(m, &m->c1, RDZV_VFAIL, &b);
	}
	if (!m->retry2_id)
		m->retry2_id = gx_ev_timer(m->ev, rdzv_backoff_ms(m->attempt2++), retry2_fired, m);
}

void rdzv_mb_fail(struct rdzv_member *m, struct mconn *c, const char *why)
{
	char buf[1400];

	snprintf(buf, sizeof(buf), "%s: %s", c->dst, why);
	if (m->st == M_STAYING) {
		if (c == &m->c1)
			rdzv_mb_ended(m, -1, buf);
		return;
	}
	if (c->phase == 1)
		rdzv_mb_fail1(m, buf);
	else
		rdzv_mb_fail2(m, buf);
}

int rdzv_mb_keepalive(struct mconn *c, int idle, int intvl, int cnt)
{
	unsigned int uto = (unsigned int)(idle + intvl * cnt) * 1000u;
	int on = 1, fd = c->rc.f.fd;

	/* TCP_USER_TIMEOUT: the same bound while our own bytes wait for an ACK */
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto)) < 0)
		return fd < 0 ? -EBADF : -errno;
	c->keepalive = 1;
	return 0;
}

/* A connect or I/O failure of c: phase 1 records its code for the caller's hints. A
 * connection the other end accepted and then closed or reset before it answered anything
 * (a full budget or relay, a stranger's port) is said so, and counted: a later "Connection
 * refused" (the coordinator gone at its own deadline) must not stand for all of them. */
static void io_fail(struct rdzv_member *m, struct mconn *c, int rc)
{
	int early = c->rc.state == RC_HELLO && (rc == -ECONNRESET || rc == -EPIPE);

	if (c == &m->c1)
		m->res.conn_err = rc;
	if (c == &m->c1 && early)
		m->nearly++;
	rdzv_mb_fail(m, c,
		     early		 ? "accepted, then closed before any answer"
		     : rc == -ECONNRESET ? "closed"
		     : rc == -ETIMEDOUT	 ? "timed out"
					 : gx_strerror(rc));
}

/* refused: the coordinator's host is up, its gxboot is about to listen */
static void note_refused(struct rdzv_member *m, int rc)
{
	m->nrefused = rc == -ECONNREFUSED ? m->nrefused + 1 : 0;
}

static int mc_open(struct rdzv_member *m, struct mconn *c, int phase, const union gx_sockaddr *dst,
		   socklen_t dlen, const union gx_sockaddr *src, socklen_t slen, const char *ifname)
{
	char a[INET6_ADDRSTRLEN];
	int fd = -1, rc;

	rdzv_conn_init(&c->rc, -1, 0);
	c->m = m;
	c->phase = phase;
	c->deadline = gx_now_ms() + RDZV_HANDSHAKE_MS;
	c->last_rx = c->opened = gx_now_ms();
	c->keepalive = 0;
	snprintf(c->dst, sizeof(c->dst), dst->sa.sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u",
		 gx_addr_str(dst, a, sizeof(a)), m->cfg.port);
	rc = gx_tcp_connect_dev(dst, dlen, src, slen, ifname, &fd);
	if (rc == 0) {
		rc = gx_ev_add(m->ev, fd, EPOLLOUT | EPOLLIN, conn_event, c);
		if (rc < 0)
			close(fd);
	}
	if (rc == 0)
		c->rc.f.fd = fd;
	return rc;
}

static void p1_resolved(struct rdzv_member *m, int rc, const union gx_sockaddr *sa, socklen_t len)
{
	char why[300];

	if (m->st == M_DONE)
		return;
	if (rc < 0) {
		snprintf(why, sizeof(why), "resolving %s: %s",
			 m->c1_relay ? m->cfg.names[m->relay_idx] : m->cfg.coord_name,
			 rc == -ENOENT ? "no such name (NXDOMAIN)" : gx_strerror(rc));
		m->res.conn_err = rc;
		rdzv_mb_fail1(m, why);
		return;
	}
	rc = mc_open(m, &m->c1, 1, sa, len, NULL, 0, NULL);
	if (rc < 0) {
		note_refused(m, rc); /* a loopback connect may be refused at once */
		io_fail(m, &m->c1, rc);
	}
}

static void p1_connect(struct rdzv_member *m)
{
	union gx_sockaddr sa = m->cfg.coord_addr;
	socklen_t len = m->cfg.coord_addrlen;
	int rc = 0;

	if (m->st == M_DONE || m->resolving)
		return;
	m->c1_relay = m->via_relay;
	m->c1_up = 0;
	if (m->c1_relay) /* our relay's name (its pod may not be up yet) */
		rc = m->cfg.relay_resolve(m->cfg.resolve_arg, m->relay_idx, &sa, &len);
	else if (m->cfg.resolve)
		rc = m->cfg.resolve(m->cfg.resolve_arg, &sa, &len);
	if (rc == -EINPROGRESS) {
		m->resolving = 1;
		return;
	}
	p1_resolved(m, rc, &sa, len);
}

void rdzv_member_resolved(struct rdzv_member *m, int rc, const union gx_sockaddr *sa, socklen_t len)
{
	if (!m || !m->resolving)
		return;
	m->resolving = 0;
	p1_resolved(m, rc == -EINPROGRESS ? -EIO : rc, sa, len);
}

/*
 * Phase 2 goes from our secondary address to the coordinator's in the job's family (its
 * MASTER_ADDR's), bound to our secondary interface, and only once the kernel says it routes
 * there out of that interface: the job's own sockets (NCCL, Gloo, MPI) are bound to an
 * address at most, and Linux sends them where the route says.
 */
void rdzv_mb_p2_connect(struct rdzv_member *m)
{
	const struct rdzv_peer *co = &m->res.coord, *s = &m->self;
	const char *master = m->res.master_addr, *from = rdzv_peer_addr(s, master);
	int v6 = strchr(master, ':') != NULL;
	const char *ifname = m->cfg.bind_iface && !m->nobind ? s->iface : NULL;
	union gx_sockaddr dst, src;
	socklen_t dlen, slen;
	char why[600];
	int rc;

	if (!co->addr4[0] && !co->addr6[0]) {
		rdzv_mb_fail2(m, "the coordinator has no secondary address");
		return;
	}
	if (!from[0]) {
		/* a table of two families cannot be routed: rank 0 would reach the others'
		 * addresses through another interface, or not at all */
		snprintf(why, sizeof(why),
			 "%s has no %s address on %s (only %s), and MASTER_ADDR %s is %s: every "
			 "pod needs a secondary address of one family",
			 s->name, v6 ? "IPv6" : "IPv4", s->iface, v6 ? s->addr4 : s->addr6, master,
			 v6 ? "IPv6" : "IPv4");
		rdzv_mb_fail2_final(m, GX_EROUTE, why);
		return;
	}
	if (gx_addr_parse(master, m->cfg.port, &dst, &dlen) < 0 ||
	    gx_addr_parse(from, 0, &src, &slen) < 0) {
		rdzv_mb_fail2(m, "unusable secondary address");
		return;
	}
	if (m->cfg.route &&
	    (rc = m->cfg.route(m->cfg.route_arg, from, master, v6 ? co->plen6 : co->plen4, s->iface,
			       why, sizeof(why))) < 0) {
		char line[sizeof(why) + sizeof(s->name) + 2];

		snprintf(line, sizeof(line), "%s: %s", s->name, why);
		rdzv_mb_fail2_final(m, rc == GX_EROUTE ? GX_EROUTE : GX_ERDZV, line);
		return;
	}
	rc = mc_open(m, &m->c2, 2, &dst, dlen, &src, slen, ifname);
	if (rc == -EPERM && ifname) {
		/* SO_BINDTODEVICE needs CAP_NET_RAW before Linux 5.7: the route check above
		 * still holds the path to the interface, the bind only made it certain */
		gx_warn("rdzv: cannot bind phase 2 to %s (%s: Linux before 5.7 needs "
			"CAP_NET_RAW): bound to %s only, the kernel's route decides",
			ifname, gx_strerror(rc), from);
		m->nobind = 1;
		rc = mc_open(m, &m->c2, 2, &dst, dlen, &src, slen, NULL);
	}
	if (rc < 0)
		rdzv_mb_fail(m, &m->c2, gx_strerror(rc));
}

/*
 * One recv per readiness into a buffer on the stack, every whole frame in it handled: a
 * frame's header and body, and frames sent in one flight (PROOF + ASSIGN), cost one recv
 * instead of one each (a member made 10 recvs a rendezvous, 5 now). A partial frame waits
 * in the connection, as the coordinator's do. The rest of a body larger than the buffer (a
 * full-table COMMIT, a relay's CARRY) is read straight into its own buffer instead.
 */
static void read_frames(struct rdzv_member *m, struct mconn *c)
{
	unsigned char buf[RDZV_MB_RBUF], *body;
	struct gx_frame *f = &c->rc.f;
	uint16_t type;
	size_t len;
	ssize_t n;
	int rc = 0, alive = 1;

	if (!(f->in_body && f->blen - f->boff > sizeof(buf))) {
		n = gx_frame_recv(f, buf, sizeof(buf));
		if (n <= 0) {
			rc = (int)n;
			goto out;
		}
		f->fed = 1;
		gx_frame_feed(f, buf, (size_t)n);
	}
	m->alive = &alive;
	for (;;) {
		rc = rdzv_conn_read(&c->rc, &type, &body, &len);
		if (rc <= 0)
			break;
		rc = rdzv_mb_on_frame(m, c, type, body, len);
		free(body);
		if (!alive)
			return;
		/* 1: c was closed (its frame reset with it: nothing fed is left) or we are done.
		 * A relay's own COMMIT is "done" with its session kept: its children's records
		 * after it in buf are handled now, as the next readiness would have read them. */
		if (rc == 1 && !f->fed) {
			m->alive = NULL;
			return;
		}
		if (rc < 0 || !f->fed)
			break;
		rc = 0;
	}
	m->alive = NULL;
	f->fed = 0;
	gx_frame_feed(f, NULL, 0); /* buf is this call's */
out:
	if (rc == GX_EVERSION) {
		rdzv_mb_finish(
		    m, GX_EVERSION, "coordinator %s speaks protocol %u.%u, this gxboot %u.%u",
		    m->cfg.coord_name, c->rc.peer_vmaj, c->rc.peer_vmin, RDZV_VMAJOR, RDZV_VMINOR);
	} else if (rc < 0) {
		if (rc == GX_EMAC || rc == GX_EPROTO)
			gx_warn("rdzv: dropped a message from %s: %s", c->dst, gx_strerror(rc));
		io_fail(m, c, rc);
	}
}

static void conn_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct mconn *c = arg;
	struct rdzv_member *m = c->m;
	int rc;

	(void)ev;
	(void)fd;
	if (c->rc.state == RC_CONNECTING) {
		rc = gx_sock_error(c->rc.f.fd);
		if (rc == 0 && !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (rc == 0)
			rc = c->phase == 2 && m->vt ? rdzv_mb_send_tverify(m, c)
						    : rdzv_mb_send_hello(m, c);
		if (c->phase == 1) /* the pace of phase-1 retries: phase 2 has its backoff */
			note_refused(m, rc);
		if (rc < 0)
			io_fail(m, c, rc);
		return;
	}
	if (events & EPOLLOUT) {
		rc = rdzv_conn_flush(&c->rc);
		rdzv_mb_update(m, c);
		if (rc < 0) {
			io_fail(m, c, rc);
			return;
		}
		if (c == &m->c1 && m->relay) /* room again: our children are read */
			rdzv_mb_relay_push(m);
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		read_frames(m, c);
}

/* ---- timers: the 1 s tick (handshake / silence) and the deadline ---- */

/*
 * A handshake is late when the SYN stays unanswered RDZV_HANDSHAKE_MS, or the
 * coordinator went silent that long after answering without proving the token.
 * Connected but never answered: we sit in its FIFO accept queue (N=16384 joining
 * at once), and reconnecting would only move us to its back: wait up to
 * M_SILENCE_MS. Once it proved the token (c->keepalive) it is never late: TCP
 * keepalive decides (a loaded coordinator is slow, not dead).
 */
static int hs_late(const struct mconn *c, int64_t now)
{
	if (!c->deadline || c->keepalive) /* keepalive: an authenticated coordinator serves us */
		return 0;
	if (c->rc.state == RC_CONNECTING)
		return now - c->opened >= RDZV_HANDSHAKE_MS;
	if (c->last_rx == c->opened)
		return now - c->opened >= M_SILENCE_MS;
	return now - c->last_rx >= RDZV_HANDSHAKE_MS;
}
static void tick(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rdzv_member *m = arg;
	int64_t now = gx_now_ms();

	(void)id;
	m->tick_id = 0;
	if (m->c2.rc.f.fd >= 0 && !m->rdma_checking && hs_late(&m->c2, now))
		rdzv_mb_fail(m, &m->c2, "timed out");
	m->c1_late = 1; /* a failure from here is lateness, not a refusal (relay_failed) */
	if (m->c1.rc.f.fd >= 0 && hs_late(&m->c1, now))
		io_fail(m, &m->c1, -ETIMEDOUT);
	else if (m->c1.rc.f.fd >= 0 && !m->c1.keepalive && now - m->c1.last_rx >= M_SILENCE_MS)
		rdzv_mb_fail(m, &m->c1, "silent for 16 s");
	m->c1_late = 0;
	m->tick_id = gx_ev_timer(ev, M_TICK_MS, tick, m);
}

/* The line of a member the coordinator never answered: through which relay, the last
 * failure, and how many connections were accepted and closed unanswered before it. */
static void never_answered(struct rdzv_member *m, long secs)
{
	char via[300] = "", early[120] = "";

	if (m->via_relay)
		snprintf(via, sizeof(via), " through its relay %s", m->cfg.names[m->relay_idx]);
	if (m->nearly && !strstr(m->err1, "closed before any answer"))
		snprintf(early, sizeof(early),
			 "; before: %u connection%s accepted, then closed before any answer",
			 m->nearly, m->nearly == 1 ? "" : "s");
	else if (m->nearly > 1)
		snprintf(early, sizeof(early), " (%u times)", m->nearly);
	rdzv_mb_finish(m, GX_EPEERS, "coordinator %s never answered in %lds%s (%s%s)",
		       m->cfg.coord_name, secs, via,
		       m->err1[0]     ? m->err1
		       : m->resolving ? "its name is still being resolved: no DNS answer"
				      : "no connection",
		       early);
}

static void deadline_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rdzv_member *m = arg;
	long secs = (long)((m->cfg.deadline_ms - m->res.t_start_ms + 999) / 1000);

	(void)ev;
	(void)id;
	m->deadline_id = 0;
	/*
	 * Joined and waiting: the coordinator's own deadline (same --timeout, but it
	 * may have started later) decides, so give its ABORT/COMMIT a short grace.
	 */
	if ((m->st == M_ASSIGNED || m->st == M_VERIFIED) && !m->grace_used &&
	    m->c1.rc.state == RC_SESSION) {
		m->grace_used = 1;
		m->deadline_id = gx_ev_timer(m->ev, RDZV_DEADLINE_GRACE_MS, deadline_fired, m);
		if (m->deadline_id)
			return;
	}
	if (m->st == M_ASSIGNED && m->err2[0])
		rdzv_mb_finish(m, GX_ERDZV,
			       "%s cannot reach the coordinator %s on the secondary network: %s",
			       m->self.name, m->cfg.coord_name, m->err2);
	else if (m->rejected[0] && (m->st == M_CONNECT || m->reject_phase == 2))
		rdzv_mb_finish(m, m->reject_code == GX_EVERSION ? GX_EVERSION : GX_EREJECTED,
			       "coordinator %s rejected our %s until the deadline %s",
			       m->cfg.coord_name, m->reject_phase == 1 ? "JOIN" : "VERIFY",
			       m->rejected);
	else if (m->auth_failed)
		rdzv_mb_finish(m, GX_EAUTH, "coordinator %s failed authentication (%s)",
			       m->cfg.coord_name, m->err1);
	else if (!m->ever_answered)
		never_answered(m, secs);
	else if (m->redirect[0] && m->st == M_CONNECT)
		rdzv_mb_finish(m, GX_EPEERS, "not joined after %lds: %s", secs, m->redirect);
	else if (m->res.waiting[0])
		rdzv_mb_finish(m, GX_EPEERS, "peers missing after %lds: %s", secs, m->res.waiting);
	else
		rdzv_mb_finish(m, GX_EPEERS, "no COMMIT from the coordinator %s after %lds",
			       m->cfg.coord_name, secs);
}

/* ---- start / free ---- */
/*
 * The tree (cfg.relay_fanout F): peer r = (i / F) * F relays for i; r = 0 is the
 * coordinator itself. A member that keeps its session after the COMMIT (stay) joins the
 * coordinator: the relay does not outlive its children's COMMITs.
 */
static int relay_role(struct rdzv_member *m)
{
	uint32_t f = m->cfg.relay_fanout, i = m->self.index, r;
	int rc;

	if (f < 2 || m->cfg.elastic || i == RDZV_OBSERVER || i == RDZV_ELASTIC)
		return 0;
	r = i / f * f;
	if (r == i && m->cfg.stay) /* our children stay too: they join the coordinator */
		return 0;
	if (r == i) {
		rc = rdzv_mb_relay_open(m, rdzv_mb_fail1);
		if (rc < 0) /* our children go to the coordinator after their patience */
			gx_warn("rdzv: %s: cannot relay (listen on port %u: %s): members %u-%u "
				"join the coordinator",
				m->self.name, m->cfg.port, gx_strerror(rc), i + 1,
				i + f - 1 < m->cfg.world ? i + f - 1 : m->cfg.world - 1);
		return rc == -ENOMEM ? rc : 0;
	}
	if (r == 0 || m->cfg.stay)
		return 0;
	if (!m->cfg.relay_resolve)
		return GX_EUSAGE;
	m->relay_idx = r;
	m->via_relay = 1;
	return 0;
}

static int m_init(struct rdzv_member *m, const struct rdzv_config *cfg)
{
	int rc = rdzv_config_check(cfg, &m->self);

	if (rc < 0)
		return rc;
	if (!cfg->resolve && !cfg->coord_addrlen)
		return GX_EUSAGE;
	m->cfg = *cfg;
	m->cfg.token = NULL;
	m->cfg.token_len = 0;
	if (m->self.flags & RDZV_PF_OBSERVER)
		m->cfg.full_table = 1;
	gx_strlcpy(m->job_id, cfg->job_id, sizeof(m->job_id));
	m->cfg.job_id = m->job_id;
	if (!m->cfg.coord_name)
		m->cfg.coord_name = cfg->names[0];
	m->has_token = cfg->token != NULL;
	rc = rdzv_auth_key(cfg->token, cfg->token_len, m->job_id, m->k);
	if (rc < 0)
		return rc;
	m->res.rank = -1;
	m->res.authenticated = m->has_token;
	rc = relay_role(m);
	if (rc < 0)
		return rc;
	m->res.t_start_ms = gx_now_ms();
	m->tick_id = gx_ev_timer(m->ev, M_TICK_MS, tick, m);
	m->deadline_id = gx_ev_timer(m->ev, cfg->deadline_ms - gx_now_ms(), deadline_fired, m);
	return m->tick_id && m->deadline_id ? 0 : -ENOMEM;
}

int rdzv_member_start(struct gx_ev *ev, const struct rdzv_config *cfg, rdzv_done_fn *done,
		      void *arg, struct rdzv_member **ret)
{
	struct rdzv_member *m = NULL;
	int rc;

	if (!ev || !cfg || !done || !ret || cfg->is_coordinator)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->ev = ev;
	m->done = done;
	m->arg = arg;
	rdzv_conn_init(&m->c1.rc, -1, 0);
	rdzv_conn_init(&m->c2.rc, -1, 0);
	rc = m_init(m, cfg);
	if (rc < 0)
		goto out;
	p1_connect(m);
	*ret = m;
	m = NULL;
out:
	rdzv_member_free(m);
	return rc;
}

void rdzv_member_free(struct rdzv_member *m)
{
	if (!m)
		return;
	if (m->alive)
		*m->alive = 0;
	rdzv_mb_cancel_timers(m);
	rdzv_mb_relay_free(m);
	rdzv_mb_close(m, &m->c1);
	rdzv_mb_close(m, &m->c2);
	free(m->res.table);
	sodium_memzero(m->k, sizeof(m->k));
	sodium_memzero(m->vkey, sizeof(m->vkey));
	free(m);
}

int rdzv_member_relaying(const struct rdzv_member *m)
{
	/* a member that stays carries for as long as its session lives: not waited for */
	return rdzv_mb_relay_active(m) && !m->cfg.stay;
}
