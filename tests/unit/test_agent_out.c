/* SPDX-License-Identifier: MIT */
/*
 * test_agent_out.c - the environment set and its rules, env file round trip
 * and strict reader, hostfile formats, rendezvous.json, atomic writes that do
 * not follow a planted symlink, slots detection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/pipeline/out_int.h"
#include "rdzv/gx/gx.h"

static char err[512];

static struct agent_env_input input(void)
{
	struct agent_env_input in = {.master_addr = "192.168.9.10",
				     .master_port = 29500,
				     .rank = 2,
				     .world = 4,
				     .iface = "net1",
				     .addr = "192.168.9.12",
				     .rails = "mlx5_0:1,mlx5_3:1",
				     .nccl_gid_index = 3,
				     .hostfile = "/run/gxboot/hostfile"};
	return in;
}

static void test_env_set_exact(void **state)
{
	static const char *const want[][2] = {
	    {"MASTER_ADDR", "192.168.9.10"},
	    {"MASTER_PORT", "29500"},
	    {"NODE_RANK", "2"},
	    {"NNODES", "4"},
	    {"GXBOOT_RANK", "2"},
	    {"GXBOOT_WORLD_SIZE", "4"},
	    {"GXBOOT_IFACE", "net1"},
	    {"GXBOOT_ADDR", "192.168.9.12"},
	    {"PET_NNODES", "4"},
	    {"PET_NODE_RANK", "2"},
	    {"PET_MASTER_ADDR", "192.168.9.10"},
	    {"PET_MASTER_PORT", "29500"},
	    {"NCCL_SOCKET_IFNAME", "=net1"},
	    {"GLOO_SOCKET_IFNAME", "net1"},
	    {"OMPI_MCA_btl_tcp_if_include", "net1"},
	    {"OMPI_MCA_oob_tcp_if_include", "net1"},
	    {"HOROVOD_GLOO_IFACE", "net1"},
	    {"NCCL_IB_HCA", "=mlx5_0:1,mlx5_3:1"},
	    {"UCX_NET_DEVICES", "mlx5_0:1,mlx5_3:1"},
	    {"NCCL_IB_GID_INDEX", "3"},
	    {"OMPI_MCA_orte_default_hostfile", "/run/gxboot/hostfile"},
	    {"OMPI_MCA_prte_default_hostfile", "/run/gxboot/hostfile"},
	    {"PRTE_MCA_prte_default_hostfile", "/run/gxboot/hostfile"},
	    {"HYDRA_IFACE", "net1"},
	    {"I_MPI_HYDRA_IFACE", "net1"},
	    {"FI_TCP_IFACE", "net1"},
	    {"FI_SOCKETS_IFACE", "net1"},
	};
	struct agent_env_input in = input();
	struct agent_env e = {0};
	char *user[] = {NULL};
	size_t i;

	(void)state;
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_int_equal(e.n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < e.n; i++) {
		assert_string_equal(e.v[i].name, want[i][0]);
		assert_string_equal(e.v[i].value, want[i][1]);
	}
	agent_env_free(&e);
	/* no rails: no RDMA variables; no GID index; no hostfile */
	in.rails = "";
	in.hostfile = NULL;
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_int_equal(e.n, 22);
	assert_null(agent_env_get(&e, "NCCL_IB_HCA"));
	/* no rails: UCX's tcp transport stays on the bootstrap interface, not eth0 */
	assert_string_equal(agent_env_get(&e, "UCX_NET_DEVICES"), "net1");
	assert_null(agent_env_get(&e, "NCCL_IB_GID_INDEX"));
	assert_null(agent_env_get(&e, "OMPI_MCA_orte_default_hostfile"));
	agent_env_free(&e);
	in = input();
	in.nccl_gid_index = -1;
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_null(agent_env_get(&e, "NCCL_IB_GID_INDEX"));
	assert_string_equal(agent_env_get(&e, "NCCL_IB_HCA"), "=mlx5_0:1,mlx5_3:1");
	agent_env_free(&e);
}

/* An observer (MPI Operator's launcher) gets no rank variables; without a secondary of its
 * own, mpirun's oob is not pinned to an interface it does not have. */
static void test_env_observer_and_rsh(void **state)
{
	struct agent_env_input in = input();
	struct agent_env e = {0};
	char *user[] = {"OMPI_MCA_plm_rsh_agent=ssh", NULL};

	(void)state;
	in.observer = 1;
	in.rank = -1;
	in.addr = NULL;
	in.rsh_agent = "/run/gxboot/gxboot rsh";
	in.rsh_key_file = "/run/gxboot/rsh.key";
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_null(agent_env_get(&e, "NODE_RANK"));
	assert_null(agent_env_get(&e, "GXBOOT_RANK"));
	assert_null(agent_env_get(&e, "PET_NODE_RANK"));
	assert_null(agent_env_get(&e, "GXBOOT_ADDR"));
	assert_null(agent_env_get(&e, "OMPI_MCA_oob_tcp_if_include"));
	assert_string_equal(agent_env_get(&e, "OMPI_MCA_btl_tcp_if_include"), "net1");
	assert_string_equal(agent_env_get(&e, "NNODES"), "4");
	/* the user's agent is a selection: kept (with a warning) */
	assert_string_equal(agent_env_get(&e, "OMPI_MCA_plm_rsh_agent"), "ssh");
	assert_string_equal(agent_env_get(&e, "PRTE_MCA_plm_ssh_agent"), "/run/gxboot/gxboot rsh");
	assert_string_equal(agent_env_get(&e, "GXBOOT_RSH_KEY_FILE"), "/run/gxboot/rsh.key");
	agent_env_free(&e);
	in.observer = 0; /* a rank -1 is only for observers */
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), GX_EUSAGE);
	in.observer = 1;
	in.rsh_agent = "gxboot rsh\n";
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), GX_EUSAGE);
}

/* MPICH and Intel MPI (Hydra) read their host file, launcher and
 * interface from HYDRA_* / I_MPI_HYDRA_*; libfabric's tcp / sockets
 * providers from FI_*_IFACE. */
