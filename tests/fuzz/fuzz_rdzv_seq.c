/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rdzv_seq.c - libFuzzer target for the coordinator's state machine: a
 * SEQUENCE of messages from up to four member connections. A real coordinator
 * (rdzv_coord_start, world 3, a token, listening on 127.0.0.1:<ephemeral>) runs
 * in a gx_ev loop; each connection is a loopback TCP connection to it (a
 * socketpair through rdzv_co_conn_new would be smaller, but VERIFY checks that it
 * arrived on the coordinator's secondary address, which a UNIX socket has not).
 * Connections close with SO_LINGER 0 (RST), so no TIME_WAIT piles up over
 * millions of runs. The harness plays honest members as far as the input says: it does
 * the real handshake (so the fuzzer reaches the session, past the MAC), then
 * sends what the input asks for - well-formed JOIN / VERIFY / VFAIL / PONG
 * built from input bytes, raw MAC'd frames of any type and body, unframed
 * garbage, closes - and after every step lets the coordinator run once and
 * reads everything it answered (the ASSIGN's round id is kept, so VERIFY can
 * match it and COMMIT, conflicts and aborts are reachable).
 *
 * Input: a list of ops, each one byte (op = b % 8, connection = (b / 8) % 4)
 * followed by its arguments:
 *   0 OPEN  who/bad     handshake as job-worker-<who % 4> (3: a name not in the
 *                       job); bad 1: wrong job id, 2: wrong token, 3: no AUTH
 *   1 JOIN  inc flags a  entry of the connection's name (incarnation inc,
 *                       RDZV_PF_* flags, addr4 127.0.0.a or none, nd_err bit, a & 0x40:
 *                       RDZV_PF_RELAY, so FRAMEs of type 22 (CARRY) reach rdzv_co_carry)
 *   2 VERIFY inc flags  with the round from ASSIGN (flags & 0x80: a wrong round);
 *                       the only op besides OPEN on a closed connection, for this:
 *                       flags & 0x40: as TVERIFY on a new connection under a ticket
 *                       an ASSIGN handed out (the connection's own, else the first
 *                       connection's that holds one; flags & 0x20: a wrong key), the
 *                       connection taking that member's name (its own ticket is stale
 *                       then: the new connection replaced its phase-1 session);
 *                       flags & 3: T_FLAGS (2 on a TVERIFY: VERIFY follows in its session)
 *   3 FRAME type len body...   raw frame (MAC'd in a session)
 *   4 CLOSE
 *   5 RAW   len bytes...       unframed bytes on the socket
 *   6 PONG
 *   7 VFAIL len text...
 */
#include "rdzv/rdzv_coord_int.h"

#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NCONN 4
#define WORLD 3
#define JOB "job-fuzz"

static const unsigned char TOKEN[] = "fuzz-token-0123456789abcdef0123";

struct fconn {
	struct rdzv_conn c;
	int open;
	uint32_t index;
	char name[32];
	uint64_t round;
	int has_round;
	unsigned char vkey[RDZV_KEY_LEN]; /* the ticket of its last ASSIGN */
	int has_ticket;
};

struct fin {
	const uint8_t *p;
	size_t n, off;
};

struct fz {
	union gx_sockaddr sa; /* the coordinator's listener */
	socklen_t salen;
	struct gx_ev *ev;
	struct rdzv_coord *co;
	int done, rc, was_committed;
	struct fconn fc[NCONN];
	unsigned char k[RDZV_KEY_LEN];
};

static uint8_t in_byte(struct fin *in)
{
	return in->off < in->n ? in->p[in->off++] : 0;
}

static size_t in_take(struct fin *in, size_t want, const uint8_t **p)
{
	size_t left = in->n - in->off;

	if (want > left)
		want = left;
	*p = in->p + in->off;
	in->off += want;
	return want;
}

static void co_done(void *arg, int rc, const struct rdzv_result *res)
{
	struct fz *z = arg;

	(void)res;
	z->done++;
	z->rc = rc;
}

static void stop_now(struct gx_ev *ev, uint64_t id, void *arg)
{
	(void)id;
	(void)arg;
	gx_ev_stop(ev, 0);
}

/*
 * GX_FUZZ_STRICT=1: also stop on a COMMIT made while a member's replacement
 * waits for the PING of its old connection, checked when the COMMIT happens
 * (later JOINs may legitimately wait then). Such a stale COMMIT was once sent; its
 * reproducer is the seed corpus/rdzv_seq/stale_commit.
 */
static void check_strict(struct fz *z)
{
	const char *v = getenv("GX_FUZZ_STRICT");
	int first = z->co->committed && !z->was_committed;
	uint32_t i;

	z->was_committed = z->co->committed;
	if (!v || *v != '1' || !first)
		return;
	for (i = 1; i < WORLD; i++)
		if (z->co->st[i].pending && z->co->st[i].conn)
			abort();
}

/* Let the coordinator handle what is ready, without waiting. */
static void pump(struct fz *z)
{
	int i;

	for (i = 0; i < 2; i++) {
		gx_ev_timer(z->ev, 0, stop_now, NULL);
		gx_ev_run(z->ev);
	}
	check_strict(z);
}

static void fc_close(struct fconn *f)
{
	if (f->open)
		rdzv_conn_reset(&f->c);
	f->open = 0;
}

/* Read every frame the coordinator sent on f; keep the round of ASSIGN. */
static void drain(struct fconn *f)
{
	struct rdzv_msg *m;
	unsigned char *body = NULL;
	uint16_t type;
	size_t len;
	int rc;

	if (!f->open)
		return;
	m = malloc(sizeof(*m));
	while (m && (rc = rdzv_conn_read(&f->c, &type, &body, &len)) == 1) {
		if (rdzv_msg_decode(type, body, len, m) == 0) {
			if (type == RDZV_CHALLENGE && m->has_nonce)
				memcpy(f->c.nc, m->nonce, RDZV_NONCE_LEN);
			if (type == RDZV_ASSIGN) {
				f->round = m->round;
				f->has_round = 1;
				f->has_ticket = m->has_vticket;
				if (m->has_vticket)
					rdzv_ticket_key(f->c.skey, m->vticket, f->vkey);
			}
		}
		free(body);
		body = NULL;
	}
	free(m);
	if (!m || rc < 0)
		fc_close(f);
}

static void fc_send(struct fz *z, struct fconn *f, uint16_t type, const struct rdzv_buf *b)
{
	if (!f->open || b->err)
		return;
	if (rdzv_conn_send(&f->c, type, b->p, b->len) < 0)
		fc_close(f);
	pump(z);
	drain(f);
}

/* A new loopback connection in f (the old one closed), accepted by the coordinator. */
static int fc_connect(struct fz *z, struct fconn *f)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	struct pollfd pf;
	int fd = -1;

	fc_close(f);
	if (gx_tcp_connect(&z->sa, z->salen, NULL, 0, &fd) < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	pf.fd = fd;
	pf.events = POLLOUT;
	if (poll(&pf, 1, 1000) != 1) {
		close(fd);
		return -1;
	}
	pump(z); /* accept */
	memset(f, 0, sizeof(*f));
	rdzv_conn_init(&f->c, fd, 0);
	f->open = 1;
	return 0;
}

static void op_open(struct fz *z, struct fconn *f, struct fin *in)
{
	uint8_t a = in_byte(in), who = a % 4, bad = (a / 4) % 4;
	unsigned char proof[RDZV_MAC_LEN], k[RDZV_KEY_LEN];
	struct rdzv_buf b = {0};

	if (fc_connect(z, f) < 0)
		return;
	f->index = who == 3 ? 7 : who;
	snprintf(f->name, sizeof(f->name), "job-worker-%u", f->index);
	randombytes_buf(f->c.nm, RDZV_NONCE_LEN);
	rdzv_put(&b, T_NONCE, f->c.nm, RDZV_NONCE_LEN);
	rdzv_put_u32(&b, T_HAS_TOKEN, 1);
	rdzv_put_str(&b, T_NAME, f->name);
	rdzv_put_u32(&b, T_INDEX, f->index);
	rdzv_put_str(&b, T_JOB_ID, bad == 1 ? "job-other" : JOB);
	fc_send(z, f, RDZV_HELLO, &b);
	rdzv_buf_free(&b);
	if (!f->open || bad == 3)
		return;
	memcpy(k, z->k, sizeof(k));
	if (bad == 2)
		k[0] ^= 1;
	rdzv_proof(k, 0, f->c.nm, f->c.nc, JOB, proof);
	rdzv_put(&b, T_PROOF, proof, sizeof(proof));
	fc_send(z, f, RDZV_AUTH, &b);
	rdzv_buf_free(&b);
	if (f->open && f->c.state != RC_CLOSED)
		rdzv_conn_session(&f->c, z->k);
	drain(f); /* the PROOF (or a REJECT) came before the session began */
}

static void op_join(struct fz *z, struct fconn *f, struct fin *in)
{
	uint8_t inc = in_byte(in), flags = in_byte(in), a = in_byte(in);
	struct rdzv_buf b = {0};
	struct rdzv_peer p;

	memset(&p, 0, sizeof(p));
	gx_strlcpy(p.name, f->name, sizeof(p.name));
	p.index = flags & 0x40 ? RDZV_ELASTIC : f->index;
	p.incarnation = inc;
	p.flags = (flags & 0x1f) | (a & 0x40 ? RDZV_PF_RELAY : 0); /* a relay: CARRY follows */
	p.slots = 1;
	p.gid_index = -1;
	p.mtu = flags & 0x20 ? 1400 : 1500;
	if (a & 0x80) {
		p.nd_err = GX_ENOSECONDARY;
		gx_strlcpy(p.nd_why, "net1 is down", sizeof(p.nd_why));
	} else {
		gx_strlcpy(p.iface, "lo", sizeof(p.iface));
		snprintf(p.addr4, sizeof(p.addr4), "127.0.0.%u", a % 8);
	}
	rdzv_put_peer(&b, T_PEER, &p);
	fc_send(z, f, RDZV_JOIN, &b);
	rdzv_buf_free(&b);
}

static void op_verify(struct fz *z, struct fconn *f, struct fin *in)
{
	uint8_t inc = in_byte(in), flags = in_byte(in);
	struct rdzv_buf b = {0};
	uint64_t round = f->round;
	size_t i;

	for (i = 0; i < NCONN && !f->has_round; i++)
		if (z->fc[i].has_round)
			round = z->fc[i].round; /* the round is one per rendezvous */
	if (flags & 0x80)
		round ^= 1;
	if (!f->open && !(flags & 0x40))
		return;
	if (flags & 0x40) { /* phase 2 with a ticket: a new connection, no handshake */
		const struct fconn *t = NULL;
		unsigned char vkey[RDZV_KEY_LEN];
		uint32_t index;
		char name[32];

		for (i = 0; i < NCONN; i++)
			if (z->fc[i].has_ticket && (!t || &z->fc[i] == f))
				t = &z->fc[i];
		if (!t)
			return;
		memcpy(vkey, t->vkey, sizeof(vkey));
		vkey[0] ^= (flags & 0x20) != 0;
		index = t->index;
		memcpy(name, t->name, sizeof(name));
		if (fc_connect(z, f) < 0)
			return;
		f->index = index;
		memcpy(f->name, name, sizeof(f->name));
		rdzv_conn_session_ticket(&f->c, vkey);
	}
	rdzv_put_str(&b, T_NAME, f->name);
	rdzv_put_u32(&b, T_INDEX, f->index);
	rdzv_put_u64(&b, T_INCARNATION, inc);
	rdzv_put_u64(&b, T_ROUND, round);
	rdzv_put_u32(&b, T_FLAGS, flags & 3); /* RDZV_VF_RDMA, RDZV_VF_RDMA_PENDING */
	fc_send(z, f, flags & 0x40 ? RDZV_TVERIFY : RDZV_VERIFY, &b);
	rdzv_buf_free(&b);
}

static void op_frame(struct fz *z, struct fconn *f, struct fin *in)
{
	uint8_t type = in_byte(in), lb = in_byte(in);
	struct rdzv_buf b = {0};
	const uint8_t *p;
	size_t n = in_take(in, (size_t)lb * 4, &p);

	rdzv_put_raw(&b, p, n);
	if (n == 0)
		rdzv_put_raw(&b, "", 0);
	fc_send(z, f, type, &b);
	rdzv_buf_free(&b);
}

static void op_raw(struct fz *z, struct fconn *f, struct fin *in)
{
	const uint8_t *p;
	size_t n = in_take(in, in_byte(in), &p);

	if (f->open && n && send(f->c.f.fd, p, n, MSG_NOSIGNAL) < 0)
		fc_close(f);
	pump(z);
	drain(f);
}

static void op_vfail(struct fz *z, struct fconn *f, struct fin *in)
{
	struct rdzv_buf b = {0};
	const uint8_t *p;
	char text[256];
	size_t n = in_take(in, in_byte(in), &p);

	memcpy(text, p, n < sizeof(text) ? n : sizeof(text) - 1);
	text[n < sizeof(text) ? n : sizeof(text) - 1] = '\0';
	rdzv_put_str(&b, T_TEXT, text);
	fc_send(z, f, RDZV_VFAIL, &b);
	rdzv_buf_free(&b);
}

static int fz_start(struct fz *z, char **names)
{
	struct rdzv_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.is_coordinator = 1;
	cfg.world = WORLD;
	cfg.names = names;
	cfg.job_id = JOB;
	cfg.token = TOKEN;
	cfg.token_len = sizeof(TOKEN) - 1;
	cfg.coord_name = names[0];
	cfg.deadline_ms = gx_now_ms() + 60000;
	gx_strlcpy(cfg.self.name, names[0], sizeof(cfg.self.name));
	gx_strlcpy(cfg.self.addr4, "127.0.0.1", sizeof(cfg.self.addr4));
	gx_strlcpy(cfg.self.iface, "lo", sizeof(cfg.self.iface));
	cfg.self.slots = 1;
	cfg.self.gid_index = -1;
	if (gx_addr_parse("127.0.0.1", 0, &cfg.listen_addr, &cfg.listen_addrlen) < 0)
		return -1;
	if (rdzv_auth_key(TOKEN, sizeof(TOKEN) - 1, JOB, z->k) < 0)
		return -1;
	if (rdzv_coord_start(z->ev, &cfg, co_done, z, &z->co) < 0 || z->co->nlfd < 1)
		return -1;
	z->salen = sizeof(z->sa);
	return getsockname(z->co->lsn[0].fd, &z->sa.sa, &z->salen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char n0[] = "job-worker-0", n1[] = "job-worker-1", n2[] = "job-worker-2";
	char *names[WORLD + 1] = {n0, n1, n2, NULL};
	struct fin in = {.p = data, .n = size};
	struct fz z;
	int i, steps = 0;

	if (size > 4096)
		return 0;
	signal(SIGPIPE, SIG_IGN);
	if (!getenv("GX_TEST_LOG"))
		gx_log_set_level(GX_LOG_ERROR); /* every junk frame warns: too slow to print */
	memset(&z, 0, sizeof(z));
	if (gx_ev_new(&z.ev) < 0)
		return 0;
	if (fz_start(&z, names) < 0)
		goto out;
	while (in.off < in.n && steps++ < 64) {
		uint8_t b = in_byte(&in);
		struct fconn *f = &z.fc[(b / 8) % NCONN];

		if (b % 8 != 0 && b % 8 != 2 && !f->open) /* VERIFY may open one (ticket) */
			continue;
		switch (b % 8) {
		case 0:
			op_open(&z, f, &in);
			break;
		case 1:
			op_join(&z, f, &in);
			break;
		case 2:
			op_verify(&z, f, &in);
			break;
		case 3:
			op_frame(&z, f, &in);
			break;
		case 4:
			fc_close(f);
			pump(&z);
			break;
		case 5:
			op_raw(&z, f, &in);
			break;
		case 6: {
			struct rdzv_buf e = {0};

			rdzv_put_raw(&e, "", 0);
			fc_send(&z, f, RDZV_PONG, &e);
			rdzv_buf_free(&e);
			break;
		}
		default:
			op_vfail(&z, f, &in);
			break;
		}
	}
	if (z.done > 1)
		abort(); /* done() is called once */
out:
	for (i = 0; i < NCONN; i++)
		fc_close(&z.fc[i]);
	rdzv_coord_free(z.co);
	gx_ev_free(z.ev);
	return 0;
}
