/* SPDX-License-Identifier: MIT */
/*
 * test_agent_fabric_report.c - from facts to the verdict, the line, fabric.json and the
 * job-wide line (pure), and the rails' counters read from a sysfs tree of files laid out
 * as the kernel's (mlx5: counters/port_xmit_data and port_rcv_data in 4-byte units; rxe
 * on the VM's kernel: the same plus hw_counters/sent_bytes and rcvd_bytes; packets only).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/fabric/fabric_int.h"

static void add_if(struct fabric_facts *f, const char *name, int role, uint64_t secondary,
		   uint64_t primary, uint32_t conns)
{
	struct fabric_ifstat *s = &f->ifs[f->nifs++];

	snprintf(s->name, sizeof(s->name), "%s", name);
	s->role = role;
	s->by_class[FR_SECONDARY] = secondary;
	s->by_class[FR_PRIMARY] = primary;
	s->bytes = secondary + primary;
	s->conns = conns;
	f->by_class[FR_SECONDARY] += secondary;
	f->by_class[FR_PRIMARY] += primary;
}

static void add_rail(struct fabric_facts *f, const char *dev, uint64_t bytes, int verified)
{
	struct fabric_rail *r = &f->rails[f->nrails++];

	snprintf(r->dev, sizeof(r->dev), "%s", dev);
	r->port = 1;
	r->verified = verified;
	r->have_bytes = r->have_pkts = 1;
	r->bytes = bytes;
	r->pkts = bytes / 4096;
	snprintf(r->source, sizeof(r->source), "counters/port_*_data x4");
}

static void base(struct fabric_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->nccl_ours = f->ucx_ours = 1;
	add_if(f, "eth0", FI_PRIMARY, 0, 0, 0);
	add_if(f, "lo", FI_LOOPBACK, 0, 0, 0);
}

static void line_is(const struct fabric_facts *f, const char *want)
{
	char line[FABRIC_LINE_LEN];

	agent_fabric_line(f, agent_fabric_verdict(f), line, sizeof(line));
	assert_string_equal(line, want);
}

static void test_no_evidence(void **state)
{
	struct fabric_facts f;

	(void)state;
	base(&f);
	add_if(&f, "net1", FI_SECONDARY, 3000, 0, 2); /* a bootstrap's bytes */
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_SECONDARY);
	assert_int_equal(agent_fabric_evidence(&f), 0);
	base(&f);
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_UNKNOWN);
	line_is(&f, "fabric: unknown: no NCCL/UCX lines; CMD's TCP: 0 on eth0");
}

static void test_secondary(void **state)
{
	struct fabric_facts f;
	char why[600];

	(void)state;
	base(&f);
	add_if(&f, "net1", FI_SECONDARY, 252000000, 0, 6);
	f.ifs[1].bytes = 3200000; /* lo: reported apart */
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_SECONDARY);
	assert_int_equal(agent_fabric_evidence(&f), 1);
	assert_int_equal(agent_fabric_primary_line(&f, why, sizeof(why)), 0);
	assert_int_equal(agent_fabric_tcp_despite_rdma(&f, why, sizeof(why)), 0);
	line_is(&f, "fabric: secondary: no NCCL/UCX lines; CMD's TCP: 0 on eth0, 252 MB on net1 "
		    "(lo 3.2 MB)");
}

static void test_primary(void **state)
{
	struct fabric_facts f;
	char why[600];

	(void)state;
	base(&f);
	add_if(&f, "net1", FI_SECONDARY, 8100, 0, 2);
	f.ifs[0].by_class[FR_PRIMARY] = f.ifs[0].bytes = 252000000;
	f.by_class[FR_PRIMARY] = 252000000;
	snprintf(f.primary_peer, sizeof(f.primary_peer), "job-worker-1");
	snprintf(f.primary_addr, sizeof(f.primary_addr), "10.1.1.11");
	snprintf(f.primary_if, sizeof(f.primary_if), "eth0");
	f.primary_pid = 77;
	snprintf(f.primary_env, sizeof(f.primary_env), "GLOO_SOCKET_IFNAME=eth0");
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_PRIMARY);
	assert_int_equal(agent_fabric_primary_line(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "CMD's peer traffic goes over the primary network: 252 MB on eth0 "
				 "to job-worker-1 (10.1.1.11) from pid 77 (GLOO_SOCKET_IFNAME=eth0 "
				 "in its environment)");
	line_is(&f,
		"fabric: primary: no NCCL/UCX lines; CMD's TCP: 252 MB on eth0, 8.1 kB on net1");
}

