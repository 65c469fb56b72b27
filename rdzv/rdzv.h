/* SPDX-License-Identifier: MIT */
/*
 * rdzv.h - the authenticated rendezvous of gxboot: one
 * coordinator (peer 0) and N-1 members meet over the primary network, verify
 * each member on the secondary network, and hand out ranks and MASTER_ADDR.
 * The protocol, threat model and resource bounds are in rdzv/PROTOCOL.md.
 *
 * Everything runs inside a caller-owned gx_ev loop: no threads, no blocking
 * calls (the rdma ops and the resolve callback answer later, from the
 * loop). Library code does not print errors: it reports one line in
 * rdzv_result.err and returns GX_E* codes (gx_exit_code() maps them).
 */
#ifndef RDZV_H
#define RDZV_H

#include "rdzv/gx/gx.h"

#include <stddef.h>
#include <stdint.h>

/* One peer as it travels in JOIN / ASSIGN / COMMIT. Every string is validated
 * (rdzv_peer_check) on the coordinator when received and again on a member. */
struct rdzv_peer {
	char name[254];	      /* DNS-1123, <= 253 */
	uint32_t index;	      /* position in the rank-ordered peer list (= rank) */
	uint64_t incarnation; /* random per start of the pod's gxboot */
	char iface[16];	      /* secondary netdev, "" when netdetect failed */
	char addr4[16];	      /* secondary IPv4, "" when none */
	char addr6[46];	      /* secondary IPv6, "" when none */
	char rdma_dev[64];    /* "" without a usable RDMA device */
	int rdma_port;
	int gid_index; /* -1 = none */
	int link_layer;
	uint32_t slots;
	int nd_err;	    /* 0, or the pod's own netdetect error: it joins anyway, to be named */
	char nd_why[256];   /* its one line */
	char seen_from[46]; /* coordinator: source address of the secondary VERIFY */
	char primary[46];   /* coordinator: source address of the phase-1 JOIN */
	int mtu;	    /* the secondary netdev's MTU, 0 unknown */
	char rails[320];    /* "dev:port/netdev/addr,..." netdev-name order: 8 rails (a GPU node's
			       HCAs) */
	int plen4, plen6;   /* prefix lengths of addr4 / addr6 (0 unknown): named in route lines */
	int64_t join_ms, verify_ms; /* coordinator's monotonic clock */
	uint32_t flags;		    /* RDZV_PF_* */
};

#define RDZV_PF_FULL_TABLE 0x1u /* member asks for the whole table in COMMIT */
#define RDZV_PF_SERVES 0x2u	/* member serves remote exec */
#define RDZV_PF_OBSERVER 0x8u	/* an observer's JOIN: no rank, gets the table at COMMIT */
#define RDZV_PF_ELASTIC 0x10u	/* an elastic JOIN by name: the coordinator picks the rank */
#define RDZV_PF_STAYS 0x20u /* coordinator keeps its sessions after the COMMIT (agent sets it) */
#define RDZV_PF_RELAY 0x40u /* a relay's JOIN: its session also carries its children's (tree) */
#define RDZV_PF_FABRIC                                                                             \
	0x80u /* member: keeps its session and sends FABRIC reports (agent sets it) */
#define RDZV_PF_VFAILED                                                                            \
	0x4u /* soft_verify: netdetect or secondary VERIFY failed; why in nd_why                   \
	      */

/*
 * RDMA-CM verification seam (phase 2). Called only when BOTH ends
 * report a usable RDMA device and the ops pointer is not NULL; otherwise
 * phase 2 is TCP-only and rdzv_result.rdma_verified stays 0.
 * check() starts on a member once its phase-2 TCP connection is in session (after the
 * handshake, or after a TVERIFY that says the check follows: PROTOCOL.md "Phase-2
 * ticket"), inside ev: resolve
 * address and route to the coordinator's secondary address, rdma_connect, one
 * small send/recv, by deadline_ms. done(done_arg, rc, why) follows once from
 * the loop (never from inside check): 0, or a negative code and its one line.
 * check() returns 0 when started, else a negative code (done is not called).
 * cancel() stops a running check without calling done (none running: no-op).
 */
