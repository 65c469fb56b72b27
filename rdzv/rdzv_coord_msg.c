/* SPDX-License-Identifier: MIT */
/*
 * rdzv_coord_msg.c - the coordinator's side of the handshake (HELLO, AUTH; the
 * keys and proofs are rdzv_auth.c's) and its answers to a session's messages:
 * JOIN (phase 1, a slot and an ASSIGN), VERIFY on the secondary address
 * (phase 2), the ticket VERIFY, VFAIL notes, PONG for the same-name check
 * (a restarted pod or a duplicate), and the soft failures of a check rendezvous
 * (a broken pod stays in over the primary network).
 */
#include "rdzv/rdzv_coord_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int rdzv_co_elastic_slot(struct rdzv_coord *co, const char *name, uint32_t *slot);

/* ---- coordinator side of the handshake (PROTOCOL.md "Handshake") ---- */
static void rdzv_co_reject(struct rdzv_coord *co, struct cconn *cc, int code, const char *why)
{
	struct rdzv_buf b = {0};
	char note[300];
	const char *who = cc->claimed > 0 ? co->names[cc->claimed] : "a peer";

	/* a trace, not an error print: the agent reports the outcome. Before the session
	 * anyone can cause it: rate-limited, and never a note on the claimed peer (a
	 * stranger must not choose whom the failure line blames) */
	if (!rdzv_conn_up(&cc->rc)) {
		gx_rl_log(&co->rl_pre, "rdzv: rejected JOIN of %s from %s: %s", who,
			  cc->rc.peer_str, why);
		co->nunauth_refused++;
		snprintf(co->unauth_note, sizeof(co->unauth_note), "from %s claiming %s: %s",
			 cc->rc.peer_str, who, why);
	} else {
		gx_warn("rdzv: rejected JOIN of %s from %s: %s", who, cc->rc.peer_str, why);
	}
	if (rdzv_conn_up(&cc->rc) && cc->claimed > 0 && !co->st[cc->claimed].joined) {
		snprintf(note, sizeof(note), "rejected JOIN from %s: %s", cc->rc.peer_str, why);
		free(co->st[cc->claimed].note);
		co->st[cc->claimed].note = strdup(note);
	}
	rdzv_put_u32(&b, T_CODE, (uint32_t)code);
	rdzv_put_str(&b, T_TEXT, why);
	rdzv_co_send(co, cc, RDZV_REJECT, &b);
	rdzv_buf_free(&b);
	rdzv_co_close_later(co, cc);
}

static int co_hello(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_msg *m)
{
	struct rdzv_buf b = {0};
	int rc;

	if (!m->has_nonce) {
		rdzv_co_drop(co, cc, "HELLO without a nonce");
		return 1;
	}
	memcpy(cc->rc.nm, m->nonce, RDZV_NONCE_LEN);
	if (m->index > 0 && m->index < co->world && strcmp(co->names[m->index], m->name) == 0)
		cc->claimed = (int)m->index;
	if (strcmp(m->job_id, co->job_id) != 0) {
		rdzv_co_reject(co, cc, GX_EJOB, "job id mismatch");
		return 0;
	}
	if (co->has_token && !m->has_token) {
		rdzv_co_reject(co, cc, GX_EAUTH, "missing token");
		return 0;
	}
	rdzv_rng_buf(co->rng, cc->rc.nc, RDZV_NONCE_LEN);
	rdzv_put(&b, T_NONCE, cc->rc.nc, RDZV_NONCE_LEN);
	rdzv_put_u32(&b, T_HAS_TOKEN, (uint32_t)co->has_token);
	rc = rdzv_co_send(co, cc, RDZV_CHALLENGE, &b);
	rdzv_buf_free(&b);
	cc->rc.state = RC_AUTH;
	if (rc < 0) {
		rdzv_co_drop(co, cc, gx_strerror(rc));
		return 1;
	}
	return 0;
}

