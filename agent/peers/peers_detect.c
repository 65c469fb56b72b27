/* SPDX-License-Identifier: MIT */
/*
 * peers_detect.c - peers from what the job systems hand a pod, when --peers is
 * absent. Sources in order, each logged:
 *
 *   TorchX      TORCHX_* env; on Volcano the union of VC_*_HOSTS (one task
 *               per replica), else an indexed hostname <app>-<role>-<i>
 *   Volcano     VC_<TASK>_HOSTS of every task, tasks in natural order of their
 *               names (or /etc/volcano/<task>.host), VC_TASK_INDEX/VK_TASK_INDEX
 *   MPI Operator /etc/mpi/hostfile "<host> slots=N"; a pod not listed (the
 *               launcher) is an observer
 *   PyTorchJob  MASTER_ADDR=<job>-master-0, WORLD_SIZE/PET_NNODES, RANK
 *   LeaderWorkerSet LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX
 *   Indexed hostname <base>-<i> (JobSet, Indexed Job, StatefulSet, Trainer v2):
 *               count from --nnodes (or PET_NNODES), subdomain from /etc/hosts
 *
 * Every name read is validated before it enters the list. Files are read
 * below c->root so tests use fixtures. The last three live in peers_k8s.c.
 */
#include "agent/peers/peers_int.h"
#include "rdzv/gx/gx.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define FILE_MAX (4 << 20) /* an MPI hostfile of 16k workers is ~1 MB */
#define TASKS_MAX 16384	   /* TorchX: one Volcano task per replica, up to the largest world */

/* 1 detected (p filled), 0 not this source (why in `why`), < 0 error. */
typedef int source_fn(const struct agent_detect *c, struct agent_peers *p, char *why, size_t whylen,
		      char *err, size_t errlen);

const char *agent_detect_env(char **envp, const char *name)
{
	size_t n = strlen(name);
	char **e;

	for (e = envp; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

int agent_detect_long(char **envp, const char *name, long max, long *v)
{
	const char *s = agent_detect_env(envp, name);

	if (!s || !*s)
		return -ENOENT;
	return gx_parse_long(s, 0, max, v);
}

/* Reads root/path (at most FILE_MAX) into a NUL-terminated buffer. */
int agent_detect_read(const char *root, const char *path, char **out)
{
	char full[4096];
	char *buf = NULL;
	ssize_t r;
	size_t len = 0;
	int fd = -1, rc = 0;

	*out = NULL;
	if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >= sizeof(full))
		return -ENAMETOOLONG;
	fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	buf = malloc(FILE_MAX + 1);
	if (fd < 0 || !buf) {
		rc = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	while (len < FILE_MAX && (r = read(fd, buf + len, FILE_MAX - len)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			goto out;
		}
		len += (size_t)r;
	}
	buf[len] = '\0';
	*out = buf;
	buf = NULL;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Compares digit runs by value: TRAINER_2 < TRAINER_10. */
static int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			size_t la, lb;
			int c;

			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			for (la = 0; isdigit((unsigned char)a[la]); la++)
				;
			for (lb = 0; isdigit((unsigned char)b[lb]); lb++)
				;
			if (la != lb)
				return la < lb ? -1 : 1;
			c = strncmp(a, b, la);
			if (c)
				return c;
			a += la;
			b += lb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : (*b ? -1 : 0);
}

/* Splits text on any of seps into validated names. */
static int push_split(struct agent_names *l, const char *text, const char *seps, const char *what,
		      char *err, size_t errlen)
{
	const char *s = text;
	size_t len;
	int rc = 0;

	while (*s && rc == 0) {
		s += strspn(s, seps);
		len = strcspn(s, seps);
		while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
			len--;
		while (len && (*s == ' ' || *s == '\t')) {
			s++;
			len--;
		}
		if (len)
			rc = agent_names_push_valid(l, s, len, what, err, errlen);
		s += strcspn(s, seps);
	}
	return rc;
}

/* ---- DNS names: the subdomain and the coordinator's full name ----------------- */

void agent_detect_search_domain(const struct agent_detect *c, const char *starts, char *buf,
				size_t len)
{
	char *txt = NULL, *line, *save = NULL, *tok, *s2 = NULL;

	buf[0] = '\0';
	if (agent_detect_read(c->root, "/etc/resolv.conf", &txt) < 0)
		return;
	for (line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "search", 6) != 0 || !isspace((unsigned char)line[6]))
			continue;
		for (tok = strtok_r(line + 6, " \t\r", &s2); tok;
		     tok = strtok_r(NULL, " \t\r", &s2))
			if (strncmp(tok, starts, strlen(starts)) == 0 && gx_valid_hostname(tok)) {
				gx_strlcpy(buf, tok + strlen(starts), len);
				goto out;
			}
	}
out:
	free(txt);
}

