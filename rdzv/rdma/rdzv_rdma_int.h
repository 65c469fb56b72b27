/* SPDX-License-Identifier: MIT */
/*
 * rdzv_rdma_int.h - internals shared by rdzv_rdma.c (context, wire codec,
 * queue-pair resources, client) and rdzv_rdma_srv.c (server in gx_ev).
 * Private-data and message layouts: rdzv/PROTOCOL.md, "RDMA-CM".
 */
#ifndef RDZV_RDMA_INT_H
#define RDZV_RDMA_INT_H

#include "rdzv/gx/gx.h"
#include "rdzv/rdma/rdzv_rdma.h"

#define RDZV_RDMA_MAGIC 0x47585244u /* "GXRD" */
#define RDZV_RDMA_VERSION 2	    /* 2: the PING proves the job's key before memory is pinned */

enum rdzv_rdma_type {
	RDZV_RDMA_T_REQ = 1,  /* connect private data, client -> server */
	RDZV_RDMA_T_ACC = 2,  /* accept private data, server -> client */
	RDZV_RDMA_T_REJ = 3,  /* reject private data, server -> client */
	RDZV_RDMA_T_PING = 4, /* SEND, client -> server */
	RDZV_RDMA_T_PONG = 5, /* SEND, server -> client */
};

enum rdzv_rdma_rej {
	RDZV_RDMA_REJ_BUSY = 1,	    /* connection limit reached */
	RDZV_RDMA_REJ_BADREQ = 2,   /* malformed connect private data */
	RDZV_RDMA_REJ_TOOLARGE = 3, /* write size above the server's max_write */
	RDZV_RDMA_REJ_SETUP = 4,    /* server could not allocate the connection */
	RDZV_RDMA_REJ_VERSION = 5,  /* the REQ speaks another wire version */
};

/* PONG status */
enum rdzv_rdma_st {
	RDZV_RDMA_ST_OK = 0,
	RDZV_RDMA_ST_PINNED = 1, /* no room under RDZV_RDMA_PIN_MAX for the write target */
	RDZV_RDMA_ST_SETUP = 2,	 /* the write target could not be registered */
};

#define RDZV_RDMA_REQ_LEN 16
#define RDZV_RDMA_ACC_LEN 32
#define RDZV_RDMA_REJ_LEN 12
#define RDZV_RDMA_NONCE_LEN 16
#define RDZV_RDMA_MAC_LEN 32
#define RDZV_RDMA_MSG_LEN 72

struct rdzv_rdma_req {
	uint32_t write_size;
};

struct rdzv_rdma_acc {
	uint32_t mtu, max_write;
	unsigned char nonce[RDZV_RDMA_NONCE_LEN]; /* the server's, fresh per connection */
};

struct rdzv_rdma_msg {
	uint8_t type;	     /* PING / PONG (the direction, under the MAC) */
	uint8_t status;	     /* PONG: enum rdzv_rdma_st */
	uint32_t rank;	     /* the client's rank in the job's table */
	uint32_t write_size; /* PING: the bytes it will WRITE (= the REQ's) */
	uint32_t rkey;	     /* PONG: the write target, registered after the proof */
	uint64_t addr;
	unsigned char nonce[RDZV_RDMA_NONCE_LEN]; /* the client's, echoed by the PONG */
};

/* The MAC key and job id both ends hold (rdzv_rdma_set_key). */
struct rdzv_rdma_auth {
	unsigned char key[32];
	char job[128];
};

void rdzv_rdma_enc_req(const struct rdzv_rdma_req *r, unsigned char out[RDZV_RDMA_REQ_LEN]);
void rdzv_rdma_enc_acc(const struct rdzv_rdma_acc *a, unsigned char out[RDZV_RDMA_ACC_LEN]);
void rdzv_rdma_enc_rej(uint32_t reason, unsigned char out[RDZV_RDMA_REJ_LEN]);
/* HMAC-SHA-256(key, label, job id, server nonce, message) in the last 32 bytes. */
void rdzv_rdma_enc_msg(const struct rdzv_rdma_auth *au, const unsigned char ns[RDZV_RDMA_NONCE_LEN],
		       const struct rdzv_rdma_msg *m, unsigned char out[RDZV_RDMA_MSG_LEN]);
/*
 * Decoders take untrusted bytes: GX_EPROTO (short, bad magic/type), GX_EVERSION.
 * dec_rej takes any version (an older server's refusal still says why) and puts
 * the version it speaks in *version.
 */
int rdzv_rdma_dec_req(const void *p, size_t len, struct rdzv_rdma_req *r);
int rdzv_rdma_dec_acc(const void *p, size_t len, struct rdzv_rdma_acc *a);
int rdzv_rdma_dec_rej(const void *p, size_t len, uint32_t *reason, unsigned *version);
/* ... and GX_EMAC when the MAC does not verify (constant time): nothing is read then. */
int rdzv_rdma_dec_msg(const struct rdzv_rdma_auth *au, const unsigned char ns[RDZV_RDMA_NONCE_LEN],
		      const void *p, size_t len, struct rdzv_rdma_msg *m);

/* MTU enum of verbs -> bytes (0 unknown). */
int rdzv_rdma_mtu_bytes(enum ibv_mtu m);

