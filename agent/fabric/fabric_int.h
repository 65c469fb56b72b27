/* SPDX-License-Identifier: MIT */
/*
 * fabric_int.h - what a running job's transport really is (agent/fabric/FABRIC.md): kernel
 * evidence for CMD's process tree (its TCP connections' bytes from NETLINK_SOCK_DIAG, the
 * verified rails' RDMA port counters), the libraries' own lines (NCCL's debug file, UCX's
 * log file), one verdict, the report line and --out/fabric.json, the job-wide line on the
 * coordinator, and the gate of --expect-fabric. The watcher lives in the supervisor's loop:
 * one timer, no thread, no sleep.
 *
 * This folder includes nothing of agent/ but its own headers: the pipeline hands it plain
 * data (addresses, rails, names) and callbacks (write a file, send a report).
 */
#ifndef AGENT_FABRIC_INT_H
#define AGENT_FABRIC_INT_H

#include "agent/fabric/fabric.h"
#include "rdzv/gx/gx.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

const char *agent_fabric_verdict_name(int verdict);

/* Where a connection's remote end is. */
enum fabric_remote {
	FR_LOOPBACK = 0, /* 127/8, ::1, or an address of this pod */
	FR_SECONDARY,	 /* a peer's secondary / rail address, or the secondary subnet */
	FR_PRIMARY,	 /* a peer's primary address */
	FR_OTHER,	 /* not known as a peer here */
	FR_NCLASS,
};

/* A local interface's part in the job. */
enum fabric_role {
	FI_OTHER = 0,
	FI_SECONDARY, /* the bootstrap interface or a rail's netdev */
	FI_PRIMARY,   /* holds a default route */
	FI_LOOPBACK,
};

#define FABRIC_MAX_IFS 16

/* ---- fabric_tcp.c: CMD's TCP connections -------------------------------------------- */

/* Its addresses as text (buffers of FABRIC_ADDR_LEN). */
void agent_fabric_sock_addrs(const struct fabric_sock *s, char *local, char *remote);

/*
 * Walk one dump reply (the bytes recv() gave: netlink messages) and call fn per socket.
 * Every length is checked before use. 1 when NLMSG_DONE was seen, 0 for more to come,
 * GX_EPROTO for a malformed message, -errno for an NLMSG_ERROR.
 */
int agent_fabric_diag_parse(const void *buf, size_t len, fabric_sock_fn *fn, void *arg);
/* A whole dump of TCP sockets of family (AF_INET, AF_INET6; AF_UNSPEC both, in one walk of the
 * kernel's TCP hash) in this network namespace. */
int agent_fabric_diag_dump(int family, fabric_sock_fn *fn, void *arg);
/* A non-blocking socket that hears of every TCP socket freed in this namespace (its last
 * tcp_info; no inode); events: read what is there, fn per socket; the number of reads. */
int agent_fabric_diag_listen(int *fd);
int agent_fabric_diag_events(int fd, fabric_sock_fn *fn, void *arg);
/* This namespace's TCP sockets in use (/proc/net/sockstat, sockstat6): a change says that a
 * connection came or went without walking the kernel's TCP hash. */
int agent_fabric_tcp_inuse(long *n);

/* CMD's process tree: every descendant of root (root itself excluded), at most cap. */
int agent_fabric_tree(pid_t root, pid_t *pids, size_t cap, size_t *n);
/* Drop from v (sorted) the inodes that mine (sorted) holds too; *n the count left. */
void agent_fabric_owners_drop(struct fabric_owner *v, size_t *n, const struct fabric_owner *mine,
			      size_t nmine);

