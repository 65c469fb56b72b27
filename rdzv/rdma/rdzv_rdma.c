/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma.c - RDMA-CM client (member verification, check probes), driven by
 * a gx_ev loop, and the context; the rendezvous' ops on it are
 * rdzv_rdma_rails.c, the server rdzv_rdma_srv.c, the codec and queue-pair
 * resources rdzv_rdma_wire.c. Steps follow rdma-core's rping: resolve addr,
 * resolve route, QP + buffers, connect with private data, SEND/RECV, RDMA WRITE. Every library call
 * goes through struct rdzv_rdma_cm_ops (rdzv_rdma_cm.c). Layouts and steps: rdzv/PROTOCOL.md,
 * "RDMA-CM".
 */
#include "rdzv/rdma/rdzv_rdma_int.h"

#include <errno.h>
#include <sodium.h>
#include <sys/epoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CLI_RESOLVE_MS 2000 /* rdma_resolve_addr / route timeout, capped by the deadline */

/* ---- client -------------------------------------------------------------- */

/*
 * The client is a small state machine inside a gx_ev loop: the rdma_cm event
 * channel fd and the completion channel fd are non-blocking and polled by
 * the loop, a timer holds the deadline. No fork and no thread: the verbs
 * objects stay in the process (and credentials) that opened them.
 */
enum cli_state {
	CLI_ADDR,  /* rdma_resolve_addr issued */
	CLI_ROUTE, /* rdma_resolve_route issued */
	CLI_CONN,  /* rdma_connect issued */
	CLI_RECV,  /* PING posted, waiting for the PONG */
	CLI_WRITE, /* RDMA WRITE posted, waiting for its completion */
	CLI_DONE,
};

static const char *const cli_steps[] = {
    [CLI_ADDR] = "resolve_addr", [CLI_ROUTE] = "resolve_route", [CLI_CONN] = "connect",
    [CLI_RECV] = "recv",	 [CLI_WRITE] = "write",		[CLI_DONE] = "done",
};