/*
 * One connection's verbs resources: PD, completion channel (non-blocking
 * fd), CQ (armed), QP on the cm id, two registered message slots (recv, send)
 * and an optional data buffer (the server's WRITE target, the client's source).
 */
struct rdzv_rdma_qp {
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *msg_mr, *buf_mr;
	unsigned char *msg; /* [0, MSG_LEN) recv slot, [MSG_LEN, 2*MSG_LEN) send slot */
	void *buf;
	size_t buflen;
	int has_qp;
};

/* Creates everything on id (id->verbs must be set); why gets "ibv_reg_mr: ...". */
int rdzv_rdma_qp_setup(const struct rdzv_rdma_cm_ops *cm, struct rdma_cm_id *id,
		       struct rdzv_rdma_qp *q, size_t buflen, int buf_access, char *why,
		       size_t whylen);
/* The data buffer alone, on a set-up q without one (the server, after the proof). */
int rdzv_rdma_qp_buf(const struct rdzv_rdma_cm_ops *cm, struct rdzv_rdma_qp *q, size_t buflen,
		     int buf_access, char *why, size_t whylen);
/* Releases what setup created; safe on a zeroed or partly set up q. */
void rdzv_rdma_qp_free(const struct rdzv_rdma_cm_ops *cm, struct rdma_cm_id *id,
		       struct rdzv_rdma_qp *q);
int rdzv_rdma_post_recv(const struct rdzv_rdma_cm_ops *cm, struct rdma_cm_id *id,
			struct rdzv_rdma_qp *q);
int rdzv_rdma_post_msg(const struct rdzv_rdma_cm_ops *cm, struct rdma_cm_id *id,
		       struct rdzv_rdma_qp *q, const struct rdzv_rdma_auth *au,
		       const unsigned char ns[RDZV_RDMA_NONCE_LEN], const struct rdzv_rdma_msg *m);
/* One completion to its connection: 0 go on, non-zero stop (the value is returned). */
typedef int rdzv_rdma_wc_fn(void *arg, const struct ibv_wc *wc);
/*
 * One readiness of q's completion channel, in rdma-core's rping idiom (cq_thread): take the
 * event, ack it, re-arm the CQ, then hand every queued completion to fn until fn returns
 * non-zero (a completion that comes after the re-arm raises the next event). 0: drained,
 * or no event after all (-EAGAIN, -EINTR: the channel is non-blocking and stays readable,
 * so the loop comes back); fn's non-zero value; < 0 from the verbs call *what names
 * ("ibv_get_cq_event", "ibv_req_notify_cq", "ibv_poll_cq"; NULL when fn returned it).
 * q must not be touched by the caller once fn said stop and freed it.
 */
int rdzv_rdma_cq_drain(const struct rdzv_rdma_cm_ops *cm, struct rdzv_rdma_qp *q,
		       rdzv_rdma_wc_fn *fn, void *arg, const char **what);
/* "IBV_WC_RETRY_EXC_ERR" for a status. */
const char *rdzv_rdma_wc_str(enum ibv_wc_status s);
/* Sets O_NONBLOCK on fd; 0 or -errno. */
int rdzv_rdma_nonblock(int fd);

struct rdzv_rdma_srv;

struct rdzv_rdma_ctx {
	const struct rdzv_rdma_cm_ops *cm;
	size_t max_write;
	struct rdzv_rdma_ops ops;
	struct rdzv_rdma_srv *srv;  /* NULL when not serving */
	struct rdzv_rdma_auth auth; /* the job's RDMA key (rdzv_rdma_set_key) */
	unsigned answered;	    /* server: distinct ranks whose PING proved the key */
	unsigned char *proved;	    /* server: bitmap of those ranks */
	size_t proved_bytes;
	size_t pinned; /* server: bytes registered as write targets now */
	size_t pinned_peak;
	uint64_t refused;	     /* server: connections closed without a proof */
	struct rdzv_rdma_probe last; /* the latest check() (size -1: none yet) */
	struct rdzv_rdma_rail rails[RDZV_RDMA_MAX_RAILS];
	size_t nrails;
	int rails_on; /* check()/listen() cover the rails too (default) */
	struct rdzv_rdma_ctx *rail_srv[RDZV_RDMA_MAX_RAILS]; /* coordinator: one per extra rail */
	struct rdzv_rdma_chk *chk; /* member: the check() running, NULL none */
};

/* rdzv_rdma_rails.c: the struct rdzv_rdma_ops entries and the rails' state. */
int rdzv_rdma_ops_check(void *arg, struct gx_ev *ev, const struct rdzv_peer *self,
			const struct rdzv_peer *coord, uint16_t port, int64_t deadline_ms,
			rdzv_rdma_check_fn *done, void *done_arg);
void rdzv_rdma_ops_cancel(void *arg);
int rdzv_rdma_ops_listen(void *arg, struct gx_ev *ev, const struct rdzv_peer *self, uint16_t port,
			 char *why, size_t whylen);
void rdzv_rdma_ops_close(void *arg);
/* Cancels a running check, frees the rail servers and forgets the rails. */
void rdzv_rdma_rails_reset(struct rdzv_rdma_ctx *c);

#endif
