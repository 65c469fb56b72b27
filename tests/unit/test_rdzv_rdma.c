/* SPDX-License-Identifier: MIT */
/*
 * test_rdzv_rdma.c - RDMA-CM client and server (rdzv_rdma*.c) against a fake
 * librdmacm / verbs table: event channels and completion channels are pipes
 * (so poll() and gx_ev work), events and completions are played from a small
 * per-test script, every object is counted so that each test ends with
 * nothing alive. Covers success, address / route errors, rejects,
 * unreachable, completion errors, deadlines, hostile private data, the
 * server's accept / answer / limits, and release of everything on free.
 */
#include "rdzv/rdma/rdzv_rdma_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

enum kind {
	K_CH,
	K_ID,
	K_PD,
	K_MR,
	K_CC,
	K_CQ,
	K_QP,
	K_EV,
	K_N
};

struct fake_ev {
	struct rdma_cm_event ev; /* first: the code sees this */
	unsigned char pd[256];
	struct fake_ev *next;
};

struct fake_ch {
	struct rdma_event_channel ch;
	int wfd;
	struct fake_ev *head;
};

struct fake_cc {
	struct ibv_comp_channel cc;
	int wfd;
	struct fake_cq *cq;
};

struct fake_cq {
	struct ibv_cq cq;
	struct fake_cc *cc;
	struct ibv_wc q[16];
	int n, armed;
};

struct fake_qp {
	struct ibv_qp qp;
	struct fake_cq *cq;
	struct rdma_cm_id *id;
	uint64_t raddr[4];
	int nrecv;
	unsigned char acc[RDZV_RDMA_ACC_LEN]; /* the server's accept data on this id */
};

/* What the fake "other side" does, and what it saw. */
struct fake {
	struct ibv_context verbs;
	int alive[K_N];
	int errors;
	uint32_t keys;
	/* client script: event type per call, -1 = no event at all */
	int addr_ev, addr_status, route_ev, route_status, conn_ev, conn_status;
	unsigned char conn_pd[256];
	uint8_t conn_pdlen;
	enum ibv_wc_status send_status, write_status;
	int reply;		    /* answer a SEND with a RECV (the server's PONG) */
	int reply_bad;		    /* ... with a wrong nonce */
	int reply_stranger;	    /* ... MAC'd under another key (a stranger's server) */
	uint8_t pong_status;	    /* ... with this status */
	struct rdzv_rdma_auth auth; /* the key both ends hold by default */
	unsigned char ns[RDZV_RDMA_NONCE_LEN]; /* the fake server's nonce in its ACC */
	struct rdzv_rdma_msg ping;	       /* the last PING it got, decoded */
	int hangup;			       /* answer a SEND by disconnecting */
	int reg_mr_rc;			       /* forced ibv_reg_mr failure */
	/* the completion channel: get_cq_event says -EINTR this many times first (the event
	 * stays); forced failures of the next get_cq_event, req_notify_cq (after notify_ok
	 * more that succeed), poll_cq (once) */
	int cq_intr, cq_event_rc, notify_rc, notify_ok, poll_rc;
	int npolls;	       /* poll_cq calls */
	uint32_t unreachable4; /* an IPv4 destination whose address never resolves */
	int nresolves, resolve_ms;
	enum ibv_mtu mtu;
	int sgid_index;
	/* recordings */
	unsigned char req_pd[64], acc_pd[64], rej_pd[64], sent[RDZV_RDMA_MSG_LEN];
	int req_pdlen, acc_pdlen, rej_pdlen, nsent, naccepts, nrejects, ndisconnects;
	int nbufregs;  /* registrations of a data buffer (not message slots) */
	size_t pinned; /* bytes of data buffers registered now */
	uint64_t write_raddr;
	uint32_t write_rkey, write_len;
	union gx_sockaddr dst, src, bound;
	struct rdma_cm_id *lid;
};

static struct fake *F; /* the one fake of the running test */

#define SERVER_BUF 0x7f0000001000ull
#define SERVER_RKEY 0xabcd

/* ---- fake objects ------------------------------------------------------ */

static void push_ev(struct rdma_cm_id *id, int type, int status, const void *pd, size_t len)
{
	struct fake_ch *ch = (struct fake_ch *)id->channel;
	struct fake_ev *e = calloc(1, sizeof(*e)), **pp;

	assert_non_null(e);
	assert_true(len <= sizeof(e->pd));
	e->ev.id = id;
	e->ev.event = (enum rdma_cm_event_type)type;
	e->ev.status = status;
	if (len) {
		memcpy(e->pd, pd, len);
		e->ev.param.conn.private_data = e->pd;
		e->ev.param.conn.private_data_len = (uint8_t)len;
	}
	for (pp = &ch->head; *pp; pp = &(*pp)->next)
		;
	*pp = e;
	F->alive[K_EV]++;
	assert_int_equal(write(ch->wfd, "e", 1), 1);
}

static void push_wc(struct fake_cq *cq, enum ibv_wc_opcode op, enum ibv_wc_status st, uint32_t len)
{
	struct ibv_wc *wc;

	assert_true(cq->n < 16);
	wc = &cq->q[cq->n++];
	memset(wc, 0, sizeof(*wc));
	wc->opcode = op;
	wc->status = st;
	wc->byte_len = len;
	if (cq->armed) {
		cq->armed = 0;
		assert_int_equal(write(cq->cc->wfd, "c", 1), 1);
	}
}

static int f_create_event_channel(struct rdma_event_channel **ret)
{
	struct fake_ch *ch = calloc(1, sizeof(*ch));
	int fds[2];

	assert_non_null(ch);
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	ch->ch.fd = fds[0];
	ch->wfd = fds[1];
	F->alive[K_CH]++;
	*ret = &ch->ch;
	return 0;
}

static void f_destroy_event_channel(struct rdma_event_channel *c)
{
	struct fake_ch *ch = (struct fake_ch *)c;
	struct fake_ev *e;

	while ((e = ch->head)) { /* retrieved-never events die with the channel */
		ch->head = e->next;
		free(e);
		F->alive[K_EV]--;
	}
	close(ch->ch.fd);
	close(ch->wfd);
	free(ch);
	F->alive[K_CH]--;
}

static struct rdma_cm_id *new_id(struct rdma_event_channel *ch, void *context)
{
	struct rdma_cm_id *id = calloc(1, sizeof(*id));

	assert_non_null(id);
	id->channel = ch;
	id->context = context;
	id->port_num = 1;
	F->alive[K_ID]++;
	return id;
}

static int f_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **ret, void *context)
{
	*ret = new_id(ch, context);
	return 0;
}

static int f_destroy_id(struct rdma_cm_id *id)
{
	struct fake_ch *ch = (struct fake_ch *)id->channel;
	struct fake_ev **pp = &ch->head, *e;
	char b;

	if (id->qp) /* the QP must be destroyed first */
		F->errors++;
	while ((e = *pp)) { /* the kernel drops the id's queued events */
		if (e->ev.id != id) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		assert_int_equal(read(ch->ch.fd, &b, 1), 1);
		free(e);
		F->alive[K_EV]--;
	}
	free(id);
	F->alive[K_ID]--;
	return 0;
}

static int f_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	memcpy(&F->bound, addr,
	       addr->sa_family == AF_INET6 ? sizeof(F->bound.in6) : sizeof(F->bound.in4));
	id->verbs = &F->verbs;
	return 0;
}

static int f_listen(struct rdma_cm_id *id, int backlog)
{
	assert_true(backlog > 0);
	F->lid = id;
	return 0;
}

static int f_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			  int timeout_ms)
{
	assert_true(timeout_ms > 0);
	memcpy(&F->src, src, src->sa_family == AF_INET6 ? sizeof(F->src.in6) : sizeof(F->src.in4));
	memcpy(&F->dst, dst, dst->sa_family == AF_INET6 ? sizeof(F->dst.in6) : sizeof(F->dst.in4));
	id->verbs = &F->verbs;
	F->nresolves++;
	F->resolve_ms = timeout_ms;
	if (F->unreachable4 && dst->sa_family == AF_INET &&
	    ((struct sockaddr_in *)dst)->sin_addr.s_addr == F->unreachable4) {
		push_ev(id, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH, NULL, 0);
		return 0;
	}
	if (F->addr_ev >= 0)
		push_ev(id, F->addr_ev, F->addr_status, NULL, 0);
	return 0;
}

static int f_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	assert_true(timeout_ms > 0);
	if (F->route_ev >= 0)
		push_ev(id, F->route_ev, F->route_status, NULL, 0);
	return 0;
}

static int f_connect(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	assert_non_null(id->qp); /* rping order: QP before connect */
	F->req_pdlen = p->private_data_len;
	memcpy(F->req_pd, p->private_data, p->private_data_len);
	if (F->conn_ev >= 0)
		push_ev(id, F->conn_ev, F->conn_status, F->conn_pd, F->conn_pdlen);
	return 0;
}

static int f_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	assert_non_null(id->qp);
	F->naccepts++;
	memcpy(((struct fake_qp *)id->qp)->acc, p->private_data, RDZV_RDMA_ACC_LEN);
	F->acc_pdlen = p->private_data_len;
	memcpy(F->acc_pd, p->private_data, p->private_data_len);
	return 0;
}

static int f_reject(struct rdma_cm_id *id, const void *pd, uint8_t len)
{
	(void)id;
	F->nrejects++;
	F->rej_pdlen = len;
	memcpy(F->rej_pd, pd, len < sizeof(F->rej_pd) ? len : sizeof(F->rej_pd));
	return 0;
}

