/* SPDX-License-Identifier: MIT */
/* test_agent_rewrite.c - torchrun argument rewriting over every spelling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/launch/launch.h"
#include "agent/peers/peers_int.h"
#include "rdzv/gx/gx.h"

/* this pod: job-worker-<rank> of the headless Service "job" in namespace "default" */
static const struct agent_domain dom = {"job", "default", "cluster.local"};
static char *env_vc[] = {"VC_TRAINER_0_HOSTS=job-worker-0.job", NULL};
static char *ours_v4[] = {"GXBOOT_ADDR=192.168.9.12",	      "OMPI_MCA_btl_tcp_if_include=net1",
			  "OMPI_MCA_oob_tcp_if_include=net1", "UCX_NET_DEVICES=net1",
			  "NCCL_SOCKET_IFNAME==net1",	      "HYDRA_IFACE=net1",
			  "HOROVOD_GLOO_IFACE=net1",	      NULL};

/* the coordinator's eth0 address is 10.9.1.10: an address of this pod on pod 0 only */
static int local_on_coord(const char *ip)
{
	return strcmp(ip, "10.9.1.10") == 0;
}

static struct agent_rewrite_ctx ctx(int is_coord)
{
	struct agent_rewrite_ctx c = {
	    .addr = "192.168.9.10",
	    .master_port = 29500,
	    .rank = is_coord ? 0 : 2,
	    .world = 3,
	    .is_coordinator = is_coord,
	    /* pod 0 knows no eth0 address of its own entry; a member looked the name up */
	    .coord = {"job-worker-0", is_coord ? "" : "10.9.1.10", "192.168.9.10"},
	    .coord_fqdn = "job-worker-0.job.default.svc.cluster.local.",
	    .dom = &dom,
	    .is_local_ip = is_coord ? local_on_coord : NULL,
	    .envp = env_vc,
	    .ours = ours_v4,
	    .self = -1,
	};
	return c;
}

/* stderr of the code between log_begin and log_end, into logbuf */
static char logbuf[16384];
static FILE *log_f;
static int log_saved = -1;

static void log_begin(void)
{
	fflush(stderr);
	log_f = tmpfile();
	assert_non_null(log_f);
	log_saved = dup(STDERR_FILENO);
	assert_true(log_saved >= 0);
	assert_int_equal(dup2(fileno(log_f), STDERR_FILENO), STDERR_FILENO);
}

static const char *log_end(void)
{
	size_t got;

	fflush(stderr);
	assert_int_equal(dup2(log_saved, STDERR_FILENO), STDERR_FILENO);
	close(log_saved);
	rewind(log_f);
	got = fread(logbuf, 1, sizeof(logbuf) - 1, log_f);
	logbuf[got] = '\0';
	fclose(log_f);
	return logbuf;
}

static void expect_log(const char *want)
{
	if (!strstr(logbuf, want))
		fail_msg("no \"%s\" in the log:\n%s", want, logbuf);
}

static char **rw(char **argv, int argc, int is_coord, int expect_rc)
{
	struct agent_rewrite_ctx c = ctx(is_coord);
	char **out = NULL;

	assert_int_equal(agent_rewrite_cmd(argv, argc, &c, &out), expect_rc);
	return out;
}

static void test_space_and_equals_forms(void **state)
{
	char *argv[] = {"torchrun",
			"--nnodes=2",
			"--node-rank",
			"0",
			"--master_addr",
			"job-worker-0",
			"--master-port=23456",
			"--rdzv_backend",
			"c10d",
			"--rdzv-endpoint",
			"job-worker-0:29400",
			"train.py",
			"--master_addr",
			"x"};
	char **o = rw(argv, 14, 0, 1);

	(void)state;
	assert_string_equal(o[1], "--nnodes=3");
	assert_string_equal(o[3], "2");
	assert_string_equal(o[5], "192.168.9.10");
	assert_string_equal(o[6], "--master-port=29500");
	assert_string_equal(o[8], "static");
	assert_string_equal(o[10], "192.168.9.10:29400");
	/* the script's own arguments are never touched */
	assert_string_equal(o[12], "--master_addr");
	assert_string_equal(o[13], "x");
	agent_argv_free(o);
}

