/* SPDX-License-Identifier: MIT */
/*
 * opts.c - table-driven option parsing for every command gxboot has (what
 * --help and gxboot.1 describe).
 * Each option also reads GXBOOT_<NAME> (upper case, '-' -> '_'); a flag wins.
 */
#include "agent/agent.h"
#include "agent/cli/cli_int.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

enum opt_type {
	OT_STR,	   /* --x VALUE */
	OT_PORT,   /* 1..65535 */
	OT_LONG,   /* >= 1 */
	OT_BOOL,   /* flag; env takes 1/true/yes 0/false/no */
	OT_ENUM,   /* one of names[] */
	OT_NNODES, /* N | MIN:MAX */
	OT_FRAC,   /* a fraction in (0, 1) */
};

struct opt_def {
	const char *name; /* without leading "--" */
	enum opt_type type;
	size_t off;
	const char *const *names; /* OT_ENUM: values in enum order */
	long max;
};

#define OFF(f) offsetof(struct agent_opts, f)

static const char *const rdma_names[] = {"auto", "require", "off", NULL};
static const char *const hf_names[] = {"", "openmpi", "mpich", "horovod", NULL};
static const char *const mode_names[] = {"", "star", "all", "sampled", NULL};
static const char *const ray_names[] = {"", "head", "worker", NULL};
static const char *const fabric_names[] = {"", "secondary", "rdma", "off", NULL};
static const char *const shape_names[] = {"ring", "all", NULL};

static const struct opt_def opt_defs[] = {
    {"peers", OT_STR, OFF(peers), NULL, 0},
    {"nnodes", OT_NNODES, 0, NULL, 0},
    {"self", OT_STR, OFF(self), NULL, 0},
    {"job-id", OT_STR, OFF(job_id), NULL, 0},
    {"port", OT_PORT, OFF(port), NULL, 0},
    {"check-port", OT_PORT, OFF(check_port), NULL, 0},
    {"timeout", OT_LONG, OFF(timeout), NULL, 31536000},
    {"token-file", OT_STR, OFF(token_file), NULL, 0},
    {"require-token", OT_BOOL, OFF(require_token), NULL, 0},
    {"dns-server", OT_STR, OFF(dns_server), NULL, 0},
    {"full-table", OT_BOOL, OFF(full_table), NULL, 0},
    {"dry-run", OT_BOOL, OFF(dry_run), NULL, 0},
    {"elastic", OT_BOOL, OFF(elastic), NULL, 0},
    {"ray", OT_ENUM, OFF(ray), ray_names, 0},
    {"iface", OT_STR, OFF(iface), NULL, 0},
    {"network", OT_STR, OFF(network), NULL, 0},
    {"network-status", OT_STR, OFF(network_status), NULL, 0},
    {"allow-primary", OT_BOOL, OFF(allow_primary), NULL, 0},
    {"rdma", OT_ENUM, OFF(rdma), rdma_names, 0},
    {"rdma-dev", OT_STR, OFF(rdma_dev), NULL, 0},
    {"rails", OT_STR, OFF(rails), NULL, 0},
    {"out", OT_STR, OFF(out), NULL, 0},
    {"master-port", OT_PORT, OFF(master_port), NULL, 0},
    {"slots", OT_LONG, OFF(slots), NULL, 1 << 20},
    {"hostfile-format", OT_ENUM, OFF(hostfile_format), hf_names, 0},
    {"override-env", OT_BOOL, OFF(override_env), NULL, 0},
    {"no-rewrite", OT_BOOL, OFF(no_rewrite), NULL, 0},
    {"supervise", OT_BOOL, OFF(supervise), NULL, 0},
    {"serve", OT_BOOL, OFF(serve), NULL, 0},
    {"expect-fabric", OT_ENUM, OFF(expect_fabric), fabric_names, 0},
    {"preflight", OT_BOOL, OFF(preflight), NULL, 0},
    {"preflight-bytes", OT_LONG, OFF(preflight_bytes), NULL, 64L << 20},
    {"preflight-slow", OT_FRAC, OFF(preflight_slow), NULL, 0},
    {"preflight-shape", OT_ENUM, OFF(preflight_shape), shape_names, 0},
    {"preflight-settle", OT_LONG, OFF(preflight_settle), NULL, 600},
    {"mode", OT_ENUM, OFF(check_mode), mode_names, 0},
    {"size", OT_LONG, OFF(size), NULL, 1L << 30},
    {"report", OT_STR, OFF(report), NULL, 0},
    {"sample", OT_LONG, OFF(sample), NULL, 64},
    {"json", OT_BOOL, OFF(json), NULL, 0},
};
_Static_assert(sizeof(opt_defs) / sizeof(opt_defs[0]) <= 64, "options given: a 64-bit mask");