static int f_disconnect(struct rdma_cm_id *id)
{
	F->ndisconnects++;
	push_ev(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	return 0;
}

static int f_get_cm_event(struct rdma_event_channel *c, struct rdma_cm_event **ret)
{
	struct fake_ch *ch = (struct fake_ch *)c;
	struct fake_ev *e = ch->head;
	char b;

	if (!e)
		return -EAGAIN;
	assert_int_equal(read(ch->ch.fd, &b, 1), 1);
	ch->head = e->next;
	*ret = &e->ev;
	return 0;
}

static int f_ack_cm_event(struct rdma_cm_event *ev)
{
	free(ev); /* first member of struct fake_ev */
	F->alive[K_EV]--;
	return 0;
}

static int f_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct fake_qp *qp = calloc(1, sizeof(*qp));

	assert_non_null(qp);
	assert_non_null(pd);
	assert_int_equal(a->qp_type, IBV_QPT_RC);
	qp->cq = (struct fake_cq *)a->send_cq;
	qp->id = id;
	qp->qp.context = &F->verbs;
	id->qp = &qp->qp;
	F->alive[K_QP]++;
	return 0;
}

static void f_destroy_qp(struct rdma_cm_id *id)
{
	free(id->qp);
	id->qp = NULL;
	F->alive[K_QP]--;
}

static int f_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		      struct ibv_qp_init_attr *init)
{
	(void)qp;
	(void)init;
	assert_true(mask & IBV_QP_AV);
	attr->ah_attr.is_global = 1;
	attr->ah_attr.grh.sgid_index = (uint8_t)F->sgid_index;
	return 0;
}

static int f_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	assert_ptr_equal(ctx, &F->verbs);
	assert_int_equal(port, 1);
	attr->active_mtu = F->mtu;
	return 0;
}

static int f_alloc_pd(struct ibv_context *ctx, struct ibv_pd **ret)
{
	*ret = calloc(1, sizeof(**ret));
	assert_non_null(*ret);
	(*ret)->context = ctx;
	F->alive[K_PD]++;
	return 0;
}

static int f_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	F->alive[K_PD]--;
	return 0;
}

static int f_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access, struct ibv_mr **ret)
{
	(void)access;
	if (F->reg_mr_rc && len > RDZV_RDMA_MSG_LEN * 2)
		return F->reg_mr_rc;
	*ret = calloc(1, sizeof(**ret));
	assert_non_null(*ret);
	(*ret)->pd = pd;
	(*ret)->addr = addr;
	(*ret)->length = len;
	(*ret)->lkey = ++F->keys;
	(*ret)->rkey = 0x1000 + F->keys;
	F->alive[K_MR]++;
	if (len > RDZV_RDMA_MSG_LEN * 2) {
		F->nbufregs++;
		F->pinned += len;
	}
	return 0;
}

static int f_dereg_mr(struct ibv_mr *mr)
{
	if (mr->length > RDZV_RDMA_MSG_LEN * 2)
		F->pinned -= mr->length;
	free(mr);
	F->alive[K_MR]--;
	return 0;
}

static int f_create_comp_channel(struct ibv_context *ctx, struct ibv_comp_channel **ret)
{
	struct fake_cc *cc = calloc(1, sizeof(*cc));
	int fds[2];

	assert_non_null(cc);
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	cc->cc.fd = fds[0];
	cc->cc.context = ctx;
	cc->wfd = fds[1];
	F->alive[K_CC]++;
	*ret = &cc->cc;
	return 0;
}

static int f_destroy_comp_channel(struct ibv_comp_channel *c)
{
	struct fake_cc *cc = (struct fake_cc *)c;

	close(cc->cc.fd);
	close(cc->wfd);
	free(cc);
	F->alive[K_CC]--;
	return 0;
}

static int f_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *c,
		       struct ibv_cq **ret)
{
	struct fake_cq *cq = calloc(1, sizeof(*cq));

	assert_non_null(cq);
	assert_true(cqe > 0);
	cq->cc = (struct fake_cc *)c;
	cq->cc->cq = cq;
	cq->cq.context = ctx;
	cq->cq.channel = c;
	F->alive[K_CQ]++;
	*ret = &cq->cq;
	return 0;
}

static int f_destroy_cq(struct ibv_cq *cq)
{
	free(cq);
	F->alive[K_CQ]--;
	return 0;
}

/* A forced failure, once. */
static int once(int *rc)
{
	int v = *rc;

	*rc = 0;
	return v;
}

static int f_req_notify_cq(struct ibv_cq *cq)
{
	if (F->notify_rc && F->notify_ok-- <= 0)
		return once(&F->notify_rc);
	((struct fake_cq *)cq)->armed = 1;
	return 0;
}

static int f_get_cq_event(struct ibv_comp_channel *c, struct ibv_cq **cq)
{
	struct fake_cc *cc = (struct fake_cc *)c;
	char b;

	if (F->cq_intr > 0) { /* a signal during the read: the event is still there */
		F->cq_intr--;
		return -EINTR;
	}
	if (F->cq_event_rc)
		return once(&F->cq_event_rc);
	if (read(cc->cc.fd, &b, 1) != 1)
		return -EAGAIN;
	*cq = &cc->cq->cq;
	return 0;
}

static void f_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	(void)cq;
	assert_int_equal(n, 1);
}

/* The fake peer's answer to a PING: a PONG in the oldest posted recv. */
static void deliver(struct fake_qp *qp, const unsigned char *msg, uint32_t len)
{
	assert_true(qp->nrecv > 0);
	memcpy((void *)(uintptr_t)qp->raddr[0], msg, len);
	memmove(qp->raddr, qp->raddr + 1, sizeof(qp->raddr[0]) * 3);
	qp->nrecv--;
	push_wc(qp->cq, IBV_WC_RECV, IBV_WC_SUCCESS, len);
}

static int f_post_send(struct ibv_qp *q, struct ibv_send_wr *wr)
{
	struct fake_qp *qp = (struct fake_qp *)q;
	struct rdzv_rdma_msg m;
	unsigned char pong[RDZV_RDMA_MSG_LEN];

	assert_int_equal(wr->num_sge, 1);
	if (wr->opcode == IBV_WR_RDMA_WRITE) {
		F->write_raddr = wr->wr.rdma.remote_addr;
		F->write_rkey = wr->wr.rdma.rkey;
		F->write_len = wr->sg_list->length;
		push_wc(qp->cq, IBV_WC_RDMA_WRITE, F->write_status, 0);
		return 0;
	}
	assert_int_equal(wr->opcode, IBV_WR_SEND);
	assert_int_equal(wr->sg_list->length, RDZV_RDMA_MSG_LEN);
	memcpy(F->sent, (void *)(uintptr_t)wr->sg_list->addr, RDZV_RDMA_MSG_LEN);
	F->nsent++;
	push_wc(qp->cq, IBV_WC_SEND, F->send_status, 0);
	if (F->hangup)
		push_ev(qp->id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	if (F->send_status != IBV_WC_SUCCESS || !F->reply)
		return 0;
	assert_int_equal(rdzv_rdma_dec_msg(&F->auth, F->ns, F->sent, sizeof(F->sent), &m), 0);
	F->ping = m;
	m.type = RDZV_RDMA_T_PONG;
	m.nonce[0] ^= (unsigned char)F->reply_bad;
	m.status = F->pong_status;
	m.rkey = SERVER_RKEY;
	m.addr = SERVER_BUF;
	if (F->reply_stranger) {
		struct rdzv_rdma_auth other = F->auth;

		other.key[0] ^= 1;
		rdzv_rdma_enc_msg(&other, F->ns, &m, pong);
	} else {
		rdzv_rdma_enc_msg(&F->auth, F->ns, &m, pong);
	}
	deliver(qp, pong, sizeof(pong));
	return 0;
}

static int f_post_recv(struct ibv_qp *q, struct ibv_recv_wr *wr)
{
	struct fake_qp *qp = (struct fake_qp *)q;

	if (qp->nrecv >= 4)
		return -ENOMEM;
	assert_true(wr->sg_list->length >= RDZV_RDMA_MSG_LEN);
	qp->raddr[qp->nrecv++] = wr->sg_list->addr;
	return 0;
}

static int f_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *wc)
{
	struct fake_cq *cq = (struct fake_cq *)c;

	F->npolls++;
	if (F->poll_rc)
		return once(&F->poll_rc);
	if (cq->n == 0 || n < 1)
		return 0;
	*wc = cq->q[0];
	memmove(cq->q, cq->q + 1, sizeof(cq->q[0]) * (size_t)--cq->n);
	return 1;
}

static const struct rdzv_rdma_cm_ops fake_ops = {
    .create_event_channel = f_create_event_channel,
    .destroy_event_channel = f_destroy_event_channel,
    .create_id = f_create_id,
    .destroy_id = f_destroy_id,
    .bind_addr = f_bind_addr,
    .listen = f_listen,
    .resolve_addr = f_resolve_addr,
    .resolve_route = f_resolve_route,
    .connect = f_connect,
    .accept = f_accept,
    .reject = f_reject,
    .disconnect = f_disconnect,
    .get_cm_event = f_get_cm_event,
    .ack_cm_event = f_ack_cm_event,
    .create_qp = f_create_qp,
    .destroy_qp = f_destroy_qp,
    .query_qp = f_query_qp,
    .query_port = f_query_port,
    .alloc_pd = f_alloc_pd,
    .dealloc_pd = f_dealloc_pd,
    .reg_mr = f_reg_mr,
    .dereg_mr = f_dereg_mr,
    .create_comp_channel = f_create_comp_channel,
    .destroy_comp_channel = f_destroy_comp_channel,
    .create_cq = f_create_cq,
    .destroy_cq = f_destroy_cq,
    .req_notify_cq = f_req_notify_cq,
    .get_cq_event = f_get_cq_event,
    .ack_cq_events = f_ack_cq_events,
    .post_send = f_post_send,
    .post_recv = f_post_recv,
    .poll_cq = f_poll_cq,
};

