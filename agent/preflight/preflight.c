/* SPDX-License-Identifier: MIT */
/*
 * preflight.c - the preflight's run, in the rendezvous' own loop (README.md "Preflight").
 * The coordinator, held before its COMMIT (rdzv_config.preflight), plans: every pod gets
 * its targets (ring + chord, or all pairs) in a PREFLIGHT frame on its phase-1 session,
 * the coordinator takes its own plan the same way. Every pod then opens the check service
 * on port + 1 (its echo and stream sink), probes its targets (echo, then one STREAM at a
 * time, then RDMA WRITEs where both ends verified RDMA) and sends its row back. With every
 * row in (or at the pass' deadline) the coordinator suspects, probes the suspects again
 * from two known-good pods each (the second pass), and hands its verdict to the rendezvous.
 * Documents are JSON cut into frames of RDZV_PF_DATA_MAX: a kind byte, a flags byte (last).
 */
#include "agent/preflight/preflight_int.h"
#include "rdzv/rdma/rdzv_rdma.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PF_PLAN 'P'
#define PF_REPORT 'R'
#define PF_LAST 1
#define PF_HDR 2

struct pf_buf {
	char *p;
	size_t len;
};

/* Every pod: its plan's probes and its service (open from the first plan to the end). */
struct pf_prober {
	struct agent_pf *pf;
	struct agent_check_probes *probes; /* check's: echo, streams, RDMA WRITEs, service */
	struct check_world lw;		   /* row 0: this pod; then its targets */
	char **lnames;
	struct rdzv_peer *ltab;
	uint32_t *lmap; /* local index -> participant index */
	struct agent_pf_plan plan;
	int serving;
	struct rdzv_rdma_ctx *ctx; /* RDMA-CM server and probes, WRITEs of the plan's bytes */
	uint64_t timer;
};

struct pf_pod { /* coordinator: a participant */
	uint32_t slot;
	struct rdzv_peer e; /* name, iface, the job family's address, RDMA device */
};

struct agent_pf {
	struct agent_pf_host h;
	int is_coord, all;
	double slow;
	int64_t bytes, rdzv_deadline, t0;
	uint32_t world;
	struct pf_prober pr;
	struct pf_buf in; /* member: the plan being reassembled */
	/* coordinator */
	uint32_t n, nwant, ngot;
	struct pf_pod *pods;
	char **names;
	struct pf_buf *bufs;
	struct check_world w, w2; /* the first pass; every probe of the second (preflight.json) */
	struct check_world ws;	  /* the slow suspect being measured again */
	unsigned char *sus, *want, *blamed;
	char **bwhy; /* a named pod's line */
	uint32_t *vant;
	int stage; /* 1 the first pass, 2 connectivity suspects again, 3 slow ones, one by one */
	uint32_t g[2];	 /* stage 3: the batch's vantages */
	uint32_t *batch; /* stage 3: its suspects (and a slot for the control) */
	uint32_t nbatch;
	unsigned char *looked; /* stage 3: measured again already */
	unsigned char *conf;   /* stage 3: looked slow in this round */
	int round;	       /* stage 3: 1, then 2 for the ones slow in round 1 */
	int step;	       /* stage 3: the vantages' plans, then each suspect's */
	uint64_t id, timer;
	char line[AGENT_PF_LINE + 64];
};

static void pr_finish(struct pf_prober *pr);
static void coord_take(struct agent_pf *pf, uint32_t k, const char *doc, size_t len);

/* ---- frames ---- */

static int send_doc(struct agent_pf *pf, uint32_t slot, char kind, const char *text, size_t len)
{
	unsigned char buf[RDZV_PF_DATA_MAX];
	size_t off = 0, n;
	int rc = 0;

	do {
		n = len - off > RDZV_PF_DATA_MAX - PF_HDR ? RDZV_PF_DATA_MAX - PF_HDR : len - off;
		buf[0] = (unsigned char)kind;
		buf[1] = off + n == len ? PF_LAST : 0;
		memcpy(buf + PF_HDR, text + off, n);
		rc = pf->is_coord ? rdzv_coord_pf_send(*pf->h.coord, slot, buf, n + PF_HDR)
				  : rdzv_member_pf_send(*pf->h.member, buf, n + PF_HDR);
		off += n;
	} while (rc == 0 && off < len);
	return rc;
}

/* A frame into b: 1 with the whole document (*doc owned by the caller), 0 for more, < 0. */
static int buf_take(struct pf_buf *b, char kind, const unsigned char *p, size_t len, char **doc,
		    size_t *dlen)
{
	char *np;

	if (len < PF_HDR || p[0] != (unsigned char)kind || b->len + len > AGENT_PF_DOC_MAX) {
		free(b->p);
		memset(b, 0, sizeof(*b));
		return GX_EPROTO;
	}
	np = realloc(b->p, b->len + len - PF_HDR + 1);
	if (!np)
		return -ENOMEM;
	memcpy(np + b->len, p + PF_HDR, len - PF_HDR);
	b->p = np;
	b->len += len - PF_HDR;
	if (!(p[1] & PF_LAST))
		return 0;
	*doc = b->p;
	*dlen = b->len;
	memset(b, 0, sizeof(*b));
	return 1;
}

