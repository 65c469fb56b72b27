/* SPDX-License-Identifier: MIT */
/*
 * run_probe.c - a pod whose --self or --peers names another coordinator than its peers'
 * lists do. No frame of the rendezvous passes between such a pod and the others, so the
 * rendezvous alone can say only "never answered" or "missing", about healthy pods. The
 * evidence here is a TCP connect to a peer's rendezvous port, in the run's loop, bounded:
 *
 * - The claim (a member): its host name is its list's first entry, the coordinator's; that
 *   name resolves to one of its own addresses; and nothing listens there. Then this pod is
 *   the coordinator its peers wait for, and --self made it a member: exit 2 at once (every
 *   pod said "never answered" at --timeout). hostNetwork pods share the node's address and
 *   host name, so the address alone proves nothing: the host name must be the
 *   coordinator's entry too, and nothing may listen for AGENT_CLAIM_MS (a coordinator that
 *   shares this network namespace and starts a little later is given that long).
 * - Listeners (a coordinator with peers missing): a few of the missing peers are connected
 *   to on the rendezvous port, during the wait and once more after the deadline. A member
 *   does not listen there; one that accepts listens as a coordinator does (or as a relay of
 *   the relay tree, whose slots are skipped), so its list names another coordinator than
 *   ours. Addresses of this pod's own are skipped (our own listener answers there). The
 *   final line says so on both sides: the real coordinator missing the odd pod, and the odd
 *   pod, coordinator of its own list, missing the others.
 */
#include "agent/peers/peers.h"
#include "agent/pipeline/run_int.h"
#include "netdetect/netdetect.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define PROBE_MS 1500	      /* one connect */
#define AGENT_CLAIM_MS 2000   /* nothing listens at our own address this long */
#define CLAIM_EVERY_MS 250    /* between two connects of the claim */
#define AGENT_LISTEN_MAX 8    /* peers connected to in one round */
#define LISTEN_ROUND_MS 2500  /* a round's bound: lookups and connects */
#define LISTEN_EVERY_MS 30000 /* rounds during the wait, at most one per */

/* ---- one connect: 1 accepted, 0 refused, < 0 unknown (timed out, unreachable) ---- */
typedef void probe_fn(void *arg, int rc);
struct probe {
	struct gx_ev *ev;
	int fd;
	uint64_t timer;
	probe_fn *done;
	void *arg;
};

static void probe_stop(struct probe *p)
{
	if (p->fd >= 0) {
		gx_ev_del(p->ev, p->fd);
		close(p->fd);
		p->fd = -1;
	}
	if (p->timer)
		gx_ev_timer_cancel(p->ev, p->timer);
	p->timer = 0;
}

static void probe_end(struct probe *p, int rc)
{
	probe_stop(p);
	p->done(p->arg, rc);
}

static void probe_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	int e = gx_sock_error(fd);

	(void)ev;
	(void)events;
	probe_end(arg, e == 0 ? 1 : e == -ECONNREFUSED ? 0 : e);
}

static void probe_timeout(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct probe *p = arg;

	(void)ev;
	(void)id;
	p->timer = 0;
	probe_end(p, -ETIMEDOUT);
}

/* -EINPROGRESS: done follows from the loop; else the result at once (done not called). */
static int probe_start(struct probe *p, struct gx_ev *ev, const union gx_sockaddr *sa,
		       socklen_t len, probe_fn *done, void *arg)
{
	int rc;

	p->ev = ev;
	p->fd = -1;
	p->timer = 0;
	p->done = done;
	p->arg = arg;
	rc = gx_tcp_connect(sa, len, NULL, 0, &p->fd);
	if (rc < 0)
		return rc == -ECONNREFUSED ? 0 : rc;
	rc = gx_ev_add(ev, p->fd, EPOLLOUT, probe_event, p);
	p->timer = rc == 0 ? gx_ev_timer(ev, PROBE_MS, probe_timeout, p) : 0;
	if (rc < 0 || !p->timer) {
		probe_stop(p);
		return rc < 0 ? rc : -ENOMEM;
	}
	return -EINPROGRESS;
}

static uint16_t rdzv_port(const struct agent_run *r)
{
	return (uint16_t)(r->port ? r->port : r->o->port);
}

/* An address of this pod's: on one of its interfaces, or loopback (our wildcard listener
 * answers on all of 127/8). */
