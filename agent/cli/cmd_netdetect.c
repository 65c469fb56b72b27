/* SPDX-License-Identifier: MIT */
/*
 * cmd_netdetect.c - `gxboot netdetect`: run netdetect with the run command's
 * interface options and print every candidate, the choice and why (a wrong pick is
 * debugged from this output), like
 * ibdev2netdev plus an explanation. Exit 4 when no secondary interface fits.
 */
#include "agent/cli/cli_int.h"
#include "netdetect/netdetect.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>

static int print_json(const struct nd_result *r, int rc, const char *err)
{
	json_t *j = nd_result_json(r);
	size_t i;
	int ret = 0;

	if (!j)
		return -ENOMEM;
	if (rc < 0 && json_object_set_new(j, "error", json_string(err)) < 0)
		ret = -ENOMEM;
	if (ret == 0 && json_dumpf(j, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) < 0)
		ret = -EIO;
	if (ret == 0)
		fputc('\n', stdout);
	for (i = 0; i < r->nwarnings; i++)
		gx_warn("%s", r->warnings[i]);
	for (i = 0; i < r->nnotes; i++)
		gx_info("%s", r->notes[i]);
	json_decref(j);
	return ret;
}

int agent_cmd_netdetect(const struct agent_opts *o, char *err, size_t errlen)
{
	struct nd_request q = {
	    .iface = o->iface,
	    .rdma_dev = o->rdma_dev,
	    .network = o->network,
	    .network_status = o->network_status,
	    .allow_primary = o->allow_primary,
	    .rdma_mode = (int)o->rdma,
	    .rails = o->rails,
	    .keep_on_error = 1,
	};
	struct nd_result *r = NULL;
	int rc, prc = 0;

	rc = nd_detect(&q, &r, err, errlen);
	if (r && o->json)
		prc = print_json(r, rc, err);
	else if (r)
		nd_result_print(stdout, r);
	if (r && fflush(stdout) != 0)
		prc = -EIO;
	nd_result_free(r);
	if (rc == 0 && prc < 0)
		snprintf(err, errlen, "netdetect: writing the output: %s", gx_strerror(prc));
	return rc < 0 ? rc : prc;
}