struct rdzv_rdma_cli {
	const struct rdzv_rdma_cm_ops *cm;
	struct gx_ev *ev;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdzv_rdma_qp q;
	enum cli_state state;
	int connected, ch_added, cc_added;
	uint64_t timer;
	int64_t deadline_ms;
	size_t size;
	uint32_t rank;
	struct rdzv_rdma_auth auth;
	unsigned char nc[RDZV_RDMA_NONCE_LEN]; /* ours, echoed by the PONG */
	uint32_t rkey;			       /* the PONG's write target */
	uint64_t raddr;
	int64_t t0, t;
	struct rdzv_rdma_acc acc;
	struct rdzv_rdma_probe out;
	rdzv_rdma_probe_fn *done;
	void *arg;
	char peer[46];
	uint16_t port;
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

__attribute__((format(printf, 3, 4))) static int fail(struct rdzv_rdma_cli *cl, const char *step,
						      const char *fmt, ...)
{
	char cause[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	cl->out.ok = 0;
	cl->out.step = step;
	snprintf(cl->out.why, sizeof(cl->out.why), "%s: %s", step, cause);
	return GX_ERDZV;
}

static const char *err_text(int rc)
{
	return rc == -ETIMEDOUT ? "timed out" : gx_strerror(rc);
}

/* The resolve timeout: what is left of the deadline, at most CLI_RESOLVE_MS. */
static int remaining_ms(const struct rdzv_rdma_cli *cl)
{
	int64_t left = cl->deadline_ms - gx_now_ms();

	return left <= 0 ? 1 : left > CLI_RESOLVE_MS ? CLI_RESOLVE_MS : (int)left;
}

static int rejected(struct rdzv_rdma_cli *cl, const struct rdma_cm_event *e)
{
	static const char *const reasons[] = {
	    [RDZV_RDMA_REJ_BUSY] = "server busy",
	    [RDZV_RDMA_REJ_BADREQ] = "bad request",
	    [RDZV_RDMA_REJ_TOOLARGE] = "write size above the server's limit",
	    [RDZV_RDMA_REJ_SETUP] = "server could not set up the connection",
	};
	uint32_t r = 0;
	unsigned v = 0;

	if (rdzv_rdma_dec_rej(e->param.conn.private_data, e->param.conn.private_data_len, &r, &v) ==
		0 &&
	    v != RDZV_RDMA_VERSION)
		return fail(cl, "connect",
			    "rejected by %s (RDMA wire version mismatch: it speaks v%u, this "
			    "gxboot v%d; run one gxboot version in the job)",
			    cl->peer, v, RDZV_RDMA_VERSION);
	if (v == RDZV_RDMA_VERSION && r == RDZV_RDMA_REJ_VERSION)
		return fail(cl, "connect",
			    "rejected by %s (RDMA wire version mismatch: it does not speak this "
			    "gxboot's v%d; run one gxboot version in the job)",
			    cl->peer, RDZV_RDMA_VERSION);
	if (v == RDZV_RDMA_VERSION && r > 0 && r < sizeof(reasons) / sizeof(reasons[0]))
		return fail(cl, "connect", "rejected by %s (%s)", cl->peer, reasons[r]);
	if (e->status == 8) /* IB_CM_REJ_INVALID_SERVICE_ID: nobody listens there */
		return fail(cl, "connect", "rejected by %s (no RDMA-CM listener on port %u)",
			    cl->peer, cl->port);
	return fail(cl, "connect", "rejected by %s (status %d)", cl->peer, e->status);
}

/* The failure line for an event that is not the one step waits for. */
static int unexpected(struct rdzv_rdma_cli *cl, const char *step, const struct rdma_cm_event *e)
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

/* Releases every library object and loop entry; idempotent. */
static void cli_close(struct rdzv_rdma_cli *cl)
{
	if (cl->timer)
		gx_ev_timer_cancel(cl->ev, cl->timer);
	cl->timer = 0;
	if (cl->cc_added)
		gx_ev_del(cl->ev, cl->q.cc->fd);
	if (cl->ch_added)
		gx_ev_del(cl->ev, cl->ch->fd);
	cl->cc_added = cl->ch_added = 0;
	if (cl->connected)
		cl->cm->disconnect(cl->id);
	cl->connected = 0;
	rdzv_rdma_qp_free(cl->cm, cl->id, &cl->q);
	if (cl->id)
		cl->cm->destroy_id(cl->id);
	if (cl->ch)
		cl->cm->destroy_event_channel(cl->ch);
	cl->id = NULL;
	cl->ch = NULL;
}

/* The end: everything released, then done() with the outcome, then freed. */
static void cli_finish(struct rdzv_rdma_cli *cl)
{
	struct rdzv_rdma_probe out;
	rdzv_rdma_probe_fn *done = cl->done;
	void *arg = cl->arg;

	cli_close(cl);
	out = cl->out;
	if (!out.ok)
		gx_debug("rdma probe to %s: %s", cl->peer[0] ? cl->peer : "?", out.why);
	sodium_memzero(&cl->auth, sizeof(cl->auth));
	free(cl);
	done(arg, &out);
}

static void on_finish_timer(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rdzv_rdma_cli *cl = arg;

	(void)ev;
	(void)id;
	cl->timer = 0;
	cli_finish(cl);
}

/* A failure found while starting: reported from the loop, never from start. */
static void cli_fail_later(struct rdzv_rdma_cli *cl)
{
	cli_close(cl);
	cl->state = CLI_DONE;
	cl->timer = gx_ev_timer(cl->ev, 0, on_finish_timer, cl);
}

static void on_deadline(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rdzv_rdma_cli *cl = arg;

	(void)ev;
	(void)id;
	cl->timer = 0;
	fail(cl, cli_steps[cl->state], "timed out");
	cli_finish(cl);
}

static void on_cc(struct gx_ev *ev, int fd, uint32_t events, void *arg);

static int cli_route(struct rdzv_rdma_cli *cl)
{
	int rc = cl->cm->resolve_route(cl->id, remaining_ms(cl));

	if (rc < 0)
		return fail(cl, "resolve_route", "%s", err_text(rc));
	cl->state = CLI_ROUTE;
	return 0;
}

static int cli_connect(struct rdzv_rdma_cli *cl)
{
	unsigned char req[RDZV_RDMA_REQ_LEN];
	struct rdma_conn_param p;
	char why[200];
	int rc;

	rc = rdzv_rdma_qp_setup(cl->cm, cl->id, &cl->q, cl->size, IBV_ACCESS_LOCAL_WRITE, why,
				sizeof(why));
	if (rc < 0)
		return fail(cl, "setup", "%s", why);
	if (gx_ev_add(cl->ev, cl->q.cc->fd, EPOLLIN, on_cc, cl) < 0)
		return fail(cl, "setup", "event loop: cannot watch the completion channel");
	cl->cc_added = 1;
	rc = rdzv_rdma_post_recv(cl->cm, cl->id, &cl->q);
	if (rc < 0)
		return fail(cl, "setup", "ibv_post_recv: %s", gx_strerror(rc));
	rdzv_rdma_enc_req(&(struct rdzv_rdma_req){.write_size = (uint32_t)cl->size}, req);
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
	cl->state = CLI_CONN;
	return 0;
}

/* GID index the QP's address vector uses, and this port's active MTU. */
static void cli_info(struct rdzv_rdma_cli *cl)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	memset(&pa, 0, sizeof(pa));
	if (cl->cm->query_port(cl->id->verbs, cl->id->port_num, &pa) == 0)
		cl->out.mtu = rdzv_rdma_mtu_bytes(pa.active_mtu);
	memset(&qa, 0, sizeof(qa));
	if (cl->cm->query_qp(cl->id->qp, &qa, IBV_QP_AV, &qi) == 0 && qa.ah_attr.is_global)
		cl->out.gid_index = qa.ah_attr.grh.sgid_index;
}

/* ESTABLISHED: the accept's data (the server's nonce), then the PING with our proof. */
static int cli_established(struct rdzv_rdma_cli *cl, const struct rdma_cm_event *e)
{
	struct rdzv_rdma_msg m = {
	    .type = RDZV_RDMA_T_PING, .rank = cl->rank, .write_size = (uint32_t)cl->size};
	size_t n = e->param.conn.private_data ? e->param.conn.private_data_len : 0;
	int rc;

	cl->connected = 1;
	rc = rdzv_rdma_dec_acc(e->param.conn.private_data, n, &cl->acc);
	if (rc == GX_EVERSION)
		return fail(cl, "connect",
			    "%s speaks another RDMA wire version (this gxboot v%d; run one "
			    "gxboot version in the job)",
			    cl->peer, RDZV_RDMA_VERSION);
	if (rc < 0)
		return fail(cl, "connect", "malformed accept data from %s (%s)", cl->peer,
			    gx_strerror(rc));
	memcpy(m.nonce, cl->nc, sizeof(m.nonce));
	cl->out.connect_us = now_us() - cl->t0;
	cl->out.peer_mtu = (int)cl->acc.mtu;
	cli_info(cl);
	cl->t = now_us();
	rc = rdzv_rdma_post_msg(cl->cm, cl->id, &cl->q, &cl->auth, cl->acc.nonce, &m);
	if (rc < 0)
		return fail(cl, "send", "ibv_post_send: %s", gx_strerror(rc));
	cl->state = CLI_RECV;
	return 0;
}

/* One rdma_cm event: the next step, or a failure (1: the probe is over). */
static int cli_cm_event(struct rdzv_rdma_cli *cl, const struct rdma_cm_event *e)
{
	static const enum rdma_cm_event_type want[] = {
	    [CLI_ADDR] = RDMA_CM_EVENT_ADDR_RESOLVED,
	    [CLI_ROUTE] = RDMA_CM_EVENT_ROUTE_RESOLVED,
	    [CLI_CONN] = RDMA_CM_EVENT_ESTABLISHED,
	};
	const char *step = cli_steps[cl->state];

	if (cl->state > CLI_CONN || e->event != want[cl->state])
		return unexpected(cl, step, e) < 0;
	switch (cl->state) {
	case CLI_ADDR:
		return cli_route(cl) < 0;
	case CLI_ROUTE:
		return cli_connect(cl) < 0;
	default:
		return cli_established(cl, e) < 0;
	}
}

static void on_cm(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct rdzv_rdma_cli *cl = arg;
	struct rdma_cm_event *e = NULL;
	int rc, over;

	(void)ev;
	(void)fd;
	(void)events;
	rc = cl->cm->get_cm_event(cl->ch, &e);
	if (rc == -EAGAIN || rc == -EINTR)
		return;
	if (rc < 0) {
		fail(cl, cli_steps[cl->state], "rdma_get_cm_event: %s", gx_strerror(rc));
		cli_finish(cl);
		return;
	}
	over = cli_cm_event(cl, e);
	cl->cm->ack_cm_event(e);
	if (over)
		cli_finish(cl);
}

static int cli_write(struct rdzv_rdma_cli *cl)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)cl->q.buf, .length = (uint32_t)cl->size, .lkey = cl->q.buf_mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 3,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED};
	int rc;

	if (cl->acc.max_write < cl->size)
		return fail(cl, "write", "%s accepts at most %u bytes", cl->peer,
			    cl->acc.max_write);
	memset(cl->q.buf, 0xa5, cl->size);
	wr.wr.rdma.remote_addr = cl->raddr;
	wr.wr.rdma.rkey = cl->rkey;
	cl->t = now_us();
	rc = cl->cm->post_send(cl->id->qp, &wr);
	if (rc < 0)
		return fail(cl, "write", "ibv_post_send: %s", gx_strerror(rc));
	cl->state = CLI_WRITE;
	return 0;
}

