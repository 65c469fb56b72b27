/* SPDX-License-Identifier: MIT */
/*
 * out_files.c - the files gxboot writes to --out (README.md "Files written to --out"): --out opened
 * once as a directory no other user can move (agent_out_open), atomic writes relative to it that
 * never follow a planted symlink, the hostfile formats, rendezvous.json, and the default slot count
 * (--slots, else NVIDIA_VISIBLE_DEVICES, else /dev/nvidia*, else 1).
 */
#include "agent/pipeline/out_int.h"
#include "rdzv/gx/gx.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- atomic write ------------------------------------------------------------- */

static int write_all(int fd, const char *data, size_t len)
{
	ssize_t w;

	while (len) {
		w = write(fd, data, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Who writes a temp file: pid, PID namespace and boot. Two gxboots that share
 * an --out can both be PID 1 (each in its own PID namespace, e.g. podman kube
 * play's shared emptyDir) or run on two hosts (a shared file system), so the
 * pid alone names no writer. Unknown parts are 0 / "0": then no temp is
 * provably this writer's.
 */
struct temp_id {
	long pid;
	unsigned long long pidns; /* inode of /proc/self/ns/pid */
	char boot[17];		  /* the first 16 hex digits of the boot id */
};

static void temp_id_self(struct temp_id *id)
{
	char buf[64];
	struct stat st;
	ssize_t n;
	size_t i, k = 0;
	int fd;

	id->pid = (long)getpid();
	id->pidns = stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	for (i = 0; n > 0 && i < (size_t)n && k < sizeof(id->boot) - 1; i++)
		if (isxdigit((unsigned char)buf[i]))
			id->boot[k++] = (char)tolower((unsigned char)buf[i]);
	if (k == 0)
		id->boot[k++] = '0';
	id->boot[k] = '\0';
}

int agent_out_temp_name(char *buf, size_t len, const char *name, long long us)
{
	struct temp_id id;

	temp_id_self(&id);
	if ((size_t)snprintf(buf, len, ".%s.%ld.%llu.%s.%lld.tmp", name, id.pid, id.pidns, id.boot,
			     us) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Creates a fresh temp file beside name in dfd; its name goes to tmp. */
static int open_temp(int dfd, const char *name, mode_t mode, char *tmp, size_t tmplen)
{
	int fd = -1, i, rc;

	for (i = 0; i < 100 && fd < 0; i++) {
		rc = agent_out_temp_name(tmp, tmplen, name, (long long)(gx_now_us() + i));
		if (rc < 0)
			return rc;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	return fd < 0 ? -EEXIST : fd;
}

/* ---- --out, opened once ---------------------------------------------------------------- */

/* The directory's real path, for a line (readlink of its descriptor); "?" when unknown. */
static const char *fd_path(int fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, len - 1);
	if (n <= 0)
		return gx_strlcpy(buf, "?", len), buf;
	buf[n] = '\0';
	return buf;
}

/*
 * A directory only we and root can change the entries of: owned by one of us, and not
 * writable by group or others unless sticky (there only an entry's owner may rename it).
 * Another user who can rename entries in a directory on the way to --out can swap --out
 * (or a directory above it) for a symlink or another directory between our steps.
 */
static const char *dir_unsafe(const struct stat *st)
{
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return "owned by another user";
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
		return "writable by group or others without the sticky bit";
	return NULL;
}

static int unsafe_line(int fd, const char *why, const char *out, char *err, size_t errlen)
{
	char p[512];

	snprintf(err, errlen,
		 "refusing --out %s: %s is %s, so another user could move --out while gxboot "
		 "writes (mount the volume at --out itself, or use a directory only you or root "
		 "can write)",
		 out, fd_path(fd, p, sizeof(p)), why);
	return GX_EUSAGE;
}

/* The working directory and every directory above it, up to /: safe (dir_unsafe). */
static int chain_safe(int fd, const char *out, char *err, size_t errlen)
{
	struct stat st, up;
	const char *why;
	int cur = -1, rc = 0;

	cur = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	while (cur >= 0) {
		int parent;

		if (fstat(cur, &st) < 0) {
			rc = -errno;
			break;
		}
		if ((why = dir_unsafe(&st))) {
			rc = unsafe_line(cur, why, out, err, errlen);
			break;
		}
		parent = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0 || fstat(parent, &up) < 0) {
			rc = -errno;
			if (parent >= 0)
				close(parent);
			break;
		}
		close(cur);
		cur = parent;
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
			break; /* "/": its own parent */
	}
	if (cur < 0 && rc == 0)
		rc = -errno;
	if (cur >= 0)
		close(cur);
	return rc;
}

/*
 * The directory at path, reached one component at a time from / (or from the working
 * directory, whose own chain up to / is checked), every directory on the way safe
 * (dir_unsafe): nobody but us and root can change what its entries are, so the directory
 * reached is the one path names. A symlink on the way sits in a safe directory and is
 * resolved the same way (at most 40). An O_PATH descriptor in *dfd.
 */
static int open_safe_dir(const char *path, const char *out, int *dfd, char *err, size_t errlen)
{
	char rest[2 * PATH_MAX], tgt[PATH_MAX], *c, *end;
	int cur = -1, next = -1, links = 0, rc = 0;
	struct stat st;
	const char *why;
	ssize_t n;

	if (strlen(path) >= sizeof(rest) / 2)
		return -ENAMETOOLONG;
	gx_strlcpy(rest, path, sizeof(rest));
	cur = open(rest[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	if (rest[0] != '/') { /* the working directory's own chain, up to / */
		rc = chain_safe(cur, out, err, errlen);
		if (rc < 0)
			goto out;
	}
	for (c = rest; *c;) {
		while (*c == '/')
			c++;
		end = c + strcspn(c, "/");
		if (*end)
			*end++ = '\0';
		else
			end = c + strlen(c);
		if (!*c || strcmp(c, ".") == 0) {
			c = end;
			continue;
		}
		if (fstat(cur, &st) < 0) {
			rc = -errno;
			goto out;
		}
		if ((why = dir_unsafe(&st))) {
			rc = unsafe_line(cur, why, out, err, errlen);
			goto out;
		}
		next = openat(cur, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fstat(next, &st) < 0) {
			rc = -errno;
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			n = readlinkat(cur, c, tgt, sizeof(tgt) - 1);
			if (n < 0 || ++links > 40 || (size_t)n + 2 + strlen(end) >= sizeof(rest)) {
				rc = n < 0 ? -errno : -ELOOP;
				goto out;
			}
			tgt[n] = '\0';
			/* the target, then what was left of the path */
			memmove(rest + n + 1, end, strlen(end) + 1);
			memcpy(rest, tgt, (size_t)n);
			rest[n] = '/';
			close(next);
			next = -1;
			if (tgt[0] == '/') {
				close(cur);
				cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (cur < 0) {
					rc = -errno;
					goto out;
				}
			}
			c = rest;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc = -ENOTDIR;
			goto out;
		}
		close(cur);
		cur = next;
		next = -1;
		c = end;
	}
	*dfd = cur;
	cur = -1;
out:
	if (next >= 0)
		close(next);
	if (cur >= 0)
		close(cur);
	return rc;
}

/* --out split at its last component: the parent's path (".", "/") and the name in it. */
static int out_split(const char *dir, char *parent, size_t len, const char **base)
{
	size_t n = strlen(dir);
	char *slash;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 0 || n >= len)
		return -ENAMETOOLONG;
	memcpy(parent, dir, n);
	parent[n] = '\0';
	if (strcmp(parent, "/") == 0) {
		*base = ".";
		return 0;
	}
	slash = strrchr(parent, '/');
	if (!slash) {
		*base = dir;
		gx_strlcpy(parent, ".", len);
		return 0;
	}
	*base = dir + (slash - parent) + 1;
	if (slash == parent)
		slash[1] = '\0'; /* "/name": the parent is / */
	else
		*slash = '\0';
	return 0;
}

int agent_out_open(const char *dir, int create, int *dfd, char *err, size_t errlen)
{
	char parent[PATH_MAX], name[NAME_MAX + 1];
	int pfd = -1, fd = -1, rc;
	const char *base, *why;
	struct stat st;

	err[0] = '\0';
	rc = out_split(dir, parent, sizeof(parent), &base);
	if (rc == 0) {
		/* the name alone, without the trailing slashes out_split left on it */
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(base, "/"), base);
		rc = open_safe_dir(parent, dir, &pfd, err, errlen);
	}
	if (rc == 0 && fstat(pfd, &st) < 0)
		rc = -errno;
	if (rc == 0 && (why = dir_unsafe(&st))) /* --out's own entry is in it */
		rc = unsafe_line(pfd, why, dir, err, errlen);
	if (rc == 0 && create && mkdirat(pfd, name, 0755) < 0 && errno != EEXIST)
		rc = -errno;
	if (rc == 0) {
		fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
			/* O_DIRECTORY answers ENOTDIR for a symlink too */
			int lnk =
			    errno == ELOOP || (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
					       S_ISLNK(st.st_mode));

			snprintf(err, errlen, "refusing --out %s: %s", dir,
				 lnk ? "a symlink" : "not a directory");
			rc = GX_EUSAGE;
		} else if (fd < 0 || fstat(fd, &st) < 0) {
			rc = -errno;
		}
	}
	/* ours or root's (an init container as root, an emptyDir): another user's could be
	 * changed under us, and is not what gxboot wrote */
	if (rc == 0 && st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "refusing --out %s: owned by another user", dir);
		rc = GX_EUSAGE;
	}
	/* a Kubernetes emptyDir is created 0777: the writer makes it its own first (what
	 * gxboot exec requires of the files in it) */
	if (rc == 0 && create && st.st_uid == geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)))
		(void)fchmod(fd, st.st_mode & 07755);
	if (rc < 0 && !err[0])
		snprintf(err, errlen, "--out %s: %s", dir, gx_strerror(rc));
	if (rc == 0) {
		*dfd = fd;
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	return rc;
}

/* ---- what a run leaves behind ------------------------------------------------------ */
static const char *const out_names[] = {
    "env",     "env.json",   "hostfile",      "hostfile.hydra", "rendezvous.json",
    "rsh.key", "gxboot-rsh", AGENT_OUT_FAILED};

/*
 * A temp file of one of out_names: 1 with its writer in *id when it is
 * ".NAME.<pid>.<pidns>.<boot>.<us>.tmp"; 2 for an older gxboot's
 * ".NAME.<pid>.<us>.tmp" (no namespace: its writer is unknown); else 0.
 */
static int temp_owner(const char *f, struct temp_id *id)
{
	const char *b;
	size_t i, l, k;
	char *e;

	if (f[0] != '.')
		return 0;
	for (i = 0; i < sizeof(out_names) / sizeof(out_names[0]); i++) {
		l = strlen(out_names[i]);
		if (strncmp(f + 1, out_names[i], l) != 0 || f[1 + l] != '.')
			continue;
		if (!isdigit((unsigned char)f[2 + l]))
			continue; /* "hostfile" vs "hostfile.hydra" */
		id->pid = strtol(f + 2 + l, &e, 10);
		if (id->pid <= 0 || *e != '.')
			continue;
		b = e + 1;
		strtoll(b, &e, 10);
		if (e > b && strcmp(e, ".tmp") == 0)
			return 2;
		if (e == b || *e != '.')
			return 0;
		id->pidns = strtoull(b, NULL, 10);
		b = e + 1;
		for (k = 0; isxdigit((unsigned char)b[k]) && k < sizeof(id->boot) - 1; k++)
			id->boot[k] = b[k];
		id->boot[k] = '\0';
		if (k == 0 || b[k] != '.')
			return 0;
		b += k + 1;
		strtoll(b, &e, 10);
		return e > b && strcmp(e, ".tmp") == 0 ? 1 : 0;
	}
	return 0;
}

static int same_program(long pid)
{
	char path[64], a[4096], b[4096];
	ssize_t na, nb;

	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	na = readlink(path, a, sizeof(a));
	nb = readlink("/proc/self/exe", b, sizeof(b));
	if (na < 0 && errno != ENOENT)
		return 1; /* cannot tell (not ours to read): assume a live writer */
	return na > 0 && na == nb && memcmp(a, b, (size_t)na) == 0;
}

/* The writer is gone: no such process, a zombie (killed, not yet reaped), or
 * its pid now belongs to another program. */
static int writer_gone(long pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	if (pid == (long)getpid())
		return 1;
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strrchr(buf, ')');
	if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
		return 1;
	return !same_program(pid); /* the pid was reused by another program */
}

/*
 * Whether a temp file may go: its writer is provably this host's and this PID
 * namespace's and is gone (writer_gone), or the file is older than
 * AGENT_OUT_TEMP_OLD_S (a write takes milliseconds), whoever wrote it.
 */
static int temp_stale(int dfd, const char *f, const struct temp_id *self, time_t now)
{
	struct temp_id id = {0};
	struct stat st;
	int kind = temp_owner(f, &id);

	if (!kind)
		return 0;
	if (kind == 1 && self->pidns && strcmp(self->boot, "0") != 0 && id.pidns == self->pidns &&
	    strcmp(id.boot, self->boot) == 0 && writer_gone(id.pid))
		return 1;
	if (fstatat(dfd, f, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return st.st_mtime < now - AGENT_OUT_TEMP_OLD_S;
}

void agent_out_clean(int dfd, int all)
{
	struct temp_id self;
	struct dirent *de;
	time_t now = time(NULL);
	size_t i;
	int fd = dup(dfd);
	DIR *d;

	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d);
	temp_id_self(&self);
	while ((de = readdir(d)) != NULL)
		if (temp_stale(dfd, de->d_name, &self, now))
			unlinkat(dfd, de->d_name, 0);
	for (i = 0; all && i < sizeof(out_names) / sizeof(out_names[0]); i++)
		unlinkat(dfd, out_names[i], 0);
	closedir(d);
}

int agent_write_file_at(int dfd, const char *dir, const char *name, const char *data, size_t len,
			mode_t mode, char *err, size_t errlen)
{
	char tmp[512] = "";
	int fd = -1, rc;

	if (!*name || strchr(name, '/') || strlen(name) > 200 || !strcmp(name, ".") ||
	    !strcmp(name, "..")) {
		snprintf(err, errlen, "invalid file name '%s'", name);
		return GX_EUSAGE;
	}
	fd = open_temp(dfd, name, mode, tmp, sizeof(tmp));
	if (fd < 0) {
		rc = fd;
		tmp[0] = '\0';
		snprintf(err, errlen, "cannot create a file in %s: %s", dir, strerror(-rc));
		goto out;
	}
	/* No fsync (12 per pod, 3 ms on this machine's disk, ~30 ms with 64 pods
	 * writing at once, in every pod's start and in the serving coordinator's loop). The
	 * rename alone makes a reader see the old file or the whole new one; durability over
	 * a node crash buys nothing: every start writes these files again, and a pod whose
	 * node crashed runs its init containers again. */
	rc = fchmod(fd, mode) < 0 ? -errno : write_all(fd, data, len);
	if (rc == 0 && close(fd) < 0)
		rc = -errno;
	fd = -1;
	if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "cannot write %s/%s: %s", dir, name, strerror(-rc));
		goto out;
	}
	tmp[0] = '\0';
out:
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		unlinkat(dfd, tmp, 0);
	return rc;
}

int agent_write_link_at(int dfd, const char *dir, const char *name, const char *target, char *err,
			size_t errlen)
{
	char tmp[512];
	int rc, i;

	rc = -EEXIST;
	for (i = 0; i < 100 && rc == -EEXIST; i++) {
		rc = agent_out_temp_name(tmp, sizeof(tmp), name, (long long)(gx_now_us() + i));
		if (rc == 0)
			rc = symlinkat(target, dfd, tmp) < 0 ? -errno : 0;
	}
	if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0) {
		rc = -errno;
		unlinkat(dfd, tmp, 0);
	}
	if (rc < 0)
		snprintf(err, errlen, "cannot write %s/%s: %s", dir, name, strerror(-rc));
	return rc;
}

