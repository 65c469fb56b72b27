/* SPDX-License-Identifier: MIT */
/* rdzv_int.h - internals of the rendezvous: wire codec, auth, connections. */
#ifndef RDZV_INT_H
#define RDZV_INT_H

#include "rdzv/rdzv.h"

#include <sodium.h>

/* ---- resource bounds (PROTOCOL.md "Bounds") ---------------------------- */
#define RDZV_MAGIC 0x47584231u /* "GXB1" */
#define RDZV_VMAJOR 2
#define RDZV_VMINOR 0
#define RDZV_HDR_LEN 12
#define RDZV_MAC_LEN 32
#define RDZV_NONCE_LEN 32
#define RDZV_KEY_LEN 32
#define RDZV_MAX_BODY 4096 /* every message but COMMIT */
/* COMMIT with the full table: 65,536 peers with 8 rails each encode to ~26 MiB (405
 * bytes a row); 48 MiB leaves room for 770 bytes a row (long names, a why line) */
#define RDZV_MAX_TABLE_BODY (48u << 20)
#define RDZV_MAX_WORLD 16384
#define RDZV_MAX_WORLD_RELAYED 65536 /* with relay_fanout: the coordinator holds ~world/F */
#define RDZV_MAX_CONNS 40000	     /* coordinator: open connections */
#define RDZV_HANDSHAKE_MS 5000	     /* until JOIN/VERIFY is processed */
/* After the COMMIT, a member whose phase-1 session was gone (reconnecting: its silence
 * rule, a loaded node) may rejoin and take its COMMIT for this long, within the deadline. */
#define RDZV_COMMIT_WAIT_MS 20000
/* A pre-authentication deadline that passes while the step it waits for sits unread in
 * the socket (our loop was behind: 16384 members on a loaded node) is extended once per
 * step by this much, so a stranger lives at most 1 + 1 + 2 + 1 s unauthenticated, no
 * longer than an authenticated peer's silence (RDZV_HANDSHAKE_MS) (issue 26). */
#define RDZV_PREAUTH_GRACE_MS 1000
/* A pre-authentication deadline that passes with nothing unread (the member is slow: its
 * node loaded, its process starved) is extended once per step to RDZV_HANDSHAKE_MS from
 * the step's start while fewer than 1/RDZV_PREAUTH_ROOM_DIV of the connection bound are
 * unauthenticated: closing it would only make the member reconnect (a RST and one more
 * handshake, issue 26). Past that share (a flood) the deadlines hold as above, and for
 * RDZV_HANDSHAKE_MS after the last sweep that saw it (the tail of a flood gets none). */
#define RDZV_PREAUTH_ROOM_DIV 4
#define RDZV_HELLO_MS 1000	    /* accept -> HELLO (a member sends it at once) */
#define RDZV_PROOF_MS 2000	    /* HELLO -> AUTH: the first proof (issue 25) */
#define RDZV_PREAUTH_PER_SRC 4	    /* unauthenticated connections per address (a member needs 2) */
#define RDZV_MIN_CONNS 1024	    /* connection bound floor: junk cannot fill a small job's */
#define RDZV_SWEEP_MS 250	    /* the one periodic timer */
#define RDZV_REPORT_MS 5000	    /* progress line and WAITING push */
#define RDZV_DEADLINE_GRACE_MS 3000 /* joined member waits this past --timeout */
#define RDZV_PING_MS 2000	    /* DECISIONS 6 */
#define RDZV_BACKOFF_MIN_MS 100
#define RDZV_BACKOFF_MAX_MS 2000
#define RDZV_REFUSED_MIN_MS 5	    /* a refused connect is retried every d, the first */
#define RDZV_REFUSED_SYN_PER_S 2000 /* after [0, d): d = max(5 ms, world / 2000 s) */
#define RDZV_LIST_NAMES 40	    /* names quoted in one line, then "and N more" */
/* After a member's final failure, the others' outcomes are awaited this long before the
 * line is decided: the coordinator may be the odd one (rdzv_blame.c) */
