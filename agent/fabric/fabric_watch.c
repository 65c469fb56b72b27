/* SPDX-License-Identifier: MIT */
/*
 * fabric_watch.c - the watcher in the supervisor's loop (FABRIC.md): one timer (tick) dumps
 * the namespace's TCP sockets when they changed and every FABRIC_PERIOD_MS, keeping CMD's
 * (fabric_conn.c: the process tree is walked, and its fd tables read, right after a dump that
 * shows a socket whose holder is not known); the kernel's destroy events give a closed
 * connection's last counters;
 * every period it reads the verified rails' counters and what NCCL and UCX wrote. Then the
 * verdict: the line once there is evidence (or at FABRIC_FIRST_MS), again when the verdict
 * changes and at CMD's exit; one warning per cause; the gate of --expect-fabric. A
 * connection is counted under the interface of its local address and the class of its
 * remote one (agent_fabric_classify).
 */
#include "agent/fabric/fabric_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TREE_MAX 65536
#define REMOTES_MAX 64
#define JSON_EVERY_MS 10000
#define ENVS 8 /* processes whose interface choices are kept */

/* a process's interface choices, read while it held a primary-peer connection: a job's
 * worker has often exited by the sample that names it */
struct proc_envs {
	pid_t pid;
	char env[200];
};

struct remote_acc {
	char addr[FABRIC_ADDR_LEN];
	uint64_t closed, alive;
};

struct agent_fabric {
	struct gx_ev *ev;
	struct fabric_cfg cfg;
	struct fabric_peer_addr *peers;
	char **secondary;
	struct fabric_net net;
	struct fabric_facts facts;
	struct fabric_ifstat closed[FABRIC_MAX_IFS]; /* connections gone: their last bytes */
	struct remote_acc remotes[REMOTES_MAX];
	size_t nremotes;
	struct fabric_conns conns;
	struct fabric_conn_ops conn_ops;
	int net_stale;
	uint64_t timer, kill_timer;
	int64_t t0, last_json_ms;
	struct fabric_logs logs;
	struct proc_envs envs[ENVS];
	size_t nenvs;
	int dfd; /* the destroy events, -1 none */
	int reported, verdict, warned_tcp, warned_primary;
	int gated;
	char gate_why[700];
	uint64_t primary_best; /* the largest primary-peer connection so far */
	uint64_t cpu_us, dumps;
	/* the last full sample */
	int64_t last_eval_ms;
	struct fabric_pace pace; /* dumps on a change */
	long inuse;		 /* the namespace's TCP sockets at the last dump */
	uint64_t freed_seen;	 /* destroy events heard at the last dump */
	struct fabric_pod *pods; /* coordinator */
	int job_printed, finished;
	char job_line[FABRIC_LINE_LEN];
};

static uint64_t cpu_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- interfaces ---- */

static int if_index(struct agent_fabric *f, const char *name, int role)
{
	struct fabric_facts *ft = &f->facts;
	size_t i;

	for (i = 0; i < ft->nifs; i++)
		if (strcmp(ft->ifs[i].name, name) == 0)
			return (int)i;
	if (ft->nifs >= FABRIC_MAX_IFS)
		return (int)ft->nifs - 1; /* the last one takes the rest */
	gx_strlcpy(ft->ifs[ft->nifs].name, name, sizeof(ft->ifs[0].name));
	ft->ifs[ft->nifs].role = role;
	gx_strlcpy(f->closed[ft->nifs].name, name, sizeof(f->closed[0].name));
	return (int)ft->nifs++;
}

static void net_reload(struct agent_fabric *f)
{
	size_t i;

	agent_fabric_net_free(&f->net);
	if (agent_fabric_net_load(f->secondary, &f->net) < 0)
		return;
	for (i = 0; i < f->net.nlocals; i++) {
		const struct fabric_local *l = &f->net.locals[i];
		int x = if_index(f, l->ifname, l->role);

		f->facts.ifs[x].role = l->role; /* a role may appear later (a default route) */
		if (l->role == FI_PRIMARY && !f->facts.primary_if[0])
			gx_strlcpy(f->facts.primary_if, l->ifname, sizeof(f->facts.primary_if));
	}
}

