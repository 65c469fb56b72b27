/* SPDX-License-Identifier: MIT */
/* test_rdzv_guard.c - the pre-authentication budget (gx_pa) and the rate-limited
 * warnings (gx_rl) against strangers: a property test of the budget against a plain model
 * (random admits, adds, deletes and evictions from a few sources), the loopback rule,
 * and the warning counters. */
#include "rdzv/gx/gx.h"

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

static struct gx_pa_ent *oldest_unknown(const struct gx_pa *pa, int known)
{
	struct gx_pa_ent *e;

	for (e = pa->oldest; e; e = e->newer)
		if (!e->known)
			return e;
	return known ? pa->oldest : NULL;
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
		int i = (int)(random() % NENT), s = (int)(random() % NSRC), known;
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
		known = s == 0; /* one peer address, the rest strangers */
		if (gx_pa_admit(&pa, buf, known, 0, &old) < 0) {
			/* refused at the per-source cap, or a stranger when all are known */
			assert_true(had == pa.per_src || (!known && pa.n >= pa.max));
			continue;
		}
		assert_true(had < pa.per_src);
		if (pa.n >= pa.max) /* at the bound the oldest stranger goes, a peer never */
			assert_ptr_equal(old, oldest_unknown(&pa, known));
		else
			assert_null(old);
		if (old)
			gx_pa_del(&pa, old);
		gx_pa_add(&pa, &m->e[i], buf, known);
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
		assert_int_equal(gx_pa_admit(&pa, "127.0.0.1", 0, 0, &old), 0);
		assert_null(old);
		gx_pa_add(&pa, &e[i], "127.0.0.1", 0);
	}
	assert_int_equal(gx_pa_admit(&pa, "127.0.0.1", 0, 0, &old), 0); /* the total holds */
	assert_ptr_equal(old, &e[0]);
	gx_pa_del(&pa, &e[1]);
	assert_int_equal(gx_pa_admit(&pa, "10.1.1.1", 0, 0, &old), 0);
	assert_null(old);
	gx_pa_add(&pa, &e[3], "10.1.1.1", 0);
	assert_int_equal(gx_pa_admit(&pa, "10.1.1.1", 0, 0, &old), -EBUSY);
	/* the caller's own bound ("full") also makes room */
	assert_int_equal(gx_pa_admit(&pa, "10.1.1.2", 0, 1, &old), 0);
	assert_ptr_equal(old, &e[0]);
	gx_pa_free(&pa);
}

/* A stranger's connections never push out a known peer's handshake. */
static void test_known_kept(void **state)
{
	struct gx_pa_ent e[5] = {0}, *old = NULL;
	struct gx_pa pa;
	char src[32];
	int i;

	(void)state;
	assert_int_equal(gx_pa_init(&pa, 4, 2), 0);
	gx_pa_add(&pa, &e[0], "192.168.1.10", 1); /* the oldest: a peer */
	for (i = 1; i < 4; i++) {
		snprintf(src, sizeof(src), "192.168.1.%d", 100 + i);
		gx_pa_add(&pa, &e[i], src, 0);
	}
	for (i = 1; i < 4; i++) { /* each stranger pushes out the oldest stranger */
		snprintf(src, sizeof(src), "192.168.1.%d", 200 + i);
		assert_int_equal(gx_pa_admit(&pa, src, 0, 0, &old), 0);
		assert_ptr_equal(old, &e[i]);
		gx_pa_del(&pa, old);
		gx_pa_add(&pa, &e[i], src, 0);
	}
	assert_true(e[0].in);
	gx_pa_del(&pa, &e[1]);
	gx_pa_del(&pa, &e[2]);
	gx_pa_del(&pa, &e[3]);
	for (i = 1; i < 4; i++)
		gx_pa_add(&pa, &e[i], "192.168.1.11", 1);
	assert_int_equal(gx_pa_admit(&pa, "192.168.1.12", 0, 0, &old), -EBUSY); /* all peers */
	assert_int_equal(gx_pa_admit(&pa, "192.168.1.12", 1, 0, &old), 0);
	assert_ptr_equal(old, &e[0]);
	gx_pa_free(&pa);
}

/*
 * IPv6: a stranger with a /64 has 2^64 addresses. Addresses from outside the table count in
 * their /64 (per_src * GX_PA_NET_MULT for the whole /64), table peers only as themselves,
 * and every link-local address is one source. On 9740b38 each address was a source of its
 * own: 200 addresses of one /64 held 200 handshakes, and so did 200 link-local ones.
 */