/*
 * Which commands take an option given as a flag (an option a command would
 * ignore is a usage error naming the commands that take it, so a misplaced one is
 * not silently dropped). GXBOOT_*
 * variables are pod-wide (an init container and the main container share
 * them), so only flags are checked. An option not listed here is taken by all.
 */
#define CMD_BIT(c) (1u << AGENT_CMD_##c)
#define CMDS_MEET (CMD_BIT(RUN) | CMD_BIT(INIT) | CMD_BIT(SERVE) | CMD_BIT(CHECK) | CMD_BIT(HOSTS))
#define CMDS_NET                                                                                   \
	(CMD_BIT(RUN) | CMD_BIT(INIT) | CMD_BIT(SERVE) | CMD_BIT(CHECK) | CMD_BIT(NETDETECT))
#define CMDS_FILES (CMD_BIT(RUN) | CMD_BIT(INIT) | CMD_BIT(SERVE))

static const struct {
	const char *name;
	unsigned cmds;
} opt_cmds[] = {
    {"peers", CMDS_MEET},
    {"nnodes", CMDS_MEET},
    {"self", CMDS_MEET},
    {"job-id", CMDS_MEET},
    {"port", CMDS_MEET},
    {"check-port", CMD_BIT(CHECK)},
    {"timeout", CMDS_MEET},
    {"token-file", CMDS_MEET},
    {"require-token", CMDS_MEET},
    {"dns-server", CMDS_MEET},
    {"full-table", CMDS_FILES | CMD_BIT(CHECK)},
    {"dry-run", CMDS_FILES | CMD_BIT(CHECK)},
    {"elastic", CMDS_MEET},
    {"ray", CMDS_MEET},
    {"iface", CMDS_NET},
    {"network", CMDS_NET},
    {"network-status", CMDS_NET},
    {"allow-primary", CMDS_NET},
    {"rdma", CMDS_NET},
    {"rdma-dev", CMDS_NET},
    {"rails", CMDS_NET},
    {"out", CMDS_FILES | CMD_BIT(EXEC) | CMD_BIT(HOSTS) | CMD_BIT(RSH)},
    {"master-port", CMDS_FILES},
    {"slots", CMDS_FILES | CMD_BIT(HOSTS)},
    {"hostfile-format", CMDS_FILES | CMD_BIT(HOSTS)},
    {"override-env", CMDS_FILES | CMD_BIT(EXEC)},
    {"no-rewrite", CMD_BIT(RUN)},
    {"supervise", CMD_BIT(RUN) | CMD_BIT(SERVE)},
    {"serve", CMD_BIT(RUN) | CMD_BIT(INIT) | CMD_BIT(SERVE)},
    {"expect-fabric", CMD_BIT(RUN) | CMD_BIT(SERVE)},
    {"preflight", CMDS_FILES},
    {"preflight-bytes", CMDS_FILES},
    {"preflight-slow", CMDS_FILES},
    {"preflight-shape", CMDS_FILES},
    {"preflight-settle", CMDS_FILES},
    {"mode", CMD_BIT(CHECK)},
    {"size", CMD_BIT(CHECK)},
    {"report", CMD_BIT(CHECK)},
    {"sample", CMD_BIT(CHECK)},
    {"json", CMD_BIT(NETDETECT) | CMD_BIT(CHECK)},
};

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen, const char *fmt,
							  ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int parse_nnodes(const char *v, struct agent_opts *o)
{
	char buf[64];
	char *colon;
	long a, b;

	if (gx_strlcpy(buf, v, sizeof(buf)) < 0)
		return -EINVAL;
	colon = strchr(buf, ':');
	if (!colon) {
		if (gx_parse_long(buf, 1, 1 << 20, &a) < 0)
			return -EINVAL;
		o->nnodes_min = o->nnodes_max = a;
		return 0;
	}
	*colon = '\0';
	if (gx_parse_long(buf, 1, 1 << 20, &a) < 0 ||
	    gx_parse_long(colon + 1, 1, 1 << 20, &b) < 0 || a > b)
		return -EINVAL;
	o->nnodes_min = a;
	o->nnodes_max = b;
	return 0;
}

