/* SPDX-License-Identifier: MIT */
/*
 * run_fabric.c - the transport watcher in the run pipeline (agent/fabric/FABRIC.md): which
 * pods report (they supervise CMD or serve), the members' sessions that carry the reports to
 * the coordinator (cfg.stay, RDZV_PF_FABRIC), the library variables CMD gets, and what the
 * watcher is told: this pod's secondary interfaces, the peers' addresses it knows, the rails
 * that verified. Ends in agent_run_fabric_finish: the last line, and GX_EFABRIC (exit 6) when
 * --expect-fabric ended the job.
 */
#include "agent/fabric/fabric.h"
#include "agent/pipeline/out_int.h"
#include "agent/pipeline/run_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int agent_run_fabric_reports(const struct agent_run *r)
{
	const struct agent_opts *o = r->o;

	if (o->expect_fabric == AGENT_FABRIC_OFF || r->peers.observer)
		return 0;
	if (o->cmd == AGENT_CMD_SERVE)
		return 1;
	return o->cmd == AGENT_CMD_RUN && o->argc > 0 &&
	       (o->supervise || o->serve || getpid() == 1 ||
		(r->peers.elastic && r->peers.self == 0));
}

/* ---- the coordinator's end of the reports ---- */

static void to_summary(const struct rdzv_fabric *in, struct fabric_summary *s)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->verdict = in->verdict <= FABRIC_PRIMARY ? (int)in->verdict : FABRIC_UNKNOWN;
	s->flags = in->flags;
	s->rails = in->rails;
	gx_strlcpy(s->primary_if, in->primary_if, sizeof(s->primary_if));
	gx_strlcpy(s->line, in->line, sizeof(s->line));
	for (i = 0; i < in->nremotes && i < FABRIC_MAX_REMOTES; i++) {
		gx_strlcpy(s->remotes[i].addr, in->remotes[i].addr, sizeof(s->remotes[i].addr));
		s->remotes[i].bytes = in->remotes[i].bytes;
	}
	s->nremotes = i;
}

static void fabric_in(void *arg, uint32_t index, const struct rdzv_fabric *in)
{
	struct agent_run *r = arg;
	struct fabric_summary s;

	to_summary(in, &s);
	if (r->fabric) {
		agent_fabric_peer(r->fabric, index, &s);
		return;
	}
	/* before our watcher started (our files still being written): kept for it */
	if (!r->fabric_early && r->res.world)
		r->fabric_early = calloc(r->res.world, sizeof(*r->fabric_early));
	if (r->fabric_early && index < r->res.world) {
		r->fabric_early[index] = s;
		r->fabric_early[index].flags |= 0x80000000u; /* present */
	}
}

void agent_run_fabric_rdzv(struct agent_run *r, struct rdzv_config *cfg)
{
	if (!agent_run_fabric_reports(r))
		return;
	if (cfg->is_coordinator) {
		cfg->fabric = fabric_in;
		cfg->fabric_arg = r;
		return;
	}
	/* a relay's children do not stay (their session outlives the relay's): past the
	 * relay tree's size the members report locally only */
	if (cfg->relay_fanout)
		return;
	cfg->stay = 1;
	cfg->self.flags |= RDZV_PF_FABRIC;
}

/* ---- the member's end ---- */

static void send_report(void *arg, const struct fabric_summary *s)
{
	struct agent_run *r = arg;
	struct rdzv_fabric f;
	size_t i;

	memset(&f, 0, sizeof(f));
	f.verdict = (uint32_t)s->verdict;
	f.flags = s->flags;
	f.rails = s->rails;
	gx_strlcpy(f.primary_if, s->primary_if, sizeof(f.primary_if));
	gx_strlcpy(f.line, s->line, sizeof(f.line));
	for (i = 0; i < s->nremotes && i < RDZV_FABRIC_REMOTES; i++) {
		gx_strlcpy(f.remotes[i].addr, s->remotes[i].addr, sizeof(f.remotes[i].addr));
		f.remotes[i].bytes = s->remotes[i].bytes;
	}
	f.nremotes = i;
	if (rdzv_member_fabric(r->member, &f) < 0)
		gx_debug("fabric: no session to the coordinator: the report stays local");
}

static int sent(void *arg)
{
	struct agent_run *r = arg;

	return rdzv_member_flushed(r->member);
}