static int co_auth(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_msg *m)
{
	unsigned char proof[RDZV_MAC_LEN];
	struct rdzv_buf b = {0};
	int rc;

	if (!m->has_proof) {
		rdzv_co_drop(co, cc, "AUTH without a proof");
		return 1;
	}
	if (rdzv_proof_verify(co->k, 0, cc->rc.nm, cc->rc.nc, co->job_id, m->proof) < 0) {
		rdzv_co_reject(co, cc, GX_EAUTH,
			       co->has_token ? "bad token"
					     : "bad proof (this coordinator has no token)");
		return 0;
	}
	rdzv_proof(co->k, 1, cc->rc.nm, cc->rc.nc, co->job_id, proof);
	rdzv_put(&b, T_PROOF, proof, sizeof(proof));
	rc = rdzv_co_send(co, cc, RDZV_PROOF, &b);
	rdzv_buf_free(&b);
	rdzv_conn_session(&cc->rc, co->k);
	rdzv_co_pa_del(co, cc); /* authenticated: out of the budget */
	cc->deadline = gx_now_ms() + RDZV_HANDSHAKE_MS;
	if (rc < 0) {
		rdzv_co_drop(co, cc, gx_strerror(rc));
		return 1;
	}
	return 0;
}

int rdzv_co_handshake(struct rdzv_coord *co, struct cconn *cc, uint16_t type,
		      const unsigned char *body, size_t len)
{
	struct rdzv_msg *m;
	int rc = 1;

	if (cc->rc.state == RC_HELLO && type == RDZV_TVERIFY) /* body, then its MAC */
		return rdzv_co_tverify(co, cc, body, len);
	m = malloc(sizeof(*m));
	if (!m || rdzv_msg_decode(type, body, len, m) < 0) {
		gx_rl_log(&co->rl_pre, "rdzv: malformed handshake from %s: dropped",
			  cc->rc.peer_str);
		rdzv_co_drop(co, cc, "malformed handshake");
	} else if (cc->rc.state == RC_HELLO && type == RDZV_HELLO) {
		cc->deadline = gx_now_ms() + RDZV_PROOF_MS;
		rc = co_hello(co, cc, m);
	} else if (cc->rc.state == RC_AUTH && type == RDZV_AUTH) {
		rc = co_auth(co, cc, m);
	} else {
		gx_rl_log(&co->rl_pre,
			  "rdzv: unexpected message type %u from %s before authentication: dropped",
			  type, cc->rc.peer_str);
		rdzv_co_drop(co, cc, "unexpected message");
	}
	free(m);
	return rc;
}

/* An observer's JOIN: no slot, no phase 2; the table comes with the COMMIT. */
static int co_observer(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_peer *p)
{
	struct rdzv_buf b = {0};

	if (co->nobservers >= RDZV_MAX_OBSERVERS) {
		rdzv_co_reject(co, cc, GX_ERDZV, "too many observers");
		return 0;
	}
	co->nobservers++;
	cc->role = ROLE_OBSERVER;
	cc->peer = -1;
	cc->deadline = 0;
	gx_info("rdzv: observer %s joined from %s", p->name, cc->rc.peer_str);
	if (co->aborted) {
		rdzv_co_send_abort(co, cc);
		return 0;
	}
	rdzv_put_u32(&b, T_RANK, RDZV_OBSERVER);
	rdzv_put_u32(&b, T_WORLD, co->world);
	rdzv_put_u64(&b, T_ROUND, co->round);
	rdzv_put_str(&b, T_MASTER, co->res.master_addr);
	rdzv_put_peer(&b, T_PEER, &co->tab[0]);
	rdzv_co_send(co, cc, RDZV_ASSIGN, &b);
	rdzv_buf_free(&b);
	if (co->committed)
		rdzv_co_commit_conn(co, cc, RDZV_OBSERVER, 1);
	return 0;
}