/*
 * This pod's full name from root/etc/hosts (kubelet writes "<ip> <host>.<sub>.
 * <ns>.svc.<domain> <host>" when the pod has a subdomain): the part after the
 * host label into buf ("" when unknown).
 */
void agent_detect_hosts_domain(const struct agent_detect *c, const char *host, char *buf,
			       size_t len)
{
	char *txt = NULL, *line, *save = NULL, *tok, *s2 = NULL;
	size_t hl = strcspn(host, ".");

	buf[0] = '\0';
	if (agent_detect_read(c->root, "/etc/hosts", &txt) < 0)
		return;
	for (line = strtok_r(txt, "\n", &save); line && !buf[0];
	     line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "#")] = '\0';
		for (tok = strtok_r(line, " \t\r", &s2); tok; tok = strtok_r(NULL, " \t\r", &s2))
			if (strncasecmp(tok, host, hl) == 0 && tok[hl] == '.' &&
			    gx_valid_hostname(tok)) {
				gx_strlcpy(buf, tok + hl + 1, len);
				break;
			}
	}
	free(txt);
}

/*
 * A bare sibling name: a kubelet puts the pod's namespace,
 * not its subdomain, in the search list, so "job-worker-1" alone is NXDOMAIN.
 * The sibling lives in this pod's own subdomain, which /etc/hosts names:
 * "<name>.<this pod's domain>.", or NULL when this pod has no subdomain.
 */
static char *sibling_fqdn(const struct agent_detect *c, const char *name)
{
	char sub[256], out[512], ip[64];
	size_t l;

	sub[0] = '\0';
	if (gx_addr_normalize(c->self, ip, sizeof(ip)) != 0)
		agent_detect_hosts_domain(c, c->self, sub, sizeof(sub));
	/* --self may name another entry than the host name the kubelet wrote */
	if (!sub[0] && c->host && *c->host && gx_addr_normalize(c->host, ip, sizeof(ip)) != 0)
		agent_detect_hosts_domain(c, c->host, sub, sizeof(sub));
	l = strlen(sub);
	if (!l)
		return NULL;
	snprintf(out, sizeof(out), "%s.%s%s", name, sub, sub[l - 1] == '.' ? "" : ".");
	if (!gx_valid_hostname(out))
		return NULL;
	gx_debug("peers: '%s' is a bare name: resolving it in this pod's subdomain as %s", name,
		 out);
	return strdup(out);
}

/* The coordinator's full name with a trailing dot, when the cluster domain is known. */
static char *guess_fqdn(const struct agent_detect *c, const char *name, size_t labels)
{
	char ns[256], cluster[256], out[512];
	size_t l = strlen(name);

	agent_detect_search_domain(c, "svc.", cluster, sizeof(cluster));
	if (!cluster[0])
		return NULL;
	/* "<ns>.svc.<cluster>" is the first search entry of a pod */
	agent_detect_search_domain(c, "", ns, sizeof(ns));
	if (l > 4 && strcmp(name + l - 4, ".svc") == 0)
		snprintf(out, sizeof(out), "%s.%s.", name, cluster);
	else if (labels == 3)
		snprintf(out, sizeof(out), "%s.svc.%s.", name, cluster);
	else if (labels <= 2 && strstr(ns, ".svc."))
		snprintf(out, sizeof(out), "%s.%s.", name, ns);
	else
		return NULL;
	return gx_valid_hostname(out) ? strdup(out) : NULL;
}

