/* SPDX-License-Identifier: MIT */
/*
 * peers_k8s.c - peer sources that derive names from one address or the host
 * name (see peers_detect.c for the order): Kubeflow PyTorchJob, LeaderWorkerSet,
 * and an indexed host name <base>-<i> (JobSet, Indexed Job,
 * StatefulSet, Kubeflow Trainer v2, TorchX on MCAD/Kueue).
 */
#include "agent/peers/peers_int.h"
#include "rdzv/gx/gx.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Kubeflow PyTorchJob --------------------------------------------------------- */

/* Pushes "<prefix><i><domain>" for i in [from, to). */
static int push_range(struct agent_names *l, const char *prefix, long from, long to,
		      const char *domain, const char *what, char *err, size_t errlen)
{
	char buf[512];
	int rc = 0, len;
	long i;

	for (i = from; i < to && rc == 0; i++) {
		len = snprintf(buf, sizeof(buf), "%s%ld%s", prefix, i, domain);
		if (len < 0 || (size_t)len >= sizeof(buf))
			len = sizeof(buf) - 1;
		rc = agent_names_push_valid(l, buf, (size_t)len, what, err, errlen);
	}
	return rc;
}

static long pytorch_count(char **envp)
{
	long n = 0, w = 0, nproc = 0;

	if (agent_detect_long(envp, "PET_NNODES", AGENT_PEERS_MAX, &n) == 0 && n > 0)
		return n;
	if (agent_detect_long(envp, "WORLD_SIZE", 1L << 30, &w) < 0 || w < 1)
		return -1;
	/* newer operators: WORLD_SIZE = replicas x nprocPerNode */
	if (agent_detect_long(envp, "PET_NPROC_PER_NODE", 1 << 20, &nproc) == 0 && nproc > 1 &&
	    w % nproc == 0)
		return w / nproc;
	return w;
}

int agent_src_pytorchjob(const struct agent_detect *c, struct agent_peers *p, char *why,
			 size_t whylen, char *err, size_t errlen)
{
	const char *ma = agent_detect_env(c->envp, "MASTER_ADDR"), *dom;
	struct agent_names l = {0};
	char job[256], prefix[300];
	size_t lab;
	long n, rank = -1;
	int rc;

	lab = ma ? strcspn(ma, ".") : 0;
	if (!ma || lab <= 9 || lab >= sizeof(job) || strncmp(ma + lab - 9, "-master-0", 9) != 0) {
		snprintf(why, whylen, "no MASTER_ADDR=<job>-master-0");
		return 0;
	}
	n = pytorch_count(c->envp);
	if (n < 1 || n > AGENT_PEERS_MAX) {
		snprintf(err, errlen,
			 "MASTER_ADDR names a PyTorchJob master but WORLD_SIZE / "
			 "PET_NNODES is missing or invalid: set --peers or --nnodes");
		return GX_EUSAGE;
	}
	if (agent_detect_long(c->envp, "PET_NODE_RANK", AGENT_PEERS_MAX, &rank) < 0 &&
	    agent_detect_long(c->envp, "RANK", AGENT_PEERS_MAX, &rank) < 0)
		rank = -1;
	memcpy(job, ma, lab - 9);
	job[lab - 9] = '\0';
	dom = ma + lab; /* "" or ".<rest>" */
	snprintf(prefix, sizeof(prefix), "%s-master-", job);
	rc = push_range(&l, prefix, 0, 1, dom, "MASTER_ADDR", err, errlen);
	snprintf(prefix, sizeof(prefix), "%s-worker-", job);
	if (rc == 0)
		rc = push_range(&l, prefix, 0, n - 1, dom, "MASTER_ADDR", err, errlen);
	if (rc == 0)
		rc = agent_detect_finish(c, p, &l, "PyTorchJob", rank, err, errlen);
	agent_names_free(l.v, l.n);
	return rc < 0 ? rc : 1;
}

/* ---- LeaderWorkerSet -------------------------------------------------------------- */

