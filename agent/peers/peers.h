/* SPDX-License-Identifier: MIT */
/*
 * peers.h - peers' face: the peer list (from --peers or the job system), this pod's place in
 * it, the job id, which host names reach a peer from this pod, and the coordinator's name
 * resolved with c-ares in the caller's loop (dns.c). Internals: peers_int.h.
 */
#ifndef AGENT_PEERS_H
#define AGENT_PEERS_H

#include "agent/agent.h"
#include "rdzv/gx/gx.h"

#include <stddef.h>
#include <stdint.h>

/* agent_peers.self of an observer (MPI launcher not listed in the hostfile). */
#define AGENT_SELF_NONE SIZE_MAX

/*
 * How a Kubernetes resolver expands a name in this pod: its subdomain (the headless
 * Service of its /etc/hosts full name), namespace and cluster domain, each "" when
 * unknown (no kubelet-written files; no subdomain: then ns and cluster come from the
 * search list).
 */
struct agent_domain {
	char sub[64];
	char ns[64];
	char cluster[192];
};

struct agent_peers {
	char **names;	       /* rank order, NULL-terminated */
	size_t n;	       /* number of names */
	size_t self;	       /* this pod's index, AGENT_SELF_NONE for an observer */
	const char *source;    /* "--peers", "TorchX", "Volcano", "MPI Operator", ... (static) */
	char *coord_fqdn;      /* the coordinator's full name with a trailing dot, or NULL */
	int coord_nosub;       /* the coordinator's name is bare and this pod has no subdomain */
	int coord_maybe_plain; /* coord_fqdn is our guess for a bare --peers name */
	long slots_hint;       /* this pod's slots from the source (MPI hostfile), 0 = none */
	long *slots;	       /* each listed host's slots from the source (0: none), or NULL */
	int observer;	       /* this pod is not a peer (MPI launcher) */
	/* elastic (Ray): the coordinator never waits; a pod not listed
	 * (self == AGENT_SELF_NONE, observer 0) joins by name and gets a rank */
	int elastic;
	long elastic_max;	 /* the most peers (world) */
	int ray;		 /* enum agent_ray_role: this pod is a Ray head / worker */
	struct agent_domain dom; /* this pod's DNS domain (agent_host_names) */
};

#define AGENT_ELASTIC_MAX 1024 /* elastic world when --nnodes gives no MAX */

/*
 * Peers from --peers, or else from the first job system recognised (each one
 * tried in turn and logged): TorchX, Volcano, MPI Operator v2, Kubeflow
 * PyTorchJob, LeaderWorkerSet, then an indexed hostname (JobSet, Indexed Job,
 * StatefulSet, TorchX on MCAD/Kueue) with --nnodes as the count. envp is the
 * environment to read (NULL-terminated), root prefixes every file read ("" in
 * production), hostname is this pod's host name (--self wins). The count is
 * checked against --nnodes. GX_EUSAGE with one line in err on any failure,
 * saying which option or variable to set.
 */
int agent_peers_discover(const struct agent_opts *o, char **envp, const char *root,
			 const char *hostname, int (*is_local_ip)(const char *),
			 struct agent_peers *p, char *err, size_t errlen);
void agent_peers_free(struct agent_peers *p);

/*
 * The job id: --job-id when given (checked with gx_valid_jobid), else the hex
 * SHA-256 of the peers joined by "," followed by ":<port>". Host names enter
 * by their first label, lower case, so two sources that spell the same pods
 * differently ("a-worker-0" vs "a-worker-0.a.ns.svc") agree. out needs 65
 * bytes (or 129 for a --job-id). GX_EUSAGE / -ENOSPC.
 */
int agent_job_id(const struct agent_opts *o, char *const *names, size_t n, char *out, size_t len);

/* Host names compared without case or a trailing dot: 2 the same full name, 1 the
 * same first label where one side is a single label (a pod name vs its FQDN), or one
 * the leading whole labels of the other ("w-1.svc" vs "w-1.svc.ns.svc.cluster.local",
 * a pod with setHostnameAsFQDN), 0 no. */
int agent_name_match(const char *a, const char *b);

/* root/path (at most 4 MiB) into a NUL-terminated malloc'd buffer; -errno. */
int agent_detect_read(const char *root, const char *path, char **out);

/*
 * 1 when the host name a user wrote names peer (a name of the peer list), 0 when not.
 * Case and trailing dots do not matter. A single-label host is the peer whose first
 * label it is (a bare sibling name). A name of several labels names the peer only when
 * this pod's resolver can take it, as written or through its search list, to the peer's
 * full name (d: NULL = nothing known; a bare peer's is <name>.<sub>.<ns>.svc.<cluster>
 * with this pod's subdomain): the FQDN, <name>.<sub>, <name>.<sub>.<ns>,
 * <name>.<sub>.<ns>.svc; never another subdomain's or namespace's pod with the same
 * first label.
 */
int agent_host_names(const char *peer, const char *host, const struct agent_domain *d);

/* This pod's domain from the files under root ("" in production) for its host name. */
void agent_domain_of(const char *root, const char *host, struct agent_domain *d);

/* ---- dns.c: the coordinator's name, in the caller's loop ---- */
struct agent_dns_answer {
	union gx_sockaddr addrs[8];
	socklen_t lens[8];
	int n;
	int nxdomain; /* the name did not exist (NXDOMAIN / no data) */
};

struct agent_dns;

/* c-ares' process-wide state: once before the first lookup, cleanup after the last (main). */
int agent_dns_library_init(void);
void agent_dns_library_cleanup(void);
/* rc: 0 with ans->n > 0, -ENOENT (ans->nxdomain), -ETIMEDOUT, GX_EDNS. */
typedef void agent_dns_fn(void *arg, int rc, const struct agent_dns_answer *ans);

/*
 * A lookup of name (A and AAAA; /etc/resolv.conf search + ndots, or only the
 * name when it ends in '.'), against dns_server ("IP[:PORT]") when not NULL,
 * IPv4 answers first, in the caller's loop ev: fn is called once,
 * from a timer of ev (never from inside this call or from c-ares), and may
 * free the lookup. agent_dns_free cancels a pending one.
 */
int agent_dns_start(struct gx_ev *ev, const char *name, const char *dns_server, uint16_t port,
		    agent_dns_fn *fn, void *arg, struct agent_dns **ret);
/* 0 when server (NULL: none) is a list c-ares takes; GX_EUSAGE and the line in err when not:
 * said at start (exit 2), not retried as a lookup that fails until --timeout. */
int agent_dns_server_check(const char *server, char *err, size_t errlen);
void agent_dns_free(struct agent_dns *d);

#endif
