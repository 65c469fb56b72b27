/* SPDX-License-Identifier: MIT */
/*
 * peers_int.h - the peer list: --peers brace expansion, matching this pod in
 * the list, auto-detection from what job systems hand a pod, and the default
 * job id.
 *
 * Nothing here runs a shell or touches the network. File reads go through a
 * root prefix ("" in production) and the environment is an explicit envp, so
 * tests run against fixtures under tests/fixtures/peers/.
 */
#ifndef AGENT_PEERS_INT_H
#define AGENT_PEERS_INT_H

#include "agent/agent.h"
#include "agent/peers/peers.h"

#include <stddef.h>
#include <stdint.h>

/* Upper bound on the peers one list may expand to. */
#define AGENT_PEERS_MAX 1000000
/* Upper bound on the --peers text itself. */
#define AGENT_PEERS_TEXT_MAX (1 << 20)

/*
 * Bash-like brace expansion of a peer list: split on commas outside braces,
 * expand {N..M[..S]} (zero padding as bash), {a..e} and {x,y} lists, several
 * groups as a cartesian product in bash order. Every resulting name must be a
 * DNS-1123 name (gx_valid_hostname) or an IP address (stored normalised).
 * Empty entries and duplicates are refused. On success *names is a
 * NULL-terminated array of *n strings (free with agent_names_free).
 * Errors: GX_EUSAGE with one line in err naming the bad entry, -ENOMEM.
 */
int agent_peers_expand(const char *list, char ***names, size_t *n, char *err, size_t errlen);
/* The same with another bound on the number of names (fuzzing, tests). */
int agent_peers_expand_max(const char *list, size_t max, char ***names, size_t *n, char *err,
			   size_t errlen);
void agent_names_free(char **names, size_t n);

/*
 * Index of this pod in names. A name matches self by full name (case does not
 * matter, a trailing dot neither) or by first DNS label when either side is a
 * single label; an exact match wins over a short-label one. An IP entry matches
 * when it equals self (that wins outright) or is_local_ip(ip) returns 1
 * (is_local_ip may be NULL); a name match wins over a local IP listed earlier
 * (127.0.0.1, a node address hostNetwork pods share). Returns 0, -ENOENT when
 * nothing matches, GX_EUSAGE when several short matches make it ambiguous.
 */
int agent_self_index(char *const *names, size_t n, const char *self,
		     int (*is_local_ip)(const char *ip), size_t *idx);

/* ---- between peers.c and peers_detect.c ------------------------------------ */

/* A growing NULL-terminated name list. */
struct agent_names {
	char **v;
	size_t n, cap;
};
/* Appends a copy of s[0..len): -ENOMEM. */
int agent_names_push(struct agent_names *l, const char *s, size_t len);
/*
 * Appends s[0..len) after checking it is a host name or an IP (stored
 * normalised); GX_EUSAGE naming it and `what` (where it came from) otherwise.
 */
int agent_names_push_valid(struct agent_names *l, const char *s, size_t len, const char *what,
			   char *err, size_t errlen);
/* GX_EUSAGE when two names are equal (case-insensitive). */
int agent_names_unique(const struct agent_names *l, const char *what, char *err, size_t errlen);
/* Copies s into buf, control/non-ASCII bytes as '?', cut at 80 bytes. */
const char *agent_printable(const char *s, char *buf, size_t len);

struct agent_detect {
	const struct agent_opts *o;
	char **envp;
	const char *root;
	const char *self; /* --self, else the host name */
	const char *host; /* the host name (the kubelet's /etc/hosts line is for it) */
	int (*is_local_ip)(const char *);
};

/* Helpers of peers_detect.c the other sources share. */
const char *agent_detect_env(char **envp, const char *name);
/* A base-10 variable in [0, max]: 0, -ENOENT when unset/empty, -EINVAL/-ERANGE. */
int agent_detect_long(char **envp, const char *name, long max, long *v);
/*
 * This pod's domain from root/etc/hosts (kubelet writes "<ip> <host>.<sub>.
 * <ns>.svc.<domain> <host>" when the pod has a subdomain): the part after the
 * host label into buf ("" when unknown).
 */
void agent_detect_hosts_domain(const struct agent_detect *c, const char *host, char *buf,
			       size_t len);
/* The first "search" domain of root/etc/resolv.conf that starts with `starts`, the rest
 * after it into buf ("" when none). */
void agent_detect_search_domain(const struct agent_detect *c, const char *starts, char *buf,
				size_t len);

void agent_domain_detect(const struct agent_detect *c, struct agent_domain *d);
/* How agent_detect_coord qualifies the coordinator's name. */
enum agent_coord_how {
	AGENT_COORD_SIBLING,  /* a pod of the gang: bare -> this pod's subdomain, else guess */
	AGENT_COORD_SERVICE,  /* a Service (PyTorchJob): namespace rules only */
	AGENT_COORD_AS_GIVEN, /* --peers: only a bare sibling is qualified */
};

/* Sets p->coord_fqdn (and coord_nosub) for p->names[0]. */
void agent_detect_coord(const struct agent_detect *c, struct agent_peers *p, int how);

/* Moves l into p; finds self (fallback index when it is not listed); coord_fqdn. */
int agent_detect_finish(const struct agent_detect *c, struct agent_peers *p, struct agent_names *l,
			const char *source, long fallback, char *err, size_t errlen);

/*
 * Sources in peers_k8s.c: 1 detected (p filled), 0 not this source (the
 * reason in why), < 0 an error with err.
 */
int agent_src_pytorchjob(const struct agent_detect *c, struct agent_peers *p, char *why,
			 size_t whylen, char *err, size_t errlen);
int agent_src_lws(const struct agent_detect *c, struct agent_peers *p, char *why, size_t whylen,
		  char *err, size_t errlen);
int agent_src_indexed(const struct agent_detect *c, struct agent_peers *p, char *why, size_t whylen,
		      char *err, size_t errlen);
/*
 * KubeRay (verified in ray-project/kuberay common/pod.go): workers
 * get FQ_RAY_IP (the head Service's FQDN; RAY_IP its short form), every Ray
 * container RAY_PORT, RAY_CLUSTER_NAME and KUBERAY_GEN_RAY_START_CMD (with
 * "--head" on the head). Peers: one logical name "<cluster>-head" (the
 * coordinator), elastic; workers look the head up through FQ_RAY_IP.
 */
int agent_src_ray(const struct agent_detect *c, struct agent_peers *p, char *why, size_t whylen,
		  char *err, size_t errlen);
/* The indexed-hostname source under another name (TorchX on MCAD/Kueue). */
int agent_src_indexed_as(const struct agent_detect *c, struct agent_peers *p, const char *source,
			 char *why, size_t whylen, char *err, size_t errlen);

/* The job-system sources, in order; fills p (names, self, source, ...). */
int agent_peers_autodetect(const struct agent_detect *c, struct agent_peers *p, char *err,
			   size_t errlen);

#endif
