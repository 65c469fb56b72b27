/* SPDX-License-Identifier: MIT */
/*
 * dns.c - c-ares 1.18 has no event thread: its sockets go into a gx_ev loop
 * through ARES_OPT_SOCK_STATE_CB, and ares_timeout() schedules the timer.
 * Only the coordinator's name is ever looked up (DNS load O(N), not O(N^2)).
 * agent_dns_start runs a lookup in the caller's loop (the rendezvous member
 * resolves that way, never blocking it; so does `check`).
 */
#include "agent/peers/peers_int.h"

#include <ares.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

struct agent_dns {
	struct gx_ev *ev;
	ares_channel ch;
	uint64_t timer;	  /* c-ares' own timeouts */
	uint64_t deliver; /* the answer, handed over outside c-ares' call stack */
	struct agent_dns_answer ans;
	agent_dns_fn *fn;
	void *arg;
	uint16_t port;
	int done, rc, freeing;
};

static void dns_fd_cb(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct agent_dns *d = arg;

	(void)ev;
	ares_process_fd(d->ch, (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ? fd : ARES_SOCKET_BAD,
			(events & EPOLLOUT) ? fd : ARES_SOCKET_BAD);
}

static void dns_sock_state(void *arg, ares_socket_t fd, int readable, int writable)
{
	struct agent_dns *d = arg;
	uint32_t events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);

	if (!events)
		gx_ev_del(d->ev, fd);
	else if (gx_ev_add(d->ev, fd, events, dns_fd_cb, d) < 0)
		gx_debug("dns: cannot watch fd %d", fd);
}

static void dns_timer_cb(struct gx_ev *ev, uint64_t id, void *arg);

static void dns_schedule(struct agent_dns *d)
{
	struct timeval tv, max = {.tv_sec = 1, .tv_usec = 0}, *t;

	t = ares_timeout(d->ch, &max, &tv);
	d->timer =
	    gx_ev_timer(d->ev, (int64_t)t->tv_sec * 1000 + t->tv_usec / 1000 + 1, dns_timer_cb, d);
}

static void dns_timer_cb(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct agent_dns *d = arg;

	(void)ev;
	(void)id;
	d->timer = 0;
	ares_process_fd(d->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	if (!d->done)
		dns_schedule(d);
}

static void add_answer(struct agent_dns *d, const struct ares_addrinfo_node *nd)
{
	struct agent_dns_answer *a = &d->ans;
	union gx_sockaddr *sa;

	if (a->n >= (int)(sizeof(a->addrs) / sizeof(a->addrs[0])) ||
	    nd->ai_addrlen > sizeof(a->addrs[0]) ||
	    (nd->ai_family != AF_INET && nd->ai_family != AF_INET6))
		return;
	sa = &a->addrs[a->n];
	memcpy(sa, nd->ai_addr, nd->ai_addrlen);
	if (nd->ai_family == AF_INET)
		sa->in4.sin_port = htons(d->port);
	else
		sa->in6.sin6_port = htons(d->port);
	a->lens[a->n++] = nd->ai_addrlen;
}

/* The caller's callback runs from a timer: it may free the lookup. */
static void dns_deliver(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct agent_dns *d = arg;

	(void)ev;
	(void)id;
	d->deliver = 0;
	d->fn(d->arg, d->rc, &d->ans); /* last: d may be gone */
}

static void dns_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct agent_dns *d = arg;
	const struct ares_addrinfo_node *nd;
	int fam;

	(void)timeouts;
	if (d->freeing) { /* ares_destroy of a pending lookup: nobody listens */
		ares_freeaddrinfo(res);
		return;
	}
	d->done = 1;
	if (status == ARES_SUCCESS && res) {
		/* IPv4 first, then IPv6 (dual-stack and IPv6 primaries) */
		for (fam = 0; fam < 2; fam++)
			for (nd = res->nodes; nd; nd = nd->ai_next)
				if (nd->ai_family == (fam ? AF_INET6 : AF_INET))
					add_answer(d, nd);
	}
	if (d->ans.n > 0)
		d->rc = 0;
	else if (status == ARES_ENOTFOUND || status == ARES_ENODATA || status == ARES_SUCCESS)
		d->rc = -ENOENT;
	else if (status == ARES_ETIMEOUT)
		d->rc = -ETIMEDOUT;
	else
		d->rc = GX_EDNS;
	d->ans.nxdomain = d->rc == -ENOENT;
	if (status != ARES_SUCCESS)
		gx_debug("dns: %s", ares_strerror(status));
	ares_freeaddrinfo(res);
	gx_ev_timer_cancel(d->ev, d->timer);
	d->timer = 0;
	d->deliver = gx_ev_timer(d->ev, 0, dns_deliver, d);
}