/* ---- fixtures ------------------------------------------------------------ */

/* A fresh context's key: no token, job "". */
static void default_key(struct rdzv_rdma_auth *au)
{
	struct rdzv_rdma_ctx *k = NULL;

	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, 0, &k), 0);
	*au = k->auth;
	rdzv_rdma_ctx_free(k);
}

static void server_accepts(uint32_t mtu, uint32_t max_write)
{
	struct rdzv_rdma_acc a = {.mtu = mtu, .max_write = max_write};

	memset(F->ns, 0x5a, sizeof(F->ns));
	memcpy(a.nonce, F->ns, sizeof(a.nonce));
	rdzv_rdma_enc_acc(&a, F->conn_pd);
	/* IB pads the REP's private data to its full size: trailing zeros */
	F->conn_pdlen = 196;
}

static int setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->addr_ev = RDMA_CM_EVENT_ADDR_RESOLVED;
	f->route_ev = RDMA_CM_EVENT_ROUTE_RESOLVED;
	f->conn_ev = RDMA_CM_EVENT_ESTABLISHED;
	f->reply = 1;
	f->mtu = IBV_MTU_4096;
	f->sgid_index = 3;
	F = f;
	default_key(&f->auth);
	server_accepts(1024, 1u << 20);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fake *f = *state;
	int k;

	for (k = 0; k < K_N; k++)
		if (f->alive[k] != 0)
			fail_msg("fake object kind %d: %d still alive", k, f->alive[k]);
	assert_int_equal(f->errors, 0);
	free(f);
	F = NULL;
	return 0;
}

static void peers(struct rdzv_peer *self, struct rdzv_peer *peer, int v6)
{
	memset(self, 0, sizeof(*self));
	memset(peer, 0, sizeof(*peer));
	snprintf(self->name, sizeof(self->name), "job-worker-1");
	snprintf(peer->name, sizeof(peer->name), "job-master-0");
	if (v6) {
		snprintf(self->addr6, sizeof(self->addr6), "fd00::2");
		snprintf(peer->addr6, sizeof(peer->addr6), "fd00::1");
	} else {
		snprintf(self->addr4, sizeof(self->addr4), "10.0.0.2");
		snprintf(peer->addr4, sizeof(peer->addr4), "10.0.0.1");
	}
}

/* The probe run to its end in a loop of its own (the tests wait for nothing else). */
struct run_wait {
	struct gx_ev *ev;
	struct rdzv_rdma_probe *out;
	int rc;
	char why[256];
};

static void run_done(void *arg, const struct rdzv_rdma_probe *out)
{
	struct run_wait *w = arg;

	*w->out = *out;
	gx_ev_stop(w->ev, 0);
}

static int probe_run(struct rdzv_rdma_ctx *c, const struct rdzv_peer *self,
		     const struct rdzv_peer *peer, uint16_t port, size_t size, int64_t deadline_ms,
		     struct rdzv_rdma_probe *out)
{
	struct run_wait w = {.out = out};
	int rc;

	memset(out, 0, sizeof(*out));
	assert_int_equal(gx_ev_new(&w.ev), 0);
	rc =
	    rdzv_rdma_probe_start(c, w.ev, self, peer, port, size, deadline_ms, run_done, &w, NULL);
	if (rc == 0)
		gx_ev_run(w.ev);
	gx_ev_free(w.ev);
	return rc;
}

static void check_done(void *arg, int rc, const char *why)
{
	struct run_wait *w = arg;

	w->rc = rc;
	snprintf(w->why, sizeof(w->why), "%s", why);
	gx_ev_stop(w->ev, 0);
}

/* ops->check() run to its answer in a loop of its own; why gets its line. */
static int check_run(const struct rdzv_rdma_ops *ops, const struct rdzv_peer *self,
		     const struct rdzv_peer *peer, uint16_t port, int64_t deadline_ms, char *why)
{
	struct run_wait w = {.rc = 1};
	int rc;

	assert_int_equal(gx_ev_new(&w.ev), 0);
	rc = ops->check(ops->arg, w.ev, self, peer, port, deadline_ms, check_done, &w);
	if (rc == 0)
		gx_ev_run(w.ev);
	gx_ev_free(w.ev);
	snprintf(why, 256, "%s", w.why);
	return rc < 0 ? rc : w.rc;
}

/* One client probe against the scripted fake. */
static void probe(size_t size, int64_t budget_ms, struct rdzv_rdma_probe *out)
{
	struct rdzv_rdma_ctx *c = NULL;
	struct rdzv_peer self, peer;

	peers(&self, &peer, 0);
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, 0, &c), 0);
	assert_int_equal(probe_run(c, &self, &peer, 29410, size, gx_now_ms() + budget_ms, out), 0);
	rdzv_rdma_ctx_free(c);
}

static void expect_fail(const struct rdzv_rdma_probe *p, const char *step, const char *why)
{
	assert_int_equal(p->ok, 0);
	assert_non_null(p->step);
	assert_string_equal(p->step, step);
	if (strcmp(p->why, why) != 0)
		fail_msg("why: got \"%s\", want \"%s\"", p->why, why);
}

/* ---- codec --------------------------------------------------------------- */