/* ---- every pod: the prober ---- */

static void pr_clear(struct pf_prober *pr)
{
	agent_check_probes_clear(pr->probes);
	gx_ev_timer_cancel(pr->pf->h.ev, pr->timer);
	pr->timer = 0;
	agent_check_world_free(&pr->lw);
	free(pr->lnames);
	free(pr->ltab);
	free(pr->lmap);
	pr->lnames = NULL;
	pr->ltab = NULL;
	pr->lmap = NULL;
	agent_pf_plan_free(&pr->plan);
}

static void pr_rdma_done(void *arg)
{
	pr_finish(&((struct agent_pf *)arg)->pr);
}

/* After the streams: RDMA WRITEs to the targets that verified RDMA, where we did. */
static void pr_streams_done(void *arg)
{
	struct pf_prober *pr = &((struct agent_pf *)arg)->pr;

	if (!pr->ctx) {
		pr_finish(pr);
		return;
	}
	agent_check_probes_rdma(pr->probes, pr->ctx, (size_t)pr->plan.bytes, pr_rdma_done);
}

static void pr_streams(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct pf_prober *pr = arg;

	(void)ev;
	(void)id;
	pr->timer = 0;
	if (!pr->plan.bytes ||
	    agent_check_probes_streams(pr->probes, pr->plan.bytes, pr->plan.bound_ms, pr->plan.reps,
				       pr_streams_done) < 0)
		pr_streams_done(pr->pf);
}

/* The echoes are done (inside a probe's end: the streams start from a timer). */
static void pr_echo_done(void *arg)
{
	struct pf_prober *pr = &((struct agent_pf *)arg)->pr;

	if (!pr->timer)
		pr->timer = gx_ev_timer(pr->pf->h.ev, 0, pr_streams, pr);
}

static void pr_log(const struct pf_prober *pr)
{
	const struct check_row *row = &pr->lw.rows[0];
	char line[900], rate[32];
	size_t k, off = 0;

	line[0] = '\0';
	for (k = 0; k < row->nprobes && off < sizeof(line) - 200; k++) {
		const struct check_probe *p = &row->probes[k];

		if (p->ok && p->bytes)
			agent_pf_rate(
			    (double)p->bytes * 8e6 /
				(double)(p->proto == CHECK_RDMA ? p->write_us : p->stream_us),
			    rate, sizeof(rate));
		off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s%s: ", off ? "; " : "",
					p->proto == CHECK_RDMA ? "RDMA " : "", pr->lw.names[p->to]);
		if (p->ok)
			off += (size_t)snprintf(line + off, sizeof(line) - off, "%lld us, %s",
						(long long)p->median_us, p->bytes ? rate : "-");
		else
			off += (size_t)snprintf(line + off, sizeof(line) - off, "%s", p->why);
	}
	gx_info("preflight %s (plan %llu): %s", pr->lw.names[0], (unsigned long long)pr->plan.id,
		line);
}

/* This pod's row, to the coordinator (its own goes straight in). */
static void pr_finish(struct pf_prober *pr)
{
	struct agent_pf *pf = pr->pf;
	char *text = NULL;
	size_t len = 0;
	int64_t lag_ms = agent_check_probes_lag_end(pr->probes);
	int rc;

	if (!pr->lmap)
		return;
	pr_log(pr);
	rc = agent_pf_report_encode(&pr->lw, pr->lmap, pr->plan.id, lag_ms, &text, &len);
	if (rc == 0 && pf->is_coord)
		coord_take(pf, 0, text, len);
	else if (rc == 0)
		rc = send_doc(pf, 0, PF_REPORT, text, len);
	if (rc < 0)
		gx_warn("preflight: this pod's row not sent: %s", gx_strerror(rc));
	free(text);
}

/* The service (port + 1: the check service's echo and stream sink) and the RDMA-CM server,
 * once: later plans reuse them. */
static void pr_serve(struct pf_prober *pr)
{
	const struct agent_pf_host *h = &pr->pf->h;
	char err[256];

	if (pr->serving)
		return;
	pr->serving = 1;
	if (agent_check_probes_serve(pr->probes, err, sizeof(err)) < 0) {
		/* its peers' probes fail and name it; its own still run */
		gx_warn("preflight: %s", err);
		return;
	}
	if (!*h->rdma_ctx || !h->self->rdma_dev[0])
		return;
	if (rdzv_rdma_ctx_new(rdzv_rdma_cm_real(), (size_t)pr->plan.bytes, &pr->ctx) < 0 ||
	    rdzv_rdma_share_key(pr->ctx, *h->rdma_ctx) < 0 ||
	    rdzv_rdma_serve(pr->ctx, h->ev, &pr->ltab[0], (uint16_t)pr->plan.port, err,
			    sizeof(err)) < 0) {
		gx_warn("preflight: no RDMA-CM server (%s): TCP probes only", err);
		rdzv_rdma_ctx_free(pr->ctx);
		pr->ctx = NULL;
	}
}

