/* SPDX-License-Identifier: MIT */
/*
 * rdzv_member_msg.c - the member's side of the handshake (HELLO, AUTH,
 * PROOF) and of the session: ASSIGN, COMMIT (with the table on request),
 * ABORT, WAITING, PING, VERIFIED, PREFLIGHT (PROTOCOL.md "Member").
 */
#include "rdzv/rdzv_member_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int rdzv_mb_pf_commit(struct rdzv_member *m, const struct rdzv_msg *msg);
static void rdzv_mb_pf_recv(struct rdzv_member *m, const struct rdzv_msg *msg);

/* ---- handshake, member side ---- */
int rdzv_mb_send_hello(struct rdzv_member *m, struct mconn *c)
{
	struct rdzv_buf b = {0};

	randombytes_buf(c->rc.nm, RDZV_NONCE_LEN);
	rdzv_put(&b, T_NONCE, c->rc.nm, RDZV_NONCE_LEN);
	rdzv_put_u32(&b, T_HAS_TOKEN, (uint32_t)m->has_token);
	rdzv_put_str(&b, T_NAME, m->self.name);
	rdzv_put_u32(&b, T_INDEX, m->self.index);
	rdzv_put_str(&b, T_JOB_ID, m->job_id);
	c->rc.state = RC_HELLO;
	return rdzv_mb_send(m, c, RDZV_HELLO, &b);
}

static void auth_fail(struct rdzv_member *m, struct mconn *c, const char *why)
{
	m->auth_failed = 1;
	gx_warn("rdzv: coordinator at %s failed authentication: %s", c->dst, why);
	rdzv_mb_fail(m, c, why);
}

static int send_join(struct rdzv_member *m, struct mconn *c);
static int put_verify(struct rdzv_member *m, struct mconn *c, uint16_t type, uint32_t flags);

/* Phase 2 runs the RDMA-CM check between the PROOF and VERIFY when both ends have a device. */
static int rdma_check_due(const struct rdzv_member *m)
{
	const struct rdzv_rdma_ops *ops = m->cfg.rdma;

	return ops && ops->check && m->self.rdma_dev[0] && m->res.coord.rdma_dev[0];
}

/*
 * AUTH, and in the same flight the first session message (one round trip and one
 * coordinator wake-up less per connection): JOIN on phase 1, VERIFY on phase 2 unless the
 * RDMA-CM check must come first. MAC'd under the session key, which the member knows from
 * both nonces; the coordinator reads it only after AUTH verified (PROTOCOL.md "Handshake").
 */
static int send_auth(struct rdzv_member *m, struct mconn *c, struct rdzv_buf *b)
{
	int early = c->phase == 1 || !rdma_check_due(m), rc, frc;

	c->rc.f.cork = early;
	rc = rdzv_mb_send(m, c, RDZV_AUTH, b);
	if (rc == 0 && early) {
		rdzv_conn_session_tx(&c->rc, m->k);
		rc = c->phase == 1 ? send_join(m, c) : put_verify(m, c, RDZV_VERIFY, 0);
	}
	if (c->rc.f.cork) {
		c->rc.f.cork = 0;
		frc = rdzv_conn_flush(&c->rc);
		if (rc == 0 && frc < 0)
			rc = frc;
		rdzv_mb_update(m, c);
	}
	return rc;
}

static int on_challenge(struct rdzv_member *m, struct mconn *c, const struct rdzv_msg *msg)
{
	unsigned char proof[RDZV_MAC_LEN];
	struct rdzv_buf b = {0};

	if (!msg->has_nonce)
		return GX_EPROTO;
	if (m->has_token && !msg->has_token) {
		auth_fail(m, c, "it holds no token");
		return 1;
	}
	memcpy(c->rc.nc, msg->nonce, RDZV_NONCE_LEN);
	rdzv_proof(m->k, 0, c->rc.nm, c->rc.nc, m->job_id, proof);
	rdzv_put(&b, T_PROOF, proof, sizeof(proof));
	c->rc.state = RC_AUTH;
	return send_auth(m, c, &b);
}

