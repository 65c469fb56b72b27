/* SPDX-License-Identifier: MIT */
/*
 * fabric_conn.c - the namespace's TCP connections by socket cookie, and whose they are
 * (FABRIC.md, "Kernel evidence"): every dump refreshes each connection's bytes; a socket
 * that appears with an inode is CMD's when the fd tables of CMD's tree hold that inode, read
 * right after that dump; a connection absent from a whole dump has closed, and CMD's keep
 * their last bytes. The dump and the fd tables come through ops: the kernel and /proc in the
 * watcher, fakes in the tests.
 *
 * Whose a socket is can be read only while a process holds it: the kernel's destroy event
 * has its cookie and its last bytes, no inode. So a socket is judged by the first fd tables
 * read after the dump that showed it open, and "not CMD's" needs proof that it was still
 * open when they were read: a later dump that has it with its inode (an inode stays with its
 * socket until the last close). One gone or orphaned before that is nobody's to name: its
 * bytes are counted apart (unseen_*), never dropped as another process's.
 */
#include "agent/fabric/fabric_int.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>

static struct fabric_conn **slot(struct fabric_conns *t, uint64_t cookie)
{
	struct fabric_conn **pp = &t->bucket[cookie % FABRIC_CONN_BUCKETS];

	while (*pp && (*pp)->cookie != cookie)
		pp = &(*pp)->next;
	return pp;
}

/* 1 when the last fd tables read hold c's inode: c is CMD's */
static int owner_of(struct fabric_conns *t, struct fabric_conn *c)
{
	const struct fabric_owner *o = agent_fabric_owner_find(t->owners, t->nowners, c->inode);

	if (!o)
		return 0;
	c->owner = FC_CMD;
	c->pid = o->pid;
	if (t->ops->owned)
		t->ops->owned(t->ops->arg, c);
	return 1;
}

static void on_sock(void *arg, const struct fabric_sock *s)
{
	struct fabric_conns *t = arg;
	struct fabric_conn **pp = slot(t, s->cookie), *c = *pp;
	uint64_t b;

	if (!c) {
		/* No struct socket: an orphan never seen open is nobody's; a child its listener
		 * has not accepted yet (an orphan is past ESTABLISHED and CLOSE_WAIT) gets its
		 * inode with the accept, which moves no count: the caller dumps again. */
		if (!s->inode) {
			t->unaccepted |= s->state == TCP_ESTABLISHED || s->state == TCP_CLOSE_WAIT;
			return;
		}
		if (t->n >= FABRIC_CONN_MAX)
			return;
		c = calloc(1, sizeof(*c));
		if (!c)
			return;
		c->cookie = s->cookie;
		c->inode = s->inode;
		c->owner = FC_UNKNOWN;
		t->ops->place(t->ops->arg, c, s);
		/* the fd tables read before may hold it (a socket opened, then connected) */
		if (!owner_of(t, c)) {
			t->need_scan = 1;
			t->need_now |= c->cls != FR_LOOPBACK;
		}
		*pp = c;
		t->n++;
	} else if (c->owner == FC_UNKNOWN && c->missed && s->inode) {
		/* open all through the fd tables that lacked it: a process outside CMD's tree
		 * holds it (gxboot's own, another container's) */
		c->owner = FC_OTHER;
	}
	c->gen = t->gen;
	b = s->have_bytes ? s->bytes_acked + s->bytes_received : 0;
	if (b > c->bytes) /* after close, an orphan's counters only grow */
		c->bytes = b;
}

/* A socket freed: its last counters, when it is one we track (no inode to place a new one). */
void agent_fabric_conns_destroyed(struct fabric_conns *t, const struct fabric_sock *s)
{
	struct fabric_conn *c = *slot(t, s->cookie);
	uint64_t b = s->have_bytes ? s->bytes_acked + s->bytes_received : 0;

	t->freed++;
	if (c && b > c->bytes)
		c->bytes = b;
	if (!c && b) { /* born and gone between two dumps: whose, nobody can say now */
		t->unseen_bytes += b;
		t->unseen_conns++;
	}
}