static const char *unmap4(const char *a)
{
	return strncmp(a, "::ffff:", 7) == 0 && strchr(a + 7, '.') ? a + 7 : a;
}

/* ---- connections ---- */

/* A new connection: counted under the interface of its local address and the class of its
 * remote one. */
static void conn_place(void *arg, struct fabric_conn *c, const struct fabric_sock *s)
{
	struct agent_fabric *f = arg;
	char local[FABRIC_ADDR_LEN], remote[FABRIC_ADDR_LEN];
	const struct fabric_local *l;

	agent_fabric_sock_addrs(s, local, remote);
	l = agent_fabric_net_find(&f->net, unmap4(local));
	if (!l && !f->net_stale) { /* an address added since the last look */
		f->net_stale = 1;
		net_reload(f);
		l = agent_fabric_net_find(&f->net, unmap4(local));
	}
	c->ifx = l ? if_index(f, l->ifname, l->role) : if_index(f, "other", FI_OTHER);
	gx_strlcpy(c->remote, unmap4(remote), sizeof(c->remote));
	c->cls = agent_fabric_classify(&f->net, f->peers, f->cfg.npeers, c->remote, &c->peer);
}

static void on_destroy(void *arg, const struct fabric_sock *s)
{
	struct agent_fabric *f = arg;

	agent_fabric_conns_destroyed(&f->conns, s);
}

static void destroy_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct agent_fabric *f = arg;
	uint64_t c0 = cpu_now_us();

	(void)ev;
	(void)events;
	agent_fabric_diag_events(fd, on_destroy, f);
	f->cpu_us += cpu_now_us() - c0;
}

/* value names only interfaces in list ("=net1", "net1,net2", "^eth0" does not): the
 * variable points at the secondary network, as gxboot set it */
static int names_only(char *const *list, const char *value)
{
	char v[256], *tok, *save = NULL;
	int any = 0;

	gx_strlcpy(v, value, sizeof(v));
	for (tok = strtok_r(v, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i, l;
		int hit = 0;

		if (*tok == '=')
			tok++;
		l = strcspn(tok, ":");
		for (i = 0; list && list[i]; i++)
			hit |= strlen(list[i]) == l && strncmp(list[i], tok, l) == 0;
		if (!hit)
			return 0;
		any = 1;
	}
	return any;
}

/* The interface choices in the environment of the process behind a primary-peer connection
 * that do not name the secondary network (what made it go elsewhere). */
static void proc_env(struct agent_fabric *f, pid_t pid, char *out, size_t len)
{
	static const char *const want[] = {
	    "GLOO_SOCKET_IFNAME=", "NCCL_SOCKET_IFNAME=", "TP_SOCKET_IFNAME=", "UCX_NET_DEVICES=",
	    "OMPI_MCA_btl_tcp_if_include="};
	char path[64], *buf = NULL, *p;
	size_t l = 0, i;
	ssize_t n;
	int fd;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	buf = fd >= 0 ? malloc(65536) : NULL;
	n = buf ? read(fd, buf, 65535) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0)
		buf[n] = '\0';
	for (p = buf; n > 0 && p < buf + n; p += strlen(p) + 1) {
		for (i = 0; i < sizeof(want) / sizeof(want[0]) && l < len; i++) {
			size_t wl = strlen(want[i]);

			if (strncmp(p, want[i], wl) == 0 && gx_safe_text(p, 100) &&
			    !names_only(f->secondary, p + wl))
				l += (size_t)snprintf(out + l, len - l, "%s%s", l ? ", " : "", p);
		}
	}
	free(buf);
}

/* A connection is CMD's: the environment of a process that talks to a peer's primary address
 * is read now, while it lives. */
