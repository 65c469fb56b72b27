/* SPDX-License-Identifier: MIT */
/*
 * check_probe.c - the clients of `gxboot check`, in the gx_ev loop:
 * TCP probes from this pod's secondary address (bound to its iface) to each
 * target's secondary address at the check port: connect, then CHECK_ECHO_K
 * echo round trips; at most 16 in flight, targets in ring order from this
 * pod; 2 s per connect, 1 s per echo; a refused or reset connection early on
 * is retried (the target may not have opened its service yet), a timed-out
 * probe is tried again (3 attempts, longer timeouts, judged against the
 * slowest echo of the run); a 50 ms timer measures the loop's stalls. And a member's report client:
 * the sealed REPORT to the coordinator's primary address, then the RESULT on the same connection,
 * retried until the report deadline. Wire: agent/check/CHECK.md.
 */
#include "agent/check/check_int.h"

#include "netdetect/netdetect.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define INFLIGHT 16
#define CONNECT_MS 2000
#define ECHO_MS 1000
#define RETRY_MS 100
#define ECHO_LEN 32
#define TRIES 3		 /* a probe that times out is tried this often in all */
#define RTT_FACTOR 16	 /* a retry waits at least this many times the run's worst echo */
#define TIMEOUT_MAX 8000 /* ... but never longer than this (ms) */
#define LAG_TICK_MS 50	 /* the loop-lag monitor's period */

enum pc_state {
	PC_IDLE = 0,
	PC_WAIT, /* retry timer */
	PC_CONNECT,
	PC_ECHO,
	PC_DONE,
};

struct check_pc {
	struct check_net *n;
	uint32_t to;
	int rail;	   /* 0: the bootstrap iface; k: rail n->w->rails[k - 1] */
	char ifname[16];   /* the netdev the probe leaves on */
	struct gx_frame f; /* the echo connection: frames out, the echo back raw */
	enum pc_state state;
	union gx_sockaddr dst, src;
	socklen_t dlen, slen;
	int64_t retry_until;
	uint64_t timer;
	int tries; /* attempts that timed out so far */
	int k;
	int64_t rtt[CHECK_ECHO_K], sent_us;
	char route_why[64]; /* "routed via eth0": the kernel would send it out of another iface */
	unsigned char frame[CHECK_HDR_LEN + ECHO_LEN], in[CHECK_HDR_LEN + ECHO_LEN];
};

/* What a client reads: a RESULT, or a PROBE (the second pass); anything else is no check
 * service. The echo probe reads its answer raw instead. */
static int client_decode(struct gx_frame *f, const unsigned char *hdr, unsigned *type, size_t *blen)
{
	uint32_t len = 0;
	int t = 0;

	(void)f;
	if (agent_check_hdr_get(hdr, &t, &len) < 0 || (t != CHECK_RESULT && t != CHECK_PROBE))
		return GX_EPROTO;
	*type = (unsigned)t;
	*blen = len;
	return 0;
}

static const struct gx_frame_fmt client_fmt = {
    .hdr_len = CHECK_HDR_LEN,
    .decode = client_decode,
    .encode = agent_check_frame_encode,
};

const char *agent_check_errno_why(int err)
{
	switch (err) {
	case -ECONNREFUSED:
		return "refused";
	case -ETIMEDOUT:
		return "timeout";
	case -EHOSTUNREACH:
		return "unreachable";
	case -ENETUNREACH:
		return "no route";
	case -ECONNRESET:
	case -EPIPE:
		return "reset";
	case -EADDRNOTAVAIL:
		return "no source address";
	case GX_EPROTO:
		return "bad echo";
	default:
		return gx_strerror(err);
	}
}

