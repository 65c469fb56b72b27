/* SPDX-License-Identifier: MIT */
/*
 * dns.c - c-ares 1.18 has no event thread: its sockets go into a gx_ev loop
 * through ARES_OPT_SOCK_STATE_CB, and ares_timeout() schedules the timer.
 * Only the coordinator's name is ever looked up (DNS load O(N), FIELD.md).
 */
#include "agent/dns_int.h"

#include <ares.h>
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

struct dns_lookup {
	struct gx_ev *ev;
	ares_channel ch;
	uint64_t timer;
	struct agent_dns_answer *ans;
	uint16_t port;
	int done;
	int rc;
};

static void dns_fd_cb(struct gx_ev *ev, int fd, uint32_t events, void *arg)
{
	struct dns_lookup *l = arg;

	(void)ev;
	ares_process_fd(l->ch, (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ? fd : ARES_SOCKET_BAD,
			(events & EPOLLOUT) ? fd : ARES_SOCKET_BAD);
}

static void dns_sock_state(void *arg, ares_socket_t fd, int readable, int writable)
{
	struct dns_lookup *l = arg;
	uint32_t events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);

	if (!events)
		gx_ev_del(l->ev, fd);
	else if (gx_ev_add(l->ev, fd, events, dns_fd_cb, l) < 0)
		gx_debug("dns: cannot watch fd %d", fd);
}

static void dns_timer_cb(struct gx_ev *ev, uint64_t id, void *arg);

static void dns_schedule(struct dns_lookup *l)
{
	struct timeval tv, max = {.tv_sec = 1, .tv_usec = 0}, *t;

	t = ares_timeout(l->ch, &max, &tv);
	l->timer =
	    gx_ev_timer(l->ev, (int64_t)t->tv_sec * 1000 + t->tv_usec / 1000 + 1, dns_timer_cb, l);
}

static void dns_timer_cb(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct dns_lookup *l = arg;

	(void)ev;
	(void)id;
	l->timer = 0;
	ares_process_fd(l->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	if (!l->done)
		dns_schedule(l);
}

static void add_answer(struct dns_lookup *l, const struct ares_addrinfo_node *nd)
{
	struct agent_dns_answer *a = l->ans;
	union gx_sockaddr *sa;

	if (a->n >= (int)(sizeof(a->addrs) / sizeof(a->addrs[0])) ||
	    nd->ai_addrlen > sizeof(a->addrs[0]) ||
	    (nd->ai_family != AF_INET && nd->ai_family != AF_INET6))
		return;
	sa = &a->addrs[a->n];
	memcpy(sa, nd->ai_addr, nd->ai_addrlen);
	if (nd->ai_family == AF_INET)
		sa->in4.sin_port = htons(l->port);
	else
		sa->in6.sin6_port = htons(l->port);
	a->lens[a->n++] = nd->ai_addrlen;
}

static void dns_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct dns_lookup *l = arg;
	const struct ares_addrinfo_node *nd;
	int fam;

	(void)timeouts;
	l->done = 1;
	if (status == ARES_SUCCESS && res) {
		/* IPv4 first, then IPv6 (DECISIONS 17: dual-stack primaries) */
		for (fam = 0; fam < 2; fam++)
			for (nd = res->nodes; nd; nd = nd->ai_next)
				if (nd->ai_family == (fam ? AF_INET6 : AF_INET))
					add_answer(l, nd);
	}
	if (l->ans->n > 0)
		l->rc = 0;
	else if (status == ARES_ENOTFOUND || status == ARES_ENODATA || status == ARES_SUCCESS)
		l->rc = -ENOENT;
	else if (status == ARES_ETIMEOUT)
		l->rc = -ETIMEDOUT;
	else
		l->rc = GX_EDNS;
	l->ans->nxdomain = l->rc == -ENOENT;
	if (status != ARES_SUCCESS)
		gx_debug("dns: %s", ares_strerror(status));
	ares_freeaddrinfo(res);
	gx_ev_stop(l->ev, 0);
}

static int dns_channel(struct dns_lookup *l, const char *server)
{
	struct ares_options opt = {0};
	int rc;

	opt.sock_state_cb = dns_sock_state;
	opt.sock_state_cb_data = l;
	opt.timeout = 1000;
	opt.tries = 2;
	rc = ares_init_options(&l->ch, &opt,
			       ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
	if (rc != ARES_SUCCESS)
		return GX_EDNS;
	if (server && ares_set_servers_ports_csv(l->ch, server) != ARES_SUCCESS)
		return GX_EUSAGE;
	return 0;
}

int agent_dns_lookup(const char *name, const char *dns_server, uint16_t port, int64_t deadline_ms,
		     struct agent_dns_answer *ans)
{
	struct ares_addrinfo_hints hints = {.ai_family = AF_UNSPEC, .ai_flags = ARES_AI_NOSORT};
	struct dns_lookup l = {.ans = ans, .port = port, .rc = -ETIMEDOUT};
	int rc;

	memset(ans, 0, sizeof(*ans));
	rc = ares_library_init(ARES_LIB_INIT_ALL);
	if (rc != ARES_SUCCESS)
		return GX_EDNS;
	rc = gx_ev_new(&l.ev);
	if (rc < 0)
		goto out;
	rc = dns_channel(&l, dns_server);
	if (rc < 0)
		goto out;
	ares_getaddrinfo(l.ch, name, NULL, &hints, dns_done, &l);
	if (!l.done)
		dns_schedule(&l);
	rc = l.done ? 0 : gx_ev_run_until(l.ev, deadline_ms);
	rc = l.done ? l.rc : (rc < 0 ? rc : -ETIMEDOUT);
out:
	if (l.ch)
		ares_destroy(l.ch); /* runs dns_done with ARES_EDESTRUCTION if pending */
	gx_ev_free(l.ev);
	ares_library_cleanup();
	return rc;
}
