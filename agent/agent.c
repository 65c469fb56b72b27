/* SPDX-License-Identifier: MIT */
/*
 * agent.c - the agent's vocabulary that every folder of agent/ may use: the commands' names
 * (the option parser, the run's files and its failure record spell a command the same way)
 * and the selection variables gxboot sets (the env merge keeps a user's value of one, the
 * launch-line rewrites leave a user's pin of one alone).
 */
#include "agent/agent.h"

#include <string.h>

static const char *const cmd_names[] = {
    [AGENT_CMD_NONE] = "gxboot",     [AGENT_CMD_RUN] = "run",
    [AGENT_CMD_INIT] = "init",	     [AGENT_CMD_EXEC] = "exec",
    [AGENT_CMD_INSTALL] = "install", [AGENT_CMD_NETDETECT] = "netdetect",
    [AGENT_CMD_CHECK] = "check",     [AGENT_CMD_SERVE] = "serve",
    [AGENT_CMD_RSH] = "rsh",	     [AGENT_CMD_HOSTS] = "hosts",
    [AGENT_CMD_VERSION] = "version", [AGENT_CMD_HELP] = "help",
    [AGENT_CMD_TOKEN] = "token",
};

const char *agent_cmd_name(enum agent_cmd cmd)
{
	return cmd_names[cmd];
}

static const char *const selections[] = {
    "NCCL_SOCKET_IFNAME",
    "NCCL_IB_HCA",
    "GLOO_SOCKET_IFNAME",
    "UCX_NET_DEVICES",
    "NCCL_IB_GID_INDEX",
    "NCCL_IB_DISABLE",
    "OMPI_MCA_btl_tcp_if_include",
    "OMPI_MCA_oob_tcp_if_include",
    "HOROVOD_GLOO_IFACE",
    "NCCL_SOCKET_FAMILY",
    "OMPI_MCA_plm_rsh_agent",
    "PRTE_MCA_plm_ssh_agent",
    "HYDRA_IFACE",
    "I_MPI_HYDRA_IFACE",
    "FI_TCP_IFACE",
    "FI_SOCKETS_IFACE",
    "HYDRA_LAUNCHER",
    "HYDRA_LAUNCHER_EXEC",
    "I_MPI_HYDRA_BOOTSTRAP",
    "I_MPI_HYDRA_BOOTSTRAP_EXEC",
    NULL,
};

int agent_env_is_selection(const char *name)
{
	size_t i, l = strlen(name);

	for (i = 0; selections[i]; i++)
		if (strcmp(name, selections[i]) == 0)
			return 1;
	return l > 11 && strcmp(name + l - 11, "_if_include") == 0;
}