static int parse_enum(const struct opt_def *d, const char *v, int *out)
{
	int i;

	for (i = 0; d->names[i]; i++) {
		if (d->names[i][0] && strcmp(d->names[i], v) == 0) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Apply value v to option d. from_env: booleans take a value. */
static int apply(const struct opt_def *d, const char *v, struct agent_opts *o)
{
	char *base = (char *)o;
	long l = 0;
	int b = 0;

	switch (d->type) {
	case OT_STR:
		if (!*v)
			return -EINVAL;
		*(const char **)(base + d->off) = v;
		return 0;
	case OT_PORT:
		if (gx_parse_long(v, 1, 65535, &l) < 0)
			return -EINVAL;
		*(long *)(base + d->off) = l;
		return 0;
	case OT_LONG:
		if (gx_parse_long(v, 1, d->max, &l) < 0)
			return -EINVAL;
		*(long *)(base + d->off) = l;
		return 0;
	case OT_BOOL:
		if (gx_parse_bool(v, &b) < 0)
			return -EINVAL;
		*(int *)(base + d->off) = b;
		return 0;
	case OT_ENUM:
		if (parse_enum(d, v, &b) < 0)
			return -EINVAL;
		*(int *)(base + d->off) = b;
		return 0;
	case OT_NNODES:
		return parse_nnodes(v, o);
	case OT_FRAC: {
		char *end = NULL;
		double f = strtod(v, &end);

		if (!*v || *end || !(f > 0 && f < 1))
			return -EINVAL;
		*(double *)(base + d->off) = f;
		return 0;
	}
	}
	return -EINVAL;
}

static const char *env_get(char **envp, const char *name)
{
	size_t n = strlen(name);
	char **e;

	for (e = envp; e && *e; e++) {
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	}
	return NULL;
}

static void env_name(const char *opt, char *buf, size_t len)
{
	size_t i, j;

	j = (size_t)snprintf(buf, len, "GXBOOT_");
	for (i = 0; opt[i] && j + 1 < len; i++, j++)
		buf[j] = opt[i] == '-'
			     ? '_'
			     : (char)(opt[i] >= 'a' && opt[i] <= 'z' ? opt[i] - 32 : opt[i]);
	buf[j] = '\0';
}

static int apply_env(char **envp, struct agent_opts *o, char *err, size_t errlen)
{
	char name[64];
	const char *v;
	size_t i;

	for (i = 0; i < sizeof(opt_defs) / sizeof(opt_defs[0]); i++) {
		env_name(opt_defs[i].name, name, sizeof(name));
		v = env_get(envp, name);
		if (!v || (!*v && opt_defs[i].type != OT_STR))
			continue;
		if (!*v)
			continue; /* an empty string variable means "not set" */
		if (apply(&opt_defs[i], v, o) < 0) {
			set_err(err, errlen, "invalid value for %s: '%s'", name, v);
			return GX_EUSAGE;
		}
	}
	/* the older spelling kept working: GXBOOT_REQUIRE_RDMA=1 == --rdma require */
	v = env_get(envp, "GXBOOT_REQUIRE_RDMA");
	if (v && *v) {
		int b = 0;

		if (gx_parse_bool(v, &b) < 0) {
			set_err(err, errlen, "invalid value for %s: '%s'", "GXBOOT_REQUIRE_RDMA",
				v);
			return GX_EUSAGE;
		}
		if (b)
			o->rdma = AGENT_RDMA_REQUIRE;
	}
	return 0;
}

static const struct opt_def *find_opt(const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(opt_defs) / sizeof(opt_defs[0]); i++) {
		if (strlen(opt_defs[i].name) == n && strncmp(opt_defs[i].name, name, n) == 0)
			return &opt_defs[i];
	}
	return NULL;
}

static enum agent_cmd find_cmd(const char *s)
{
	int i;

	for (i = AGENT_CMD_INIT; i <= AGENT_CMD_HELP; i++) {
		if (strcmp(agent_cmd_name((enum agent_cmd)i), s) == 0)
			return (enum agent_cmd)i;
	}
	return AGENT_CMD_NONE;
}

/* One "--name[=value]" (or -v/-q/-h) at argv[*i]; advances *i past its value. */
static int parse_flag(int argc, char **argv, int *i, struct agent_opts *o, uint64_t *given,
		      char *err, size_t errlen)
{
	const char *a = argv[*i], *name, *eq, *v;
	const struct opt_def *d;

	if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
		o->verbosity++;
		return 0;
	}
	if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
		o->verbosity--;
		return 0;
	}
	if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
		o->help = 1;
		return 0;
	}
	if (strcmp(a, "--version") == 0) {
		o->cmd = AGENT_CMD_VERSION;
		return 0;
	}
	if (strcmp(a, "--require-rdma") == 0) {
		o->rdma = AGENT_RDMA_REQUIRE;
		*given |= 1ull << (find_opt("rdma", 4) - opt_defs);
		return 0;
	}
	if (strncmp(a, "--", 2) != 0) {
		set_err(err, errlen, "unknown option '%s'", a);
		return GX_EUSAGE;
	}
	name = a + 2;
	eq = strchr(name, '=');
	d = find_opt(name, eq ? (size_t)(eq - name) : strlen(name));
	if (!d) {
		set_err(err, errlen, "unknown option '%s' (see --help)", a);
		return GX_EUSAGE;
	}
	*given |= 1ull << (d - opt_defs);
	if (d->type == OT_BOOL && !eq) {
		*(int *)((char *)o + d->off) = 1;
		return 0;
	}
	/* a bare --rails (check --rails --json) means auto */
	if (!eq && strcmp(d->name, "rails") == 0 &&
	    (*i + 1 >= argc || argv[*i + 1][0] == '-' || find_cmd(argv[*i + 1]) != AGENT_CMD_NONE))
		return apply(d, "auto", o) < 0 ? GX_EUSAGE : 0;
	if (eq) {
		v = eq + 1;
	} else {
		if (*i + 1 >= argc) {
			set_err(err, errlen, "option '%s' needs a value", a);
			return GX_EUSAGE;
		}
		v = argv[++*i];
	}
	if (apply(d, v, o) < 0) {
		set_err(err, errlen, "invalid value for --%s: '%s'", d->name, v);
		return GX_EUSAGE;
	}
	return 0;
}

