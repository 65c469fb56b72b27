/* SPDX-License-Identifier: MIT */
/*
 * test_nd_netstatus.c - Multus network-status over real shapes: the JSON array
 * (macvlan with ips; SR-IOV with device-info pci + rdma-device), the downward
 * API annotations file (Go-quoted value: \" \n \\ \t \uXXXX), malformed input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/nd_fixture.h"

static int parse_file(const char *name, struct nd_net **nets, size_t *n, char *err, size_t len)
{
	char path[PATH_MAX], buf[8192];
	FILE *f = fopen(fx_path(name, path, sizeof(path)), "r");
	size_t got;

	assert_non_null(f);
	got = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return nd_netstatus_parse(buf, got, nets, n, err, len);
}

static int parse_str(const char *s, struct nd_net **nets, size_t *n, char *err, size_t len)
{
	return nd_netstatus_parse(s, strlen(s), nets, n, err, len);
}

static void test_macvlan(void **state)
{
	struct nd_net *nets = NULL;
	size_t n = 0;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse_file("ns_macvlan.json", &nets, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_true(nets[0].is_default);
	assert_string_equal(nets[0].iface, "eth0");
	assert_false(nets[1].is_default);
	assert_string_equal(nets[1].name, "default/macvlan-conf");
	assert_string_equal(nets[1].iface, "net1");
	assert_string_equal(nets[1].mac, "aa:b1:00:00:00:11");
	assert_int_equal(nets[1].nips, 2);
	assert_string_equal(nets[1].ips[0], "192.168.10.11");
	assert_string_equal(nets[1].ips[1], "fd00:10::11");
	assert_string_equal(nets[1].rdma_dev, "");
	nd_nets_free(nets, n);
}

static void test_sriov_device_info(void **state)
{
	struct nd_net *nets = NULL;
	size_t n = 0;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse_file("ns_sriov.json", &nets, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	assert_string_equal(nets[0].iface, ""); /* Calico's entry has no interface */
	assert_true(nets[0].is_default);
	assert_string_equal(nets[1].pci, "0000:3b:02.2");
	assert_string_equal(nets[1].rdma_dev, "mlx5_4");
	assert_string_equal(nets[2].iface, "net2");
	assert_string_equal(nets[2].rdma_dev, "mlx5_7");
	nd_nets_free(nets, n);
}

static void test_annotations_escaping(void **state)
{
	struct nd_net *nets = NULL;
	size_t n = 0;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse_file("ns_annotations.txt", &nets, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(nets[0].name, "cbr0");
	assert_string_equal(nets[1].iface, "net1");
	/* \u200b became UTF-8 E2 80 8B */
	assert_string_equal(nets[1].name, "default/macvlan\xe2\x80\x8b-conf");
	assert_string_equal(nets[1].ips[0], "192.168.10.11");
	nd_nets_free(nets, n);
}

static void test_annotations_without_status(void **state)
{
	struct nd_net *nets = NULL;
	size_t n = 0;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse_str("k8s.v1.cni.cncf.io/networks=\"macvlan-conf\"\n", &nets, &n, err,
				   sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "no k8s.v1.cni.cncf.io/network-status annotation"));
	assert_int_equal(parse_str("  \n", &nets, &n, err, sizeof(err)), -ENOENT);
	assert_null(nets);
}

