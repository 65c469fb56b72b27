/* SPDX-License-Identifier: MIT */
/*
 * check_render.c - what `gxboot check` prints: the summary, the N x N matrix
 * (rows = from, columns = to), each pod's own row, the failures, and the
 * --json result document that the coordinator also sends to every member.
 * Pure functions over struct check_world (unit tests drive them).
 */
#include "agent/check/check_int.h"

#include <string.h>

#define CELL_W 12 /* at most this many display columns in a full cell */

static const char *proto_name(int proto)
{
	return proto == CHECK_RDMA ? "rdma" : "tcp";
}

void agent_check_cell(const struct check_probe *p, char *buf, size_t len)
{
	if (!p)
		snprintf(buf, len, "·");
	else if (p->ok)
		snprintf(buf, len, "✓ %lld", (long long)p->median_us);
	else
		snprintf(buf, len, "✗ %.*s", CELL_W - 2, p->why[0] ? p->why : "failed");
}

/* Display width of UTF-8 text: count the bytes that start a character. */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void pad(FILE *f, const char *s, size_t width)
{
	size_t w = text_width(s);

	fputs(s, f);
	for (; w < width; w++)
		fputc(' ', f);
}

int agent_check_world_has_probes(const struct check_world *w, int proto, int rail)
{
	uint32_t i;
	size_t k;

	for (i = 0; i < w->n; i++)
		for (k = 0; k < w->rows[i].nprobes; k++)
			if (w->rows[i].probes[k].proto == proto &&
			    w->rows[i].probes[k].rail == rail)
				return 1;
	return 0;
}

static void matrix_head(FILE *f, const struct check_world *w, size_t cw)
{
	char h[16];
	uint32_t j;

	fprintf(f, "%-6s", "from\\to");
	for (j = 0; j < w->n; j++) {
		snprintf(h, sizeof(h), "%u", j);
		fputc(' ', f);
		pad(f, h, cw);
	}
	fputc('\n', f);
}

static void matrix_cell(FILE *f, const struct check_world *w, uint32_t i, uint32_t j, int proto,
			int rail, size_t cw, int full)
{
	const struct check_probe *p = agent_check_find_rail(w, i, j, proto, rail);
	char cell[64];

	fputc(' ', f);
	if (i == j)
		snprintf(cell, sizeof(cell), "-");
	else if (!full && p)
		snprintf(cell, sizeof(cell), "%s", p->ok ? "✓" : "✗");
	else
		agent_check_cell(p, cell, sizeof(cell));
	pad(f, cell, cw);
}

static size_t full_width(const struct check_world *w, int proto, int rail)
{
	size_t cw = 2, k;
	char cell[64];
	uint32_t i;

	for (i = 0; i < w->n; i++) {
		for (k = 0; k < w->rows[i].nprobes; k++) {
			if (w->rows[i].probes[k].proto != proto ||
			    w->rows[i].probes[k].rail != rail)
				continue;
			agent_check_cell(&w->rows[i].probes[k], cell, sizeof(cell));
			if (text_width(cell) > cw)
				cw = text_width(cell);
		}
	}
	return cw;
}

void agent_check_print_rail_matrix(FILE *f, const struct check_world *w, int proto, int rail)
{
	int full = w->n <= CHECK_MATRIX_FULL;
	/* full cells as wide as the widest; compact ones as the largest column index */
	size_t cw = full ? full_width(w, proto, rail) : (size_t)(w->n > 10) + (w->n > 100) + 1;
	char what[CHECK_RAIL_NAME + 16];
	uint32_t i, j;

	if (!agent_check_world_has_probes(w, proto, rail))
		return;
	snprintf(what, sizeof(what), "%s%s%s", proto == CHECK_RDMA ? "RDMA" : "TCP",
		 rail ? " rail " : "", agent_check_rail_name(w, rail));
	if (w->n > CHECK_MATRIX_MAX) {
		fprintf(f, "%s: %u pods, matrix omitted (N > %d); failed pairs:\n", what, w->n,
			CHECK_MATRIX_MAX);
		return;
	}
	fprintf(f, "%s (rows: from, columns: to; %s):\n", what,
		full ? "✓ median µs, ✗ reason" : "✓ ok, ✗ failed: listed below");
	matrix_head(f, w, cw);
	for (i = 0; i < w->n; i++) {
		fprintf(f, "%-7u", i);
		for (j = 0; j < w->n; j++)
			matrix_cell(f, w, i, j, proto, rail, cw, full);
		fprintf(f, "  %s%s\n", w->names[i], w->rows[i].reported ? "" : " (no report)");
	}
}

