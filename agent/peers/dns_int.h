/* SPDX-License-Identifier: MIT */
/* dns_int.h - resolve the coordinator's name with c-ares driven by gx_ev. */
#ifndef AGENT_DNS_INT_H
#define AGENT_DNS_INT_H

#include "rdzv/gx/gx.h"

struct agent_dns_answer {
	union gx_sockaddr addrs[8];
	socklen_t lens[8];
	int n;
	int nxdomain; /* the name did not exist (NXDOMAIN / no data) */
};

struct agent_dns;

/* c-ares' process-wide state: once before the first lookup, cleanup after the last (main). */
int agent_dns_library_init(void);
void agent_dns_library_cleanup(void);
/* rc: 0 with ans->n > 0, -ENOENT (ans->nxdomain), -ETIMEDOUT, GX_EDNS. */
typedef void agent_dns_fn(void *arg, int rc, const struct agent_dns_answer *ans);

/*
 * A lookup of name (A and AAAA; /etc/resolv.conf search + ndots, or only the
 * name when it ends in '.'), against dns_server ("IP[:PORT]") when not NULL,
 * IPv4 answers first, in the caller's loop ev: fn is called once,
 * from a timer of ev (never from inside this call or from c-ares), and may
 * free the lookup. agent_dns_free cancels a pending one.
 */
int agent_dns_start(struct gx_ev *ev, const char *name, const char *dns_server, uint16_t port,
		    agent_dns_fn *fn, void *arg, struct agent_dns **ret);
/* 0 when server (NULL: none) is a list c-ares takes; GX_EUSAGE and the line in err when not:
 * said at start (exit 2), not retried as a lookup that fails until --timeout. */
int agent_dns_server_check(const char *server, char *err, size_t errlen);
void agent_dns_free(struct agent_dns *d);

#endif
