/* SPDX-License-Identifier: MIT */
/*
 * nd_pcidev.c - the SR-IOV network device plugin's environment as a netdetect
 * source (README.md "Sources"; tests/fixtures/k8s-sources.md): the plugin sets
 * PCIDEVICE_<RESOURCE>=<addr>,<addr> and PCIDEVICE_<RESOURCE>_INFO, a JSON object
 * keyed by address, each holding one object per info provider ("generic":
 * {"deviceID"}, "rdma": {"rdma_dev" (v3.10+), "uverbs", "umad", "issm",
 * "rdma_cm"}, "extra": {...}). Each address is mapped to its netdev and RDMA
 * device through sysfs (bus/pci/devices/<addr>/{net,infiniband}/) under a root
 * tests point at a fixture tree. The environment is untrusted: names, values
 * and everything read from sysfs are bounded and validated before use.
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PD_PREFIX "PCIDEVICE_"
#define PD_INFO "_INFO"
#define PD_UVERBS "/dev/infiniband/uverbs"

extern char **environ;

struct pd_acc {
	struct nd_pcidev *devs; /* ND_PCIDEV_MAX slots */
	size_t n;
	char *err;
	size_t errlen;
	int rc; /* 0, or GX_EJSON once something was rejected */
};

static int pd_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

static int pd_is_bdf(const char *a, size_t n)
{
	return n == 12 && a[4] == ':' && a[7] == ':' && a[10] == '.' && pd_hex(a, 4) &&
	       pd_hex(a + 5, 2) && pd_hex(a + 8, 2) && a[11] >= '0' && a[11] <= '7';
}

/* Auxiliary bus ids (sub-functions): "mlx5_core.sf.4": [A-Za-z0-9_.-], a dot, no "..". */
static int pd_is_aux(const char *a, size_t n)
{
	size_t i;

	if (n == 0 || n >= 64 || !isalnum((unsigned char)a[0]) || !memchr(a, '.', n) ||
	    memmem(a, n, "..", 2))
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)a[i]) && !strchr("_.-", a[i]))
			return 0;
	return 1;
}

int nd_pcidev_addr_ok(const char *addr)
{
	size_t n = 0;

	while (n < 64 && addr[n]) /* (strnlen: GCC warns when a caller's buffer is shorter) */
		n++;

	return pd_is_bdf(addr, n) || pd_is_aux(addr, n);
}

/* Record the first rejection in err; later ones only in the debug trace. */
__attribute__((format(printf, 2, 3))) static void pd_reject(struct pd_acc *a, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	gx_debug("netdetect: %s", line);
	if (a->rc == 0 && a->errlen)
		snprintf(a->err, a->errlen, "%s", line);
	a->rc = GX_EJSON;
}

/* Text of an untrusted item for an error line: itself when short and printable. */
static const char *pd_show(const char *s, size_t n, char *buf, size_t len)
{
	if (n >= len)
		return "(too long)";
	memcpy(buf, s, n);
	buf[n] = '\0';
	return gx_safe_text(buf, len - 1) ? buf : "(unprintable)";
}

static struct nd_pcidev *pd_find(struct pd_acc *a, const char *addr)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (strcmp(a->devs[i].addr, addr) == 0)
			return &a->devs[i];
	return NULL;
}