static void test_env_hydra(void **state)
{
	struct agent_env_input in = input();
	struct agent_env e = {0};
	char *user[] = {"HYDRA_HOST_FILE=/etc/mpi/hostfile", "I_MPI_HYDRA_BOOTSTRAP=rsh",
			"FI_TCP_IFACE=eth0", NULL};

	(void)state;
	in.hydra_hostfile = "/run/gxboot/hostfile.hydra";
	in.rsh_agent = "/usr/local/bin/gxboot rsh";
	in.rsh_exec = "/run/gxboot/gxboot-rsh";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "HYDRA_HOST_FILE"), "/run/gxboot/hostfile.hydra");
	assert_string_equal(agent_env_get(&e, "HYDRA_LAUNCHER"), "ssh");
	assert_string_equal(agent_env_get(&e, "HYDRA_LAUNCHER_EXEC"), "/run/gxboot/gxboot-rsh");
	assert_string_equal(agent_env_get(&e, "HYDRA_IFACE"), "net1");
	assert_string_equal(agent_env_get(&e, "I_MPI_HYDRA_HOST_FILE"),
			    "/run/gxboot/hostfile.hydra");
	assert_string_equal(agent_env_get(&e, "I_MPI_HYDRA_BOOTSTRAP"), "ssh");
	assert_string_equal(agent_env_get(&e, "I_MPI_HYDRA_BOOTSTRAP_EXEC"),
			    "/run/gxboot/gxboot-rsh");
	assert_string_equal(agent_env_get(&e, "I_MPI_HYDRA_IFACE"), "net1");
	assert_string_equal(agent_env_get(&e, "FI_TCP_IFACE"), "net1");
	assert_string_equal(agent_env_get(&e, "FI_SOCKETS_IFACE"), "net1");
	agent_env_free(&e);
	/* the host file is ours; the user's launcher and interface choices are kept */
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "HYDRA_HOST_FILE"), "/run/gxboot/hostfile.hydra");
	assert_string_equal(agent_env_get(&e, "I_MPI_HYDRA_BOOTSTRAP"), "rsh");
	assert_string_equal(agent_env_get(&e, "FI_TCP_IFACE"), "eth0");
	agent_env_free(&e);
	/* an IPv6-only secondary: Hydra's -iface takes IPv4 only, so it is not named */
	in.addr = "fd00::12";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), 0);
	assert_null(agent_env_get(&e, "HYDRA_IFACE"));
	assert_null(agent_env_get(&e, "I_MPI_HYDRA_IFACE"));
	assert_string_equal(agent_env_get(&e, "FI_TCP_IFACE"), "net1");
	assert_string_equal(agent_env_get(&e, "HYDRA_HOST_FILE"), "/run/gxboot/hostfile.hydra");
	agent_env_free(&e);
	/* an observer without a secondary names no interface it does not have */
	in.observer = 1;
	in.rank = -1;
	in.addr = NULL;
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), 0);
	assert_null(agent_env_get(&e, "HYDRA_IFACE"));
	assert_null(agent_env_get(&e, "I_MPI_HYDRA_IFACE"));
	assert_null(agent_env_get(&e, "FI_TCP_IFACE"));
	assert_string_equal(agent_env_get(&e, "HYDRA_LAUNCHER_EXEC"), "/run/gxboot/gxboot-rsh");
	agent_env_free(&e);
	/* no serving peers, no table: neither launcher nor host file */
	in = input();
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), 0);
	assert_null(agent_env_get(&e, "HYDRA_LAUNCHER"));
	assert_null(agent_env_get(&e, "I_MPI_HYDRA_BOOTSTRAP_EXEC"));
	assert_null(agent_env_get(&e, "HYDRA_HOST_FILE"));
	agent_env_free(&e);
	in.rsh_exec = "/run/gxboot/gxboot-rsh\n";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), GX_EUSAGE);
}

/* Ray gets the head's secondary address as its GCS address. */
static void test_env_ray(void **state)
{
	struct agent_env_input in = input();
	struct agent_env e = {0};
	char *user[] = {"FQ_RAY_IP=rc1-head-svc.default.svc.cluster.local", NULL};

	(void)state;
	in.ray_port = 6379;
	in.ray_worker = 1;
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "RAY_ADDRESS"), "192.168.9.10:6379");
	assert_string_equal(agent_env_get(&e, "FQ_RAY_IP"), "192.168.9.10"); /* replaced */
	assert_null(agent_env_get(&e, "NCCL_SOCKET_FAMILY"));
	assert_string_equal(agent_env_get(&e, "RAY_IP"), "192.168.9.10");
	agent_env_free(&e);
	in.ray_worker = 0; /* the head: no FQ_RAY_IP of its own */
	in.master_addr = "fd00::10";
	in.addr = "fd00::12";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "RAY_ADDRESS"), "[fd00::10]:6379");
	assert_null(agent_env_get(&e, "FQ_RAY_IP"));
	assert_string_equal(agent_env_get(&e, "NCCL_SOCKET_FAMILY"), "AF_INET6"); /* v6 only */
	agent_env_free(&e);
	in.ray_port = 70000;
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), GX_EUSAGE);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

/* Each variable once in env and env.json, IPv6-only and IPv4. */
static void expect_each_once(const struct agent_env_input *in)
{
	struct agent_env e = {0};
	char *sh = NULL, *js, key[300];
	json_t *j;
	size_t i, len;

	assert_int_equal(agent_env_build(in, NULL, &e, err, sizeof(err)), 0);
	assert_int_equal(agent_env_serialize_sh(&e, &sh, &len, err, sizeof(err)), 0);
	j = agent_env_json(&e);
	assert_non_null(j);
	js = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	assert_non_null(js);
	assert_true(e.n > 10);
	assert_int_equal(count(sh, "export "), e.n);
	assert_int_equal(json_object_size(j), e.n);
	for (i = 0; i < e.n; i++) {
		snprintf(key, sizeof(key), "export %s=", e.v[i].name);
		assert_int_equal(count(sh, key), 1);
		snprintf(key, sizeof(key), "\"%s\":", e.v[i].name);
		assert_int_equal(count(js, key), 1);
	}
	free(js);
	json_decref(j);
	free(sh);
	agent_env_free(&e);
}