static void set_defaults(struct agent_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->port = 29410;
	o->timeout = 600;
	o->out = "/run/gxboot";
	o->master_port = 29500;
	o->size = 65536;
}

/* Positional words: the command, install DIR, rsh HOST CMD..., "--" CMD... */
static int parse_positional(int argc, char **argv, int *i, struct agent_opts *o, char *err,
			    size_t errlen)
{
	const char *a = argv[*i];
	enum agent_cmd c;

	if (o->cmd == AGENT_CMD_NONE && (c = find_cmd(a)) != AGENT_CMD_NONE) {
		o->cmd = c;
		return 0;
	}
	if (o->cmd == AGENT_CMD_INSTALL && !o->install_dir) {
		o->install_dir = a;
		return 0;
	}
	/* "help run" too: the run command has no word of its own on the command line */
	if (o->cmd == AGENT_CMD_HELP && o->install_dir == NULL &&
	    (find_cmd(a) != AGENT_CMD_NONE || strcmp(a, agent_cmd_name(AGENT_CMD_RUN)) == 0)) {
		o->install_dir = a; /* "help CMD": reuse the slot for the topic */
		return 0;
	}
	if (o->cmd == AGENT_CMD_RSH && !o->rsh_host) {
		o->rsh_host = a;
		o->argv = argv + *i + 1;
		o->argc = argc - *i - 1;
		*i = argc;
		return 0;
	}
	if (o->cmd == AGENT_CMD_NONE || o->cmd == AGENT_CMD_RUN || o->cmd == AGENT_CMD_EXEC)
		set_err(err, errlen, "unexpected argument '%s': put '--' before the command to run",
			a);
	else
		set_err(err, errlen, "unexpected argument '%s' for '%s'", a,
			agent_cmd_name(o->cmd));
	(void)argc;
	return GX_EUSAGE;
}

/* rsh takes ssh's flags and ignores them: launchers call their rsh agent as they call ssh. */
static int skip_ssh_flag(int argc, char **argv, int *i)
{
	const char *a = argv[*i];

	if (a[0] != '-' || a[1] == '-' || a[1] == '\0')
		return 0;
	/* flags with a value: -o X, -p N, -l USER, -i FILE, -F FILE, -E, -S, -b, -c, -m, ... */
	if (strchr("bcDEeFIiJLlmOopQRSWw", a[1]) && a[2] == '\0' && *i + 1 < argc)
		++*i;
	return 1;
}

