/* SPDX-License-Identifier: MIT */
/*
 * check_serve.c - the check service of `gxboot check`: a TCP
 * listener on the wildcard address at the check port that echoes probe
 * frames and, on the coordinator, takes REPORT frames from members and
 * answers each on the same connection with the sealed RESULT. Bounded:
 * connection count, frame sizes, idle time. Wire: agent/check/CHECK.md.
 */
#include "agent/check/check_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define IDLE_MS 10000 /* a probe connection that says nothing for this long is closed */
#define SWEEP_MS 1000

struct check_sconn {
	struct check_net *n;
	struct check_sconn *next;
	/* corked: what is queued goes out on EPOLLOUT; a body grows as bytes arrive, from
	 * CHECK_PREMAC_FREE, charged to the pre-MAC budget */
	struct gx_frame f;
	int closing; /* close once out is flushed */
	long rank;   /* REPORT received from this rank, -1 none */
	int64_t deadline;
	char peer[64];
	int rank_known;	     /* REPORT: it comes from the address of the rank it claims */
	int wrong_iface;     /* to our secondary address, but in through another interface */
	struct gx_pa_ent pa; /* in n->pa until its REPORT is verified */
};

/*
 * The first CHECK_PREMAC_FREE bytes of a connection's body (an echo, or a REPORT's MAC and
 * rank) are not charged to the pre-MAC budget: the connection budget bounds them, and only
 * then does the rank say whose bytes the rest are. Charging them let one stranger's 8
 * connections fill the budget so that no REPORT or echo could start (review finding).
 */
#define CHECK_PREMAC_FREE 4096

static size_t premac_charged(size_t bcap)
{
	return bcap > CHECK_PREMAC_FREE ? bcap - CHECK_PREMAC_FREE : 0;
}

static void sconn_free(struct check_net *n, struct check_sconn *c)
{
	struct check_sconn **pp;

	for (pp = &n->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->f.fd >= 0)
		gx_ev_del(n->ev, c->f.fd);
	n->nconns--;
	gx_pa_del(&n->pa, &c->pa);
	gx_frame_reset(&c->f); /* closes; a body's pre-MAC charge is released */
	free(c);
}

static void sconn_events(struct check_sconn *c)
{
	uint32_t ev = gx_frame_pending(&c->f) ? EPOLLOUT : (c->closing ? 0 : EPOLLIN);

	gx_ev_mod(c->n->ev, c->f.fd, ev);
}

/* A whole frame (sealed by agent_check_seal) queued; written on EPOLLOUT. */
static int sconn_queue(struct check_sconn *c, const unsigned char *frame, size_t len)
{
	int rc = gx_frame_send_raw(&c->f, frame, len);

	sconn_events(c);
	return rc;
}

/* ECHO: send the frame back unchanged: the header as it came (its reserved bytes too). */
static int on_echo(struct check_sconn *c, const unsigned char *body, size_t len)
{
	int rc;

	/* no echo for a probe that reached our secondary address through eth0 (weak host):
	 * the pair is not what the job would use, and the prober says so (no echo) */
	if (c->wrong_iface)
		return GX_EPROTO;
	c->deadline = gx_now_ms() + IDLE_MS;
	rc = gx_frame_send_raw(&c->f, c->f.hdr, CHECK_HDR_LEN);
	if (rc == 0)
		rc = sconn_queue(c, body, len);
	return rc;
}

/* A second connection reporting for the same rank replaces the first. */
static void drop_rank(struct check_net *n, struct check_sconn *keep, uint32_t rank)
{
	struct check_sconn *c, *next;

	for (c = n->conns; c; c = next) {
		next = c->next;
		if (c != keep && c->rank == (long)rank && !gx_frame_pending(&c->f))
			sconn_free(n, c);
	}
}