#define RDZV_BLAME_WAIT_MS 1500
#define RDZV_FRAMES_PER_EVENT 16
/* The relay tree (issue 26, PROTOCOL.md "Relays") */
#define RDZV_CARRY_MAX 65536 /* CARRY body: records of child bytes */
#define RDZV_CARRY_REC 9     /* record header: id u32, kind u8, len u32 */
#define RDZV_RELAY_KIDS 1024 /* carried connections per relay at once (2F at 512) */
/* A member tries its relay this long (and twice) before it goes to the coordinator: the
 * relay's pod is one of the gang, so the job waits for it anyway; what this catches is a
 * relay pod whose gxboot cannot relay (its port taken, a crash loop) */
#define RDZV_RELAY_PATIENCE_MS 20000
#define RDZV_RELAY_DRAIN_MS 5000 /* a relay carries its children's COMMITs at most this long */
#define RDZV_RELAY_KID_OUT (RDZV_MAX_TABLE_BODY + RDZV_CARRY_MAX) /* queued to one child */
#define RDZV_RELAY_PER_SRC 8 /* a relay's children from one address at once (loopback exempt) */
/* ... and from one IPv6 /64 (a node's pods share one; a stranger with one has 2^64 addresses):
 * half the slots, so one /64 cannot take them all, and the fan-out (<= 512) fits */
#define RDZV_RELAY_PER_NET (RDZV_RELAY_KIDS / 2)
#define RDZV_RELAY_UP_HIGH (1u << 20) /* children's bytes queued up: stop reading them */

/* ---- message types ------------------------------------------------------ */
enum rdzv_type {
	RDZV_HELLO = 1,	    /* M->C, clear */
	RDZV_CHALLENGE = 2, /* C->M, clear */
	RDZV_AUTH = 3,	    /* M->C, clear (carries a proof) */
	RDZV_PROOF = 4,	    /* C->M, clear (carries a proof); session up after it */
	RDZV_REJECT = 5,    /* C->M, clear before the session, MAC'd after */
	RDZV_JOIN = 10,
	RDZV_ASSIGN = 11,
	RDZV_VERIFY = 12,
	RDZV_VERIFIED = 13,
	RDZV_VFAIL = 14,
	RDZV_COMMIT = 15,
	RDZV_ABORT = 16,
	RDZV_WAITING = 17,
	RDZV_PING = 18,
	RDZV_PONG = 19,
	RDZV_END = 20, /* after COMMIT: the job ended (T_CODE status), both ways (issue 17) */
	/* M->C, the first frame of a phase-2 connection: VERIFY MAC'd under the ticket key
	 * from the ASSIGN, no handshake (PROTOCOL.md "Phase-2 ticket", issue 26) */
	RDZV_TVERIFY = 21,
	/* relay <-> coordinator, in the relay's phase-1 session after its JOIN: records of
	 * carried connections (PROTOCOL.md "Relays", issue 26) */
	RDZV_CARRY = 22,
	/* M->C after the COMMIT: the member's transport report (PROTOCOL.md "Fabric reports") */
	RDZV_FABRIC = 23,
	/* both ways, before the COMMIT: the caller's preflight bytes (T_PFDATA); numbered apart
	 * from the others so that types added meanwhile do not collide (PROTOCOL.md
	 * "Preflight") */
	RDZV_PREFLIGHT = 30,
};

/* CARRY record kinds */
enum rdzv_carry_kind {
	CK_OPEN = 1,	  /* relay -> C: a child connected; bytes: its address (text) */
	CK_DATA = 2,	  /* both ways: the child's stream */
	CK_CLOSE = 3,	  /* both ways: the child's connection ended / end it after the data */
	CK_COMMITTED = 4, /* C -> relay: the COMMIT went out; children leave, then the relay */
};

/* A MAC'd REJECT of a JOIN with this T_CODE is not final: the coordinator cannot hold the
 * member directly (it belongs behind a relay); T_INDEX names a relay in session to join
 * through, or is absent (none: wait). A GX_E* code is negative, this is not. */
#define RDZV_RJ_RELAY 1
/* Direct connections a coordinator keeps for VERIFYs in flight when it decides whether a
 * member that belongs behind a relay may join it directly: maxconns / 8, at most this */
