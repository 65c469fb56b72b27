/* SPDX-License-Identifier: MIT */
/*
 * run.c - the pipeline of `gxboot -- CMD` and `gxboot init`: peers, token,
 * netdetect, rendezvous, files, then exec or supervise.
 */
#include "agent/fabric/fabric.h"
#include "agent/pipeline/run_int.h"
#include "agent/peers/peers.h"
#include "agent/launch/launch.h"
#include "agent/pipeline/out_int.h"
#include "agent/remote/remote.h"
#include "agent/preflight/preflight.h"
#include "netdetect/netdetect.h"
#include "rdzv/rdzv.h"
#include "rdzv/rdma/rdzv_rdma.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

#define DNS_TRAP_MS 30000
#define NETSTATUS_WAIT_MS 60000
#define NETSTATUS_POLL_MS 500

static int wait_netstatus(struct agent_run *r);
static void table_changed(void *arg, const struct rdzv_peer *tab, size_t n);

static const char dns_trap_hint[] =
    "the coordinator's name has only given NXDOMAIN for 30 s: in init-container mode the "
    "headless Service must publish not-ready addresses (JobSet: default; Volcano: svc plugin "
    "--publish-not-ready-addresses; StatefulSet: publishNotReadyAddresses: true; "
    "PyTorchJob: use entrypoint mode)";

/* A bare coordinator name on a pod without a subdomain: a kubelet puts the namespace,
 * not the subdomain, in the search list, so the bare name is NXDOMAIN. */
static const char nosub_hint[] =
    "; this pod has no subdomain (no full name for it in /etc/hosts), so a bare peer name "
    "resolves only as a Service of the namespace: give the pods spec.hostname and "
    "spec.subdomain = the headless Service's name, or write the peers as <pod>.<service>";

/* How long one answer for the coordinator's name is used before asking again. */
#define COORD_DNS_REUSE_MS 2000

/* An observer without a secondary of its own names the peers' interface. */
static int nd_ok(const struct agent_run *r)
{
	return r->nd_rc >= 0 && r->nd && r->nd->iface[0];
}

static const char *our_iface(const struct agent_run *r)
{
	return nd_ok(r) ? r->nd->iface : r->res.coord.iface;
}

/* The answer of resolve_coord's lookup: NXDOMAIN bookkeeping, then the member goes on. */
static void coord_resolved(void *arg, int rc, const struct agent_dns_answer *ans)
{
	struct agent_run *r = arg;
	union gx_sockaddr sa = {0};
	socklen_t len = 0;
	int64_t now = gx_now_ms();

	if (rc == 0) {
		sa = ans->addrs[0];
		len = ans->lens[0];
		r->coord_primary = ans->addrs[0];
		r->coord_resolved_ms = now;
		r->ever_resolved = 1;
		agent_claim_watch(r, &sa, len); /* our own address: are we the coordinator? */
	} else if (rc == -ENOENT && r->peers.coord_maybe_plain && !r->ever_resolved) {
		/* a bare name qualified with our subdomain may be a Service or a hosts
		 * entry after all: the next attempt asks for it as given (then back) */
		r->coord_as_given = !r->coord_as_given;
	}
	if (rc == -ENOENT && !r->ever_resolved) {
		if (!r->first_nxdomain_ms)
			r->first_nxdomain_ms = now;
		if (!r->dns_hint_shown && now - r->first_nxdomain_ms >= DNS_TRAP_MS &&
		    r->o->cmd == AGENT_CMD_INIT) {
			gx_warn("%s", dns_trap_hint);
			r->dns_hint_shown = 1;
		}
	}
	if (rc < 0)
		gx_debug("resolving %s: %s", r->coord_lookup, gx_strerror(rc));
	rdzv_member_resolved(r->member, rc, &sa, len);
}

/*
 * rdzv's resolve hook: look the coordinator's name up again before each
 * connect, in our own loop (no blocking DNS beside the loop).
 */
static int resolve_coord(void *arg, union gx_sockaddr *sa, socklen_t *len)
{
	struct agent_run *r = arg;
	uint16_t port = (uint16_t)(r->port ? r->port : r->o->port);
	int rc;

	if (gx_addr_parse(r->coord_lookup, port, sa, len) == 0) {
		r->ever_resolved = 1; /* an IP needs no DNS */
		return 0;
	}
	/* a fresh answer serves the next attempts for COORD_DNS_REUSE_MS (512
	 * members retrying a refused connect every ~256 ms asked dnsmasq ~2,000 times a
	 * second, and its timeouts kept 159 of them out of the check); a coordinator that
	 * moved is asked for again once it is older */
	if (r->ever_resolved && gx_now_ms() - r->coord_resolved_ms < COORD_DNS_REUSE_MS) {
		*sa = r->coord_primary; /* asked for with this port */
		*len = sa->sa.sa_family == AF_INET6 ? sizeof(sa->in6) : sizeof(sa->in4);
		return 0;
	}
	agent_dns_free(r->dns);
	r->dns = NULL;
	r->coord_asked = 1;
	rc = agent_dns_start(r->ev, r->coord_as_given ? r->peers.names[0] : r->coord_lookup,
			     r->o->dns_server, port, coord_resolved, r, &r->dns);
	return rc < 0 ? rc : -EINPROGRESS;
}

static const char *relay_lookup_name(const struct agent_run *r)
{
	return r->relay_as_given ? r->peers.names[r->relay_idx] : r->relay_lookup;
}

/* The answer for our relay's name: the member connects, or counts a failure. */
static void relay_resolved(void *arg, int rc, const struct agent_dns_answer *ans)
{
	struct agent_run *r = arg;

	if (rc < 0)
		gx_debug("resolving the relay %s: %s", relay_lookup_name(r), gx_strerror(rc));
	/* our guess of its full name from a bare --peers name: the next try asks for it as
	 * written (then back), as for the coordinator's */
	if (rc == -ENOENT && r->peers.coord_maybe_plain)
		r->relay_as_given = !r->relay_as_given;
	if (rc == 0) {
		r->relay_addr = ans->addrs[0];
		r->relay_resolved_ms = gx_now_ms();
		r->relay_ever_resolved = 1;
	}
	rdzv_member_resolved(r->member, rc, rc == 0 ? &ans->addrs[0] : NULL,
			     rc == 0 ? ans->lens[0] : 0);
}

static int relay_lookup_set(struct agent_run *r, size_t rel);

/* rdzv's relay_resolve hook: our relay's name, looked up before each connect to it (another
 * relay's when the coordinator sent us there). */
static int resolve_relay(void *arg, uint32_t relay, union gx_sockaddr *sa, socklen_t *len)
{
	struct agent_run *r = arg;
	uint16_t port = (uint16_t)(r->port ? r->port : r->o->port);
	int rc;

	if (relay != r->relay_idx) {
		rc = relay_lookup_set(r, relay);
		if (rc < 0)
			return rc;
	}
	if (gx_addr_parse(r->relay_lookup, port, sa, len) == 0) {
		r->relay_ever_resolved = 1; /* an IP needs no DNS */
		return 0;
	}
	/* as for the coordinator's name: one answer serves COORD_DNS_REUSE_MS of retries (a
	 * refused connect is retried every F / 2000 s: 128 ms at F = 256) */
	if (r->relay_resolved_ms && gx_now_ms() - r->relay_resolved_ms < COORD_DNS_REUSE_MS) {
		*sa = r->relay_addr;
		*len = sa->sa.sa_family == AF_INET6 ? sizeof(sa->in6) : sizeof(sa->in4);
		return 0;
	}
	agent_dns_free(r->rdns);
	r->rdns = NULL;
	r->relay_asked = 1;
	rc = agent_dns_start(r->ev, relay_lookup_name(r), r->o->dns_server, port, relay_resolved, r,
			     &r->rdns);
	return rc < 0 ? rc : -EINPROGRESS;
}