typedef void rdzv_rdma_check_fn(void *done_arg, int rc, const char *why);
struct rdzv_rdma_ops {
	int (*check)(void *arg, struct gx_ev *ev, const struct rdzv_peer *self,
		     const struct rdzv_peer *coord, uint16_t port, int64_t deadline_ms,
		     rdzv_rdma_check_fn *done, void *done_arg);
	void (*cancel)(void *arg);
	/*
	 * Coordinator: start answering check() (RDMA-CM listen on self's
	 * secondary address and port, inside ev) before any JOIN is answered.
	 * A failure is reported as one why line; the coordinator then clears
	 * its RDMA device (members verify over TCP only) and warns.
	 * close() stops it (called from rdzv_coord_free; listen may not have run).
	 */
	int (*listen)(void *arg, struct gx_ev *ev, const struct rdzv_peer *self, uint16_t port,
		      char *why, size_t whylen);
	void (*close)(void *arg);
	void *arg;
};

/*
 * Observers (MPI Operator's launcher): not in the peer list, no
 * rank. self.index = RDZV_OBSERVER, self.name its own host name; it joins like
 * a member, skips phase 2 and gets the whole table with the COMMIT (rank -1).
 * The coordinator takes at most RDZV_MAX_OBSERVERS; an observer that arrives
 * after the COMMIT is answered only by a coordinator that keeps serving.
 */
#define RDZV_OBSERVER 0xffffffffu
#define RDZV_MAX_OBSERVERS 8

/*
 * Elastic jobs (Ray, `--nnodes MIN:MAX`): world is MAX, only the
 * first nnames names are known up front (at least the coordinator's). The
 * coordinator COMMITs as soon as min_peers (>= 1, itself included) are
 * joined and verified, keeps serving, and hands every later pod a rank at
 * once. A pod not in the list joins with self.index = RDZV_ELASTIC and its
 * own name; the coordinator gives it the slot that name had before, else
 * the first free one, else the one idle longest ("elastic job is full" only
 * when every slot is live). Elastic members cannot ask for the full table.
 */
#define RDZV_ELASTIC 0xfffffffeu

/*
 * A pod's transport report after the COMMIT (PROTOCOL.md "Fabric reports"): verdict, flags
 * and rails are the agent's codes, carried as they are; the line and the addresses are
 * checked (safe text, addresses re-printed) on the coordinator.
 */
#define RDZV_FABRIC_LINE 640
#define RDZV_FABRIC_REMOTES 8
struct rdzv_fabric {
	uint32_t verdict, flags, rails;
	char primary_if[16]; /* "" unknown */
	char line[RDZV_FABRIC_LINE];
	struct {
		char addr[46];
		uint64_t bytes;
	} remotes[RDZV_FABRIC_REMOTES]; /* addresses over the primary interface it cannot name */
	size_t nremotes;
};

