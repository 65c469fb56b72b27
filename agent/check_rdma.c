/* SPDX-License-Identifier: MIT */
/*
 * check_rdma.c - the RDMA-CM probes of `gxboot check` (issue 8) in a forked
 * child. rdzv_rdma_probe_run blocks; a pod that blocks cannot answer the
 * probes of others, and two pods probing each other would both time out. So
 * the child (forked before this pod's RDMA-CM server opens anything: no
 * verbs state is shared across the fork) waits for "go", runs the probes one
 * at a time and writes one fixed-size record per probe into a pipe, while
 * the parent keeps serving TCP echoes and RDMA-CM connects in its loop.
 */
#include "agent/check_int.h"
#include "rdzv/rdzv_rdma.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#define RDMA_PROBE_MS 3000 /* one attempt; check.c budgets 3 s per target plus 5 s */

/* One probe's outcome on the pipe (same binary on both ends; < PIPE_BUF: atomic). */
struct rec {
	uint32_t to;
	int32_t rail; /* 0: the bootstrap iface; k: rail k (check --rails) */
	int32_t ok, gid_index, mtu;
	int64_t lat_us, write_us;
	char why[96];
};

/*
 * One probe; a connect refused within the first second is tried once more
 * after 300 ms: the target may have opened its TCP service (which our TCP
 * probes saw) but not yet its RDMA-CM listener.
 */
static int run_probe(struct check_rdma_child *ch, struct rdzv_rdma_ctx *ctx,
		     const struct rdzv_peer *self, const struct rdzv_peer *peer,
		     struct rdzv_rdma_probe *out)
{
	const struct check_net *n = ch->n;
	int64_t t = gx_now_ms();
	struct pollfd none = {.fd = -1};
	int rc;

	rc = rdzv_rdma_probe_run(ctx, self, peer, n->port, ch->size, t + RDMA_PROBE_MS, out);
	if (rc < 0 || out->ok || !out->step || strcmp(out->step, "connect") != 0 ||
	    gx_now_ms() - t > 1000)
		return rc;
	poll(&none, 0, 300); /* the child has nothing else to wait for */
	memset(out, 0, sizeof(*out));
	return rdzv_rdma_probe_run(ctx, self, peer, n->port, ch->size, gx_now_ms() + RDMA_PROBE_MS,
				   out);
}

static void child_probe(struct check_rdma_child *ch, struct rdzv_rdma_ctx *ctx,
			const struct rdzv_peer *self, const struct rdzv_peer *peer, uint32_t j,
			int rail, int fd)
{
	struct rdzv_rdma_probe out;
	struct rec r;

	memset(&r, 0, sizeof(r));
	memset(&out, 0, sizeof(out));
	r.to = j;
	r.rail = rail;
	if (run_probe(ch, ctx, self, peer, &out) < 0) {
		gx_strlcpy(r.why, "probe failed to start", sizeof(r.why));
		out.gid_index = -1;
	} else if (!out.ok) {
		gx_strlcpy(r.why, out.why[0] ? out.why : "failed", sizeof(r.why));
	}
	r.ok = out.ok;
	r.gid_index = out.gid_index;
	r.mtu = out.mtu;
	r.lat_us = out.sendrecv_us;
	r.write_us = out.write_us;
	if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
}

/* check --rails: rail k <-> rail k where both ends have a device and address on it. */
static void child_rails(struct check_rdma_child *ch, struct rdzv_rdma_ctx *ctx, int fd)
{
	const struct check_net *n = ch->n;
	struct rdzv_peer me, them;
	uint32_t j, k;

	for (k = 1; k <= n->w->nrails; k++) {
		if (check_rail_peer(&n->table[n->self], n->w->rails[k - 1], &me) < 0)
			continue;
		for (j = 0; j < n->w->n; j++)
			if (check_pair_probed(n->w, n->self, j) &&
			    check_rail_peer(&n->table[j], n->w->rails[k - 1], &them) == 0)
				child_probe(ch, ctx, &me, &them, j, (int)k, fd);
	}
}

