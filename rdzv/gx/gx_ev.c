/* SPDX-License-Identifier: MIT */
/*
 * gx_ev.c - one single-threaded epoll loop in the style of redis ae.c:
 * fd events with a user pointer, one-shot timers on the monotonic clock
 * (a binary min-heap), and a stop flag. No threads, no sleeping calls.
 */
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

struct gx_ev_fd {
	gx_ev_fd_fn *fn;
	void *arg;
	uint32_t events;
	uint32_t gen; /* which registration of this fd number (0: none) */
	int used;
};

struct gx_ev_timer {
	int64_t when;
	uint64_t id;
	gx_ev_timer_fn *fn;
	void *arg;
};

struct gx_ev {
	int epfd;
	struct gx_ev_fd *fds;
	int nfds; /* size of fds[] */
	struct gx_ev_timer *heap;
	size_t nheap, capheap;
	uint64_t next_id;
	uint32_t gen; /* the last registration's generation */
	int stop;
	int rc;
};

int gx_ev_new(struct gx_ev **ret)
{
	struct gx_ev *ev = NULL;
	int err = 0;

	ev = calloc(1, sizeof(*ev));
	if (!ev) {
		err = -ENOMEM;
		goto out;
	}
	ev->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ev->epfd < 0) {
		err = -errno;
		goto out;
	}
	ev->next_id = 1;
	*ret = ev;
	ev = NULL;
out:
	free(ev);
	return err;
}

void gx_ev_free(struct gx_ev *ev)
{
	if (!ev)
		return;
	if (ev->epfd >= 0)
		close(ev->epfd);
	free(ev->fds);
	free(ev->heap);
	free(ev);
}

static int grow_fds(struct gx_ev *ev, int fd)
{
	struct gx_ev_fd *n;
	int size = ev->nfds ? ev->nfds : 64;

	while (size <= fd)
		size *= 2;
	if (size == ev->nfds)
		return 0;
	n = realloc(ev->fds, (size_t)size * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + ev->nfds, 0, (size_t)(size - ev->nfds) * sizeof(*n));
	ev->fds = n;
	ev->nfds = size;
	return 0;
}

/*
 * The event carries the fd and its registration's generation: an fd that a
 * callback closes and a new socket that gets its number within one epoll_wait
 * batch are told apart (redis ae guards the same case), so the batch's stale
 * event never reaches the new owner.
 */
static uint64_t ev_data(const struct gx_ev *ev, int fd)
{
	return (uint64_t)ev->fds[fd].gen << 32 | (uint32_t)fd;
}

int gx_ev_add(struct gx_ev *ev, int fd, uint32_t events, gx_ev_fd_fn *fn, void *arg)
{
	struct epoll_event ee = {.events = events};
	uint32_t gen;
	int err, op;

	if (fd < 0)
		return -EBADF;
	err = grow_fds(ev, fd);
	if (err)
		return err;
	op = ev->fds[fd].used ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	gen = ev->fds[fd].used ? ev->fds[fd].gen : (++ev->gen ? ev->gen : ++ev->gen);
	ee.data.u64 = (uint64_t)gen << 32 | (uint32_t)fd;
	if (epoll_ctl(ev->epfd, op, fd, &ee) < 0)
		return -errno;
	ev->fds[fd] =
	    (struct gx_ev_fd){.fn = fn, .arg = arg, .events = events, .gen = gen, .used = 1};
	return 0;
}

int gx_ev_mod(struct gx_ev *ev, int fd, uint32_t events)
{
	struct epoll_event ee = {.events = events};

	if (fd < 0 || fd >= ev->nfds || !ev->fds[fd].used)
		return -ENOENT;
	if (ev->fds[fd].events == events)
		return 0;
	ee.data.u64 = ev_data(ev, fd);
	if (epoll_ctl(ev->epfd, EPOLL_CTL_MOD, fd, &ee) < 0)
		return -errno;
	ev->fds[fd].events = events;
	return 0;
}

void gx_ev_del(struct gx_ev *ev, int fd)
{
	if (fd < 0 || fd >= ev->nfds || !ev->fds[fd].used)
		return;
	epoll_ctl(ev->epfd, EPOLL_CTL_DEL, fd, NULL);
	memset(&ev->fds[fd], 0, sizeof(ev->fds[fd]));
}

