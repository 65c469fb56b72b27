/* SPDX-License-Identifier: MIT */
/* run_int.h - the commands that meet peers: run, init, serve; exec; the job token. */
#ifndef AGENT_RUN_INT_H
#define AGENT_RUN_INT_H

#include "agent/agent.h"
#include "agent/pipeline/pipeline.h"
#include "agent/fabric/fabric.h"
#include "agent/peers/peers.h"
#include "netdetect/netdetect.h"
#include "rdzv/gx/gx.h"
#include "rdzv/rdzv.h"
#include "rdzv/rdma/rdzv_rdma.h"

struct agent_token {
	unsigned char *data; /* NULL = no token */
	size_t len;
};

/* Load the token (--token-file or GXBOOT_TOKEN, which is then removed from environ). */
int agent_token_load(const struct agent_opts *o, struct agent_token *t, char *err, size_t errlen);
void agent_token_free(struct agent_token *t);
/* Estimated secret bits of a token (a weak token is warned about): the characters that repeat
 * neither of the two before them x the bits per character of its alphabet (hex 4, base64 6, else
 * 8), capped by length x its empirical Shannon entropy; a drawn-looking token of one-case hex (4
 * bits a character) or standard base64 of 16+ bytes (6 bits) gets full credit. */
int agent_token_bits(const unsigned char *t, size_t len);
/* The relay tree: past this many pods, members join through relays of F. */
#define AGENT_RELAY_WORLD 8192
#define AGENT_RELAY_FANOUT 256
#define AGENT_TOKEN_MIN_BITS 128
#define AGENT_TOKEN_RAW 32
#define AGENT_TOKEN_TEXT_LEN 45 /* 44 base64 characters and the NUL */
#define AGENT_TOKEN_DRAWS 16
/* Fill text with base64 of AGENT_TOKEN_RAW bytes from fill, drawn again while the token would be
 * refused (at most AGENT_TOKEN_DRAWS draws, else -EAGAIN and text zeroed); -ENOBUFS if
 * textlen < AGENT_TOKEN_TEXT_LEN. */
int agent_token_draw(void (*fill)(void *buf, size_t len), char *text, size_t textlen);

/*
 * The pipeline shared by run, init, check and serve. prepare: peers, job id,
 * token, netdetect (its failure is kept in nd_rc / nd_err: a pod still meets
 * and reports it, so that everyone names it). meet: the rendezvous in r->ev. free: all of it.
 */
/*
 * ---- run_rdma.c: was RDMA-CM really exercised? (`--rdma require`) ----
 * The facts after a successful rendezvous; strings non-NULL ("" when unknown).
 */
struct agent_rdma_facts {
	int mode;	 /* enum agent_rdma_mode (--rdma) */
	int have_dev;	 /* this pod's iface has a usable RDMA device */
	const char *dev; /* its name */
	int is_coord;
	int ctx_rc;		/* the RDMA-CM context: 0, or why none was made */
	const char *listen_err; /* coordinator: its RDMA-CM listen failure, "" none */
	unsigned members;	/* coordinator: the other pods (world - 1) */
	unsigned answered;	/* coordinator: members whose connect + send/recv it answered */
	int verified;		/* member: its connect + send/recv to the coordinator passed */
	int64_t verify_us;	/* member: what that took (resolve .. send/recv); <0 unknown */
	int coord_has_dev;	/* member: the coordinator announced an RDMA device */
	const char *coord_name, *coord_dev;
};
struct agent_rdma_verdict {
	int state; /* -1: nothing to verify (no device, --rdma off); 0: not verified; 1: verified */
	int fail_rc;   /* --rdma require and not verified: GX_ENORDMA (exit 4, local cause) or
			  GX_ERDZV (exit 5); else 0 */
	char why[400]; /* one line: what passed, or why not */
};
void agent_rdma_verdict(const struct agent_rdma_facts *f, struct agent_rdma_verdict *v);
/*
 * 1 when an RDMA device port serves the bootstrap interface but gxboot uses TCP for a
 * reason NCCL would hit too (memlock below what verbs need without IPC_LOCK, the device
 * unusable, the port down): netdetect's result nd (NULL: none), mode = --rdma.
 */
int agent_rdma_unusable(const struct nd_result *nd, int mode);
/*
 * The fabric gate per HCA (NCCL gets only the rails that passed): hca ("dev:port,...", netdetect's
 * rails) with the rails that did not verify left out: a member's rail whose RDMA-CM probe to the
 * coordinator's rail of the same interface failed or had no partner; a coordinator's rail
 * with no listener or no member verified on it. The bootstrap rail always stays (the
 * rendezvous failed otherwise). *gid: a member's SGID index that carried every kept rail's
 * probe (-1 when they differ; untouched when none is known). dropped: "net2 (rxe4): why; ...".
 * Returns the number left out, -ENOSPC when out is too small.
 */
