/* SPDX-License-Identifier: MIT */
/*
 * test_agent_fabric_conn.c - whose a connection is (agent/fabric/fabric_conn.c), on a fake
 * kernel: the dumps and the fd tables of CMD's tree are what each step says. A connection is
 * judged by the fd tables read right after the dump that first shows it, so one of CMD's that
 * closes before the next dump keeps its bytes (a small Gloo job's bulk connection lives about
 * 0.3 s); one closed before its holder could be read is counted apart, never dropped as
 * another process's; "not CMD's" needs a later dump that still has it open; a failed read
 * judges nothing; a child not accepted yet asks for another dump. And the pace of the dumps
 * on a change.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>

#include "agent/fabric/fabric_int.h"

#define MB (1000u * 1000u)

struct fake {
	struct fabric_sock socks[8]; /* the next dump */
	size_t nsocks;
	struct fabric_owner held[8]; /* CMD's fd tables now, by inode */
	size_t nheld;
	int scans, scan_fail, owned;
	int closed;
	uint64_t closed_bytes;
	pid_t closed_pid;
};

static int fake_dump(void *arg, fabric_sock_fn *fn, void *fn_arg)
{
	struct fake *k = arg;
	size_t i;

	for (i = 0; i < k->nsocks; i++)
		fn(fn_arg, &k->socks[i]);
	return 0;
}

static int fake_scan(void *arg, struct fabric_owner **v, size_t *n)
{
	struct fake *k = arg;

	k->scans++;
	if (k->scan_fail)
		return -EIO;
	*v = NULL;
	*n = k->nheld;
	if (!k->nheld)
		return 0;
	*v = malloc(k->nheld * sizeof(**v));
	assert_non_null(*v);
	memcpy(*v, k->held, k->nheld * sizeof(**v)); /* the tests keep them sorted */
	return 0;
}

static int place_cls = FR_PRIMARY;

static void fake_place(void *arg, struct fabric_conn *c, const struct fabric_sock *s)
{
	(void)arg;
	(void)s;
	c->ifx = 0;
	c->cls = place_cls;
}

static void fake_owned(void *arg, const struct fabric_conn *c)
{
	struct fake *k = arg;

	assert_true(c->owner == FC_CMD && c->pid > 0);
	k->owned++;
}

static void fake_closed(void *arg, const struct fabric_conn *c)
{
	struct fake *k = arg;

	k->closed++;
	k->closed_bytes += c->bytes;
	k->closed_pid = c->pid;
}

struct bench {
	struct fake k;
	struct fabric_conn_ops ops;
	struct fabric_conns t;
	int64_t now; /* ms */
};

static void setup(struct bench *b)
{
	memset(b, 0, sizeof(*b));
	b->ops.dump = fake_dump;
	b->ops.scan = fake_scan;
	b->ops.place = fake_place;
	b->ops.owned = fake_owned;
	b->ops.closed = fake_closed;
	b->ops.arg = &b->k;
	b->t.ops = &b->ops;
	b->now = 100000;
	place_cls = FR_PRIMARY;
}

/* a tick later */
static int sample(struct bench *b)
{
	b->now += FABRIC_TICK_MS;
	return agent_fabric_conns_sample(&b->t, b->now);
}

static struct fabric_sock sock(uint64_t cookie, uint32_t inode, int state, uint64_t bytes)
{
	struct fabric_sock s;

	memset(&s, 0, sizeof(s));
	s.cookie = cookie;
	s.inode = inode;
	s.family = 2;
	s.state = state;
	s.have_bytes = 1;
	s.bytes_received = bytes;
	return s;
}

/* what the next dump has (n sockets) and what CMD's fd tables hold */
static void dump_has(struct bench *b, size_t n, const struct fabric_sock *v)
{
	b->k.nsocks = n;
	if (n)
		memcpy(b->k.socks, v, n * sizeof(*v));
}

static void held(struct bench *b, uint32_t ino, pid_t pid)
{
	b->k.held[b->k.nheld].ino = ino;
	b->k.held[b->k.nheld++].pid = pid;
}

