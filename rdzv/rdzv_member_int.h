/* SPDX-License-Identifier: MIT */
/* rdzv_member_int.h - the member's state, shared by rdzv_member.c (connections,
 * timers, start/free) and rdzv_member_msg.c (handshake and session messages). */
#ifndef RDZV_MEMBER_INT_H
#define RDZV_MEMBER_INT_H

#include "rdzv/rdzv_int.h"

#define M_SILENCE_MS (3 * RDZV_REPORT_MS + 1000) /* no frame on phase 1: reconnect */
#define M_TICK_MS 1000
/* Once the coordinator proved the token (phase 1) it is serving us: its silence is
 * slowness (a loaded node), not death. TCP keepalive, answered by its kernel however busy its
 * process, finds a node or process that went away: dead after M_KA_IDLE_S + M_KA_CNT *
 * M_KA_INTVL_S. */
#define M_KA_IDLE_S 5
#define M_KA_INTVL_S 2
#define M_KA_CNT 3

enum m_state {
	M_CONNECT = 0, /* phase 1 not yet assigned */
	M_ASSIGNED,    /* phase 2 under way */
	M_VERIFIED,    /* waiting for COMMIT */
	M_STAYING,     /* committed, phase-1 session kept for END (cfg.stay) */
	M_DONE,
};

struct mconn {
	struct rdzv_conn rc;
	struct rdzv_member *m;
	int phase;	  /* 1 or 2 */
	int64_t deadline; /* handshake (phase 1 until ASSIGN, phase 2 until VERIFIED) */
	int64_t last_rx;
	int64_t opened; /* connect() time: the handshake clock (see hs_late) */
	int keepalive;	/* TCP keepalive watches the peer: no silence rule (slow is not dead) */
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
	/* read_frames' flag on its stack while it hands frames out: cleared when the member is
	 * freed meanwhile (by the caller's done), so that it stops touching it */
	int *alive;
	enum m_state st;
	int attempt1, attempt2, auth_failed, ever_answered;
	uint64_t retry1_id, retry2_id, tick_id, deadline_id;
	int grace_used;	   /* the deadline grace of a joined member was given */
	unsigned nrefused; /* phase-1 connects refused in a row (the first retry: a phase) */
	unsigned nearly;   /* phase-1 connections accepted, then closed before any answer */
	int resolving;	   /* a resolve() answer is pending (rdzv_member_resolved) */
	int rdma_checking; /* the RDMA-CM check() runs in the loop: VERIFY waits for it */
	int nobind;	   /* SO_BINDTODEVICE was refused (EPERM): phase 2 bound to its address */
	/* the phase-2 ticket of the last ASSIGN, unused yet; none when RDMA-CM
	 * must be checked (the check sits between the phase-2 handshake and VERIFY) */
	int vt;
	unsigned char vkey[RDZV_KEY_LEN];
	uint64_t round;
	char err1[300], err2[512];
	char rejected[300]; /* a clear REJECT before the session (retried: forgeable), or "" */
	int reject_code, reject_phase;
	struct rdzv_result res;
	/* the relay tree: our relay's index (0: none), whether phase 1 still goes
	 * there, whether the open c1 does and reached a session; the relay's failures */
	uint32_t relay_idx;
	int via_relay, c1_relay, c1_up, c1_late;
	unsigned relay_fails, relay_drops;
	char redirect[300]; /* the coordinator had no room for us directly: why, or "" */
	int64_t relay_first_ms;
	/* we are a relay (rdzv_relay.c); relay_only: we stay after our COMMIT only for it */
	struct mrelay *relay;
	int relay_only;
};

/* ---- rdzv_relay.c: a member that carries its children's sessions ---- */
/* Listen for children (cfg.relay_listen or the wildcard, port): 0, or < 0 (no relay).
 * lost(m, why): our records for the coordinator were lost (out of memory): phase 1 fails. */
int rdzv_mb_relay_open(struct rdzv_member *m, void (*lost)(struct rdzv_member *, const char *));
void rdzv_mb_relay_free(struct rdzv_member *m);
/* The session on c1 is up, or c1's output drained: children's records go out. */
void rdzv_mb_relay_push(struct rdzv_member *m);
/* c1 failed: the children go when their records reached the coordinator in that session;
 * if it never came up (the coordinator not listening yet), they wait for the next one. */
void rdzv_mb_relay_lost(struct rdzv_member *m);
/* A CARRY on c1: 0, 1 (the member is done), < 0 protocol error. */
int rdzv_mb_relay_carry(struct rdzv_member *m, const unsigned char *body, size_t len);
/* Our COMMIT came: keep carrying (done() is called) until the children are served. */
void rdzv_mb_relay_stay(struct rdzv_member *m);
int rdzv_mb_relay_active(const struct rdzv_member *m);

/* A MAC'd REJECT RDZV_RJ_RELAY: to the relay it names, or wait and try again. 1. */
int rdzv_mb_redirected(struct rdzv_member *m, const struct rdzv_msg *msg);
void rdzv_mb_close(struct rdzv_member *m, struct mconn *c);
/* TCP keepalive on c's socket (idle, interval in s, count); 0 or -errno. */
int rdzv_mb_keepalive(struct mconn *c, int idle, int intvl, int cnt);
void rdzv_mb_update(struct rdzv_member *m, struct mconn *c);
int rdzv_mb_send(struct rdzv_member *m, struct mconn *c, uint16_t type, struct rdzv_buf *b);
void rdzv_mb_cancel_timers(struct rdzv_member *m);
void rdzv_mb_finish(struct rdzv_member *m, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void rdzv_mb_fail2(struct rdzv_member *m, const char *why);
void rdzv_mb_fail(struct rdzv_member *m, struct mconn *c, const char *why);
/* M_STAYING: the session ended (END status, or -1 and why); ended() once. */
void rdzv_mb_ended(struct rdzv_member *m, int status, const char *why);
void rdzv_mb_p2_connect(struct rdzv_member *m);
int rdzv_mb_send_hello(struct rdzv_member *m, struct mconn *c);
/* Phase 2 connected with an unused ticket: the session is up, VERIFY goes at once, or
 * after the RDMA-CM check it starts (TVERIFY flagged RDZV_VF_RDMA_PENDING). */
int rdzv_mb_send_tverify(struct rdzv_member *m, struct mconn *c);
/* Forget the phase-2 ticket (used, or phase 2 failed / phase 1 lost). */
void rdzv_mb_ticket_end(struct rdzv_member *m);
/* A frame on c: 0 go on, 1 the member is done or c was closed, < 0 protocol error. */
int rdzv_mb_on_frame(struct rdzv_member *m, struct mconn *c, uint16_t type,
		     const unsigned char *body, size_t len);

#endif