static void test_codec(void **state)
{
	struct rdzv_rdma_acc a = {.mtu = 4096, .max_write = 65536, .nonce = {7, 8, 9}};
	struct rdzv_rdma_acc b;
	struct rdzv_rdma_req r;
	struct rdzv_rdma_auth au, other;
	struct rdzv_rdma_msg m = {.type = RDZV_RDMA_T_PING, .rank = 3, .write_size = 4096}, d;
	unsigned char buf[RDZV_RDMA_ACC_LEN], msg[RDZV_RDMA_MSG_LEN], ns[RDZV_RDMA_NONCE_LEN] = {1};
	uint32_t why = 0;
	unsigned v = 0;
	size_t i;

	(void)state;
	rdzv_rdma_enc_acc(&a, buf);
	assert_int_equal(rdzv_rdma_dec_acc(buf, sizeof(buf), &b), 0);
	assert_int_equal(b.mtu, 4096);
	assert_int_equal(b.max_write, 65536);
	assert_memory_equal(b.nonce, a.nonce, sizeof(a.nonce));
	/* PING / PONG: MAC'd under the key for the server's nonce; any flipped bit, another
	 * key, another nonce or another job is GX_EMAC and nothing is read */
	default_key(&au);
	memset(m.nonce, 0x33, sizeof(m.nonce));
	rdzv_rdma_enc_msg(&au, ns, &m, msg);
	assert_int_equal(rdzv_rdma_dec_msg(&au, ns, msg, sizeof(msg), &d), 0);
	assert_int_equal(d.type, RDZV_RDMA_T_PING);
	assert_int_equal(d.rank, 3);
	assert_int_equal(d.write_size, 4096);
	assert_memory_equal(d.nonce, m.nonce, sizeof(m.nonce));
	for (i = 6; i < sizeof(msg); i++) {
		msg[i] ^= 0x10;
		assert_int_equal(rdzv_rdma_dec_msg(&au, ns, msg, sizeof(msg), &d), GX_EMAC);
		msg[i] ^= 0x10;
	}
	other = au;
	other.key[31] ^= 1;
	assert_int_equal(rdzv_rdma_dec_msg(&other, ns, msg, sizeof(msg), &d), GX_EMAC);
	other = au;
	snprintf(other.job, sizeof(other.job), "another-job");
	assert_int_equal(rdzv_rdma_dec_msg(&other, ns, msg, sizeof(msg), &d), GX_EMAC);
	ns[0] ^= 1;
	assert_int_equal(rdzv_rdma_dec_msg(&au, ns, msg, sizeof(msg), &d), GX_EMAC);
	ns[0] ^= 1;
	msg[5] = RDZV_RDMA_T_PONG; /* a PING reflected as a PONG: the type is under the MAC */
	assert_int_equal(rdzv_rdma_dec_msg(&au, ns, msg, sizeof(msg), &d), GX_EMAC);
	assert_int_equal(rdzv_rdma_dec_msg(&au, ns, msg, sizeof(msg) - 1, &d), GX_EPROTO);
	msg[4] = 1; /* wire v1 */
	assert_int_equal(rdzv_rdma_dec_msg(&au, ns, msg, sizeof(msg), &d), GX_EVERSION);
	/* every truncation fails, so does a REQ read as an ACC */
	for (size_t n = 0; n < sizeof(buf); n++)
		assert_int_equal(rdzv_rdma_dec_acc(buf, n, &b), GX_EPROTO);
	assert_int_equal(rdzv_rdma_dec_acc(NULL, 64, &b), GX_EPROTO);
	assert_int_equal(rdzv_rdma_dec_req(buf, sizeof(buf), &r), GX_EPROTO);
	buf[4] = 1; /* another version */
	assert_int_equal(rdzv_rdma_dec_acc(buf, sizeof(buf), &b), GX_EVERSION);
	buf[4] = RDZV_RDMA_VERSION;
	buf[0] ^= 1; /* bad magic */
	assert_int_equal(rdzv_rdma_dec_acc(buf, sizeof(buf), &b), GX_EPROTO);
	a.mtu = 1000; /* not an MTU */
	rdzv_rdma_enc_acc(&a, buf);
	assert_int_equal(rdzv_rdma_dec_acc(buf, sizeof(buf), &b), GX_EPROTO);
	a.mtu = 1024;
	a.max_write = 0xffffffffu; /* a size nobody should trust */
	rdzv_rdma_enc_acc(&a, buf);
	assert_int_equal(rdzv_rdma_dec_acc(buf, sizeof(buf), &b), GX_EPROTO);
	rdzv_rdma_enc_rej(RDZV_RDMA_REJ_BUSY, buf);
	assert_int_equal(rdzv_rdma_dec_rej(buf, RDZV_RDMA_REJ_LEN, &why, &v), 0);
	assert_int_equal(why, RDZV_RDMA_REJ_BUSY);
	assert_int_equal(v, RDZV_RDMA_VERSION);
	buf[4] = 1; /* an older server's refusal still reads, with its version */
	assert_int_equal(rdzv_rdma_dec_rej(buf, RDZV_RDMA_REJ_LEN, &why, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(rdzv_rdma_mtu_bytes(IBV_MTU_256), 256);
	assert_int_equal(rdzv_rdma_mtu_bytes(IBV_MTU_4096), 4096);
	assert_int_equal(rdzv_rdma_mtu_bytes((enum ibv_mtu)9), 0);
	assert_string_equal(rdzv_rdma_wc_str(IBV_WC_RETRY_EXC_ERR), "IBV_WC_RETRY_EXC_ERR");
	assert_non_null(rdzv_rdma_wc_str((enum ibv_wc_status)999));
}

/* ---- client -------------------------------------------------------------- */

static void test_client_ok(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;
	struct rdzv_rdma_req r;
	char a[64];

	probe(0, 2000, &p);
	assert_int_equal(p.ok, 1);
	assert_null(p.step);
	assert_string_equal(p.why, "");
	assert_true(p.connect_us >= 0 && p.sendrecv_us >= 0);
	assert_int_equal(p.write_us, 0);
	assert_int_equal(p.gid_index, 3);
	assert_int_equal(p.mtu, 4096);
	assert_int_equal(p.peer_mtu, 1024);
	/* the route went from our secondary address to the peer's, on the port */
	assert_int_equal(f->dst.sa.sa_family, AF_INET);
	assert_string_equal(inet_ntop(AF_INET, &f->dst.in4.sin_addr, a, sizeof(a)), "10.0.0.1");
	assert_int_equal(ntohs(f->dst.in4.sin_port), 29410);
	assert_string_equal(inet_ntop(AF_INET, &f->src.in4.sin_addr, a, sizeof(a)), "10.0.0.2");
	/* versioned connect data asking for no write; one PING sent; hung up */
	assert_int_equal(f->req_pdlen, RDZV_RDMA_REQ_LEN);
	assert_int_equal(rdzv_rdma_dec_req(f->req_pd, (size_t)f->req_pdlen, &r), 0);
	assert_int_equal(r.write_size, 0);
	assert_int_equal(f->nsent, 1);
	assert_int_equal(f->ndisconnects, 1);
	assert_int_equal(f->write_len, 0);
}

static void test_client_write(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;
	struct rdzv_rdma_req r;

	probe(65536, 2000, &p);
	assert_int_equal(p.ok, 1);
	assert_int_equal(p.size, 65536);
	assert_true(p.write_us >= 0);
	assert_int_equal(rdzv_rdma_dec_req(f->req_pd, (size_t)f->req_pdlen, &r), 0);
	assert_int_equal(r.write_size, 65536);
	/* the WRITE went where the accept's private data said */
	assert_true(f->write_raddr == SERVER_BUF);
	assert_int_equal(f->write_rkey, SERVER_RKEY);
	assert_int_equal(f->write_len, 65536);
}

static void test_client_v6(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_ctx *c = NULL;
	struct rdzv_peer self, peer;
	struct rdzv_rdma_probe p;
	char a[64];

	peers(&self, &peer, 1);
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, 0, &c), 0);
	assert_int_equal(probe_run(c, &self, &peer, 4791, 0, gx_now_ms() + 2000, &p), 0);
	rdzv_rdma_ctx_free(c);
	assert_int_equal(p.ok, 1);
	assert_int_equal(f->dst.sa.sa_family, AF_INET6);
	assert_string_equal(inet_ntop(AF_INET6, &f->dst.in6.sin6_addr, a, sizeof(a)), "fd00::1");
	assert_int_equal(ntohs(f->dst.in6.sin6_port), 4791);
	/* no common family: nothing is created */
	snprintf(self.addr4, sizeof(self.addr4), "10.0.0.2");
	self.addr6[0] = '\0';
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, 0, &c), 0);
	assert_int_equal(probe_run(c, &self, &peer, 4791, 0, gx_now_ms() + 2000, &p), 0);
	rdzv_rdma_ctx_free(c);
	expect_fail(&p, "resolve_addr", "resolve_addr: no common address family with job-master-0");
}

static void test_client_addr_error(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;

	f->addr_ev = RDMA_CM_EVENT_ADDR_ERROR;
	f->addr_status = -EHOSTUNREACH;
	probe(0, 2000, &p);
	expect_fail(&p, "resolve_addr", "resolve_addr: No route to host");
	assert_int_equal(f->req_pdlen, 0); /* never got to connect */
}

static void test_client_route_error(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;

	f->route_ev = RDMA_CM_EVENT_ROUTE_ERROR;
	f->route_status = -ETIMEDOUT;
	probe(0, 2000, &p);
	expect_fail(&p, "resolve_route", "resolve_route: timed out");
}

static void test_client_rejected(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;

	f->conn_ev = RDMA_CM_EVENT_REJECTED;
	f->conn_status = 28; /* consumer defined: our REJ data */
	rdzv_rdma_enc_rej(RDZV_RDMA_REJ_BUSY, f->conn_pd);
	f->conn_pdlen = 148;
	probe(0, 2000, &p);
	expect_fail(&p, "connect", "connect: rejected by 10.0.0.1 (server busy)");
	assert_int_equal(f->ndisconnects, 0);
	/* nobody listening on that port: the CM's own reject, no data */
	f->conn_status = 8;
	f->conn_pdlen = 0;
	probe(0, 2000, &p);
	expect_fail(&p, "connect",
		    "connect: rejected by 10.0.0.1 (no RDMA-CM listener on port 29410)");
	/* garbage reject data is not believed */
	memset(f->conn_pd, 0xff, 148);
	f->conn_pdlen = 148;
	f->conn_status = 28;
	probe(0, 2000, &p);
	expect_fail(&p, "connect", "connect: rejected by 10.0.0.1 (status 28)");
}

static void test_client_unreachable(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;

	f->conn_ev = RDMA_CM_EVENT_UNREACHABLE;
	f->conn_status = -ETIMEDOUT;
	f->conn_pdlen = 0;
	probe(0, 2000, &p);
	expect_fail(&p, "connect", "connect: 10.0.0.1 unreachable (timed out)");
}

static void test_client_completion_error(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;

	f->send_status = IBV_WC_RETRY_EXC_ERR;
	probe(0, 2000, &p);
	expect_fail(&p, "completion", "completion: IBV_WC_RETRY_EXC_ERR on recv");
	assert_int_equal(f->ndisconnects, 1); /* connected, so hung up */
	f->send_status = IBV_WC_SUCCESS;
	f->write_status = IBV_WC_REM_ACCESS_ERR;
	probe(4096, 2000, &p);
	expect_fail(&p, "completion", "completion: IBV_WC_REM_ACCESS_ERR on write");
}

/* A verbs call of the completion channel that fails ends the probe, named. */
static void test_client_completion_calls(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;

	f->poll_rc = -EIO;
	probe(0, 2000, &p);
	expect_fail(&p, "completion", "completion: ibv_poll_cq: Input/output error");
	assert_int_equal(f->ndisconnects, 1);
	f->notify_rc = -EINVAL;
	f->notify_ok = 1; /* the first arms the new CQ (setup), the next re-arms it */
	probe(0, 2000, &p);
	expect_fail(&p, "completion", "completion: ibv_req_notify_cq: Invalid argument");
	f->cq_event_rc = -EBADF;
	probe(0, 2000, &p);
	expect_fail(&p, "completion", "completion: ibv_get_cq_event: Bad file descriptor");
	/* interrupted reads of the channel are no failure: the event is taken next time */
	f->cq_intr = 3;
	probe(0, 2000, &p);
	assert_int_equal(p.ok, 1);
	assert_int_equal(f->cq_intr, 0);
}

struct drained {
	enum ibv_wc_opcode op[8];
	int n, stop_at, stop_rc;
};

static int drained_wc(void *arg, const struct ibv_wc *wc)
{
	struct drained *d = arg;

	d->op[d->n++] = wc->opcode;
	return d->n == d->stop_at ? d->stop_rc : 0;
}

/* The helper itself: one event taken, acked and re-armed, then the queue handed out in order
 * until the handler says stop; what failed is named; no event is no failure. */
