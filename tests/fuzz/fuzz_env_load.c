/* SPDX-License-Identifier: MIT */
/*
 * fuzz_env_load.c - the strict env file reader of `gxboot exec`. Whatever it
 * accepts must serialize again and parse back to the same variables.
 */
#include "agent/pipeline/out_int.h"
#include "rdzv/gx/gx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_env e = {0}, back = {0};
	char err[256], *sh = NULL;
	size_t len = 0, i;

	if (agent_env_parse((const char *)data, size, &e, err, sizeof(err)) < 0)
		return 0;
	if (agent_env_serialize_sh(&e, &sh, &len, err, sizeof(err)) < 0)
		abort(); /* a value the reader accepted must be writable */
	if (agent_env_parse(sh, len, &back, err, sizeof(err)) < 0 || back.n != e.n)
		abort();
	for (i = 0; i < e.n; i++)
		if (strcmp(e.v[i].name, back.v[i].name) || strcmp(e.v[i].value, back.v[i].value))
			abort();
	free(sh);
	agent_env_free(&e);
	agent_env_free(&back);
	return 0;
}