void agent_detect_coord(const struct agent_detect *c, struct agent_peers *p, int how)
{
	const char *name = p->names[0];
	char ip[64];
	size_t labels = 1, i, l = strlen(name);

	if (gx_addr_normalize(name, ip, sizeof(ip)) == 0 || l == 0)
		return;
	if (name[l - 1] == '.') {
		p->coord_fqdn = strdup(name);
		return;
	}
	for (i = 0; i < l; i++)
		labels += name[i] == '.';
	if (labels == 1 && how != AGENT_COORD_SERVICE) {
		p->coord_fqdn = sibling_fqdn(c, name);
		p->coord_nosub = !p->coord_fqdn;
		/* --peers: the user's bare name may be a Service or a hosts entry */
		p->coord_maybe_plain = p->coord_fqdn && how == AGENT_COORD_AS_GIVEN;
	}
	if (!p->coord_fqdn && how != AGENT_COORD_AS_GIVEN)
		p->coord_fqdn = guess_fqdn(c, name, labels);
}

/* Finishes p from list l: this pod's index (or fallback), the coordinator's name. */
int agent_detect_finish(const struct agent_detect *c, struct agent_peers *p, struct agent_names *l,
			const char *source, long fallback, char *err, size_t errlen)
{
	char pr[96];
	int rc;

	rc = agent_names_unique(l, source, err, errlen);
	if (rc < 0)
		return rc;
	p->names = l->v;
	p->n = l->n;
	l->v = NULL;
	l->n = 0;
	p->source = source;
	rc = agent_self_index(p->names, p->n, c->self, c->is_local_ip, &p->self);
	if (rc == -ENOENT && fallback >= 0 && (size_t)fallback < p->n) {
		p->self = (size_t)fallback;
		rc = 0;
	}
	if (rc < 0) {
		snprintf(err, errlen,
			 "this pod ('%s') is not among the %zu peers from %s: set --self "
			 "or --peers",
			 agent_printable(c->self, pr, sizeof(pr)), p->n, source);
		return GX_EUSAGE;
	}
	agent_detect_coord(
	    c, p, strcmp(source, "PyTorchJob") == 0 ? AGENT_COORD_SERVICE : AGENT_COORD_SIBLING);
	return 0;
}

/* ---- Volcano (and TorchX on Volcano) ----------------------------------------- */

struct task {
	char name[128];
	const char *hosts; /* env value, or NULL for the file */
};

static int task_cmp(const void *a, const void *b)
{
	return natural_cmp(((const struct task *)a)->name, ((const struct task *)b)->name);
}

/* Tasks from VC_<TASK>_HOSTS; *n = 0 when there is none. */
static int volcano_env_tasks(char **envp, struct task *t, size_t *n)
{
	char **e;
	const char *eq;
	size_t nl;

	*n = 0;
	for (e = envp; e && *e; e++) {
		eq = strchr(*e, '=');
		if (strncmp(*e, "VC_", 3) != 0 || !eq || eq - *e < 10 ||
		    strncmp(eq - 6, "_HOSTS", 6) != 0)
			continue;
		nl = (size_t)(eq - 6 - (*e + 3));
		if (nl == 0 || nl >= sizeof(t->name))
			continue;
		if (*n >= TASKS_MAX)
			return -E2BIG; /* not a short world in silence */
		memcpy(t[*n].name, *e + 3, nl);
		t[*n].name[nl] = '\0';
		t[(*n)++].hosts = eq + 1;
	}
	return 0;
}

/* Tasks from root/etc/volcano/<task>.host; -E2BIG past TASKS_MAX. */
static int volcano_file_tasks(const struct agent_detect *c, struct task *t, size_t *n)
{
	char dir[4096];
	struct dirent *d;
	DIR *dp;
	size_t l;
	int rc = 0;

	*n = 0;
	snprintf(dir, sizeof(dir), "%s/etc/volcano", c->root);
	dp = opendir(dir);
	if (!dp)
		return 0;
	while ((d = readdir(dp))) {
		l = strlen(d->d_name);
		if (l <= 5 || l - 5 >= sizeof(t->name) || strcmp(d->d_name + l - 5, ".host") != 0)
			continue;
		if (*n >= TASKS_MAX) {
			rc = -E2BIG;
			goto out;
		}
		memcpy(t[*n].name, d->d_name, l - 5);
		t[*n].name[l - 5] = '\0';
		t[(*n)++].hosts = NULL;
	}
out:
	closedir(dp);
	return rc;
}

