/* SPDX-License-Identifier: MIT */
/*
 * rdzv_coord.c - the coordinator (peer 0): one non-blocking epoll loop that
 * authenticates every connection, takes JOINs on the primary network, checks
 * VERIFYs that arrive on its secondary address, and COMMITs when all N are
 * in (PROTOCOL.md "Coordinator"). One periodic sweep timer enforces the
 * per-connection deadlines, the PING window and the 5 s reports. This file starts, sweeps
 * and frees it; its sockets and input are in rdzv_coord_io.c, the handshake and the
 * session's messages in rdzv_coord_msg.c, the job's state in rdzv_coord_state.c.
 */
#include "rdzv/rdzv_coord_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static void co_rdma_listen(struct rdzv_coord *co);
static int rdzv_co_arm(struct rdzv_coord *co);

/* ---- reports: progress line, WAITING push, deadline line ---- */
static void missing_list(struct rdzv_coord *co, char *out, size_t cap, int verified)
{
	struct rdzv_list l = {.out = out, .cap = cap};
	uint32_t i;

	out[0] = '\0';
	for (i = 1; i < co->world; i++) {
		const struct cpeer *sp = &co->st[i];

		if ((verified ? (!sp->joined || sp->verified) : sp->joined) || !co->names[i][0])
			continue;
		if (sp->note)
			rdzv_list_add(&l, "%s (%s)", co->names[i], sp->note);
		else
			rdzv_list_add(&l, "%s", co->names[i]);
	}
	rdzv_list_end(&l);
}

static void report(struct rdzv_coord *co)
{
	char line[1024], list[900];
	struct rdzv_buf b = {0};
	struct cconn *cc, *next;
	int verified = co->njoined + 1 == co->world;

	missing_list(co, list, sizeof(list), verified);
	if (!list[0] && co->pf && rdzv_co_pf_running(co))
		gx_strlcpy(list, "the preflight, measuring the paths", sizeof(list));
	snprintf(line, sizeof(line), "joined %u/%u, verified %u/%u, waiting for: %s",
		 co->njoined + 1, co->world, co->nverified + 1, co->world, list);
	if (co->cfg.progress)
		co->cfg.progress(co->cfg.progress_arg, line);
	rdzv_put_u32(&b, T_COUNT, co->world - 1 - (verified ? co->nverified : co->njoined));
	rdzv_put_str(&b, T_TEXT, list);
	for (cc = co->conns; cc; cc = next) {
		next = cc->next;
		if ((cc->role == ROLE_MEMBER || cc->role == ROLE_OBSERVER) &&
		    cc->rc.state == RC_SESSION)
			rdzv_co_send(co, cc, RDZV_WAITING, &b);
	}
	rdzv_buf_free(&b);
}

/* The coordinator's own line (not the members'): refusals before a proof, marked unproven
 * (a stranger must not choose whom the failure line blames). */
static void unauth_summary(struct rdzv_coord *co)
{
	size_t n = strlen(co->res.err);

	if (!co->unauth_note[0] || n + 8 >= sizeof(co->res.err))
		return;
	snprintf(co->res.err + n, sizeof(co->res.err) - n,
		 "; unproven: %llu JOIN%s refused before authentication, the last %s",
		 (unsigned long long)co->nunauth_refused, co->nunauth_refused == 1 ? "" : "s",
		 co->unauth_note);
}

/* At the deadline: is the coordinator the odd one among the members that did not verify? */
static void odd_coordinator(struct rdzv_coord *co, char *out, size_t len)
{
	uint8_t *failed = calloc(co->world, 1);
	uint32_t i;

	for (i = 1; failed && i < co->world; i++)
		failed[i] = co->st[i].joined && !co->st[i].verified;
	if (!failed || !rdzv_co_coord_odd(co, failed, out, len))
		out[0] = '\0';
	free(failed);
}

static void deadline_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rdzv_coord *co = arg;
	char list[900], why[200] = "";
	long secs = (long)((co->cfg.deadline_ms - co->res.t_start_ms + 999) / 1000);

	(void)ev;
	(void)id;
	co->deadline_id = 0;
	co->deadline_passed = 1;
	if (co->committed || co->aborted || (co->pf && rdzv_co_pf_deadline(co, secs))) {
		rdzv_co_maybe_done(co);
		return;
	}
	if (co->njoined + 1 < co->world) {
		missing_list(co, list, sizeof(list), 0);
		/* first, where a long list cannot cut it off */
		if (co->nofile)
			snprintf(
			    why, sizeof(why),
			    " (this coordinator can hold %zu connections, open-file limit %ld, "
			    "and %u pods need %zu: raise the pod's nofile limit)",
			    co->maxconns, co->nofile, co->world, co->need_conns);
		rdzv_co_abort(co, GX_EPEERS, 0, "peers missing after %lds%s: %s", secs, why, list);
		unauth_summary(co);
	} else {
		char odd[sizeof(co->res.err)] = "";

		missing_list(co, list, sizeof(list), 1);
		odd_coordinator(co, odd, sizeof(odd));
		rdzv_co_abort(co, GX_ERDZV, 0,
			      "%s%speers cannot reach the coordinator on the secondary network "
			      "after %lds: %s",
			      odd, odd[0] ? "; " : "", secs, list);
	}
	rdzv_co_maybe_done(co);
}

