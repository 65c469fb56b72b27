/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma_wire.c - the RDMA-CM private-data and message codec (untrusted
 * bytes from the other side: every length, magic, version and size checked)
 * and one connection's verbs resources (PD, completion channel, CQ, QP, the
 * registered message slots and data buffer) and its completion handling, shared by
 * the client (rdzv_rdma.c) and the server (rdzv_rdma_srv.c). Layouts: rdzv/PROTOCOL.md,
 * "RDMA-CM".
 */
#include "rdzv/rdma/rdzv_rdma_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sodium.h>
#include <string.h>
#include <sys/resource.h>

#define CQ_DEPTH 8

/* ---- private data and message codec (network byte order) --------------- */

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_hdr(unsigned char *p, uint8_t type, size_t len)
{
	memset(p, 0, len);
	put32(p, RDZV_RDMA_MAGIC);
	p[4] = RDZV_RDMA_VERSION;
	p[5] = type;
}

static int check_hdr(const void *p, size_t len, size_t need, uint8_t type)
{
	const unsigned char *b = p;

	if (!p || len < need || get32(b) != RDZV_RDMA_MAGIC)
		return GX_EPROTO;
	if (b[4] != RDZV_RDMA_VERSION)
		return GX_EVERSION;
	return b[5] == type ? 0 : GX_EPROTO;
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

void rdzv_rdma_enc_req(const struct rdzv_rdma_req *r, unsigned char out[RDZV_RDMA_REQ_LEN])
{
	put_hdr(out, RDZV_RDMA_T_REQ, RDZV_RDMA_REQ_LEN);
	put32(out + 8, r->write_size);
}

void rdzv_rdma_enc_acc(const struct rdzv_rdma_acc *a, unsigned char out[RDZV_RDMA_ACC_LEN])
{
	put_hdr(out, RDZV_RDMA_T_ACC, RDZV_RDMA_ACC_LEN);
	put32(out + 8, a->mtu);
	put32(out + 12, a->max_write);
	memcpy(out + 16, a->nonce, RDZV_RDMA_NONCE_LEN);
}

void rdzv_rdma_enc_rej(uint32_t reason, unsigned char out[RDZV_RDMA_REJ_LEN])
{
	put_hdr(out, RDZV_RDMA_T_REJ, RDZV_RDMA_REJ_LEN);
	put32(out + 8, reason);
}

#define MSG_BODY (RDZV_RDMA_MSG_LEN - RDZV_RDMA_MAC_LEN)

static void msg_mac(const struct rdzv_rdma_auth *au, const unsigned char ns[RDZV_RDMA_NONCE_LEN],
		    const unsigned char body[MSG_BODY], unsigned char mac[RDZV_RDMA_MAC_LEN])
{
	static const char label[] = "gxboot rdma v2";
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, au->key, sizeof(au->key));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, sizeof(label));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)au->job, strlen(au->job) + 1);
	crypto_auth_hmacsha256_update(&st, ns, RDZV_RDMA_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, body, MSG_BODY);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

void rdzv_rdma_enc_msg(const struct rdzv_rdma_auth *au, const unsigned char ns[RDZV_RDMA_NONCE_LEN],
		       const struct rdzv_rdma_msg *m, unsigned char out[RDZV_RDMA_MSG_LEN])
{
	put_hdr(out, m->type, RDZV_RDMA_MSG_LEN);
	out[6] = m->status;
	put32(out + 8, m->rank);
	put32(out + 12, m->type == RDZV_RDMA_T_PING ? m->write_size : m->rkey);
	put64(out + 16, m->addr);
	memcpy(out + 24, m->nonce, RDZV_RDMA_NONCE_LEN);
	msg_mac(au, ns, out, out + MSG_BODY);
}

int rdzv_rdma_dec_req(const void *p, size_t len, struct rdzv_rdma_req *r)
{
	int rc = check_hdr(p, len, RDZV_RDMA_REQ_LEN, RDZV_RDMA_T_REQ);

	if (rc == 0)
		r->write_size = get32((const unsigned char *)p + 8);
	return rc;
}

