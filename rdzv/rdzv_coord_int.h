/* SPDX-License-Identifier: MIT */
/* rdzv_coord_int.h - the coordinator's state, shared by the files of the coordinator:
 * rdzv_coord*.c, rdzv_carry.c (relays), rdzv_preflight.c, rdzv_addrs.c, rdzv_blame.c and
 * rdzv_fabric.c. A member's files never include it. */
#ifndef RDZV_COORD_INT_H
#define RDZV_COORD_INT_H

#include "rdzv/rdzv_int.h"

enum cc_role {
	ROLE_HANDSHAKE = 0, /* before JOIN / VERIFY */
	ROLE_MEMBER,	    /* phase 1: holds the peer's slot */
	ROLE_PENDING,	    /* phase 1: same name as a live one, PING under way */
	ROLE_VERIFY,	    /* phase 2: closes after VERIFIED */
	ROLE_OBSERVER,	    /* no slot: gets WAITING and the COMMIT with the table */
};

struct rdzv_coord;

/* One listening socket of the coordinator. secondary: bound to its secondary interface
 * (SO_BINDTODEVICE) and address, the only one a VERIFY is taken from (cfg.bind_iface). */
struct rdzv_lsn {
	struct rdzv_coord *co;
	int fd;
	int secondary;
};
#define RDZV_MAX_LISTEN 4

struct cconn {
	struct rdzv_conn rc;
	struct rdzv_coord *co;
	struct cconn *prev, *next;
	enum cc_role role;
	int peer;	      /* slot index for MEMBER / PENDING / VERIFY, else -1 */
	int claimed;	      /* index named in HELLO (rejection notes) or TVERIFY, else -1 */
	int out_pending;      /* counted in co->nout */
	int64_t deadline;     /* handshake / close deadline, 0 = none */
	unsigned spared;      /* 1 << RC_HELLO / RC_AUTH: that step's deadline was extended */
	int64_t ping_at;      /* PING sent to this (older) connection */
	struct rdzv_peer *pj; /* PENDING: its JOIN, until promoted */
	struct gx_pa_ent pa;  /* in co->pa until the session is up */
	uint8_t ticketed;     /* session from a TVERIFY (RDMA pending): its VERIFY counts one */
	uint8_t via_sec;      /* accepted on a secondary listener: it came in on that interface */
	/* a carried connection: its relay and its id there */
	struct cconn *relay;
	uint32_t kid;
	uint8_t close_sent; /* its CK_CLOSE is queued: the relay ends the child's connection */
	/* a relay (JOIN with RDZV_PF_RELAY): its children, records waiting for one CARRY */
	struct cconn **kids;
	uint32_t nkids;
	struct rdzv_buf carry;
	struct cconn *dirty_next;
	uint8_t is_relay, dirty, told_committed;
	uint8_t shut; /* a closing relay: our side is shut down, its input drained to EOF */
};

struct cpeer {
	struct cconn *conn;    /* live phase-1 connection */
	struct cconn *pending; /* newer connection with the same name */
	uint8_t joined, verified, told;
	uint8_t commit_sent; /* its COMMIT went out on a live session */
	uint8_t vt;	     /* vkey holds an unused phase-2 ticket */
	uint8_t final;	     /* its own route or family failed it (final VFAIL): rdzv_blame.c */
	unsigned char vkey[RDZV_KEY_LEN];
	char *note; /* why it is missing: rejection / verification failure */
};

