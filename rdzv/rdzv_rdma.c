/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma.c - RDMA-CM client (member verification, check probes) and the
 * context whose ops the rendezvous calls; the server is rdzv_rdma_srv.c, the
 * codec and queue-pair resources rdzv_rdma_wire.c. Steps follow rdma-core's rping: resolve addr,
 * resolve route, QP + buffers, connect with private data, SEND/RECV, RDMA WRITE. Every library call
 * goes through struct rdzv_rdma_cm_ops (rdzv_rdma_cm.c). Layouts and steps: rdzv/PROTOCOL.md,
 * "RDMA-CM".
 */
#include "rdzv/rdzv_rdma_int.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CLI_RESOLVE_MS 2000 /* rdma_resolve_addr / route timeout, capped by the deadline */

/* ---- client -------------------------------------------------------------- */

struct cli {
	const struct rdzv_rdma_cm_ops *cm;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdzv_rdma_qp q;
	int connected;
	int64_t deadline_ms;
	struct rdzv_rdma_probe *out;
	char peer[46];
	uint16_t port;
	unsigned char pdata[64]; /* the private data of the last expected event */
	size_t pdlen;
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

__attribute__((format(printf, 3, 4))) static int fail(struct cli *cl, const char *step,
						      const char *fmt, ...)
{
	char cause[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	cl->out->ok = 0;
	cl->out->step = step;
	snprintf(cl->out->why, sizeof(cl->out->why), "%s: %s", step, cause);
	return GX_ERDZV;
}

static const char *err_text(int rc)
{
	return rc == -ETIMEDOUT ? "timed out" : gx_strerror(rc);
}

static int remaining_ms(const struct cli *cl)
{
	int64_t left = cl->deadline_ms - gx_now_ms();

	return left <= 0 ? 0 : left > CLI_RESOLVE_MS ? CLI_RESOLVE_MS : (int)left;
}

/* Waits for fd0 (and fd1 when >= 0); returns a bit mask of the readable ones. */
static int wait_fds(struct cli *cl, const char *step, int fd0, int fd1)
{
	struct pollfd p[2] = {{.fd = fd0, .events = POLLIN}, {.fd = fd1, .events = POLLIN}};
	int64_t left;
	int n;

	for (;;) {
		left = cl->deadline_ms - gx_now_ms();
		if (left <= 0)
			return fail(cl, step, "timed out");
		n = poll(p, fd1 >= 0 ? 2 : 1, left > 1000 ? 1000 : (int)left);
		if (n < 0 && errno != EINTR)
			return fail(cl, step, "poll: %s", gx_strerror(-errno));
		if (n > 0)
			return (p[0].revents ? 1 : 0) | (fd1 >= 0 && p[1].revents ? 2 : 0);
	}
}

static int rejected(struct cli *cl, const struct rdma_cm_event *e)
{
	static const char *const reasons[] = {
	    [RDZV_RDMA_REJ_BUSY] = "server busy",
	    [RDZV_RDMA_REJ_BADREQ] = "bad request",
	    [RDZV_RDMA_REJ_TOOLARGE] = "write size above the server's limit",
	    [RDZV_RDMA_REJ_SETUP] = "server could not set up the connection",
	};
	uint32_t r = 0;

	if (rdzv_rdma_dec_rej(e->param.conn.private_data, e->param.conn.private_data_len, &r) ==
		0 &&
	    r > 0 && r < sizeof(reasons) / sizeof(reasons[0]))
		return fail(cl, "connect", "rejected by %s (%s)", cl->peer, reasons[r]);
	if (e->status == 8) /* IB_CM_REJ_INVALID_SERVICE_ID: nobody listens there */
		return fail(cl, "connect", "rejected by %s (no RDMA-CM listener on port %u)",
			    cl->peer, cl->port);
	return fail(cl, "connect", "rejected by %s (status %d)", cl->peer, e->status);
}

/* The failure line for an event that is not the one step waits for. */
static int unexpected(struct cli *cl, const char *step, const struct rdma_cm_event *e)
{
	int st = e->status;

	switch (e->event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return fail(cl, step, "%s", st < 0 ? err_text(st) : "error");
	case RDMA_CM_EVENT_REJECTED:
		return rejected(cl, e);
	case RDMA_CM_EVENT_UNREACHABLE:
		return fail(cl, step, "%s unreachable (%s)", cl->peer,
			    st < 0 ? err_text(st) : "no answer");
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return fail(cl, step, "connection error with %s (status %d)", cl->peer, st);
	case RDMA_CM_EVENT_DISCONNECTED:
		return fail(cl, step, "disconnected by %s", cl->peer);
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return fail(cl, step, "RDMA device removed");
	default:
		return fail(cl, step, "unexpected RDMA-CM event %d (status %d)", (int)e->event, st);
	}
}

/* Next event; the expected one's private data lands in cl->pdata (bounded). */
static int wait_cm(struct cli *cl, const char *step, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *e = NULL;
	int rc;

	for (;;) {
		rc = cl->cm->get_cm_event(cl->ch, &e);
		if (rc == 0)
			break;
		if (rc != -EAGAIN && rc != -EINTR)
			return fail(cl, step, "rdma_get_cm_event: %s", gx_strerror(rc));
		rc = wait_fds(cl, step, cl->ch->fd, -1);
		if (rc < 0)
			return rc;
	}
	if (e->event == want) {
		size_t n = e->param.conn.private_data ? e->param.conn.private_data_len : 0;

		cl->pdlen = n < sizeof(cl->pdata) ? n : sizeof(cl->pdata);
		if (cl->pdlen)
			memcpy(cl->pdata, e->param.conn.private_data, cl->pdlen);
		rc = 0;
	} else {
		rc = unexpected(cl, step, e);
	}
	cl->cm->ack_cm_event(e);
	return rc;
}

/* An event while completions are awaited (the peer hung up...): a failure. */
static int cm_interrupt(struct cli *cl, const char *step)
{
	struct rdma_cm_event *e = NULL;
	int rc = cl->cm->get_cm_event(cl->ch, &e);

	if (rc == -EAGAIN || rc == -EINTR)
		return 0;
	if (rc < 0)
		return fail(cl, step, "rdma_get_cm_event: %s", gx_strerror(rc));
	rc = unexpected(cl, step, e);
	cl->cm->ack_cm_event(e);
	return rc;
}

/* Next successful completion of opcode want (earlier SEND completions skipped). */
static int wait_wc(struct cli *cl, const char *step, enum ibv_wc_opcode want, struct ibv_wc *wc)
{
	struct ibv_cq *cq = NULL;
	int n, rc;

	for (;;) {
		n = cl->cm->poll_cq(cl->q.cq, 1, wc);
		if (n < 0)
			return fail(cl, "completion", "ibv_poll_cq: %s", gx_strerror(n));
		if (n == 1 && wc->status != IBV_WC_SUCCESS)
			return fail(cl, "completion", "%s on %s", rdzv_rdma_wc_str(wc->status),
				    step);
		if (n == 1 && wc->opcode == want)
			return 0;
		if (n == 1)
			continue;
		rc = wait_fds(cl, step, cl->q.cc->fd, cl->ch->fd);
		if (rc < 0)
			return rc;
		if ((rc & 2) && cm_interrupt(cl, step) < 0)
			return GX_ERDZV;
		if (!(rc & 1))
			continue;
		rc = cl->cm->get_cq_event(cl->q.cc, &cq);
		if (rc == -EAGAIN)
			continue;
		if (rc < 0)
			return fail(cl, "completion", "ibv_get_cq_event: %s", gx_strerror(rc));
		cl->cm->ack_cq_events(cq, 1);
		rc = cl->cm->req_notify_cq(cl->q.cq);
		if (rc < 0)
			return fail(cl, "completion", "ibv_req_notify_cq: %s", gx_strerror(rc));
	}
}

static int cli_resolve(struct cli *cl, const struct rdzv_peer *self, const struct rdzv_peer *peer)
{
	union gx_sockaddr src, dst;
	socklen_t slen, dlen;
	int v4 = self->addr4[0] && peer->addr4[0];
	int rc;

	if (!v4 && !(self->addr6[0] && peer->addr6[0]))
		return fail(cl, "resolve_addr", "no common address family with %s", peer->name);
	gx_strlcpy(cl->peer, v4 ? peer->addr4 : peer->addr6, sizeof(cl->peer));
	if (gx_addr_parse(v4 ? self->addr4 : self->addr6, 0, &src, &slen) < 0 ||
	    gx_addr_parse(cl->peer, cl->port, &dst, &dlen) < 0)
		return fail(cl, "resolve_addr", "bad secondary address");
	rc = cl->cm->create_event_channel(&cl->ch);
	if (rc == 0)
		rc = rdzv_rdma_nonblock(cl->ch->fd);
	if (rc < 0)
		return fail(cl, "setup", "rdma_create_event_channel: %s", gx_strerror(rc));
	rc = cl->cm->create_id(cl->ch, &cl->id, cl);
	if (rc < 0)
		return fail(cl, "setup", "rdma_create_id: %s", gx_strerror(rc));
	rc = cl->cm->resolve_addr(cl->id, &src.sa, &dst.sa, remaining_ms(cl) + 1);
	if (rc < 0)
		return fail(cl, "resolve_addr", "%s", err_text(rc));
	rc = wait_cm(cl, "resolve_addr", RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rc < 0)
		return rc;
	rc = cl->cm->resolve_route(cl->id, remaining_ms(cl) + 1);
	if (rc < 0)
		return fail(cl, "resolve_route", "%s", err_text(rc));
	return wait_cm(cl, "resolve_route", RDMA_CM_EVENT_ROUTE_RESOLVED);
}

static int cli_connect(struct cli *cl, size_t size, struct rdzv_rdma_acc *acc)
{
	unsigned char req[RDZV_RDMA_REQ_LEN];
	struct rdma_conn_param p;
	char why[200];
	int rc;

	rc = rdzv_rdma_qp_setup(cl->cm, cl->id, &cl->q, size, IBV_ACCESS_LOCAL_WRITE, why,
				sizeof(why));
	if (rc < 0)
		return fail(cl, "setup", "%s", why);
	rc = rdzv_rdma_post_recv(cl->cm, cl->id, &cl->q);
	if (rc < 0)
		return fail(cl, "setup", "ibv_post_recv: %s", gx_strerror(rc));
	rdzv_rdma_enc_req(&(struct rdzv_rdma_req){.write_size = (uint32_t)size}, req);
	memset(&p, 0, sizeof(p));
	p.private_data = req;
	p.private_data_len = sizeof(req);
	p.responder_resources = 1;
	p.initiator_depth = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	rc = cl->cm->connect(cl->id, &p);
	if (rc < 0)
		return fail(cl, "connect", "rdma_connect to %s: %s", cl->peer, gx_strerror(rc));
	rc = wait_cm(cl, "connect", RDMA_CM_EVENT_ESTABLISHED);
	if (rc < 0)
		return rc;
	cl->connected = 1;
	rc = rdzv_rdma_dec_acc(cl->pdata, cl->pdlen, acc);
	if (rc < 0)
		return fail(cl, "connect", "malformed accept data from %s (%s)", cl->peer,
			    gx_strerror(rc));
	return 0;
}

/* GID index the QP's address vector uses, and this port's active MTU. */
static void cli_info(struct cli *cl)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	memset(&pa, 0, sizeof(pa));
	if (cl->cm->query_port(cl->id->verbs, cl->id->port_num, &pa) == 0)
		cl->out->mtu = rdzv_rdma_mtu_bytes(pa.active_mtu);
	memset(&qa, 0, sizeof(qa));
	if (cl->cm->query_qp(cl->id->qp, &qa, IBV_QP_AV, &qi) == 0 && qa.ah_attr.is_global)
		cl->out->gid_index = qa.ah_attr.grh.sgid_index;
}

static int cli_sendrecv(struct cli *cl, uint64_t nonce)
{
	struct rdzv_rdma_msg m = {.type = RDZV_RDMA_T_PING, .nonce = nonce};
	struct ibv_wc wc;
	int64_t t = now_us();
	int rc;

	rc = rdzv_rdma_post_msg(cl->cm, cl->id, &cl->q, &m);
	if (rc < 0)
		return fail(cl, "send", "ibv_post_send: %s", gx_strerror(rc));
	rc = wait_wc(cl, "recv", IBV_WC_RECV, &wc);
	if (rc < 0)
		return rc;
	if (rdzv_rdma_dec_msg(cl->q.msg,
			      wc.byte_len < RDZV_RDMA_MSG_LEN ? wc.byte_len : RDZV_RDMA_MSG_LEN,
			      &m) < 0 ||
	    m.type != RDZV_RDMA_T_PONG || m.nonce != nonce)
		return fail(cl, "recv", "bad reply from %s", cl->peer);
	cl->out->sendrecv_us = now_us() - t;
	return 0;
}

static int cli_write(struct cli *cl, size_t size, const struct rdzv_rdma_acc *acc)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)cl->q.buf, .length = (uint32_t)size, .lkey = cl->q.buf_mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 3,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_wc wc;
	int64_t t;
	int rc;

	if (acc->max_write < size)
		return fail(cl, "write", "%s accepts at most %u bytes", cl->peer, acc->max_write);
	memset(cl->q.buf, 0xa5, size);
	wr.wr.rdma.remote_addr = acc->addr;
	wr.wr.rdma.rkey = acc->rkey;
	t = now_us();
	rc = cl->cm->post_send(cl->id->qp, &wr);
	if (rc < 0)
		return fail(cl, "write", "ibv_post_send: %s", gx_strerror(rc));
	rc = wait_wc(cl, "write", IBV_WC_RDMA_WRITE, &wc);
	if (rc < 0)
		return rc;
	cl->out->write_us = now_us() - t;
	return 0;
}