void agent_check_print_rails(FILE *f, const struct check_world *w)
{
	int order[CHECK_MAX_RAILS];
	uint32_t i;

	agent_check_rail_order(w, order);
	for (i = 0; i < w->nrails; i++) {
		agent_check_print_rail_matrix(f, w, CHECK_TCP, order[i]);
		agent_check_print_rail_matrix(f, w, CHECK_RDMA, order[i]);
	}
}

void agent_check_print_matrix(FILE *f, const struct check_world *w, int proto)
{
	agent_check_print_rail_matrix(f, w, proto, 0);
}

void agent_check_print_failures(FILE *f, const struct check_world *w, size_t max)
{
	size_t shown = 0, total = 0, k;
	uint32_t i;

	for (i = 0; i < w->n; i++) {
		const struct check_row *r = &w->rows[i];

		if (r->why[0] && (!max || shown < max)) {
			fprintf(f, "  %s: %s\n", w->names[i], r->why);
			shown++;
		}
		for (k = 0; k < r->nprobes; k++) {
			const struct check_probe *p = &r->probes[k];

			if (p->ok || !agent_check_pair_probed(w, i, p->to))
				continue;
			total++;
			if (max && shown >= max)
				continue;
			shown++;
			fprintf(f, "  ✗ %s -> %s %s%s%s: %s\n", w->names[i], w->names[p->to],
				proto_name(p->proto), p->rail ? " rail " : "",
				agent_check_rail_name(w, p->rail), p->why[0] ? p->why : "failed");
		}
	}
	if (max && shown >= max && total > shown)
		fprintf(f, "  ... and more failed pairs (see --json)\n");
}

static void row_probe(FILE *f, const struct check_world *w, const struct check_probe *p)
{
	fprintf(f, "  -> %-24s %-4s ", w->names[p->to], proto_name(p->proto));
	if (p->rail)
		fprintf(f, "rail %-8s ", agent_check_rail_name(w, p->rail));
	if (!p->ok) {
		fprintf(f, "✗ %s\n", p->why[0] ? p->why : "failed");
		return;
	}
	fprintf(f, "✓ median %lld µs (min %lld, max %lld)", (long long)p->median_us,
		(long long)p->min_us, (long long)p->max_us);
	if (p->proto == CHECK_RDMA)
		fprintf(f, " write %lld µs, GID index %d, MTU %d", (long long)p->write_us,
			p->gid_index, p->mtu);
	fputc('\n', f);
}

void agent_check_print_row(FILE *f, const struct check_world *w, uint32_t rank)
{
	const struct check_row *r = &w->rows[rank];
	const struct check_probe *p;
	uint32_t j;
	int proto, rail;

	fprintf(f, "%s (rank %u", w->names[rank], rank);
	if (r->mtu)
		fprintf(f, ", MTU %d", r->mtu);
	fprintf(f, "):%s%s\n", r->why[0] ? " " : "", r->why);
	for (j = 0; j < w->n; j++) {
		for (rail = 0; rail <= (int)w->nrails; rail++) {
			for (proto = CHECK_TCP; proto <= CHECK_RDMA; proto++) {
				p = agent_check_find_rail(w, rank, j, proto, rail);
				if (p)
					row_probe(f, w, p);
			}
		}
	}
}

