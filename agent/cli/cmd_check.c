/* SPDX-License-Identifier: MIT */
/*
 * cmd_check.c - `gxboot check` (never aborts on a broken pair): the run pipeline's
 * rendezvous on the check port with soft verification and the full table, then check's
 * service, this pod's probes, the reports and the result (agent/check/check.h). Every pod
 * prints its own row and the summary; the coordinator prints the matrix. Exit 0 when every
 * pair is OK, 1 otherwise. Wire: agent/check/CHECK.md.
 */
#include "agent/check/check.h"
#include "agent/cli/cli_int.h"
#include "agent/launch/launch.h"
#include "agent/pipeline/pipeline.h"
#include "rdzv/rdzv.h"

#include <errno.h>
#include <stdio.h>

/* Rendezvous; our own netdetect failure does not stop a check: it reports it. */
static int meet(struct agent_run *r, const struct agent_meet_opts *mo, size_t n, char *err,
		size_t errlen)
{
	int rc = agent_run_meet_with(r, mo, err, errlen);
	const struct rdzv_result *res = agent_run_result(r);

	if (rc < 0 && agent_run_met(r)) {
		gx_warn("%s: this pod stays in the check over the primary network", err);
		err[0] = '\0';
		rc = 0;
	}
	if (rc < 0)
		return rc;
	if (res->ntable != n || !res->table || res->rank < 0 || (size_t)res->rank >= n) {
		snprintf(err, errlen, "the rendezvous gave no peer table (%zu of %zu)", res->ntable,
			 n);
		return GX_ERDZV;
	}
	return 0;
}

static int coord_addr(void *arg, uint16_t port, union gx_sockaddr *sa, socklen_t *len, char *err,
		      size_t errlen)
{
	return agent_run_coord_addr(arg, port, sa, len, err, errlen);
}

int agent_cmd_check(struct agent_opts *o, char *err, size_t errlen)
{
	struct agent_meet_opts mo = {
	    .port = o->check_port ? o->check_port : o->port + 1, .soft_verify = 1, .full_table = 1};
	struct agent_check *c = NULL;
	struct agent_run *r = NULL;
	struct agent_job_view v;
	struct agent_check_job j;
	struct agent_check_met m;
	int rc;

	agent_signals_wait_mode();
	rc = agent_run_open(o, &r, err, errlen);
	if (rc < 0)
		goto out;
	agent_run_view(r, &v);
	j = (struct agent_check_job){.o = o,
				     .job_id = v.job_id,
				     .source = v.source,
				     .names = v.names,
				     .n = v.n,
				     .self = v.self,
				     .nd = v.nd,
				     .nd_rc = v.nd_rc,
				     .nd_err = v.nd_err,
				     .token = v.token,
				     .token_len = v.token_len};
	rc = agent_check_new(&j, &c);
	if (rc < 0)
		goto out;
	if (o->dry_run) {
		agent_check_plan(c);
		goto out;
	}
	rc = agent_check_key(c, err, errlen);
	if (rc < 0)
		goto out;
	rc = meet(r, &mo, v.n, err, errlen);
	agent_run_wipe_token(r);
	if (rc < 0)
		goto out;
	/* the rendezvous is over: its port becomes the check service's */
	agent_run_leave(r);
	m = (struct agent_check_met){.ev = agent_run_loop(r),
				     .res = agent_run_result(r),
				     .port = (uint16_t)mo.port,
				     .routes = agent_run_routes(r),
				     .coord_addr = coord_addr,
				     .port_shared = agent_port_shared,
				     .arg = r};
	rc = agent_check_run(c, &m, err, errlen);
out:
	agent_check_free(c);
	agent_run_close(r);
	return rc;
}
