/* SPDX-License-Identifier: MIT */
/*
 * fuzz_brace.c - --peers brace expansion. Every name it returns must be a
 * valid host name or IP address, never more than the bound.
 */
#include "agent/peers/peers_int.h"
#include "rdzv/gx/gx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX 5000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *list, **names = NULL, err[256], ip[64];
	size_t n = 0, i;

	if (size > 4096)
		return 0;
	list = malloc(size + 1);
	if (!list)
		return 0;
	memcpy(list, data, size);
	list[size] = '\0';
	if (agent_peers_expand_max(list, FUZZ_MAX, &names, &n, err, sizeof(err)) == 0) {
		if (n == 0 || n > FUZZ_MAX || names[n] != NULL)
			abort();
		for (i = 0; i < n; i++)
			if (!gx_valid_hostname(names[i]) &&
			    gx_addr_normalize(names[i], ip, sizeof(ip)) < 0)
				abort();
		agent_names_free(names, n);
	}
	free(list);
	return 0;
}
