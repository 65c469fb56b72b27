/* SPDX-License-Identifier: MIT */
/*
 * nd_netstatus.c - Multus k8s.v1.cni.cncf.io/network-status (README.md
 * "network-status"): a file holding the JSON array (fieldRef of the one
 * annotation) or a downward-API annotations file, one key="Go-quoted value"
 * line each (the older networks-status key when only that one is there).
 * Untrusted input: every length is bounded, anything malformed is GX_EJSON with
 * one line, never a crash (fuzzed by tests/fuzz).
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NS_KEY "k8s.v1.cni.cncf.io/network-status"
#define NS_KEY_OLD "k8s.v1.cni.cncf.io/networks-status" /* Multus < 4 and still written */
#define NS_MAX_FILE (1u << 20)
#define NS_MAX_NETS 64
#define NS_MAX_IPS 32

void nd_nets_free(struct nd_net *nets, size_t n)
{
	size_t i, j;

	for (i = 0; nets && i < n; i++) {
		for (j = 0; j < nets[i].nips; j++)
			free(nets[i].ips[j]);
		free(nets[i].ips);
	}
	free(nets);
}

static int ns_hex(const char *s, int n, unsigned long *out)
{
	unsigned long v = 0;
	int i;

	for (i = 0; i < n; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return -EINVAL;
		v = v * 16 + (unsigned long)d;
	}
	*out = v;
	return 0;
}

static size_t ns_utf8(unsigned long cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* One escape at s[0] == '\\' (s+1 .. end); writes to o; returns bytes consumed or -EINVAL. */
static int ns_unescape_one(const char *s, const char *end, char *o, size_t *olen)
{
	static const char from[] = "\"\\/nrtabfv'", to[] = "\"\\/\n\r\t\a\b\f\v'";
	const char *p;
	unsigned long cp;
	int n;

	if (s + 1 >= end)
		return -EINVAL;
	p = strchr(from, s[1]);
	if (p && s[1]) {
		o[0] = to[p - from];
		*olen = 1;
		return 2;
	}
	n = s[1] == 'x' ? 2 : s[1] == 'u' ? 4 : s[1] == 'U' ? 8 : 0;
	if (!n || end - s < 2 + n || ns_hex(s + 2, n, &cp) < 0 || cp > 0x10ffff)
		return -EINVAL;
	if (n == 2) {
		o[0] = (char)cp;
		*olen = 1;
	} else {
		*olen = ns_utf8(cp, o);
	}
	return 2 + n;
}

/* Go-quoted "..." at s (end exclusive) into a new string (*out, *outlen). */
static int ns_unquote(const char *s, const char *end, char **out, size_t *outlen)
{
	char *buf = NULL, *o;
	size_t k;
	int rc = -EINVAL, n;

	if (end - s < 2 || s[0] != '"')
		goto out;
	buf = malloc((size_t)(end - s) * 2 + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (o = buf, s++; s < end && *s != '"'; s += n, o += k) {
		k = 1;
		n = 1;
		if (*s == '\\')
			n = ns_unescape_one(s, end, o, &k);
		else
			*o = *s;
		if (n < 0)
			goto out;
	}
	if (s >= end)
		goto out;
	*o = '\0';
	*outlen = (size_t)(o - buf);
	*out = buf;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	return rc;
}

/* The line KEY="..." of an annotations file, unquoted: 0, -ENOENT (none), GX_EJSON. */
static int ns_annotation(const char *text, size_t len, const char *key, char **json, size_t *jlen,
			 char *err, size_t errlen)
{
	const char *p = text, *end = text + len, *nl;
	size_t klen = strlen(key);

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if ((size_t)(nl - p) <= klen + 1 || memcmp(p, key, klen) != 0 || p[klen] != '=')
			continue;
		if (ns_unquote(p + klen + 1, nl, json, jlen) == 0)
			return 0;
		snprintf(err, errlen,
			 "network-status: the %s annotation is not a valid quoted string", key);
		return GX_EJSON;
	}
	return -ENOENT;
}

/*
 * The network-status annotation's value; Multus still writes the older key beside it
 * (*old set when only that one is there), and the newer one wins when both are.
 */
static int ns_from_annotations(const char *text, size_t len, char **json, size_t *jlen, int *old,
			       char *err, size_t errlen)
{
	int rc = ns_annotation(text, len, NS_KEY, json, jlen, err, errlen);

	*old = 0;
	if (rc != -ENOENT)
		return rc;
	rc = ns_annotation(text, len, NS_KEY_OLD, json, jlen, err, errlen);
	*old = rc == 0;
	if (rc == -ENOENT)
		snprintf(err, errlen, "network-status: no %s annotation (yet)", NS_KEY);
	return rc;
}

static int ns_str(json_t *o, const char *key, char *dst, size_t size, int idx, char *err,
		  size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v) && json_string_length(v) < size &&
	    strlen(json_string_value(v)) == json_string_length(v)) {
		memcpy(dst, json_string_value(v), json_string_length(v) + 1);
		return 0;
	}
	snprintf(err, errlen, "network-status[%d].%s: not a string of at most %zu bytes", idx, key,
		 size - 1);
	return GX_EJSON;
}

