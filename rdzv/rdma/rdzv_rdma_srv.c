/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma_srv.c - the RDMA-CM server inside the caller's gx_ev loop: the
 * listening id on self's secondary address, one connection per CONNECT_REQUEST
 * (QP, a posted recv, a fresh nonce in the accept), a WRITE target registered
 * only once a PING proves the job's key (wire v2: a stranger
 * cannot make it pin memory) and
 * under RDZV_RDMA_PIN_MAX in all, an answer to every proved PING; at most
 * RDZV_RDMA_MAX_CONNS at once, RDZV_RDMA_PREAUTH_PER_SRC unproved per source,
 * RDZV_RDMA_PROOF_MS to prove, each for at most RDZV_RDMA_CONN_MS.
 * Steps and layouts: rdzv/PROTOCOL.md, "RDMA-CM".
 */
#include "rdzv/rdma/rdzv_rdma_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define SRV_EVENTS_PER_WAKEUP 32 /* level-triggered: the rest come next round */
#define SRV_PINGS_MAX 16	 /* a client sends one; more is misuse */
#define SRV_RANK_MAX 16384	 /* RDZV_MAX_WORLD */

struct srv_conn {
	struct rdzv_rdma_srv *s;
	struct rdma_cm_id *id;
	struct rdzv_rdma_qp q;
	uint64_t timer;
	int cc_added, established, pings, proved;
	uint32_t write_size;		       /* the REQ's */
	size_t pinned;			       /* bytes of q.buf counted in the context */
	unsigned char ns[RDZV_RDMA_NONCE_LEN]; /* ours, in the accept */
	uint64_t seq;			       /* arrival order (oldest: smallest) */
	char src[46];
	struct srv_conn *prev, *next;
};

struct rdzv_rdma_srv {
	struct rdzv_rdma_ctx *c;
	const struct rdzv_rdma_cm_ops *cm;
	struct gx_ev *ev;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid;
	int ch_added;
	struct srv_conn *conns;
	unsigned n;
	uint64_t seq;
	int warned_version; /* once: anyone can send an old REQ */
	char addr[46];
};

static void conn_close(struct srv_conn *cn)
{
	struct rdzv_rdma_srv *s = cn->s;

	if (cn->prev)
		cn->prev->next = cn->next;
	else
		s->conns = cn->next;
	if (cn->next)
		cn->next->prev = cn->prev;
	s->n--;
	if (cn->timer)
		gx_ev_timer_cancel(s->ev, cn->timer);
	if (cn->cc_added)
		gx_ev_del(s->ev, cn->q.cc->fd);
	if (cn->established)
		s->cm->disconnect(cn->id);
	if (!cn->proved)
		s->c->refused++;
	rdzv_rdma_qp_free(s->cm, cn->id, &cn->q);
	s->c->pinned -= cn->pinned; /* released with the region */
	s->cm->destroy_id(cn->id);
	free(cn);
}

static void reject_id(struct rdzv_rdma_srv *s, struct rdma_cm_id *id, uint32_t reason)
{
	unsigned char rej[RDZV_RDMA_REJ_LEN];

	rdzv_rdma_enc_rej(reason, rej);
	s->cm->reject(id, rej, sizeof(rej));
}

static void conn_fail(struct srv_conn *cn, uint32_t reason)
{
	reject_id(cn->s, cn->id, reason);
	conn_close(cn);
}

static void conn_expire(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct srv_conn *cn = arg;

	(void)ev;
	(void)id;
	cn->timer = 0;
	if (cn->proved)
		gx_debug("rdma server: connection idle for %d ms, closed", RDZV_RDMA_CONN_MS);
	else
		gx_debug("rdma server: %s did not prove the job's key in %d ms, closed", cn->src,
			 RDZV_RDMA_PROOF_MS);
	conn_close(cn);
}

