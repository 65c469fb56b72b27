/* SPDX-License-Identifier: MIT */
/*
 * rdzv_coord_state.c - the coordinator's job state: a connection's drop, the peer slots
 * and their JOINs, the ASSIGN, and the COMMIT once every member is in and verified
 * (PROTOCOL.md "Coordinator"). The messages that move it are in rdzv_coord_msg.c; what it
 * sends goes through rdzv_coord_out.c.
 */
#include "rdzv/rdzv_coord_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static void rdzv_co_carry_drop(struct rdzv_coord *co, struct cconn *cc);
static void rdzv_co_compare_peers(struct rdzv_coord *co);

/* cc gives up the peer slot it holds or waits for (no longer joined before a COMMIT; a
 * pending newer JOIN takes it); its cconn stays. */
static void rdzv_co_slot_unlink(struct rdzv_coord *co, struct cconn *cc)
{
	struct cpeer *sp;

	if (cc->peer < 0)
		return;
	sp = &co->st[cc->peer];
	if (sp->pending == cc) {
		sp->pending = NULL;
		co->npending--;
		return;
	}
	if (sp->conn != cc)
		return;
	sp->conn = NULL;
	if (!co->committed) {
		co->njoined -= sp->joined;
		co->nverified -= sp->verified;
		sp->joined = sp->verified = 0;
	}
	if (sp->pending) {
		struct cconn *p = sp->pending;

		sp->pending = NULL;
		co->npending--;
		if (!co->aborted)
			rdzv_co_accept_join(co, p);
	}
}

void rdzv_co_drop(struct rdzv_coord *co, struct cconn *cc, const char *why)
{
	int carried = cc->rc.f.carried;

	if (why)
		gx_debug("rdzv: closing connection from %s: %s", cc->rc.peer_str, why);
	if (cc->out_pending)
		co->nout--;
	if (cc->role == ROLE_OBSERVER)
		co->nobservers--;
	cc->out_pending = 0;
	rdzv_co_pa_del(co, cc);
	rdzv_co_carry_drop(co, cc);
	if (cc->rc.f.fd >= 0)
		gx_ev_del(co->ev, cc->rc.f.fd);
	rdzv_conn_reset(&cc->rc);
	if (cc->prev)
		cc->prev->next = cc->next;
	else
		co->conns = cc->next;
	if (cc->next)
		cc->next->prev = cc->prev;
	if (!carried)
		co->nconns--;
	rdzv_co_slot_unlink(co, cc);
	free(cc->pj);
	free(cc);
}

/* ---- COMMIT ---- */
static void put_common(struct rdzv_coord *co, struct rdzv_buf *b, uint32_t rank)
{
	rdzv_put_u32(b, T_RANK, rank);
	rdzv_put_u32(b, T_WORLD, co->world);
	rdzv_put_u64(b, T_ROUND, co->round);
	rdzv_put_str(b, T_MASTER, co->res.master_addr);
	rdzv_put_peer(b, T_PEER, &co->tab[0]);
}

/* ASSIGN, with a fresh phase-2 ticket (a handshake less per member): the member may open phase 2
 * with one VERIFY MAC'd under it instead of a second handshake; a new ASSIGN replaces it. */
void rdzv_co_assign(struct rdzv_coord *co, struct cconn *cc)
{
	struct cpeer *sp = &co->st[cc->peer];
	unsigned char vn[RDZV_TICKET_LEN];
	struct rdzv_buf b = {0};

	put_common(co, &b, (uint32_t)cc->peer);
	rdzv_rng_buf(co->rng, vn, sizeof(vn));
	rdzv_ticket_key(cc->rc.skey, vn, sp->vkey);
	sp->vt = 1;
	rdzv_put(&b, T_VTICKET, vn, sizeof(vn));
	rdzv_co_send(co, cc, RDZV_ASSIGN, &b);
	rdzv_buf_free(&b);
}

