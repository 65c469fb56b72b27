/* SPDX-License-Identifier: MIT */
/*
 * fabric_lib.c - what NCCL and UCX say they chose, from their own log lines. Every format
 * parsed here is pinned to the upstream source in tests/fixtures/fabric/upstream.json
 * (repository, commit, file, line) and tested on lines rendered from it
 * (tests/unit/test_agent_fabric_lib.c):
 *   NCCL (src/debug.cc): "<host>:<pid>:<tid> [<dev>] NCCL INFO <msg>" and
 *        "... [<dev>] <file>:<line> [(<func>) ]NCCL WARN <msg>", an optional "[time] " first;
 *        msgs "Using network <name>" (src/init.cc), "NET/IB : No device found.",
 *        "NET/IB : Using [0]mlx5_0:1/RoCE [1]...; OOB net1:<addr>" (net_ib), "NET/Socket :
 *        Using [0]net1:<addr><port>" (net_socket.cc), "<VAR> set by environment to <v>."
 *        (misc/param.cc, subsystem ENV).
 *   UCX  (src/ucs/debug/log.c): "[<time>] [<host>:<pid>:<thr>] <file>:<line> UCX  <LEVEL> <msg>";
 *        msgs "ep_cfg[N]: tag(tl/dev tl/dev) rma(...) am(...) ka(...)" (ucp_worker.c) and
 *        "UCX_* env variables: UCX_TLS=... ..." (ucs/config/parser.c).
 */
#include "agent/fabric/fabric_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A copy fit for our lines: printable ASCII only, at most len - 1 bytes. */
static void clean_copy(char *dst, size_t len, const char *src, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n && src[i] && k + 1 < len; i++)
		dst[k++] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	while (k && dst[k - 1] == ' ')
		k--;
	dst[k] = '\0';
}

static void add_unique(char (*list)[72], size_t *n, size_t cap, const char *v, size_t vlen)
{
	char one[72];
	size_t i;

	clean_copy(one, sizeof(one), v, vlen);
	if (!one[0])
		return;
	for (i = 0; i < *n; i++)
		if (strcmp(list[i], one) == 0)
			return;
	if (*n < cap)
		memcpy(list[(*n)++], one, sizeof(one));
}

static void add_warn(char (*warns)[200], size_t *n, size_t *total, const char *msg)
{
	(*total)++;
	if (*n < FABRIC_MAX_WARNS)
		clean_copy(warns[(*n)++], sizeof(warns[0]), msg, strlen(msg));
}

/* ---- NCCL ---- */

int agent_fabric_nccl_net_kind(const char *network)
{
	if (strncmp(network, "IB", 2) == 0) /* "IB", nccl-rdma-sharp-plugins' "IBext..." */
		return 1;
	if (strcmp(network, "Socket") == 0)
		return 2;
	/* aws-ofi-nccl names itself "AWS Libfabric" / "Libfabric": EFA or verbs */
	if (strstr(network, "ibfabric") || strstr(network, "OFI"))
		return 1;
	return 0;
}

/*
 * " [0]mlx5_0:1/RoCE [1]mlx5_1:1:0/RoCE" (2.30: optional ":rail[:plane]"), " [0]={[0] mlx5_0:1
 * /RoCE, [1] mlx5_1:1/RoCE}" (2.21's merged devices), " [0]net1:10.0.0.2<0>": every "[N]"
 * followed by a name, then ':' -> "name" (Socket) or "name:port" (IB). *end: stop there.
 */
static void nccl_devs(const char *s, const char *end, int with_port, char (*list)[72], size_t *n)
{
	const char *p = s;

	while (p < end && (p = strchr(p, '[')) != NULL && p < end) {
		const char *q = p + 1, *name, *colon;

		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q == p + 1 || q >= end || *q != ']') {
			p++;
			continue;
		}
		name = q + 1;
		while (name < end && *name == ' ')
			name++;
		colon = name;
		while (colon < end && *colon != ':' && *colon != ' ' && *colon != '[' &&
		       *colon != '=' && *colon != '{')
			colon++;
		if (colon == name || colon >= end || *colon != ':') {
			p = name;
			continue;
		}
		q = colon + 1;
		while (with_port && q < end && *q >= '0' && *q <= '9')
			q++;
		add_unique(list, n, FABRIC_MAX_DEVS, name,
			   (size_t)((with_port ? q : colon) - name));
		p = q;
	}
}

