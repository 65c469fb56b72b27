/* SPDX-License-Identifier: MIT */
/*
 * preflight_eval.c - the pure part of the preflight: which pod probes which, the figures
 * and the job's median, who is suspected after the first pass and from where it is probed
 * again, the verdict and its line, and the documents (plan, report, preflight.json).
 */
#include "agent/preflight/preflight_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PF_US_MAX 3600000000LL
#define PF_TARGETS_MAX 1024 /* a plan's targets (a vantage of many suspects) */

uint32_t agent_pf_targets(uint32_t n, int all, uint32_t i, uint32_t *out)
{
	uint32_t k = 0, m;

	if (n < 2)
		return 0;
	if (all || n <= AGENT_PF_SMALL) {
		for (m = 1; m < n; m++)
			out[k++] = (i + m) % n;
		return k;
	}
	/* ring and chord: two pairs each way per pod, n/2 >= 2 apart from the ring's 1 */
	out[k++] = (i + 1) % n;
	out[k++] = (i + n / 2) % n;
	return k;
}

void agent_pf_shape(struct check_world *w, int all)
{
	w->star = 0;
	w->ring = 0;
	w->sample_k = 0;
	if (all || w->n <= AGENT_PF_SMALL)
		return;
	w->ring = 1;
	w->sample_k = 2;
	w->offs[0] = 1;
	w->offs[1] = w->n / 2;
}

void agent_pf_rate(double bps, char *buf, size_t len)
{
	if (bps >= 1e9)
		snprintf(buf, len, "%.1f Gbit/s", bps / 1e9);
	else if (bps >= 1e6)
		snprintf(buf, len, "%.1f Mbit/s", bps / 1e6);
	else
		snprintf(buf, len, "%.0f kbit/s", bps / 1e3);
}

static double probe_bps(const struct check_probe *p)
{
	if (!p->ok || p->rail || p->bytes <= 0)
		return 0;
	if (p->proto == CHECK_TCP)
		return p->stream_us > 0 ? (double)p->bytes * 8e6 / (double)p->stream_us : 0;
	return p->write_us > 0 ? (double)p->bytes * 8e6 / (double)p->write_us : 0;
}

static double dmax(double a, double b)
{
	return a > b ? a : b;
}

