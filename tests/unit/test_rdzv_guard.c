/* SPDX-License-Identifier: MIT */
/* test_rdzv_guard.c - the pre-authentication budget (gx_pa) and the rate-limited
 * warnings (gx_rl) of issue 25: a property test of the budget against a plain model
 * (random admits, adds, deletes and evictions from a few sources), the loopback rule,
 * and the warning counters. */
#include "rdzv/gx.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NENT 600
#define NSRC 12

struct model {
	struct gx_pa_ent e[NENT];
	int src[NENT];	      /* source of e[i] while in */
	uint64_t order[NENT]; /* admission order while in */
};

static const char *src_name(int s, char *buf, size_t len)
{
	snprintf(buf, len, "10.98.%d.%d", s / 200, 10 + s % 200);
	return buf;
}

static void check_model(const struct gx_pa *pa, const struct model *m)
{
	size_t per[NSRC] = {0}, n = 0;
	const struct gx_pa_ent *e, *prev = NULL;
	char buf[32];
	int i;

	for (i = 0; i < NENT; i++)
		if (m->e[i].in) {
			per[m->src[i]]++;
			n++;
		}
	assert_int_equal(pa->n, n);
	assert_true(pa->n <= pa->max);
	for (i = 0; i < NSRC; i++) {
		assert_int_equal(gx_pa_count(pa, src_name(i, buf, sizeof(buf))), per[i]);
		assert_true(per[i] <= pa->per_src);
	}
	/* oldest first: the list is in admission order */
	for (e = pa->oldest; e; prev = e, e = e->newer) {
		if (prev)
			assert_true(m->order[prev - m->e] < m->order[e - m->e]);
		n--;
	}
	assert_int_equal(n, 0);
	assert_ptr_equal(prev, pa->newest);
}

static void test_budget_property(void **state)
{
	struct model *m = calloc(1, sizeof(*m));
	uint64_t seq = 1;
	struct gx_pa pa;
	char buf[32];
	int step;

	(void)state;
	assert_non_null(m);
	srandom(25);
	assert_int_equal(gx_pa_init(&pa, 64, 2), 0);
	for (step = 0; step < 20000; step++) {
		int i = (int)(random() % NENT), s = (int)(random() % NSRC);
		struct gx_pa_ent *old = NULL;
		size_t had;

		if (m->e[i].in) { /* authenticated or closed */
			gx_pa_del(&pa, &m->e[i]);
			gx_pa_del(&pa, &m->e[i]); /* twice is harmless */
			check_model(&pa, m);
			continue;
		}
		src_name(s, buf, sizeof(buf));
		had = gx_pa_count(&pa, buf);
		if (gx_pa_admit(&pa, buf, &old) < 0) {
			assert_int_equal(had, pa.per_src); /* refused only at the per-source cap */
			continue;
		}
		assert_true(had < pa.per_src);
		if (pa.n >= pa.max) /* at the bound the oldest goes, never another one */
			assert_ptr_equal(old, pa.oldest);
		else
			assert_null(old);
		if (old)
			gx_pa_del(&pa, old);
		gx_pa_add(&pa, &m->e[i], buf);
		m->src[i] = s;
		m->order[i] = seq++;
		check_model(&pa, m);
	}
	gx_pa_free(&pa);
	free(m);
}

static void test_loopback_exempt(void **state)
{
	struct gx_pa_ent e[4] = {0}, *old = NULL;
	struct gx_pa pa;
	int i;

	(void)state;
	assert_true(gx_addr_is_loopback("127.0.0.1"));
	assert_true(gx_addr_is_loopback("127.9.9.9"));
	assert_true(gx_addr_is_loopback("::1"));
	assert_true(gx_addr_is_loopback("::ffff:127.0.0.1"));
	assert_false(gx_addr_is_loopback("10.0.0.1"));
	assert_false(gx_addr_is_loopback("::ffff:10.0.0.1"));
	assert_false(gx_addr_is_loopback("?"));
	assert_int_equal(gx_pa_init(&pa, 3, 1), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(gx_pa_admit(&pa, "127.0.0.1", &old), 0);
		assert_null(old);
		gx_pa_add(&pa, &e[i], "127.0.0.1");
	}
	assert_int_equal(gx_pa_admit(&pa, "127.0.0.1", &old), 0); /* the total still holds */
	assert_ptr_equal(old, &e[0]);
	gx_pa_del(&pa, &e[1]);
	assert_int_equal(gx_pa_admit(&pa, "10.1.1.1", &old), 0);
	assert_null(old);
	gx_pa_add(&pa, &e[3], "10.1.1.1");
	assert_int_equal(gx_pa_admit(&pa, "10.1.1.1", &old), -EBUSY);
	gx_pa_free(&pa);
}

static void test_ratelimit(void **state)
{
	struct gx_rl rl = {.what = "test: strangers"};
	int i, level = gx_log_level;

	(void)state;
	gx_log_level = GX_LOG_ERROR; /* -q: nothing printed, still counted */
	for (i = 0; i < 1000; i++)
		gx_rl_log(&rl, "stranger %d", i);
	assert_int_equal(rl.n, 1000);
	assert_int_equal(rl.held, 1000 - GX_RL_FIRST); /* one interval: no summary yet */
	rl.next_ms = gx_now_ms() - 1;		       /* the interval passed */
	gx_rl_flush(&rl);
	assert_int_equal(rl.held, 0);
	assert_true(rl.next_ms > gx_now_ms());
	gx_rl_log(&rl, "one more");
	assert_int_equal(rl.held, 1);
	gx_log_level = level;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_budget_property),
	    cmocka_unit_test(test_loopback_exempt),
	    cmocka_unit_test(test_ratelimit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