static void test_python_m_and_ip(void **state)
{
	char *argv[] = {"/usr/bin/python3", "-m",	 "torch.distributed.run",
			"--master_addr",    "10.9.1.10", "x.py"};
	char **o = rw(argv, 6, 0, 1);

	(void)state;
	assert_string_equal(o[4], "192.168.9.10");
	agent_argv_free(o);
}

static void test_foreign_host_left_alone(void **state)
{
	char *argv[] = {"torchrun",	   "--rdzv_backend",   "c10d",
			"--rdzv_endpoint", "other-host:29500", "x.py"};

	(void)state;
	assert_null(rw(argv, 6, 0, 0));
}

static void test_localhost_only_on_coordinator(void **state)
{
	char *argv[] = {"torchrun", "--rdzv_endpoint", "localhost:29500", "x.py"};
	char **o;

	(void)state;
	assert_null(rw(argv, 4, 0, 0));
	o = rw(argv, 4, 1, 1);
	assert_string_equal(o[2], "192.168.9.10:29500");
	agent_argv_free(o);
}

static void test_not_torchrun(void **state)
{
	char *argv[] = {"python3", "train.py", "--master_addr", "job-worker-0"};

	(void)state;
	assert_null(rw(argv, 4, 0, 0));
}

static void test_torchx_shell(void **state)
{
	char *argv[] = {"bash", "-c",
			"torchrun --rdzv_backend c10d --rdzv_endpoint "
			"${VC_TRAINER_0_HOSTS:=localhost}:29500 --nnodes 3 --nproc_per_node 2 "
			"--tee 1 --role '' -m my.app --lr 'a b'"};
	char **o = rw(argv, 3, 0, 1);

	(void)state;
	assert_string_equal(o[0], "bash");
	assert_string_equal(o[2], "torchrun --rdzv_backend 'static' --rdzv_endpoint "
				  "'192.168.9.10:29500' --nnodes 3 --nproc_per_node 2 --tee 1 "
				  "--role '' -m my.app --lr 'a b'");
	agent_argv_free(o);
}

static void test_shell_too_complex(void **state)
{
	char *argv[] = {"sh", "-c", "cd /x && torchrun --master_addr job-worker-0 x.py"};

	(void)state;
	assert_null(rw(argv, 3, 0, 0));
}

/* ---- MPI launch lines ---- */

static const struct agent_rw_host hosts[] = {
    {"job-worker-0", "", "192.168.9.10"},
    {"job-worker-1", "10.9.1.11", "192.168.9.11"},
    {"job-worker-2", "10.9.1.12", "192.168.9.12"},
};

static char *launch_text;

static char **rw_mpi(char **argv, int argc, int expect_rc)
{
	struct agent_rewrite_ctx c = ctx(1);
	char **out = NULL;

	c.hosts = hosts;
	c.nhosts = 3;
	c.launch_hostfile = "/run/gxboot/hostfile.launch";
	c.launch_text = &launch_text;
	c.iface = "net1";
	assert_int_equal(agent_rewrite_cmd(argv, argc, &c, &out), expect_rc);
	return out;
}

static void test_mpirun_hosts(void **state)
{
	char *argv[] = {
	    "mpirun",	"-np",	    "4",    "--mca",
	    "btl",	"tcp,self", "-H",   "job-worker-1:2,job-worker-2.job.default.svc:2",
	    "--map-by", "slot",	    "prog", "-H",
	    "x"};
	char *hydra[] = {"mpiexec.hydra", "-n", "4", "-hosts", "job-worker-0,10.9.1.12", "prog"};
	char *plain[] = {"mpirun", "-np", "2", "prog"};
	char *foreign[] = {"mpirun", "--host", "job-worker-1,other-host", "prog"};
	char *hvd[] = {"horovodrun", "-np",	"8", "--hosts", "job-worker-1:4,job-worker-2:4",
		       "python3",    "train.py"};
	char **o;

	(void)state;
	o = rw_mpi(argv, 13, 1);
	assert_string_equal(o[7], "192.168.9.11:2,192.168.9.12:2");
	assert_string_equal(o[12], "x"); /* the program's own arguments are its own */
	agent_argv_free(o);
	o = rw_mpi(hydra, 6, 1);
	assert_string_equal(o[4], "192.168.9.10,192.168.9.12");
	agent_argv_free(o);
	assert_null(rw_mpi(plain, 4, 0));
	assert_null(rw_mpi(foreign, 4, 0));
	o = rw_mpi(hvd, 7, 1);
	assert_string_equal(o[4], "192.168.9.11:4,192.168.9.12:4");
	assert_string_equal(o[6], "train.py");
	agent_argv_free(o);
	assert_null(launch_text);
}

