/* SPDX-License-Identifier: MIT */
/*
 * check_int.h - `gxboot check`: after a rendezvous with soft
 * verification (a broken pod stays in over the primary network) every pod opens the check service
 * on the check port, probes its targets over TCP (and RDMA-CM where both ends have a device) from
 * its secondary address, and reports its row to the coordinator over the primary network; the
 * coordinator answers every member with the global result. The wire is described in
 * agent/check/CHECK.md.
 *
 * check_report.c: the pure part (world of rows, report and result
 * (de)serialisation, frame MAC); check_render.c: summary, matrix, rows, JSON;
 * check_rails.c: check --rails (rails lists, rail set, which rail is broken);
 * check_serve.c / check_probe.c: the service and the clients in a gx_ev
 * loop; check_rdma.c: the RDMA-CM probes in the loop;
 * check.c: the check after its rendezvous (check.h; the command is cli/cmd_check.c).
 */
#ifndef AGENT_CHECK_INT_H
#define AGENT_CHECK_INT_H

#include "agent/agent.h"
#include "agent/check/check.h"
#include "rdzv/gx/gx.h"
#include "rdzv/rdzv.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#define CHECK_ECHO_K 5	  /* echo round trips per TCP probe */
#define CHECK_ECHO_MIN 16 /* echo payload bounds (bytes) */
#define CHECK_ECHO_MAX 64
#define CHECK_MAX_REPORT (4u << 20)  /* REPORT body cap */
#define CHECK_PREMAC_MAX (16u << 20) /* REPORT bytes buffered before their MACs, in all */
#define CHECK_PREAUTH_PER_SRC 8	     /* connections per address outside the table */
#define CHECK_MAX_RESULT (16u << 20) /* RESULT body cap */
#define CHECK_MAX_PROBE (1u << 20)   /* PROBE body cap (a target list) */
#define CHECK_MATRIX_FULL 16	     /* full cells up to this N, one-char cells up to ... */
#define CHECK_MATRIX_MAX 64	     /* ... this N; beyond: failures only */
#define CHECK_OVERLOAD_MS 1000	     /* a pod whose loop stalled this long: overloaded */
#define CHECK_OVERLOADED "overloaded, probes incomplete"
#define CHECK_MAC_LEN 32
#define CHECK_KEY_LEN 32

/* ---- the frame (agent/check/CHECK.md): header, then body ---- */
#define CHECK_MAGIC 0x4758434bu /* "GXCK" */
#define CHECK_VERSION 1
#define CHECK_HDR_LEN 12
enum check_type {
	CHECK_ECHO = 1,	  /* probe: body echoed back as is (unauthenticated, 16..64 bytes) */
	CHECK_REPORT = 2, /* member -> coordinator: MAC | rank | report JSON */
	CHECK_RESULT = 3, /* coordinator -> member: MAC | rank | result JSON */
	CHECK_PROBE = 4, /* coordinator -> member, on its report connection: MAC | rank | targets */
	CHECK_PROBED = 5, /* member -> coordinator, the same connection: MAC | rank | report JSON */
	CHECK_STREAM = 6, /* throughput: body of its length's bytes, read and dropped */
	CHECK_STREAMED = 7, /* its answer once all came: u64 byte count */
};

/* One rail of a peer, from its JOIN rails text "dev:port/netdev/addr" (rdzv_peer.rails). */
struct check_rail {
	char name[CHECK_RAIL_NAME]; /* netdev, else "dev:port" */
	char dev[64];		    /* "" for a netdev rail (no RDMA device) */
	int port;
	char iface[16];
	char addr[46];
};

struct check_summary {
	size_t tcp_ok, tcp_total, rdma_ok, rdma_total;
	size_t rail_ok, rail_total; /* check --rails: rail probes (TCP and RDMA) */
	uint32_t no_rdma, rdma_unavl, missing;
	int all_ok;
	char line[256];
};

/* ---- check_report.c: world, (de)serialisation, MAC (agent_check_summarize: check_render.c) ----
 */
