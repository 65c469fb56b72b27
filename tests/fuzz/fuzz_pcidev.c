/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pcidev.c - the SR-IOV device plugin environment reader (nd_pcidev.c).
 * The input is an environment: one NAME=VALUE per line (at most 64 entries).
 * Whatever it accepts must be bounded and validated: addresses pass
 * nd_pcidev_addr_ok (so sysfs paths built from them stay under the root), RDMA
 * device names pass gx_valid_rdmadev, uverbs is "uverbsN", the error line ends.
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FZ_MAX_ENV 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fz_check(const struct nd_pcidev *d)
{
	if (!nd_pcidev_addr_ok(d->addr) || strncmp(d->var, "PCIDEVICE_", 10) != 0)
		abort();
	if (d->rdma_dev[0] && !gx_valid_rdmadev(d->rdma_dev))
		abort();
	if (d->uverbs[0] && (strncmp(d->uverbs, "uverbs", 6) != 0 ||
			     strspn(d->uverbs + 6, "0123456789") != strlen(d->uverbs + 6)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *envp[FZ_MAX_ENV + 1], *p, *nl, err[256];
	struct nd_pcidev *devs = NULL;
	size_t n = 0, i, k = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (p = text; k < FZ_MAX_ENV && p < text + size; p = nl + 1) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		envp[k++] = p;
		if (!nl)
			break;
	}
	envp[k] = NULL;
	if (nd_pcidev_parse(envp, &devs, &n, err, sizeof(err)) < 0 &&
	    strnlen(err, sizeof(err)) == sizeof(err))
		abort(); /* the error line is always terminated */
	if (n > ND_PCIDEV_MAX || (n && !devs))
		abort();
	for (i = 0; i < n; i++)
		fz_check(&devs[i]);
	free(devs);
	free(text);
	return 0;
}
