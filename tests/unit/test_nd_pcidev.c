/* SPDX-License-Identifier: MIT */
/*
 * test_nd_pcidev.c - the SR-IOV network device plugin's PCIDEVICE_<RESOURCE> /
 * PCIDEVICE_<RESOURCE>_INFO environment (shapes recorded from the plugin's
 * source, tests/fixtures/k8s-sources.md) mapped through a sysfs fixture tree
 * (tests/fixtures/netdetect/sysfs) to netdevs and RDMA devices, and the choice
 * it steers: a Mellanox VF with _INFO, two resources, malformed JSON, an address
 * without an infiniband dir, old plugins (uverbs only), hostile values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/nd_fixture.h"

#define MAX_ENV 64

struct env {
	char *v[MAX_ENV + 1];
	size_t n;
};

/* NAME=VALUE lines of a fixture file ('#' comments) as an envp. */
static void env_load(const char *name, struct env *e)
{
	char path[PATH_MAX], line[8192];
	FILE *f = fopen(fx_path(name, path, sizeof(path)), "r");

	assert_non_null(f);
	memset(e, 0, sizeof(*e));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		assert_true(e->n < MAX_ENV);
		e->v[e->n] = strdup(line);
		assert_non_null(e->v[e->n++]);
	}
	fclose(f);
}

static void env_free(struct env *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		free(e->v[i]);
	e->n = 0;
}

static const char *sysroot(void)
{
	static char buf[PATH_MAX];

	return fx_path("sysfs", buf, sizeof(buf));
}

static const struct nd_pcidev *dev_at(const struct nd_pcidev *d, size_t n, const char *addr)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(d[i].addr, addr))
			return &d[i];
	fail_msg("%s not parsed", addr);
	return NULL;
}