static int on_report(struct check_sconn *c, const unsigned char *body, size_t len)
{
	struct check_net *n = c->n;
	const char *payload;
	size_t plen;
	uint32_t rank;
	char why[160];
	int rc;

	if (!n->is_coord)
		return GX_EPROTO;
	rc = agent_check_open(n->key, CHECK_REPORT, n->round, n->w->n, body, len, &rank, &payload,
			      &plen);
	if (rc == 0 && rank == n->self)
		rc = GX_EPROTO;
	if (rc < 0) {
		gx_rl_log(&n->rl, "check: report from %s rejected: %s", c->peer,
			  rc == GX_EMAC ? "bad MAC (another job or round, or a wrong token)"
					: "rank out of range");
		return rc;
	}
	rc = agent_check_report_decode(n->w, rank, payload, plen, why, sizeof(why));
	if (rc < 0) {
		gx_warn("check: report of %s from %s rejected: %s", n->w->names[rank], c->peer,
			why);
		return rc;
	}
	gx_pa_del(&n->pa, &c->pa); /* a verified REPORT: held for the RESULT */
	drop_rank(n, c, rank);
	if (c->rank < 0)
		n->nreports++;
	if (n->late_after) { /* after agent_check_world_finish: the coordinator finishes it again */
		n->late++;
		gx_info("check: report of %s arrived late (second pass); it counts",
			n->w->names[rank]);
	}
	c->rank = rank;
	c->deadline = INT64_MAX; /* held open for the RESULT */
	gx_debug("check: report of %s (%u/%u)", n->w->names[rank], n->nreports, n->w->n - 1);
	if (n->nreports + 1 >= n->w->n && !n->reports_done) {
		n->reports_done = 1;
		gx_ev_stop(n->ev, 0);
	}
	return 0;
}

/* PROBED: a member's answer to agent_check_serve_ask, on its report connection. */
static int on_probed(struct check_sconn *c, const unsigned char *body, size_t len)
{
	struct check_net *n = c->n;
	const char *payload;
	char why[160];
	uint32_t rank;
	size_t plen;
	int rc;

	rc = agent_check_open(n->key, CHECK_PROBED, n->round, n->w->n, body, len, &rank, &payload,
			      &plen);
	if (rc == 0 && (long)rank != c->rank)
		rc = GX_EPROTO;
	if (rc < 0) {
		gx_warn("check: second-pass answer from %s rejected: %s", c->peer,
			rc == GX_EMAC ? "bad MAC" : "another rank than its report's");
		return rc;
	}
	if (!n->probed || rank != n->probed_from || n->probed_done) {
		gx_debug("check: second-pass answer of %s not asked for", n->w->names[rank]);
		return 0;
	}
	rc = agent_check_probed_decode(n->probed, rank, n->probed_id, payload, plen, why,
				       sizeof(why));
	if (rc < 0) {
		gx_warn("check: second-pass answer of %s rejected: %s", n->w->names[rank], why);
		return 0;
	}
	n->probed_done = 1;
	gx_ev_stop(n->ev, 0);
	return 0;
}

static int addr_of(const struct check_net *n, uint32_t rank, const char *peer)
{
	const struct rdzv_peer *p;

	if (!n->table || rank >= n->w->n)
		return 0;
	p = &n->table[rank];
	return (p->addr4[0] && strcmp(p->addr4, peer) == 0) ||
	       (p->addr6[0] && strcmp(p->addr6, peer) == 0);
}

static int in_table(const struct check_net *n, const char *peer)
{
	uint32_t i;

	for (i = 0; n->table && i < n->w->n; i++)
		if (addr_of(n, i, peer))
			return 1;
	return 0;
}

/* The oldest connection buffering an unverified REPORT that does not come from the address
 * of the rank it claims, or NULL. */
static struct check_sconn *premac_victim(struct check_net *n, const struct check_sconn *keep)
{
	struct gx_pa_ent *e;
	struct check_sconn *c;

	for (e = n->pa.oldest; e; e = e->newer) {
		c = (struct check_sconn *)((char *)e - offsetof(struct check_sconn, pa));
		if (c != keep && c->f.type == CHECK_REPORT && premac_charged(c->f.bcap) &&
		    !c->rank_known)
			return c;
	}
	return NULL;
}

/* Bytes before the MAC (what a stranger may make us hold): at most CHECK_PREMAC_MAX in all; a
 * REPORT from its rank's own address pushes out the oldest one that is not, any other waits for
 * none: it is closed. */
static int premac_room(struct check_net *n, struct check_sconn *c, size_t more)
{
	struct check_sconn *v;

	while (n->premac + more > CHECK_PREMAC_MAX) {
		v = c->rank_known ? premac_victim(n, c) : NULL;
		if (!v) {
			gx_rl_log(&n->rl,
				  "check: report from %s refused: %zu bytes wait for their MACs",
				  c->peer, n->premac);
			return -ENOBUFS;
		}
		gx_rl_log(&n->rl,
			  "check: closed the oldest unverified report (from %s) for one from %s",
			  v->peer, c->peer);
		sconn_free(n, v);
	}
	return 0;
}