static void test_env_each_once(void **state)
{
	struct agent_env_input in = input();

	(void)state;
	expect_each_once(&in);
	in.master_addr = "fd00::10";
	in.addr = "fd00::12";
	expect_each_once(&in);
}

static void test_env_bad_input(void **state)
{
	struct agent_env_input in = input();
	struct agent_env e = {0};

	(void)state;
	in.iface = "net1/x";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), GX_EUSAGE);
	in = input();
	in.master_addr = "evil.example";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), GX_EUSAGE);
	in = input();
	in.rank = 4;
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), GX_EUSAGE);
	in = input();
	in.rails = "mlx5_0:1'$(x)";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), GX_EUSAGE);
	in.rails = "mlx5_0:1,";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), GX_EUSAGE);
	in.rails = "mlx5_0:x";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), GX_EUSAGE);
	in.rails = "mlx5_0,mlx5_1:2";
	assert_int_equal(agent_env_build(&in, NULL, &e, err, sizeof(err)), 0);
	agent_env_free(&e);
	assert_int_equal(e.n, 0);
}

static void test_env_user_rules(void **state)
{
	struct agent_env_input in = input();
	struct agent_env e = {0};
	char *user[] = {"MASTER_ADDR=job-master-0",
			"NNODES=9",
			"OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile",
			"NCCL_SOCKET_IFNAME=eth0",
			"NCCL_IB_HCA=mlx5_1",
			"GLOO_SOCKET_IFNAME=net1",
			"OMPI_MCA_btl_tcp_if_include=eth0",
			"PATH=/bin",
			NULL};

	(void)state;
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	/* host/address/count/hostfile: always ours */
	assert_string_equal(agent_env_get(&e, "MASTER_ADDR"), "192.168.9.10");
	assert_string_equal(agent_env_get(&e, "NNODES"), "4");
	assert_string_equal(agent_env_get(&e, "OMPI_MCA_orte_default_hostfile"),
			    "/run/gxboot/hostfile");
	/* interface/device selections the user set: kept */
	assert_string_equal(agent_env_get(&e, "NCCL_SOCKET_IFNAME"), "eth0");
	assert_string_equal(agent_env_get(&e, "NCCL_IB_HCA"), "mlx5_1");
	assert_string_equal(agent_env_get(&e, "GLOO_SOCKET_IFNAME"), "net1");
	assert_string_equal(agent_env_get(&e, "OMPI_MCA_btl_tcp_if_include"), "eth0");
	assert_string_equal(agent_env_get(&e, "OMPI_MCA_oob_tcp_if_include"), "net1");
	assert_null(agent_env_get(&e, "PATH"));
	agent_env_free(&e);
	in.override_env = 1;
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "NCCL_SOCKET_IFNAME"), "=net1");
	assert_string_equal(agent_env_get(&e, "NCCL_IB_HCA"), "=mlx5_0:1,mlx5_3:1");
	assert_string_equal(agent_env_get(&e, "OMPI_MCA_btl_tcp_if_include"), "net1");
	agent_env_free(&e);
	assert_true(agent_env_is_selection("OMPI_MCA_foo_if_include"));
	assert_false(agent_env_is_selection("MASTER_PORT"));
}

/* The log lines of one merge (stderr to a temporary file for its duration). */
static void merge_logged(const char *user_value, char *log, size_t loglen)
{
	struct agent_env_input in = input();
	struct agent_env e = {0};
	char var[64], *user[] = {var, NULL};
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t got;

	assert_non_null(f);
	assert_true(saved >= 0);
	snprintf(var, sizeof(var), "NCCL_SOCKET_IFNAME=%s", user_value);
	assert_int_equal(dup2(fileno(f), STDERR_FILENO), STDERR_FILENO);
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	assert_string_equal(agent_env_get(&e, "NCCL_SOCKET_IFNAME"), user_value); /* kept */
	agent_env_free(&e);
	rewind(f);
	got = fread(log, 1, loglen - 1, f);
	log[got] = '\0';
	fclose(f);
}

/* A user's NCCL_SOCKET_IFNAME=net1 is our =net1 in NCCL's prefix form: kept, and said. */
static void test_env_user_prefix_form(void **state)
{
	char log[2048];

	(void)state;
	merge_logged("net1", log, sizeof(log));
	assert_non_null(strstr(log, "keeping the user's NCCL_SOCKET_IFNAME=net1: NCCL matches "
				    "it as a prefix"));
	assert_non_null(strstr(log, "gxboot's exact form is =net1"));
	merge_logged("=net1", log, sizeof(log)); /* ours exactly */
	assert_null(strstr(log, "NCCL_SOCKET_IFNAME"));
	merge_logged("net10", log, sizeof(log)); /* another interface: the plain warning */
	assert_non_null(strstr(log, "keeping the user's NCCL_SOCKET_IFNAME=net10 (gxboot chose "
				    "=net1"));
}

/* The log lines of agent_env_build(in, user) into log (stderr to a temporary file). */
static void build_logged(const struct agent_env_input *in, char **user, struct agent_env *e,
			 char *log, size_t loglen)
{
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t got;

	assert_non_null(f);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fileno(f), STDERR_FILENO), STDERR_FILENO);
	assert_int_equal(agent_env_build(in, user, e, err, sizeof(err)), 0);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	rewind(f);
	got = fread(log, 1, loglen - 1, f);
	log[got] = '\0';
	fclose(f);
}