static void test_mpirun_hostfile(void **state)
{
	char path[] = "/tmp/gxrw.XXXXXX";
	const char *mpi = "# MPI Operator\njob-worker-1.job.default.svc slots=8\n"
			  "job-worker-2.job.default.svc slots=8 max_slots=8\n";
	char *argv[] = {"mpirun", "--hostfile", path, "-np", "16", "prog"};
	char *hydra[] = {"sh", "-c", NULL};
	char cmd[128];
	char **o;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, mpi, strlen(mpi)), (int)strlen(mpi));
	close(fd);
	o = rw_mpi(argv, 6, 1);
	assert_string_equal(o[2], "/run/gxboot/hostfile.launch");
	assert_non_null(launch_text);
	assert_string_equal(launch_text, "# MPI Operator\n192.168.9.11 slots=8\n"
					 "192.168.9.12 slots=8 max_slots=8\n");
	free(launch_text);
	launch_text = NULL;
	agent_argv_free(o);
	/* Hydra's -f with host:N lines, inside sh -c */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "job-worker-1:4\n10.9.1.12:4\n", 27), 27);
	close(fd);
	snprintf(cmd, sizeof(cmd), "mpiexec -f %s -n 8 prog", path);
	hydra[2] = cmd;
	o = rw_mpi(hydra, 3, 1);
	assert_string_equal(o[2], "mpiexec -f '/run/gxboot/hostfile.launch' -n 8 prog");
	assert_string_equal(launch_text, "192.168.9.11:4\n192.168.9.12:4\n");
	free(launch_text);
	launch_text = NULL;
	agent_argv_free(o);
	/* a host that is no peer: the file is left as it is */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "job-worker-1:4\nelsewhere:4\n", 27), 27);
	close(fd);
	assert_null(rw_mpi(argv, 6, 0));
	assert_null(launch_text);
	unlink(path);
	/* a missing file: left alone */
	assert_null(rw_mpi(argv, 6, 0));
}

/* IPv6 secondaries: "host:N" cannot carry them; names stay (gxboot rsh maps them). */
static void test_mpirun_ipv6(void **state)
{
	static const struct agent_rw_host v6[] = {{"job-worker-1", "10.9.1.11", "fd00::11"}};
	struct agent_rewrite_ctx c = ctx(1);
	char *argv[] = {"mpirun", "-H", "job-worker-1:2", "prog"};
	char **out = NULL;

	(void)state;
	c.hosts = v6;
	c.nhosts = 1;
	assert_int_equal(agent_rewrite_cmd(argv, 4, &c, &out), 0);
	assert_null(out);
}

