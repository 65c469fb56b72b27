/* SPDX-License-Identifier: MIT */
/*
 * test_rdzv_fabric.c - FABRIC, a member's transport report after the COMMIT (PROTOCOL.md
 * "Fabric reports"), in-process on loopback: a member that stays sends it and the
 * coordinator's callback gets every field (the line made safe, the addresses re-printed);
 * a member that did not stay has no session to send it on; an address that does not parse
 * drops the member's session; a coordinator without the callback skips the frame, as one of
 * a build before it does.
 */
#include "rdzv/rdzv_int.h"
#include "tests/unit/rdzv_harness.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

static const unsigned char TOKEN[] = "0123456789abcdef-fabric-token";

struct got {
	int n;
	uint32_t index;
	struct rdzv_fabric f;
	int ended, status;
};

static void on_fabric(void *arg, uint32_t index, const struct rdzv_fabric *f)
{
	struct got *g = arg;

	g->n++;
	g->index = index;
	g->f = *f;
}

static void on_end(void *arg, int status, const char *why)
{
	struct got *g = arg;

	(void)why;
	g->ended++;
	g->status = status;
}

/* A coordinator that keeps serving (with the callback or not) and member 1. */
static void meet(struct rh *w, struct got *co, struct got *m, int stay, int callback)
{
	struct rdzv_config cfg;

	rh_init(w, 2, 0, "job-fabric", TOKEN, sizeof(TOKEN) - 1, 10000);
	w->base.deadline_ms = w->deadline + 1000;
	rh_coord_cfg(w, &cfg);
	cfg.keep_serving = 1;
	if (callback) {
		cfg.fabric = on_fabric;
		cfg.fabric_arg = co;
	}
	rh_start_coord_cfg(w, &cfg);
	rh_member_cfg(w, 1, &cfg);
	cfg.stay = stay;
	cfg.self.flags |= stay ? RDZV_PF_FABRIC : 0;
	cfg.ended = on_end;
	cfg.ended_arg = m;
	rh_start_member_in(w, w->ev, 1, &cfg);
	w->want = 2;
	rh_pump_ev(w->ev, 9000, &w->s[1].done);
	while (!w->co_done)
		rh_pump_ev(w->ev, 100, &w->co_done);
	assert_int_equal(w->co_rc, 0);
	assert_int_equal(w->s[1].rc, 0);
	/* the coordinator knows who reports */
	assert_int_equal((w->co_res.table[1].flags & RDZV_PF_FABRIC) != 0, stay);
}

static void report(struct rdzv_fabric *f)
{
	memset(f, 0, sizeof(*f));
	f->verdict = 3;
	f->flags = 0x5;
	f->rails = 2;
	snprintf(f->primary_if, sizeof(f->primary_if), "eth0");
	snprintf(f->line, sizeof(f->line), "fabric: primary: CMD's TCP: 252 MB on eth0");
	snprintf(f->remotes[0].addr, sizeof(f->remotes[0].addr), "10.1.1.12");
	f->remotes[0].bytes = 7000000;
	snprintf(f->remotes[1].addr, sizeof(f->remotes[1].addr), "fd00:0:0::7");
	f->remotes[1].bytes = 1ull << 40;
	f->nremotes = 2;
}

static void test_report(void **state)
{
	struct got co = {0}, m = {0};
	struct rdzv_fabric f;
	struct rh w;

	(void)state;
	meet(&w, &co, &m, 1, 1);
	report(&f);
	assert_int_equal(rdzv_member_fabric(w.s[1].m, &f), 0);
	rh_pump_ev(w.ev, 3000, &co.n);
	assert_int_equal(co.n, 1);
	assert_int_equal(co.index, 1);
	assert_int_equal(co.f.verdict, 3);
	assert_int_equal(co.f.flags, 0x5);
	assert_int_equal(co.f.rails, 2);
	assert_string_equal(co.f.primary_if, "eth0");
	/* the line is made safe text: no quote reaches a log or a file */
	assert_string_equal(co.f.line, "fabric: primary: CMD?s TCP: 252 MB on eth0");
	assert_int_equal(co.f.nremotes, 2);
	assert_string_equal(co.f.remotes[0].addr, "10.1.1.12");
	assert_int_equal(co.f.remotes[0].bytes, 7000000);
	assert_string_equal(co.f.remotes[1].addr, "fd00::7"); /* re-printed */
	assert_int_equal(co.f.remotes[1].bytes, 1ull << 40);
	assert_true(rdzv_member_flushed(w.s[1].m));
	/* the session stays: the next report too */
	f.flags |= 0x1;
	assert_int_equal(rdzv_member_fabric(w.s[1].m, &f), 0);
	co.n = 0;
	rh_pump_ev(w.ev, 3000, &co.n);
	assert_int_equal(co.n, 1);
	assert_int_equal(m.ended, 0);
	rh_free(&w);
}

static void test_no_session(void **state)
{
	struct got co = {0}, m = {0};
	struct rdzv_fabric f;
	struct rh w;

	(void)state;
	meet(&w, &co, &m, 0, 1);
	report(&f);
	assert_int_equal(rdzv_member_fabric(w.s[1].m, &f), -ENOTCONN);
	assert_int_equal(rdzv_member_fabric(NULL, &f), -ENOTCONN);
	rh_free(&w);
}

/* What a member says is checked: an address that is not one drops its session. */
static void test_bad_address(void **state)
{
	struct got co = {0}, m = {0};
	struct rdzv_fabric f;
	struct rh w;

	(void)state;
	meet(&w, &co, &m, 1, 1);
	report(&f);
	snprintf(f.remotes[1].addr, sizeof(f.remotes[1].addr), "10.1.1.999");
	assert_int_equal(rdzv_member_fabric(w.s[1].m, &f), 0);
	rh_pump_ev(w.ev, 3000, &m.ended);
	assert_int_equal(co.n, 0);
	assert_int_equal(m.ended, 1);
	assert_int_equal(m.status, -1);
	rh_free(&w);
}

/* A coordinator that takes no reports skips the frame and keeps the session. */
static void test_skipped(void **state)
{
	struct got co = {0}, m = {0};
	struct rdzv_fabric f;
	int never = 0;
	struct rh w;

	(void)state;
	meet(&w, &co, &m, 1, 0);
	report(&f);
	assert_int_equal(rdzv_member_fabric(w.s[1].m, &f), 0);
	rh_pump_ev(w.ev, 500, &never);
	assert_int_equal(m.ended, 0);
	assert_int_equal(rdzv_coord_end(w.co, 0), 0); /* the session still carries END */
	rh_pump_ev(w.ev, 3000, &m.ended);
	assert_int_equal(m.ended, 1);
	assert_int_equal(m.status, 0);
	rh_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_report),
	    cmocka_unit_test(test_no_session),
	    cmocka_unit_test(test_bad_address),
	    cmocka_unit_test(test_skipped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