static void fig_walk(const struct check_world *w, struct agent_pf_fig *fig)
{
	const struct check_probe *p;
	uint32_t i;
	size_t k;
	double v;

	for (i = 0; w && i < w->n; i++)
		for (k = 0; k < w->rows[i].nprobes; k++) {
			p = &w->rows[i].probes[k];
			if (p->to >= w->n || !(v = probe_bps(p)))
				continue;
			if (p->proto == CHECK_TCP) {
				fig[i].out = dmax(fig[i].out, v);
				fig[p->to].in = dmax(fig[p->to].in, v);
			} else {
				fig[i].rout = dmax(fig[i].rout, v);
				fig[p->to].rin = dmax(fig[p->to].rin, v);
			}
		}
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The upper median of the pods' figures (each pod its best each way): a slow pod's pairs
 * drag its neighbours' pair figures down, never their best one. */
static double median(const struct agent_pf_fig *fig, uint32_t n, int rdma)
{
	double *v = calloc(2 * (size_t)n + 1, sizeof(*v)), m = 0;
	size_t k = 0;
	uint32_t i;

	if (!v)
		return 0;
	for (i = 0; i < n; i++) {
		if ((rdma ? fig[i].rout : fig[i].out) > 0)
			v[k++] = rdma ? fig[i].rout : fig[i].out;
		if ((rdma ? fig[i].rin : fig[i].in) > 0)
			v[k++] = rdma ? fig[i].rin : fig[i].in;
	}
	if (k) {
		qsort(v, k, sizeof(*v), cmp_dbl);
		m = v[k / 2];
	}
	free(v);
	return m;
}

void agent_pf_figures(const struct check_world *w, const struct check_world *w2,
		      struct agent_pf_fig *fig, struct agent_pf_medians *med)
{
	memset(fig, 0, w->n * sizeof(*fig));
	fig_walk(w, fig);
	fig_walk(w2, fig);
	if (med) {
		med->tcp = median(fig, w->n, 0);
		med->rdma = median(fig, w->n, 1);
	}
}

/* Slow bits of one pod against the medians (a slow figure needs three pods: with two,
 * which end is slow cannot be told). */
static int slow_bits(const struct agent_pf_fig *f, const struct agent_pf_medians *m, double slow,
		     uint32_t n)
{
	int b = 0;

	if (n < 3)
		return 0;
	if (m->tcp > 0 && f->out > 0 && f->out < slow * m->tcp)
		b |= PF_SUS_OUT;
	if (m->tcp > 0 && f->in > 0 && f->in < slow * m->tcp)
		b |= PF_SUS_IN;
	if (m->rdma > 0 && f->rout > 0 && f->rout < slow * m->rdma)
		b |= PF_SUS_ROUT;
	if (m->rdma > 0 && f->rin > 0 && f->rin < slow * m->rdma)
		b |= PF_SUS_RIN;
	return b;
}

uint32_t agent_pf_suspects(const struct check_world *w, double slow, unsigned char *sus)
{
	struct agent_pf_fig *fig = calloc(w->n, sizeof(*fig));
	unsigned char *blame = calloc(w->n, 1);
	struct agent_pf_medians med;
	uint32_t i, c = 0;
	size_t npaths = 0;

	memset(sus, 0, w->n);
	if (!fig || !blame)
		goto out;
	agent_check_blame(w, blame, &npaths);
	agent_pf_figures(w, NULL, fig, &med);
	for (i = 0; i < w->n; i++) {
		sus[i] = (unsigned char)((blame[i] ? PF_SUS_CONN : 0) |
					 slow_bits(&fig[i], &med, slow, w->n));
		c += sus[i] != 0;
	}
out:
	free(fig);
	free(blame);
	return c;
}

/* How healthy a pod looked in the first pass: its worst figure against the median (1 when it
 * has none); vantages are taken from the healthiest. */
static double score(const struct agent_pf_fig *f, const struct agent_pf_medians *m)
{
	double v = 1e9;

	if (m->tcp > 0 && f->out > 0)
		v = f->out / m->tcp < v ? f->out / m->tcp : v;
	if (m->tcp > 0 && f->in > 0)
		v = f->in / m->tcp < v ? f->in / m->tcp : v;
	return v;
}

struct cand {
	uint32_t i;
	double score;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return x->i < y->i ? -1 : x->i > y->i;
}

uint32_t agent_pf_vantages(const struct check_world *w, const unsigned char *sus, uint32_t *vant)
{
	struct agent_pf_fig *fig = calloc(w->n, sizeof(*fig));
	struct cand *c = calloc(w->n, sizeof(*c));
	unsigned char *good = calloc(w->n, 1);
	struct agent_pf_medians med;
	uint32_t s, k, m, nc = 0, nv = 0;

	for (s = 0; s < (uint32_t)w->n * AGENT_PF_VANTAGES; s++)
		vant[s] = w->n;
	if (!fig || !c || !good || agent_check_known_good(w, good) < 0)
		goto out;
	agent_pf_figures(w, NULL, fig, &med);
	/* pods known good for their pairs, the ones with no suspicion first, then the fastest:
	 * under load every pod may look slow once, and one still has to measure again */
	for (s = 0; s < w->n; s++)
		if (good[s] && !(sus[s] & PF_SUS_CONN)) {
			c[nc].i = s;
			c[nc++].score = score(&fig[s], &med) + (sus[s] ? 0 : 1e10);
		}
	qsort(c, nc, sizeof(*c), cmp_cand);
	for (s = 0; s < w->n; s++)
		for (m = 0, k = 0; sus[s] && m < nc && k < AGENT_PF_VANTAGES; m++)
			if (c[m].i != s) {
				vant[s * AGENT_PF_VANTAGES + k++] = c[m].i;
				nv += k == 1;
			}
out:
	free(fig);
	free(c);
	free(good);
	return nv;
}

/* Failed TCP probes between pod i and known-good pods, one direction (in: theirs to i):
 * how many distinct pods, and the reason to name (an ARP / ND line first). */
static uint32_t failed_with_good(const struct check_world *w, const struct check_world *w2,
				 const unsigned char *good, uint32_t i, int in, char *why,
				 size_t len)
{
	const struct check_world *ws[2] = {w, w2};
	unsigned char *seen = calloc(w->n, 1);
	const struct check_probe *p;
	uint32_t g, c = 0;
	int k;

	why[0] = '\0';
	for (g = 0; seen && g < w->n; g++) {
		if (g == i || !good[g])
			continue;
		for (k = 0; k < 2; k++) {
			if (!ws[k] ||
			    !(p = agent_check_find(ws[k], in ? g : i, in ? i : g, CHECK_TCP)) ||
			    p->ok)
				continue;
			c += !seen[g];
			seen[g] = 1;
			if (!why[0] || strncmp(p->why, "no ARP", 6) == 0 ||
			    strncmp(p->why, "no ND", 5) == 0)
				gx_strlcpy(why, p->why, len);
		}
	}
	free(seen);
	return c;
}

static int timed_out(const char *why)
{
	return strcmp(why, "timeout") == 0 || strcmp(why, "no echo") == 0 ||
	       strcmp(why, "echo lost") == 0 || strcmp(why, "overloaded") == 0;
}

/* "no echo from 3 known-good pods", "no ARP answer from 192.168.1.7 (2 known-good pods)" */
static void conn_text(const struct check_world *w, const struct check_world *w2,
		      const unsigned char *good, uint32_t i, char *buf, size_t len)
{
	char why[96];
	uint32_t c = failed_with_good(w, w2, good, i, 1, why, sizeof(why));
	const char *dir = "from";

	if (!c) {
		c = failed_with_good(w, w2, good, i, 0, why, sizeof(why));
		dir = "to";
	}
	if (!c)
		snprintf(buf, len, "failed pairs with pods not known good either");
	else if (strncmp(why, "no ARP", 6) == 0 || strncmp(why, "no ND", 5) == 0)
		snprintf(buf, len, "%s (%s %u known-good pod%s)", why, dir, c, c == 1 ? "" : "s");
	else
		snprintf(buf, len, "%s %s %u known-good pod%s", timed_out(why) ? "no echo" : why,
			 dir, c, c == 1 ? "" : "s");
}

/* Second pass: does a known-good pod still fail with i (either way)? -1: nothing made. A
 * pod that some good pods reach and others do not still breaks the job: every pair must
 * work, and the first pass already found it the common end of failures with good pods. */
static int second_failed(const struct check_world *w2, const uint32_t *vant, uint32_t i)
{
	uint32_t k, g, made[2] = {0, 0}, ok[2] = {0, 0};
	const struct check_probe *p;

	for (k = 0; k < AGENT_PF_VANTAGES; k++) {
		g = vant[i * AGENT_PF_VANTAGES + k];
		if (g >= w2->n)
			continue;
		if ((p = agent_check_find(w2, g, i, CHECK_TCP))) {
			made[0]++;
			ok[0] += p->ok != 0;
		}
		if ((p = agent_check_find(w2, i, g, CHECK_TCP))) {
			made[1]++;
			ok[1] += p->ok != 0;
		}
	}
	if (!made[0] && !made[1])
		return -1;
	return ok[0] < made[0] || ok[1] < made[1];
}

int agent_pf_conn_verdict(const struct check_world *w, const struct check_world *w2,
			  const uint32_t *vant, uint32_t i, char *buf, size_t len)
{
	unsigned char *b1 = calloc(w->n, 2), *good = b1 ? b1 + w->n : NULL;
	int f = w2 && vant ? second_failed(w2, vant, i) : -1, rc = 1;
	size_t npaths;

	buf[0] = '\0';
	if (!w->rows[i].reported && !(w2 && w2->rows[i].reported)) {
		snprintf(buf, len, "no report (its gxboot did not answer the preflight)");
		goto out;
	}
	if (!b1) {
		snprintf(buf, len, "out of memory");
		goto out;
	}
	agent_check_blame(w, b1, &npaths);
	agent_check_known_good(w, good);
	if (f == 0 || (f < 0 && !b1[i])) {
		rc = 0; /* known-good pods reach it now: the first pass' failures passed */
		goto out;
	}
	if (b1[i] == CHECK_BLAME_OWN && w->rows[i].why[0])
		snprintf(buf, len, "%s", w->rows[i].why);
	else
		conn_text(w, w2, good, i, buf, len);
out:
	free(b1);
	return rc;
}

static void slow_text(double v, double m, const char *what, const char *dir, char *buf, size_t len)
{
	char a[32], b[32];

	agent_pf_rate(v, a, sizeof(a));
	agent_pf_rate(m, b, sizeof(b));
	/* no apostrophe: the line travels in an ABORT, whose text is kept to safe characters */
	snprintf(buf, len, "slow: %s%s %s its peers against the job median %s", what, a, dir, b);
}

static double pair_bps(const struct check_world *w, uint32_t a, uint32_t b, int proto, int *made)
{
	const struct check_probe *p =
	    a < w->n && b < w->n ? agent_check_find(w, a, b, proto) : NULL;

	*made = p != NULL;
	return p ? probe_bps(p) : 0;
}

/*
 * One direction of a slow suspect s in its second pass (ws): each vantage g's stream to s
 * (in; out: s's to g) against g's own control in the same step (g to the other vantage; out:
 * the other vantage's to g). Confirmed when every measurement is below the fraction of its
 * control and the best figure of both passes is below the fraction of the job's median.
 * *best: that figure. -1: nothing measured.
 */
static int slow_dir(const struct check_world *ws, const uint32_t *g, uint32_t s, int in, int proto,
		    double slow, double med, double first, double *best, double *ratio)
{
	uint32_t k;
	int made, cm, n = 0, all = 1;
	double f, ctl;

	*best = first;
	for (k = 0; k < AGENT_PF_VANTAGES; k++) {
		uint32_t o = g[k ? 0 : 1];

		if (g[k] >= ws->n)
			continue;
		f = in ? pair_bps(ws, g[k], s, proto, &made) : pair_bps(ws, s, g[k], proto, &made);
		if (!made)
			continue;
		n++;
		*best = f > *best ? f : *best;
		ctl = in ? pair_bps(ws, g[k], o, proto, &cm) : pair_bps(ws, o, g[k], proto, &cm);
		if (cm && ctl > 0 && f >= slow * ctl)
			all = 0;
		if (cm && ctl > 0 && (*ratio < 0 || f / ctl < *ratio))
			*ratio = f / ctl;
	}
	if (!n)
		return -1;
	return all && *best < slow * med;
}

int agent_pf_slow_verdict(const struct check_world *w, const struct check_world *ws,
			  const uint32_t *g, uint32_t s, int bits, double slow, char *buf,
			  size_t len, double *ratio)
{
	struct agent_pf_fig *fig = calloc(w->n, sizeof(*fig));
	struct agent_pf_medians m;
	static const struct {
		int bit, in, proto;
		const char *what, *dir;
	} d[4] = {{PF_SUS_OUT, 0, CHECK_TCP, "", "to"},
		  {PF_SUS_IN, 1, CHECK_TCP, "", "from"},
		  {PF_SUS_ROUT, 0, CHECK_RDMA, "RDMA ", "to"},
		  {PF_SUS_RIN, 1, CHECK_RDMA, "RDMA ", "from"}};
	double best, first, med;
	int k, rc = 0, v;

	buf[0] = '\0';
	*ratio = -1;
	if (!fig)
		return 0;
	agent_pf_figures(w, NULL, fig, &m);
	for (k = 0; k < 4 && !rc; k++) {
		if (!(bits & d[k].bit))
			continue;
		first = k == 0	 ? fig[s].out
			: k == 1 ? fig[s].in
			: k == 2 ? fig[s].rout
				 : fig[s].rin;
		med = d[k].proto == CHECK_TCP ? m.tcp : m.rdma;
		v = ws ? slow_dir(ws, g, s, d[k].in, d[k].proto, slow, med, first, &best, ratio)
		       : -1;
		if (v < 0) { /* no second look (no vantage): the first pass stands */
			best = first;
			v = first < slow * med;
		}
		if (v) {
			slow_text(best, med, d[k].what, d[k].dir, buf, len);
			rc = 1;
		}
	}
	free(fig);
	return rc;
}

/* ---- the documents ---- */

void agent_pf_plan_free(struct agent_pf_plan *p)
{
	free(p->targets);
	free(p->peer);
	memset(p, 0, sizeof(*p));
}

static json_t *target_json(uint32_t i, const struct rdzv_peer *t)
{
	json_t *j = json_pack("{s:I, s:s, s:s, s:s}", "i", (json_int_t)i, "name", t->name, "iface",
			      t->iface, "addr", t->addr4[0] ? t->addr4 : t->addr6);

	if (j && t->rdma_dev[0] &&
	    (json_object_set_new(j, "dev", json_string(t->rdma_dev)) < 0 ||
	     json_object_set_new(j, "rport", json_integer(t->rdma_port)) < 0 ||
	     json_object_set_new(j, "gid", json_integer(t->gid_index)) < 0)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

static int dump(json_t *j, char **text, size_t *len)
{
	*text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!*text)
		return -ENOMEM;
	*len = strlen(*text);
	return 0;
}

int agent_pf_plan_encode(const struct agent_pf_plan *p, char **text, size_t *len)
{
	json_t *arr = json_array(), *j;
	uint32_t k;

	for (k = 0; arr && k < p->ntargets; k++)
		if (json_array_append_new(arr, target_json(p->targets[k], &p->peer[k])) < 0) {
			json_decref(arr);
			return -ENOMEM;
		}
	j = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:o}", "id", (json_int_t)p->id, "n",
		      (json_int_t)p->n, "me", (json_int_t)p->me, "port", (json_int_t)p->port,
		      "bytes", (json_int_t)p->bytes, "bound_ms", (json_int_t)p->bound_ms, "tries",
		      p->tries, "reps", p->reps, "to", arr);
	return dump(j, text, len);
}