/* A rank that proved the key, counted once however often it connects. */
static int mark_proved(struct rdzv_rdma_ctx *c, uint32_t rank)
{
	size_t need = rank / 8 + 1, nb;
	unsigned char *p;

	if (rank >= SRV_RANK_MAX)
		return GX_EPROTO;
	if (need > c->proved_bytes) {
		nb = need < 64 ? 64 : need * 2;
		p = realloc(c->proved, nb);
		if (!p)
			return -ENOMEM;
		memset(p + c->proved_bytes, 0, nb - c->proved_bytes);
		c->proved = p;
		c->proved_bytes = nb;
	}
	if (!(c->proved[rank / 8] & (1u << (rank % 8)))) {
		c->proved[rank / 8] |= (unsigned char)(1u << (rank % 8));
		c->answered++;
	}
	return 0;
}

/* The proof holds: the write target, under the context's cap on pinned memory. */
static uint8_t register_target(struct srv_conn *cn, struct rdzv_rdma_msg *m)
{
	struct rdzv_rdma_ctx *c = cn->s->c;
	char why[200];

	if (!cn->write_size || cn->q.buf_mr)
		goto out; /* nothing to write, or registered by an earlier PING */
	if (c->pinned + cn->write_size > RDZV_RDMA_PIN_MAX) {
		gx_debug("rdma server: rank %u's %u-byte target refused: %zu bytes pinned "
			 "(cap %u)",
			 m->rank, cn->write_size, c->pinned, RDZV_RDMA_PIN_MAX);
		return RDZV_RDMA_ST_PINNED;
	}
	if (rdzv_rdma_qp_buf(cn->s->cm, &cn->q, cn->write_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, why,
			     sizeof(why)) < 0) {
		gx_debug("rdma server: %s", why);
		return RDZV_RDMA_ST_SETUP;
	}
	cn->pinned = cn->write_size;
	c->pinned += cn->pinned; /* counted where it is registered */
	if (c->pinned > c->pinned_peak)
		c->pinned_peak = c->pinned;
	gx_debug("rdma server: registered %u bytes for rank %u from %s (pinned %zu, peak %zu)",
		 cn->write_size, m->rank, cn->src, c->pinned, c->pinned_peak);
out:
	if (cn->q.buf_mr) {
		m->rkey = cn->q.buf_mr->rkey;
		m->addr = (uintptr_t)cn->q.buf;
	}
	return RDZV_RDMA_ST_OK;
}

/*
 * One received message: a PING whose MAC proves the job's key for our nonce gets
 * its PONG (MAC'd too) and, the first time, the write target; anything else ends
 * the connection before anything is registered.
 */
static int answer(struct srv_conn *cn, const struct ibv_wc *wc)
{
	struct rdzv_rdma_srv *s = cn->s;
	struct rdzv_rdma_msg m;
	size_t len = wc->byte_len < RDZV_RDMA_MSG_LEN ? wc->byte_len : RDZV_RDMA_MSG_LEN;
	int rc;

	rc = rdzv_rdma_dec_msg(&s->c->auth, cn->ns, cn->q.msg, len, &m);
	if (rc == GX_EMAC)
		gx_debug("rdma server: PING from %s does not prove the job's key, closed", cn->src);
	if (rc < 0 || m.type != RDZV_RDMA_T_PING || ++cn->pings > SRV_PINGS_MAX ||
	    m.write_size != cn->write_size)
		return rc < 0 ? rc : GX_EPROTO;
	if (!cn->proved) {
		rc = mark_proved(s->c, m.rank);
		if (rc < 0)
			return rc;
		cn->proved = 1;
		gx_ev_timer_cancel(s->ev, cn->timer);
		cn->timer = gx_ev_timer(s->ev, RDZV_RDMA_CONN_MS, conn_expire, cn);
		if (!cn->timer)
			return -ENOMEM;
	}
	rc = rdzv_rdma_post_recv(s->cm, cn->id, &cn->q);
	if (rc < 0)
		return rc;
	m.type = RDZV_RDMA_T_PONG;
	m.write_size = 0;
	m.rkey = 0;
	m.addr = 0;
	m.status = register_target(cn, &m);
	return rdzv_rdma_post_msg(s->cm, cn->id, &cn->q, &s->c->auth, cn->ns, &m);
}