static const struct rdzv_buf *table_enc(struct rdzv_coord *co)
{
	const struct rdzv_buf *ranked = rdzv_co_pf_table(co);
	uint32_t i;

	if (ranked) /* the preflight gave an elastic job its ranks */
		return ranked;
	if (co->cfg.elastic) /* slots are still being handed out: encode what is there now */
		rdzv_buf_free(&co->table);
	else if (co->table.len || co->table.err)
		return &co->table;
	for (i = 0; i < (co->cfg.elastic ? co->nassigned : co->world); i++)
		rdzv_put_peer(&co->table, T_ENTRY, &co->tab[i]);
	return &co->table;
}

void rdzv_co_commit_one(struct rdzv_coord *co, uint32_t i)
{
	rdzv_co_commit_conn(co, co->st[i].conn, i, (co->tab[i].flags & RDZV_PF_FULL_TABLE) != 0);
}

void rdzv_co_commit_conn(struct rdzv_coord *co, struct cconn *cc, uint32_t i, int table)
{
	struct rdzv_buf b = {0};

	if (!cc || cc->rc.state != RC_SESSION) {
		if (i != RDZV_OBSERVER && i < co->world)
			gx_debug("rdzv: COMMIT for %s waits: %s", co->tab[i].name,
				 cc ? "its connection is not in session" : "no live connection");
		return;
	}
	put_common(co, &b, i);
	if (co->pf && !rdzv_co_pf_commit_put(co, &b, i)) {
		rdzv_buf_free(&b);
		return;
	}
	if (table) {
		const struct rdzv_buf *t = table_enc(co);

		if (t->err)
			b.err = t->err;
		else
			rdzv_put_raw(&b, t->p, t->len);
	}
	if (rdzv_co_send(co, cc, RDZV_COMMIT, &b) < 0)
		gx_debug("rdzv: COMMIT to %s failed", cc->rc.peer_str);
	else if (i != RDZV_OBSERVER && i < co->world && !co->st[i].commit_sent) {
		co->st[i].commit_sent = 1;
		co->ncommit_sent++;
	}
	/* a relay that rejoins after the COMMIT: it may end once its children are served (at
	 * the COMMIT itself every relay is told after all the COMMITs: check_commit) */
	if (cc->is_relay && !co->commit_loop)
		rdzv_co_relay_committed(co, cc);
	rdzv_buf_free(&b);
}

void rdzv_co_check_commit(struct rdzv_coord *co)
{
	struct cconn *cc, *next;
	uint32_t i;

	/* a newer incarnation waiting for its old connection's PONG is not in yet */
	if (co->committed || co->aborted || co->npending || co->njoined + 1 < co->need ||
	    co->nverified + 1 < co->need)
		return;
	if (co->pf && rdzv_co_pf_hold(co)) /* the preflight measures the pods first */
		return;
	co->committed = 1;
	co->res.t_commit_ms = gx_now_ms();
	co->commit_wait_until = co->res.t_commit_ms + RDZV_COMMIT_WAIT_MS;
	co->res.ntable = co->nassigned; /* elastic: the slots in use so far */
	if (co->pf)
		rdzv_co_pf_result(co);
	rdzv_co_compare_peers(co);
	gx_debug("rdzv: all %u peers joined and verified (%u with a phase-2 ticket); COMMIT",
		 co->world, co->res.ntickets);
	if (co->res.nrelays) {
		uint32_t via = 0;

		for (i = 1; i < co->world; i++)
			via += co->st[i].conn && co->st[i].conn->rc.f.carried;
		gx_info("rdzv: %u of %u members joined through %u relays", via, co->world - 1,
			co->nrelays_open);
	}
	co->commit_loop = 1; /* relays hear CK_COMMITTED after every COMMIT, below */
	for (i = 1; i < co->world; i++)
		rdzv_co_commit_one(co, i);
	co->commit_loop = 0;
	for (cc = co->conns; cc; cc = next) {
		next = cc->next;
		if (cc->role == ROLE_OBSERVER)
			rdzv_co_commit_conn(co, cc, RDZV_OBSERVER, 1);
	}
	rdzv_co_relays_committed(co);
	rdzv_co_finish(co, 0);
}

/* A JOINed member's addresses become known to the budgets (co_admit, kid_open): its VERIFY
 * comes from its secondary address, a reconnect from its primary. A set bounded by 3 per
 * slot and some: a pod that restarted elsewhere many times is not known everywhere. */