static void conn_owned(void *arg, const struct fabric_conn *c)
{
	struct agent_fabric *f = arg;
	struct proc_envs *e;
	size_t i;

	if (c->cls != FR_PRIMARY || c->pid <= 0)
		return;
	for (i = 0; i < ENVS; i++)
		if (f->envs[i].pid == c->pid)
			return;
	e = &f->envs[f->nenvs++ % ENVS];
	e->pid = c->pid;
	proc_env(f, c->pid, e->env, sizeof(e->env));
}

static void env_of(struct agent_fabric *f, pid_t pid, char *out, size_t len)
{
	size_t i;

	for (i = 0; i < ENVS; i++) {
		if (f->envs[i].pid == pid) {
			gx_strlcpy(out, f->envs[i].env, len);
			return;
		}
	}
	proc_env(f, pid, out, len);
}

static void remote_add(struct agent_fabric *f, const char *addr, uint64_t bytes, int closed)
{
	size_t i;

	for (i = 0; i < f->nremotes && strcmp(f->remotes[i].addr, addr); i++)
		;
	if (i == f->nremotes) {
		if (f->nremotes >= REMOTES_MAX)
			return;
		gx_strlcpy(f->remotes[f->nremotes++].addr, addr, FABRIC_ADDR_LEN);
	}
	if (closed)
		f->remotes[i].closed += bytes;
	else
		f->remotes[i].alive += bytes;
}

static void count_conn(struct agent_fabric *f, struct fabric_ifstat *st,
		       const struct fabric_conn *c, int closed)
{
	struct fabric_facts *ft = &f->facts;

	st->bytes += c->bytes;
	st->conns++;
	st->by_class[c->cls] += c->bytes;
	if (c->cls == FR_OTHER && ft->ifs[c->ifx].role == FI_PRIMARY && c->bytes)
		remote_add(f, c->remote, c->bytes, closed);
	if (c->cls == FR_PRIMARY && c->bytes > f->primary_best) {
		f->primary_best = c->bytes;
		gx_strlcpy(ft->primary_peer, c->peer ? c->peer : "?", sizeof(ft->primary_peer));
		gx_strlcpy(ft->primary_addr, c->remote, sizeof(ft->primary_addr));
		gx_strlcpy(ft->primary_if, ft->ifs[c->ifx].name, sizeof(ft->primary_if));
		if (ft->primary_pid != c->pid && c->pid > 0) {
			ft->primary_pid = c->pid;
			env_of(f, c->pid, ft->primary_env, sizeof(ft->primary_env));
		}
	}
}

static void conn_closed(void *arg, const struct fabric_conn *c)
{
	struct agent_fabric *f = arg;

	count_conn(f, &f->closed[c->ifx], c, 1);
}

static void conn_alive(void *arg, const struct fabric_conn *c)
{
	struct agent_fabric *f = arg;

	count_conn(f, &f->facts.ifs[c->ifx], c, 0);
}

/*
 * CMD's tree and the sockets it holds, less the ones gxboot holds itself: between its fork
 * and its exec CMD's process holds a copy of every fd of gxboot's (its session to the
 * coordinator over eth0 among them), and a read in that window named that session CMD's
 * peer traffic on the primary network (seen in the soft-RoCE VM, where that window is long).
 */
static int conn_scan(void *arg, struct fabric_owner **v, size_t *nv)
{
	struct agent_fabric *f = arg;
	struct fabric_owner *mine = NULL;
	pid_t *pids, self = getpid();
	size_t n = 0, unread = 0, nmine = 0, u = 0;
	int rc;

	pids = malloc(TREE_MAX * sizeof(*pids));
	if (!pids)
		return -ENOMEM;
	rc = agent_fabric_tree(f->cfg.root, pids, TREE_MAX, &n);
	if (rc == 0)
		rc = agent_fabric_socket_owners(pids, n, v, nv, &unread);
	if (rc == 0 && *nv && agent_fabric_socket_owners(&self, 1, &mine, &nmine, &u) == 0) {
		agent_fabric_owners_drop(*v, nv, mine, nmine);
		free(mine);
	}
	if (rc == 0) {
		if (n > f->facts.processes) /* the most at once: at CMD's exit there are none */
			f->facts.processes = n;
		f->facts.unreadable = unread;
	}
	free(pids);
	return rc;
}