static void test_ipv6_sources(void **state)
{
	static struct gx_pa_ent e[400];
	struct gx_pa_ent *old = NULL;
	struct gx_pa pa;
	size_t i, k = 0, held;
	char src[64];

	(void)state;
	memset(e, 0, sizeof(e));
	assert_int_equal(gx_pa_init(&pa, 1000, 4), 0);
	for (held = 0, i = 0; i < 200; i++) { /* 200 strangers' addresses of one /64 */
		snprintf(src, sizeof(src), "2001:db8:1:2::%zx", i + 1);
		if (gx_pa_admit(&pa, src, 0, 0, &old) < 0)
			continue;
		gx_pa_add(&pa, &e[k++], src, 0);
		held++;
	}
	printf("# one /64, 200 addresses: %zu held\n", held);
	assert_int_equal(held, 4 * 16);
	/* the next /64 is another source; the table's peers in the full one still get in */
	assert_int_equal(gx_pa_admit(&pa, "2001:db8:1:3::1", 0, 0, &old), 0);
	for (i = 0; i < 8; i++) {
		snprintf(src, sizeof(src), "2001:db8:1:2:ffff::%zx", i + 1);
		assert_int_equal(gx_pa_admit(&pa, src, 1, 0, &old), 0);
		gx_pa_add(&pa, &e[k++], src, 1);
	}
	for (held = 0, i = 0; i < 200; i++) { /* link-local, any interface: one source */
		snprintf(src, sizeof(src), "fe80::%zx:1", i + 1);
		if (gx_pa_admit(&pa, src, 0, 0, &old) < 0)
			continue;
		gx_pa_add(&pa, &e[k++], src, 0);
		held++;
	}
	printf("# link-local, 200 addresses: %zu held\n", held);
	assert_int_equal(held, 4);
	/* IPv4 and v4-mapped addresses are their own sources, as before */
	assert_int_equal(gx_pa_admit(&pa, "10.1.1.1", 0, 0, &old), 0);
	assert_int_equal(gx_pa_admit(&pa, "::ffff:10.1.1.1", 0, 0, &old), 0);
	gx_pa_free(&pa);
}

/* A refusal says why: the source's own limit, its /64's, or a full budget (on 9740b38 the
 * coordinator said "0 unauthenticated ones from there" for a full budget). */
static void test_refusal_why(void **state)
{
	struct gx_pa_ent e[4] = {0}, *old = NULL;
	struct gx_pa pa;
	char why[200];

	(void)state;
	assert_int_equal(gx_pa_init(&pa, 2, 1), 0);
	gx_pa_add(&pa, &e[0], "10.0.0.1", 1);
	assert_int_equal(gx_pa_admit(&pa, "10.0.0.1", 1, 0, &old), -EBUSY);
	assert_string_equal(gx_pa_why(&pa, "10.0.0.1", why, sizeof(why)),
			    "1 unauthenticated ones from there (the limit per source)");
	gx_pa_add(&pa, &e[1], "10.0.0.2", 1);
	assert_int_equal(gx_pa_admit(&pa, "10.0.0.3", 0, 0, &old), -EBUSY); /* all known */
	assert_non_null(strstr(gx_pa_why(&pa, "10.0.0.3", why, sizeof(why)),
			       "the pre-authentication budget is full (2 unauthenticated"));
	gx_pa_free(&pa);
	assert_int_equal(gx_pa_init(&pa, 100, 1), 0);
	pa.per_net = 1;
	gx_pa_add(&pa, &e[2], "2001:db8::1", 0);
	assert_int_equal(gx_pa_admit(&pa, "2001:db8::2", 0, 0, &old), -EBUSY);
	assert_string_equal(gx_pa_why(&pa, "2001:db8::2", why, sizeof(why)),
			    "1 unauthenticated ones from 2001:db8::/64 (the limit per /64)");
	gx_pa_free(&pa);
}

static void test_ratelimit(void **state)
{
	struct gx_rl rl = {.what = "test: strangers"};
	int i, level = gx_log_get_level();

	(void)state;
	gx_log_set_level(GX_LOG_ERROR); /* -q: nothing printed, still counted */
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
	gx_log_set_level(level);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_budget_property), cmocka_unit_test(test_loopback_exempt),
	    cmocka_unit_test(test_known_kept),	    cmocka_unit_test(test_ipv6_sources),
	    cmocka_unit_test(test_refusal_why),	    cmocka_unit_test(test_ratelimit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