/* ---- what the watcher is told ---- */

int agent_run_fabric_env(struct agent_run *r, struct agent_env *env)
{
	struct fabric_libvars v;
	size_t i;
	int rc = 0;

	if (!agent_run_fabric_reports(r))
		return 0;
	agent_fabric_libvars(environ, r->o->out, &v);
	for (i = 0; i < v.n && rc == 0; i++)
		rc = agent_env_set(env, v.names[i], v.values[i]);
	r->fabric_lib = v;
	r->fabric_lib_set = 1;
	return rc;
}

static void peer_add(struct fabric_peer_addr *v, size_t *n, size_t cap, const char *addr,
		     const char *name, int primary)
{
	if (!addr || !addr[0] || *n >= cap)
		return;
	gx_strlcpy(v[*n].addr, addr, sizeof(v[0].addr));
	gx_strlcpy(v[*n].name, name, sizeof(v[0].name));
	v[(*n)++].primary = primary;
}

/* An entry's addresses: secondary, its rails' ("dev:port/netdev/addr,..."), its primary. */
static void entry_add(struct fabric_peer_addr *v, size_t *n, size_t cap, const struct rdzv_peer *p)
{
	const char *s = p->rails;

	peer_add(v, n, cap, p->addr4, p->name, 0);
	peer_add(v, n, cap, p->addr6, p->name, 0);
	while (*s) {
		const char *end = strchr(s, ','), *a = s, *slash;
		char addr[64];
		size_t l = end ? (size_t)(end - s) : strlen(s);

		/* the address: after the second '/' of the item */
		slash = memchr(a, '/', l);
		slash = slash ? memchr(slash + 1, '/', l - (size_t)(slash + 1 - a)) : NULL;
		if (slash && (size_t)(a + l - slash - 1) < sizeof(addr)) {
			snprintf(addr, sizeof(addr), "%.*s", (int)(a + l - slash - 1), slash + 1);
			if (strcmp(addr, p->addr4) && strcmp(addr, p->addr6))
				peer_add(v, n, cap, addr, p->name, 0);
		}
		s += l + (end != NULL);
	}
	peer_add(v, n, cap, p->primary, p->name, 1);
}

static struct fabric_peer_addr *known_peers(const struct agent_run *r, size_t *n)
{
	size_t cap = (r->res.ntable ? r->res.ntable : 2) * 12 + 1;
	struct fabric_peer_addr *v = calloc(cap, sizeof(*v));
	char primary[64];
	size_t i;

	*n = 0;
	if (!v)
		return NULL;
	for (i = 0; i < r->res.ntable; i++)
		entry_add(v, n, cap, &r->res.table[i]);
	if (!r->res.ntable) {
		entry_add(v, n, cap, &r->res.coord);
		/* the coordinator's eth0 as DNS gave it to us (its own entry has no primary) */
		if (r->ever_resolved &&
		    gx_addr_str(&r->coord_primary, primary, sizeof(primary)) != NULL)
			peer_add(v, n, cap, primary, r->res.coord.name, 1);
	}
	return v;
}

/* "dev:port,dev:port" into rails */
static size_t rails_parse(const char *hca, int verified, struct fabric_rail *v, size_t cap)
{
	size_t n = 0;

	while (hca && *hca && n < cap) {
		size_t l = strcspn(hca, ",");
		char item[80], *colon;
		long port = 1;

		snprintf(item, sizeof(item), "%.*s", (int)(l < 79 ? l : 79), hca);
		colon = strchr(item, ':');
		if (colon) {
			*colon = '\0';
			if (gx_parse_long(colon + 1, 1, 255, &port) < 0)
				port = 1;
		}
		memset(&v[n], 0, sizeof(v[n]));
		gx_strlcpy(v[n].dev, item, sizeof(v[n].dev));
		v[n].port = (int)port;
		v[n++].verified = verified;
		hca += l + (hca[l] == ',');
	}
	return n;
}

static size_t our_rails(const struct agent_run *r, struct fabric_rail *v, size_t cap)
{
	char hca[1024];

	if (!r->nd || r->nd_rc < 0 || !r->nd->rdma_usable)
		return 0;
	if (r->rdma_v.state == 1 && r->rdma_gated)
		return rails_parse(r->rdma_hca, 1, v, cap);
	if (nd_rails_hca(r->nd, hca, sizeof(hca)) < 0)
		return 0;
	return rails_parse(hca, r->rdma_v.state == 1, v, cap);
}

