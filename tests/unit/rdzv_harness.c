/* SPDX-License-Identifier: MIT */
/* rdzv_harness.c - see rdzv_harness.h. */
#include "tests/unit/rdzv_harness.h"

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

uint16_t rh_free_port(void)
{
	union gx_sockaddr sa;
	socklen_t len;
	int fd = -1;

	assert_int_equal(gx_addr_parse("127.0.0.1", 0, &sa, &len), 0);
	assert_int_equal(gx_tcp_listen(&sa, len, &fd), 0);
	len = sizeof(sa);
	assert_int_equal(getsockname(fd, &sa.sa, &len), 0);
	close(fd);
	return ntohs(sa.in4.sin_port);
}

void rh_init(struct rh *h, uint32_t n, uint32_t extra, const char *job_id,
	     const unsigned char *token, size_t token_len, int64_t deadline_ms)
{
	uint32_t i;

	memset(h, 0, sizeof(*h));
	gx_raise_nofile();
	assert_int_equal(gx_ev_new(&h->ev), 0);
	h->n = n;
	h->nslots = n + extra;
	h->names = calloc(n, sizeof(char *));
	h->s = calloc(h->nslots, sizeof(*h->s));
	assert_non_null(h->names);
	assert_non_null(h->s);
	for (i = 0; i < n; i++) {
		h->names[i] = malloc(32);
		assert_non_null(h->names[i]);
		snprintf(h->names[i], 32, "job-worker-%u", i);
	}
	for (i = 0; i < h->nslots; i++) {
		h->s[i].h = h;
		h->s[i].i = i;
	}
	h->port = rh_free_port();
	h->deadline = gx_now_ms() + deadline_ms;
	h->coord_slots = 8;
	h->base.world = n;
	h->base.names = h->names;
	h->base.job_id = job_id;
	h->base.token = token;
	h->base.token_len = token_len;
	h->base.port = h->port;
	h->base.coord_name = h->names[0];
	h->base.deadline_ms = h->deadline;
	assert_int_equal(
	    gx_addr_parse("127.0.0.1", h->port, &h->base.coord_addr, &h->base.coord_addrlen), 0);
}

void rh_free(struct rh *h)
{
	uint32_t i;

	rdzv_coord_free(h->co);
	for (i = 0; i < h->nslots; i++)
		rdzv_member_free(h->s[i].m);
	for (i = 0; i < h->n; i++)
		free(h->names[i]);
	free(h->names);
	free(h->s);
	gx_ev_free(h->ev);
}

static void count_done(struct rh *h)
{
	if (++h->ndone >= h->want && h->want > 0)
		gx_ev_stop(h->ev, 0);
}

void rh_co_done(void *arg, int rc, const struct rdzv_result *res)
{
	struct rh *h = arg;

	h->co_done++;
	h->co_rc = rc;
	h->co_res = *res;
	h->co_at = gx_now_ms();
	snprintf(h->co_err, sizeof(h->co_err), "%s", res->err);
	count_done(h);
}

void rh_m_done(void *arg, int rc, const struct rdzv_result *res)
{
	struct rh_slot *s = arg;

	s->done++;
	s->rc = rc;
	s->rank = res->rank;
	s->res = *res;
	s->ntable = res->ntable;
	s->table_named = 0;
	for (size_t r = 0; res->table && r < res->ntable && r < s->h->n; r++)
		s->table_named += strcmp(res->table[r].name, s->h->names[r]) == 0;
	s->res.table = NULL;
	s->at = gx_now_ms();
	snprintf(s->err, sizeof(s->err), "%s", res->err);
	count_done(s->h);
}

void rh_coord_cfg(struct rh *h, struct rdzv_config *cfg)
{
	*cfg = h->base;
	cfg->is_coordinator = 1;
	snprintf(cfg->self.name, sizeof(cfg->self.name), "%s", h->names[0]);
	snprintf(cfg->self.addr4, sizeof(cfg->self.addr4), "127.0.0.1");
	snprintf(cfg->self.iface, sizeof(cfg->self.iface), "lo");
	cfg->self.slots = h->coord_slots;
	cfg->self.gid_index = -1;
	cfg->deadline_ms = h->deadline;
	gx_addr_parse("127.0.0.1", 0, &cfg->listen_addr, &cfg->listen_addrlen);
}

void rh_member_cfg(struct rh *h, uint32_t i, struct rdzv_config *cfg)
{
	*cfg = h->base;
	cfg->is_coordinator = 0;
	snprintf(cfg->self.name, sizeof(cfg->self.name), "%s", h->names[i]);
	cfg->self.index = i;
	randombytes_buf(&cfg->self.incarnation, sizeof(cfg->self.incarnation));
	snprintf(cfg->self.addr4, sizeof(cfg->self.addr4), "127.0.%u.%u", (1 + i / 250) & 0xff,
		 1 + i % 250);
	snprintf(cfg->self.iface, sizeof(cfg->self.iface), "lo");
	cfg->self.slots = 1;
	cfg->self.gid_index = -1;
}

void rh_start_coord_cfg(struct rh *h, const struct rdzv_config *cfg)
{
	assert_int_equal(rdzv_coord_start(h->ev, cfg, rh_co_done, h, &h->co), 0);
}

void rh_start_member_in(struct rh *h, struct gx_ev *ev, uint32_t slot,
			const struct rdzv_config *cfg)
{
	assert_true(slot < h->nslots);
	h->s[slot].done = 0;
	assert_int_equal(rdzv_member_start(ev, cfg, rh_m_done, &h->s[slot], &h->s[slot].m), 0);
}

void rh_pump_ev(struct gx_ev *ev, int64_t ms, const int *flag)
{
	int64_t until = gx_now_ms() + ms;

	while ((!flag || !*flag) && gx_now_ms() < until)
		gx_ev_run_until(ev, gx_now_ms() + 20 < until ? gx_now_ms() + 20 : until);
}

static void rh_rdma_answer(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct rh_rdma *f = arg;

	(void)ev;
	(void)id;
	f->timer = 0;
	f->done(f->done_arg, f->rc, f->rc ? "rdma_resolve_route: timed out" : "");
}

static int rh_rdma_check(void *arg, struct gx_ev *ev, const struct rdzv_peer *self,
			 const struct rdzv_peer *coord, uint16_t port, int64_t deadline_ms,
			 rdzv_rdma_check_fn *done, void *done_arg)
{
	struct rh_rdma *f = arg;

	(void)port;
	(void)deadline_ms;
	f->calls++;
	assert_string_equal(coord->rdma_dev, "mlx5_0");
	assert_string_equal(self->rdma_dev, "mlx5_1");
	assert_int_equal(f->timer, 0); /* one at a time */
	f->ev = ev;
	f->done = done;
	f->done_arg = done_arg;
	if (!f->hang)
		f->timer = gx_ev_timer(ev, f->delay_ms, rh_rdma_answer, f);
	return 0;
}

static void rh_rdma_cancel(void *arg)
{
	struct rh_rdma *f = arg;

	f->cancels++;
	gx_ev_timer_cancel(f->ev, f->timer);
	f->timer = 0;
}

void rh_rdma_ops(struct rh_rdma *f, struct rdzv_rdma_ops *ops)
{
	memset(ops, 0, sizeof(*ops));
	ops->check = rh_rdma_check;
	ops->cancel = rh_rdma_cancel;
	ops->arg = f;
}
