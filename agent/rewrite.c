/* SPDX-License-Identifier: MIT */
/*
 * rewrite.c - drop-in for torchrun command lines written for eth0 (issue 16).
 *
 * Flags beat PET_* env, so a `--rdzv_endpoint host:29500` or `--master_addr host`
 * naming the coordinator keeps torchrun on eth0. Such values are rewritten to the
 * elected secondary address, and c10d becomes the static rendezvous (torch 1.13's
 * c10d decides who hosts the store from the hostname's resolution, which never
 * matches a net1 address: FIELD.md). `sh|bash -c STR` (TorchX) is split without
 * expansion, except that ${VAR:=def} / ${VAR:-def} / $VAR words are evaluated
 * against the environment to decide what they name (DECISIONS 18).
 */
#include "agent/rewrite_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tok {
	char *raw; /* as written (sh -c: with quotes) */
	char *val; /* the value (sh -c: unquoted, ${VAR:=def} evaluated) */
	int changed;
};

struct toks {
	struct tok *t;
	size_t n;
};

static void toks_free(struct toks *ts)
{
	size_t i;

	for (i = 0; ts->t && i < ts->n; i++) {
		free(ts->t[i].raw);
		free(ts->t[i].val);
	}
	free(ts->t);
	ts->t = NULL;
	ts->n = 0;
}