struct rdzv_config {
	struct rdzv_peer self;
	int is_coordinator;
	uint32_t world;
	char *const *names; /* world names (elastic: nnames), rank order; [0] = coordinator */
	int elastic;
	uint32_t nnames;    /* elastic: names listed (>= 1) */
	uint32_t min_peers; /* elastic: COMMIT once this many are in (>= 1) */
	const char *job_id;
	const unsigned char *token; /* NULL = no token ("unauthenticated") */
	size_t token_len;
	uint16_t port;
	const char *coord_name;
	/* member: the coordinator's primary address (used when resolve is NULL) */
	union gx_sockaddr coord_addr;
	socklen_t coord_addrlen;
	/*
	 * member: called before each connect attempt; 0 fills sa/len, < 0 fails
	 * the attempt, -EINPROGRESS means the answer comes later through
	 * rdzv_member_resolved() (a lookup in the caller's loop, never blocking it)
	 */
	int (*resolve)(void *arg, union gx_sockaddr *sa, socklen_t *len);
	void *resolve_arg;
	int64_t deadline_ms; /* monotonic (gx_now_ms) */
	int full_table;	     /* member: ask for every peer's entry */
	int keep_serving;    /* coordinator: keep answering after COMMIT (restarted pods) */
	/*
	 * check, which never aborts on a broken pair: a member whose netdetect or secondary VERIFY
	 * fails still counts, flagged RDZV_PF_VFAILED with the why in nd_why, so
	 * the COMMIT happens and the broken pod stays in over the primary network.
	 */
	int soft_verify;
	const struct rdzv_rdma_ops *rdma;
	void (*progress)(void *arg, const char *line); /* coordinator, every 5 s */
	void *progress_arg;
	/* coordinator: listen only here (port taken from it); 0 len = wildcard v4 + v6 */
	union gx_sockaddr listen_addr;
	socklen_t listen_addrlen;
	/*
	 * The job-end notice, so that servers exit with the job's status (StatefulSet and
	 * Indexed-Job workers complete). A member with stay keeps
	 * its phase-1 session open after the COMMIT (done() is still called
	 * then); ended() follows once, with the status the coordinator sent in
	 * END, or -1 and a why when the session dropped. A coordinator calls
	 * ended() when an observer sends END (its job's status).
	 */
	int stay;
	void (*ended)(void *arg, int status, const char *why);
	void *ended_arg;
	/*
	 * Coordinator, after the COMMIT: a pod got (or got back) its rank, e.g. an
	 * elastic joiner or a restarted pod. tab / n: the peer table now (elastic:
	 * the slots in use), valid during the call. For `gxboot hosts`.
	 */
	void (*changed)(void *arg, const struct rdzv_peer *tab, size_t n);
	void *changed_arg;
	/* Coordinator, after the COMMIT: member index sent a FABRIC report (valid during the call).
	 */
	void (*fabric)(void *arg, uint32_t index, const struct rdzv_fabric *f);
	void *fabric_arg;
	/*
	 * The relay tree (PROTOCOL.md "Relays"): with relay_fanout F > 0 member i
	 * makes its phase-1 connection to peer (i / F) * F, its relay, instead of to the
	 * coordinator (relays and the first F members go to the coordinator). A relay listens
	 * (relay_listen, or the wildcard addresses, on port) and carries its children's bytes
	 * on its own phase-1 session: handshake, JOIN, ASSIGN, COMMIT stay end to end between
	 * each member and the coordinator, and phase 2 goes to the coordinator's secondary
	 * address as before. relay_resolve answers like resolve, for the name of the relay
	 * (names[relay]: its own, or another one the coordinator sent it to); a member whose
	 * relay fails twice over relay_patience_ms, or drops it twice, goes to the
	 * coordinator, which takes it while it has room under its connection bound and
	 * otherwise sends it to a relay in session (or tells it to wait). Members with stay
	 * use the coordinator (their session outlives the relay's). All peers must agree on F
	 * (0: no tree).
	 */
	uint32_t relay_fanout;
	int relay_patience_ms; /* 0: RDZV_RELAY_PATIENCE_MS */
	/*
	 * The path (PROTOCOL.md "Phase 2 is the job's path"). Linux is a weak-host kernel: an
	 * address says nothing of the interface a packet uses. With bind_iface, the member's
	 * phase-2 connection is bound to self.iface (SO_BINDTODEVICE) and the coordinator takes
	 * a VERIFY only from a listener bound to its own secondary interface. route(), when set,
	 * says whether the kernel sends to dst from src out of iface, as an unbound socket of
	 * the job's would go: 0, or GX_EROUTE and one line in why (dst_plen: dst's prefix
	 * length, 0 unknown). The member asks it for the coordinator's secondary address
	 * before phase 2 (a failure ends the job at once, naming it); the coordinator for each
	 * member's before it accepts its VERIFY.
	 */
	int bind_iface;
	int (*route)(void *arg, const char *src, const char *dst, int dst_plen, const char *iface,
		     char *why, size_t whylen);
	void *route_arg;
	int (*relay_resolve)(void *arg, uint32_t relay, union gx_sockaddr *sa, socklen_t *len);
	union gx_sockaddr relay_listen;
	socklen_t relay_listen_len;
	/*
	 * Preflight (PROTOCOL.md "Preflight"): the coordinator holds its COMMIT once every
	 * pod is joined and verified (elastic: MAX are in, or pf_settle_ms after min_peers)
	 * and calls pf_start with the slots that take part (n, [0] = itself; tab: the whole
	 * table, valid during the call). The caller measures the paths in its loop, with
	 * PREFLIGHT frames carried on the phase-1 sessions (opaque bytes, at most
	 * RDZV_PF_DATA_MAX each: rdzv_coord_pf_send / rdzv_member_pf_send; pf_recv gets them,
	 * slot 0 on a member), and ends it with rdzv_coord_pf_done. A member needs only
	 * pf_recv. Off (0 / NULL), nothing changes and nothing is sent.
	 */
	int preflight;
	int64_t pf_settle_ms;
	void (*pf_start)(void *arg, const uint32_t *slots, uint32_t n, const struct rdzv_peer *tab);
	void (*pf_recv)(void *arg, uint32_t slot, const unsigned char *p, size_t len);
	void *pf_arg;
};