static int co_join(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_msg *m)
{
	struct rdzv_peer p = m->peer;
	struct cpeer *sp;
	char why[320];

	if (!m->has_peer || rdzv_peer_check(&p, why, sizeof(why)) < 0) {
		rdzv_co_reject(co, cc, GX_EINVAL_NAME, m->has_peer ? why : "JOIN without an entry");
		return 0;
	}
	if (p.index == RDZV_OBSERVER && (p.flags & RDZV_PF_OBSERVER))
		return co_observer(co, cc, &p);
	if (p.index == RDZV_ELASTIC && (p.flags & RDZV_PF_ELASTIC) && co->cfg.elastic) {
		uint32_t slot;

		if (rdzv_co_elastic_slot(co, p.name, &slot) < 0) {
			snprintf(why, sizeof(why), "elastic job is full (%u peers live)",
				 co->world);
			rdzv_co_reject(co, cc, GX_ERDZV, why);
			return 0;
		}
		p.index = slot;
		gx_strlcpy(co->tab[slot].name, p.name, sizeof(co->tab[slot].name));
	}
	if (p.index == 0 || p.index >= co->world || strcmp(co->names[p.index], p.name) != 0) {
		snprintf(why, sizeof(why), "%s is not member #%u of this job", p.name, p.index);
		rdzv_co_reject(co, cc, GX_EINVAL_NAME, why);
		return 0;
	}
	if (rdzv_co_star_room(co, cc, &p)) /* sent to a relay: the star has no room for it */
		return 0;
	/* one secondary address, two pods (an IPAM conflict): never committed */
	if (rdzv_co_addrs_check(co, p.index, &p, cc, why, sizeof(why)) < 0) {
		if (co->committed) {
			rdzv_co_reject(co, cc, GX_ECONFLICT, why);
			return 0;
		}
		rdzv_co_abort(co, GX_ECONFLICT, 0, "%s", why);
		rdzv_co_send_abort(co, cc); /* not a member yet: the abort passed it by */
		return 0;
	}
	cc->pj = malloc(sizeof(*cc->pj));
	if (!cc->pj) {
		rdzv_co_drop(co, cc, "out of memory");
		return 1;
	}
	*cc->pj = p;
	cc->peer = (int)p.index;
	sp = &co->st[p.index];
	/* a relay carries its children on this session (not an elastic job's members) */
	if ((p.flags & RDZV_PF_RELAY) && !co->cfg.elastic && rdzv_co_relay_on(co, cc) < 0) {
		rdzv_co_reject(co, cc, GX_ERDZV, "a member joined through a relay cannot relay");
		return 0;
	}
	if (!sp->conn) {
		rdzv_co_accept_join(co, cc);
		return 0;
	}
	/* the same name is live on another connection: PING the old one; no PONG within
	 * RDZV_PING_MS and the new one replaces it (a restart), a PONG and it is a conflict */
	if (sp->pending && sp->pending == cc->relay) {
		/* it would close the relay that carries it (while its CARRY is being read) */
		rdzv_co_reject(co, cc, GX_ECONFLICT, "a member cannot take its own relay's name");
		return 0;
	}
	if (sp->pending)
		rdzv_co_drop(co, sp->pending, "superseded by a newer JOIN");
	cc->role = ROLE_PENDING;
	sp->pending = cc;
	co->npending++;
	if (!sp->conn->ping_at) {
		struct rdzv_buf b = {0};

		sp->conn->ping_at = gx_now_ms();
		rdzv_co_send(co, sp->conn, RDZV_PING, &b);
	}
	return 0;
}

static void verify_reply(struct rdzv_coord *co, struct cconn *cc, int code, const char *why)
{
	struct rdzv_buf b = {0};

	rdzv_put_u32(&b, T_CODE, (uint32_t)code);
	rdzv_put_str(&b, T_TEXT, why);
	rdzv_co_send(co, cc, RDZV_VERIFIED, &b);
	rdzv_buf_free(&b);
	/* written now, not at the end of the event: the COMMIT this VERIFY may complete
	 * goes out on phase 1 first otherwise, and a member that reads it closes phase 2
	 * before VERIFIED arrives, which its kernel answers with a RST; an error
	 * is the flush's at the end of the event again */
	(void)rdzv_conn_flush(&cc->rc);
	cc->role = ROLE_VERIFY;
	rdzv_co_close_later(co, cc);
}

