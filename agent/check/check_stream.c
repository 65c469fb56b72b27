/* SPDX-License-Identifier: MIT */
/*
 * check_stream.c - throughput between two pods (the preflight, agent/preflight): a STREAM
 * of N bytes to a target's check service, which reads and drops them and answers
 * STREAMED once all came. One stream at a time from a pod, so that its figure is its
 * own path's and not a share of its link; each from the same source address, device
 * binding and route as the echo probe before it (check_probe.c). A slow link is measured,
 * not waited for: after bound_ms the stream stops and what the peer's kernel acknowledged
 * (tcp_info's bytes_acked, not what sat in our send buffer) over the time is the figure.
 * The connection is a gx_frame: the STREAM header alone, then its zeros raw, and the answer
 * read through stream_fmt, which takes a STREAMED and nothing else.
 */
#include "agent/check/check_int.h"

#include <errno.h>
#include <linux/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define ST_CONNECT_MS 2000
#define ST_CHUNK 65536

enum st_state {
	ST_IDLE = 0,
	ST_CONNECT,
	ST_SEND,
	ST_WAIT, /* all written: the STREAMED answer */
};

struct check_st {
	struct check_net *n;
	void (*done)(struct check_net *n);
	uint32_t *order; /* targets in ring order from this pod */
	size_t norder, next;
	uint32_t to;
	struct gx_frame f; /* the STREAM out (header, then its zeros raw), the STREAMED back */
	enum st_state state;
	int64_t total, sent, t0, bound_ms;
	int reps, nrep, got, again; /* best of reps streams to one target (one that finished) */
	uint64_t timer, end_timer;
};

static unsigned char zeros[ST_CHUNK]; /* bss: in no file */

/* What a prober reads: the STREAMED answer (its length is bounded to 8 by the header's
 * reader); anything else is no check service's answer to a STREAM. */
static int stream_decode(struct gx_frame *f, const unsigned char *hdr, unsigned *type, size_t *blen)
{
	uint32_t len = 0;
	int t = 0, rc = agent_check_hdr_get(hdr, &t, &len);

	(void)f;
	if (rc < 0)
		return rc;
	if (t != CHECK_STREAMED)
		return GX_EPROTO;
	*type = (unsigned)t;
	*blen = len;
	return 0;
}

static const struct gx_frame_fmt stream_fmt = {
    .hdr_len = CHECK_HDR_LEN,
    .decode = stream_decode,
    .encode = agent_check_frame_encode,
};

static void st_next(struct check_st *st);

static void st_close(struct check_st *st)
{
	if (st->f.fd >= 0)
		gx_ev_del(st->n->ev, st->f.fd);
	gx_frame_reset(&st->f); /* closes; a chunk still queued is dropped */
	gx_ev_timer_cancel(st->n->ev, st->timer);
	st->timer = 0;
}

/* The result into the target's TCP probe of this pod's row. */
static void st_result(struct check_st *st, int64_t bytes, int64_t us, const char *why)
{
	struct check_world *w = st->n->pw ? st->n->pw : st->n->w;
	struct check_row *row = &w->rows[st->n->self];
	struct check_probe *p = NULL;
	size_t k;

	for (k = 0; k < row->nprobes && !p; k++)
		if (row->probes[k].to == st->to && row->probes[k].proto == CHECK_TCP &&
		    !row->probes[k].rail)
			p = &row->probes[k];
	us = us > 0 ? us : 1;
	if (p && why && !st->got) {
		p->ok = 0;
		gx_strlcpy(p->why, why, sizeof(p->why));
	} else if (p && !why &&
		   (!st->got ||
		    (double)bytes / (double)us > (double)p->bytes / (double)p->stream_us)) {
		p->bytes = bytes;
		p->stream_us = us;
		st->got = 1;
	}
	/* a stream that finished before the bound may have met a stalled process: again (a
	 * slow path is not, each would take the bound) */
	st->again = !why && bytes == st->total && ++st->nrep < st->reps;
	gx_debug("check: stream -> %s: %s%lld bytes in %lld us", st->n->w->names[st->to],
		 why ? why : "", (long long)bytes, (long long)us);
	st_close(st);
	st->state = ST_IDLE;
	st_next(st);
}

/* The time bound: the bytes the peer acknowledged so far are the figure. */
static void st_bound(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct check_st *st = arg;
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);
	int64_t acked = 0;

	(void)ev;
	(void)id;
	st->timer = 0;
	if (st->state == ST_CONNECT) {
		st_result(st, 0, 0, "stream: connect timeout");
		return;
	}
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(st->f.fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0)
		acked = (int64_t)ti.tcpi_bytes_acked - CHECK_HDR_LEN;
	if (acked <= 0)
		st_result(st, 0, 0, "stream stalled");
	else
		st_result(st, acked > st->total ? st->total : acked, gx_now_us() - st->t0, NULL);
}

/*
 * The zeros, a chunk at a time, each handed over only once the one before it is all written:
 * gx_frame writes it straight from zeros, keeps what a full socket did not take (less than a
 * chunk) and EPOLLOUT flushes that first. st->sent counts what was handed over.
 */
