/* SPDX-License-Identifier: MIT */
/*
 * run_serve.c - remote exec in the run pipeline (MPI without sshd; opt-in):
 * a serving pod flags its JOIN, keeps its rendezvous session for the job-end
 * notice and answers `gxboot rsh` on its secondary address (port + 2); the
 * coordinator or observer that runs mpirun hands it `<self> rsh` as the
 * remote shell when every other peer serves, stays as CMD's parent, and tells
 * the servers the job's status when CMD exits, so their pods complete.
 */
#include "agent/launch/launch.h"
#include "agent/pipeline/out_int.h"
#include "agent/remote/remote.h"
#include "agent/pipeline/run_int.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#define DRAIN_MS 3000 /* session groups killed, END flushed */

int agent_run_serve_before_meet(struct agent_run *r, char *err, size_t errlen)
{
	r->serving = r->o->cmd == AGENT_CMD_SERVE || r->o->serve;
	if (!r->serving)
		return 0;
	if (!r->token.len) {
		snprintf(err, errlen,
			 "serving remote exec needs a token (--token-file or GXBOOT_TOKEN): "
			 "without one anybody could run commands in this pod");
		return GX_EUSAGE;
	}
	if (r->peers.observer) {
		snprintf(err, errlen,
			 "an observer (not in the peer list) cannot serve remote exec");
		return GX_EUSAGE;
	}
	r->self_flags |= RDZV_PF_SERVES;
	return 0;
}

/* Every peer but us serves (we know the table: coordinator, observer, --full-table). */
static int peers_serve(const struct agent_run *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->res.ntable; i++) {
		if (!r->peers.observer && (int)i == r->res.rank)
			continue;
		if (!(r->res.table[i].flags & RDZV_PF_SERVES))
			return 0;
		n++;
	}
	return n > 0;
}

void agent_run_serve_after_meet(struct agent_run *r)
{
	char self[PATH_MAX];
	ssize_t n;

	if (!r->token.len || !(r->serving || peers_serve(r)))
		return;
	if (agent_rsh_key_derive(r->token.data, r->token.len, r->job_id, r->rsh_key) < 0)
		return;
	r->have_rsh_key = 1;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	snprintf(r->rsh_agent, sizeof(r->rsh_agent), "%s rsh", self);
	snprintf(r->rsh_key_file, sizeof(r->rsh_key_file), "%s/rsh.key", r->o->out);
}

int agent_run_serve_write_key(struct agent_run *r, char *err, size_t errlen)
{
	long port = (r->port ? r->port : r->o->port) + RSH_PORT_OFFSET;
	char text[RSH_KEY_TEXT_MAX];
	int dfd, n, rc;

	if (!r->have_rsh_key)
		return 0;
	dfd = agent_run_out(r, err, errlen);
	if (dfd < 0)
		return dfd;
	n = agent_rsh_key_text(r->rsh_key, port, text, sizeof(text));
	if (n < 0)
		return n;
	/* the key opens every serving pod of this job: its owner alone reads it */
	rc = agent_write_file_at(dfd, r->o->out, "rsh.key", text, (size_t)n, 0600, err, errlen);
	sodium_memzero(text, sizeof(text));
	return rc;
}

int agent_run_needs_supervisor(const struct agent_run *r)
{
	if (r->serving)
		return 1;
	return r->have_rsh_key && (r->coord || r->peers.observer);
}

void agent_run_ended(void *arg, int status, const char *why)
{
	struct agent_run *r = arg;

	if (r->ended)
		return;
	r->ended = 1;
	r->end_status = status;
	if (why)
		gx_strlcpy(r->end_why, why, sizeof(r->end_why));
	if (status >= 0)
		gx_info("the job ended with status %d", status);
}

/* ---- the supervisor's hooks ---- */
struct ctl {
	struct agent_run *r;
	struct agent_serve *sv;
	int told;	  /* END sent */
	int64_t drain_by; /* 0 = not draining */
	int status;
};

static void reaped(void *arg, pid_t pid, int status)
{
	struct ctl *c = arg;

	if (!agent_serve_reaped(c->sv, pid, status))
		gx_debug("reaped zombie %d", (int)pid);
}

