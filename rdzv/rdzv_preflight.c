/* SPDX-License-Identifier: MIT */
/*
 * rdzv_preflight.c - the preflight's part of the rendezvous (PROTOCOL.md "Preflight"): the
 * coordinator holds its COMMIT once the pods are in, the caller measures their paths with
 * PREFLIGHT frames carried on the phase-1 sessions (bytes this library never reads), and
 * its verdict is applied here: commit; leave the blamed pods of an elastic job out and
 * give the others contiguous job ranks; or end the job naming them. What is measured and
 * how is the caller's (agent/preflight). This is the coordinator's side; a member's
 * PREFLIGHT frames and job rank are among its messages (rdzv_member_msg.c).
 */
#include "rdzv/rdzv_coord_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum pf_state {
	PF_GATHER = 0, /* waiting for the pods (elastic: MAX, or the settle window) */
	PF_RUNNING,    /* pf_start was called; the verdict has not come */
	PF_DONE,
};

struct rdzv_pf {
	enum pf_state state;
	int64_t min_at;	    /* elastic: when min_peers were first in */
	uint32_t *slots, n; /* the pods that take part, [0] = 0 */
	unsigned char *in;  /* world bytes: takes part */
	unsigned char *out; /* world bytes: left out by the verdict */
	uint32_t *jrank;    /* world: job rank + 1 (0: none), once ranked */
	uint32_t jworld;
	int ranked;		/* elastic: the job's ranks are jrank, not slots */
	struct rdzv_peer *rtab; /* jworld entries in job-rank order */
	struct rdzv_buf enc;	/* rtab as COMMIT table rows, encoded once per change */
};

int rdzv_co_pf_init(struct rdzv_coord *co)
{
	struct rdzv_pf *pf;

	if (!co->cfg.preflight || !co->cfg.pf_start)
		return 0;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	co->pf = pf;
	pf->slots = calloc(co->world, sizeof(*pf->slots));
	pf->jrank = calloc(co->world, sizeof(*pf->jrank));
	pf->in = calloc(co->world, 2);
	if (!pf->slots || !pf->jrank || !pf->in)
		return -ENOMEM;
	pf->out = pf->in + co->world;
	return 0;
}

void rdzv_co_pf_free(struct rdzv_coord *co)
{
	struct rdzv_pf *pf = co->pf;

	if (!pf)
		return;
	free(pf->slots);
	free(pf->jrank);
	free(pf->in);
	free(pf->rtab);
	rdzv_buf_free(&pf->enc);
	free(pf);
	co->pf = NULL;
}

static void pf_start(struct rdzv_coord *co)
{
	struct rdzv_pf *pf = co->pf;
	uint32_t i;

	pf->n = 0;
	pf->slots[pf->n++] = 0;
	pf->in[0] = 1;
	for (i = 1; i < co->world; i++) {
		const struct cpeer *sp = &co->st[i];

		if (sp->joined && sp->verified && sp->conn) {
			pf->slots[pf->n++] = i;
			pf->in[i] = 1;
		}
	}
	pf->state = PF_RUNNING;
	gx_debug("rdzv: %u pods in: preflight before the COMMIT", pf->n);
	co->cfg.pf_start(co->cfg.pf_arg, pf->slots, pf->n, co->tab);
}

int rdzv_co_pf_hold(struct rdzv_coord *co)
{
	struct rdzv_pf *pf = co->pf;
	int64_t now;

	if (!pf || pf->state == PF_DONE)
		return 0;
	if (pf->state == PF_RUNNING)
		return 1;
	/* elastic: gather until MAX are in, or the settle window after MIN has passed (the
	 * sweep comes back every RDZV_SWEEP_MS), so that one measurement sees them all */
	if (co->cfg.elastic && co->nverified + 1 < co->world) {
		now = gx_now_ms();
		if (!pf->min_at) {
			pf->min_at = now;
			gx_info(
			    "rdzv: %u of up to %u pods in: the preflight starts when all are in "
			    "or in %lld ms",
			    co->nverified + 1, co->world, (long long)co->cfg.pf_settle_ms);
		}
		if (now - pf->min_at < co->cfg.pf_settle_ms)
			return 1;
	}
	pf_start(co);
	return 1;
}

int rdzv_co_pf_running(const struct rdzv_coord *co)
{
	return co->pf && co->pf->state == PF_RUNNING;
}

int rdzv_co_pf_deadline(struct rdzv_coord *co, long secs)
{
	if (!co->pf || co->pf->state != PF_RUNNING)
		return 0;
	co->pf->state = PF_DONE;
	rdzv_co_abort(co, GX_EPREFLIGHT, 0, "preflight failed: not over after %lds (--timeout)",
		      secs);
	return 1;
}

