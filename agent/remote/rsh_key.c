/* SPDX-License-Identifier: MIT */
/*
 * rsh_key.c - rsh.key's text ("key=<64 hex>\nport=<n>\n"): remote owns the format, read
 * back by rsh_proto.c:agent_rsh_key_load; the pipeline owns --out and writes it there (0600).
 */
#include "agent/remote/rsh_int.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>

int agent_rsh_key_text(const unsigned char k[RSH_KEY_LEN], long port, char *out, size_t cap)
{
	char hex[2 * RSH_KEY_LEN + 1];
	int n;

	sodium_bin2hex(hex, sizeof(hex), k, RSH_KEY_LEN);
	n = snprintf(out, cap, "key=%s\nport=%ld\n", hex, port);
	sodium_memzero(hex, sizeof(hex));
	if (n < 0 || (size_t)n >= cap) {
		sodium_memzero(out, cap);
		return -ENOSPC;
	}
	return n;
}