/* The local world: this pod (the targets' family only) and its targets. */
static int pr_world(struct pf_prober *pr)
{
	const struct agent_pf_plan *p = &pr->plan;
	uint32_t k, m = p->ntargets + 1;
	int v6 = p->ntargets && p->peer[0].addr6[0];

	pr->lnames = calloc(m, sizeof(*pr->lnames));
	pr->ltab = calloc(m, sizeof(*pr->ltab));
	pr->lmap = calloc(m, sizeof(*pr->lmap));
	if (!pr->lnames || !pr->ltab || !pr->lmap)
		return -ENOMEM;
	pr->ltab[0] = *pr->pf->h.self;
	if (v6)
		pr->ltab[0].addr4[0] = '\0';
	else
		pr->ltab[0].addr6[0] = '\0';
	pr->lmap[0] = p->me;
	for (k = 0; k < p->ntargets; k++) {
		pr->ltab[k + 1] = p->peer[k];
		pr->lmap[k + 1] = p->targets[k];
	}
	for (k = 0; k < m; k++)
		pr->lnames[k] = pr->ltab[k].name;
	return agent_check_world_init(&pr->lw, m, 0, pr->lnames);
}

static void pr_start(struct agent_pf *pf, struct agent_pf_plan *plan)
{
	struct pf_prober *pr = &pf->pr;
	int rc;

	pr_clear(pr);
	pr->plan = *plan;
	memset(plan, 0, sizeof(*plan));
	rc = pr_world(pr);
	if (rc < 0) {
		gx_warn("preflight: %s", gx_strerror(rc));
		return;
	}
	agent_check_probes_plan(pr->probes, &pr->lw, pr->ltab, (uint16_t)pr->plan.port,
				pr->plan.tries);
	pr_serve(pr);
	if (!pr->ctx)
		pr->ltab[0].rdma_dev[0] = '\0'; /* no RDMA probes from here */
	rc = agent_check_probes_echo(pr->probes, pr_echo_done);
	if (rc < 0) {
		gx_warn("preflight: %s", gx_strerror(rc));
		pr_echo_done(pf);
	}
}

/* ---- member ---- */

static void member_recv(struct agent_pf *pf, const unsigned char *p, size_t len)
{
	struct agent_pf_plan plan;
	char *doc = NULL, why[160];
	size_t dlen = 0;
	int rc = buf_take(&pf->in, PF_PLAN, p, len, &doc, &dlen);

	if (rc < 0)
		gx_warn("preflight: a plan frame from the coordinator dropped: %s",
			gx_strerror(rc));
	if (rc != 1)
		return;
	rc = agent_pf_plan_decode(doc, dlen, &plan, why, sizeof(why));
	free(doc);
	if (rc < 0) {
		gx_warn("preflight: the coordinator's plan ignored: %s", why);
		return;
	}
	pr_start(pf, &plan);
}

/* ---- coordinator ---- */