int rdzv_coord_pf_send(struct rdzv_coord *co, uint32_t slot, const void *p, size_t len)
{
	struct rdzv_buf b = {0};
	struct cconn *cc;
	int rc;

	if (!co || !co->pf || co->pf->state != PF_RUNNING || slot == 0 || slot >= co->world)
		return -ENOTCONN;
	if (len > RDZV_PF_DATA_MAX)
		return -EMSGSIZE;
	cc = co->st[slot].conn;
	if (!cc || cc->rc.state != RC_SESSION)
		return -ENOTCONN;
	rdzv_put(&b, T_PFDATA, p, len);
	rc = rdzv_co_send(co, cc, RDZV_PREFLIGHT, &b);
	rdzv_buf_free(&b);
	rdzv_co_carry_flush(co); /* a relay's records: the caller's timer is no event of ours */
	return rc;
}

void rdzv_co_pf_recv(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_msg *m)
{
	struct rdzv_pf *pf = co->pf;

	if (!pf || pf->state != PF_RUNNING || cc->peer < 0 || !pf->in[cc->peer] ||
	    !co->cfg.pf_recv || !m->pf)
		return;
	co->cfg.pf_recv(co->cfg.pf_arg, (uint32_t)cc->peer, m->pf, m->pflen);
}

/* An ABORT to one slot with its own code (the pods the preflight names). */
static void abort_one(struct rdzv_coord *co, uint32_t slot, int code, const char *text)
{
	struct cconn *cc = co->st[slot].conn;
	struct rdzv_buf b = {0};

	if (!cc || cc->rc.state != RC_SESSION)
		return;
	rdzv_put_u32(&b, T_CODE, (uint32_t)code);
	rdzv_put_str(&b, T_TEXT, text);
	rdzv_co_send(co, cc, RDZV_ABORT, &b);
	rdzv_buf_free(&b);
	if (!co->st[slot].told) {
		co->st[slot].told = 1;
		co->ntold++;
	}
	rdzv_co_close_later(co, cc);
}

static int rtab_build(struct rdzv_coord *co)
{
	struct rdzv_pf *pf = co->pf;
	struct rdzv_peer *t = realloc(pf->rtab, (pf->jworld ? pf->jworld : 1) * sizeof(*t));
	uint32_t i, r;

	if (!t)
		return -ENOMEM;
	pf->rtab = t;
	for (i = 0; i < co->world; i++) {
		if (!(r = pf->jrank[i]))
			continue;
		t[r - 1] = co->tab[i];
		t[r - 1].index = r - 1;
	}
	rdzv_buf_free(&pf->enc);
	return 0;
}

/* Elastic: the pods that took part and were kept get ranks 0..K-1 in slot order (the
 * coordinator 0), then the pods verified meanwhile; later ones get the next ranks. */
static int pf_rank(struct rdzv_coord *co)
{
	struct rdzv_pf *pf = co->pf;
	uint32_t i, k, r = 0;

	for (k = 0; k < pf->n; k++)
		if (!pf->out[pf->slots[k]])
			pf->jrank[pf->slots[k]] = ++r;
	for (i = 1; i < co->nassigned; i++)
		if (!pf->in[i] && co->st[i].verified && co->st[i].conn)
			pf->jrank[i] = ++r;
	pf->jworld = r;
	pf->ranked = 1;
	return rtab_build(co);
}

/* Every pod is told: the named ones that they are left out (exit 8), the others that the
 * job does not start (exit 7). */
static void pf_fail(struct rdzv_coord *co, const char *line, uint32_t kept)
{
	struct rdzv_pf *pf = co->pf;
	char text[1024];
	uint32_t k;

	if (pf->out[0])
		snprintf(text, sizeof(text),
			 "preflight failed: %s (%s is the coordinator: no job without it)", line,
			 co->tab[0].name);
	else if (co->cfg.elastic)
		snprintf(text, sizeof(text),
			 "preflight failed: %s; %u pods remain, fewer than the %u needed", line,
			 kept, co->need);
	else
		snprintf(text, sizeof(text), "preflight failed: %s", line);
	for (k = 1; k < pf->n; k++)
		if (pf->out[pf->slots[k]])
			abort_one(co, pf->slots[k], GX_ELEFTOUT, text);
	rdzv_co_abort(co, GX_EPREFLIGHT, !co->cfg.elastic, "%s", text);
	if (pf->out[0])
		co->final_rc = GX_ELEFTOUT;
}