int agent_rdma_gate(const char *hca, const struct rdzv_rdma_rail *rails, size_t n, int is_coord,
		    char *out, size_t cap, int *gid, char *dropped, size_t dcap);

struct agent_run {
	struct agent_opts *o;
	struct agent_peers peers;
	struct agent_token token;
	struct nd_result *nd;
	struct nd_routes *routes; /* the kernel's route answers (rdzv_config.route), lazily */
	int routes_off;		  /* netlink refused: no route check (warned once) */
	int nd_rc;
	char nd_err[512];
	char job_id[130];
	char hostname[256];
	/* member: the coordinator's name and what DNS said of it */
	const char *coord_lookup;
	int64_t first_nxdomain_ms;
	int ever_resolved;
	int coord_asked; /* its name was looked up (a member behind a relay may never) */
	int dns_hint_shown;
	union gx_sockaddr coord_primary;
	int64_t coord_resolved_ms; /* when coord_primary was last answered */
	struct gx_ev *ev;
	struct rdzv_coord *coord;
	struct rdzv_member *member;
	struct agent_dns *dns; /* the coordinator's name being looked up, or NULL */
	int coord_as_given;    /* NXDOMAIN for coord_fqdn: try names[0] as written next */
	/* the relay tree: our relay's name as looked up, and its lookup */
	long relay_fanout; /* GXBOOT_RELAY_FANOUT, -1 unset (then past AGENT_RELAY_WORLD: F) */
	char *relay_lookup;
	struct agent_dns *rdns;
	union gx_sockaddr relay_addr; /* its last answer (asked for with our port) */
	size_t relay_idx;	      /* its index in peers.names */
	int relay_as_given;	      /* NXDOMAIN for our guess of its full name: as written */
	int64_t relay_resolved_ms;
	int relay_asked, relay_ever_resolved; /* a relay's name was looked up / answered */
	struct rdzv_result res;
	struct rdzv_peer self;
	int rdzv_rc;
	int rdzv_done;
	/* set by the caller between prepare and meet (check, serve) */
	long port;	 /* rendezvous port; 0 = --port */
	int soft_verify; /* rdzv_config.soft_verify (check) */
	int full_table;	 /* ask for every entry even without --full-table */
	const struct rdzv_rdma_ops *rdma;
	struct rdzv_rdma_ctx *rdma_ctx;	  /* RDMA-CM verification, owned */
	int rdma_ctx_rc;		  /* why rdma_ctx could not be made */
	struct agent_rdma_verdict rdma_v; /* RDMA verified or not, and why */
	int rdma_gated;			  /* rdma_hca / rdma_gid replace netdetect's */
	char rdma_hca[1024];		  /* the rails that verified (NCCL_IB_HCA) */
	int rdma_gid;			  /* NCCL_IB_GID_INDEX that carried the traffic */
	char rdma_dropped[1024];	  /* the rails left out, and why */
	uint32_t self_flags;		  /* RDZV_PF_* added to our JOIN (serve: RDZV_PF_SERVES) */
	/* remote exec (run_serve.c) */
	int serving;		   /* serve / --serve */
	unsigned char rsh_key[32]; /* derived from the token for "rsh:<job id>" */
	int have_rsh_key;
	char rsh_agent[4200];	 /* "<this binary> rsh" when the peers serve, else "" */
	char rsh_key_file[4200]; /* --out/rsh.key when written */
	int ended, end_status;	 /* the job-end notice (END; -1: session dropped) */
	int files_written;	 /* --out holds this run's files (table refreshes) */
	int out_fd, out_open;	 /* --out, opened once (agent_out_open): every write is in it */
	struct agent_pf *pf;	 /* the preflight (agent/preflight), NULL: none */
	char end_why[300];
	/* run_probe.c: a pod whose --self or --peers names another coordinator */
	uint32_t relay_f;	     /* the relay tree's fan-out in use, 0 none */
	struct agent_claim *claim;   /* member: is this pod the coordinator after all? */
	struct agent_listen *listen; /* coordinator: do missing peers listen as one? */
	int claim_rc;		     /* GX_EUSAGE once the claim is proven */
	char claim_why[2048];
	/* the transport watcher (run_fabric.c, agent/fabric/FABRIC.md) */
	struct agent_fabric *fabric;
	struct fabric_summary *fabric_early; /* coordinator: reports before it started */
	struct fabric_libvars fabric_lib;    /* the library variables CMD got from us */
	int fabric_lib_set;
};