/* "NCCL_IB_DISABLE set by environment to 1." -> "NCCL_IB_DISABLE=1" (the network's ones) */
static int nccl_env(const char *msg, struct fabric_nccl *n)
{
	static const char *const want[] = {"NCCL_IB_", "NCCL_NET", "NCCL_SOCKET_", "NCCL_COLLNET"};
	const char *sp = strstr(msg, " set by environment to ");
	char one[128];
	size_t i, vlen, nlen;
	int relevant = 0;

	if (!sp || strncmp(msg, "NCCL_", 5) != 0)
		return 0;
	nlen = (size_t)(sp - msg);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		relevant |= strncmp(msg, want[i], strlen(want[i])) == 0;
	if (!relevant || nlen > 60 || memchr(msg, ' ', nlen))
		return 0;
	sp += strlen(" set by environment to ");
	vlen = strlen(sp);
	if (vlen && sp[vlen - 1] == '.')
		vlen--;
	snprintf(one, sizeof(one), "%.*s=%.*s", (int)nlen, msg, (int)(vlen > 60 ? 60 : vlen), sp);
	for (i = 0; i < n->nenv; i++)
		if (strcmp(n->env[i], one) == 0)
			return 1;
	if (n->nenv < FABRIC_MAX_WARNS)
		clean_copy(n->env[n->nenv++], sizeof(n->env[0]), one, strlen(one));
	return 1;
}

static int nccl_info(const char *msg, struct fabric_nccl *n)
{
	const char *semi;

	if (strncmp(msg, "Using network ", 14) == 0) {
		clean_copy(n->network, sizeof(n->network), msg + 14, strlen(msg + 14));
		n->comms++;
		switch (agent_fabric_nccl_net_kind(n->network)) {
		case 1:
			n->net_ib++;
			break;
		case 2:
			n->net_socket++;
			break;
		default:
			n->net_other++;
		}
		return 1;
	}
	if (strncmp(msg, "NET/IB : No device found.", 25) == 0) {
		n->ib_none = 1;
		return 1;
	}
	if (strncmp(msg, "NET/IB : Using", 14) == 0) {
		semi = strstr(msg, "; OOB");
		nccl_devs(msg + 14, semi ? semi : msg + strlen(msg), 1, n->ib_devs, &n->nib_devs);
		return 1;
	}
	if (strncmp(msg, "NET/Socket : Using", 18) == 0) {
		nccl_devs(msg + 18, msg + strlen(msg), 0, n->sock_devs, &n->nsock_devs);
		return 1;
	}
	return nccl_env(msg, n);
}

int agent_fabric_nccl_line(const char *line, struct fabric_nccl *n)
{
	const char *p;

	if ((p = strstr(line, " NCCL INFO ")) != NULL)
		return nccl_info(p + 11, n);
	if ((p = strstr(line, " NCCL WARN ")) != NULL) {
		add_warn(n->warns, &n->nwarns, &n->warns_total, p + 11);
		return 1;
	}
	return 0;
}

/* ---- UCX ---- */

int agent_fabric_ucx_tl_kind(const char *tl_dev)
{
	static const char *const rdma[] = {"rc",       "ud",	  "dc",	     "rc_verbs",
					   "ud_verbs", "rc_mlx5", "ud_mlx5", "dc_mlx5",
					   "rc_x",     "ud_x",	  "srd"};
	size_t i, l = strcspn(tl_dev, "/");

	for (i = 0; i < sizeof(rdma) / sizeof(rdma[0]); i++)
		if (strlen(rdma[i]) == l && strncmp(tl_dev, rdma[i], l) == 0)
			return 1;
	if (l == 3 && strncmp(tl_dev, "tcp", 3) == 0)
		return 2;
	return 0; /* self, sysv, posix, cma, knem, xpmem, cuda_*, gdr_copy, rocm_* */
}

/* "tag(rc_verbs/rxe0:1 tcp/net1) rma(...) am(...) ka(ud_verbs/rxe0:1)": the data lanes */
static void ucx_ep_cfg(const char *s, struct fabric_ucx *u)
{
	const char *open, *close;

	u->eps++;
	while ((open = strchr(s, '(')) != NULL && (close = strchr(open, ')')) != NULL) {
		int ka = open - s >= 2 && strncmp(open - 2, "ka", 2) == 0 &&
			 (open - s == 2 || open[-3] == ' ');
		const char *p = open + 1;

		while (!ka && p < close) {
			size_t l = strcspn(p, " )");

			if (l && memchr(p, '/', l))
				add_unique(u->tls, &u->ntls, FABRIC_MAX_DEVS, p, l);
			p += l;
			while (p < close && *p == ' ')
				p++;
		}
		s = close + 1;
	}
}