int rdzv_rdma_dec_acc(const void *p, size_t len, struct rdzv_rdma_acc *a)
{
	const unsigned char *b = p;
	int rc = check_hdr(p, len, RDZV_RDMA_ACC_LEN, RDZV_RDMA_T_ACC);

	if (rc < 0)
		return rc;
	a->mtu = get32(b + 8);
	a->max_write = get32(b + 12);
	memcpy(a->nonce, b + 16, RDZV_RDMA_NONCE_LEN);
	/* an MTU is a power of two in [256, 4096]; 0 = the server does not know */
	if (a->mtu && (a->mtu < 256 || a->mtu > 4096 || (a->mtu & (a->mtu - 1))))
		return GX_EPROTO;
	return a->max_write > RDZV_RDMA_MAX_WRITE ? GX_EPROTO : 0;
}

int rdzv_rdma_dec_rej(const void *p, size_t len, uint32_t *reason, unsigned *version)
{
	const unsigned char *b = p;

	/* every version so far: magic, version, type, then the reason at 8 */
	if (!p || len < RDZV_RDMA_REJ_LEN || get32(b) != RDZV_RDMA_MAGIC || b[5] != RDZV_RDMA_T_REJ)
		return GX_EPROTO;
	*version = b[4];
	*reason = get32(b + 8);
	return 0;
}

int rdzv_rdma_dec_msg(const struct rdzv_rdma_auth *au, const unsigned char ns[RDZV_RDMA_NONCE_LEN],
		      const void *p, size_t len, struct rdzv_rdma_msg *m)
{
	const unsigned char *b = p;
	unsigned char mac[RDZV_RDMA_MAC_LEN];
	int rc = check_hdr(p, len, RDZV_RDMA_MSG_LEN, b && len > 5 ? b[5] : 0);

	if (rc < 0)
		return rc;
	if (b[5] != RDZV_RDMA_T_PING && b[5] != RDZV_RDMA_T_PONG)
		return GX_EPROTO;
	msg_mac(au, ns, b, mac);
	rc = sodium_memcmp(mac, b + MSG_BODY, RDZV_RDMA_MAC_LEN) == 0 ? 0 : GX_EMAC;
	sodium_memzero(mac, sizeof(mac));
	if (rc < 0)
		return rc;
	memset(m, 0, sizeof(*m));
	m->type = b[5];
	m->status = b[6];
	m->rank = get32(b + 8);
	if (m->type == RDZV_RDMA_T_PING)
		m->write_size = get32(b + 12);
	else
		m->rkey = get32(b + 12);
	m->addr = get64(b + 16);
	memcpy(m->nonce, b + 24, RDZV_RDMA_NONCE_LEN);
	return 0;
}

int rdzv_rdma_mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

const char *rdzv_rdma_wc_str(enum ibv_wc_status s)
{
	static const char *const names[] = {
	    [IBV_WC_SUCCESS] = "IBV_WC_SUCCESS",
	    [IBV_WC_LOC_LEN_ERR] = "IBV_WC_LOC_LEN_ERR",
	    [IBV_WC_LOC_QP_OP_ERR] = "IBV_WC_LOC_QP_OP_ERR",
	    [IBV_WC_LOC_EEC_OP_ERR] = "IBV_WC_LOC_EEC_OP_ERR",
	    [IBV_WC_LOC_PROT_ERR] = "IBV_WC_LOC_PROT_ERR",
	    [IBV_WC_WR_FLUSH_ERR] = "IBV_WC_WR_FLUSH_ERR",
	    [IBV_WC_MW_BIND_ERR] = "IBV_WC_MW_BIND_ERR",
	    [IBV_WC_BAD_RESP_ERR] = "IBV_WC_BAD_RESP_ERR",
	    [IBV_WC_LOC_ACCESS_ERR] = "IBV_WC_LOC_ACCESS_ERR",
	    [IBV_WC_REM_INV_REQ_ERR] = "IBV_WC_REM_INV_REQ_ERR",
	    [IBV_WC_REM_ACCESS_ERR] = "IBV_WC_REM_ACCESS_ERR",
	    [IBV_WC_REM_OP_ERR] = "IBV_WC_REM_OP_ERR",
	    [IBV_WC_RETRY_EXC_ERR] = "IBV_WC_RETRY_EXC_ERR",
	    [IBV_WC_RNR_RETRY_EXC_ERR] = "IBV_WC_RNR_RETRY_EXC_ERR",
	    [IBV_WC_LOC_RDD_VIOL_ERR] = "IBV_WC_LOC_RDD_VIOL_ERR",
	    [IBV_WC_REM_INV_RD_REQ_ERR] = "IBV_WC_REM_INV_RD_REQ_ERR",
	    [IBV_WC_REM_ABORT_ERR] = "IBV_WC_REM_ABORT_ERR",
	    [IBV_WC_INV_EECN_ERR] = "IBV_WC_INV_EECN_ERR",
	    [IBV_WC_INV_EEC_STATE_ERR] = "IBV_WC_INV_EEC_STATE_ERR",
	    [IBV_WC_FATAL_ERR] = "IBV_WC_FATAL_ERR",
	    [IBV_WC_RESP_TIMEOUT_ERR] = "IBV_WC_RESP_TIMEOUT_ERR",
	    [IBV_WC_GENERAL_ERR] = "IBV_WC_GENERAL_ERR",
	};

	if ((unsigned)s < sizeof(names) / sizeof(names[0]) && names[s])
		return names[s];
	return "IBV_WC_(unknown status)";
}