static int dns_channel(struct agent_dns *d, const char *server)
{
	struct ares_options opt = {0};
	int rc;

	opt.sock_state_cb = dns_sock_state;
	opt.sock_state_cb_data = d;
	opt.timeout = 1000;
	opt.tries = 2;
	rc = ares_init_options(&d->ch, &opt,
			       ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
	if (rc != ARES_SUCCESS) {
		d->ch = NULL;
		return GX_EDNS;
	}
	if (server && ares_set_servers_ports_csv(d->ch, server) != ARES_SUCCESS)
		return GX_EUSAGE;
	return 0;
}

/*
 * c-ares' library state is process-wide, reference counted and not thread-safe: main takes
 * it once before any command and gives it back at its end, so a lookup (the coordinator's
 * name, again after each NXDOMAIN; a relay's) only makes and destroys a channel.
 */
int agent_dns_library_init(void)
{
	return ares_library_init(ARES_LIB_INIT_ALL) == ARES_SUCCESS ? 0 : GX_EDNS;
}

void agent_dns_library_cleanup(void)
{
	ares_library_cleanup();
}

int agent_dns_server_check(const char *server, char *err, size_t errlen)
{
	ares_channel ch = NULL;
	int rc = 0;

	if (!server)
		return 0;
	if (ares_init(&ch) != ARES_SUCCESS) {
		ch = NULL;
		rc = GX_EDNS;
		goto out;
	}
	if (!*server || ares_set_servers_ports_csv(ch, server) != ARES_SUCCESS) {
		snprintf(err, errlen,
			 "--dns-server / GXBOOT_DNS_SERVER '%s': not IP, IP:PORT or [IPv6]:PORT "
			 "(a comma list)",
			 server);
		rc = GX_EUSAGE;
	}
out:
	if (ch)
		ares_destroy(ch);
	return rc;
}

int agent_dns_start(struct gx_ev *ev, const char *name, const char *dns_server, uint16_t port,
		    agent_dns_fn *fn, void *arg, struct agent_dns **ret)
{
	struct ares_addrinfo_hints hints = {.ai_family = AF_UNSPEC, .ai_flags = ARES_AI_NOSORT};
	struct agent_dns *d = NULL;
	int rc;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ev = ev;
	d->fn = fn;
	d->arg = arg;
	d->port = port;
	d->rc = -ETIMEDOUT;
	rc = dns_channel(d, dns_server);
	if (rc < 0)
		goto out;
	ares_getaddrinfo(d->ch, name, NULL, &hints, dns_done, d);
	if (!d->done)
		dns_schedule(d);
	if (!d->done && !d->timer) {
		rc = -ENOMEM;
		goto out;
	}
	*ret = d;
	d = NULL;
out:
	agent_dns_free(d);
	return rc;
}

void agent_dns_free(struct agent_dns *d)
{
	if (!d)
		return;
	d->freeing = 1;
	gx_ev_timer_cancel(d->ev, d->timer);
	gx_ev_timer_cancel(d->ev, d->deliver);
	if (d->ch)
		ares_destroy(d->ch); /* closes its sockets (sock_state_cb removes them) */
	free(d);
}
