/* SPDX-License-Identifier: MIT */
/*
 * rdzv_member.c - a member (every peer but 0): phase 1 JOIN over the
 * coordinator's primary address, phase 2 VERIFY from its own secondary
 * address to the coordinator's secondary address, then COMMIT. Reconnects
 * with capped, jittered backoff until the deadline (PROTOCOL.md "Member").
 */
#include "rdzv/rdzv_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define M_SILENCE_MS (3 * RDZV_REPORT_MS + 1000) /* no frame on phase 1: reconnect */
#define M_TICK_MS 1000

enum m_state {
	M_CONNECT = 0, /* phase 1 not yet assigned */
	M_ASSIGNED,    /* phase 2 under way */
	M_VERIFIED,    /* waiting for COMMIT */
	M_DONE,
};

struct mconn {
	struct rdzv_conn rc;
	struct rdzv_member *m;
	int phase;	  /* 1 or 2 */
	int64_t deadline; /* handshake (phase 1 until ASSIGN, phase 2 until VERIFIED) */
	int64_t last_rx;
	char dst[64];
};

struct rdzv_member {
	struct gx_ev *ev;
	struct rdzv_config cfg; /* token cleared */
	char job_id[129];
	struct rdzv_peer self;
	rdzv_done_fn *done;
	void *arg;
	unsigned char k[RDZV_KEY_LEN];
	int has_token;
	struct mconn c1, c2;
	enum m_state st;
	int attempt1, attempt2, auth_failed, ever_answered;
	uint64_t retry1_id, retry2_id, tick_id, deadline_id;
	int grace_used; /* the deadline grace of a joined member was given */
	int refused;	/* the last phase-1 connect was refused */
	uint64_t round;
	char err1[300], err2[300];
	struct rdzv_result res;
};

static void conn_event(struct gx_ev *ev, int fd, uint32_t events, void *arg);
static void p1_connect(struct rdzv_member *m);
static void p2_connect(struct rdzv_member *m);

static void mc_close(struct rdzv_member *m, struct mconn *c)
{
	if (c->rc.fd >= 0)
		gx_ev_del(m->ev, c->rc.fd);
	rdzv_conn_reset(&c->rc);
}

static void mc_update(struct rdzv_member *m, struct mconn *c)
{
	if (c->rc.fd >= 0)
		gx_ev_mod(m->ev, c->rc.fd, EPOLLIN | (rdzv_conn_pending(&c->rc) ? EPOLLOUT : 0));
}

static int mc_send(struct rdzv_member *m, struct mconn *c, uint16_t type, struct rdzv_buf *b)
{
	int rc = b->err;

	if (rc == 0)
		rc = rdzv_conn_send(&c->rc, type, b->p, b->len);
	rdzv_buf_free(b);
	mc_update(m, c);
	return rc;
}

static void cancel_timers(struct rdzv_member *m)
{
	gx_ev_timer_cancel(m->ev, m->retry1_id);
	gx_ev_timer_cancel(m->ev, m->retry2_id);
	gx_ev_timer_cancel(m->ev, m->tick_id);
	gx_ev_timer_cancel(m->ev, m->deadline_id);
	m->retry1_id = m->retry2_id = m->tick_id = m->deadline_id = 0;
}

static void finish(struct rdzv_member *m, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void finish(struct rdzv_member *m, int rc, const char *fmt, ...)
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
	cancel_timers(m);
	mc_close(m, &m->c1);
	mc_close(m, &m->c2);
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
		p2_connect(m);
}

/* Phase 1 lost: start again from JOIN after a backoff. */
static void fail1(struct rdzv_member *m, const char *why)
{
	gx_debug("rdzv: %s: %s; retrying", m->self.name, why);
	if (why != m->err1)
		gx_strlcpy(m->err1, why, sizeof(m->err1));
	mc_close(m, &m->c1);
	mc_close(m, &m->c2);
	gx_ev_timer_cancel(m->ev, m->retry2_id);
	m->retry2_id = 0;
	m->st = M_CONNECT;
	if (!m->retry1_id) {
		int a = m->attempt1++;

		if (m->refused && a > RDZV_REFUSED_MAX_ATTEMPT)
			a = RDZV_REFUSED_MAX_ATTEMPT; /* a RST costs nothing: retry soon */
		m->retry1_id = gx_ev_timer(m->ev, rdzv_backoff_ms(a), retry1_fired, m);
	}
}

