/* SPDX-License-Identifier: MIT */
/* test_support.c - what agent/cli/main.c sets up in the real binary: the log level. */
#include "rdzv/gx/gx.h"

#include <stdlib.h>

__attribute__((constructor)) static void test_support_init(void)
{
	const char *v = getenv("GX_TEST_LOG");

	gx_log_set_level(v && *v >= '0' && *v <= '4' ? *v - '0' : GX_LOG_WARN);
}