/* both families in one walk */
static int conn_dump(void *arg, fabric_sock_fn *fn, void *fn_arg)
{
	(void)arg;
	return agent_fabric_diag_dump(AF_UNSPEC, fn, fn_arg);
}

static void totals(struct agent_fabric *f)
{
	struct fabric_facts *ft = &f->facts;
	size_t i, k;

	for (i = 0; i < f->nremotes; i++)
		f->remotes[i].alive = 0;
	for (i = 0; i < ft->nifs; i++) {
		int role = ft->ifs[i].role;

		ft->ifs[i] = f->closed[i];
		ft->ifs[i].role = role;
	}
	agent_fabric_conns_each(&f->conns, conn_alive, f);
	ft->unseen_bytes = f->conns.unseen_bytes;
	ft->unseen_conns = f->conns.unseen_conns;
	memset(ft->by_class, 0, sizeof(ft->by_class));
	for (i = 0; i < ft->nifs; i++)
		for (k = 0; k < FR_NCLASS; k++)
			ft->by_class[k] += ft->ifs[i].by_class[k];
	/* the unclassified remotes with the most bytes */
	ft->nremotes = 0;
	for (i = 0; i < f->nremotes; i++) {
		uint64_t b = f->remotes[i].closed + f->remotes[i].alive;
		size_t j = ft->nremotes;

		if (!b)
			continue;
		if (j == FABRIC_MAX_REMOTES) {
			if (b <= ft->remotes[j - 1].bytes)
				continue;
			j--;
		} else {
			ft->nremotes++;
		}
		while (j > 0 && ft->remotes[j - 1].bytes < b) {
			ft->remotes[j] = ft->remotes[j - 1];
			j--;
		}
		gx_strlcpy(ft->remotes[j].addr, f->remotes[i].addr, FABRIC_ADDR_LEN);
		ft->remotes[j].bytes = b;
	}
}

/* CMD's sockets: one dump per family; the tree and its fd tables only for new sockets. */
static void sample_sockets(struct agent_fabric *f)
{
	uint64_t c0 = cpu_now_us();

	f->net_stale = 0;
	if (agent_fabric_conns_sample(&f->conns, gx_now_ms()) == 0)
		f->dumps++;
	f->cpu_us += cpu_now_us() - c0;
}

/* Everything else, once per period: the rails, the totals, the libraries' files. */
static void sample(struct agent_fabric *f)
{
	uint64_t c0 = cpu_now_us();
	size_t i;

	for (i = 0; i < f->facts.nrails; i++)
		(void)agent_fabric_rail_read(f->cfg.sysfs, &f->facts.rails[i], 0);
	totals(f);
	agent_fabric_logs_read(&f->logs, f->cfg.out_fd);
	agent_fabric_logs_merge(&f->logs, &f->facts);
	f->cpu_us += cpu_now_us() - c0;
}

/* ---- reports ---- */

static void summary(struct agent_fabric *f, uint32_t extra, struct fabric_summary *s)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->verdict = f->verdict;
	s->flags = extra | (agent_fabric_evidence(&f->facts) ? FS_EVIDENCE : 0) |
		   (f->facts.by_class[FR_PRIMARY] ? FS_PRIMARY_PEER : 0) |
		   (f->gated ? FS_GATED : 0);
	for (i = 0; i < f->facts.nrails; i++)
		s->rails +=
		    f->facts.rails[i].verified &&
		    (f->facts.rails[i].have_bytes ? f->facts.rails[i].bytes >= FABRIC_RDMA_MIN_BYTES
						  : f->facts.rails[i].pkts >= FABRIC_RDMA_MIN_PKTS);
	gx_strlcpy(s->primary_if, f->facts.primary_if, sizeof(s->primary_if));
	agent_fabric_line(&f->facts, f->verdict, s->line, sizeof(s->line));
	s->nremotes = f->facts.nremotes;
	memcpy(s->remotes, f->facts.remotes, sizeof(s->remotes));
}