/* Phase 2 failed: tell the coordinator why (VFAIL), retry after a backoff. */
static void fail2(struct rdzv_member *m, const char *why)
{
	struct rdzv_buf b = {0};

	gx_debug("rdzv: %s: secondary check: %s; retrying", m->self.name, why);
	if (why != m->err2)
		gx_strlcpy(m->err2, why, sizeof(m->err2));
	mc_close(m, &m->c2);
	if (m->c1.rc.state == RC_SESSION) {
		rdzv_put_str(&b, T_TEXT, m->err2);
		mc_send(m, &m->c1, RDZV_VFAIL, &b);
	}
	if (!m->retry2_id)
		m->retry2_id = gx_ev_timer(m->ev, rdzv_backoff_ms(m->attempt2++), retry2_fired, m);
}

static void mc_fail(struct rdzv_member *m, struct mconn *c, const char *why)
{
	char buf[1400];

	snprintf(buf, sizeof(buf), "%s: %s", c->dst, why);
	if (c->phase == 1)
		fail1(m, buf);
	else
		fail2(m, buf);
}

static int mc_open(struct rdzv_member *m, struct mconn *c, int phase, const union gx_sockaddr *dst,
		   socklen_t dlen, const union gx_sockaddr *src, socklen_t slen)
{
	char a[INET6_ADDRSTRLEN];
	int fd = -1, rc;

	rdzv_conn_init(&c->rc, -1, 0);
	c->m = m;
	c->phase = phase;
	c->deadline = gx_now_ms() + RDZV_HANDSHAKE_MS;
	c->last_rx = gx_now_ms();
	snprintf(c->dst, sizeof(c->dst), dst->sa.sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u",
		 gx_addr_str(dst, a, sizeof(a)), m->cfg.port);
	rc = gx_tcp_connect(dst, dlen, src, slen, &fd);
	if (rc == 0) {
		rc = gx_ev_add(m->ev, fd, EPOLLOUT | EPOLLIN, conn_event, c);
		if (rc < 0)
			close(fd);
	}
	if (rc == 0)
		c->rc.fd = fd;
	return rc;
}

static void p1_connect(struct rdzv_member *m)
{
	union gx_sockaddr sa = m->cfg.coord_addr;
	socklen_t len = m->cfg.coord_addrlen;
	char why[300];
	int rc = 0;

	if (m->st == M_DONE)
		return;
	if (m->cfg.resolve)
		rc = m->cfg.resolve(m->cfg.resolve_arg, &sa, &len);
	if (rc < 0) {
		snprintf(why, sizeof(why), "resolving %s: %s", m->cfg.coord_name, gx_strerror(rc));
		fail1(m, why);
		return;
	}
	rc = mc_open(m, &m->c1, 1, &sa, len, NULL, 0);
	if (rc < 0)
		mc_fail(m, &m->c1, gx_strerror(rc));
}

/* Phase 2 goes from our secondary address to the coordinator's, same family. */
static void p2_connect(struct rdzv_member *m)
{
	const struct rdzv_peer *co = &m->res.coord, *s = &m->self;
	union gx_sockaddr dst, src;
	socklen_t dlen, slen;
	int rc = -EAFNOSUPPORT;

	if (s->addr4[0] && co->addr4[0])
		rc = gx_addr_parse(co->addr4, m->cfg.port, &dst, &dlen) ||
		     gx_addr_parse(s->addr4, 0, &src, &slen);
	else if (s->addr6[0] && co->addr6[0])
		rc = gx_addr_parse(co->addr6, m->cfg.port, &dst, &dlen) ||
		     gx_addr_parse(s->addr6, 0, &src, &slen);
	if (rc != 0) {
		fail2(m, "no secondary address of ours in the coordinator's address family");
		return;
	}
	rc = mc_open(m, &m->c2, 2, &dst, dlen, &src, slen);
	if (rc < 0)
		mc_fail(m, &m->c2, gx_strerror(rc));
}