static int addr_local(const union gx_sockaddr *sa)
{
	char a[64];

	gx_addr_str(sa, a, sizeof(a));
	return gx_addr_is_loopback(a) || nd_addr_on_local_iface(a) == 1;
}

/* ---- the claim ---- */
struct agent_claim {
	struct agent_run *r;
	struct probe p;
	union gx_sockaddr sa;
	socklen_t len;
	int64_t since;	/* the first refusal of a run of them, 0 none */
	uint64_t timer; /* the next connect */
	int running;	/* a connect is out */
	int cleared;	/* something listened: a coordinator shares this network namespace */
};

int agent_claims_coord(const struct agent_peers *p, const char *hostname)
{
	char ip[64];

	if (p->observer || p->elastic || p->self == AGENT_SELF_NONE || p->self == 0 || !p->n ||
	    !hostname || !*hostname || gx_addr_normalize(p->names[0], ip, sizeof(ip)) == 0)
		return 0;
	/* the host name is the coordinator's entry, not this pod's own */
	return agent_name_match(p->names[0], hostname) > 0 &&
	       agent_name_match(p->names[p->self], hostname) == 0;
}

static void claim_fail(struct agent_claim *c)
{
	struct agent_run *r = c->r;
	const char *me = r->peers.names[r->peers.self];
	char addr[64], who[300];

	if (r->o->self)
		snprintf(who, sizeof(who), "--self %s", r->o->self);
	else
		snprintf(who, sizeof(who), "its entry %.200s (peers from %s)", me, r->peers.source);
	snprintf(r->claim_why, sizeof(r->claim_why),
		 "%s makes this pod a member, but its host name %s is the first entry of the "
		 "peer list, the coordinator's: %s resolves to this pod's own address %s, and "
		 "nothing listens there on port %u, so no coordinator will answer and %s is "
		 "claimed by two pods; %s %s",
		 who, r->hostname, r->coord_lookup, gx_addr_str(&c->sa, addr, sizeof(addr)),
		 rdzv_port(r), me, r->o->self ? "drop --self, or set it to" : "set --self to",
		 r->peers.names[0]);
	r->claim_rc = GX_EUSAGE;
	r->rdzv_rc = GX_EUSAGE;
	r->rdzv_done = 1;
	gx_ev_stop(r->ev, 0);
}

static void claim_connect(struct gx_ev *ev, uint64_t id, void *arg);

static void claim_answer(void *arg, int rc)
{
	struct agent_claim *c = arg;
	int64_t now = gx_now_ms();

	c->running = 0;
	if (rc == 1) {
		gx_debug("a coordinator listens at %s's own address: no claim", c->r->hostname);
		c->cleared = 1;
		return;
	}
	if (rc == 0 && !c->since)
		c->since = now;
	else if (rc < 0)
		c->since = 0; /* no answer at an address of our own proves nothing */
	if (c->since && now - c->since >= AGENT_CLAIM_MS) {
		claim_fail(c);
		return;
	}
	c->timer = gx_ev_timer(c->r->ev, CLAIM_EVERY_MS, claim_connect, c);
}

static void claim_connect(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct agent_claim *c = arg;
	int rc;

	(void)id;
	c->timer = 0;
	rc = probe_start(&c->p, ev, &c->sa, c->len, claim_answer, c);
	c->running = rc == -EINPROGRESS;
	if (!c->running)
		claim_answer(c, rc);
}

void agent_claim_watch(struct agent_run *r, const union gx_sockaddr *sa, socklen_t len)
{
	struct agent_claim *c = r->claim;

	if ((c && (c->cleared || c->running || c->timer)) ||
	    !agent_claims_coord(&r->peers, r->hostname) || !addr_local(sa))
		return;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return;
		c->r = r;
		c->p.fd = -1;
		r->claim = c;
	}
	c->sa = *sa;
	c->len = len;
	gx_debug("%s resolves to this pod's own address: is anyone listening there?",
		 r->coord_lookup);
	claim_connect(r->ev, 0, c);
}

/* ---- listeners ---- */
struct lprobe {
	struct agent_listen *l;
	size_t idx;
	struct agent_dns *dns;
	int as_given; /* asked for the name as listed (NXDOMAIN for our guess of its full name) */
	int busy;
	struct probe p;
	union gx_sockaddr sa;
};