#define RDZV_PF_DATA_MAX 4000

struct rdzv_result {
	int rank;
	uint32_t world;
	char master_addr[46]; /* the coordinator's secondary address */
	struct rdzv_peer coord;
	struct rdzv_peer *table; /* coordinator, or member with full_table; rank order */
	size_t ntable;
	int authenticated;  /* 0: no token on this side (the agent warns) */
	char waiting[1024]; /* member: the latest waiting list from the coordinator */
	char err[1024];	    /* the one line for a failure */
	int64_t t_start_ms, t_joined_ms, t_verified_ms, t_commit_ms;
	int rdma_verified;
	uint64_t round;		/* this rendezvous' random round id (binds later messages to it) */
	char rdma_warning[512]; /* coordinator: RDMA-CM listen failed (TCP only) */
	/*
	 * member: the negative code of the last phase-1 connect or I/O failure
	 * (-ECONNREFUSED, -ECONNRESET for a reset or a close, ...), 0 none. The
	 * agent's hints decide from it, never from err's text.
	 */
	int conn_err;
	/* coordinator: secondary VERIFYs that came with the ASSIGN's ticket, no second
	 * handshake (a member falls back to one when its ticket fails) */
	uint32_t ntickets;
	/* coordinator: unauthenticated connections it closed at a handshake deadline (a
	 * HELLO or AUTH late, also after the grace for its own lag), evicted at the bound, and
	 * handshake deadlines it extended for a slow member (RDZV_PREAUTH_ROOM_DIV) */
	uint32_t nhs_late, nevicted, nslow;
	/* coordinator: relays that joined, sessions they carried (all, incl. strangers'), and
	 * relays lost before the COMMIT; member: 1 when it joined through its relay, and for a
	 * relay the children it carried */
	uint32_t nrelays, ncarried, nrelays_lost;
	int via_relay;
	/* the preflight's line when it left pods out (both sides: the COMMIT carries it) */
	char note[512];
};

struct rdzv_coord;
struct rdzv_member;

/* rc: 0 or GX_E*; res stays valid until the coordinator/member is freed. */
typedef void rdzv_done_fn(void *arg, int rc, const struct rdzv_result *res);

/* done is called once, never from inside the start function. */
int rdzv_coord_start(struct gx_ev *ev, const struct rdzv_config *cfg, rdzv_done_fn *done, void *arg,
		     struct rdzv_coord **ret);
