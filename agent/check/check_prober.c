/* SPDX-License-Identifier: MIT */
/*
 * check_prober.c - a pod's probes for another module (check.h "a pod's probes"; the
 * preflight): check's network state (struct check_net, struct check_rdma) behind one handle,
 * so that its user holds none of check's internals. Each stage reports to the user's own
 * callback and argument; the stages themselves are check_probe.c, check_stream.c,
 * check_rdma.c and check_serve.c, unchanged.
 */
#include "agent/check/check_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct agent_check_probes {
	struct check_net net; /* net.probes_arg: this handle */
	struct check_rdma rdma;
	int serving; /* the service was started (and is stopped at the end) */
	void *arg;
	void (*echo_done)(void *arg), (*streams_done)(void *arg), (*rdma_done)(void *arg);
};

int agent_check_probes_new(struct gx_ev *ev, const char *ifname, struct nd_routes *routes,
			   void *arg, struct agent_check_probes **ret)
{
	struct agent_check_probes *p = calloc(1, sizeof(*p));
	int i;

	*ret = NULL;
	if (!p)
		return -ENOMEM;
	p->net.ev = ev;
	p->net.probes_arg = p;
	for (i = 0; i < CHECK_LISTEN_MAX; i++)
		p->net.lfd[i] = -1;
	gx_strlcpy(p->net.ifname, ifname ? ifname : "", sizeof(p->net.ifname));
	p->net.routes = routes;
	p->arg = arg;
	*ret = p;
	return 0;
}

void agent_check_probes_clear(struct agent_check_probes *p)
{
	agent_check_rdma_stop(&p->rdma);
	memset(&p->rdma, 0, sizeof(p->rdma));
	agent_check_streams_stop(&p->net);
	agent_check_probes_reset(&p->net);
	agent_check_lag_stop(&p->net);
}

void agent_check_probes_plan(struct agent_check_probes *p, struct check_world *w,
			     const struct rdzv_peer *table, uint16_t port, int tries)
{
	struct check_net *n = &p->net;

	agent_check_probes_clear(p);
	n->w = w;
	n->table = table;
	n->self = 0;
	n->port = port;
	n->tries = tries;
	n->t0 = gx_now_ms();
	n->lag_max_ms = 0;
}

int agent_check_probes_serve(struct agent_check_probes *p, char *err, size_t errlen)
{
	p->serving = 1; /* a service that failed half way is stopped too */
	return agent_check_serve_start(&p->net, err, errlen);
}

static void on_echo(struct check_net *n)
{
	struct agent_check_probes *p = n->probes_arg;

	p->echo_done(p->arg);
}

int agent_check_probes_echo(struct agent_check_probes *p, void (*done)(void *arg))
{
	struct check_net *n = &p->net;
	int rc;

	p->echo_done = done;
	n->probes_cb = on_echo;
	agent_check_lag_start(n);
	rc = agent_check_probes_start(n);
	/* nothing to probe: no probe ends to say so */
	if (rc == 0 && n->probes_done && !n->npcs)
		done(p->arg);
	return rc;
}

static void on_streams(struct check_net *n)
{
	struct agent_check_probes *p = n->probes_arg;

	p->streams_done(p->arg);
}

int agent_check_probes_streams(struct agent_check_probes *p, int64_t bytes, int64_t bound_ms,
			       int reps, void (*done)(void *arg))
{
	p->streams_done = done;
	return agent_check_streams_start(&p->net, bytes, bound_ms, reps, on_streams);
}

static void on_rdma(struct check_rdma *r)
{
	struct agent_check_probes *p = r->n->probes_arg;

	p->rdma_done(p->arg);
}

void agent_check_probes_rdma(struct agent_check_probes *p, struct rdzv_rdma_ctx *ctx, size_t size,
			     void (*done)(void *arg))
{
	p->rdma_done = done;
	agent_check_rdma_init(&p->net, ctx, size, &p->rdma);
	p->rdma.done_cb = on_rdma;
	agent_check_rdma_go(&p->rdma);
}

int64_t agent_check_probes_lag_end(struct agent_check_probes *p)
{
	agent_check_lag_stop(&p->net);
	return p->net.lag_max_ms;
}

void agent_check_probes_free(struct agent_check_probes *p)
{
	if (!p)
		return;
	agent_check_probes_clear(p);
	agent_check_probes_stop(&p->net);
	if (p->serving)
		agent_check_serve_stop(&p->net);
	free(p);
}
