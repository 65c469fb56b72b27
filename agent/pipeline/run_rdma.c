/* SPDX-License-Identifier: MIT */
/*
 * run_rdma.c - what the rendezvous proved about this pod's RDMA, so that RDMA
 * cannot silently fall back to TCP: `--rdma require` means an RDMA-CM connect + send/recv
 * between this pod and the coordinator really went through, not that a
 * device is present. Pure: the facts in, the verdict out (run.c gathers the
 * facts and acts on it; tests/unit/test_agent_run_rdma.c covers every case).
 */
#include "agent/pipeline/run_int.h"

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

/* The rail entry for device dev (the part of an HCA item before ':'), or NULL. */
static const struct rdzv_rdma_rail *rail_for(const struct rdzv_rdma_rail *rails, size_t n,
					     const char *dev, size_t devlen)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (strlen(rails[k].dev) == devlen && strncmp(rails[k].dev, dev, devlen) == 0)
			return &rails[k];
	return NULL;
}

/* Why a rail did not pass the gate, or NULL when it did. */
static const char *rail_failed(const struct rdzv_rdma_rail *rl, int is_coord)
{
	if (!rl || rl->bootstrap)
		return NULL;
	if (is_coord && !rl->served)
		return rl->why[0] ? rl->why : "no RDMA-CM listener";
	if (is_coord && rl->answered == 0)
		return "no member verified RDMA-CM on it";
	if (!is_coord && !rl->ok)
		return rl->why[0] ? rl->why : "not verified";
	return NULL;
}

int agent_rdma_gate(const char *hca, const struct rdzv_rdma_rail *rails, size_t n, int is_coord,
		    char *out, size_t cap, int *gid, char *dropped, size_t dcap)
{
	const struct rdzv_rdma_rail *rl;
	const char *s = hca, *e, *colon, *why;
	size_t len = 0, dlen = 0;
	int ndropped = 0, g = -2, w;

	out[0] = '\0';
	if (dcap)
		dropped[0] = '\0';
	while (s && *s) {
		e = strchr(s, ',');
		if (!e)
			e = s + strlen(s);
		colon = memchr(s, ':', (size_t)(e - s));
		rl = rail_for(rails, n, s, (size_t)((colon ? colon : e) - s));
		why = rail_failed(rl, is_coord);
		if (why) {
			w = snprintf(dropped + dlen, dcap - dlen, "%s%s (%s): %s", dlen ? "; " : "",
				     rl->netdev, rl->dev, why);
			if (w > 0 && (size_t)w < dcap - dlen)
				dlen += (size_t)w;
			ndropped++;
		} else {
			w = snprintf(out + len, cap - len, "%s%.*s", len ? "," : "", (int)(e - s),
				     s);
			if (w < 0 || (size_t)w >= cap - len)
				return -ENOSPC;
			len += (size_t)w;
			if (!is_coord && rl && rl->ok)
				g = g == -2 || g == rl->gid_index ? rl->gid_index : -1;
		}
		s = *e ? e + 1 : e;
	}
	if (g != -2)
		*gid = g; /* the index that carried every verified rail's traffic, or none */
	return ndropped;
}

int agent_rdma_unusable(const struct nd_result *nd, int mode)
{
	/* rdma_dev is netdetect's port serving iface, usable or not; --rdma off never
	 * looks (and the user who wrote it may want NCCL's own choice) */
	return nd && mode != AGENT_RDMA_OFF && nd->rdma_dev[0] && !nd->rdma_usable &&
	       nd->nrails == 0;
}