/*
 * --mode sampled: k distinct ring offsets in 1..n-1 drawn from seed (the
 * round id: every pod draws the same), so pod i probes i + offs (mod n) and
 * is probed by k pods; every pod also probes and is probed by the
 * coordinator. k >= n - 1 probes every pair.
 */
void agent_check_world_sample(struct check_world *w, uint32_t k, uint64_t seed);
/* Pairs the mode probes (ordered), for the coverage. */
size_t agent_check_pairs_probed(const struct check_world *w);
/* 1 when the mode probes from -> to. */
int agent_check_pair_probed(const struct check_world *w, uint32_t from, uint32_t to);
/* The same for one rail (0: the bootstrap iface). */
const struct check_probe *agent_check_find_rail(const struct check_world *w, uint32_t from,
						uint32_t to, int proto, int rail);
/* 1 when a failed probe says only that an end was too slow ("timeout", "no echo", ...). */
int agent_check_probe_timed_out(const struct check_probe *p);
/*
 * A timed-out probe from or to an overloaded pod (lag >= CHECK_OVERLOAD_MS)
 * proves nothing about the network: its why becomes "overloaded" and the
 * pod's row why CHECK_OVERLOADED, so the pod is named, not its peers.
 */
void agent_check_world_overload(struct check_world *w);

/* " pod (why)" for each blamed pod, then " a -> b (path)" for each blamed path; count named. */
size_t agent_check_blame_text(const struct check_world *w, char *buf, size_t len);
void agent_check_summarize(const struct check_world *w, struct check_summary *s);
/* The MTU warning naming the pods that differ from the most common MTU; 0 = none. */
int agent_check_mtu_warning(const struct check_world *w, char *buf, size_t len);

/* Report payload (JSON text) of row `rank`; *out malloc'd. */
int agent_check_report_encode(const struct check_world *w, uint32_t rank, char **out, size_t *len);
/* Parse a member's report payload into row `rank` (replaces it). GX_EPROTO + why. */
int agent_check_report_decode(struct check_world *w, uint32_t rank, const char *text, size_t len,
			      char *why, size_t whylen);
/*
 * The second pass through a member: PROBE payload {"id", "targets": [rank...]}
 * (at most n targets, none the member itself), and its PROBED answer: the member's row of
 * a scratch world (the report document) with the same "id".
 */
int agent_check_probe_req_encode(uint64_t id, const unsigned char *only, uint32_t n, char **out,
				 size_t *len);
/* only: n bytes, 1 for each target; GX_EPROTO + why for a bad request. */
int agent_check_probe_req_decode(const char *text, size_t len, uint32_t n, uint32_t self,
				 uint64_t *id, unsigned char *only, char *why, size_t whylen);
int agent_check_probed_encode(const struct check_world *w, uint32_t rank, uint64_t id, char **out,
			      size_t *len);
/* Into row rank of w (a scratch world); the id must be want_id. */
int agent_check_probed_decode(struct check_world *w, uint32_t rank, uint64_t want_id,
			      const char *text, size_t len, char *why, size_t whylen);
/* Parse the coordinator's result document: rows / probes into w, summary into s. */
int agent_check_result_decode(struct check_world *w, const char *text, size_t len, json_t **doc,
			      struct check_summary *s, char *why, size_t whylen);

/* Frame: header (magic, version, type, length) then body; *out malloc'd. */
void agent_check_hdr_put(unsigned char h[CHECK_HDR_LEN], int type, uint32_t len);
/* 0, or GX_EPROTO / GX_EVERSION for a bad header; *type / *len out. */
int agent_check_hdr_get(const unsigned char h[CHECK_HDR_LEN], int *type, uint32_t *len);
/* gx_frame's encode for the check wire (every type; the reader bounds them): 0, or -EMSGSIZE
 * for a body a u32 cannot say. */
int agent_check_frame_encode(const struct gx_frame *f, unsigned char *hdr, unsigned type,
			     size_t blen);