struct agent_listen {
	struct agent_run *r;
	struct lprobe lp[AGENT_LISTEN_MAX];
	size_t n, left;	 /* this round's peers, those not answered yet */
	uint64_t timer;	 /* the round's bound */
	int64_t last_ms; /* the last round's start */
	int final;	 /* stop the loop when the round ends */
	size_t next;	 /* where the next round starts in the list (rounds take turns) */
	size_t found[AGENT_LISTEN_MAX], nfound;
	char found_addr[AGENT_LISTEN_MAX][64];
	size_t nmissing; /* peers the last line listed */
};

int agent_line_lists(const char *line, const char *name)
{
	size_t l = strlen(name);
	const char *s;

	if (!l)
		return 0;
	for (s = strstr(line, name); s; s = strstr(s + 1, name)) {
		if (s - line < 2 || s[-1] != ' ' || (s[-2] != ':' && s[-2] != ','))
			continue;
		if (s[l] == '\0' || s[l] == ',' || s[l] == ';' || (s[l] == ' ' && s[l + 1] == '('))
			return 1;
	}
	return 0;
}

static void round_end(struct agent_listen *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		agent_dns_free(l->lp[i].dns);
		l->lp[i].dns = NULL;
		if (l->lp[i].busy)
			probe_stop(&l->lp[i].p);
		l->lp[i].busy = 0;
	}
	if (l->timer)
		gx_ev_timer_cancel(l->r->ev, l->timer);
	l->timer = 0;
	l->n = l->left = 0;
	if (l->final)
		gx_ev_stop(l->r->ev, 0);
}

static void lp_done(struct lprobe *lp, int rc)
{
	struct agent_listen *l = lp->l;
	struct agent_run *r = l->r;
	char *a;

	lp->busy = 0;
	if (rc == 1 && l->nfound < AGENT_LISTEN_MAX) {
		a = l->found_addr[l->nfound];
		gx_addr_str(&lp->sa, a, sizeof(l->found_addr[0]));
		l->found[l->nfound++] = lp->idx;
		gx_warn(
		    "%s (%s) listens on port %u as a coordinator (or a relay) does but has not "
		    "joined: its --peers list may name another coordinator than this pod's (%s)",
		    r->peers.names[lp->idx], a, rdzv_port(r), r->peers.names[0]);
	} else {
		gx_debug("%s on port %u: %s", r->peers.names[lp->idx], rdzv_port(r),
			 rc == 0  ? "refused"
			 : rc < 0 ? gx_strerror(rc)
				  : "skipped");
	}
	if (l->left && --l->left == 0)
		round_end(l);
}

static void lp_answer(void *arg, int rc)
{
	lp_done(arg, rc);
}

static void lp_connect(struct lprobe *lp, const union gx_sockaddr *sa, socklen_t len)
{
	int rc;

	lp->sa = *sa;
	if (addr_local(sa)) { /* our own listener would answer: nothing to learn */
		lp_done(lp, 2);
		return;
	}
	lp->busy = 1;
	rc = probe_start(&lp->p, lp->l->r->ev, sa, len, lp_answer, lp);
	if (rc != -EINPROGRESS)
		lp_done(lp, rc);
}

static void lp_resolve(struct lprobe *lp);

static void lp_resolved(void *arg, int rc, const struct agent_dns_answer *ans)
{
	struct lprobe *lp = arg;
	union gx_sockaddr sa = {0};
	socklen_t len = 0;

	if (rc == 0) { /* the answer lives in the lookup, freed next */
		sa = ans->addrs[0];
		len = ans->lens[0];
	}
	agent_dns_free(lp->dns);
	lp->dns = NULL;
	if (rc == -ENOENT && lp->l->r->peers.coord_maybe_plain && !lp->as_given) {
		lp->as_given = 1;
		lp_resolve(lp);
	} else if (rc < 0) {
		lp_done(lp, rc);
	} else {
		lp_connect(lp, &sa, len);
	}
}

static void lp_resolve(struct lprobe *lp)
{
	struct agent_run *r = lp->l->r;
	union gx_sockaddr sa;
	socklen_t len;
	char name[600];
	int rc;

	if (gx_addr_parse(r->peers.names[lp->idx], rdzv_port(r), &sa, &len) == 0) {
		lp_connect(lp, &sa, len);
		return;
	}
	agent_peer_lookup(r, lp->idx, lp->as_given, name, sizeof(name));
	rc =
	    agent_dns_start(r->ev, name, r->o->dns_server, rdzv_port(r), lp_resolved, lp, &lp->dns);
	if (rc < 0)
		lp_done(lp, rc);
}