/* A typical RDMA line (NCCL on two HCAs), from the facts it describes. */
static void test_rdma_nccl(void **state)
{
	struct fabric_facts f;
	char why[600];

	(void)state;
	base(&f);
	add_if(&f, "net1", FI_SECONDARY, 12000000, 0, 4);
	add_rail(&f, "mlx5_0", 20500000000ull, 1);
	add_rail(&f, "mlx5_1", 20500000000ull, 1);
	f.nccl_files = 8;
	f.nccl.comms = 8;
	f.nccl.net_ib = 8;
	snprintf(f.nccl.network, sizeof(f.nccl.network), "IB");
	snprintf(f.nccl.ib_devs[0], 72, "mlx5_0:1");
	snprintf(f.nccl.ib_devs[1], 72, "mlx5_1:1");
	f.nccl.nib_devs = 2;
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_RDMA);
	assert_int_equal(agent_fabric_tcp_despite_rdma(&f, why, sizeof(why)), 0);
	line_is(&f,
		"fabric: rdma: NCCL NET/IB on mlx5_0:1,mlx5_1:1 (2 of 2 verified rails), RDMA 41 "
		"GB; CMD's TCP: 0 on eth0, 12 MB on net1");
	/* a device NCCL took that did not verify is not counted as one of ours */
	snprintf(f.nccl.ib_devs[1], 72, "mlx5_7:1");
	line_is(&f,
		"fabric: rdma: NCCL NET/IB on mlx5_0:1,mlx5_7:1 (1 of 2 verified rails), RDMA 41 "
		"GB; CMD's TCP: 0 on eth0, 12 MB on net1");
}

/* Verified rails, and NCCL fell back to sockets: TCP, with NCCL's own reason; the rails'
 * counters moving (another pod of a shared port) do not make it RDMA. */
static void test_socket_despite_rails(void **state)
{
	struct fabric_facts f;
	char why[600];

	(void)state;
	base(&f);
	add_if(&f, "net1", FI_SECONDARY, 900000000, 0, 4);
	add_rail(&f, "mlx5_0", 5000000000ull, 1);
	f.nccl_files = 1;
	f.nccl.comms = 1;
	f.nccl.net_socket = 1;
	snprintf(f.nccl.network, sizeof(f.nccl.network), "Socket");
	snprintf(f.nccl.sock_devs[0], 72, "net1");
	f.nccl.nsock_devs = 1;
	snprintf(f.nccl.env[0], 128, "NCCL_IB_DISABLE=1");
	f.nccl.nenv = 1;
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_SECONDARY);
	assert_int_equal(agent_fabric_tcp_despite_rdma(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "NCCL chose NET/Socket (NCCL_IB_DISABLE=1)");
	line_is(&f,
		"fabric: secondary: NCCL NET/Socket on net1 (NCCL_IB_DISABLE=1), RDMA 5.0 GB on 1 "
		"verified rail; "
		"CMD's TCP: 0 on eth0, 900 MB on net1");
	/* no word from a library: bulk TCP with idle rails says the same */
	memset(&f.nccl, 0, sizeof(f.nccl));
	f.rails[0].bytes = 0;
	assert_int_equal(agent_fabric_tcp_despite_rdma(&f, why, sizeof(why)), 1);
	assert_string_equal(why,
			    "900 MB of CMD's TCP to peers while the verified rails moved nothing");
	/* without verified rails, TCP is what there is: no warning */
	f.rails[0].verified = 0;
	assert_int_equal(agent_fabric_tcp_despite_rdma(&f, why, sizeof(why)), 0);
}