#define RDZV_VERIFY_SLACK 64

/* VERIFY / TVERIFY T_FLAGS */
#define RDZV_VF_RDMA 1u		/* the member's RDMA-CM check to the coordinator passed */
#define RDZV_VF_RDMA_PENDING 2u /* TVERIFY only: the session is up, VERIFY follows the check */

/* ---- TLV types ---------------------------------------------------------- */
enum rdzv_tlv {
	T_NONCE = 1,
	T_HAS_TOKEN = 2,
	T_NAME = 3,
	T_JOB_ID = 4,
	T_PROOF = 5,
	T_CODE = 6,
	T_TEXT = 7,
	T_INDEX = 8,
	T_INCARNATION = 9,
	T_IFACE = 10,
	T_ADDR4 = 11,
	T_ADDR6 = 12,
	T_RDMA_DEV = 13,
	T_RDMA_PORT = 14,
	T_GID_INDEX = 15,
	T_LINK_LAYER = 16,
	T_SLOTS = 17,
	T_ND_ERR = 18,
	T_ND_WHY = 19,
	T_FLAGS = 20,
	T_RANK = 21,
	T_WORLD = 22,
	T_ROUND = 23,
	T_MASTER = 24,
	T_PEER = 25, /* nested TLV list: one peer entry */
	T_COUNT = 26,
	T_SEEN_FROM = 27,
	T_ENTRY = 28, /* nested TLV list: one table row (COMMIT) */
	T_MTU = 29,
	T_RAILS = 30,
	T_PRIMARY = 31,
	T_VTICKET = 32, /* ASSIGN: the phase-2 ticket's nonce (RDZV_TICKET_LEN) */
	T_PLENS = 33,	/* peer: prefix lengths, plen4 | plen6 << 8 (u32) */
	T_FREMOTE = 34, /* FABRIC: u64 bytes, then an address (text) */
	/* preflight (PROTOCOL.md "Preflight"): PREFLIGHT's bytes; a COMMIT's job rank and
	 * world after the preflight shrank an elastic job (T_RANK / T_WORLD stay the slot's) */
	T_PFDATA = 40,
	T_JRANK = 41,
	T_JWORLD = 42,
};

#define RDZV_TICKET_LEN 16

struct rdzv_hdr {
	uint32_t magic;
	uint8_t vmaj, vmin;
	uint16_t type;
	uint32_t len;
};

/* Growable output buffer; err sticks after the first failure. */
struct rdzv_buf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

/* A decoded message: every field any message may carry. */
struct rdzv_msg {
	uint16_t type;
	unsigned char nonce[RDZV_NONCE_LEN], proof[RDZV_MAC_LEN];
	int has_nonce, has_proof, has_token;
	char name[254];
	char job_id[129];
	int code;
	char text[1024];
	uint32_t index, rank, world, count, flags;
	uint64_t incarnation, round;
	char master[46];
	struct rdzv_peer peer; /* JOIN: the sender; ASSIGN/COMMIT: the coordinator */
	int has_peer;
	unsigned char vticket[RDZV_TICKET_LEN]; /* ASSIGN: T_VTICKET */
	int has_vticket;
	const unsigned char *table; /* COMMIT: first T_PEER entry of the table */
	size_t table_len;
	uint32_t ntable;
	const unsigned char *pf; /* PREFLIGHT: T_PFDATA (points into the body) */
	size_t pflen;
	uint32_t jrank, jworld; /* COMMIT: T_JRANK / T_JWORLD (has_jrank) */
	int has_jrank;
};

