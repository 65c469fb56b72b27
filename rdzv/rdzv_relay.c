/* SPDX-License-Identifier: MIT */
/*
 * rdzv_relay.c - a member that is a relay of the tree, which spares the
 * coordinator a connection per member (PROTOCOL.md "Relays"): it accepts its children's phase-1
 * connections and carries their bytes on its own phase-1 session as CARRY records (OPEN, DATA,
 * CLOSE), and writes what the coordinator sends back to each child. It reads nothing of what it
 * carries: every child's handshake and session run end to end with the coordinator, MAC'd under
 * keys the relay does not have. Bounds: RDZV_RELAY_KIDS children at once, RDZV_RELAY_KID_OUT bytes
 * queued to one, RDZV_RELAY_UP_HIGH queued up before it stops reading its children. A child is the
 * coordinator's business from its first byte (CK_OPEN goes then); before that it is a silent
 * connection, which the relay holds no longer than the coordinator's pre-authentication deadline,
 * before its own session is up as after (PROTOCOL.md "Relays", "Bounds (relay side)").
 */
#include "rdzv/rdzv_member_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

struct rkid {
	struct mrelay *r;
	/* its socket: bytes as they are both ways (no fmt: the relay reads none of its frames),
	 * at most RDZV_RELAY_KID_OUT queued to it (f.omax) */
	struct gx_frame f;
	uint32_t id;
	int closing;  /* the coordinator ended it: close once out is written */
	int spoke;    /* its first bytes came: CK_OPEN went, the coordinator knows it */
	int answered; /* the coordinator wrote to it */
	int spared;   /* its silence deadline was extended once (room) */
	int64_t t_accept;
	struct rkid *sprev, *snext; /* silent ones, oldest first */
	char addr[INET6_ADDRSTRLEN];
	char src[INET6_ADDRSTRLEN]; /* its source (gx_pa_source) and /64 (gx_pa_net) */
	char net[INET6_ADDRSTRLEN];
};

struct mrelay {
	struct rdzv_member *m;
	/* phase 1 must fail (our records are lost): the member's, given at open, so that the
	 * relay calls only downward */
	void (*lost)(struct rdzv_member *m, const char *why);
	int lfd[2], nlfd;
	struct rkid *kids[RDZV_RELAY_KIDS]; /* slot id % RDZV_RELAY_KIDS */
	uint32_t nkids, next_id;
	struct rdzv_buf up; /* records for the coordinator, not yet in a CARRY */
	int paused;	    /* children not read: too much queued up */
	int sent;	    /* records went out in this session of ours (c1) */
	int committed;	    /* CK_COMMITTED came: no new children, done when they are */
	uint64_t push_id, drain_id, sweep_id;
	struct rkid *silent, *silent_last; /* accepted, nothing sent yet: oldest first */
	uint32_t nsilent;
	int64_t flood_until; /* no room for a slow child's extension before (a flood) */
	uint64_t nsilent_closed;
	unsigned char buf[16384];
};

static void kid_update(struct rkid *k)
{
	uint32_t ev =
	    (k->r->paused || k->closing ? 0 : EPOLLIN) | (gx_frame_pending(&k->f) ? EPOLLOUT : 0);

	gx_ev_mod(k->r->m->ev, k->f.fd, ev);
}

static void silent_del(struct rkid *k)
{
	struct mrelay *r = k->r;

	if (k->spoke)
		return;
	if (k->sprev)
		k->sprev->snext = k->snext;
	else
		r->silent = k->snext;
	if (k->snext)
		k->snext->sprev = k->sprev;
	else
		r->silent_last = k->sprev;
	k->sprev = k->snext = NULL;
	r->nsilent--;
}

static void kid_free(struct rkid *k)
{
	struct mrelay *r = k->r;

	silent_del(k);
	gx_ev_del(r->m->ev, k->f.fd);
	gx_frame_reset(&k->f); /* closes it */
	r->kids[k->id % RDZV_RELAY_KIDS] = NULL;
	r->nkids--;
	free(k);
}

static void relay_end(struct rdzv_member *m);
static void set_paused(struct mrelay *r, int paused);

/* Committed and every child served: the relay's work is over. */
static void maybe_end(struct mrelay *r)
{
	if (r->committed && r->nkids == 0 && r->m->relay_only)
		relay_end(r->m);
}

static void push_fired(struct gx_ev *ev, uint64_t id, void *arg);