int agent_src_lws(const struct agent_detect *c, struct agent_peers *p, char *why, size_t whylen,
		  char *err, size_t errlen)
{
	const char *la = agent_detect_env(c->envp, "LWS_LEADER_ADDRESS");
	struct agent_names l = {0};
	char prefix[300];
	long size = 0, idx = -1;
	size_t lab;
	int rc;

	if (!la || !*la) {
		snprintf(why, whylen, "no LWS_LEADER_ADDRESS");
		return 0;
	}
	lab = strcspn(la, ".");
	if (agent_detect_long(c->envp, "LWS_GROUP_SIZE", AGENT_PEERS_MAX, &size) < 0 || size < 1 ||
	    lab == 0 || lab >= 256) {
		snprintf(err, errlen,
			 "LWS_LEADER_ADDRESS is set but LWS_GROUP_SIZE is missing or "
			 "invalid: set --peers");
		return GX_EUSAGE;
	}
	if (agent_detect_long(c->envp, "LWS_WORKER_INDEX", AGENT_PEERS_MAX, &idx) < 0)
		idx = -1;
	/* leader "<lws>-<group>", workers "<lws>-<group>-<i>", i = 1..size-1 */
	rc = agent_names_push_valid(&l, la, strlen(la), "LWS_LEADER_ADDRESS", err, errlen);
	snprintf(prefix, sizeof(prefix), "%.*s-", (int)lab, la);
	if (rc == 0)
		rc = push_range(&l, prefix, 1, size, la + lab, "LWS_LEADER_ADDRESS", err, errlen);
	if (rc == 0)
		rc = agent_detect_finish(c, p, &l, "LeaderWorkerSet", idx, err, errlen);
	agent_names_free(l.v, l.n);
	return rc < 0 ? rc : 1;
}

/* ---- KubeRay -------------------------------------------------------------------------- */

static enum agent_ray_role ray_role(const struct agent_detect *c)
{
	const char *cmd = agent_detect_env(c->envp, "KUBERAY_GEN_RAY_START_CMD");
	const char *grp = agent_detect_env(c->envp, "RAY_NODE_TYPE_NAME");
	const char *fq = agent_detect_env(c->envp, "FQ_RAY_IP");
	const char *ip = agent_detect_env(c->envp, "RAY_IP");

	if (c->o->ray != AGENT_RAY_AUTO)
		return c->o->ray;
	if (!agent_detect_env(c->envp, "RAY_PORT"))
		return AGENT_RAY_AUTO;
	if ((cmd && strstr(cmd, "--head")) || (grp && strcmp(grp, "headgroup") == 0))
		return AGENT_RAY_HEAD;
	if ((fq && *fq) || (ip && *ip))
		return AGENT_RAY_WORKER;
	return AGENT_RAY_AUTO;
}

int agent_src_ray(const struct agent_detect *c, struct agent_peers *p, char *why, size_t whylen,
		  char *err, size_t errlen)
{
	enum agent_ray_role role = ray_role(c);
	const char *cl = agent_detect_env(c->envp, "RAY_CLUSTER_NAME");
	const char *fq = agent_detect_env(c->envp, "FQ_RAY_IP");
	struct agent_names l = {0};
	char head[300];
	int rc;

	if (!fq || !*fq)
		fq = agent_detect_env(c->envp, "RAY_IP");
	if (role == AGENT_RAY_AUTO) {
		snprintf(why, whylen, "no RAY_PORT with FQ_RAY_IP or a --head start command");
		return 0;
	}
	/* --ray outside KubeRay (LeaderWorkerSet + Ray): the role stays, the peers come
	 * from the next source (agent_peers_discover applies o->ray) */
	if (c->o->ray != AGENT_RAY_AUTO && (!cl || !*cl) &&
	    !agent_detect_env(c->envp, "RAY_PORT")) {
		snprintf(why, whylen, "--ray given but no KubeRay RAY_CLUSTER_NAME / RAY_PORT");
		return 0;
	}
	if (!cl || !*cl) {
		snprintf(err, errlen, "a Ray %s without RAY_CLUSTER_NAME: set --peers",
			 role == AGENT_RAY_HEAD ? "head" : "worker");
		return GX_EUSAGE;
	}
	if (role == AGENT_RAY_WORKER && (!fq || !*fq || !gx_valid_hostname(fq))) {
		snprintf(err, errlen,
			 "a Ray worker without a valid FQ_RAY_IP / RAY_IP: set --peers");
		return GX_EUSAGE;
	}
	snprintf(head, sizeof(head), "%.240s-head", cl);
	rc = agent_names_push_valid(&l, head, strlen(head), "RAY_CLUSTER_NAME", err, errlen);
	if (rc < 0)
		goto out;
	p->names = l.v;
	p->n = l.n;
	l.v = NULL;
	p->source = "KubeRay";
	p->ray = role;
	p->elastic = 1;
	p->self = role == AGENT_RAY_HEAD ? 0 : AGENT_SELF_NONE;
	if (role == AGENT_RAY_WORKER &&
	    asprintf(&p->coord_fqdn, "%s%s", fq, fq[strlen(fq) - 1] == '.' ? "" : ".") < 0) {
		p->coord_fqdn = NULL;
		rc = -ENOMEM;
		goto out;
	}
	rc = 1;
out:
	agent_names_free(l.v, l.n);
	return rc;
}

