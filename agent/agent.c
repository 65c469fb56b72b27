/* SPDX-License-Identifier: MIT */
/*
 * agent.c - the agent's vocabulary that every folder of agent/ may use: the commands' names
 * (the option parser, the run's files and its failure record spell a command the same way).
 */
#include "agent/agent.h"

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
