/* SPDX-License-Identifier: MIT */
/*
 * rewrite.c - drop-in for torchrun command lines written for eth0.
 *
 * Flags beat PET_* env, so a `--rdzv_endpoint host:29500` or `--master_addr host`
 * naming the coordinator keeps torchrun on eth0. Such values are rewritten to the
 * elected secondary address, and c10d becomes the static rendezvous (torch 1.13's
 * c10d decides who hosts the store from the hostname's resolution, which never
 * matches a net1 address). `sh|bash -c STR` (TorchX) is split without
 * expansion, except that ${VAR:=def} / ${VAR:-def} / $VAR words are evaluated
 * against the environment to decide what they name (TorchX writes ${VAR:=default}).
 */
#include "agent/launch/launch.h"
#include "agent/peers/peers.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tok {
	char *raw; /* as written (sh -c: with quotes) */
	char *val; /* the value (sh -c: unquoted, ${VAR:=def} evaluated) */
	int changed;
	/* a change, logged once the rewrite is kept: the value before it, the option, and
	 * why its meaning changed (a warning; NULL: a host mapped onto its secondary
	 * address, an info line) */
	char *old, *what, *note;
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
		free(ts->t[i].old);
		free(ts->t[i].what);
		free(ts->t[i].note);
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
	n[ts->n].old = n[ts->n].what = n[ts->n].note = NULL;
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

static int launcher_word(const char *w, size_t wl)
{
	static const char *const names[] = {"mpirun",	  "mpiexec",   "orterun", "prterun",
					    "horovodrun", "deepspeed", NULL};
	const char *b = w, *p;
	size_t i, l;

	for (p = w; p < w + wl; p++)
		if (*p == '/')
			b = p + 1;
	for (i = 0; names[i]; i++) {
		l = strlen(names[i]);
		/* mpirun, mpiexec.hydra, mpirun.mpich, mpiexec.openmpi */
		if ((size_t)(w + wl - b) >= l && strncmp(b, names[i], l) == 0 &&
		    (b + l == w + wl || b[l] == '.'))
			return 1;
	}
	return 0;
}

