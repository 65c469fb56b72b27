/* SPDX-License-Identifier: MIT */
/*
 * out_failed.c - --out/failed.json: why the last run into --out left no answer.
 *
 * --out holds at most one answer, the files of the last run that committed. A run that
 * meets removes the previous answer before it meets (run.c): a run killed mid-way then
 * leaves nothing that `exec`, `hosts`, `serve` after `init`, or a script that sources env
 * could take for current. Removing is what protects every reader, gxboot's or not; a
 * marker alone would leave the old env to `. /run/gxboot/env` and the old hostfile to
 * mpirun. A run that fails without writing its own answer also says why here, written
 * atomically like every other file: `exec` and `hosts` refuse with that line and the
 * failed run's exit code instead of "no such file". The next run that meets removes it.
 */
#include "agent/pipeline/out_int.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int agent_out_mark_failed(int dfd, const char *dir, const char *command, int code, const char *line)
{
	char at[32] = "", err[512], *text = NULL;
	time_t now = time(NULL);
	struct tm tm;
	size_t len = 0;
	json_t *j;
	int rc;

	if (gmtime_r(&now, &tm))
		strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	j = json_pack("{s:s,s:i,s:s,s:s}", "command", command, "exit", gx_exit_code(code), "error",
		      line && *line ? line : gx_strerror(code), "at", at);
	if (!j)
		return -ENOMEM;
	rc = agent_json_text(j, &text, &len);
	json_decref(j);
	if (rc == 0)
		rc = agent_write_file_at(dfd, dir, AGENT_OUT_FAILED, text, len, 0644, err,
					 sizeof(err));
	free(text);
	return rc;
}

/* Only gxboot's own marker counts: a regular file of this user or root, not writable by
 * group or others (a stranger's file in a 0777 emptyDir neither blocks nor steers). */
static int marker_open(const char *dir, FILE **fp)
{
	char path[4200];
	struct stat st;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, AGENT_OUT_FAILED) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 65536 ||
	    (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		gx_warn("ignoring %s: not a marker gxboot wrote", path);
		return -EPERM;
	}
	*fp = fdopen(fd, "r");
	if (!*fp) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

/* src into dst (cut to fit), control and non-ASCII bytes as '?': it becomes a terminal line. */
static void printable(char *dst, size_t cap, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < cap; i++)
		dst[i] =
		    (unsigned char)src[i] >= ' ' && (unsigned char)src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
}

int agent_out_failed_load(const char *dir, struct agent_out_failed *f)
{
	const char *cmd, *line, *at;
	json_int_t code;
	FILE *fp = NULL;
	json_t *j;
	int rc;

	memset(f, 0, sizeof(*f));
	rc = marker_open(dir, &fp);
	if (rc < 0)
		return rc == -ENOENT ? 0 : rc;
	j = json_loadf(fp, JSON_REJECT_DUPLICATES, NULL);
	fclose(fp);
	cmd = json_string_value(json_object_get(j, "command"));
	line = json_string_value(json_object_get(j, "error"));
	at = json_string_value(json_object_get(j, "at"));
	code = json_integer_value(json_object_get(j, "exit"));
	/* a marker that does not parse still says the run failed */
	printable(f->command, sizeof(f->command), cmd ? cmd : "gxboot");
	printable(f->error, sizeof(f->error), line ? line : "no reason recorded");
	printable(f->at, sizeof(f->at), at ? at : "");
	f->exit = code >= 2 && code <= 5 ? (int)code : 5;
	json_decref(j);
	return 1;
}

/* The GX_E* code whose exit status is the failed run's. */
static int code_of_exit(int exit)
{
	switch (exit) {
	case 2:
		return GX_EUSAGE;
	case 3:
		return GX_EPEERS;
	case 4:
		return GX_ENOSECONDARY;
	default:
		return GX_ERDZV;
	}
}

int agent_out_failed_refuse(const char *dir, char *err, size_t errlen)
{
	struct agent_out_failed f;

	if (agent_out_failed_load(dir, &f) <= 0)
		return 0;
	snprintf(err, errlen, "the last 'gxboot %s' into %s did not commit (exit %d%s%s): %s",
		 f.command, dir, f.exit, f.at[0] ? ", " : "", f.at, f.error);
	return code_of_exit(f.exit);
}