/* UCX: RDMA lanes make it RDMA; only tcp lanes (UCX_TLS=tcp) is TCP, the variable named. */
static void test_ucx(void **state)
{
	struct fabric_facts f;
	char why[600];

	(void)state;
	base(&f);
	add_if(&f, "net1", FI_SECONDARY, 60000, 0, 2);
	add_rail(&f, "rxe1", 42000000, 1);
	f.ucx_files = 1;
	f.ucx.eps = 2;
	snprintf(f.ucx.tls[0], 72, "rc_verbs/rxe1:1");
	snprintf(f.ucx.tls[1], 72, "sysv/memory");
	f.ucx.ntls = 2;
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_RDMA);
	line_is(&f, "fabric: rdma: UCX rc_verbs/rxe1:1 +1 local, RDMA 42 MB on 1 verified rail; "
		    "CMD's TCP: 0 on eth0, 60 kB on net1");
	snprintf(f.ucx.tls[0], 72, "tcp/net1");
	f.ucx.ntls = 1;
	snprintf(f.ucx.env[0], 128, "UCX_TLS=tcp");
	f.ucx.nenv = 1;
	f.rails[0].bytes = 3000;
	f.by_class[FR_SECONDARY] = f.ifs[2].bytes = f.ifs[2].by_class[FR_SECONDARY] = 90000000;
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_SECONDARY);
	assert_int_equal(agent_fabric_tcp_despite_rdma(&f, why, sizeof(why)), 1);
	assert_string_equal(why,
			    "UCX's endpoints use tcp/net1 and no RDMA transport (UCX_TLS=tcp)");
}

/* rxe without byte counters (older kernels): packets. */
static void test_packets_only(void **state)
{
	struct fabric_facts f;

	(void)state;
	base(&f);
	add_rail(&f, "rxe0", 0, 1);
	f.rails[0].have_bytes = 0;
	f.rails[0].pkts = 5000;
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_RDMA);
	line_is(&f, "fabric: rdma: no NCCL/UCX lines, RDMA 5000 packets on 1 verified rail; CMD's "
		    "TCP: 0 on eth0");
}

/* mlx5's compat device in a pod (shared mode): no counter to read; NCCL's word decides */
static void test_blind_rails(void **state)
{
	struct fabric_facts f;

	(void)state;
	base(&f);
	add_if(&f, "net1", FI_SECONDARY, 12000000, 0, 4);
	add_rail(&f, "mlx5_0", 0, 1);
	f.rails[0].have_bytes = f.rails[0].have_pkts = 0;
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_SECONDARY);
	f.nccl_files = 1;
	f.nccl.comms = f.nccl.net_ib = 1;
	snprintf(f.nccl.ib_devs[0], 72, "mlx5_0:1");
	f.nccl.nib_devs = 1;
	assert_int_equal(agent_fabric_verdict(&f), FABRIC_RDMA);
	line_is(&f,
		"fabric: rdma: NCCL NET/IB on mlx5_0:1 (1 of 1 verified rails), RDMA bytes not "
		"visible here (no port counter in this namespace); CMD's TCP: 0 on eth0, 12 MB on "
		"net1");
}

