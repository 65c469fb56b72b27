/* SPDX-License-Identifier: MIT */
/*
 * check_html.c - `gxboot check --report FILE.html`: one
 * self-contained page (inline CSS, no script, nothing fetched) written by the
 * coordinator from the world it already holds: the run's parameters, the
 * summary, the blamed pods, the worst pairs and the N x N matrix as a
 * heatmap (latency colour, ✗ for a failure), one tab per protocol and rail
 * (CSS radio tabs). Pure: a FILE and a world in, HTML out.
 */
#include "agent/check/check_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 10     /* latency colour classes, green .. red */
#define WORST 20       /* pairs listed in each worst-pairs table */
#define CELL_TEXT_N 24 /* cells show their µs up to this N, colour only beyond */

/* Text with &, <, >, " escaped. */
static void esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

struct tab {
	int proto, rail;
	char label[CHECK_RAIL_NAME + 16];
};

/* The tabs: TCP on the bootstrap iface, RDMA, then each rail (TCP, RDMA). */
static size_t tabs_plan(const struct check_world *w, struct tab *t, size_t max)
{
	size_t nt = 0;
	uint32_t r;
	int proto;

	for (r = 0; r <= w->nrails; r++) {
		for (proto = CHECK_TCP; proto <= CHECK_RDMA && nt < max; proto++) {
			if (!(r == 0 && proto == CHECK_TCP) &&
			    !agent_check_world_has_probes(w, proto, (int)r))
				continue;
			t[nt].proto = proto;
			t[nt].rail = (int)r;
			snprintf(t[nt].label, sizeof(t[nt].label), "%s%s%s",
				 proto == CHECK_RDMA ? "RDMA" : "TCP", r ? " rail " : "",
				 r ? agent_check_rail_name(w, (int)r) : "");
			nt++;
		}
	}
	return nt;
}

/* The OK probes' median range of one tab, for the colour scale. */
static void range(const struct check_world *w, const struct tab *t, int64_t *lo, int64_t *hi)
{
	const struct check_probe *p;
	uint32_t i;
	size_t k;

	*lo = INT64_MAX;
	*hi = 0;
	for (i = 0; i < w->n; i++)
		for (k = 0; k < w->rows[i].nprobes; k++) {
			p = &w->rows[i].probes[k];
			if (!p->ok || p->proto != t->proto || p->rail != t->rail)
				continue;
			if (p->median_us < *lo)
				*lo = p->median_us;
			if (p->median_us > *hi)
				*hi = p->median_us;
		}
	if (*lo > *hi)
		*lo = *hi = 0;
}

/* Colour class: a factor of 1.5 over the fastest pair per step (c9: about 38 x slower). */
static int bucket(int64_t v, int64_t lo)
{
	int b = 0;

	if (lo < 1)
		lo = 1;
	while (b < BUCKETS - 1 && v * 2 > lo * 3) {
		v = v * 2 / 3;
		b++;
	}
	return b;
}