/* One completion: a failed one ends the connection, a RECV is a PING to answer, the PONG's
 * SEND completion is nothing to do. */
static int srv_wc(void *arg, const struct ibv_wc *wc)
{
	struct srv_conn *cn = arg;
	int rc;

	if (wc->status != IBV_WC_SUCCESS) {
		gx_debug("rdma server: connection closed: %s", rdzv_rdma_wc_str(wc->status));
		return -EIO;
	}
	rc = wc->opcode == IBV_WC_RECV ? answer(cn, wc) : 0;
	if (rc < 0)
		gx_debug("rdma server: connection closed: %s", gx_strerror(rc));
	return rc;
}

static void on_comp(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct srv_conn *cn = arg;
	const char *what = NULL;
	int rc;

	(void)ev;
	(void)fd;
	(void)events;
	rc = rdzv_rdma_cq_drain(cn->s->cm, &cn->q, srv_wc, cn, &what);
	if (rc >= 0)
		return;
	if (what) /* else srv_wc said why */
		gx_debug("rdma server: connection closed: %s: %s", what, gx_strerror(rc));
	conn_close(cn);
}

static int conn_accept(struct srv_conn *cn)
{
	struct rdzv_rdma_srv *s = cn->s;
	unsigned char acc[RDZV_RDMA_ACC_LEN];
	struct rdzv_rdma_acc a = {.max_write = (uint32_t)s->c->max_write};
	struct ibv_port_attr pa;
	struct rdma_conn_param p;

	memset(&pa, 0, sizeof(pa));
	if (s->cm->query_port(cn->id->verbs, cn->id->port_num, &pa) == 0)
		a.mtu = (uint32_t)rdzv_rdma_mtu_bytes(pa.active_mtu);
	randombytes_buf(cn->ns, sizeof(cn->ns));
	memcpy(a.nonce, cn->ns, sizeof(a.nonce));
	rdzv_rdma_enc_acc(&a, acc);
	memset(&p, 0, sizeof(p));
	p.private_data = acc;
	p.private_data_len = sizeof(acc);
	p.responder_resources = 1;
	p.initiator_depth = 1;
	return s->cm->accept(cn->id, &p);
}

static int conn_setup(struct srv_conn *cn)
{
	struct rdzv_rdma_srv *s = cn->s;
	char why[200];
	int rc;

	/* message slots only: the write target waits for the proof */
	rc = rdzv_rdma_qp_setup(s->cm, cn->id, &cn->q, 0, 0, why, sizeof(why));
	if (rc < 0) {
		gx_debug("rdma server: %s", why);
		return rc;
	}
	rc = rdzv_rdma_post_recv(s->cm, cn->id, &cn->q);
	if (rc == 0)
		rc = gx_ev_add(s->ev, cn->q.cc->fd, EPOLLIN, on_comp, cn);
	if (rc < 0)
		return rc;
	cn->cc_added = 1;
	cn->timer = gx_ev_timer(s->ev, RDZV_RDMA_PROOF_MS, conn_expire, cn);
	if (!cn->timer)
		return -ENOMEM;
	return conn_accept(cn);
}

/* The connecting address ("?" when the id has none). */
static void src_of(struct rdma_cm_id *id, char *out, size_t len)
{
	const struct sockaddr *sa = (const struct sockaddr *)&id->route.addr.dst_addr;
	const void *a = NULL;

	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (!a || !inet_ntop(sa->sa_family, a, out, (socklen_t)len))
		gx_strlcpy(out, "?", len);
}