static int owns(void *arg, pid_t pid)
{
	struct ctl *c = arg;

	return agent_serve_owns(c->sv, pid);
}

/* The coordinator tells the members, an observer the coordinator. */
static void tell_end(struct ctl *c, int status)
{
	if (c->told)
		return;
	c->told = 1;
	if (c->r->coord)
		rdzv_coord_end(c->r->coord, status);
	else if (c->r->peers.observer)
		rdzv_member_end(c->r->member, status);
}

static int drained(const struct ctl *c)
{
	if (gx_now_ms() >= c->drain_by)
		return 1;
	return agent_serve_running(c->sv) == 0 && rdzv_coord_flushed(c->r->coord) &&
	       rdzv_member_flushed(c->r->member);
}

static void start_drain(struct ctl *c, int status)
{
	c->status = status;
	tell_end(c, status);
	agent_serve_shutdown(c->sv);
	c->drain_by = gx_now_ms() + DRAIN_MS;
}

/* serve only: END, a dropped session or a stop signal ends it */
static int stop(void *arg, int signo, int *code)
{
	struct ctl *c = arg;
	struct agent_run *r = c->r;

	if (!c->drain_by) {
		if (signo)
			start_drain(c, 128 + signo);
		else if (r->ended) /* a dropped session (status -1) is a failure, not errno */
			start_drain(c, r->end_status >= 0 ? r->end_status : GX_ERDZV);
		else if (agent_fabric_gated(r->fabric)) /* its sessions were told SIGTERM */
			start_drain(c, gx_exit_code(GX_EFABRIC));
		else
			return 0;
	}
	if (!drained(c))
		return 0;
	*code = c->status;
	return 1;
}

/* after CMD: only the drain */
static int drain_stop(void *arg, int signo, int *code)
{
	struct ctl *c = arg;

	(void)signo;
	if (!drained(c))
		return 0;
	*code = c->status;
	return 1;
}

/*
 * A server's session to the coordinator ended before END. A coordinator that
 * keeps its sessions (RDZV_PF_STAYS: --serve, --supervise, PID 1) lost it (pod
 * deleted, node gone); any other closes them when its rendezvous is done.
 */
static void dropped_line(const struct agent_run *r, char *err, size_t errlen)
{
	if (r->res.coord.flags & RDZV_PF_STAYS)
		snprintf(err, errlen, "the coordinator's session dropped before the job ended: %s",
			 r->end_why);
	else
		snprintf(err, errlen,
			 "the coordinator's session ended after the rendezvous: %s is not serving "
			 "(run the coordinator with --serve, --supervise or as PID 1)",
			 r->peers.names[0]);
}

static int serve_start(struct agent_run *r, struct ctl *c, char **envp, char *err, size_t errlen)
{
	struct agent_serve_cfg cfg;

	if (!r->serving)
		return 0;
	memset(&cfg, 0, sizeof(cfg));
	cfg.addr4 = r->nd->addr4;
	cfg.addr6 = r->nd->addr6;
	cfg.port = (uint16_t)((r->port ? r->port : r->o->port) + RSH_PORT_OFFSET);
	cfg.key = r->rsh_key;
	cfg.envp = envp;
	/* the addresses that keep their pre-authentication slots (strangers cannot push
	 * them out): the table when
	 * this pod has it, else at least the coordinator's (a member without the table
	 * counted every client as a stranger, and a stranger's churn through the shared
	 * unknown slots then reset the coordinator's first rsh: case_rsh_flood) */
	cfg.table = r->res.table ? r->res.table : &r->res.coord;
	cfg.ntable = r->res.table ? r->res.ntable : 1;
	return agent_serve_start(r->ev, &cfg, &c->sv, err, errlen);
}