static void test_mlx5_vf_info(void **state)
{
	struct nd_pcidev *d = NULL;
	struct env e;
	char err[256];
	size_t n = 0;

	(void)state;
	env_load("pcidev_mlx5_vf.env", &e);
	assert_int_equal(nd_pcidev_parse(e.v, &d, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_string_equal(d[0].var, "PCIDEVICE_NVIDIA_COM_RDMA_VF");
	assert_string_equal(d[0].addr, "0000:86:02.3");
	assert_string_equal(d[0].rdma_dev, "mlx5_4");
	assert_string_equal(d[0].rdma_src, "_INFO");
	assert_string_equal(d[0].uverbs, "uverbs4");
	assert_string_equal(d[0].netdev, "");
	nd_pcidev_resolve(sysroot(), d, n);
	assert_string_equal(d[0].netdev, "net2");
	assert_string_equal(d[0].rdma_src, "_INFO"); /* _INFO is not overridden */
	free(d);
	env_free(&e);
}

static void test_two_resources(void **state)
{
	struct nd_pcidev *d = NULL;
	const struct nd_pcidev *x;
	struct env e;
	char err[256];
	size_t n = 0;

	(void)state;
	env_load("pcidev_two.env", &e);
	assert_int_equal(nd_pcidev_parse(e.v, &d, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	nd_pcidev_resolve(sysroot(), d, n);
	x = dev_at(d, n, "0000:3b:02.2");
	assert_string_equal(x->var, "PCIDEVICE_NVIDIA_COM_RDMA_VF_A");
	assert_string_equal(x->netdev, "net1");
	assert_string_equal(x->rdma_dev, "mlx5_3");
	assert_string_equal(x->rdma_src, "sysfs");
	assert_string_equal(x->uverbs, "uverbs3");
	x = dev_at(d, n, "0000:d8:02.1");
	assert_string_equal(x->var, "PCIDEVICE_NVIDIA_COM_RDMA_VF_A");
	assert_string_equal(x->netdev, "net3");
	assert_string_equal(x->rdma_dev, "mlx5_5");
	x = dev_at(d, n, "0000:86:02.3");
	assert_string_equal(x->var, "PCIDEVICE_NVIDIA_COM_RDMA_VF_B");
	assert_string_equal(x->netdev, "net2");
	assert_string_equal(x->rdma_dev, "mlx5_4");
	free(d);
	env_free(&e);
}

static void test_malformed_info(void **state)
{
	struct nd_pcidev *d = NULL;
	struct env e;
	char err[256];
	size_t n = 0;

	(void)state;
	env_load("pcidev_malformed.env", &e);
	assert_int_equal(nd_pcidev_parse(e.v, &d, &n, err, sizeof(err)), GX_EJSON);
	assert_non_null(strstr(err, "PCIDEVICE_NVIDIA_COM_RDMA_VF_INFO: malformed JSON"));
	assert_int_equal(n, 1); /* the list is still used */
	assert_string_equal(d[0].rdma_dev, "");
	nd_pcidev_resolve(sysroot(), d, n);
	assert_string_equal(d[0].rdma_dev, "mlx5_4");
	assert_string_equal(d[0].rdma_src, "sysfs");
	free(d);
	env_free(&e);
}

static void test_no_infiniband_dir(void **state)
{
	struct nd_pcidev *d = NULL;
	struct env e;
	char err[256], dev[ND_DEVSIZ];
	size_t n = 0;

	(void)state;
	env_load("pcidev_intel.env", &e);
	assert_int_equal(nd_pcidev_parse(e.v, &d, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	nd_pcidev_resolve(sysroot(), d, n);
	assert_string_equal(d[0].netdev, "net5");
	assert_string_equal(d[0].rdma_dev, "");
	assert_string_equal(d[0].rdma_src, "");
	assert_int_equal(nd_sysfs_rdma(sysroot(), "0000:5e:02.0", dev, sizeof(dev)), -ENOENT);
	/* a device that is not there at all, and a netdev in another namespace */
	assert_int_equal(nd_sysfs_rdma(sysroot(), "0000:00:1f.6", dev, sizeof(dev)), -ENOENT);
	assert_int_equal(nd_sysfs_netdev(sysroot(), "0000:86:02.4", dev, sizeof(dev)), -ENOENT);
	assert_int_equal(nd_sysfs_rdma(sysroot(), "0000:86:02.4", dev, sizeof(dev)), 0);
	assert_string_equal(dev, "mlx5_8");
	free(d);
	env_free(&e);
}

static void test_old_plugin_uverbs_and_sf(void **state)
{
	struct nd_pcidev *d = NULL;
	const struct nd_pcidev *x;
	struct env e;
	char err[256];
	size_t n = 0;

	(void)state;
	env_load("pcidev_old_uverbs.env", &e);
	assert_int_equal(nd_pcidev_parse(e.v, &d, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	nd_pcidev_resolve(sysroot(), d, n);
	x = dev_at(d, n, "0000:af:00.6");
	assert_string_equal(x->netdev, "net6");
	assert_string_equal(x->rdma_dev, "mlx5_6");
	assert_string_equal(x->rdma_src, "uverbs");
	x = dev_at(d, n, "mlx5_core.sf.4"); /* auxiliary bus: sysfs wins over a junk uverbs9 */
	assert_string_equal(x->netdev, "net7");
	assert_string_equal(x->rdma_dev, "mlx5_9");
	assert_string_equal(x->rdma_src, "sysfs");
	free(d);
	env_free(&e);
}

static void test_hostile(void **state)
{
	struct nd_pcidev *d = NULL, junk;
	struct env e;
	char err[256], dev[ND_DEVSIZ];
	size_t n = 0;

	(void)state;
	env_load("pcidev_hostile.env", &e);
	assert_int_equal(nd_pcidev_parse(e.v, &d, &n, err, sizeof(err)), GX_EJSON);
	assert_string_equal(err, "PCIDEVICE_EVIL: '../../../../etc' is not a PCI address");
	assert_int_equal(n, 2); /* 0000:86:02.3 once (EVIL), 0000:d8:02.1 (ARRAY) */
	assert_string_equal(d[0].addr, "0000:86:02.3");
	assert_string_equal(d[0].var, "PCIDEVICE_EVIL");
	assert_string_equal(d[0].rdma_dev, ""); /* "mlx5_4;rm -rf /" refused */
	assert_string_equal(d[0].uverbs, "");	/* "uverbs4/../../x" refused */
	assert_string_equal(d[1].addr, "0000:d8:02.1");
	/* the sysfs helpers never leave the root */
	assert_int_equal(nd_sysfs_rdma(sysroot(), "../../../etc", dev, sizeof(dev)), -EINVAL);
	assert_int_equal(nd_sysfs_netdev(sysroot(), "0000:86:02.3/..", dev, sizeof(dev)), -EINVAL);
	/* invalid directory entries are skipped; several: the first in byte order, as
	 * the plugin (rdmamap's sorted os.ReadDir, GetRdmaDeviceName takes [0]) */
	assert_int_equal(nd_sysfs_rdma(sysroot(), "0000:3b:02.7", dev, sizeof(dev)), 0);
	assert_string_equal(dev, "mlx5_12");
	/* a uverbs ibdev file holding junk names nothing */
	memset(&junk, 0, sizeof(junk));
	gx_strlcpy(junk.addr, "0000:5e:02.0", sizeof(junk.addr));
	gx_strlcpy(junk.uverbs, "uverbs9", sizeof(junk.uverbs));
	nd_pcidev_resolve(sysroot(), &junk, 1);
	assert_string_equal(junk.rdma_dev, "");
	free(d);
	env_free(&e);
}

static void test_addr_and_bounds(void **state)
{
	char *envp[3], *big, *info;
	struct nd_pcidev *d = NULL;
	char err[256];
	size_t n = 0, i, off;

	(void)state;
	assert_true(nd_pcidev_addr_ok("0000:3b:02.2"));
	assert_true(nd_pcidev_addr_ok("0000:AF:00.7"));
	assert_true(nd_pcidev_addr_ok("mlx5_core.sf.4"));
	assert_false(nd_pcidev_addr_ok("3b:02.2"));
	assert_false(nd_pcidev_addr_ok("0000:3b:02.8"));
	assert_false(nd_pcidev_addr_ok(".."));
	assert_false(nd_pcidev_addr_ok("a/b.c"));
	assert_false(nd_pcidev_addr_ok(""));
	/* ND_PCIDEV_MAX devices are kept, one more is refused */
	big = malloc(ND_PCIDEV_LIST_MAX + 64);
	assert_non_null(big);
	off = (size_t)snprintf(big, 64, "PCIDEVICE_MANY=");
	for (i = 0; i <= ND_PCIDEV_MAX; i++)
		off += (size_t)snprintf(big + off, 16, "%s0000:%02zx:00.1", i ? "," : "", i);
	envp[0] = big;
	envp[1] = NULL;
	assert_int_equal(nd_pcidev_parse(envp, &d, &n, err, sizeof(err)), GX_EJSON);
	assert_int_equal(n, ND_PCIDEV_MAX);
	assert_non_null(strstr(err, "more than 64 devices"));
	free(d);
	/* a list longer than ND_PCIDEV_LIST_MAX is refused whole */
	memset(big, 0, ND_PCIDEV_LIST_MAX + 64);
	off = (size_t)snprintf(big, 64, "PCIDEVICE_LONG=0000:3b:02.2,");
	memset(big + off, ',', ND_PCIDEV_LIST_MAX);
	assert_int_equal(nd_pcidev_parse(envp, &d, &n, err, sizeof(err)), GX_EJSON);
	assert_int_equal(n, 0);
	assert_null(d);
	assert_non_null(strstr(err, "PCIDEVICE_LONG: longer than"));
	/* an _INFO longer than ND_PCIDEV_INFO_MAX is refused, the list kept */
	info = malloc(ND_PCIDEV_INFO_MAX + 64);
	assert_non_null(info);
	off = (size_t)snprintf(info, 64, "PCIDEVICE_LONG_INFO={\"a\":\"");
	memset(info + off, 'x', ND_PCIDEV_INFO_MAX);
	memcpy(info + off + ND_PCIDEV_INFO_MAX, "\"}", 3);
	snprintf(big, 64, "PCIDEVICE_LONG=0000:3b:02.2");
	envp[1] = info;
	envp[2] = NULL;
	assert_int_equal(nd_pcidev_parse(envp, &d, &n, err, sizeof(err)), GX_EJSON);
	assert_int_equal(n, 1);
	assert_non_null(strstr(err, "PCIDEVICE_LONG_INFO: longer than"));
	free(d);
	free(info);
	free(big);
}

/* ---- the choice --------------------------------------------------------- */
static struct nd_inventory *inv_with(const char *envfile, const char *ns)
{
	struct nd_inventory *inv = fx_load("sriov_pcidev.inv");
	char path[PATH_MAX], err[256];
	struct env e = {0};

	if (ns)
		assert_int_equal(
		    nd_netstatus_load(fx_path(ns, path, sizeof(path)), inv, err, sizeof(err)), 0);
	if (envfile)
		env_load(envfile, &e);
	assert_int_equal(nd_pcidev_load(e.v, sysroot(), inv, err, sizeof(err)), 0);
	env_free(&e);
	return inv;
}

static struct nd_result *choose(const struct nd_inventory *inv)
{
	struct nd_request q = {0};
	struct nd_result *r = NULL;
	char err[256];

	assert_int_equal(nd_detect_with(&q, inv, &r, err, sizeof(err)), 0);
	return r;
}

static const char *passed_why(const struct nd_result *r, const char *iface)
{
	size_t i;

	for (i = 0; i < r->npassed; i++)
		if (!strcmp(r->passed[i].iface, iface))
			return r->passed[i].why;
	fail_msg("%s not in passed_over", iface);
	return NULL;
}

static void test_choice_follows_pcidevice(void **state)
{
	struct nd_inventory *inv = inv_with(NULL, NULL);
	struct nd_result *r = choose(inv);

	(void)state;
	assert_string_equal(r->iface, "net1"); /* without the env: fastest RDMA netdev */
	nd_result_free(r);
	nd_inventory_free(inv);

	inv = inv_with("pcidev_mlx5_vf.env", NULL);
	r = choose(inv);
	assert_string_equal(r->iface, "net2");
	assert_string_equal(r->rdma_dev, "mlx5_4");
	assert_int_equal(r->gid_index, 3);
	assert_non_null(
	    strstr(r->reason, "2: net2 is 0000:86:02.3 from PCIDEVICE_NVIDIA_COM_RDMA_VF"));
	assert_non_null(
	    strstr(r->reason, "rdma-device mlx5_4 from PCIDEVICE_NVIDIA_COM_RDMA_VF_INFO"));
	assert_string_equal(passed_why(r, "net1"), "PCIDEVICE_NVIDIA_COM_RDMA_VF names net2");
	nd_result_free(r);
	nd_inventory_free(inv);
}

static void test_choice_two_resources(void **state)
{
	struct nd_inventory *inv = inv_with("pcidev_two.env", NULL);
	struct nd_result *r = choose(inv);

	(void)state;
	assert_string_equal(r->iface, "net1");
	assert_string_equal(r->rdma_dev, "mlx5_3");
	assert_non_null(strstr(r->reason, "2: net3 from PCIDEVICE_NVIDIA_COM_RDMA_VF_A is down"));
	assert_non_null(
	    strstr(r->reason,
		   "rdma-device mlx5_3 from PCIDEVICE_NVIDIA_COM_RDMA_VF_A (0000:3b:02.2 sysfs)"));
	nd_result_free(r);
	nd_inventory_free(inv);
}

static void test_choice_netstatus_device_info(void **state)
{
	struct nd_inventory *inv = inv_with("pcidev_mlx5_vf.env", "ns_sriov_nordma.json");
	struct nd_result *r = choose(inv);

	(void)state;
	assert_string_equal(r->iface, "net2");
	assert_string_equal(r->network, "default/sriov-rdma-b");
	assert_non_null(
	    strstr(r->reason, "2: network-status network default/sriov-rdma-b is net2"));
	assert_non_null(
	    strstr(r->reason, "rdma-device mlx5_4 from PCIDEVICE_NVIDIA_COM_RDMA_VF_INFO"));
	nd_result_free(r);
	nd_inventory_free(inv);
	/* no env: device-info's pci-address through sysfs */
	inv = inv_with(NULL, "ns_sriov_nordma.json");
	r = choose(inv);
	assert_string_equal(r->iface, "net2");
	assert_string_equal(r->rdma_dev, "mlx5_4");
	assert_non_null(strstr(
	    r->reason, "rdma-device mlx5_4 from device-info pci-address 0000:86:02.3 (sysfs)"));
	nd_result_free(r);
	nd_inventory_free(inv);
}

static int has_warning(const struct nd_result *r, const char *text)
{
	size_t i;

	for (i = 0; i < r->nwarnings; i++)
		if (strstr(r->warnings[i], text))
			return 1;
	return 0;
}

static void test_choice_disagreement(void **state)
{
	struct nd_inventory *inv = inv_with("pcidev_two.env", "ns_sriov.json");
	struct nd_pcidev *pd;
	struct nd_result *r = choose(inv);

	(void)state;
	/* network-status says mlx5_4 for net1 (0000:3b:02.2); the plugin's VF is mlx5_3 */
	assert_string_equal(r->iface, "net1");
	assert_true(has_warning(r, "network-status names rdma-device mlx5_4 for net1, "
				   "PCIDEVICE_NVIDIA_COM_RDMA_VF_A says mlx5_3"));
	assert_string_equal(r->rdma_dev, "mlx5_3"); /* the GID rule decides */
	nd_result_free(r);
	nd_inventory_free(inv);
	/* a PCIDEVICE naming a device that serves another netdev: warned, GID rule wins */
	inv = inv_with("pcidev_mlx5_vf.env", NULL);
	pd = &inv->pcidevs[0];
	gx_strlcpy(pd->rdma_dev, "mlx5_3", sizeof(pd->rdma_dev));
	r = choose(inv);
	assert_string_equal(r->iface, "net2");
	assert_string_equal(r->rdma_dev, "mlx5_4");
	assert_true(has_warning(r, "names RDMA device mlx5_3 for net2, but it has no GID of net2"));
	assert_null(strstr(r->reason, "rdma-device mlx5_3"));
	nd_result_free(r);
	nd_inventory_free(inv);
}

/* The plugin allocated a VF that no attachment moved in: said once, naming the variable;
 * a vfio (DPDK) device has no netdev by design and is not named. */
static void test_allocated_device_absent(void **state)
{
	struct nd_inventory *inv = inv_with("pcidev_absent.env", NULL);
	struct nd_result *r = choose(inv);
	size_t i, n = 0;

	(void)state;
	assert_string_equal(r->iface, "net1"); /* the choice goes on as before */
	for (i = 0; i < r->nwarnings; i++)
		n += strstr(r->warnings[i], "PCIDEVICE_") != NULL;
	assert_int_equal(n, 1);
	assert_true(has_warning(r, "PCIDEVICE_NVIDIA_COM_RDMA_VF_C names 0000:86:02.4 (RDMA "
				   "device mlx5_8), not in this pod: the SR-IOV device plugin "
				   "allocated it, but no network attachment moved it here"));
	assert_false(has_warning(r, "PCIDEVICE_INTEL_COM_DPDK"));
	nd_result_free(r);
	nd_inventory_free(inv);
	/* devices that are here: nothing said */
	inv = inv_with("pcidev_two.env", NULL);
	r = choose(inv);
	assert_false(has_warning(r, "not in this pod"));
	nd_result_free(r);
	nd_inventory_free(inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mlx5_vf_info),
	    cmocka_unit_test(test_two_resources),
	    cmocka_unit_test(test_malformed_info),
	    cmocka_unit_test(test_no_infiniband_dir),
	    cmocka_unit_test(test_old_plugin_uverbs_and_sf),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_addr_and_bounds),
	    cmocka_unit_test(test_choice_follows_pcidevice),
	    cmocka_unit_test(test_choice_two_resources),
	    cmocka_unit_test(test_choice_netstatus_device_info),
	    cmocka_unit_test(test_choice_disagreement),
	    cmocka_unit_test(test_allocated_device_absent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