static int volcano_task_hosts(const struct agent_detect *c, const struct task *t,
			      struct agent_names *l, char *err, size_t errlen)
{
	char what[192], path[192], *txt = NULL;
	int rc;

	if (t->hosts) {
		snprintf(what, sizeof(what), "VC_%s_HOSTS", t->name);
		return push_split(l, t->hosts, ",", what, err, errlen);
	}
	snprintf(path, sizeof(path), "/etc/volcano/%s.host", t->name);
	rc = agent_detect_read(c->root, path, &txt);
	if (rc == 0)
		rc = push_split(l, txt, "\n", path, err, errlen);
	free(txt);
	return rc;
}

/* The union of every task's hosts in natural order of the task names. */
static int volcano_collect(const struct agent_detect *c, struct agent_names *l, size_t *ntasks,
			   char *err, size_t errlen)
{
	struct task *t = calloc(TASKS_MAX, sizeof(*t));
	size_t n = 0, i;
	int rc = 0;

	if (!t)
		return -ENOMEM;
	rc = volcano_env_tasks(c->envp, t, &n);
	if (rc == 0 && n == 0)
		rc = volcano_file_tasks(c, t, &n);
	if (rc < 0) {
		snprintf(err, errlen,
			 "more than %d Volcano tasks (VC_<TASK>_HOSTS or "
			 "/etc/volcano/<task>.host): give the peers with --peers",
			 TASKS_MAX);
		rc = GX_EUSAGE;
		n = 0;
	}
	qsort(t, n, sizeof(*t), task_cmp);
	for (i = 0; i < n && rc == 0; i++)
		rc = volcano_task_hosts(c, &t[i], l, err, errlen);
	*ntasks = n;
	free(t);
	return rc;
}

static int src_volcano_as(const struct agent_detect *c, struct agent_peers *p, const char *source,
			  char *why, size_t whylen, char *err, size_t errlen)
{
	struct agent_names l = {0};
	size_t ntasks = 0;
	long idx = -1;
	int rc;

	rc = volcano_collect(c, &l, &ntasks, err, errlen);
	if (rc == 0 && l.n == 0) {
		snprintf(why, whylen, "no VC_<TASK>_HOSTS variables or /etc/volcano/*.host files");
		goto out;
	}
	/* the index inside the task is the global one only when there is one task */
	if (rc == 0 && ntasks == 1 &&
	    agent_detect_long(c->envp, "VC_TASK_INDEX", 1 << 20, &idx) < 0 &&
	    agent_detect_long(c->envp, "VK_TASK_INDEX", 1 << 20, &idx) < 0)
		idx = -1;
	if (rc == 0)
		rc = agent_detect_finish(c, p, &l, source, idx, err, errlen);
	if (rc == 0)
		rc = 1;
out:
	agent_names_free(l.v, l.n);
	return rc;
}

static int src_volcano(const struct agent_detect *c, struct agent_peers *p, char *why,
		       size_t whylen, char *err, size_t errlen)
{
	return src_volcano_as(c, p, "Volcano", why, whylen, err, errlen);
}

static int has_prefix_var(char **envp, const char *prefix)
{
	size_t n = strlen(prefix);
	char **e;

	for (e = envp; e && *e; e++)
		if (strncmp(*e, prefix, n) == 0)
			return 1;
	return 0;
}

static int src_torchx(const struct agent_detect *c, struct agent_peers *p, char *why, size_t whylen,
		      char *err, size_t errlen)
{
	int rc;

	if (!has_prefix_var(c->envp, "TORCHX_")) {
		snprintf(why, whylen, "no TORCHX_* variables");
		return 0;
	}
	rc = src_volcano_as(c, p, "TorchX", why, whylen, err, errlen);
	if (rc != 0)
		return rc;
	return agent_src_indexed_as(c, p, "TorchX", why, whylen, err, errlen);
}

/* ---- MPI Operator v2 ----------------------------------------------------------- */