static unsigned opt_takers(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(opt_cmds) / sizeof(opt_cmds[0]); i++)
		if (strcmp(opt_cmds[i].name, name) == 0)
			return opt_cmds[i].cmds;
	return ~0u;
}

/* "netdetect, check" for the commands in mask into buf. */
static void cmd_list(unsigned mask, char *buf, size_t len)
{
	size_t off = 0;
	int c, n;

	buf[0] = '\0';
	for (c = AGENT_CMD_RUN; c <= AGENT_CMD_HOSTS && off < len; c++) {
		if (!(mask & (1u << c)))
			continue;
		n = snprintf(buf + off, len - off, "%s%s", off ? ", " : "", agent_cmd_name(c));
		off += n > 0 ? (size_t)n : 0;
	}
}

/* A flag the command would ignore is a usage error (--help and help take any). */
static int check_taken(const struct agent_opts *o, uint64_t given, char *err, size_t errlen)
{
	char name[64], takers[128];
	unsigned mask;
	size_t i;

	if (o->help || o->cmd == AGENT_CMD_HELP || o->cmd == AGENT_CMD_VERSION)
		return 0;
	for (i = 0; i < sizeof(opt_defs) / sizeof(opt_defs[0]); i++) {
		mask = opt_takers(opt_defs[i].name);
		if (!(given & (1ull << i)) || (mask & (1u << o->cmd)))
			continue;
		snprintf(name, sizeof(name), "--%s", opt_defs[i].name);
		cmd_list(mask, takers, sizeof(takers));
		snprintf(err, errlen, "'%s' does not take %s (it is an option of: %s)",
			 o->cmd == AGENT_CMD_RUN ? "gxboot -- CMD" : agent_cmd_name(o->cmd), name,
			 takers);
		return GX_EUSAGE;
	}
	return 0;
}

static int check_combination(struct agent_opts *o, char *err, size_t errlen)
{
	if ((o->cmd == AGENT_CMD_RUN) && o->argc == 0 && !o->help && !o->dry_run) {
		set_err(err, errlen, "no command to run: use 'gxboot [OPTIONS] -- CMD [ARGS...]'");
		return GX_EUSAGE;
	}
	if (o->cmd == AGENT_CMD_EXEC && o->argc == 0 && !o->help) {
		set_err(err, errlen, "no command: use 'gxboot exec [--out DIR] -- CMD [ARGS...]'");
		return GX_EUSAGE;
	}
	if (o->cmd != AGENT_CMD_RUN && o->cmd != AGENT_CMD_EXEC && o->cmd != AGENT_CMD_RSH &&
	    o->argc > 0) {
		set_err(err, errlen, "'%s' takes no command after '--'", agent_cmd_name(o->cmd));
		return GX_EUSAGE;
	}
	if (o->cmd == AGENT_CMD_INSTALL && !o->install_dir && !o->help) {
		set_err(err, errlen, "usage: gxboot install DIR");
		return GX_EUSAGE;
	}
	if (o->cmd == AGENT_CMD_RSH && (!o->rsh_host || o->argc == 0) && !o->help) {
		set_err(err, errlen, "usage: gxboot rsh HOST CMD...");
		return GX_EUSAGE;
	}
	if (o->serve)
		o->supervise = 1;
	return 0;
}

int agent_opts_parse(int argc, char **argv, char **envp, struct agent_opts *o, char *err,
		     size_t errlen)
{
	uint64_t given = 0;
	int i, rc;

	set_defaults(o);
	err[0] = '\0';
	rc = apply_env(envp ? envp : environ, o, err, errlen);
	if (rc < 0)
		return rc;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			o->argv = argv + i + 1;
			o->argc = argc - i - 1;
			break;
		}
		if (o->cmd == AGENT_CMD_RSH && !o->rsh_host && skip_ssh_flag(argc, argv, &i))
			continue;
		if (a[0] == '-' && a[1] != '\0')
			rc = parse_flag(argc, argv, &i, o, &given, err, errlen);
		else
			rc = parse_positional(argc, argv, &i, o, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (o->cmd == AGENT_CMD_NONE)
		o->cmd = o->help && o->argc == 0 ? AGENT_CMD_HELP : AGENT_CMD_RUN;
	rc = check_taken(o, given, err, errlen);
	if (rc < 0)
		return rc;
	return check_combination(o, err, errlen);
}