/* ---- the one periodic timer ---- */

/* Its frames wait for us (we were the slow one): no deadline, or before the proof one
 * extension per step (RDZV_PREAUTH_GRACE_MS). Not for closing ones. */
static int waiting_input(const struct cconn *cc)
{
	int n = 0, fd = cc->rc.f.fd;

	if (cc->rc.f.carried) /* its frames may wait in its relay's socket */
		fd = cc->relay ? cc->relay->rc.f.fd : -1;
	if (cc->rc.state == RC_CLOSING || fd < 0)
		return 0;
	return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}
/*
 * A deadline passed. Authenticated: closed unless its frames wait for us. Before the
 * proof, once per step: spared RDZV_PREAUTH_GRACE_MS when the awaited frame waits unread
 * (we were behind), or up to RDZV_HANDSHAKE_MS from the step's start when nothing came
 * but few connections are unauthenticated (a slow member, not a flood); else closed.
 */
static void conn_deadline(struct rdzv_coord *co, struct cconn *cc, int64_t now, int room)
{
	unsigned step = 1u << cc->rc.state;
	int waiting = waiting_input(cc);
	/* unauthenticated: in the budget, or carried (a relay's children hold no fd of ours) */
	int pre = cc->pa.in ||
		  (cc->rc.f.carried && (cc->rc.state == RC_HELLO || cc->rc.state == RC_AUTH));

	room = room && (cc->rc.state == RC_HELLO || cc->rc.state == RC_AUTH);
	/* a carried child's "unread input" is its relay's socket, which holds some child's
	 * bytes whenever the relay is busy: while there is room it is a slow member first (the
	 * 1 s grace made 1-6% of N=65536 reconnect when the bench's member processes lagged) */
	if (cc->rc.f.carried && room)
		waiting = 0;

	if (pre && !(cc->spared & step) && (waiting || room)) {
		cc->spared |= step;
		co->res.nslow += !waiting;
		cc->deadline = now + (waiting ? RDZV_PREAUTH_GRACE_MS
					      : RDZV_HANDSHAKE_MS - (cc->rc.state == RC_HELLO
									 ? RDZV_HELLO_MS
									 : RDZV_PROOF_MS));
	} else if (!waiting || pre) {
		co->res.nhs_late += pre && cc->rc.state != RC_CLOSING;
		rdzv_co_drop(co, cc, "handshake deadline");
	}
}

static void sweep_conns(struct rdzv_coord *co, int64_t now)
{
	struct cconn *cc, *next;
	int room;

	/* once per sweep, and not again for RDZV_HANDSHAKE_MS after a flood: its late
	 * connections all go, not all but the share a sweep leaves under the mark */
	if (co->pa.n * RDZV_PREAUTH_ROOM_DIV >= co->maxconns)
		co->flood_until = now + RDZV_HANDSHAKE_MS;
	room = now >= co->flood_until;

	for (cc = co->conns; cc; cc = next) {
		next = cc->next;
		if (cc->ping_at && now - cc->ping_at >= RDZV_PING_MS)
			rdzv_co_drop(co, cc, "no PONG: replaced by the newer connection");
		else if (cc->deadline && now >= cc->deadline)
			conn_deadline(co, cc, now, room);
	}
}

static void sweep(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rdzv_coord *co = arg;
	int64_t now = gx_now_ms();

	(void)id;
	co->sweep_id = 0;
	sweep_conns(co, now);
	gx_rl_flush(&co->rl_pre);
	gx_rl_flush(&co->rl_star);
	if (co->paused && co->nconns < co->maxconns)
		rdzv_co_listen_resume(co);
	if (now >= co->next_report && !co->committed && !co->aborted) {
		co->next_report = now + RDZV_REPORT_MS;
		report(co);
	}
	rdzv_co_check_commit(co);
	rdzv_co_blame_due(co, now);
	rdzv_co_maybe_done(co);
	co->sweep_id = gx_ev_timer(ev, RDZV_SWEEP_MS, sweep, co);
}