/*
 * The relay tree (PROTOCOL.md "Relays"): past AGENT_RELAY_WORLD pods, member i
 * joins through pod (i / F) * F. GXBOOT_RELAY_FANOUT sets F (0: never; the peers must
 * agree). Our relay's name is qualified as the coordinator's is: the coordinator's full
 * name with its listed name replaced (one headless Service), else as listed.
 */
/* GXBOOT_RELAY_FANOUT, checked at start (exit 2 and one line): -1 when unset. */
static int relay_fanout_env(long *f, char *err, size_t errlen)
{
	const char *v = getenv("GXBOOT_RELAY_FANOUT");

	*f = -1;
	if (!v || !*v)
		return 0;
	if (gx_parse_long(v, 0, 512, f) < 0 || *f == 1) {
		snprintf(err, errlen, "GXBOOT_RELAY_FANOUT=%.32s: give 0 (no relays) or 2 to 512",
			 v);
		return GX_EUSAGE;
	}
	return 0;
}

/* The name looked up for relay rel: qualified as the coordinator's is (see relay_name). */
static int relay_lookup_set(struct agent_run *r, size_t rel)
{
	char name[600], *dup;

	if (rel == 0 || rel >= r->peers.n)
		return -EINVAL;
	agent_peer_lookup(r, rel, 0, name, sizeof(name));
	dup = strdup(name);
	if (!dup)
		return -ENOMEM;
	free(r->relay_lookup);
	r->relay_lookup = dup;
	r->relay_idx = rel;
	r->relay_resolved_ms = 0; /* another relay: its own answer */
	r->relay_as_given = 0;
	return 0;
}

static int relay_name(struct agent_run *r, uint32_t f)
{
	size_t i = r->peers.self, rel;

	/* an observer (AGENT_SELF_NONE) joins the coordinator: it stays for the job's end */
	if (f < 2 || r->peers.observer || i == AGENT_SELF_NONE || i == 0 || i >= r->peers.n ||
	    r->peers.elastic)
		return 0;
	rel = i / f * f;
	if (rel == 0 || rel == i)
		return 0;
	return relay_lookup_set(r, rel);
}

static void progress(void *arg, const char *line)
{
	gx_info("%s", line);
	agent_listen_progress(arg, line); /* do the missing ones listen as coordinators? */
}

static void rdzv_done(void *arg, int rc, const struct rdzv_result *res)
{
	struct agent_run *r = arg;

	r->rdzv_rc = rc;
	r->res = *res;
	r->res.table = NULL;
	r->res.ntable = 0;
	if (res->ntable) {
		/* the object owns its result: keep a copy of the table */
		r->res.table = calloc(res->ntable, sizeof(*res->table));
		if (r->res.table) {
			memcpy(r->res.table, res->table, res->ntable * sizeof(*res->table));
			r->res.ntable = res->ntable;
		} else if (rc == 0) {
			r->rdzv_rc = -ENOMEM;
		}
	}
	r->rdzv_done = 1;
	gx_ev_stop(r->ev, 0);
}

/* Our rails for the JOIN: "dev:port/netdev/addr,..." (whole items only). */
static void rails_text(const struct nd_result *nd, char *out, size_t cap)
{
	size_t i, len = 0;

	out[0] = '\0';
	for (i = 0; i < nd->nrails; i++) {
		const struct nd_rail *rl = &nd->rails[i];
		int n = snprintf(out + len, cap - len, "%s%s:%d/%s/%s", len ? "," : "", rl->dev,
				 rl->port, rl->iface, rl->addr);

		if (n < 0 || (size_t)n >= cap - len) {
			out[len] = '\0';
			return;
		}
		len += (size_t)n;
	}
}

static void fill_self(struct agent_run *r, struct rdzv_peer *self)
{
	const struct nd_result *nd = r->nd;

	memset(self, 0, sizeof(*self));
	randombytes_buf(&self->incarnation, sizeof(self->incarnation));
	/* --slots, else the job system's (MPI Operator's slots=N), else
	 * NVIDIA_VISIBLE_DEVICES, /dev/nvidia*, 1 */
	self->slots = (uint32_t)agent_slots_self(r->o->slots, r->peers.slots_hint, environ, "");
	self->flags = r->self_flags;
	self->gid_index = -1;
	if (r->peers.observer) {
		/* an observer (MPI Operator's launcher): no rank; a secondary of its own is
		 * optional */
		gx_strlcpy(self->name, r->o->self ? r->o->self : r->hostname, sizeof(self->name));
		if (!gx_valid_hostname(self->name))
			gx_strlcpy(self->name, "observer", sizeof(self->name));
		self->index = RDZV_OBSERVER;
		if (r->nd_rc < 0 || !nd)
			return;
	} else if (r->peers.self == AGENT_SELF_NONE) {
		/* elastic (Ray): joins by its own name, the coordinator picks the rank */
		const char *id = getenv("RAY_CLOUD_INSTANCE_ID"); /* KubeRay: the pod name */

		gx_strlcpy(self->name,
			   r->o->self			 ? r->o->self
			   : id && gx_valid_hostname(id) ? id
							 : r->hostname,
			   sizeof(self->name));
		self->index = RDZV_ELASTIC;
	} else {
		gx_strlcpy(self->name, r->peers.names[r->peers.self], sizeof(self->name));
		self->index = (uint32_t)r->peers.self;
	}
	if (r->nd_rc < 0 || !nd) {
		self->nd_err = r->nd_rc;
		gx_strlcpy(self->nd_why, r->nd_err, sizeof(self->nd_why));
		return;
	}
	gx_strlcpy(self->iface, nd->iface, sizeof(self->iface));
	self->mtu = nd->mtu;
	rails_text(nd, self->rails, sizeof(self->rails));
	gx_strlcpy(self->addr4, nd->addr4, sizeof(self->addr4));
	gx_strlcpy(self->addr6, nd->addr6, sizeof(self->addr6));
	self->plen4 = nd->addr4[0] ? nd->prefix4 : 0;
	self->plen6 = nd->addr6[0] ? nd->prefix6 : 0;
	if (nd->rdma_usable) {
		gx_strlcpy(self->rdma_dev, nd->rdma_dev, sizeof(self->rdma_dev));
		self->rdma_port = nd->rdma_port;
		self->gid_index = nd->gid_index;
		self->link_layer = nd->link_layer;
	} else {
		self->gid_index = -1;
	}
}

/*
 * Where this pod's chosen iface has a usable RDMA port, phase 2
 * also completes an RDMA-CM connect + send/recv to the coordinator (the
 * coordinator listens); when both ends have one and it fails, exit 5.
 */
static const struct rdzv_rdma_ops *rdma_ops(struct agent_run *r)
{
	int rc;

	if (!nd_ok(r) || !r->nd->rdma_usable || !r->nd->rdma_dev[0])
		return NULL;
	rc = rdzv_rdma_ctx_new(rdzv_rdma_cm_real(), 0, &r->rdma_ctx);
	if (rc == 0) /* wire v2: the job's key proves each PING and PONG */
		rc = rdzv_rdma_set_key(r->rdma_ctx, r->token.data, r->token.len, r->job_id);
	if (rc < 0) {
		rdzv_rdma_ctx_free(r->rdma_ctx);
		r->rdma_ctx = NULL;
		r->rdma_ctx_rc = rc; /* rdma_verdict says so, once */
		return NULL;
	}
	/* check probes its rails itself: the rendezvous gates only run/init/serve's */
	rdzv_rdma_set_rails(r->rdma_ctx, !r->soft_verify);
	return rdzv_rdma_ops(r->rdma_ctx);
}

