/* SPDX-License-Identifier: MIT */
/*
 * fuzz_fabric.c - what the transport report reads from others: NCCL's and UCX's log lines
 * (written by CMD into --out) and the kernel's sock_diag replies. The first byte picks the
 * reader. Whatever is kept must be bounded, terminated and printable; lists within their caps;
 * the verdict and the line of any facts so made must be well formed.
 */
#include "agent/fabric/fabric_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void printable(const char *s, size_t cap)
{
	size_t l = strnlen(s, cap), i;

	if (l == cap)
		abort();
	for (i = 0; i < l; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			abort();
}

static void count(void *arg, const struct fabric_sock *s)
{
	(void)s;
	(*(int *)arg)++;
}

static void lines(const char *text, struct fabric_facts *f)
{
	char line[4096];
	const char *p = text;
	size_t i;

	while (*p) {
		size_t l = strcspn(p, "\n");

		if (l >= sizeof(line))
			l = sizeof(line) - 1;
		memcpy(line, p, l);
		line[l] = '\0';
		agent_fabric_nccl_line(line, &f->nccl);
		agent_fabric_ucx_line(line, &f->ucx);
		p += l;
		p += *p == '\n';
	}
	if (f->nccl.nib_devs > FABRIC_MAX_DEVS || f->nccl.nsock_devs > FABRIC_MAX_DEVS ||
	    f->nccl.nwarns > FABRIC_MAX_WARNS || f->nccl.nenv > FABRIC_MAX_WARNS ||
	    f->ucx.ntls > FABRIC_MAX_DEVS || f->ucx.nwarns > FABRIC_MAX_WARNS ||
	    f->ucx.nenv > FABRIC_MAX_WARNS)
		abort();
	printable(f->nccl.network, sizeof(f->nccl.network));
	for (i = 0; i < f->nccl.nib_devs; i++)
		printable(f->nccl.ib_devs[i], sizeof(f->nccl.ib_devs[i]));
	for (i = 0; i < f->nccl.nsock_devs; i++)
		printable(f->nccl.sock_devs[i], sizeof(f->nccl.sock_devs[i]));
	for (i = 0; i < f->nccl.nwarns; i++)
		printable(f->nccl.warns[i], sizeof(f->nccl.warns[i]));
	for (i = 0; i < f->nccl.nenv; i++)
		printable(f->nccl.env[i], sizeof(f->nccl.env[i]));
	for (i = 0; i < f->ucx.ntls; i++)
		printable(f->ucx.tls[i], sizeof(f->ucx.tls[i]));
	for (i = 0; i < f->ucx.nwarns; i++)
		printable(f->ucx.warns[i], sizeof(f->ucx.warns[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fabric_facts *f;
	char *text, line[FABRIC_LINE_LEN];
	int n = 0;

	if (size < 1)
		return 0;
	if (data[0] & 1) { /* a sock_diag reply: bounded walk, no crash */
		(void)agent_fabric_diag_parse(data + 1, size - 1, count, &n);
		return 0;
	}
	f = calloc(1, sizeof(*f));
	text = malloc(size);
	if (!f || !text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	lines(text, f);
	agent_fabric_line(f, agent_fabric_verdict(f), line, sizeof(line));
	if (strnlen(line, sizeof(line)) == sizeof(line))
		abort();
	free(text);
	free(f);
	return 0;
}
