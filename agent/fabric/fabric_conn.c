/* SPDX-License-Identifier: MIT */
/*
 * fabric_conn.c - the namespace's TCP connections by socket cookie, and whose they are
 * (FABRIC.md, "Kernel evidence"): every dump refreshes each connection's bytes; a socket
 * that appears with an inode is CMD's when the fd tables of CMD's tree hold that inode; a
 * connection absent from a whole dump has closed, and CMD's keep their last bytes. The dump
 * and the fd tables come through ops: the kernel and /proc in the watcher, fakes in the
 * tests.
 */
#include "agent/fabric/fabric_int.h"

#include <errno.h>
#include <stdlib.h>

static struct fabric_conn **slot(struct fabric_conns *t, uint64_t cookie)
{
	struct fabric_conn **pp = &t->bucket[cookie % FABRIC_CONN_BUCKETS];

	while (*pp && (*pp)->cookie != cookie)
		pp = &(*pp)->next;
	return pp;
}

static void owner_of(struct fabric_conns *t, struct fabric_conn *c)
{
	const struct fabric_owner *o = agent_fabric_owner_find(t->owners, t->nowners, c->inode);

	c->owner = o ? FC_CMD : FC_UNKNOWN;
	c->pid = o ? o->pid : 0;
}

static void on_sock(void *arg, const struct fabric_sock *s)
{
	struct fabric_conns *t = arg;
	struct fabric_conn **pp = slot(t, s->cookie), *c = *pp;
	uint64_t b;

	if (!c) {
		/* no struct socket (an orphan never seen, a child not accepted yet): nobody's */
		if (!s->inode || t->n >= FABRIC_CONN_MAX)
			return;
		c = calloc(1, sizeof(*c));
		if (!c)
			return;
		c->cookie = s->cookie;
		c->inode = s->inode;
		t->ops->place(t->ops->arg, c, s);
		owner_of(t, c);
		t->need_scan |= c->owner == FC_UNKNOWN;
		*pp = c;
		t->n++;
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

/* The tree's fd tables: the sockets not known yet are CMD's or not. -EAGAIN from the scan:
 * not now (they wait for the next dump). */
static void scan(struct fabric_conns *t)
{
	struct fabric_owner *o = NULL;
	size_t no = 0, i;
	int rc;

	rc = t->ops->scan(t->ops->arg, &o, &no);
	if (rc == -EAGAIN)
		return;
	t->need_scan = 0;
	if (rc == 0) {
		free(t->owners);
		t->owners = o;
		t->nowners = no;
	}
	for (i = 0; i < FABRIC_CONN_BUCKETS; i++) {
		struct fabric_conn *c;

		for (c = t->bucket[i]; c; c = c->next) {
			if (c->owner != FC_UNKNOWN)
				continue;
			owner_of(t, c);
			if (c->owner == FC_UNKNOWN)
				/* not CMD's: gxboot's own, another container's */
				c->owner = FC_OTHER;
		}
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
				/* gone before the tree was read: nobody can say whose */
				t->unseen_bytes += c->bytes;
				t->unseen_conns++;
			}
			*pp = c->next;
			free(c);
			t->n--;
		}
	}
}

int agent_fabric_conns_sample(struct fabric_conns *t)
{
	int rc;

	t->gen++;
	rc = t->ops->dump(t->ops->arg, on_sock, t);
	if (rc < 0)
		return rc;
	if (t->need_scan)
		scan(t);
	sweep(t); /* only after whole dumps: a partial one says nothing of what closed */
	return 0;
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