/* DeepSpeed: its hostfile is "host slots=N" (gxboot's default format) */
static void test_deepspeed(void **state)
{
	char path[] = "/tmp/gxds.XXXXXX";
	const char *hf = "job-worker-1 slots=8\njob-worker-2 slots=8\n";
	char *argv[] = {"deepspeed", "--hostfile",	   path,     "--launcher", "openmpi",
			"train.py",  "--deepspeed_config", "ds.json"};
	char *own[] = {
	    "deepspeed",	  "--hostfile=/nonexistent", "--master_addr",	   "job-worker-2",
	    "--launcher=openmpi", "--launcher_args",	     "--mca btl self,tcp", "train.py"};
	char *kept[] = {
	    "deepspeed", "--launcher", "openmpi", "--launcher_args", "-mca btl_tcp_if_include eth0",
	    "train.py"};
	struct agent_rewrite_ctx c = ctx(1);
	char **o;
	int fd = mkstemp(path);

	(void)state;
	c.hosts = hosts;
	c.nhosts = 3;
	c.iface = "net1";
	assert_true(fd >= 0);
	assert_int_equal(write(fd, hf, strlen(hf)), (int)strlen(hf));
	close(fd);
	o = rw_mpi(argv, 8, 1);
	assert_string_equal(o[1], "--hostfile");
	assert_string_equal(o[2], "/run/gxboot/hostfile.launch");
	assert_string_equal(o[5], "--master_addr=192.168.9.11"); /* rank 0 runs on the first host */
	assert_string_equal(o[6], "--launcher_args");
	assert_string_equal(o[7], "--mca btl_tcp_if_include net1");
	assert_string_equal(o[8], "train.py");
	assert_string_equal(o[10], "ds.json");
	assert_null(o[11]);
	assert_string_equal(launch_text, "192.168.9.11 slots=8\n192.168.9.12 slots=8\n");
	free(launch_text);
	launch_text = NULL;
	agent_argv_free(o);
	unlink(path);
	/* --master_addr naming a peer is mapped; the user's launcher_args are extended */
	o = rw_mpi(own, 8, 1);
	assert_string_equal(o[1], "--hostfile=/nonexistent"); /* unreadable: left alone */
	assert_string_equal(o[3], "192.168.9.12");
	assert_string_equal(o[6], "--mca btl self,tcp --mca btl_tcp_if_include net1");
	assert_string_equal(o[7], "train.py");
	agent_argv_free(o);
	/* the user's own btl_tcp_if_include stays theirs, with a warning */
	log_begin();
	assert_null(rw_mpi(kept, 6, 0));
	log_end();
	expect_log("keeping the user's btl_tcp_if_include eth0 in deepspeed --launcher_args "
		   "(gxboot chose net1; --override-env replaces it)");
	assert_null(launch_text);
	c.override_env = 1;
	assert_int_equal(agent_rewrite_cmd(kept, 6, &c, &o), 1);
	assert_string_equal(o[4], "-mca btl_tcp_if_include net1");
	agent_argv_free(o);
}

/* ---- which names are peers: by the full name they reach from this pod ---- */

static char **rw_c(char **argv, int argc, const struct agent_rewrite_ctx *c, int expect_rc)
{
	char **out = NULL;

	assert_int_equal(agent_rewrite_cmd(argv, argc, c, &out), expect_rc);
	return out;
}

/* Another namespace's (or subdomain's) pod with a peer's first label is no peer: left as
 * written, with a warning; the forms that reach the peer from this pod are mapped. */
static void test_other_namespace_left_alone(void **state)
{
	char *mpi[] = {"mpirun", "-H", "job-worker-1.otherjob.otherns:1,job-worker-0:1", "prog"};
	char *tr[] = {"torchrun", "--master_addr", "job-worker-0.otherjob.otherns", "x.py"};
	char *sub[] = {"torchrun", "--rdzv_endpoint", "job-worker-0.other:29400", "x.py"};
	char *cl[] = {"torchrun", "--master_addr", "job-worker-0.job.default.svc.other.local",
		      "x.py"};
	char *forms[] = {"mpirun", "-H",
			 "job-worker-0.job:1,job-worker-1.job.default:1,job-worker-2.job.default."
			 "svc:1,JOB-WORKER-1.job.default.svc.cluster.local.:1",
			 "prog"};
	char *ok[] = {"torchrun", "--master_addr", "job-worker-0.job.default", "x.py"};
	char **o;
	int coord;

	(void)state;
	log_begin();
	assert_null(rw_mpi(mpi, 4, 0));
	log_end();
	expect_log("-H job-worker-1.otherjob.otherns:1,job-worker-0:1 names a host that is no "
		   "peer: left alone");
	for (coord = 0; coord < 2; coord++) {
		log_begin();
		assert_null(rw(tr, 4, coord, 0));
		assert_null(rw(sub, 4, coord, 0));
		assert_null(rw(cl, 4, coord, 0));
		log_end();
		expect_log("torchrun --master_addr job-worker-0.otherjob.otherns names another "
			   "host: left alone");
		expect_log("torchrun --rdzv_endpoint job-worker-0.other:29400 names another host");
		expect_log("--master_addr job-worker-0.job.default.svc.other.local names another");
	}
	o = rw_mpi(forms, 4, 1);
	assert_string_equal(o[2], "192.168.9.10:1,192.168.9.11:1,192.168.9.12:1,192.168.9.11:1");
	agent_argv_free(o);
	o = rw(ok, 4, 0, 1);
	assert_string_equal(o[2], "192.168.9.10");
	agent_argv_free(o);
}