/* The tree's fd tables, right after the dump: the sockets it showed open whose holder is not
 * known are CMD's, or missed (judged by the next dump). A failed read judges nothing: the
 * next dump reads them again. */
static void scan(struct fabric_conns *t, int64_t now)
{
	struct fabric_owner *o = NULL;
	size_t no = 0, i;

	t->last_scan = now;
	if (t->ops->scan(t->ops->arg, &o, &no) < 0)
		return;
	t->need_scan = t->need_now = 0;
	free(t->owners);
	t->owners = o;
	t->nowners = no;
	for (i = 0; i < FABRIC_CONN_BUCKETS; i++) {
		struct fabric_conn *c;

		for (c = t->bucket[i]; c; c = c->next)
			if (c->owner == FC_UNKNOWN && c->gen == t->gen && !c->missed &&
			    !owner_of(t, c))
				c->missed = 1;
	}
}

/* Connections not in this dump have closed: CMD's go to ops->closed with their last bytes. */
static void sweep(struct fabric_conns *t)
{
	size_t i;

	for (i = 0; i < FABRIC_CONN_BUCKETS; i++) {
		struct fabric_conn **pp = &t->bucket[i];

		while (*pp) {
			struct fabric_conn *c = *pp;

			if (c->gen == t->gen) {
				pp = &c->next;
				continue;
			}
			if (c->owner == FC_CMD) {
				t->ops->closed(t->ops->arg, c);
			} else if (c->owner == FC_UNKNOWN && c->bytes) {
				/* closed before its holder could be read: nobody can say whose */
				t->unseen_bytes += c->bytes;
				t->unseen_conns++;
			}
			*pp = c->next;
			free(c);
			t->n--;
		}
	}
}

static int scan_due(const struct fabric_conns *t, int64_t now)
{
	return t->need_scan && (t->need_now || now - t->last_scan >= FABRIC_SCAN_MS);
}

int agent_fabric_conns_wants(const struct fabric_conns *t, int64_t now)
{
	return t->unaccepted || scan_due(t, now);
}

int agent_fabric_conns_sample(struct fabric_conns *t, int64_t now)
{
	int rc;

	t->gen++;
	t->unaccepted = 0;
	rc = t->ops->dump(t->ops->arg, on_sock, t);
	if (rc < 0)
		return rc;
	if (scan_due(t, now))
		scan(t, now);
	sweep(t); /* only after whole dumps: a partial one says nothing of what closed */
	return 0;
}

int agent_fabric_pace(struct fabric_pace *p, int64_t now, int64_t gap, int want)
{
	p->credit += now - p->last;
	p->last = now;
	if (p->credit > FABRIC_DUMP_BURST * gap)
		p->credit = FABRIC_DUMP_BURST * gap;
	if (!want || p->credit < gap)
		return 0;
	p->credit -= gap;
	return 1;
}

void agent_fabric_conns_each(const struct fabric_conns *t,
			     void (*fn)(void *arg, const struct fabric_conn *c), void *arg)
{
	size_t i;

	for (i = 0; i < FABRIC_CONN_BUCKETS; i++) {
		const struct fabric_conn *c;

		for (c = t->bucket[i]; c; c = c->next)
			if (c->owner == FC_CMD)
				fn(arg, c);
	}
}

void agent_fabric_conns_free(struct fabric_conns *t)
{
	size_t i;

	for (i = 0; i < FABRIC_CONN_BUCKETS; i++) {
		while (t->bucket[i]) {
			struct fabric_conn *c = t->bucket[i];

			t->bucket[i] = c->next;
			free(c);
		}
	}
	free(t->owners);
	t->owners = NULL;
	t->nowners = 0;
	t->n = 0;
}