/* The value of env entry NAME exactly, or NULL. */
static const char *pd_getenv(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* "uverbsN" from "/dev/infiniband/uverbsN", else "". */
static void pd_uverbs(json_t *v, char *out, size_t len)
{
	const char *s = json_is_string(v) ? json_string_value(v) : "";
	size_t k = strlen(PD_UVERBS), n = strlen(s);

	out[0] = '\0';
	if (n > k && n - k <= 4 && strncmp(s, PD_UVERBS, k) == 0 &&
	    strspn(s + k, "0123456789") == n - k)
		snprintf(out, len, "uverbs%s", s + k);
}

/* What one _INFO entry says of device d: the rdma provider's rdma_dev and uverbs. */
static void pd_info_dev(struct pd_acc *a, const char *ivar, json_t *o, struct nd_pcidev *d)
{
	json_t *rdma = json_object_get(o, "rdma"), *rd;
	const char *s;

	d->vfio = json_is_object(json_object_get(o, "vfio"));
	if (!json_is_object(rdma))
		return;
	rd = json_object_get(rdma, "rdma_dev");
	s = json_is_string(rd) ? json_string_value(rd) : NULL;
	if (rd && (!s || strlen(s) != json_string_length(rd) || !gx_valid_rdmadev(s))) {
		pd_reject(a, "%s: %s: rdma.rdma_dev is not an RDMA device name", ivar, d->addr);
	} else if (s) {
		gx_strlcpy(d->rdma_dev, s, sizeof(d->rdma_dev));
		gx_strlcpy(d->rdma_src, "_INFO", sizeof(d->rdma_src));
	}
	pd_uverbs(json_object_get(rdma, "uverbs"), d->uverbs, sizeof(d->uverbs));
}

/* PCIDEVICE_<R>_INFO for the devices [first, a->n) of PCIDEVICE_<R>. */
static void pd_info(struct pd_acc *a, char *const *envp, const char *var, size_t first)
{
	char ivar[sizeof(a->devs[0].var) + sizeof(PD_INFO)];
	const char *val;
	json_error_t je;
	json_t *root = NULL;
	size_t i, len;

	snprintf(ivar, sizeof(ivar), "%s%s", var, PD_INFO);
	val = pd_getenv(envp, ivar);
	if (!val)
		return;
	len = strnlen(val, ND_PCIDEV_INFO_MAX + 1);
	if (len > ND_PCIDEV_INFO_MAX) {
		pd_reject(a, "%s: longer than %u bytes", ivar, ND_PCIDEV_INFO_MAX);
		return;
	}
	root = json_loadb(val, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(root)) {
		if (root)
			pd_reject(a, "%s: not a JSON object keyed by device address", ivar);
		else
			pd_reject(a, "%s: malformed JSON at column %d: %s", ivar, je.column,
				  je.text);
		goto out;
	}
	for (i = first; i < a->n; i++) {
		json_t *o = json_object_get(root, a->devs[i].addr);

		if (json_is_object(o))
			pd_info_dev(a, ivar, o, &a->devs[i]);
	}
out:
	json_decref(root);
}

/* One comma-separated item of PCIDEVICE_<R>. */
static void pd_item(struct pd_acc *a, const char *var, const char *s, size_t n)
{
	char buf[64];
	struct nd_pcidev *d;

	if (n == 0)
		return;
	if (n < sizeof(buf)) {
		memcpy(buf, s, n);
		buf[n] = '\0';
	}
	if (n >= sizeof(buf) || !nd_pcidev_addr_ok(buf)) {
		pd_reject(a, "%s: '%s' is not a PCI address", var, pd_show(s, n, buf, 48));
		return;
	}
	if (pd_find(a, buf))
		return;
	if (a->n >= ND_PCIDEV_MAX) {
		pd_reject(a, "%s: more than %d devices in PCIDEVICE_* variables", var,
			  ND_PCIDEV_MAX);
		return;
	}
	d = &a->devs[a->n++];
	memset(d, 0, sizeof(*d));
	gx_strlcpy(d->var, var, sizeof(d->var));
	gx_strlcpy(d->addr, buf, sizeof(d->addr));
}

/* Env variable names the plugin makes: upper case, digits, '_', '-' (ToUpper, "." -> "_"). */
static int pd_name_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

static void pd_var(struct pd_acc *a, char *const *envp, const char *entry)
{
	const char *eq = strchr(entry, '='), *p, *comma;
	size_t nlen = eq ? (size_t)(eq - entry) : 0, plen = strlen(PD_PREFIX), vlen, first = a->n;
	char var[sizeof(a->devs[0].var)];

	if (!eq || nlen <= plen || strncmp(entry, PD_PREFIX, plen) != 0)
		return;
	if (nlen >= sizeof(var) || !pd_name_ok(entry, nlen)) {
		pd_reject(a, "a PCIDEVICE_ variable has an invalid or too long name");
		return;
	}
	memcpy(var, entry, nlen);
	var[nlen] = '\0';
	p = eq + 1;
	if (p[strspn(p, " \t")] == '{') /* an _INFO object: read with its list */
		return;
	vlen = strnlen(p, ND_PCIDEV_LIST_MAX + 1);
	if (vlen > ND_PCIDEV_LIST_MAX) {
		pd_reject(a, "%s: longer than %d bytes", var, ND_PCIDEV_LIST_MAX);
		return;
	}
	for (; *p; p = comma + 1) {
		comma = strchr(p, ',');
		pd_item(a, var, p, comma ? (size_t)(comma - p) : strlen(p));
		if (!comma)
			break;
	}
	pd_info(a, envp, var, first);
}

int nd_pcidev_parse(char *const *envp, struct nd_pcidev **devs, size_t *n, char *err, size_t errlen)
{
	struct pd_acc a = {.err = err, .errlen = errlen};
	size_t i;

	*devs = NULL;
	*n = 0;
	if (errlen)
		err[0] = '\0';
	a.devs = calloc(ND_PCIDEV_MAX, sizeof(*a.devs));
	if (!a.devs)
		return -ENOMEM;
	for (i = 0; envp && envp[i]; i++)
		pd_var(&a, envp, envp[i]);
	if (a.n) {
		*devs = a.devs;
		*n = a.n;
		a.devs = NULL;
	}
	free(a.devs);
	return a.rc;
}

/* ---- sysfs ---------------------------------------------------------------- */
static int pd_path(char *buf, size_t len, const char *root, const char *addr, const char *sub)
{
	size_t n = strnlen(addr, 64);
	const char *bus = pd_is_bdf(addr, n) ? "pci" : pd_is_aux(addr, n) ? "auxiliary" : NULL;
	int k;

	if (!bus)
		return -EINVAL;
	k = snprintf(buf, len, "%s/bus/%s/devices/%s/%s", root, bus, addr, sub);
	return k < 0 || (size_t)k >= len ? -ENAMETOOLONG : 0;
}

/* The lowest valid entry of dir in byte order: the one the plugin names (rdmamap's
 * GetRdmaDevicesForPcidev lists os.ReadDir's sorted entries; GetRdmaDeviceName takes [0]). */
static int pd_first_entry(const char *dir, int (*valid)(const char *), char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (!d)
		return -ENOENT;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= len || !valid(e->d_name))
			continue;
		if (!found || strcmp(e->d_name, out) < 0)
			gx_strlcpy(out, e->d_name, len);
		found = 1;
	}
	closedir(d);
	return found ? 0 : -ENOENT;
}

