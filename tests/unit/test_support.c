/* SPDX-License-Identifier: MIT */
/* test_support.c - the globals agent/main.c owns in the real binary. */
#include "rdzv/gx.h"

#include <stdlib.h>

int gx_log_level = GX_LOG_WARN;

__attribute__((constructor)) static void test_support_init(void)
{
	const char *v = getenv("GX_TEST_LOG");

	if (v && *v >= '0' && *v <= '4')
		gx_log_level = *v - '0';
}