static void known_add(struct rdzv_coord *co, const struct rdzv_peer *t)
{
	if (gx_aset_add(&co->known, t->primary) < 0 || gx_aset_add(&co->known, t->addr4) < 0 ||
	    gx_aset_add(&co->known, t->addr6) < 0)
		gx_debug("rdzv: more than %zu table addresses: not all of %s's are known",
			 co->known.cap, t->name);
}

void rdzv_co_accept_join(struct rdzv_coord *co, struct cconn *cc)
{
	struct cpeer *sp = &co->st[cc->peer];
	struct rdzv_peer *t = &co->tab[cc->peer];
	int64_t now = gx_now_ms();

	*t = *cc->pj;
	free(cc->pj);
	cc->pj = NULL;
	t->join_ms = now;
	t->verify_ms = 0;
	t->seen_from[0] = '\0';
	if (cc->rc.peer_str[0] != '?')
		gx_strlcpy(t->primary, cc->rc.peer_str, sizeof(t->primary));
	known_add(co, t);
	cc->role = ROLE_MEMBER;
	cc->deadline = 0;
	sp->conn = cc;
	rdzv_co_addrs_claim(co, (uint32_t)cc->peer);
	free(sp->note);
	sp->note = NULL;
	co->njoined += !sp->joined;
	co->nverified -= sp->verified;
	sp->joined = 1;
	sp->verified = 0;
	gx_debug("rdzv: %s joined from %s (incarnation %llx)", t->name, cc->rc.peer_str,
		 (unsigned long long)t->incarnation);
	if (co->aborted) {
		rdzv_co_send_abort(co, cc);
		return;
	}
	if (t->nd_err && !co->cfg.soft_verify) {
		rdzv_co_abort(co, GX_ERDZV, 1, "%s: %s", t->name,
			      t->nd_why[0] ? t->nd_why : gx_strerror(t->nd_err));
		return;
	}
	rdzv_co_assign(co, cc);
	if (t->nd_err)
		rdzv_co_soft_fail(co, (uint32_t)cc->peer,
				  t->nd_why[0] ? t->nd_why : gx_strerror(t->nd_err));
	if (co->njoined + 1 == co->world && !co->res.t_joined_ms)
		co->res.t_joined_ms = now;
}

static size_t rail_count(const char *s)
{
	size_t n = s[0] ? 1 : 0;

	for (; *s; s++)
		n += *s == ',';
	return n;
}

/*
 * One slow or missing rail (or a smaller MTU) on one pod
 * slows the whole job. Warn once at COMMIT, naming the odd pods against the
 * coordinator's values.
 */
static void rdzv_co_compare_peers(struct rdzv_coord *co)
{
	const struct rdzv_peer *c = &co->tab[0];
	size_t nc = rail_count(c->rails), odd_mtu = 0, odd_rails = 0;
	char mtu_list[512] = "", rail_list[512] = "";
	uint32_t i;

	for (i = 1; i < co->world; i++) {
		const struct rdzv_peer *p = &co->tab[i];
		char one[300];

		if (p->mtu && c->mtu && p->mtu != c->mtu && odd_mtu++ < 8) {
			snprintf(one, sizeof(one), "%s%s %d", mtu_list[0] ? ", " : "", p->name,
				 p->mtu);
			gx_strlcpy(mtu_list + strlen(mtu_list), one,
				   sizeof(mtu_list) - strlen(mtu_list));
		}
		if (!(p->flags & RDZV_PF_VFAILED) && rail_count(p->rails) != nc &&
		    odd_rails++ < 8) {
			snprintf(one, sizeof(one), "%s%s %zu", rail_list[0] ? ", " : "", p->name,
				 rail_count(p->rails));
			gx_strlcpy(rail_list + strlen(rail_list), one,
				   sizeof(rail_list) - strlen(rail_list));
		}
	}
	if (odd_mtu)
		gx_warn("rdzv: MTU mismatch on the secondary network: %s has %d; %s%s", c->name,
			c->mtu, mtu_list, odd_mtu > 8 ? ", ..." : "");
	if (odd_rails)
		gx_warn("rdzv: rail count differs: %s has %zu; %s%s (one missing rail slows the "
			"whole job)",
			c->name, nc, rail_list, odd_rails > 8 ? ", ..." : "");
}