/* The PONG: MAC'd under the job's key for our nonce and rank, else not our job's server. */
static int cli_pong(struct rdzv_rdma_cli *cl, const struct ibv_wc *wc)
{
	struct rdzv_rdma_msg m;
	size_t len = wc->byte_len < RDZV_RDMA_MSG_LEN ? wc->byte_len : RDZV_RDMA_MSG_LEN;
	int rc;

	rc = rdzv_rdma_dec_msg(&cl->auth, cl->acc.nonce, cl->q.msg, len, &m);
	if (rc == GX_EMAC)
		return fail(cl, "recv",
			    "%s answered without the job's key (another job's server, or a "
			    "different token)",
			    cl->peer);
	if (rc < 0 || m.type != RDZV_RDMA_T_PONG || m.rank != cl->rank ||
	    sodium_memcmp(m.nonce, cl->nc, sizeof(cl->nc)) != 0)
		return fail(cl, "recv", "bad reply from %s", cl->peer);
	if (cl->size && m.status == RDZV_RDMA_ST_PINNED)
		return fail(cl, "write",
			    "%s has no room for %zu bytes under its pinned-memory cap (%u MiB)",
			    cl->peer, cl->size, RDZV_RDMA_PIN_MAX >> 20);
	if (cl->size && (m.status != RDZV_RDMA_ST_OK || !m.rkey))
		return fail(cl, "write", "%s could not register a %zu-byte target", cl->peer,
			    cl->size);
	cl->rkey = m.rkey;
	cl->raddr = m.addr;
	return 0;
}

