/* SPDX-License-Identifier: MIT */
/*
 * rdzv_coord_out.c - what the coordinator sends and how it ends: a connection's output
 * (written, or moved into its relay's records when it is carried) and its close once
 * written, the ABORT to everyone, the job-end notice, and when the job is over and done
 * is called (PROTOCOL.md "Coordinator"). It calls only the relays' records (rdzv_carry.c)
 * and the connection below it.
 */
#include "rdzv/rdzv_coord_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>

void rdzv_co_update_out(struct rdzv_coord *co, struct cconn *cc)
{
	int want = rdzv_conn_pending(&cc->rc);

	if (cc->rc.f.carried) { /* into its relay's records (rdzv_co_input uncorks) */
		if (!cc->rc.f.cork)
			rdzv_co_carry_out(co, cc);
		return;
	}
	if (cc->rc.f.fd < 0 || cc->rc.f.cork) /* conn_event flushes, then comes back here */
		return;
	if (want != cc->out_pending) {
		cc->out_pending = want;
		if (want)
			co->nout++;
		else
			co->nout--;
	}
	/* a closing connection waits for EPOLLOUT even with nothing queued (a relay's, once
	 * shut, only for its EOF) */
	gx_ev_mod(co->ev, cc->rc.f.fd,
		  EPOLLIN | (want || (cc->rc.state == RC_CLOSING && !cc->shut) ? EPOLLOUT : 0));
}

int rdzv_co_send(struct rdzv_coord *co, struct cconn *cc, uint16_t type, const struct rdzv_buf *b)
{
	int rc = b->err;

	if (cc->is_relay && (cc->carry.len || cc->carry.err)) {
		/* its children's records first: a relay that reads its own ABORT or END
		 * stops carrying, so what was queued for them before must be ahead of it */
		rdzv_co_carry_flush(co);
	}
	if (rc == 0)
		rc = rdzv_conn_send(&cc->rc, type, b->p, b->len);
	rdzv_co_update_out(co, cc);
	return rc;
}

void rdzv_co_pa_del(struct rdzv_coord *co, struct cconn *cc)
{
	gx_pa_del(cc->rc.f.carried ? &co->pa_kids : &co->pa, &cc->pa);
}

/* Flush what is queued, then close: never frees cc here (callers iterate). */
void rdzv_co_close_later(struct rdzv_coord *co, struct cconn *cc)
{
	cc->rc.state = RC_CLOSING;
	cc->deadline = gx_now_ms() + 1000;
	rdzv_co_update_out(co, cc);
}

void rdzv_co_maybe_done(struct rdzv_coord *co)
{
	rdzv_co_carry_flush(co); /* every event ends here: the relays' records go out */
	if (!co->finishing || co->done_called)
		return;
	if (co->nout > 0 && gx_now_ms() < co->finish_by)
		return;
	if (co->linger && co->ntold + 1 < co->world && !co->deadline_passed)
		return;
	/* a COMMIT that found no live session is not "told": wait for that member to rejoin
	 * (a 512-pod check lost 120 members so, each looping on a port that had become the
	 * check service's until its --timeout) */
	if (co->committed && !co->cfg.elastic && co->ncommit_sent + 1 < co->world &&
	    !co->deadline_passed && gx_now_ms() < co->commit_wait_until) {
		if (!co->commit_wait_logged) {
			co->commit_wait_logged = 1;
			gx_debug("rdzv: done waits for %u COMMIT(s) not sent",
				 co->world - 1 - co->ncommit_sent);
		}
		return;
	}
	/* a relay ends its session once its children read their COMMITs: a close of ours
	 * before that, with its records unread here, would be a RST that loses what it has
	 * not yet read of ours (their COMMITs); bounded by the relay's own drain */
	if (co->nrelays_open && gx_now_ms() < co->relay_wait_until)
		return;
	gx_debug("rdzv: done (%u COMMITs sent, %zu connections with output)", co->ncommit_sent,
		 co->nout);
	co->done_called = 1;
	co->done(co->arg, co->final_rc, &co->res);
}

void rdzv_co_finish(struct rdzv_coord *co, int rc)
{
	if (co->finishing)
		return;
	co->finishing = 1;
	co->final_rc = rc;
	co->finish_by = gx_now_ms() + 1000;
	/* after a COMMIT or an ABORT: relays carry it to their children, then close */
	co->relay_wait_until = gx_now_ms() + RDZV_RELAY_DRAIN_MS;
}

void rdzv_co_send_abort(struct rdzv_coord *co, struct cconn *cc)
{
	struct rdzv_buf b = {0};

	rdzv_put_u32(&b, T_CODE, (uint32_t)co->abort_code);
	rdzv_put_str(&b, T_TEXT, co->res.err);
	rdzv_co_send(co, cc, RDZV_ABORT, &b);
	rdzv_buf_free(&b);
	if (cc->peer >= 0 && !co->st[cc->peer].told) {
		co->st[cc->peer].told = 1;
		co->ntold++;
	}
	rdzv_co_close_later(co, cc);
}

void rdzv_co_abort(struct rdzv_coord *co, int code, int linger, const char *fmt, ...)
{
	struct cconn *cc, *next;
	va_list ap;
	int pass;

	if (co->aborted || co->committed)
		return;
	co->aborted = 1;
	co->abort_code = code;
	co->linger = linger;
	va_start(ap, fmt);
	vsnprintf(co->res.err, sizeof(co->res.err), fmt, ap);
	va_end(ap);
	gx_debug("rdzv: abort: %s", co->res.err);
	/* relays last: their children's ABORTs go ahead of their own (rdzv_co_send) */
	for (pass = 0; pass < 2; pass++)
		for (cc = co->conns; cc; cc = next) {
			next = cc->next;
			if ((cc->role == ROLE_MEMBER || cc->role == ROLE_PENDING ||
			     cc->role == ROLE_OBSERVER) &&
			    cc->rc.state == RC_SESSION && cc->is_relay == pass)
				rdzv_co_send_abort(co, cc);
		}
	rdzv_co_finish(co, code);
}

/* ---- the job-end notice: servers exit with the job's status ---- */
int rdzv_coord_end(struct rdzv_coord *co, int status)
{
	struct cconn *cc, *next;
	struct rdzv_buf b = {0};
	int n = 0, pass;

	if (!co)
		return -ENOTCONN;
	rdzv_put_u32(&b, T_CODE, (uint32_t)(status & 0xff));
	for (pass = 0; pass < 2; pass++) /* relays last, as in rdzv_co_abort */
		for (cc = co->conns; cc; cc = next) {
			next = cc->next;
			if ((cc->role == ROLE_MEMBER || cc->role == ROLE_OBSERVER) &&
			    cc->rc.state == RC_SESSION && cc->is_relay == pass) {
				rdzv_co_send(co, cc, RDZV_END, &b);
				rdzv_co_close_later(co, cc);
				n++;
			}
		}
	rdzv_buf_free(&b);
	rdzv_co_carry_flush(co);
	return n ? 0 : -ENOTCONN;
}

int rdzv_coord_flushed(const struct rdzv_coord *co)
{
	return !co || co->nout == 0;
}

void rdzv_co_event_end(struct rdzv_coord *co)
{
	rdzv_co_maybe_done(co);
}
