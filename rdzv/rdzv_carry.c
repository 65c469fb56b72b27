/* SPDX-License-Identifier: MIT */
/*
 * rdzv_carry.c - the coordinator's side of the relay tree, which lets a
 * coordinator with few connections reach large jobs (PROTOCOL.md "Relays"). A relay is a member
 * whose JOIN said RDZV_PF_RELAY; its phase-1 session then also carries CARRY frames: records (id,
 * kind, bytes) of its children's TCP streams. Each child is a cconn without an fd (rc.f.carried):
 * its input is fed from the records (rdzv_coord_io.c), its output is moved into records (here), and
 * from there on it is a connection like any other (handshake, deadlines, JOIN, COMMIT), end to end
 * with the child: the relay carries MAC'd frames it cannot forge.
 */
#include "rdzv/rdzv_coord_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The relay's records so far go out as one CARRY (written now unless corked). */
static void seal(struct rdzv_coord *co, struct cconn *r)
{
	int rc;

	if (!r->carry.len && !r->carry.err)
		return;
	rc = r->carry.err ? r->carry.err
			  : rdzv_conn_send(&r->rc, RDZV_CARRY, r->carry.p, r->carry.len);
	if (rc < 0)
		gx_debug("rdzv: CARRY to relay %s: %s", r->rc.peer_str, gx_strerror(rc));
	r->carry.len = 0;
	r->carry.err = 0;
	rdzv_co_update_out(co, r);
}

static void mark_dirty(struct rdzv_coord *co, struct cconn *r)
{
	if (r->dirty)
		return;
	r->dirty = 1;
	r->dirty_next = co->dirty;
	co->dirty = r;
}

/* One record into r's next CARRY: sealed first when it would not fit. */
void rdzv_co_carry_rec(struct rdzv_coord *co, struct cconn *r, uint32_t id, uint8_t kind,
		       const unsigned char *p, size_t n)
{
	if (r->carry.len + RDZV_CARRY_REC + n > RDZV_CARRY_MAX)
		seal(co, r);
	rdzv_put_rec(&r->carry, id, kind, p, n);
	mark_dirty(co, r);
}

void rdzv_co_carry_flush(struct rdzv_coord *co)
{
	struct cconn *r;

	while ((r = co->dirty)) {
		co->dirty = r->dirty_next;
		r->dirty_next = NULL;
		r->dirty = 0;
		seal(co, r);
	}
}

/* A child leaves its relay's slot (its CK_CLOSE is queued, or the relay closed it): the
 * relay may reuse the slot at once; the connection itself goes at its drop. */
static void detach(struct rdzv_coord *co, struct cconn *cc)
{
	struct cconn *r = cc->relay;

	if (!r)
		return;
	rdzv_co_pa_del(co, cc); /* unauthenticated: out of its source's budget now */
	r->kids[cc->kid % RDZV_RELAY_KIDS] = NULL;
	r->nkids--;
	cc->relay = NULL;
}

void rdzv_co_carry_out(struct rdzv_coord *co, struct cconn *cc)
{
	struct cconn *r = cc->relay;
	struct rdzv_conn *c = &cc->rc;
	const unsigned char *p;
	size_t n;

	if (!r || cc->close_sent) { /* its relay is gone, or the child is told to go */
		gx_frame_out_drop(&c->f, gx_frame_pending(&c->f));
		return;
	}
	while ((n = gx_frame_out_peek(&c->f, &p)) > 0) {
		if (n > RDZV_CARRY_MAX - RDZV_CARRY_REC)
			n = RDZV_CARRY_MAX - RDZV_CARRY_REC;
		rdzv_co_carry_rec(co, r, cc->kid, CK_DATA, p, n);
		gx_frame_out_drop(&c->f, n);
	}
	if (c->state == RC_CLOSING) {
		rdzv_co_carry_rec(co, r, cc->kid, CK_CLOSE, NULL, 0);
		cc->close_sent = 1;
		detach(co, cc); /* the relay frees the slot on this record: so do we, now */
	}
	/* a big batch (COMMITs with tables) goes now; small ones at the end of the event */
	if (r->carry.len >= RDZV_CARRY_MAX / 2)
		seal(co, r);
}