/* ---- indexed hostname: JobSet, Indexed Job, StatefulSet ----------------------------- */

/* Splits "<base>-<digits>": the index, or -1. */
static long trailing_index(const char *s, size_t len, size_t *base_len)
{
	size_t i = len;
	long v = -1;
	char num[16];

	while (i && isdigit((unsigned char)s[i - 1]))
		i--;
	if (i == len || i < 2 || s[i - 1] != '-' || len - i >= sizeof(num))
		return -1;
	memcpy(num, s + i, len - i);
	num[len - i] = '\0';
	if (gx_parse_long(num, 0, AGENT_PEERS_MAX, &v) < 0)
		return -1;
	*base_len = i - 1;
	return v;
}

static long indexed_count(const struct agent_opts *o, char **envp)
{
	long n = 0;

	if (o->nnodes_max)
		return o->nnodes_max;
	if (agent_detect_long(envp, "PET_NNODES", AGENT_PEERS_MAX, &n) == 0 && n > 0)
		return n; /* Kubeflow Trainer v2 on JobSet */
	return -1;
}

/* JobSet with several jobs (<js>-<rjob>-<j>-<p>, j > 0): P cannot be known here. */
static int jobset_multi(const char *host, size_t base_len, long idx, char **envp)
{
	size_t b2 = 0;
	long j, jci = -1;

	if (agent_detect_long(envp, "JOB_COMPLETION_INDEX", AGENT_PEERS_MAX, &jci) < 0 ||
	    jci != idx)
		return 0;
	j = trailing_index(host, base_len, &b2);
	return j > 0;
}

int agent_src_indexed_as(const struct agent_detect *c, struct agent_peers *p, const char *source,
			 char *why, size_t whylen, char *err, size_t errlen)
{
	struct agent_names l = {0};
	char sub[256], dom[300], base[256];
	size_t hl = strcspn(c->self, "."), bl = 0;
	long idx = trailing_index(c->self, hl, &bl), n, jci = -1;
	int rc;

	n = indexed_count(c->o, c->envp);
	if (idx < 0 || n < 0) {
		snprintf(why, whylen,
			 idx < 0 ? "host name is not <name>-<index>"
				 : "host name <name>-<index> but no --nnodes");
		return 0;
	}
	if (agent_detect_long(c->envp, "JOB_COMPLETION_INDEX", AGENT_PEERS_MAX, &jci) == 0 &&
	    jci != idx) {
		snprintf(why, whylen, "JOB_COMPLETION_INDEX %ld is not the host name's index", jci);
		return 0;
	}
	if (jobset_multi(c->self, bl, idx, c->envp)) {
		snprintf(err, errlen,
			 "'%.*s' looks like a JobSet with several jobs: give --peers "
			 "'<jobset>-<rjob>-{0..R-1}-{0..P-1}.<subdomain>'",
			 (int)hl, c->self);
		return GX_EUSAGE;
	}
	/* the subdomain: the self name's own domain, else /etc/hosts */
	if (c->self[hl] == '.')
		gx_strlcpy(sub, c->self + hl + 1, sizeof(sub));
	else
		agent_detect_hosts_domain(c, c->self, sub, sizeof(sub));
	/* keep "<pod>.<subdomain>": the namespace comes from the search list */
	sub[strcspn(sub, ".")] = '\0';
	snprintf(dom, sizeof(dom), "%s%s", sub[0] ? "." : "", sub);
	snprintf(base, sizeof(base), "%.*s-", (int)bl, c->self);
	rc = push_range(&l, base, 0, n, dom, "the host name", err, errlen);
	if (rc == 0)
		rc = agent_detect_finish(c, p, &l, source, idx, err, errlen);
	agent_names_free(l.v, l.n);
	return rc < 0 ? rc : 1;
}

int agent_src_indexed(const struct agent_detect *c, struct agent_peers *p, char *why, size_t whylen,
		      char *err, size_t errlen)
{
	return agent_src_indexed_as(c, p, "indexed hostname (JobSet/Indexed Job/StatefulSet)", why,
				    whylen, err, errlen);
}