static const struct fabric_conn *find(const struct bench *b, uint64_t cookie)
{
	const struct fabric_conn *c = b->t.bucket[cookie % FABRIC_CONN_BUCKETS];

	while (c && c->cookie != cookie)
		c = c->next;
	return c;
}

/* CMD's connection, open through one dump only: the fd tables read right after that dump
 * name it, and its destroy event's bytes are CMD's */
static void test_read_at_its_dump(void **state)
{
	struct fabric_sock a = sock(7, 100, TCP_ESTABLISHED, 12 * MB), gone = a;
	struct bench b;

	(void)state;
	setup(&b);
	dump_has(&b, 1, &a);
	held(&b, 100, 42);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 1);
	assert_int_equal(b.k.owned, 1);
	assert_int_equal(find(&b, 7)->owner, FC_CMD);
	/* the job ends: the kernel's last word, then a dump without it */
	gone.inode = 0;
	gone.bytes_received = 250 * MB;
	agent_fabric_conns_destroyed(&b.t, &gone);
	b.k.nheld = 0;
	dump_has(&b, 0, NULL);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 1); /* nothing new: no read */
	assert_int_equal(b.k.closed, 1);
	assert_int_equal(b.k.closed_bytes, 250 * MB);
	assert_int_equal(b.k.closed_pid, 42);
	assert_int_equal(b.t.unseen_bytes, 0);
	assert_int_equal(b.t.n, 0);
	agent_fabric_conns_free(&b.t);
}

/* What the watcher saw of a small Gloo job's bulk connection on eth0: the fd tables were read
 * for the job's store connections one tick before the dump that first shows it (its holder
 * already moved 139 of 251 MB); it is orphaned (FIN_WAIT1, no inode) by the next dump and
 * then freed. Read right after the dump that showed it, it is CMD's, from its process, and
 * keeps the kernel's last count; never another process's. */
static void test_peer_after_a_read(void **state)
{
	struct fabric_sock store = sock(5, 90, TCP_ESTABLISHED, 800),
			   bulk = sock(7, 100, TCP_ESTABLISHED, 139 * MB), v[2];
	struct bench b;

	(void)state;
	setup(&b);
	place_cls = FR_SECONDARY;
	held(&b, 90, 41);
	dump_has(&b, 1, &store);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 1);
	place_cls = FR_PRIMARY;
	held(&b, 100, 42);
	v[0] = store;
	v[1] = bulk;
	dump_has(&b, 2, v);
	assert_int_equal(sample(&b), 0); /* one tick after the last read */
	assert_int_equal(b.k.scans, 2);
	assert_int_equal(find(&b, 7)->owner, FC_CMD);
	assert_int_equal(find(&b, 7)->pid, 42);
	assert_int_equal(b.k.owned, 2);
	/* the worker closes it and exits */
	b.k.nheld = 1;
	v[1].inode = 0;
	v[1].state = TCP_FIN_WAIT1;
	v[1].bytes_received = 250 * MB;
	dump_has(&b, 2, v);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(find(&b, 7)->owner, FC_CMD);
	v[1].bytes_received = 251 * MB;
	agent_fabric_conns_destroyed(&b.t, &v[1]);
	dump_has(&b, 1, &store);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.closed, 1);
	assert_int_equal(b.k.closed_bytes, 251 * MB);
	assert_int_equal(b.k.closed_pid, 42);
	assert_int_equal(b.t.unseen_conns, 0);
	agent_fabric_conns_free(&b.t);
}

/* Closed between the dump and the read of the fd tables: whose, nobody can say; its bytes are
 * counted apart, not dropped as another process's. */
static void test_closed_before_read(void **state)
{
	struct fabric_sock a = sock(7, 100, TCP_ESTABLISHED, 139 * MB), gone = a;
	struct bench b;

	(void)state;
	setup(&b);
	dump_has(&b, 1, &a);
	assert_int_equal(sample(&b), 0); /* its fd is already gone */
	assert_int_equal(b.k.scans, 1);
	assert_int_equal(find(&b, 7)->owner, FC_UNKNOWN);
	gone.inode = 0;
	gone.bytes_received = 251 * MB;
	agent_fabric_conns_destroyed(&b.t, &gone);
	dump_has(&b, 0, NULL);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.closed, 0);
	assert_int_equal(b.t.unseen_conns, 1);
	assert_int_equal(b.t.unseen_bytes, 251 * MB);
	agent_fabric_conns_free(&b.t);
}

