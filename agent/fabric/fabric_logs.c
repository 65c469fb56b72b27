/* SPDX-License-Identifier: MIT */
/*
 * fabric_logs.c - the files NCCL and UCX write into --out (nccl.<host>.<pid>.log,
 * ucx.<host>.<pid>.log, from the variables gxboot set): read as they grow, whole lines only,
 * bounded per file and per sample. Their warnings, which the files now hold instead of
 * CMD's output (UCX prints WARN and ERROR on the console by default), are passed on to
 * gxboot's stderr, the first few of them.
 */
#include "agent/fabric/fabric_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_READ_MAX (64 * 1024)	/* per file and sample */
#define LOG_FILE_MAX (16 * 1024 * 1024) /* a file's bytes read at most */
#define LOG_FILES_MAX 256
#define RELAY_MAX 8 /* library warnings passed on to stderr */

/* nccl.<x>.log -> 1, ucx.<x>.log -> 2, else 0 */
static int log_kind(const char *name)
{
	size_t l = strlen(name);

	if (l < 9 || strcmp(name + l - 4, ".log") != 0)
		return 0;
	if (strncmp(name, "nccl.", 5) == 0)
		return 1;
	if (strncmp(name, "ucx.", 4) == 0)
		return 2;
	return 0;
}

/* A directory stream of its own on dfd (fdopendir owns the fd it is given). */
static DIR *dir_at(int dfd)
{
	int fd = dfd < 0 ? -1 : openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d && fd >= 0)
		close(fd);
	return d;
}

void agent_fabric_logs_clean(int dfd, const char *dir)
{
	struct dirent *de;
	DIR *d = dir_at(dfd);

	if (!d)
		return;
	/* the previous run's (a restarted container's pids repeat: its file would be read) */
	while ((de = readdir(d)) != NULL)
		if (log_kind(de->d_name) && unlinkat(dirfd(d), de->d_name, 0) == 0)
			gx_debug("fabric: removed %s/%s of an earlier run", dir, de->d_name);
	closedir(d);
}

static struct fabric_logfile *logfile_get(struct fabric_logs *L, const char *name, int kind)
{
	struct fabric_logfile *nv;
	size_t i;

