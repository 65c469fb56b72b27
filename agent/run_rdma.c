/* SPDX-License-Identifier: MIT */
/*
 * run_rdma.c - what the rendezvous proved about this pod's RDMA (issue 24,
 * issue 31 item 5): `--rdma require` means an RDMA-CM connect + send/recv
 * between this pod and the coordinator really went through, not that a
 * device is present. Pure: the facts in, the verdict out (run.c gathers the
 * facts and acts on it; tests/unit/test_agent_run_rdma.c covers every case).
 */
#include "agent/run_int.h"

#include <stdio.h>
#include <string.h>

static void verdict(struct agent_rdma_verdict *v, int state, int fail_rc, const char *why)
{
	v->state = state;
	v->fail_rc = state == 1 ? 0 : fail_rc;
	gx_strlcpy(v->why, why, sizeof(v->why));
}

void agent_rdma_verdict(const struct agent_rdma_facts *f, struct agent_rdma_verdict *v)
{
	char why[sizeof(v->why)];

	memset(v, 0, sizeof(*v));
	v->state = -1;
	if (f->mode == AGENT_RDMA_OFF || !f->have_dev)
		return;
	if (f->ctx_rc < 0) {
		snprintf(why, sizeof(why), "RDMA-CM unavailable on %s: %s", f->dev,
			 gx_strerror(f->ctx_rc));
		verdict(v, 0, GX_ENORDMA, why);
	} else if (f->is_coord && f->listen_err && f->listen_err[0]) {
		verdict(v, 0, GX_ENORDMA, f->listen_err);
	} else if (f->is_coord && f->members == 0) {
		snprintf(why, sizeof(why), "no other pod to verify RDMA-CM on %s with", f->dev);
		verdict(v, 0, GX_ERDZV, why);
	} else if (f->is_coord && f->answered == 0) {
		snprintf(why, sizeof(why),
			 "no member verified RDMA-CM to %s (none of %u has a usable device?)",
			 f->dev, f->members);
		verdict(v, 0, GX_ERDZV, why);
	} else if (f->is_coord) {
		snprintf(why, sizeof(why), "%u of %u members verified RDMA-CM to %s",
			 f->answered < f->members ? f->answered : f->members, f->members, f->dev);
		verdict(v, 1, 0, why);
	} else if (!f->coord_has_dev) {
		snprintf(why, sizeof(why),
			 "the coordinator %s has no usable RDMA device or RDMA-CM listener: "
			 "not verified",
			 f->coord_name);
		verdict(v, 0, GX_ERDZV, why);
	} else if (!f->verified) {
		snprintf(why, sizeof(why), "RDMA-CM from %s to the coordinator %s was not run",
			 f->dev, f->coord_name);
		verdict(v, 0, GX_ERDZV, why);
	} else {
		int n = snprintf(why, sizeof(why),
				 "RDMA-CM connect + send/recv from %s to the coordinator %s (%s) "
				 "passed",
				 f->dev, f->coord_name, f->coord_dev);

		if (f->verify_us >= 0 && n > 0 && (size_t)n < sizeof(why))
			snprintf(why + n, sizeof(why) - (size_t)n, " in %.1f ms",
				 (double)f->verify_us / 1000.0);
		verdict(v, 1, 0, why);
	}
	if (f->mode != AGENT_RDMA_REQUIRE)
		v->fail_rc = 0;
}