/*
 * The rendezvous' route question (rdzv_config.route): does the kernel send to dst from src
 * out of iface? The netlink socket is opened on the first question and kept: a coordinator
 * asks once per member.
 */
static int route_check(void *arg, const char *src, const char *dst, int dst_plen, const char *iface,
		       char *why, size_t whylen)
{
	struct agent_run *r = arg;
	int rc;

	if (r->routes_off)
		return 0;
	if (!r->routes) {
		rc = nd_routes_open(&r->routes);
		if (rc < 0) {
			/* no answer is no proof either way: the device binding still holds */
			gx_warn("cannot ask the kernel's routes (%s): the path check is skipped",
				gx_strerror(rc));
			r->routes_off = 1;
			return 0;
		}
	}
	return nd_route_check(r->routes, src, dst, dst_plen, iface, r->nd ? r->nd->overlap : NULL,
			      why, whylen);
}

/* One dump row: a listener on the port that no socket of this process is. */
struct port_scan {
	uint16_t port;
	const struct fabric_owner *mine;
	size_t nmine;
	int foreign;
};

static void port_row(void *arg, const struct fabric_sock *s)
{
	struct port_scan *p = arg;

	if (s->lport == p->port && !agent_fabric_owner_find(p->mine, p->nmine, s->inode))
		p->foreign = 1;
}

/*
 * Is another process listening on our rendezvous port? The coordinator's wildcard listener
 * shares the port with its device-bound VERIFY listener (SO_REUSEPORT: rdzv_conn.c), so bind
 * no longer refuses a second gxboot of another job that does the same in one network
 * namespace (hostNetwork pods of two jobs on one node): connections would be split between
 * the two. Ask the kernel (sock_diag) for the port's listeners, and refuse to share it. A
 * namespace that cannot be asked is taken as unshared, as before.
 */
int agent_port_shared(uint16_t port)
{
	struct port_scan p = {.port = port};
	struct fabric_owner *mine = NULL;
	pid_t self = getpid();
	size_t n = 0, unreadable = 0;

	if (agent_fabric_socket_owners(&self, 1, &mine, &n, &unreadable) < 0)
		return 0;
	p.mine = mine;
	p.nmine = n;
	if (agent_fabric_diag_dump_states(AF_INET, 1u << 10, port_row, &p) == 0)
		(void)agent_fabric_diag_dump_states(AF_INET6, 1u << 10, port_row, &p);
	free(mine);
	return p.foreign;
}

/* The preflight writes preflight.json into --out as every file of the run (agent_run_out). */
static int pf_write(void *arg, const char *name, const char *text, size_t len, char *err,
		    size_t errlen)
{
	struct agent_run *r = arg;
	int dfd = agent_run_out(r, err, errlen);

	if (dfd < 0)
		return dfd;
	return agent_write_file_at(dfd, r->o->out, name, text, len, 0644, err, errlen);
}

static void pf_end(struct agent_run *r)
{
	agent_pf_end(r->pf, &r->res, r->rdzv_rc);
	r->pf = NULL;
}

static int start_rdzv(struct agent_run *r)
{
	struct rdzv_config cfg;
	int is_coord = r->peers.self == 0;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	fill_self(r, &cfg.self);
	r->self = cfg.self;
	cfg.is_coordinator = is_coord;
	cfg.world = (uint32_t)r->peers.n;
	cfg.names = r->peers.names;
	if (r->peers.elastic) {
		cfg.elastic = 1;
		cfg.nnames = (uint32_t)r->peers.n;
		cfg.world = (uint32_t)r->peers.elastic_max;
		cfg.min_peers =
		    r->o->nnodes_min > 1 && !r->o->elastic ? (uint32_t)r->o->nnodes_min : 1;
		if (cfg.min_peers > cfg.world)
			cfg.min_peers = cfg.world;
	}
	cfg.job_id = r->job_id;
	cfg.token = r->token.len ? r->token.data : NULL; /* NULL: no token */
	cfg.token_len = r->token.len;
	cfg.port = (uint16_t)(r->port ? r->port : r->o->port);
	cfg.coord_name = r->peers.names[0];
	cfg.resolve = resolve_coord;
	cfg.resolve_arg = r;
	cfg.deadline_ms = gx_now_ms() + r->o->timeout * 1000;
	/* a hostfile on every pod that uses one: a launcher in CMD or an
	 * explicit --hostfile-format; other members stay small (no O(N) table each) */
	cfg.full_table = r->o->full_table || r->full_table ||
			 r->o->hostfile_format != AGENT_HF_DEFAULT ||
			 agent_cmd_is_launcher(r->o->argv, r->o->argc) ||
			 (r->serving && r->peers.n <= AGENT_SERVE_TABLE_MAX);
	cfg.soft_verify = r->soft_verify;
	cfg.rdma = r->rdma ? r->rdma : rdma_ops(r);
	cfg.keep_serving = is_coord && (r->o->supervise || getpid() == 1 || r->peers.elastic);
	if (cfg.keep_serving) /* servers tell a lost coordinator from one that is done */
		cfg.self.flags |= RDZV_PF_STAYS;
	cfg.progress = progress;
	cfg.progress_arg = r;
	cfg.stay = !is_coord && (r->serving || r->peers.observer); /* the job-end notice */
	cfg.ended = agent_run_ended;
	cfg.ended_arg = r;
	cfg.changed = table_changed;
	cfg.changed_arg = r;
	/* the proof is the job's path: bound to the device, routed out of it, both ways */
	cfg.bind_iface = nd_ok(r) && !r->peers.observer;
	cfg.route = cfg.bind_iface ? route_check : NULL;
	cfg.route_arg = r;
	if (!cfg.elastic) {
		cfg.relay_fanout = r->relay_fanout >= 0		   ? (uint32_t)r->relay_fanout
				   : cfg.world > AGENT_RELAY_WORLD ? AGENT_RELAY_FANOUT
								   : 0;
		r->relay_f = cfg.relay_fanout;
		rc = relay_name(r, cfg.relay_fanout);
		if (rc < 0)
			return rc;
		cfg.relay_resolve = resolve_relay;
	}
	agent_run_fabric_rdzv(r, &cfg); /* after stay and the relay fan-out are known */
	r->self.flags = cfg.self.flags;
	/* the preflight (run, init, serve): members always answer a coordinator's plan */
	if (!r->soft_verify && !r->peers.observer) {
		struct agent_pf_host h = {.o = r->o,
					  .ev = r->ev,
					  .coord = &r->coord,
					  .member = &r->member,
					  .rdma_ctx = &r->rdma_ctx,
					  .self = &r->self,
					  .nd = r->nd,
					  .routes = &r->routes,
					  .routes_off = r->routes_off,
					  .npeers = r->peers.n,
					  .write_file = pf_write,
					  .arg = r};

		rc = agent_pf_hook(&h, &cfg, &r->pf);
		if (rc < 0)
			return rc;
	}
	r->coord_lookup = r->peers.coord_fqdn ? r->peers.coord_fqdn : r->peers.names[0];
	if (is_coord)
		rc = rdzv_coord_start(r->ev, &cfg, rdzv_done, r, &r->coord);
	else
		rc = rdzv_member_start(r->ev, &cfg, rdzv_done, r, &r->member);
	if (rc == 0 && is_coord && agent_port_shared(cfg.port)) {
		rdzv_coord_free(r->coord);
		r->coord = NULL;
		rc = -EADDRINUSE;
	}
	return rc;
}

