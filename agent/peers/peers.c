/* SPDX-License-Identifier: MIT */
/*
 * peers.c - the peer list (--peers): bash-like brace
 * expansion, this pod's place in the list, the default job id (the discovery
 * entry point is peers_discover.c, the sources are in peers_detect.c).
 *
 * Expansion follows bash (braces.c semantics, not its code): the first valid
 * group {x,y} or {N..M[..S]} is replaced by each alternative in turn and the
 * result expanded again, which gives bash's cartesian order. Padding: when an
 * endpoint has a leading zero the width is the longer endpoint ({00..15}).
 * Nothing is ever handed to a shell; every result is validated as a name.
 */
#include "agent/peers/peers_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ENTRY_MAX 1024 /* one comma-separated entry before expansion */
#define DEPTH_MAX 32   /* brace groups expanded in one entry */

/* ---- name lists ---------------------------------------------------------- */

int agent_names_push(struct agent_names *l, const char *s, size_t len)
{
	char **v;

	if (l->n + 2 > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;

		v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = strndup(s, len);
	if (!l->v[l->n])
		return -ENOMEM;
	l->v[++l->n] = NULL;
	return 0;
}

const char *agent_printable(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len && i < 80; i++)
		buf[i] = (s[i] >= ' ' && s[i] < 0x7f) ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

int agent_names_push_valid(struct agent_names *l, const char *s, size_t len, const char *what,
			   char *err, size_t errlen)
{
	char name[256], addr[64], pr[96], pw[224];

	/* what names where the list came from (a variable, a file): its name is outside
	 * input too (a newline in a variable's name, found by fuzz_peers) */
	agent_printable(what, pw, sizeof(pw));
	if (len == 0 || len >= sizeof(name)) {
		snprintf(err, errlen, "%s name in %s", len ? "too long a" : "an empty", pw);
		return GX_EUSAGE;
	}
	memcpy(name, s, len);
	name[len] = '\0';
	if (strlen(name) == len && gx_addr_normalize(name, addr, sizeof(addr)) == 0)
		return agent_names_push(l, addr, strlen(addr));
	if (strlen(name) != len || !gx_valid_hostname(name)) {
		snprintf(err, errlen, "invalid peer name '%s' in %s (DNS-1123 name or IP address)",
			 agent_printable(name, pr, sizeof(pr)), pw);
		return GX_EUSAGE;
	}
	return agent_names_push(l, name, len);
}

void agent_names_free(char **names, size_t n)
{
	size_t i;

	for (i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

static int cmp_ci(const void *a, const void *b)
{
	return strcasecmp(*(char *const *)a, *(char *const *)b);
}

int agent_names_unique(const struct agent_names *l, const char *what, char *err, size_t errlen)
{
	char **sorted = NULL, pr[96];
	size_t i;
	int rc = 0;

	if (l->n < 2)
		return 0;
	sorted = malloc(l->n * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, l->v, l->n * sizeof(*sorted));
	qsort(sorted, l->n, sizeof(*sorted), cmp_ci);
	for (i = 1; i < l->n; i++) {
		if (strcasecmp(sorted[i - 1], sorted[i]) == 0) {
			snprintf(err, errlen, "peer '%s' appears twice in %s",
				 agent_printable(sorted[i], pr, sizeof(pr)), what);
			rc = GX_EUSAGE;
			break;
		}
	}
	free(sorted);
	return rc;
}

/* ---- brace expansion ------------------------------------------------------ */

struct expand {
	struct agent_names out;
	size_t max;
	char *err;
	size_t errlen;
};

/* {N..M[..S]} or {a..e[..S]}: the bounds, step, padding width and whether chars. */
struct seq {
	long long a, b, step;
	int width, chars;
};

static int parse_ll(const char *s, size_t len, long long *v, int *zero_pad)
{
	char buf[24];
	char *end = NULL;
	size_t i = (len && s[0] == '-') ? 1 : 0;

	if (len == i || len >= sizeof(buf) || len - i > 18)
		return -1;
	for (; i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	*v = strtoll(buf, &end, 10);
	i = buf[0] == '-';
	*zero_pad = len - i > 1 && buf[i] == '0';
	return 0;
}

static int parse_seq(const char *s, size_t len, struct seq *q)
{
	const char *d1 = memmem(s, len, "..", 2), *d2;
	size_t l1, l2, l3 = 0;
	int z1 = 0, z2 = 0, z3 = 0;
	long long st = 1;

	if (!d1)
		return -1;
	l1 = (size_t)(d1 - s);
	d2 = memmem(d1 + 2, len - l1 - 2, "..", 2);
	l2 = d2 ? (size_t)(d2 - d1 - 2) : len - l1 - 2;
	if (d2) {
		l3 = len - l1 - l2 - 4;
		if (parse_ll(d2 + 2, l3, &st, &z3) < 0)
			return -1;
	}
	memset(q, 0, sizeof(*q));
	q->step = st < 0 ? -st : (st ? st : 1);
	if (l1 == 1 && l2 == 1 && isalpha((unsigned char)s[0]) && isalpha((unsigned char)d1[2])) {
		q->a = (unsigned char)s[0];
		q->b = (unsigned char)d1[2];
		q->chars = 1;
		return 0;
	}
	if (parse_ll(s, l1, &q->a, &z1) < 0 || parse_ll(d1 + 2, l2, &q->b, &z2) < 0)
		return -1;
	if (z1 || z2)
		q->width = (int)(l1 > l2 ? l1 : l2);
	return 0;
}

/* Length of the brace group opening at s[0] ('{'), 0 when unmatched. */
static size_t group_len(const char *s, int *has_comma)
{
	size_t i;
	int depth = 0;

	*has_comma = 0;
	for (i = 0; s[i]; i++) {
		if (s[i] == '{')
			depth++;
		else if (s[i] == '}' && --depth == 0)
			return i + 1;
		else if (s[i] == ',' && depth == 1)
			*has_comma = 1;
	}
	return 0;
}

/* The first group that expands (a list or a sequence); 0 when none. */
static int find_group(const char *s, size_t *open, size_t *len, int *is_list, struct seq *q)
{
	size_t i, g;

	for (i = 0; s[i]; i++) {
		if (s[i] != '{')
			continue;
		g = group_len(s + i, is_list);
		if (g == 0)
			return 0;
		if (*is_list || parse_seq(s + i + 1, g - 2, q) == 0) {
			*open = i;
			*len = g;
			return 1;
		}
	}
	return 0;
}

static int expand_str(struct expand *x, const char *s, int depth);

/* Expands pre + mid + post. */
static int expand_join(struct expand *x, const char *s, size_t open, size_t glen, const char *mid,
		       size_t midlen, int depth)
{
	size_t pre = open, post = strlen(s + open + glen);
	char *buf = malloc(pre + midlen + post + 1);
	int rc;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, s, pre);
	memcpy(buf + pre, mid, midlen);
	memcpy(buf + pre + midlen, s + open + glen, post + 1);
	rc = expand_str(x, buf, depth + 1);
	free(buf);
	return rc;
}

static int expand_list(struct expand *x, const char *s, size_t open, size_t glen, int depth)
{
	const char *c = s + open + 1, *end = s + open + glen - 1, *start = c;
	int d = 0, rc = 0;

	for (; c <= end && rc == 0; c++) {
		if (c < end && *c == '{')
			d++;
		else if (c < end && *c == '}')
			d--;
		else if (c == end || (*c == ',' && d == 0)) {
			rc = expand_join(x, s, open, glen, start, (size_t)(c - start), depth);
			start = c + 1;
		}
	}
	return rc;
}

static int too_many(struct expand *x)
{
	snprintf(x->err, x->errlen, "--peers expands to more than %zu names", x->max);
	return GX_EUSAGE;
}

static int expand_seq(struct expand *x, const char *s, size_t open, size_t glen,
		      const struct seq *q, int depth)
{
	unsigned long long span = (unsigned long long)(q->a > q->b ? q->a - q->b : q->b - q->a);
	long long v = q->a, dir = q->a <= q->b ? q->step : -q->step;
	char num[32];
	int rc = 0, len;

	if (span / (unsigned long long)q->step + 1 > x->max - x->out.n)
		return too_many(x);
	for (; rc == 0 && (dir > 0 ? v <= q->b : v >= q->b); v += dir) {
		if (q->chars)
			len = snprintf(num, sizeof(num), "%c", (char)v);
		else
			len = snprintf(num, sizeof(num), "%0*lld", q->width, v);
		rc = expand_join(x, s, open, glen, num, (size_t)len, depth);
	}
	return rc;
}

static int expand_str(struct expand *x, const char *s, int depth)
{
	size_t open = 0, glen = 0;
	int is_list = 0;
	struct seq q;

	if (depth > DEPTH_MAX) {
		snprintf(x->err, x->errlen, "too many brace groups in one --peers entry (max %d)",
			 DEPTH_MAX);
		return GX_EUSAGE;
	}
	if (!find_group(s, &open, &glen, &is_list, &q)) {
		if (x->out.n >= x->max)
			return too_many(x);
		return agent_names_push_valid(&x->out, s, strlen(s), "--peers", x->err, x->errlen);
	}
	if (is_list)
		return expand_list(x, s, open, glen, depth);
	return expand_seq(x, s, open, glen, &q, depth);
}

/* One top-level entry list[0..len), surrounding blanks trimmed. */
static int expand_entry(struct expand *x, const char *s, size_t len)
{
	char buf[ENTRY_MAX + 1];

	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	if (len == 0) {
		snprintf(x->err, x->errlen, "empty entry in --peers");
		return GX_EUSAGE;
	}
	if (len > ENTRY_MAX) {
		snprintf(x->err, x->errlen, "an entry of --peers is longer than %d bytes",
			 ENTRY_MAX);
		return GX_EUSAGE;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (strlen(buf) != len)
		return GX_EUSAGE;
	return expand_str(x, buf, 0);
}

int agent_peers_expand_max(const char *list, size_t max, char ***names, size_t *n, char *err,
			   size_t errlen)
{
	struct expand x = {.max = max, .err = err, .errlen = errlen};
	const char *start = list, *c;
	int depth = 0, rc = 0;

	*names = NULL;
	*n = 0;
	if (strnlen(list, AGENT_PEERS_TEXT_MAX + 1) > AGENT_PEERS_TEXT_MAX) {
		snprintf(err, errlen, "--peers is longer than %d bytes", AGENT_PEERS_TEXT_MAX);
		return GX_EUSAGE;
	}
	for (c = list; rc == 0; c++) {
		if (*c == '{')
			depth++;
		else if (*c == '}' && depth > 0)
			depth--;
		else if (*c == '\0' || (*c == ',' && depth == 0)) {
			rc = expand_entry(&x, start, (size_t)(c - start));
			start = c + 1;
		}
		if (*c == '\0')
			break;
	}
	if (rc == 0)
		rc = agent_names_unique(&x.out, "--peers", err, errlen);
	if (rc < 0) {
		agent_names_free(x.out.v, x.out.n);
		return rc;
	}
	*names = x.out.v;
	*n = x.out.n;
	return 0;
}

int agent_peers_expand(const char *list, char ***names, size_t *n, char *err, size_t errlen)
{
	return agent_peers_expand_max(list, AGENT_PEERS_MAX, names, n, err, errlen);
}

/* ---- self matching ---------------------------------------------------------- */

/* Length without trailing dots. */
static size_t name_len(const char *s)
{
	size_t l = strlen(s);

	while (l && s[l - 1] == '.')
		l--;
	return l;
}

static size_t label_len(const char *s, size_t len)
{
	const char *dot = memchr(s, '.', len);

	return dot ? (size_t)(dot - s) : len;
}

int agent_name_match(const char *a, const char *b)
{
	size_t la = name_len(a), lb = name_len(b), fa = label_len(a, la), fb = label_len(b, lb);

	if (la == lb && strncasecmp(a, b, la) == 0)
		return 2;
	if ((fa == la || fb == lb) && fa == fb && strncasecmp(a, b, fa) == 0)
		return 1;
	/* whole labels of the longer one (setHostnameAsFQDN: the host name is the FQDN) */
	if (la < lb && b[la] == '.' && strncasecmp(a, b, la) == 0)
		return 1;
	if (lb < la && a[lb] == '.' && strncasecmp(a, b, lb) == 0)
		return 1;
	return 0;
}

static int ip_match(const char *name, const char *self, int (*is_local_ip)(const char *))
{
	char a[64], b[64];

	if (gx_addr_normalize(name, a, sizeof(a)) < 0)
		return -1; /* not an IP */
	if (self && gx_addr_normalize(self, b, sizeof(b)) == 0 && strcmp(a, b) == 0)
		return 3; /* the --self address itself beats any other local one */
	return is_local_ip && is_local_ip(a) == 1 ? 2 : 0;
}

int agent_self_index(char *const *names, size_t n, const char *self,
		     int (*is_local_ip)(const char *ip), size_t *idx)
{
	size_t i, exact = SIZE_MAX, shortm = SIZE_MAX, local = SIZE_MAX, nshort = 0;
	int m;

	for (i = 0; i < n; i++) {
		m = ip_match(names[i], self, is_local_ip);
		if (m == 3) {
			*idx = i;
			return 0;
		}
		if (m == 2 && local == SIZE_MAX)
			local = i;
		if (m >= 0)
			continue;
		m = self && *self ? agent_name_match(names[i], self) : 0;
		if (m == 2 && exact == SIZE_MAX)
			exact = i;
		if (m == 1 && nshort++ == 0)
			shortm = i;
	}
	/* the pod's name says which entry it is; a local IP (127.0.0.1, a node
	 * address shared by hostNetwork pods) only when no name matches */
	if (exact == SIZE_MAX && nshort == 1)
		exact = shortm;
	if (exact == SIZE_MAX)
		exact = local;
	if (exact != SIZE_MAX) {
		*idx = exact;
		return 0;
	}
	return nshort > 1 ? GX_EUSAGE : -ENOENT;
}

/* ---- job id --------------------------------------------------------------------- */

int agent_job_id(const struct agent_opts *o, char *const *names, size_t n, char *out, size_t len)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_state st;
	char addr[64], port[16], lower[64];
	size_t i, l, k;

	if (o->job_id) {
		if (!gx_valid_jobid(o->job_id))
			return GX_EUSAGE;
		return gx_strlcpy(out, o->job_id, len) < 0 ? -ENOSPC : 0;
	}
	if (len < 2 * sizeof(h) + 1)
		return -ENOSPC;
	crypto_hash_sha256_init(&st);
	for (i = 0; i < n; i++) {
		if (i)
			crypto_hash_sha256_update(&st, (const unsigned char *)",", 1);
		if (gx_addr_normalize(names[i], addr, sizeof(addr)) == 0) {
			crypto_hash_sha256_update(&st, (const unsigned char *)addr, strlen(addr));
			continue;
		}
		l = label_len(names[i], name_len(names[i]));
		for (k = 0; k < l && k < sizeof(lower); k++)
			lower[k] = (char)tolower((unsigned char)names[i][k]);
		crypto_hash_sha256_update(&st, (const unsigned char *)lower, k);
	}
	snprintf(port, sizeof(port), ":%ld", o->port);
	crypto_hash_sha256_update(&st, (const unsigned char *)port, strlen(port));
	crypto_hash_sha256_final(&st, h);
	sodium_bin2hex(out, len, h, sizeof(h));
	return 0;
}

/* ---- the list ------------------------------------------------------------------- */

void agent_peers_free(struct agent_peers *p)
{
	agent_names_free(p->names, p->n);
	free(p->coord_fqdn);
	free(p->slots);
	memset(p, 0, sizeof(*p));
	p->self = AGENT_SELF_NONE;
}
