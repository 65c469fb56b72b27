/* SPDX-License-Identifier: MIT */
/*
 * rdma_stranger.c - a stranger without the job's token against a gxboot RDMA-CM server
 * (it must pin no memory; tests/e2e/rdma/case_stranger.sh builds it inside the soft-RoCE VM
 * with the librdmacm headers there). Test tool, not part of gxboot.
 *
 *   rdma_stranger SRC DST PORT SIZE   (SRC: this pod's address on the RDMA netdev)
 *
 * Phase 1: every 50 ms a new RDMA-CM connect to DST:PORT with a wire-v2 REQ asking for a
 * SIZE-byte write target, each accepted connection held open and silent, until 8 connects
 * were refused with the server's "busy" (or 200 tries, or 60 s). A connect that finds no
 * listener yet is retried and not counted. Phase 2: 3 more connects, each sending a PING
 * whose MAC is random bytes (a forged proof), waiting up to 3 s for a PONG.
 * Prints one line: "stranger: tries=N accepted=N refused=N max_held=N pongs=N forged=N".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXHELD 256

static struct rdma_event_channel *ch;
static char last_fail[128] = "none"; /* the last connect that was no try, and why */
static struct rdma_cm_id *held[MAXHELD];
static int nheld, live, max_live;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* The next event for id; others' DISCONNECTED (the server closing a held one) are counted. */
static int wait_ev(struct rdma_cm_id *id, int *type, int *status, uint32_t *rej)
{
	struct rdma_cm_event *e;
	int k;

	for (;;) {
		if (rdma_get_cm_event(ch, &e))
			return -1;
		if (e->id != id) {
			if (e->event == RDMA_CM_EVENT_DISCONNECTED)
				for (k = 0; k < nheld; k++)
					if (held[k] == e->id) {
						live--;
						held[k] = NULL;
					}
			rdma_ack_cm_event(e);
			continue;
		}
		*type = e->event;
		*status = e->status;
		*rej = 0;
		if (e->event == RDMA_CM_EVENT_REJECTED && e->param.conn.private_data &&
		    e->param.conn.private_data_len >= 12) {
			const unsigned char *p = e->param.conn.private_data;

			*rej = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 | (uint32_t)p[10] << 8 |
			       p[11];
		}
		rdma_ack_cm_event(e);
		return 0;
	}
}

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	unsigned char buf[2 * 72];
};

/* 1 accepted, 0 refused busy, 2 no listener / other refusal, -1 error. */
static int attempt(struct sockaddr_in *src, struct sockaddr_in *dst, uint32_t size, struct conn *c)
{
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param p;
	unsigned char req[16] = {0x47, 0x58, 0x52, 0x44, 2, 1};
	int type, st;
	uint32_t rej;

	memset(c, 0, sizeof(*c));
	if (rdma_create_id(ch, &c->id, NULL, RDMA_PS_TCP))
		return -1;
	type = -1;
	st = errno = 0;
	if (rdma_resolve_addr(c->id, (struct sockaddr *)src, (struct sockaddr *)dst, 2000) ||
	    wait_ev(c->id, &type, &st, &rej) || type != RDMA_CM_EVENT_ADDR_RESOLVED) {
		snprintf(last_fail, sizeof(last_fail), "resolve_addr:event=%d,status=%d,errno=%d",
			 type, st, errno);
		return 2;
	}
	if (rdma_resolve_route(c->id, 2000) || wait_ev(c->id, &type, &st, &rej) ||
	    type != RDMA_CM_EVENT_ROUTE_RESOLVED) {
		snprintf(last_fail, sizeof(last_fail), "resolve_route:event=%d,status=%d,errno=%d",
			 type, st, errno);
		return 2;
	}
	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = c->pd ? ibv_create_cq(c->id->verbs, 8, NULL, NULL, 0) : NULL;
	if (!c->cq)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, c->pd, &qa))
		return -1;
	c->mr = ibv_reg_mr(c->pd, c->buf, sizeof(c->buf), IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		return -1;
	put32(req + 8, size);
	memset(&p, 0, sizeof(p));
	p.private_data = req;
	p.private_data_len = sizeof(req);
	p.responder_resources = p.initiator_depth = 1;
	p.retry_count = p.rnr_retry_count = 7;
	type = -1;
	if (rdma_connect(c->id, &p) || wait_ev(c->id, &type, &st, &rej)) {
		snprintf(last_fail, sizeof(last_fail), "connect:errno=%d", errno);
		return 2;
	}
	if (type == RDMA_CM_EVENT_ESTABLISHED)
		return 1;
	if (type == RDMA_CM_EVENT_REJECTED && rej == 1)
		return 0;
	snprintf(last_fail, sizeof(last_fail), "connect:event=%d,status=%d,reason=%u", type, st,
		 rej);
	return 2;
}