/* ---- hostfile ------------------------------------------------------------------------ */

/*
 * One line. "host:slots" parsers split on ':' (Hydra: strtok, Horovod:
 * split), so they cannot take an IPv6 address in any form: Hydra's file names
 * such a peer (gxboot rsh maps names to the secondary); mpich / horovod get
 * "[v6]:N", the form that a parser splitting at the last ':' reads.
 */
static int hf_line(enum agent_hostfile_fmt fmt, const char *addr, const struct agent_hf_peer *p,
		   char *line, size_t cap)
{
	int v6 = strchr(addr, ':') != NULL;

	if (fmt == AGENT_HF_OPENMPI || fmt == AGENT_HF_DEFAULT)
		return snprintf(line, cap, "%s slots=%ld\n", addr, p->slots);
	if (fmt == AGENT_HF_HYDRA && v6 && p->name && gx_valid_hostname(p->name))
		return snprintf(line, cap, "%s:%ld\n", p->name, p->slots);
	if (v6)
		return snprintf(line, cap, "[%s]:%ld\n", addr, p->slots);
	return snprintf(line, cap, "%s:%ld\n", addr, p->slots);
}

int agent_hostfile_render(enum agent_hostfile_fmt fmt, const struct agent_hf_peer *peers, size_t n,
			  char **out, size_t *len, char *err, size_t errlen)
{
	char addr[64], line[320];
	char *buf = NULL;
	size_t i, off = 0, cap = n * 300 + 1;
	int l;

	*out = NULL;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (!peers[i].addr || gx_addr_normalize(peers[i].addr, addr, sizeof(addr)) < 0 ||
		    peers[i].slots < 1 || peers[i].slots > (1 << 20)) {
			snprintf(err, errlen, "hostfile: peer %zu has no valid address or slots",
				 i);
			free(buf);
			return GX_EINVAL_NAME;
		}
		l = hf_line(fmt, addr, &peers[i], line, sizeof(line));
		if (l < 0 || (size_t)l >= sizeof(line)) {
			snprintf(err, errlen, "hostfile: peer %zu: name too long", i);
			free(buf);
			return GX_EINVAL_NAME;
		}
		memcpy(buf + off, line, (size_t)l + 1);
		off += (size_t)l;
	}
	*out = buf;
	if (len)
		*len = off;
	return 0;
}