/* NCCL_IB_HCA only with the rails that verified; the others named once. */
static void rdma_gate(struct agent_run *r)
{
	const struct rdzv_rdma_rail *rails = NULL;
	size_t n = rdzv_rdma_rails(r->rdma_ctx, &rails);
	char hca[1024];

	if (!n || nd_rails_hca(r->nd, hca, sizeof(hca)) < 0)
		return;
	r->rdma_gid = r->nd->nccl_gid_index;
	if (agent_rdma_gate(hca, rails, n, r->res.rank == 0, r->rdma_hca, sizeof(r->rdma_hca),
			    &r->rdma_gid, r->rdma_dropped, sizeof(r->rdma_dropped)) < 0)
		return;
	r->rdma_gated = 1;
	if (r->rdma_dropped[0])
		gx_warn("RDMA rails left out of NCCL_IB_HCA (not verified): %s", r->rdma_dropped);
}

/*
 * Was this pod's RDMA-CM path to the coordinator
 * really exercised? One line either way; with --rdma require, not verified is
 * a failure (exit 4 for a local cause, 5 otherwise). check has its own RDMA
 * probes and report: not judged here.
 */
static int rdma_verdict(struct agent_run *r, char *err, size_t errlen)
{
	const struct nd_result *nd = r->nd;
	const struct rdzv_rdma_probe *last = rdzv_rdma_last(r->rdma_ctx);
	struct agent_rdma_facts f = {
	    .mode = (int)r->o->rdma,
	    .have_dev = !r->soft_verify && !r->peers.observer && nd_ok(r) && nd->rdma_usable &&
			nd->rdma_dev[0],
	    .dev = nd_ok(r) ? nd->rdma_dev : "",
	    .is_coord = r->res.rank == 0,
	    .ctx_rc = r->rdma_ctx_rc,
	    .listen_err = r->res.rdma_warning,
	    .members = r->res.world > 1 ? r->res.world - 1 : 0,
	    .answered = rdzv_rdma_answered(r->rdma_ctx),
	    .verified = r->res.rdma_verified,
	    .verify_us = last ? last->connect_us + last->sendrecv_us : -1,
	    .coord_has_dev = r->res.coord.rdma_dev[0] != '\0',
	    .coord_name = r->peers.names[0],
	    .coord_dev = r->res.coord.rdma_dev,
	};

	agent_rdma_verdict(&f, &r->rdma_v);
	if (r->rdma_v.state == 1)
		rdma_gate(r);
	if (r->rdma_v.state == 1)
		gx_info("RDMA verified: %s", r->rdma_v.why);
	else if (r->rdma_v.state == 0 && r->rdma_v.fail_rc)
		snprintf(err, errlen, "--rdma require: RDMA not verified: %s", r->rdma_v.why);
	else if (r->rdma_v.state == 0)
		gx_warn("RDMA not verified: %s (NCCL_IB_HCA is still set: the job may fail or "
			"fall back to sockets)",
			r->rdma_v.why);
	return r->rdma_v.fail_rc;
}

/* The one line and code for a failed rendezvous; our own netdetect failure wins (exit 4). */
/*
 * An Istio sidecar redirects the pod's traffic through its proxy,
 * which is not running yet while init containers run: their connections are
 * refused or reset although DNS works. Seen in the downward-API annotations
 * file (sidecar.istio.io/status) or the injected env (ISTIO_META_*).
 */
static int istio_present(const struct agent_run *r)
{
	char **e;
	char *txt = NULL;
	int found = 0;

	for (e = environ; *e && !found; e++)
		found = strncmp(*e, "ISTIO_META_", 11) == 0;
	if (!found && r->o->network_status &&
	    agent_detect_read("", r->o->network_status, &txt) == 0) {
		found = strstr(txt, "sidecar.istio.io/status") != NULL;
		free(txt);
	}
	return found;
}

static void istio_hint(const struct agent_run *r, int rc, char *err, size_t errlen)
{
	long port = r->port ? r->port : r->o->port;

	int ce = r->res.conn_err;

	if ((rc != GX_EPEERS && rc != GX_ERDZV) || !(r->ever_resolved || r->relay_ever_resolved) ||
	    (ce != -ECONNREFUSED && ce != -ECONNRESET && ce != -EPIPE) || !istio_present(r))
		return;
	snprintf(err + strlen(err), errlen - strlen(err),
		 "; an Istio sidecar intercepts this pod's traffic (init containers run before "
		 "its proxy): annotate the pods traffic.sidecar.istio.io/excludeOutboundPorts "
		 "and excludeInboundPorts: \"%ld,%ld,%ld\"",
		 port, port + 1, port + 2);
}

/*
 * A name that was looked up and never answered, said after the line: the coordinator's, or
 * our relay's. Only what was asked: a member behind a relay never asks for the
 * coordinator's name, and one whose DNS answered was kept out by something else (a flood,
 * a refusal): blaming DNS then sends its reader the wrong way.
 */
static void dns_blame(const struct agent_run *r, int rc, char *err, size_t errlen)
{
	if (rc != GX_EPEERS || r->peers.self == 0)
		return;
	if (r->coord_asked && !r->ever_resolved)
		snprintf(err + strlen(err), errlen - strlen(err), " (%s never resolved%s)",
			 r->coord_lookup, r->peers.coord_nosub ? nosub_hint : "");
	else if (r->relay_asked && !r->relay_ever_resolved && r->relay_lookup)
		snprintf(err + strlen(err), errlen - strlen(err),
			 " (the relay's name %s never resolved)", relay_lookup_name(r));
}

static int rdzv_failure(struct agent_run *r, int rc, char *err, size_t errlen)
{
	if (r->nd_rc < 0 && !r->peers.observer) {
		snprintf(err, errlen, "%s", r->nd_err);
		return r->nd_rc;
	}
	if (r->res.err[0])
		snprintf(err, errlen, "%s", r->res.err);
	else
		snprintf(err, errlen, "rendezvous failed: %s", gx_strerror(rc));
	if (rc == GX_EPEERS && r->dns_hint_shown)
		snprintf(err + strlen(err), errlen - strlen(err), "; %s", dns_trap_hint);
	else
		dns_blame(r, rc, err, errlen);
	istio_hint(r, rc, err, errlen);
	return rc;
}

int agent_run_meet(struct agent_run *r, char *err, size_t errlen)
{
	int rc;

	rc = gx_ev_new(&r->ev);
	if (rc == 0)
		rc = wait_netstatus(r);
	if (rc < 0)
		return rc;
	if (r->nd_rc == GX_EUSAGE) {
		snprintf(err, errlen, "%s", r->nd_err);
		return r->nd_rc;
	}
	rc = start_rdzv(r);
	if (rc < 0) {
		long port = r->port ? r->port : r->o->port;

		if (rc == -EADDRINUSE) { /* hostNetwork pods of two jobs on one node */
			snprintf(err, errlen,
				 "port %ld is already in use on this node (another job with "
				 "hostNetwork?): give each job its own --port",
				 port);
			return GX_EUSAGE;
		}
		snprintf(err, errlen, "cannot start the rendezvous on port %ld: %s", port,
			 gx_strerror(rc));
		return rc;
	}
	while (!r->rdzv_done && rc >= 0)
		rc = gx_ev_run(r->ev);
	if (r->claim_rc) {
		snprintf(err, errlen, "%s", r->claim_why);
		return r->claim_rc;
	}
	/* a relay carries its children's COMMITs before this pod goes on (bounded by the
	 * relay's drain, RDZV_RELAY_DRAIN_MS) */
	while (rc >= 0 && r->rdzv_rc == 0 && rdzv_member_relaying(r->member)) {
		rc = gx_ev_run_until(r->ev, gx_now_ms() + 100);
		if (rc == -ETIMEDOUT)
			rc = 0;
	}
	pf_end(r); /* its service and probes stop with the rendezvous */
	if (rc < 0)
		return rc;
	if (r->rdzv_rc < 0) {
		rc = rdzv_failure(r, r->rdzv_rc, err, errlen);
		agent_listen_final(r, rc, err, errlen);
		return rc;
	}
	agent_probes_stop(r);
	if (r->nd_rc < 0 && !r->peers.observer) {
		snprintf(err, errlen, "%s", r->nd_err);
		return r->nd_rc;
	}
	return rdma_verdict(r, err, errlen);
}