static void test_cq_drain(void **state)
{
	struct fake *f = *state;
	struct ibv_comp_channel *cc = NULL;
	struct ibv_cq *cq = NULL;
	struct rdzv_rdma_qp q;
	struct drained d = {.stop_at = -1};
	const char *what = "x";
	struct fake_cq *fcq;

	assert_int_equal(fake_ops.create_comp_channel(&f->verbs, &cc), 0);
	assert_int_equal(rdzv_rdma_nonblock(cc->fd), 0); /* as rdzv_rdma_qp_setup does */
	assert_int_equal(fake_ops.create_cq(&f->verbs, 8, cc, &cq), 0);
	memset(&q, 0, sizeof(q));
	q.cc = cc;
	q.cq = cq;
	fcq = (struct fake_cq *)cq;
	fcq->armed = 1;
	/* nothing there: 0, nothing polled */
	assert_int_equal(rdzv_rdma_cq_drain(&fake_ops, &q, drained_wc, &d, &what), 0);
	assert_null(what);
	assert_int_equal(f->npolls, 0);
	/* three completions: all handed out, in order, and the CQ re-armed */
	push_wc(fcq, IBV_WC_SEND, IBV_WC_SUCCESS, 0);
	push_wc(fcq, IBV_WC_RECV, IBV_WC_SUCCESS, 72);
	push_wc(fcq, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS, 0);
	assert_int_equal(fcq->armed, 0);
	f->cq_intr = 1;
	assert_int_equal(rdzv_rdma_cq_drain(&fake_ops, &q, drained_wc, &d, &what), 0);
	assert_int_equal(d.n, 0); /* interrupted: the event waits */
	assert_int_equal(rdzv_rdma_cq_drain(&fake_ops, &q, drained_wc, &d, &what), 0);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.op[0], IBV_WC_SEND);
	assert_int_equal(d.op[1], IBV_WC_RECV);
	assert_int_equal(d.op[2], IBV_WC_RDMA_WRITE);
	assert_int_equal(fcq->armed, 1);
	/* the handler stops at the second: its value, the third stays queued */
	d = (struct drained){.stop_at = 2, .stop_rc = -EPROTO};
	push_wc(fcq, IBV_WC_SEND, IBV_WC_SUCCESS, 0);
	push_wc(fcq, IBV_WC_RECV, IBV_WC_SUCCESS, 72);
	push_wc(fcq, IBV_WC_RECV, IBV_WC_SUCCESS, 72);
	assert_int_equal(rdzv_rdma_cq_drain(&fake_ops, &q, drained_wc, &d, &what), -EPROTO);
	assert_null(what);
	assert_int_equal(d.n, 2);
	assert_int_equal(fcq->n, 1);
	/* each verbs call's failure, named */
	d = (struct drained){.stop_at = -1};
	push_wc(fcq, IBV_WC_SEND, IBV_WC_SUCCESS, 0); /* re-raises the event */
	f->cq_event_rc = -EBADF;
	assert_int_equal(rdzv_rdma_cq_drain(&fake_ops, &q, drained_wc, &d, &what), -EBADF);
	assert_string_equal(what, "ibv_get_cq_event");
	f->notify_rc = -EINVAL;
	assert_int_equal(rdzv_rdma_cq_drain(&fake_ops, &q, drained_wc, &d, &what), -EINVAL);
	assert_string_equal(what, "ibv_req_notify_cq");
	assert_int_equal(d.n, 0);
	push_wc(fcq, IBV_WC_SEND, IBV_WC_SUCCESS, 0);
	fcq->armed = 1;
	push_wc(fcq, IBV_WC_SEND, IBV_WC_SUCCESS, 0);
	f->poll_rc = -EIO;
	assert_int_equal(rdzv_rdma_cq_drain(&fake_ops, &q, drained_wc, &d, &what), -EIO);
	assert_string_equal(what, "ibv_poll_cq");
	assert_int_equal(fake_ops.destroy_cq(cq), 0);
	assert_int_equal(fake_ops.destroy_comp_channel(cc), 0);
}

static void test_client_deadline(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;

	/* 1 s, not less: the steps before the one that hangs must not run out of it under
	 * valgrind on a loaded machine (it would name another step) */
	f->route_ev = -1; /* the route never resolves */
	probe(0, 1000, &p);
	expect_fail(&p, "resolve_route", "resolve_route: timed out");
	f->route_ev = RDMA_CM_EVENT_ROUTE_RESOLVED;
	f->reply = 0; /* connected, but nobody answers the PING */
	probe(0, 1000, &p);
	expect_fail(&p, "recv", "recv: timed out");
	f->hangup = 1; /* the server hangs up instead of answering */
	probe(0, 2000, &p);
	expect_fail(&p, "recv", "recv: disconnected by 10.0.0.1");
	f->hangup = 0;
	f->addr_ev = -1;
	probe(0, 0, &p); /* deadline already passed */
	expect_fail(&p, "resolve_addr", "resolve_addr: timed out");
}

static void test_client_hostile_accept(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;

	f->conn_pd[0] ^= 0xff; /* bad magic */
	probe(0, 2000, &p);
	expect_fail(&p, "connect",
		    "connect: malformed accept data from 10.0.0.1 (malformed message)");
	assert_int_equal(f->ndisconnects, 1);
	server_accepts(1024, 1u << 20);
	f->conn_pdlen = RDZV_RDMA_ACC_LEN - 1; /* short */
	probe(0, 2000, &p);
	assert_int_equal(p.ok, 0);
	assert_string_equal(p.step, "connect");
	server_accepts(1024, 0xffffffffu); /* a size nobody should trust */
	probe(0, 2000, &p);
	assert_int_equal(p.ok, 0);
	assert_string_equal(p.step, "connect");
	server_accepts(1024, 4096); /* smaller than what we asked for */
	probe(8192, 2000, &p);
	expect_fail(&p, "write", "write: 10.0.0.1 accepts at most 4096 bytes");
	assert_int_equal(f->write_len, 0);
	server_accepts(1024, 4096);
	f->reply_bad = 1; /* a PONG that does not echo our nonce */
	probe(0, 2000, &p);
	expect_fail(&p, "recv", "recv: bad reply from 10.0.0.1");
}

/* Wire v2: the PING proves our rank under the job's key; a PONG without it is refused. */
static void test_client_proof(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_ctx *c = NULL;
	struct rdzv_peer self, peer;
	struct rdzv_rdma_probe p;
	uint32_t size = 65536;

	peers(&self, &peer, 0);
	self.index = 5;
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, 0, &c), 0);
	assert_int_equal(probe_run(c, &self, &peer, 1, size, gx_now_ms() + 2000, &p), 0);
	assert_int_equal(p.ok, 1);
	assert_int_equal(f->ping.rank, 5); /* the fake server verified the MAC to decode it */
	assert_int_equal(f->ping.write_size, size);
	/* a server that does not hold the job's key (a stranger's, another job's) */
	f->reply_stranger = 1;
	assert_int_equal(probe_run(c, &self, &peer, 1, size, gx_now_ms() + 2000, &p), 0);
	expect_fail(&p, "recv",
		    "recv: 10.0.0.1 answered without the job's key (another job's server, or a "
		    "different token)");
	assert_int_equal(f->write_len, size); /* only the first probe wrote */
	f->write_len = 0;
	f->reply_stranger = 0;
	/* our key differs from the server's: the fake cannot read the PING at all */
	assert_int_equal(
	    rdzv_rdma_set_key(c, (const unsigned char *)"a-token-of-another-job-xx", 25, "job"), 0);
	assert_int_not_equal(memcmp(c->auth.key, f->auth.key, sizeof(f->auth.key)), 0);
	rdzv_rdma_ctx_free(c);
	/* the server is at its pinned-memory cap: said so, nothing written */
	f->pong_status = RDZV_RDMA_ST_PINNED;
	probe(size, 2000, &p);
	expect_fail(&p, "write",
		    "write: 10.0.0.1 has no room for 65536 bytes under its pinned-memory cap "
		    "(512 MiB)");
	assert_int_equal(f->write_len, 0);
	f->pong_status = RDZV_RDMA_ST_OK;
	/* a wire v1 server refuses our REQ (its REJ says v1), and ours says v2 */
	f->conn_ev = RDMA_CM_EVENT_REJECTED;
	f->conn_status = 28;
	rdzv_rdma_enc_rej(RDZV_RDMA_REJ_BADREQ, f->conn_pd);
	f->conn_pd[4] = 1;
	f->conn_pdlen = 148;
	probe(0, 2000, &p);
	expect_fail(&p, "connect",
		    "connect: rejected by 10.0.0.1 (RDMA wire version mismatch: it speaks v1, this "
		    "gxboot v2; run one gxboot version in the job)");
	rdzv_rdma_enc_rej(RDZV_RDMA_REJ_VERSION, f->conn_pd);
	probe(0, 2000, &p);
	expect_fail(&p, "connect",
		    "connect: rejected by 10.0.0.1 (RDMA wire version mismatch: it does not speak "
		    "this gxboot's v2; run one gxboot version in the job)");
}

static void test_client_memlock(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_probe p;

	f->reg_mr_rc = -ENOMEM;
	probe(65536, 2000, &p);
	assert_int_equal(p.ok, 0);
	assert_string_equal(p.step, "setup");
	assert_non_null(strstr(p.why, "setup: ibv_reg_mr(65536 bytes): "));
	assert_int_equal(f->req_pdlen, 0);
}

/* The loop-driven client: done() comes from the loop, once, never from start. */
struct async_seen {
	int calls;
	struct rdzv_rdma_probe out;
};

static void async_done(void *arg, const struct rdzv_rdma_probe *out)
{
	struct async_seen *a = arg;

	a->calls++;
	a->out = *out;
}

