/* SPDX-License-Identifier: MIT */
/* install.c - gxboot install DIR: copy /proc/self/exe atomically (temp + fsync + rename). */
#include "agent/agent.h"
#include "agent/cli/cli_int.h"
#include "agent/pipeline/pipeline.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

static int copy_fd(int in, int out)
{
	struct stat st;
	off_t off = 0;

	if (fstat(in, &st) < 0)
		return -errno;
	while (off < st.st_size) {
		ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
	}
	return 0;
}

int agent_install(const char *dir, char *err, size_t errlen)
{
	char tmp[4096], dst[4096], tname[256];
	struct stat st;
	int in = -1, out = -1, rc = 0, dfd = -1;

	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "install: '%s' is not a directory", dir);
		rc = GX_EUSAGE;
		goto out;
	}
	/* the temp name is unique across PID namespaces (two PID-1 installs into one
	 * shared directory must not collide: O_EXCL would make the second fail) */
	if (snprintf(dst, sizeof(dst), "%s/gxboot", dir) >= (int)sizeof(dst) ||
	    agent_out_temp_name(tname, sizeof(tname), "gxboot", (long long)gx_now_us()) < 0 ||
	    snprintf(tmp, sizeof(tmp), "%s/%s", dir, tname) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "install: path too long");
		rc = GX_EUSAGE;
		goto out;
	}
	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
	if (in < 0 || out < 0) {
		rc = -errno;
		snprintf(err, errlen, "install: cannot %s: %s",
			 in < 0 ? "read /proc/self/exe" : "create", strerror(-rc));
		goto out;
	}
	rc = copy_fd(in, out);
	if (rc == 0 && (fchmod(out, 0755) < 0 || fsync(out) < 0))
		rc = -errno;
	if (rc == 0 && close(out) < 0)
		rc = -errno;
	out = -1;
	if (rc == 0 && rename(tmp, dst) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "install: writing %s: %s", dst, strerror(-rc));
		unlink(tmp);
		goto out;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (dfd >= 0)
		close(dfd);
	return rc;
}