/* ---- fabric_conn.c: the namespace's connections by cookie, and whose they are ------- */
enum fabric_conn_owner {
	FC_UNKNOWN = -1, /* its holder not read yet */
	FC_OTHER = 0,	 /* gxboot's own, another container's */
	FC_CMD = 1,	 /* held by a process of CMD's tree */
};
struct fabric_conn {
	struct fabric_conn *next;
	uint64_t cookie;
	uint32_t inode;
	int owner;  /* enum fabric_conn_owner */
	int missed; /* the fd tables read after a dump that had it open lacked it */
	pid_t pid;  /* CMD's process that held it */
	uint64_t bytes;
	uint64_t gen; /* the last dump that had it */
	/* the watcher's: where it is counted */
	int ifx; /* index in the facts' interfaces */
	int cls; /* enum fabric_remote */
	const char *peer;
	char remote[FABRIC_ADDR_LEN];
};
/* What the table reads and tells: the kernel and /proc in production, fakes in the tests. */
struct fabric_conn_ops {
	/* one whole dump of the namespace's TCP sockets (both families); 0 or -errno */
	int (*dump)(void *arg, fabric_sock_fn *fn, void *fn_arg);
	/* the socket inodes CMD's tree holds now, sorted (agent_fabric_socket_owners) */
	int (*scan)(void *arg, struct fabric_owner **v, size_t *n);
	/* a connection seen for the first time: where it counts (ifx, cls, peer, remote) */
	void (*place)(void *arg, struct fabric_conn *c, const struct fabric_sock *s);
	/* a connection is found CMD's (its process, c->pid, is alive now); may be NULL */
	void (*owned)(void *arg, const struct fabric_conn *c);
	/* one of CMD's connections has closed: its last bytes */
	void (*closed)(void *arg, const struct fabric_conn *c);
	void *arg;
};
#define FABRIC_CONN_BUCKETS 1024
#define FABRIC_CONN_MAX 16384 /* sockets tracked (CMD's and others'); more are not counted */
struct fabric_conns {
	const struct fabric_conn_ops *ops;
	struct fabric_conn *bucket[FABRIC_CONN_BUCKETS];
	size_t n;
	uint64_t gen;
	struct fabric_owner *owners; /* the last scan's */
	size_t nowners;
	int need_scan;	       /* a socket whose holder is not known yet */
	int need_now;	       /* ... one that is not loopback: read at once */
	int64_t last_scan;     /* when the fd tables were read last */
	int unaccepted;	       /* the last dump had a connection not accepted yet (no inode) */
	uint64_t freed;	       /* destroy events heard */
	uint64_t unseen_bytes; /* closed before anyone could say whose */
	uint32_t unseen_conns;
};
/*
 * A dump at now (ms), and at once the fd tables of CMD's tree when it shows a socket whose
 * holder is not known (while the socket is open: a connection may live a fraction of a
 * second); a loopback socket's holder waits for the next read up to FABRIC_SCAN_MS (never
 * peer traffic, and a job's local store or proxy may churn). Those absent from the dump have
 * closed, CMD's into ops->closed, those nobody could name into unseen_*. 0, or -errno when
 * the dump failed.
 */
int agent_fabric_conns_sample(struct fabric_conns *t, int64_t now);
/* 1 when the table asks for a dump now: a child not accepted yet, a read that failed or
 * waited its turn. */
int agent_fabric_conns_wants(const struct fabric_conns *t, int64_t now);
/* The kernel's word that a socket was freed: a connection's last bytes. */
void agent_fabric_conns_destroyed(struct fabric_conns *t, const struct fabric_sock *s);
/* fn for each open connection of CMD's */
void agent_fabric_conns_each(const struct fabric_conns *t,
			     void (*fn)(void *arg, const struct fabric_conn *c), void *arg);
void agent_fabric_conns_free(struct fabric_conns *t);

/* The local addresses and their interfaces (getifaddrs), with each one's role. */
struct fabric_local {
	char addr[FABRIC_ADDR_LEN];
	char ifname[16];
	int family, prefix, role;
};
struct fabric_net {
	struct fabric_local *locals;
	size_t nlocals;
};
/*
 * Read the local addresses; an interface named in secondary (NULL-terminated) is
 * FI_SECONDARY, one holding a default route (/proc/net/route, /proc/net/ipv6_route)
 * FI_PRIMARY, IFF_LOOPBACK FI_LOOPBACK.
 */
int agent_fabric_net_load(char *const *secondary, struct fabric_net *net);
void agent_fabric_net_free(struct fabric_net *net);
/* The local entry of addr, or NULL. */
const struct fabric_local *agent_fabric_net_find(const struct fabric_net *net, const char *addr);
/* 1 when addr lies in the subnet of a local address of role role. */
int agent_fabric_net_onlink(const struct fabric_net *net, const char *addr, int role);

/* ---- peers: what this pod knows of the others' addresses ---------------------------- */

/* Classify a remote address (normalised text) for this pod. */
int agent_fabric_classify(const struct fabric_net *net, const struct fabric_peer_addr *peers,
			  size_t npeers, const char *remote, const char **peer_name);

/* ---- fabric_rdma.c: the verified rails' port counters ------------------------------- */
/*
 * Read a rail's counters under sysfs (root "/sys" in production): counters/port_xmit_data +
 * port_rcv_data (4-byte units on mlx5), else hw_counters/sent_bytes + rcvd_bytes (rxe on a
 * newer kernel); packets from counters/port_(xmit,rcv)_packets or hw_counters/(sent,rcvd)_pkts;
 * where sysfs has none of them (a compat device in a pod's namespace), the RDMA netlink's
 * hw counters (sent_bytes, rcvd_bytes, sent_pkts, rcvd_pkts). first: take the values as the
 * base. 0, or -ENOENT when the port has no counter at all.
 */
int agent_fabric_rail_read(const char *sysfs, struct fabric_rail *r, int first);