static int get_int(json_t *o, const char *k, json_int_t lo, json_int_t hi, json_int_t *v)
{
	json_t *x = json_object_get(o, k);

	if (!json_is_integer(x))
		return -1;
	*v = json_integer_value(x);
	return *v < lo || *v > hi ? -1 : 0;
}

/* A bounded string member into buf ("" when absent and optional). */
static int get_str(json_t *o, const char *k, char *buf, size_t len, int optional)
{
	json_t *x = json_object_get(o, k);

	buf[0] = '\0';
	if (!x)
		return optional ? 0 : -1;
	if (!json_is_string(x) || json_string_length(x) >= len)
		return -1;
	memcpy(buf, json_string_value(x), json_string_length(x) + 1);
	return 0;
}

static int target_parse(json_t *o, const struct agent_pf_plan *p, uint32_t *idx,
			struct rdzv_peer *t)
{
	char addr[64];
	json_int_t i, v;

	memset(t, 0, sizeof(*t));
	t->gid_index = -1;
	if (get_int(o, "i", 0, (json_int_t)p->n - 1, &i) < 0 || (uint32_t)i == p->me ||
	    get_str(o, "name", t->name, sizeof(t->name), 0) < 0 || !gx_valid_hostname(t->name) ||
	    get_str(o, "iface", t->iface, sizeof(t->iface), 1) < 0 ||
	    (t->iface[0] && !gx_valid_ifname(t->iface)) ||
	    get_str(o, "addr", addr, sizeof(addr), 0) < 0 ||
	    gx_addr_normalize(addr, addr, sizeof(addr)) < 0 ||
	    get_str(o, "dev", t->rdma_dev, sizeof(t->rdma_dev), 1) < 0 ||
	    (t->rdma_dev[0] && !gx_valid_rdmadev(t->rdma_dev)))
		return -1;
	if (strchr(addr, ':'))
		gx_strlcpy(t->addr6, addr, sizeof(t->addr6));
	else
		gx_strlcpy(t->addr4, addr, sizeof(t->addr4));
	if (t->rdma_dev[0]) {
		if (get_int(o, "rport", 0, 255, &v) < 0)
			return -1;
		t->rdma_port = (int)v;
		if (get_int(o, "gid", -1, 65535, &v) < 0)
			return -1;
		t->gid_index = (int)v;
	}
	*idx = (uint32_t)i;
	t->index = (uint32_t)i;
	return 0;
}

