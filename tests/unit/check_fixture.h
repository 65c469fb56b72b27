/* SPDX-License-Identifier: MIT */
/*
 * check_fixture.h - the fixtures of the test_agent_check* tests, in one place:
 * pods on loopback (world, check_net, table) with their service on a free
 * port, the loop pumps, probe and world builders, and the loader of the JSON
 * fixtures in tests/fixtures/check/ whose reports go through the real wire
 * path (seal, header, open, decode).
 */
#ifndef TESTS_UNIT_CHECK_FIXTURE_H
#define TESTS_UNIT_CHECK_FIXTURE_H

#include "agent/check/check_int.h"
#include "rdzv/gx/gx.h"

#include <jansson.h>
#include <stdint.h>

#define CF_MAX 8				  /* pods of a loopback fixture */
#define CF_ROUND 0x1122334455667788ull		  /* the round of every fixture */
#define CF_KEY "0123456789abcdef0123456789abcdef" /* the key of the JSON fixtures */

/* "job-worker-0" .. "job-worker-7" */
char *const *cf_names(void);

/* A pod on loopback: world of npods, its check_net, a table of 127.0.0.1 / lo entries. */
struct cf_pod {
	struct check_world w;
	struct check_net n;
	struct rdzv_peer table[CF_MAX];
};

/* Pod `self` of npods (<= CF_MAX), service port `port` (not started); key 7s. */
void cf_pod_init(struct cf_pod *p, struct gx_ev *ev, uint32_t npods, uint32_t self, uint16_t port);
/* The same with its service started on a free port; the port. */
uint16_t cf_serve(struct cf_pod *p, struct gx_ev *ev, uint32_t npods, uint32_t self);
void cf_pod_free(struct cf_pod *p);
/* Run the loop until *flag or ms have passed; cf_pump: for ms. */
void cf_run_until(struct gx_ev *ev, const int *flag, int64_t ms);
void cf_pump(struct gx_ev *ev, int64_t ms);

/* A TCP probe to `to` on rail (0: bootstrap); OK ones take 100 + rail µs. */
struct check_probe cf_probe(uint32_t to, int rail, int ok, const char *why);
/*
 * Every pair of n pods probed and reported OK (mtu 9000, 100 + i µs) except
 * from -> to ("timeout"); names: n malloc'd "job-worker-<i>" (cf_free_names).
 */
void cf_full_world(struct check_world *w, uint32_t n, char **names, uint32_t from, uint32_t to);
void cf_free_names(char **names, uint32_t n);

/* A JSON fixture: {"names", "mode"?, "reports": [report...], "expect"}. */
struct cf_fx {
	json_t *doc;
	char *names[CF_MAX];
	struct check_world w;
};
void cf_fx_load(struct cf_fx *f, const char *file);
/* Every report through cf_deliver, then agent_check_world_finish. */
void cf_fx_deliver_all(struct cf_fx *f);
void cf_fx_free(struct cf_fx *f);
/* A report payload through seal (CF_KEY, CF_ROUND) -> header -> open (round) -> decode. */
int cf_deliver(struct check_world *w, uint32_t rank, uint64_t round, const char *text, size_t len);

#endif