/* ---- timer heap ---- */
static int timer_less(const struct gx_ev_timer *a, const struct gx_ev_timer *b)
{
	return a->when < b->when || (a->when == b->when && a->id < b->id);
}

static void heap_swap(struct gx_ev *ev, size_t a, size_t b)
{
	struct gx_ev_timer t = ev->heap[a];

	ev->heap[a] = ev->heap[b];
	ev->heap[b] = t;
}

static void heap_up(struct gx_ev *ev, size_t i)
{
	while (i > 0 && timer_less(&ev->heap[i], &ev->heap[(i - 1) / 2])) {
		heap_swap(ev, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct gx_ev *ev, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < ev->nheap && timer_less(&ev->heap[l], &ev->heap[m]))
			m = l;
		if (r < ev->nheap && timer_less(&ev->heap[r], &ev->heap[m]))
			m = r;
		if (m == i)
			return;
		heap_swap(ev, i, m);
		i = m;
	}
}

static void heap_remove(struct gx_ev *ev, size_t i)
{
	ev->nheap--;
	if (i == ev->nheap)
		return;
	ev->heap[i] = ev->heap[ev->nheap];
	heap_up(ev, i);
	heap_down(ev, i);
}

uint64_t gx_ev_timer(struct gx_ev *ev, int64_t ms, gx_ev_timer_fn *fn, void *arg)
{
	struct gx_ev_timer *n;

	if (ev->nheap == ev->capheap) {
		size_t cap = ev->capheap ? ev->capheap * 2 : 16;

		n = realloc(ev->heap, cap * sizeof(*n));
		if (!n)
			return 0;
		ev->heap = n;
		ev->capheap = cap;
	}
	ev->heap[ev->nheap] = (struct gx_ev_timer){
	    .when = gx_now_ms() + (ms > 0 ? ms : 0), .id = ev->next_id++, .fn = fn, .arg = arg};
	heap_up(ev, ev->nheap++);
	return ev->next_id - 1;
}

void gx_ev_timer_cancel(struct gx_ev *ev, uint64_t id)
{
	size_t i;

	if (id == 0)
		return;
	for (i = 0; i < ev->nheap; i++) {
		if (ev->heap[i].id == id) {
			heap_remove(ev, i);
			return;
		}
	}
}

static void run_timers(struct gx_ev *ev)
{
	int64_t now = gx_now_ms();

	while (ev->nheap > 0 && ev->heap[0].when <= now && !ev->stop) {
		struct gx_ev_timer t = ev->heap[0];

		heap_remove(ev, 0);
		t.fn(ev, t.id, t.arg);
	}
}

void gx_ev_stop(struct gx_ev *ev, int rc)
{
	ev->stop = 1;
	ev->rc = rc;
}

static int poll_timeout(const struct gx_ev *ev, int64_t deadline)
{
	int64_t now = gx_now_ms(), t = -1;

	if (ev->nheap > 0) {
		t = ev->heap[0].when - now;
		if (t < 0)
			t = 0; /* overdue: run it now */
	}
	if (deadline > 0 && (t < 0 || deadline - now < t))
		t = deadline - now;
	if (t < 0 && (ev->nheap > 0 || deadline > 0))
		t = 0;
	if (t > 60000)
		t = 60000;
	return (int)t;
}

int gx_ev_run_until(struct gx_ev *ev, int64_t deadline_ms)
{
	struct epoll_event evs[256];
	int n, i;

	ev->stop = 0;
	ev->rc = 0;
	while (!ev->stop) {
		if (deadline_ms > 0 && gx_now_ms() >= deadline_ms)
			return -ETIMEDOUT;
		n = epoll_wait(ev->epfd, evs, 256, poll_timeout(ev, deadline_ms));
		if (n < 0 && errno != EINTR)
			return -errno;
		for (i = 0; i < n && !ev->stop; i++) {
			int fd = (int)(uint32_t)evs[i].data.u64;

			/* an earlier callback in this batch may have removed it, or
			 * closed it and registered a new socket under its number */
			if (fd >= ev->nfds || !ev->fds[fd].used ||
			    ev->fds[fd].gen != (uint32_t)(evs[i].data.u64 >> 32))
				continue;
			ev->fds[fd].fn(ev, fd, evs[i].events, ev->fds[fd].arg);
		}
		run_timers(ev);
	}
	return ev->rc;
}

int gx_ev_run(struct gx_ev *ev)
{
	return gx_ev_run_until(ev, 0);
}