/* The coordinator's eth0 address names it: on pod 0 itself (an address of this pod) and on
 * a member (the address its name resolved to), for torchrun as for mpirun's -H. */
static void test_coordinator_eth0_address(void **state)
{
	char *ma[] = {"torchrun", "--master_addr", "10.9.1.10", "x.py"};
	char *ep[] = {"torchrun", "--rdzv_backend=static", "--rdzv_endpoint=10.9.1.10:29400",
		      "x.py"};
	char *other[] = {"torchrun", "--master_addr", "10.9.1.11", "x.py"};
	char *mpi[] = {"mpirun", "-H", "10.9.1.10:2,10.9.1.11:2", "prog"};
	struct agent_rewrite_ctx c = ctx(1);
	char **o;
	int coord;

	(void)state;
	for (coord = 0; coord < 2; coord++) {
		o = rw(ma, 4, coord, 1);
		assert_string_equal(o[2], "192.168.9.10");
		agent_argv_free(o);
		o = rw(ep, 4, coord, 1);
		assert_string_equal(o[2], "--rdzv_endpoint=192.168.9.10:29400");
		agent_argv_free(o);
		assert_null(rw(other, 4, coord, 0)); /* job-worker-1's eth0 */
	}
	/* mpirun on pod 0: its own eth0 address is its own entry (the table has none) */
	c.hosts = hosts;
	c.nhosts = 3;
	c.self = 0;
	o = rw_c(mpi, 4, &c, 1);
	assert_string_equal(o[2], "192.168.9.10:2,192.168.9.11:2");
	agent_argv_free(o);
	c.is_local_ip = NULL; /* without this pod's addresses it is no peer */
	assert_null(rw_c(mpi, 4, &c, 0));
}

/* Each change of meaning is a warning saying what was asked, what runs, and why; values
 * that already agree say nothing; a line left alone says nothing of them either. */
static void test_meaning_changes_warned(void **state)
{
	char *argv[] = {"torchrun",
			"--nnodes",
			"2",
			"--node_rank",
			"1",
			"--rdzv_backend",
			"c10d",
			"--rdzv_endpoint",
			"job-worker-0:29400",
			"--master_port",
			"1234",
			"x.py"};
	char *same[] = {"torchrun", "--nnodes",	      "3",	"--node_rank",
			"0",	    "--rdzv_backend", "static", "x.py"};
	char *foreign[] = {"torchrun", "--node_rank", "1", "--master_addr", "elsewhere", "x.py"};
	char **o;

	(void)state;
	log_begin();
	o = rw(argv, 12, 1, 1);
	log_end();
	assert_string_equal(o[2], "3");
	assert_string_equal(o[4], "0");
	assert_string_equal(o[6], "static");
	assert_string_equal(o[8], "192.168.9.10:29400");
	assert_string_equal(o[10], "29500");
	agent_argv_free(o);
	expect_log("warning: rewrite --node_rank: 1 -> 0: gxboot's rendezvous ranked this pod 0");
	expect_log("warning: rewrite --nnodes: 2 -> 3: gxboot's rendezvous has 3 pods");
	expect_log("warning: rewrite --rdzv_backend: c10d -> static: torch's c10d rendezvous picks "
		   "the pod that hosts its store by the host name's eth0 address");
	expect_log("warning: rewrite --master_port: 1234 -> 29500: every pod gets gxboot's "
		   "MASTER_PORT 29500");
	assert_null(strstr(logbuf, "warning: rewrite --rdzv_endpoint")); /* same pod: info */
	log_begin();
	assert_null(rw(same, 8, 1, 0));
	assert_null(rw(foreign, 6, 1, 0));
	log_end();
	assert_null(strstr(logbuf, "rewrite --"));
}

