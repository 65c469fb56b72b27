/* SPDX-License-Identifier: MIT */
/*
 * check.h - check's face: `gxboot check` after its rendezvous, given the job as plain data by
 * the command that met the peers (cli/cmd_check.c through the pipeline). The service, probes,
 * reports and the result; the wire is agent/check/CHECK.md. The world of rows and probes they
 * fill is plain data here: the preflight plans, reads and blames on it too.
 */
#ifndef AGENT_CHECK_H
#define AGENT_CHECK_H

#include "agent/agent.h"
#include "rdzv/gx/gx.h"

#include <stddef.h>
#include <stdint.h>

struct nd_result;
struct nd_routes;
struct rdzv_result;

/* The job as prepared, before the rendezvous; the pointers outlive the check. */
struct agent_check_job {
	const struct agent_opts *o;
	const char *job_id;
	const char *source; /* where the peer list came from */
	char *const *names;
	size_t n, self;
	struct nd_result *nd; /* NULL when netdetect failed: nd_rc, nd_err say why */
	int nd_rc;
	const char *nd_err;
	const unsigned char *token; /* NULL: none; read by agent_check_key only */
	size_t token_len;
};

/* After the rendezvous on the check port: what the check runs on. */
struct agent_check_met {
	struct gx_ev *ev;
	const struct rdzv_result *res; /* the full table, this pod's rank, the round */
	uint16_t port;
	struct nd_routes **routes; /* the run's route answers (opened here when NULL) */
	/* the coordinator's primary address at port (a member sends its report there) */
	int (*coord_addr)(void *arg, uint16_t port, union gx_sockaddr *sa, socklen_t *len,
			  char *err, size_t errlen);
	/* 1 when another process listens on port (another job's check on this node) */
	int (*port_shared)(uint16_t port);
	void *arg;
};

struct agent_check;
/* A check of j (check --rails: the rails listed here, before they travel in the JOIN). */
int agent_check_new(const struct agent_check_job *j, struct agent_check **ret);
/* check --dry-run: the plan, no network used. */
void agent_check_plan(const struct agent_check *c);
/* The check's key and the RDMA-CM check's, from the token (or the job id without one): before
 * the token is wiped. */
int agent_check_key(struct agent_check *c, char *err, size_t errlen);
/* Service, probes, reports, result: 0 when every pair is OK, GX_ECHECK with the line. */
int agent_check_run(struct agent_check *c, const struct agent_check_met *m, char *err,
		    size_t errlen);
void agent_check_free(struct agent_check *c);

/* ---- the world: every pod's row of probes, plain data (check_report.c) ---- */
/*
 * A refused / reset probe is retried until check start + CHECK_GRACE_MS(n): a pod's
 * check service opens when its COMMIT reaches it, and the coordinator's COMMIT loop and
 * its own service come O(N) later. 512 pods on 2 cores (every pod starved): the members
 * got their COMMITs over 17 s, the coordinator's service opened 31 s after its COMMIT,
 * and with a flat 5 s, 30-149 healthy pairs failed "refused". The probe budget counts it.
 */
#define CHECK_GRACE_MS(n) (5000 + (int64_t)(n)*60)
#define CHECK_MAX_RAILS 16	     /* rails probed (check --rails) */
#define CHECK_SAMPLE_MAX 64	     /* check --mode sampled: peers per pod at most */
#define CHECK_RAIL_NAME 72	     /* a rail's name: its netdev, else "dev:port" */
#define CHECK_STREAM_MAX (64u << 20) /* the longest STREAM (--preflight-bytes) */

/* The second pass's verdict on a pod, carried in the result's peers. */
enum check_second {
	CHECK_SECOND_NONE = 0, /* not probed again */
	CHECK_SECOND_OK = 1,   /* a known-good pod reached it in the second pass */
};

enum check_proto {
	CHECK_TCP = 0,
	CHECK_RDMA = 1,
};

/* A pod's RDMA state in its report. */
enum check_rdma_state {
	CHECK_RDMA_NONE = 0,  /* no usable device on its iface */
	CHECK_RDMA_OK = 1,    /* device and RDMA-CM probe context */
	CHECK_RDMA_UNAVL = 2, /* device, but RDMA-CM not available here */
};

/* One directed probe from a row's pod to `to`. */
struct check_probe {
	uint32_t to;
	int proto; /* enum check_proto */
	int ok;
	int gid_index;			   /* RDMA: SGID index used, -1 unknown */
	int mtu;			   /* RDMA: active path MTU; TCP: 0 */
	int64_t min_us, median_us, max_us; /* TCP echo RTT; RDMA: send/recv latency */
	int64_t write_us;		   /* RDMA WRITE of --size bytes, 0 */
	char why[96];			   /* short reason when !ok ("refused", "timeout") */
	int rail; /* 0: the bootstrap iface; k >= 1: rail w->rails[k - 1] (check --rails) */
	int64_t bytes, stream_us; /* TCP: a STREAM's bytes through and its time (0: none) */
};

/* One pod's report. */
struct check_row {
	int reported;	/* its report arrived (the own row counts as reported) */
	int mtu;	/* its iface MTU, 0 unknown */
	int rdma;	/* enum check_rdma_state */
	char why[256];	/* its own netdetect / verification failure, "" */
	int64_t lag_ms; /* the longest its event loop stalled while probing (CPU starvation) */
	int second;	/* enum check_second (coordinator's second pass) */
	int good;	/* known good in the coordinator's whole world (result "good") */
	struct check_probe *probes;
	size_t nprobes, cap;
};