static void round_timeout(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct agent_listen *l = arg;

	(void)ev;
	(void)id;
	l->timer = 0;
	round_end(l);
}

static int found_already(const struct agent_listen *l, size_t i)
{
	size_t k;

	for (k = 0; k < l->nfound; k++)
		if (l->found[k] == i)
			return 1;
	return 0;
}

/* A round over the peers line lists (not found yet, no relay slot), at most AGENT_LISTEN_MAX,
 * from where the last round stopped. */
static void round_start(struct agent_run *r, const char *line)
{
	struct agent_listen *l = r->listen;
	size_t i, j, k, start = r->listen ? r->listen->next : 0;

	if (!l) {
		l = calloc(1, sizeof(*l));
		if (!l)
			return;
		l->r = r;
		r->listen = l;
	}
	if (l->n)
		return; /* one round at a time */
	l->nmissing = 0;
	for (j = 0; r->peers.n > 1 && j < r->peers.n - 1; j++) {
		i = 1 + (start + j) % (r->peers.n - 1);
		if (!agent_line_lists(line, r->peers.names[i]))
			continue;
		l->nmissing++;
		if (l->n == AGENT_LISTEN_MAX || found_already(l, i) ||
		    (r->relay_f && i % r->relay_f == 0))
			continue;
		memset(&l->lp[l->n], 0, sizeof(l->lp[0]));
		l->lp[l->n].l = l;
		l->lp[l->n].idx = i;
		l->n++;
		l->next = i % (r->peers.n - 1); /* the one after i, as an offset from 1 */
	}
	if (!l->n)
		return;
	l->last_ms = gx_now_ms();
	l->left = l->n;
	l->timer = gx_ev_timer(r->ev, LISTEN_ROUND_MS, round_timeout, l);
	for (i = 0, k = l->n; i < k && l->n; i++) /* a round may end inside this loop */
		lp_resolve(&l->lp[i]);
}

void agent_listen_progress(struct agent_run *r, const char *line)
{
	if (!r->coord || r->peers.self != 0 || r->peers.elastic ||
	    (r->listen && r->listen->last_ms && gx_now_ms() - r->listen->last_ms < LISTEN_EVERY_MS))
		return;
	round_start(r, line);
}

void agent_listen_final(struct agent_run *r, int rc, char *err, size_t errlen)
{
	struct agent_listen *l;
	int64_t until = gx_now_ms() + LISTEN_ROUND_MS + 500;
	size_t k, len;
	int erc = 0;

	if (rc != GX_EPEERS || !r->coord || r->peers.self != 0 || r->peers.elastic)
		return;
	round_start(r, r->res.err);
	l = r->listen;
	if (!l)
		return;
	l->final = 1;
	while (l->n && erc >= 0)
		erc = gx_ev_run_until(r->ev, until);
	l->final = 0;
	if (l->n)
		round_end(l);
	for (k = 0; k < l->nfound; k++) {
		len = strlen(err);
		snprintf(err + len, errlen - len, "%s%s (%s)", k ? ", " : "; ",
			 r->peers.names[l->found[k]], l->found_addr[k]);
	}
	if (!l->nfound)
		return;
	len = strlen(err);
	snprintf(err + len, errlen - len,
		 " listen%s on port %u as a coordinator (or a relay) does but never joined: %s "
		 "--peers list%s another coordinator than this pod's (%s)%s",
		 l->nfound == 1 ? "s" : "", rdzv_port(r), l->nfound == 1 ? "its" : "their",
		 l->nfound == 1 ? " names" : "s name", r->peers.names[0],
		 l->nmissing + 1 == r->peers.n ? "; no peer joined this pod: its own list is "
						 "likely the one that differs"
					       : "");
}

void agent_probes_stop(struct agent_run *r)
{
	if (r->claim) {
		if (r->claim->running)
			probe_stop(&r->claim->p);
		if (r->claim->timer)
			gx_ev_timer_cancel(r->ev, r->claim->timer);
		r->claim->running = 0;
		r->claim->timer = 0;
		r->claim->cleared = 1;
	}
	if (r->listen && r->listen->n) {
		r->listen->final = 0;
		round_end(r->listen);
	}
}

void agent_probes_free(struct agent_run *r)
{
	if (r->ev)
		agent_probes_stop(r);
	free(r->claim);
	free(r->listen);
	r->claim = NULL;
	r->listen = NULL;
}
