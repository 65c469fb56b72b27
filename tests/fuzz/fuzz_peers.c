/* SPDX-License-Identifier: MIT */
/*
 * fuzz_peers.c - libFuzzer target for the peer-list sources a pod reads
 * (agent/peers/peers_detect.c, agent/peers/peers_k8s.c through agent_peers_discover): the
 * MPI Operator /etc/mpi/hostfile, Volcano VC_<TASK>_HOSTS / VC_TASK_INDEX and
 * /etc/volcano/<task>.host, TorchX, PyTorchJob MASTER_ADDR, LeaderWorkerSet,
 * KubeRay, the indexed host name with --nnodes, /etc/hosts and resolv.conf
 * (the coordinator's full name), and --peers with --self matching.
 *
 * Files are written under a private root (mkdtemp in /dev/shm, else /tmp;
 * removed at exit) that the
 * code reads through its root prefix; the environment is an explicit envp.
 * Input: byte 0 = flags, byte 1 = --nnodes, then NUL-separated fields:
 *   0 host name (and --self when flags & 0x20)   1 /etc/mpi/hostfile (or --peers)
 *   2 /etc/volcano/worker.host   3 /etc/volcano/ps.host   4 /etc/hosts
 *   5 /etc/resolv.conf           6.. environment entries NAME=VALUE (at most 32)
 * flags: 0x01 hostfile, 0x02 worker.host, 0x04 ps.host, 0x08 --nnodes N,
 * 0x10 --nnodes 1:N (elastic), 0x20 --self, 0x40 hosts + resolv.conf,
 * 0x80 field 1 is --peers instead of the hostfile.
 * Invariants on success: 1..n names, NULL-terminated, each a host name or an
 * IP; self is an index or the observer/elastic marker; a job id can be made; every
 * name names itself (agent_host_names), and field 0 is weighed against each.
 * On a usage error the reason is one non-empty line.
 */
#include "agent/peers/peers_int.h"
#include "rdzv/gx/gx.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NFIELDS 40
#define NENV 32

static const char *const FILES[] = {
    "/etc/mpi/hostfile", "/etc/volcano/worker.host", "/etc/volcano/ps.host",
    "/etc/hosts",	 "/etc/resolv.conf",
};
#define NFILES (sizeof(FILES) / sizeof(FILES[0]))

static char root[64];

static void root_remove(void)
{
	char path[256];
	size_t i;

	for (i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s%s", root, FILES[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/etc/mpi", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/etc/volcano", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/etc", root);
	rmdir(path);
	rmdir(root);
}

static int root_make(void)
{
	char path[256];

	if (root[0])
		return 0;
	snprintf(root, sizeof(root), "/dev/shm/gxfuzz-peers.XXXXXX"); /* tmpfs: fast */
	if (!mkdtemp(root)) {
		snprintf(root, sizeof(root), "/tmp/gxfuzz-peers.XXXXXX");
		if (!mkdtemp(root)) {
			root[0] = '\0';
			return -1;
		}
	}
	snprintf(path, sizeof(path), "%s/etc", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/mpi", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/volcano", root);
	mkdir(path, 0755);
	atexit(root_remove);
	return 0;
}

/* Write (or remove, when !on) root/FILES[i] with the field's bytes. */
static void put_file(size_t i, int on, const char *text, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s%s", root, FILES[i]);
	unlink(path);
	if (!on)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, len) < 0)
		gx_debug("fuzz: write %s failed", path);
	close(fd);
}

static int local_ip(const char *ip)
{
	return strcmp(ip, "10.0.0.1") == 0 || strcmp(ip, "192.168.2.11") == 0;
}

static void check_peers(const struct agent_opts *o, const struct agent_peers *p, const char *host)
{
	char ip[64], id[140];
	size_t i;

	if (p->n == 0 || !p->names || p->names[p->n] != NULL || !p->source)
		abort();
	for (i = 0; i < p->n; i++)
		if (!gx_valid_hostname(p->names[i]) &&
		    gx_addr_normalize(p->names[i], ip, sizeof(ip)) < 0)
			abort();
	if (p->self != AGENT_SELF_NONE && p->self >= p->n)
		abort();
	if (p->self == AGENT_SELF_NONE && !p->observer && !p->elastic)
		abort();
	if (agent_job_id(o, p->names, p->n, id, sizeof(id)) < 0)
		abort();
	/* the domain read from the files is printable text; a name names itself, and the
	 * host name a user wrote (field 0 here) is weighed against every peer */
	if (memchr(p->dom.sub, '\0', sizeof(p->dom.sub)) == NULL ||
	    memchr(p->dom.ns, '\0', sizeof(p->dom.ns)) == NULL ||
	    memchr(p->dom.cluster, '\0', sizeof(p->dom.cluster)) == NULL)
		abort();
	for (i = 0; i < p->n; i++) {
		if (gx_addr_normalize(p->names[i], ip, sizeof(ip)) < 0 &&
		    agent_host_names(p->names[i], p->names[i], &p->dom) != 1)
			abort();
		(void)agent_host_names(p->names[i], host, &p->dom);
	}
}

static void run(const uint8_t flags, long nn, char **field, size_t *flen, size_t nf)
{
	struct agent_opts o;
	struct agent_peers p;
	char *envp[NENV + 1], err[512] = "";
	size_t i, ne = 0;
	int rc;

	memset(&o, 0, sizeof(o));
	memset(&p, 0, sizeof(p));
	o.port = 29410;
	o.master_port = 29500;
	o.timeout = 600;
	if (flags & 0x08)
		o.nnodes_min = o.nnodes_max = nn;
	if (flags & 0x10) {
		o.nnodes_min = 1;
		o.nnodes_max = nn;
		o.elastic = 1;
	}
	if (flags & 0x20)
		o.self = field[0];
	if (flags & 0x80)
		o.peers = field[1];
	put_file(0, (flags & 0x81) == 0x01, field[1], flen[1]);
	put_file(1, flags & 0x02, field[2], flen[2]);
	put_file(2, flags & 0x04, field[3], flen[3]);
	put_file(3, flags & 0x40, field[4], flen[4]);
	put_file(4, flags & 0x40, field[5], flen[5]);
	for (i = 6; i < nf && ne < NENV; i++)
		if (strchr(field[i], '='))
			envp[ne++] = field[i];
	envp[ne] = NULL;
	rc = agent_peers_discover(&o, envp, root, field[0], local_ip, &p, err, sizeof(err));
	if (rc == 0)
		check_peers(&o, &p, field[0]);
	else if (rc == GX_EUSAGE && (!err[0] || strchr(err, '\n')))
		abort(); /* every failure is one clear line */
	agent_peers_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *field[NFIELDS];
	size_t flen[NFIELDS], nf = 0, i, start;
	static char empty[] = "";

	if (size < 2 || size > 16384 || root_make() < 0)
		return 0;
	buf = malloc(size - 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 2, size - 2);
	buf[size - 2] = '\0';
	for (start = 0, i = 0; i <= size - 2 && nf < NFIELDS; i++) {
		if (i == size - 2 || buf[i] == '\0') {
			field[nf] = buf + start;
			flen[nf++] = i - start;
			start = i + 1;
		}
	}
	for (i = nf; i < NFIELDS; i++) {
		field[i] = empty;
		flen[i] = 0;
	}
	run(data[0], 1 + data[1] % 64, field, flen, nf);
	free(buf);
	return 0;
}