/* TCP although a device serves the interface: NCCL_IB_DISABLE=1, a user's own kept. */
static void test_env_rdma_unusable(void **state)
{
	struct agent_env_input in = input();
	struct agent_env e = {0};
	char log[2048], *user[] = {"NCCL_IB_DISABLE=0", NULL}, *none[] = {NULL};

	(void)state;
	in.rails = NULL;
	in.nccl_gid_index = -1;
	assert_int_equal(agent_env_build(&in, none, &e, err, sizeof(err)), 0);
	assert_null(agent_env_get(&e, "NCCL_IB_DISABLE")); /* no device: NCCL finds none */
	agent_env_free(&e);
	in.rdma_unusable = 1;
	assert_int_equal(agent_env_build(&in, none, &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "NCCL_IB_DISABLE"), "1");
	assert_string_equal(agent_env_get(&e, "UCX_NET_DEVICES"), "net1");
	agent_env_free(&e);
	build_logged(&in, user, &e, log, sizeof(log));
	assert_string_equal(agent_env_get(&e, "NCCL_IB_DISABLE"), "0");
	assert_non_null(strstr(log, "keeping the user's NCCL_IB_DISABLE=0 (gxboot chose 1"));
	agent_env_free(&e);
	in.override_env = 1;
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "NCCL_IB_DISABLE"), "1");
	agent_env_free(&e);
}

/* OpenMPI refuses an include and an exclude list together: a user's exclude list is kept
 * and gxboot's include left out, or (--override-env) the exclude goes from CMD's env. */
static void test_env_user_exclude(void **state)
{
	struct agent_env_input in = input();
	struct agent_env e = {0};
	char log[2048], *sh = NULL, **envp = NULL;
	char *user[] = {"OMPI_MCA_btl_tcp_if_exclude=lo,docker0", "PATH=/bin", NULL};
	size_t i;

	(void)state;
	build_logged(&in, user, &e, log, sizeof(log));
	assert_null(agent_env_get(&e, "OMPI_MCA_btl_tcp_if_include"));
	assert_string_equal(agent_env_get(&e, "OMPI_MCA_oob_tcp_if_include"), "net1");
	assert_non_null(strstr(log, "keeping the user's OMPI_MCA_btl_tcp_if_exclude=lo,docker0: "
				    "OpenMPI takes an include or an exclude list, not both"));
	assert_int_equal(agent_env_serialize_sh(&e, &sh, NULL, err, sizeof(err)), 0);
	assert_null(strstr(sh, "btl_tcp_if"));
	free(sh);
	agent_env_free(&e);
	in.override_env = 1;
	assert_int_equal(agent_env_build(&in, user, &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "OMPI_MCA_btl_tcp_if_include"), "net1");
	assert_null(agent_env_get(&e, "OMPI_MCA_btl_tcp_if_exclude"));
	assert_int_equal(agent_env_apply_to(user, &e, &envp), 0);
	for (i = 0; envp[i]; i++)
		assert_null(strstr(envp[i], "_if_exclude"));
	assert_string_equal(envp[0], "PATH=/bin");
	agent_envp_free(envp);
	assert_int_equal(agent_env_serialize_sh(&e, &sh, NULL, err, sizeof(err)), 0);
	assert_null(strstr(sh, "exclude"));
	assert_non_null(strstr(sh, "export OMPI_MCA_btl_tcp_if_include='net1'"));
	free(sh);
	agent_env_free(&e);
}

static void test_env_apply(void **state)
{
	struct agent_env e = {0};
	char *base[] = {"PATH=/bin", "GXBOOT_TOKEN=s3cr3t-s3cr3t-s3cr3t", "MASTER_ADDR=old",
			"HOME=/root", NULL};
	char **envp = NULL;
	size_t i, n = 0;

	(void)state;
	assert_int_equal(agent_env_set(&e, "MASTER_ADDR", "10.0.0.1"), 0);
	assert_int_equal(agent_env_set(&e, "GXBOOT_TOKEN", "leak"), 0);
	assert_int_equal(agent_env_set(&e, "NNODES", "2"), 0);
	assert_int_equal(agent_env_apply_to(base, &e, &envp), 0);
	for (i = 0; envp[i]; i++) {
		assert_null(strstr(envp[i], "GXBOOT_TOKEN"));
		assert_null(strstr(envp[i], "MASTER_ADDR=old"));
		n++;
	}
	assert_int_equal(n, 4);
	assert_string_equal(envp[0], "PATH=/bin");
	assert_string_equal(envp[1], "HOME=/root");
	assert_string_equal(envp[2], "MASTER_ADDR=10.0.0.1");
	assert_string_equal(envp[3], "NNODES=2");
	agent_envp_free(envp);
	assert_int_equal(agent_env_set(&e, "1BAD", "x"), -EINVAL);
	assert_int_equal(agent_env_set(&e, "A-B", "x"), -EINVAL);
	agent_env_free(&e);
}

static void test_env_roundtrip(void **state)
{
	static const char *const vals[] = {"plain",  "",      "it's",
					   "'",	     "''a''", "sp ace $HOME `x` \\n",
					   "\"dq\"", "=net1", "caf\xc3\xa9"};
	struct agent_env e = {0}, back = {0};
	char name[16], *sh = NULL;
	size_t i, len = 0;
	json_t *j;

	(void)state;
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		snprintf(name, sizeof(name), "V_%zu", i);
		assert_int_equal(agent_env_set(&e, name, vals[i]), 0);
	}
	assert_int_equal(agent_env_set(&e, "GXBOOT_TOKEN", "never-written"), 0);
	assert_int_equal(agent_env_serialize_sh(&e, &sh, &len, err, sizeof(err)), 0);
	assert_int_equal(strlen(sh), len);
	assert_null(strstr(sh, "never-written"));
	assert_non_null(strstr(sh, "export V_2='it'\\''s'\n"));
	assert_int_equal(agent_env_parse(sh, len, &back, err, sizeof(err)), 0);
	assert_int_equal(back.n, e.n - 1);
	for (i = 0; i < back.n; i++) {
		assert_string_equal(back.v[i].name, e.v[i].name);
		assert_string_equal(back.v[i].value, e.v[i].value);
	}
	j = agent_env_json(&e);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "V_2")), "it's");
	assert_null(json_object_get(j, "GXBOOT_TOKEN"));
	json_decref(j);
	free(sh);
	agent_env_free(&back);
	/* a newline or control byte in a value is refused */
	assert_int_equal(agent_env_set(&e, "BAD", "a\nexport X='y'"), 0);
	assert_int_equal(agent_env_serialize_sh(&e, &sh, &len, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "BAD"));
	assert_null(sh);
	assert_int_equal(agent_env_set(&e, "BAD", "tab\there"), 0);
	assert_int_equal(agent_env_serialize_sh(&e, &sh, &len, err, sizeof(err)), GX_EUSAGE);
	agent_env_free(&e);
}

