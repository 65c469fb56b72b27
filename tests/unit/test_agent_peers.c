/* SPDX-License-Identifier: MIT */
/*
 * test_agent_peers.c - --peers brace expansion, self matching, the job id and
 * every auto-detection source (env arrays here, files under
 * tests/fixtures/peers/<case>/ as the root prefix).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/peers/dns_int.h"
#include "agent/peers/peers_int.h"
#include "rdzv/gx/gx.h"

#define FIX "tests/fixtures/peers/"

static char err[512];

/* Expands list and checks it equals the space-separated want. */
static void expect_expand(const char *list, const char *want)
{
	char **names = NULL, buf[8192] = "";
	size_t n = 0, i;

	err[0] = '\0';
	assert_int_equal(agent_peers_expand(list, &names, &n, err, sizeof(err)), 0);
	for (i = 0; i < n; i++) {
		strcat(buf, i ? " " : "");
		strcat(buf, names[i]);
	}
	assert_null(names[n]);
	assert_string_equal(buf, want);
	agent_names_free(names, n);
}

static void expect_bad(const char *list, const char *in_err)
{
	char **names = (char **)1;
	size_t n = 7;

	err[0] = '\0';
	assert_int_equal(agent_peers_expand(list, &names, &n, err, sizeof(err)), GX_EUSAGE);
	assert_null(names);
	assert_int_equal(n, 0);
	if (!strstr(err, in_err))
		fail_msg("error '%s' lacks '%s'", err, in_err);
}

static void test_expand_plain(void **state)
{
	(void)state;
	expect_expand("a,b.svc,c", "a b.svc c");
	expect_expand(" a , b ", "a b");
	expect_expand("10.0.0.1,0:0::1", "10.0.0.1 ::1");
	expect_expand("pod.ns.", "pod.ns.");
}

static void test_expand_padding(void **state)
{
	(void)state;
	expect_expand("n-{00..03}", "n-00 n-01 n-02 n-03");
	expect_expand("n-{8..11}", "n-8 n-9 n-10 n-11");
	expect_expand("n-{1..010..3}", "n-001 n-004 n-007 n-010");
	expect_expand("h{-01..1}", "h-01 h000 h001");
	expect_expand("w-{00..15}.x",
		      "w-00.x w-01.x w-02.x w-03.x w-04.x w-05.x w-06.x w-07.x w-08.x w-09.x "
		      "w-10.x w-11.x w-12.x w-13.x w-14.x w-15.x");
}

static void test_expand_descending_step_chars(void **state)
{
	(void)state;
	expect_expand("w-{3..1}", "w-3 w-2 w-1");
	expect_expand("w-{05..01}", "w-05 w-04 w-03 w-02 w-01");
	expect_expand("w-{10..0..-3}", "w-10 w-7 w-4 w-1");
	expect_expand("w-{0..10..5}", "w-0 w-5 w-10");
	expect_expand("r{a..c}", "ra rb rc");
	expect_expand("r{e..a..2}", "re rc ra");
}

static void test_expand_cartesian_and_lists(void **state)
{
	(void)state;
	expect_expand("js-w-{0..1}-{0..3}.js", "js-w-0-0.js js-w-0-1.js js-w-0-2.js js-w-0-3.js "
					       "js-w-1-0.js js-w-1-1.js js-w-1-2.js js-w-1-3.js");
	expect_expand("a{b,c{d,e}}f", "abf acdf acef");
	expect_expand("{x,y}-{1..2},z", "x-1 x-2 y-1 y-2 z");
	expect_expand("m-0,w-{0..1}", "m-0 w-0 w-1");
	expect_expand("{a,b}.{c,d}", "a.c a.d b.c b.d");
}