/* ---- after the rendezvous: environment, files ---- */

/* Every peer's slots and secondary address in rank order, for a hostfile in fmt. */
static int hostfile_text(struct agent_run *r, enum agent_hostfile_fmt fmt, char **text, size_t *len,
			 char *err, size_t errlen)
{
	struct agent_hf_peer *hp = NULL;
	size_t i, n = 0;
	int rc;

	hp = calloc(r->res.ntable ? r->res.ntable : 1, sizeof(*hp));
	if (!hp)
		return -ENOMEM;
	for (i = 0; i < r->res.ntable; i++) {
		const struct rdzv_peer *p = &r->res.table[i];

		/* an elastic job's listed pod that has not joined yet has no address: not a
		 * host yet (table_changed writes the file again when it joins) */
		if (!p->addr4[0] && !p->addr6[0] && r->peers.elastic)
			continue;
		hp[n].addr = rdzv_peer_addr(p, r->res.master_addr);
		hp[n].name = p->name;
		hp[n++].slots = agent_slots_peer(r->o->slots, r->peers.slots, r->peers.n, i,
						 p->slots ? (long)p->slots : 1);
	}
	rc = agent_hostfile_render(fmt, hp, n, text, len, err, errlen);
	free(hp);
	return rc;
}

static int write_text(struct agent_run *r, const char *name, const char *text, size_t len,
		      char *err, size_t errlen)
{
	int dfd = agent_run_out(r, err, errlen);

	if (dfd < 0)
		return dfd;
	return agent_write_file_at(dfd, r->o->out, name, text, len, 0644, err, errlen);
}

static int write_json(struct agent_run *r, const char *name, json_t *j, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (!j)
		return -ENOMEM;
	rc = agent_json_text(j, &text, &len);
	if (rc == 0)
		rc = write_text(r, name, text, len, err, errlen);
	free(text);
	json_decref(j);
	return rc;
}

static void peer_info(const struct rdzv_peer *p, long rank, struct agent_rdzv_peer_info *pi)
{
	memset(pi, 0, sizeof(*pi));
	pi->rank = rank;
	pi->name = p->name;
	pi->addr4 = p->addr4;
	pi->addr6 = p->addr6;
	pi->iface = p->iface;
	pi->rdma_dev = p->rdma_dev;
	pi->rdma_port = p->rdma_port;
	pi->gid_index = p->rdma_dev[0] ? p->gid_index : -1;
	pi->slots = p->slots ? (long)p->slots : 1;
	pi->rails = p->rails;
	pi->primary = p->primary;
	pi->mtu = p->mtu;
	pi->serves = (p->flags & RDZV_PF_SERVES) != 0;
}