/* "UCX_* env variables: UCX_TLS=tcp UCX_LOG_LEVEL=info": the ones that choose transports */
static void ucx_env(const char *s, struct fabric_ucx *u)
{
	while (*s) {
		size_t l = strcspn(s, " ");

		if ((strncmp(s, "UCX_TLS=", 8) == 0 || strncmp(s, "UCX_NET_DEVICES=", 16) == 0) &&
		    u->nenv < FABRIC_MAX_WARNS)
			clean_copy(u->env[u->nenv++], sizeof(u->env[0]), s, l);
		s += l;
		while (*s == ' ')
			s++;
	}
}

int agent_fabric_ucx_line(const char *line, struct fabric_ucx *u)
{
	const char *p = strstr(line, " UCX ");
	char level[8];
	size_t l;

	if (!p)
		return 0;
	p += 5;
	while (*p == ' ')
		p++;
	l = strcspn(p, " ");
	if (l == 0 || l >= sizeof(level))
		return 0;
	memcpy(level, p, l);
	level[l] = '\0';
	p += l;
	while (*p == ' ')
		p++;
	if (strcmp(level, "INFO") == 0 && strncmp(p, "ep_cfg[", 7) == 0) {
		const char *c = strstr(p, "]: ");

		if (c)
			ucx_ep_cfg(c + 3, u);
		return c != NULL;
	}
	if (strcmp(level, "INFO") == 0 && strncmp(p, "UCX_* env variable", 18) == 0) {
		const char *c = strchr(p, ':');

		if (c)
			ucx_env(c + 1 + (c[1] == ' '), u);
		return c != NULL;
	}
	if (strcmp(level, "WARN") == 0 || strcmp(level, "ERROR") == 0 ||
	    strcmp(level, "FATAL") == 0) {
		add_warn(u->warns, &u->nwarns, &u->warns_total, p);
		return 1;
	}
	return 0;
}

/* ---- the variables gxboot sets for CMD ---- */

static const char *env_get(char *const *envp, const char *name)
{
	size_t l = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, l) == 0 && (*envp)[l] == '=')
			return *envp + l + 1;
	return NULL;
}

static void set_var(struct fabric_libvars *v, const char *name, const char *value)
{
	if (v->n >= sizeof(v->names) / sizeof(v->names[0]))
		return;
	gx_strlcpy(v->names[v->n], name, sizeof(v->names[0]));
	gx_strlcpy(v->values[v->n++], value, sizeof(v->values[0]));
}

/*
 * NCCL writes its lines to NCCL_DEBUG_FILE only at NCCL_DEBUG=INFO; the subsystems INIT and
 * NET carry the choice, ENV (in NCCL's own default) the variables that made it. UCX logs
 * its endpoints at UCX_LOG_LEVEL=info. A user who set any of these keeps them: then the
 * library's choice is unknown here (the lines go where the user said).
 */
void agent_fabric_libvars(char *const *envp, const char *out, struct fabric_libvars *v)
{
	static const char *const nccl[] = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"};
	static const char *const ucx[] = {"UCX_LOG_LEVEL", "UCX_LOG_FILE"};
	char path[300];
	size_t i;

	memset(v, 0, sizeof(*v));
	for (i = 0; i < 3 && !v->nccl_user[0]; i++)
		if (env_get(envp, nccl[i]))
			gx_strlcpy(v->nccl_user, nccl[i], sizeof(v->nccl_user));
	for (i = 0; i < 2 && !v->ucx_user[0]; i++)
		if (env_get(envp, ucx[i]))
			gx_strlcpy(v->ucx_user, ucx[i], sizeof(v->ucx_user));
	if (!v->nccl_user[0] && strlen(out) < 200) {
		v->nccl_ours = 1;
		set_var(v, "NCCL_DEBUG", "INFO");
		set_var(v, "NCCL_DEBUG_SUBSYS", "INIT,NET,ENV");
		snprintf(path, sizeof(path), "%s/nccl.%%h.%%p.log", out);
		set_var(v, "NCCL_DEBUG_FILE", path);
	}
	if (!v->ucx_user[0] && strlen(out) < 200) {
		v->ucx_ours = 1;
		set_var(v, "UCX_LOG_LEVEL", "info");
		snprintf(path, sizeof(path), "%s/ucx.%%h.%%p.log", out);
		set_var(v, "UCX_LOG_FILE", path);
	}
}