/* ---- fabric_lib.c: NCCL's and UCX's own lines --------------------------------------- */
#define FABRIC_MAX_DEVS 16
#define FABRIC_MAX_WARNS 4
struct fabric_nccl {
	int comms;			   /* "Using network X" lines: communicators initialised */
	char network[32];		   /* the last X ("IB", "Socket", a plugin's name) */
	int net_ib, net_socket, net_other; /* communicators per kind */
	char ib_devs[FABRIC_MAX_DEVS][72]; /* "mlx5_0:1" from "NET/IB : Using [0]mlx5_0:1/RoCE" */
	size_t nib_devs;
	char sock_devs[FABRIC_MAX_DEVS][72]; /* "net1" from "NET/Socket : Using [0]net1:..." */
	size_t nsock_devs;
	int ib_none;			 /* "NET/IB : No device found." */
	char env[FABRIC_MAX_WARNS][128]; /* "NCCL_IB_DISABLE=1" from "... set by environment to" */
	size_t nenv;
	char warns[FABRIC_MAX_WARNS][200];
	size_t nwarns, warns_total;
};
struct fabric_ucx {
	int eps;		       /* ep_cfg lines */
	char tls[FABRIC_MAX_DEVS][72]; /* "rc_verbs/mlx5_0:1", "tcp/net1" in data lanes */
	size_t ntls;
	char env[FABRIC_MAX_WARNS][128]; /* "UCX_TLS=tcp" from "UCX_* env variables: ..." */
	size_t nenv;
	char warns[FABRIC_MAX_WARNS][200];
	size_t nwarns, warns_total;
};
/* One line of an NCCL debug file: 1 when it told something, 0 when not NCCL's or not ours. */
int agent_fabric_nccl_line(const char *line, struct fabric_nccl *n);
/* One line of a UCX log file: 1 when it told something. */
int agent_fabric_ucx_line(const char *line, struct fabric_ucx *u);
/* What UCX's transport name is: 1 RDMA (verbs, mlx5, dc, ud), 2 TCP, 0 local (shared memory,
 * self, cuda) or unknown. */
int agent_fabric_ucx_tl_kind(const char *tl_dev);
/* What NCCL's network name is: 1 RDMA (IB, IBext, a libfabric/EFA plugin), 2 TCP (Socket), 0. */
int agent_fabric_nccl_net_kind(const char *network);

/* ---- fabric_logs.c: the library files in --out ------------------------------------- */
struct fabric_logfile {
	char name[128];
	int kind; /* 1 NCCL, 2 UCX */
	off_t off;
	char part[2048]; /* the line being read */
	size_t plen;
	int toolong;
	struct fabric_nccl n;
	struct fabric_ucx u;
};
struct fabric_logs {
	struct fabric_logfile *v;
	size_t n;
	size_t relayed; /* warnings passed on to stderr */
};
/* Remove nccl.*.log and ucx.*.log left in dir by an earlier run. */
void agent_fabric_logs_clean(int dfd, const char *dir);
/* Read what the files in dir gained since the last call. */
int agent_fabric_logs_read(struct fabric_logs *L, int dfd);
void agent_fabric_logs_free(struct fabric_logs *L);

/* ---- fabric_report.c: the verdict and the texts -------------------------------------- */
struct fabric_ifstat {
	char name[16];
	int role;
	uint64_t bytes; /* sent (acked) + received, CMD's connections */
	uint32_t conns;
	uint64_t by_class[FR_NCLASS];
};
struct fabric_facts {
	struct fabric_ifstat ifs[FABRIC_MAX_IFS];
	size_t nifs;
	struct fabric_rail rails[FABRIC_MAX_RAILS];
	size_t nrails;
	struct fabric_nccl nccl;
	struct fabric_ucx ucx;
	int nccl_files, ucx_files;
	int nccl_ours, ucx_ours;
	char nccl_user[64], ucx_user[64];
	uint64_t by_class[FR_NCLASS];
	/* the largest primary-peer connection: its peer, its process, the process's choice */
	char primary_peer[64], primary_addr[FABRIC_ADDR_LEN], primary_if[16];
	pid_t primary_pid;
	char primary_env[200];
	/* over a primary interface to addresses this pod does not know as peers */
	struct fabric_remote_bytes remotes[FABRIC_MAX_REMOTES];
	size_t nremotes;
	size_t processes, unreadable;
	int full_table;
	/* TCP sockets of the namespace that closed without ever being seen open (not CMD's as
	 * far as anyone can tell: they lived under a quarter period) */
	uint64_t unseen_bytes;
	uint32_t unseen_conns;
	/* the watcher's own cost, for fabric.json */
	uint64_t cpu_us, dumps, elapsed_ms;
};
/* Below: not yet evidence of the job's traffic (TCP bootstrap, a few probes). */
#define FABRIC_EVIDENCE_BYTES (1u << 20)
/* TCP peer bytes past which the job's bulk traffic is said to go over TCP */
#define FABRIC_BULK_BYTES (64u << 20)
/* An RDMA rail counts as moving the job's traffic from this many bytes (or packets) */
#define FABRIC_RDMA_MIN_BYTES (1u << 20)
#define FABRIC_RDMA_MIN_PKTS 1024u

