/* SPDX-License-Identifier: MIT */
/*
 * test_agent_dns.c - c-ares' library state is taken once per process: lookups and the
 * --dns-server check make channels only. The binary is linked with
 * --wrap=ares_library_init,--wrap=ares_library_cleanup (Makefile), so the calls are counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ares.h>
#include <string.h>

#include "agent/peers/dns_int.h"

int __real_ares_library_init(int flags);
void __real_ares_library_cleanup(void);
int __wrap_ares_library_init(int flags);
void __wrap_ares_library_cleanup(void);

static int n_init, n_cleanup;

int __wrap_ares_library_init(int flags)
{
	n_init++;
	return __real_ares_library_init(flags);
}

void __wrap_ares_library_cleanup(void)
{
	n_cleanup++;
	__real_ares_library_cleanup();
}

static void never(void *arg, int rc, const struct agent_dns_answer *ans)
{
	(void)arg;
	(void)rc;
	(void)ans;
	fail_msg("a cancelled lookup called back");
}

static void test_library_once(void **state)
{
	struct gx_ev *ev = NULL;
	struct agent_dns *d;
	char err[256] = "";
	int i;

	(void)state;
	assert_int_equal(agent_dns_library_init(), 0);
	assert_int_equal(gx_ev_new(&ev), 0);
	for (i = 0; i < 5; i++) {
		/* a server on loopback that does not answer: the query stays pending */
		d = NULL;
		assert_int_equal(
		    agent_dns_start(ev, "coord.invalid.", "127.0.0.1:9", 29410, never, NULL, &d),
		    0);
		assert_non_null(d);
		agent_dns_free(d);
	}
	assert_int_equal(agent_dns_server_check("127.0.0.1:9", err, sizeof(err)), 0);
	assert_int_equal(agent_dns_server_check("bogus", err, sizeof(err)), GX_EUSAGE);
	gx_ev_free(ev);
	assert_int_equal(n_init, 1);
	assert_int_equal(n_cleanup, 0);
	agent_dns_library_cleanup();
	assert_int_equal(n_cleanup, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_library_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