static int cli_run(struct cli *cl, const struct rdzv_peer *self, const struct rdzv_peer *peer,
		   size_t size, uint64_t nonce)
{
	struct rdzv_rdma_acc acc;
	int64_t t0 = now_us();
	int rc;

	rc = cli_resolve(cl, self, peer);
	if (rc == 0)
		rc = cli_connect(cl, size, &acc);
	if (rc < 0)
		return rc;
	cl->out->connect_us = now_us() - t0;
	cl->out->peer_mtu = (int)acc.mtu;
	cli_info(cl);
	rc = cli_sendrecv(cl, nonce);
	if (rc == 0 && size > 0)
		rc = cli_write(cl, size, &acc);
	if (rc == 0)
		cl->out->ok = 1;
	return rc;
}

static void cli_close(struct cli *cl)
{
	if (cl->connected)
		cl->cm->disconnect(cl->id);
	rdzv_rdma_qp_free(cl->cm, cl->id, &cl->q);
	if (cl->id)
		cl->cm->destroy_id(cl->id);
	if (cl->ch)
		cl->cm->destroy_event_channel(cl->ch);
	cl->id = NULL;
	cl->ch = NULL;
}

int rdzv_rdma_probe_run(struct rdzv_rdma_ctx *c, const struct rdzv_peer *self,
			const struct rdzv_peer *peer, uint16_t port, size_t size,
			int64_t deadline_ms, struct rdzv_rdma_probe *out)
{
	struct cli cl;

	if (!c || !self || !peer || !out || size > RDZV_RDMA_MAX_WRITE)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->gid_index = -1;
	out->size = size;
	memset(&cl, 0, sizeof(cl));
	cl.cm = c->cm;
	cl.deadline_ms = deadline_ms;
	cl.out = out;
	cl.port = port;
	c->nonce++;
	cli_run(&cl, self, peer, size, c->nonce ^ (uint64_t)now_us() << 16);
	cli_close(&cl);
	if (!out->ok)
		gx_debug("rdma probe to %s: %s", peer->name, out->why);
	return 0;
}

