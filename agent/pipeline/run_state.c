/* SPDX-License-Identifier: MIT */
/*
 * run_state.c - what the run's parts (run.c, run_fabric.c, run_probe.c, run_serve.c) read
 * of one run's own state: its --out directory, opened once, and a peer's name as looked up.
 */
#include "agent/pipeline/out_int.h"
#include "agent/pipeline/run_int.h"

#include <stdio.h>
#include <string.h>

/* A peer's name as looked up: see run_int.h (our relay's, a missing peer's). */
void agent_peer_lookup(const struct agent_run *r, size_t i, int as_given, char *buf, size_t cap)
{
	const char *c0 = r->peers.names[0], *fq = r->peers.coord_fqdn;
	size_t l0 = strlen(c0);

	if (!as_given && fq && strncmp(fq, c0, l0) == 0 && fq[l0] == '.')
		snprintf(buf, cap, "%s%s", r->peers.names[i], fq + l0);
	else
		snprintf(buf, cap, "%s", r->peers.names[i]);
}

int agent_run_out(struct agent_run *r, char *err, size_t errlen)
{
	int rc;

	if (r->out_open)
		return r->out_fd;
	rc = agent_out_open(r->o->out, 1, &r->out_fd, err, errlen);
	if (rc < 0)
		return rc;
	r->out_open = 1;
	return r->out_fd;
}