int agent_run_serve_supervise(struct agent_run *r, char **argv, char **envp, char *err,
			      size_t errlen)
{
	struct ctl c = {.r = r};
	struct agent_sup_hooks h = {.reaped = reaped, .owns = owns, .stop = stop, .arg = &c};
	int rc;

	rc = serve_start(r, &c, envp, err, errlen);
	if (rc == 0)
		rc = agent_run_fabric_start(r, err, errlen);
	if (rc < 0)
		goto out;
	rc = agent_supervise(r->ev, argv, envp, &h);
	if (rc < 0 && c.status != GX_ERDZV) /* the loop failed, not the session */
		goto out;
	if (argv) { /* CMD exited: its last fabric line and report first */
		rc = agent_run_fabric_finish(r, rc, err, errlen);
		if (rc == GX_EFABRIC)
			rc = gx_exit_code(GX_EFABRIC); /* the job's status for END */
	}
	if (argv) { /* CMD exited with rc: tell, then drain */
		start_drain(&c, rc);
		h.stop = drain_stop;
		h.all_signals = 1; /* a SIGALRM must not end gxboot before its sessions' commands */
		if (agent_supervise(r->ev, NULL, envp, &h) < 0)
			gx_debug("drain after CMD failed");
	}
	rc = c.status;
	if (rc == GX_ERDZV)
		dropped_line(r, err, errlen);
	if (!argv || agent_fabric_gated(r->fabric)) /* serve: its last line after the drain */
		rc = agent_run_fabric_finish(r, rc, err, errlen);
out:
	agent_serve_free(c.sv);
	return rc;
}

/* ---- `serve` after `init`: no second rendezvous ---- */

/*
 * 1 when --out/rendezvous.json is this run's: this job's id, written by
 * `init` (which every init-container run repeats first). A file another
 * command wrote (an earlier `serve` or run with a reused --out) or another
 * job's: 0, meet again (never serve another run's table).
 */
static int init_done(const struct agent_run *r)
{
	const char *id, *by, *round;
	char path[4200];
	json_error_t je;
	json_t *j;
	int ok = 0;

	if (agent_out_failed_refuse(r->o->out, path, sizeof(path)) < 0) {
		gx_warn("%s: meeting again", path); /* init failed: its files are gone */
		return 0;
	}
	snprintf(path, sizeof(path), "%s/rendezvous.json", r->o->out);
	j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return 0;
	id = json_string_value(json_object_get(j, "job_id"));
	by = json_string_value(json_object_get(j, "written_by"));
	round = json_string_value(json_object_get(j, "round"));
	if (!id || strcmp(id, r->job_id) != 0)
		gx_warn("%s belongs to another job (%s): meeting again", path, id ? id : "no id");
	else if (!by || strcmp(by, "init") != 0)
		gx_warn("%s is left from an earlier '%s' of this job (round %s), not from 'init': "
			"meeting again",
			path, by && gx_safe_text(by, 16) ? by : "gxboot",
			round && gx_safe_text(round, 16) ? round : "unknown");
	else
		ok = 1;
	json_decref(j);
	return ok;
}

int agent_run_serve_after_init(struct agent_run *r, char *err, size_t errlen)
{
	struct agent_env file = {0}, merged = {0};
	char path[4200], **envp = NULL;
	int rc;

	if (r->o->cmd != AGENT_CMD_SERVE || !init_done(r))
		return 1;
	if (r->nd_rc < 0) {
		snprintf(err, errlen, "%s", r->nd_err);
		return r->nd_rc;
	}
	gx_info("serving after init: %s/rendezvous.json is this job's init, no second rendezvous",
		r->o->out);
	rc = agent_rsh_key_derive(r->token.data, r->token.len, r->job_id, r->rsh_key);
	agent_token_free(&r->token);
	if (rc < 0)
		return rc;
	r->have_rsh_key = 1;
	snprintf(path, sizeof(path), "%s/env", r->o->out);
	rc = agent_env_load(path, &file, err, errlen);
	if (rc == 0)
		rc = agent_env_merge(&file, environ, 0, &merged);
	if (rc == 0)
		rc = agent_env_apply(&merged, &envp);
	if (rc == 0)
		rc = gx_ev_new(&r->ev);
	if (rc == 0)
		rc = agent_run_serve_write_key(r, err, errlen);
	if (rc == 0) /* no session to the coordinator: a stop signal ends it */
		rc = agent_run_serve_supervise(r, NULL, envp, err, errlen);
	agent_envp_free(envp);
	agent_env_free(&file);
	agent_env_free(&merged);
	return rc;
}