/* One completion: 1 when the probe is over (done or failed), 0 to go on. */
static int cli_wc(void *arg, const struct ibv_wc *wc)
{
	struct rdzv_rdma_cli *cl = arg;

	if (wc->status != IBV_WC_SUCCESS)
		return fail(cl, "completion", "%s on %s", rdzv_rdma_wc_str(wc->status),
			    cli_steps[cl->state]) < 0;
	if (cl->state == CLI_RECV && wc->opcode == IBV_WC_RECV) {
		if (cli_pong(cl, wc) < 0)
			return 1;
		cl->out.sendrecv_us = now_us() - cl->t;
		if (cl->size == 0) {
			cl->out.ok = 1;
			return 1;
		}
		return cli_write(cl) < 0;
	}
	if (cl->state == CLI_WRITE && wc->opcode == IBV_WC_RDMA_WRITE) {
		cl->out.write_us = now_us() - cl->t;
		cl->out.ok = 1;
		return 1;
	}
	return 0; /* the PING's SEND completion */
}

static void on_cc(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct rdzv_rdma_cli *cl = arg;
	const char *what = NULL;
	int rc;

	(void)ev;
	(void)fd;
	(void)events;
	rc = rdzv_rdma_cq_drain(cl->cm, &cl->q, cli_wc, cl, &what);
	if (rc < 0)
		fail(cl, "completion", "%s: %s", what ? what : "completion", gx_strerror(rc));
	if (rc != 0)
		cli_finish(cl);
}

/* Channel, id, resolve_addr; a failure is in cl->out. */
static int cli_begin(struct rdzv_rdma_cli *cl, const struct rdzv_peer *self,
		     const struct rdzv_peer *peer)
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
	if (cl->deadline_ms <= gx_now_ms())
		return fail(cl, "resolve_addr", "timed out");
	rc = cl->cm->create_event_channel(&cl->ch);
	if (rc == 0)
		rc = rdzv_rdma_nonblock(cl->ch->fd);
	if (rc < 0)
		return fail(cl, "setup", "rdma_create_event_channel: %s", gx_strerror(rc));
	if (gx_ev_add(cl->ev, cl->ch->fd, EPOLLIN, on_cm, cl) < 0)
		return fail(cl, "setup", "event loop: cannot watch the event channel");
	cl->ch_added = 1;
	rc = cl->cm->create_id(cl->ch, &cl->id, cl);
	if (rc < 0)
		return fail(cl, "setup", "rdma_create_id: %s", gx_strerror(rc));
	rc = cl->cm->resolve_addr(cl->id, &src.sa, &dst.sa, remaining_ms(cl));
	if (rc < 0)
		return fail(cl, "resolve_addr", "%s", err_text(rc));
	cl->state = CLI_ADDR;
	return 0;
}

