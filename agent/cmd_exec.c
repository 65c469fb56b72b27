/* SPDX-License-Identifier: MIT */
/*
 * cmd_exec.c - `gxboot exec`: the main container after `gxboot init`. Loads
 * --out/env, applies INTERFACE.md's variable rules against this environment,
 * execs CMD. No network use.
 */
#include "agent/exec_int.h"
#include "agent/out_int.h"
#include "agent/run_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

int agent_cmd_exec(struct agent_opts *o, char *err, size_t errlen)
{
	struct agent_env file = {0}, merged = {0};
	char path[4096], **envp = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/env", o->out);
	rc = agent_env_load(path, &file, err, errlen);
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