static void write_json(struct agent_fabric *f, int final)
{
	char err[300] = "", *text;

	f->last_json_ms = gx_now_ms();
	f->facts.cpu_us = f->cpu_us;
	f->facts.dumps = f->dumps;
	f->facts.elapsed_ms = (uint64_t)(gx_now_ms() - f->t0);
	text = agent_fabric_json(&f->facts, f->verdict, final, f->cfg.expect, f->gate_why,
				 f->job_line[0] ? f->job_line : NULL);
	if (!text)
		return;
	if (f->cfg.write_file && f->cfg.write_file(f->cfg.out_fd, f->cfg.out, "fabric.json", text,
						   strlen(text), 0644, err, sizeof(err)) < 0)
		gx_debug("fabric: fabric.json: %s", err);
	free(text);
}

static void job_check(struct agent_fabric *f, int final);

static void report(struct agent_fabric *f, uint32_t extra)
{
	struct fabric_summary s;

	summary(f, extra, &s);
	gx_info("%s", s.line);
	f->reported = 1;
	if (f->pods) {
		f->pods[0].s = s;
		f->pods[0].reported = 1;
		job_check(f, 0);
	} else if (f->cfg.send) {
		f->cfg.send(f->cfg.arg, &s);
	}
	write_json(f, (extra & FS_FINAL) != 0);
}

/* SIGTERM to the process group of each of our children (CMD's group; serve's sessions). */
static int signal_children(struct agent_fabric *f, int sig)
{
	pid_t pids[256];
	size_t n = 0, i;

	if (agent_fabric_tree(f->cfg.root, pids, sizeof(pids) / sizeof(pids[0]), &n) < 0)
		return 0;
	for (i = 0; i < n; i++) {
		pid_t pg = getpgid(pids[i]);

		if (pg > 1 && pg != getpgrp())
			kill(-pg, sig);
		kill(pids[i], sig);
	}
	return (int)n;
}

static void kill_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct agent_fabric *f = arg;

	(void)ev;
	(void)id;
	f->kill_timer = 0;
	if (signal_children(f, SIGKILL))
		gx_warn("fabric: CMD outlived SIGTERM by %d s: killed", FABRIC_KILL_MS / 1000);
}

static void gate(struct agent_fabric *f, const char *why)
{
	static const char *const want[] = {"", "the secondary network", "RDMA", ""};

	if (f->gated)
		return;
	f->gated = 1;
	snprintf(f->gate_why, sizeof(f->gate_why), "--expect-fabric %s: %s; job ended",
		 f->cfg.expect == FABRIC_EXPECT_RDMA ? "rdma" : "secondary", why);
	gx_error("fabric: the job was expected on %s: %s: sending SIGTERM to CMD",
		 want[f->cfg.expect & 3], why);
	signal_children(f, SIGTERM);
	f->kill_timer = gx_ev_timer(f->ev, FABRIC_KILL_MS, kill_fired, f);
	write_json(f, 0);
}

static void judge(struct agent_fabric *f)
{
	char why[600];

	if (agent_fabric_primary_line(&f->facts, why, sizeof(why))) {
		if (!f->warned_primary++)
			gx_warn("fabric: %s", why);
		if (f->cfg.expect == FABRIC_EXPECT_SECONDARY || f->cfg.expect == FABRIC_EXPECT_RDMA)
			gate(f, why);
	}
	if (agent_fabric_tcp_despite_rdma(&f->facts, why, sizeof(why))) {
		if (!f->warned_tcp++)
			gx_warn("fabric: verified RDMA rails, but the job's traffic goes over TCP: "
				"%s",
				why);
		if (f->cfg.expect == FABRIC_EXPECT_RDMA)
			gate(f, why);
	}
}