static int fail(char *why, size_t whylen, const char *what)
{
	snprintf(why, whylen, "%s", what);
	return GX_EPROTO;
}

int agent_pf_plan_decode(const char *text, size_t len, struct agent_pf_plan *p, char *why,
			 size_t whylen)
{
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL), *arr, *x;
	json_int_t v[8];
	uint32_t m;
	size_t a;
	int rc = GX_EPROTO;

	memset(p, 0, sizeof(*p));
	arr = json_object_get(j, "to");
	if (get_int(j, "id", 1, INT64_MAX, &v[0]) < 0 || get_int(j, "n", 2, 65536, &v[1]) < 0 ||
	    get_int(j, "me", 0, v[1] - 1, &v[2]) < 0 || get_int(j, "port", 1, 65535, &v[3]) < 0 ||
	    get_int(j, "bytes", 0, CHECK_STREAM_MAX, &v[4]) < 0 ||
	    get_int(j, "bound_ms", 1, 10000, &v[5]) < 0 || get_int(j, "tries", 1, 3, &v[6]) < 0 ||
	    get_int(j, "reps", 1, 5, &v[7]) < 0 || !json_is_array(arr) ||
	    json_array_size(arr) > PF_TARGETS_MAX || json_array_size(arr) >= (size_t)v[1]) {
		rc = fail(why, whylen, "plan of the wrong shape");
		goto out;
	}
	p->id = (uint64_t)v[0];
	p->n = (uint32_t)v[1];
	p->me = (uint32_t)v[2];
	p->port = (long)v[3];
	p->bytes = v[4];
	p->bound_ms = v[5];
	p->tries = (int)v[6];
	p->reps = (int)v[7];
	p->targets = calloc(json_array_size(arr) + 1, sizeof(*p->targets));
	p->peer = calloc(json_array_size(arr) + 1, sizeof(*p->peer));
	if (!p->targets || !p->peer) {
		rc = -ENOMEM;
		goto out;
	}
	json_array_foreach(arr, a, x)
	{
		if (target_parse(x, p, &p->targets[a], &p->peer[a]) < 0) {
			rc = fail(why, whylen, "a target of the wrong shape");
			goto out;
		}
		for (m = 0; m < a; m++)
			if (p->targets[m] == p->targets[a]) {
				rc = fail(why, whylen, "a target twice");
				goto out;
			}
	}
	p->ntargets = (uint32_t)json_array_size(arr);
	rc = 0;