/* Sealed REPORT / RESULT / PROBE / PROBED frame: header | MAC | rank | payload. */
int agent_check_seal(const unsigned char key[CHECK_KEY_LEN], int type, uint64_t round,
		     uint32_t rank, const char *payload, size_t plen, unsigned char **out,
		     size_t *outlen);
/* Open a sealed body: MAC check (GX_EMAC), rank < n (GX_EPROTO). */
int agent_check_open(const unsigned char key[CHECK_KEY_LEN], int type, uint64_t round, uint32_t n,
		     const unsigned char *body, size_t len, uint32_t *rank, const char **payload,
		     size_t *plen);

/* ---- check_rails.c: check --rails ---- */
/* Rail `name` of a JOIN rails text ("dev:port/netdev/addr,..."); 0, -ENOENT, -EINVAL. */
int agent_check_rails_find(const char *text, const char *name, struct check_rail *out);
/* Item k of a rails text; 0, -ENOENT (no such item), -EINVAL (malformed). */
int agent_check_rails_item(const char *text, size_t k, struct check_rail *out);
/*
 * RDMA-CM on a rail: a copy of src (a table entry) whose address, iface and
 * device are those of its rail `name`; -ENOENT when that rail has no device or
 * no address there.
 */
int agent_check_rail_peer(const struct rdzv_peer *src, const char *name, struct rdzv_peer *out);
/* The rails to probe: the union of every peer's rail names, strverscmp order. */
int agent_check_rails_plan(struct check_world *w, const struct rdzv_peer *table, uint32_t n);
/* The 1-based index of rail `name` in w (added when new); -E2BIG / -EINVAL. */
int agent_check_rail_index(struct check_world *w, const char *name);
/* Name of a probe's rail ("" for the bootstrap iface). */
const char *agent_check_rail_name(const struct check_world *w, int rail);
/* Rail indices (1-based) in name order. */
void agent_check_rail_order(const struct check_world *w, int order[CHECK_MAX_RAILS]);
/*
 * " pod-2 (rail net3)" for each pod that takes part in more than half of
 * one rail's failed probes (every pod of a failed probe when none does),
 * leaving out pods that failed their own checks (row why: named elsewhere);
 * the number of pods named.
 */
size_t agent_check_rails_broken(const struct check_world *w, char *buf, size_t len);
/* 1 when any pod has a probe of proto on rail (0: the bootstrap interface). */
int agent_check_world_has_probes(const struct check_world *w, int proto, int rail);

/* ---- check_render.c: text and JSON ---- */
/* The N x N matrix (or the failures only for N > CHECK_MATRIX_MAX), for one protocol. */
void agent_check_print_matrix(FILE *f, const struct check_world *w, int proto);
/* The same for one rail (1..nrails). */
void agent_check_print_rail_matrix(FILE *f, const struct check_world *w, int proto, int rail);
/* One matrix per rail and protocol, rails in name order. */
void agent_check_print_rails(FILE *f, const struct check_world *w);
/* Every failed pair, one line each ("✗ a -> b tcp: timeout"), at most `max` (0 = all). */
void agent_check_print_failures(FILE *f, const struct check_world *w, size_t max);
/* One pod's row: its probes with latencies. */
void agent_check_print_row(FILE *f, const struct check_world *w, uint32_t rank);
/* The result document (every probe; only failed ones when failures_only). */
json_t *agent_check_result_json(const struct check_world *w, const struct check_summary *s,
				const char *const *warnings, size_t nwarnings, int failures_only);
/* Short cell text for a probe ("✓ 142", "✗ refused"). */
void agent_check_cell(const struct check_probe *p, char *buf, size_t len);

/* ---- check_html.c: check --report FILE.html ---- */
/*
 * One self-contained HTML page: params (name, value pairs: 2 * n strings),
 * the summary, blamed pods, warnings, worst pairs, a heatmap per protocol
 * and rail. 0 / -EIO.
 */