/* torchrun's elastic range: kept only as gxboot's own --nnodes MIN:MAX, else refused. */
static void test_nnodes_range(void **state)
{
	char *argv[] = {"torchrun",	   "--nnodes",		 "2:3", "--rdzv_backend", "c10d",
			"--rdzv_endpoint", "job-worker-0:29400", "x.py"};
	char *sh[] = {"bash", "-c", "torchrun --nnodes=2:3 --master_addr job-worker-0 x.py"};
	char *foreign[] = {"torchrun", "--nnodes", "2:3", "--rdzv_endpoint", "etcd:2379", "x.py"};
	char *fixed[] = {"torchrun", "--nnodes", "3:3", "--master_addr", "job-worker-0", "x.py"};
	struct agent_rewrite_ctx c = ctx(0);
	char e[600] = "", **o;

	(void)state;
	c.err = e;
	c.errlen = sizeof(e);
	assert_null(rw_c(argv, 8, &c, GX_EUSAGE));
	assert_non_null(strstr(e, "torchrun --nnodes 2:3 is an elastic range, which the static "
				  "rendezvous gxboot runs on the secondary network cannot keep"));
	assert_non_null(strstr(e, "give gxboot the same range (--nnodes 2:3)"));
	assert_non_null(strstr(e, "--no-rewrite"));
	e[0] = '\0';
	assert_null(rw_c(sh, 3, &c, GX_EUSAGE));
	assert_non_null(strstr(e, "--nnodes 2:3"));
	c.nnodes_min = 1; /* another range of gxboot's is not the user's */
	c.nnodes_max = 3;
	assert_null(rw_c(argv, 8, &c, GX_EUSAGE));
	c.nnodes_min = 2;
	log_begin();
	o = rw_c(argv, 8, &c, 1);
	log_end();
	assert_string_equal(o[2], "3");
	agent_argv_free(o);
	expect_log("rewrite --nnodes: 2:3 -> 3: the elastic range runs as gxboot's own --nnodes "
		   "2:3 (the rendezvous commits once 2 pods are in");
	c = ctx(0);
	assert_null(rw_c(foreign, 6, &c, 0)); /* a line left as written keeps its range */
	o = rw_c(fixed, 6, &c, 1);	      /* MIN = MAX: a count, not a range */
	assert_string_equal(o[2], "3");
	assert_string_equal(o[4], "192.168.9.10");
	agent_argv_free(o);
}

/* Interface pins on an MPI launch line are kept and warned about like the same variables
 * in the environment, replaced under --override-env. */
