/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma_cm.c - the real librdmacm / libibverbs table behind the RDMA-CM
 * seam (rdzv_rdma.h). The one place that calls rdma_* and ibv_*: each entry
 * converts the library's convention (-1 + errno, NULL + errno, positive
 * errno, inline verbs through the context) to 0 / negative errno (STYLE 5).
 */
#include "rdzv/rdma/rdzv_rdma.h"

#include <errno.h>

static int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

static int cm_rc(int rc)
{
	return rc == 0 ? 0 : neg_errno();
}

static int verbs_rc(int rc)
{
	/* verbs calls return a positive errno (or -1 + errno on some providers) */
	if (rc == 0)
		return 0;
	return rc > 0 ? -rc : neg_errno();
}

static int r_create_event_channel(struct rdma_event_channel **ret)
{
	*ret = rdma_create_event_channel();
	return *ret ? 0 : neg_errno();
}

static void r_destroy_event_channel(struct rdma_event_channel *ch)
{
	rdma_destroy_event_channel(ch);
}

static int r_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **ret, void *context)
{
	return cm_rc(rdma_create_id(ch, ret, context, RDMA_PS_TCP));
}

static int r_destroy_id(struct rdma_cm_id *id)
{
	return cm_rc(rdma_destroy_id(id));
}

static int r_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return cm_rc(rdma_bind_addr(id, addr));
}

static int r_listen(struct rdma_cm_id *id, int backlog)
{
	return cm_rc(rdma_listen(id, backlog));
}

static int r_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			  int timeout_ms)
{
	return cm_rc(rdma_resolve_addr(id, src, dst, timeout_ms));
}

static int r_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	return cm_rc(rdma_resolve_route(id, timeout_ms));
}

static int r_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	return cm_rc(rdma_connect(id, param));
}

static int r_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	return cm_rc(rdma_accept(id, param));
}

static int r_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	return cm_rc(rdma_reject(id, pdata, len));
}

static int r_disconnect(struct rdma_cm_id *id)
{
	return cm_rc(rdma_disconnect(id));
}

static int r_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ret)
{
	return cm_rc(rdma_get_cm_event(ch, ret));
}

static int r_ack_cm_event(struct rdma_cm_event *ev)
{
	return cm_rc(rdma_ack_cm_event(ev));
}

static int r_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return cm_rc(rdma_create_qp(id, pd, attr));
}

static void r_destroy_qp(struct rdma_cm_id *id)
{
	rdma_destroy_qp(id);
}

static int r_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		      struct ibv_qp_init_attr *init)
{
	return verbs_rc(ibv_query_qp(qp, attr, mask, init));
}

static int r_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	return verbs_rc(ibv_query_port(ctx, port, attr));
}

static int r_alloc_pd(struct ibv_context *ctx, struct ibv_pd **ret)
{
	*ret = ibv_alloc_pd(ctx);
	return *ret ? 0 : neg_errno();
}

static int r_dealloc_pd(struct ibv_pd *pd)
{
	return verbs_rc(ibv_dealloc_pd(pd));
}

static int r_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access, struct ibv_mr **ret)
{
	*ret = ibv_reg_mr(pd, addr, len, access);
	return *ret ? 0 : neg_errno();
}

static int r_dereg_mr(struct ibv_mr *mr)
{
	return verbs_rc(ibv_dereg_mr(mr));
}

static int r_create_comp_channel(struct ibv_context *ctx, struct ibv_comp_channel **ret)
{
	*ret = ibv_create_comp_channel(ctx);
	return *ret ? 0 : neg_errno();
}

static int r_destroy_comp_channel(struct ibv_comp_channel *cc)
{
	return verbs_rc(ibv_destroy_comp_channel(cc));
}

static int r_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *cc,
		       struct ibv_cq **ret)
{
	*ret = ibv_create_cq(ctx, cqe, NULL, cc, 0);
	return *ret ? 0 : neg_errno();
}

static int r_destroy_cq(struct ibv_cq *cq)
{
	return verbs_rc(ibv_destroy_cq(cq));
}

static int r_req_notify_cq(struct ibv_cq *cq)
{
	return verbs_rc(ibv_req_notify_cq(cq, 0));
}

static int r_get_cq_event(struct ibv_comp_channel *cc, struct ibv_cq **cq)
{
	void *ctx = NULL;

	return cm_rc(ibv_get_cq_event(cc, cq, &ctx));
}

static void r_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	ibv_ack_cq_events(cq, n);
}

static int r_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	return verbs_rc(ibv_post_send(qp, wr, &bad));
}

static int r_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad = NULL;

	return verbs_rc(ibv_post_recv(qp, wr, &bad));
}

static int r_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int rc = ibv_poll_cq(cq, n, wc);

	return rc >= 0 ? rc : -EIO;
}

static const struct rdzv_rdma_cm_ops real_ops = {
    .create_event_channel = r_create_event_channel,
    .destroy_event_channel = r_destroy_event_channel,
    .create_id = r_create_id,
    .destroy_id = r_destroy_id,
    .bind_addr = r_bind_addr,
    .listen = r_listen,
    .resolve_addr = r_resolve_addr,
    .resolve_route = r_resolve_route,
    .connect = r_connect,
    .accept = r_accept,
    .reject = r_reject,
    .disconnect = r_disconnect,
    .get_cm_event = r_get_cm_event,
    .ack_cm_event = r_ack_cm_event,
    .create_qp = r_create_qp,
    .destroy_qp = r_destroy_qp,
    .query_qp = r_query_qp,
    .query_port = r_query_port,
    .alloc_pd = r_alloc_pd,
    .dealloc_pd = r_dealloc_pd,
    .reg_mr = r_reg_mr,
    .dereg_mr = r_dereg_mr,
    .create_comp_channel = r_create_comp_channel,
    .destroy_comp_channel = r_destroy_comp_channel,
    .create_cq = r_create_cq,
    .destroy_cq = r_destroy_cq,
    .req_notify_cq = r_req_notify_cq,
    .get_cq_event = r_get_cq_event,
    .ack_cq_events = r_ack_cq_events,
    .post_send = r_post_send,
    .post_recv = r_post_recv,
    .poll_cq = r_poll_cq,
};

const struct rdzv_rdma_cm_ops *rdzv_rdma_cm_real(void)
{
	return &real_ops;
}
