/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma_srv.c - the RDMA-CM server inside the caller's gx_ev loop: the
 * listening id on self's secondary address, one connection per CONNECT_REQUEST
 * (QP, a posted recv, a registered WRITE target), an answer to every PING,
 * at most RDZV_RDMA_MAX_CONNS at once, each for at most RDZV_RDMA_CONN_MS.
 * Steps and layouts: rdzv/PROTOCOL.md, "RDMA-CM".
 */
#include "rdzv/rdzv_rdma_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define SRV_EVENTS_PER_WAKEUP 32 /* level-triggered: the rest come next round */
#define SRV_PINGS_MAX 16	 /* a client sends one; more is misuse */

struct srv_conn {
	struct rdzv_rdma_srv *s;
	struct rdma_cm_id *id;
	struct rdzv_rdma_qp q;
	uint64_t timer;
	int cc_added, established, pings;
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
	rdzv_rdma_qp_free(s->cm, cn->id, &cn->q);
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
	gx_debug("rdma server: connection idle for %d ms, closed", RDZV_RDMA_CONN_MS);
	conn_close(cn);
}

/* One received message: a valid PING gets its PONG, anything else ends it. */
static int answer(struct srv_conn *cn, const struct ibv_wc *wc)
{
	struct rdzv_rdma_msg m;
	size_t len = wc->byte_len < RDZV_RDMA_MSG_LEN ? wc->byte_len : RDZV_RDMA_MSG_LEN;
	int rc;

	rc = rdzv_rdma_dec_msg(cn->q.msg, len, &m);
	if (rc < 0 || m.type != RDZV_RDMA_T_PING || ++cn->pings > SRV_PINGS_MAX)
		return rc < 0 ? rc : GX_EPROTO;
	rc = rdzv_rdma_post_recv(cn->s->cm, cn->id, &cn->q);
	if (rc < 0)
		return rc;
	m.type = RDZV_RDMA_T_PONG;
	rc = rdzv_rdma_post_msg(cn->s->cm, cn->id, &cn->q, &m);
	if (rc == 0 && cn->pings == 1)
		cn->s->c->answered++; /* a connect + send/recv came through */
	return rc;
}

static void on_comp(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct srv_conn *cn = arg;
	const struct rdzv_rdma_cm_ops *cm = cn->s->cm;
	struct ibv_cq *cq = NULL;
	struct ibv_wc wc;
	int rc, n;

	(void)ev;
	(void)fd;
	(void)events;
	memset(&wc, 0, sizeof(wc));
	rc = cm->get_cq_event(cn->q.cc, &cq);
	if (rc == -EAGAIN)
		return;
	if (rc == 0) {
		cm->ack_cq_events(cq, 1);
		rc = cm->req_notify_cq(cn->q.cq);
	}
	while (rc == 0 && (n = cm->poll_cq(cn->q.cq, 1, &wc)) != 0) {
		if (n < 0 || wc.status != IBV_WC_SUCCESS)
			rc = n < 0 ? n : -EIO;
		else if (wc.opcode == IBV_WC_RECV)
			rc = answer(cn, &wc);
	}
	if (rc < 0) {
		gx_debug("rdma server: connection closed: %s",
			 rc == -EIO ? rdzv_rdma_wc_str(wc.status) : gx_strerror(rc));
		conn_close(cn);
	}
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
	if (cn->q.buf_mr) {
		a.rkey = cn->q.buf_mr->rkey;
		a.addr = (uintptr_t)cn->q.buf;
	}
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

	rc = rdzv_rdma_qp_setup(s->cm, cn->id, &cn->q, s->c->max_write,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, why, sizeof(why));
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
	cn->timer = gx_ev_timer(s->ev, RDZV_RDMA_CONN_MS, conn_expire, cn);
	if (!cn->timer)
		return -ENOMEM;
	return conn_accept(cn);
}

static void on_request(struct rdzv_rdma_srv *s, struct rdma_cm_id *id, const void *pd, size_t len)
{
	struct rdzv_rdma_req req;
	struct srv_conn *cn;
	uint32_t reason = 0;

	if (s->n >= RDZV_RDMA_MAX_CONNS)
		reason = RDZV_RDMA_REJ_BUSY;
	else if (rdzv_rdma_dec_req(pd, len, &req) < 0)
		reason = RDZV_RDMA_REJ_BADREQ;
	else if (req.write_size > s->c->max_write)
		reason = RDZV_RDMA_REJ_TOOLARGE;
	cn = reason ? NULL : calloc(1, sizeof(*cn));
	if (!cn) {
		gx_debug("rdma server: connect request rejected (reason %u)", reason);
		reject_id(s, id, reason ? reason : RDZV_RDMA_REJ_SETUP);
		s->cm->destroy_id(id);
		return;
	}
	cn->s = s;
	cn->id = id;
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