static int send_join(struct rdzv_member *m, struct mconn *c)
{
	struct rdzv_buf b = {0};
	struct rdzv_peer p = m->self;

	if (m->cfg.full_table)
		p.flags |= RDZV_PF_FULL_TABLE;
	if (m->relay)
		p.flags |= RDZV_PF_RELAY;
	rdzv_put_peer(&b, T_PEER, &p);
	return rdzv_mb_send(m, c, RDZV_JOIN, &b);
}

static int put_verify(struct rdzv_member *m, struct mconn *c, uint16_t type, uint32_t flags)
{
	struct rdzv_buf b = {0};

	rdzv_put_str(&b, T_NAME, m->self.name);
	/* an elastic member learnt its slot from ASSIGN */
	rdzv_put_u32(&b, T_INDEX,
		     m->self.index == RDZV_ELASTIC ? (uint32_t)m->res.rank : m->self.index);
	rdzv_put_u64(&b, T_INCARNATION, m->self.incarnation);
	rdzv_put_u64(&b, T_ROUND, m->round);
	rdzv_put_u32(&b, T_FLAGS, flags | (m->res.rdma_verified ? RDZV_VF_RDMA : 0));
	return rdzv_mb_send(m, c, type, &b);
}

static void rdma_failed(struct rdzv_member *m, int rc, const char *why)
{
	char line[300];

	snprintf(line, sizeof(line), "RDMA-CM from %.63s to %.63s: %.150s", m->self.rdma_dev,
		 m->res.coord.rdma_dev, why && why[0] ? why : gx_strerror(rc));
	rdzv_mb_fail2(m, line);
}

/* The RDMA-CM check's answer, from the loop: VERIFY now, or phase 2 failed. */
static void rdma_checked(void *arg, int rc, const char *why)
{
	struct rdzv_member *m = arg;

	m->rdma_checking = 0;
	if (rc < 0) {
		rdma_failed(m, rc, why);
		return;
	}
	m->res.rdma_verified = 1;
	rc = put_verify(m, &m->c2, RDZV_VERIFY, 0);
	if (rc < 0)
		rdzv_mb_fail(m, &m->c2, gx_strerror(rc));
}

/* Phase 2 authenticated: the RDMA-CM check first when both ends have a device. */
static int send_verify(struct rdzv_member *m, struct mconn *c)
{
	const struct rdzv_rdma_ops *ops = m->cfg.rdma;
	int rc;

	if (!rdma_check_due(m))
		return put_verify(m, c, RDZV_VERIFY, 0);
	rc = ops->check(ops->arg, m->ev, &m->self, &m->res.coord, m->cfg.port,
			gx_now_ms() + RDZV_HANDSHAKE_MS, rdma_checked, m);
	if (rc < 0) {
		rdma_failed(m, rc, NULL);
		return 1;
	}
	m->rdma_checking = 1;
	return 0;
}

/*
 * Phase 2 with the ASSIGN's ticket: no HELLO, CHALLENGE, AUTH, PROOF. The
 * ticket key comes from the phase-1 session, which proved both sides, so a VERIFY MAC'd
 * under it proves this member and the VERIFIED MAC'd back proves the coordinator. Used
 * once; any phase-2 failure ends it (rdzv_mb_fail2): the retry does the full handshake.
 * With RDMA-CM due, the TVERIFY only opens the session (RDZV_VF_RDMA_PENDING): the check
 * runs now, after this TCP connection filled the neighbour cache on both ends, and VERIFY
 * follows in the session as after a PROOF. Returns 1 when the check failed at once (phase
 * 2 already failed).
 */
int rdzv_mb_send_tverify(struct rdzv_member *m, struct mconn *c)
{
	int due = rdma_check_due(m), rc;

	rdzv_conn_session_ticket(&c->rc, m->vkey);
	rdzv_mb_ticket_end(m);
	rc = put_verify(m, c, RDZV_TVERIFY, due ? RDZV_VF_RDMA_PENDING : 0);
	if (rc == 0 && due)
		rc = send_verify(m, c);
	return rc;
}