/* ---- handshake, member side ---- */
static int send_hello(struct rdzv_member *m, struct mconn *c)
{
	struct rdzv_buf b = {0};

	randombytes_buf(c->rc.nm, RDZV_NONCE_LEN);
	rdzv_put(&b, T_NONCE, c->rc.nm, RDZV_NONCE_LEN);
	rdzv_put_u32(&b, T_HAS_TOKEN, (uint32_t)m->has_token);
	rdzv_put_str(&b, T_NAME, m->self.name);
	rdzv_put_u32(&b, T_INDEX, m->self.index);
	rdzv_put_str(&b, T_JOB_ID, m->job_id);
	c->rc.state = RC_HELLO;
	return mc_send(m, c, RDZV_HELLO, &b);
}

static void auth_fail(struct rdzv_member *m, struct mconn *c, const char *why)
{
	m->auth_failed = 1;
	gx_warn("rdzv: coordinator at %s failed authentication: %s", c->dst, why);
	mc_fail(m, c, why);
}

static int on_challenge(struct rdzv_member *m, struct mconn *c, const struct rdzv_msg *msg)
{
	unsigned char proof[RDZV_MAC_LEN];
	struct rdzv_buf b = {0};

	if (!msg->has_nonce)
		return GX_EPROTO;
	if (m->has_token && !msg->has_token) {
		auth_fail(m, c, "it holds no token");
		return 1;
	}
	memcpy(c->rc.nc, msg->nonce, RDZV_NONCE_LEN);
	rdzv_proof(m->k, 0, c->rc.nm, c->rc.nc, m->job_id, proof);
	rdzv_put(&b, T_PROOF, proof, sizeof(proof));
	c->rc.state = RC_AUTH;
	return mc_send(m, c, RDZV_AUTH, &b);
}

static int send_join(struct rdzv_member *m, struct mconn *c)
{
	struct rdzv_buf b = {0};
	struct rdzv_peer p = m->self;

	if (m->cfg.full_table)
		p.flags |= RDZV_PF_FULL_TABLE;
	rdzv_put_peer(&b, T_PEER, &p);
	return mc_send(m, c, RDZV_JOIN, &b);
}

static int send_verify(struct rdzv_member *m, struct mconn *c)
{
	const struct rdzv_rdma_ops *ops = m->cfg.rdma;
	struct rdzv_buf b = {0};
	char why[256] = "";
	int rc;

	if (ops && ops->check && m->self.rdma_dev[0] && m->res.coord.rdma_dev[0]) {
		rc = ops->check(ops->arg, &m->self, &m->res.coord, m->cfg.port,
				gx_now_ms() + RDZV_HANDSHAKE_MS, why, sizeof(why));
		if (rc < 0) {
			char line[300];

			snprintf(line, sizeof(line), "RDMA-CM to %.63s: %.200s",
				 m->res.coord.rdma_dev, why[0] ? why : gx_strerror(rc));
			fail2(m, line);
			return 1;
		}
		m->res.rdma_verified = 1;
	}
	rdzv_put_str(&b, T_NAME, m->self.name);
	rdzv_put_u32(&b, T_INDEX, m->self.index);
	rdzv_put_u64(&b, T_INCARNATION, m->self.incarnation);
	rdzv_put_u64(&b, T_ROUND, m->round);
	rdzv_put_u32(&b, T_FLAGS, (uint32_t)m->res.rdma_verified);
	return mc_send(m, c, RDZV_VERIFY, &b);
}

static int on_proof(struct rdzv_member *m, struct mconn *c, const struct rdzv_msg *msg)
{
	if (!msg->has_proof ||
	    rdzv_proof_verify(m->k, 1, c->rc.nm, c->rc.nc, m->job_id, msg->proof) < 0) {
		auth_fail(m, c, m->has_token ? "wrong proof of the token" : "wrong proof");
		return 1;
	}
	rdzv_conn_session(&c->rc, m->k);
	m->ever_answered = 1;
	m->auth_failed = 0;
	return c->phase == 1 ? send_join(m, c) : send_verify(m, c);
}

