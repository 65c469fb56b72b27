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
 * longer than an authenticated peer's silence (RDZV_HANDSHAKE_MS). */
#define RDZV_PREAUTH_GRACE_MS 1000
/* A pre-authentication deadline that passes with nothing unread (the member is slow: its
 * node loaded, its process starved) is extended once per step to RDZV_HANDSHAKE_MS from
 * the step's start while fewer than 1/RDZV_PREAUTH_ROOM_DIV of the connection bound are
 * unauthenticated: closing it would only make the member reconnect (a RST and one more
 * handshake). Past that share (a flood) the deadlines hold as above, and for
 * RDZV_HANDSHAKE_MS after the last sweep that saw it (the tail of a flood gets none). */
#define RDZV_PREAUTH_ROOM_DIV 4
#define RDZV_HELLO_MS 1000	    /* accept -> HELLO (a member sends it at once) */
#define RDZV_PROOF_MS 2000	    /* HELLO -> AUTH: a stranger's time */
#define RDZV_PREAUTH_PER_SRC 4	    /* unauthenticated connections per address (a member needs 2) */
#define RDZV_MIN_CONNS 1024	    /* connection bound floor: junk cannot fill a small job's */
#define RDZV_SWEEP_MS 250	    /* the one periodic timer */
#define RDZV_REPORT_MS 5000	    /* progress line and WAITING push */
#define RDZV_DEADLINE_GRACE_MS 3000 /* joined member waits this past --timeout */
#define RDZV_PING_MS 2000	    /* same name, new connection: the old one's PONG */
#define RDZV_BACKOFF_MIN_MS 100
#define RDZV_BACKOFF_MAX_MS 2000
#define RDZV_REFUSED_MIN_MS 5	    /* a refused connect is retried every d, the first */
#define RDZV_REFUSED_SYN_PER_S 2000 /* after [0, d): d = max(5 ms, world / 2000 s) */
#define RDZV_LIST_NAMES 40	    /* names quoted in one line, then "and N more" */
/* After a member's final failure, the others' outcomes are awaited this long before the
 * line is decided: the coordinator may be the odd one (rdzv_blame.c) */
#define RDZV_BLAME_WAIT_MS 1500
/* a member reads at most this much per readiness (one recv), then handles every whole frame */
#define RDZV_MB_RBUF 4096
/* The relay tree (PROTOCOL.md "Relays") */
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
	RDZV_END = 20, /* after COMMIT: the job ended (T_CODE status), both ways */
	/* M->C, the first frame of a phase-2 connection: VERIFY MAC'd under the ticket key
	 * from the ASSIGN, no handshake (PROTOCOL.md "Phase-2 ticket") */
	RDZV_TVERIFY = 21,
	/* relay <-> coordinator, in the relay's phase-1 session after its JOIN: records of
	 * carried connections (PROTOCOL.md "Relays") */
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
/* The phase-2 ticket key (a handshake less per member): MAC(S1, "gxboot verify\0" | nonce), S1 the
 * phase-1 session key of the connection that carried the ASSIGN with the nonce. */
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
	/* the socket and its frames (rdzv/gx/gx.h): f.fd; f.fed, the coordinator's (its input
	 * is what one recv per readiness brought, fed in; never a recv of its own); f.cork,
	 * rdzv_conn_send queues without writing and the caller flushes once per event;
	 * f.carried, the coordinator's side of a child behind a relay (no fd: input fed from the
	 * relay's CARRY records, output moved into them). f.sealed_tx / f.sealed_rx: frames go
	 * out / come in with the session MAC (rdzv_conn_up, rdzv_conn_early). */
	struct gx_frame f;
	enum rdzv_conn_state state;
	int is_coord; /* our side */
	unsigned char nm[RDZV_NONCE_LEN], nc[RDZV_NONCE_LEN];
	unsigned char skey[RDZV_KEY_LEN];
	uint64_t seq_tx, seq_rx;
	uint8_t peer_vmaj, peer_vmin; /* from the last header read (a version refusal names it) */
	char peer_str[INET6_ADDRSTRLEN];
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
	return gx_frame_pending(&c->f) > 0;
}
/* The session is up: MAC'd frames both ways. */
static inline int rdzv_conn_up(const struct rdzv_conn *c)
{
	return c->f.sealed_rx;
}
/* The member's sending half only (rdzv_conn_session_tx): MAC'd out, clear in. */
static inline int rdzv_conn_early(const struct rdzv_conn *c)
{
	return c->f.sealed_tx && !c->f.sealed_rx;
}
/* The owner's loop watches c's fd for input, and for output while some is queued. */
void rdzv_conn_watch(struct gx_ev *ev, const struct rdzv_conn *c);
/* Out of the loop, unread input drained (so that the close sends no RST), then reset. */
void rdzv_conn_close(struct gx_ev *ev, struct rdzv_conn *c);
/* Bring the session up: skey from K and both nonces, sequences from 0 (the send
 * sequence goes on where rdzv_conn_session_tx started it). */
void rdzv_conn_session(struct rdzv_conn *c, const unsigned char k[RDZV_KEY_LEN]);
/*
 * The member's sending half of the session, right after its AUTH (a round trip less): JOIN or
 * VERIFY go out MAC'd in the same flight, before the coordinator's PROOF. Receiving
 * stays clear until rdzv_conn_session (after the PROOF is verified), so nothing from the
 * coordinator is accepted earlier; what is sent early is what a JOIN always carried
 * (names and addresses, no secret: PROTOCOL.md "Threat model").
 */
void rdzv_conn_session_tx(struct rdzv_conn *c, const unsigned char k[RDZV_KEY_LEN]);
/* The session of a phase-2 connection opened with a ticket: skey = the ticket key, both
 * sequences from 0 (the coordinator's receiving one from 1: the ticket frame was its 0). */
void rdzv_conn_session_ticket(struct rdzv_conn *c, const unsigned char vkey[RDZV_KEY_LEN]);

/* ---- rdzv_auth.c: nonces without a syscall each --------------------------- */
/* A ChaCha20 keystream under a key from randombytes_buf, one stream nonce per call.
 * Its page is MADV_WIPEONFORK: a forked child finds it zeroed and draws a new key,
 * never the parent's stream. NULL (no memory, a kernel without WIPEONFORK): every
 * call is randombytes_buf. */
struct rdzv_rng;
struct rdzv_rng *rdzv_rng_new(void);
void rdzv_rng_buf(struct rdzv_rng *r, void *out, size_t n);
void rdzv_rng_free(struct rdzv_rng *r);

/* ---- rdzv_config.c: what both roles check and share ----------------------- */
/* Checks a config for either role; fills a validated copy of cfg->self. */
int rdzv_config_check(const struct rdzv_config *cfg, struct rdzv_peer *self);
int64_t rdzv_backoff_ms(int attempt);
/* The wait before retrying a refused connect (the coordinator is not listening yet):
 * quick for a small job, spread so that world members send ~2,000 SYN/s in all. The
 * first wait of a run of refusals is uniform in [0, d) (a random phase), the others are
 * d: the last member learns of the listen at most d after it, not 1.5 d. */
int64_t rdzv_refused_ms(uint32_t world, int first);

#endif