int agent_check_html_write(FILE *f, const struct check_world *w, const struct check_summary *s,
			   const char *const *params, size_t nparams, const char *const *warnings,
			   size_t nwarnings);

/* ---- check_serve.c / check_probe.c: the network side, in one gx_ev loop ---- */
struct check_sconn; /* a service connection */
struct check_pc;    /* a TCP probe client */
struct check_rep;   /* a member's report client */
struct check_st;    /* the throughput streams */

struct nd_routes;
#define CHECK_LISTEN_MAX 4

struct check_net {
	struct gx_ev *ev;
	struct check_world *w;
	uint32_t self;
	uint64_t round;
	unsigned char key[CHECK_KEY_LEN];
	uint16_t port;
	int is_coord;
	int64_t t0; /* check start (after the rendezvous), gx_now_ms */
	/* service: wildcard v4 and v6, then this pod's secondary addresses bound to ifname */
	int lfd[CHECK_LISTEN_MAX];
	int nsec; /* secondary listeners up: an echo to that address must come in through one */
	struct check_sconn *conns;
	size_t nconns, maxconns;
	uint32_t nreports; /* coordinator: member reports received */
	int reports_done;
	uint64_t sweep_id;
	struct gx_pa pa; /* connections not (yet) holding a verified REPORT */
	struct gx_rl rl; /* warnings about strangers */
	size_t premac;	 /* body bytes buffered before a MAC is verified, all connections */
	/* probes: from src (this pod's secondary address, bound to ifname) */
	const struct rdzv_peer *table; /* n entries, rank order */
	char ifname[16];
	/* the kernel's routes, asked before each probe as the rendezvous asks for its path:
	 * a probe the kernel would send out of another interface fails, named (NULL: none) */
	struct nd_routes *routes;
	struct check_pc *pcs;
	size_t npcs, next, inflight, ndone;
	int launching;
	int probes_done;
	int64_t rtt_max_us;	   /* the slowest echo measured in this run (retry timeouts) */
	const unsigned char *only; /* second pass: probe only targets j with only[j], no rails */
	struct check_world *pw;	   /* the world this pod's probes go into; NULL: w */
	void (*probes_cb)(struct check_net *n); /* called when this pod's probes are done */
	void *probes_arg;			/* the caller's, for probes_cb */
	/* coordinator, second pass through a member: its PROBED answer */
	struct check_world *probed; /* where it goes (row of the member asked), NULL: none asked */
	uint32_t probed_from;
	uint64_t probed_id;
	int probed_done;
	uint32_t late; /* reports decoded after agent_check_world_finish (set late_after) */
	int late_after;
	int tries;	    /* attempts per timed-out probe; 0: 3 */
	size_t retries;	    /* probe attempts that timed out and were tried again */
	uint64_t lag_timer; /* the loop-lag monitor */
	int64_t lag_due, lag_max_ms;
	/* member: the report and the coordinator's answer */
	union gx_sockaddr coord;
	socklen_t coordlen;
	int64_t report_deadline;
	struct check_rep *rep;
	char *result; /* RESULT payload (JSON text), NUL-terminated */
	size_t result_len;
	int result_done;
	char result_why[256]; /* the last reason a report attempt failed */
	struct check_st *st;  /* the streams (check_stream.c), NULL when none run */
};

/* Listen on the wildcard address at port (v4, and v6 when available) and on this pod's
 * secondary addresses, bound to n->ifname (SO_BINDTODEVICE). */
int agent_check_serve_start(struct check_net *n, char *err, size_t errlen);
/* Coordinator: send every reporting member its sealed RESULT; 0 when all flushed. */
int agent_check_serve_reply(struct check_net *n, const char *payload, size_t plen);
size_t agent_check_serve_pending(const struct check_net *n);
/*
 * Coordinator: ask member `rank` (over its open report connection) to probe the
 * targets in only[]; its PROBED lands in row `rank` of into, n->probed_done then.
 * -ENOENT when that member holds no report connection.
 */