static void test_json(void **state)
{
	struct fabric_facts f;
	json_error_t je;
	json_t *j;
	char *text;

	(void)state;
	base(&f);
	add_if(&f, "net1", FI_SECONDARY, 12000000, 0, 4);
	add_rail(&f, "mlx5_0", 41000000000ull, 1);
	f.nccl_files = 1;
	f.nccl.comms = f.nccl.net_ib = 1;
	snprintf(f.nccl.network, sizeof(f.nccl.network), "IB");
	text = agent_fabric_json(&f, agent_fabric_verdict(&f), 1, FABRIC_EXPECT_RDMA, NULL,
				 "fabric: job: 1 of 1 pods on RDMA");
	assert_non_null(text);
	j = json_loads(text, 0, &je);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "verdict")), "rdma");
	assert_true(json_is_true(json_object_get(j, "final")));
	assert_int_equal(json_integer_value(json_object_get(
			     json_object_get(json_object_get(j, "tcp"), "net1"), "bytes")),
			 12000000);
	assert_int_equal(json_integer_value(json_object_get(
			     json_object_get(json_object_get(j, "tcp"), "net1"), "connections")),
			 4);
	assert_int_equal(json_integer_value(json_object_get(
			     json_object_get(json_object_get(j, "rdma"), "mlx5_0:1"), "bytes")),
			 41000000000ll);
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_object_get(j, "library"), "nccl"), "network")),
			    "IB");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(j, "gate"), "expect")), "rdma");
	assert_true(json_is_null(json_object_get(json_object_get(j, "gate"), "ended")));
	assert_string_equal(json_string_value(json_object_get(j, "job")),
			    "fabric: job: 1 of 1 pods on RDMA");
	json_decref(j);
	free(text);
}

static void pod(struct fabric_pod *p, const char *name, int verdict, uint32_t rails, uint32_t flags)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->reported = p->expected = 1;
	p->s.verdict = verdict;
	p->s.rails = rails;
	p->s.flags = flags;
	snprintf(p->s.primary_if, sizeof(p->s.primary_if), "eth0");
}

static void test_job_line(void **state)
{
	struct fabric_pod *pods = calloc(64, sizeof(*pods));
	char line[FABRIC_LINE_LEN], name[32];
	size_t i;

	(void)state;
	for (i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "job-worker-%zu", i);
		pod(&pods[i], name, FABRIC_RDMA, 2, FS_EVIDENCE);
	}
	agent_fabric_job_line(pods, 64, line, sizeof(line));
	assert_string_equal(line, "fabric: job: 64 of 64 pods on RDMA (2 rails each), 0 with peer "
				  "traffic on eth0");
	pods[5].s.verdict = FABRIC_SECONDARY;
	pods[7].s.verdict = FABRIC_PRIMARY;
	pods[7].s.flags |= FS_PRIMARY_PEER;
	pods[9].s.rails = 1;
	pods[63].reported = 0;
	agent_fabric_job_line(pods, 64, line, sizeof(line));
	assert_string_equal(line,
			    "fabric: job: 61 of 64 pods on RDMA (1-2 rails); 1 on the "
			    "secondary network (TCP): job-worker-5; 1 on the primary network: "
			    "job-worker-7, 1 with peer traffic on eth0: job-worker-7; no report "
			    "from job-worker-63");
	free(pods);
}

/* The coordinator names a member's traffic to an address it could not classify. */
static void test_reclassify(void **state)
{
	struct fabric_peer_addr peers[3] = {
	    {"192.168.2.12", "job-worker-2", 0},
	    {"10.1.1.12", "job-worker-2", 1},
	    {"10.1.1.10", "job-worker-0", 1},
	};
	struct fabric_pod p;

	(void)state;
	pod(&p, "job-worker-1", FABRIC_SECONDARY, 0, FS_EVIDENCE);
	snprintf(p.s.remotes[0].addr, FABRIC_ADDR_LEN, "10.9.9.9");
	p.s.remotes[0].bytes = 5000;
	p.s.nremotes = 1;
	assert_int_equal(agent_fabric_job_reclassify(&p, peers, 3), 0);
	assert_false(p.s.flags & FS_PRIMARY_PEER);
	snprintf(p.s.remotes[1].addr, FABRIC_ADDR_LEN, "10.1.1.12");
	p.s.remotes[1].bytes = 7000000;
	p.s.nremotes = 2;
	assert_int_equal(agent_fabric_job_reclassify(&p, peers, 3), 1);
	assert_true(p.s.flags & FS_PRIMARY_PEER);
	assert_string_equal(p.primary_via, "7.0 MB to job-worker-2 (10.1.1.12)");
}