int agent_cmd_is_launcher(char **argv, int argc)
{
	const char *s;
	int i;

	if (argc < 1 || !argv[0])
		return 0;
	if (argc >= 3 && strcmp(argv[1], "-c") == 0 &&
	    (strcmp(base_name(argv[0]), "sh") == 0 || strcmp(base_name(argv[0]), "bash") == 0)) {
		s = argv[2] + strspn(argv[2], " \t\n");
		return launcher_word(s, strcspn(s, " \t\n;&|"));
	}
	for (i = 1; i + 1 < argc && strncmp(base_name(argv[0]), "python", 6) == 0; i++)
		if (strcmp(argv[i], "-m") == 0)
			return strcmp(argv[i + 1], "deepspeed.launcher.runner") == 0;
	return launcher_word(argv[0], strlen(argv[0]));
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

/* 1 for a loopback address: this pod under any name, which only localhost rules decide */
static int loopback(const char *a)
{
	return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0;
}

/*
 * The entry of h[0..n) that host names, or -1: by name (agent_host_names, against this
 * pod's domain: never another namespace's pod that shares a first label), by its
 * secondary address, by the eth0 address it joined from, or, for this pod's own entry
 * self (-1: none), by any non-loopback address of this pod. One lookup for mpirun's
 * hosts, torchrun's coordinator and DeepSpeed's master.
 */
static long peer_index(const struct agent_rewrite_ctx *c, const struct agent_rw_host *h, size_t n,
		       long self, const char *host)
{
	char a[64];
	size_t i;

	if (gx_addr_normalize(host, a, sizeof(a)) == 0) {
		for (i = 0; i < n; i++)
			if ((h[i].addr && strcmp(h[i].addr, a) == 0) ||
			    (h[i].primary && strcmp(h[i].primary, a) == 0))
				return (long)i;
		if (self >= 0 && (size_t)self < n && !loopback(a) && c->is_local_ip &&
		    c->is_local_ip(a) == 1)
			return self;
		return -1;
	}
	for (i = 0; i < n; i++) /* an elastic job's listed pod not joined yet has no address */
		if (h[i].name && h[i].addr && h[i].addr[0] &&
		    agent_host_names(h[i].name, host, c->dom))
			return (long)i;
	return -1;
}

static int names_coordinator(const struct agent_rewrite_ctx *c, const char *host)
{
	if (c->is_coordinator && (strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
				  strcmp(host, "::1") == 0))
		return 1;
	if (c->coord_fqdn && agent_host_names(c->coord_fqdn, host, c->dom))
		return 1;
	return peer_index(c, &c->coord, 1, c->is_coordinator ? 0 : -1, host) == 0;
}

struct rw_state {
	const struct agent_rewrite_ctx *c;
	int foreign; /* a value names some other host */
	int changed;
	char refuse[600]; /* why the line cannot run as written on the secondary network */
};

/* t's value becomes prefix + v; what and note as in struct tok. 1 changed, 0 the same. */
static int set_val(struct tok *t, const char *prefix, const char *v, const char *what,
		   const char *note)
{
	char *nv = NULL;

	if (asprintf(&nv, "%s%s", prefix, v) < 0)
		return -ENOMEM;
	if (strcmp(t->val, nv) == 0) {
		free(nv);
		return 0;
	}
	if (t->old)
		free(t->val);
	else
		t->old = t->val;
	t->val = nv;
	t->changed = 1;
	free(t->what);
	free(t->note);
	t->what = strdup(what);
	t->note = note ? strdup(note) : NULL;
	return !t->what || (note && !t->note) ? -ENOMEM : 1;
}

/* The changes of a rewrite that is kept, one line each. */
static void log_changes(const struct toks *ts)
{
	size_t i;

	for (i = 0; i < ts->n; i++) {
		const struct tok *t = &ts->t[i];

		if (!t->old || !t->what)
			continue;
		if (t->note)
			gx_warn("rewrite %s: %s -> %s: %s", t->what, t->old, t->val, t->note);
		else
			gx_info("rewrite %s: %s -> %s", t->what, t->old, t->val);
	}
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

/* "--nnodes N" / "MIN:MAX": gxboot's world; an elastic range only when it is gxboot's own. */
static int nnodes_value(struct rw_state *st, struct tok *t, const char *prefix, const char *v,
			const char *opt)
{
	const struct agent_rewrite_ctx *c = st->c;
	char buf[32], note[400], lo_s[24];
	const char *colon = strchr(v, ':');
	long lo = 0, hi = 0;

	snprintf(buf, sizeof(buf), "%ld", c->world);
	if (colon && (size_t)(colon - v) < sizeof(lo_s)) {
		snprintf(lo_s, sizeof(lo_s), "%.*s", (int)(colon - v), v);
		if (gx_parse_long(lo_s, 1, 1 << 20, &lo) < 0 ||
		    gx_parse_long(colon + 1, 1, 1 << 20, &hi) < 0)
			lo = hi = 0;
	}
	if (lo && lo < hi && (c->nnodes_min != lo || c->nnodes_max != hi)) {
		snprintf(st->refuse, sizeof(st->refuse),
			 "torchrun --nnodes %s is an elastic range, which the static rendezvous "
			 "gxboot runs on the secondary network cannot keep (its node count is "
			 "fixed): give gxboot the same range (--nnodes %ld:%ld) to run it as "
			 "gxboot's elastic job, or --no-rewrite to keep torchrun's own rendezvous "
			 "(on eth0)",
			 v, lo, hi);
		return 0;
	}
	if (lo && lo < hi)
		snprintf(note, sizeof(note),
			 "the elastic range runs as gxboot's own --nnodes %ld:%ld (the rendezvous "
			 "commits once %ld pods are in and ranks later pods as they join); "
			 "torchrun's static rendezvous has a fixed count, so training starts "
			 "once all %ld have joined",
			 lo, hi, lo, c->world);
	else
		snprintf(note, sizeof(note), "gxboot's rendezvous has %ld pods", c->world);
	return set_val(t, prefix, buf, opt, note);
}

/* The value v of option opt (as the user spelled it) in t after prefix. */
static int rewrite_value(struct rw_state *st, enum rw_opt o, const char *opt, struct tok *t,
			 const char *prefix, const char *v)
{
	const struct agent_rewrite_ctx *c = st->c;
	char host[256], buf[300], note[400];
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
		return set_val(t, prefix, buf, opt, NULL);
	case RW_MASTER_ADDR:
		if (!names_coordinator(c, v)) {
			st->foreign = 1;
			gx_warn("torchrun --master_addr %s names another host: left alone", v);
			return 0;
		}
		return set_val(t, prefix, c->addr, opt, NULL);
	case RW_MASTER_PORT:
		snprintf(buf, sizeof(buf), "%ld", c->master_port);
		snprintf(note, sizeof(note),
			 "every pod gets gxboot's MASTER_PORT %ld (--master-port), so all meet on "
			 "one port",
			 c->master_port);
		return set_val(t, prefix, buf, opt, note);
	case RW_NNODES:
		return nnodes_value(st, t, prefix, v, opt);
	case RW_NODE_RANK:
		snprintf(buf, sizeof(buf), "%ld", c->rank);
		snprintf(note, sizeof(note),
			 "gxboot's rendezvous ranked this pod %ld, and the static rendezvous needs "
			 "each pod's own rank (rank 0 holds MASTER_ADDR)",
			 c->rank);
		return set_val(t, prefix, buf, opt, note);
	case RW_BACKEND:
		snprintf(note, sizeof(note),
			 "torch's %s rendezvous picks the pod that hosts its store by the host "
			 "name's eth0 address and hands its workers that name, so it would wait or "
			 "run on eth0; the static rendezvous at MASTER_ADDR %s on the secondary "
			 "network runs instead, with --nnodes %ld and each pod's --node_rank",
			 v, c->addr, c->world);
		return set_val(t, prefix, "static", opt, note);
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
		char prefix[64], opt[64];

		if (a[0] != '-' || strcmp(a, "--") == 0)
			break; /* the training script and its own arguments */
		eq = strchr(a, '=');
		o = classify(a, eq ? (size_t)(eq - a) : strlen(a));
		if (o == RW_FLAG)
			continue;
		snprintf(opt, sizeof(opt), "%.*s", (int)(eq ? eq - a : (long)strlen(a)), a);
		if (eq) {
			snprintf(prefix, sizeof(prefix), "%.*s", (int)(eq - a + 1), a);
			rc = rewrite_value(st, o, opt, &ts->t[i], prefix, eq + 1);
		} else if (i + 1 < ts->n) {
			i++;
			rc = rewrite_value(st, o, opt, &ts->t[i], "", ts->t[i].val);
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

/* ---- MPI launch lines ------------------------------------------------------------ */

#define LAUNCH_FILE_MAX (1 << 20)

/* The launcher words agent_cmd_is_launcher knows but deepspeed (its own options). */
static int mpi_launcher(const char *argv0)
{
	static const char *const names[] = {"mpirun",  "mpiexec",    "orterun",
					    "prterun", "horovodrun", NULL};
	const char *b = base_name(argv0);
	size_t i, l;

	for (i = 0; names[i]; i++) {
		l = strlen(names[i]);
		if (strncmp(b, names[i], l) == 0 && (b[l] == '\0' || b[l] == '.'))
			return 1;
	}
	return 0;
}

enum mpi_opt {
	MO_FLAG,      /* no value, or not ours to know */
	MO_VALUE,     /* one value we do not touch */
	MO_VALUE2,    /* two values we do not touch (--prtemca K V) */
	MO_HOSTFILE,  /* a host file */
	MO_HOSTLIST,  /* a,b:2,c */
	MO_MCA,	      /* --mca K V (OpenMPI takes no K=V form: 4.1 reads "K=V" as the key) */
	MO_EXPORT,    /* -x NAME=V or -x NAME (OpenMPI) */
	MO_GENV,      /* -genv / -env NAME V (Hydra) */
	MO_IFACE,     /* -iface V (Hydra) */
	MO_NICS,      /* --network-interface[s] V (horovodrun) */
	MO_LOCALHOST, /* -localhost NAME (Hydra) */
};

static enum mpi_opt mpi_classify(const char *a, size_t n)
{
	static const struct {
		const char *name;
		enum mpi_opt o;
	} tab[] = {
	    {"--hostfile", MO_HOSTFILE},
	    {"-hostfile", MO_HOSTFILE},
	    {"--machinefile", MO_HOSTFILE},
	    {"-machinefile", MO_HOSTFILE},
	    {"--default-hostfile", MO_HOSTFILE},
	    {"-f", MO_HOSTFILE},
	    {"-H", MO_HOSTLIST},
	    {"--host", MO_HOSTLIST},
	    {"-host", MO_HOSTLIST},
	    {"-hosts", MO_HOSTLIST},
	    {"--hosts", MO_HOSTLIST}, /* horovodrun */
	    {"--mca", MO_MCA},
	    {"-mca", MO_MCA},
	    {"--gmca", MO_MCA},
	    {"-gmca", MO_MCA},
	    {"--prtemca", MO_VALUE2},
	    {"-env", MO_GENV},
	    {"-genv", MO_GENV},
	    {"-x", MO_EXPORT},
	    {"-iface", MO_IFACE},
	    {"--network-interface", MO_NICS},
	    {"--network-interfaces", MO_NICS},
	    {"-localhost", MO_LOCALHOST},
	};
	static const char *const values[] = {"-n",
					     "-np",
					     "--np",
					     "-c",
					     "-N",
					     "--n",
					     "-ppn",
					     "-npernode",
					     "--npernode",
					     "--map-by",
					     "-map-by",
					     "--bind-to",
					     "-bind-to",
					     "--rank-by",
					     "-rank-by",
					     "--prefix",
					     "-prefix",
					     "-wdir",
					     "--wdir",
					     "-genvlist",
					     "-envlist",
					     "-launcher",
					     "-bootstrap",
					     "-rmk",
					     "-demux",
					     "--output",
					     "--tune",
					     "-tune",
					     "--personality",
					     "-launcher-exec",
					     "-bootstrap-exec",
					     "--preload-files",
					     "-s",
					     "--stdin",
					     "-bind-to",
					     "-map-by",
					     "-binding",
					     "-gpus-per-proc",
					     NULL};
	size_t i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strlen(tab[i].name) == n && strncmp(tab[i].name, a, n) == 0)
			return tab[i].o;
	for (i = 0; values[i]; i++)
		if (strlen(values[i]) == n && strncmp(values[i], a, n) == 0)
			return MO_VALUE;
	return MO_FLAG;
}

/* The secondary address of the peer host names, or NULL (peer_index). */
static const char *peer_addr(const struct agent_rewrite_ctx *c, const char *host)
{
	long i = peer_index(c, c->hosts, c->nhosts, c->self, host);

	return i < 0 ? NULL : c->hosts[i].addr;
}

/* "host" of a "host[:N]" / "host slots=N" entry into h; the rest at *rest. */
static int split_host(const char *s, size_t len, char *h, size_t cap, const char **rest)
{
	size_t l = strcspn(s, ": \t");

	if (l > len)
		l = len;
	if (l == 0 || l >= cap)
		return -1;
	memcpy(h, s, l);
	h[l] = '\0';
	*rest = s + l;
	return 0;
}

/* Appends "addr" for host h (left as named for an IPv6 secondary); -ESRCH when h is no peer. */
static int map_host(const struct agent_rewrite_ctx *c, const char *h, char *out, size_t cap,
		    size_t *o)
{
	const char *a = peer_addr(c, h);
	size_t l;

	if (!a && strcmp(h, "localhost") != 0)
		return -ESRCH;
	if (!a || strchr(a, ':'))
		a = h; /* neither "host:N" form can carry an IPv6 address */
	l = strlen(a);
	if (*o + l >= cap)
		return -E2BIG;
	memcpy(out + *o, a, l);
	*o += l;
	return 0;
}

/* "a,b:2,c" mapped into out; -ESRCH naming no peer. */
static int map_list(const struct agent_rewrite_ctx *c, const char *v, char *out, size_t cap)
{
	const char *rest;
	char h[256];
	size_t o = 0, l;
	int rc;

	while (*v) {
		l = strcspn(v, ",");
		if (split_host(v, l, h, sizeof(h), &rest) < 0)
			return -EINVAL;
		rc = map_host(c, h, out, cap, &o);
		if (rc < 0)
			return rc;
		if (o + (size_t)(v + l - rest) + 2 >= cap)
			return -E2BIG;
		memcpy(out + o, rest, (size_t)(v + l - rest));
		o += (size_t)(v + l - rest);
		v += l;
		if (*v == ',')
			out[o++] = *v++;
	}
	out[o] = '\0';
	return 0;
}

static int read_small(const char *path, char **text)
{
	char *buf = malloc(LAUNCH_FILE_MAX + 1);
	size_t len = 0;
	ssize_t r;
	int fd, rc = 0;

	*text = NULL;
	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	while (len <= LAUNCH_FILE_MAX && (r = read(fd, buf + len, LAUNCH_FILE_MAX + 1 - len))) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		len += (size_t)r;
	}
	close(fd);
	if (rc == 0 && len > LAUNCH_FILE_MAX)
		rc = -EFBIG;
	if (rc == 0 && memchr(buf, '\0', len))
		rc = -EINVAL;
out:
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*text = buf;
	return 0;
}

/* The user's host file with every host mapped; -ESRCH naming no peer. */
static int map_file(const struct agent_rewrite_ctx *c, const char *path, char **out)
{
	char *in = NULL, *buf = NULL, h[256];
	const char *s, *nl, *rest;
	size_t o = 0, cap, lead;
	int rc;

	*out = NULL;
	rc = read_small(path, &in);
	if (rc < 0)
		return rc;
	cap = strlen(in) * 2 + 64 * 1024;
	buf = malloc(cap);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (s = in; *s && rc == 0; s = nl ? nl + 1 : s + strlen(s)) {
		nl = strchr(s, '\n');
		lead = strspn(s, " \t");
		if (s[lead] == '#' || s[lead] == '\n' || s[lead] == '\0' || s[lead] == '\r') {
			rest = s; /* comment or blank: as it is */
		} else if (split_host(s + lead, (nl ? (size_t)(nl - s) : strlen(s)) - lead, h,
				      sizeof(h), &rest) < 0) {
			rc = -EINVAL;
			break;
		} else if (o + lead >= cap - 1024) {
			rc = -E2BIG; /* the line's indentation would not fit */
			break;
		} else {
			memcpy(buf + o, s, lead);
			o += lead;
			rc = map_host(c, h, buf, cap - 1024, &o);
		}
		if (rc == 0) {
			size_t l = (nl ? (size_t)(nl - rest) + 1 : strlen(rest));

			if (o + l >= cap) {
				rc = -E2BIG;
				break;
			}
			memcpy(buf + o, rest, l);
			o += l;
		}
	}
	if (rc == 0) {
		buf[o] = '\0';
		*out = buf;
		buf = NULL;
	}
out:
	free(in);
	free(buf);
	return rc;
}

static int mpi_value(const struct agent_rewrite_ctx *c, enum mpi_opt mo, struct tok *t,
		     const char *prefix, const char *v, const char *opt)
{
	char buf[4096];
	char *text = NULL;
	int rc;

	if (mo == MO_HOSTLIST) {
		rc = map_list(c, v, buf, sizeof(buf));
		if (rc == -ESRCH)
			gx_warn("%s %s names a host that is no peer: left alone", opt, v);
		return rc == 0 ? set_val(t, prefix, buf, opt, NULL) : (rc == -ENOMEM ? rc : 0);
	}
	if (!c->launch_hostfile || !c->launch_text || *c->launch_text)
		return 0;
	rc = map_file(c, v, &text);
	if (rc < 0) {
		if (rc == -ENOMEM)
			return rc;
		gx_warn("%s %s: %s: left alone", opt, v,
			rc == -ESRCH ? "it names a host that is no peer" : strerror(-rc));
		return 0;
	}
	*c->launch_text = text;
	return set_val(t, prefix, c->launch_hostfile, opt, NULL);
}

/* ---- interface pins on an MPI launch line ---------------------------------------- */

static int toks_insert(struct toks *ts, size_t at, const char *val);

#define OVERRIDE_NOTE "--override-env: gxboot's interface replaces the user's pin"

/* gxboot's own value of var, or NULL when it sets none. */
static const char *ours(const struct agent_rewrite_ctx *c, const char *var)
{
	return env_lookup(c->ours, var, strlen(var));
}

/* The same selection, NCCL's exact-match '=' aside. */
static int same_choice(const char *a, const char *b)
{
	return strcmp(a + (*a == '='), b + (*b == '=')) == 0;
}

static void unset_add(const struct agent_rewrite_ctx *c, const char *var)
{
	size_t i;

	for (i = 0; c->unset && i < AGENT_RW_UNSET_MAX; i++) {
		if (!c->unset[i]) {
			c->unset[i] = var;
			return;
		}
		if (strcmp(c->unset[i], var) == 0)
			return;
	}
}

/*
 * The user's value v (in token t after prefix) for what gxboot sets as var, spelled
 * `what` on the line: kept with a warning naming gxboot's value when they differ, the
 * way the same variable in the environment is; --override-env puts gxboot's there.
 */
static int pin(const struct agent_rewrite_ctx *c, struct tok *t, const char *prefix, const char *v,
	       const char *var, const char *what, const char *sep)
{
	const char *g = ours(c, var);

	if (!g || same_choice(v, g))
		return 0;
	if (c->override_env)
		return set_val(t, prefix, g, what, OVERRIDE_NOTE);
	gx_warn("keeping the user's %s%s%s (gxboot chose %s; --override-env replaces it)", what,
		sep, v, g);
	return 0;
}

/*
 * --mca {btl,oob}_tcp_if_{include,exclude} V. OpenMPI refuses an include and an exclude
 * list of one framework together ("mutually-exclusive MCA variables", 4.1.4 here), so a
 * kept exclude list takes gxboot's include out of CMD's environment; --override-env turns
 * it into gxboot's include.
 */
static int mca_pin(const struct agent_rewrite_ctx *c, struct tok *key, struct tok *val,
		   const char *opt)
{
	static const char *const var[] = {"OMPI_MCA_btl_tcp_if_include",
					  "OMPI_MCA_oob_tcp_if_include"};
	const char *k = key->val, *inc, *g;
	char what[96];
	size_t i;
	int rc;

	for (i = 0; i < 2; i++) {
		inc = var[i] + 9; /* "btl_tcp_if_include" */
		if (strncmp(k, inc, 11) != 0)
			continue;
		snprintf(what, sizeof(what), "%s %s", opt, k);
		if (strcmp(k + 11, "include") == 0)
			return pin(c, val, "", val->val, var[i], what, " ");
		if (strcmp(k + 11, "exclude") != 0 || !(g = ours(c, var[i])))
			return 0;
		if (!c->override_env) {
			gx_warn(
			    "keeping the user's %s %s: OpenMPI takes an include or an exclude "
			    "list, not both, so CMD does not get gxboot's %s=%s and TCP may use "
			    "any interface not excluded, eth0 included (--override-env replaces "
			    "it with %s %s %s)",
			    what, val->val, var[i], g, opt, inc, g);
			unset_add(c, var[i]);
			return 0;
		}
		rc = set_val(key, "", inc, opt, OVERRIDE_NOTE);
		if (rc >= 0)
			rc = set_val(val, "", g, what, OVERRIDE_NOTE);
		return rc < 0 ? rc : 1;
	}
	return 0;
}
/* -x NAME=V (OpenMPI): a pin when NAME is an interface or device selection gxboot sets. */
static int export_pin(const struct agent_rewrite_ctx *c, struct tok *t, const char *opt)
{
	const char *eq = strchr(t->val, '=');
	char name[256], prefix[260], what[300];

	if (!eq || (size_t)(eq - t->val) >= sizeof(name))
		return 0; /* -x NAME hands on this environment's value: gxboot's */
	snprintf(name, sizeof(name), "%.*s", (int)(eq - t->val), t->val);
	if (!agent_env_is_selection(name))
		return 0;
	snprintf(prefix, sizeof(prefix), "%s=", name);
	snprintf(what, sizeof(what), "%s %s", opt, name);
	return pin(c, t, prefix, eq + 1, name, what, "=");
}

/* Hydra, by name or by what mpiexec / mpirun on PATH is (Debian's alternatives). */
static int hydra_launcher(const char *argv0, char **envp)
{
	const char *b = base_name(argv0), *path, *p;
	char cand[4096], *real = NULL;
	size_t l;
	int hydra = 0;

	if (strstr(b, ".hydra") || strstr(b, ".mpich"))
		return 1;
	if (strchr(argv0, '/')) {
		real = realpath(argv0, NULL);
	} else {
		path = env_lookup(envp, "PATH", 4);
		for (p = path; p && *p && !real; p += l + (p[l] == ':')) {
			l = strcspn(p, ":");
			if (l &&
			    snprintf(cand, sizeof(cand), "%.*s/%s", (int)l, p, argv0) <
				(int)sizeof(cand) &&
			    access(cand, X_OK) == 0)
				real = realpath(cand, NULL);
			if (!p[l])
				break;
		}
	}
	if (real) {
		b = base_name(real);
		hydra = strstr(b, "hydra") || strstr(b, "mpich");
	}
	free(real);
	return hydra;
}

/*
 * Hydra on an IPv6-only secondary: gxboot sets no HYDRA_IFACE there (Hydra's -iface
 * looks for an IPv4 address), so the proxies connect back to the launcher's host name,
 * which a kubelet's DNS does not resolve bare: -localhost <this pod's FQDN>.
 */
static int hydra_localhost(struct toks *ts, const struct agent_rewrite_ctx *c, int given)
{
	const char *addr = ours(c, "GXBOOT_ADDR");
	int rc;

	if (given || !addr || !strchr(addr, ':') || ours(c, "HYDRA_IFACE") ||
	    !hydra_launcher(ts->t[0].val, c->envp))
		return 0;
	if (!c->self_fqdn || !*c->self_fqdn) {
		gx_warn("%s on an IPv6-only secondary: its proxies connect back to this pod's host "
			"name, which this pod's DNS may not resolve (no subdomain known here: pass "
			"-localhost <a name they resolve>)",
			ts->t[0].val);
		return 0;
	}
	gx_info("rewrite %s: adding -localhost %s (on an IPv6-only secondary Hydra's proxies "
		"connect back to the launcher by name, and a bare host name does not resolve)",
		base_name(ts->t[0].val), c->self_fqdn);
	rc = toks_insert(ts, 1, "-localhost");
	return rc ?: toks_insert(ts, 2, c->self_fqdn) ?: 1;
}

/*
 * mpirun/mpiexec options up to the program: map the ones naming hosts (when the table is
 * known), weigh the interface pins against gxboot's choice. 1 when changed.
 */
static int rewrite_mpi(struct toks *ts, const struct agent_rewrite_ctx *c)
{
	int changed = 0, localhost = 0, rc;
	size_t i;

	if (ts->n == 0 || !mpi_launcher(ts->t[0].val))
		return 0;
	for (i = 1; i < ts->n; i++) {
		char *a = ts->t[i].val, *eq, prefix[64], what[300];
		enum mpi_opt mo;

		if (a[0] != '-' || strcmp(a, "--") == 0 || strcmp(a, ":") == 0)
			break; /* the program and its own arguments */
		eq = a[1] == '-' ? strchr(a, '=') : NULL;
		mo = mpi_classify(a, eq ? (size_t)(eq - a) : strlen(a));
		rc = 0;
		if (mo == MO_FLAG)
			continue;
		if (mo == MO_VALUE || mo == MO_VALUE2 || mo == MO_LOCALHOST || eq) {
			if (mo == MO_HOSTFILE || mo == MO_HOSTLIST) {
				snprintf(prefix, sizeof(prefix), "%.*s", (int)(eq - a + 1), a);
				rc = c->nhosts ? mpi_value(c, mo, &ts->t[i], prefix, eq + 1, prefix)
					       : 0;
			} else if (mo == MO_NICS) { /* horovodrun is argparse: --opt=V */
				snprintf(prefix, sizeof(prefix), "%.*s", (int)(eq - a + 1), a);
				snprintf(what, sizeof(what), "%.*s", (int)(eq - a), a);
				rc = pin(c, &ts->t[i], prefix, eq + 1, "HOROVOD_GLOO_IFACE", what,
					 "=");
			} else {
				localhost |= mo == MO_LOCALHOST;
				i += eq ? (mo == MO_VALUE2) : (size_t)(mo == MO_VALUE2 ? 2 : 1);
			}
		} else if (i + 1 >= ts->n) {
			break;
		} else if (mo == MO_MCA || mo == MO_GENV) {
			if (i + 2 >= ts->n)
				break;
			if (mo == MO_MCA) {
				rc = mca_pin(c, &ts->t[i + 1], &ts->t[i + 2], a);
			} else if (agent_env_is_selection(ts->t[i + 1].val)) {
				snprintf(what, sizeof(what), "%s %s", a, ts->t[i + 1].val);
				rc = pin(c, &ts->t[i + 2], "", ts->t[i + 2].val, ts->t[i + 1].val,
					 what, " ");
			}
			i += 2;
		} else if (mo == MO_EXPORT) {
			rc = export_pin(c, &ts->t[++i], a);
		} else if (mo == MO_IFACE || mo == MO_NICS) {
			rc = pin(c, &ts->t[i + 1], "", ts->t[i + 1].val,
				 mo == MO_IFACE ? "HYDRA_IFACE" : "HOROVOD_GLOO_IFACE", a, " ");
			i++;
		} else {
			i++;
			rc = c->nhosts ? mpi_value(c, mo, &ts->t[i], "", ts->t[i].val, a) : 0;
		}
		if (rc < 0)
			return rc;
		changed |= rc;
	}
	rc = hydra_localhost(ts, c, localhost);
	return rc < 0 ? rc : changed | rc;
}

/* ---- DeepSpeed's launcher -------------------------------------------------------- */

static int toks_insert(struct toks *ts, size_t at, const char *val)
{
	int rc = toks_push(ts, val, strlen(val), val);
	struct tok t;

	if (rc < 0)
		return rc;
	t = ts->t[ts->n - 1];
	t.changed = 1; /* sh -c: quoted when joined */
	memmove(&ts->t[at + 1], &ts->t[at], (ts->n - 1 - at) * sizeof(t));
	ts->t[at] = t;
	return 0;
}

/* Index of the first deepspeed option, or -1. */
static int deepspeed_start(const struct toks *ts)
{
	size_t i;

	if (ts->n == 0)
		return -1;
	if (strcmp(base_name(ts->t[0].val), "deepspeed") == 0)
		return 1;
	if (strncmp(base_name(ts->t[0].val), "python", 6) != 0)
		return -1;
	for (i = 1; i + 1 < ts->n; i++)
		if (strcmp(ts->t[i].val, "-m") == 0)
			return strcmp(ts->t[i + 1].val, "deepspeed.launcher.runner") == 0
				   ? (int)i + 2
				   : -1;
	return -1;
}

enum ds_opt {
	DS_FLAG,
	DS_VALUE,
	DS_HOSTFILE,
	DS_MASTER,
	DS_LAUNCHER,
	DS_LARGS
};

static enum ds_opt ds_classify(const char *a, size_t n)
{
	static const struct {
		const char *name;
		enum ds_opt o;
	} tab[] = {
	    {"--hostfile", DS_HOSTFILE},
	    {"-H", DS_HOSTFILE},
	    {"--master_addr", DS_MASTER},
	    {"--launcher", DS_LAUNCHER},
	    {"--launcher_args", DS_LARGS},
	    {"--include", DS_VALUE},
	    {"-i", DS_VALUE},
	    {"--exclude", DS_VALUE},
	    {"-e", DS_VALUE},
	    {"--num_nodes", DS_VALUE},
	    {"--min_elastic_nodes", DS_VALUE},
	    {"--max_elastic_nodes", DS_VALUE},
	    {"--num_gpus", DS_VALUE},
	    {"--num_accelerators", DS_VALUE},
	    {"--master_port", DS_VALUE},
	    {"--ssh_port", DS_VALUE},
	    {"--autotuning", DS_VALUE},
	    {"--bind_core_list", DS_VALUE},
	    {"--enable_each_rank_log", DS_VALUE},
	    {"--venv_script", DS_VALUE},
	    {"--comment", DS_VALUE},
	    {"--account", DS_VALUE},
	};
	size_t i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strlen(tab[i].name) == n && strncmp(tab[i].name, a, n) == 0)
			return tab[i].o;
	return DS_FLAG;
}

/* The first host of a translated host file, into h. */
static void first_host(const char *text, char *h, size_t cap)
{
	const char *s = text;

	h[0] = '\0';
	while (*s) {
		s += strspn(s, " \t");
		if (*s != '#' && *s != '\n' && *s != '\r') {
			size_t l = strcspn(s, " \t\r\n:");

			if (l < cap)
				snprintf(h, cap, "%.*s", (int)l, s);
			return;
		}
		s += strcspn(s, "\n");
		s += *s == '\n';
	}
}

/* The user's btl_tcp_if_include inside --launcher_args (cur, in t after pre): a pin, kept
 * with a warning or replaced under --override-env like one on mpirun's own line. */
static int ds_pin(const struct agent_rewrite_ctx *c, struct tok *t, const char *pre,
		  const char *cur, const char *iface)
{
	const char *vs = strstr(cur, "btl_tcp_if_include") + 18, *ve;
	char *full = NULL;
	int rc;

	vs += strspn(vs, " \t");
	ve = vs + strcspn(vs, " \t");
	if ((size_t)(ve - vs) == strlen(iface) && strncmp(vs, iface, (size_t)(ve - vs)) == 0)
		return 0;
	if (!c->override_env) {
		gx_warn("keeping the user's btl_tcp_if_include %.*s in deepspeed --launcher_args "
			"(gxboot chose %s; --override-env replaces it)",
			(int)(ve - vs), vs, iface);
		return 0;
	}
	if (asprintf(&full, "%.*s%s%s", (int)(vs - cur), cur, iface, ve) < 0)
		return -ENOMEM;
	rc = set_val(t, pre, full, "deepspeed --launcher_args", OVERRIDE_NOTE);
	free(full);
	return rc;
}

/* --launcher openmpi: "--mca btl_tcp_if_include IFACE" joins --launcher_args (at largs, or
 * added before the script), unless the user's args name that parameter already (ds_pin). */
static int ds_launcher_args(const struct agent_rewrite_ctx *c, struct toks *ts, ssize_t largs,
			    size_t script, const char *iface, int *changed)
{
	const char *cur, *pre = "";
	char *full = NULL;
	char add[96];
	int rc;

	snprintf(add, sizeof(add), "--mca btl_tcp_if_include %s", iface);
	if (largs < 0) {
		gx_info("rewrite deepspeed: adding --launcher_args '%s'", add);
		rc = toks_insert(ts, script, "--launcher_args");
		rc = rc ?: toks_insert(ts, script + 1, add);
		*changed = 1;
		return rc;
	}
	cur = ts->t[largs].val;
	if (strncmp(cur, "--launcher_args=", 16) == 0) {
		pre = "--launcher_args=";
		cur += 16;
	}
	if (strstr(cur, "btl_tcp_if_include")) {
		rc = ds_pin(c, &ts->t[largs], pre, cur, iface);
		*changed |= rc > 0;
		return rc < 0 ? rc : 0;
	}
	if (asprintf(&full, "%s%s%s", cur, *cur ? " " : "", add) < 0)
		return -ENOMEM;
	rc = set_val(&ts->t[largs], pre, full, "deepspeed --launcher_args", NULL);
	free(full);
	if (rc > 0)
		*changed = 1;
	return rc < 0 ? rc : 0;
}

static int rewrite_deepspeed(struct toks *ts, int start, const struct agent_rewrite_ctx *c)
{
	ssize_t master = -1, largs = -1, script = -1;
	int changed = 0, openmpi = 0, rc = 0;
	char *eq, prefix[64], h[64];
	size_t i;

	for (i = (size_t)start; i < ts->n && rc >= 0; i++) {
		char *a = ts->t[i].val;
		enum ds_opt o;
		struct tok *t;
		const char *v, *pa;

		if (a[0] != '-') {
			script = (ssize_t)i;
			break;
		}
		eq = a[1] == '-' ? strchr(a, '=') : NULL;
		o = ds_classify(a, eq ? (size_t)(eq - a) : strlen(a));
		if (o == DS_FLAG)
			continue;
		if (!eq && i + 1 >= ts->n)
			break;
		t = eq ? &ts->t[i] : &ts->t[++i];
		v = eq ? eq + 1 : t->val;
		snprintf(prefix, sizeof(prefix), "%.*s", eq ? (int)(eq - a + 1) : 0, a);
		if (o == DS_HOSTFILE) {
			rc = mpi_value(c, MO_HOSTFILE, t, prefix, v, "deepspeed --hostfile");
		} else if (o == DS_MASTER) {
			master = (ssize_t)i;
			pa = peer_addr(c, v);
			if (pa && !strchr(pa, ':'))
				rc = set_val(t, prefix, pa, "deepspeed --master_addr", NULL);
		} else if (o == DS_LAUNCHER) {
			openmpi = strcmp(v, "openmpi") == 0;
		} else if (o == DS_LARGS) {
			largs = (ssize_t)i;
		}
		changed |= rc > 0;
		rc = rc < 0 ? rc : 0;
	}
	if (rc < 0)
		return rc;
	if (script < 0)
		return 0; /* no user script: not a launch */
	if (master < 0 && c->launch_text && *c->launch_text) {
		char opt[96], a[64];

		first_host(*c->launch_text, h, sizeof(h));
		if (h[0] && gx_addr_normalize(h, a, sizeof(a)) == 0 && !strchr(a, ':')) {
			snprintf(opt, sizeof(opt), "--master_addr=%s", a);
			gx_info("rewrite deepspeed: adding %s (rank 0's secondary address)", opt);
			rc = toks_insert(ts, (size_t)script++, opt);
			changed = 1;
		}
	}
	if (rc == 0 && openmpi && c->iface && gx_valid_ifname(c->iface))
		rc = ds_launcher_args(c, ts, largs, (size_t)script, c->iface, &changed);
	return rc < 0 ? rc : changed;
}

/* torchrun in ts: rewrite what we own; 1 when changed (and nothing named a foreign host). */
static int rewrite_toks(struct toks *ts, const struct agent_rewrite_ctx *c)
{
	struct rw_state st = {.c = c};
	int start = torchrun_start(ts), rc;

	if (start < 0 && c->nhosts && deepspeed_start(ts) > 0)
		return rewrite_deepspeed(ts, deepspeed_start(ts), c);
	if (start < 0)
		return rewrite_mpi(ts, c);
	rc = rewrite_opts(ts, start, &st);
	if (rc < 0 || st.foreign)
		return rc < 0 ? rc : 0; /* a line for another host stays as written */
	if (st.refuse[0]) {
		if (c->err)
			snprintf(c->err, c->errlen, "%s", st.refuse);
		return GX_EUSAGE;
	}
	return st.changed;
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
	log_changes(&ts);
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
	log_changes(&ts);
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