static void test_expand_limits(void **state)
{
	char **names = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(agent_peers_expand_max("n{0..9}", 10, &names, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 10);
	agent_names_free(names, n);
	assert_int_equal(agent_peers_expand_max("n{0..10}", 10, &names, &n, err, sizeof(err)),
			 GX_EUSAGE);
	assert_non_null(strstr(err, "more than 10"));
	assert_int_equal(agent_peers_expand_max("n{0..3}-{0..3}", 15, &names, &n, err, sizeof(err)),
			 GX_EUSAGE);
	assert_int_equal(agent_peers_expand_max("a,b{0..3}", 4, &names, &n, err, sizeof(err)),
			 GX_EUSAGE);
	/* a range far beyond the bound is refused before anything is generated */
	expect_bad("n{1..1000001}", "more than 1000000");
	expect_bad("n{0..999999999999999999}", "more than");
}

static void test_expand_invalid(void **state)
{
	char big[300];

	(void)state;
	unlink("/tmp/gx-test-peers-x");
	expect_bad("a,$(touch /tmp/gx-test-peers-x)", "'$(touch /tmp/gx-test-peers-x)'");
	assert_int_equal(access("/tmp/gx-test-peers-x", F_OK), -1);
	expect_bad("a,`id`", "'`id`'");
	expect_bad("a;reboot", "'a;reboot'");
	expect_bad("a,,b", "empty");
	expect_bad("a,", "empty");
	expect_bad("a b", "'a b'");
	expect_bad("-a", "'-a'");
	expect_bad("a\nb", "'a?b'");
	expect_bad("w-{0..2},w-1", "twice");
	expect_bad("A,a", "twice");
	expect_bad("w-{1..3", "'w-{1..3'");
	expect_bad("w-{1}", "'w-{1}'");
	expect_bad("{a..9}", "'{a..9}'");
	memset(big, 'a', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	expect_bad(big, "too long");
}

static int fake_local(const char *ip)
{
	return strcmp(ip, "192.168.9.3") == 0 || strcmp(ip, "fd00::3") == 0;
}

static void test_self_index(void **state)
{
	char *names[] = {"job-0.job", "job-1.job", "job-2", "192.168.9.3", "x.a", "x.b", NULL};
	size_t idx = 99;

	(void)state;
	assert_int_equal(agent_self_index(names, 6, "job-1.job", NULL, &idx), 0);
	assert_int_equal(idx, 1);
	assert_int_equal(agent_self_index(names, 6, "job-0", NULL, &idx), 0);
	assert_int_equal(idx, 0);
	assert_int_equal(
	    agent_self_index(names, 6, "JOB-2.job.default.svc.cluster.local.", NULL, &idx), 0);
	assert_int_equal(idx, 2);
	assert_int_equal(agent_self_index(names, 6, "job-1.job.", NULL, &idx), 0);
	assert_int_equal(idx, 1);
	/* two long names with the same first label do not match each other */
	assert_int_equal(agent_self_index(names, 6, "job-1.other", NULL, &idx), -ENOENT);
	/* "x" matches x.a and x.b: ambiguous; an exact name wins */
	assert_int_equal(agent_self_index(names, 6, "x", NULL, &idx), GX_EUSAGE);
	assert_int_equal(agent_self_index(names, 6, "x.b", NULL, &idx), 0);
	assert_int_equal(idx, 5);
	/* IP entries: the local-address probe, or self given as that IP */
	assert_int_equal(agent_self_index(names, 6, "somepod", fake_local, &idx), 0);
	assert_int_equal(idx, 3);
	assert_int_equal(agent_self_index(names, 6, "somepod", NULL, &idx), -ENOENT);
	assert_int_equal(agent_self_index(names, 6, "192.168.9.3", NULL, &idx), 0);
	assert_int_equal(idx, 3);
	assert_int_equal(agent_self_index(names, 6, "job-9", fake_local, &idx), 0);
	assert_int_equal(idx, 3);
}

static void test_job_id(void **state)
{
	struct agent_opts o = {.port = 29410};
	char *a[] = {"w-0", "w-1"}, *b[] = {"w-0.w.default.svc", "W-1."}, *c[] = {"w-1", "w-0"};
	char x[130], y[130];

	(void)state;
	assert_int_equal(agent_job_id(&o, a, 2, x, sizeof(x)), 0);
	assert_int_equal(strlen(x), 64);
	assert_int_equal(agent_job_id(&o, b, 2, y, sizeof(y)), 0);
	assert_string_equal(x, y);
	assert_int_equal(agent_job_id(&o, c, 2, y, sizeof(y)), 0);
	assert_string_not_equal(x, y);
	o.port = 29411;
	assert_int_equal(agent_job_id(&o, a, 2, y, sizeof(y)), 0);
	assert_string_not_equal(x, y);
	/* sha256("w-0,w-1:29410") computed independently (sha256sum) */
	o.port = 29410;
	assert_int_equal(agent_job_id(&o, a, 2, x, sizeof(x)), 0);
	assert_string_equal(x, "e0633b0abd189b53e07b93b914725f8552e5e545169d3f937f967d9bd1556a16");
	o.job_id = "my-job:7";
	assert_int_equal(agent_job_id(&o, a, 2, x, sizeof(x)), 0);
	assert_string_equal(x, "my-job:7");
	o.job_id = "bad id";
	assert_int_equal(agent_job_id(&o, a, 2, x, sizeof(x)), GX_EUSAGE);
	o.job_id = NULL;
	assert_int_equal(agent_job_id(&o, a, 2, x, 10), -ENOSPC);
}

/* ---- discovery -------------------------------------------------------------- */

static int discover(struct agent_opts *o, char **envp, const char *root, const char *host,
		    struct agent_peers *p)
{
	err[0] = '\0';
	return agent_peers_discover(o, envp, root, host, fake_local, p, err, sizeof(err));
}

static void opts_init(struct agent_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->port = 29410;
}

static void expect_names(const struct agent_peers *p, const char *want)
{
	char buf[4096] = "";
	size_t i;

	for (i = 0; i < p->n; i++) {
		strcat(buf, i ? " " : "");
		strcat(buf, p->names[i]);
	}
	assert_string_equal(buf, want);
}

/*
 * A kubelet's search list has the namespace, not the subdomain, so a
 * bare sibling name is qualified with this pod's subdomain from /etc/hosts; a
 * name with a dot is used as given; a pod without a subdomain is flagged.
 */
static void test_discover_bare_sibling(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {NULL};

	(void)state;
	opts_init(&o);
	o.peers = "js-workers-0-{0..3}";
	assert_int_equal(discover(&o, env, FIX "jobset", "js-workers-0-3", &p), 0);
	assert_int_equal(p.self, 3);
	assert_string_equal(p.coord_fqdn, "js-workers-0-0.js.default.svc.cluster.local.");
	assert_false(p.coord_nosub);
	agent_peers_free(&p);
	/* --self with its subdomain finds the same /etc/hosts line */
	o.self = "js-workers-0-3.js";
	o.peers = "js-workers-0-{0..3}.js";
	assert_int_equal(discover(&o, env, FIX "jobset", "ignored", &p), 0);
	assert_int_equal(p.self, 3);
	assert_null(p.coord_fqdn); /* a dotted name is used as given: the search list */
	agent_peers_free(&p);
	o.self = NULL;
	/* --self names another peer: the host name's /etc/hosts line still gives the subdomain */
	o.self = "js-workers-0-1";
	o.peers = "js-workers-0-{0..3}";
	assert_int_equal(discover(&o, env, FIX "jobset", "js-workers-0-3", &p), 0);
	assert_int_equal(p.self, 1);
	assert_string_equal(p.coord_fqdn, "js-workers-0-0.js.default.svc.cluster.local.");
	agent_peers_free(&p);
	o.self = NULL;
	/* no full name in /etc/hosts: no subdomain, the search list, and a flag */
	o.peers = "w-{0..3}";
	assert_int_equal(discover(&o, env, FIX "k8s", "w-1", &p), 0);
	assert_null(p.coord_fqdn);
	assert_true(p.coord_nosub);
	agent_peers_free(&p);
	/* an IP is never qualified */
	o.peers = "10.0.0.1,w-1";
	assert_int_equal(discover(&o, env, FIX "jobset", "w-1", &p), 0);
	assert_null(p.coord_fqdn);
	assert_false(p.coord_nosub);
	agent_peers_free(&p);
}

/* This pod's domain from its kubelet-written files, and which names reach a peer from it. */
static void test_host_names_domain(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {NULL};
	const struct agent_domain *d = &p.dom;

	(void)state;
	opts_init(&o);
	o.peers = "js-workers-0-{0..3}";
	assert_int_equal(discover(&o, env, FIX "jobset", "js-workers-0-3", &p), 0);
	assert_string_equal(d->sub, "js");
	assert_string_equal(d->ns, "default");
	assert_string_equal(d->cluster, "cluster.local");
	/* the forms that resolve to the peer js-workers-0-1 from this pod */
	assert_true(agent_host_names("js-workers-0-1", "js-workers-0-1", d));
	assert_true(agent_host_names("js-workers-0-1", "JS-workers-0-1.js", d));
	assert_true(agent_host_names("js-workers-0-1", "js-workers-0-1.js.default", d));
	assert_true(agent_host_names("js-workers-0-1", "js-workers-0-1.js.default.svc", d));
	assert_true(
	    agent_host_names("js-workers-0-1", "js-workers-0-1.js.default.svc.cluster.local.", d));
	assert_true(agent_host_names("js-workers-0-1.js", "js-workers-0-1.js.default.svc", d));
	assert_true(agent_host_names("js-workers-0-1.js.default.svc", "js-workers-0-1", d));
	/* another namespace's, subdomain's or cluster's pod that shares the first label */
	assert_false(agent_host_names("js-workers-0-1", "js-workers-0-1.otherjob.otherns", d));
	assert_false(agent_host_names("js-workers-0-1", "js-workers-0-1.js.otherns", d));
	assert_false(agent_host_names("js-workers-0-1", "js-workers-0-1.other", d));
	assert_false(
	    agent_host_names("js-workers-0-1", "js-workers-0-1.js.default.svc.other.local", d));
	assert_false(agent_host_names("js-workers-0-1.js.otherns", "js-workers-0-1.js", d));
	assert_false(agent_host_names("js-workers-0-1", "js-workers-0-10.js", d));
	assert_false(agent_host_names("js-workers-0-1", "js-workers-0-1.js.", d)); /* absolute */
	/* a Service peer known by its FQDN (PyTorchJob's coordinator): <svc>.<ns> reaches it */
	assert_true(
	    agent_host_names("pt-master-0.default.svc.cluster.local.", "pt-master-0.default", d));
	assert_true(agent_host_names("pt-master-0.default.svc.cluster.local.",
				     "pt-master-0.default.svc", d));
	assert_false(
	    agent_host_names("pt-master-0.default.svc.cluster.local.", "pt-master-0.other", d));
	agent_peers_free(&p);
	/* no subdomain in /etc/hosts: namespace and cluster from the search list */
	o.peers = "w-{0..3}";
	assert_int_equal(discover(&o, env, FIX "k8s", "w-1", &p), 0);
	assert_string_equal(d->sub, "");
	assert_string_equal(d->ns, "default");
	assert_string_equal(d->cluster, "cluster.local");
	assert_false(agent_host_names("w-2", "w-2.job", d)); /* which subdomain is unknown */
	assert_true(agent_host_names("w-2.job", "w-2.job.default.svc.cluster.local", d));
	assert_true(agent_host_names("w-2", "w-2", d));
	agent_peers_free(&p);
	/* nothing known: a name itself, and bare siblings */
	assert_int_equal(discover(&o, env, FIX "bare", "w-1", &p), 0);
	assert_string_equal(d->ns, "");
	assert_false(agent_host_names("w-2", "w-2.job.default.svc.cluster.local", d));
	assert_true(agent_host_names("w-2.job.default.svc.cluster.local", "w-2", d));
	assert_true(agent_host_names("w-2.job", "W-2.job.", NULL));
	agent_peers_free(&p);
}

static int fake_loopback(const char *ip)
{
	return strcmp(ip, "127.0.0.1") == 0;
}

/* The pod's name wins over a local IP listed earlier. */
static void test_self_name_beats_local_ip(void **state)
{
	char *names[] = {"127.0.0.1", "peer-b", "peer-c.job", NULL};
	struct agent_opts o;
	struct agent_peers p;
	char e[256], *env[] = {NULL};
	size_t idx = 99;

	(void)state;
	assert_int_equal(agent_self_index(names, 3, "peer-c.job", fake_loopback, &idx), 0);
	assert_int_equal(idx, 2);
	assert_int_equal(agent_self_index(names, 3, "peer-c", fake_loopback, &idx), 0);
	assert_int_equal(idx, 2);
	assert_int_equal(agent_self_index(names, 3, "peer-x", fake_loopback, &idx), 0);
	assert_int_equal(idx, 0); /* no name matches: the local IP */
	opts_init(&o);
	o.peers = "127.0.0.1,peer-b,peer-c";
	o.self = "peer-c";
	assert_int_equal(
	    agent_peers_discover(&o, env, FIX "bare", "host", fake_loopback, &p, e, sizeof(e)), 0);
	assert_int_equal(p.self, 2);
	agent_peers_free(&p);
}

static void test_discover_option(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {NULL};

	(void)state;
	opts_init(&o);
	o.peers = "w-{0..3}.w";
	assert_int_equal(discover(&o, env, FIX "bare", "w-2", &p), 0);
	assert_string_equal(p.source, "--peers");
	assert_int_equal(p.n, 4);
	assert_int_equal(p.self, 2);
	assert_null(p.coord_fqdn);
	agent_peers_free(&p);
	o.self = "w-3.w";
	assert_int_equal(discover(&o, env, FIX "bare", "ignored", &p), 0);
	assert_int_equal(p.self, 3);
	agent_peers_free(&p);
	o.self = NULL;
	assert_int_equal(discover(&o, env, FIX "bare", "other", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "--self"));
	assert_null(p.names);
	o.nnodes_min = o.nnodes_max = 3;
	assert_int_equal(discover(&o, env, FIX "bare", "w-0", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "--nnodes"));
	o.nnodes_min = 2;
	o.nnodes_max = 8;
	assert_int_equal(discover(&o, env, FIX "bare", "w-0", &p), 0);
	agent_peers_free(&p);
	o.peers = "a,$(reboot)";
	assert_int_equal(discover(&o, env, FIX "bare", "a", &p), GX_EUSAGE);
	o.peers = "a,b";
	assert_int_equal(discover(&o, env, FIX "bare", "bad;name", &p), GX_EUSAGE);
	o.peers = "10.0.0.1,192.168.9.3";
	assert_int_equal(discover(&o, env, FIX "bare", "pod", &p), 0);
	assert_int_equal(p.self, 1);
	agent_peers_free(&p);
}

static void test_discover_torchx_volcano(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	/* TorchX on Volcano: one task per replica; natural order puts 10 after 2 */
	char *env[] = {"TORCHX_RANK0_HOST=localhost",
		       "VC_TRAINER_10_HOSTS=app-trainer-10-0.app",
		       "VC_TRAINER_0_HOSTS=app-trainer-0-0.app",
		       "VC_TRAINER_0_NUM=1",
		       "VC_TRAINER_2_HOSTS=app-trainer-2-0.app",
		       "VC_TASK_INDEX=0",
		       "VC_TRAINER_1_HOSTS=app-trainer-1-0.app",
		       NULL};

	(void)state;
	opts_init(&o);
	assert_int_equal(discover(&o, env, FIX "k8s", "app-trainer-2-0", &p), 0);
	assert_string_equal(p.source, "TorchX");
	expect_names(&p, "app-trainer-0-0.app app-trainer-1-0.app app-trainer-2-0.app "
			 "app-trainer-10-0.app");
	assert_int_equal(p.self, 2);
	assert_string_equal(p.coord_fqdn, "app-trainer-0-0.app.default.svc.cluster.local.");
	agent_peers_free(&p);
}

static void test_discover_torchx_indexed(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {"TORCHX_MCAD_TRAINER_0_HOSTS=app-0.app", NULL};

	(void)state;
	opts_init(&o);
	assert_int_equal(discover(&o, env, FIX "k8s", "app-1", &p), GX_EUSAGE);
	o.nnodes_min = o.nnodes_max = 2;
	assert_int_equal(discover(&o, env, FIX "k8s", "app-1", &p), 0);
	assert_string_equal(p.source, "TorchX");
	expect_names(&p, "app-0 app-1");
	assert_int_equal(p.self, 1);
	agent_peers_free(&p);
}

static void test_discover_volcano_env(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {"VC_WORKER_HOSTS=vj-worker-0.vj,vj-worker-1.vj", "VC_WORKER_NUM=2",
		       "VC_MASTER_HOSTS=vj-master-0.vj", "VC_TASK_INDEX=1", NULL};
	char *one[] = {"VC_WORKER_HOSTS=vj-worker-0.vj,vj-worker-1.vj,vj-worker-2.vj",
		       "VK_TASK_INDEX=2", NULL};
	char *bad[] = {"VC_WORKER_HOSTS=vj-worker-0.vj,$(id).vj", NULL};

	(void)state;
	opts_init(&o);
	assert_int_equal(discover(&o, env, FIX "bare", "vj-worker-1", &p), 0);
	assert_string_equal(p.source, "Volcano");
	expect_names(&p, "vj-master-0.vj vj-worker-0.vj vj-worker-1.vj");
	assert_int_equal(p.self, 2);
	assert_null(p.coord_fqdn); /* no resolv.conf: the cluster domain is unknown */
	agent_peers_free(&p);
	/* one task: the task index stands in when the host name is not listed */
	assert_int_equal(discover(&o, one, FIX "k8s", "renamed-pod", &p), 0);
	assert_int_equal(p.self, 2);
	agent_peers_free(&p);
	assert_int_equal(discover(&o, bad, FIX "bare", "vj-worker-0", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "VC_WORKER_HOSTS"));
	assert_non_null(strstr(err, "$(id).vj"));
	o.nnodes_min = o.nnodes_max = 4;
	assert_int_equal(discover(&o, env, FIX "bare", "vj-worker-1", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "Volcano gives 3 peers but --nnodes is 4"));
}

/* --dns-server is checked at start (exit 2), not retried as a failing lookup (review) */
static void test_dns_server_check(void **state)
{
	(void)state;
	assert_int_equal(agent_dns_server_check(NULL, err, sizeof(err)), 0);
	assert_int_equal(agent_dns_server_check("10.96.0.10", err, sizeof(err)), 0);
	assert_int_equal(agent_dns_server_check("10.96.0.10:5353,[fd00::a]:53", err, sizeof(err)),
			 0);
	assert_int_equal(agent_dns_server_check("bogus.example", err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "'bogus.example': not IP, IP:PORT or [IPv6]:PORT"));
}

/* setHostnameAsFQDN: true makes the host name the FQDN; the list has <pod>.<svc>[.ns.svc] */
static void test_name_match_fqdn_hostname(void **state)
{
	(void)state;
	assert_int_equal(agent_name_match("mj-worker-1.mj.default.svc",
					  "mj-worker-1.mj.default.svc.cluster.local"),
			 1);
	assert_int_equal(
	    agent_name_match("mj-worker-1.mj.default.svc.cluster.local.", "MJ-worker-1.mj"), 1);
	assert_int_equal(agent_name_match("mj-worker-1", "mj-worker-1.mj.default.svc"), 1);
	assert_int_equal(agent_name_match("mj-worker-1.mj", "mj-worker-1.mj"), 2);
	/* not whole labels, or another namespace: no */
	assert_int_equal(agent_name_match("mj-worker-1.m", "mj-worker-1.mj.default.svc"), 0);
	assert_int_equal(agent_name_match("mj-worker-1.mj.ns1", "mj-worker-1.mj.ns2.svc"), 0);
	assert_int_equal(agent_name_match("mj-worker-1.mj", "mj-worker-10.mj"), 0);
}

/* TorchX makes a Volcano task per replica: past the tasks gxboot reads, an error, never a
 * world short of the tasks beyond (review: 4,096 were read and the rest dropped) */
static void test_discover_volcano_too_many_tasks(void **state)
{
	enum {
		NT = 16385
	};
	char **env = calloc(NT + 1, sizeof(*env));
	struct agent_opts o;
	struct agent_peers p;
	size_t i;

	(void)state;
	assert_non_null(env);
	for (i = 0; i < NT; i++) {
		env[i] = malloc(64);
		assert_non_null(env[i]);
		snprintf(env[i], 64, "VC_T%zu_HOSTS=app-t%zu-0.app", i, i);
	}
	opts_init(&o);
	assert_int_equal(discover(&o, env, FIX "bare", "app-t1-0", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "more than 16384 Volcano tasks"));
	for (i = 0; i < NT; i++)
		free(env[i]);
	free(env);
}

static void test_discover_volcano_files(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {"HOME=/root", NULL};

	(void)state;
	opts_init(&o);
	assert_int_equal(discover(&o, env, FIX "volcano", "vj-master-0", &p), 0);
	assert_string_equal(p.source, "Volcano");
	expect_names(&p, "vj-master-0.vj vj-worker-0.vj vj-worker-1.vj");
	assert_int_equal(p.self, 0);
	assert_string_equal(p.coord_fqdn, "vj-master-0.vj.default.svc.cluster.local.");
	agent_peers_free(&p);
}

static void test_discover_mpi(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {"K_MPI_JOB_ROLE=worker", NULL};

	(void)state;
	opts_init(&o);
	assert_int_equal(discover(&o, env, FIX "mpi", "mj-worker-1", &p), 0);
	assert_string_equal(p.source, "MPI Operator");
	expect_names(&p, "mj-worker-0.mj.default.svc mj-worker-1.mj.default.svc "
			 "mj-worker-2.mj.default.svc");
	assert_int_equal(p.self, 1);
	assert_int_equal(p.observer, 0);
	assert_int_equal(p.slots_hint, 8);
	assert_non_null(p.slots);
	assert_int_equal(p.slots[0], 8);
	assert_int_equal(p.slots[2], 8);
	assert_string_equal(p.coord_fqdn, "mj-worker-0.mj.default.svc.cluster.local.");
	agent_peers_free(&p);
	/* each host's own slots (slots=N, host:N, none), this pod's own as the hint */
	assert_int_equal(discover(&o, env, FIX "mpi-slots", "mj-worker-1", &p), 0);
	expect_names(&p, "mj-worker-0.mj.default.svc mj-worker-1.mj.default.svc "
			 "mj-worker-2.mj.default.svc");
	assert_int_equal(p.slots_hint, 3);
	assert_int_equal(p.slots[0], 2);
	assert_int_equal(p.slots[1], 3);
	assert_int_equal(p.slots[2], 0);
	agent_peers_free(&p);
	assert_int_equal(discover(&o, env, FIX "mpi-slots", "mj-launcher", &p), 0);
	assert_int_equal(p.observer, 1);
	assert_int_equal(p.slots_hint, 0);
	assert_int_equal(p.slots[0], 2);
	agent_peers_free(&p);
	/* the launcher is not listed: an observer */
	assert_int_equal(discover(&o, env, FIX "mpi", "mj-launcher", &p), 0);
	assert_int_equal(p.observer, 1);
	assert_true(p.self == AGENT_SELF_NONE);
	assert_int_equal(p.n, 3);
	agent_peers_free(&p);
	assert_int_equal(discover(&o, env, FIX "mpi-bad", "mj-worker-0", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "mj-worker-1;reboot"));
}

static void test_discover_pytorchjob(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {"MASTER_ADDR=pj-master-0", "MASTER_PORT=23456", "WORLD_SIZE=4", "RANK=2",
		       NULL};
	char *pet[] = {"MASTER_ADDR=pj-master-0", "WORLD_SIZE=24",   "PET_NNODES=3",
		       "PET_NPROC_PER_NODE=8",	  "PET_NODE_RANK=0", NULL};
	char *nows[] = {"MASTER_ADDR=pj-master-0", NULL};

	(void)state;
	opts_init(&o);
	assert_int_equal(discover(&o, env, FIX "k8s", "pj-worker-1", &p), 0);
	assert_string_equal(p.source, "PyTorchJob");
	expect_names(&p, "pj-master-0 pj-worker-0 pj-worker-1 pj-worker-2");
	assert_int_equal(p.self, 2);
	assert_string_equal(p.coord_fqdn, "pj-master-0.default.svc.cluster.local.");
	agent_peers_free(&p);
	assert_int_equal(discover(&o, pet, FIX "k8s", "pj-master-0", &p), 0);
	expect_names(&p, "pj-master-0 pj-worker-0 pj-worker-1");
	assert_int_equal(p.self, 0);
	agent_peers_free(&p);
	assert_int_equal(discover(&o, nows, FIX "bare", "pj-worker-0", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "WORLD_SIZE"));
}

static void test_discover_lws(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {"LWS_LEADER_ADDRESS=lws-0.lws.default", "LWS_GROUP_SIZE=3",
		       "LWS_WORKER_INDEX=2", "LWS_NAME=lws", NULL};

	(void)state;
	opts_init(&o);
	assert_int_equal(discover(&o, env, FIX "k8s", "lws-0-2", &p), 0);
	assert_string_equal(p.source, "LeaderWorkerSet");
	expect_names(&p, "lws-0.lws.default lws-0-1.lws.default lws-0-2.lws.default");
	assert_int_equal(p.self, 2);
	assert_string_equal(p.coord_fqdn, "lws-0.lws.default.svc.cluster.local.");
	agent_peers_free(&p);
	/* LWS + Ray, --ray outside KubeRay keeps the role, LWS gives the peers */
	o.ray = AGENT_RAY_WORKER;
	assert_int_equal(discover(&o, env, FIX "k8s", "lws-0-2", &p), 0);
	assert_string_equal(p.source, "LeaderWorkerSet");
	assert_int_equal(p.self, 2);
	assert_int_equal(p.ray, AGENT_RAY_WORKER);
	agent_peers_free(&p);
}

/* KubeRay's env (ray-project/kuberay common/pod.go) and elastic --peers. */
static void test_discover_ray(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *worker[] = {"RAY_PORT=6379",
			  "RAY_CLUSTER_NAME=rc1",
			  "FQ_RAY_IP=rc1-head-svc.default.svc.cluster.local",
			  "RAY_IP=rc1-head-svc",
			  "RAY_CLOUD_INSTANCE_ID=rc1-worker-x7k2p",
			  NULL};
	char *head[] = {"RAY_PORT=6379", "RAY_CLUSTER_NAME=rc1",
			"KUBERAY_GEN_RAY_START_CMD=ray start --head --port=6379 --block", NULL};
	char *noname[] = {"RAY_PORT=6379", "FQ_RAY_IP=rc1-head-svc", NULL};
	char *badfq[] = {"RAY_PORT=6379", "RAY_CLUSTER_NAME=rc1", "FQ_RAY_IP=a;b", NULL};
	char *plain[] = {"RAY_PORT=6379", NULL};

	(void)state;
	opts_init(&o);
	assert_int_equal(discover(&o, worker, FIX "bare", "rc1-worker-x7k2p", &p), 0);
	assert_string_equal(p.source, "KubeRay");
	expect_names(&p, "rc1-head");
	assert_int_equal(p.ray, AGENT_RAY_WORKER);
	assert_true(p.elastic);
	assert_int_equal(p.elastic_max, AGENT_ELASTIC_MAX);
	assert_true(p.self == AGENT_SELF_NONE);
	assert_false(p.observer);
	assert_string_equal(p.coord_fqdn, "rc1-head-svc.default.svc.cluster.local.");
	agent_peers_free(&p);
	o.nnodes_min = 1;
	o.nnodes_max = 16;
	assert_int_equal(discover(&o, head, FIX "bare", "rc1-head-abcde", &p), 0);
	assert_int_equal(p.ray, AGENT_RAY_HEAD);
	assert_int_equal(p.self, 0);
	assert_int_equal(p.elastic_max, 16);
	assert_null(p.coord_fqdn);
	agent_peers_free(&p);
	opts_init(&o);
	assert_int_equal(discover(&o, noname, FIX "bare", "w", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "RAY_CLUSTER_NAME"));
	assert_int_equal(discover(&o, badfq, FIX "bare", "w", &p), GX_EUSAGE);
	/* RAY_PORT alone is not KubeRay; --ray says so explicitly */
	o.nnodes_min = o.nnodes_max = 1;
	assert_int_equal(discover(&o, plain, FIX "bare", "w-0", &p), 0);
	assert_non_null(strstr(p.source, "indexed hostname"));
	assert_int_equal(p.ray, AGENT_RAY_AUTO);
	agent_peers_free(&p);
	o.ray = AGENT_RAY_HEAD;
	o.peers = "w-0";
	assert_int_equal(discover(&o, plain, FIX "bare", "w-0", &p), 0);
	assert_int_equal(p.ray, AGENT_RAY_HEAD);
	agent_peers_free(&p);
	/* --elastic: a pod not listed joins by name */
	opts_init(&o);
	o.peers = "head-0";
	o.elastic = 1;
	assert_int_equal(discover(&o, plain, FIX "bare", "late-pod", &p), 0);
	assert_true(p.self == AGENT_SELF_NONE);
	assert_true(p.elastic);
	agent_peers_free(&p);
	o.elastic = 0;
	assert_int_equal(discover(&o, plain, FIX "bare", "late-pod", &p), GX_EUSAGE);
}

static void test_discover_jobset(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {"JOB_COMPLETION_INDEX=3", NULL};
	char *multi[] = {"JOB_COMPLETION_INDEX=2", NULL};
	char *none[] = {NULL};

	(void)state;
	opts_init(&o);
	o.nnodes_min = o.nnodes_max = 4;
	assert_int_equal(discover(&o, env, FIX "jobset", "js-workers-0-3", &p), 0);
	assert_non_null(strstr(p.source, "indexed"));
	expect_names(&p, "js-workers-0-0.js js-workers-0-1.js js-workers-0-2.js "
			 "js-workers-0-3.js");
	assert_int_equal(p.self, 3);
	assert_string_equal(p.coord_fqdn, "js-workers-0-0.js.default.svc.cluster.local.");
	agent_peers_free(&p);
	/* several replicated jobs: rank needs P, which only --peers gives */
	o.nnodes_min = o.nnodes_max = 8;
	assert_int_equal(discover(&o, multi, FIX "jobset", "js-w-1-2", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "--peers"));
	/* StatefulSet: ordinal, no subdomain known */
	o.nnodes_min = o.nnodes_max = 3;
	assert_int_equal(discover(&o, none, FIX "bare", "ss-2", &p), 0);
	expect_names(&p, "ss-0 ss-1 ss-2");
	assert_int_equal(p.self, 2);
	assert_null(p.coord_fqdn);
	agent_peers_free(&p);
	/* no count */
	o.nnodes_min = o.nnodes_max = 0;
	assert_int_equal(discover(&o, none, FIX "bare", "ss-2", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "--nnodes"));
}

static void test_discover_unknown(void **state)
{
	struct agent_opts o;
	struct agent_peers p;
	char *env[] = {"HOME=/", "PATH=/bin", NULL};

	(void)state;
	opts_init(&o);
	assert_int_equal(discover(&o, env, FIX "k8s", "mypod", &p), GX_EUSAGE);
	assert_non_null(strstr(err, "--peers"));
	assert_null(p.names);
	assert_int_equal(p.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_expand_plain),
	    cmocka_unit_test(test_expand_padding),
	    cmocka_unit_test(test_expand_descending_step_chars),
	    cmocka_unit_test(test_expand_cartesian_and_lists),
	    cmocka_unit_test(test_expand_limits),
	    cmocka_unit_test(test_expand_invalid),
	    cmocka_unit_test(test_self_index),
	    cmocka_unit_test(test_job_id),
	    cmocka_unit_test(test_discover_option),
	    cmocka_unit_test(test_self_name_beats_local_ip),
	    cmocka_unit_test(test_discover_torchx_volcano),
	    cmocka_unit_test(test_discover_torchx_indexed),
	    cmocka_unit_test(test_discover_volcano_env),
	    cmocka_unit_test(test_discover_volcano_too_many_tasks),
	    cmocka_unit_test(test_name_match_fqdn_hostname),
	    cmocka_unit_test(test_dns_server_check),
	    cmocka_unit_test(test_discover_volcano_files),
	    cmocka_unit_test(test_discover_mpi),
	    cmocka_unit_test(test_discover_pytorchjob),
	    cmocka_unit_test(test_discover_lws),
	    cmocka_unit_test(test_discover_ray),
	    cmocka_unit_test(test_discover_jobset),
	    cmocka_unit_test(test_discover_unknown),
	    cmocka_unit_test(test_discover_bare_sibling),
	    cmocka_unit_test(test_host_names_domain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