static char **secondary_ifaces(const struct agent_run *r)
{
	char **v;
	size_t i, n = 0;

	v = calloc((r->nd ? r->nd->nrails : 0) + 2, sizeof(*v));
	if (!v || !r->nd || r->nd_rc < 0)
		return v;
	v[n++] = (char *)r->nd->iface;
	for (i = 0; i < r->nd->nrails; i++)
		if (r->nd->rails[i].iface[0] && strcmp(r->nd->rails[i].iface, r->nd->iface))
			v[n++] = (char *)r->nd->rails[i].iface;
	return v;
}

static void coord_pods(const struct agent_run *r, struct fabric_cfg *c, char ***names, int **rep)
{
	size_t i;

	if (!r->coord || !r->res.ntable)
		return;
	*names = calloc(r->res.ntable, sizeof(**names));
	*rep = calloc(r->res.ntable, sizeof(**rep));
	if (!*names || !*rep)
		return;
	for (i = 0; i < r->res.ntable; i++) {
		(*names)[i] = (char *)r->res.table[i].name;
		(*rep)[i] = (r->res.table[i].flags & RDZV_PF_FABRIC) != 0;
	}
	c->names = *names;
	c->reports = *rep;
	c->world = r->res.ntable;
	c->is_coord = 1;
}

static void replay_early(struct agent_run *r)
{
	size_t i;

	for (i = 0; r->fabric_early && i < r->res.world; i++) {
		if (!(r->fabric_early[i].flags & 0x80000000u))
			continue;
		r->fabric_early[i].flags &= ~0x80000000u;
		agent_fabric_peer(r->fabric, i, &r->fabric_early[i]);
	}
	free(r->fabric_early);
	r->fabric_early = NULL;
}

int agent_run_fabric_start(struct agent_run *r, char *err, size_t errlen)
{
	struct fabric_rail rails[FABRIC_MAX_RAILS];
	struct fabric_cfg c;
	char **names = NULL, **sec = NULL;
	int *rep = NULL, rc;

	if (!agent_run_fabric_reports(r) || !r->ev)
		return 0;
	memset(&c, 0, sizeof(c));
	c.out = r->o->out;
	/* --out as the run opened it (its files went through it); the watcher's files too */
	c.out_fd = agent_run_out(r, err, errlen);
	if (c.out_fd < 0) {
		gx_warn("fabric: the transport watcher did not start: %s", err);
		err[0] = '\0';
		return 0;
	}
	c.expect = (int)r->o->expect_fabric;
	c.self_name = r->self.name;
	c.root = getpid();
	c.rails = rails;
	c.nrails = our_rails(r, rails, FABRIC_MAX_RAILS);
	if (agent_fabric_precheck(&c, err, errlen))
		return GX_EFABRIC;
	if (r->fabric_lib_set)
		c.lib = r->fabric_lib;
	else /* serve after init: the env came from --out/env, no variable of ours */
		agent_fabric_libvars(environ, "", &c.lib);
	sec = secondary_ifaces(r);
	c.secondary = sec;
	c.peers = known_peers(r, &c.npeers);
	c.full_table = r->res.ntable > 0;
	coord_pods(r, &c, &names, &rep);
	c.write_file = agent_write_file_at;
	if (r->member) {
		c.send = send_report;
		c.flushed = sent;
		c.arg = r;
	}
	rc = agent_fabric_start(r->ev, &c, &r->fabric);
	free((void *)c.peers);
	free(sec);
	free(names);
	free(rep);
	if (rc == 0)
		replay_early(r);
	else
		gx_warn("fabric: the transport watcher did not start: %s", gx_strerror(rc));
	return 0; /* a watcher that cannot start does not stop the job */
}

int agent_run_fabric_finish(struct agent_run *r, int rc, char *err, size_t errlen)
{
	char line[800];
	int frc;

	if (!r->fabric)
		return rc;
	frc = agent_fabric_finish(r->fabric, line, sizeof(line));
	if (frc == GX_EFABRIC && (rc >= 0 || rc == GX_ERDZV)) {
		snprintf(err, errlen, "%s", line);
		return GX_EFABRIC;
	}
	return rc;
}
