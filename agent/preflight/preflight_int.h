/* SPDX-License-Identifier: MIT */
/*
 * preflight_int.h - `--preflight` (README.md "Preflight"): after every pod joined and
 * verified and before the COMMIT that fixes ranks and world, every pod measures its
 * paths on the secondary network in the run's own loop: a TCP echo (latency), a STREAM
 * of --preflight-bytes (throughput) and, on verified RDMA rails, an RDMA WRITE of the
 * same size, each from its secondary address, bound to its interface and checked against
 * the kernel's route, as the rendezvous and `check` do (the probes are check's:
 * agent/check). The coordinator plans (ring + chord, all pairs for small jobs), gathers the
 * rows over the rendezvous sessions (PREFLIGHT frames), blames as check does (known-good
 * ends, a second pass from two of them) and hands its verdict to the rendezvous: commit,
 * leave the named pods out of an elastic job, or end the job naming them.
 *
 * preflight_eval.c: the pure part (shape, figures, suspects, verdict and its line, plan
 * and report documents, preflight.json); preflight.c: the run (hooks, probes, passes).
 */
#ifndef AGENT_PREFLIGHT_INT_H
#define AGENT_PREFLIGHT_INT_H

#include "agent/check/check.h"
#include "agent/preflight/preflight.h"
#include "netdetect/netdetect.h"
#include "rdzv/rdzv.h"

#include <jansson.h>
#include <stdint.h>

#define AGENT_PF_BYTES_MAX (64L << 20) /* the RDMA WRITE's cap (RDZV_RDMA_MAX_WRITE) */
#define AGENT_PF_BOUND_MS 1000
#define AGENT_PF_SETTLE_S 5	    /* elastic: the gather after MIN are in */
#define AGENT_PF_SMALL 4	    /* all pairs by default up to this many pods */
#define AGENT_PF_ALL_MAX 64	    /* --preflight-shape all up to this many pods */
#define AGENT_PF_DOC_MAX (1u << 20) /* a plan or report, reassembled */
#define AGENT_PF_VANTAGES 2	    /* known-good pods that probe a suspect again */
#define AGENT_PF_LINE 900	    /* the verdict line (the ABORT carries <= 1023) */

/* One pod's figures from its streams: the best it reached each way (bits/s, 0: none). */
struct agent_pf_fig {
	double out, in;	  /* TCP STREAM */
	double rout, rin; /* RDMA WRITE */
};

/* Why the first pass suspects a pod (bits). */
enum {
	PF_SUS_CONN = 1, /* failed pairs with known-good pods, or no report */
	PF_SUS_OUT = 2,	 /* its TCP figure to its peers is below the fraction */
	PF_SUS_IN = 4,	 /* ... from its peers */
	PF_SUS_ROUT = 8, /* RDMA, to */
	PF_SUS_RIN = 16, /* RDMA, from */
	PF_SUS_SLOW = 2 | 4 | 8 | 16,
};

struct agent_pf_medians {
	double tcp, rdma; /* the job's median of the pods' figures (bits/s), 0: none */
};

/* ---- preflight_eval.c (pure) ---- */
/* Participant i's targets (ring: i+1, i+n/2; all: every other): count into out[n]. */
uint32_t agent_pf_targets(uint32_t n, int all, uint32_t i, uint32_t *out);
/* The first pass' world shape for the blame: the ring's offsets, or every pair. */
void agent_pf_shape(struct check_world *w, int all);
/* Figures and medians of a pass (w2 NULL) or of both (the best of each). */
void agent_pf_figures(const struct check_world *w, const struct check_world *w2,
		      struct agent_pf_fig *fig, struct agent_pf_medians *med);
/* The first pass' suspects (n bytes of PF_SUS_*); the count. */
uint32_t agent_pf_suspects(const struct check_world *w, double slow, unsigned char *sus);
/*
 * The second pass' vantages: for each suspect up to AGENT_PF_VANTAGES pods known good for
 * their pairs, the unsuspected and then the fastest first (under load every pod may look
 * slow once); vant[s * AGENT_PF_VANTAGES + k] (n: none). 0 when there is none at all.
 */
uint32_t agent_pf_vantages(const struct check_world *w, const unsigned char *sus, uint32_t *vant);
/*
 * A connectivity suspect after the second pass (w2: its vantages' probes to and from it;
 * NULL: none ran, the first pass stands): named when a vantage still fails with it either
 * way (every pair must work); cleared when they all pass. 1 and its line ("no echo from 3
 * known-good pods", "no ARP answer from 192.168.1.7 (from 2 known-good pods)", "no
 * report ...").
 */
int agent_pf_conn_verdict(const struct check_world *w, const struct check_world *w2,
			  const uint32_t *vant, uint32_t i, char *buf, size_t len);
/*
 * A slow suspect s (PF_SUS_* bits) after its second look (ws: its vantages g[2] streamed to
 * it, it to them, each also to the other vantage: the control; NULL: none ran): slow when
 * every measurement is below the fraction of its control and its best figure of both
 * passes below the fraction of the job median. 1 and "slow: 0.9 Gbit/s to its peers
 * against the job median 9.4 Gbit/s". *ratio: the lowest measurement / control seen (-1:
 * none), the margin a cleared pod had.
 */
int agent_pf_slow_verdict(const struct check_world *w, const struct check_world *ws,
			  const uint32_t *g, uint32_t s, int bits, double slow, char *buf,
			  size_t len, double *ratio);
/* "9.4 Gbit/s", "3.9 Mbit/s" */
void agent_pf_rate(double bps, char *buf, size_t len);

/* The plan a pod gets (the coordinator's own too): its targets' entries. */
struct agent_pf_plan {
	uint64_t id;
	uint32_t n, me; /* participants, and this pod's index among them */
	uint32_t ntargets;
	uint32_t *targets;	/* global indices */
	struct rdzv_peer *peer; /* their entries: name, iface, address, RDMA device */
	long port;
	int64_t bytes, bound_ms;
	int tries;
	int reps; /* streams to a target, the best kept (1 the first pass; 3 a second look) */
};
void agent_pf_plan_free(struct agent_pf_plan *p);
/* The plan for participant i (its targets' entries from tab); text malloc'd. */
int agent_pf_plan_encode(const struct agent_pf_plan *p, char **text, size_t *len);
/* GX_EPROTO + why for a bad plan (names, addresses and bounds checked). */
int agent_pf_plan_decode(const char *text, size_t len, struct agent_pf_plan *p, char *why,
			 size_t whylen);
/* A pod's row (local world row 0, lmap: local -> global) with the plan's id. */
int agent_pf_report_encode(const struct check_world *lw, const uint32_t *lmap, uint64_t id,
			   int64_t lag_ms, char **text, size_t *len);
/* Into row `from` of w (replaced); GX_EPROTO + why. */
int agent_pf_report_decode(struct check_world *w, uint32_t from, uint64_t want_id, const char *text,
			   size_t len, char *why, size_t whylen);
/* preflight.json: the pods, every measured pair (both passes), the medians, the verdict. */
json_t *agent_pf_json(const struct check_world *w, const struct check_world *w2,
		      const unsigned char *blamed, const char *line, const char *shape,
		      int64_t bytes, int64_t elapsed_ms);

#endif