/* The same, orphaned first (FIN_WAIT with no inode), then gone. */
static void test_orphaned_before_read(void **state)
{
	struct fabric_sock a = sock(7, 100, TCP_ESTABLISHED, 5 * MB);
	struct bench b;

	(void)state;
	setup(&b);
	dump_has(&b, 1, &a);
	assert_int_equal(sample(&b), 0);
	a.inode = 0;
	a.state = TCP_FIN_WAIT1;
	a.bytes_received = 9 * MB;
	dump_has(&b, 1, &a);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(find(&b, 7)->owner, FC_UNKNOWN); /* no proof it was another's */
	dump_has(&b, 0, NULL);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.t.unseen_bytes, 9 * MB);
	assert_int_equal(b.k.closed, 0);
	agent_fabric_conns_free(&b.t);
}

/* Not in CMD's fd tables and still open at the next dump: another process's (gxboot's own
 * session), judged without another read; its bytes are nobody's count. */
static void test_open_through_read(void **state)
{
	struct fabric_sock s = sock(9, 200, TCP_ESTABLISHED, 4000);
	struct bench b;

	(void)state;
	setup(&b);
	dump_has(&b, 1, &s);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(find(&b, 9)->owner, FC_UNKNOWN);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(find(&b, 9)->owner, FC_OTHER);
	assert_int_equal(b.k.scans, 1);
	dump_has(&b, 0, NULL);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.t.unseen_bytes, 0);
	assert_int_equal(b.k.closed, 0);
	assert_int_equal(b.k.owned, 0);
	agent_fabric_conns_free(&b.t);
}

/* A read that failed judges nothing: the next dump reads again, and finds it. */
static void test_failed_read(void **state)
{
	struct fabric_sock s = sock(9, 200, TCP_ESTABLISHED, 4000);
	struct bench b;

	(void)state;
	setup(&b);
	held(&b, 200, 77);
	b.k.scan_fail = 1;
	dump_has(&b, 1, &s);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(find(&b, 9)->owner, FC_UNKNOWN);
	assert_true(b.t.need_scan);
	b.k.scan_fail = 0;
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 2);
	assert_int_equal(find(&b, 9)->owner, FC_CMD);
	assert_int_equal(find(&b, 9)->pid, 77);
	assert_false(b.t.need_scan);
	agent_fabric_conns_free(&b.t);
}

/* An accepted child before its accept has no inode: the table asks for another dump, which
 * finds it with its inode and reads its holder. An orphan asks for nothing. */
static void test_unaccepted(void **state)
{
	struct fabric_sock v[2] = {sock(11, 0, TCP_ESTABLISHED, 1),
				   sock(12, 0, TCP_FIN_WAIT2, 300)};
	struct bench b;

	(void)state;
	setup(&b);
	dump_has(&b, 2, v);
	assert_int_equal(sample(&b), 0);
	assert_true(b.t.unaccepted);
	assert_int_equal(b.t.n, 0);
	assert_int_equal(b.k.scans, 0);
	v[0].inode = 300;
	v[0].bytes_received = 2 * MB;
	held(&b, 300, 50);
	dump_has(&b, 2, v);
	assert_int_equal(sample(&b), 0);
	assert_false(b.t.unaccepted);
	assert_int_equal(find(&b, 11)->owner, FC_CMD);
	assert_null(find(&b, 12));
	v[1].state = TCP_CLOSE_WAIT; /* a child whose peer closed before the accept */
	dump_has(&b, 1, &v[1]);
	assert_int_equal(sample(&b), 0);
	assert_true(b.t.unaccepted);
	agent_fabric_conns_free(&b.t);
}

/* A socket the fd tables already held when it first shows in a dump (opened, then connected
 * after the read) is CMD's without another read. */
