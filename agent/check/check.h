/* SPDX-License-Identifier: MIT */
/*
 * check.h - check's face: `gxboot check` after its rendezvous, given the job as plain data by
 * the command that met the peers (cli/cmd_check.c through the pipeline). The service, probes,
 * reports and the result; the wire is agent/check/CHECK.md.
 */
#ifndef AGENT_CHECK_H
#define AGENT_CHECK_H

#include "agent/agent.h"
#include "rdzv/gx/gx.h"

#include <stddef.h>
#include <stdint.h>

struct nd_result;
struct nd_routes;
struct rdzv_result;

/* The job as prepared, before the rendezvous; the pointers outlive the check. */
struct agent_check_job {
	const struct agent_opts *o;
	const char *job_id;
	const char *source; /* where the peer list came from */
	char *const *names;
	size_t n, self;
	struct nd_result *nd; /* NULL when netdetect failed: nd_rc, nd_err say why */
	int nd_rc;
	const char *nd_err;
	const unsigned char *token; /* NULL: none; read by agent_check_key only */
	size_t token_len;
};

/* After the rendezvous on the check port: what the check runs on. */
struct agent_check_met {
	struct gx_ev *ev;
	const struct rdzv_result *res; /* the full table, this pod's rank, the round */
	uint16_t port;
	struct nd_routes **routes; /* the run's route answers (opened here when NULL) */
	/* the coordinator's primary address at port (a member sends its report there) */
	int (*coord_addr)(void *arg, uint16_t port, union gx_sockaddr *sa, socklen_t *len,
			  char *err, size_t errlen);
	/* 1 when another process listens on port (another job's check on this node) */
	int (*port_shared)(uint16_t port);
	void *arg;
};

struct agent_check;
/* A check of j (check --rails: the rails listed here, before they travel in the JOIN). */
int agent_check_new(const struct agent_check_job *j, struct agent_check **ret);
/* check --dry-run: the plan, no network used. */
void agent_check_plan(const struct agent_check *c);
/* The check's key and the RDMA-CM check's, from the token (or the job id without one): before
 * the token is wiped. */
int agent_check_key(struct agent_check *c, char *err, size_t errlen);
/* Service, probes, reports, result: 0 when every pair is OK, GX_ECHECK with the line. */
int agent_check_run(struct agent_check *c, const struct agent_check_met *m, char *err,
		    size_t errlen);
void agent_check_free(struct agent_check *c);

#endif