out:
	json_decref(j);
	if (rc < 0)
		agent_pf_plan_free(p);
	return rc;
}

int agent_pf_report_encode(const struct check_world *lw, const uint32_t *lmap, uint64_t id,
			   int64_t lag_ms, char **text, size_t *len)
{
	const struct check_row *r = &lw->rows[0];
	const struct check_probe *p;
	json_t *arr = json_array(), *o, *j;
	size_t k;

	for (k = 0; arr && k < r->nprobes; k++) {
		p = &r->probes[k];
		if (p->rail || p->to >= lw->n)
			continue;
		o = json_pack("{s:I, s:s, s:b, s:s, s:I, s:I, s:I}", "to", (json_int_t)lmap[p->to],
			      "proto", p->proto == CHECK_RDMA ? "rdma" : "tcp", "ok", p->ok, "why",
			      p->why, "rtt_us", (json_int_t)p->median_us, "bytes",
			      (json_int_t)p->bytes, "us",
			      (json_int_t)(p->proto == CHECK_RDMA ? p->write_us : p->stream_us));
		if (json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return -ENOMEM;
		}
	}
	j = json_pack("{s:I, s:I, s:o}", "id", (json_int_t)id, "lag_ms", (json_int_t)lag_ms,
		      "probes", arr);
	return dump(j, text, len);
}