static int ns_ips(json_t *o, struct nd_net *n, int idx, char *err, size_t errlen)
{
	json_t *a = json_object_get(o, "ips"), *v;
	size_t i;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > NS_MAX_IPS)
		goto bad;
	n->ips = calloc(json_array_size(a) + 1, sizeof(*n->ips));
	if (!n->ips)
		return -ENOMEM;
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) >= ND_ADDR6SIZ + 4)
			goto bad;
		n->ips[n->nips] = strdup(json_string_value(v));
		if (!n->ips[n->nips])
			return -ENOMEM;
		n->nips++;
	}
	return 0;
bad:
	snprintf(err, errlen, "network-status[%d].ips: not an array of addresses", idx);
	return GX_EJSON;
}

static int ns_entry(json_t *o, struct nd_net *n, int idx, char *err, size_t errlen)
{
	json_t *di, *pci, *def;
	int rc;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "network-status[%d]: not an object", idx);
		return GX_EJSON;
	}
	def = json_object_get(o, "default");
	n->is_default = json_is_true(def);
	di = json_object_get(o, "device-info");
	pci = json_is_object(di) ? json_object_get(di, "pci") : NULL;
	if ((rc = ns_str(o, "name", n->name, sizeof(n->name), idx, err, errlen)) < 0 ||
	    (rc = ns_str(o, "interface", n->iface, sizeof(n->iface), idx, err, errlen)) < 0 ||
	    (rc = ns_str(o, "mac", n->mac, sizeof(n->mac), idx, err, errlen)) < 0 ||
	    (rc = ns_ips(o, n, idx, err, errlen)) < 0)
		return rc;
	if (json_is_object(pci) &&
	    ((rc = ns_str(pci, "pci-address", n->pci, sizeof(n->pci), idx, err, errlen)) < 0 ||
	     (rc = ns_str(pci, "rdma-device", n->rdma_dev, sizeof(n->rdma_dev), idx, err, errlen)) <
		 0))
		return rc;
	if ((n->iface[0] && !gx_valid_ifname(n->iface)) ||
	    (n->rdma_dev[0] && !gx_valid_rdmadev(n->rdma_dev))) {
		snprintf(err, errlen, "network-status[%d]: invalid interface or rdma-device name",
			 idx);
		return GX_EJSON;
	}
	return 0;
}

static int ns_parse_json(const char *text, size_t len, struct nd_net **nets, size_t *n, char *err,
			 size_t errlen)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *v;
	struct nd_net *out = NULL;
	size_t i, cnt = 0;
	int rc = 0;

	if (!root || !json_is_array(root) || json_array_size(root) > NS_MAX_NETS) {
		if (root)
			snprintf(err, errlen,
				 "network-status: not a JSON array of at most %d networks",
				 NS_MAX_NETS);
		else
			snprintf(err, errlen,
				 "network-status: malformed JSON at line %d column %d: %s", je.line,
				 je.column, je.text);
		rc = GX_EJSON;
		goto out;
	}
	out = calloc(json_array_size(root) + 1, sizeof(*out));
	if (!out) {
		rc = -ENOMEM;
		goto out;
	}
	json_array_foreach(root, i, v)
	{
		cnt++;
		rc = ns_entry(v, &out[i], (int)i, err, errlen);
		if (rc < 0)
			goto out;
	}
	*nets = out;
	*n = cnt;
	out = NULL;
out:
	nd_nets_free(out, cnt);
	json_decref(root);
	return rc;
}

static int ns_parse(const char *text, size_t len, struct nd_net **nets, size_t *n, int *old,
		    char *err, size_t errlen)
{
	char *json = NULL;
	size_t i = 0, jlen = 0;
	int rc;

	*nets = NULL;
	*n = 0;
	*old = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
		i++;
	if (i == len) {
		snprintf(err, errlen, "network-status: empty (not written by Multus yet?)");
		return -ENOENT;
	}
	if (text[i] == '[' || text[i] == '{')
		return ns_parse_json(text + i, len - i, nets, n, err, errlen);
	rc = ns_from_annotations(text, len, &json, &jlen, old, err, errlen);
	if (rc == 0)
		rc = ns_parse_json(json, jlen, nets, n, err, errlen);
	free(json);
	return rc;
}

int nd_netstatus_parse(const char *text, size_t len, struct nd_net **nets, size_t *n, char *err,
		       size_t errlen)
{
	int old;

	return ns_parse(text, len, nets, n, &old, err, errlen);
}

static int ns_read(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	char *b = NULL;
	size_t n = 0;
	ssize_t got;

	if (fd < 0)
		return -errno;
	b = malloc(NS_MAX_FILE + 1);
	if (!b) {
		rc = -ENOMEM;
		goto out;
	}
	while (n < NS_MAX_FILE && (got = read(fd, b + n, NS_MAX_FILE - n)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = -errno;
			goto out;
		}
		n += (size_t)got;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	b = NULL;
out:
	free(b);
	close(fd);
	return rc;
}

int nd_netstatus_load(const char *path, struct nd_inventory *inv, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc = ns_read(path, &text, &len);

	if (rc < 0) {
		snprintf(err, errlen, "--network-status %s: %s", path, gx_strerror(rc));
		rc = rc == -ENOMEM ? rc : GX_EUSAGE;
		goto out;
	}
	rc = ns_parse(text, len, &inv->nets, &inv->nnets, &inv->nets_old_key, err, errlen);
	if (rc == 0)
		inv->nets_loaded = 1;
out:
	free(text);
	return rc;
}