/* Children's records go at the end of this loop turn, many in one CARRY. */
static void schedule_push(struct mrelay *r)
{
	if (!r->push_id)
		r->push_id = gx_ev_timer(r->m->ev, 0, push_fired, r);
	if (!r->push_id) /* no memory for a timer: now */
		rdzv_mb_relay_push(r->m);
}

static void kid_gone(struct rkid *k)
{
	struct mrelay *r = k->r;

	if (k->spoke) /* one that never spoke was never the coordinator's */
		rdzv_put_rec(&r->up, k->id, CK_CLOSE, NULL, 0);
	kid_free(k);
	schedule_push(r);
	maybe_end(r);
}

static int kid_flush(struct rkid *k)
{
	int rc = gx_frame_flush(&k->f);

	return rc < 0 ? -EPIPE : rc;
}

static void kid_event(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct rkid *k = arg;
	struct mrelay *r = k->r;
	ssize_t n;

	(void)ev;
	(void)fd; /* k->f's */
	if (events & EPOLLOUT) {
		int rc = kid_flush(k);

		if (rc < 0 || (rc == 0 && k->closing)) {
			if (k->closing) { /* the coordinator knows: no CK_CLOSE back */
				kid_free(k);
				maybe_end(r);
			} else {
				kid_gone(k);
			}
			return;
		}
		kid_update(k);
	}
	if ((events & (EPOLLERR | EPOLLHUP)) && (r->paused || k->closing)) {
		/* not read now (epoll reports these on any mask): it went away */
		if (k->closing) {
			kid_free(k);
			maybe_end(r);
		} else {
			kid_gone(k);
		}
		return;
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)) || r->paused || k->closing)
		return;
	n = gx_frame_recv(&k->f, r->buf, sizeof(r->buf));
	if (n == 0)
		return;
	if (n < 0) {
		kid_gone(k);
		return;
	}
	if (!k->spoke) { /* the coordinator's business from now on */
		silent_del(k);
		k->spoke = 1;
		r->m->res.ncarried++;
		rdzv_put_rec(&r->up, k->id, CK_OPEN, k->addr, strlen(k->addr));
	}
	rdzv_put_rec(&r->up, k->id, CK_DATA, r->buf, (size_t)n);
	if (r->up.len > RDZV_RELAY_UP_HIGH) /* our session is down or slow: stop reading */
		set_paused(r, 1);
	schedule_push(r);
}

/* Children held now from src's source, and from its /64 (gx_pa_source, gx_pa_net). */
static void from(const struct mrelay *r, const char *src, const char *net, unsigned *nsrc,
		 unsigned *nnet)
{
	unsigned i;

	*nsrc = *nnet = 0;
	for (i = 0; i < RDZV_RELAY_KIDS; i++) {
		const struct rkid *k = r->kids[i];

		if (!k)
			continue;
		*nsrc += strcmp(k->src, src) == 0;
		*nnet += net[0] && strcmp(k->net, net) == 0;
	}
}

/*
 * Room for a child from a: at most RDZV_RELAY_PER_SRC from its source and
 * RDZV_RELAY_PER_NET from its /64 (loopback exempt: a pod needs one), and at
 * RDZV_RELAY_KIDS the oldest silent child (one that has sent nothing: never the
 * coordinator's, and no member is silent) is closed for it. 0, or -EBUSY.
 */
static int kid_room(struct mrelay *r, const char *a, char *src, char *net)
{
	unsigned nsrc, nnet;

	gx_pa_source(a, src, INET6_ADDRSTRLEN);
	gx_pa_net(a, net, INET6_ADDRSTRLEN);
	if (!gx_addr_is_loopback(a)) {
		from(r, src, net, &nsrc, &nnet);
		if (nsrc >= RDZV_RELAY_PER_SRC || nnet >= RDZV_RELAY_PER_NET)
			return -EBUSY;
	}
	if (r->nkids < RDZV_RELAY_KIDS)
		return 0;
	if (!r->silent)
		return -EBUSY;
	r->nsilent_closed++;
	kid_free(r->silent);
	return 0;
}