int agent_check_connect(const char *ifn, const union gx_sockaddr *src, socklen_t slen,
			const union gx_sockaddr *dst, socklen_t dlen, int *out)
{
	int fd = -1, one = 1, rc = 0;

	fd = socket(dst->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (ifn[0] && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifn, (socklen_t)strlen(ifn)) < 0)
		gx_trace("check: SO_BINDTODEVICE %s: %s", ifn, strerror(errno));
	if (bind(fd, &src->sa, slen) < 0 ||
	    (connect(fd, &dst->sa, dlen) < 0 && errno != EINPROGRESS)) {
		rc = -errno;
		goto out;
	}
	*out = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* socket, SO_BINDTODEVICE (best effort), bind the source, connect. */
static int pc_connect(struct check_pc *pc)
{
	return agent_check_connect(pc->ifname, &pc->src, pc->slen, &pc->dst, pc->dlen, &pc->f.fd);
}

/*
 * A pair that timed out or found no host: when the kernel's neighbour entry of the next
 * hop (the gateway, else the target) is FAILED or INCOMPLETE, no ARP / ND answer ever
 * came, and that is the line ("no ARP answer from 192.168.1.7").
 */
static void pc_layer2(struct check_pc *pc, char *why, size_t len)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	struct nd_route rt;

	if (!pc->n->routes ||
	    (strcmp(why, "timeout") && strcmp(why, "no echo") && strcmp(why, "unreachable")))
		return;
	gx_addr_str(&pc->src, s, sizeof(s));
	gx_addr_str(&pc->dst, d, sizeof(d));
	if (nd_routes_get(pc->n->routes, s, d, &rt) == 0 && rt.type != RTN_LOCAL)
		nd_neigh_why(rt.ifindex, rt.gateway[0] ? rt.gateway : d, why, len);
}

static void pc_timer(struct gx_ev *ev, uint64_t id, void *arg);
static void pc_io(struct gx_ev *ev, int fd, uint32_t events, void *arg);
static void pc_launch(struct check_net *n);

/*
 * A timeout for this attempt: the base on the first, then longer on each
 * retry and at least RTT_FACTOR times the slowest echo this pod has measured
 * in this run (a loaded cluster is slow everywhere; a broken path is not).
 */
static int64_t pc_timeout(const struct check_pc *pc, int64_t base)
{
	int64_t t = base + base * pc->tries / 2, rtt = pc->n->rtt_max_us / 1000 * RTT_FACTOR;

	if (pc->tries && rtt > t)
		t = rtt;
	return t < TIMEOUT_MAX ? t : TIMEOUT_MAX;
}

static void pc_arm(struct check_pc *pc, int64_t ms)
{
	if (pc->timer)
		gx_ev_timer_cancel(pc->n->ev, pc->timer);
	pc->timer = gx_ev_timer(pc->n->ev, ms, pc_timer, pc);
}