/* One hostfile line: "host [slots=N] [max_slots=N]" or "host:N". */
static int mpi_line(char *line, struct agent_names *l, long *slots, char *err, size_t errlen)
{
	char *tok, *save = NULL, *colon;
	long v = 0;
	int rc;

	line[strcspn(line, "#")] = '\0';
	tok = strtok_r(line, " \t\r", &save);
	if (!tok)
		return 0;
	colon = strchr(tok, ':');
	if (colon && gx_parse_long(colon + 1, 1, 1 << 20, &v) == 0)
		*colon = '\0';
	rc = agent_names_push_valid(l, tok, strlen(tok), "/etc/mpi/hostfile", err, errlen);
	while (rc == 0 && (tok = strtok_r(NULL, " \t\r", &save)))
		if (strncmp(tok, "slots=", 6) == 0 && gx_parse_long(tok + 6, 1, 1 << 20, &v) < 0) {
			snprintf(err, errlen, "invalid '%.40s' in /etc/mpi/hostfile", tok);
			rc = GX_EUSAGE;
		}
	if (rc == 0 && l->n > 0)
		*slots = v;
	return rc;
}

static int src_mpi(const struct agent_detect *c, struct agent_peers *p, char *why, size_t whylen,
		   char *err, size_t errlen)
{
	struct agent_names l = {0};
	char *txt = NULL, *line, *save = NULL;
	long slots = 0, *per = NULL, *np;
	size_t had;
	int rc;

	if (agent_detect_read(c->root, "/etc/mpi/hostfile", &txt) < 0) {
		snprintf(why, whylen, "no /etc/mpi/hostfile");
		return 0;
	}
	rc = 0;
	/* each host's slots=N (slotsPerWorker), kept for this pod's own line */
	for (line = strtok_r(txt, "\n", &save); line && rc == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		had = l.n;
		slots = 0;
		rc = mpi_line(line, &l, &slots, err, errlen);
		if (rc < 0 || l.n == had)
			continue;
		np = realloc(per, l.n * sizeof(*per));
		if (!np) {
			rc = -ENOMEM;
			break;
		}
		per = np;
		per[l.n - 1] = slots;
	}
	if (rc == 0 && l.n == 0) {
		snprintf(err, errlen, "/etc/mpi/hostfile lists no hosts");
		rc = GX_EUSAGE;
	}
	if (rc == 0)
		rc = agent_names_unique(&l, "/etc/mpi/hostfile", err, errlen);
	if (rc < 0)
		goto out;
	p->names = l.v;
	p->n = l.n;
	l.v = NULL;
	l.n = 0;
	p->source = "MPI Operator";
	if (agent_self_index(p->names, p->n, c->self, c->is_local_ip, &p->self) < 0) {
		p->self = AGENT_SELF_NONE;
		p->observer = 1; /* the launcher, not listed unless runLauncherAsWorker */
	} else {
		p->slots_hint = per[p->self];
	}
	p->slots = per;
	per = NULL;
	agent_detect_coord(c, p, AGENT_COORD_SIBLING);
	rc = 1;
out:
	agent_names_free(l.v, l.n);
	free(per);
	free(txt);
	return rc;
}

/* ---- driver ----------------------------------------------------------------------- */

static const struct {
	const char *name;
	source_fn *fn;
} sources[] = {
    {"TorchX", src_torchx},
    {"Volcano", src_volcano},
    {"KubeRay", agent_src_ray},
    {"MPI Operator", src_mpi},
    {"PyTorchJob", agent_src_pytorchjob},
    {"LeaderWorkerSet", agent_src_lws},
    {"indexed hostname", agent_src_indexed},
};

int agent_peers_autodetect(const struct agent_detect *c, struct agent_peers *p, char *err,
			   size_t errlen)
{
	char why[160], last[160] = "";
	size_t i;
	int rc;

	for (i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
		why[0] = '\0';
		rc = sources[i].fn(c, p, why, sizeof(why), err, errlen);
		if (rc < 0) {
			gx_info("peers: %s: %s", sources[i].name, err);
			return rc;
		}
		if (rc > 0)
			return 0;
		gx_info("peers: %s: not detected (%s)", sources[i].name, why);
		gx_strlcpy(last, why, sizeof(last));
	}
	snprintf(err, errlen,
		 "cannot tell who the peers are: set --peers (GXBOOT_PEERS), or --nnodes "
		 "(GXBOOT_NNODES) with a <name>-<index> host name; no TorchX, Volcano, MPI "
		 "Operator, PyTorchJob or LeaderWorkerSet inputs found (%s)",
		 last);
	return GX_EUSAGE;
}