static json_t *rendezvous_json(struct agent_run *r, char *err, size_t errlen)
{
	struct agent_rdzv_peer_info *pi = NULL;
	struct agent_timing tm[4];
	struct agent_rdzv_info ri;
	size_t i, n = r->res.ntable ? r->res.ntable : 2;
	json_t *j;

	pi = calloc(n, sizeof(*pi));
	if (!pi)
		return NULL;
	if (r->res.ntable) {
		for (i = 0, n = 0; i < r->res.ntable; i++) {
			const struct rdzv_peer *p = &r->res.table[i];

			if (!p->addr4[0] && !p->addr6[0] && r->peers.elastic)
				continue; /* listed, not joined yet (hostfile_text) */
			peer_info(p, (long)i, &pi[n]);
			pi[n].slots = agent_slots_peer(r->o->slots, r->peers.slots, r->peers.n, i,
						       pi[n].slots);
			n++;
		}
	} else if (r->peers.observer) {
		peer_info(&r->res.coord, 0, &pi[0]);
		n = 1;
	} else {
		/* a member knows itself and the coordinator (the table stays there) */
		peer_info(&r->res.coord, 0, &pi[0]);
		peer_info(&r->self, r->res.rank, &pi[1]);
		n = r->res.rank == 0 ? 1 : 2;
	}
	tm[0] = (struct agent_timing){"joined_ms", r->res.t_joined_ms - r->res.t_start_ms};
	tm[1] = (struct agent_timing){"verified_ms", r->res.t_verified_ms - r->res.t_start_ms};
	tm[2] = (struct agent_timing){"commit_ms", r->res.t_commit_ms - r->res.t_start_ms};
	memset(&ri, 0, sizeof(ri));
	ri.rank = r->res.rank;
	ri.world = (long)r->res.world;
	ri.master = r->res.master_addr;
	ri.iface = our_iface(r);
	ri.job_id = r->job_id;
	ri.source = r->peers.source;
	ri.written_by = agent_cmd_name(r->o->cmd);
	ri.round = r->res.round;
	ri.timings = tm;
	ri.ntimings = 3;
	ri.peers = pi;
	ri.npeers = n;
	j = agent_rendezvous_json(&ri, err, errlen);
	free(pi);
	if (j && r->rdma_v.state >= 0 &&
	    json_object_set_new(j, "rdma",
				json_pack("{s:b,s:s,s:s?}", "verified", r->rdma_v.state == 1, "why",
					  r->rdma_v.why, "rails_left_out",
					  r->rdma_dropped[0] ? r->rdma_dropped : NULL)) < 0) {
		snprintf(err, errlen, "rendezvous.json: out of memory");
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* gxboot's own values (ours) and, after the rules against the user's, CMD's (env). */
static int build_env(struct agent_run *r, struct agent_env *ours, struct agent_env *env, char *err,
		     size_t errlen)
{
	char rails[1024] = "", hfpath[4096], hydra[4096], rsh_exec[4096];
	struct agent_env_input in;
	int rc;

	if (nd_ok(r) && r->nd->rdma_usable && nd_rails_hca(r->nd, rails, sizeof(rails)) < 0)
		rails[0] = '\0';
	snprintf(hfpath, sizeof(hfpath), "%s/hostfile", r->o->out);
	snprintf(hydra, sizeof(hydra), "%s/hostfile.hydra", r->o->out);
	snprintf(rsh_exec, sizeof(rsh_exec), "%s/gxboot-rsh", r->o->out);
	memset(&in, 0, sizeof(in));
	in.master_addr = r->res.master_addr;
	in.master_port = r->o->master_port;
	in.rank = r->res.rank;
	in.world = (long)r->res.world;
	in.iface = our_iface(r);
	if (nd_ok(r)) /* in the job's family: MASTER_ADDR's */
		in.addr = rdzv_peer_addr(&r->self, r->res.master_addr);
	in.rails = r->rdma_gated ? r->rdma_hca : rails;
	in.nccl_gid_index = nd_ok(r) && r->nd->rdma_usable ? r->nd->nccl_gid_index : -1;
	if (r->rdma_gated)
		in.nccl_gid_index = r->rdma_gid;
	in.observer = r->peers.observer;
	if (r->peers.ray != AGENT_RAY_AUTO) {
		long port = 6379; /* KubeRay's RAY_PORT: the head's GCS port */

		if (getenv("RAY_PORT") && gx_parse_long(getenv("RAY_PORT"), 1, 65535, &port) < 0)
			port = 6379;
		in.ray_port = port;
		in.ray_worker = r->peers.ray == AGENT_RAY_WORKER;
	}
	in.hostfile = r->res.ntable ? hfpath : NULL;
	in.override_env = r->o->override_env;
	in.rsh_agent = r->rsh_agent[0] ? r->rsh_agent : NULL;
	in.rsh_key_file = r->rsh_key_file[0] ? r->rsh_key_file : NULL;
	in.hydra_hostfile = r->res.ntable ? hydra : NULL;
	in.rsh_exec = r->rsh_agent[0] ? rsh_exec : NULL;
	in.rdma_unusable = agent_rdma_unusable(nd_ok(r) ? r->nd : NULL, r->o->rdma);
	rc = agent_env_ours(&in, ours, err, errlen);
	if (rc == 0)
		rc = agent_env_merge(ours, environ, in.override_env, env);
	/* whether this pod's RDMA-CM path was really exercised */
	if (rc == 0 && r->rdma_v.state >= 0)
		rc = agent_env_set(env, "GXBOOT_RDMA_VERIFIED", r->rdma_v.state == 1 ? "1" : "0");
	return rc;
}

static int write_hostfile(struct agent_run *r, enum agent_hostfile_fmt fmt, const char *name,
			  char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	rc = hostfile_text(r, fmt, &text, &len, err, errlen);
	if (rc == 0)
		rc = write_text(r, name, text, len, err, errlen);
	free(text);
	return rc;
}

/* The table's files: hostfile and hostfile.hydra (when the table is known), rendezvous.json. */
static int write_table_files(struct agent_run *r, char *err, size_t errlen)
{
	int rc = 0;

	if (r->res.ntable) {
		rc = write_hostfile(r, r->o->hostfile_format, "hostfile", err, errlen);
		rc = rc ?: write_hostfile(r, AGENT_HF_HYDRA, "hostfile.hydra", err, errlen);
	}
	if (rc == 0)
		rc = write_json(r, "rendezvous.json", rendezvous_json(r, err, errlen), err, errlen);
	return rc;
}

/* --out/gxboot-rsh -> this binary: Hydra's launcher exec is one executable path. */
static int write_rsh_link(struct agent_run *r, char *err, size_t errlen)
{
	char self[4200];
	size_t l = strlen(r->rsh_agent);

	if (l < 5 || strcmp(r->rsh_agent + l - 4, " rsh") != 0)
		return 0;
	snprintf(self, sizeof(self), "%.*s", (int)(l - 4), r->rsh_agent);
	return agent_write_link_at(r->out_fd, r->o->out, "gxboot-rsh", self, err, errlen);
}

/* env last: it is what `gxboot exec` loads, so it only exists beside a whole set. */
static int write_files(struct agent_run *r, const struct agent_env *env, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	agent_out_clean(r->out_fd, 0);
	rc = write_table_files(r, err, errlen);
	if (rc == 0)
		rc = write_json(r, "env.json", agent_env_json(env), err, errlen);
	if (rc == 0)
		rc = agent_run_serve_write_key(r, err, errlen);
	if (rc == 0)
		rc = write_rsh_link(r, err, errlen);
	if (rc == 0)
		rc = agent_env_serialize_sh(env, &text, &len, err, errlen);
	if (rc == 0)
		rc = write_text(r, "env", text, len, err, errlen);
	free(text);
	if (rc < 0)
		agent_out_clean(r->out_fd, 1);
	r->files_written = rc == 0;
	return rc;
}

/* Into --out (created if missing), the terminating signals held off meanwhile. */
static int store_files(struct agent_run *r, const struct agent_env *env, char *err, size_t errlen)
{
	int rc;

	agent_signals_block(1);
	rc = agent_run_out(r, err, errlen); /* created, ours: what gxboot exec requires */
	if (rc >= 0)
		rc = write_files(r, env, err, errlen);
	agent_signals_block(0);
	if (rc < 0 && rc > -GX_EBASE)
		rc = GX_EUSAGE; /* --out unusable (read-only, full, not a directory): exit 2 */
	return rc;
}

/*
 * Coordinator after the COMMIT: a pod got its rank late (elastic joiner,
 * restarted pod). Keep the table and rewrite hostfile + rendezvous.json so
 * `gxboot hosts` and the hostfile list the live peers. env stays.
 */
static void table_changed(void *arg, const struct rdzv_peer *tab, size_t n)
{
	struct agent_run *r = arg;
	struct rdzv_peer *t;
	char err[512] = "";
	int rc;

	t = realloc(r->res.table, n * sizeof(*t));
	if (!t)
		return;
	memcpy(t, tab, n * sizeof(*t));
	r->res.table = t;
	r->res.ntable = n;
	if (!r->files_written)
		return;
	agent_signals_block(1);
	rc = write_table_files(r, err, sizeof(err));
	agent_signals_block(0);
	if (rc < 0)
		gx_warn("peer table changed, %s not refreshed: %s", r->o->out, err);
	else
		gx_info("peer table changed: %zu peers, hostfile and rendezvous.json rewritten", n);
}

/* ---- the command ---- */

static void print_plan(struct agent_run *r)
{
	const struct agent_opts *o = r->o;
	size_t i;

	printf("gxboot plan (dry run: no network used)\n");
	printf("  command:     %s\n", agent_cmd_name(o->cmd));
	printf("  peers:       %zu from %s\n", r->peers.n, r->peers.source);
	for (i = 0; i < r->peers.n && i < 8; i++)
		printf("    rank %-4zu %s%s\n", i, r->peers.names[i],
		       i == r->peers.self ? "  <- this pod" : "");
	if (r->peers.n > 8)
		printf("    ... %zu more, last %s\n", r->peers.n - 8,
		       r->peers.names[r->peers.n - 1]);
	if (r->peers.observer)
		printf("  this pod:    observer (not in the peer list)\n");
	else if (r->peers.self == AGENT_SELF_NONE)
		printf("  this pod:    %s, joins the elastic job (up to %ld) by name\n",
		       r->o->self ? r->o->self : r->hostname, r->peers.elastic_max);
	else
		printf("  this pod:    %s, %s\n", r->peers.names[r->peers.self],
		       r->peers.self == 0 ? "coordinator" : "member");
	printf("  coordinator: %s port %ld\n",
	       r->peers.coord_fqdn ? r->peers.coord_fqdn : r->peers.names[0], o->port);
	if (r->peers.elastic)
		printf("  elastic:     up to %ld peers; the coordinator never waits for them\n",
		       r->peers.elastic_max);
	if (r->peers.ray != AGENT_RAY_AUTO)
		printf("  ray:         %s\n", r->peers.ray == AGENT_RAY_HEAD ? "head" : "worker");
	if (r->o->preflight)
		printf("  preflight:   %s, %ld bytes each way, slow below %.2f of the median\n",
		       r->o->preflight_shape == AGENT_PF_SHAPE_ALL ? "all pairs" : "ring + chord",
		       r->o->preflight_bytes ? r->o->preflight_bytes : AGENT_PF_BYTES,
		       r->o->preflight_slow > 0 ? r->o->preflight_slow : AGENT_PF_SLOW);
	printf("  job id:      %s\n", r->job_id);
	printf("  token:       %s\n", r->token.len ? "yes" : "none (unauthenticated)");
	printf("  interface:   %s\n", r->nd ? r->nd->iface : o->iface ? o->iface : "auto");
	if (r->nd_rc < 0)
		printf("  netdetect:   %s\n", r->nd_err);
	printf("  out:         %s\n", o->out);
	printf("  timeout:     %ld s\n", o->timeout);
	if (o->cmd == AGENT_CMD_RUN || o->cmd == AGENT_CMD_SERVE)
		printf("  fabric:      %s\n",
		       agent_run_fabric_reports(r)
			   ? (o->expect_fabric == AGENT_FABRIC_RDMA ? "watched, must be RDMA"
			      : o->expect_fabric == AGENT_FABRIC_SECONDARY
				  ? "watched, must be the secondary network"
				  : "watched (fabric.json)")
		       : o->expect_fabric == AGENT_FABRIC_OFF
			   ? "off"
			   : "not watched (CMD is exec'd: --supervise to watch it)");
	for (i = 0; i < (size_t)o->argc; i++)
		printf("%s%s", i ? " " : "  exec:        ", o->argv[i]);
	if (o->argc)
		printf("\n");
}

static void detect(struct agent_run *r, int quiet)
{
	struct nd_request req = {
	    .iface = r->o->iface,
	    .rdma_dev = r->o->rdma_dev,
	    .network = r->o->network,
	    .network_status = r->o->network_status,
	    .allow_primary = r->o->allow_primary,
	    .rdma_mode = (int)r->o->rdma,
	    .rails = r->o->rails,
	};
	size_t i;

	r->nd_rc = nd_detect(&req, &r->nd, r->nd_err, sizeof(r->nd_err));
	if (r->nd_rc < 0 && r->peers.observer) {
		gx_info("observer without a secondary network of its own: %s", r->nd_err);
		return;
	}
	if (r->nd_rc < 0) {
		if (!quiet)
			gx_error("%s", r->nd_err);
		return;
	}
	for (i = 0; i < r->nd->nwarnings; i++)
		gx_warn("%s", r->nd->warnings[i]);
	for (i = 0; i < r->nd->nnotes; i++)
		gx_info("%s", r->nd->notes[i]);
	gx_info("interface %s (%s%s%s): %s", r->nd->iface,
		r->nd->addr4[0] ? r->nd->addr4 : r->nd->addr6, r->nd->rdma_usable ? ", RDMA " : "",
		r->nd->rdma_usable ? r->nd->rdma_dev : "", r->nd->reason);
}

/*
 * The downward-API file can lack the network-status
 * annotation at first, and the interface it names may not be up yet: with
 * --network-status, re-read and re-check while waiting instead of deciding at
 * start (bounded; then the pod joins with its netdetect error, to be named).
 */
static int late_netstatus(const struct agent_run *r)
{
	return r->o->network_status && !r->peers.observer &&
	       (r->nd_rc == 0 || r->nd_rc == GX_ENOSECONDARY);
}

static void redetect_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	(void)id;
	(void)arg;
	gx_ev_stop(ev, 0);
}

static int wait_netstatus(struct agent_run *r)
{
	int64_t t0 = gx_now_ms(), wait = r->o->timeout * 500;
	int rc = 0;

	if (r->nd_rc >= 0 || !late_netstatus(r))
		return 0;
	if (wait > NETSTATUS_WAIT_MS)
		wait = NETSTATUS_WAIT_MS;
	gx_info("%s; re-reading %s for up to %lld s", r->nd_err, r->o->network_status,
		(long long)(wait / 1000));
	while (r->nd_rc < 0 && late_netstatus(r) && gx_now_ms() - t0 < wait && rc >= 0) {
		if (!gx_ev_timer(r->ev, NETSTATUS_POLL_MS, redetect_fired, r))
			return -ENOMEM;
		rc = gx_ev_run(r->ev);
		nd_result_free(r->nd);
		r->nd = NULL;
		detect(r, 1);
	}
	if (r->nd_rc >= 0)
		gx_info("network-status: %s is ready after %lld ms", r->nd->iface,
			(long long)(gx_now_ms() - t0));
	else
		gx_error("%s", r->nd_err);
	return rc < 0 ? rc : 0;
}

int agent_run_prepare(struct agent_run *r, struct agent_opts *o, char *err, size_t errlen)
{
	int rc;

	r->o = o;
	rc = agent_dns_server_check(o->dns_server, err, errlen);
	if (rc == 0)
		rc = relay_fanout_env(&r->relay_fanout, err, errlen);
	if (rc < 0)
		return rc;

	if (gethostname(r->hostname, sizeof(r->hostname) - 1) < 0)
		gx_strlcpy(r->hostname, "localhost", sizeof(r->hostname));
	rc = agent_peers_discover(r->o, environ, "", r->hostname, nd_addr_on_local_iface, &r->peers,
				  err, errlen);
	if (rc < 0)
		return rc;
	if (r->peers.observer && r->o->cmd != AGENT_CMD_RUN && r->o->cmd != AGENT_CMD_INIT) {
		snprintf(err, errlen, "this pod (%s) is not in the peer list of %zu (%s)",
			 r->o->self ? r->o->self : r->hostname, r->peers.n, r->peers.source);
		return GX_EUSAGE;
	}
	rc = agent_job_id(r->o, r->peers.names, r->peers.n, r->job_id, sizeof(r->job_id));
	if (rc < 0) {
		snprintf(err, errlen, "invalid --job-id");
		return GX_EUSAGE;
	}
	rc = agent_token_load(r->o, &r->token, err, errlen);
	if (rc < 0)
		return rc;
	detect(r, late_netstatus(r));
	return 0;
}

/* The peers a launch line may name, for the rewrite; NULL without a table. The
 * coordinator's eth0 address is this pod's lookup of its name (members), which the table
 * does not carry for the coordinator itself. */
static struct agent_rw_host *rw_hosts(const struct agent_run *r, const char *coord_primary)
{
	struct agent_rw_host *h;
	size_t i;

	if (!r->res.ntable)
		return NULL;
	h = calloc(r->res.ntable, sizeof(*h));
	for (i = 0; h && i < r->res.ntable; i++) {
		const struct rdzv_peer *p = &r->res.table[i];

		h[i].name = p->name;
		h[i].primary = i == 0 && !p->primary[0] ? coord_primary : p->primary;
		h[i].addr = rdzv_peer_addr(p, r->res.master_addr);
	}
	return h;
}

/* This pod's full name when its domain is known (Hydra's -localhost), else "". */
static void self_fqdn(const struct agent_run *r, char *buf, size_t len)
{
	const struct agent_domain *d = &r->peers.dom;

	buf[0] = '\0';
	if (d->sub[0] && d->ns[0] && d->cluster[0])
		snprintf(buf, len, "%.*s.%s.%s.svc.%s", (int)strcspn(r->hostname, "."), r->hostname,
			 d->sub, d->ns, d->cluster);
}

/*
 * CMD with the values that name eth0 hosts rewritten; a translated host file written.
 * envp: CMD's environment (the sh -c words are evaluated against it); ours: gxboot's own
 * values; unset: gxboot's variables CMD must not get after all (a kept exclude list).
 */
static int rewrite(struct agent_run *r, char **envp, char **ours, const char **unset, char ***argv,
		   char *err, size_t errlen)
{
	char primary[64] = "", launch[4200], fqdn[600];
	char *text = NULL;
	struct agent_rewrite_ctx c = {
	    .addr = r->res.master_addr,
	    .master_port = r->o->master_port,
	    .rank = r->res.rank,
	    .world = (long)r->res.world,
	    .nnodes_min = r->o->nnodes_min,
	    .nnodes_max = r->o->nnodes_max,
	    .is_coordinator = r->res.rank == 0,
	    .coord = {.name = r->peers.names[0], .primary = primary, .addr = r->res.master_addr},
	    .coord_fqdn = r->peers.coord_fqdn,
	    .dom = &r->peers.dom,
	    .is_local_ip = nd_addr_on_local_iface,
	    .envp = envp,
	    .ours = ours,
	    .override_env = r->o->override_env,
	    .self = r->peers.observer ? -1 : r->res.rank,
	    .launch_hostfile = launch,
	    .launch_text = &text,
	    .iface = our_iface(r),
	    .self_fqdn = fqdn,
	    .unset = unset,
	    .err = err,
	    .errlen = errlen,
	};
	int rc;

	snprintf(launch, sizeof(launch), "%s/hostfile.launch", r->o->out);
	self_fqdn(r, fqdn, sizeof(fqdn));
	if (r->ever_resolved)
		gx_addr_str(&r->coord_primary, primary, sizeof(primary));
	c.hosts = rw_hosts(r, primary);
	c.nhosts = c.hosts ? r->res.ntable : 0;
	rc = agent_rewrite_cmd(r->o->argv, r->o->argc, &c, argv);
	if (rc >= 0 && text) {
		agent_signals_block(1);
		rc = agent_run_out(r, err, errlen);
		if (rc >= 0)
			rc = agent_write_file_at(rc, r->o->out, "hostfile.launch", text,
						 strlen(text), 0644, err, errlen);
		agent_signals_block(0);
	}
	free(text);
	free((void *)c.hosts);
	return rc;
}

/* envp without the variables named in unset (NULL-terminated). */
static void envp_unset(char **envp, const char *const *unset)
{
	size_t i, k, j, l;

	for (i = 0; envp && unset && unset[i]; i++) {
		l = strlen(unset[i]);
		for (k = 0; envp[k];) {
			if (strncmp(envp[k], unset[i], l) != 0 || envp[k][l] != '=') {
				k++;
				continue;
			}
			free(envp[k]);
			for (j = k; envp[j]; j++)
				envp[j] = envp[j + 1];
		}
	}
}

static int finish(struct agent_run *r, char *err, size_t errlen)
{
	struct agent_env env = {0}, ours = {0};
	char **envp = NULL, **argv = NULL, **ours_v = NULL;
	const char *unset[AGENT_RW_UNSET_MAX + 1] = {NULL};
	int rc;

	rc = build_env(r, &ours, &env, err, errlen);
	if (rc == 0)
		rc = store_files(r, &env, err, errlen);
	if (rc == 0 && r->o->cmd == AGENT_CMD_INIT && r->peers.elastic && r->peers.self == 0)
		gx_warn("an elastic coordinator stops answering when init exits: pods that start "
			"later wait for it (run it as the entrypoint: gxboot -- CMD)");
	if (rc < 0 || r->o->cmd == AGENT_CMD_INIT)
		goto out;
	rc = agent_run_fabric_env(r, &env); /* CMD's, not the files' (gxboot exec has no watcher) */
	if (rc < 0)
		goto out;
	if (r->peers.observer)
		gx_info("observer of %u peers, MASTER_ADDR=%s on %s", r->res.world,
			r->res.master_addr, our_iface(r));
	else
		gx_info("rank %d of %u, MASTER_ADDR=%s on %s", r->res.rank, r->res.world,
			r->res.master_addr, r->nd->iface);
	rc = agent_env_apply(&env, &envp);
	if (rc < 0)
		goto out;
	if (!r->o->no_rewrite && r->o->argc > 0) {
		rc = agent_env_apply_to(NULL, &ours, &ours_v);
		if (rc == 0)
			rc = rewrite(r, envp, ours_v, unset, &argv, err, errlen);
		if (rc < 0)
			goto out;
		envp_unset(envp, unset);
	}
	if (agent_run_needs_supervisor(r)) {
		rc = agent_run_serve_supervise(r, r->o->argc ? (argv ? argv : r->o->argv) : NULL,
					       envp, err, errlen);
	} else if (r->o->supervise || getpid() == 1 || (r->peers.elastic && r->peers.self == 0)) {
		rc = agent_run_fabric_start(r, err, errlen);
		if (rc == 0)
			rc = agent_run_fabric_finish(
			    r, agent_supervise(r->ev, argv ? argv : r->o->argv, envp, NULL), err,
			    errlen);
	} else {
		rc = agent_exec_failed(r->o->argv[0], agent_exec(argv ? argv : r->o->argv, envp),
				       err, errlen);
	}
out:
	agent_argv_free(argv);
	agent_envp_free(envp);
	agent_envp_free(ours_v);
	agent_env_free(&env);
	agent_env_free(&ours);
	return rc;
}

void agent_run_free(struct agent_run *r)
{
	agent_fabric_free(r->fabric); /* its timers are in r->ev */
	free(r->fabric_early);
	pf_end(r);
	rdzv_coord_free(r->coord);
	rdzv_member_free(r->member);
	if (r->out_open)
		close(r->out_fd);
	r->out_open = 0;
	agent_dns_free(r->dns);
	agent_dns_free(r->rdns);
	free(r->relay_lookup);
	rdzv_rdma_ctx_free(r->rdma_ctx); /* before the loop it polls in */
	nd_routes_close(r->routes);
	rdzv_result_clear(&r->res);
	agent_probes_free(r); /* before the loop they use */
	gx_ev_free(r->ev);
	nd_result_free(r->nd);
	agent_token_free(&r->token);
	agent_peers_free(&r->peers);
}

/*
 * --out holds one answer, the last committed run's (out_failed.c). A run that meets removes
 * the previous one before it meets: killed mid-way, it leaves none that looks current.
 */
static void out_retire(struct agent_run *r)
{
	char err[512];
	int dfd = agent_run_out(r, err, sizeof(err));

	if (dfd < 0) /* an --out gxboot may not use: the run fails there with this line */
		return;
	agent_signals_block(1);
	agent_out_clean(dfd, 1);
	agent_signals_block(0);
}

/* A run that owns --out and failed before its files were written: why, for exec and hosts. */
static void out_failed(struct agent_run *r, int rc, const char *err)
{
	char oerr[512];
	int wrc, dfd;

	out_retire(r);
	dfd = agent_run_out(r, oerr, sizeof(oerr));
	if (dfd < 0)
		return;
	agent_signals_block(1);
	wrc = agent_out_mark_failed(dfd, r->o->out, agent_cmd_name(r->o->cmd), rc, err);
	agent_signals_block(0);
	if (wrc < 0 && wrc != -ENOENT)
		gx_debug("%s/%s not written: %s", r->o->out, AGENT_OUT_FAILED, gx_strerror(wrc));
}

int agent_cmd_run(struct agent_opts *o, char *err, size_t errlen)
{
	struct agent_run r;
	/* run and init own --out from the start; serve only once it meets (serving after init
	 * uses init's answer, which its own failure does not make stale) */
	int owner = o->cmd != AGENT_CMD_SERVE && !o->dry_run;
	int rc;

	memset(&r, 0, sizeof(r));
	agent_signals_wait_mode();
	/* the gate needs the watcher, and the watcher a parent: as --serve, it supervises */
	if (o->cmd == AGENT_CMD_RUN &&
	    (o->expect_fabric == AGENT_FABRIC_SECONDARY || o->expect_fabric == AGENT_FABRIC_RDMA))
		o->supervise = 1;
	rc = agent_run_prepare(&r, o, err, errlen);
	if (rc < 0)
		goto out;
	if (o->dry_run) {
		print_plan(&r);
		goto out;
	}
	if (r.nd_rc == GX_ENORDMA && !r.peers.observer) {
		snprintf(err, errlen, "%s", r.nd_err);
		rc = r.nd_rc;
		goto out;
	}
	rc = agent_run_serve_before_meet(&r, err, errlen);
	if (rc == 0) {
		rc = agent_run_serve_after_init(&r, err, errlen);
		if (rc != 1)
			goto out;
		owner = 1;
		out_retire(&r);
		rc = agent_run_meet(&r, err, errlen);
	}
	if (rc == 0)
		agent_run_serve_after_meet(&r);
	/* the keys are derived: the token is no longer needed */
	agent_token_free(&r.token);
	if (rc == 0)
		rc = finish(&r, err, errlen);
out:
	if (rc < 0 && owner && !r.files_written)
		out_failed(&r, rc, err);
	agent_run_free(&r);
	return rc;
}