static int rprobe_parse(struct check_world *w, uint32_t from, json_t *o, struct check_probe *p)
{
	json_int_t to, rtt, bytes, us;
	const char *proto = json_string_value(json_object_get(o, "proto"));
	json_t *ok = json_object_get(o, "ok");

	memset(p, 0, sizeof(*p));
	p->gid_index = -1;
	if (get_int(o, "to", 0, (json_int_t)w->n - 1, &to) < 0 || (uint32_t)to == from || !proto ||
	    (strcmp(proto, "tcp") && strcmp(proto, "rdma")) || !json_is_boolean(ok) ||
	    get_str(o, "why", p->why, sizeof(p->why), 1) < 0 || !gx_safe_text(p->why, 96) ||
	    get_int(o, "rtt_us", 0, PF_US_MAX, &rtt) < 0 ||
	    get_int(o, "bytes", 0, CHECK_STREAM_MAX, &bytes) < 0 ||
	    get_int(o, "us", 0, PF_US_MAX, &us) < 0)
		return -1;
	p->to = (uint32_t)to;
	p->proto = strcmp(proto, "rdma") == 0 ? CHECK_RDMA : CHECK_TCP;
	p->ok = json_is_true(ok);
	p->min_us = p->median_us = p->max_us = rtt;
	p->bytes = bytes;
	if (p->proto == CHECK_RDMA)
		p->write_us = us;
	else
		p->stream_us = us;
	return agent_check_find(w, from, p->to, p->proto) ? -1 : 0;
}