static void on_accept(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct mrelay *r = arg;
	char a[INET6_ADDRSTRLEN], src[INET6_ADDRSTRLEN], net[INET6_ADDRSTRLEN];
	union gx_sockaddr sa;
	socklen_t sl;
	int i, j, cfd;

	(void)ev;
	(void)events;
	for (i = 0; i < 64; i++) {
		struct rkid *k;

		sl = sizeof(sa);
		memset(&sa, 0, sizeof(sa));
		cfd = accept4(fd, &sa.sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;
		gx_addr_str(&sa, a, sizeof(a));
		/* refused: the child retries, then goes to another relay or the coordinator */
		k = kid_room(r, a, src, net) == 0 ? calloc(1, sizeof(*k)) : NULL;
		if (!k) {
			close(cfd);
			continue;
		}
		for (j = 0; j < RDZV_RELAY_KIDS && r->kids[r->next_id % RDZV_RELAY_KIDS]; j++)
			r->next_id++;
		k->r = r;
		gx_frame_init(&k->f, cfd, NULL, NULL, k);
		k->f.omax = RDZV_RELAY_KID_OUT;
		k->id = r->next_id++;
		if (gx_ev_add(r->m->ev, cfd, r->paused ? 0 : EPOLLIN, kid_event, k) < 0) {
			close(cfd);
			free(k);
			continue;
		}
		r->kids[k->id % RDZV_RELAY_KIDS] = k;
		r->nkids++;
		k->t_accept = gx_now_ms();
		gx_strlcpy(k->addr, a, sizeof(k->addr));
		gx_strlcpy(k->src, src, sizeof(k->src));
		gx_strlcpy(k->net, net, sizeof(k->net));
		/* silent until its first bytes: CK_OPEN goes with them (kid_event) */
		k->sprev = r->silent_last;
		if (r->silent_last)
			r->silent_last->snext = k;
		else
			r->silent = k;
		r->silent_last = k;
		r->nsilent++;
	}
}

/* Bytes wait unread in its socket: our loop was behind, it is not silent. */
static int kid_unread(const struct rkid *k)
{
	int n = 0;

	return ioctl(k->f.fd, FIONREAD, &n) == 0 && n > 0;
}

/*
 * The relay's deadlines, the same before its own session is up as after (they are the
 * coordinator's for an accepted socket, PROTOCOL.md "Coordinator"): a child that sent
 * nothing RDZV_HELLO_MS after its accept is closed, or once extended to RDZV_HANDSHAKE_MS
 * from its accept while fewer than a quarter of the slots are silent (a slow member, not
 * a flood; and for RDZV_HANDSHAKE_MS after a sweep that saw a flood, none); one whose
 * bytes wait unread was not silent (we were behind). A child that spoke and was never
 * answered (our session is not up: its bytes wait in our records) is held until the
 * member's own patience for a first frame (M_SILENCE_MS) has passed: a member leaves by
 * itself then, so only a stranger is closed, and no member sees its relay close it
 * first (that would count as the relay's failure).
 */
static void relay_sweep(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct mrelay *r = arg;
	struct rdzv_member *m = r->m;
	int64_t now = gx_now_ms();
	struct rkid *k, *next;
	uint32_t i;
	int room;

	(void)id;
	r->sweep_id = 0;
	if (r->nsilent * RDZV_PREAUTH_ROOM_DIV >= RDZV_RELAY_KIDS)
		r->flood_until = now + RDZV_HANDSHAKE_MS;
	room = now >= r->flood_until;
	for (k = r->silent; k; k = next) {
		next = k->snext;
		if (now - k->t_accept < RDZV_HELLO_MS || kid_unread(k))
			continue;
		if (room && !k->spared) {
			k->spared = 1;
			continue;
		}
		if (!room || now - k->t_accept >= RDZV_HANDSHAKE_MS) {
			r->nsilent_closed++;
			kid_free(k); /* never opened: nothing to tell the coordinator */
		}
	}
	for (i = 0; i < RDZV_RELAY_KIDS && r->nkids; i++) {
		k = r->kids[i];
		if (!k || !k->spoke || k->answered || k->closing ||
		    now - k->t_accept < M_SILENCE_MS + RDZV_PREAUTH_GRACE_MS)
			continue;
		kid_gone(k);
		if (!m->relay) /* the last child left after the COMMIT: the relay ended */
			return;
	}
	r->sweep_id = gx_ev_timer(ev, RDZV_SWEEP_MS, relay_sweep, r);
}

static void set_paused(struct mrelay *r, int paused)
{
	uint32_t i;

	if (r->paused == paused)
		return;
	r->paused = paused;
	for (i = 0; i < RDZV_RELAY_KIDS; i++)
		if (r->kids[i])
			kid_update(r->kids[i]);
}

/* CARRY frames of whole records, each at most RDZV_CARRY_MAX. */
void rdzv_mb_relay_push(struct rdzv_member *m)
{
	struct mrelay *r = m->relay;
	size_t off = 0;

	if (!r || m->c1.rc.state != RC_SESSION || !rdzv_conn_up(&m->c1.rc))
		return;
	if (r->up.err) { /* out of memory: what it lost cannot be told apart */
		r->lost(m, "relay: out of memory");
		return;
	}
	r->sent = 1;
	while (off < r->up.len) {
		size_t end = off, next = off;
		const unsigned char *p;
		uint32_t id, n;
		uint8_t kind;
		int rc;

		/* whole records (ours: each fits), at most RDZV_CARRY_MAX a frame */
		while (rdzv_rec_next(r->up.p, r->up.len, &next, &id, &kind, &p, &n) == 1 &&
		       (end == off || next - off <= RDZV_CARRY_MAX))
			end = next;
		rc = rdzv_conn_send(&m->c1.rc, RDZV_CARRY, r->up.p + off, end - off);
		rdzv_conn_watch(m->ev, &m->c1.rc);
		if (rc < 0)
			break; /* c1's failure is seen by its event: the rest stays queued */
		off = end;
	}
	if (off && off < r->up.len)
		memmove(r->up.p, r->up.p + off, r->up.len - off);
	r->up.len -= off;
	set_paused(r, gx_frame_pending(&m->c1.rc.f) > RDZV_RELAY_UP_HIGH);
}

static void push_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct mrelay *r = arg;

	(void)ev;
	(void)id;
	r->push_id = 0;
	rdzv_mb_relay_push(r->m);
}

