/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h - the pipeline's face: what the other folders of agent/ may use of one run
 * (prepare, meet, files, exec). A struct agent_run is opaque outside agent/pipeline/.
 */
#ifndef AGENT_PIPELINE_H
#define AGENT_PIPELINE_H

#include "agent/agent.h"
#include "rdzv/gx/gx.h"

#include <stddef.h>
#include <stdint.h>

struct agent_run;
struct nd_result;
struct nd_routes;
struct rdzv_result;

/* ---- commands ---- */
/*
 * run / init: meet the peers, write the files, then (run) exec or supervise CMD.
 * Returns a GX_E* / -errno code with the one line in err, or an exit status >= 0.
 */
int agent_cmd_run(struct agent_opts *o, char *err, size_t errlen);
/* exec: load --out/env, apply the variable rules against our environment, exec CMD. */
int agent_cmd_exec(struct agent_opts *o, char *err, size_t errlen);
/* gxboot token: AGENT_TOKEN_RAW random bytes (randombytes_buf), base64, on stdout. */
int agent_cmd_token(char *err, size_t errlen);
/* hosts: one line per peer of --out/rendezvous.json (--hostfile-format; "host:slots"). */
int agent_cmd_hosts(struct agent_opts *o, char *err, size_t errlen);

/* install: the same temp-file names as --out's writes. */
/*
 * The name of a temp file for name in --out, unique across PID namespaces and
 * hosts: ".NAME.<pid>.<pidns inode>.<boot id, 16 hex>.<us>.tmp".
 * -ENAMETOOLONG when it does not fit len.
 */
int agent_out_temp_name(char *buf, size_t len, const char *name, long long us);

/* ---- one run, for a command that meets its peers and then does its own work (check) ---- */

/* A run prepared for o (peers, netdetect, job id, token): 0 and *ret, or the error with its line;
 * *ret is set either way (agent_run_close frees it). */
int agent_run_open(struct agent_opts *o, struct agent_run **ret, char *err, size_t errlen);
void agent_run_close(struct agent_run *r);

/* What the run prepared; valid until agent_run_close (token: until agent_run_wipe_token). */
struct agent_job_view {
	const char *job_id;
	const char *source; /* where the peer list came from ("--peers", a job system) */
	char *const *names;
	size_t n, self;
	struct nd_result *nd; /* NULL when netdetect failed: nd_rc, nd_err say why */
	int nd_rc;
	const char *nd_err;
	const unsigned char *token; /* NULL: no token */
	size_t token_len;
};
void agent_run_view(const struct agent_run *r, struct agent_job_view *v);

/* The rendezvous on another port than --port, as check does it (soft verify, full table). */
struct agent_meet_opts {
	long port;
	int soft_verify; /* a pod whose secondary network fails stays in over the primary one */
	int full_table;	 /* every entry, even without --full-table */
};
int agent_run_meet_with(struct agent_run *r, const struct agent_meet_opts *mo, char *err,
			size_t errlen);
/* 1 when the rendezvous itself ended with 0 (the meeting may still have failed after it). */
int agent_run_met(const struct agent_run *r);
/* After meeting: the table, this pod's rank, the round; the run's loop; its route answers
 * (a slot the run owns: a caller may open them there when the run did not). */
const struct rdzv_result *agent_run_result(const struct agent_run *r);
struct gx_ev *agent_run_loop(const struct agent_run *r);
struct nd_routes **agent_run_routes(struct agent_run *r);
/* The token is wiped once nothing more is derived from it. */
void agent_run_wipe_token(struct agent_run *r);
/* The rendezvous is over: coordinator, member and lookup freed, so its port is free again. */
void agent_run_leave(struct agent_run *r);
/*
 * The coordinator's primary address at port: its IP as given, else what the rendezvous
 * resolved (no second DNS query), else a lookup in the run's loop (up to 5 s). 0, or the
 * error with its line.
 */
int agent_run_coord_addr(struct agent_run *r, uint16_t port, union gx_sockaddr *sa, socklen_t *len,
			 char *err, size_t errlen);
/* 1 when another process listens on TCP port (sock_diag): listeners that share a port with
 * SO_REUSEPORT (the rendezvous', check's) must not share it with another job's. */
int agent_port_shared(uint16_t port);

#endif