struct rdzv_coord {
	struct gx_ev *ev;
	struct rdzv_config cfg; /* token cleared; names/job_id point at caller memory */
	char job_id[129];
	char *const *names;
	rdzv_done_fn *done;
	void *arg;
	uint32_t world;
	struct rdzv_lsn lsn[RDZV_MAX_LISTEN];
	int nlfd, paused;
	int sec_bound; /* secondary listeners are up: a VERIFY must come through one */
	uint64_t sweep_id, deadline_id;
	unsigned char k[RDZV_KEY_LEN];
	int has_token;
	uint64_t round;
	struct rdzv_peer *tab; /* world entries, [0] = coordinator */
	struct cpeer *st;
	uint32_t njoined, nverified, ntold; /* members only */
	struct cconn *conns;
	size_t nconns, nout, maxconns;
	int64_t next_report, finish_by;
	int64_t relay_wait_until; /* done waits for the relays' closes until (COMMIT, ABORT) */
	int64_t flood_until;	  /* no slow-member extension before (RDZV_PREAUTH_ROOM_DIV) */
	long nofile;	   /* the open-file limit at start, when it bounds maxconns below world */
	size_t need_conns; /* connections the job needs at once (with nofile) */
	int committed, aborted, finishing, done_called, deadline_passed, linger;
	int commit_loop;       /* inside check_commit's COMMITs: CK_COMMITTED follows them all */
	uint32_t ncommit_sent; /* members whose COMMIT went out */
	int commit_wait_logged;
	int64_t commit_wait_until; /* a member without a live session may come back until */
	int final_rc, abort_code;
	int rdma_listening;
	uint32_t nobservers;
	uint32_t npending;     /* slots with a newer JOIN waiting for the PING */
	uint64_t njunk;	       /* connections dropped for malformed input */
	char **enames;	       /* elastic: names[i] for every slot (listed, or tab[i].name) */
	uint32_t nnames;       /* listed names; slots from here on are assigned by name */
	uint32_t need;	       /* peers (itself included) joined + verified before COMMIT */
	uint32_t nassigned;    /* elastic: slots in use, a prefix of at most world */
	struct rdzv_buf table; /* encoded once, on the first full_table COMMIT */
	struct rdzv_result res;
	struct gx_pa pa; /* unauthenticated direct connections: a stranger's budget */
	/* ... and carried ones, apart: a relay's children never take a direct connection's
	 * room (VERIFYs and members' reconnects go direct) nor it theirs */
	struct gx_pa pa_kids;
	struct gx_aset known;	  /* the table's addresses (JOINs): known in both budgets */
	struct gx_rl rl_pre;	  /* warnings about them */
	struct gx_rl rl_star;	  /* members sent to a relay: the star had no room */
	char unauth_note[300];	  /* the last refusal before a proof: never blamed on a peer */
	uint64_t nunauth_refused; /* JOINs refused before authentication */
	struct rdzv_rng *rng;	  /* challenge nonces, no syscall each */
	/* the key a TVERIFY for a slot without a ticket is MAC'd under: the same work */
	unsigned char decoy[RDZV_KEY_LEN];
	struct cconn *dirty;	  /* relays with records not yet in a CARRY (rdzv_co_carry_flush) */
	size_t ncarried;	  /* carried connections open (not in nconns: they hold no fd) */
	uint32_t nrelays_open;	  /* relays in session: done waits for them after a COMMIT */
	struct rdzv_pf *pf;	  /* preflight (rdzv_preflight.c), NULL when off */
	struct rdzv_addrs *addrs; /* secondary address -> slot: IPAM conflicts (rdzv_addrs.c) */
	uint32_t nfinal;	  /* members failed for good (final VFAIL) */
	int64_t blame_at;	  /* then the line is decided by (rdzv_blame.c) */
	unsigned char rbuf[16384]; /* one recv per readiness, all whole frames parsed */
};

/* ---- rdzv_coord_out.c: what the coordinator sends, and its end ---- */
void rdzv_co_update_out(struct rdzv_coord *co, struct cconn *cc);
int rdzv_co_send(struct rdzv_coord *co, struct cconn *cc, uint16_t type, const struct rdzv_buf *b);
/* cc leaves the pre-authentication budget (authenticated, or going) */
void rdzv_co_pa_del(struct rdzv_coord *co, struct cconn *cc);
void rdzv_co_close_later(struct rdzv_coord *co, struct cconn *cc);
/* The end of every event: the relays' records go out; the job ends once it is over. */
void rdzv_co_maybe_done(struct rdzv_coord *co);
/* The job ends with rc (once): what is queued goes out, relays carry it to their children,
 * then rdzv_co_maybe_done calls done. */
