/* SPDX-License-Identifier: MIT */
/*
 * hosts.c - the peers rendezvous.json records, for `gxboot hosts` (Horovod
 * elastic's --host-discovery-script, MPI Operator's discover_hosts.sh: one
 * "host:slots" line per peer, the secondary address as host) and for `rsh`'s
 * HOST mapping (peer name, its FQDN, its eth0 or secondary address).
 */
#include "agent/pipeline/out_int.h"
#include "agent/peers/peers_int.h"
#include "agent/remote/rsh_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RSH_MAX_FILE (64u << 20) /* rendezvous.json of 100k peers stays far below */

static int norm(const char *in, char *out, size_t cap)
{
	out[0] = '\0';
	return !in || !in[0] || gx_addr_normalize(in, out, cap) == 0;
}

static int peer_from_json(json_t *o, struct rsh_peer *p)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *a4 = json_string_value(json_object_get(o, "addr4"));
	const char *a6 = json_string_value(json_object_get(o, "addr6"));
	const char *pr = json_string_value(json_object_get(o, "primary"));
	json_int_t slots = json_integer_value(json_object_get(o, "slots"));
	char v6[46];

	memset(p, 0, sizeof(*p));
	if (!name || strlen(name) >= sizeof(p->name) || !gx_safe_text(name, sizeof(p->name)))
		return GX_EUSAGE;
	memcpy(p->name, name, strlen(name) + 1);
	if (!norm(a4, p->addr, sizeof(p->addr)) || !norm(a6, v6, sizeof(v6)) ||
	    !norm(pr, p->primary, sizeof(p->primary)))
		return GX_EUSAGE;
	if (!p->addr[0])
		memcpy(p->addr, v6, sizeof(v6));
	p->slots = slots >= 1 && slots <= 1000000 ? (long)slots : 1;
	p->serves = json_is_true(json_object_get(o, "serves"));
	return 0;
}

int agent_rsh_peers_load(const char *path, struct rsh_peer **ret, size_t *n, long *port, char *err,
			 size_t errlen)
{
	struct rsh_peer *v = NULL;
	json_error_t je;
	json_t *root, *arr;
	size_t i, cnt = 0;
	int rc = GX_EUSAGE;

	*ret = NULL;
	*n = 0;
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		if (je.position == 0 && strstr(je.text, "unable to open"))
			rc = -ENOENT;
		snprintf(err, errlen, "%s: %s", path, je.text);
		return rc;
	}
	arr = json_object_get(root, "peers");
	if (port && json_is_integer(json_object_get(root, "port")))
		*port = (long)json_integer_value(json_object_get(root, "port"));
	if (!json_is_array(arr) || json_array_size(arr) == 0 ||
	    json_array_size(arr) > RSH_MAX_FILE / sizeof(*v)) {
		snprintf(err, errlen, "%s has no peers", path);
		goto out;
	}
	v = calloc(json_array_size(arr), sizeof(*v));
	rc = v ? 0 : -ENOMEM;
	for (i = 0; rc == 0 && i < json_array_size(arr); i++) {
		rc = peer_from_json(json_array_get(arr, i), &v[cnt]);
		if (rc < 0)
			snprintf(err, errlen, "%s: peer %zu is malformed", path, i);
		else if (v[cnt].addr[0])
			cnt++;
	}
	if (rc == 0) {
		*ret = v;
		*n = cnt;
		v = NULL;
	}
out:
	free(v);
	json_decref(root);
	return rc;
}

const struct rsh_peer *agent_rsh_peer_find(const struct rsh_peer *p, size_t n, const char *host,
					   const struct agent_domain *d)
{
	char a[46];
	size_t i;

	if (gx_addr_normalize(host, a, sizeof(a)) == 0) {
		for (i = 0; i < n; i++) {
			if (strcmp(p[i].addr, a) == 0 || strcmp(p[i].primary, a) == 0)
				return &p[i];
		}
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (agent_host_names(p[i].name, host, d))
			return &p[i];
	}
	return NULL;
}

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