/* ---- phase 1 session messages ---- */
static int check_coord(struct rdzv_member *m, struct rdzv_msg *msg)
{
	struct rdzv_peer *co = &msg->peer;
	char why[160], master[46];

	if (!msg->has_peer || rdzv_peer_check(co, why, sizeof(why)) < 0 ||
	    strcmp(co->name, m->cfg.names[0]) != 0 || msg->rank != m->self.index ||
	    msg->world != m->cfg.world || gx_addr_normalize(msg->master, master, sizeof(master)) ||
	    (strcmp(master, co->addr4) != 0 && strcmp(master, co->addr6) != 0))
		return GX_EPROTO;
	gx_strlcpy(msg->master, master, sizeof(msg->master));
	return 0;
}

static int on_assign(struct rdzv_member *m, struct rdzv_msg *msg)
{
	if (m->st != M_CONNECT || check_coord(m, msg) < 0)
		return GX_EPROTO;
	m->round = msg->round;
	m->res.round = msg->round;
	m->res.coord = msg->peer;
	m->res.rank = (int)msg->rank;
	m->res.world = msg->world;
	gx_strlcpy(m->res.master_addr, msg->master, sizeof(m->res.master_addr));
	m->res.t_joined_ms = gx_now_ms();
	m->c1.deadline = 0;
	m->attempt1 = 0;
	m->st = M_ASSIGNED;
	gx_debug("rdzv: %s: rank %u of %u, master %s", m->self.name, msg->rank, msg->world,
		 m->res.master_addr);
	if (!m->self.nd_err) /* otherwise only wait for the ABORT naming us */
		p2_connect(m);
	return 0;
}

static int take_table(struct rdzv_member *m, const struct rdzv_msg *msg)
{
	size_t off = 0, i = 0;
	const unsigned char *v;
	uint16_t t, n;
	char why[160];

	if (msg->ntable != m->cfg.world)
		return GX_EPROTO;
	m->res.table = calloc(m->cfg.world, sizeof(*m->res.table));
	if (!m->res.table)
		return -ENOMEM;
	while (rdzv_tlv_next(msg->table, msg->table_len, &off, &t, &v, &n) == 1) {
		struct rdzv_peer *p = &m->res.table[i];

		if (t != T_ENTRY)
			continue;
		if (i >= m->cfg.world || rdzv_peer_decode(v, n, p) < 0 ||
		    rdzv_peer_check(p, why, sizeof(why)) < 0 || p->index != i ||
		    strcmp(p->name, m->cfg.names[i]) != 0)
			return GX_EPROTO;
		i++;
	}
	m->res.ntable = i;
	return i == m->cfg.world ? 0 : GX_EPROTO;
}

static int on_commit(struct rdzv_member *m, struct rdzv_msg *msg)
{
	int rc;

	if (m->st != M_ASSIGNED && m->st != M_VERIFIED)
		return GX_EPROTO;
	if (msg->round != m->round || check_coord(m, msg) < 0 ||
	    strcmp(msg->master, m->res.master_addr) != 0)
		return GX_EPROTO;
	if (m->cfg.full_table && !m->res.table) {
		rc = take_table(m, msg);
		if (rc < 0)
			return rc;
	}
	m->res.t_commit_ms = gx_now_ms();
	if (!m->res.t_verified_ms)
		m->res.t_verified_ms = m->res.t_commit_ms;
	finish(m, 0, NULL);
	return 1;
}

static int abort_code(int code)
{
	switch (code) {
	case GX_EPEERS:
	case GX_ERDZV:
	case GX_ECONFLICT:
	case GX_EAUTH:
		return code;
	default:
		return GX_EABORTED;
	}
}