/*
 * The connection must have arrived on our secondary address (getsockname) and, when the
 * secondary listeners are up, through our secondary interface: Linux takes a packet for
 * net1's address on eth0 too (weak host), and such a VERIFY proves a path the job's
 * traffic would not take.
 */
static int local_is_secondary(struct rdzv_coord *co, struct cconn *cc, char *why, size_t len)
{
	union gx_sockaddr sa;
	socklen_t sl = sizeof(sa);
	char local[INET6_ADDRSTRLEN] = "?";

	memset(&sa, 0, sizeof(sa));
	if (getsockname(cc->rc.f.fd, &sa.sa, &sl) == 0)
		gx_addr_str(&sa, local, sizeof(local));
	if (!(co->tab[0].addr4[0] && strcmp(local, co->tab[0].addr4) == 0) &&
	    !(co->tab[0].addr6[0] && strcmp(local, co->tab[0].addr6) == 0)) {
		snprintf(why, len,
			 "VERIFY arrived on %s, not on the coordinator's secondary address %s",
			 local, co->res.master_addr);
		return 0;
	}
	if (co->sec_bound && !cc->via_sec) {
		snprintf(why, len,
			 "VERIFY to %s did not come in through %s (a host route or an overlapping "
			 "range sends it through another interface, the primary network)",
			 local, co->tab[0].iface);
		return 0;
	}
	return 1;
}

/*
 * The way back: the kernel must route from our secondary address to the member's out of
 * our secondary interface, as rank 0's own sockets to it will go. 0, or GX_EROUTE with the
 * line in why (the coordinator named first: its table is the one to mend).
 */
static int route_back(struct rdzv_coord *co, const struct rdzv_peer *t, char *why, size_t len)
{
	const struct rdzv_peer *s = &co->tab[0];
	const char *master = co->res.master_addr, *dst = rdzv_peer_addr(t, master);
	char line[480]; /* with two names it fits co_verify's why */
	int rc;

	if (!co->cfg.route || !dst[0])
		return 0;
	rc = co->cfg.route(co->cfg.route_arg, master, dst,
			   strchr(master, ':') ? t->plen6 : t->plen4, s->iface, line, sizeof(line));
	if (rc < 0)
		snprintf(why, len, "%s (the coordinator), to %s: %s", s->name, t->name, line);
	return rc;
}

/* The peer's note: the text it reported (its netdetect line, its failed verification). */
static void note_set(struct cpeer *sp, const char *text)
{
	free(sp->note);
	sp->note = strndup(text, 511);
}

/* The slot's phase-2 ticket ends: used, or the member's phase 2 went another way (a VERIFY
 * through the handshake, a VFAIL). Bytes of a TVERIFY the member gave up on, seen on the
 * secondary network, then prove nothing (PROTOCOL.md "Phase-2 ticket"). */
static void ticket_end(struct cpeer *sp)
{
	sp->vt = 0;
	sodium_memzero(sp->vkey, sizeof(sp->vkey));
}

/* ticket: the VERIFY came in a ticket's session; counted in ntickets when accepted, before
 * the COMMIT it may complete (whose line reports the count). */