/* ---- rdzv_wire.c -------------------------------------------------------- */
void rdzv_hdr_encode(unsigned char out[RDZV_HDR_LEN], uint16_t type, uint32_t len);
/* Checks magic, major version, per-type maximum (mac: the MAC is included). */
int rdzv_hdr_decode(const unsigned char in[RDZV_HDR_LEN], int mac, struct rdzv_hdr *h);
size_t rdzv_max_body(uint16_t type);
void rdzv_buf_free(struct rdzv_buf *b);
void rdzv_put_raw(struct rdzv_buf *b, const void *p, size_t n);
void rdzv_put(struct rdzv_buf *b, uint16_t t, const void *v, size_t n);
void rdzv_put_str(struct rdzv_buf *b, uint16_t t, const char *s);
void rdzv_put_u32(struct rdzv_buf *b, uint16_t t, uint32_t v);
void rdzv_put_u64(struct rdzv_buf *b, uint16_t t, uint64_t v);
void rdzv_put_peer(struct rdzv_buf *b, uint16_t t, const struct rdzv_peer *p);
/* CARRY records (the relay tree): {id u32, kind u8, len u32, bytes}, network order. */
void rdzv_put_rec(struct rdzv_buf *b, uint32_t id, uint8_t kind, const void *p, size_t n);
/* The record at *off: 1 (fields set, *off past it), 0 at the end, GX_EPROTO when it runs
 * past len (its length is checked before p is set). */
int rdzv_rec_next(const unsigned char *body, size_t len, size_t *off, uint32_t *id, uint8_t *kind,
		  const unsigned char **p, uint32_t *n);
/* Walk TLVs: 1 = one more (t, v, n), 0 = end, GX_EPROTO = truncated. */
int rdzv_tlv_next(const unsigned char *p, size_t len, size_t *off, uint16_t *t,
		  const unsigned char **v, uint16_t *n);
int rdzv_peer_decode(const unsigned char *p, size_t len, struct rdzv_peer *peer);
int rdzv_msg_decode(uint16_t type, const unsigned char *body, size_t len, struct rdzv_msg *m);
/* Copy s into out replacing anything gx_safe_text refuses with '?'. */
void rdzv_sanitize(char *out, size_t outlen, const char *s);
/* Text an unauthenticated party sent (a REJECT before the session), for a line of ours:
 * sanitized, at most RDZV_UNAUTH_TEXT bytes ("..." when cut), quoted and marked:
 * (WHO said, unauthenticated: "TEXT"). Whoever sits at the coordinator's address, or on the
 * path, chooses it: it must not read as ours in the termination log. */