int nd_sysfs_rdma(const char *sysroot, const char *addr, char *dev, size_t len)
{
	char path[PATH_MAX];
	int rc = pd_path(path, sizeof(path), sysroot, addr, "infiniband");

	return rc < 0 ? rc : pd_first_entry(path, gx_valid_rdmadev, dev, len);
}

int nd_sysfs_netdev(const char *sysroot, const char *addr, char *ifname, size_t len)
{
	char path[PATH_MAX];
	int rc = pd_path(path, sizeof(path), sysroot, addr, "net");

	return rc < 0 ? rc : pd_first_entry(path, gx_valid_ifname, ifname, len);
}

/* class/infiniband_verbs/uverbsN/ibdev: the device behind a uverbs node (plugins < v3.10). */
static int pd_uverbs_ibdev(const char *sysroot, const char *uverbs, char *dev, size_t len)
{
	char path[PATH_MAX], buf[ND_DEVSIZ + 2];
	ssize_t got;
	int fd,
	    k = snprintf(path, sizeof(path), "%s/class/infiniband_verbs/%s/ibdev", sysroot, uverbs);

	if (k < 0 || (size_t)k >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return -ENOENT;
	buf[got] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (!gx_valid_rdmadev(buf))
		return -EINVAL;
	return gx_strlcpy(dev, buf, len);
}

void nd_pcidev_resolve(const char *sysroot, struct nd_pcidev *devs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct nd_pcidev *d = &devs[i];

		if (nd_sysfs_netdev(sysroot, d->addr, d->netdev, sizeof(d->netdev)) < 0)
			d->netdev[0] = '\0';
		if (d->rdma_dev[0])
			continue;
		if (nd_sysfs_rdma(sysroot, d->addr, d->rdma_dev, sizeof(d->rdma_dev)) == 0)
			gx_strlcpy(d->rdma_src, "sysfs", sizeof(d->rdma_src));
		else if (d->uverbs[0] &&
			 pd_uverbs_ibdev(sysroot, d->uverbs, d->rdma_dev, sizeof(d->rdma_dev)) == 0)
			gx_strlcpy(d->rdma_src, "uverbs", sizeof(d->rdma_src));
		else
			d->rdma_dev[0] = '\0';
		gx_debug("netdetect: %s %s: netdev '%s', rdma '%s' (%s)",
			 d->var[0] ? d->var : "pci", d->addr, d->netdev, d->rdma_dev, d->rdma_src);
	}
}