static int co_verify(struct rdzv_coord *co, struct cconn *cc, const struct rdzv_msg *m, int ticket)
{
	uint32_t i = m->index;
	struct cpeer *sp;
	struct rdzv_peer *t;
	char why[1024];

	if (i == 0 || i >= co->world || strcmp(co->names[i], m->name) != 0) {
		verify_reply(co, cc, GX_ERDZV, "VERIFY for an unknown peer");
		return 0;
	}
	sp = &co->st[i];
	t = &co->tab[i];
	cc->peer = -1; /* a VERIFY connection never holds the slot */
	ticket_end(sp);
	if (!sp->joined || !sp->conn || m->incarnation != t->incarnation || m->round != co->round) {
		verify_reply(co, cc, GX_ERDZV, "stale VERIFY: not joined in this round");
		return 0;
	}
	if (!local_is_secondary(co, cc, why, sizeof(why))) {
		note_set(sp, why);
		verify_reply(co, cc, GX_ERDZV, why);
		return 0;
	}
	if (route_back(co, t, why, sizeof(why)) < 0) {
		if (co->cfg.soft_verify) {
			note_set(sp, why);
			verify_reply(co, cc, GX_ERDZV, why);
			rdzv_co_soft_fail(co, i, why);
		} else {
			verify_reply(co, cc, GX_ERDZV, why);
			rdzv_co_abort(co, GX_ERDZV, 1, "%s", why);
		}
		return 0;
	}
	gx_strlcpy(t->seen_from, cc->rc.peer_str, sizeof(t->seen_from));
	if (strcmp(t->seen_from, t->addr4) != 0 && strcmp(t->seen_from, t->addr6) != 0)
		gx_warn("rdzv: %s verified from %s, not from its secondary address %s%s%s", t->name,
			t->seen_from, t->addr4, t->addr4[0] && t->addr6[0] ? " / " : "", t->addr6);
	t->verify_ms = gx_now_ms();
	t->flags &= ~RDZV_PF_VFAILED;
	co->nverified += !sp->verified;
	sp->verified = 1;
	free(sp->note);
	sp->note = NULL;
	co->res.ntickets += (uint32_t)(ticket != 0);
	verify_reply(co, cc, 0, NULL);
	if (co->committed && co->pf) { /* its rank after the preflight's, then changed() */
		rdzv_co_pf_changed(co, i);
		return 0;
	}
	if (co->committed) {
		rdzv_co_commit_one(co, i); /* a restarted pod gets its rank at once */
		co->res.ntable = co->cfg.elastic ? co->nassigned : co->world;
		if (co->cfg.changed)
			co->cfg.changed(co->cfg.changed_arg, co->tab, co->res.ntable);
		return 0;
	}
	if (co->nverified + 1 == co->world && !co->res.t_verified_ms)
		co->res.t_verified_ms = t->verify_ms;
	rdzv_co_check_commit(co);
	return 0;
}

/*
 * The ticket check of a TVERIFY (decoded into m; body, blen, then its MAC): NULL and *spp
 * set when the MAC verifies under the slot's unused ticket, else why not. The MAC is
 * computed in every case, under the slot's ticket or, for an unknown peer or a slot without
 * one, under a decoy key drawn at start: the same BLAKE2b work and the same constant-time
 * compare, so the time a TVERIFY takes tells no one whether a member holds an unused ticket
 * (PROTOCOL.md "Phase-2 ticket").
 */
const char *rdzv_co_ticket_check(struct rdzv_coord *co, const struct rdzv_msg *m,
				 const unsigned char *body, size_t blen, struct cpeer **spp)
{
	int known = m->index > 0 && m->index < co->world && !strcmp(co->names[m->index], m->name);
	struct cpeer *sp = known ? &co->st[m->index] : NULL;
	int held = sp && sp->vt;
	int mac_ok = rdzv_mac_verify(held ? sp->vkey : co->decoy, 'M', 0, RDZV_TVERIFY, body, blen,
				     body + blen) == 0;

	*spp = NULL;
	if (!known)
		return "ticket VERIFY for an unknown peer";
	if (!held)
		return "no unused ticket for it";
	if (!mac_ok)
		return "wrong ticket";
	*spp = sp;
	return NULL;
}

/*
 * A ticket is bound to the secondary address its member JOINed with: the VERIFY it opens
 * must come from there. The handshake proves a token holder wherever it connects from (a
 * mismatch is only a warning: NAT and relays), but a ticket proves only that its bytes
 * were seen, and a TVERIFY copied on the path and sent first from elsewhere would verify
 * a path the member never took. Refused with a VERIFIED error under the ticket's key and
 * not spent: the member's own TVERIFY still verifies, and a member behind NAT hears why
 * at once and verifies with the handshake on its retry. 1 when refused (cc closing).
 */