/* ---- rendezvous.json ---------------------------------------------------------------------- */

static int set_str(json_t *o, const char *key, const char *v)
{
	if (!v || !*v)
		return 0;
	return json_object_set_new(o, key, json_string(v));
}

static int peer_ok(const struct agent_rdzv_peer_info *p)
{
	char a[64];

	if (!p->name || (!gx_valid_hostname(p->name) && gx_addr_normalize(p->name, a, sizeof(a))))
		return 0;
	if ((p->addr4 && *p->addr4 && gx_addr_normalize(p->addr4, a, sizeof(a))) ||
	    (p->addr6 && *p->addr6 && gx_addr_normalize(p->addr6, a, sizeof(a))) ||
	    (p->primary && *p->primary && gx_addr_normalize(p->primary, a, sizeof(a))))
		return 0;
	if ((p->iface && *p->iface && !gx_valid_ifname(p->iface)) ||
	    (p->rdma_dev && *p->rdma_dev && !gx_valid_rdmadev(p->rdma_dev)))
		return 0;
	return !p->rails || gx_safe_text(p->rails, 4096);
}

static json_t *peer_json(const struct agent_rdzv_peer_info *p)
{
	json_t *o = json_object();
	int rc;

	if (!o)
		return NULL;
	rc = json_object_set_new(o, "rank", json_integer(p->rank));
	rc |= json_object_set_new(o, "name", json_string(p->name));
	rc |= set_str(o, "addr4", p->addr4);
	rc |= set_str(o, "addr6", p->addr6);
	rc |= set_str(o, "iface", p->iface);
	rc |= set_str(o, "rdma_dev", p->rdma_dev);
	if (p->rdma_dev && *p->rdma_dev)
		rc |= json_object_set_new(o, "rdma_port", json_integer(p->rdma_port));
	rc |= set_str(o, "rails", p->rails);
	if (p->gid_index >= 0)
		rc |= json_object_set_new(o, "gid_index", json_integer(p->gid_index));
	rc |= json_object_set_new(o, "slots", json_integer(p->slots));
	rc |= set_str(o, "primary", p->primary);
	if (p->mtu > 0)
		rc |= json_object_set_new(o, "mtu", json_integer(p->mtu));
	if (p->serves)
		rc |= json_object_set_new(o, "serves", json_true());
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int info_ok(const struct agent_rdzv_info *ri)
{
	char a[64];

	if (!ri->master || gx_addr_normalize(ri->master, a, sizeof(a)) < 0)
		return 0;
	if (!ri->iface || !gx_valid_ifname(ri->iface))
		return 0;
	if ((ri->job_id && !gx_valid_jobid(ri->job_id)) ||
	    (ri->source && !gx_safe_text(ri->source, 128)) ||
	    (ri->written_by && !gx_safe_text(ri->written_by, 16)))
		return 0;
	return ri->world >= 1 && ri->rank >= -1 && ri->rank < ri->world;
}

static json_t *timings_json(const struct agent_rdzv_info *ri)
{
	json_t *t = json_object();
	size_t i;

	for (i = 0; t && i < ri->ntimings; i++) {
		if (!agent_env_name_ok(ri->timings[i].name, strlen(ri->timings[i].name)) ||
		    json_object_set_new(t, ri->timings[i].name, json_integer(ri->timings[i].ms)) <
			0) {
			json_decref(t);
			return NULL;
		}
	}
	return t;
}

json_t *agent_rendezvous_json(const struct agent_rdzv_info *ri, char *err, size_t errlen)
{
	json_t *o = NULL, *arr = NULL;
	size_t i;
	int rc = 0;

	if (!info_ok(ri)) {
		snprintf(err, errlen, "rendezvous.json: invalid rank, master, iface or job id");
		return NULL;
	}
	o = json_object();
	arr = json_array();
	if (!o || !arr)
		goto fail;
	rc |= json_object_set_new(o, "rank", json_integer(ri->rank));
	rc |= json_object_set_new(o, "world", json_integer(ri->world));
	rc |= json_object_set_new(o, "master", json_string(ri->master));
	rc |= json_object_set_new(o, "iface", json_string(ri->iface));
	rc |= set_str(o, "job_id", ri->job_id);
	rc |= set_str(o, "source", ri->source);
	rc |= set_str(o, "written_by", ri->written_by);
	if (ri->round) {
		char rd[24];

		snprintf(rd, sizeof(rd), "%016" PRIx64, ri->round);
		rc |= set_str(o, "round", rd);
	}
	rc |= json_object_set_new(o, "timings", timings_json(ri));
	for (i = 0; i < ri->npeers && rc == 0; i++) {
		if (!peer_ok(&ri->peers[i])) {
			snprintf(err, errlen, "rendezvous.json: invalid entry for peer %ld",
				 ri->peers[i].rank);
			goto fail;
		}
		rc |= json_array_append_new(arr, peer_json(&ri->peers[i]));
	}
	rc |= json_object_set(o, "peers", arr);
	if (rc)
		goto fail;
	json_decref(arr);
	return o;
fail:
	if (rc)
		snprintf(err, errlen, "rendezvous.json: out of memory");
	json_decref(arr);
	json_decref(o);
	return NULL;
}

int agent_json_text(const json_t *j, char **out, size_t *len)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	size_t l;
	char *r;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	l = strlen(s);
	r = realloc(s, l + 2);
	if (!r) {
		free(s);
		return -ENOMEM;
	}
	r[l] = '\n';
	r[l + 1] = '\0';
	*out = r;
	if (len)
		*len = l + 1;
	return 0;
}