int rdzv_co_relay_on(struct rdzv_coord *co, struct cconn *cc)
{
	if (cc->is_relay || cc->relay) /* a carried member cannot relay in turn */
		return cc->relay ? -EINVAL : 0;
	cc->kids = calloc(RDZV_RELAY_KIDS, sizeof(*cc->kids));
	if (!cc->kids)
		return -ENOMEM;
	cc->is_relay = 1;
	co->res.nrelays++;
	co->nrelays_open++;
	gx_debug("rdzv: relay %s (%s)", cc->peer >= 0 ? co->names[cc->peer] : "?", cc->rc.peer_str);
	return 0;
}

void rdzv_co_relay_committed(struct rdzv_coord *co, struct cconn *r)
{
	if (r->is_relay && r->rc.state == RC_SESSION && !r->told_committed) {
		r->told_committed = 1;
		rdzv_co_carry_rec(co, r, 0, CK_COMMITTED, NULL, 0);
	}
}

void rdzv_co_relays_committed(struct rdzv_coord *co)
{
	struct cconn *cc;

	for (cc = co->conns; cc; cc = cc->next)
		rdzv_co_relay_committed(co, cc);
}

/* The members that join directly and have not yet: 1 .. F-1 and the relays. */
static size_t direct_missing(const struct rdzv_coord *co)
{
	uint32_t f = co->cfg.relay_fanout, i;
	size_t n = 0;

	for (i = 1; i < f && i < co->world; i++)
		n += !co->st[i].conn;
	for (i = f; i < co->world; i += f)
		n += !co->st[i].conn;
	return n;
}

/* A relay in session that takes children still, the one carrying fewest; 0 when none. */
static uint32_t live_relay(const struct rdzv_coord *co)
{
	uint32_t f = co->cfg.relay_fanout, i, best = 0, nbest = 0;

	for (i = f; i < co->world; i += f) {
		const struct cconn *r = co->st[i].conn;

		if (!r || !r->is_relay || r->rc.state != RC_SESSION || r->told_committed ||
		    r->nkids >= RDZV_RELAY_KIDS / 2)
			continue;
		if (!best || r->nkids < nbest) {
			best = i;
			nbest = r->nkids;
		}
	}
	return best;
}

/*
 * A member that belongs behind a relay (index >= F, not a relay, not serving: those join
 * here by design) comes directly: its relay failed it. The star takes it while the
 * connections left under the bound cover the direct members and relays not yet joined
 * and the VERIFYs in flight; past that, children of a failed relay would hold the
 * sessions those need and no one could commit (80 pods, fan-out 8, a bound of 65: 63
 * children came and 74-80 pods exited 3 on 9740b38). Then the member is sent to the relay
 * in session that carries fewest (a MAC'd REJECT, RDZV_RJ_RELAY, with its T_INDEX), or
 * told to wait, with the cause in its line, when none is.
 */
int rdzv_co_star_room(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_peer *p)
{
	uint32_t f = co->cfg.relay_fanout, to;
	size_t slack = co->maxconns / 8 < RDZV_VERIFY_SLACK ? co->maxconns / 8 : RDZV_VERIFY_SLACK;
	struct rdzv_buf b = {0};
	char why[300], note[200];

	if (f < 2 || co->cfg.elastic || cc->rc.f.carried || p->index < f || p->index % f == 0 ||
	    (p->flags & (RDZV_PF_SERVES | RDZV_PF_OBSERVER)) ||
	    co->nconns + direct_missing(co) + slack <= co->maxconns)
		return 0;
	to = live_relay(co);
	if (to)
		snprintf(why, sizeof(why),
			 "the coordinator holds %zu of its %zu connections: members behind a relay "
			 "join through one (sent to %s)",
			 co->nconns, co->maxconns, co->names[to]);
	else
		snprintf(why, sizeof(why),
			 "the coordinator holds %zu of its %zu connections and no relay is in "
			 "session to carry members behind one: waiting for a relay",
			 co->nconns, co->maxconns);
	gx_rl_log(&co->rl_star, "rdzv: %s joined directly: %s", p->name, why);
	if (!co->st[p->index].joined) { /* the deadline line quotes it (short: one per peer) */
		snprintf(note, sizeof(note), "no room here for it directly: %s%s",
			 to ? "sent to " : "no relay in session", to ? co->names[to] : "");
		free(co->st[p->index].note);
		co->st[p->index].note = strdup(note);
	}
	rdzv_put_u32(&b, T_CODE, RDZV_RJ_RELAY);
	rdzv_put_str(&b, T_TEXT, why);
	if (to)
		rdzv_put_u32(&b, T_INDEX, to);
	rdzv_co_send(co, cc, RDZV_REJECT, &b);
	rdzv_buf_free(&b);
	rdzv_co_close_later(co, cc);
	return 1;
}