/* ---- context and the rendezvous' ops ------------------------------------- */

static int ops_check(void *arg, const struct rdzv_peer *self, const struct rdzv_peer *coord,
		     uint16_t port, int64_t deadline_ms, char *why, size_t whylen)
{
	struct rdzv_rdma_probe p;
	int rc;

	rc = rdzv_rdma_probe_run(arg, self, coord, port, 0, deadline_ms, &p);
	if (rc < 0) {
		snprintf(why, whylen, "%s", gx_strerror(rc));
		return rc;
	}
	if (!p.ok) {
		gx_strlcpy(why, p.why, whylen);
		return GX_ERDZV;
	}
	return 0;
}

static int ops_listen(void *arg, struct gx_ev *ev, const struct rdzv_peer *self, uint16_t port,
		      char *why, size_t whylen)
{
	return rdzv_rdma_serve(arg, ev, self, port, why, whylen);
}

static void ops_close(void *arg)
{
	rdzv_rdma_stop(arg);
}

int rdzv_rdma_ctx_new(const struct rdzv_rdma_cm_ops *cm, size_t max_write,
		      struct rdzv_rdma_ctx **ret)
{
	struct rdzv_rdma_ctx *c;

	*ret = NULL;
	if (!cm || max_write > RDZV_RDMA_MAX_WRITE)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cm = cm;
	c->max_write = max_write;
	c->ops.check = ops_check;
	c->ops.listen = ops_listen;
	c->ops.close = ops_close;
	c->ops.arg = c;
	*ret = c;
	return 0;
}

void rdzv_rdma_ctx_free(struct rdzv_rdma_ctx *c)
{
	if (!c)
		return;
	rdzv_rdma_stop(c);
	free(c);
}

const struct rdzv_rdma_ops *rdzv_rdma_ops(struct rdzv_rdma_ctx *c)
{
	return c ? &c->ops : NULL;
}