/*
 * Room for one more unproved connection from src: BUSY when src already holds
 * RDZV_RDMA_PREAUTH_PER_SRC; at the connection limit the oldest unproved
 * connection of the source holding most is closed (never one that proved, never
 * for a newcomer whose source would then hold as many), else BUSY.
 */
static uint32_t preauth_room(struct rdzv_rdma_srv *s, const char *src)
{
	struct srv_conn *cn, *v = NULL, *w;
	unsigned mine = 0, most = 0, k;

	for (cn = s->conns; cn; cn = cn->next)
		mine += !cn->proved && strcmp(cn->src, src) == 0;
	if (mine >= RDZV_RDMA_PREAUTH_PER_SRC)
		return RDZV_RDMA_REJ_BUSY;
	if (s->n < RDZV_RDMA_MAX_CONNS)
		return 0;
	for (cn = s->conns; cn; cn = cn->next) {
		if (cn->proved)
			continue;
		for (k = 0, w = s->conns; w; w = w->next)
			k += !w->proved && strcmp(w->src, cn->src) == 0;
		if (k > most || (k == most && v && cn->seq < v->seq)) {
			most = k;
			v = cn;
		}
	}
	if (!v || most <= mine + 1)
		return RDZV_RDMA_REJ_BUSY;
	gx_debug("rdma server: at %d connections: closed the oldest unproved one of %s (%u)",
		 RDZV_RDMA_MAX_CONNS, v->src, most);
	conn_close(v);
	return 0;
}

static void on_request(struct rdzv_rdma_srv *s, struct rdma_cm_id *id, const void *pd, size_t len)
{
	struct rdzv_rdma_req req;
	struct srv_conn *cn;
	uint32_t reason = 0;
	char src[46];
	int rc;

	src_of(id, src, sizeof(src));
	rc = rdzv_rdma_dec_req(pd, len, &req);
	if (rc == GX_EVERSION)
		reason = RDZV_RDMA_REJ_VERSION;
	else if (rc < 0)
		reason = RDZV_RDMA_REJ_BADREQ;
	else if (req.write_size > s->c->max_write)
		reason = RDZV_RDMA_REJ_TOOLARGE;
	else
		reason = preauth_room(s, src);
	cn = reason ? NULL : calloc(1, sizeof(*cn));
	if (!cn) {
		gx_debug("rdma server: connect request from %s rejected (reason %u)", src, reason);
		if (reason == RDZV_RDMA_REJ_VERSION && !s->warned_version++)
			gx_warn("RDMA-CM: %s speaks another RDMA wire version than v%d (mixed "
				"gxboot versions?)",
				src, RDZV_RDMA_VERSION);
		reject_id(s, id, reason ? reason : RDZV_RDMA_REJ_SETUP);
		s->cm->destroy_id(id);
		return;
	}
	cn->s = s;
	cn->id = id;
	cn->write_size = req.write_size;
	cn->seq = ++s->seq;
	gx_strlcpy(cn->src, src, sizeof(cn->src));
	id->context = cn;
	cn->next = s->conns;
	if (s->conns)
		s->conns->prev = cn;
	s->conns = cn;
	s->n++;
	if (conn_setup(cn) < 0)
		conn_fail(cn, RDZV_RDMA_REJ_SETUP);
}

/* One event: its data is copied and the event acked before any id is touched. */
static void handle(struct rdzv_rdma_srv *s, struct rdma_cm_event *e)
{
	enum rdma_cm_event_type type = e->event;
	struct rdma_cm_id *id = e->id;
	unsigned char pd[64];
	size_t len = e->param.conn.private_data ? e->param.conn.private_data_len : 0;
	struct srv_conn *cn;

	if (len > sizeof(pd))
		len = sizeof(pd);
	if (len)
		memcpy(pd, e->param.conn.private_data, len);
	s->cm->ack_cm_event(e);
	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_request(s, id, pd, len);
		return;
	}
	cn = id && id != s->lid ? id->context : NULL;
	if (!cn) {
		gx_debug("rdma server: event %d on the listening id", (int)type);
		return;
	}
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		cn->established = 1;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		cn->established = 0; /* the other side hung up: nothing to disconnect */
		conn_close(cn);
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		conn_close(cn);
		break;
	default:
		break;
	}
}