static void evaluate(struct agent_fabric *f)
{
	int v = agent_fabric_verdict(&f->facts), ev = agent_fabric_evidence(&f->facts);
	int64_t now = gx_now_ms();

	if (!f->reported && (ev || now - f->t0 >= f->cfg.first_ms)) {
		f->verdict = v;
		report(f, 0);
	} else if (f->reported && ev && v != f->verdict) {
		f->verdict = v;
		report(f, 0);
	} else if (now - f->last_json_ms >= JSON_EVERY_MS) {
		f->verdict = v;
		write_json(f, 0);
	}
	judge(f);
	if (f->pods && !f->job_printed && now - f->t0 >= 2 * (int64_t)f->cfg.first_ms)
		job_check(f, 1);
}

/*
 * Every FABRIC_PERIOD_MS the whole sample and the verdict. Between, every FABRIC_TICK_MS, a
 * dump only when the namespace's TCP sockets changed (its count, a freed socket, a child not
 * accepted yet), paced (agent_fabric_pace): each dump walks the kernel's whole TCP hash
 * (262,144 buckets here; up to 512 K by default), 56% of the watcher's CPU at one dump a
 * second, 42% at four (perf, make bench (i)); reading sockstat costs two small reads.
 */
static void tick(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct agent_fabric *f = arg;
	int64_t now = gx_now_ms(), gap;
	int full, changed;
	long inuse = -1;

	(void)id;
	f->timer = 0;
	full = now - f->last_eval_ms >= f->cfg.period_ms - FABRIC_TICK_MS / 2;
	changed = agent_fabric_tcp_inuse(&inuse) < 0 || inuse != f->inuse ||
		  f->conns.freed != f->freed_seen || agent_fabric_conns_wants(&f->conns, now);
	gap = now - f->t0 < FABRIC_START_FAST_MS ? FABRIC_START_GAP_MS : FABRIC_CHANGE_GAP_MS;
	if (agent_fabric_pace(&f->pace, now, gap, changed && !full) || full) {
		f->inuse = inuse;
		f->freed_seen = f->conns.freed;
		sample_sockets(f);
	}
	if (full) {
		f->last_eval_ms = now;
		sample(f);
		evaluate(f);
	}
	f->timer = gx_ev_timer(ev, FABRIC_TICK_MS, tick, f);
}

/* ---- the coordinator's job-wide line ---- */

static void job_print(struct agent_fabric *f)
{
	agent_fabric_job_line(f->pods, f->cfg.world, f->job_line, sizeof(f->job_line));
	gx_info("%s", f->job_line);
	f->job_printed = 1;
}

static int job_all(const struct agent_fabric *f, uint32_t flag)
{
	size_t i;

	for (i = 0; i < f->cfg.world; i++)
		if (f->pods[i].expected &&
		    (!f->pods[i].reported || (flag && !(f->pods[i].s.flags & flag))))
			return 0;
	return 1;
}

/* The line once every pod that reports has reported (or force: the time bound); and the
 * coordinator's own gate for what only it can see (a member's traffic to a peer's eth0). */
static void job_check(struct agent_fabric *f, int force)
{
	size_t i;

	if (!f->job_printed && (force || job_all(f, 0)))
		job_print(f);
	for (i = 1; i < f->cfg.world; i++) {
		char why[600];

		if (!f->pods[i].reported || !f->pods[i].primary_via[0])
			continue;
		snprintf(why, sizeof(why), "%s's peer traffic goes over the primary network: %s",
			 f->pods[i].name, f->pods[i].primary_via);
		if (f->cfg.expect == FABRIC_EXPECT_SECONDARY || f->cfg.expect == FABRIC_EXPECT_RDMA)
			gate(f, why);
	}
}

void agent_fabric_peer(struct agent_fabric *f, size_t index, const struct fabric_summary *s)
{
	struct fabric_pod *p;
	int named;

	if (!f || !f->pods || index == 0 || index >= f->cfg.world)
		return;
	p = &f->pods[index];
	named = p->primary_via[0] != '\0';
	p->s = *s;
	p->reported = 1;
	p->expected = 1;
	gx_debug("fabric: %s: %s", p->name, s->line);
	if (agent_fabric_job_reclassify(p, f->peers, f->cfg.npeers) && !named)
		gx_warn("fabric: %s's peer traffic goes over the primary network: %s", p->name,
			p->primary_via);
	job_check(f, 0);
}

