/* SPDX-License-Identifier: MIT */
/*
 * hosts.c - `gxboot hosts`: the peers rendezvous.json records (read by remote/'s
 * agent_rsh_peers_load) for Horovod elastic's --host-discovery-script and MPI Operator's
 * discover_hosts.sh: one "host:slots" line per peer, the secondary address as host.
 */
#include "agent/pipeline/out_int.h"
#include "agent/pipeline/pipeline.h"
#include "agent/remote/remote.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The world a member's rendezvous.json records, 0 when unreadable or not a member's
 * (the coordinator and observers know every peer; an elastic world is a bound). */
static long member_world(const char *path)
{
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	long w = root ? (long)json_integer_value(json_object_get(root, "world")) : 0;

	if (!root || json_integer_value(json_object_get(root, "rank")) < 1)
		w = 0;
	json_decref(root);
	return w;
}

/*
 * One line per peer in --hostfile-format; not given: "host:slots" (Horovod's
 * discovery script, MPI Operator's discover_hosts.sh), an IPv6 host in
 * brackets ("[fd00::2]:8": a bare address cannot be split at its ':').
 */
int agent_cmd_hosts(struct agent_opts *o, char *err, size_t errlen)
{
	enum agent_hostfile_fmt fmt = o->hostfile_format;
	struct agent_hf_peer *hp = NULL;
	struct rsh_peer *p = NULL;
	char path[4096], *text = NULL;
	size_t n = 0, i;
	long world;
	int rc;

	if (snprintf(path, sizeof(path), "%s/rendezvous.json", o->out) >= (int)sizeof(path))
		return GX_EUSAGE;
	rc = agent_out_failed_refuse(o->out, err, errlen);
	if (rc < 0)
		return rc;
	rc = agent_rsh_peers_load(path, &p, &n, NULL, err, errlen);
	if (rc == -ENOENT)
		snprintf(err, errlen,
			 "%s does not exist: run 'gxboot init' or 'gxboot -- CMD' first (--out)",
			 path);
	if (rc < 0)
		return rc == -ENOENT ? GX_EUSAGE : rc;
	world = member_world(path);
	if (world > (long)n)
		gx_warn("%s lists %zu of %ld peers (a member knows itself and the coordinator: "
			"run it with --full-table for every peer)",
			path, n, world);
	hp = calloc(n ? n : 1, sizeof(*hp));
	rc = hp ? 0 : -ENOMEM;
	for (i = 0; rc == 0 && i < n; i++) {
		hp[i].addr = p[i].addr;
		hp[i].name = p[i].name;
		hp[i].slots = p[i].slots;
	}
	if (rc == 0)
		rc = agent_hostfile_render(fmt == AGENT_HF_DEFAULT ? AGENT_HF_HOROVOD : fmt, hp, n,
					   &text, NULL, err, errlen);
	if (rc == 0 && (fputs(text, stdout) == EOF || fflush(stdout) != 0))
		rc = -EIO;
	free(text);
	free(hp);
	free(p);
	return rc;
}