static int toks_push(struct toks *ts, const char *raw, size_t rawlen, const char *val)
{
	struct tok *n = realloc(ts->t, (ts->n + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	ts->t = n;
	n[ts->n].raw = strndup(raw, rawlen);
	n[ts->n].val = strdup(val);
	n[ts->n].changed = 0;
	if (!n[ts->n].raw || !n[ts->n].val) {
		free(n[ts->n].raw);
		free(n[ts->n].val);
		return -ENOMEM;
	}
	ts->n++;
	return 0;
}

static const char *env_lookup(char **envp, const char *name, size_t len)
{
	char **e;

	for (e = envp; e && *e; e++) {
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	}
	return NULL;
}

/* Evaluate $VAR, ${VAR}, ${VAR:=def}, ${VAR:-def} at s; appends to out. Returns chars used or -1.
 */
static int eval_var(const char *s, char **envp, char *out, size_t *o, size_t cap)
{
	const char *p = s + 1, *name, *def = NULL, *v;
	size_t nlen, dlen = 0, vlen;
	int brace = *p == '{';

	p += brace;
	name = p;
	while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
	       *p == '_')
		p++;
	nlen = (size_t)(p - name);
	if (nlen == 0)
		return -1;
	if (brace) {
		if (p[0] == ':' && (p[1] == '=' || p[1] == '-')) {
			def = p + 2;
			p = strchr(def, '}');
			if (!p)
				return -1;
			dlen = (size_t)(p - def);
		}
		if (*p != '}')
			return -1;
		p++;
	}
	v = env_lookup(envp, name, nlen);
	vlen = v ? strlen(v) : 0;
	if (!v || !*v) {
		v = def ? def : "";
		vlen = def ? dlen : 0;
	}
	if (*o + vlen >= cap)
		return -1;
	memcpy(out + *o, v, vlen);
	*o += vlen;
	return (int)(p - s);
}

/* Next shell word of s at *pos; -EINVAL on anything beyond plain words. */
static int next_word(const char *s, size_t *pos, char **envp, struct toks *ts)
{
	char val[4096];
	size_t i = *pos, start, o = 0;
	char q = 0;
	int used;

	while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')
		i++;
	if (!s[i]) {
		*pos = i;
		return 0;
	}
	start = i;
	for (; s[i] && (q || (s[i] != ' ' && s[i] != '\t' && s[i] != '\n')); i++) {
		if (o + 2 >= sizeof(val))
			return -E2BIG;
		if (q == '\'' && s[i] != '\'') {
			val[o++] = s[i];
		} else if (s[i] == '\'' || s[i] == '"') {
			q = q == s[i] ? 0 : (q ? q : s[i]);
			if (q && q != s[i])
				val[o++] = s[i];
		} else if (s[i] == '$' && s[i + 1] == '(') {
			return -EINVAL;
		} else if (s[i] == '$') {
			used = eval_var(s + i, envp, val, &o, sizeof(val));
			if (used < 0)
				return -EINVAL;
			i += (size_t)used - 1;
		} else if (!q && strchr(";&|<>`()\\*?[#~", s[i])) {
			return -EINVAL;
		} else {
			val[o++] = s[i];
		}
	}
	if (q)
		return -EINVAL;
	val[o] = '\0';
	*pos = i;
	return toks_push(ts, s + start, i - start, val);
}

static int split_shell(const char *s, char **envp, struct toks *ts)
{
	size_t pos = 0;
	size_t before;
	int rc;

	for (;;) {
		before = ts->n;
		rc = next_word(s, &pos, envp, ts);
		if (rc < 0 || ts->n == before)
			return rc;
	}
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

int agent_cmd_is_launcher(char **argv, int argc)
{
	static const char *const names[] = {"mpirun",	  "mpiexec",   "orterun", "prterun",
					    "horovodrun", "deepspeed", NULL};
	const char *b;
	size_t i, l;

	if (argc < 1 || !argv[0])
		return 0;
	b = base_name(argv[0]);
	for (i = 0; names[i]; i++) {
		l = strlen(names[i]);
		/* mpirun, mpiexec.hydra, mpirun.mpich, mpiexec.openmpi */
		if (strncmp(b, names[i], l) == 0 && (b[l] == '\0' || b[l] == '.'))
			return 1;
	}
	return 0;
}

/* Index of the first torchrun option, or -1 when toks is no torchrun command. */
static int torchrun_start(const struct toks *ts)
{
	const char *b;
	size_t i;

	if (ts->n == 0)
		return -1;
	b = base_name(ts->t[0].val);
	if (strcmp(b, "torchrun") == 0)
		return 1;
	if (strncmp(b, "python", 6) != 0)
		return -1;
	for (i = 1; i + 1 < ts->n; i++) {
		if (strcmp(ts->t[i].val, "-m") == 0)
			return (strcmp(ts->t[i + 1].val, "torch.distributed.run") == 0 ||
				strcmp(ts->t[i + 1].val, "torch.distributed.launch") == 0)
				   ? (int)i + 2
				   : -1;
		if (ts->t[i].val[0] != '-')
			return -1;
	}
	return -1;
}

enum rw_opt {
	RW_NONE,
	RW_ENDPOINT,
	RW_BACKEND,
	RW_MASTER_ADDR,
	RW_MASTER_PORT,
	RW_NNODES,
	RW_NODE_RANK,
	RW_OTHER_VALUE,
	RW_FLAG,
};

static enum rw_opt classify(const char *name, size_t n)
{
	static const struct {
		const char *name;
		enum rw_opt o;
	} tab[] = {
	    {"--rdzv_endpoint", RW_ENDPOINT},
	    {"--rdzv-endpoint", RW_ENDPOINT},
	    {"--rdzv_backend", RW_BACKEND},
	    {"--rdzv-backend", RW_BACKEND},
	    {"--master_addr", RW_MASTER_ADDR},
	    {"--master-addr", RW_MASTER_ADDR},
	    {"--master_port", RW_MASTER_PORT},
	    {"--master-port", RW_MASTER_PORT},
	    {"--nnodes", RW_NNODES},
	    {"--node_rank", RW_NODE_RANK},
	    {"--node-rank", RW_NODE_RANK},
	    {"--standalone", RW_FLAG},
	    {"--no_python", RW_FLAG},
	    {"--no-python", RW_FLAG},
	    {"--run_path", RW_FLAG},
	    {"--run-path", RW_FLAG},
	    {"--module", RW_FLAG},
	    {"-m", RW_FLAG},
	    {"--use_env", RW_FLAG},
	    {"--use-env", RW_FLAG},
	};
	size_t i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strlen(tab[i].name) == n && strncmp(tab[i].name, name, n) == 0)
			return tab[i].o;
	return RW_OTHER_VALUE;
}

static int names_coordinator(const struct agent_rewrite_ctx *c, const char *host)
{
	size_t i, hl = strlen(host);

	if (hl && host[hl - 1] == '.')
		hl--;
	if (c->is_coordinator && (strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
				  strcmp(host, "::1") == 0))
		return 1;
	for (i = 0; c->coord_names && c->coord_names[i]; i++) {
		const char *n = c->coord_names[i];
		size_t nl = strlen(n), dot = strcspn(n, ".");

		if ((nl == hl || (nl == hl + 1 && n[nl - 1] == '.')) && strncmp(n, host, hl) == 0)
			return 1;
		/* first label against first label */
		if (strcspn(host, ".") == dot && strncmp(n, host, dot) == 0)
			return 1;
	}
	return 0;
}

struct rw_state {
	const struct agent_rewrite_ctx *c;
	int foreign; /* a value names some other host */
	int changed;
};

static int set_val(struct tok *t, const char *prefix, const char *v, const char *what)
{
	char buf[512];
	char *nv;

	snprintf(buf, sizeof(buf), "%s%s", prefix, v);
	if (strcmp(t->val, buf) == 0)
		return 0;
	nv = strdup(buf);
	if (!nv)
		return -ENOMEM;
	gx_info("rewrite %s: %s -> %s", what, t->val, buf);
	free(t->val);
	t->val = nv;
	t->changed = 1;
	return 1;
}

/* host part of "host:port" / "[v6]:port" / "host"; port into *port (0 if none) */
static void split_endpoint(const char *v, char *host, size_t hlen, long *port)
{
	const char *colon;

	*port = 0;
	if (v[0] == '[') {
		const char *end = strchr(v, ']');

		snprintf(host, hlen, "%.*s", end ? (int)(end - v - 1) : 0, v + 1);
		colon = end ? strchr(end, ':') : NULL;
	} else {
		colon = strrchr(v, ':');
		if (colon && strchr(v, ':') != colon)
			colon = NULL; /* a bare IPv6 address */
		snprintf(host, hlen, "%.*s", colon ? (int)(colon - v) : (int)strlen(v), v);
	}
	if (colon && gx_parse_long(colon + 1, 1, 65535, port) < 0)
		*port = 0;
}

static int rewrite_value(struct rw_state *st, enum rw_opt o, struct tok *t, const char *prefix,
			 const char *v)
{
	const struct agent_rewrite_ctx *c = st->c;
	char host[256], buf[300];
	long port;

	switch (o) {
	case RW_ENDPOINT:
		split_endpoint(v, host, sizeof(host), &port);
		if (!names_coordinator(c, host)) {
			st->foreign = 1;
			gx_warn(
			    "torchrun --rdzv_endpoint %s names another host than the coordinator: "
			    "left alone",
			    v);
			return 0;
		}
		snprintf(buf, sizeof(buf), strchr(c->addr, ':') ? "[%s]:%ld" : "%s:%ld", c->addr,
			 port ? port : c->master_port);
		return set_val(t, prefix, buf, "--rdzv_endpoint");
	case RW_MASTER_ADDR:
		if (!names_coordinator(c, v) && strcmp(v, c->addr) != 0) {
			st->foreign = 1;
			gx_warn("torchrun --master_addr %s names another host: left alone", v);
			return 0;
		}
		return set_val(t, prefix, c->addr, "--master_addr");
	case RW_MASTER_PORT:
		snprintf(buf, sizeof(buf), "%ld", c->master_port);
		return set_val(t, prefix, buf, "--master_port");
	case RW_NNODES:
		snprintf(buf, sizeof(buf), "%ld", c->world);
		return set_val(t, prefix, buf, "--nnodes");
	case RW_NODE_RANK:
		snprintf(buf, sizeof(buf), "%ld", c->rank);
		return set_val(t, prefix, buf, "--node_rank");
	case RW_BACKEND:
		return set_val(t, prefix, "static", "--rdzv_backend");
	default:
		return 0;
	}
}

/* Walk torchrun's options (up to the script) and rewrite the ones we own. */
static int rewrite_opts(struct toks *ts, int start, struct rw_state *st)
{
	size_t i;
	int rc;

	for (i = (size_t)start; i < ts->n; i++) {
		char *a = ts->t[i].val, *eq;
		enum rw_opt o;
		char prefix[64];

		if (a[0] != '-' || strcmp(a, "--") == 0)
			break; /* the training script and its own arguments */
		eq = strchr(a, '=');
		o = classify(a, eq ? (size_t)(eq - a) : strlen(a));
		if (o == RW_FLAG)
			continue;
		if (eq) {
			snprintf(prefix, sizeof(prefix), "%.*s", (int)(eq - a + 1), a);
			rc = rewrite_value(st, o, &ts->t[i], prefix, eq + 1);
		} else if (i + 1 < ts->n) {
			i++;
			rc = rewrite_value(st, o, &ts->t[i], "", ts->t[i].val);
		} else {
			rc = 0;
		}
		if (rc < 0)
			return rc;
		st->changed |= rc;
	}
	return 0;
}

/* Single-quote a word for sh -c. */
static int sh_quote(const char *v, char *out, size_t cap)
{
	size_t o = 0;

	if (cap < 3)
		return -E2BIG;
	out[o++] = '\'';
	for (; *v; v++) {
		if (o + 6 >= cap)
			return -E2BIG;
		if (*v == '\'') {
			memcpy(out + o, "'\\''", 4);
			o += 4;
		} else {
			out[o++] = *v;
		}
	}
	out[o++] = '\'';
	out[o] = '\0';
	return 0;
}

static int join_shell(const struct toks *ts, char **out)
{
	size_t i, cap = 16, o = 0;
	char q[4200];
	char *s;
	int rc = 0;

	for (i = 0; i < ts->n; i++)
		cap += strlen(ts->t[i].raw) + 4 * strlen(ts->t[i].val) + 4;
	s = malloc(cap);
	if (!s)
		return -ENOMEM;
	for (i = 0; i < ts->n && rc == 0; i++) {
		const char *w = ts->t[i].raw;

		if (ts->t[i].changed) {
			rc = sh_quote(ts->t[i].val, q, sizeof(q));
			w = q;
		}
		o += (size_t)snprintf(s + o, cap - o, "%s%s", i ? " " : "", w);
	}
	if (rc < 0) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int toks_from_argv(char **argv, int argc, struct toks *ts)
{
	int i, rc;

	for (i = 0; i < argc; i++) {
		rc = toks_push(ts, argv[i], strlen(argv[i]), argv[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int build_argv(const struct toks *ts, char ***out)
{
	char **v = calloc(ts->n + 1, sizeof(*v));
	size_t i;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < ts->n; i++) {
		v[i] = strdup(ts->t[i].val);
		if (!v[i]) {
			agent_argv_free(v);
			return -ENOMEM;
		}
	}
	*out = v;
	return 0;
}

/* torchrun in ts: rewrite what we own; 1 when changed (and nothing named a foreign host). */
static int rewrite_toks(struct toks *ts, const struct agent_rewrite_ctx *c)
{
	struct rw_state st = {.c = c};
	int start = torchrun_start(ts), rc;

	if (start < 0)
		return 0;
	rc = rewrite_opts(ts, start, &st);
	if (rc < 0)
		return rc;
	return st.changed && !st.foreign;
}

/* sh|bash -c STR [ARGS]: returns the index of STR, or -1. */
static int shell_c_index(char **argv, int argc)
{
	const char *b;

	if (argc < 3)
		return -1;
	b = base_name(argv[0]);
	if (strcmp(b, "sh") != 0 && strcmp(b, "bash") != 0 && strcmp(b, "dash") != 0)
		return -1;
	return strcmp(argv[1], "-c") == 0 ? 2 : -1;
}

static int rewrite_shell(char **argv, int argc, int si, const struct agent_rewrite_ctx *c,
			 char ***out)
{
	struct toks ts = {0}, av = {0};
	char *joined = NULL;
	int rc;

	rc = split_shell(argv[si], c->envp, &ts);
	if (rc < 0) {
		if (strstr(argv[si], "torchrun") || strstr(argv[si], "torch.distributed.run"))
			gx_warn("the shell command is more than plain words: torchrun arguments "
				"left alone (use MASTER_ADDR/PET_* from the environment)");
		rc = 0;
		goto out;
	}
	rc = rewrite_toks(&ts, c);
	if (rc <= 0)
		goto out;
	rc = join_shell(&ts, &joined);
	if (rc < 0)
		goto out;
	rc = toks_from_argv(argv, argc, &av);
	if (rc < 0)
		goto out;
	free(av.t[si].val);
	av.t[si].val = joined;
	joined = NULL;
	rc = build_argv(&av, out);
	if (rc == 0)
		rc = 1;
out:
	free(joined);
	toks_free(&ts);
	toks_free(&av);
	return rc;
}

int agent_rewrite_cmd(char **argv, int argc, const struct agent_rewrite_ctx *c, char ***out)
{
	struct toks ts = {0};
	int si, rc;

	*out = NULL;
	si = shell_c_index(argv, argc);
	if (si >= 0)
		return rewrite_shell(argv, argc, si, c, out);
	rc = toks_from_argv(argv, argc, &ts);
	if (rc < 0)
		goto out;
	rc = rewrite_toks(&ts, c);
	if (rc <= 0)
		goto out;
	rc = build_argv(&ts, out);
	if (rc == 0)
		rc = 1;
out:
	toks_free(&ts);
	return rc;
}

void agent_argv_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}