static void matrix(FILE *f, const struct check_world *w, const struct tab *t)
{
	const struct check_probe *p;
	int64_t lo, hi;
	uint32_t i, j;

	range(w, t, &lo, &hi);
	fprintf(f,
		"<p class=scale>colour: median echo RTT from %lld µs (the fastest pair, green), "
		"each step 1.5 x slower (red: 38 x); measured: %lld .. %lld µs; "
		"✗ failed; · not probed; hover a cell for details</p>\n",
		(long long)lo, (long long)lo, (long long)hi);
	fputs("<table class=\"mx", f);
	fputs(w->n > CELL_TEXT_N ? " small\">" : "\">", f);
	fputs("<tr><th>from \\ to</th>", f);
	for (j = 0; j < w->n; j++)
		fprintf(f, "<th title=\"%u\">%u</th>", j, j);
	fputs("</tr>\n", f);
	for (i = 0; i < w->n; i++) {
		fprintf(f, "<tr><th class=rowh>%u ", i);
		esc(f, w->names[i]);
		fputs("</th>", f);
		for (j = 0; j < w->n; j++) {
			p = i == j ? NULL : agent_check_find_rail(w, i, j, t->proto, t->rail);
			if (i == j) {
				fputs("<td class=self></td>", f);
			} else if (!p) {
				fputs("<td class=np>·</td>", f);
			} else if (!p->ok) {
				fputs("<td class=bad title=\"", f);
				esc(f, w->names[i]);
				fputs(" → ", f);
				esc(f, w->names[j]);
				fputs(": ", f);
				esc(f, p->why[0] ? p->why : "failed");
				fputs("\">✗</td>", f);
			} else {
				fprintf(f, "<td class=c%d title=\"", bucket(p->median_us, lo));
				esc(f, w->names[i]);
				fputs(" → ", f);
				esc(f, w->names[j]);
				fprintf(f, ": %lld µs (min %lld, max %lld)\">",
					(long long)p->median_us, (long long)p->min_us,
					(long long)p->max_us);
				if (w->n <= CELL_TEXT_N)
					fprintf(f, "%lld", (long long)p->median_us);
				fputs("</td>", f);
			}
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

struct pairref {
	uint32_t from;
	const struct check_probe *p;
};

static int by_median_desc(const void *a, const void *b)
{
	const struct pairref *x = a, *y = b;

	return x->p->median_us < y->p->median_us ? 1 : x->p->median_us > y->p->median_us ? -1 : 0;
}

static void pair_row(FILE *f, const struct check_world *w, const struct pairref *r)
{
	const char *rail = agent_check_rail_name(w, r->p->rail);

	fputs("<tr><td>", f);
	esc(f, w->names[r->from]);
	fputs("</td><td>", f);
	esc(f, w->names[r->p->to]);
	fprintf(f, "</td><td>%s%s", r->p->proto == CHECK_RDMA ? "rdma" : "tcp",
		rail[0] ? " rail " : "");
	esc(f, rail);
	fputs("</td><td>", f);
	if (r->p->ok)
		fprintf(f, "%lld µs", (long long)r->p->median_us);
	else {
		fputs("<span class=x>✗</span> ", f);
		esc(f, r->p->why[0] ? r->p->why : "failed");
	}
	fputs("</td></tr>\n", f);
}

/* Every failed pair (at most WORST shown), then the WORST slowest OK pairs. */
static void worst(FILE *f, const struct check_world *w)
{
	struct pairref *ok;
	size_t nok = 0, nbad = 0, k, cap = 0;
	uint32_t i;

	for (i = 0; i < w->n; i++)
		cap += w->rows[i].nprobes;
	ok = calloc(cap ? cap : 1, sizeof(*ok));
	fputs("<h2>Worst pairs</h2>\n<table class=list><tr><th>from</th><th>to</th>"
	      "<th>probe</th><th>result</th></tr>\n",
	      f);
	for (i = 0; i < w->n; i++)
		for (k = 0; k < w->rows[i].nprobes; k++) {
			struct pairref r = {i, &w->rows[i].probes[k]};

			if (!agent_check_pair_probed(w, i, r.p->to))
				continue;
			if (!r.p->ok) {
				if (nbad++ < WORST)
					pair_row(f, w, &r);
			} else if (ok) {
				ok[nok++] = r;
			}
		}
	if (nbad > WORST)
		fprintf(f, "<tr><td colspan=4>… and %zu more failed pairs</td></tr>\n",
			nbad - WORST);
	if (ok) {
		qsort(ok, nok, sizeof(*ok), by_median_desc);
		for (k = 0; k < nok && k < WORST; k++)
			pair_row(f, w, &ok[k]);
	}
	fputs("</table>\n", f);
	free(ok);
}

static void blamed(FILE *f, const struct check_world *w)
{
	char *text = malloc(8192);
	size_t n = 0;

	fputs("<h2>Blamed</h2>\n<p class=blame>", f);
	if (text) { /* two statements: the second reads what the first wrote */
		n = agent_check_blame_text(w, text, 8192);
		n += agent_check_rails_broken(w, text + strlen(text), 8192 - strlen(text));
	}
	if (n)
		esc(f, text[0] == ' ' ? text + 1 : text);
	else
		fputs("nobody", f);
	fputs("</p>\n", f);
	free(text);
}

static const char style[] =
    "body{font:14px system-ui,sans-serif;margin:1em 2em;color:#222}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:1.4em}"
    ".ok{color:#17803d}.fail{color:#b91c1c}.x{color:#b91c1c;font-weight:bold}"
    "table.list td,table.list th,table.params td{padding:2px 10px;text-align:left}"
    "table.mx{border-collapse:collapse;font-size:11px}"
    "table.mx td{width:34px;height:18px;text-align:center;border:1px solid #fff}"
    "table.mx.small td{width:9px;height:9px;font-size:7px;padding:0}"
    "table.mx th{font-weight:normal;color:#555;padding:0 3px}"
    "th.rowh{text-align:right;white-space:nowrap}"
    "td.self{background:#eee}td.np{background:#f6f6f6;color:#aaa}"
    "td.bad{background:#b91c1c;color:#fff;font-weight:bold}"
    ".c0{background:#1a9850}.c1{background:#4dac5a}.c2{background:#79bf64}"
    ".c3{background:#a6d96a}.c4{background:#d9ef8b}.c5{background:#fee08b}"
    ".c6{background:#fdc46b}.c7{background:#fdae61}.c8{background:#f46d43}"
    ".c9{background:#d73027}"
    ".tabs>input{display:none}.tabs>label{display:inline-block;padding:4px 12px;"
    "border:1px solid #ccc;border-bottom:none;cursor:pointer;background:#f4f4f4}"
    ".tabs>input:checked+label{background:#fff;font-weight:bold}"
    ".tabs>.panel{display:none;border-top:1px solid #ccc;padding-top:8px}";

int agent_check_html_write(FILE *f, const struct check_world *w, const struct check_summary *s,
			   const char *const *params, size_t nparams, const char *const *warnings,
			   size_t nwarnings)
{
	struct tab tabs[2 * (CHECK_MAX_RAILS + 1)];
	size_t nt, k;

	nt = tabs_plan(w, tabs, sizeof(tabs) / sizeof(tabs[0]));
	fputs("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n"
	      "<title>gxboot check</title>\n<style>",
	      f);
	fputs(style, f);
	/* one rule per tab: its panel shows when its radio is checked */
	for (k = 0; k < nt; k++)
		fprintf(f, "#t%zu:checked~#p%zu{display:block}", k, k);
	fputs("</style></head><body>\n<h1>gxboot check</h1>\n", f);
	fprintf(f, "<p id=summary class=%s>%s ", s->all_ok ? "ok" : "fail", s->all_ok ? "✓" : "✗");
	esc(f, s->line);
	fputs("</p>\n<h2>Run</h2>\n<table class=params>\n", f);
	for (k = 0; k + 1 < nparams; k += 2) {
		fputs("<tr><td>", f);
		esc(f, params[k]);
		fputs("</td><td>", f);
		esc(f, params[k + 1]);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	blamed(f, w);
	if (nwarnings) {
		fputs("<h2>Warnings</h2>\n<ul>\n", f);
		for (k = 0; k < nwarnings; k++) {
			fputs("<li>", f);
			esc(f, warnings[k]);
			fputs("</li>\n", f);
		}
		fputs("</ul>\n", f);
	}
	fputs("<h2>Matrix (rows: from, columns: to)</h2>\n<div class=tabs>\n", f);
	for (k = 0; k < nt; k++) {
		fprintf(f, "<input type=radio name=tab id=t%zu%s><label for=t%zu>", k,
			k ? "" : " checked", k);
		esc(f, tabs[k].label);
		fputs("</label>\n", f);
	}
	for (k = 0; k < nt; k++) {
		fprintf(f, "<div class=panel id=p%zu>\n", k);
		matrix(f, w, &tabs[k]);
		fputs("</div>\n", f);
	}
	fputs("</div>\n", f);
	worst(f, w);
	fputs("</body></html>\n", f);
	return ferror(f) ? -EIO : 0;
}