/* Only the older key Multus still writes: read it; with both keys, the newer one wins. */
static void test_annotations_older_key(void **state)
{
	struct nd_inventory inv;
	struct nd_net *nets = NULL;
	char path[PATH_MAX], err[256] = "";
	size_t n = 0;

	(void)state;
	assert_int_equal(parse_file("ns_annotations_old.txt", &nets, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_true(nets[0].is_default);
	assert_string_equal(nets[1].name, "default/macvlan-conf");
	assert_string_equal(nets[1].iface, "net1");
	nd_nets_free(nets, n);
	assert_int_equal(parse_file("ns_annotations_both.txt", &nets, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(nets[1].name, "default/macvlan-conf");
	nd_nets_free(nets, n);
	/* the inventory remembers which key it came from */
	memset(&inv, 0, sizeof(inv));
	assert_int_equal(nd_netstatus_load(fx_path("ns_annotations_old.txt", path, sizeof(path)),
					   &inv, err, sizeof(err)),
			 0);
	assert_true(inv.nets_old_key);
	nd_nets_free(inv.nets, inv.nnets);
	memset(&inv, 0, sizeof(inv));
	assert_int_equal(nd_netstatus_load(fx_path("ns_annotations_both.txt", path, sizeof(path)),
					   &inv, err, sizeof(err)),
			 0);
	assert_false(inv.nets_old_key);
	nd_nets_free(inv.nets, inv.nnets);
}

/* ipoib-cni / ib-sriov-cni: Multus copies the 20-byte IPoIB hardware address into "mac"
 * (59 characters), and a network's "namespace/name" may be 317 bytes long: both parse. */
static void test_ipoib_long_fields(void **state)
{
	char text[2048], name[320], err[256];
	struct nd_net *nets = NULL;
	size_t n = 0;

	(void)state;
	memset(name, 'n', sizeof(name));
	memset(name, 's', 63);
	name[63] = '/';
	name[317] = '\0';
	snprintf(text, sizeof(text),
		 "[{\"name\": \"cbr0\", \"interface\": \"eth0\", \"ips\": [\"10.244.1.5\"], "
		 "\"mac\": \"0a:58:0a:f4:01:05\", \"default\": true, \"dns\": {}},"
		 " {\"name\": \"%s\", \"interface\": \"net1\", \"ips\": [\"192.168.5.10\"], "
		 "\"mac\": \"00:00:10:87:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:c2:1e:4c\", "
		 "\"dns\": {}, \"device-info\": {\"type\": \"pci\", \"version\": \"1.1.0\", "
		 "\"pci\": {\"pci-address\": \"0000:41:00.2\", \"rdma-device\": \"mlx5_4\"}}}]",
		 name);
	assert_int_equal(parse_str(text, &nets, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(nets[1].name, name);
	assert_string_equal(nets[1].iface, "net1");
	assert_string_equal(nets[1].mac,
			    "00:00:10:87:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:c2:1e:4c");
	assert_string_equal(nets[1].rdma_dev, "mlx5_4");
	nd_nets_free(nets, n);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
	    "[{\"name\": 1}]",
	    "[{\"interface\": \"net1\", \"ips\": \"192.168.1.1\"}]",
	    "[{\"interface\": \"this-name-is-far-too-long\"}]",
	    "[{\"interface\": \"net/1\"}]",
	    "[{\"interface\": \"net1\", \"device-info\": {\"pci\": {\"rdma-device\": \"mlx5 "
	    "0\"}}}]",
	    "[1, 2]",
	    "{\"name\": \"x\"}",
	    "[{\"a\": 1, \"a\": 2}]",
	    "k8s.v1.cni.cncf.io/network-status=\"[{\\\"name\\\": \\u00\"\n",
	    "k8s.v1.cni.cncf.io/network-status=\"[{\\\"name\\\"\n",
	    "k8s.v1.cni.cncf.io/network-status=\"[\\q]\"\n",
	};
	struct nd_net *nets = NULL;
	size_t n = 0, i;
	char err[256];

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (parse_str(bad[i], &nets, &n, err, sizeof(err)) != GX_EJSON)
			fail_msg("case %zu: %s", i, err);
		assert_true(strncmp(err, "network-status", 14) == 0);
		assert_null(nets);
	}
	assert_int_equal(parse_file("ns_malformed.json", &nets, &n, err, sizeof(err)), GX_EJSON);
	assert_non_null(strstr(err, "malformed JSON at line 1"));
}

static void test_truncated_every_length(void **state)
{
	char path[PATH_MAX], buf[8192], err[256];
	struct nd_net *nets = NULL;
	FILE *f = fopen(fx_path("ns_annotations.txt", path, sizeof(path)), "r");
	size_t got, len, n;
	int rc;

	(void)state;
	assert_non_null(f);
	got = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	/* every prefix: an error or a parse, never a crash (ASan/valgrind runs check) */
	for (len = 0; len <= got; len++) {
		rc = nd_netstatus_parse(buf, len, &nets, &n, err, sizeof(err));
		assert_true(rc == 0 || rc == GX_EJSON || rc == -ENOENT);
		if (rc == 0)
			nd_nets_free(nets, n);
		nets = NULL;
	}
}

static void test_load_into_inventory(void **state)
{
	struct nd_inventory inv;
	char path[PATH_MAX], err[256];

	(void)state;
	memset(&inv, 0, sizeof(inv));
	assert_int_equal(
	    nd_netstatus_load(fx_path("ns_sriov.json", path, sizeof(path)), &inv, err, sizeof(err)),
	    0);
	assert_true(inv.nets_loaded);
	assert_int_equal(inv.nnets, 3);
	nd_nets_free(inv.nets, inv.nnets);
	assert_int_equal(nd_netstatus_load("/nonexistent/ns", &inv, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "/nonexistent/ns"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_macvlan),
	    cmocka_unit_test(test_sriov_device_info),
	    cmocka_unit_test(test_annotations_escaping),
	    cmocka_unit_test(test_annotations_without_status),
	    cmocka_unit_test(test_annotations_older_key),
	    cmocka_unit_test(test_ipoib_long_fields),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_truncated_every_length),
	    cmocka_unit_test(test_load_into_inventory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