static int on_session1(struct rdzv_member *m, struct mconn *c, struct rdzv_msg *msg)
{
	char text[sizeof(msg->text)];
	struct rdzv_buf b = {0};

	switch (msg->type) {
	case RDZV_ASSIGN:
		return on_assign(m, msg);
	case RDZV_COMMIT:
		return on_commit(m, msg);
	case RDZV_ABORT:
		rdzv_sanitize(text, sizeof(text), msg->text);
		finish(m, abort_code(msg->code), "%s",
		       text[0] ? text : "aborted by the coordinator");
		return 1;
	case RDZV_WAITING:
		rdzv_sanitize(text, sizeof(text), msg->text);
		snprintf(m->res.waiting, sizeof(m->res.waiting), "waiting for %.1000s", text);
		return 0;
	case RDZV_PING:
		return mc_send(m, c, RDZV_PONG, &b);
	default:
		return 0; /* unknown: skipped */
	}
}

static int on_verified(struct rdzv_member *m, struct mconn *c, const struct rdzv_msg *msg)
{
	char text[sizeof(msg->text)];

	if (msg->type != RDZV_VERIFIED)
		return 0;
	if (msg->code != 0) {
		rdzv_sanitize(text, sizeof(text), msg->text);
		mc_fail(m, c, text[0] ? text : "verification refused");
		return 1;
	}
	mc_close(m, c);
	m->err2[0] = '\0';
	if (m->st == M_ASSIGNED) {
		m->st = M_VERIFIED;
		m->res.t_verified_ms = gx_now_ms();
	}
	return 1;
}

static int on_frame(struct rdzv_member *m, struct mconn *c, uint16_t type,
		    const unsigned char *body, size_t len)
{
	struct rdzv_msg *msg = malloc(sizeof(*msg));
	char text[sizeof(msg->text)];
	int rc = GX_EPROTO;

	if (!msg || rdzv_msg_decode(type, body, len, msg) < 0)
		goto out;
	c->last_rx = gx_now_ms();
	if (type == RDZV_REJECT) {
		rdzv_sanitize(text, sizeof(text), msg->text);
		if (msg->code == GX_EVERSION)
			finish(m, GX_EVERSION, "coordinator %s refused protocol %u.%u",
			       m->cfg.coord_name, RDZV_VMAJOR, RDZV_VMINOR);
		else
			finish(m, GX_EREJECTED, "coordinator %s rejected our %s: %s",
			       m->cfg.coord_name, c->phase == 1 ? "JOIN" : "VERIFY",
			       text[0] ? text : "no reason given");
		rc = 1;
	} else if (c->rc.state == RC_HELLO && type == RDZV_CHALLENGE) {
		rc = on_challenge(m, c, msg);
	} else if (c->rc.state == RC_AUTH && type == RDZV_PROOF) {
		rc = on_proof(m, c, msg);
	} else if (c->rc.state == RC_SESSION) {
		rc = c->phase == 1 ? on_session1(m, c, msg) : on_verified(m, c, msg);
	}
out:
	free(msg);
	return rc;
}