static int kid_write(struct rkid *k, const unsigned char *p, size_t n)
{
	int rc;

	if (k->closing)
		return 0;
	k->answered = 1;
	rc = gx_frame_send_raw(&k->f, p, n); /* -ENOBUFS past RDZV_RELAY_KID_OUT */
	return rc == -ENOBUFS || rc == -ENOMEM ? rc : rc < 0 ? -EPIPE : 0;
}

int rdzv_mb_relay_carry(struct rdzv_member *m, const unsigned char *body, size_t len)
{
	struct mrelay *r = m->relay;
	const unsigned char *p;
	size_t off = 0;
	uint32_t id, n;
	uint8_t kind;
	int rc;

	if (!r)
		return GX_EPROTO;
	while ((rc = rdzv_rec_next(body, len, &off, &id, &kind, &p, &n)) == 1) {
		struct rkid *k = r->kids[id % RDZV_RELAY_KIDS];

		if (k && k->id != id) /* an id of the past: that child is gone */
			k = NULL;
		if (kind == CK_DATA && k) {
			if (kid_write(k, p, n) < 0) {
				kid_gone(k);
				k = NULL;
			}
		} else if (kind == CK_CLOSE && k) {
			k->closing = 1; /* not read any more: kid_update below */
			if (!gx_frame_pending(&k->f)) {
				kid_free(k);
				maybe_end(r);
				k = NULL;
			}
		} else if (kind == CK_COMMITTED) {
			r->committed = 1;
			maybe_end(r);
		} else if (kind != CK_DATA && kind != CK_CLOSE) {
			return GX_EPROTO;
		}
		if (!m->relay) /* its last child left after the COMMIT: the relay ended */
			return 1;
		if (k)
			kid_update(k);
	}
	return rc;
}

static int listen_one(struct mrelay *r, const union gx_sockaddr *sa, socklen_t len)
{
	int fd = -1, rc;

	rc = gx_tcp_listen(sa, len, &fd);
	if (rc < 0)
		return rc;
	rc = gx_ev_add(r->m->ev, fd, EPOLLIN, on_accept, r);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	r->lfd[r->nlfd++] = fd;
	return 0;
}

static void relay_close_listen(struct mrelay *r)
{
	int i;

	for (i = 0; i < r->nlfd; i++) {
		gx_ev_del(r->m->ev, r->lfd[i]);
		close(r->lfd[i]);
	}
	r->nlfd = 0;
}