int rdzv_rdma_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* ---- queue-pair resources ------------------------------------------------ */

static void reg_why(int rc, size_t len, char *why, size_t whylen)
{
	struct rlimit rl;

	if ((rc == -ENOMEM || rc == -EPERM) && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY) {
		snprintf(why, whylen,
			 "ibv_reg_mr(%zu bytes): %s (RLIMIT_MEMLOCK %llu KiB: add IPC_LOCK or "
			 "raise the memlock limit)",
			 len, gx_strerror(rc), (unsigned long long)rl.rlim_cur / 1024);
		return;
	}
	snprintf(why, whylen, "ibv_reg_mr(%zu bytes): %s", len, gx_strerror(rc));
}

int rdzv_rdma_qp_buf(const struct rdzv_rdma_cm_ops *cm, struct rdzv_rdma_qp *q, size_t buflen,
		     int buf_access, char *why, size_t whylen)
{
	int rc;

	if (buflen == 0 || q->buf)
		return q->buf ? -EALREADY : 0;
	if (posix_memalign(&q->buf, 4096, buflen)) {
		q->buf = NULL;
		snprintf(why, whylen, "buffers: %s", gx_strerror(-ENOMEM));
		return -ENOMEM;
	}
	q->buflen = buflen; /* not read here: the client fills its own, the server's is written */
	rc = cm->reg_mr(q->pd, q->buf, buflen, buf_access, &q->buf_mr);
	if (rc < 0) {
		reg_why(rc, buflen, why, whylen);
		q->buf_mr = NULL;
	}
	return rc;
}

static int qp_buffers(const struct rdzv_rdma_cm_ops *cm, struct rdzv_rdma_qp *q, size_t buflen,
		      int buf_access, char *why, size_t whylen)
{
	int rc;

	if (posix_memalign((void **)&q->msg, 64, 2 * RDZV_RDMA_MSG_LEN))
		return -ENOMEM;
	memset(q->msg, 0, 2 * RDZV_RDMA_MSG_LEN);
	rc = cm->reg_mr(q->pd, q->msg, 2 * RDZV_RDMA_MSG_LEN, IBV_ACCESS_LOCAL_WRITE, &q->msg_mr);
	if (rc < 0) {
		reg_why(rc, 2 * RDZV_RDMA_MSG_LEN, why, whylen);
		return rc;
	}
	return rdzv_rdma_qp_buf(cm, q, buflen, buf_access, why, whylen);
}