/* Elastic: the named pods go (their slots free for a pod that comes back), the job
 * commits without them. */
static void pf_leave(struct rdzv_coord *co, const char *line)
{
	struct rdzv_pf *pf = co->pf;
	char text[1024];
	uint32_t k, s;

	gx_strlcpy(co->res.note, line, sizeof(co->res.note));
	snprintf(text, sizeof(text), "left out by the preflight: %s", line);
	for (k = 1; k < pf->n; k++) {
		s = pf->slots[k];
		if (!pf->out[s])
			continue;
		abort_one(co, s, GX_ELEFTOUT, text);
		co->njoined -= co->st[s].joined;
		co->nverified -= co->st[s].verified;
		co->st[s].joined = co->st[s].verified = 0;
	}
}

void rdzv_coord_pf_done(struct rdzv_coord *co, const unsigned char *leave, const char *line)
{
	struct rdzv_pf *pf = co ? co->pf : NULL;
	uint32_t k, i, nout = 0, kept;

	if (!pf || pf->state != PF_RUNNING || co->aborted || co->committed)
		return;
	pf->state = PF_DONE;
	for (k = 0; leave && k < pf->n; k++)
		if (leave[pf->slots[k]]) {
			pf->out[pf->slots[k]] = 1;
			nout++;
		}
	kept = pf->n - nout;
	for (i = 1; co->cfg.elastic && i < co->nassigned; i++)
		kept += !pf->in[i] && co->st[i].verified && co->st[i].conn;
	if (nout && (!co->cfg.elastic || pf->out[0] || kept < co->need)) {
		pf_fail(co, line ? line : "", kept);
	} else {
		if (nout)
			pf_leave(co, line ? line : "");
		if (co->cfg.elastic && pf_rank(co) < 0)
			rdzv_co_abort(co, -ENOMEM, 0, "preflight: out of memory");
		rdzv_co_check_commit(co);
	}
	rdzv_co_event_end(co);
}

int rdzv_co_pf_commit_put(struct rdzv_coord *co, struct rdzv_buf *b, uint32_t i)
{
	struct rdzv_pf *pf = co->pf;

	if (!pf)
		return 1;
	if (i < co->world && pf->out[i])
		return 0; /* told it is left out: a pod that comes back is ranked again first */
	if (pf->ranked && i < co->world && !pf->jrank[i])
		return 0; /* not verified yet: its VERIFY ranks it */
	if (pf->ranked && i < co->world)
		rdzv_put_u32(b, T_JRANK, pf->jrank[i] - 1);
	if (pf->ranked)
		rdzv_put_u32(b, T_JWORLD, pf->jworld);
	if (co->res.note[0])
		rdzv_put_str(b, T_TEXT, co->res.note);
	return 1;
}

void rdzv_co_pf_result(struct rdzv_coord *co)
{
	struct rdzv_pf *pf = co->pf;

	if (!pf || !pf->ranked) {
		co->res.table = co->tab;
		co->res.ntable = co->cfg.elastic ? co->nassigned : co->world;
		return;
	}
	co->res.table = pf->rtab;
	co->res.ntable = pf->jworld;
	co->res.world = pf->jworld;
}

const struct rdzv_buf *rdzv_co_pf_table(struct rdzv_coord *co)
{
	struct rdzv_pf *pf = co->pf;
	uint32_t r;

	if (!pf || !pf->ranked)
		return NULL;
	if (pf->enc.len || pf->enc.err)
		return &pf->enc;
	for (r = 0; r < pf->jworld; r++)
		rdzv_put_peer(&pf->enc, T_ENTRY, &pf->rtab[r]);
	return &pf->enc;
}

void rdzv_co_pf_changed(struct rdzv_coord *co, uint32_t i)
{
	struct rdzv_pf *pf = co->pf;

	pf->out[i] = 0; /* back (a new pod of a name that was left out): the next rank */
	if (pf->ranked && !pf->jrank[i]) {
		pf->jrank[i] = ++pf->jworld;
		if (rtab_build(co) < 0) {
			pf->jrank[i] = 0;
			pf->jworld--;
			gx_warn("rdzv: out of memory: %s gets no rank", co->tab[i].name);
			return;
		}
	} else if (pf->ranked) {
		rtab_build(co); /* its entry changed (a restarted pod) */
	}
	rdzv_co_commit_one(co, i);
	rdzv_co_pf_result(co);
	if (co->cfg.changed)
		co->cfg.changed(co->cfg.changed_arg, co->res.table, co->res.ntable);
}