static void read_frames(struct rdzv_member *m, struct mconn *c)
{
	unsigned char *body;
	uint16_t type;
	size_t len;
	int rc = 0, i;
	char why[200];

	for (i = 0; i < RDZV_FRAMES_PER_EVENT; i++) {
		rc = rdzv_conn_read(&c->rc, &type, &body, &len);
		if (rc <= 0)
			break;
		rc = on_frame(m, c, type, body, len);
		free(body);
		if (rc != 0) /* 1: c was closed or we are done */
			break;
	}
	if (rc == GX_EVERSION) {
		finish(m, GX_EVERSION, "coordinator %s speaks protocol %u.%u, this gxboot %u.%u",
		       m->cfg.coord_name, c->rc.peer_vmaj, c->rc.peer_vmin, RDZV_VMAJOR,
		       RDZV_VMINOR);
	} else if (rc < 0) {
		snprintf(why, sizeof(why), "%s", rc == -ECONNRESET ? "closed" : gx_strerror(rc));
		if (rc == GX_EMAC || rc == GX_EPROTO)
			gx_warn("rdzv: dropped a message from %s: %s", c->dst, gx_strerror(rc));
		mc_fail(m, c, why);
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
		rc = gx_sock_error(c->rc.fd);
		if (rc == 0 && !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (rc == 0)
			rc = send_hello(m, c);
		/* refused: the coordinator's host is up, its gxboot is about to listen */
		m->refused = rc == -ECONNREFUSED;
		if (rc < 0)
			mc_fail(m, c, gx_strerror(rc));
		return;
	}
	if (events & EPOLLOUT) {
		rc = rdzv_conn_flush(&c->rc);
		mc_update(m, c);
		if (rc < 0) {
			mc_fail(m, c, gx_strerror(rc));
			return;
		}
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		read_frames(m, c);
}

/* ---- timers: the 1 s tick (handshake / silence) and the deadline ---- */
static void tick(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rdzv_member *m = arg;
	int64_t now = gx_now_ms();

	(void)id;
	m->tick_id = 0;
	if (m->c2.rc.fd >= 0 && now >= m->c2.deadline)
		mc_fail(m, &m->c2, "timed out");
	if (m->c1.rc.fd >= 0 && m->c1.deadline && now >= m->c1.deadline)
		mc_fail(m, &m->c1, "timed out");
	else if (m->c1.rc.fd >= 0 && now - m->c1.last_rx >= M_SILENCE_MS)
		mc_fail(m, &m->c1, "silent for 16 s");
	m->tick_id = gx_ev_timer(ev, M_TICK_MS, tick, m);
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
		finish(m, GX_ERDZV,
		       "%s cannot reach the coordinator %s on the secondary network: %s",
		       m->self.name, m->cfg.coord_name, m->err2);
	else if (m->auth_failed)
		finish(m, GX_EAUTH, "coordinator %s failed authentication (%s)", m->cfg.coord_name,
		       m->err1);
	else if (!m->ever_answered)
		finish(m, GX_EPEERS, "coordinator %s never answered in %lds (%s)",
		       m->cfg.coord_name, secs, m->err1[0] ? m->err1 : "no connection");
	else if (m->res.waiting[0])
		finish(m, GX_EPEERS, "peers missing after %lds: %s", secs, m->res.waiting);
	else
		finish(m, GX_EPEERS, "no COMMIT from the coordinator %s after %lds",
		       m->cfg.coord_name, secs);
}

/* ---- start / free / run ---- */
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
	cancel_timers(m);
	mc_close(m, &m->c1);
	mc_close(m, &m->c2);
	free(m->res.table);
	sodium_memzero(m->k, sizeof(m->k));
	free(m);
}

void rdzv_result_clear(struct rdzv_result *res)
{
	if (!res)
		return;
	free(res->table);
	memset(res, 0, sizeof(*res));
}

struct run_ctx {
	struct gx_ev *ev;
	struct rdzv_result *res;
	int rc, done;
};

static void run_done(void *arg, int rc, const struct rdzv_result *r)
{
	struct run_ctx *x = arg;

	*x->res = *r;
	x->res->table = NULL;
	x->res->ntable = 0;
	if (r->ntable) {
		x->res->table = calloc(r->ntable, sizeof(*r->table));
		if (x->res->table) {
			memcpy(x->res->table, r->table, r->ntable * sizeof(*r->table));
			x->res->ntable = r->ntable;
		}
	}
	x->rc = rc;
	x->done = 1;
	gx_ev_stop(x->ev, 0);
}

int rdzv_run(const struct rdzv_config *cfg, struct rdzv_result *res)
{
	struct run_ctx x = {.res = res};
	struct rdzv_coord *co = NULL;
	struct rdzv_member *m = NULL;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = gx_ev_new(&x.ev);
	if (rc < 0)
		return rc;
	if (cfg->is_coordinator)
		rc = rdzv_coord_start(x.ev, cfg, run_done, &x, &co);
	else
		rc = rdzv_member_start(x.ev, cfg, run_done, &x, &m);
	while (rc == 0 && !x.done)
		rc = gx_ev_run(x.ev);
	if (rc == 0)
		rc = x.rc;
	rdzv_coord_free(co);
	rdzv_member_free(m);
	gx_ev_free(x.ev);
	return rc;
}