static void pc_close(struct check_pc *pc)
{
	if (pc->f.fd >= 0)
		gx_ev_del(pc->n->ev, pc->f.fd);
	gx_frame_reset(&pc->f); /* closes; fd -1 */
	if (pc->timer)
		gx_ev_timer_cancel(pc->n->ev, pc->timer);
	pc->timer = 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The probe's result into this pod's row; the next probe starts. */
static void pc_finish(struct check_pc *pc, int err, const char *why)
{
	struct check_net *n = pc->n;
	struct check_probe p;

	pc_close(pc);
	memset(&p, 0, sizeof(p));
	p.to = pc->to;
	p.rail = pc->rail;
	p.proto = CHECK_TCP;
	p.gid_index = -1;
	p.ok = err == 0 && !why;
	if (p.ok) {
		qsort(pc->rtt, CHECK_ECHO_K, sizeof(pc->rtt[0]), cmp_i64);
		p.min_us = pc->rtt[0];
		p.median_us = pc->rtt[CHECK_ECHO_K / 2];
		p.max_us = pc->rtt[CHECK_ECHO_K - 1];
	} else {
		gx_strlcpy(p.why, why ? why : agent_check_errno_why(err), sizeof(p.why));
		if (pc->src.sa.sa_family)
			pc_layer2(pc, p.why, sizeof(p.why));
	}
	if (agent_check_row_add(n->pw ? n->pw : n->w, n->self, &p) < 0)
		gx_warn("check: out of memory recording a probe");
	gx_debug("check: tcp%s%s -> %s: %s", pc->rail ? " rail " : "",
		 agent_check_rail_name(n->w, pc->rail), n->w->names[pc->to], p.ok ? "ok" : p.why);
	if (pc->state != PC_IDLE)
		n->inflight--;
	pc->state = PC_DONE;
	n->ndone++;
	if (n->ndone == n->npcs) {
		n->probes_done = 1;
		gx_ev_stop(n->ev, 0);
		if (n->probes_cb)
			n->probes_cb(n); /* must not free n->pcs: the caller's loop reads them */
		return;
	}
	if (!n->launching)
		pc_launch(n);
}

static void pc_attempt(struct check_pc *pc)
{
	int rc = pc_connect(pc);

	if (rc == 0)
		rc = gx_ev_add(pc->n->ev, pc->f.fd, EPOLLOUT, pc_io, pc);
	if (rc < 0) {
		pc_finish(pc, rc, NULL);
		return;
	}
	pc->state = PC_CONNECT;
	pc->k = 0;
	pc_arm(pc, pc_timeout(pc, CONNECT_MS));
}

/* Refused / reset before the first echo came back: the service may still be opening. */
static void pc_error(struct check_pc *pc, int err)
{
	int early = pc->k == 0 && (err == -ECONNREFUSED || err == -ECONNRESET || err == -EPIPE);

	if (early && gx_now_ms() + RETRY_MS < pc->retry_until) {
		pc_close(pc);
		pc->state = PC_WAIT;
		pc_arm(pc, RETRY_MS);
		return;
	}
	pc_finish(pc, err, NULL);
}

static void pc_send(struct check_pc *pc)
{
	int rc;

	/* kept whole: the echo must come back as these bytes */
	agent_check_hdr_put(pc->frame, CHECK_ECHO, ECHO_LEN);
	randombytes_buf(pc->frame + CHECK_HDR_LEN, ECHO_LEN);
	pc->sent_us = gx_now_us();
	rc = gx_frame_send(&pc->f, CHECK_ECHO, pc->frame + CHECK_HDR_LEN, ECHO_LEN);
	/* 44 bytes on an idle socket: a short write is a broken connection */
	if (rc == 0 && gx_frame_pending(&pc->f))
		rc = -EPIPE;
	if (rc < 0) {
		pc_error(pc, rc);
		return;
	}
	pc->state = PC_ECHO;
	gx_ev_mod(pc->n->ev, pc->f.fd, EPOLLIN);
	pc_arm(pc, pc_timeout(pc, ECHO_MS));
}

/* The echo is read raw, not decoded: any byte that differs from what was sent, its header's
 * included, is a bad echo. */
static void pc_read(struct check_pc *pc)
{
	int rc = gx_frame_read_raw(&pc->f, pc->in, sizeof(pc->in));

	if (rc == 0)
		return;
	if (rc < 0) {
		pc_error(pc, rc);
		return;
	}
	if (memcmp(pc->in, pc->frame, sizeof(pc->in)) != 0) {
		pc_finish(pc, GX_EPROTO, NULL);
		return;
	}
	pc->rtt[pc->k] = gx_now_us() - pc->sent_us;
	if (pc->rtt[pc->k] > pc->n->rtt_max_us)
		pc->n->rtt_max_us = pc->rtt[pc->k];
	pc->k++;
	if (pc->k == CHECK_ECHO_K)
		pc_finish(pc, 0, NULL);
	else
		pc_send(pc);
}

static void pc_io(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct check_pc *pc = arg;
	int rc;

	(void)ev;
	(void)fd;
	if (pc->state == PC_CONNECT) {
		rc = gx_sock_error(pc->f.fd);
		if (rc < 0)
			pc_error(pc, rc);
		else if (events & EPOLLOUT)
			pc_send(pc);
		return;
	}
	if (pc->state == PC_ECHO)
		pc_read(pc);
}

/*
 * A timeout is not yet a verdict: the target (or this pod) may be starved of
 * CPU for a moment. Retry from scratch after a pause, with a longer timeout,
 * at most TRIES attempts in all; the last one's result stands.
 */
static void pc_timed_out(struct check_pc *pc, int err, const char *why)
{
	int tries = pc->n->tries > 0 ? pc->n->tries : TRIES;

	if (++pc->tries >= tries) {
		pc_finish(pc, err, why);
		return;
	}
	gx_debug("check: tcp -> %s: %s, retrying (%d of %d)", pc->n->w->names[pc->to],
		 why ? why : agent_check_errno_why(err), pc->tries + 1, tries);
	pc->n->retries++;
	pc_close(pc);
	pc->state = PC_WAIT;
	pc->retry_until = gx_now_ms() + pc_timeout(pc, CONNECT_MS);
	pc_arm(pc, 200 * (int64_t)pc->tries);
}

static void pc_timer(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct check_pc *pc = arg;

	(void)ev;
	(void)id;
	pc->timer = 0;
	if (pc->state == PC_WAIT)
		pc_attempt(pc);
	else if (pc->state == PC_CONNECT)
		pc_timed_out(pc, -ETIMEDOUT, NULL);
	else if (pc->state == PC_ECHO)
		pc_timed_out(pc, 0, pc->k ? "echo lost" : "no echo");
}

/* Source and destination at the check port; NULL, or why not. */
static const char *pc_set(struct check_pc *pc, const char *s, const char *d)
{
	if (gx_addr_parse(s, 0, &pc->src, &pc->slen) < 0 ||
	    gx_addr_parse(d, pc->n->port, &pc->dst, &pc->dlen) < 0)
		return "bad address";
	if (pc->src.sa.sa_family != pc->dst.sa.sa_family)
		return "no common family";
	return NULL;
}

/* check --rails: from this pod's rail to the target's rail of the same name. */
static const char *pc_rail_addrs(struct check_pc *pc)
{
	const struct check_net *n = pc->n;
	const char *name = agent_check_rail_name(n->w, pc->rail);
	struct check_rail me, to;

	if (agent_check_rails_find(n->table[n->self].rails, name, &me) < 0)
		return "no rail here";
	if (agent_check_rails_find(n->table[pc->to].rails, name, &to) < 0)
		return "no rail at peer";
	if (!me.iface[0] || !me.addr[0])
		return "no rail address here";
	if (!to.addr[0])
		return "no rail address there";
	gx_strlcpy(pc->ifname, me.iface, sizeof(pc->ifname));
	return pc_set(pc, me.addr, to.addr);
}

const char *agent_check_addrs(const struct check_net *n, uint32_t j, union gx_sockaddr *src,
			      socklen_t *slen, union gx_sockaddr *dst, socklen_t *dlen)
{
	const struct rdzv_peer *me = &n->table[n->self], *to = &n->table[j];
	const char *s = NULL, *d = NULL;

	if (!me->iface[0] || (!me->addr4[0] && !me->addr6[0]))
		return "no iface";
	if (!to->addr4[0] && !to->addr6[0])
		return "no address";
	if (me->addr4[0] && to->addr4[0]) {
		s = me->addr4;
		d = to->addr4;
	} else if (me->addr6[0] && to->addr6[0]) {
		s = me->addr6;
		d = to->addr6;
	} else {
		return "no common family";
	}
	if (gx_addr_parse(s, 0, src, slen) < 0 || gx_addr_parse(d, n->port, dst, dlen) < 0)
		return "bad address";
	return NULL;
}

/* Addresses for a probe: the family both ends have (IPv4 first). */
static const char *pc_addrs(struct check_pc *pc)
{
	if (pc->rail)
		return pc_rail_addrs(pc);
	gx_strlcpy(pc->ifname, pc->n->ifname, sizeof(pc->ifname));
	return agent_check_addrs(pc->n, pc->to, &pc->src, &pc->slen, &pc->dst, &pc->dlen);
}

/*
 * The kernel's route for this probe, as for the rendezvous' path: a pair the kernel would
 * send out of another interface than the probe's is what the job's sockets would do, so it
 * fails here, named, however the bound probe itself would fare. NULL, or why not.
 */
static const char *pc_route(struct check_pc *pc)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN], line[512];
	struct nd_route rt;

	if (!pc->n->routes)
		return NULL;
	gx_addr_str(&pc->src, s, sizeof(s));
	gx_addr_str(&pc->dst, d, sizeof(d));
	if (nd_routes_get(pc->n->routes, s, d, &rt) < 0) {
		snprintf(pc->route_why, sizeof(pc->route_why), "no route");
		return pc->route_why;
	}
	if (rt.type == RTN_LOCAL || strcmp(rt.oif, pc->ifname) == 0)
		return NULL;
	nd_route_why(&rt, s, d, 0, pc->ifname, NULL, line, sizeof(line));
	gx_debug("check: -> %s: %s", pc->n->w->names[pc->to], line);
	snprintf(pc->route_why, sizeof(pc->route_why), "routed via %s", rt.oif);
	return pc->route_why;
}