int agent_fabric_verdict(const struct fabric_facts *f);
/* Every file's facts into f->nccl, f->ucx (and the counts of files). */
void agent_fabric_logs_merge(const struct fabric_logs *L, struct fabric_facts *f);
/* 1 when the facts are evidence (a library's choice, RDMA moved, TCP peer bytes). */
int agent_fabric_evidence(const struct fabric_facts *f);
/* The library said TCP, or bulk TCP with idle rails, while verified rails exist: 1 and why. */
int agent_fabric_tcp_despite_rdma(const struct fabric_facts *f, char *why, size_t len);
/* Peer traffic over the primary network: 1 and the one line naming it. */
int agent_fabric_primary_line(const struct fabric_facts *f, char *why, size_t len);
/* "fabric: <verdict>: <evidence>" */
void agent_fabric_line(const struct fabric_facts *f, int verdict, char *buf, size_t len);
/* 12 MB, 41 GB: decimal units, as `ls -h --si` */
void agent_fabric_bytes_str(uint64_t b, char *buf, size_t len);
/* fabric.json's object (jansson) as text; malloc'd. */
char *agent_fabric_json(const struct fabric_facts *f, int verdict, int final, int expect,
			const char *gate_why, const char *job_line);

/* ---- fabric_job.c: the coordinator's view of every pod ------------------------------- */
struct fabric_pod {
	char name[254];
	int reported, expected; /* expected: the pod said it reports (its JOIN) */
	struct fabric_summary s;
	char primary_via[300]; /* coordinator: its unclassified remotes that are peers' eth0 */
};
/* The job-wide line of n pods: "fabric: job: 4 of 4 pods secondary, 0 with peer traffic on
 * eth0", naming the pods that differ. */
void agent_fabric_job_line(const struct fabric_pod *pods, size_t n, char *buf, size_t len);
/* The coordinator classifies a member's unclassified remotes with its table: 1 when one is a
 * peer's primary address (FS_PRIMARY_PEER is then set), naming it in p->primary_via. */
int agent_fabric_job_reclassify(struct fabric_pod *p, const struct fabric_peer_addr *peers,
				size_t npeers);

/* ---- fabric_watch.c: the watcher in the supervisor's loop ---------------------------- */
#define FABRIC_PERIOD_MS 2000
/*
 * Every tick the namespace's TCP socket count is read (agent_fabric_tcp_inuse: two small
 * reads); when it moved, the kernel said a socket was freed, or a child waits for its accept,
 * the sockets are dumped at that tick, and CMD's fd tables read right after when the dump
 * showed a socket whose holder is not known: a connection is attributed to CMD only while it
 * is open with an inode, and the bulk connection of a small Gloo job lives 0.2 to 0.3 s (it
 * was missed 5 times in 12 with a 250 ms tick and the fd tables read at most every 500 ms).
 * A dump walks the kernel's whole TCP hash (0.4 to 1.2 ms of CPU here), so dumps on a change
 * are paced (agent_fabric_pace): FABRIC_START_GAP_MS apart on average in CMD's first
 * FABRIC_START_FAST_MS, FABRIC_CHANGE_GAP_MS after, and up to FABRIC_DUMP_BURST at once, one a
 * tick, after a quiet spell: a job makes its connections in a burst (its store's, then its
 * pairs' a few ticks later), and with 3 the pairs' dump waited for credit for 240 ms, till
 * the bulk connection was 27 ms from its close. A job that churns connections all the time
 * gets the average.
 */
#define FABRIC_TICK_MS 50
#define FABRIC_START_FAST_MS 30000
#define FABRIC_START_GAP_MS 250
#define FABRIC_CHANGE_GAP_MS 1000
#define FABRIC_DUMP_BURST 8
/* the fd tables at most this often for loopback sockets (at once for the others) */
#define FABRIC_SCAN_MS 500
struct fabric_pace {
	int64_t credit; /* ms of dumps owed, up to FABRIC_DUMP_BURST gaps */
	int64_t last;	/* the last call's time */
};
/* 1 when a dump on a change (want) may go now, and it is charged one gap; credit accrues
 * with the time between calls. */
int agent_fabric_pace(struct fabric_pace *p, int64_t now, int64_t gap, int want);
#define FABRIC_FIRST_MS 60000
#define FABRIC_KILL_MS 10000	  /* the gate's SIGTERM, then SIGKILL */
#define FABRIC_FINAL_WAIT_MS 3000 /* coordinator: the members' last reports after CMD */

#endif