int agent_check_serve_ask(struct check_net *n, uint32_t rank, const unsigned char *only,
			  struct check_world *into);
/* 1 when member rank holds a report connection (can be asked). */
int agent_check_serve_has(const struct check_net *n, uint32_t rank);
void agent_check_serve_stop(struct check_net *n);

/* Start the TCP probes of this pod's row (at most 16 in flight). */
int agent_check_probes_start(struct check_net *n);
/* Close and forget this pod's probes (the second pass starts afresh). */
void agent_check_probes_reset(struct check_net *n);
/*
 * The second pass: probe the targets j with only[j] (ring order, no rails, 2
 * attempts) into `into`, not into n->w: a REPORT arriving meanwhile still goes
 * to n->w. n->probes_done (and probes_cb) when over; agent_check_probes_reset after.
 */
int agent_check_probes_again(struct check_net *n, struct check_world *into,
			     const unsigned char *only);
/*
 * Throughput (check_stream.c): one STREAM of `bytes` to each target whose TCP probe passed,
 * one at a time, from the same source, device and route as the probe; each stops at its
 * bytes or after bound_ms, whichever first (then the bytes the peer's kernel acknowledged
 * count: tcp_info). A stream that finished is repeated up to reps in all and the best one
 * kept (a process that stalled a moment is not its path). Into the probe (bytes,
 * stream_us); a stream that moved nothing fails it. done(n) once, from the loop.
 */
int agent_check_streams_start(struct check_net *n, int64_t bytes, int64_t bound_ms, int reps,
			      void (*done)(struct check_net *n));
void agent_check_streams_stop(struct check_net *n);
/* socket, SO_BINDTODEVICE ifname (best effort), bind src, non-blocking connect: 0 / -errno */
int agent_check_connect(const char *ifname, const union gx_sockaddr *src, socklen_t slen,
			const union gx_sockaddr *dst, socklen_t dlen, int *fd);
/* The probe's addresses to `to` (this pod's family both have); NULL, or why not. */
const char *agent_check_addrs(const struct check_net *n, uint32_t to, union gx_sockaddr *src,
			      socklen_t *slen, union gx_sockaddr *dst, socklen_t *dlen);
/* Member: send the sealed report (owned by the call) until a RESULT comes or the deadline. */
int agent_check_report_start(struct check_net *n, unsigned char *frame, size_t len);
void agent_check_probes_stop(struct check_net *n);
/* The loop-lag monitor: how late a 50 ms timer fires (n->lag_max_ms); stop is idempotent. */
void agent_check_lag_start(struct check_net *n);
void agent_check_lag_stop(struct check_net *n);
/* Short reason for a socket error ("refused", "timeout", ...). */
const char *agent_check_errno_why(int err);

/* ---- check_rdma.c: RDMA-CM probes, one at a time, in this pod's loop ---- */
struct rdzv_rdma_ctx;
struct rdzv_rdma_cli;
struct check_rdma {
	struct check_net *n;
	struct rdzv_rdma_ctx *ctx;
	size_t size;		   /* --size: RDMA WRITE bytes */
	struct rdzv_rdma_cli *cli; /* the probe running now */
	uint64_t timer;		   /* the retry of a refused connect */
	uint32_t j, k;		   /* current target: pod j, rail k (0: bootstrap) */
	struct rdzv_peer me, them;
	int64_t t_start;
	int started, retried;
	int done;			       /* every result is in */
	void (*done_cb)(struct check_rdma *r); /* then, when set (from the loop) */
};

/* Prepares the probes (nothing runs yet); ctx: the pod's client context. */
void agent_check_rdma_init(struct check_net *n, struct rdzv_rdma_ctx *ctx, size_t size,
			   struct check_rdma *r);
/* Start probing (after this pod's TCP probes); results arrive in the loop. */
void agent_check_rdma_go(struct check_rdma *r);
/* Cancels a probe still running. Safe on a zeroed struct. */
void agent_check_rdma_stop(struct check_rdma *r);

#endif