static void test_client_in_loop(void **state)
{
	struct rdzv_rdma_ctx *c = NULL;
	struct rdzv_peer self, peer;
	struct rdzv_rdma_cli *cl = NULL;
	struct async_seen a;
	struct gx_ev *ev = NULL;

	(void)state;
	peers(&self, &peer, 0);
	assert_int_equal(gx_ev_new(&ev), 0);
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, 4096, &c), 0);
	/* two probes at once in one loop: both finish, each once */
	memset(&a, 0, sizeof(a));
	assert_int_equal(rdzv_rdma_probe_start(c, ev, &self, &peer, 29410, 4096, gx_now_ms() + 2000,
					       async_done, &a, &cl),
			 0);
	assert_non_null(cl);
	assert_int_equal(rdzv_rdma_probe_start(c, ev, &self, &peer, 29410, 0, gx_now_ms() + 2000,
					       async_done, &a, NULL),
			 0);
	assert_int_equal(a.calls, 0);
	for (int i = 0; i < 100 && a.calls < 2; i++)
		gx_ev_run_until(ev, gx_now_ms() + 20);
	assert_int_equal(a.calls, 2);
	assert_int_equal(a.out.ok, 1);
	/* a failure found in start is reported from the loop */
	self.addr4[0] = '\0';
	memset(&a, 0, sizeof(a));
	assert_int_equal(rdzv_rdma_probe_start(c, ev, &self, &peer, 29410, 0, gx_now_ms() + 2000,
					       async_done, &a, NULL),
			 0);
	assert_int_equal(a.calls, 0);
	gx_ev_run_until(ev, gx_now_ms() + 50);
	assert_int_equal(a.calls, 1);
	assert_string_equal(a.out.step, "resolve_addr");
	/* cancelled: done never comes, nothing stays alive (teardown counts) */
	peers(&self, &peer, 0);
	memset(&a, 0, sizeof(a));
	assert_int_equal(rdzv_rdma_probe_start(c, ev, &self, &peer, 29410, 0, gx_now_ms() + 2000,
					       async_done, &a, &cl),
			 0);
	rdzv_rdma_probe_cancel(cl);
	gx_ev_run_until(ev, gx_now_ms() + 50);
	assert_int_equal(a.calls, 0);
	assert_int_equal(rdzv_rdma_probe_start(c, ev, &self, &peer, 29410, 0, 0, NULL, &a, NULL),
			 -EINVAL);
	rdzv_rdma_ctx_free(c);
	gx_ev_free(ev);
}

/*
 * The fabric gate per HCA: check() probes every rail matched by interface name
 * with the coordinator's; a broken rail is recorded, named, and does not fail
 * the check (the bootstrap rail does); listen() serves every rail address.
 */
static void test_rails_gate(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_ctx *c = NULL;
	const struct rdzv_rdma_ops *ops;
	const struct rdzv_rdma_rail *rl;
	struct rdzv_peer self, peer;
	struct gx_ev *ev = NULL;
	char why[256] = "", a[64];

	peers(&self, &peer, 0);
	snprintf(self.rails, sizeof(self.rails),
		 "rxe1:1/net1/10.0.0.2,rxe7:1/net3/10.3.0.2,rxe4:1/net2/10.1.0.2");
	snprintf(peer.rails, sizeof(peer.rails), "rxe0:1/net1/10.0.0.1,rxe3:1/net2/10.1.0.1");
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, 0, &c), 0);
	ops = rdzv_rdma_ops(c);
	assert_int_equal(check_run(ops, &self, &peer, 29410, gx_now_ms() + 2000, why), 0);
	assert_int_equal(f->nresolves, 2); /* bootstrap + net2; net3 has no partner */
	/* the rails got at most half of the 2 s left (net3 used none of it): the coordinator
	 * waits for our VERIFY */
	assert_true(f->resolve_ms > 0 && f->resolve_ms <= 1000);
	assert_string_equal(inet_ntop(AF_INET, &f->dst.in4.sin_addr, a, sizeof(a)), "10.1.0.1");
	assert_string_equal(inet_ntop(AF_INET, &f->src.in4.sin_addr, a, sizeof(a)), "10.1.0.2");
	assert_int_equal(rdzv_rdma_rails(c, &rl), 3);
	assert_string_equal(rl[0].dev, "rxe1");
	assert_true(rl[0].bootstrap && rl[0].ok && rl[0].gid_index == 3);
	assert_string_equal(rl[2].netdev, "net2");
	assert_true(!rl[2].bootstrap && rl[2].checked && rl[2].ok && rl[2].gid_index == 3);
	assert_true(!rl[1].checked && !rl[1].ok);
	assert_string_equal(rl[1].why, "the coordinator has no rail on net3");
	/* net2 broken: named, left out, the check itself passes */
	f->unreachable4 = inet_addr("10.1.0.1");
	assert_int_equal(check_run(ops, &self, &peer, 29410, gx_now_ms() + 2000, why), 0);
	assert_int_equal(rdzv_rdma_rails(c, &rl), 3);
	assert_true(rl[0].ok && rl[2].checked && !rl[2].ok);
	assert_string_equal(rl[2].why, "to rxe3 (10.1.0.1): resolve_addr: No route to host");
	/* rails off (check probes them itself): only the bootstrap rail */
	f->unreachable4 = 0;
	f->nresolves = 0;
	rdzv_rdma_set_rails(c, 0);
	assert_int_equal(check_run(ops, &self, &peer, 29410, gx_now_ms() + 2000, why), 0);
	assert_int_equal(f->nresolves, 1);
	assert_int_equal(rdzv_rdma_rails(c, &rl), 0);
	rdzv_rdma_set_rails(c, 1);
	/* the bootstrap rail broken: the check fails as before */
	f->unreachable4 = inet_addr("10.0.0.1");
	assert_int_equal(check_run(ops, &self, &peer, 29410, gx_now_ms() + 2000, why), GX_ERDZV);
	rdzv_rdma_ctx_free(c);
	/* coordinator: a listener on the bootstrap address and on each rail */
	f->reply = 0;
	assert_int_equal(gx_ev_new(&ev), 0);
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, 0, &c), 0);
	ops = rdzv_rdma_ops(c);
	assert_int_equal(ops->listen(ops->arg, ev, &peer, 29410, why, sizeof(why)), 0);
	assert_string_equal(inet_ntop(AF_INET, &f->bound.in4.sin_addr, a, sizeof(a)), "10.1.0.1");
	assert_int_equal(rdzv_rdma_rails(c, &rl), 2);
	assert_true(rl[0].bootstrap && rl[0].served && rl[1].served);
	assert_int_equal(rl[1].answered, 0);
	assert_int_equal(f->alive[K_ID], 2); /* two listening ids */
	ops->close(ops->arg);
	assert_int_equal(f->alive[K_ID], 0);
	rdzv_rdma_ctx_free(c);
	gx_ev_free(ev);
}

static void test_ops_check(void **state)
{
	struct fake *f = *state;
	struct rdzv_rdma_ctx *c = NULL;
	const struct rdzv_rdma_ops *ops;
	struct rdzv_peer self, peer;
	char why[256] = "";

	peers(&self, &peer, 0);
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, 0, &c), 0);
	ops = rdzv_rdma_ops(c);
	assert_ptr_equal(ops->arg, c);
	assert_int_equal(check_run(ops, &self, &peer, 29410, gx_now_ms() + 2000, why), 0);
	f->route_ev = RDMA_CM_EVENT_ROUTE_ERROR;
	f->route_status = -ENETUNREACH;
	assert_int_equal(check_run(ops, &self, &peer, 29410, gx_now_ms() + 2000, why), GX_ERDZV);
	assert_string_equal(why, "resolve_route: Network is unreachable");
	ops->close(ops->arg); /* never listened: harmless */
	rdzv_rdma_ctx_free(c);
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, RDZV_RDMA_MAX_WRITE + 1, &c), -EINVAL);
	assert_null(c);
}

/* ---- server -------------------------------------------------------------- */

struct srv {
	struct gx_ev *ev;
	struct rdzv_rdma_ctx *c;
};

static void pump(struct gx_ev *ev)
{
	gx_ev_run_until(ev, gx_now_ms() + 20);
}

static void srv_start(struct srv *s, size_t max_write)
{
	struct rdzv_peer self, peer;
	const struct rdzv_rdma_ops *ops;
	char why[256] = "", a[64];

	peers(&peer, &self, 0); /* self = 10.0.0.1 */
	F->reply = 0;		/* the fake plays the client: it does not answer PONGs */
	assert_int_equal(gx_ev_new(&s->ev), 0);
	assert_int_equal(rdzv_rdma_ctx_new(&fake_ops, max_write, &s->c), 0);
	ops = rdzv_rdma_ops(s->c);
	assert_int_equal(ops->listen(ops->arg, s->ev, &self, 29410, why, sizeof(why)), 0);
	assert_int_equal(rdzv_rdma_serve(s->c, s->ev, &self, 29410, why, sizeof(why)), -EALREADY);
	assert_non_null(F->lid);
	assert_string_equal(inet_ntop(AF_INET, &F->bound.in4.sin_addr, a, sizeof(a)), "10.0.0.1");
	assert_int_equal(ntohs(F->bound.in4.sin_port), 29410);
}

static void srv_free(struct srv *s)
{
	rdzv_rdma_ctx_free(s->c);
	gx_ev_free(s->ev);
}

static struct rdma_cm_id *request_from(const char *src, const void *pd, size_t len)
{
	struct rdma_cm_id *id = new_id(F->lid->channel, F->lid->context);
	struct sockaddr_in *sa = (struct sockaddr_in *)&id->route.addr.dst_addr;

	id->verbs = &F->verbs;
	sa->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, src, &sa->sin_addr), 1);
	push_ev(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, pd, len);
	return id;
}

