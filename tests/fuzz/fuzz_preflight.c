/* SPDX-License-Identifier: MIT */
/*
 * fuzz_preflight.c - the preflight's documents: a member parses the coordinator's plan, the
 * coordinator parses every member's row (both came through authenticated sessions, still
 * parsed as hostile). An accepted plan names valid hosts and addresses, never the pod
 * itself, no target twice; an accepted row stays inside the world (no probe to itself, at
 * most one per pair and protocol, reasons bounded and printable); judging it must not
 * crash.
 */
#include "agent/preflight/preflight_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *names[4] = {"job-worker-0", "job-worker-1", "job-worker-2", "job-worker-3"};

static void check_plan(const struct agent_pf_plan *p)
{
	uint32_t k, m;

	if (p->me >= p->n || p->ntargets >= p->n || p->bytes > CHECK_STREAM_MAX)
		abort();
	for (k = 0; k < p->ntargets; k++) {
		if (p->targets[k] >= p->n || p->targets[k] == p->me ||
		    !gx_valid_hostname(p->peer[k].name) ||
		    (!p->peer[k].addr4[0] && !p->peer[k].addr6[0]))
			abort();
		for (m = 0; m < k; m++)
			if (p->targets[m] == p->targets[k])
				abort();
	}
}

static void check_row(const struct check_world *w, uint32_t from)
{
	const struct check_row *r = &w->rows[from];
	size_t k;

	for (k = 0; k < r->nprobes; k++)
		if (r->probes[k].to >= w->n || r->probes[k].to == from ||
		    !gx_safe_text(r->probes[k].why, sizeof(r->probes[k].why)))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_pf_plan p;
	struct check_world w;
	unsigned char sus[4];
	uint32_t vant[4 * AGENT_PF_VANTAGES];
	double ratio;
	char why[300];

	if (size > 65536)
		return 0;
	if (agent_pf_plan_decode((const char *)data, size, &p, why, sizeof(why)) == 0) {
		check_plan(&p);
		agent_pf_plan_free(&p);
	}
	if (agent_check_world_init(&w, 4, 0, names) < 0)
		return 0;
	if (agent_pf_report_decode(&w, 1, 1, (const char *)data, size, why, sizeof(why)) == 0) {
		check_row(&w, 1);
		agent_check_world_finish(&w);
		if (agent_pf_suspects(&w, 0.5, sus) && agent_pf_vantages(&w, sus, vant))
			agent_pf_slow_verdict(&w, &w, vant + AGENT_PF_VANTAGES, 1, sus[1], 0.5, why,
					      sizeof(why), &ratio);
	}
	agent_check_world_free(&w);
	return 0;
}