int rdzv_rdma_probe_start(struct rdzv_rdma_ctx *c, struct gx_ev *ev, const struct rdzv_peer *self,
			  const struct rdzv_peer *peer, uint16_t port, size_t size,
			  int64_t deadline_ms, rdzv_rdma_probe_fn *done, void *arg,
			  struct rdzv_rdma_cli **ret)
{
	struct rdzv_rdma_cli *cl;
	int64_t left;

	if (ret)
		*ret = NULL;
	if (!c || !ev || !self || !peer || !done || size > RDZV_RDMA_MAX_WRITE)
		return -EINVAL;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	cl->cm = c->cm;
	cl->ev = ev;
	cl->size = size;
	cl->port = port;
	cl->done = done;
	cl->arg = arg;
	cl->out.gid_index = -1;
	cl->out.size = size;
	cl->deadline_ms = deadline_ms;
	cl->t0 = now_us();
	cl->rank = self->index;
	cl->auth = c->auth;
	randombytes_buf(cl->nc, sizeof(cl->nc));
	if (cli_begin(cl, self, peer) < 0) {
		cli_fail_later(cl);
	} else {
		left = deadline_ms - gx_now_ms();
		cl->timer = gx_ev_timer(ev, left > 0 ? left : 0, on_deadline, cl);
	}
	if (ret)
		*ret = cl;
	return 0;
}

void rdzv_rdma_probe_cancel(struct rdzv_rdma_cli *cl)
{
	if (!cl)
		return;
	cli_close(cl);
	sodium_memzero(&cl->auth, sizeof(cl->auth));
	free(cl);
}

/* ---- context and the rendezvous' ops ------------------------------------- */

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
	c->ops.check = rdzv_rdma_ops_check;
	c->ops.cancel = rdzv_rdma_ops_cancel;
	c->ops.listen = rdzv_rdma_ops_listen;
	c->ops.close = rdzv_rdma_ops_close;
	c->ops.arg = c;
	c->last.size = (size_t)-1; /* no verification yet */
	c->rails_on = 1;
	if (rdzv_rdma_set_key(c, NULL, 0, "") < 0) {
		free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

int rdzv_rdma_set_key(struct rdzv_rdma_ctx *c, const unsigned char *token, size_t len,
		      const char *job_id)
{
	char purpose[160];
	int rc;

	if (!c || !job_id || gx_strlcpy(c->auth.job, job_id, sizeof(c->auth.job)) < 0)
		return -EINVAL;
	if (snprintf(purpose, sizeof(purpose), "rdma:%s", job_id) >= (int)sizeof(purpose))
		return -EINVAL;
	/* no token: anyone who knows the job id can compute this (PROTOCOL.md) */
	rc = token && len ? rdzv_derive_key(token, len, purpose, c->auth.key)
			  : rdzv_derive_key((const unsigned char *)purpose, strlen(purpose), "anon",
					    c->auth.key);
	return rc;
}

int rdzv_rdma_share_key(struct rdzv_rdma_ctx *dst, const struct rdzv_rdma_ctx *src)
{
	if (!dst || !src)
		return -EINVAL;
	dst->auth = src->auth;
	return 0;
}

void rdzv_rdma_pins(const struct rdzv_rdma_ctx *c, struct rdzv_rdma_pins *out)
{
	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	out->now = c->pinned;
	out->peak = c->pinned_peak;
	out->refused = c->refused;
}

void rdzv_rdma_ctx_free(struct rdzv_rdma_ctx *c)
{
	if (!c)
		return;
	rdzv_rdma_stop(c);
	rdzv_rdma_rails_reset(c);
	sodium_memzero(&c->auth, sizeof(c->auth));
	free(c->proved);
	free(c);
}

const struct rdzv_rdma_probe *rdzv_rdma_last(const struct rdzv_rdma_ctx *c)
{
	return c && c->last.size != (size_t)-1 ? &c->last : NULL;
}

const struct rdzv_rdma_ops *rdzv_rdma_ops(struct rdzv_rdma_ctx *c)
{
	return c ? &c->ops : NULL;
}