/* A client's CONNECT_REQUEST on the listening id; returns the new id. */
static struct rdma_cm_id *request(const void *pd, size_t len)
{
	return request_from("10.0.0.2", pd, len);
}

static struct rdma_cm_id *request_write_from(const char *src, uint32_t size)
{
	unsigned char req[RDZV_RDMA_REQ_LEN];

	rdzv_rdma_enc_req(&(struct rdzv_rdma_req){.write_size = size}, req);
	return request_from(src, req, sizeof(req));
}

static struct rdma_cm_id *request_write(uint32_t size)
{
	return request_write_from("10.0.0.2", size);
}

/* The fake client's PING on id (accepted: its ACC holds the nonce), under au. */
static void ping(struct rdma_cm_id *id, const struct rdzv_rdma_auth *au, uint32_t rank,
		 uint32_t size)
{
	struct fake_qp *qp = (struct fake_qp *)id->qp;
	struct rdzv_rdma_msg m = {.type = RDZV_RDMA_T_PING, .rank = rank, .write_size = size};
	struct rdzv_rdma_acc a;
	unsigned char msg[RDZV_RDMA_MSG_LEN];

	assert_int_equal(rdzv_rdma_dec_acc(qp->acc, sizeof(qp->acc), &a), 0);
	memset(m.nonce, (int)rank + 1, sizeof(m.nonce));
	rdzv_rdma_enc_msg(au, a.nonce, &m, msg);
	deliver(qp, msg, sizeof(msg));
}

/* The server's last PONG to id, checked under the job's key. */
static void pong(struct rdma_cm_id *id, struct rdzv_rdma_msg *m)
{
	struct fake_qp *qp = (struct fake_qp *)id->qp;
	struct rdzv_rdma_acc a;

	assert_int_equal(rdzv_rdma_dec_acc(qp->acc, sizeof(qp->acc), &a), 0);
	assert_int_equal(rdzv_rdma_dec_msg(&F->auth, a.nonce, F->sent, sizeof(F->sent), m), 0);
	assert_int_equal(m->type, RDZV_RDMA_T_PONG);
}

static void test_server_answers(void **state)
{
	struct fake *f = *state;
	struct srv s;
	struct rdma_cm_id *id;
	struct rdzv_rdma_acc a;
	struct rdzv_rdma_msg m;
	struct rdzv_rdma_pins pins;

	f->mtu = IBV_MTU_2048;
	srv_start(&s, 65536);
	id = request_write(4096);
	pump(s.ev);
	assert_int_equal(f->naccepts, 1);
	assert_int_equal(rdzv_rdma_nconns(s.c), 1);
	assert_int_equal(rdzv_rdma_answered(s.c), 0); /* connected, nothing exchanged yet */
	/* the accept carries a fresh nonce and no memory: nothing registered to write */
	assert_int_equal(rdzv_rdma_dec_acc(f->acc_pd, (size_t)f->acc_pdlen, &a), 0);
	assert_int_equal(a.mtu, 2048);
	assert_int_equal(a.max_write, 65536);
	assert_int_equal(f->nbufregs, 0);
	assert_non_null(id->context);
	push_ev(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	pump(s.ev);
	/* the client's proved PING: the target is registered, its rkey in the MAC'd PONG */
	ping(id, &f->auth, 2, 4096);
	pump(s.ev);
	assert_int_equal(f->nsent, 1);
	pong(id, &m);
	assert_int_equal(m.status, RDZV_RDMA_ST_OK);
	assert_int_equal(m.rank, 2);
	assert_true(m.addr != 0 && m.rkey != 0);
	assert_int_equal(m.nonce[0], 3); /* echoes the client's */
	assert_int_equal(f->nbufregs, 1);
	assert_int_equal(f->pinned, 4096); /* what the REQ asked, not max_write */
	rdzv_rdma_pins(s.c, &pins);
	assert_int_equal(pins.now, 4096);
	assert_int_equal(rdzv_rdma_answered(s.c), 1);
	/* a second PING on the re-posted recv is answered, nothing registered again */
	ping(id, &f->auth, 2, 4096);
	pump(s.ev);
	assert_int_equal(f->nsent, 2);
	assert_int_equal(f->nbufregs, 1);
	assert_int_equal(rdzv_rdma_answered(s.c), 1); /* one rank verified */
	/* the client hangs up: everything of that connection is gone, pins released */
	push_ev(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 0);
	assert_int_equal(f->ndisconnects, 0); /* it hung up, not us */
	assert_int_equal(f->alive[K_ID], 1);  /* the listening id */
	assert_int_equal(f->alive[K_QP], 0);
	assert_int_equal(f->alive[K_MR], 0);
	rdzv_rdma_pins(s.c, &pins);
	assert_int_equal(pins.now, 0);
	assert_int_equal(pins.peak, 4096);
	assert_int_equal(pins.refused, 0);
	srv_free(&s);
}

/*
 * A signal that interrupts the server's read of its completion channel is no failure of
 * the connection: the event is still there, the loop comes back to it and the PING is
 * answered (the server closed the member's connection here, and its RDMA-CM check failed).
 */
static void test_server_interrupted(void **state)
{
	struct fake *f = *state;
	struct srv s;
	struct rdma_cm_id *id;
	struct rdzv_rdma_msg m;

	srv_start(&s, 0);
	id = request_write(0);
	pump(s.ev);
	push_ev(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	pump(s.ev);
	f->cq_intr = 2;
	ping(id, &f->auth, 1, 0);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 1);
	assert_int_equal(f->nsent, 1);
	assert_int_equal(f->cq_intr, 0);
	pong(id, &m);
	assert_int_equal(m.rank, 1);
	assert_int_equal(m.status, RDZV_RDMA_ST_OK);
	assert_int_equal(rdzv_rdma_answered(s.c), 1);
	/* a real failure of the channel still ends it */
	f->poll_rc = -EIO;
	ping(id, &f->auth, 1, 0);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 0);
	assert_int_equal(f->nsent, 1);
	srv_free(&s);
}

/*
 * Finding 10: a stranger without the key connects, PINGs under a wrong key, or
 * never PINGs: no write target is ever registered, the connection is closed (the
 * unproved one within RDZV_RDMA_PROOF_MS).
 */
static void test_server_stranger(void **state)
{
	struct fake *f = *state;
	struct srv s;
	struct rdma_cm_id *id;
	struct rdzv_rdma_auth stranger = f->auth;
	struct rdzv_rdma_pins pins;
	int64_t t0;

	stranger.key[0] ^= 0x80;
	srv_start(&s, RDZV_RDMA_MAX_WRITE);
	id = request_write(RDZV_RDMA_MAX_WRITE);
	pump(s.ev);
	assert_int_equal(f->naccepts, 1);
	ping(id, &stranger, 0, RDZV_RDMA_MAX_WRITE);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 0);
	assert_int_equal(f->nsent, 0); /* no PONG either */
	/* a job id of another job under the same token: the same */
	stranger = f->auth;
	snprintf(stranger.job, sizeof(stranger.job), "another-job");
	id = request_write(RDZV_RDMA_MAX_WRITE);
	pump(s.ev);
	ping(id, &stranger, 0, RDZV_RDMA_MAX_WRITE);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 0);
	/* a proof for a smaller write than the REQ asked: not believed */
	id = request_write(4096);
	pump(s.ev);
	ping(id, &f->auth, 0, 1u << 20);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 0);
	/* one that never proves: closed at the proof deadline */
	request_write(RDZV_RDMA_MAX_WRITE);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 1);
	t0 = gx_now_ms();
	while (rdzv_rdma_nconns(s.c) && gx_now_ms() - t0 < RDZV_RDMA_PROOF_MS + 1000)
		pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 0);
	assert_true(gx_now_ms() - t0 >= RDZV_RDMA_PROOF_MS - 100);
	assert_int_equal(f->nbufregs, 0);
	assert_int_equal(rdzv_rdma_answered(s.c), 0);
	rdzv_rdma_pins(s.c, &pins);
	assert_int_equal(pins.peak, 0);
	assert_int_equal(pins.refused, 4);
	srv_free(&s);
}