/* ---- the summary ---- */

static void summary_line(const struct check_world *w, struct check_summary *s)
{
	size_t n = 0, cap = sizeof(s->line);
	uint32_t with = w->n - s->no_rdma;

	n += (size_t)snprintf(s->line, cap, "%zu/%zu pairs OK over TCP", s->tcp_ok, s->tcp_total);
	if (n < cap && s->rdma_total)
		n += (size_t)snprintf(s->line + n, cap - n, ", %zu/%zu over RDMA", s->rdma_ok,
				      s->rdma_total);
	if (n < cap && s->no_rdma)
		n += (size_t)snprintf(s->line + n, cap - n, "%sno device on %u pod%s",
				      s->rdma_total ? ", " : ", RDMA: ", s->no_rdma,
				      s->no_rdma == 1 ? "" : "s");
	if (n < cap && s->rdma_unavl)
		n += (size_t)snprintf(s->line + n, cap - n, "%snot available on %u of %u pod%s",
				      s->rdma_total || s->no_rdma ? ", RDMA-CM " : ", RDMA: ",
				      s->rdma_unavl, with, with == 1 ? "" : "s");
	if (n < cap && s->rail_total)
		n += (size_t)snprintf(s->line + n, cap - n, ", rails: %zu/%zu probes OK",
				      s->rail_ok, s->rail_total);
	if (n < cap && s->missing)
		n += (size_t)snprintf(s->line + n, cap - n, " (%u report%s missing)", s->missing,
				      s->missing == 1 ? "" : "s");
	/* a star the user did not ask for says so (it probes less than a full mesh) */
	if (n < cap && w->star && w->star_default)
		n += (size_t)snprintf(
		    s->line + n, cap - n,
		    "; star mode: the default above %d pods (--mode all probes every pair)",
		    CHECK_MATRIX_MAX);
	/* sampled: what it covered */
	if (n < cap && w->sample_k && !w->star)
		snprintf(
		    s->line + n, cap - n,
		    "; sampled: %u peers per pod + the coordinator, %zu of %zu pairs (%.1f %%)",
		    w->sample_k, agent_check_pairs_probed(w), (size_t)w->n * (w->n - 1),
		    100.0 * (double)agent_check_pairs_probed(w) / ((double)w->n * (w->n - 1)));
}

void agent_check_summarize(const struct check_world *w, struct check_summary *s)
{
	const struct check_row *r;
	uint32_t i;
	size_t k;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < w->n; i++) {
		r = &w->rows[i];
		s->missing += !r->reported;
		s->no_rdma += r->rdma == CHECK_RDMA_NONE;
		s->rdma_unavl += r->rdma == CHECK_RDMA_UNAVL;
		for (k = 0; k < r->nprobes; k++) {
			const struct check_probe *p = &r->probes[k];

			if (!agent_check_pair_probed(w, i, p->to))
				continue;
			if (p->rail) {
				s->rail_total++;
				s->rail_ok += p->ok != 0;
			} else if (p->proto == CHECK_TCP) {
				s->tcp_total++;
				s->tcp_ok += p->ok != 0;
			} else {
				s->rdma_total++;
				s->rdma_ok += p->ok != 0;
			}
		}
	}
	s->all_ok = s->tcp_ok == s->tcp_total && s->rdma_ok == s->rdma_total &&
		    s->rail_ok == s->rail_total && !s->missing;
	summary_line(w, s);
}

/* ---- JSON ---- */

