/* SPDX-License-Identifier: MIT */
/*
 * fabric.h - fabric's face: the transport watcher a run starts before CMD and finishes after
 * it, given the job as plain data (addresses, rails, the library variables) and callbacks
 * (write a file, send a report); the coordinator's reports of the members; and the sock_diag
 * and fd-table reads the pipeline also uses for its own listeners. agent/fabric/FABRIC.md.
 * Internals: fabric_int.h.
 */
#ifndef AGENT_FABRIC_H
#define AGENT_FABRIC_H

#include "rdzv/gx/gx.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum fabric_verdict {
	FABRIC_UNKNOWN = 0, /* no evidence yet */
	FABRIC_RDMA,	    /* the verified rails moved the job's traffic */
	FABRIC_SECONDARY,   /* peer traffic over TCP on the secondary network */
	FABRIC_PRIMARY,	    /* peer traffic over the primary network (eth0) */
};

/* --expect-fabric: unset reports only; off runs no watcher at all */
enum fabric_expect {
	FABRIC_EXPECT_REPORT = 0,
	FABRIC_EXPECT_SECONDARY,
	FABRIC_EXPECT_RDMA,
	FABRIC_EXPECT_OFF,
};

#define FABRIC_ADDR_LEN 46
#define FABRIC_MAX_RAILS 16
#define FABRIC_MAX_REMOTES 8 /* unclassified remote addresses kept and sent */
#define FABRIC_LINE_LEN 640

/* ---- sockets and their holders ---- */

/* One socket of a NETLINK_SOCK_DIAG dump (TCP, any state but LISTEN). */
struct fabric_sock {
	uint64_t cookie; /* stable for the socket's life */
	uint32_t inode;	 /* 0: no struct socket (orphaned after close, or not accepted yet) */
	int family;
	int state;
	unsigned char src[16], dst[16]; /* as the kernel gave them: text only for a new socket */
	uint16_t lport, rport;
	int have_bytes; /* tcp_info long enough for the two counters */
	uint64_t bytes_acked, bytes_received;
};

typedef void fabric_sock_fn(void *arg, const struct fabric_sock *s);
/* A dump of the TCP sockets of family (AF_INET, AF_INET6; AF_UNSPEC both) in this network
 * namespace in the TCP states of the bit mask states (1 << TCP_LISTEN: the listeners). */
int agent_fabric_diag_dump_states(int family, uint32_t states, fabric_sock_fn *fn, void *arg);
/* A socket inode and the process holding it. */
struct fabric_owner {
	uint32_t ino;
	pid_t pid;
};
/*
 * The socket inodes these processes hold, sorted by inode (*out malloc'd; NULL when none);
 * *unreadable: processes whose fd table we may not read (another user, no CAP_SYS_PTRACE).
 */
int agent_fabric_socket_owners(const pid_t *pids, size_t n, struct fabric_owner **out,
			       size_t *count, size_t *unreadable);
const struct fabric_owner *agent_fabric_owner_find(const struct fabric_owner *v, size_t n,
						   uint32_t ino);

/* ---- the job as plain data ---- */
struct fabric_peer_addr {
	char addr[FABRIC_ADDR_LEN];
	char name[64]; /* the pod's name (truncated for the line) */
	int primary;   /* 1: its primary (eth0) address; 0: secondary or a rail */
};

struct fabric_rail {
	char dev[64];
	int port;
	int verified;
	/* what the counters read (see agent_fabric_rail_read); deltas from the first read */
	int have_bytes, have_pkts;
	uint64_t base_bytes, base_pkts, bytes, pkts;
	char source[48];   /* which counters were read, e.g. "counters/port_(xmit,rcv)_data x4" */
	uint32_t nl_index; /* the RDMA netlink's device index + 1, 0 not looked up */
	int use_nl;	   /* sysfs has no counter for it: the RDMA netlink has */
};

/* Whether gxboot may set the libraries' log variables (the user set none of them). */
struct fabric_libvars {
	int nccl_ours, ucx_ours;
	char nccl_user[64],
	    ucx_user[64]; /* the variable the user set (why NCCL's choice is unknown) */
	char names[5][32], values[5][300];
	size_t n;
};
void agent_fabric_libvars(char *const *envp, const char *out, struct fabric_libvars *v);

/* ---- the reports ---- */
struct fabric_remote_bytes {
	char addr[FABRIC_ADDR_LEN];
	uint64_t bytes;
};

#define FS_FINAL 0x1u	     /* CMD exited: the last report */
#define FS_EVIDENCE 0x2u     /* the facts are evidence (not only the time bound) */
#define FS_PRIMARY_PEER 0x4u /* peer bytes over the primary network */
#define FS_GATED 0x8u	     /* --expect-fabric ended this pod's job */

struct fabric_summary {
	int verdict;
	uint32_t flags;
	uint32_t rails;	     /* rails whose counters moved */
	char primary_if[16]; /* this pod's primary interface, "" unknown */
	char line[FABRIC_LINE_LEN];
	struct fabric_remote_bytes remotes[FABRIC_MAX_REMOTES];
	size_t nremotes;
};

/* ---- the watcher ---- */
struct fabric_cfg {
	const char *out;
	int expect; /* enum fabric_expect */
	const char *self_name;
	int is_coord;
	char *const *secondary; /* the bootstrap interface and the rails' netdevs, NULL-ended */
	const struct fabric_peer_addr *peers;
	size_t npeers;
	int full_table;
	const struct fabric_rail *rails; /* dev, port, verified */
	size_t nrails;
	const char *sysfs; /* "/sys"; tests point it elsewhere */
	struct fabric_libvars lib;
	int period_ms; /* sampling period (1000) */
	int first_ms;  /* the first line comes by then without evidence (60000) */
	pid_t root;    /* whose descendants are CMD's tree (getpid()) */
	/* coordinator: the job's pods (rank order) and which of them report */
	char *const *names;
	const int *reports;
	size_t world;
	/* --out opened once as a directory (out_fd, -1: none): every read, unlink and write is
	 * relative to it, never to the path, which may have moved. write_file writes NAME there
	 * atomically (the pipeline's agent_write_file_at; dir is the path, for lines). */
	int out_fd;
	int (*write_file)(int dfd, const char *dir, const char *name, const char *data, size_t len,
			  mode_t mode, char *err, size_t errlen);
	/* member: send a report to the coordinator; flushed: it went out */
	void (*send)(void *arg, const struct fabric_summary *s);
	int (*flushed)(void *arg);
	void *arg;
};

struct agent_fabric;
int agent_fabric_start(struct gx_ev *ev, const struct fabric_cfg *cfg, struct agent_fabric **ret);
/* --expect-fabric rdma without any verified rail: 1 and the line (nothing to wait for) */
int agent_fabric_precheck(const struct fabric_cfg *cfg, char *line, size_t len);
/* coordinator: a member's report (index in the world) */
void agent_fabric_peer(struct agent_fabric *f, size_t index, const struct fabric_summary *s);
/*
 * CMD exited: a last sample, the last line, fabric.json, the last report (member) or the
 * job-wide line after the members' last reports (coordinator, at most FABRIC_FINAL_WAIT_MS
 * in ev). Returns GX_EFABRIC with the line when the gate ended the job, else 0.
 */
int agent_fabric_finish(struct agent_fabric *f, char *line, size_t len);
/* 1 once the gate ended the job (the pipeline drains a serve without CMD then) */
int agent_fabric_gated(const struct agent_fabric *f);
void agent_fabric_free(struct agent_fabric *f);

#endif
