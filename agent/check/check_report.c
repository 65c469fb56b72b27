/* SPDX-License-Identifier: MIT */
/*
 * check_report.c - the pure part of `gxboot check`: the world of
 * rows, the MTU warning, the REPORT / RESULT payloads (jansson)
 * and the sealed frames (HMAC-SHA-256). Everything from the wire is bounded
 * and validated here; see agent/check/CHECK.md.
 */
#include "agent/check/check_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static const char report_label[] = "gxboot-check-report";
static const char result_label[] = "gxboot-check-result";
static const char probe_label[] = "gxboot-check-probe";
static const char probed_label[] = "gxboot-check-probed";

#define US_MAX 3600000000LL /* an hour in µs: anything larger is hostile */

int agent_check_world_init(struct check_world *w, uint32_t n, int star, char *const *names)
{
	memset(w, 0, sizeof(*w));
	if (n == 0)
		return -EINVAL;
	w->rows = calloc(n, sizeof(*w->rows));
	if (!w->rows)
		return -ENOMEM;
	w->n = n;
	w->star = star;
	w->names = names;
	return 0;
}

static void row_clear(struct check_row *r)
{
	free(r->probes);
	memset(r, 0, sizeof(*r));
}

void agent_check_world_free(struct check_world *w)
{
	uint32_t i;

	for (i = 0; w->rows && i < w->n; i++)
		row_clear(&w->rows[i]);
	free(w->rows);
	memset(w, 0, sizeof(*w));
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void agent_check_world_sample(struct check_world *w, uint32_t k, uint64_t seed)
{
	uint32_t have = 0, o, m;

	w->sample_k = 0;
	if (w->n < 2 || k == 0)
		return;
	if (k > CHECK_SAMPLE_MAX)
		k = CHECK_SAMPLE_MAX;
	if (k > w->n - 1)
		k = w->n - 1;
	while (have < k) {
		o = 1 + (uint32_t)(splitmix64(&seed) % (w->n - 1));
		for (m = 0; m < have && w->offs[m] != o; m++)
			;
		if (m == have)
			w->offs[have++] = o;
	}
	w->sample_k = k;
}

int agent_check_pair_probed(const struct check_world *w, uint32_t from, uint32_t to)
{
	uint32_t d, m;

	if (from >= w->n || to >= w->n || from == to)
		return 0;
	if (!w->ring && (w->star || from == 0 || to == 0))
		return from == 0 || to == 0;
	if (!w->sample_k)
		return 1;
	d = (to + w->n - from) % w->n;
	for (m = 0; m < w->sample_k; m++)
		if (w->offs[m] == d)
			return 1;
	return 0;
}

size_t agent_check_pairs_probed(const struct check_world *w)
{
	uint32_t i;
	size_t c;

	if (!w->star && !w->sample_k)
		return (size_t)w->n * (w->n - 1);
	if (w->ring)
		return (size_t)w->n * w->sample_k;
	/* the coordinator's 2 (n - 1), then each other pod's offsets that miss the coordinator */
	c = 2 * (size_t)(w->n - 1);
	for (i = 1; !w->star && i < w->n; i++)
		for (uint32_t m = 0; m < w->sample_k; m++)
			c += (i + w->offs[m]) % w->n != 0;
	return c;
}

int agent_check_row_add(struct check_world *w, uint32_t from, const struct check_probe *p)
{
	struct check_row *r;
	struct check_probe *np;
	size_t cap;

	if (from >= w->n || p->to >= w->n || (p->proto != CHECK_TCP && p->proto != CHECK_RDMA) ||
	    p->rail < 0 || (uint32_t)p->rail > w->nrails)
		return -EINVAL;
	r = &w->rows[from];
	if (r->nprobes == r->cap) {
		cap = r->cap ? r->cap * 2 : 8;
		np = realloc(r->probes, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		r->probes = np;
		r->cap = cap;
	}
	r->probes[r->nprobes++] = *p;
	return 0;
}

const struct check_probe *agent_check_find_rail(const struct check_world *w, uint32_t from,
						uint32_t to, int proto, int rail)
{
	const struct check_row *r;
	size_t k;

	if (from >= w->n)
		return NULL;
	r = &w->rows[from];
	for (k = 0; k < r->nprobes; k++)
		if (r->probes[k].to == to && r->probes[k].proto == proto &&
		    r->probes[k].rail == rail)
			return &r->probes[k];
	return NULL;
}

const struct check_probe *agent_check_find(const struct check_world *w, uint32_t from, uint32_t to,
					   int proto)
{
	return agent_check_find_rail(w, from, to, proto, 0);
}

/* RDMA probes count only between pods that both run RDMA-CM (the summary names the rest). */
static void drop_rdma_unavailable(struct check_world *w, struct check_row *r)
{
	size_t k, keep = 0;

	for (k = 0; k < r->nprobes; k++) {
		const struct check_probe *p = &r->probes[k];
		const struct check_row *t = &w->rows[p->to];

		if (p->proto == CHECK_RDMA && t->reported && t->rdma != CHECK_RDMA_OK)
			continue;
		r->probes[keep++] = *p;
	}
	r->nprobes = keep;
}

int agent_check_world_finish(struct check_world *w)
{
	struct check_probe p;
	uint32_t i, j;
	int rc;

	for (i = 0; i < w->n; i++)
		drop_rdma_unavailable(w, &w->rows[i]);

	for (i = 0; i < w->n; i++) {
		for (j = 0; j < w->n; j++) {
			if (!agent_check_pair_probed(w, i, j) ||
			    agent_check_find(w, i, j, CHECK_TCP))
				continue;
			memset(&p, 0, sizeof(p));
			p.to = j;
			p.gid_index = -1;
			gx_strlcpy(p.why, w->rows[i].reported ? "not probed" : "no report",
				   sizeof(p.why));
			rc = agent_check_row_add(w, i, &p);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int agent_check_probe_timed_out(const struct check_probe *p)
{
	return !p->ok && (strcmp(p->why, "timeout") == 0 || strcmp(p->why, "no echo") == 0 ||
			  strcmp(p->why, "echo lost") == 0 || strcmp(p->why, "overloaded") == 0);
}

void agent_check_world_overload(struct check_world *w)
{
	unsigned char *over = calloc(w->n, 1);
	struct check_probe *p;
	uint32_t i;
	size_t k;

	if (!over)
		return;
	for (i = 0; i < w->n; i++) {
		for (k = 0; k < w->rows[i].nprobes; k++) {
			p = &w->rows[i].probes[k];
			if (!agent_check_probe_timed_out(p) || p->to >= w->n)
				continue;
			if (w->rows[i].lag_ms >= CHECK_OVERLOAD_MS)
				over[i] = 1;
			else if (w->rows[p->to].lag_ms >= CHECK_OVERLOAD_MS)
				over[p->to] = 1;
			else
				continue;
			gx_strlcpy(p->why, "overloaded", sizeof(p->why));
		}
	}
	/* a pod that stalled but whose probes all came through is not named */
	for (i = 0; i < w->n; i++)
		if (over[i] && !w->rows[i].why[0])
			snprintf(w->rows[i].why, sizeof(w->rows[i].why), "%s (stalled %lld ms)",
				 CHECK_OVERLOADED, (long long)w->rows[i].lag_ms);
	free(over);
}

/* A failed bootstrap TCP pair that counts against the network (not an overload). */
static int pair_failed(const struct check_world *w, uint32_t from, const struct check_probe *p)
{
	if (p->ok || p->rail || p->proto != CHECK_TCP || !agent_check_pair_probed(w, from, p->to))
		return 0;
	if (strcmp(p->why, "overloaded") == 0)
		return 0;
	/* a pod that did not finish its probes named itself; its unprobed pairs blame nobody */
	return !(strcmp(p->why, "not probed") == 0 &&
		 strncmp(w->rows[from].why, CHECK_OVERLOADED, strlen(CHECK_OVERLOADED)) == 0);
}

/* One failed pair a -> b. */
struct fpair {
	uint32_t a, b;
};

/*
 * One walk of the rows: in / out (n bytes each) mark the pods with an OK
 * bootstrap TCP pair in / out; the failed pairs (pair_failed) go to *fp when fp.
 */
static int pairs_walk(const struct check_world *w, unsigned char *in, unsigned char *out,
		      struct fpair **fp, size_t *nf)
{
	const struct check_probe *p;
	struct fpair *nfp;
	size_t k, cap = 0;
	uint32_t a;

	for (a = 0; a < w->n; a++)
		for (k = 0; k < w->rows[a].nprobes; k++) {
			p = &w->rows[a].probes[k];
			if (p->to >= w->n)
				continue;
			if (p->ok && !p->rail && p->proto == CHECK_TCP) {
				out[a] = 1;
				in[p->to] = 1;
			} else if (fp && pair_failed(w, a, p)) {
				if (*nf == cap) {
					cap = cap ? 2 * cap : 64;
					nfp = realloc(*fp, cap * sizeof(**fp));
					if (!nfp)
						return -ENOMEM;
					*fp = nfp;
				}
				(*fp)[*nf].a = a;
				(*fp)[(*nf)++].b = p->to;
			}
		}
	return 0;
}

/* Known good, for a pod not blamed for itself (see agent_check_known_good). */
static int good_pod(const struct check_world *w, uint32_t i, const unsigned char *in,
		    const unsigned char *out)
{
	return (in[i] && out[i]) || w->rows[i].second == CHECK_SECOND_OK || w->rows[i].good;
}

int agent_check_known_good(const struct check_world *w, unsigned char *good)
{
	unsigned char *in = calloc(w->n, 2);
	uint32_t i;

	if (!in)
		return -ENOMEM;
	pairs_walk(w, in, in + w->n, NULL, NULL);
	for (i = 0; i < w->n; i++)
		good[i] =
		    !w->rows[i].why[0] && w->rows[i].reported && good_pod(w, i, in, in + w->n);
	free(in);
	return 0;
}

void agent_check_blame(const struct check_world *w, unsigned char *blame, size_t *npaths)
{
	unsigned char *in = calloc(w->n, 3), *out = in ? in + w->n : NULL,
		      *good = in ? in + 2 * (size_t)w->n : NULL;
	uint32_t *ends = calloc(w->n, sizeof(*ends));
	struct fpair *fp = NULL;
	size_t nf = 0, f;
	uint32_t i, a, b;
	int ga, gb;

	*npaths = 0;
	memset(blame, 0, w->n);
	for (i = 0; i < w->n; i++)
		blame[i] = w->rows[i].why[0]	  ? CHECK_BLAME_OWN
			   : !w->rows[i].reported ? CHECK_BLAME_MISSING
						  : CHECK_BLAME_NONE;
	/* one walk: the OK pairs make pods known good, the failed ones are kept for below */
	if (!in || !ends || pairs_walk(w, in, out, &fp, &nf) < 0)
		goto out;
	for (i = 0; i < w->n; i++)
		good[i] = !blame[i] && good_pod(w, i, in, out);
	/* a pod that froze or lost its link midway still has good pairs from before: when
	 * it is the common end of failed pairs with two or more good pods, it is the one
	 * to blame, not each path (case_check_dead: 0 -> 3 and 1 -> 3 failed, 2 -> 3 came
	 * through before 3 stopped) */
	for (f = 0; f < nf; f++)
		if (good[fp[f].a] && good[fp[f].b]) {
			ends[fp[f].a]++;
			ends[fp[f].b]++;
		}
	for (f = 0; f < nf; f++) {
		a = fp[f].a;
		b = fp[f].b;
		ga = good[a] && !blame[a];
		gb = good[b] && !blame[b];
		if (ga && gb && ends[b] >= 2 && ends[b] > ends[a]) {
			blame[b] = CHECK_BLAME_POD;
			continue;
		}
		if (ga && gb && ends[a] >= 2 && ends[a] > ends[b]) {
			blame[a] = CHECK_BLAME_POD;
			continue;
		}
		if (ga && gb) {
			(*npaths)++;
			continue;
		}
		if (!blame[a] && !ga)
			blame[a] = gb ? CHECK_BLAME_POD : CHECK_BLAME_BOTH;
		if (!blame[b] && !gb)
			blame[b] = ga ? CHECK_BLAME_POD : CHECK_BLAME_BOTH;
	}
out:
	free(fp);
	free(ends);
	free(in);
}

static const char *blame_why(const struct check_world *w, uint32_t i, int b)
{
	switch (b) {
	case CHECK_BLAME_OWN:
		return w->rows[i].why;
	case CHECK_BLAME_MISSING:
		return "missing: no report";
	case CHECK_BLAME_POD:
		return "no pod reaches it or is reached by it";
	default:
		return "failed pairs with pods not known good either";
	}
}

size_t agent_check_blame_text(const struct check_world *w, char *buf, size_t len)
{
	unsigned char *blame = malloc(w->n);
	const struct check_probe *p;
	size_t off = 0, named = 0, npaths, k;
	uint32_t i, a;

	if (len)
		buf[0] = '\0';
	if (!blame)
		return 0;
	agent_check_blame(w, blame, &npaths);
	for (i = 0; i < w->n && off < len; i++) {
		if (!blame[i])
			continue;
		off += (size_t)snprintf(buf + off, len - off, " %s (%s)", w->names[i],
					blame_why(w, i, blame[i]));
		named++;
	}
	for (a = 0; npaths && a < w->n && off < len; a++)
		for (k = 0; k < w->rows[a].nprobes && off < len; k++) {
			p = &w->rows[a].probes[k];
			if (!pair_failed(w, a, p) || p->to >= w->n || blame[a] || blame[p->to])
				continue;
			off += (size_t)snprintf(buf + off, len - off, " %s -> %s (path: %s)",
						w->names[a], w->names[p->to], p->why);
			named++;
		}
	free(blame);
	return named;
}

int agent_check_mtu_warning(const struct check_world *w, char *buf, size_t len)
{
	uint32_t i, j, best = 0, bestc = 0, c;
	size_t n;

	for (i = 0; i < w->n; i++) {
		if (!w->rows[i].mtu)
			continue;
		for (c = 0, j = 0; j < w->n; j++)
			c += w->rows[j].mtu == w->rows[i].mtu;
		if (c > bestc) {
			bestc = c;
			best = i;
		}
	}
	if (!bestc)
		return 0;
	n = (size_t)snprintf(
	    buf, len, "MTU differs on the secondary network (most pods: %d):", w->rows[best].mtu);
	for (c = 0, i = 0; i < w->n; i++) {
		if (!w->rows[i].mtu || w->rows[i].mtu == w->rows[best].mtu)
			continue;
		c++;
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, " %s %d", w->names[i],
					      w->rows[i].mtu);
	}
	return c ? 1 : 0;
}

/* ---- report payload ---- */

static json_t *probe_json(const struct check_world *w, const struct check_probe *p)
{
	json_t *j =
	    json_pack("{s:I, s:s, s:b, s:s, s:I, s:I, s:I, s:I, s:i, s:i}", "to", (json_int_t)p->to,
		      "proto", p->proto == CHECK_RDMA ? "rdma" : "tcp", "ok", p->ok, "why", p->why,
		      "min_us", (json_int_t)p->min_us, "median_us", (json_int_t)p->median_us,
		      "max_us", (json_int_t)p->max_us, "write_us", (json_int_t)p->write_us,
		      "gid_index", p->gid_index, "mtu", p->mtu);

	/* a STREAM's figures (the preflight), when one ran */
	if (j && p->bytes &&
	    (json_object_set_new(j, "bytes", json_integer((json_int_t)p->bytes)) < 0 ||
	     json_object_set_new(j, "stream_us", json_integer((json_int_t)p->stream_us)) < 0)) {
		json_decref(j);
		j = NULL;
	}
	/* check --rails: "rail" names the rail; absent = the bootstrap iface */
	if (j && p->rail &&
	    json_object_set_new(j, "rail", json_string(agent_check_rail_name(w, p->rail))) < 0) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* A row's document; with an id (PROBED) when id != 0. */
static int row_encode(const struct check_world *w, uint32_t rank, uint64_t id, char **out,
		      size_t *len)
{
	const struct check_row *r;
	json_t *j = NULL, *arr = NULL;
	size_t k;
	int rc = -ENOMEM;

	if (rank >= w->n)
		return -EINVAL;
	r = &w->rows[rank];
	arr = json_array();
	for (k = 0; arr && k < r->nprobes; k++)
		if (json_array_append_new(arr, probe_json(w, &r->probes[k])) < 0)
			goto out;
	j = json_pack("{s:I, s:i, s:i, s:s, s:I, s:O}", "rank", (json_int_t)rank, "mtu", r->mtu,
		      "rdma", r->rdma, "why", r->why, "lag_ms", (json_int_t)r->lag_ms, "probes",
		      arr);
	if (!j || (id && json_object_set_new(j, "id", json_integer((json_int_t)id)) < 0))
		goto out;
	*out = json_dumps(j, JSON_COMPACT);
	if (!*out)
		goto out;
	*len = strlen(*out);
	rc = 0;
out:
	json_decref(arr);
	json_decref(j);
	return rc;
}

int agent_check_report_encode(const struct check_world *w, uint32_t rank, char **out, size_t *len)
{
	return row_encode(w, rank, 0, out, len);
}

int agent_check_probed_encode(const struct check_world *w, uint32_t rank, uint64_t id, char **out,
			      size_t *len)
{
	return id && id <= INT64_MAX ? row_encode(w, rank, id, out, len) : -EINVAL;
}

static int get_int(json_t *o, const char *k, json_int_t lo, json_int_t hi, json_int_t *v)
{
	json_t *x = json_object_get(o, k);

	if (!json_is_integer(x))
		return -1;
	*v = json_integer_value(x);
	return *v < lo || *v > hi ? -1 : 0;
}

/* A bounded, printable copy of a string member ("" when absent). */
static int get_text(json_t *o, const char *k, char *buf, size_t len)
{
	json_t *x = json_object_get(o, k);
	const char *s;
	size_t i;

	buf[0] = '\0';
	if (!x)
		return 0;
	if (!json_is_string(x) || json_string_length(x) >= len)
		return -1;
	s = json_string_value(x);
	for (i = 0; s[i]; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	buf[i] = '\0';
	return 0;
}

/* The optional "rail" member: a name, mapped to this world's index. */
static int rail_parse(struct check_world *w, json_t *o, struct check_probe *p)
{
	json_t *x = json_object_get(o, "rail");
	int k;

	if (!x)
		return 0;
	if (!json_is_string(x) || json_string_length(x) >= CHECK_RAIL_NAME)
		return -1;
	k = agent_check_rail_index(w, json_string_value(x));
	if (k < 0)
		return -1;
	p->rail = k;
	return 0;
}

static int probe_parse(struct check_world *w, json_t *o, uint32_t from, struct check_probe *p)
{
	json_int_t to, v[4], gid, mtu, st[2] = {0, 0};
	uint32_t n = w->n;
	const char *proto;
	json_t *ok;

	memset(p, 0, sizeof(*p));
	if (!json_is_object(o) || get_int(o, "to", 0, (json_int_t)n - 1, &to) < 0 ||
	    (uint32_t)to == from)
		return -1;
	proto = json_string_value(json_object_get(o, "proto"));
	ok = json_object_get(o, "ok");
	if (!proto || (strcmp(proto, "tcp") != 0 && strcmp(proto, "rdma") != 0) ||
	    !json_is_boolean(ok))
		return -1;
	if (get_int(o, "min_us", 0, US_MAX, &v[0]) < 0 ||
	    get_int(o, "median_us", 0, US_MAX, &v[1]) < 0 ||
	    get_int(o, "max_us", 0, US_MAX, &v[2]) < 0 ||
	    get_int(o, "write_us", 0, US_MAX, &v[3]) < 0 ||
	    get_int(o, "gid_index", -1, 65535, &gid) < 0 || get_int(o, "mtu", 0, 65536, &mtu) < 0 ||
	    get_text(o, "why", p->why, sizeof(p->why)) < 0 || rail_parse(w, o, p) < 0)
		return -1;
	if (json_object_get(o, "bytes") && (get_int(o, "bytes", 0, CHECK_STREAM_MAX, &st[0]) < 0 ||
					    get_int(o, "stream_us", 0, US_MAX, &st[1]) < 0))
		return -1;
	p->to = (uint32_t)to;
	p->proto = strcmp(proto, "rdma") == 0 ? CHECK_RDMA : CHECK_TCP;
	p->ok = json_is_true(ok);
	p->min_us = v[0];
	p->median_us = v[1];
	p->max_us = v[2];
	p->write_us = v[3];
	p->bytes = st[0];
	p->stream_us = st[1];
	p->gid_index = (int)gid;
	p->mtu = (int)mtu;
	return 0;
}

static int fail(char *why, size_t whylen, const char *what)
{
	snprintf(why, whylen, "%s", what);
	return GX_EPROTO;
}

/* The probes array of one row; at most 2 per target and rail (TCP, RDMA), no duplicates. */
static int probes_parse(struct check_world *w, uint32_t from, json_t *arr, struct check_row *row)
{
	struct check_probe p;
	size_t k;
	json_t *x;

	if (!json_is_array(arr) || json_array_size(arr) > 2 * (size_t)w->n * (1 + CHECK_MAX_RAILS))
		return -1;
	json_array_foreach(arr, k, x)
	{
		if (probe_parse(w, x, from, &p) < 0 ||
		    agent_check_find_rail(w, from, p.to, p.proto, p.rail))
			return -1;
		if (agent_check_row_add(w, from, &p) < 0)
			return -1;
	}
	(void)row;
	return 0;
}

static int row_parse(struct check_world *w, uint32_t rank, json_t *j)
{
	struct check_row *r = &w->rows[rank];
	json_int_t mtu, rdma, lag = 0;

	row_clear(r);
	if (get_int(j, "mtu", 0, 65536, &mtu) < 0 || get_int(j, "rdma", 0, 2, &rdma) < 0 ||
	    get_text(j, "why", r->why, sizeof(r->why)) < 0)
		return -1;
	/* optional (older reports lack it) */
	if (json_object_get(j, "lag_ms") && get_int(j, "lag_ms", 0, US_MAX / 1000, &lag) < 0)
		return -1;
	r->lag_ms = json_object_get(j, "lag_ms") ? (int64_t)lag : 0;
	r->mtu = (int)mtu;
	r->rdma = (int)rdma;
	if (probes_parse(w, rank, json_object_get(j, "probes"), r) < 0) {
		row_clear(r);
		return -1;
	}
	r->reported = 1;
	return 0;
}

int agent_check_report_decode(struct check_world *w, uint32_t rank, const char *text, size_t len,
			      char *why, size_t whylen)
{
	json_error_t je;
	json_int_t jr;
	json_t *j;
	int rc = 0;

	if (rank >= w->n || len > CHECK_MAX_REPORT)
		return fail(why, whylen, "report too large or rank out of range");
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(j))
		rc = fail(why, whylen, "report is not a JSON object");
	else if (get_int(j, "rank", 0, (json_int_t)w->n - 1, &jr) < 0 || (uint32_t)jr != rank)
		rc = fail(why, whylen, "report names another rank");
	else if (row_parse(w, rank, j) < 0)
		rc = fail(why, whylen, "report of the wrong shape");
	json_decref(j);
	return rc;
}

int agent_check_probed_decode(struct check_world *w, uint32_t rank, uint64_t want_id,
			      const char *text, size_t len, char *why, size_t whylen)
{
	json_error_t je;
	json_int_t id;
	json_t *j;
	int rc;

	if (len > CHECK_MAX_REPORT)
		return fail(why, whylen, "answer too large");
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	rc = get_int(j, "id", 1, INT64_MAX, &id) < 0 || (uint64_t)id != want_id
		 ? fail(why, whylen, "answer to another request")
		 : 0;
	json_decref(j);
	return rc < 0 ? rc : agent_check_report_decode(w, rank, text, len, why, whylen);
}

int agent_check_probe_req_encode(uint64_t id, const unsigned char *only, uint32_t n, char **out,
				 size_t *len)
{
	json_t *arr = json_array(), *j = NULL;
	uint32_t i;
	int rc = -ENOMEM;

	for (i = 0; arr && i < n; i++)
		if (only[i] && json_array_append_new(arr, json_integer(i)) < 0)
			goto out;
	if (!id || id > INT64_MAX)
		goto out;
	j = json_pack("{s:I, s:O}", "id", (json_int_t)id, "targets", arr);
	*out = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (!*out)
		goto out;
	*len = strlen(*out);
	rc = 0;
out:
	json_decref(arr);
	json_decref(j);
	return rc;
}

int agent_check_probe_req_decode(const char *text, size_t len, uint32_t n, uint32_t self,
				 uint64_t *id, unsigned char *only, char *why, size_t whylen)
{
	json_t *j, *arr, *x;
	json_error_t je;
	json_int_t v;
	size_t k;
	int rc = 0;

	memset(only, 0, n);
	if (len > CHECK_MAX_PROBE)
		return fail(why, whylen, "request too large");
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	arr = json_object_get(j, "targets");
	if (!json_is_object(j) || get_int(j, "id", 1, INT64_MAX, &v) < 0 || !json_is_array(arr) ||
	    json_array_size(arr) == 0 || json_array_size(arr) >= n) {
		rc = fail(why, whylen, "request of the wrong shape");
		goto out;
	}
	*id = (uint64_t)v;
	json_array_foreach(arr, k, x)
	{
		if (!json_is_integer(x) || json_integer_value(x) < 0 ||
		    json_integer_value(x) >= (json_int_t)n ||
		    (uint32_t)json_integer_value(x) == self || only[json_integer_value(x)]) {
			rc = fail(why, whylen, "request names a bad target");
			goto out;
		}
		only[json_integer_value(x)] = 1;
	}
out:
	json_decref(j);
	return rc;
}

static int summary_parse(json_t *o, struct check_summary *s)
{
	json_int_t v[7];

	memset(s, 0, sizeof(*s));
	if (!json_is_object(o) || get_int(o, "tcp_ok", 0, INT64_MAX, &v[0]) < 0 ||
	    get_int(o, "tcp_total", 0, INT64_MAX, &v[1]) < 0 ||
	    get_int(o, "rdma_ok", 0, INT64_MAX, &v[2]) < 0 ||
	    get_int(o, "rdma_total", 0, INT64_MAX, &v[3]) < 0 ||
	    get_int(o, "no_rdma", 0, UINT32_MAX, &v[4]) < 0 ||
	    get_int(o, "rdma_unavailable", 0, UINT32_MAX, &v[5]) < 0 ||
	    get_int(o, "missing", 0, UINT32_MAX, &v[6]) < 0 ||
	    !json_is_boolean(json_object_get(o, "ok")) ||
	    get_text(o, "line", s->line, sizeof(s->line)) < 0)
		return -1;
	s->tcp_ok = (size_t)v[0];
	s->tcp_total = (size_t)v[1];
	s->rdma_ok = (size_t)v[2];
	s->rdma_total = (size_t)v[3];
	s->no_rdma = (uint32_t)v[4];
	s->rdma_unavl = (uint32_t)v[5];
	s->missing = (uint32_t)v[6];
	s->all_ok = json_is_true(json_object_get(o, "ok"));
	/* check --rails (optional: absent in results without rails) */
	if (json_object_get(o, "rails_total") &&
	    (get_int(o, "rails_ok", 0, INT64_MAX, &v[0]) < 0 ||
	     get_int(o, "rails_total", 0, INT64_MAX, &v[1]) < 0))
		return -1;
	s->rail_ok = json_object_get(o, "rails_total") ? (size_t)v[0] : 0;
	s->rail_total = json_object_get(o, "rails_total") ? (size_t)v[1] : 0;
	return 0;
}

/* The result's probes (each with "from") into the rows; peers carry mtu / rdma / why. */
static int result_rows(struct check_world *w, json_t *doc)
{
	json_t *peers = json_object_get(doc, "peers"), *probes = json_object_get(doc, "probes"), *x;
	struct check_probe p;
	json_int_t from, mtu, rdma;
	size_t k;

	if (!json_is_array(peers) || json_array_size(peers) != w->n || !json_is_array(probes) ||
	    json_array_size(probes) > 2 * (size_t)w->n * w->n * (1 + CHECK_MAX_RAILS))
		return -1;
	json_array_foreach(peers, k, x)
	{
		struct check_row *r = &w->rows[k];

		if (!json_is_object(x) || get_int(x, "mtu", 0, 65536, &mtu) < 0 ||
		    get_int(x, "rdma", 0, 2, &rdma) < 0 ||
		    get_text(x, "why", r->why, sizeof(r->why)) < 0 ||
		    !json_is_boolean(json_object_get(x, "reported")))
			return -1;
		r->mtu = (int)mtu;
		r->rdma = (int)rdma;
		r->reported = json_is_true(json_object_get(x, "reported"));
		/* optional: the second pass reached it */
		r->second = json_is_true(json_object_get(x, "reached")) ? CHECK_SECOND_OK
									: CHECK_SECOND_NONE;
		r->good = json_is_true(json_object_get(x, "good"));
	}
	json_array_foreach(probes, k, x)
	{
		if (get_int(x, "from", 0, (json_int_t)w->n - 1, &from) < 0 ||
		    probe_parse(w, x, (uint32_t)from, &p) < 0 ||
		    agent_check_find_rail(w, (uint32_t)from, p.to, p.proto, p.rail) ||
		    agent_check_row_add(w, (uint32_t)from, &p) < 0)
			return -1;
	}
	return 0;
}

int agent_check_result_decode(struct check_world *w, const char *text, size_t len, json_t **doc,
			      struct check_summary *s, char *why, size_t whylen)
{
	json_error_t je;
	json_int_t n;
	json_t *j;
	int rc = 0;

	if (len > CHECK_MAX_RESULT)
		return fail(why, whylen, "result too large");
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(j))
		rc = fail(why, whylen, "result is not a JSON object");
	else if (get_int(j, "world", 1, UINT32_MAX, &n) < 0 || (uint32_t)n != w->n)
		rc = fail(why, whylen, "result for another world size");
	else if (summary_parse(json_object_get(j, "summary"), s) < 0 || result_rows(w, j) < 0)
		rc = fail(why, whylen, "result of the wrong shape");
	if (rc == 0 && doc) {
		*doc = j;
		j = NULL;
	}
	json_decref(j);
	return rc;
}

/* ---- frames ---- */

void agent_check_hdr_put(unsigned char h[CHECK_HDR_LEN], int type, uint32_t len)
{
	uint32_t magic = htonl(CHECK_MAGIC), l = htonl(len);

	memcpy(h, &magic, 4);
	h[4] = CHECK_VERSION;
	h[5] = (unsigned char)type;
	h[6] = h[7] = 0;
	memcpy(h + 8, &l, 4);
}

int agent_check_frame_encode(const struct gx_frame *f, unsigned char *hdr, unsigned type,
			     size_t blen)
{
	(void)f;
	if (blen > UINT32_MAX)
		return -EMSGSIZE;
	agent_check_hdr_put(hdr, (int)type, (uint32_t)blen);
	return 0;
}

int agent_check_hdr_get(const unsigned char h[CHECK_HDR_LEN], int *type, uint32_t *len)
{
	uint32_t magic, l;

	memcpy(&magic, h, 4);
	memcpy(&l, h + 8, 4);
	if (ntohl(magic) != CHECK_MAGIC)
		return GX_EPROTO;
	if (h[4] != CHECK_VERSION)
		return GX_EVERSION;
	*type = h[5];
	*len = ntohl(l);
	switch (*type) {
	case CHECK_ECHO:
		return *len >= CHECK_ECHO_MIN && *len <= CHECK_ECHO_MAX ? 0 : GX_EPROTO;
	case CHECK_REPORT:
		return *len >= CHECK_MAC_LEN + 4 && *len <= CHECK_MAX_REPORT ? 0 : GX_EPROTO;
	case CHECK_RESULT:
		return *len >= CHECK_MAC_LEN + 4 && *len <= CHECK_MAX_RESULT ? 0 : GX_EPROTO;
	case CHECK_PROBE:
		return *len >= CHECK_MAC_LEN + 4 && *len <= CHECK_MAX_PROBE ? 0 : GX_EPROTO;
	case CHECK_PROBED:
		return *len >= CHECK_MAC_LEN + 4 && *len <= CHECK_MAX_REPORT ? 0 : GX_EPROTO;
	case CHECK_STREAM:
		return *len <= CHECK_STREAM_MAX ? 0 : GX_EPROTO;
	case CHECK_STREAMED:
		return *len == 8 ? 0 : GX_EPROTO;
	default:
		return GX_EPROTO;
	}
}

static void mac(const unsigned char key[CHECK_KEY_LEN], int type, uint64_t round, uint32_t rank,
		const unsigned char *payload, size_t plen, unsigned char out[CHECK_MAC_LEN])
{
	const char *label = type == CHECK_REPORT   ? report_label
			    : type == CHECK_PROBE  ? probe_label
			    : type == CHECK_PROBED ? probed_label
						   : result_label;
	crypto_auth_hmacsha256_state st;
	unsigned char b[12];
	uint32_t hi = htonl((uint32_t)(round >> 32)), lo = htonl((uint32_t)round), r = htonl(rank);

	memcpy(b, &hi, 4);
	memcpy(b + 4, &lo, 4);
	memcpy(b + 8, &r, 4);
	crypto_auth_hmacsha256_init(&st, key, CHECK_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label) + 1);
	crypto_auth_hmacsha256_update(&st, b, sizeof(b));
	crypto_auth_hmacsha256_update(&st, payload, plen);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

int agent_check_seal(const unsigned char key[CHECK_KEY_LEN], int type, uint64_t round,
		     uint32_t rank, const char *payload, size_t plen, unsigned char **out,
		     size_t *outlen)
{
	size_t body = CHECK_MAC_LEN + 4 + plen;
	unsigned char *f;
	uint32_t r = htonl(rank);

	size_t cap = type == CHECK_REPORT || type == CHECK_PROBED ? CHECK_MAX_REPORT
		     : type == CHECK_PROBE			  ? CHECK_MAX_PROBE
								  : CHECK_MAX_RESULT;

	if (type < CHECK_REPORT || type > CHECK_PROBED || type == CHECK_ECHO ||
	    plen > cap - CHECK_MAC_LEN - 4)
		return -EMSGSIZE;
	f = malloc(CHECK_HDR_LEN + body);
	if (!f)
		return -ENOMEM;
	agent_check_hdr_put(f, type, (uint32_t)body);
	mac(key, type, round, rank, (const unsigned char *)payload, plen, f + CHECK_HDR_LEN);
	memcpy(f + CHECK_HDR_LEN + CHECK_MAC_LEN, &r, 4);
	memcpy(f + CHECK_HDR_LEN + CHECK_MAC_LEN + 4, payload, plen);
	*out = f;
	*outlen = CHECK_HDR_LEN + body;
	return 0;
}

int agent_check_open(const unsigned char key[CHECK_KEY_LEN], int type, uint64_t round, uint32_t n,
		     const unsigned char *body, size_t len, uint32_t *rank, const char **payload,
		     size_t *plen)
{
	unsigned char want[CHECK_MAC_LEN];
	uint32_t r;
	int rc;

	if (len < CHECK_MAC_LEN + 4)
		return GX_EPROTO;
	memcpy(&r, body + CHECK_MAC_LEN, 4);
	r = ntohl(r);
	mac(key, type, round, r, body + CHECK_MAC_LEN + 4, len - CHECK_MAC_LEN - 4, want);
	rc = sodium_memcmp(want, body, CHECK_MAC_LEN) == 0 ? 0 : GX_EMAC;
	sodium_memzero(want, sizeof(want));
	if (rc == 0 && r >= n)
		rc = GX_EPROTO;
	if (rc < 0)
		return rc;
	*rank = r;
	*payload = (const char *)body + CHECK_MAC_LEN + 4;
	*plen = len - CHECK_MAC_LEN - 4;
	return 0;
}