static void pc_launch(struct check_net *n)
{
	struct check_pc *pc;
	const char *why;

	n->launching = 1;
	while (n->inflight < INFLIGHT && n->next < n->npcs) {
		pc = &n->pcs[n->next++];
		why = pc_addrs(pc);
		if (!why)
			why = pc_route(pc);
		if (why) {
			pc_finish(pc, 0, why);
			continue;
		}
		n->inflight++;
		pc->state = PC_WAIT;
		pc->retry_until = gx_now_ms() + CONNECT_MS;
		if (pc->retry_until < n->t0 + CHECK_GRACE_MS(n->w->n))
			pc->retry_until = n->t0 + CHECK_GRACE_MS(n->w->n);
		pc_attempt(pc);
	}
	n->launching = 0;
}

/* One probe per target and rail (0: the bootstrap iface, then every rail of w). */
int agent_check_probes_start(struct check_net *n)
{
	uint32_t j, k, m;

	n->pcs = calloc((size_t)n->w->n * (1 + n->w->nrails), sizeof(*n->pcs));
	if (!n->pcs)
		return -ENOMEM;
	/*
	 * Targets in ring order from this pod (self+1, self+2, ...): every pod
	 * probes a different target at a time, so none takes N x 16 probes at
	 * once (rank order sent every pod to pod 1 first).
	 */
	for (m = 1; m <= n->w->n; m++) {
		j = (n->self + m) % n->w->n;
		/* the second pass probes what it is told, whatever the mode */
		if (n->only ? !n->only[j] || j == n->self
			    : !agent_check_pair_probed(n->w, n->self, j))
			continue;
		for (k = 0; k <= (n->only ? 0 : n->w->nrails); k++) {
			n->pcs[n->npcs].n = n;
			n->pcs[n->npcs].to = j;
			n->pcs[n->npcs].rail = (int)k;
			gx_frame_init(&n->pcs[n->npcs].f, -1, &client_fmt, NULL, &n->pcs[n->npcs]);
			n->npcs++;
		}
	}
	if (!n->npcs) {
		n->probes_done = 1;
		return 0;
	}
	pc_launch(n);
	return 0;
}