static void test_held_before_dump(void **state)
{
	struct fabric_sock a = sock(7, 100, TCP_ESTABLISHED, 10), c = sock(8, 101, TCP_SYN_SENT, 0);
	struct bench b;

	(void)state;
	setup(&b);
	held(&b, 100, 42);
	held(&b, 101, 42);
	dump_has(&b, 1, &a);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 1);
	dump_has(&b, 1, &c);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 1);
	assert_int_equal(find(&b, 8)->owner, FC_CMD);
	assert_int_equal(b.k.closed, 1); /* 7 closed */
	agent_fabric_conns_free(&b.t);
	assert_int_equal(b.t.n, 0);
}

/* A loopback socket's holder can wait (never peer traffic; a local store may churn): read at
 * most every FABRIC_SCAN_MS, while one to a peer is read at the dump that shows it. */
static void test_loopback_waits(void **state)
{
	struct fabric_sock v[3] = {sock(1, 10, TCP_ESTABLISHED, 50),
				   sock(2, 11, TCP_ESTABLISHED, 60),
				   sock(3, 12, TCP_ESTABLISHED, 70)};
	struct bench b;

	(void)state;
	setup(&b);
	place_cls = FR_LOOPBACK;
	held(&b, 10, 5);
	dump_has(&b, 1, v);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 1); /* the first read is due */
	held(&b, 11, 5);		/* opened after that read */
	dump_has(&b, 2, v);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 1); /* 50 ms after the last read: waits */
	assert_int_equal(find(&b, 2)->owner, FC_UNKNOWN);
	assert_false(agent_fabric_conns_wants(&b.t, b.now));
	b.now += FABRIC_SCAN_MS;
	assert_true(agent_fabric_conns_wants(&b.t, b.now));
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 2);
	assert_int_equal(find(&b, 2)->owner, FC_CMD);
	place_cls = FR_SECONDARY;
	held(&b, 12, 6);
	dump_has(&b, 3, v);
	assert_int_equal(sample(&b), 0);
	assert_int_equal(b.k.scans, 3); /* to a peer: at once */
	assert_int_equal(find(&b, 3)->pid, 6);
	agent_fabric_conns_free(&b.t);
}

/*
 * Dumps on a change: one every tick for a burst after a quiet spell, then one per gap. A job's
 * start changes the sockets at 8 ticks in a row (its store's connections, then its pairs' a
 * few ticks later, then the bulk one): each is dumped at its tick, and the bulk connection is
 * seen while it is young (with a burst of 3 the pairs' dump waited 240 ms for credit).
 */
static void test_pace(void **state)
{
	struct fabric_pace p = {.credit = FABRIC_DUMP_BURST * 250, .last = 0};
	int64_t t = 0;
	int n = 0, i;

	(void)state;
	for (i = 0; i < 8; i++) /* a job's start */
		assert_true(agent_fabric_pace(&p, t += FABRIC_TICK_MS, 250, 1));
	while (agent_fabric_pace(&p, t += FABRIC_TICK_MS, 250, 1))
		assert_true(++i < 2 * FABRIC_DUMP_BURST);
	for (i = 0; i < 100; i++) /* then 5 s of changes: one a gap */
		n += agent_fabric_pace(&p, t += 50, 250, 1);
	assert_true(n >= 19 && n <= 21);
	assert_false(agent_fabric_pace(&p, t += 50, 250, 0)); /* no change: no dump */
	/* quiet for 10 s: the burst again, not 40 dumps owed */
	for (i = 0; i < 200; i++)
		assert_false(agent_fabric_pace(&p, t += 50, 250, 0));
	n = 0;
	for (i = 0; i < FABRIC_DUMP_BURST + 2; i++)
		n += agent_fabric_pace(&p, t += 1, 250, 1);
	assert_int_equal(n, FABRIC_DUMP_BURST);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_at_its_dump),   cmocka_unit_test(test_peer_after_a_read),
	    cmocka_unit_test(test_closed_before_read), cmocka_unit_test(test_orphaned_before_read),
	    cmocka_unit_test(test_open_through_read),  cmocka_unit_test(test_failed_read),
	    cmocka_unit_test(test_unaccepted),	       cmocka_unit_test(test_held_before_dump),
	    cmocka_unit_test(test_loopback_waits),     cmocka_unit_test(test_pace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