static json_t *probe_doc(const struct check_world *w, uint32_t from, const struct check_probe *p)
{
	int mtu = p->proto == CHECK_RDMA ? p->mtu : w->rows[from].mtu;
	json_t *j = json_pack(
	    "{s:I, s:I, s:s, s:s, s:s, s:b, s:s, s:I, s:I, s:I, s:I, s:i, s:i}", "from",
	    (json_int_t)from, "to", (json_int_t)p->to, "from_name", w->names[from], "to_name",
	    w->names[p->to], "proto", proto_name(p->proto), "ok", p->ok, "why", p->why, "min_us",
	    (json_int_t)p->min_us, "median_us", (json_int_t)p->median_us, "max_us",
	    (json_int_t)p->max_us, "write_us", (json_int_t)p->write_us, "mtu",
	    p->proto == CHECK_RDMA ? p->mtu : mtu, "gid_index", p->gid_index);

	/* check --rails: "rail" names the rail; absent = the bootstrap iface */
	if (j && p->rail &&
	    json_object_set_new(j, "rail", json_string(agent_check_rail_name(w, p->rail))) < 0) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* The peers; "good" (the known-good set: members above CHECK_MATRIX_MAX get only the
 * failed probes and blame with it) and "reached" only when true. */
static json_t *peers_doc(const struct check_world *w)
{
	unsigned char *good = calloc(w->n, 1);
	json_t *a = good ? json_array() : NULL, *x;
	uint32_t i;

	if (a && agent_check_known_good(w, good) < 0) {
		json_decref(a);
		a = NULL;
	}
	for (i = 0; a && i < w->n; i++) {
		const struct check_row *r = &w->rows[i];

		x = json_pack("{s:I, s:s, s:i, s:i, s:s, s:b}", "rank", (json_int_t)i, "name",
			      w->names[i], "mtu", r->mtu, "rdma", r->rdma, "why", r->why,
			      "reported", r->reported);
		if (x && ((r->second == CHECK_SECOND_OK &&
			   json_object_set_new(x, "reached", json_true()) < 0) ||
			  (good[i] && json_object_set_new(x, "good", json_true()) < 0))) {
			json_decref(x);
			x = NULL;
		}
		if (json_array_append_new(a, x) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	free(good);
	return a;
}

static json_t *probes_doc(const struct check_world *w, int failures_only)
{
	json_t *a = json_array();
	uint32_t i;
	size_t k;

	for (i = 0; a && i < w->n; i++) {
		for (k = 0; k < w->rows[i].nprobes; k++) {
			const struct check_probe *p = &w->rows[i].probes[k];

			if (failures_only && p->ok)
				continue;
			if (json_array_append_new(a, probe_doc(w, i, p)) < 0) {
				json_decref(a);
				return NULL;
			}
		}
	}
	return a;
}

static json_t *summary_doc(const struct check_summary *s)
{
	json_t *j = json_pack("{s:b, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "ok", s->all_ok,
			      "line", s->line, "tcp_ok", (json_int_t)s->tcp_ok, "tcp_total",
			      (json_int_t)s->tcp_total, "rdma_ok", (json_int_t)s->rdma_ok,
			      "rdma_total", (json_int_t)s->rdma_total, "no_rdma",
			      (json_int_t)s->no_rdma, "rdma_unavailable", (json_int_t)s->rdma_unavl,
			      "missing", (json_int_t)s->missing);

	if (j && s->rail_total &&
	    (json_object_set_new(j, "rails_ok", json_integer((json_int_t)s->rail_ok)) < 0 ||
	     json_object_set_new(j, "rails_total", json_integer((json_int_t)s->rail_total)) < 0)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

json_t *agent_check_result_json(const struct check_world *w, const struct check_summary *s,
				const char *const *warnings, size_t nwarnings, int failures_only)
{
	json_t *warn = json_array();
	size_t k;

	for (k = 0; warn && k < nwarnings; k++)
		if (json_array_append_new(warn, json_string(warnings[k])) < 0)
			break;
	return json_pack("{s:I, s:s, s:b, s:o, s:o, s:o, s:o?}", "world", (json_int_t)w->n, "mode",
			 w->star       ? "star"
			 : w->sample_k ? "sampled"
				       : "all",
			 "complete", !failures_only, "summary", summary_doc(s), "peers",
			 peers_doc(w), "probes", probes_doc(w, failures_only), "warnings", warn);
}