/* The child: wait for "go" (EOF = give up), probe, exit. */
static void child_main(struct check_rdma_child *ch, struct rdzv_rdma_ctx *ctx, int go, int res)
{
	const struct check_net *n = ch->n;
	struct pollfd p = {.fd = go, .events = POLLIN};
	int64_t left = ch->deadline - gx_now_ms();
	char b;
	uint32_t j;

	if (left <= 0 || poll(&p, 1, (int)left) != 1 || read(go, &b, 1) != 1)
		_exit(0);
	for (j = 0; j < n->w->n; j++) {
		if (!check_pair_probed(n->w, n->self, j) || !n->table[j].rdma_dev[0])
			continue;
		child_probe(ch, ctx, &n->table[n->self], &n->table[j], j, 0, res);
	}
	child_rails(ch, ctx, res);
	_exit(0);
}

static void add_rec(struct check_rdma_child *ch, const struct rec *r)
{
	struct check_probe p;

	memset(&p, 0, sizeof(p));
	p.to = r->to;
	p.rail = r->rail;
	p.proto = CHECK_RDMA;
	p.ok = r->ok != 0;
	p.gid_index = r->gid_index;
	p.mtu = r->mtu;
	p.min_us = p.median_us = p.max_us = r->lat_us;
	p.write_us = r->write_us;
	gx_strlcpy(p.why, r->why, sizeof(p.why));
	if (r->to >= ch->n->w->n || check_row_add(ch->n->w, ch->n->self, &p) < 0)
		gx_warn("check: RDMA probe result dropped");
	gx_debug("check: rdma -> %s: %s", ch->n->w->names[p.to % ch->n->w->n], p.ok ? "ok" : p.why);
}

static void close_fd(struct check_rdma_child *ch, int *fd, int in_loop)
{
	if (*fd < 0)
		return;
	if (in_loop)
		gx_ev_del(ch->n->ev, *fd);
	close(*fd);
	*fd = -1;
}

static void on_results(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct check_rdma_child *ch = arg;
	struct rec r;
	ssize_t got;

	(void)events;
	got = read(fd, &r, sizeof(r));
	if (got < 0 && errno == EAGAIN)
		return;
	if (got == (ssize_t)sizeof(r)) {
		add_rec(ch, &r);
		return;
	}
	/* EOF (the child is done) or a short record (it died) */
	close_fd(ch, &ch->res_fd, 1);
	ch->done = 1;
	gx_ev_stop(ev, 0);
}

int check_rdma_spawn(struct check_net *n, struct rdzv_rdma_ctx *ctx, size_t size, int64_t deadline,
		     struct check_rdma_child *ch)
{
	int go[2] = {-1, -1}, res[2] = {-1, -1}, rc = 0;
	pid_t pid;

	memset(ch, 0, sizeof(*ch));
	ch->n = n;
	ch->size = size;
	ch->deadline = deadline;
	ch->pid = -1;
	ch->go_fd = ch->res_fd = -1;
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	if (pid == 0) {
		close(go[1]);
		close(res[0]);
		child_main(ch, ctx, go[0], res[1]);
	}
	ch->pid = pid;
	ch->go_fd = go[1];
	ch->res_fd = res[0];
	go[1] = res[0] = -1;
	if (fcntl(ch->res_fd, F_SETFL, O_NONBLOCK) < 0 ||
	    gx_ev_add(n->ev, ch->res_fd, EPOLLIN, on_results, ch) < 0)
		rc = -EIO;
out:
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (res[i] >= 0)
			close(res[i]);
	}
	return rc;
}

void check_rdma_go(struct check_rdma_child *ch)
{
	if (ch->go_fd >= 0 && write(ch->go_fd, "g", 1) != 1)
		gx_debug("check: RDMA probe child gone");
	close_fd(ch, &ch->go_fd, 0);
}

void check_rdma_reap(struct check_rdma_child *ch)
{
	int st;

	if (!ch->n)
		return;
	close_fd(ch, &ch->go_fd, 0);
	close_fd(ch, &ch->res_fd, 1);
	if (ch->pid > 0) {
		if (!ch->done)
			kill(ch->pid, SIGKILL);
		while (waitpid(ch->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	ch->pid = -1;
}