/* soft_verify: count a member that failed its checks, flagged, so the COMMIT comes. */
void rdzv_co_soft_fail(struct rdzv_coord *co, uint32_t i, const char *why)
{
	struct cpeer *sp = &co->st[i];
	struct rdzv_peer *t = &co->tab[i];

	if (sp->verified || co->aborted)
		return;
	t->flags |= RDZV_PF_VFAILED;
	gx_strlcpy(t->nd_why, why, sizeof(t->nd_why));
	co->nverified++;
	sp->verified = 1;
	if (co->committed) {
		rdzv_co_commit_one(co, i);
		return;
	}
	rdzv_co_check_commit(co);
}

/* ---- a relay's drop: its children go with it ---- */
/* The relay is going: its children cannot be reached, and go at the next sweep (callers
 * may be iterating the connection list: nothing else is freed here). */
static void orphan_kids(struct rdzv_coord *co, struct cconn *r)
{
	uint32_t i, lost = 0, joined = 0;
	char note[300];

	for (i = 0; i < RDZV_RELAY_KIDS && r->nkids; i++) {
		struct cconn *k = r->kids[i];

		if (!k)
			continue;
		r->kids[i] = NULL;
		r->nkids--;
		k->relay = NULL;
		k->close_sent = 1;
		k->rc.state = RC_CLOSING;
		k->deadline = gx_now_ms(); /* the next sweep drops it */
		lost++;
		if (k->peer >= 0 && k->role == ROLE_MEMBER && !co->committed) {
			joined++;
			snprintf(note, sizeof(note), "its relay %s was lost",
				 r->peer >= 0 ? co->names[r->peer] : r->rc.peer_str);
			free(co->st[k->peer].note);
			co->st[k->peer].note = strdup(note);
		}
		/* after the COMMIT: its COMMIT may have been in the records the relay never
		 * delivered: not sent, so the coordinator waits for it to come back (directly:
		 * its relay refuses it now) for RDZV_COMMIT_WAIT_MS */
		if (k->peer >= 0 && co->committed && co->st[k->peer].conn == k &&
		    co->st[k->peer].commit_sent) {
			co->st[k->peer].commit_sent = 0;
			co->ncommit_sent--;
		}
		/* not joined from now on: no COMMIT may count a child that cannot be told (its
		 * cconn goes at the next sweep) */
		if (k->peer >= 0 && k->role != ROLE_VERIFY)
			rdzv_co_slot_unlink(co, k);
		k->peer = -1;
	}
	if (lost && !co->committed && !co->aborted) {
		co->res.nrelays_lost++;
		gx_warn("rdzv: relay %s lost: %u connection%s behind it (%u joined) reconnect",
			r->peer >= 0 ? co->names[r->peer] : r->rc.peer_str, lost,
			lost == 1 ? "" : "s", joined);
	}
}

/* rdzv_co_drop's part: a relay's children go with it; a child's close is queued. */
static void rdzv_co_carry_drop(struct rdzv_coord *co, struct cconn *cc)
{
	struct cconn *r = cc->relay, **pp;

	if (cc->rc.f.carried)
		co->ncarried--;
	if (r) {
		if (!cc->close_sent && r->rc.state == RC_SESSION)
			rdzv_co_carry_rec(co, r, cc->kid, CK_CLOSE, NULL, 0);
		r->kids[cc->kid % RDZV_RELAY_KIDS] = NULL;
		r->nkids--;
		cc->relay = NULL;
	}
	if (!cc->is_relay)
		return;
	co->nrelays_open--;
	orphan_kids(co, cc);
	for (pp = &co->dirty; *pp; pp = &(*pp)->dirty_next)
		if (*pp == cc) {
			*pp = cc->dirty_next;
			break;
		}
	free(cc->kids);
	cc->kids = NULL;
	rdzv_buf_free(&cc->carry);
	cc->is_relay = 0;
}
