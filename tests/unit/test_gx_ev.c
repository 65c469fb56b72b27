/* SPDX-License-Identifier: MIT */
/*
 * test_gx_ev.c - the event loop's generation guard: a callback that
 * closes another ready fd and registers a new one under the same number within
 * one epoll_wait batch must not see the batch's stale event reach the new owner.
 */
#include "rdzv/gx/gx.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

struct side {
	int rd, wr;
};

struct world {
	struct side s[2];
	int replaced; /* fd number that was closed and reused, -1 before */
	int old_calls, new_calls;
};

static void on_new(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct world *w = arg;

	(void)ev;
	(void)fd;
	(void)events;
	w->new_calls++;
}

/* The first ready side closes the other one and puts a fresh, idle pipe in its place. */
static void on_old(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct world *w = arg;
	int k = fd == w->s[0].rd ? 1 : 0, p[2];
	char c;

	(void)events;
	w->old_calls++;
	assert_int_equal(read(fd, &c, 1), 1);
	if (w->replaced >= 0)
		return;
	gx_ev_del(ev, w->s[k].rd);
	close(w->s[k].rd);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(p[0], w->s[k].rd); /* the lowest free number: the one just closed */
	w->s[k].rd = p[0];
	close(w->s[k].wr);
	w->s[k].wr = p[1];
	w->replaced = p[0];
	assert_int_equal(gx_ev_add(ev, p[0], EPOLLIN, on_new, w), 0);
}

static void stop_cb(struct gx_ev *ev, uint64_t id, void *arg)
{
	(void)id;
	(void)arg;
	gx_ev_stop(ev, 0);
}

static void test_stale_event_after_fd_reuse(void **state)
{
	struct world w = {.replaced = -1};
	struct gx_ev *ev = NULL;
	int k, p[2];

	(void)state;
	assert_int_equal(gx_ev_new(&ev), 0);
	for (k = 0; k < 2; k++) {
		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		w.s[k].rd = p[0];
		w.s[k].wr = p[1];
		assert_int_equal(gx_ev_add(ev, p[0], EPOLLIN, on_old, &w), 0);
	}
	/* both readable before the loop runs: one epoll_wait batch holds both events */
	for (k = 0; k < 2; k++)
		assert_int_equal(write(w.s[k].wr, "x", 1), 1);
	gx_ev_timer(ev, 100, stop_cb, NULL);
	assert_int_equal(gx_ev_run(ev), 0);
	assert_true(w.replaced >= 0);
	assert_int_equal(w.new_calls, 0); /* the new pipe was never written to */
	assert_int_equal(w.old_calls, 1); /* the closed side's event was dropped too */
	for (k = 0; k < 2; k++) {
		close(w.s[k].rd);
		close(w.s[k].wr);
	}
	gx_ev_free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stale_event_after_fd_reuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