int rdzv_mb_relay_open(struct rdzv_member *m, void (*lost)(struct rdzv_member *, const char *))
{
	struct mrelay *r = calloc(1, sizeof(*r));
	union gx_sockaddr sa;
	socklen_t len;
	int rc;

	if (!r)
		return -ENOMEM;
	r->m = m;
	r->lost = lost;
	m->relay = r;
	r->sweep_id = gx_ev_timer(m->ev, RDZV_SWEEP_MS, relay_sweep, r);
	if (!r->sweep_id) {
		rdzv_mb_relay_free(m);
		return -ENOMEM;
	}
	if (m->cfg.relay_listen_len) {
		sa = m->cfg.relay_listen;
		if (sa.sa.sa_family == AF_INET)
			sa.in4.sin_port = htons(m->cfg.port);
		else
			sa.in6.sin6_port = htons(m->cfg.port);
		rc = listen_one(r, &sa, m->cfg.relay_listen_len);
	} else {
		gx_addr_parse("0.0.0.0", m->cfg.port, &sa, &len);
		rc = listen_one(r, &sa, len);
		gx_addr_parse("::", m->cfg.port, &sa, &len);
		if (rc == 0 && listen_one(r, &sa, len) < 0)
			gx_debug("rdzv: relay: no IPv6 listener");
	}
	if (rc < 0)
		rdzv_mb_relay_free(m);
	return rc;
}

/* c1 was lost: every child goes (they reconnect, or go to the coordinator). */
static void rdzv_mb_relay_reset(struct rdzv_member *m)
{
	struct mrelay *r = m->relay;
	uint32_t i;

	if (!r)
		return;
	for (i = 0; i < RDZV_RELAY_KIDS && r->nkids; i++)
		if (r->kids[i]) {
			(void)kid_flush(r->kids[i]); /* an ABORT for it may be in its queue */
			kid_free(r->kids[i]);
		}
	r->up.len = 0;
	r->up.err = 0;
	r->sent = 0;
	set_paused(r, 0);
}

void rdzv_mb_relay_lost(struct rdzv_member *m)
{
	if (m->relay && m->relay->sent)
		rdzv_mb_relay_reset(m);
}

void rdzv_mb_relay_free(struct rdzv_member *m)
{
	struct mrelay *r = m->relay;

	if (!r)
		return;
	rdzv_mb_relay_reset(m);
	relay_close_listen(r);
	gx_ev_timer_cancel(m->ev, r->push_id);
	gx_ev_timer_cancel(m->ev, r->drain_id);
	gx_ev_timer_cancel(m->ev, r->sweep_id);
	if (r->nsilent_closed)
		gx_debug("rdzv: relay: %llu silent connections closed (pre-authentication deadline "
			 "or room for a newcomer)",
			 (unsigned long long)r->nsilent_closed);
	rdzv_buf_free(&r->up);
	free(r);
	m->relay = NULL;
}

/* The relay is done (or gave up waiting): the session it kept goes too. */
static void relay_end(struct rdzv_member *m)
{
	/* our children's last records (their CLOSEs) first: the coordinator counts a child
	 * still carried when our session ends as one whose COMMIT may be lost */
	rdzv_mb_relay_push(m);
	if (m->c1.rc.f.fd >= 0)
		(void)rdzv_conn_flush(&m->c1.rc);
	rdzv_mb_relay_free(m);
	if (m->relay_only && m->st == M_STAYING) {
		m->st = M_DONE;
		rdzv_conn_close(m->ev, &m->c1.rc);
	}
}

static void drain_fired(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct mrelay *r = arg;

	(void)ev;
	(void)id;
	r->drain_id = 0;
	gx_debug("rdzv: relay: %u children still open %d ms after the COMMIT: closed", r->nkids,
		 RDZV_RELAY_DRAIN_MS);
	relay_end(r->m);
}

void rdzv_mb_relay_stay(struct rdzv_member *m)
{
	struct mrelay *r = m->relay;

	relay_close_listen(r); /* a child that comes now goes to the coordinator */
	while (r->silent)      /* never the coordinator's: no member among them */
		kid_free(r->silent);
	m->relay_only = 1;
	r->drain_id = gx_ev_timer(m->ev, RDZV_RELAY_DRAIN_MS, drain_fired, r);
	if (!r->drain_id) { /* no bound without it: the children reconnect to the coordinator */
		relay_end(m);
		return;
	}
	maybe_end(r);
}

int rdzv_mb_relay_active(const struct rdzv_member *m)
{
	return m && m->relay != NULL;
}