static void bytes_is(uint64_t b, const char *want)
{
	char buf[32];

	agent_fabric_bytes_str(b, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_bytes(void **state)
{
	(void)state;
	bytes_is(0, "0");
	bytes_is(999, "999 B");
	bytes_is(1500, "1.5 kB");
	bytes_is(12000000, "12 MB");
	bytes_is(41000000000ull, "41 GB");
}

/* ---- the rails' counters ---- */

static char root[64];

static void put(const char *dev, const char *file, unsigned long long v)
{
	char path[600], dir[256];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports/1/%.*s", root, dev,
		 (int)(strchr(file, '/') - file), file);
	snprintf(path, sizeof(path), "mkdir -p '%s'", dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/1/%s", root, dev, file);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%llu\n", v);
	fclose(f);
}

static void test_rail_counters(void **state)
{
	struct fabric_rail r;
	char cmd[128];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/gxfab.%d", (int)getpid());
	/* mlx5: 4-byte words */
	memset(&r, 0, sizeof(r));
	snprintf(r.dev, sizeof(r.dev), "mlx5_0");
	r.port = 1;
	put("mlx5_0", "counters/port_xmit_data", 1000);
	put("mlx5_0", "counters/port_rcv_data", 500);
	put("mlx5_0", "counters/port_xmit_packets", 10);
	put("mlx5_0", "counters/port_rcv_packets", 5);
	assert_int_equal(agent_fabric_rail_read(root, &r, 1), 0);
	assert_true(r.have_bytes && r.have_pkts);
	put("mlx5_0", "counters/port_xmit_data", 3419499);
	put("mlx5_0", "counters/port_rcv_data", 3345);
	put("mlx5_0", "counters/port_xmit_packets", 12840);
	assert_int_equal(agent_fabric_rail_read(root, &r, 0), 0);
	assert_int_equal(r.bytes, (3419499ull + 3345 - 1500) * 4);
	assert_int_equal(r.pkts, 12840 + 5 - 15);
	/* a counter reset keeps what was counted */
	put("mlx5_0", "counters/port_xmit_data", 0);
	put("mlx5_0", "counters/port_rcv_data", 0);
	assert_int_equal(agent_fabric_rail_read(root, &r, 0), 0);
	assert_int_equal(r.bytes, (3419499ull + 3345 - 1500) * 4);
	/* rxe without the PMA counters: hw_counters bytes, then packets only */
	memset(&r, 0, sizeof(r));
	snprintf(r.dev, sizeof(r.dev), "rxe0");
	r.port = 1;
	put("rxe0", "hw_counters/sent_bytes", 100);
	put("rxe0", "hw_counters/rcvd_bytes", 100);
	put("rxe0", "hw_counters/sent_pkts", 1);
	put("rxe0", "hw_counters/rcvd_pkts", 1);
	assert_int_equal(agent_fabric_rail_read(root, &r, 1), 0);
	assert_string_equal(r.source, "hw_counters/*_bytes");
	put("rxe0", "hw_counters/sent_bytes", 13677996);
	assert_int_equal(agent_fabric_rail_read(root, &r, 0), 0);
	assert_int_equal(r.bytes, 13677996 - 100);
	memset(&r, 0, sizeof(r));
	snprintf(r.dev, sizeof(r.dev), "rxe9");
	r.port = 1;
	assert_int_equal(agent_fabric_rail_read(root, &r, 1), -ENOENT);
	put("rxe9", "hw_counters/sent_pkts", 7);
	put("rxe9", "hw_counters/rcvd_pkts", 7);
	assert_int_equal(agent_fabric_rail_read(root, &r, 1), 0);
	assert_false(r.have_bytes);
	assert_string_equal(r.source, "packets only");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_evidence),
	    cmocka_unit_test(test_secondary),
	    cmocka_unit_test(test_primary),
	    cmocka_unit_test(test_rdma_nccl),
	    cmocka_unit_test(test_socket_despite_rails),
	    cmocka_unit_test(test_ucx),
	    cmocka_unit_test(test_packets_only),
	    cmocka_unit_test(test_blind_rails),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_job_line),
	    cmocka_unit_test(test_reclassify),
	    cmocka_unit_test(test_bytes),
	    cmocka_unit_test(test_rail_counters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