static void st_send(struct check_st *st)
{
	int rc = gx_frame_flush(&st->f);
	size_t want;

	while (rc == 0 && st->sent < st->total) {
		want = (size_t)(st->total - st->sent) < ST_CHUNK ? (size_t)(st->total - st->sent)
								 : ST_CHUNK;
		rc = gx_frame_send_raw(&st->f, zeros, want);
		if (rc == 0) {
			st->sent += (int64_t)want;
			rc = gx_frame_pending(&st->f) > 0;
		}
	}
	if (rc < 0) {
		st_result(st, 0, 0, agent_check_errno_why(rc));
		return;
	}
	if (rc > 0)
		return; /* the socket is full: EPOLLOUT */
	st->state = ST_WAIT;
	gx_ev_mod(st->n->ev, st->f.fd, EPOLLIN);
}

static void st_read(struct check_st *st)
{
	unsigned char *body = NULL;
	unsigned type = 0;
	size_t len = 0;
	int rc = gx_frame_read(&st->f, &type, &body, &len);

	free(body);
	if (rc == 0)
		return;
	if (rc == GX_EPROTO || rc == GX_EVERSION) {
		st_result(st, 0, 0, "bad stream answer");
		return;
	}
	if (rc < 0) {
		st_result(st, 0, 0, agent_check_errno_why(rc));
		return;
	}
	st_result(st, st->total, gx_now_us() - st->t0, NULL);
}

static void st_io(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct check_st *st = arg;
	int rc;

	(void)ev;
	(void)fd;
	if (st->state == ST_CONNECT) {
		rc = gx_sock_error(st->f.fd);
		if (rc == 0 && !(events & EPOLLOUT))
			return;
		/* 12 bytes into an empty send buffer: written at once */
		if (rc == 0)
			rc = gx_frame_send_hdr(&st->f, CHECK_STREAM, (size_t)st->total);
		if (rc < 0) {
			st_result(st, 0, 0, agent_check_errno_why(rc));
			return;
		}
		st->state = ST_SEND;
		st->t0 = gx_now_us(); /* the stream's clock, after the handshake */
		gx_ev_timer_cancel(st->n->ev, st->timer);
		st->timer = gx_ev_timer(st->n->ev, st->bound_ms, st_bound, st);
	}
	if (st->state == ST_SEND && (events & EPOLLOUT))
		st_send(st);
	else if (st->state == ST_WAIT && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		st_read(st);
}

static void st_all_done(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct check_st *st = arg;

	(void)ev;
	(void)id;
	st->end_timer = 0;
	if (st->done)
		st->done(st->n);
}

static void st_next(struct check_st *st)
{
	struct check_net *n = st->n;
	union gx_sockaddr src, dst;
	socklen_t slen, dlen;
	const char *why;
	int rc;

	while (st->again || st->next < st->norder) {
		if (!st->again) {
			st->to = st->order[st->next++];
			st->got = st->nrep = 0;
		}
		st->again = 0;
		st->sent = 0;
		why = agent_check_addrs(n, st->to, &src, &slen, &dst, &dlen);
		if (why) {
			st_result(st, 0, 0, why);
			return;
		}
		rc = agent_check_connect(n->ifname, &src, slen, &dst, dlen, &st->f.fd);
		if (rc == 0 && (rc = gx_ev_add(n->ev, st->f.fd, EPOLLOUT, st_io, st)) < 0)
			gx_frame_reset(&st->f);
		if (rc < 0) {
			st_result(st, 0, 0, agent_check_errno_why(rc));
			return;
		}
		st->state = ST_CONNECT;
		st->timer = gx_ev_timer(n->ev, ST_CONNECT_MS, st_bound, st);
		return;
	}
	/* from a timer: the caller may free what it likes then */
	if (!st->end_timer)
		st->end_timer = gx_ev_timer(n->ev, 0, st_all_done, st);
}

int agent_check_streams_start(struct check_net *n, int64_t bytes, int64_t bound_ms, int reps,
			      void (*done)(struct check_net *n))
{
	const struct check_world *w = n->pw ? n->pw : n->w;
	const struct check_row *row = &w->rows[n->self];
	struct check_st *st;
	size_t k;

	agent_check_streams_stop(n);
	st = calloc(1, sizeof(*st));
	if (!st || !(st->order = calloc(row->nprobes + 1, sizeof(*st->order)))) {
		free(st);
		return -ENOMEM;
	}
	st->n = n;
	gx_frame_init(&st->f, -1, &stream_fmt, NULL, st);
	st->done = done;
	st->total = bytes < CHECK_STREAM_MAX ? bytes : CHECK_STREAM_MAX;
	st->bound_ms = bound_ms;
	st->reps = reps > 0 ? reps : 1;
	/* the targets of this pod's passed TCP probes, in the order they were probed */
	for (k = 0; k < row->nprobes; k++)
		if (row->probes[k].proto == CHECK_TCP && !row->probes[k].rail && row->probes[k].ok)
			st->order[st->norder++] = row->probes[k].to;
	n->st = st;
	st_next(st);
	return 0;
}

void agent_check_streams_stop(struct check_net *n)
{
	struct check_st *st = n->st;

	if (!st)
		return;
	st_close(st);
	gx_ev_timer_cancel(n->ev, st->end_timer);
	free(st->order);
	free(st);
	n->st = NULL;
}