static void test_mpi_pins(void **state)
{
	char *inc[] = {"mpirun",   "--mca", "btl_tcp_if_include",
		       "eth0",	   "-mca",  "oob_tcp_if_include",
		       "eth0",	   "--mca", "btl",
		       "tcp,self", "-H",    "job-worker-1:2",
		       "prog",	   "--mca", "btl_tcp_if_include",
		       "x"};
	char *exc[] = {"mpirun", "--mca", "btl_tcp_if_exclude", "lo,docker0", "-np", "2", "prog"};
	char *x[] = {"mpirun",		"-x",  "UCX_NET_DEVICES=eth0",	  "-x",
		     "UCX_NET_DEVICES", "-x",  "NCCL_SOCKET_IFNAME=net1", "-x",
		     "PATH=/x",		"prog"};
	char *hydra[] = {"mpiexec.hydra", "-iface", "eth0", "-genv", "UCX_NET_DEVICES",
			 "eth0",	  "-n",	    "2",    "prog"};
	char *sh[] = {"sh", "-c", "mpirun --gmca btl_tcp_if_include eth0 prog"};
	char *hvd[] = {"horovodrun", "-np",
		       "2",	     "--network-interface",
		       "eth0",	     "--network-interfaces=eth0,eth1",
		       "python3",    "t.py"};
	const char *unset[AGENT_RW_UNSET_MAX + 1] = {NULL};
	struct agent_rewrite_ctx c = ctx(1);
	char **o;

	(void)state;
	c.hosts = hosts;
	c.nhosts = 3;
	c.unset = unset;
	log_begin();
	o = rw_c(inc, 16, &c, 1); /* -H is mapped; the pins stay */
	assert_null(rw_c(exc, 7, &c, 0));
	assert_null(rw_c(x, 10, &c, 0));
	assert_null(rw_c(hydra, 9, &c, 0));
	assert_null(rw_c(sh, 3, &c, 0));
	assert_null(rw_c(hvd, 8, &c, 0));
	log_end();
	assert_string_equal(o[3], "eth0");
	assert_string_equal(o[6], "eth0");
	assert_string_equal(o[11], "192.168.9.11:2");
	assert_string_equal(o[15], "x"); /* the program's own arguments */
	agent_argv_free(o);
	expect_log("keeping the user's --mca btl_tcp_if_include eth0 (gxboot chose net1; "
		   "--override-env replaces it)");
	expect_log("keeping the user's -mca oob_tcp_if_include eth0 (gxboot chose net1");
	expect_log("keeping the user's --mca btl_tcp_if_exclude lo,docker0: OpenMPI takes an "
		   "include or an exclude list, not both, so CMD does not get gxboot's "
		   "OMPI_MCA_btl_tcp_if_include=net1");
	expect_log("keeping the user's -x UCX_NET_DEVICES=eth0 (gxboot chose net1");
	expect_log("keeping the user's -iface eth0 (gxboot chose net1");
	expect_log("keeping the user's -genv UCX_NET_DEVICES eth0 (gxboot chose net1");
	expect_log("keeping the user's --gmca btl_tcp_if_include eth0");
	expect_log("keeping the user's --network-interface eth0 (gxboot chose net1");
	expect_log("keeping the user's --network-interfaces=eth0,eth1 (gxboot chose net1");
	assert_null(strstr(logbuf, "NCCL_SOCKET_IFNAME")); /* =net1 is net1 */
	assert_null(strstr(logbuf, "PATH"));
	assert_string_equal(unset[0], "OMPI_MCA_btl_tcp_if_include");
	assert_null(unset[1]);
	/* --override-env: gxboot's choice on the line */
	unset[0] = NULL;
	c.override_env = 1;
	log_begin();
	o = rw_c(inc, 16, &c, 1);
	log_end();
	assert_string_equal(o[3], "net1");
	assert_string_equal(o[6], "net1");
	assert_string_equal(o[15], "x");
	agent_argv_free(o);
	expect_log("warning: rewrite --mca btl_tcp_if_include: eth0 -> net1: --override-env");
	o = rw_c(exc, 7, &c, 1);
	assert_string_equal(o[2], "btl_tcp_if_include");
	assert_string_equal(o[3], "net1");
	agent_argv_free(o);
	assert_null(unset[0]);
	o = rw_c(x, 10, &c, 1);
	assert_string_equal(o[2], "UCX_NET_DEVICES=net1");
	assert_string_equal(o[4], "UCX_NET_DEVICES");
	assert_string_equal(o[6], "NCCL_SOCKET_IFNAME=net1");
	agent_argv_free(o);
	o = rw_c(hydra, 9, &c, 1);
	assert_string_equal(o[2], "net1");
	assert_string_equal(o[5], "net1");
	agent_argv_free(o);
	o = rw_c(sh, 3, &c, 1);
	assert_string_equal(o[2], "mpirun --gmca btl_tcp_if_include 'net1' prog");
	agent_argv_free(o);
	o = rw_c(hvd, 8, &c, 1);
	assert_string_equal(o[4], "net1");
	assert_string_equal(o[5], "--network-interfaces=net1");
	agent_argv_free(o);
}