	for (i = 0; i < L->n; i++)
		if (strcmp(L->v[i].name, name) == 0)
			return &L->v[i];
	if (L->n >= LOG_FILES_MAX || strlen(name) >= sizeof(L->v[0].name))
		return NULL;
	nv = realloc(L->v, (L->n + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	L->v = nv;
	memset(&L->v[L->n], 0, sizeof(L->v[0]));
	gx_strlcpy(L->v[L->n].name, name, sizeof(L->v[0].name));
	L->v[L->n].kind = kind;
	return &L->v[L->n++];
}

static void relay(struct fabric_logs *L, const struct fabric_logfile *lf, size_t before,
		  size_t after, char (*warns)[200])
{
	size_t i;

	for (i = before; i < after && i < FABRIC_MAX_WARNS; i++) {
		if (L->relayed++ < RELAY_MAX)
			gx_warn("%s (%s): %s", lf->kind == 1 ? "NCCL WARN" : "UCX", lf->name,
				warns[i]);
		else if (L->relayed == RELAY_MAX + 1)
			gx_warn("fabric: more NCCL/UCX warnings in their files in --out");
	}
}

static void one_line(struct fabric_logs *L, struct fabric_logfile *lf, const char *line)
{
	size_t before;

	if (lf->kind == 1) {
		before = lf->n.nwarns;
		agent_fabric_nccl_line(line, &lf->n);
		relay(L, lf, before, lf->n.nwarns, lf->n.warns);
	} else {
		before = lf->u.nwarns;
		agent_fabric_ucx_line(line, &lf->u);
		relay(L, lf, before, lf->u.nwarns, lf->u.warns);
	}
}

/* The bytes after lf->off, split into lines; a line longer than the buffer is dropped. */
static void read_new(struct fabric_logs *L, int dfd, struct fabric_logfile *lf)
{
	char buf[8192];
	size_t total = 0;
	int fd;

	if (lf->off >= LOG_FILE_MAX)
		return;
	fd = openat(dfd, lf->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	while (total < LOG_READ_MAX) {
		ssize_t n = pread(fd, buf, sizeof(buf), lf->off);
		ssize_t i;

		if (n <= 0)
			break;
		lf->off += n;
		total += (size_t)n;
		for (i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (lf->plen + 1 < sizeof(lf->part))
					lf->part[lf->plen++] = buf[i];
				else
					lf->toolong = 1;
				continue;
			}
			lf->part[lf->plen] = '\0';
			if (!lf->toolong)
				one_line(L, lf, lf->part);
			lf->plen = 0;
			lf->toolong = 0;
		}
	}
	close(fd);
}

int agent_fabric_logs_read(struct fabric_logs *L, int dfd)
{
	struct dirent *de;
	DIR *d = dir_at(dfd);

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		int kind = log_kind(de->d_name);
		struct fabric_logfile *lf;

		if (!kind || (de->d_type != DT_REG && de->d_type != DT_UNKNOWN))
			continue;
		lf = logfile_get(L, de->d_name, kind);
		if (lf)
			read_new(L, dirfd(d), lf);
	}
	closedir(d);
	return 0;
}

static void add72(char (*dst)[72], size_t *n, const char (*src)[72], size_t m)
{
	size_t i, j;

	for (i = 0; i < m; i++) {
		for (j = 0; j < *n && strcmp(dst[j], src[i]); j++)
			;
		if (j == *n && *n < FABRIC_MAX_DEVS)
			memcpy(dst[(*n)++], src[i], 72);
	}
}

static void add128(char (*dst)[128], size_t *n, const char (*src)[128], size_t m)
{
	size_t i, j;

	for (i = 0; i < m; i++) {
		for (j = 0; j < *n && strcmp(dst[j], src[i]); j++)
			;
		if (j == *n && *n < FABRIC_MAX_WARNS)
			memcpy(dst[(*n)++], src[i], 128);
	}
}

static void add200(char (*dst)[200], size_t *n, const char (*src)[200], size_t m)
{
	size_t i;

	for (i = 0; i < m && *n < FABRIC_MAX_WARNS; i++)
		memcpy(dst[(*n)++], src[i], 200);
}

void agent_fabric_logs_merge(const struct fabric_logs *L, struct fabric_facts *f)
{
	struct fabric_nccl *n = &f->nccl;
	struct fabric_ucx *u = &f->ucx;
	size_t i;

	memset(n, 0, sizeof(*n));
	memset(u, 0, sizeof(*u));
	f->nccl_files = f->ucx_files = 0;
	for (i = 0; i < L->n; i++) {
		const struct fabric_logfile *lf = &L->v[i];

		if (lf->kind == 1) {
			f->nccl_files++;
			n->comms += lf->n.comms;
			n->net_ib += lf->n.net_ib;
			n->net_socket += lf->n.net_socket;
			n->net_other += lf->n.net_other;
			if (lf->n.network[0])
				memcpy(n->network, lf->n.network, sizeof(n->network));
			n->ib_none |= lf->n.ib_none;
			add72(n->ib_devs, &n->nib_devs, lf->n.ib_devs, lf->n.nib_devs);
			add72(n->sock_devs, &n->nsock_devs, lf->n.sock_devs, lf->n.nsock_devs);
			add128(n->env, &n->nenv, lf->n.env, lf->n.nenv);
			add200(n->warns, &n->nwarns, lf->n.warns, lf->n.nwarns);
			n->warns_total += lf->n.warns_total;
		} else {
			f->ucx_files++;
			u->eps += lf->u.eps;
			add72(u->tls, &u->ntls, lf->u.tls, lf->u.ntls);
			add128(u->env, &u->nenv, lf->u.env, lf->u.nenv);
			add200(u->warns, &u->nwarns, lf->u.warns, lf->u.nwarns);
			u->warns_total += lf->u.warns_total;
		}
	}
}

void agent_fabric_logs_free(struct fabric_logs *L)
{
	free(L->v);
	memset(L, 0, sizeof(*L));
}