int agent_run_prepare(struct agent_run *r, struct agent_opts *o, char *err, size_t errlen);
int agent_run_meet(struct agent_run *r, char *err, size_t errlen);
void agent_run_free(struct agent_run *r);

/*
 * Remote exec glue (run_serve.c). before_meet: a serving pod needs a token
 * (GX_EUSAGE) and flags its JOIN. after_meet: derive the rsh key, decide
 * whether the peers serve (then CMD's env gets the rsh agent and rsh.key is
 * written). needs_supervisor: serving, or the coordinator / an observer of
 * serving peers (it must stay to send the job-end notice). supervise: run
 * CMD (argv NULL: serve only) with the server, send / await END, drain.
 */
int agent_run_serve_before_meet(struct agent_run *r, char *err, size_t errlen);
void agent_run_serve_after_meet(struct agent_run *r);
int agent_run_serve_write_key(struct agent_run *r, char *err, size_t errlen);
/* --out's descriptor, opened (and created) at the first call: >= 0, or < 0 with err. */
int agent_run_out(struct agent_run *r, char *err, size_t errlen);
int agent_run_needs_supervisor(const struct agent_run *r);
int agent_run_serve_supervise(struct agent_run *r, char **argv, char **envp, char *err,
			      size_t errlen);
/* serve after init: 1 = not that case (meet as usual), else the command's result. */
int agent_run_serve_after_init(struct agent_run *r, char *err, size_t errlen);
/* rdzv_config.ended for the member / coordinator of this run. */
void agent_run_ended(void *arg, int status, const char *why);
/* Peer i's name to look up (run_state.c): qualified as the coordinator's is, its full name with the
 * listed name replaced (one headless Service); as listed with as_given, for an IP, or when the
 * coordinator's name is used as given. */
void agent_peer_lookup(const struct agent_run *r, size_t i, int as_given, char *buf, size_t cap);
/*
 * run_probe.c: a pod whose --self or --peers names another coordinator than its peers'.
 * agent_claims_coord: this member's host name is its list's first entry (the coordinator's)
 * and not its own entry. agent_claim_watch (each answer for the coordinator's name): when
 * that holds and the answer is an address of this pod's, connect there until something
 * listens; refused for 2 s proves the claim (claim_rc, claim_why; the meeting stops).
 * agent_listen_progress (coordinator, each progress line): connect to a few of the peers
 * the line lists on the rendezvous port, at most one round per 30 s. agent_listen_final
 * (after the meeting failed with rc): at GX_EPEERS a last round (bounded, ~3 s), then the
 * peers that accepted are named in err. agent_line_lists: name is an item of a list line
 * ("...: a, b (why), c"). agent_probes_stop ends what is out; free releases it all.
 */
int agent_claims_coord(const struct agent_peers *p, const char *hostname);
void agent_claim_watch(struct agent_run *r, const union gx_sockaddr *sa, socklen_t len);
void agent_listen_progress(struct agent_run *r, const char *line);
void agent_listen_final(struct agent_run *r, int rc, char *err, size_t errlen);
int agent_line_lists(const char *line, const char *name);
void agent_probes_stop(struct agent_run *r);
void agent_probes_free(struct agent_run *r);

/*
 * The transport watcher (run_fabric.c). reports: this pod watches and reports (it supervises
 * CMD or serves; --expect-fabric off: never). rdzv: a member that reports keeps its session
 * (cfg.stay, RDZV_PF_FABRIC) unless it joins through a relay; the coordinator takes reports.
 * env: the NCCL / UCX log variables the user left unset. start: before CMD (GX_EFABRIC for
 * --expect-fabric rdma without a verified rail). finish: after CMD; GX_EFABRIC with the line
 * when the gate ended the job, else rc.
 */
int agent_run_fabric_reports(const struct agent_run *r);
void agent_run_fabric_rdzv(struct agent_run *r, struct rdzv_config *cfg);
struct agent_env;
int agent_run_fabric_env(struct agent_run *r, struct agent_env *env);
int agent_run_fabric_start(struct agent_run *r, char *err, size_t errlen);
int agent_run_fabric_finish(struct agent_run *r, int rc, char *err, size_t errlen);
/* gxboot exec (cmd_exec.c): 1 when gxboot itself writes the variable name. */
int agent_exec_var_allowed(const char *name);
/* --out is this user's own directory (or root's), not a symlink, where no other user can
 * move it (agent_out_open), and its env file when present is ours, not group/world-writable:
 * 0, else GX_EUSAGE with the line in err. */
int agent_exec_out_check(const char *out, char *err, size_t errlen);

#endif
