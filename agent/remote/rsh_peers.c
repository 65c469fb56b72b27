/* SPDX-License-Identifier: MIT */
/*
 * rsh_peers.c - the peers rendezvous.json records, for `rsh`'s HOST mapping (peer name, its
 * FQDN, its eth0 or secondary address) and for `gxboot hosts`.
 */
#include "agent/remote/rsh_int.h"
#include "agent/peers/peers.h"

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
