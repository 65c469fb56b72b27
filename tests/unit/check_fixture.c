/* SPDX-License-Identifier: MIT */
/* check_fixture.c - see check_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/check_fixture.h"

static char *const names[CF_MAX] = {"job-worker-0", "job-worker-1", "job-worker-2", "job-worker-3",
				    "job-worker-4", "job-worker-5", "job-worker-6", "job-worker-7"};

char *const *cf_names(void)
{
	return names;
}

void cf_pod_init(struct cf_pod *p, struct gx_ev *ev, uint32_t npods, uint32_t self, uint16_t port)
{
	uint32_t i;

	assert_true(npods >= 1 && npods <= CF_MAX && self < npods);
	memset(p, 0, sizeof(*p));
	for (i = 0; i < npods; i++) {
		snprintf(p->table[i].name, sizeof(p->table[i].name), "%s", names[i]);
		snprintf(p->table[i].iface, sizeof(p->table[i].iface), "lo");
		snprintf(p->table[i].addr4, sizeof(p->table[i].addr4), "127.0.0.1");
		p->table[i].gid_index = -1;
	}
	assert_int_equal(agent_check_world_init(&p->w, npods, 0, names), 0);
	p->n.ev = ev;
	p->n.w = &p->w;
	p->n.self = self;
	p->n.round = CF_ROUND;
	memset(p->n.key, 7, sizeof(p->n.key));
	p->n.port = port;
	p->n.is_coord = self == 0;
	p->n.table = p->table;
	p->n.t0 = gx_now_ms();
	for (int k = 0; k < CHECK_LISTEN_MAX; k++)
		p->n.lfd[k] = -1;
	snprintf(p->n.ifname, sizeof(p->n.ifname), "lo");
}

uint16_t cf_serve(struct cf_pod *p, struct gx_ev *ev, uint32_t npods, uint32_t self)
{
	char err[256];
	uint16_t port;
	int k;

	for (k = 0; k < 50; k++) {
		port = (uint16_t)(30000 + (getpid() * 7 + k * 131) % 20000);
		cf_pod_init(p, ev, npods, self, port);
		if (agent_check_serve_start(&p->n, err, sizeof(err)) == 0)
			return port;
		cf_pod_free(p);
	}
	fail_msg("no free port");
	return 0;
}

void cf_pod_free(struct cf_pod *p)
{
	agent_check_probes_stop(&p->n);
	if (p->n.ev)
		agent_check_serve_stop(&p->n);
	agent_check_world_free(&p->w);
}

void cf_run_until(struct gx_ev *ev, const int *flag, int64_t ms)
{
	int64_t deadline = gx_now_ms() + ms;

	while (!*flag && gx_now_ms() < deadline)
		gx_ev_run_until(ev, deadline);
}

void cf_pump(struct gx_ev *ev, int64_t ms)
{
	gx_ev_run_until(ev, gx_now_ms() + ms);
}

struct check_probe cf_probe(uint32_t to, int rail, int ok, const char *why)
{
	struct check_probe p;

	memset(&p, 0, sizeof(p));
	p.to = to;
	p.rail = rail;
	p.ok = ok;
	p.gid_index = -1;
	p.min_us = p.median_us = p.max_us = ok ? 100 + rail : 0;
	if (why)
		gx_strlcpy(p.why, why, sizeof(p.why));
	return p;
}

void cf_full_world(struct check_world *w, uint32_t n, char **nm, uint32_t from, uint32_t to)
{
	struct check_probe p;
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		nm[i] = malloc(32);
		assert_non_null(nm[i]);
		snprintf(nm[i], 32, "job-worker-%u", i);
	}
	assert_int_equal(agent_check_world_init(w, n, 0, nm), 0);
	for (i = 0; i < n; i++) {
		w->rows[i].reported = 1;
		w->rows[i].mtu = 9000;
		for (j = 0; j < n; j++) {
			if (i == j)
				continue;
			p = cf_probe(j, 0, !(i == from && j == to), "timeout");
			if (p.ok) {
				p.min_us = p.median_us = p.max_us = 100 + i;
				p.why[0] = '\0';
			}
			p.gid_index = 0;
			assert_int_equal(agent_check_row_add(w, i, &p), 0);
		}
	}
}

void cf_free_names(char **nm, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		free(nm[i]);
}

void cf_fx_load(struct cf_fx *f, const char *file)
{
	json_error_t je;
	json_t *nm, *x, *mode;
	size_t k;

	memset(f, 0, sizeof(*f));
	f->doc = json_load_file(file, 0, &je);
	assert_non_null(f->doc);
	nm = json_object_get(f->doc, "names");
	assert_true(json_array_size(nm) <= CF_MAX);
	json_array_foreach(nm, k, x) f->names[k] = (char *)json_string_value(x);
	mode = json_object_get(f->doc, "mode");
	assert_int_equal(
	    agent_check_world_init(&f->w, (uint32_t)json_array_size(nm),
				   mode && strcmp(json_string_value(mode), "star") == 0, f->names),
	    0);
}

int cf_deliver(struct check_world *w, uint32_t rank, uint64_t round, const char *text, size_t len)
{
	static const unsigned char key[CHECK_KEY_LEN] = CF_KEY;
	unsigned char *frame = NULL;
	const char *payload;
	size_t flen, plen;
	uint32_t blen, got;
	char why[160];
	int type, rc;

	rc = agent_check_seal(key, CHECK_REPORT, CF_ROUND, rank, text, len, &frame, &flen);
	if (rc < 0)
		return rc;
	rc = agent_check_hdr_get(frame, &type, &blen);
	if (rc == 0 && (type != CHECK_REPORT || blen != flen - CHECK_HDR_LEN))
		rc = -EPROTO;
	if (rc == 0)
		rc = agent_check_open(key, CHECK_REPORT, round, w->n, frame + CHECK_HDR_LEN, blen,
				      &got, &payload, &plen);
	if (rc == 0)
		rc = agent_check_report_decode(w, got, payload, plen, why, sizeof(why));
	free(frame);
	return rc;
}

void cf_fx_deliver_all(struct cf_fx *f)
{
	json_t *reports = json_object_get(f->doc, "reports"), *x;
	char *text;
	size_t k;

	json_array_foreach(reports, k, x)
	{
		uint32_t rank = (uint32_t)json_integer_value(json_object_get(x, "rank"));

		text = json_dumps(x, JSON_COMPACT);
		assert_non_null(text);
		assert_int_equal(cf_deliver(&f->w, rank, CF_ROUND, text, strlen(text)), 0);
		free(text);
	}
	assert_int_equal(agent_check_world_finish(&f->w), 0);
}

void cf_fx_free(struct cf_fx *f)
{
	agent_check_world_free(&f->w);
	json_decref(f->doc);
}