/* ---- slots ------------------------------------------------------------------------------------
 */

static long count_nvidia(const char *root)
{
	char path[4096];
	struct dirent *d;
	long n = 0;
	DIR *dp;
	size_t i;

	snprintf(path, sizeof(path), "%s/dev", root);
	dp = opendir(path);
	if (!dp)
		return 0;
	while ((d = readdir(dp))) {
		if (strncmp(d->d_name, "nvidia", 6) != 0 || !d->d_name[6])
			continue;
		for (i = 6; d->d_name[i] >= '0' && d->d_name[i] <= '9'; i++)
			;
		n += d->d_name[i] == '\0';
	}
	closedir(dp);
	return n;
}

static const char *env_value(char **envp, const char *name)
{
	size_t l = strlen(name);
	char **e;

	for (e = envp; e && *e; e++)
		if (strncmp(*e, name, l) == 0 && (*e)[l] == '=')
			return *e + l + 1;
	return NULL;
}

/* Entries of a comma list, blanks and empty entries ignored. */
static long list_len(const char *s)
{
	long n = 0;
	size_t l;

	while (*s) {
		s += strspn(s, ", \t");
		l = strcspn(s, ",");
		if (l && strspn(s, " \t") < l)
			n++;
		s += l;
	}
	return n;
}

long agent_slots_detect(long opt_slots, char **envp, const char *root)
{
	const char *nv = env_value(envp, "NVIDIA_VISIBLE_DEVICES");
	long n;

	if (!root)
		root = "";
	if (opt_slots > 0)
		return opt_slots;
	if (nv) {
		if (!*nv || !strcmp(nv, "none") || !strcmp(nv, "void"))
			return 1;
		n = strcmp(nv, "all") == 0 ? count_nvidia(root) : list_len(nv);
		return n > 0 ? n : 1;
	}
	n = count_nvidia(root);
	return n > 0 ? n : 1;
}

long agent_slots_self(long opt_slots, long job_slots, char **envp, const char *root)
{
	return agent_slots_detect(opt_slots > 0 ? opt_slots : job_slots, envp, root);
}

long agent_slots_peer(long opt_slots, const long *job_slots, size_t njob, size_t i, long reported)
{
	if (!job_slots || i >= njob || job_slots[i] < 1)
		return reported;
	return opt_slots > 0 ? opt_slots : job_slots[i];
}