/* Hydra on an IPv6-only secondary (no HYDRA_IFACE from gxboot) gets -localhost <FQDN>. */
static void test_hydra_localhost(void **state)
{
	char dir[] = "/tmp/gxhyd.XXXXXX", path[128], link[128], pathvar[160];
	char *ours_v6[] = {"GXBOOT_ADDR=fd00::12", "UCX_NET_DEVICES=net1", NULL};
	char *mpich[] = {"mpiexec.mpich", "-n", "4", "prog"};
	char *given[] = {"mpiexec.hydra", "-localhost", "mine", "-n", "4", "prog"};
	char *plain[] = {"mpiexec", "-n", "4", "prog"};
	char *ompi[] = {"mpirun.openmpi", "-n", "4", "prog"};
	char *envp[] = {pathvar, NULL};
	struct agent_rewrite_ctx c = ctx(1);
	char **o;
	int fd;

	(void)state;
	c.ours = ours_v6;
	c.self_fqdn = "job-worker-0.job.default.svc.cluster.local";
	o = rw_c(mpich, 4, &c, 1);
	assert_string_equal(o[1], "-localhost");
	assert_string_equal(o[2], "job-worker-0.job.default.svc.cluster.local");
	assert_string_equal(o[3], "-n");
	assert_null(o[6]);
	agent_argv_free(o);
	assert_null(rw_c(given, 6, &c, 0));
	assert_null(rw_c(ompi, 4, &c, 0));
	/* plain mpiexec: what PATH's mpiexec is (Debian's alternatives link) */
	assert_non_null(mkdtemp(dir));
	snprintf(pathvar, sizeof(pathvar), "PATH=/nonexistent:%s", dir);
	snprintf(path, sizeof(path), "%s/mpiexec.hydra", dir);
	snprintf(link, sizeof(link), "%s/mpiexec", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0755);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(path, link), 0);
	c.envp = envp;
	o = rw_c(plain, 4, &c, 1);
	assert_string_equal(o[2], "job-worker-0.job.default.svc.cluster.local");
	agent_argv_free(o);
	unlink(link);
	snprintf(path, sizeof(path), "%s/mpiexec.openmpi", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0755);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(path, link), 0);
	assert_null(rw_c(plain, 4, &c, 0));
	unlink(link);
	unlink(path);
	snprintf(path, sizeof(path), "%s/mpiexec.hydra", dir);
	unlink(path);
	rmdir(dir);
	/* an IPv4 secondary: HYDRA_IFACE carries the control connection, nothing added */
	c.ours = ours_v4;
	assert_null(rw_c(mpich, 4, &c, 0));
}

/* Members ask for the whole table (a hostfile) when CMD is a launcher. */
static void test_is_launcher(void **state)
{
	char *yes[][4] = {{"mpirun", "-np", "2", NULL},
			  {"/usr/bin/mpiexec.hydra", "-n", "2", NULL},
			  {"mpirun.mpich", NULL},
			  {"horovodrun", "-np", "4", NULL},
			  {"deepspeed", "train.py", NULL},
			  {"bash", "-c", "  mpirun -np 4 x", NULL},
			  {"python3", "-m", "deepspeed.launcher.runner", NULL}};
	char *no[][4] = {{"torchrun", "x.py", NULL},
			 {"mpirunner", NULL},
			 {"sh", "-c", "cd /x; python t.py", NULL},
			 {"python3", "-m", "torch.distributed.run", NULL},
			 {"/opt/mpi/bin/mpi", NULL}};
	size_t i;
	int n;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		for (n = 0; yes[i][n]; n++)
			;
		assert_int_equal(agent_cmd_is_launcher(yes[i], n), 1);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		for (n = 0; no[i][n]; n++)
			;
		assert_int_equal(agent_cmd_is_launcher(no[i], n), 0);
	}
	assert_int_equal(agent_cmd_is_launcher(NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_space_and_equals_forms),
	    cmocka_unit_test(test_python_m_and_ip),
	    cmocka_unit_test(test_foreign_host_left_alone),
	    cmocka_unit_test(test_localhost_only_on_coordinator),
	    cmocka_unit_test(test_not_torchrun),
	    cmocka_unit_test(test_torchx_shell),
	    cmocka_unit_test(test_shell_too_complex),
	    cmocka_unit_test(test_mpirun_hosts),
	    cmocka_unit_test(test_mpirun_hostfile),
	    cmocka_unit_test(test_mpirun_ipv6),
	    cmocka_unit_test(test_deepspeed),
	    cmocka_unit_test(test_is_launcher),
	    cmocka_unit_test(test_other_namespace_left_alone),
	    cmocka_unit_test(test_coordinator_eth0_address),
	    cmocka_unit_test(test_meaning_changes_warned),
	    cmocka_unit_test(test_nnodes_range),
	    cmocka_unit_test(test_mpi_pins),
	    cmocka_unit_test(test_hydra_localhost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
