/* SPDX-License-Identifier: MIT */
/*
 * run_view.c - one run seen from a command that meets its peers and then does its own work
 * (`gxboot check`): prepare, meet on its own port, read what the run learnt, leave the
 * rendezvous, and reach the coordinator again, without the caller seeing struct agent_run.
 */
#include "agent/pipeline/pipeline.h"
#include "agent/pipeline/run_int.h"
#include "agent/peers/peers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int agent_run_open(struct agent_opts *o, struct agent_run **ret, char *err, size_t errlen)
{
	*ret = calloc(1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	return agent_run_prepare(*ret, o, err, errlen);
}

void agent_run_close(struct agent_run *r)
{
	if (!r)
		return;
	agent_run_free(r);
	free(r);
}

void agent_run_view(const struct agent_run *r, struct agent_job_view *v)
{
	v->job_id = r->job_id;
	v->source = r->peers.source;
	v->names = r->peers.names;
	v->n = r->peers.n;
	v->self = r->peers.self;
	v->nd = r->nd;
	v->nd_rc = r->nd_rc;
	v->nd_err = r->nd_err;
	v->token = r->token.len ? r->token.data : NULL;
	v->token_len = r->token.len;
}

int agent_run_meet_with(struct agent_run *r, const struct agent_meet_opts *mo, char *err,
			size_t errlen)
{
	r->port = mo->port;
	r->soft_verify = mo->soft_verify;
	r->full_table = mo->full_table;
	return agent_run_meet(r, err, errlen);
}

int agent_run_met(const struct agent_run *r)
{
	return r->rdzv_done && r->rdzv_rc == 0;
}

const struct rdzv_result *agent_run_result(const struct agent_run *r)
{
	return &r->res;
}

struct gx_ev *agent_run_loop(const struct agent_run *r)
{
	return r->ev;
}

struct nd_routes **agent_run_routes(struct agent_run *r)
{
	return &r->routes;
}

void agent_run_wipe_token(struct agent_run *r)
{
	agent_token_free(&r->token);
}

void agent_run_leave(struct agent_run *r)
{
	rdzv_coord_free(r->coord);
	r->coord = NULL;
	rdzv_member_free(r->member);
	r->member = NULL;
	agent_dns_free(r->dns);
	r->dns = NULL;
}

/* The coordinator's name looked up in the run's loop (no private loop). */
struct coord_dns {
	union gx_sockaddr *sa;
	socklen_t *len;
	int rc, done;
};

static void coord_dns_done(void *arg, int rc, const struct agent_dns_answer *ans)
{
	struct coord_dns *q = arg;

	q->rc = rc;
	if (rc == 0) {
		*q->sa = ans->addrs[0];
		*q->len = ans->lens[0];
	}
	q->done = 1;
}

int agent_run_coord_addr(struct agent_run *r, uint16_t port, union gx_sockaddr *sa, socklen_t *len,
			 char *err, size_t errlen)
{
	struct coord_dns q = {.sa = sa, .len = len, .rc = -ETIMEDOUT};
	struct agent_dns *d = NULL;
	int64_t deadline;
	int rc;

	if (gx_addr_parse(r->coord_lookup, port, sa, len) == 0)
		return 0;
	if (r->ever_resolved && r->coord_primary.sa.sa_family == AF_INET) {
		*sa = r->coord_primary;
		sa->in4.sin_port = htons(port);
		*len = sizeof(sa->in4);
		return 0;
	}
	if (r->ever_resolved && r->coord_primary.sa.sa_family == AF_INET6) {
		*sa = r->coord_primary;
		sa->in6.sin6_port = htons(port);
		*len = sizeof(sa->in6);
		return 0;
	}
	rc =
	    agent_dns_start(r->ev, r->coord_lookup, r->o->dns_server, port, coord_dns_done, &q, &d);
	if (rc == 0) {
		deadline = gx_now_ms() + 5000;
		while (!q.done && gx_now_ms() < deadline)
			if (gx_ev_run_until(r->ev, deadline) == -ETIMEDOUT)
				break;
		rc = q.rc;
	}
	agent_dns_free(d);
	if (rc == 0)
		return 0;
	snprintf(err, errlen, "cannot resolve the coordinator %s: %s", r->coord_lookup,
		 gx_strerror(rc));
	return rc;
}
