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

#include "agent/launch/rewrite_int.h"

static const char *const coord_names[] = {"job-worker-0", "job-worker-0.job.default.svc",
					  "10.9.1.10", NULL};
static char *env_vc[] = {"VC_TRAINER_0_HOSTS=job-worker-0.job", NULL};

static struct agent_rewrite_ctx ctx(int is_coord)
{
	struct agent_rewrite_ctx c = {.addr = "192.168.9.10",
				      .master_port = 29500,
				      .rank = 2,
				      .world = 3,
				      .is_coordinator = is_coord,
				      .coord_names = coord_names,
				      .envp = env_vc};
	return c;
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
			"--nnodes=1:3",
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

/* ---- MPI launch lines (issue 27) ---- */

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

/* DeepSpeed (issue 27): its hostfile is "host slots=N" (gxboot's default format) */
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
	char **o;
	int fd = mkstemp(path);

	(void)state;
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
	/* the user's own btl_tcp_if_include stays theirs */
	assert_null(rw_mpi(kept, 6, 0));
	assert_null(launch_text);
}

/* Members ask for the whole table (a hostfile) when CMD is a launcher (issue 27). */
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