/* gx_frame's charge: a body buffer grows from `from` to `to` bytes (0: released). */
static int sconn_charge(struct gx_frame *f, size_t from, size_t to)
{
	struct check_sconn *c = f->owner;
	size_t was = premac_charged(from), now = premac_charged(to);
	int rc;

	if (now > was) {
		rc = premac_room(c->n, c, now - was);
		if (rc < 0)
			return rc;
		c->n->premac += now - was;
	} else {
		c->n->premac -= was - now;
	}
	return 0;
}

/* REPORT: the rank is known after MAC | rank; refuse what cannot be accepted right there. */
static int sconn_peek(struct gx_frame *f, const unsigned char *body, size_t got)
{
	struct check_sconn *c = f->owner;
	struct check_net *n = c->n;
	uint32_t r;

	(void)got;
	memcpy(&r, body + CHECK_MAC_LEN, 4);
	r = ntohl(r);
	if (r >= n->w->n || r == n->self)
		return GX_EPROTO;
	c->rank_known = addr_of(n, r, c->peer);
	return 0;
}

/* STREAMED: how many bytes came (all of them). */
static int on_stream(struct check_sconn *c, size_t len)
{
	unsigned char v8[8];
	uint64_t v = len;
	int k, rc;

	for (k = 7; k >= 0; k--, v >>= 8)
		v8[k] = (unsigned char)(v & 0xff);
	c->deadline = gx_now_ms() + IDLE_MS;
	rc = gx_frame_send(&c->f, CHECK_STREAMED, v8, sizeof(v8));
	sconn_events(c);
	return rc;
}

/*
 * The header, bounded before a body byte is read: refused there are a RESULT or PROBE, a
 * REPORT to a member (only the coordinator takes them), a PROBED on a connection that holds no
 * verified REPORT. A STREAM (the preflight's throughput) is read and dropped as it comes, a few
 * reads an event (the loop serves the others meanwhile); other bodies grow with what came,
 * a REPORT's rank peeked after MAC | rank.
 */
static int sconn_decode(struct gx_frame *f, const unsigned char *hdr, unsigned *type, size_t *blen)
{
	struct check_sconn *c = f->owner;
	uint32_t len = 0;
	int t = 0, rc = agent_check_hdr_get(hdr, &t, &len);

	if (rc < 0)
		return rc;
	if (t == CHECK_RESULT || t == CHECK_PROBE || t == CHECK_STREAMED ||
	    (t == CHECK_REPORT && !c->n->is_coord) || (t == CHECK_PROBED && c->rank < 0))
		return GX_EPROTO;
	*type = (unsigned)t;
	*blen = len;
	c->rank_known = t == CHECK_PROBED;
	if (t == CHECK_STREAM) {
		/* a stream that reached our secondary address through eth0 measures a path the
		 * job would not take: closed, as its echo is not answered */
		if (len > CHECK_STREAM_MAX || c->wrong_iface)
			return GX_EPROTO;
		f->sink = 1;
		return 0;
	}
	f->grow_from = CHECK_PREMAC_FREE;
	if (t == CHECK_REPORT)
		f->peek_at = CHECK_MAC_LEN + 4;
	return 0;
}

static const struct gx_frame_fmt sconn_fmt = {
    .hdr_len = CHECK_HDR_LEN,
    .decode = sconn_decode,
    .encode = agent_check_frame_encode,
    .charge = sconn_charge,
    .peek = sconn_peek,
};

static int sconn_flush(struct check_sconn *c)
{
	int rc = gx_frame_flush(&c->f);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (c->closing)
		return -ECONNRESET; /* done: close */
	sconn_events(c);
	return 0;
}

static void sconn_io(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct check_sconn *c = arg;
	unsigned char *body = NULL;
	unsigned type = 0;
	size_t len = 0;
	int rc = 0;

	(void)ev;
	(void)fd;
	if (events & EPOLLOUT)
		rc = sconn_flush(c);
	else if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		rc = gx_frame_read(&c->f, &type, &body, &len);
	if (rc == 1) {
		rc = type == CHECK_ECHO	    ? on_echo(c, body, len)
		     : type == CHECK_PROBED ? on_probed(c, body, len)
		     : type == CHECK_STREAM ? on_stream(c, len)
					    : on_report(c, body, len);
		free(body);
	}
	if (rc < 0) {
		if (rc != -ECONNRESET)
			gx_debug("check: connection from %s closed: %s", c->peer, gx_strerror(rc));
		sconn_free(c->n, c);
	}
}

