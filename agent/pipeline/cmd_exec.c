/* SPDX-License-Identifier: MIT */
/*
 * cmd_exec.c - `gxboot exec`: the main container after `gxboot init`. Loads
 * --out/env, applies README.md's variable rules against this environment,
 * execs CMD. No network use. The file is trusted only as far as gxboot wrote
 * it: --out must be this user's own directory (or root's), not a symlink, opened once where no
 * other user can move it (agent_out_open) and its env read relative to that descriptor, and only
 * the variables gxboot writes are applied (a file naming LD_PRELOAD or BASH_ENV is refused).
 */
#include "agent/launch/launch.h"
#include "agent/pipeline/out_int.h"
#include "agent/pipeline/run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* Every name agent_env_ours() (out.c) may write; test_agent_exec checks the two agree. */
static const char *const written[] = {
    "MASTER_ADDR",
    "MASTER_PORT",
    "NODE_RANK",
    "NNODES",
    "GXBOOT_RANK",
    "GXBOOT_WORLD_SIZE",
    "GXBOOT_IFACE",
    "GXBOOT_ADDR",
    "GXBOOT_RSH_KEY_FILE",
    "GXBOOT_RDMA_VERIFIED", /* run.c, after the rendezvous */
    "PET_NNODES",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    "NCCL_SOCKET_IFNAME",
    "NCCL_SOCKET_FAMILY",
    "NCCL_IB_HCA",
    "NCCL_IB_GID_INDEX",
    "NCCL_IB_DISABLE",
    "GLOO_SOCKET_IFNAME",
    "UCX_NET_DEVICES",
    "HOROVOD_GLOO_IFACE",
    "OMPI_MCA_btl_tcp_if_include",
    "OMPI_MCA_oob_tcp_if_include",
    "OMPI_MCA_plm_rsh_agent",
    "OMPI_MCA_orte_default_hostfile",
    "OMPI_MCA_prte_default_hostfile",
    "PRTE_MCA_plm_ssh_agent",
    "PRTE_MCA_prte_default_hostfile",
    "RAY_ADDRESS",
    "RAY_IP",
    "FQ_RAY_IP",
    /* MPICH / Intel MPI through Hydra */
    "HYDRA_HOST_FILE",
    "HYDRA_LAUNCHER",
    "HYDRA_LAUNCHER_EXEC",
    "HYDRA_IFACE",
    "I_MPI_HYDRA_HOST_FILE",
    "I_MPI_HYDRA_BOOTSTRAP",
    "I_MPI_HYDRA_BOOTSTRAP_EXEC",
    "I_MPI_HYDRA_IFACE",
    "FI_TCP_IFACE",
    "FI_SOCKETS_IFACE",
    NULL,
};

int agent_exec_var_allowed(const char *name)
{
	size_t i;

	for (i = 0; written[i]; i++)
		if (strcmp(name, written[i]) == 0)
			return 1;
	return 0;
}

/* This user's own (or root's: an init container as root), not group/world-writable. */
static int owned_safe(const struct stat *st, const char *what, const char *path, char *err,
		      size_t errlen)
{
	const char *why = NULL;

	if (st->st_uid != geteuid() && st->st_uid != 0)
		why = "owned by another user";
	else if (st->st_mode & (S_IWGRP | S_IWOTH))
		why = "writable by group or others";
	if (!why)
		return 0;
	snprintf(err, errlen, "refusing %s %s: %s (gxboot exec applies only what gxboot wrote)",
		 what, path, why);
	return GX_EUSAGE;
}

/*
 * --out opened once as init opens it (agent_out_open: not a symlink, ours or root's, no
 * other user able to move it), and its env opened relative to that descriptor: *envfd, or
 * -1 when there is none (the loader says so). The directory's mode is not the test: a
 * Kubernetes emptyDir is root's and 0777 (an init container that is not root cannot
 * change that), and in a writable directory a stranger can only add files of its own,
 * which the file's own owner and mode check refuses. 0, else GX_EUSAGE with the line.
 */
static int out_env_open(const char *out, int *envfd, char *err, size_t errlen)
{
	char path[4200];
	struct stat st;
	int dfd = -1, fd = -1, rc;

	*envfd = -1;
	rc = agent_out_open(out, 0, &dfd, err, errlen);
	if (rc < 0) {
		if (rc > -GX_EBASE) /* cannot open: no refusal, a missing or unreadable --out */
			snprintf(err, errlen, "cannot read --out %s: %s", out, strerror(-rc));
		return GX_EUSAGE;
	}
	snprintf(path, sizeof(path), "%s/env", out);
	fd = openat(dfd, "env", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	close(dfd);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "refusing %s: %s", path,
			 fd < 0 && errno == ELOOP ? "a symlink" : "not a regular file");
		rc = GX_EUSAGE;
	} else {
		rc = owned_safe(&st, "the file", path, err, errlen);
	}
	if (rc == 0) {
		*envfd = fd;
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

int agent_exec_out_check(const char *out, char *err, size_t errlen)
{
	int fd = -1, rc = out_env_open(out, &fd, err, errlen);

	if (fd >= 0)
		close(fd);
	return rc;
}

static int vars_check(const struct agent_env *file, const char *path, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < file->n; i++) {
		if (agent_exec_var_allowed(file->v[i].name))
			continue;
		snprintf(err, errlen, "refusing %s: it sets %s, which gxboot never writes", path,
			 file->v[i].name);
		return GX_EUSAGE;
	}
	return 0;
}

int agent_cmd_exec(struct agent_opts *o, char *err, size_t errlen)
{
	struct agent_env file = {0}, merged = {0};
	char path[4096], **envp = NULL;
	int rc, envfd = -1;

	snprintf(path, sizeof(path), "%s/env", o->out);
	rc = out_env_open(o->out, &envfd, err, errlen);
	if (rc == 0) /* a run that did not commit: its line and exit code, not an old env */
		rc = agent_out_failed_refuse(o->out, err, errlen);
	if (rc == 0 && envfd < 0) {
		snprintf(err, errlen, "cannot read %s: %s (run 'gxboot init' first?)", path,
			 strerror(ENOENT));
		rc = GX_EUSAGE;
	}
	if (rc == 0)
		rc = agent_env_load_fd(envfd, path, &file, err, errlen);
	if (envfd >= 0)
		close(envfd);
	if (rc == 0)
		rc = vars_check(&file, path, err, errlen);
	if (rc < 0)
		goto out;
	unsetenv("GXBOOT_TOKEN");
	rc = agent_env_merge(&file, environ, o->override_env, &merged);
	if (rc == 0)
		rc = agent_env_apply(&merged, &envp);
	if (rc < 0)
		goto out;
	rc = agent_exec_failed(o->argv[0], agent_exec(o->argv, envp), err, errlen);
out:
	agent_envp_free(envp);
	agent_env_free(&file);
	agent_env_free(&merged);
	return rc;
}