#define RDZV_UNAUTH_TEXT 120
void rdzv_quote_unauth(char *out, size_t outlen, const char *who, const char *s);
/* "a, b, c and 12 more": at most RDZV_LIST_NAMES items, bounded by cap. */
struct rdzv_list {
	char *out; /* caller's buffer, out[0] = '\0' at start */
	size_t cap, len, n, shown;
	int full;
};
void rdzv_list_add(struct rdzv_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rdzv_list_end(struct rdzv_list *l);

/* ---- rdzv_auth.c -------------------------------------------------------- */
/* K from the token, or from the job id when there is none. */
int rdzv_auth_key(const unsigned char *token, size_t len, const char *job_id,
		  unsigned char k[RDZV_KEY_LEN]);
void rdzv_proof(const unsigned char k[RDZV_KEY_LEN], int coord,
		const unsigned char nm[RDZV_NONCE_LEN], const unsigned char nc[RDZV_NONCE_LEN],
		const char *job_id, unsigned char out[RDZV_MAC_LEN]);
int rdzv_proof_verify(const unsigned char k[RDZV_KEY_LEN], int coord,
		      const unsigned char nm[RDZV_NONCE_LEN],
		      const unsigned char nc[RDZV_NONCE_LEN], const char *job_id,
		      const unsigned char proof[RDZV_MAC_LEN]);
void rdzv_session_key(const unsigned char k[RDZV_KEY_LEN], const unsigned char nm[RDZV_NONCE_LEN],
		      const unsigned char nc[RDZV_NONCE_LEN], unsigned char s[RDZV_KEY_LEN]);
/* dir: 'M' member->coordinator, 'C' coordinator->member. */
void rdzv_mac(const unsigned char s[RDZV_KEY_LEN], uint8_t dir, uint64_t seq, uint16_t type,
	      const unsigned char *body, size_t len, unsigned char out[RDZV_MAC_LEN]);
int rdzv_mac_verify(const unsigned char s[RDZV_KEY_LEN], uint8_t dir, uint64_t seq, uint16_t type,
		    const unsigned char *body, size_t len, const unsigned char mac[RDZV_MAC_LEN]);
/* The phase-2 ticket key (issue 26): MAC(S1, "gxboot verify\0" | nonce), S1 the phase-1
 * session key of the connection that carried the ASSIGN with the nonce. */
void rdzv_ticket_key(const unsigned char s1[RDZV_KEY_LEN], const unsigned char vn[RDZV_TICKET_LEN],
		     unsigned char out[RDZV_KEY_LEN]);

/* ---- rdzv_conn.c: non-blocking buffered connection ----------------------- */
enum rdzv_conn_state {
	RC_CONNECTING = 0, /* member: connect() in progress */
	RC_HELLO,	   /* waiting for HELLO (coord) / CHALLENGE (member) */
	RC_AUTH,	   /* waiting for AUTH (coord) / PROOF (member) */
	RC_SESSION,	   /* MAC'd messages both ways */
	RC_CLOSING,	   /* flush the output, then close */
	RC_CLOSED,
};

struct rdzv_conn {
	int fd;
	enum rdzv_conn_state state;
	int is_coord; /* our side */
	int session;
	int tx_early; /* member: MAC'd sending before the peer's PROOF (pipelined AUTH) */
	unsigned char hdr[RDZV_HDR_LEN];
	size_t hoff;
	struct rdzv_hdr h;
	unsigned char *body;
	size_t boff;
	unsigned char *out;
	size_t olen, ooff, ocap;
	unsigned char nm[RDZV_NONCE_LEN], nc[RDZV_NONCE_LEN];
	unsigned char skey[RDZV_KEY_LEN];
	uint64_t seq_tx, seq_rx;
	uint8_t peer_vmaj, peer_vmin;
	char peer_str[INET6_ADDRSTRLEN];
	/* buffered (the coordinator's, issue 26): frames come from in/inlen, what one
	 * recv per readiness brought (rdzv_conn_read never calls recv then); cork:
	 * rdzv_conn_send queues without writing, the caller flushes once per event */
	int buffered, cork;
	const unsigned char *in;
	size_t inlen;
	/* carried (the coordinator's side of a child behind a relay, issue 26): no fd; input
	 * comes buffered from the relay's CARRY records, output is moved into them */
	int carried;
};

void rdzv_conn_init(struct rdzv_conn *c, int fd, int is_coord);
/* Frees buffers, closes the fd, wipes the session key. */
void rdzv_conn_reset(struct rdzv_conn *c);
/* 1: a frame is ready (type, body/len without the MAC; the caller frees
 * body); 0: need more input; < 0: error (-ECONNRESET on EOF, GX_EPROTO,
 * GX_EVERSION, GX_EMAC: a replayed, reordered or forged frame). */
int rdzv_conn_read(struct rdzv_conn *c, uint16_t *type, unsigned char **body, size_t *len);
/* Queue one frame (MAC'd when the session is up) and try to write it. */
int rdzv_conn_send(struct rdzv_conn *c, uint16_t type, const unsigned char *body, size_t len);
/* Write what is queued: 0 all written, 1 some left (wait for EPOLLOUT), < 0 error. */
int rdzv_conn_flush(struct rdzv_conn *c);
static inline int rdzv_conn_pending(const struct rdzv_conn *c)
{
	return c->ooff < c->olen;
}
/* Bring the session up: skey from K and both nonces, sequences from 0 (the send
 * sequence goes on where rdzv_conn_session_tx started it). */
void rdzv_conn_session(struct rdzv_conn *c, const unsigned char k[RDZV_KEY_LEN]);
/*
 * The member's sending half of the session, right after its AUTH (issue 26): JOIN or
 * VERIFY go out MAC'd in the same flight, before the coordinator's PROOF. Receiving
 * stays clear until rdzv_conn_session (after the PROOF is verified), so nothing from the
 * coordinator is accepted earlier; what is sent early is what a JOIN always carried
 * (names and addresses, no secret: PROTOCOL.md "Threat model").
 */
void rdzv_conn_session_tx(struct rdzv_conn *c, const unsigned char k[RDZV_KEY_LEN]);
/* The session of a phase-2 connection opened with a ticket: skey = the ticket key, both
 * sequences from 0 (the coordinator's receiving one from 1: the ticket frame was its 0). */
void rdzv_conn_session_ticket(struct rdzv_conn *c, const unsigned char vkey[RDZV_KEY_LEN]);

/* ---- rdzv_auth.c: nonces without a syscall each (issue 26) --------------- */
/* A ChaCha20 keystream under a key from randombytes_buf, one stream nonce per call.
 * Its page is MADV_WIPEONFORK: a forked child finds it zeroed and draws a new key,
 * never the parent's stream. NULL (no memory, a kernel without WIPEONFORK): every
 * call is randombytes_buf. */
struct rdzv_rng;
struct rdzv_rng *rdzv_rng_new(void);
void rdzv_rng_buf(struct rdzv_rng *r, void *out, size_t n);
void rdzv_rng_free(struct rdzv_rng *r);

/* ---- coordinator internals (rdzv_coord.c; handshake in rdzv_auth.c,
 * listeners in rdzv_conn.c) ---------------------------------------------- */
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
	/* a carried connection: its relay and its id there (issue 26) */
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
	uint8_t vt;	     /* vkey holds an unused phase-2 ticket (issue 26) */
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
	uint32_t npending;     /* slots with a newer JOIN waiting for the PING (DECISIONS 6) */
	uint64_t njunk;	       /* connections dropped for malformed input */
	char **enames;	       /* elastic: names[i] for every slot (listed, or tab[i].name) */
	uint32_t nnames;       /* listed names; slots from here on are assigned by name */
	uint32_t need;	       /* peers (itself included) joined + verified before COMMIT */
	uint32_t nassigned;    /* elastic: slots in use, a prefix of at most world */
	struct rdzv_buf table; /* encoded once, on the first full_table COMMIT */
	struct rdzv_result res;
	struct gx_pa pa; /* unauthenticated direct connections (issue 25) */
	/* ... and carried ones, apart: a relay's children never take a direct connection's
	 * room (VERIFYs and members' reconnects go direct) nor it theirs */
	struct gx_pa pa_kids;
	struct gx_aset known;	  /* the table's addresses (JOINs): known in both budgets */
	struct gx_rl rl_pre;	  /* warnings about them */
	struct gx_rl rl_star;	  /* members sent to a relay: the star had no room */
	char unauth_note[300];	  /* the last refusal before a proof: never blamed on a peer */
	uint64_t nunauth_refused; /* JOINs refused before authentication */
	struct rdzv_rng *rng;	  /* challenge nonces (issue 26) */
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

void rdzv_co_update_out(struct rdzv_coord *co, struct cconn *cc);
int rdzv_co_send(struct rdzv_coord *co, struct cconn *cc, uint16_t type, const struct rdzv_buf *b);
void rdzv_co_drop(struct rdzv_coord *co, struct cconn *cc, const char *why);
/* cc gives up the peer slot it holds or waits for (no longer joined before a COMMIT; a
 * pending newer JOIN takes it); its cconn stays. */
void rdzv_co_slot_unlink(struct rdzv_coord *co, struct cconn *cc);
/* cc leaves the pre-authentication budget (authenticated, or going) */
void rdzv_co_pa_del(struct rdzv_coord *co, struct cconn *cc);
void rdzv_co_close_later(struct rdzv_coord *co, struct cconn *cc);
void rdzv_co_abort(struct rdzv_coord *co, int code, int linger, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void rdzv_co_assign(struct rdzv_coord *co, struct cconn *cc);
void rdzv_co_commit_one(struct rdzv_coord *co, uint32_t i);
void rdzv_co_commit_conn(struct rdzv_coord *co, struct cconn *cc, uint32_t rank, int table);
void rdzv_co_check_commit(struct rdzv_coord *co);
void rdzv_co_accept_join(struct rdzv_coord *co, struct cconn *cc);
void rdzv_co_soft_fail(struct rdzv_coord *co, uint32_t i, const char *why);
void rdzv_co_compare_peers(struct rdzv_coord *co);
/* Elastic: the slot for a JOIN by name; GX_ERDZV when every slot is live. */
int rdzv_co_elastic_slot(struct rdzv_coord *co, const char *name, uint32_t *slot);
/* sa: the peer's address from accept4 (no getpeername per connection); via_sec: accepted
 * on a listener bound to the secondary interface */
void rdzv_co_conn_new(struct rdzv_coord *co, int fd, const union gx_sockaddr *sa, int via_sec);
/* A frame on a coordinator connection: 0 handled, 1 the connection is gone. */
int rdzv_co_handle(struct rdzv_coord *co, struct cconn *cc, uint16_t type,
		   const unsigned char *body, size_t len);
/* A ticket VERIFY (RDZV_TVERIFY: body, then the MAC) as the first frame. Same return. */
int rdzv_co_tverify(struct rdzv_coord *co, struct cconn *cc, const unsigned char *body, size_t len);
/* Its ticket check: NULL and *sp when m's MAC verifies under its slot's unused ticket, else
 * why not; the same MAC work either way (a decoy key for a slot without a ticket). */
const char *rdzv_co_ticket_check(struct rdzv_coord *co, const struct rdzv_msg *m,
				 const unsigned char *body, size_t blen, struct cpeer **sp);
/* rdzv_auth.c: HELLO -> CHALLENGE, AUTH -> PROOF | REJECT, TVERIFY. Same return. */
int rdzv_co_handshake(struct rdzv_coord *co, struct cconn *cc, uint16_t type,
		      const unsigned char *body, size_t len);
/* rdzv_conn.c: listeners (wildcard v4 + v6, or cfg.listen_addr; with cfg.bind_iface also
 * the secondary addresses, bound to the secondary interface, on the same port). */
int rdzv_co_listen_open(struct rdzv_coord *co);
void rdzv_co_listen_resume(struct rdzv_coord *co);
void rdzv_co_listen_close(struct rdzv_coord *co);
void rdzv_co_reject(struct rdzv_coord *co, struct cconn *cc, int code, const char *why);
void rdzv_co_send_abort(struct rdzv_coord *co, struct cconn *cc);

/* ---- rdzv_carry.c: the coordinator's side of relays (issue 26) ---- */
/* Frames in buf for cc (direct: one recv; carried: one record's bytes): handled, answers
 * corked and flushed (direct) or carried. 1 when cc is gone. */
int rdzv_co_input(struct rdzv_coord *co, struct cconn *cc, const unsigned char *buf, size_t n);
/* A relay's JOIN was accepted on cc: it may carry children from now on. */
int rdzv_co_relay_on(struct rdzv_coord *co, struct cconn *cc);
/* A CARRY from a relay: 0, or 1 when the relay's connection is gone. */
int rdzv_co_carry(struct rdzv_coord *co, struct cconn *cc, const unsigned char *body, size_t len);
/* rdzv_fabric.c: a member's FABRIC frame (its body, after the MAC was checked) */
int rdzv_co_fabric(struct rdzv_coord *co, struct cconn *cc, const unsigned char *body, size_t len);
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
/* rdzv_co_drop's part: a relay's children go with it; a child's close is queued. */
void rdzv_co_carry_drop(struct rdzv_coord *co, struct cconn *cc);

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
/* The end of an event the coordinator did not see (a timer of the caller's) */
void rdzv_co_event_end(struct rdzv_coord *co);

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

/* Checks a config for either role; fills a validated copy of cfg->self. */
int rdzv_config_check(const struct rdzv_config *cfg, struct rdzv_peer *self);

/* ---- shared helpers (rdzv_wire.c) --------------------------------------- */
int64_t rdzv_backoff_ms(int attempt);
/* The wait before retrying a refused connect (the coordinator is not listening yet):
 * quick for a small job, spread so that world members send ~2,000 SYN/s in all. The
 * first wait of a run of refusals is uniform in [0, d) (a random phase), the others are
 * d: the last member learns of the listen at most d after it, not 1.5 d (issue 26). */
int64_t rdzv_refused_ms(uint32_t world, int first);

#endif