struct check_world {
	uint32_t n;
	int star;	  /* --mode star */
	int star_default; /* star because N > CHECK_MATRIX_MAX and no --mode was given */
	/* --mode sampled: i probes i + offs[k] (mod n) for k < sample_k, and the coordinator */
	uint32_t sample_k;
	uint32_t offs[CHECK_SAMPLE_MAX];
	int ring; /* the offsets alone (the preflight's ring and chord): no coordinator star */
	char *const *names;	/* n names, rank order (borrowed) */
	struct check_row *rows; /* n rows */
	/* check --rails: the rails probed, by name (a probe's rail k is rails[k - 1]) */
	char rails[CHECK_MAX_RAILS][CHECK_RAIL_NAME];
	uint32_t nrails;
};

int agent_check_world_init(struct check_world *w, uint32_t n, int star, char *const *names);
void agent_check_world_free(struct check_world *w);
/* Append a probe to row `from` (copied). 0 / -ENOMEM / -EINVAL. */
int agent_check_row_add(struct check_world *w, uint32_t from, const struct check_probe *p);
const struct check_probe *agent_check_find(const struct check_world *w, uint32_t from, uint32_t to,
					   int proto);
/* Fill every expected TCP pair that has no probe: "no report" / "not probed". */
int agent_check_world_finish(struct check_world *w);

/* Who is to blame for the failed bootstrap TCP pairs. */
enum agent_check_blame {
	CHECK_BLAME_NONE = 0,
	CHECK_BLAME_OWN = 1,	 /* failed its own checks (row why), overloaded included */
	CHECK_BLAME_MISSING = 2, /* sent no report */
	CHECK_BLAME_POD = 3,	 /* a failed pair with a known-good pod, and no good pair itself */
	CHECK_BLAME_BOTH = 4,	 /* a failed pair between two pods neither known good */
};
/*
 * Blame the failed (bootstrap, TCP) pairs: a pod is known good when it has an
 * OK probe out and an OK probe in with some third pod, or a known-good pod
 * reached it in the second pass (row second), and no own failure.
 * For a failed pair a -> b: when one end is known good the other is blamed
 * (its pairs with good pods fail too, so the path is not the suspect); when
 * both are known good only the pair's path is (*npaths counts those; they
 * are named by agent_check_blame_text); when neither, both ends. blame: n entries.
 */
void agent_check_blame(const struct check_world *w, unsigned char *blame, size_t *npaths);
/*
 * The known-good pods (n bytes): no own failure, and an OK pair out and in, or
 * reached in the second pass, or marked good by the coordinator's result (a
 * member's world above CHECK_MATRIX_MAX holds only the failed probes, so
 * blaming there needs the coordinator's view).
 */
int agent_check_known_good(const struct check_world *w, unsigned char *good);

/* ---- a pod's probes for another module (check_prober.c; the preflight) ---- */
/*
 * One pod's probes of a plan, in the caller's loop, into a world the caller owns (row 0 this
 * pod, then its targets, whose table entries give their addresses): the TCP echoes, then one
 * STREAM at a time, then RDMA WRITEs, each stage started by the caller when the one before
 * is done; and the check service (the echo and the stream sink) on the plan's port. From
 * this pod's secondary address, bound to its interface and checked against the kernel's
 * route, as `gxboot check` probes. Each done(arg) comes once, from the loop or from within the
 * call that started its stage.
 */
struct rdzv_peer;
struct rdzv_rdma_ctx;
struct agent_check_probes;
/* ifname: the interface the probes leave on ("" none); routes: the run's route answers (NULL:
 * no route check); arg: every done's. 0 and *ret, or -ENOMEM. */
int agent_check_probes_new(struct gx_ev *ev, const char *ifname, struct nd_routes *routes,
			   void *arg, struct agent_check_probes **ret);
/* The next plan (what the one before still runs stops): w and table (w->n entries, row and
 * entry 0 this pod) are borrowed until the next plan, clear or free; the service's port; the
 * attempts of a probe that timed out (0: 3). */
void agent_check_probes_plan(struct agent_check_probes *p, struct check_world *w,
			     const struct rdzv_peer *table, uint16_t port, int tries);
/* The check service at the plan's port, once (later plans keep it): 0, or < 0 with err. */
int agent_check_probes_serve(struct agent_check_probes *p, char *err, size_t errlen);
/* The echo probes of row 0 to the other rows, and the loop-lag monitor: 0 and done(arg) when
 * they are over (at once when there is nothing to probe), or < 0 and no done. */
int agent_check_probes_echo(struct agent_check_probes *p, void (*done)(void *arg));
/*
 * Throughput: one STREAM of bytes to each target whose echo passed, one at a time, each
 * stopped at its bytes or after bound_ms (then what the peer's kernel acknowledged counts),
 * the best of reps kept, into the probe's bytes and stream_us: 0 and done(arg), or < 0 and
 * no done.
 */
int agent_check_probes_streams(struct agent_check_probes *p, int64_t bytes, int64_t bound_ms,
			       int reps, void (*done)(void *arg));
/* RDMA WRITEs of size bytes to the targets whose entries name a device, through ctx (this
 * pod's RDMA-CM context, and this pod's entry naming its device): done(arg) when over. */
void agent_check_probes_rdma(struct agent_check_probes *p, struct rdzv_rdma_ctx *ctx, size_t size,
			     void (*done)(void *arg));
/* The loop-lag monitor stops: the longest the loop stalled since the plan (ms). */
int64_t agent_check_probes_lag_end(struct agent_check_probes *p);
/* Every probe stops (the service stays). */
void agent_check_probes_clear(struct agent_check_probes *p);
/* The probes and the service stop; p is freed (NULL: nothing). */
void agent_check_probes_free(struct agent_check_probes *p);

#endif
