/* SPDX-License-Identifier: MIT */
/* run_int.h - the commands that meet peers: run, init, serve; exec; the job token. */
#ifndef AGENT_RUN_INT_H
#define AGENT_RUN_INT_H

#include "agent/agent.h"
#include "agent/peers_int.h"
#include "netdetect/netdetect.h"
#include "rdzv/gx.h"
#include "rdzv/rdzv.h"

struct agent_token {
	unsigned char *data; /* NULL = no token */
	size_t len;
};

/* Load the token (--token-file or GXBOOT_TOKEN, which is then removed from environ). */
int agent_token_load(const struct agent_opts *o, struct agent_token *t, char *err, size_t errlen);
void agent_token_free(struct agent_token *t);
/* Estimated secret bits of a token (issue 25): the characters that repeat neither of the
 * two before them x the bits per character of its alphabet (hex 4, base64 6, else 8),
 * capped by length x its empirical Shannon entropy. */
int agent_token_bits(const unsigned char *t, size_t len);
#define AGENT_TOKEN_MIN_BITS 128
/* gxboot token: 32 random bytes (randombytes_buf), base64, on stdout. */
int agent_cmd_token(char *err, size_t errlen);

/*
 * The pipeline shared by run, init, check and serve. prepare: peers, job id,
 * token, netdetect (its failure is kept in nd_rc / nd_err: a pod still meets
 * and reports it, DECISIONS 4). meet: the rendezvous in r->ev. free: all of it.
 */
struct agent_run {
	struct agent_opts *o;
	struct agent_peers peers;
	struct agent_token token;
	struct nd_result *nd;
	int nd_rc;
	char nd_err[512];
	char job_id[130];
	char hostname[256];
	/* member: the coordinator's name and what DNS said of it */
	const char *coord_lookup;
	int64_t first_nxdomain_ms;
	int ever_resolved;
	int dns_hint_shown;
	union gx_sockaddr coord_primary;
	struct gx_ev *ev;
	struct rdzv_coord *coord;
	struct rdzv_member *member;
	struct agent_dns *dns; /* the coordinator's name being looked up, or NULL */
	struct rdzv_result res;
	struct rdzv_peer self;
	int rdzv_rc;
	int rdzv_done;
	/* set by the caller between prepare and meet (check, serve) */
	long port;	 /* rendezvous port; 0 = --port */
	int soft_verify; /* rdzv_config.soft_verify (check) */
	int full_table;	 /* ask for every entry even without --full-table */
	const struct rdzv_rdma_ops *rdma;
	struct rdzv_rdma_ctx *rdma_ctx; /* RDMA-CM verification (issue 5), owned */
	uint32_t self_flags;		/* RDZV_PF_* added to our JOIN (serve: RDZV_PF_SERVES) */
	/* remote exec (issue 17, run_serve.c) */
	int serving;		   /* serve / --serve */
	unsigned char rsh_key[32]; /* derived from the token for "rsh:<job id>" */
	int have_rsh_key;
	char rsh_agent[4200];	 /* "<this binary> rsh" when the peers serve, else "" */
	char rsh_key_file[4200]; /* --out/rsh.key when written */
	int ended, end_status;	 /* the job-end notice (END; -1: session dropped) */
	int files_written;	 /* --out holds this run's files (table refreshes) */
	char end_why[300];
};

int agent_run_prepare(struct agent_run *r, struct agent_opts *o, char *err, size_t errlen);
int agent_run_meet(struct agent_run *r, char *err, size_t errlen);
void agent_run_free(struct agent_run *r);

/*
 * run / init: meet the peers, write the files, then (run) exec or supervise CMD.
 * Returns a GX_E* / -errno code with the one line in err, or an exit status >= 0.
 */
int agent_cmd_run(struct agent_opts *o, char *err, size_t errlen);

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
int agent_run_needs_supervisor(const struct agent_run *r);
int agent_run_serve_supervise(struct agent_run *r, char **argv, char **envp, char *err,
			      size_t errlen);
/* serve after init: 1 = not that case (meet as usual), else the command's result. */
int agent_run_serve_after_init(struct agent_run *r, char *err, size_t errlen);
/* rdzv_config.ended for the member / coordinator of this run. */
void agent_run_ended(void *arg, int status, const char *why);
/* exec: load --out/env, apply the variable rules against our environment, exec CMD. */
int agent_cmd_exec(struct agent_opts *o, char *err, size_t errlen);

#endif