static void on_cm(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct rdzv_rdma_srv *s = arg;
	struct rdma_cm_event *e;
	int i, rc;

	(void)ev;
	(void)fd;
	(void)events;
	for (i = 0; i < SRV_EVENTS_PER_WAKEUP; i++) {
		e = NULL;
		rc = s->cm->get_cm_event(s->ch, &e);
		if (rc < 0) {
			if (rc != -EAGAIN)
				gx_debug("rdma server: rdma_get_cm_event: %s", gx_strerror(rc));
			return;
		}
		handle(s, e);
	}
}

static void srv_free(struct rdzv_rdma_srv *s)
{
	while (s->conns)
		conn_close(s->conns);
	if (s->ch_added)
		gx_ev_del(s->ev, s->ch->fd);
	if (s->lid)
		s->cm->destroy_id(s->lid);
	if (s->ch)
		s->cm->destroy_event_channel(s->ch);
	free(s);
}

static int srv_start(struct rdzv_rdma_srv *s, union gx_sockaddr *sa, char *why, size_t whylen)
{
	const char *what = "rdma_create_event_channel";
	int rc;

	rc = s->cm->create_event_channel(&s->ch);
	if (rc == 0)
		rc = rdzv_rdma_nonblock(s->ch->fd);
	if (rc == 0 && (what = "rdma_create_id", 1))
		rc = s->cm->create_id(s->ch, &s->lid, NULL);
	if (rc == 0 && (what = "rdma_bind_addr", 1))
		rc = s->cm->bind_addr(s->lid, &sa->sa);
	if (rc == 0 && (what = "rdma_listen", 1))
		rc = s->cm->listen(s->lid, RDZV_RDMA_MAX_CONNS);
	if (rc == 0 && (what = "gx_ev_add", 1))
		rc = gx_ev_add(s->ev, s->ch->fd, EPOLLIN, on_cm, s);
	if (rc < 0) {
		snprintf(why, whylen, "%s(%s port %u): %s", what, s->addr,
			 (unsigned)ntohs(sa->in4.sin_port), gx_strerror(rc));
		return rc;
	}
	s->ch_added = 1;
	return 0;
}

int rdzv_rdma_serve(struct rdzv_rdma_ctx *c, struct gx_ev *ev, const struct rdzv_peer *self,
		    uint16_t port, char *why, size_t whylen)
{
	struct rdzv_rdma_srv *s = NULL;
	union gx_sockaddr sa;
	socklen_t len;
	int rc;

	if (!c || !ev || !self)
		return -EINVAL;
	if (c->srv)
		return -EALREADY;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = c;
	s->cm = c->cm;
	s->ev = ev;
	gx_strlcpy(s->addr, self->addr4[0] ? self->addr4 : self->addr6, sizeof(s->addr));
	rc = gx_addr_parse(s->addr, port, &sa, &len);
	if (rc < 0) {
		snprintf(why, whylen, "no usable secondary address (\"%s\")", s->addr);
		goto out;
	}
	rc = srv_start(s, &sa, why, whylen);
	if (rc == 0) {
		c->srv = s;
		s = NULL;
	}
out:
	if (s)
		srv_free(s);
	return rc;
}

void rdzv_rdma_stop(struct rdzv_rdma_ctx *c)
{
	if (!c || !c->srv)
		return;
	srv_free(c->srv);
	c->srv = NULL;
}

unsigned rdzv_rdma_nconns(const struct rdzv_rdma_ctx *c)
{
	return c && c->srv ? c->srv->n : 0;
}

unsigned rdzv_rdma_answered(const struct rdzv_rdma_ctx *c)
{
	return c ? c->answered : 0;
}