void rdzv_coord_free(struct rdzv_coord *c);
int rdzv_member_start(struct gx_ev *ev, const struct rdzv_config *cfg, rdzv_done_fn *done,
		      void *arg, struct rdzv_member **ret);
void rdzv_member_free(struct rdzv_member *m);
/* The answer to a resolve() that returned -EINPROGRESS (ignored when none is pending). */
void rdzv_member_resolved(struct rdzv_member *m, int rc, const union gx_sockaddr *sa,
			  socklen_t len);

/*
 * The job ended with status (0..255): the coordinator tells every member and
 * observer still connected (END), an observer tells the coordinator. The
 * frames are queued; run the loop until rdzv_*_flushed() (or ~1 s). 0 or
 * -ENOTCONN when there is no session to tell.
 */
int rdzv_coord_end(struct rdzv_coord *c, int status);
int rdzv_member_end(struct rdzv_member *m, int status);
int rdzv_coord_flushed(const struct rdzv_coord *c);

/* A member that stays after its COMMIT (cfg.stay) sends its transport report: 0 (queued),
 * -ENOTCONN without a session, -ENOMEM. */
int rdzv_member_fabric(struct rdzv_member *m, const struct rdzv_fabric *f);
int rdzv_member_flushed(const struct rdzv_member *m);

/*
 * A relay still carries children after its own COMMIT (their COMMITs, their closes):
 * 1 until they are done or the coordinator's session ends. The caller keeps the loop
 * running while it is 1 (a few ms; bounded by RDZV_RELAY_DRAIN_MS) before it execs.
 */
int rdzv_member_relaying(const struct rdzv_member *m);

/*
 * Preflight transport and verdict (rdzv_preflight.c). send: 0, -ENOTCONN (no session for
 * that slot, or no preflight running), -EMSGSIZE. pf_done: leave[slot] = 1 for each pod the
 * preflight blames (NULL: none), line names them with their figures. None blamed: the
 * COMMIT goes out. Blamed pods get an ABORT with GX_ELEFTOUT; a fixed world, a blamed
 * coordinator or an elastic job left with fewer than min_peers ends (the others get
 * GX_EPREFLIGHT); otherwise the elastic job commits the rest with contiguous ranks
 * 0..K-1 and world K (rdzv_result.rank / world on each side; the table in that order),
 * and pods that join later get the next ranks.
 */
int rdzv_coord_pf_send(struct rdzv_coord *c, uint32_t slot, const void *p, size_t len);
int rdzv_member_pf_send(struct rdzv_member *m, const void *p, size_t len);
void rdzv_coord_pf_done(struct rdzv_coord *c, const unsigned char *leave, const char *line);

/* A copy of a result the caller kept: frees its table (when it took one) and zeroes it. */
void rdzv_result_clear(struct rdzv_result *res);

/*
 * 32-byte key for a purpose from the token: master = BLAKE2b-256(token);
 * purpose "label[:context]" with label 1..5 of [a-z]; context (if any) is
 * mixed in with keyed BLAKE2b; key = crypto_kdf_derive_from_key(id 1,
 * ctx "gxb<label>" padded with '_'). "auth" is the rendezvous key,
 * "rsh:<job id>" the remote-exec credential. 0 or -EINVAL.
 */
int rdzv_derive_key(const unsigned char *token, size_t len, const char *purpose,
		    unsigned char out[32]);

/*
 * The job's address family is MASTER_ADDR's (the coordinator's IPv4 address when it has
 * one, else its IPv6 one): every table row of a committed job has an address in it.
 * rdzv_peer_addr gives p's address in the family of master ("" none).
 */
const char *rdzv_peer_addr(const struct rdzv_peer *p, const char *master);

/* 0 when every field of p is acceptable (names, addresses re-printed, safe
 * text); else GX_EINVAL_NAME and a why line. Normalises addresses in place. */
int rdzv_peer_check(struct rdzv_peer *p, char *why, size_t whylen);

#endif