/* ---- start / free ---- */

static void res_init(struct rdzv_coord *co)
{
	struct rdzv_result *r = &co->res;
	const struct rdzv_peer *s = &co->tab[0];

	r->rank = 0;
	r->world = co->world;
	gx_strlcpy(r->master_addr, s->addr4[0] ? s->addr4 : s->addr6, sizeof(r->master_addr));
	r->coord = *s;
	r->table = co->tab;
	r->ntable = co->nnames < co->world ? co->nnames : co->world;
	r->authenticated = co->has_token;
	r->round = co->round;
	r->t_start_ms = gx_now_ms();
}

static int co_init(struct rdzv_coord *co, const struct rdzv_config *cfg,
		   const struct rdzv_peer *self)
{
	long nofile = gx_raise_nofile();
	size_t need;
	int rc;

	co->cfg = *cfg;
	co->cfg.token = NULL;
	co->cfg.token_len = 0;
	co->names = cfg->names;
	co->world = cfg->world;
	co->nnames = cfg->elastic ? cfg->nnames : cfg->world;
	co->need = cfg->elastic ? cfg->min_peers : cfg->world;
	co->nassigned = co->nnames;
	gx_strlcpy(co->job_id, cfg->job_id, sizeof(co->job_id));
	rc = rdzv_co_addrs_init(co);
	if (rc == 0)
		rc = rdzv_co_pf_init(co);
	if (rc < 0)
		return rc;
	co->tab = calloc(co->world, sizeof(*co->tab));
	co->st = calloc(co->world, sizeof(*co->st));
	if (!co->tab || !co->st)
		return -ENOMEM;
	if (cfg->elastic) {
		uint32_t i;

		co->enames = calloc(co->world, sizeof(*co->enames));
		if (!co->enames)
			return -ENOMEM;
		for (i = 0; i < co->world; i++)
			co->enames[i] = i < co->nnames ? cfg->names[i] : co->tab[i].name;
		co->names = co->enames;
	}
	co->tab[0] = *self;
	co->tab[0].index = 0;
	rdzv_co_addrs_claim(co, 0);
	co->tab[0].join_ms = co->tab[0].verify_ms = gx_now_ms();
	rc = rdzv_auth_key(cfg->token, cfg->token_len, co->job_id, co->k);
	if (rc < 0)
		return rc;
	co->has_token = cfg->token != NULL;
	randombytes_buf(&co->round, sizeof(co->round));
	randombytes_buf(co->decoy, sizeof(co->decoy));
	co->rng = rdzv_rng_new(); /* NULL: a syscall per nonce, as before */
	co->maxconns = 2 * (size_t)co->world + 64;
	if (co->maxconns < RDZV_MIN_CONNS)
		co->maxconns = RDZV_MIN_CONNS;
	if (co->maxconns > RDZV_MAX_CONNS)
		co->maxconns = RDZV_MAX_CONNS;
	if (nofile > 128 && (size_t)nofile - 64 < co->maxconns)
		co->maxconns = (size_t)nofile - 64;
	/* every member holds its session until the COMMIT, and one more connection verifies:
	 * below world connections the star cannot commit; with relays, the first F
	 * members, a relay per F and the VERIFYs in flight */
	need = co->world;
	if (cfg->relay_fanout > 1 && need > 2 * cfg->relay_fanout + need / cfg->relay_fanout + 64)
		need = 2 * cfg->relay_fanout + need / cfg->relay_fanout + 64;
	if (co->maxconns < need) {
		co->nofile = nofile;
		co->need_conns = need;
		gx_warn(
		    "rdzv: the open-file limit (%ld) lets this coordinator hold %zu connections; "
		    "%u pods need %zu at once: the rendezvous cannot complete (raise the pod's "
		    "nofile limit)",
		    nofile, co->maxconns, co->world, need);
	}
	co->next_report = gx_now_ms() + RDZV_REPORT_MS;
	co->rl_pre.what = "rdzv: unauthenticated connections refused or closed";
	co->rl_star.what = "rdzv: members sent to a relay (no room for them here)";
	/* with relays, their children's handshakes too (they hold no fd of ours) */
	rc = gx_pa_init(&co->pa, co->maxconns, RDZV_PREAUTH_PER_SRC);
	/* carried: every pod's handshake at once (relays start their children together), and
	 * room for strangers on top, whose oldest a newcomer closes */
	if (rc == 0)
		rc = gx_pa_init(&co->pa_kids, co->maxconns + co->world, RDZV_PREAUTH_PER_SRC);
	/* each JOIN adds its primary and secondary addresses */
	if (rc == 0)
		rc = gx_aset_init(&co->known, 3 * (size_t)co->world + 64);
	if (rc < 0)
		return rc;
	res_init(co);
	return 0;
}