static void expect_malformed(const char *text, const char *line)
{
	struct agent_env e = {0};

	err[0] = '\0';
	assert_int_equal(agent_env_parse(text, strlen(text), &e, err, sizeof(err)), GX_EUSAGE);
	if (!strstr(err, line))
		fail_msg("'%s' -> '%s', wanted '%s'", text, err, line);
	assert_int_equal(e.n, 0);
}

static void test_env_malformed(void **state)
{
	struct agent_env e = {0};
	const char *ok = "export A='1'\nexport B='x'\\''y'";

	(void)state;
	expect_malformed("export A=1\n", "line 1");
	expect_malformed("export A='1'\nA='2'\n", "line 2");
	expect_malformed("export A='1'\n\n", "line 2");
	expect_malformed("export A='1' # c\n", "line 1");
	expect_malformed("export A='1'; rm -rf /\n", "line 1");
	expect_malformed("export A='$(id)'x\n", "line 1");
	expect_malformed("export A='unterminated\n", "line 1");
	expect_malformed("export A='a'\\'b'\n", "line 1");
	expect_malformed("export 1A='x'\n", "line 1");
	expect_malformed("export A-B='x'\n", "line 1");
	expect_malformed("export  A='x'\n", "line 1");
	expect_malformed("export A=\"x\"\n", "line 1");
	expect_malformed("export A='x\r'\n", "line 1");
	expect_malformed("export A='x'\r\n", "line 1");
	expect_malformed("# comment\n", "line 1");
	assert_int_equal(agent_env_parse("export A='x\0y'\n", 15, &e, err, sizeof(err)), GX_EUSAGE);
	/* the last line may lack its newline */
	assert_int_equal(agent_env_parse(ok, strlen(ok), &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "B"), "x'y");
	agent_env_free(&e);
	assert_int_equal(agent_env_parse("", 0, &e, err, sizeof(err)), 0);
	assert_int_equal(e.n, 0);
	/* a token planted in the file never comes back out */
	ok = "export GXBOOT_TOKEN='x'\nexport C='1'\n";
	assert_int_equal(agent_env_parse(ok, strlen(ok), &e, err, sizeof(err)), 0);
	assert_int_equal(e.n, 1);
	assert_null(agent_env_get(&e, "GXBOOT_TOKEN"));
	agent_env_free(&e);
}

static char tmpdir[64];