int agent_check_probes_again(struct check_net *n, struct check_world *into,
			     const unsigned char *only)
{
	agent_check_probes_reset(n);
	n->pw = into;
	n->only = only;
	n->tries = 2; /* the first pass had its 3 */
	return agent_check_probes_start(n);
}

/* ---- the loop-lag monitor ---- */

static void lag_tick(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct check_net *n = arg;
	int64_t now = gx_now_ms();

	(void)id;
	if (now - n->lag_due > n->lag_max_ms)
		n->lag_max_ms = now - n->lag_due;
	n->lag_due = now + LAG_TICK_MS;
	n->lag_timer = gx_ev_timer(ev, LAG_TICK_MS, lag_tick, n);
}

void agent_check_lag_start(struct check_net *n)
{
	n->lag_due = gx_now_ms() + LAG_TICK_MS;
	n->lag_timer = gx_ev_timer(n->ev, LAG_TICK_MS, lag_tick, n);
}

void agent_check_lag_stop(struct check_net *n)
{
	if (n->lag_timer)
		gx_ev_timer_cancel(n->ev, n->lag_timer);
	n->lag_timer = 0;
}

/* ---- the member's report ---- */

struct check_rep {
	struct check_net *n;
	struct gx_frame f; /* corked: the REPORT, later PROBED, go out on EPOLLOUT */
	int connected;
	int reporting;	      /* the REPORT is queued: nothing is read until it is out */
	unsigned char *frame; /* the REPORT, sent again on every connection */
	size_t flen;
	unsigned char *body; /* the frame read: RESULT, or PROBE (the second pass) */
	size_t blen;
	uint64_t timer;
	/* the second pass asked of this member (PROBE): its probes, then PROBED */
	struct check_world ask_w; /* scratch world, ask_w.rows != NULL while asked */
	unsigned char *ask_only;
	uint64_t ask_id;
	uint64_t ask_timer;
};

static void rep_timer(struct gx_ev *ev, uint64_t id, void *arg);

static void rep_close(struct check_rep *rp)
{
	if (rp->f.fd >= 0)
		gx_ev_del(rp->n->ev, rp->f.fd);
	gx_frame_reset(&rp->f); /* closes; what was queued or half read is dropped */
	rp->f.cork = 1;
	free(rp->body);
	rp->body = NULL;
	rp->blen = 0;
	rp->connected = rp->reporting = 0;
}