static int ticket_foreign(struct rdzv_coord *co, struct cconn *cc, uint32_t i, struct cpeer *sp)
{
	const struct rdzv_peer *t = &co->tab[i];
	char why[300];

	if (!strcmp(cc->rc.peer_str, t->addr4) || !strcmp(cc->rc.peer_str, t->addr6))
		return 0;
	gx_rl_log(&co->rl_pre,
		  "rdzv: ticket VERIFY for %s from %s, not from its secondary address "
		  "%s%s%s: refused",
		  t->name, cc->rc.peer_str, t->addr4, t->addr4[0] && t->addr6[0] ? " / " : "",
		  t->addr6);
	snprintf(why, sizeof(why),
		 "ticket VERIFY from %s, not from the secondary address %s%s%s of its JOIN",
		 cc->rc.peer_str, t->addr4, t->addr4[0] && t->addr6[0] ? " / " : "", t->addr6);
	rdzv_conn_session_ticket(&cc->rc, sp->vkey);
	verify_reply(co, cc, GX_ERDZV, why);
	return 1;
}

/*
 * Phase 2 with a ticket (PROTOCOL.md "Phase-2 ticket"): the first frame of the
 * connection is VERIFY MAC'd under the key the ASSIGN on the member's phase-1 session
 * handed out. The frame is decoded (bounded) before the MAC is checked, and only its
 * claimed index is used then, to pick the key; a ticket proves once. Anything wrong drops the
 * connection without an answer: the member then retries phase 2 with the full handshake.
 */
int rdzv_co_tverify(struct rdzv_coord *co, struct cconn *cc, const unsigned char *body, size_t len)
{
	struct rdzv_msg *m = malloc(sizeof(*m));
	const char *why = NULL;
	struct cpeer *sp = NULL;
	size_t blen = len >= RDZV_MAC_LEN ? len - RDZV_MAC_LEN : 0; /* checked below */
	int rc = 1;

	if (!m || len < RDZV_MAC_LEN || rdzv_msg_decode(RDZV_VERIFY, body, blen, m) < 0)
		why = "malformed ticket VERIFY";
	else
		why = rdzv_co_ticket_check(co, m, body, blen, &sp);
	if (why) {
		gx_rl_log(&co->rl_pre, "rdzv: %s from %s: dropped", why, cc->rc.peer_str);
		rdzv_co_drop(co, cc, why);
		goto out;
	}
	if (ticket_foreign(co, cc, m->index, sp))
		goto out;
	rdzv_conn_session_ticket(&cc->rc, sp->vkey);
	ticket_end(sp);
	rdzv_co_pa_del(co, cc); /* authenticated: out of the budget */
	cc->deadline = gx_now_ms() + RDZV_HANDSHAKE_MS;
	if (m->flags & RDZV_VF_RDMA_PENDING) {
		/* the member checks RDMA-CM now (its TCP connection warmed the neighbour
		 * cache) and sends VERIFY, seq 1, in this session: as after a PROOF */
		cc->ticketed = 1;
		cc->claimed = (int)m->index;
		rc = 0;
		goto out;
	}
	rc = co_verify(co, cc, m, 1);
out:
	free(m);
	return rc;
}

/* Elastic: the slot for a JOIN by name; GX_ERDZV when every slot is live. */
static int rdzv_co_elastic_slot(struct rdzv_coord *co, const char *name, uint32_t *slot)
{
	uint32_t i, idle = 0;
	int64_t oldest = INT64_MAX;

	for (i = co->nnames; i < co->nassigned; i++)
		if (strcmp(co->tab[i].name, name) == 0) {
			*slot = i; /* a pod that comes back keeps its rank */
			return 0;
		}
	if (co->nassigned < co->world) {
		*slot = co->nassigned++;
		return 0;
	}
	for (i = co->nnames; i < co->world; i++) {
		const struct cpeer *sp = &co->st[i];

		if (!sp->conn && !sp->pending && co->tab[i].join_ms < oldest) {
			oldest = co->tab[i].join_ms;
			idle = i;
		}
	}
	if (!idle)
		return GX_ERDZV;
	gx_info("rdzv: elastic slot %u (%s, gone) goes to %s", idle, co->tab[idle].name, name);
	*slot = idle;
	return 0;
}

