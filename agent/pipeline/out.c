/* SPDX-License-Identifier: MIT */
/*
 * out.c - the environment handed to CMD (README.md "The interface"): gxboot's variable
 * set, the rules against the user's own variables, the envp for execve, and
 * the env file in both directions (writer; strict reader for `gxboot exec`,
 * no shell involved).
 *
 * OpenMPI spells the default hostfile differently by major version
 * (both are set, checked in each one's source): 4.x registers orte_default_hostfile
 * (ompi_info 4.1.4 here: "MCA orte base: parameter orte_default_hostfile"), 5.x moved it to PRRTE
 * as prte_default_hostfile (read from PRTE_MCA_*; OMPI_MCA_* is also forwarded by its ompi schizo).
 * All three are set.
 */
#include "agent/pipeline/out_int.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#define VALUE_MAX 65536
#define VARS_MAX 4096

/* ---- the list ------------------------------------------------------------- */

int agent_env_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 255 || !(s[0] == '_' || ((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z')))
		return 0;
	for (i = 1; i < len; i++) {
		char c = s[i];

		if (!(c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z')))
			return 0;
	}
	return 1;
}

static struct agent_kv *find(const struct agent_env *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		if (strcmp(e->v[i].name, name) == 0)
			return &e->v[i];
	return NULL;
}

int agent_env_set(struct agent_env *e, const char *name, const char *value)
{
	struct agent_kv *kv = find(e, name);
	char *v;

	if (!agent_env_name_ok(name, strlen(name)) || !value)
		return -EINVAL;
	v = strdup(value);
	if (!v)
		return -ENOMEM;
	if (kv) {
		free(kv->value);
		kv->value = v;
		return 0;
	}
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 32;
		struct agent_kv *nv = realloc(e->v, cap * sizeof(*nv));

		if (!nv) {
			free(v);
			return -ENOMEM;
		}
		e->v = nv;
		e->cap = cap;
	}
	e->v[e->n].name = strdup(name);
	if (!e->v[e->n].name) {
		free(v);
		return -ENOMEM;
	}
	e->v[e->n++].value = v;
	return 0;
}

int agent_env_unset(struct agent_env *e, const char *name)
{
	struct agent_kv *kv;
	int rc = agent_env_set(e, name, "");

	kv = rc == 0 ? find(e, name) : NULL;
	if (kv) {
		free(kv->value);
		kv->value = NULL;
	}
	return rc;
}

const char *agent_env_get(const struct agent_env *e, const char *name)
{
	struct agent_kv *kv = find(e, name);

	return kv ? kv->value : NULL;
}

void agent_env_free(struct agent_env *e)
{
	size_t i;

	for (i = 0; i < e->n; i++) {
		free(e->v[i].name);
		free(e->v[i].value);
	}
	free(e->v);
	memset(e, 0, sizeof(*e));
}

/* ---- gxboot's set -------------------------------------------------------------- */

/* "DEV[:PORT][,DEV[:PORT]...]" with valid RDMA device names and ports 1..255. */
static int rails_ok(const char *s)
{
	char dev[64];
	size_t l, d;
	long port;

	do {
		l = strcspn(s, ",");
		d = strcspn(s, ":,");
		if (d == 0 || d >= sizeof(dev))
			return 0;
		memcpy(dev, s, d);
		dev[d] = '\0';
		if (!gx_valid_rdmadev(dev))
			return 0;
		if (d < l) {
			char num[8];

			if (l - d - 1 >= sizeof(num))
				return 0;
			memcpy(num, s + d + 1, l - d - 1);
			num[l - d - 1] = '\0';
			if (gx_parse_long(num, 1, 255, &port) < 0)
				return 0;
		}
		s += l;
	} while (*s++ == ',');
	return 1;
}

static int check_input(const struct agent_env_input *in, char *err, size_t errlen)
{
	char a[64], b[64];

	if (!in->master_addr || gx_addr_normalize(in->master_addr, a, sizeof(a)) < 0 ||
	    (!in->addr && !in->observer) ||
	    (in->addr && gx_addr_normalize(in->addr, b, sizeof(b)) < 0)) {
		snprintf(err, errlen, "invalid master or own address for the environment");
		return GX_EUSAGE;
	}
	if (!gx_valid_ifname(in->iface) || in->master_port < 1 || in->master_port > 65535 ||
	    in->world < 1 || in->rank < (in->observer ? -1 : 0) || in->rank >= in->world ||
	    in->ray_port < 0 || in->ray_port > 65535) {
		snprintf(err, errlen, "invalid interface, port, rank or world for the environment");
		return GX_EUSAGE;
	}
	if ((in->rails && *in->rails && !rails_ok(in->rails)) ||
	    (in->hostfile && !gx_safe_text(in->hostfile, 4096)) ||
	    (in->rsh_agent && !gx_safe_text(in->rsh_agent, 4096)) ||
	    (in->rsh_key_file && !gx_safe_text(in->rsh_key_file, 4096)) ||
	    (in->hydra_hostfile && !gx_safe_text(in->hydra_hostfile, 4096)) ||
	    (in->rsh_exec && !gx_safe_text(in->rsh_exec, 4096))) {
		snprintf(err, errlen, "invalid rails or hostfile path for the environment");
		return GX_EUSAGE;
	}
	return 0;
}

static int set_long(struct agent_env *e, const char *name, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", v);
	return agent_env_set(e, name, buf);
}

static int set_rails(const struct agent_env_input *in, struct agent_env *e)
{
	char *hca = NULL;
	int rc;

	if (!in->rails || !*in->rails)
		return 0;
	if (asprintf(&hca, "=%s", in->rails) < 0)
		return -ENOMEM;
	rc = agent_env_set(e, "NCCL_IB_HCA", hca);
	if (rc == 0)
		rc = agent_env_set(e, "UCX_NET_DEVICES", in->rails);
	if (rc == 0 && in->nccl_gid_index >= 0)
		rc = set_long(e, "NCCL_IB_GID_INDEX", in->nccl_gid_index);
	free(hca);
	return rc;
}

/*
 * MPICH and Intel MPI start their proxies through Hydra, which
 * reads its host file ("host:slots" lines only), launcher and interface from
 * the environment: HYDRA_* (MPICH), I_MPI_HYDRA_* (Intel MPI). The launcher
 * exec is ONE executable path (Hydra execvp()s it whole, checked with
 * mpich 4.0.2), hence the gxboot-rsh link instead of "gxboot rsh".
 * HYDRA_IFACE puts the proxies' control connection (--control-port) on the
 * secondary; FI_TCP_IFACE / FI_SOCKETS_IFACE keep libfabric's tcp and
 * sockets providers (MPICH built with ch4:ofi, Intel MPI over TCP) there;
 * Debian's mpich 4.0.2 is ch4:ucx, kept there by UCX_NET_DEVICES. Without an
 * address of its own (an observer) no interface is named: it has none.
 */
static int set_hydra(const struct agent_env_input *in, struct agent_env *e)
{
	int rc = 0;

	/* Hydra's -iface looks for an IPv4 address only (mpich 4.0.2: "unable to find
	 * interface net1" on an IPv6-only net1, and mpiexec fails): not named there */
	if (in->addr && !strchr(in->addr, ':')) {
		rc = rc ?: agent_env_set(e, "HYDRA_IFACE", in->iface);
		rc = rc ?: agent_env_set(e, "I_MPI_HYDRA_IFACE", in->iface);
	}
	if (in->addr) {
		rc = rc ?: agent_env_set(e, "FI_TCP_IFACE", in->iface);
		rc = rc ?: agent_env_set(e, "FI_SOCKETS_IFACE", in->iface);
	}
	if (rc == 0 && in->rsh_exec) {
		rc = agent_env_set(e, "HYDRA_LAUNCHER", "ssh");
		rc = rc ?: agent_env_set(e, "HYDRA_LAUNCHER_EXEC", in->rsh_exec);
		rc = rc ?: agent_env_set(e, "I_MPI_HYDRA_BOOTSTRAP", "ssh");
		rc = rc ?: agent_env_set(e, "I_MPI_HYDRA_BOOTSTRAP_EXEC", in->rsh_exec);
	}
	if (rc == 0 && in->hydra_hostfile) {
		rc = agent_env_set(e, "HYDRA_HOST_FILE", in->hydra_hostfile);
		rc = rc ?: agent_env_set(e, "I_MPI_HYDRA_HOST_FILE", in->hydra_hostfile);
	}
	return rc;
}

int agent_env_ours(const struct agent_env_input *in, struct agent_env *e, char *err, size_t errlen)
{
	char ifx[32];
	int rc;

	rc = check_input(in, err, errlen);
	if (rc < 0)
		return rc;
	snprintf(ifx, sizeof(ifx), "=%s", in->iface);
	rc = agent_env_set(e, "MASTER_ADDR", in->master_addr);
	rc = rc ?: set_long(e, "MASTER_PORT", in->master_port);
	if (!in->observer)
		rc = rc ?: set_long(e, "NODE_RANK", in->rank);
	rc = rc ?: set_long(e, "NNODES", in->world);
	if (!in->observer)
		rc = rc ?: set_long(e, "GXBOOT_RANK", in->rank);
	rc = rc ?: set_long(e, "GXBOOT_WORLD_SIZE", in->world);
	rc = rc ?: agent_env_set(e, "GXBOOT_IFACE", in->iface);
	if (in->addr)
		rc = rc ?: agent_env_set(e, "GXBOOT_ADDR", in->addr);
	rc = rc ?: set_long(e, "PET_NNODES", in->world);
	if (!in->observer)
		rc = rc ?: set_long(e, "PET_NODE_RANK", in->rank);
	rc = rc ?: agent_env_set(e, "PET_MASTER_ADDR", in->master_addr);
	rc = rc ?: set_long(e, "PET_MASTER_PORT", in->master_port);
	rc = rc ?: agent_env_set(e, "NCCL_SOCKET_IFNAME", ifx);
	rc = rc ?: agent_env_set(e, "GLOO_SOCKET_IFNAME", in->iface);
	rc = rc ?: agent_env_set(e, "OMPI_MCA_btl_tcp_if_include", in->iface);
	if (in->addr)
		rc = rc ?: agent_env_set(e, "OMPI_MCA_oob_tcp_if_include", in->iface);
	rc = rc ?: agent_env_set(e, "HOROVOD_GLOO_IFACE", in->iface);
	if (in->addr && strchr(in->addr, ':')) /* an IPv6-only secondary */
		rc = rc ?: agent_env_set(e, "NCCL_SOCKET_FAMILY", "AF_INET6");
	rc = rc ?: set_rails(in, e);
	/* TCP although a device serves iface: NCCL would try IB and fail where gxboot did
	 * (memlock: ibv_reg_mr). UCX needs nothing more: UCX_NET_DEVICES=<iface> below names
	 * no RDMA device, so its rc/ud/dc transports have none (ucp_context.c in UCX 1.13
	 * matches network devices by name) */
	if (in->rdma_unusable && (!in->rails || !*in->rails))
		rc = rc ?: agent_env_set(e, "NCCL_IB_DISABLE", "1");
	/* no rails: UCX's tcp transport (MPICH ch4:ucx, OpenMPI pml ucx) would use every
	 * interface, eth0 included (seen with Debian's mpich 4.0.2 + UCX 1.13) */
	if ((!in->rails || !*in->rails) && in->addr)
		rc = rc ?: agent_env_set(e, "UCX_NET_DEVICES", in->iface);
	if (rc == 0 && in->ray_port > 0) {
		char ra[80];

		snprintf(ra, sizeof(ra), strchr(in->master_addr, ':') ? "[%s]:%ld" : "%s:%ld",
			 in->master_addr, in->ray_port);
		rc = agent_env_set(e, "RAY_ADDRESS", ra);
		if (rc == 0 && in->ray_worker) {
			rc = agent_env_set(e, "FQ_RAY_IP", in->master_addr);
			rc = rc ?: agent_env_set(e, "RAY_IP", in->master_addr);
		}
	}
	if (rc == 0 && in->rsh_agent) {
		rc = agent_env_set(e, "OMPI_MCA_plm_rsh_agent", in->rsh_agent);
		rc = rc ?: agent_env_set(e, "PRTE_MCA_plm_ssh_agent", in->rsh_agent);
		if (in->rsh_key_file)
			rc = rc ?: agent_env_set(e, "GXBOOT_RSH_KEY_FILE", in->rsh_key_file);
	}
	if (rc == 0 && in->hostfile) {
		rc = agent_env_set(e, "OMPI_MCA_orte_default_hostfile", in->hostfile);
		rc = rc ?: agent_env_set(e, "OMPI_MCA_prte_default_hostfile", in->hostfile);
		rc = rc ?: agent_env_set(e, "PRTE_MCA_prte_default_hostfile", in->hostfile);
	}
	rc = rc ?: set_hydra(in, e);
	if (rc < 0)
		agent_env_free(e);
	return rc;
}

static const char *envp_get(char **envp, const char *name)
{
	size_t n = strlen(name);
	char **p;

	for (p = envp; p && *p; p++)
		if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
			return *p + n + 1;
	return NULL;
}

/* Equal, ignoring NCCL's leading '=' (exact-match marker) on either side. */
static int same_selection(const char *a, const char *b)
{
	return strcmp(a + (*a == '='), b + (*b == '=')) == 0;
}

/* The user's u is ours without NCCL's '=': NCCL reads it as a prefix, not an exact name. */
static int prefix_form_of(const char *u, const char *ours)
{
	return ours[0] == '=' && u[0] != '=' && strcmp(u, ours + 1) == 0;
}

/* The value CMD gets for ours: kv, against the user's value u. */
static const char *rule(const struct agent_kv *kv, const char *u, int override_env)
{
	if (!u || strcmp(u, kv->value) == 0)
		return kv->value;
	if (!agent_env_is_selection(kv->name) || override_env) {
		gx_info("%s: %s -> %s", kv->name, u, kv->value);
		return kv->value;
	}
	if (prefix_form_of(u, kv->value))
		gx_warn("keeping the user's %s=%s: NCCL matches it as a prefix, so it also "
			"takes names that begin with it (gxboot's exact form is %s; "
			"--override-env replaces it)",
			kv->name, u, kv->value);
	else if (!same_selection(u, kv->value))
		gx_warn("keeping the user's %s=%s (gxboot chose %s; --override-env replaces it)",
			kv->name, u, kv->value);
	return u;
}

/*
 * ours is OMPI_MCA_<fw>_tcp_if_include and the user set no include but the framework's
 * exclude list: OpenMPI refuses both together ("mutually-exclusive MCA variables", even
 * an empty one), so one goes. 1 when handled here.
 */
static int exclude_rule(const struct agent_kv *kv, char **user_envp, int override_env,
			struct agent_env *out, int *rc)
{
	size_t l = strlen(kv->name);
	char ex[64];
	const char *u;

	if (l >= sizeof(ex) || strncmp(kv->name, "OMPI_MCA_", 9) != 0 || l < 24 ||
	    strcmp(kv->name + l - 15, "_tcp_if_include") != 0 || envp_get(user_envp, kv->name))
		return 0;
	snprintf(ex, sizeof(ex), "%.*sexclude", (int)(l - 7), kv->name);
	u = envp_get(user_envp, ex);
	if (!u)
		return 0;
	if (override_env) {
		gx_info("%s: %s -> (unset): --override-env sets %s=%s", ex, u, kv->name, kv->value);
		*rc = agent_env_set(out, kv->name, kv->value);
		*rc = *rc ?: agent_env_unset(out, ex);
		return 1;
	}
	gx_warn("keeping the user's %s=%s: OpenMPI takes an include or an exclude list, not both, "
		"so CMD does not get gxboot's %s=%s and TCP may use any interface not excluded, "
		"eth0 included (--override-env replaces it)",
		ex, u, kv->name, kv->value);
	return 1;
}

int agent_env_merge(const struct agent_env *ours, char **user_envp, int override_env,
		    struct agent_env *out)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < ours->n && rc == 0; i++) {
		const char *u = envp_get(user_envp, ours->v[i].name);

		if (ours->v[i].value &&
		    exclude_rule(&ours->v[i], user_envp, override_env, out, &rc))
			continue;
		rc = agent_env_set(out, ours->v[i].name, rule(&ours->v[i], u, override_env));
	}
	if (rc < 0)
		agent_env_free(out);
	return rc;
}

int agent_env_build(const struct agent_env_input *in, char **user_envp, struct agent_env *out,
		    char *err, size_t errlen)
{
	struct agent_env ours = {0};
	int rc;

	rc = agent_env_ours(in, &ours, err, errlen);
	if (rc == 0)
		rc = agent_env_merge(&ours, user_envp, in->override_env, out);
	agent_env_free(&ours);
	return rc;
}

/* ---- envp for execve ---------------------------------------------------------------- */

void agent_envp_free(char **envp)
{
	char **p;

	for (p = envp; p && *p; p++)
		free(*p);
	free(envp);
}

static int drop_base(const char *s, const struct agent_env *e)
{
	const char *eq = strchr(s, '=');
	size_t i, l;

	if (!eq)
		return 1;
	l = (size_t)(eq - s);
	if (l == 12 && strncmp(s, "GXBOOT_TOKEN", 12) == 0)
		return 1;
	for (i = 0; i < e->n; i++)
		if (strlen(e->v[i].name) == l && strncmp(e->v[i].name, s, l) == 0)
			return 1;
	return 0;
}

int agent_env_apply_to(char **base, const struct agent_env *e, char ***envp_out)
{
	size_t nb = 0, k = 0, i;
	char **v = NULL;
	int rc = -ENOMEM;

	*envp_out = NULL;
	while (base && base[nb])
		nb++;
	v = calloc(nb + e->n + 1, sizeof(*v));
	if (!v)
		goto out;
	for (i = 0; i < nb; i++) {
		if (drop_base(base[i], e))
			continue;
		v[k] = strdup(base[i]);
		if (!v[k++])
			goto out;
	}
	for (i = 0; i < e->n; i++) {
		if (strcmp(e->v[i].name, "GXBOOT_TOKEN") == 0 || !e->v[i].value)
			continue;
		if (asprintf(&v[k], "%s=%s", e->v[i].name, e->v[i].value) < 0) {
			v[k] = NULL;
			goto out;
		}
		k++;
	}
	*envp_out = v;
	v = NULL;
	rc = 0;
out:
	agent_envp_free(v);
	return rc;
}

int agent_env_apply(const struct agent_env *e, char ***envp_out)
{
	return agent_env_apply_to(environ, e, envp_out);
}

/* ---- env file: writer ---------------------------------------------------------------- */

static int value_ok(const char *v)
{
	const unsigned char *p;

	if (strlen(v) > VALUE_MAX)
		return 0;
	for (p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

struct sbuf {
	char *p;
	size_t len, cap;
};

static int sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *np = realloc(b->p, cap);

		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int sh_line(struct sbuf *b, const struct agent_kv *kv)
{
	const char *s = kv->value, *q;
	int rc;

	rc = sb_add(b, "export ", 7);
	rc = rc ?: sb_add(b, kv->name, strlen(kv->name));
	rc = rc ?: sb_add(b, "='", 2);
	while (rc == 0 && (q = strchr(s, '\''))) {
		rc = sb_add(b, s, (size_t)(q - s));
		rc = rc ?: sb_add(b, "'\\''", 4);
		s = q + 1;
	}
	rc = rc ?: sb_add(b, s, strlen(s));
	return rc ?: sb_add(b, "'\n", 2);
}

int agent_env_serialize_sh(const struct agent_env *e, char **out, size_t *len, char *err,
			   size_t errlen)
{
	struct sbuf b = {0};
	size_t i;
	int rc;

	*out = NULL;
	rc = sb_add(&b, "", 0);
	for (i = 0; i < e->n && rc == 0; i++) {
		if (strcmp(e->v[i].name, "GXBOOT_TOKEN") == 0 || !e->v[i].value)
			continue;
		if (!value_ok(e->v[i].value)) {
			snprintf(err, errlen,
				 "refusing to write %s: its value has a newline or "
				 "control character",
				 e->v[i].name);
			rc = GX_EUSAGE;
			break;
		}
		rc = sh_line(&b, &e->v[i]);
	}
	if (rc < 0) {
		free(b.p);
		return rc;
	}
	*out = b.p;
	if (len)
		*len = b.len;
	return 0;
}

json_t *agent_env_json(const struct agent_env *e)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; o && i < e->n; i++) {
		if (strcmp(e->v[i].name, "GXBOOT_TOKEN") == 0 || !e->v[i].value)
			continue;
		if (json_object_set_new(o, e->v[i].name, json_string(e->v[i].value)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* ---- env file: strict reader -------------------------------------------------------- */

/* Parses the quoted value at s (after "='") up to the line end into b; 0 or -1. */
static int parse_value(const char *s, const char *end, struct sbuf *b)
{
	const char *q;

	b->len = 0;
	if (sb_add(b, "", 0) < 0)
		return -ENOMEM;
	for (;;) {
		q = memchr(s, '\'', (size_t)(end - s));
		if (!q)
			return -1;
		for (const char *c = s; c < q; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return -1;
		if (sb_add(b, s, (size_t)(q - s)) < 0)
			return -ENOMEM;
		if (q + 1 == end)
			return b->len > VALUE_MAX ? -1 : 0;
		if (end - q < 5 || memcmp(q, "'\\''", 4) != 0)
			return -1;
		if (sb_add(b, "'", 1) < 0)
			return -ENOMEM;
		s = q + 4;
	}
}

static int parse_line(const char *s, const char *end, struct agent_env *out, struct sbuf *b)
{
	const char *eq;
	char name[256];
	int rc;

	if (end - s < 10 || memcmp(s, "export ", 7) != 0)
		return -1;
	s += 7;
	eq = memchr(s, '=', (size_t)(end - s));
	if (!eq || !agent_env_name_ok(s, (size_t)(eq - s)) || end - eq < 3 || eq[1] != '\'')
		return -1;
	memcpy(name, s, (size_t)(eq - s));
	name[eq - s] = '\0';
	rc = parse_value(eq + 2, end, b);
	if (rc < 0)
		return rc;
	if (out->n >= VARS_MAX)
		return -1;
	if (strcmp(name, "GXBOOT_TOKEN") == 0)
		return 0; /* never written by gxboot; never handed on */
	return agent_env_set(out, name, b->p);
}

int agent_env_parse(const char *buf, size_t len, struct agent_env *out, char *err, size_t errlen)
{
	const char *s = buf, *end = buf + len, *nl;
	struct sbuf b = {0};
	size_t line = 0;
	int rc = 0;

	if (len > AGENT_ENV_FILE_MAX) {
		snprintf(err, errlen, "env file larger than %d bytes", AGENT_ENV_FILE_MAX);
		return GX_EUSAGE;
	}
	while (s < end && rc == 0) {
		line++;
		nl = memchr(s, '\n', (size_t)(end - s));
		rc = parse_line(s, nl ? nl : end, out, &b);
		if (rc == -1) {
			snprintf(err, errlen, "malformed env file line %zu", line);
			rc = GX_EUSAGE;
		}
		s = nl ? nl + 1 : end;
	}
	free(b.p);
	if (rc < 0)
		agent_env_free(out);
	return rc;
}

int agent_env_load(const char *path, struct agent_env *out, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), rc;

	if (fd < 0) {
		snprintf(err, errlen, "cannot read %s: %s (run 'gxboot init' first?)", path,
			 strerror(errno));
		return GX_EUSAGE;
	}
	rc = agent_env_load_fd(fd, path, out, err, errlen);
	close(fd);
	return rc;
}

int agent_env_load_fd(int fd, const char *path, struct agent_env *out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	ssize_t r;
	int rc = 0;

	buf = malloc(AGENT_ENV_FILE_MAX + 1);
	if (!buf) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(ENOMEM));
		rc = GX_EUSAGE;
		goto out;
	}
	while (len <= AGENT_ENV_FILE_MAX &&
	       (r = read(fd, buf + len, AGENT_ENV_FILE_MAX + 1 - len)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			rc = GX_EUSAGE;
			goto out;
		}
		len += (size_t)r;
	}
	rc = agent_env_parse(buf, len, out, err, errlen);
	if (rc < 0 && errlen > 0 && strlen(err) + strlen(path) + 3 < errlen) {
		char tmp[256];

		gx_strlcpy(tmp, err, sizeof(tmp));
		snprintf(err, errlen, "%s: %s", path, tmp);
	}
out:
	free(buf);
	return rc;
}