static int on_proof(struct rdzv_member *m, struct mconn *c, const struct rdzv_msg *msg)
{
	int early;

	if (!msg->has_proof ||
	    rdzv_proof_verify(m->k, 1, c->rc.nm, c->rc.nc, m->job_id, msg->proof) < 0) {
		auth_fail(m, c, m->has_token ? "wrong proof of the token" : "wrong proof");
		return 1;
	}
	early = rdzv_conn_early(&c->rc); /* JOIN / VERIFY already went with the AUTH */
	rdzv_conn_session(&c->rc, m->k);
	m->ever_answered = 1;
	m->auth_failed = 0;
	/*
	 * The coordinator proved the token: from here its silence is slowness, not death
	 * Reconnecting would put us at the back of its queue (N=16384: the
	 * retry storm), and 512 pods on 2 cores lost 109 COMMITs to a 23 s COMMIT loop
	 * after 16 s of silence. TCP keepalive finds a coordinator that went away.
	 */
	if (c->phase == 1 && rdzv_mb_keepalive(c, M_KA_IDLE_S, M_KA_INTVL_S, M_KA_CNT) < 0)
		gx_debug("rdzv: no keepalive on phase 1: its silence limits stay");
	if (c->phase == 1 && m->c1_relay)
		m->c1_up = 1; /* through our relay: a drop from now on is the relay's */
	if (early) {
		if (c->phase == 1) /* our children's records follow the JOIN */
			rdzv_mb_relay_push(m);
		return 0;
	}
	return c->phase == 1 ? send_join(m, c) : send_verify(m, c);
}

/* ---- phase 1 session messages ---- */
static int check_coord(struct rdzv_member *m, struct rdzv_msg *msg)
{
	struct rdzv_peer *co = &msg->peer;
	char why[160], master[46];

	if (msg->has_peer && (co->flags & RDZV_PF_VFAILED) && m->cfg.soft_verify &&
	    !msg->master[0] && !co->addr4[0] && !co->addr6[0] &&
	    rdzv_peer_check(co, why, sizeof(why)) == 0 && strcmp(co->name, m->cfg.names[0]) == 0 &&
	    msg->world == m->cfg.world &&
	    (m->self.index == RDZV_ELASTIC || msg->rank == m->self.index))
		return 0; /* check: the coordinator has no secondary; it stays in, flagged */
	if (!msg->has_peer || rdzv_peer_check(co, why, sizeof(why)) < 0 ||
	    strcmp(co->name, m->cfg.names[0]) != 0 ||
	    (m->self.index == RDZV_ELASTIC ? msg->rank < 1 || msg->rank >= m->cfg.world
					   : msg->rank != m->self.index) ||
	    msg->world != m->cfg.world || gx_addr_normalize(msg->master, master, sizeof(master)) ||
	    (strcmp(master, co->addr4) != 0 && strcmp(master, co->addr6) != 0))
		return GX_EPROTO;
	gx_strlcpy(msg->master, master, sizeof(msg->master));
	return 0;
}

static int on_assign(struct rdzv_member *m, struct rdzv_msg *msg)
{
	if (m->st != M_CONNECT || check_coord(m, msg) < 0)
		return GX_EPROTO;
	m->round = msg->round;
	m->res.round = msg->round;
	m->res.coord = msg->peer;
	/* the phase-2 ticket; with RDMA-CM due the check follows the ticket's TCP connect
	 * (rdzv_mb_send_tverify) */
	m->vt = msg->has_vticket && (m->self.flags & RDZV_PF_OBSERVER) == 0;
	if (m->vt)
		rdzv_ticket_key(m->c1.rc.skey, msg->vticket, m->vkey);
	m->res.rank = (int)msg->rank;
	m->res.world = msg->world;
	gx_strlcpy(m->res.master_addr, msg->master, sizeof(m->res.master_addr));
	m->res.t_joined_ms = gx_now_ms();
	m->res.via_relay = m->c1_relay;
	m->redirect[0] = '\0';
	m->c1.deadline = 0;
	m->attempt1 = 0;
	m->st = M_ASSIGNED;
	gx_debug("rdzv: %s: rank %u of %u, master %s", m->self.name, msg->rank, msg->world,
		 m->res.master_addr);
	if (m->self.flags & RDZV_PF_OBSERVER)
		m->st = M_VERIFIED; /* no phase 2: wait for the COMMIT and its table */
	else if (!m->self.nd_err)   /* otherwise only wait for the ABORT naming us */
		rdzv_mb_p2_connect(m);
	return 0;
}