static void conn_free(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	memset(c, 0, sizeof(*c));
}

/* A PING with a random MAC; 1 when a PONG (any successful RECV) came back within 3 s. */
static int forged_ping(struct conn *c)
{
	struct ibv_sge rs = {(uintptr_t)c->buf, 72, c->mr->lkey};
	struct ibv_sge ss = {(uintptr_t)(c->buf + 72), 72, c->mr->lkey};
	struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &rs, .num_sge = 1}, *brw;
	struct ibv_send_wr sw = {.wr_id = 2,
				 .sg_list = &ss,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bsw;
	struct ibv_wc wc;
	unsigned char *m = c->buf + 72;
	int64_t end = now_ms() + 3000;
	FILE *r = fopen("/dev/urandom", "rb");

	if (!r || fread(m, 1, 72, r) != 72) {
		if (r)
			fclose(r);
		return 0;
	}
	fclose(r);
	memcpy(m, "GXRD", 4);
	m[4] = 2;
	m[5] = 4; /* PING */
	if (ibv_post_recv(c->id->qp, &rw, &brw) || ibv_post_send(c->id->qp, &sw, &bsw))
		return 0;
	while (now_ms() < end) {
		int n = ibv_poll_cq(c->cq, 1, &wc);

		if (n < 0)
			return 0;
		if (n == 0) {
			pause_ms(10);
			continue;
		}
		if (wc.opcode == IBV_WC_RECV)
			return wc.status == IBV_WC_SUCCESS;
		if (wc.status != IBV_WC_SUCCESS)
			return 0;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in dst, src;
	struct conn *c = calloc(MAXHELD, sizeof(*c)), one;
	int tries = 0, accepted = 0, refused = 0, pongs = 0, forged = 0, rc, k;
	int64_t t0 = now_ms(), end = t0 + 60000;

	if (argc != 5 || !c) {
		fprintf(stderr, "usage: rdma_stranger SRC DST PORT SIZE\n");
		return 2;
	}
	memset(&dst, 0, sizeof(dst));
	memset(&src, 0, sizeof(src));
	dst.sin_family = src.sin_family = AF_INET;
	dst.sin_port = htons((uint16_t)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[1], &src.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[2], &dst.sin_addr) != 1)
		return 2;
	argv++;
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("rdma_create_event_channel");
		return 1;
	}
	while (refused < 8 && tries < 200 && nheld < MAXHELD && now_ms() < end) {
		rc = attempt(&src, &dst, (uint32_t)strtoul(argv[3], NULL, 10), &c[nheld]);
		if (rc < 0) {
			perror("stranger: verbs setup");
			return 1;
		}
		fprintf(stderr, "%lld ms: connect %s\n", (long long)(now_ms() - t0),
			rc == 1	  ? "accepted"
			: rc == 0 ? "refused (busy)"
				  : last_fail);
		if (rc == 2) { /* no listener yet: not a try */
			conn_free(&c[nheld]);
			pause_ms(10);
			continue;
		}
		tries++;
		if (rc == 1) {
			accepted++;
			held[nheld] = c[nheld].id;
			nheld++;
			if (++live > max_live)
				max_live = live;
		} else {
			refused++;
			conn_free(&c[nheld]);
		}
		pause_ms(50);
	}
	for (k = 0; k < nheld; k++)
		conn_free(&c[k]);
	nheld = 0;
	live = 0;
	pause_ms(200);
	for (k = 0; k < 3 && now_ms() < end + 10000;) {
		rc = attempt(&src, &dst, (uint32_t)strtoul(argv[3], NULL, 10), &one);
		if (rc == 1) {
			forged++;
			pongs += forged_ping(&one);
			k++;
		}
		conn_free(&one);
		if (rc != 1)
			pause_ms(50);
	}
	printf("stranger: tries=%d accepted=%d refused=%d max_held=%d pongs=%d forged=%d "
	       "(last connect that was no try: %s)\n",
	       tries, accepted, refused, max_live, pongs, forged, last_fail);
	rdma_destroy_event_channel(ch);
	free(c);
	return 0;
}