void rdzv_co_finish(struct rdzv_coord *co, int rc);
void rdzv_co_abort(struct rdzv_coord *co, int code, int linger, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void rdzv_co_send_abort(struct rdzv_coord *co, struct cconn *cc);
/* The end of an event the coordinator did not see (a timer of the caller's) */
void rdzv_co_event_end(struct rdzv_coord *co);

/* ---- rdzv_coord_state.c: the job's state ---- */
void rdzv_co_drop(struct rdzv_coord *co, struct cconn *cc, const char *why);
void rdzv_co_assign(struct rdzv_coord *co, struct cconn *cc);
void rdzv_co_commit_one(struct rdzv_coord *co, uint32_t i);
void rdzv_co_commit_conn(struct rdzv_coord *co, struct cconn *cc, uint32_t rank, int table);
void rdzv_co_check_commit(struct rdzv_coord *co);
void rdzv_co_accept_join(struct rdzv_coord *co, struct cconn *cc);
void rdzv_co_soft_fail(struct rdzv_coord *co, uint32_t i, const char *why);

/* ---- rdzv_coord_msg.c: the handshake and a session's messages ---- */
/* HELLO -> CHALLENGE, AUTH -> PROOF | REJECT, TVERIFY. Same return. */
int rdzv_co_handshake(struct rdzv_coord *co, struct cconn *cc, uint16_t type,
		      const unsigned char *body, size_t len);
/* A frame on a coordinator connection (a CARRY is rdzv_co_input's): 0 handled, 1 the
 * connection is gone. */
int rdzv_co_handle(struct rdzv_coord *co, struct cconn *cc, uint16_t type,
		   const unsigned char *body, size_t len);
/* A ticket VERIFY (RDZV_TVERIFY: body, then the MAC) as the first frame. Same return. */
int rdzv_co_tverify(struct rdzv_coord *co, struct cconn *cc, const unsigned char *body, size_t len);
/* Its ticket check: NULL and *sp when m's MAC verifies under its slot's unused ticket, else
 * why not; the same MAC work either way (a decoy key for a slot without a ticket). */
const char *rdzv_co_ticket_check(struct rdzv_coord *co, const struct rdzv_msg *m,
				 const unsigned char *body, size_t blen, struct cpeer **sp);

/* ---- rdzv_coord_io.c: the coordinator's listeners, intake and input ---- */
/* Listeners (wildcard v4 + v6, or cfg.listen_addr; with cfg.bind_iface also
 * the secondary addresses, bound to the secondary interface, on the same port). */
int rdzv_co_listen_open(struct rdzv_coord *co);
void rdzv_co_listen_resume(struct rdzv_coord *co);
void rdzv_co_listen_close(struct rdzv_coord *co);

/* ---- rdzv_carry.c: the coordinator's side of relays ---- */
/* A relay's JOIN was accepted on cc: it may carry children from now on. */
int rdzv_co_relay_on(struct rdzv_coord *co, struct cconn *cc);
/* One record (id, kind, n bytes at p) into relay r's next CARRY. */
void rdzv_co_carry_rec(struct rdzv_coord *co, struct cconn *r, uint32_t id, uint8_t kind,
		       const unsigned char *p, size_t n);
/* Move a carried connection's queued output into its relay's records. */
void rdzv_co_carry_out(struct rdzv_coord *co, struct cconn *cc);
/* Seal every relay's records into CARRY frames and write them (end of an event). */
void rdzv_co_carry_flush(struct rdzv_coord *co);
/* The coordinator COMMITted: every relay is told after its children's COMMITs. */
void rdzv_co_relays_committed(struct rdzv_coord *co);
/* One relay: its own COMMIT went (a relay that rejoins after the COMMIT too). */
void rdzv_co_relay_committed(struct rdzv_coord *co, struct cconn *r);
/* A direct JOIN (entry p) of a member that belongs behind a relay: 0 when the coordinator
 * has room for it under its connection bound, else 1: answered (sent to a relay in
 * session, or told to wait) and closing. */
int rdzv_co_star_room(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_peer *p);

/* ---- rdzv_fabric.c ---- */
/* A member's FABRIC frame (its body, after the MAC was checked) */
int rdzv_co_fabric(struct rdzv_coord *co, struct cconn *cc, const unsigned char *body, size_t len);

/* ---- rdzv_preflight.c: the hold before the COMMIT and its verdict ---- */
int rdzv_co_pf_init(struct rdzv_coord *co);
void rdzv_co_pf_free(struct rdzv_coord *co);
/* In check_commit, once every condition holds: 1 while the preflight gathers or runs. */
int rdzv_co_pf_hold(struct rdzv_coord *co);
/* 1 while the preflight measures (the progress line says so). */
int rdzv_co_pf_running(const struct rdzv_coord *co);
/* The deadline passed during the preflight: 1 when that ended the job here. */
int rdzv_co_pf_deadline(struct rdzv_coord *co, long secs);
/* A PREFLIGHT frame from a member's session. */
void rdzv_co_pf_recv(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_msg *m);
/* COMMIT to slot i: 1 to send it (the job rank put into b), 0 to skip (left out). */
int rdzv_co_pf_commit_put(struct rdzv_coord *co, struct rdzv_buf *b, uint32_t i);
/* The result after the COMMIT (ranked table, world); the encoded table when ranked. */
void rdzv_co_pf_result(struct rdzv_coord *co);
const struct rdzv_buf *rdzv_co_pf_table(struct rdzv_coord *co);
/* After the COMMIT a pod got its rank (joined late): the changed() callback. */
void rdzv_co_pf_changed(struct rdzv_coord *co, uint32_t i);

/* ---- rdzv_addrs.c: one secondary address, two pods (an IPAM conflict) ---- */
int rdzv_co_addrs_init(struct rdzv_coord *co);
void rdzv_co_addrs_free(struct rdzv_coord *co);
/* The JOIN of p for slot on cc: 0, or GX_ECONFLICT with the line in why (another live
 * pod, on another host, has one of its secondary addresses). */
int rdzv_co_addrs_check(struct rdzv_coord *co, uint32_t slot, const struct rdzv_peer *p,
			const struct cconn *cc, char *why, size_t len);
/* slot's entry (tab) holds its addresses now. */
void rdzv_co_addrs_claim(struct rdzv_coord *co, uint32_t slot);

/* ---- rdzv_blame.c: whom the line names when members cannot reach the coordinator ---- */
/* Member i failed for good (its note says why): the job ends once the others' outcomes are
 * in, or RDZV_BLAME_WAIT_MS later (rdzv_co_blame_due, from the sweep). */
void rdzv_co_final_fail(struct rdzv_coord *co, uint32_t i, const char *why);
void rdzv_co_blame_due(struct rdzv_coord *co, int64_t now);
/* 1 and the line in out when the coordinator is the odd one among the members marked in
 * failed[] (world bytes): two or more, none verified, all outside its subnet. */
int rdzv_co_coord_odd(struct rdzv_coord *co, const uint8_t *failed, char *out, size_t len);
#endif
