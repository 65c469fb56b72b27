/* SPDX-License-Identifier: MIT */
/*
 * fuzz_check_report.c - `gxboot check`'s REPORT and RESULT payloads (the
 * coordinator parses members' reports, members parse the result). Whatever
 * is accepted must stay inside the world: ranks < N, no probe to itself, at
 * most 2N probes per row, strings bounded and printable; rendering it must
 * not crash.
 */
#include "agent/check/check_int.h"
#include "rdzv/gx/gx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *names[4] = {"job-worker-0", "job-worker-1", "job-worker-2", "job-worker-3"};

static void printable(const char *s, size_t cap)
{
	size_t i;

	for (i = 0; i < cap && s[i]; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			abort();
	if (i == cap)
		abort();
}

static void check_world_bounds(const struct check_world *w)
{
	uint32_t i;
	size_t k;

	for (i = 0; i < w->n; i++) {
		if (w->rows[i].nprobes > 2 * (size_t)w->n * w->n * (1 + CHECK_MAX_RAILS))
			abort();
		printable(w->rows[i].why, sizeof(w->rows[i].why));
		for (k = 0; k < w->rows[i].nprobes; k++) {
			const struct check_probe *p = &w->rows[i].probes[k];

			if (p->to >= w->n || p->to == i)
				abort();
			printable(p->why, sizeof(p->why));
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct check_summary s;
	struct check_world w;
	FILE *null;
	char why[160];

	if (size > 65536 || agent_check_world_init(&w, 4, 0, names) < 0)
		return 0;
	if (agent_check_report_decode(&w, 1, (const char *)data, size, why, sizeof(why)) == 0 ||
	    agent_check_result_decode(&w, (const char *)data, size, NULL, &s, why, sizeof(why)) ==
		0) {
		check_world_bounds(&w);
		agent_check_world_finish(&w);
		agent_check_summarize(&w, &s);
		null = fopen("/dev/null", "w");
		if (null) {
			agent_check_print_matrix(null, &w, CHECK_TCP);
			agent_check_print_failures(null, &w, 0);
			agent_check_print_row(null, &w, 1);
			fclose(null);
		}
	}
	agent_check_world_free(&w);
	return 0;
}