static int setup_dir(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/gx-test-out-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* dir/name written through --out's descriptor, as a run writes it. */
static int write_in(const char *dir, const char *name, const char *data, size_t len)
{
	int dfd = -1, rc = agent_out_open(dir, 0, &dfd, err, sizeof(err));

	if (rc < 0)
		return rc;
	rc = agent_write_file_at(dfd, dir, name, data, len, 0644, err, sizeof(err));
	close(dfd);
	return rc;
}

static void read_all(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void test_env_load_file(void **state)
{
	struct agent_env e = {0};
	char path[128], *big;
	size_t i;

	(void)state;
	assert_int_equal(write_in(tmpdir, "env", "export Q='a b'\n", 15), 0);
	snprintf(path, sizeof(path), "%s/env", tmpdir);
	assert_int_equal(agent_env_load(path, &e, err, sizeof(err)), 0);
	assert_string_equal(agent_env_get(&e, "Q"), "a b");
	agent_env_free(&e);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	assert_int_equal(agent_env_load(path, &e, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "missing"));
	/* over 1 MiB: refused */
	big = malloc(AGENT_ENV_FILE_MAX + 16);
	assert_non_null(big);
	for (i = 0; i + 16 <= AGENT_ENV_FILE_MAX + 16; i += 16)
		memcpy(big + i, "export A='xxxx'\n", 16);
	assert_int_equal(write_in(tmpdir, "big", big, AGENT_ENV_FILE_MAX + 16), 0);
	free(big);
	snprintf(path, sizeof(path), "%s/big", tmpdir);
	assert_int_equal(agent_env_load(path, &e, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "larger"));
}

static void test_atomic_write_symlink(void **state)
{
	char victim[128], target[128], buf[256], sub[128];
	struct stat st;
	FILE *f;

	(void)state;
	snprintf(victim, sizeof(victim), "%s/victim", tmpdir);
	f = fopen(victim, "w");
	assert_non_null(f);
	fputs("precious\n", f);
	fclose(f);
	snprintf(target, sizeof(target), "%s/hostfile", tmpdir);
	assert_int_equal(symlink(victim, target), 0);
	assert_int_equal(write_in(tmpdir, "hostfile", "10.0.0.1 slots=1\n", 17), 0);
	read_all(victim, buf, sizeof(buf));
	assert_string_equal(buf, "precious\n");
	assert_int_equal(lstat(target, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0644);
	read_all(target, buf, sizeof(buf));
	assert_string_equal(buf, "10.0.0.1 slots=1\n");
	/* --out that is a file, or missing; a bad name */
	assert_int_equal(write_in(victim, "x", "", 0), GX_EUSAGE);
	assert_non_null(strstr(err, "not a directory"));
	snprintf(sub, sizeof(sub), "%s/nope", tmpdir);
	assert_int_equal(write_in(sub, "x", "", 0), -ENOENT);
	assert_int_equal(write_in(tmpdir, "../x", "", 0), GX_EUSAGE);
	/* a directory at the target: error, no temp file left behind */
	snprintf(sub, sizeof(sub), "%s/adir", tmpdir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_true(write_in(tmpdir, "adir", "x", 1) < 0);
	snprintf(buf, sizeof(buf), "ls -A '%s' | grep -q tmp", tmpdir);
	assert_int_not_equal(system(buf), 0);
}

/* Makes an empty file dir/f, aged by age_s seconds. */
static void touch_aged(const char *f, long age_s)
{
	struct timespec ts[2];
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, f);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	ts[0].tv_sec = ts[1].tv_sec = time(NULL) - age_s;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static int exists(const char *f)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, f);
	return access(path, F_OK) == 0;
}

/*
 * Two gxboots sharing an --out, each PID 1 in its own PID namespace (podman
 * kube play's shared emptyDir): one's sweep must not take the other's temp
 * files. A name keyed by the pid alone made the other's live temp look like
 * this process's own leftover.
 */
static void test_out_clean_other_pidns(void **state)
{
	char mine[256], other[256], old_fmt[128], stale_other[256], boot[17], *dot;
	unsigned long long ns;
	long pid = (long)getpid();
	struct stat st;

	(void)state;
	assert_int_equal(stat("/proc/self/ns/pid", &st), 0);
	assert_int_equal(agent_out_temp_name(mine, sizeof(mine), "env", 42), 0);
	/* ".env.<pid>.<pidns>.<boot>.42.tmp" */
	snprintf(other, sizeof(other), ".env.%ld.%llu.", pid, (unsigned long long)st.st_ino);
	assert_int_equal(strncmp(mine, other, strlen(other)), 0);
	dot = strchr(mine + strlen(other), '.');
	assert_non_null(dot);
	assert_true(dot - (mine + strlen(other)) >= 1 && dot - (mine + strlen(other)) <= 16);
	assert_string_equal(dot, ".42.tmp");
	assert_int_equal(agent_out_temp_name(other, 8, "env", 42), -ENAMETOOLONG);

	/* another namespace's writer with this pid (both PID 1), same boot, fresh: kept */
	ns = (unsigned long long)st.st_ino + 1;
	snprintf(boot, sizeof(boot), "%.*s", (int)(dot - (mine + strlen(other))),
		 mine + strlen(other));
	snprintf(other, sizeof(other), ".env.%ld.%llu.%s.43.tmp", pid, ns, boot);
	/* an older gxboot's ".NAME.<pid>.<us>.tmp" with this pid: its namespace unknown, kept */
	snprintf(old_fmt, sizeof(old_fmt), ".hostfile.%ld.123456.tmp", pid);
	/* another namespace's, but hours old: removed */
	snprintf(stale_other, sizeof(stale_other), ".rendezvous.json.%ld.%llu.0.7.tmp", pid, ns);
	touch_aged(mine, 0);
	touch_aged(other, 0);
	touch_aged(old_fmt, 0);
	touch_aged(stale_other, AGENT_OUT_TEMP_OLD_S + 60);
	touch_aged(".env.notatemp", AGENT_OUT_TEMP_OLD_S + 60);
	{
		int dfd = -1;

		assert_int_equal(agent_out_open(tmpdir, 0, &dfd, err, sizeof(err)), 0);
		agent_out_clean(dfd, 0);
		close(dfd);
	}
	assert_true(exists(old_fmt));
	assert_true(exists(other));
	assert_false(exists(mine)); /* this process's own leftover */
	assert_false(exists(stale_other));
	assert_true(exists(".env.notatemp"));
}

/*
 * --out is opened once: moved and replaced by a symlink after that (what another user who
 * can write its parent does with renameat2), every file still goes into the directory
 * that was opened, none through the symlink. On 9740b38 each write opened --out by its
 * path again.
 */
static void test_out_fd_swap(void **state)
{
	char out[128], moved[128], victim[128], path[256];
	int dfd = -1;

	(void)state;
	snprintf(out, sizeof(out), "%s/out", tmpdir);
	snprintf(moved, sizeof(moved), "%s/out.moved", tmpdir);
	snprintf(victim, sizeof(victim), "%s/victim", tmpdir);
	assert_int_equal(mkdir(victim, 0700), 0);
	assert_int_equal(agent_out_open(out, 1, &dfd, err, sizeof(err)), 0);
	assert_int_equal(rename(out, moved), 0);
	assert_int_equal(symlink(victim, out), 0);
	assert_int_equal(agent_write_file_at(dfd, out, "env", "x\n", 2, 0644, err, sizeof(err)), 0);
	assert_int_equal(agent_write_link_at(dfd, out, "gxboot-rsh", "/bin/true", err, sizeof(err)),
			 0);
	agent_out_clean(dfd, 1); /* unlinks in the opened one only */
	assert_int_equal(
	    agent_write_file_at(dfd, out, "hostfile", "h\n", 2, 0644, err, sizeof(err)), 0);
	close(dfd);
	snprintf(path, sizeof(path), "ls -A '%s' | grep -q .", victim);
	assert_int_not_equal(system(path), 0); /* nothing in the symlink's target */
	snprintf(path, sizeof(path), "%s/hostfile", moved);
	assert_int_equal(access(path, F_OK), 0);
	/* and the symlink itself is refused as --out */
	assert_int_equal(agent_out_open(out, 1, &dfd, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "a symlink"));
}

/*
 * A directory on the way to --out that another user could change the entries of is
 * refused: writable by others without the sticky bit (the parent, an ancestor, one a
 * symlink leads to), or owned by another user (as root only); sticky, ours and root's
 * are not. On 9740b38 a 0777 parent was used, and another user swapped --out for a
 * symlink in 19 of 20 runs.
 */
static void test_out_parent_unsafe(void **state)
{
	char p[128], out[200], link[200];
	int dfd = -1;

	(void)state;
	snprintf(p, sizeof(p), "%s/shared", tmpdir);
	snprintf(out, sizeof(out), "%s/sub/out", p);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(link, sizeof(link), "%s/sub", p);
	assert_int_equal(mkdir(link, 0755), 0);
	assert_int_equal(agent_out_open(out, 1, &dfd, err, sizeof(err)), 0);
	close(dfd);
	assert_int_equal(chmod(link, 0777), 0); /* the parent */
	assert_int_equal(agent_out_open(out, 1, &dfd, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "/shared/sub is writable by group or others without the "
				    "sticky bit, so another user could move --out"));
	assert_int_equal(chmod(link, 01777), 0); /* sticky: only an entry's owner renames it */
	assert_int_equal(agent_out_open(out, 1, &dfd, err, sizeof(err)), 0);
	close(dfd);
	assert_int_equal(chmod(link, 0755), 0);
	assert_int_equal(chmod(p, 0775), 0); /* an ancestor, group-writable */
	assert_int_equal(agent_out_open(out, 1, &dfd, err, sizeof(err)), GX_EUSAGE);
	assert_non_null(strstr(err, "/shared is writable by group"));
	assert_int_equal(chmod(p, 0755), 0);
	/* a symlink on the way, in a safe directory, to a safe one: followed */
	snprintf(link, sizeof(link), "%s/via", tmpdir);
	assert_int_equal(symlink(p, link), 0);
	snprintf(out, sizeof(out), "%s/via/sub/out", tmpdir);
	assert_int_equal(agent_out_open(out, 0, &dfd, err, sizeof(err)), 0);
	close(dfd);
	/* ... to an unsafe one: refused */
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(agent_out_open(out, 0, &dfd, err, sizeof(err)), GX_EUSAGE);
	assert_int_equal(chmod(p, 0755), 0);
	if (geteuid() == 0) {
		snprintf(link, sizeof(link), "%s/sub", p);
		assert_int_equal(chown(link, 65534, 65534), 0);
		assert_int_equal(agent_out_open(out, 0, &dfd, err, sizeof(err)), GX_EUSAGE);
		assert_non_null(strstr(err, "owned by another user"));
		assert_int_equal(chown(link, 0, 0), 0);
	}
	/* relative: from the working directory, whose own chain is checked */
	assert_int_equal(chdir(p), 0);
	assert_int_equal(agent_out_open("sub/out", 0, &dfd, err, sizeof(err)), 0);
	close(dfd);
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(agent_out_open("sub/out", 0, &dfd, err, sizeof(err)), GX_EUSAGE);
	assert_int_equal(chmod(p, 0755), 0);
	assert_int_equal(chdir("/"), 0);
}

static void test_hostfile(void **state)
{
	struct agent_hf_peer peers[] = {
	    {"192.168.2.226", 8, NULL}, {"192.168.2.227", 8, NULL}, {"fd00::0:5", 1, NULL}};
	struct agent_hf_peer bad[] = {{"host-a", 1, NULL}};
	char *out = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(
	    agent_hostfile_render(AGENT_HF_OPENMPI, peers, 3, &out, &len, err, sizeof(err)), 0);
	assert_string_equal(out, "192.168.2.226 slots=8\n192.168.2.227 slots=8\nfd00::5 slots=1\n");
	assert_int_equal(len, strlen(out));
	free(out);
	assert_int_equal(
	    agent_hostfile_render(AGENT_HF_MPICH, peers, 3, &out, &len, err, sizeof(err)), 0);
	assert_string_equal(out, "192.168.2.226:8\n192.168.2.227:8\n[fd00::5]:1\n");
	free(out);
	assert_int_equal(
	    agent_hostfile_render(AGENT_HF_HOROVOD, peers, 1, &out, &len, err, sizeof(err)), 0);
	assert_string_equal(out, "192.168.2.226:8\n");
	free(out);
	/* not given: openmpi's form (DeepSpeed's too: "host slots=N") */
	assert_int_equal(
	    agent_hostfile_render(AGENT_HF_DEFAULT, peers, 3, &out, &len, err, sizeof(err)), 0);
	assert_string_equal(out, "192.168.2.226 slots=8\n192.168.2.227 slots=8\nfd00::5 slots=1\n");
	free(out);
	/* Hydra splits at every ':': an IPv6 peer goes by its name (gxboot rsh maps it) */
	peers[2].name = "job-worker-2";
	assert_int_equal(
	    agent_hostfile_render(AGENT_HF_HYDRA, peers, 3, &out, &len, err, sizeof(err)), 0);
	assert_string_equal(out, "192.168.2.226:8\n192.168.2.227:8\njob-worker-2:1\n");
	free(out);
	assert_int_equal(
	    agent_hostfile_render(AGENT_HF_OPENMPI, bad, 1, &out, &len, err, sizeof(err)),
	    GX_EINVAL_NAME);
	assert_null(out);
	peers[0].slots = 0;
	assert_int_equal(
	    agent_hostfile_render(AGENT_HF_OPENMPI, peers, 1, &out, &len, err, sizeof(err)),
	    GX_EINVAL_NAME);
}

static void test_rendezvous_json(void **state)
{
	struct agent_rdzv_peer_info peers[] = {
	    {0, "w-0.w", "192.168.9.10", "", "net1", "mlx5_0", 1, "mlx5_0:1", 3, 8, NULL, 0, 0},
	    {1, "w-1.w", "192.168.9.11", "fd00::11", "net1", NULL, 0, NULL, -1, 8, "10.0.0.11",
	     1500, 1},
	};
	struct agent_timing t[] = {{"peers_ms", 3}, {"rendezvous_ms", 120}};
	struct agent_rdzv_info ri = {.rank = 1,
				     .world = 2,
				     .master = "192.168.9.10",
				     .iface = "net1",
				     .job_id = "abc",
				     .source = "--peers",
				     .written_by = "init",
				     .round = 0x0123456789abcdefULL,
				     .timings = t,
				     .ntimings = 2,
				     .peers = peers,
				     .npeers = 2};
	json_t *j, *p;

	(void)state;
	j = agent_rendezvous_json(&ri, err, sizeof(err));
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "rank")), 1);
	assert_string_equal(json_string_value(json_object_get(j, "master")), "192.168.9.10");
	/* serve after init trusts only what init wrote, with its round */
	assert_string_equal(json_string_value(json_object_get(j, "written_by")), "init");
	assert_string_equal(json_string_value(json_object_get(j, "round")), "0123456789abcdef");
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "timings"), "rendezvous_ms")),
	    120);
	p = json_array_get(json_object_get(j, "peers"), 0);
	assert_string_equal(json_string_value(json_object_get(p, "rdma_dev")), "mlx5_0");
	assert_int_equal(json_integer_value(json_object_get(p, "gid_index")), 3);
	assert_null(json_object_get(p, "addr6"));
	p = json_array_get(json_object_get(j, "peers"), 1);
	assert_null(json_object_get(p, "rdma_dev"));
	assert_null(json_object_get(p, "gid_index"));
	assert_string_equal(json_string_value(json_object_get(p, "addr6")), "fd00::11");
	assert_string_equal(json_string_value(json_object_get(p, "primary")), "10.0.0.11");
	assert_int_equal(json_integer_value(json_object_get(p, "mtu")), 1500);
	assert_true(json_is_true(json_object_get(p, "serves")));
	assert_null(json_object_get(json_array_get(json_object_get(j, "peers"), 0), "serves"));
	json_decref(j);
	peers[1].primary = "10.0.0.11; x";
	assert_null(agent_rendezvous_json(&ri, err, sizeof(err)));
	peers[1].primary = "10.0.0.11";
	peers[1].name = "w-1\";rm";
	assert_null(agent_rendezvous_json(&ri, err, sizeof(err)));
	peers[1].name = "w-1.w";
	peers[1].iface = "net1$(x)";
	assert_null(agent_rendezvous_json(&ri, err, sizeof(err)));
	peers[1].iface = "net1";
	ri.master = "w-0";
	assert_null(agent_rendezvous_json(&ri, err, sizeof(err)));
}