/* The asked probes are over (or abandoned): free what they held. */
static void ask_end(struct check_rep *rp)
{
	if (rp->ask_timer)
		gx_ev_timer_cancel(rp->n->ev, rp->ask_timer);
	rp->ask_timer = 0;
	if (rp->ask_w.rows) {
		agent_check_probes_reset(rp->n);
		rp->n->probes_cb = NULL;
		rp->n->probes_done = 1; /* its own probes are long over: it may be asked again */
	}
	agent_check_world_free(&rp->ask_w);
	free(rp->ask_only);
	rp->ask_only = NULL;
}

/* After the asked probes (a timer: pc_finish's callers still read the probes). */
static void ask_send(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct check_rep *rp = arg;
	struct check_net *n = rp->n;
	unsigned char *frame = NULL;
	char *text = NULL;
	size_t len = 0, flen = 0;
	int rc;

	(void)id;
	rp->ask_timer = 0;
	rc = agent_check_probed_encode(&rp->ask_w, n->self, rp->ask_id, &text, &len);
	if (rc == 0 && rp->f.fd >= 0 && rp->connected && !gx_frame_pending(&rp->f))
		rc = agent_check_seal(n->key, CHECK_PROBED, n->round, n->self, text, len, &frame,
				      &flen);
	else if (rc == 0)
		rc = -ENOTCONN;
	if (rc == 0)
		rc = gx_frame_send_raw(&rp->f, frame, flen);
	free(frame);
	free(text);
	ask_end(rp);
	if (rc < 0) {
		gx_debug("check: the coordinator's second pass: no answer sent (%s)",
			 gx_strerror(rc));
		return;
	}
	gx_ev_mod(ev, rp->f.fd, EPOLLIN | EPOLLOUT);
}

static void ask_done(struct check_net *n)
{
	struct check_rep *rp = n->rep;

	if (rp && !rp->ask_timer)
		rp->ask_timer = gx_ev_timer(n->ev, 0, ask_send, rp);
}

/* PROBE: the coordinator asks this member to probe some pods again (the second pass
 * that finds whom to blame). */
static void rep_probe(struct check_rep *rp)
{
	struct check_net *n = rp->n;
	const char *payload;
	char why[160];
	size_t plen;
	uint32_t rank;
	int rc;

	rc = agent_check_open(n->key, CHECK_PROBE, n->round, n->w->n, rp->body, rp->blen, &rank,
			      &payload, &plen);
	if (rc == 0 && rank != n->self)
		rc = GX_EPROTO;
	if (rc < 0 || rp->ask_w.rows || !n->probes_done) {
		gx_warn("check: a request to probe again ignored: %s",
			rc == GX_EMAC ? "bad MAC"
			: rc < 0      ? "for another pod"
				      : "this pod is still probing");
		return;
	}
	rp->ask_only = calloc(n->w->n, 1);
	if (!rp->ask_only ||
	    agent_check_probe_req_decode(payload, plen, n->w->n, n->self, &rp->ask_id, rp->ask_only,
					 why, sizeof(why)) < 0 ||
	    agent_check_world_init(&rp->ask_w, n->w->n, 0, n->w->names) < 0) {
		gx_warn("check: a request to probe again ignored: %s",
			rp->ask_only ? why : "out of memory");
		ask_end(rp);
		return;
	}
	gx_info("check: the coordinator asks this pod to probe again (second pass)");
	n->probes_cb = ask_done;
	rc = agent_check_probes_again(n, &rp->ask_w, rp->ask_only);
	if (rc < 0)
		ask_end(rp);
	else if (n->probes_done) /* nothing to probe: answered at once */
		ask_done(n);
}

static void rep_retry(struct check_rep *rp, const char *why)
{
	gx_strlcpy(rp->n->result_why, why, sizeof(rp->n->result_why));
	gx_debug("check: report to the coordinator: %s; retrying", why);
	rep_close(rp);
	rp->timer = gx_ev_timer(rp->n->ev, 250, rep_timer, rp);
}

static void rep_result(struct check_rep *rp)
{
	struct check_net *n = rp->n;
	const char *payload;
	size_t plen;
	uint32_t rank;
	int rc;

	rc = agent_check_open(n->key, CHECK_RESULT, n->round, n->w->n, rp->body, rp->blen, &rank,
			      &payload, &plen);
	if (rc < 0 || rank != n->self) {
		rep_retry(rp,
			  rc == GX_EMAC ? "the result's MAC is wrong" : "result for another pod");
		return;
	}
	n->result = malloc(plen + 1);
	if (n->result) {
		memcpy(n->result, payload, plen);
		n->result[plen] = '\0';
		n->result_len = plen;
	}
	n->result_done = 1;
	rep_close(rp);
	gx_ev_stop(n->ev, 0);
}