static int take_table(struct rdzv_member *m, const struct rdzv_msg *msg)
{
	size_t off = 0, i = 0;
	const unsigned char *v;
	uint16_t t, n;
	char why[160];

	if (m->cfg.elastic ? msg->ntable < 1 || msg->ntable > m->cfg.world
			   : msg->ntable != m->cfg.world)
		return GX_EPROTO;
	m->res.table = calloc(m->cfg.world, sizeof(*m->res.table));
	if (!m->res.table)
		return -ENOMEM;
	while (rdzv_tlv_next(msg->table, msg->table_len, &off, &t, &v, &n) == 1) {
		struct rdzv_peer *p = &m->res.table[i];

		if (t != T_ENTRY)
			continue;
		if (i >= msg->ntable || rdzv_peer_decode(v, n, p) < 0 ||
		    rdzv_peer_check(p, why, sizeof(why)) < 0 || p->index != i ||
		    (i < (m->cfg.elastic ? m->cfg.nnames : m->cfg.world) && !msg->jworld &&
		     strcmp(p->name, m->cfg.names[i]) != 0))
			return GX_EPROTO;
		i++;
	}
	m->res.ntable = i;
	return i == msg->ntable ? 0 : GX_EPROTO;
}

/*
 * cfg.stay: keep the phase-1 session for the job-end notice. Its silence is
 * no longer watched by our tick (the coordinator stops pushing WAITING):
 * TCP keepalive finds a coordinator whose node went away.
 */
static void stay(struct rdzv_member *m)
{
	int rc;

	rdzv_mb_cancel_timers(m);
	rdzv_mb_close(m, &m->c2);
	m->st = M_STAYING;
	rc = rdzv_mb_keepalive(&m->c1, 30, 10, 3);
	if (rc < 0)
		gx_debug("rdzv: keepalive on the coordinator's session: %s", gx_strerror(rc));
	m->done(m->arg, 0, &m->res);
}

void rdzv_mb_ended(struct rdzv_member *m, int status, const char *why)
{
	if (m->st != M_STAYING)
		return;
	m->st = M_DONE;
	rdzv_mb_relay_free(m); /* its children's path is gone */
	rdzv_mb_close(m, &m->c1);
	if (m->relay_only) /* we stayed only to carry: no job-end notice was asked for */
		return;
	if (m->cfg.ended)
		m->cfg.ended(m->cfg.ended_arg, status, why);
}

int rdzv_member_end(struct rdzv_member *m, int status)
{
	struct rdzv_buf b = {0};

	if (!m || m->st != M_STAYING || m->c1.rc.state != RC_SESSION)
		return -ENOTCONN;
	rdzv_put_u32(&b, T_CODE, (uint32_t)(status & 0xff));
	return rdzv_mb_send(m, &m->c1, RDZV_END, &b);
}

int rdzv_member_flushed(const struct rdzv_member *m)
{
	return !m || m->c1.rc.f.fd < 0 || !rdzv_conn_pending(&m->c1.rc);
}