static void touch(const char *dir, const char *name)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
}

static void test_slots(void **state)
{
	char dev[128];
	char *none[] = {NULL};
	char *list[] = {"NVIDIA_VISIBLE_DEVICES=GPU-aaa,GPU-bbb,GPU-ccc", NULL};
	char *all[] = {"NVIDIA_VISIBLE_DEVICES=all", NULL};
	char *nv_none[] = {"NVIDIA_VISIBLE_DEVICES=none", NULL};
	char *nv_void[] = {"NVIDIA_VISIBLE_DEVICES=void", NULL};
	char *nv_empty[] = {"NVIDIA_VISIBLE_DEVICES=", NULL};

	(void)state;
	/* nothing: 1 */
	assert_int_equal(agent_slots_detect(0, none, tmpdir), 1);
	snprintf(dev, sizeof(dev), "%s/dev", tmpdir);
	assert_int_equal(mkdir(dev, 0755), 0);
	touch(dev, "nvidia0");
	touch(dev, "nvidia1");
	touch(dev, "nvidia12");
	touch(dev, "nvidiactl");
	touch(dev, "nvidia-uvm");
	touch(dev, "nvidia");
	assert_int_equal(agent_slots_detect(0, none, tmpdir), 3);
	assert_int_equal(agent_slots_detect(5, none, tmpdir), 5);
	assert_int_equal(agent_slots_detect(0, list, tmpdir), 3);
	assert_int_equal(agent_slots_detect(0, all, tmpdir), 3);
	assert_int_equal(agent_slots_detect(0, nv_none, tmpdir), 1);
	assert_int_equal(agent_slots_detect(0, nv_void, tmpdir), 1);
	assert_int_equal(agent_slots_detect(0, nv_empty, tmpdir), 1);
	assert_int_equal(agent_slots_detect(2, list, tmpdir), 2);
	/* the job system's slots (MPI Operator slotsPerWorker) beat
	 * detection, --slots beats them */
	assert_int_equal(agent_slots_self(0, 1, list, tmpdir), 1);
	assert_int_equal(agent_slots_self(0, 4, none, tmpdir), 4);
	assert_int_equal(agent_slots_self(6, 4, none, tmpdir), 6);
	assert_int_equal(agent_slots_self(0, 0, list, tmpdir), 3);
}