int agent_pf_report_decode(struct check_world *w, uint32_t from, uint64_t want_id, const char *text,
			   size_t len, char *why, size_t whylen)
{
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL), *arr, *x;
	struct check_row *row = &w->rows[from];
	struct check_probe p;
	json_int_t id, lag;
	size_t a;
	int rc = 0;

	arr = json_object_get(j, "probes");
	if (get_int(j, "id", 1, INT64_MAX, &id) < 0 || (uint64_t)id != want_id ||
	    get_int(j, "lag_ms", 0, PF_US_MAX / 1000, &lag) < 0 || !json_is_array(arr) ||
	    json_array_size(arr) > 2 * (size_t)PF_TARGETS_MAX) {
		rc = fail(why, whylen, "report of the wrong shape or for another plan");
		goto out;
	}
	row->nprobes = 0;
	json_array_foreach(arr, a, x)
	{
		if (rprobe_parse(w, from, x, &p) < 0) {
			row->nprobes = 0;
			rc = fail(why, whylen, "a probe of the wrong shape");
			goto out;
		}
		if (agent_check_row_add(w, from, &p) < 0) {
			rc = -ENOMEM;
			goto out;
		}
	}
	row->lag_ms = lag;
	row->reported = 1;
	/* RDMA was planned only where both ends verified it: its probes count (check's world
	 * drops those to a pod that reports no RDMA-CM) */
	row->rdma = CHECK_RDMA_OK;
out:
	json_decref(j);
	return rc;
}

static json_t *pairs_json(const struct check_world *w, int pass, json_t *arr)
{
	const struct check_probe *p;
	uint32_t i;
	size_t k;

	for (i = 0; w && arr && i < w->n; i++)
		for (k = 0; k < w->rows[i].nprobes; k++) {
			p = &w->rows[i].probes[k];
			if (p->rail || p->to >= w->n)
				continue;
			json_array_append_new(
			    arr,
			    json_pack(
				"{s:I, s:I, s:s, s:i, s:b, s:s, s:I, s:I, s:I, s:f}", "from",
				(json_int_t)i, "to", (json_int_t)p->to, "proto",
				p->proto == CHECK_RDMA ? "rdma" : "tcp", "pass", pass, "ok", p->ok,
				"why", p->why, "rtt_us", (json_int_t)p->median_us, "bytes",
				(json_int_t)p->bytes, "us",
				(json_int_t)(p->proto == CHECK_RDMA ? p->write_us : p->stream_us),
				"bps", probe_bps(p)));
		}
	return arr;
}

json_t *agent_pf_json(const struct check_world *w, const struct check_world *w2,
		      const unsigned char *blamed, const char *line, const char *shape,
		      int64_t bytes, int64_t elapsed_ms)
{
	struct agent_pf_fig *fig = calloc(w->n, sizeof(*fig));
	json_t *pods = json_array(), *pairs = json_array(), *bl = json_array(), *j = NULL;
	struct agent_pf_medians med = {0, 0};
	uint32_t i;

	if (!fig || !pods || !pairs || !bl)
		goto out;
	agent_pf_figures(w, NULL, fig, &med);
	for (i = 0; i < w->n; i++) {
		json_array_append_new(
		    pods,
		    json_pack("{s:I, s:s, s:b, s:I, s:f, s:f, s:f, s:f}", "index", (json_int_t)i,
			      "name", w->names[i], "reported", w->rows[i].reported, "lag_ms",
			      (json_int_t)w->rows[i].lag_ms, "out_bps", fig[i].out, "in_bps",
			      fig[i].in, "rdma_out_bps", fig[i].rout, "rdma_in_bps", fig[i].rin));
		if (blamed[i])
			json_array_append_new(bl, json_string(w->names[i]));
	}
	pairs_json(w, 1, pairs);
	pairs_json(w2, 2, pairs);
	j = json_pack("{s:s, s:I, s:I, s:I, s:{s:f, s:f}, s:O, s:O, s:O, s:s}", "shape", shape,
		      "bytes", (json_int_t)bytes, "bound_ms", (json_int_t)AGENT_PF_BOUND_MS,
		      "elapsed_ms", (json_int_t)elapsed_ms, "median_bps", "tcp", med.tcp, "rdma",
		      med.rdma, "pods", pods, "pairs", pairs, "blamed", bl, "line", line);
out:
	json_decref(pods);
	json_decref(pairs);
	json_decref(bl);
	free(fig);
	return j;
}