/* network-status device-info pci-addresses that name no rdma-device: resolve them too. */
static int pd_add_nets(const struct nd_inventory *inv, struct nd_pcidev **devs, size_t *n)
{
	struct nd_pcidev *grown;
	size_t i;

	if (!inv->nnets)
		return 0;
	grown = realloc(*devs, (*n + inv->nnets) * sizeof(**devs));
	if (!grown)
		return -ENOMEM;
	*devs = grown;
	for (i = 0; i < inv->nnets; i++) {
		const struct nd_net *net = &inv->nets[i];
		struct nd_pcidev *d = &grown[*n];
		size_t j;

		for (j = 0; j < *n && strcmp(grown[j].addr, net->pci) != 0; j++)
			;
		if (!net->pci[0] || net->rdma_dev[0] || j < *n || !nd_pcidev_addr_ok(net->pci))
			continue;
		memset(d, 0, sizeof(*d));
		gx_strlcpy(d->addr, net->pci, sizeof(d->addr));
		(*n)++;
	}
	return 0;
}

int nd_pcidev_load(char *const *envp, const char *sysroot, struct nd_inventory *inv, char *err,
		   size_t errlen)
{
	struct nd_pcidev *devs = NULL;
	size_t n = 0;
	int rc = nd_pcidev_parse(envp ? envp : environ, &devs, &n, err, errlen), rc2;

	if (rc == -ENOMEM)
		return rc;
	rc2 = pd_add_nets(inv, &devs, &n);
	if (rc2 < 0) {
		free(devs);
		return rc2;
	}
	nd_pcidev_resolve(sysroot ? sysroot : ND_SYSFS_ROOT, devs, n);
	free(inv->pcidevs);
	inv->pcidevs = n ? devs : NULL;
	inv->npcidevs = n;
	if (!n)
		free(devs);
	return rc;
}

const struct nd_pcidev *nd_pcidev_by_addr(const struct nd_inventory *inv, const char *addr)
{
	size_t i;

	for (i = 0; addr && addr[0] && i < inv->npcidevs; i++)
		if (strcmp(inv->pcidevs[i].addr, addr) == 0)
			return &inv->pcidevs[i];
	return NULL;
}

const struct nd_pcidev *nd_pcidev_by_netdev(const struct nd_inventory *inv, const char *ifname)
{
	size_t i;

	for (i = 0; ifname && ifname[0] && i < inv->npcidevs; i++)
		if (strcmp(inv->pcidevs[i].netdev, ifname) == 0)
			return &inv->pcidevs[i];
	return NULL;
}

/* A device of var that has no netdev in this pod (a DPDK device bound to vfio has none). */
static int pd_absent(const struct nd_inventory *inv, const struct nd_pcidev *d, const char *var)
{
	return strcmp(d->var, var) == 0 && !d->vfio &&
	       (!d->netdev[0] || !nd_link_by_name(inv, d->netdev));
}

/*
 * The device plugin allocated devices to this pod that no network attachment moved in:
 * the job then runs on whatever else is here and nothing would mention the variable.
 * Said once per variable, naming its absent devices.
 */
void nd_pcidev_absent(const struct nd_inventory *inv, struct nd_result *r)
{
	char list[256];
	size_t i, j, off;

	for (i = 0; i < inv->npcidevs; i++) {
		const struct nd_pcidev *d = &inv->pcidevs[i];

		if (!d->var[0] || !pd_absent(inv, d, d->var))
			continue;
		for (j = 0; j < i && !pd_absent(inv, &inv->pcidevs[j], d->var); j++)
			;
		if (j < i) /* said with the first one */
			continue;
		for (j = i, off = 0; j < inv->npcidevs && off < sizeof(list); j++) {
			const struct nd_pcidev *x = &inv->pcidevs[j];

			if (!pd_absent(inv, x, d->var))
				continue;
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s%s%s%s",
						off ? ", " : "", x->addr,
						x->rdma_dev[0] ? " (RDMA device " : "", x->rdma_dev,
						x->rdma_dev[0] ? ")" : "");
		}
		nd_result_warn(r,
			       "%s names %s, not in this pod: the SR-IOV device plugin allocated "
			       "it, but no network attachment moved it here (compare the pod's "
			       "k8s.v1.cni.cncf.io/networks with the resource's networks)",
			       d->var, list);
	}
}