/* Did fd arrive on one of this pod's secondary addresses (getsockname)? */
static int to_secondary(const struct check_net *n, int fd)
{
	const struct rdzv_peer *me = &n->table[n->self];
	union gx_sockaddr sa;
	socklen_t sl = sizeof(sa);
	char local[INET6_ADDRSTRLEN] = "";

	if (getsockname(fd, &sa.sa, &sl) < 0)
		return 0;
	gx_addr_str(&sa, local, sizeof(local));
	return (me->addr4[0] && strcmp(local, me->addr4) == 0) ||
	       (me->addr6[0] && strcmp(local, me->addr6) == 0);
}

static void on_accept(struct gx_ev *ev, int lfd, uint32_t events, void *arg)
{
	struct check_net *n = arg;
	struct check_sconn *c, *oc;
	struct gx_pa_ent *old = NULL;
	union gx_sockaddr sa;
	socklen_t len = sizeof(sa);
	char peer[64], why[160];
	int fd, known;

	(void)events;
	fd = accept4(lfd, &sa.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	gx_addr_str(&sa, peer, sizeof(peer));
	known = in_table(n, peer);
	/* the pre-authentication budget: per address, and the oldest from outside the table makes
	 * room */
	if (gx_pa_admit(&n->pa, peer, known, n->nconns >= n->maxconns, &old) < 0) {
		gx_rl_log(&n->rl, "check: refused a connection from %s: %s", peer,
			  gx_pa_why(&n->pa, peer, why, sizeof(why)));
		close(fd);
		return;
	}
	if (old) {
		oc = (struct check_sconn *)((char *)old - offsetof(struct check_sconn, pa));
		gx_rl_log(&n->rl, "check: closed the oldest connection (from %s) for one from %s",
			  oc->peer, peer);
		sconn_free(n, oc);
	}
	c = calloc(1, sizeof(*c));
	if (!c || gx_ev_add(ev, fd, EPOLLIN, sconn_io, c) < 0) {
		close(fd);
		free(c);
		return;
	}
	gx_frame_init(&c->f, fd, &sconn_fmt, NULL, c);
	c->f.cork = 1;
	c->n = n;
	c->rank = -1;
	c->wrong_iface = n->nsec && lfd != n->lfd[2] && lfd != n->lfd[3] && to_secondary(n, fd);
	c->deadline = gx_now_ms() + IDLE_MS;
	gx_strlcpy(c->peer, peer, sizeof(c->peer));
	gx_pa_add(&n->pa, &c->pa, c->peer, known);
	c->next = n->conns;
	n->conns = c;
	n->nconns++;
}

static void sweep(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct check_net *n = arg;
	struct check_sconn *c, *next;
	int64_t now = gx_now_ms();

	(void)id;
	for (c = n->conns; c; c = next) {
		next = c->next;
		if (now >= c->deadline)
			sconn_free(n, c);
	}
	gx_rl_flush(&n->rl);
	n->sweep_id = gx_ev_timer(ev, SWEEP_MS, sweep, n);
}

static int listen_one(struct check_net *n, int family, int flags, int *fd)
{
	union gx_sockaddr sa;
	socklen_t len;
	int rc;

	memset(&sa, 0, sizeof(sa));
	sa.sa.sa_family = (sa_family_t)family;
	if (family == AF_INET) {
		sa.in4.sin_port = htons(n->port);
		len = sizeof(sa.in4);
	} else {
		sa.in6.sin6_port = htons(n->port);
		len = sizeof(sa.in6);
	}
	rc = gx_tcp_listen_opt(&sa, len, NULL, flags, fd);
	if (rc == 0 && (rc = gx_ev_add(n->ev, *fd, EPOLLIN, on_accept, n)) < 0) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

/*
 * Echoes that came in on the secondary interface: its addresses, bound to the device, as
 * the rendezvous coordinator's VERIFY listener (Linux takes a packet for net1's address on
 * eth0 too). A kernel that refuses the bind (before 5.7 without CAP_NET_RAW) leaves the
 * wildcard alone: the probes' own binding and route check still hold.
 */
static void listen_secondary(struct check_net *n)
{
	const struct rdzv_peer *me = n->table ? &n->table[n->self] : NULL;
	int fds[2], why, i, rc;

	if (!me || !n->ifname[0] || !me->iface[0])
		return;
	rc = gx_tcp_listen_secondary(me->addr4, me->addr6, n->port, n->ifname, fds, &why);
	if (rc <= 0) {
		gx_debug("check: no listener bound to %s: %s", n->ifname,
			 gx_strerror(rc < 0 ? rc : why));
		return;
	}
	for (i = 0; i < 2; i++) {
		n->lfd[2 + i] = fds[i];
		if (fds[i] < 0)
			continue;
		if (gx_ev_add(n->ev, fds[i], EPOLLIN, on_accept, n) < 0) {
			close(fds[i]);
			n->lfd[2 + i] = -1;
			continue;
		}
		n->nsec++;
	}
}

int agent_check_serve_start(struct check_net *n, char *err, size_t errlen)
{
	int rc, i;

	for (i = 0; i < CHECK_LISTEN_MAX; i++)
		n->lfd[i] = -1;
	n->maxconns = 2 * (size_t)n->w->n + 64;
	if (n->maxconns < 256)
		n->maxconns = 256;
	n->rl.what = "check: connections or reports refused";
	rc = gx_pa_init(&n->pa, n->maxconns, CHECK_PREAUTH_PER_SRC);
	if (rc < 0) {
		snprintf(err, errlen, "cannot start the check service: %s", gx_strerror(rc));
		return rc;
	}
	listen_secondary(n);
	rc = listen_one(n, AF_INET, n->nsec ? GX_LISTEN_SHARED : 0, &n->lfd[0]);
	if (rc < 0) {
		snprintf(err, errlen, "cannot open the check service on port %u: %s", n->port,
			 gx_strerror(rc));
		return rc;
	}
	if (listen_one(n, AF_INET6, n->nsec ? GX_LISTEN_SHARED : 0, &n->lfd[1]) < 0)
		gx_debug("check: no IPv6 listener on port %u", n->port);
	n->sweep_id = gx_ev_timer(n->ev, SWEEP_MS, sweep, n);
	return 0;
}

int agent_check_serve_reply(struct check_net *n, const char *payload, size_t plen)
{
	struct check_sconn *c;
	unsigned char *f;
	size_t flen;
	int rc;

	for (c = n->conns; c; c = c->next) {
		if (c->rank < 0)
			continue;
		rc = agent_check_seal(n->key, CHECK_RESULT, n->round, (uint32_t)c->rank, payload,
				      plen, &f, &flen);
		if (rc < 0)
			return rc;
		c->closing = 1;
		c->deadline = gx_now_ms() + 5000;
		rc = sconn_queue(c, f, flen);
		free(f);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static struct check_sconn *held(const struct check_net *n, uint32_t rank)
{
	struct check_sconn *c;

	for (c = n->conns; c; c = c->next)
		if (c->rank == (long)rank && !c->closing && c->f.fd >= 0)
			return c;
	return NULL;
}

int agent_check_serve_has(const struct check_net *n, uint32_t rank)
{
	return held(n, rank) != NULL;
}

int agent_check_serve_ask(struct check_net *n, uint32_t rank, const unsigned char *only,
			  struct check_world *into)
{
	struct check_sconn *c = held(n, rank);
	unsigned char *f;
	char *text;
	size_t len, flen;
	int rc;

	if (!c || gx_frame_pending(&c->f))
		return -ENOENT;
	rc = agent_check_probe_req_encode(n->probed_id + 1, only, n->w->n, &text, &len);
	if (rc < 0)
		return rc;
	rc = agent_check_seal(n->key, CHECK_PROBE, n->round, rank, text, len, &f, &flen);
	free(text);
	if (rc < 0)
		return rc;
	n->probed_id++;
	n->probed = into;
	n->probed_from = rank;
	n->probed_done = 0;
	rc = sconn_queue(c, f, flen);
	free(f);
	return rc;
}

size_t agent_check_serve_pending(const struct check_net *n)
{
	const struct check_sconn *c;
	size_t k = 0;

	for (c = n->conns; c; c = c->next)
		k += gx_frame_pending(&c->f) > 0;
	return k;
}

void agent_check_serve_stop(struct check_net *n)
{
	int i;

	while (n->conns)
		sconn_free(n, n->conns);
	for (i = 0; i < CHECK_LISTEN_MAX; i++) {
		if (n->lfd[i] < 0)
			continue;
		gx_ev_del(n->ev, n->lfd[i]);
		close(n->lfd[i]);
		n->lfd[i] = -1;
	}
	if (n->sweep_id)
		gx_ev_timer_cancel(n->ev, n->sweep_id);
	n->sweep_id = 0;
	gx_rl_final(&n->rl);
	gx_pa_free(&n->pa);
}