static void co_pong(struct rdzv_coord *co, struct cconn *cc)
{
	struct cpeer *sp;

	if (cc->role != ROLE_MEMBER || !cc->ping_at)
		return;
	cc->ping_at = 0;
	sp = &co->st[cc->peer];
	if (!sp->pending)
		return;
	if (co->committed) {
		if (sp->pending != cc->relay) /* never the relay whose CARRY is being read */
			rdzv_co_drop(co, sp->pending, "conflicting peer after COMMIT");
		return;
	}
	rdzv_co_abort(co, GX_ECONFLICT, 0, "conflicting peers: two live pods claim %s (%s and %s)",
		      co->names[cc->peer], cc->rc.peer_str, sp->pending->rc.peer_str);
}

int rdzv_co_handle(struct rdzv_coord *co, struct cconn *cc, uint16_t type,
		   const unsigned char *body, size_t len)
{
	struct rdzv_msg *m;
	int rc = 0;

	if (cc->rc.state != RC_SESSION)
		return rdzv_co_handshake(co, cc, type, body, len);
	if (type == RDZV_FABRIC) /* a member's report after the COMMIT (rdzv_fabric.c) */
		return rdzv_co_fabric(co, cc, body, len);
	m = malloc(sizeof(*m));
	if (!m || rdzv_msg_decode(type, body, len, m) < 0) {
		gx_warn("rdzv: malformed message type %u from %s: dropped", type, cc->rc.peer_str);
		rdzv_co_drop(co, cc, "malformed message");
		free(m);
		return 1;
	}
	if ((type == RDZV_JOIN || type == RDZV_VERIFY) && cc->role != ROLE_HANDSHAKE) {
		rdzv_co_drop(co, cc, "second JOIN/VERIFY on one connection");
		rc = 1;
	} else if (cc->ticketed && (type != RDZV_VERIFY || m->index != (uint32_t)cc->claimed)) {
		/* a ticket's session carries its member's VERIFY, nothing else */
		rdzv_co_drop(co, cc, "a ticket's session carries only its member's VERIFY");
		rc = 1;
	} else if (type == RDZV_JOIN) {
		rc = co_join(co, cc, m);
	} else if (type == RDZV_VERIFY) {
		rc = co_verify(co, cc, m, cc->ticketed);
	} else if (type == RDZV_PONG) {
		co_pong(co, cc);
	} else if (type == RDZV_END && cc->role == ROLE_OBSERVER && co->committed) {
		gx_debug("rdzv: observer %s: the job ended with %u", cc->rc.peer_str, m->code);
		if (co->cfg.ended)
			co->cfg.ended(co->cfg.ended_arg, (int)(m->code & 0xff), NULL);
	} else if (type == RDZV_PREFLIGHT && cc->role == ROLE_MEMBER) {
		rdzv_co_pf_recv(co, cc, m);
	} else if (type == RDZV_VFAIL && cc->role == ROLE_MEMBER) {
		char text[512];

		rdzv_sanitize(text, sizeof(text), m->text);
		ticket_end(&co->st[cc->peer]); /* it forgot its ticket too */
		note_set(&co->st[cc->peer], text);
		if (co->cfg.soft_verify)
			rdzv_co_soft_fail(co, (uint32_t)cc->peer, text);
		else if (m->code) /* its own configuration (a route, a family): final */
			rdzv_co_final_fail(co, (uint32_t)cc->peer, text);
	} /* anything else: unknown or not for us, skipped */
	free(m);
	return rc;
}