int rdzv_rdma_qp_setup(const struct rdzv_rdma_cm_ops *cm, struct rdma_cm_id *id,
		       struct rdzv_rdma_qp *q, size_t buflen, int buf_access, char *why,
		       size_t whylen)
{
	struct ibv_qp_init_attr attr;
	const char *what = "ibv_alloc_pd";
	int rc;

	if (!id->verbs) {
		gx_strlcpy(why, "no RDMA device behind the address", whylen);
		return -ENODEV;
	}
	rc = cm->alloc_pd(id->verbs, &q->pd);
	if (rc == 0 && (what = "ibv_create_comp_channel", 1))
		rc = cm->create_comp_channel(id->verbs, &q->cc);
	if (rc == 0)
		rc = rdzv_rdma_nonblock(q->cc->fd);
	if (rc == 0 && (what = "ibv_create_cq", 1))
		rc = cm->create_cq(id->verbs, CQ_DEPTH, q->cc, &q->cq);
	if (rc == 0 && (what = "ibv_req_notify_cq", 1))
		rc = cm->req_notify_cq(q->cq);
	if (rc < 0) {
		snprintf(why, whylen, "%s: %s", what, gx_strerror(rc));
		return rc;
	}
	why[0] = '\0';
	rc = qp_buffers(cm, q, buflen, buf_access, why, whylen);
	if (rc < 0) {
		if (!why[0])
			snprintf(why, whylen, "buffers: %s", gx_strerror(rc));
		return rc;
	}
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = q->cq;
	attr.recv_cq = q->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = 4;
	attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	rc = cm->create_qp(id, q->pd, &attr);
	if (rc < 0) {
		snprintf(why, whylen, "rdma_create_qp: %s", gx_strerror(rc));
		return rc;
	}
	q->has_qp = 1;
	return 0;
}

void rdzv_rdma_qp_free(const struct rdzv_rdma_cm_ops *cm, struct rdma_cm_id *id,
		       struct rdzv_rdma_qp *q)
{
	if (q->has_qp)
		cm->destroy_qp(id);
	if (q->buf_mr)
		cm->dereg_mr(q->buf_mr);
	if (q->msg_mr)
		cm->dereg_mr(q->msg_mr);
	if (q->cq)
		cm->destroy_cq(q->cq);
	if (q->cc)
		cm->destroy_comp_channel(q->cc);
	if (q->pd)
		cm->dealloc_pd(q->pd);
	free(q->buf);
	free(q->msg);
	memset(q, 0, sizeof(*q));
}

int rdzv_rdma_cq_drain(const struct rdzv_rdma_cm_ops *cm, struct rdzv_rdma_qp *q,
		       rdzv_rdma_wc_fn *fn, void *arg, const char **what)
{
	struct ibv_cq *cq = NULL;
	struct ibv_wc wc;
	int rc, n;

	*what = NULL;
	rc = cm->get_cq_event(q->cc, &cq);
	if (rc == -EAGAIN || rc == -EINTR)
		return 0;
	if (rc < 0) {
		*what = "ibv_get_cq_event";
		return rc;
	}
	cm->ack_cq_events(cq, 1);
	rc = cm->req_notify_cq(q->cq);
	if (rc < 0) {
		*what = "ibv_req_notify_cq";
		return rc;
	}
	/* every completion queued before the re-arm; later ones raise a new event */
	while ((n = cm->poll_cq(q->cq, 1, &wc)) == 1) {
		rc = fn(arg, &wc);
		if (rc)
			return rc;
	}
	if (n < 0)
		*what = "ibv_poll_cq";
	return n < 0 ? n : 0;
}

int rdzv_rdma_post_recv(const struct rdzv_rdma_cm_ops *cm, struct rdma_cm_id *id,
			struct rdzv_rdma_qp *q)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)q->msg, .length = RDZV_RDMA_MSG_LEN, .lkey = q->msg_mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};

	return cm->post_recv(id->qp, &wr);
}

int rdzv_rdma_post_msg(const struct rdzv_rdma_cm_ops *cm, struct rdma_cm_id *id,
		       struct rdzv_rdma_qp *q, const struct rdzv_rdma_auth *au,
		       const unsigned char ns[RDZV_RDMA_NONCE_LEN], const struct rdzv_rdma_msg *m)
{
	unsigned char *slot = q->msg + RDZV_RDMA_MSG_LEN;
	struct ibv_sge sge = {
	    .addr = (uintptr_t)slot, .length = RDZV_RDMA_MSG_LEN, .lkey = q->msg_mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 2,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};

	rdzv_rdma_enc_msg(au, ns, m, slot);
	return cm->post_send(id->qp, &wr);
}