static uint32_t part_of(const struct agent_pf *pf, uint32_t slot)
{
	uint32_t lo = 0, hi = pf->n, mid;

	while (lo < hi) { /* slots ascend */
		mid = (lo + hi) / 2;
		if (pf->pods[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < pf->n && pf->pods[lo].slot == slot ? lo : pf->n;
}

static int send_plan(struct agent_pf *pf, uint32_t k, uint32_t *targets, uint32_t nt, int64_t bytes)
{
	struct agent_pf_plan p = {.id = pf->id,
				  .n = pf->n,
				  .me = k,
				  .ntargets = nt,
				  .targets = targets,
				  .port = pf->h.o->port + 1,
				  .bytes = bytes,
				  .bound_ms = AGENT_PF_BOUND_MS,
				  .tries = pf->stage == 1 ? 3 : 2,
				  .reps = pf->stage == 3 ? 3 : 1};
	char *text = NULL, why[160];
	size_t len = 0;
	uint32_t t;
	int rc;

	p.peer = calloc(nt + 1, sizeof(*p.peer));
	if (!p.peer)
		return -ENOMEM;
	for (t = 0; t < nt; t++)
		p.peer[t] = pf->pods[targets[t]].e;
	rc = agent_pf_plan_encode(&p, &text, &len);
	free(p.peer);
	if (rc == 0 && k == 0) { /* ours: through the same document */
		rc = agent_pf_plan_decode(text, len, &p, why, sizeof(why));
		if (rc == 0)
			pr_start(pf, &p);
	} else if (rc == 0) {
		rc = send_doc(pf, pf->pods[k].slot, PF_PLAN, text, len);
	}
	free(text);
	return rc;
}

static void pass_end(struct gx_ev *ev, uint64_t id, void *arg);

/*
 * What a plan of nt targets takes at worst: its echoes (16 at once; a timed-out one is
 * tried again with longer timeouts: 2 + 3 (+ 4) s and the pauses; the first pass also
 * waits for services that are still opening), one stream after the other (connect, then
 * the bound; a second look's three times), RDMA WRITEs (3 s each), and a second for the
 * row to come back.
 */
static int64_t pass_budget(const struct agent_pf *pf, uint32_t nt)
{
	int64_t echo = pf->stage == 1 ? 9600 + CHECK_GRACE_MS(nt + 1) : 5200;

	return (int64_t)(nt + 15) / 16 * echo +
	       (int64_t)nt * (2000 + AGENT_PF_BOUND_MS) * (pf->stage == 3 ? 3 : 1) +
	       (pf->h.self->rdma_dev[0] ? (int64_t)nt * 3000 : 0) + 1000;
}

static void pass_arm(struct agent_pf *pf, uint32_t maxt)
{
	int64_t now = gx_now_ms(), by = now + pass_budget(pf, maxt);

	if (by > pf->rdzv_deadline - 1500) /* a verdict before the rendezvous' own deadline */
		by = pf->rdzv_deadline - 1500;
	gx_ev_timer_cancel(pf->h.ev, pf->timer);
	pf->timer = gx_ev_timer(pf->h.ev, by > now ? by - now : 0, pass_end, pf);
}

/* A stage-3 row also goes into the second pass' record (preflight.json). */
static void keep_row(struct agent_pf *pf, uint32_t k)
{
	const struct check_row *r = &pf->ws.rows[k];
	size_t j;

	for (j = 0; j < r->nprobes; j++)
		if (!agent_check_find(&pf->w2, k, r->probes[j].to, r->probes[j].proto))
			agent_check_row_add(&pf->w2, k, &r->probes[j]);
	pf->w2.rows[k].reported = 1;
}

static void coord_take(struct agent_pf *pf, uint32_t k, const char *doc, size_t len)
{
	struct check_world *w = pf->stage == 1 ? &pf->w : pf->stage == 2 ? &pf->w2 : &pf->ws;
	char why[160];

	if (k >= pf->n || !pf->want[k])
		return;
	if (agent_pf_report_decode(w, k, pf->id, doc, len, why, sizeof(why)) < 0) {
		gx_warn("preflight: the row of %s dropped: %s", pf->names[k], why);
		return;
	}
	if (pf->stage == 3)
		keep_row(pf, k);
	pf->want[k] = 0;
	if (++pf->ngot == pf->nwant) {
		gx_ev_timer_cancel(pf->h.ev, pf->timer);
		pf->timer = gx_ev_timer(pf->h.ev, 0, pass_end, pf);
	}
}

static void coord_recv(struct agent_pf *pf, uint32_t slot, const unsigned char *p, size_t len)
{
	uint32_t k = part_of(pf, slot);
	char *doc = NULL;
	size_t dlen = 0;
	int rc;

	if (k >= pf->n || !pf->bufs)
		return;
	rc = buf_take(&pf->bufs[k], PF_REPORT, p, len, &doc, &dlen);
	if (rc < 0)
		gx_warn("preflight: a frame of %s dropped: %s", pf->names[k], gx_strerror(rc));
	if (rc == 1)
		coord_take(pf, k, doc, dlen);
	free(doc);
}

static void pf_recv(void *arg, uint32_t slot, const unsigned char *p, size_t len)
{
	struct agent_pf *pf = arg;

	if (pf->is_coord)
		coord_recv(pf, slot, p, len);
	else
		member_recv(pf, p, len);
}

static void pass_one(struct agent_pf *pf)
{
	uint32_t *t = calloc(pf->n, sizeof(*t)), k, nt, maxt = 0;

	pf->stage = 1;
	pf->id = 1;
	pf->ngot = 0;
	pf->nwant = pf->n;
	memset(pf->want, 1, pf->n);
	/* the members first, so that every pod starts probing at about one time */
	for (k = pf->n; t && k-- > 0;) {
		nt = agent_pf_targets(pf->n, pf->all, k, t);
		maxt = nt > maxt ? nt : maxt;
		if (send_plan(pf, k, t, nt, pf->bytes) < 0)
			gx_debug("preflight: no plan to %s", pf->names[k]);
	}
	free(t);
	pass_arm(pf, maxt);
}

static void expect(struct agent_pf *pf, uint32_t k)
{
	pf->want[k] = 1;
	pf->nwant++;
}

/* Stage 2: every connectivity suspect and its vantages echo each other again (at once). */
static int stage_conn(struct agent_pf *pf)
{
	uint32_t *cnt = calloc(pf->n + 1, sizeof(*cnt)), *adj = NULL, *at = NULL;
	uint32_t s, v, g, k, e = 0, maxt = 0;
	int rc = -ENOMEM;

	if (!cnt)
		goto out;
	for (s = 0; s < pf->n; s++)
		for (v = 0; (pf->sus[s] & PF_SUS_CONN) && v < AGENT_PF_VANTAGES; v++)
			if ((g = pf->vant[s * AGENT_PF_VANTAGES + v]) < pf->n) {
				cnt[g]++;
				cnt[s] += pf->w.rows[s].reported;
				e += 2;
			}
	rc = 0;
	if (!e)
		goto out;
	rc = -ENOMEM;
	adj = calloc(e + 1, sizeof(*adj));
	at = calloc(pf->n + 1, sizeof(*at));
	if (!adj || !at)
		goto out;
	for (k = 1; k <= pf->n; k++)
		at[k] = at[k - 1] + cnt[k - 1];
	memset(cnt, 0, pf->n * sizeof(*cnt));
	for (s = 0; s < pf->n; s++)
		for (v = 0; (pf->sus[s] & PF_SUS_CONN) && v < AGENT_PF_VANTAGES; v++) {
			if ((g = pf->vant[s * AGENT_PF_VANTAGES + v]) >= pf->n)
				continue;
			adj[at[g] + cnt[g]++] = s;
			if (pf->w.rows[s].reported)
				adj[at[s] + cnt[s]++] = g;
		}
	pf->stage = 2;
	pf->id++;
	pf->ngot = pf->nwant = 0;
	memset(pf->want, 0, pf->n);
	for (k = pf->n; k-- > 0;)
		if (cnt[k]) {
			expect(pf, k);
			maxt = cnt[k] > maxt ? cnt[k] : maxt;
		}
	for (k = pf->n; k-- > 0;)
		if (cnt[k] && send_plan(pf, k, adj + at[k], cnt[k], 0) < 0)
			gx_debug("preflight: no second plan to %s", pf->names[k]);
	pass_arm(pf, maxt);
	rc = 1;
out:
	free(cnt);
	free(adj);
	free(at);
	return rc;
}

static void name(struct agent_pf *pf, uint32_t i, const char *why)
{
	pf->blamed[i] = 1;
	free(pf->bwhy[i]);
	pf->bwhy[i] = strdup(why);
}

static void verdict(struct agent_pf *pf);
static void slow_next(struct agent_pf *pf);

#define PF_BATCH_MAX 512 /* slow suspects one vantage streams to in one plan */

/*
 * Stage 3: the slow suspects, measured again one stream at a time in the whole job (what it
 * measures is the path, not a share of a loaded node), in batches that share two vantages:
 * each vantage streams to every suspect of the batch and then to the other vantage (the
 * control), one plan each; a suspect slow on the way in is named then; each other one
 * that looked slow on the way out then streams to both vantages, one after the other.
 */
static void slow_plan(struct agent_pf *pf, uint32_t p, uint32_t *t, uint32_t nt)
{
	pf->id++;
	pf->ngot = pf->nwant = 0;
	memset(pf->want, 0, pf->n);
	expect(pf, p);
	if (send_plan(pf, p, t, nt, pf->bytes) < 0)
		gx_debug("preflight: no plan to %s", pf->names[p]);
	pass_arm(pf, nt);
}

/* s looked slow in this round (bits), against its controls and the job median; in the
 * second round that names it. */
static int round_slow(struct agent_pf *pf, uint32_t s, int bits, double *ratio)
{
	char why[300];

	if (!agent_pf_slow_verdict(&pf->w, &pf->ws, pf->g, s, bits, pf->slow, why, sizeof(why),
				   ratio))
		return 0;
	pf->conf[s] = 1;
	if (pf->round == 2)
		name(pf, s, why);
	return 1;
}

/* A round is over: round 1 keeps the suspects it confirmed for round 2 (a process starved
 * for a moment is not slow twice, some 100 ms apart; a slow path is); round 2 named them. */
static int round_end(struct agent_pf *pf)
{
	uint32_t k, s, keep = 0;
	double ratio = -1;

	for (k = 0; k < pf->nbatch; k++) {
		s = pf->batch[k];
		if (!pf->conf[s] && !round_slow(pf, s, pf->sus[s], &ratio)) {
			gx_info("preflight: %s looked slow in the first pass, not when measured "
				"again (round %d: at least %.2f of its control)",
				pf->names[s], pf->round, ratio);
			continue;
		}
		pf->conf[s] = 0;
		if (pf->round == 1)
			pf->batch[keep++] = s;
	}
	agent_check_world_free(&pf->ws);
	if (pf->round == 2 || !keep || agent_check_world_init(&pf->ws, pf->n, 0, pf->names) < 0)
		return 0;
	pf->nbatch = keep;
	pf->round = 2;
	pf->step = 0;
	return 1;
}

static void slow_step(struct agent_pf *pf)
{
	uint32_t *g = pf->g, t[2], k, s, o;
	int in = PF_SUS_IN | PF_SUS_RIN;
	double ratio;

	/* steps 0, 1: a vantage to every suspect of the batch, then to the other vantage */
	for (; pf->step < 2; pf->step++) {
		if (g[pf->step] >= pf->n)
			continue;
		o = g[pf->step ? 0 : 1];
		pf->batch[pf->nbatch] = o;
		k = pf->nbatch + (o < pf->n);
		s = g[pf->step++];
		slow_plan(pf, s, pf->batch, k);
		return;
	}
	if (pf->step == 2) { /* the way in, from both vantages against their controls */
		for (k = 0; k < pf->nbatch; k++)
			if (pf->sus[pf->batch[k]] & in)
				round_slow(pf, pf->batch[k], pf->sus[pf->batch[k]] & in, &ratio);
		pf->step = 3;
	}
	/* then each suspect left that looked slow on the way out streams to both */
	for (; pf->step - 3 < (int)pf->nbatch; pf->step++) {
		s = pf->batch[pf->step - 3];
		if (pf->conf[s] || !(pf->sus[s] & ~in & PF_SUS_SLOW) || !pf->w.rows[s].reported)
			continue;
		t[0] = g[0];
		t[1] = g[1];
		pf->step++;
		slow_plan(pf, s, g[0] < pf->n ? t : t + 1, (g[0] < pf->n) + (g[1] < pf->n));
		return;
	}
	if (round_end(pf))
		slow_step(pf);
	else
		slow_next(pf);
}

/* The next batch: the slow suspects not looked at yet that share the first one's vantages. */
static void slow_next(struct agent_pf *pf)
{
	uint32_t s, *v;
	char why[300];
	double ratio;

	pf->nbatch = 0;
	for (s = 0; s < pf->n && pf->nbatch < PF_BATCH_MAX; s++) {
		v = pf->vant + (size_t)s * AGENT_PF_VANTAGES;
		if (!(pf->sus[s] & PF_SUS_SLOW) || pf->blamed[s] || pf->looked[s])
			continue;
		if (v[0] >= pf->n) {
			/* nobody to look from but itself (the one known-good pod without a
			 * connectivity suspicion): its first pass stands, as when nobody has a
			 * vantage (first_end), rather than a slow pod starting the job unlooked */
			pf->looked[s] = 1;
			if (agent_pf_slow_verdict(&pf->w, NULL, NULL, s, pf->sus[s], pf->slow, why,
						  sizeof(why), &ratio))
				name(pf, s, why);
			continue;
		}
		if (!pf->nbatch) {
			pf->g[0] = v[0];
			pf->g[1] = v[1];
		} else if (v[0] != pf->g[0] || v[1] != pf->g[1] || s == pf->g[0] || s == pf->g[1]) {
			continue; /* another pair of vantages, or one of these: a later batch */
		}
		pf->looked[s] = 1;
		pf->batch[pf->nbatch++] = s;
	}
	if (!pf->nbatch || agent_check_world_init(&pf->ws, pf->n, 0, pf->names) < 0) {
		verdict(pf);
		return;
	}
	pf->stage = 3;
	pf->step = 0;
	pf->round = 1;
	slow_step(pf);
}

static void stage_slow(struct agent_pf *pf)
{
	slow_next(pf);
}

static void write_json(struct agent_pf *pf, int64_t ms)
{
	const char *out = pf->h.o->out;
	json_t *j = agent_pf_json(&pf->w, pf->stage > 1 ? &pf->w2 : NULL, pf->blamed, pf->line,
				  pf->all || pf->n <= AGENT_PF_SMALL ? "all pairs" : "ring + chord",
				  pf->bytes, ms);
	char *text = j ? json_dumps(j, JSON_INDENT(1)) : NULL, err[256] = "out of memory";

	json_decref(j);
	/* --out as the run opens it once (agent_out_open): created, ours, no symlink followed */
	if (!text ||
	    pf->h.write_file(pf->h.arg, "preflight.json", text, strlen(text), err, sizeof(err)) < 0)
		gx_warn("preflight: %s/preflight.json not written: %s", out, err);
	free(text);
}

/* The named pods' lines, one line (at most AGENT_PF_LINE; the rest in preflight.json). */
static uint32_t compose(struct agent_pf *pf)
{
	size_t off = 0, len = sizeof(pf->line);
	uint32_t k, c = 0, shown = 0;

	pf->line[0] = '\0';
	for (k = 0; k < pf->n; k++) {
		if (!pf->blamed[k])
			continue;
		c++;
		if (off + strlen(pf->names[k]) + strlen(pf->bwhy[k] ? pf->bwhy[k] : "") + 4 <
		    AGENT_PF_LINE) {
			off +=
			    (size_t)snprintf(pf->line + off, len - off, "%s%s: %s", off ? "; " : "",
					     pf->names[k], pf->bwhy[k] ? pf->bwhy[k] : "named");
			shown++;
		}
	}
	if (c > shown)
		snprintf(pf->line + off, len - off, "; and %u more (preflight.json)", c - shown);
	return c;
}

static void verdict(struct agent_pf *pf)
{
	unsigned char *leave = calloc(pf->world, 1);
	struct agent_pf_fig *fig = calloc(pf->n, sizeof(*fig));
	struct agent_pf_medians med = {0, 0};
	int64_t ms = gx_now_ms() - pf->t0;
	char rate[32];
	uint32_t k, nb;

	gx_ev_timer_cancel(pf->h.ev, pf->timer);
	pf->timer = 0;
	nb = compose(pf);
	if (fig)
		agent_pf_figures(&pf->w, NULL, fig, &med);
	agent_pf_rate(med.tcp, rate, sizeof(rate));
	if (nb)
		gx_warn("preflight: %s (%lld ms)", pf->line, (long long)ms);
	else
		gx_info("preflight: %u pods, the job median %s, nobody named (%lld ms)", pf->n,
			rate, (long long)ms);
	write_json(pf, ms);
	for (k = 0; leave && k < pf->n; k++)
		leave[pf->pods[k].slot] = pf->blamed[k];
	rdzv_coord_pf_done(*pf->h.coord, leave, pf->line);
	free(leave);
	free(fig);
}

/* The first pass is in: its suspects, then their second looks (or, with no pod to look
 * from, the first pass stands). */
static void first_end(struct agent_pf *pf)
{
	double ratio;
	char why[300];
	uint32_t k;
	int rc;

	agent_check_world_finish(&pf->w);
	if (!agent_pf_suspects(&pf->w, pf->slow, pf->sus)) {
		verdict(pf);
		return;
	}
	if (!agent_pf_vantages(&pf->w, pf->sus, pf->vant)) {
		for (k = 0; k < pf->n; k++)
			if (((pf->sus[k] & PF_SUS_CONN) &&
			     agent_pf_conn_verdict(&pf->w, NULL, NULL, k, why, sizeof(why))) ||
			    ((pf->sus[k] & PF_SUS_SLOW) &&
			     agent_pf_slow_verdict(&pf->w, NULL, NULL, k, pf->sus[k], pf->slow, why,
						   sizeof(why), &ratio)))
				name(pf, k, why);
		verdict(pf);
		return;
	}
	if (agent_check_world_init(&pf->w2, pf->n, 0, pf->names) < 0) {
		verdict(pf);
		return;
	}
	rc = stage_conn(pf);
	if (rc <= 0)
		stage_slow(pf);
}

static void pass_end(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct agent_pf *pf = arg;
	char why[300];
	uint32_t k;

	(void)ev;
	(void)id;
	pf->timer = 0;
	for (k = 0; k < pf->n; k++)
		if (pf->want[k])
			gx_info("preflight: no row from %s (stage %d)", pf->names[k], pf->stage);
	if (pf->stage == 1) {
		first_end(pf);
	} else if (pf->stage == 2) {
		for (k = 0; k < pf->n; k++)
			if ((pf->sus[k] & PF_SUS_CONN) &&
			    agent_pf_conn_verdict(&pf->w, &pf->w2, pf->vant, k, why, sizeof(why)))
				name(pf, k, why);
		stage_slow(pf);
	} else {
		slow_step(pf);
	}
}

static void pf_begin(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct agent_pf *pf = arg;

	(void)ev;
	(void)id;
	pf->timer = 0;
	gx_info("preflight: %u pods, %s, %ld bytes each way", pf->n,
		pf->all || pf->n <= AGENT_PF_SMALL ? "all pairs" : "ring + chord", (long)pf->bytes);
	pass_one(pf);
}

/* rdzv's pf_start (inside its COMMIT check): the participants, then the plans from a timer. */
static void pf_start(void *arg, const uint32_t *slots, uint32_t n, const struct rdzv_peer *tab)
{
	struct agent_pf *pf = arg;
	int v6 = !tab[0].addr4[0];
	uint32_t k;

	pf->t0 = gx_now_ms();
	pf->n = n;
	pf->pods = calloc(n, sizeof(*pf->pods));
	pf->names = calloc(n, sizeof(*pf->names));
	pf->bufs = calloc(n, sizeof(*pf->bufs));
	pf->sus = calloc(n, 5);
	pf->batch = calloc(PF_BATCH_MAX + 1, sizeof(*pf->batch));
	pf->bwhy = calloc(n, sizeof(*pf->bwhy));
	pf->vant = calloc((size_t)n * AGENT_PF_VANTAGES, sizeof(*pf->vant));
	if (!pf->pods || !pf->names || !pf->bufs || !pf->sus || !pf->vant || !pf->bwhy ||
	    !pf->batch || agent_check_world_init(&pf->w, n, 0, pf->names) < 0) {
		rdzv_coord_pf_done(*pf->h.coord, NULL, NULL); /* no memory: no preflight */
		return;
	}
	pf->want = pf->sus + n;
	pf->blamed = pf->sus + 2 * (size_t)n;
	pf->looked = pf->sus + 3 * (size_t)n;
	pf->conf = pf->sus + 4 * (size_t)n;
	for (k = 0; k < n; k++) {
		struct rdzv_peer *e = &pf->pods[k].e;

		pf->pods[k].slot = slots[k];
		gx_strlcpy(e->name, tab[slots[k]].name, sizeof(e->name));
		gx_strlcpy(e->iface, tab[slots[k]].iface, sizeof(e->iface));
		if (v6)
			gx_strlcpy(e->addr6, tab[slots[k]].addr6, sizeof(e->addr6));
		else
			gx_strlcpy(e->addr4, tab[slots[k]].addr4, sizeof(e->addr4));
		/* RDMA where the rendezvous verified it: both ends had a device, phase 2 ran the
		 * RDMA-CM check against the coordinator's */
		if (tab[0].rdma_dev[0] && tab[slots[k]].rdma_dev[0]) {
			gx_strlcpy(e->rdma_dev, tab[slots[k]].rdma_dev, sizeof(e->rdma_dev));
			e->rdma_port = tab[slots[k]].rdma_port;
			e->gid_index = tab[slots[k]].gid_index;
		} else {
			e->gid_index = -1;
		}
		pf->names[k] = e->name;
	}
	agent_pf_shape(&pf->w, pf->all);
	pf->timer = gx_ev_timer(pf->h.ev, 0, pf_begin, pf);
}

int agent_pf_hook(const struct agent_pf_host *h, struct rdzv_config *cfg, struct agent_pf **ret)
{
	const struct agent_opts *o = h->o;
	struct agent_pf *pf = calloc(1, sizeof(*pf));

	*ret = NULL;
	if (!pf)
		return -ENOMEM;
	pf->h = *h;
	pf->is_coord = cfg->is_coordinator;
	pf->all = o->preflight_shape == AGENT_PF_SHAPE_ALL;
	pf->slow = o->preflight_slow > 0 ? o->preflight_slow : AGENT_PF_SLOW;
	pf->bytes = o->preflight_bytes ? o->preflight_bytes : AGENT_PF_BYTES;
	pf->world = cfg->world;
	pf->rdzv_deadline = cfg->deadline_ms;
	pf->pr.pf = pf;
	if (!*h->routes && !h->routes_off && nd_routes_open(h->routes) < 0)
		gx_debug("preflight: no route answers: probes are not checked against the routes");
	if (agent_check_probes_new(h->ev, h->nd ? h->nd->iface : "", *h->routes, pf,
				   &pf->pr.probes) < 0) {
		free(pf);
		return -ENOMEM;
	}
	if (pf->all && h->npeers > AGENT_PF_ALL_MAX) {
		gx_warn("--preflight-shape all: %zu pods, more than %d: ring + chord instead",
			h->npeers, AGENT_PF_ALL_MAX);
		pf->all = 0;
	}
	cfg->pf_recv = pf_recv;
	cfg->pf_arg = pf;
	if (pf->is_coord && o->preflight) {
		cfg->preflight = 1;
		cfg->pf_start = pf_start;
		cfg->pf_settle_ms =
		    (o->preflight_settle ? o->preflight_settle : AGENT_PF_SETTLE_S) * 1000;
	}
	*ret = pf;
	return 0;
}

void agent_pf_end(struct agent_pf *pf, const struct rdzv_result *res, int rdzv_rc)
{
	uint32_t k;

	if (!pf)
		return;
	if (res->note[0] && rdzv_rc == 0)
		gx_warn("preflight: the job starts with %u pods, without %s", res->world,
			res->note);
	pr_clear(&pf->pr);
	agent_check_probes_free(pf->pr.probes);
	rdzv_rdma_ctx_free(pf->pr.ctx);
	gx_ev_timer_cancel(pf->h.ev, pf->timer);
	free(pf->in.p);
	for (k = 0; pf->bufs && k < pf->n; k++)
		free(pf->bufs[k].p);
	free(pf->bufs);
	agent_check_world_free(&pf->w);
	agent_check_world_free(&pf->w2);
	agent_check_world_free(&pf->ws);
	for (k = 0; pf->bwhy && k < pf->n; k++)
		free(pf->bwhy[k]);
	free(pf->bwhy);
	free(pf->pods);
	free(pf->names);
	free(pf->sus);
	free(pf->batch);
	free(pf->vant);
	free(pf);
}
