/* SPDX-License-Identifier: MIT */
/*
 * peers_discover.c - the discovery entry point: the peer list from --peers (peers.c's
 * expansion) or from the job system (peers_detect.c), checked against --nnodes, and the
 * pod's domain (peers_domain.c).
 */
#include "agent/peers/peers_int.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int from_option(const struct agent_detect *c, struct agent_peers *p, char *err,
		       size_t errlen)
{
	char pr[96];
	int rc;

	rc = agent_peers_expand(c->o->peers, &p->names, &p->n, err, errlen);
	if (rc < 0)
		return rc;
	p->source = "--peers";
	agent_detect_coord(c, p, AGENT_COORD_AS_GIVEN);
	rc = agent_self_index(p->names, p->n, c->self, c->is_local_ip, &p->self);
	if (rc == -ENOENT && (c->o->elastic || c->o->nnodes_max > c->o->nnodes_min)) {
		p->self = AGENT_SELF_NONE; /* an elastic pod not listed joins by name */
		p->elastic = 1;
		return 0;
	}
	if (rc == -ENOENT) {
		snprintf(err, errlen,
			 "this pod ('%s') is not in --peers (%zu names, first '%s'): set --self "
			 "to its name in the list",
			 agent_printable(c->self, pr, sizeof(pr)), p->n, p->names[0]);
		return GX_EUSAGE;
	}
	if (rc < 0) {
		snprintf(err, errlen,
			 "'%s' matches several --peers entries by its first label: set --self to "
			 "the full name",
			 agent_printable(c->self, pr, sizeof(pr)));
		return GX_EUSAGE;
	}
	return 0;
}

static int check_nnodes(const struct agent_opts *o, struct agent_peers *p, char *err, size_t errlen)
{
	if (o->elastic || o->nnodes_max > o->nnodes_min)
		p->elastic = 1;
	if (p->elastic) {
		p->elastic_max = o->nnodes_max > 1 ? o->nnodes_max : AGENT_ELASTIC_MAX;
		if (p->elastic_max > 16384)
			p->elastic_max = 16384;
		if ((long)p->n <= p->elastic_max)
			return 0;
		snprintf(err, errlen, "%s lists %zu peers, more than the elastic maximum %ld",
			 p->source, p->n, p->elastic_max);
		return GX_EUSAGE;
	}
	if (!o->nnodes_min || ((long)p->n >= o->nnodes_min && (long)p->n <= o->nnodes_max))
		return 0;
	if (o->nnodes_min == o->nnodes_max)
		snprintf(err, errlen, "%s gives %zu peers but --nnodes is %ld", p->source, p->n,
			 o->nnodes_min);
	else
		snprintf(err, errlen, "%s gives %zu peers, outside --nnodes %ld:%ld", p->source,
			 p->n, o->nnodes_min, o->nnodes_max);
	return GX_EUSAGE;
}

int agent_peers_discover(const struct agent_opts *o, char **envp, const char *root,
			 const char *hostname, int (*is_local_ip)(const char *),
			 struct agent_peers *p, char *err, size_t errlen)
{
	struct agent_detect c = {.o = o,
				 .envp = envp,
				 .root = root ? root : "",
				 .self = o->self ? o->self : hostname,
				 .host = hostname,
				 .is_local_ip = is_local_ip};
	char pr[96];
	int rc;

	memset(p, 0, sizeof(*p));
	p->self = AGENT_SELF_NONE;
	if (!c.self || !*c.self ||
	    (!gx_valid_hostname(c.self) && gx_addr_normalize(c.self, pr, 64))) {
		snprintf(err, errlen, "invalid --self / host name '%s'",
			 agent_printable(c.self ? c.self : "", pr, sizeof(pr)));
		return GX_EUSAGE;
	}
	if (o->peers)
		rc = from_option(&c, p, err, errlen);
	else
		rc = agent_peers_autodetect(&c, p, err, errlen);
	if (rc == 0)
		rc = check_nnodes(o, p, err, errlen);
	if (rc == 0)
		agent_domain_detect(&c, &p->dom);
	if (rc < 0) {
		agent_peers_free(p);
		return rc;
	}
	if (o->ray != AGENT_RAY_AUTO)
		p->ray = o->ray;
	if (p->observer)
		gx_info("peers from %s: %zu peers, this pod is an observer", p->source, p->n);
	else if (p->self == AGENT_SELF_NONE)
		gx_info("peers from %s: elastic job (up to %ld), this pod joins by name", p->source,
			p->elastic_max);
	else
		gx_info("peers from %s: %zu peers, this pod is rank %zu (%s)", p->source, p->n,
			p->self, p->names[p->self]);
	return 0;
}
