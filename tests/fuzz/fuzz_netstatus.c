/* SPDX-License-Identifier: MIT */
/*
 * fuzz_netstatus.c - the Multus network-status reader (a JSON array or a
 * downward-API annotations file). Whatever it accepts must be bounded and
 * validated: interface and RDMA device names pass the netdev / device rules.
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nd_net *nets = NULL;
	char err[512];
	size_t n = 0, i, j;

	if (nd_netstatus_parse((const char *)data, size, &nets, &n, err, sizeof(err)) < 0) {
		if (strnlen(err, sizeof(err)) == sizeof(err))
			abort(); /* the error line is always terminated */
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (nets[i].iface[0] && !gx_valid_ifname(nets[i].iface))
			abort();
		if (nets[i].rdma_dev[0] && !gx_valid_rdmadev(nets[i].rdma_dev))
			abort();
		for (j = 0; j < nets[i].nips; j++)
			if (!nets[i].ips[j] || strlen(nets[i].ips[j]) > 64)
				abort();
	}
	nd_nets_free(nets, n);
	return 0;
}