/* ---- start / finish ---- */

static int copy_cfg(struct agent_fabric *f, const struct fabric_cfg *cfg)
{
	size_t i, n = 0;

	f->cfg = *cfg;
	f->peers = calloc(cfg->npeers ? cfg->npeers : 1, sizeof(*f->peers));
	if (!f->peers)
		return -ENOMEM;
	if (cfg->npeers)
		memcpy(f->peers, cfg->peers, cfg->npeers * sizeof(*f->peers));
	while (cfg->secondary && cfg->secondary[n])
		n++;
	f->secondary = calloc(n + 1, sizeof(char *));
	for (i = 0; f->secondary && i < n; i++)
		f->secondary[i] = strdup(cfg->secondary[i]);
	if (!f->secondary)
		return -ENOMEM;
	f->cfg.peers = NULL;
	f->cfg.secondary = NULL;
	if (!f->cfg.period_ms)
		f->cfg.period_ms = FABRIC_PERIOD_MS;
	if (!f->cfg.first_ms)
		f->cfg.first_ms = FABRIC_FIRST_MS;
	if (!f->cfg.sysfs)
		f->cfg.sysfs = "/sys";
	return 0;
}

static int pods_init(struct agent_fabric *f)
{
	size_t i;

	if (!f->cfg.is_coord || !f->cfg.world)
		return 0;
	f->pods = calloc(f->cfg.world, sizeof(*f->pods));
	if (!f->pods)
		return -ENOMEM;
	for (i = 0; i < f->cfg.world; i++) {
		gx_strlcpy(f->pods[i].name, f->cfg.names && f->cfg.names[i] ? f->cfg.names[i] : "?",
			   sizeof(f->pods[i].name));
		f->pods[i].expected = i == 0 || (f->cfg.reports && f->cfg.reports[i]);
	}
	f->cfg.names = NULL;
	f->cfg.reports = NULL;
	return 0;
}

static void rails_init(struct agent_fabric *f)
{
	struct fabric_facts *ft = &f->facts;
	size_t i;

	for (i = 0; i < f->cfg.nrails && ft->nrails < FABRIC_MAX_RAILS; i++) {
		struct fabric_rail *r = &ft->rails[ft->nrails];

		*r = f->cfg.rails[i];
		if (agent_fabric_rail_read(f->cfg.sysfs, r, 1) < 0) {
			gx_debug("fabric: %s:%d has no port counters", r->dev, r->port);
			gx_strlcpy(r->source, "none", sizeof(r->source));
		}
		ft->nrails++;
	}
	f->cfg.rails = NULL;
}

int agent_fabric_precheck(const struct fabric_cfg *cfg, char *line, size_t len)
{
	size_t i, n = 0;

	if (cfg->expect != FABRIC_EXPECT_RDMA)
		return 0;
	for (i = 0; i < cfg->nrails; i++)
		n += cfg->rails[i].verified != 0;
	if (n)
		return 0;
	snprintf(line, len,
		 "--expect-fabric rdma: this pod has no verified RDMA rail (see the RDMA lines "
		 "above); CMD not started");
	return 1;
}