static int on_commit(struct rdzv_member *m, struct rdzv_msg *msg)
{
	int rc;

	if (m->st != M_ASSIGNED && m->st != M_VERIFIED)
		return GX_EPROTO;
	if (msg->round != m->round || check_coord(m, msg) < 0 ||
	    strcmp(msg->master, m->res.master_addr) != 0)
		return GX_EPROTO;
	if (m->cfg.full_table && !m->res.table) {
		rc = take_table(m, msg);
		if (rc < 0)
			return rc;
	}
	rc = rdzv_mb_pf_commit(m, msg); /* the job rank and world after a preflight */
	if (rc < 0)
		return rc;
	m->res.t_commit_ms = gx_now_ms();
	if (!m->res.t_verified_ms)
		m->res.t_verified_ms = m->res.t_commit_ms;
	if (m->relay && !m->cfg.stay) {
		/* our children's COMMITs follow ours on this session: carry them, then go
		 * (rdzv_member_relaying tells the caller when; done() comes now) */
		rdzv_mb_cancel_timers(m);
		rdzv_mb_close(m, &m->c2);
		m->st = M_STAYING;
		rdzv_mb_relay_stay(m);
		m->done(m->arg, 0, &m->res);
		return 1;
	}
	if (m->cfg.stay) {
		stay(m);
		return 1;
	}
	rdzv_mb_finish(m, 0, NULL);
	return 1;
}

static int abort_code(int code)
{
	switch (code) {
	case GX_EPEERS:
	case GX_ERDZV:
	case GX_ECONFLICT:
	case GX_EAUTH:
	case GX_EPREFLIGHT:
	case GX_ELEFTOUT:
		return code;
	default:
		return GX_EABORTED;
	}
}

static int on_session1(struct rdzv_member *m, struct mconn *c, struct rdzv_msg *msg)
{
	char text[sizeof(msg->text)];
	struct rdzv_buf b = {0};

	switch (msg->type) {
	case RDZV_ASSIGN:
		return on_assign(m, msg);
	case RDZV_COMMIT:
		return on_commit(m, msg);
	case RDZV_ABORT:
		rdzv_sanitize(text, sizeof(text), msg->text);
		rdzv_mb_finish(m, abort_code(msg->code), "%s",
			       text[0] ? text : "aborted by the coordinator");
		return 1;
	case RDZV_WAITING:
		rdzv_sanitize(text, sizeof(text), msg->text);
		snprintf(m->res.waiting, sizeof(m->res.waiting), "waiting for %.1000s", text);
		return 0;
	case RDZV_PING:
		return rdzv_mb_send(m, c, RDZV_PONG, &b);
	case RDZV_PREFLIGHT:
		rdzv_mb_pf_recv(m, msg);
		return 0;
	case RDZV_END:
		if (m->st != M_STAYING)
			return 0;
		rdzv_mb_ended(m, (int)(msg->code & 0xff), NULL);
		return 1;
	default:
		return 0; /* unknown: skipped */
	}
}

static int on_verified(struct rdzv_member *m, struct mconn *c, const struct rdzv_msg *msg)
{
	char text[sizeof(msg->text)];

	if (msg->type != RDZV_VERIFIED)
		return 0;
	if (msg->code != 0) {
		rdzv_sanitize(text, sizeof(text), msg->text);
		rdzv_mb_fail(m, c, text[0] ? text : "verification refused");
		return 1;
	}
	rdzv_mb_close(m, c);
	m->err2[0] = '\0';
	if (m->st == M_ASSIGNED) {
		m->st = M_VERIFIED;
		m->res.t_verified_ms = gx_now_ms();
	}
	return 1;
}

/* A REJECT nothing authenticated: its reason bounded, quoted and marked as the sender's. */
static void reject_text(char *out, size_t outlen, const struct rdzv_msg *msg)
{
	if (msg->code == GX_EVERSION)
		gx_strlcpy(out, "(protocol version)", outlen);
	else
		rdzv_quote_unauth(out, outlen, "the coordinator",
				  msg->text[0] ? msg->text : "no reason given");
}