/* Write what is queued (the REPORT, a PROBED): 0, or < 0 when the connection broke. */
static int rep_flush(struct check_rep *rp)
{
	int rc = gx_frame_flush(&rp->f);

	if (rc < 0)
		return rc;
	if (rc == 0)
		gx_ev_mod(rp->n->ev, rp->f.fd, EPOLLIN);
	return 0;
}

static void rep_io(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct check_rep *rp = arg;
	unsigned type = 0;
	int rc;

	(void)ev;
	(void)fd;
	if (!rp->reporting && gx_frame_pending(&rp->f) && (events & EPOLLOUT)) { /* PROBED */
		rc = rep_flush(rp);
		if (rc < 0) {
			rep_retry(rp, agent_check_errno_why(rc));
			return;
		}
		if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
			return;
	}
	if (!rp->connected) {
		rc = gx_sock_error(rp->f.fd);
		if (rc < 0 || !(events & EPOLLOUT)) {
			rep_retry(rp, rc < 0 ? agent_check_errno_why(rc) : "connection failed");
			return;
		}
		rp->connected = 1;
		rp->reporting = 1;
		rc = gx_frame_send_raw(&rp->f, rp->frame, rp->flen);
		if (rc < 0) {
			rep_retry(rp, agent_check_errno_why(rc));
			return;
		}
	}
	if (rp->reporting) {
		rc = rep_flush(rp);
		if (rc < 0)
			rep_retry(rp, agent_check_errno_why(rc));
		else if (!gx_frame_pending(&rp->f))
			rp->reporting = 0;
		return;
	}
	rc = gx_frame_read(&rp->f, &type, &rp->body, &rp->blen);
	if (rc < 0) {
		rep_retry(rp, rc == GX_EPROTO ? "not a check service" : "connection closed");
	} else if (rc == 1 && type == CHECK_PROBE) {
		rep_probe(rp);
		free(rp->body);
		rp->body = NULL;
	} else if (rc == 1) {
		rep_result(rp);
	}
}

static void rep_timer(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct check_rep *rp = arg;
	int rc;

	(void)id;
	rp->timer = 0;
	rc = gx_tcp_connect(&rp->n->coord, rp->n->coordlen, NULL, 0, &rp->f.fd);
	if (rc == 0)
		rc = gx_ev_add(ev, rp->f.fd, EPOLLOUT, rep_io, rp);
	if (rc < 0)
		rep_retry(rp, agent_check_errno_why(rc));
}

int agent_check_report_start(struct check_net *n, unsigned char *frame, size_t len)
{
	struct check_rep *rp = calloc(1, sizeof(*rp));

	if (!rp) {
		free(frame);
		return -ENOMEM;
	}
	rp->n = n;
	gx_frame_init(&rp->f, -1, &client_fmt, NULL, rp);
	rp->f.cork = 1;
	rp->frame = frame;
	rp->flen = len;
	n->rep = rp;
	rp->timer = gx_ev_timer(n->ev, 0, rep_timer, rp);
	return rp->timer ? 0 : -ENOMEM;
}

void agent_check_probes_reset(struct check_net *n)
{
	size_t k;

	for (k = 0; n->pcs && k < n->npcs; k++)
		pc_close(&n->pcs[k]);
	free(n->pcs);
	n->pcs = NULL;
	n->npcs = n->next = n->inflight = n->ndone = 0;
	n->probes_done = n->launching = 0;
	n->pw = NULL;
	n->only = NULL;
	n->tries = 0;
}

void agent_check_probes_stop(struct check_net *n)
{
	size_t k;

	agent_check_lag_stop(n);
	for (k = 0; n->pcs && k < n->npcs; k++)
		pc_close(&n->pcs[k]);
	free(n->pcs);
	n->pcs = NULL;
	if (n->rep) {
		ask_end(n->rep);
		rep_close(n->rep);
		if (n->rep->timer)
			gx_ev_timer_cancel(n->ev, n->rep->timer);
		free(n->rep->frame);
		free(n->rep);
		n->rep = NULL;
	}
	free(n->result);
	n->result = NULL;
}
