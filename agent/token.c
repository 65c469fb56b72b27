/* SPDX-License-Identifier: MIT */
/*
 * token.c - the job token (issue 14): --token-file F (links followed: Secret
 * volumes are ..data symlinks) or GXBOOT_TOKEN; at least 16 bytes; never logged;
 * removed from the environment CMD gets; wiped once the keys are derived.
 */
#include "agent/run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOKEN_MAX 4096
#define TOKEN_MIN 16

static int read_token_file(const char *path, unsigned char *buf, size_t *len, char *err,
			   size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd = -1, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot read token file %s: %s", path, strerror(-rc));
		rc = GX_EUSAGE;
		goto out;
	}
	if (st.st_mode & S_IROTH)
		gx_warn("token file %s is readable by others (mode %03o); group-readable is enough",
			path, (unsigned)(st.st_mode & 0777));
	n = read(fd, buf, TOKEN_MAX);
	if (n < 0) {
		snprintf(err, errlen, "cannot read token file %s: %s", path, strerror(errno));
		rc = GX_EUSAGE;
		goto out;
	}
	*len = (size_t)n;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

void agent_token_free(struct agent_token *t)
{
	if (t->data) {
		sodium_memzero(t->data, TOKEN_MAX);
		free(t->data);
	}
	t->data = NULL;
	t->len = 0;
}

int agent_token_load(const struct agent_opts *o, struct agent_token *t, char *err, size_t errlen)
{
	const char *env = getenv("GXBOOT_TOKEN");
	int rc = 0;

	t->data = calloc(1, TOKEN_MAX + 1);
	t->len = 0;
	if (!t->data)
		return -ENOMEM;
	if (o->token_file) {
		rc = read_token_file(o->token_file, t->data, &t->len, err, errlen);
	} else if (env && *env) {
		t->len = strnlen(env, TOKEN_MAX);
		memcpy(t->data, env, t->len);
	}
	if (env)
		sodium_memzero((char *)env, strlen(env));
	unsetenv("GXBOOT_TOKEN");
	if (rc < 0)
		goto out;
	while (t->len > 0 && (t->data[t->len - 1] == '\n' || t->data[t->len - 1] == '\r' ||
			      t->data[t->len - 1] == ' ' || t->data[t->len - 1] == '\t'))
		t->len--;
	if (t->len == 0 && (o->token_file || o->require_token)) {
		snprintf(err, errlen, "%s",
			 o->token_file ? "the token file is empty"
				       : "--require-token: no token (set "
					 "--token-file or GXBOOT_TOKEN)");
		rc = GX_EUSAGE;
	} else if (t->len > 0 && t->len < TOKEN_MIN) {
		snprintf(err, errlen, "the job token is shorter than %d bytes", TOKEN_MIN);
		rc = GX_EUSAGE;
	} else if (t->len == 0) {
		gx_warn("no job token: peers are not authenticated, so anyone who reaches port %ld "
			"can join or steer MASTER_ADDR (use --token-file and --require-token)",
			o->port);
	}
out:
	if (rc < 0)
		agent_token_free(t);
	return rc;
}