int rdzv_mb_on_frame(struct rdzv_member *m, struct mconn *c, uint16_t type,
		     const unsigned char *body, size_t len)
{
	struct rdzv_msg *msg;
	char text[sizeof(msg->text)];
	int rc = GX_EPROTO;

	if (type == RDZV_CARRY) { /* records for our children, not TLVs (rdzv_relay.c) */
		if (c != &m->c1 || c->rc.state != RC_SESSION || !m->relay)
			return GX_EPROTO;
		c->last_rx = gx_now_ms();
		return rdzv_mb_relay_carry(m, body, len);
	}
	msg = malloc(sizeof(*msg));
	if (!msg || rdzv_msg_decode(type, body, len, msg) < 0)
		goto out;
	c->last_rx = gx_now_ms();
	if (type == RDZV_REJECT && m->has_token && !rdzv_conn_up(&c->rc)) {
		/* in clear: anyone on the path can send it; it cannot end a member that holds a
		 * token: retried until the deadline, reported if it persists, its
		 * words quoted as someone else's */
		reject_text(m->rejected, sizeof(m->rejected), msg);
		m->reject_code = msg->code;
		m->reject_phase = c->phase;
		rdzv_mb_fail(m, c, m->rejected);
		rc = 1;
	} else if (type == RDZV_REJECT && (!m->has_token || !rdzv_conn_up(&c->rc))) {
		/* no token: nothing proves who sent it (the job id is public) */
		reject_text(text, sizeof(text), msg);
		if (msg->code == GX_EVERSION)
			rdzv_mb_finish(m, GX_EVERSION, "coordinator %s refused protocol %u.%u",
				       m->cfg.coord_name, RDZV_VMAJOR, RDZV_VMINOR);
		else
			rdzv_mb_finish(m, GX_EREJECTED, "coordinator %s rejected our %s %s",
				       m->cfg.coord_name, c->phase == 1 ? "JOIN" : "VERIFY", text);
		rc = 1;
	} else if (type == RDZV_REJECT && msg->code == RDZV_RJ_RELAY && c->phase == 1) {
		rc = rdzv_mb_redirected(m, msg); /* no room here: through a relay */
	} else if (type == RDZV_REJECT) { /* MAC'd under our token's session: the coordinator */
		rdzv_sanitize(text, sizeof(text), msg->text);
		rdzv_mb_finish(m, GX_EREJECTED, "coordinator %s rejected our %s: %s",
			       m->cfg.coord_name, c->phase == 1 ? "JOIN" : "VERIFY",
			       text[0] ? text : "no reason given");
		rc = 1;
	} else if (c->rc.state == RC_HELLO && type == RDZV_CHALLENGE) {
		rc = on_challenge(m, c, msg);
	} else if (c->rc.state == RC_AUTH && type == RDZV_PROOF) {
		rc = on_proof(m, c, msg);
	} else if (c->rc.state == RC_SESSION) {
		rc = c->phase == 1 ? on_session1(m, c, msg) : on_verified(m, c, msg);
	}
out:
	free(msg);
	return rc;
}

/* ---- the preflight: PREFLIGHT frames, and a COMMIT's job rank ---- */
static void rdzv_mb_pf_recv(struct rdzv_member *m, const struct rdzv_msg *msg)
{
	if (m->cfg.pf_recv && msg->pf && (m->st == M_ASSIGNED || m->st == M_VERIFIED))
		m->cfg.pf_recv(m->cfg.pf_arg, 0, msg->pf, msg->pflen);
}

int rdzv_member_pf_send(struct rdzv_member *m, const void *p, size_t len)
{
	struct rdzv_buf b = {0};

	if (!m || m->c1.rc.state != RC_SESSION || (m->st != M_ASSIGNED && m->st != M_VERIFIED))
		return -ENOTCONN;
	if (len > RDZV_PF_DATA_MAX)
		return -EMSGSIZE;
	rdzv_put(&b, T_PFDATA, p, len);
	return rdzv_mb_send(m, &m->c1, RDZV_PREFLIGHT, &b);
}

/* A COMMIT's job rank, world and note, after a preflight. */
static int rdzv_mb_pf_commit(struct rdzv_member *m, const struct rdzv_msg *msg)
{
	if (msg->text[0])
		rdzv_sanitize(m->res.note, sizeof(m->res.note), msg->text);
	if (!msg->jworld)
		return msg->has_jrank ? GX_EPROTO : 0;
	if (msg->jworld > m->cfg.world || (msg->has_jrank && msg->jrank >= msg->jworld))
		return GX_EPROTO;
	if (msg->has_jrank)
		m->res.rank = (int)msg->jrank;
	m->res.world = msg->jworld;
	return 0;
}