/* RDZV_RDMA_PIN_MAX: proved clients past it get a PONG saying so, nothing registered. */
static void test_server_pin_cap(void **state)
{
	struct fake *f = *state;
	struct srv s;
	struct rdma_cm_id *id[RDZV_RDMA_PIN_MAX / RDZV_RDMA_MAX_WRITE + 2];
	struct rdzv_rdma_msg m;
	struct rdzv_rdma_pins pins;
	size_t n = sizeof(id) / sizeof(id[0]), i;
	char src[32];

	srv_start(&s, RDZV_RDMA_MAX_WRITE);
	for (i = 0; i < n; i++) {
		snprintf(src, sizeof(src), "10.0.1.%zu", i + 1);
		id[i] = request_write_from(src, RDZV_RDMA_MAX_WRITE);
		pump(s.ev);
		ping(id[i], &f->auth, (uint32_t)i + 1, RDZV_RDMA_MAX_WRITE);
		pump(s.ev);
		pong(id[i], &m);
		assert_int_equal(m.status, i < n - 2 ? RDZV_RDMA_ST_OK : RDZV_RDMA_ST_PINNED);
		assert_true(f->pinned <= RDZV_RDMA_PIN_MAX);
	}
	assert_int_equal(f->nbufregs, n - 2);
	assert_int_equal(f->pinned, RDZV_RDMA_PIN_MAX);
	assert_int_equal(rdzv_rdma_answered(s.c), n);
	/* one hangs up: its region is released and counted so; the next one fits */
	push_ev(id[0], RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	pump(s.ev);
	rdzv_rdma_pins(s.c, &pins);
	assert_int_equal(pins.now, RDZV_RDMA_PIN_MAX - RDZV_RDMA_MAX_WRITE);
	assert_int_equal(pins.peak, RDZV_RDMA_PIN_MAX);
	assert_int_equal(f->pinned, pins.now);
	ping(id[n - 1], &f->auth, (uint32_t)n, RDZV_RDMA_MAX_WRITE);
	pump(s.ev);
	pong(id[n - 1], &m);
	assert_int_equal(m.status, RDZV_RDMA_ST_OK);
	assert_int_equal(f->pinned, RDZV_RDMA_PIN_MAX);
	srv_free(&s);
	assert_int_equal(f->pinned, 0);
}

/*
 * One source holds at most RDZV_RDMA_PREAUTH_PER_SRC unproved connections; at the
 * connection limit the heaviest source's oldest unproved one makes room for a member
 * from elsewhere, and a proved connection is never the one closed.
 */
static void test_server_stranger_per_source(void **state)
{
	struct fake *f = *state;
	struct srv s;
	struct rdma_cm_id *member, *first[RDZV_RDMA_MAX_CONNS / RDZV_RDMA_PREAUTH_PER_SRC];
	uint32_t why = 0;
	unsigned v = 0;
	int i, k;
	char src[32];

	srv_start(&s, 65536);
	for (i = 0; i < RDZV_RDMA_PREAUTH_PER_SRC + 3; i++)
		request_write_from("10.0.0.99", 1024);
	for (i = 0; i < 8; i++)
		pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), RDZV_RDMA_PREAUTH_PER_SRC);
	assert_int_equal(f->nrejects, 3);
	assert_int_equal(rdzv_rdma_dec_rej(f->rej_pd, (size_t)f->rej_pdlen, &why, &v), 0);
	assert_int_equal(why, RDZV_RDMA_REJ_BUSY);
	/* a member from another address still gets in and proves */
	member = request_write_from("10.0.0.2", 1024);
	pump(s.ev);
	ping(member, &f->auth, 1, 1024);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_answered(s.c), 1);
	assert_int_equal(f->nbufregs, 1);
	/* fill every slot: 15 more strangers' addresses with 4 each, one with 3 */
	for (k = 1; rdzv_rdma_nconns(s.c) < RDZV_RDMA_MAX_CONNS; k++) {
		snprintf(src, sizeof(src), "10.0.2.%d", k);
		for (i = 0;
		     i < RDZV_RDMA_PREAUTH_PER_SRC && rdzv_rdma_nconns(s.c) < RDZV_RDMA_MAX_CONNS;
		     i++) {
			struct rdma_cm_id *id = request_write_from(src, 1024);

			pump(s.ev);
			if (i == 0 && k - 1 < (int)(sizeof(first) / sizeof(first[0])))
				first[k - 1] = id;
		}
	}
	assert_int_equal(rdzv_rdma_nconns(s.c), RDZV_RDMA_MAX_CONNS);
	/* the second member: the oldest of a heaviest source goes (10.0.0.99's first) */
	f->nrejects = 0;
	member = request_write_from("10.0.0.3", 1024);
	pump(s.ev);
	assert_int_equal(f->nrejects, 0);
	assert_int_equal(rdzv_rdma_nconns(s.c), RDZV_RDMA_MAX_CONNS);
	ping(member, &f->auth, 2, 1024);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_answered(s.c), 2);
	/* a newcomer whose source holds as many as anyone is refused instead */
	request_write_from("10.0.2.1", 1024);
	pump(s.ev);
	assert_int_equal(f->nrejects, 1);
	(void)first;
	srv_free(&s);
}

/* "N of M members verified": distinct ranks that proved, not connections. */
static void test_server_counts_ranks(void **state)
{
	struct fake *f = *state;
	struct srv s;
	struct rdma_cm_id *id;
	int i;

	srv_start(&s, 0);
	for (i = 0; i < 3; i++) { /* rank 1 retries twice */
		id = request_write(0);
		pump(s.ev);
		ping(id, &f->auth, 1, 0);
		pump(s.ev);
		push_ev(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
		pump(s.ev);
	}
	assert_int_equal(rdzv_rdma_answered(s.c), 1);
	id = request_write_from("10.0.0.99", 0); /* a stranger: never counted */
	pump(s.ev);
	push_ev(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_answered(s.c), 1);
	id = request_write_from("10.0.0.3", 0);
	pump(s.ev);
	ping(id, &f->auth, 2, 0);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_answered(s.c), 2);
	srv_free(&s);
}

static void test_server_garbage(void **state)
{
	struct fake *f = *state;
	struct srv s;
	struct rdma_cm_id *id;
	unsigned char junk[RDZV_RDMA_MSG_LEN], req[RDZV_RDMA_REQ_LEN];
	uint32_t why = 0;
	unsigned v = 0;

	srv_start(&s, 4096);
	memset(junk, 0x41, sizeof(junk));
	request(junk, sizeof(junk)); /* not our connect data */
	pump(s.ev);
	assert_int_equal(f->nrejects, 1);
	assert_int_equal(rdzv_rdma_dec_rej(f->rej_pd, (size_t)f->rej_pdlen, &why, &v), 0);
	assert_int_equal(why, RDZV_RDMA_REJ_BADREQ);
	request(NULL, 0); /* none at all */
	pump(s.ev);
	assert_int_equal(f->nrejects, 2);
	request_write(8192); /* more than max_write */
	pump(s.ev);
	assert_int_equal(rdzv_rdma_dec_rej(f->rej_pd, (size_t)f->rej_pdlen, &why, &v), 0);
	assert_int_equal(why, RDZV_RDMA_REJ_TOOLARGE);
	/* a wire v1 client: told the version differs */
	rdzv_rdma_enc_req(&(struct rdzv_rdma_req){.write_size = 0}, req);
	req[4] = 1;
	request(req, sizeof(req));
	pump(s.ev);
	assert_int_equal(rdzv_rdma_dec_rej(f->rej_pd, (size_t)f->rej_pdlen, &why, &v), 0);
	assert_int_equal(why, RDZV_RDMA_REJ_VERSION);
	assert_int_equal(f->naccepts, 0);
	assert_int_equal(f->alive[K_ID], 1);
	/* an accepted connection whose message is garbage is closed */
	id = request_write(0);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 1);
	deliver((struct fake_qp *)id->qp, junk, sizeof(junk));
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 0);
	assert_int_equal(f->nsent, 0);
	/* and one whose completion fails */
	id = request_write(0);
	pump(s.ev);
	push_wc(((struct fake_qp *)id->qp)->cq, IBV_WC_RECV, IBV_WC_WR_FLUSH_ERR, 0);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 0);
	srv_free(&s);
}

static void test_server_limit(void **state)
{
	struct fake *f = *state;
	struct srv s;
	uint32_t why = 0;
	unsigned v = 0;
	int i;
	char src[32];

	srv_start(&s, 65536);
	for (i = 0; i < RDZV_RDMA_MAX_CONNS + 3; i++) { /* one per address: none heavier */
		snprintf(src, sizeof(src), "10.0.%d.%d", 3 + i / 200, 1 + i % 200);
		request_write_from(src, 1024);
	}
	for (i = 0; i < 8; i++)
		pump(s.ev);
	assert_int_equal(f->naccepts, RDZV_RDMA_MAX_CONNS);
	assert_int_equal(rdzv_rdma_nconns(s.c), RDZV_RDMA_MAX_CONNS);
	assert_int_equal(f->nrejects, 3);
	assert_int_equal(rdzv_rdma_dec_rej(f->rej_pd, (size_t)f->rej_pdlen, &why, &v), 0);
	assert_int_equal(why, RDZV_RDMA_REJ_BUSY);
	assert_int_equal(f->alive[K_ID], 1 + RDZV_RDMA_MAX_CONNS);
	assert_int_equal(f->alive[K_QP], RDZV_RDMA_MAX_CONNS);
	assert_int_equal(f->nbufregs, 0); /* nobody proved: nothing pinned */
	/* free with every connection open releases everything (teardown counts) */
	srv_free(&s);
}

static void test_server_stop_restart(void **state)
{
	struct fake *f = *state;
	struct srv s;
	struct rdzv_peer self, peer;
	char why[256] = "";

	srv_start(&s, 0);
	request_write(0);
	pump(s.ev);
	assert_int_equal(rdzv_rdma_nconns(s.c), 1);
	rdzv_rdma_stop(s.c);
	assert_int_equal(rdzv_rdma_nconns(s.c), 0);
	assert_int_equal(f->alive[K_ID], 0);
	assert_int_equal(f->alive[K_CH], 0);
	/* no secondary address: a one-line why, nothing left behind */
	peers(&self, &peer, 0);
	self.addr4[0] = '\0';
	assert_true(rdzv_rdma_serve(s.c, s.ev, &self, 1, why, sizeof(why)) < 0);
	assert_non_null(strstr(why, "no usable secondary address"));
	srv_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_codec),
	    cmocka_unit_test_setup_teardown(test_client_ok, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_write, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_v6, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_addr_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_route_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_rejected, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_unreachable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_completion_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_completion_calls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cq_drain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_deadline, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_hostile_accept, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_memlock, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_proof, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_client_in_loop, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rails_gate, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ops_check, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_answers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_interrupted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_stranger, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_pin_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_stranger_per_source, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_counts_ranks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_garbage, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_server_stop_restart, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
