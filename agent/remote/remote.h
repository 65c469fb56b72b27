/* SPDX-License-Identifier: MIT */
/*
 * remote.h - remote's face: remote exec for MPI launchers (no sshd, kubectl or RBAC). The
 * server (serve.c) a serving pod runs beside CMD, the client `gxboot rsh` (rsh.c), the
 * credential derived from the token for "rsh:<job id>" (rsh.key, never the token) and the
 * peers of rendezvous.json (rsh_peers.c). The wire and the rest: rsh_int.h.
 */
#ifndef AGENT_REMOTE_H
#define AGENT_REMOTE_H

#include "agent/agent.h"
#include "rdzv/gx/gx.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RSH_KEY_LEN 32
#define RSH_PORT_OFFSET 2 /* serve listens on --port + 2 */

/* ---- credential (rsh.key: "key=<64 hex>\nport=<n>\n", 0600) ---------------- */
int agent_rsh_key_derive(const unsigned char *token, size_t len, const char *job_id,
			 unsigned char k[RSH_KEY_LEN]);
/* rsh.key's text for k and port into out (RSH_KEY_TEXT_MAX fits): its length, or -ENOSPC.
 * The pipeline writes it to --out (0600); agent_rsh_key_load reads it back. */
#define RSH_KEY_TEXT_MAX 160
int agent_rsh_key_text(const unsigned char k[RSH_KEY_LEN], long port, char *out, size_t cap);

/* ---- serve --------------------------------------------------------------- */
struct rdzv_peer;
struct agent_serve_cfg {
	const char *addr4, *addr6; /* the secondary addresses to listen on ("" = none) */
	uint16_t port;
	const unsigned char *key; /* RSH_KEY_LEN */
	char **envp;		  /* the sessions' environment */
	/* the peers this pod knows (its table): their addresses' handshakes cannot be pushed
	 * out by a stranger's connections; copied at start */
	const struct rdzv_peer *table;
	size_t ntable;
};
struct agent_serve;
/*
 * A serving member asks for the whole table up to this many peers, so every peer's
 * address keeps its pre-authentication slots (tree-spawned MPI daemons rsh each other, not
 * only the launcher); above it, only the coordinator's and the learned launchers' do.
 */
#define AGENT_SERVE_TABLE_MAX 1024

int agent_serve_start(struct gx_ev *ev, const struct agent_serve_cfg *cfg, struct agent_serve **ret,
		      char *err, size_t errlen);
/* A reaped child: 1 when it was a session's, 0 otherwise. */
int agent_serve_reaped(struct agent_serve *s, pid_t pid, int status);
/* 1 when pid is a session's command. */
int agent_serve_owns(const struct agent_serve *s, pid_t pid);
/* Stop listening; SIGTERM every session's process group (SIGKILL after a grace). */
void agent_serve_shutdown(struct agent_serve *s);
/* Session processes not yet reaped. */
size_t agent_serve_running(const struct agent_serve *s);
void agent_serve_free(struct agent_serve *s);

/* ---- commands -------------------------------------------------------------- */
int agent_cmd_rsh(struct agent_opts *o, char *err, size_t errlen);

/*
 * hosts / rsh: the peers of rendezvous.json. One entry per peer; strings
 * validated. 0, -ENOENT (no file), GX_EUSAGE (unreadable / malformed).
 */
struct rsh_peer {
	char name[254];
	char addr[46];	  /* secondary: IPv4, else IPv6 */
	char primary[46]; /* "" unknown */
	long slots;
	int serves;
};
int agent_rsh_peers_load(const char *path, struct rsh_peer **ret, size_t *n, long *port, char *err,
			 size_t errlen);
struct agent_domain;
/* HOST (a peer's name in a form that resolves to it from this pod: agent_host_names with
 * this pod's domain d, NULL unknown; or any of its addresses) -> its entry, or NULL. */
const struct rsh_peer *agent_rsh_peer_find(const struct rsh_peer *p, size_t n, const char *host,
					   const struct agent_domain *d);

#endif