int agent_fabric_start(struct gx_ev *ev, const struct fabric_cfg *cfg, struct agent_fabric **ret)
{
	struct agent_fabric *f = calloc(1, sizeof(*f));
	int rc;

	if (!f)
		return -ENOMEM;
	f->ev = ev;
	f->dfd = -1;
	f->conn_ops = (struct fabric_conn_ops){.dump = conn_dump,
					       .scan = conn_scan,
					       .place = conn_place,
					       .owned = conn_owned,
					       .closed = conn_closed,
					       .arg = f};
	f->conns.ops = &f->conn_ops;
	rc = copy_cfg(f, cfg);
	if (rc == 0)
		rc = pods_init(f);
	if (rc < 0) {
		agent_fabric_free(f);
		return rc;
	}
	f->facts.full_table = cfg->full_table;
	f->facts.nccl_ours = cfg->lib.nccl_ours;
	f->facts.ucx_ours = cfg->lib.ucx_ours;
	gx_strlcpy(f->facts.nccl_user, cfg->lib.nccl_user, sizeof(f->facts.nccl_user));
	gx_strlcpy(f->facts.ucx_user, cfg->lib.ucx_user, sizeof(f->facts.ucx_user));
	net_reload(f);
	rails_init(f);
	if (cfg->lib.nccl_ours || cfg->lib.ucx_ours)
		agent_fabric_logs_clean(cfg->out_fd, cfg->out);
	if (agent_fabric_diag_listen(&f->dfd) == 0)
		(void)gx_ev_add(ev, f->dfd, EPOLLIN, destroy_event, f);
	else
		gx_debug("fabric: no TCP destroy events: a connection's last bytes are its last "
			 "sample's");
	f->t0 = gx_now_ms();
	f->last_json_ms = f->last_eval_ms = f->t0;
	f->pace.last = f->t0;
	f->pace.credit = FABRIC_DUMP_BURST * FABRIC_START_GAP_MS;
	f->inuse = -1;
	f->timer = gx_ev_timer(ev, FABRIC_TICK_MS, tick, f);
	*ret = f;
	return 0;
}

/* Run the loop until done(arg) or the deadline. */
static void run_until(struct agent_fabric *f, int (*done)(const struct agent_fabric *),
		      int64_t deadline)
{
	while (!done(f) && gx_now_ms() < deadline) {
		int64_t next = gx_now_ms() + 50;

		(void)gx_ev_run_until(f->ev, next < deadline ? next : deadline);
	}
}

static int finals_in(const struct agent_fabric *f)
{
	return job_all(f, FS_FINAL);
}

static int member_flushed(const struct agent_fabric *f)
{
	return !f->cfg.flushed || f->cfg.flushed(f->cfg.arg);
}

int agent_fabric_finish(struct agent_fabric *f, char *line, size_t len)
{
	if (!f)
		return 0;
	if (f->finished)
		goto out;
	f->finished = 1;
	gx_ev_timer_cancel(f->ev, f->timer);
	f->timer = 0;
	gx_ev_timer_cancel(f->ev, f->kill_timer);
	f->kill_timer = 0;
	if (f->dfd >= 0) /* CMD's sockets closed with it: their last words first */
		agent_fabric_diag_events(f->dfd, on_destroy, f);
	sample_sockets(f);
	sample(f);
	f->verdict = agent_fabric_verdict(&f->facts);
	judge(f);
	if (f->pods) {
		f->pods[0].expected = 1;
		report(f, FS_FINAL);
		/* the members' last reports: their CMDs end about when ours did */
		run_until(f, finals_in, gx_now_ms() + FABRIC_FINAL_WAIT_MS);
		job_print(f);
		write_json(f, 1);
	} else {
		report(f, FS_FINAL);
		run_until(f, member_flushed, gx_now_ms() + FABRIC_FINAL_WAIT_MS);
	}
out:
	if (!f->gated)
		return 0;
	snprintf(line, len, "%s", f->gate_why);
	return GX_EFABRIC;
}

int agent_fabric_gated(const struct agent_fabric *f)
{
	return f && f->gated;
}

void agent_fabric_free(struct agent_fabric *f)
{
	size_t i;

	if (!f)
		return;
	gx_ev_timer_cancel(f->ev, f->timer);
	gx_ev_timer_cancel(f->ev, f->kill_timer);
	if (f->dfd >= 0) {
		gx_ev_del(f->ev, f->dfd);
		close(f->dfd);
	}
	agent_fabric_conns_free(&f->conns);
	for (i = 0; f->secondary && f->secondary[i]; i++)
		free(f->secondary[i]);
	free(f->secondary);
	free(f->peers);
	free(f->pods);
	agent_fabric_logs_free(&f->logs);
	agent_fabric_net_free(&f->net);
	free(f);
}