/* The launcher's files carry the job system's per-host slots (a CPU
 * MPIJob's workers report 1), --slots replacing them; else what peers report. */
static void test_slots_peer(void **state)
{
	const long job[] = {2, 3, 0};

	(void)state;
	assert_int_equal(agent_slots_peer(0, job, 3, 0, 1), 2);
	assert_int_equal(agent_slots_peer(0, job, 3, 1, 8), 3);
	assert_int_equal(agent_slots_peer(0, job, 3, 2, 8), 8); /* no slots= on its line */
	assert_int_equal(agent_slots_peer(0, job, 3, 5, 8), 8); /* beyond the list */
	assert_int_equal(agent_slots_peer(4, job, 3, 0, 1), 4);
	assert_int_equal(agent_slots_peer(4, NULL, 0, 0, 1), 1); /* no job system's slots */
	assert_int_equal(agent_slots_peer(0, NULL, 0, 0, 7), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_env_set_exact),
	    cmocka_unit_test(test_env_observer_and_rsh),
	    cmocka_unit_test(test_env_hydra),
	    cmocka_unit_test(test_env_ray),
	    cmocka_unit_test(test_env_each_once),
	    cmocka_unit_test(test_env_bad_input),
	    cmocka_unit_test(test_env_user_rules),
	    cmocka_unit_test(test_env_user_prefix_form),
	    cmocka_unit_test(test_env_rdma_unusable),
	    cmocka_unit_test(test_env_user_exclude),
	    cmocka_unit_test(test_env_apply),
	    cmocka_unit_test(test_env_roundtrip),
	    cmocka_unit_test(test_env_malformed),
	    cmocka_unit_test_setup_teardown(test_env_load_file, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_atomic_write_symlink, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_out_clean_other_pidns, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_out_fd_swap, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_out_parent_unsafe, setup_dir, teardown_dir),
	    cmocka_unit_test(test_hostfile),
	    cmocka_unit_test(test_rendezvous_json),
	    cmocka_unit_test_setup_teardown(test_slots, setup_dir, teardown_dir),
	    cmocka_unit_test(test_slots_peer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