int rdzv_coord_start(struct gx_ev *ev, const struct rdzv_config *cfg, rdzv_done_fn *done, void *arg,
		     struct rdzv_coord **ret)
{
	struct rdzv_coord *co = NULL;
	struct rdzv_peer self;
	int rc;

	if (!ev || !cfg || !done || !ret || !cfg->is_coordinator)
		return -EINVAL;
	rc = rdzv_config_check(cfg, &self);
	if (rc < 0)
		goto out;
	co = calloc(1, sizeof(*co));
	if (!co) {
		rc = -ENOMEM;
		goto out;
	}
	co->ev = ev;
	co->done = done;
	co->arg = arg;
	rc = co_init(co, cfg, &self);
	if (rc == 0)
		rc = rdzv_co_listen_open(co);
	if (rc == 0)
		co_rdma_listen(co);
	if (rc == 0)
		rc = rdzv_co_arm(co);
	if (rc < 0)
		goto out;
	if (self.nd_err && cfg->soft_verify) {
		/* check never aborts on a broken pod: no secondary here; members report that
		 * and stay in */
		co->tab[0].flags |= RDZV_PF_VFAILED;
		co->res.coord.flags |= RDZV_PF_VFAILED;
	} else if (self.nd_err) {
		rdzv_co_abort(co, GX_ERDZV, 1, "%s (the coordinator): %s", self.name,
			      self.nd_why[0] ? self.nd_why : gx_strerror(self.nd_err));
	}
	*ret = co;
	co = NULL;
out:
	rdzv_coord_free(co);
	return rc;
}

/* RDMA-CM answers for the members' check(); a device that cannot be used here
 * means TCP-only verification, with one warning line in the result (a visible but
 * unusable device is not a broken fabric). */
static void co_rdma_listen(struct rdzv_coord *co)
{
	const struct rdzv_rdma_ops *ops = co->cfg.rdma;
	struct rdzv_peer *s = &co->tab[0];
	char why[256] = "";
	int rc;

	if (!ops || !ops->listen || !s->rdma_dev[0])
		return;
	rc = ops->listen(ops->arg, co->ev, s, co->cfg.port, why, sizeof(why));
	if (rc == 0) {
		co->rdma_listening = 1;
		return;
	}
	snprintf(co->res.rdma_warning, sizeof(co->res.rdma_warning),
		 "RDMA-CM listen on %s (%s) failed: %s; verifying over TCP only", s->rdma_dev,
		 s->addr4[0] ? s->addr4 : s->addr6, why[0] ? why : gx_strerror(rc));
	s->rdma_dev[0] = '\0';
	s->gid_index = -1;
	co->res.coord.rdma_dev[0] = '\0';
}

static int rdzv_co_arm(struct rdzv_coord *co)
{
	co->sweep_id = gx_ev_timer(co->ev, 0, sweep, co);
	co->deadline_id =
	    gx_ev_timer(co->ev, co->cfg.deadline_ms - gx_now_ms(), deadline_fired, co);
	if (!co->sweep_id || !co->deadline_id)
		return -ENOMEM;
	return 0;
}

void rdzv_coord_free(struct rdzv_coord *co)
{
	uint32_t i;

	if (!co)
		return;
	while (co->conns)
		rdzv_co_drop(co, co->conns, NULL);
	rdzv_co_listen_close(co);
	gx_rl_final(&co->rl_pre);
	gx_rl_final(&co->rl_star);
	gx_pa_free(&co->pa);
	gx_pa_free(&co->pa_kids);
	gx_aset_free(&co->known);
	if (co->rdma_listening && co->cfg.rdma->close)
		co->cfg.rdma->close(co->cfg.rdma->arg);
	gx_ev_timer_cancel(co->ev, co->sweep_id);
	gx_ev_timer_cancel(co->ev, co->deadline_id);
	for (i = 0; co->st && i < co->world; i++) {
		free(co->st[i].note);
		sodium_memzero(co->st[i].vkey, sizeof(co->st[i].vkey)); /* unused tickets */
	}
	free(co->st);
	free(co->enames);
	free(co->tab);
	rdzv_co_pf_free(co);
	rdzv_co_addrs_free(co);
	rdzv_buf_free(&co->table);
	sodium_memzero(co->k, sizeof(co->k));
	sodium_memzero(co->decoy, sizeof(co->decoy));
	rdzv_rng_free(co->rng);
	free(co);
}
