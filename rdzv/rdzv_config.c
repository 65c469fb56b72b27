/* SPDX-License-Identifier: MIT */
/*
 * rdzv_config.c - what both roles check and share: a config's validation (the same rules
 * for the coordinator and a member), a result's release, and the retry waits (PROTOCOL.md
 * "Member").
 */
#include "rdzv/rdzv_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rdzv_config_check(const struct rdzv_config *cfg, struct rdzv_peer *self)
{
	char why[160];
	uint32_t i;

	uint32_t nn = cfg->elastic ? cfg->nnames : cfg->world;

	if (!cfg->names || cfg->world < 1 ||
	    cfg->world > (cfg->relay_fanout > 1 ? RDZV_MAX_WORLD_RELAYED : RDZV_MAX_WORLD) ||
	    cfg->relay_fanout > RDZV_RELAY_KIDS / 2 || (cfg->relay_fanout && cfg->elastic) ||
	    !gx_valid_jobid(cfg->job_id) || cfg->deadline_ms <= 0 || nn < 1 || nn > cfg->world ||
	    (cfg->elastic && (cfg->min_peers < 1 || cfg->min_peers > cfg->world)))
		return GX_EUSAGE;
	/* the coordinator checks every name once; a member needs the coordinator's and
	 * its own (and compares table entries, which are checked, with the rest). A member
	 * does not walk the list: a pod's own cost is small either way, but N members in one
	 * process (the bench, the tests) made it N^2 checks */
	if (cfg->is_coordinator) {
		for (i = 0; i < nn; i++)
			if (!gx_valid_hostname(cfg->names[i]))
				return GX_EINVAL_NAME;
	} else if (!gx_valid_hostname(cfg->names[0]) ||
		   (cfg->self.index < nn && !gx_valid_hostname(cfg->names[cfg->self.index]))) {
		return GX_EINVAL_NAME;
	}
	*self = cfg->self;
	if (rdzv_peer_check(self, why, sizeof(why)) < 0)
		return GX_EINVAL_NAME;
	if (self->index == RDZV_OBSERVER && !cfg->is_coordinator) {
		self->flags |= RDZV_PF_OBSERVER | RDZV_PF_FULL_TABLE;
		return sodium_init() < 0 ? -ENOMEM : 0; /* any name, no secondary needed */
	}
	self->flags &= ~(RDZV_PF_OBSERVER | RDZV_PF_ELASTIC);
	if (self->index == RDZV_ELASTIC && cfg->elastic && !cfg->is_coordinator) {
		self->flags |= RDZV_PF_ELASTIC;
		self->flags &= ~RDZV_PF_FULL_TABLE;
		if (!self->nd_err && !self->addr4[0] && !self->addr6[0])
			return GX_EUSAGE;
		return sodium_init() < 0 ? -ENOMEM : 0;
	}
	if (!cfg->is_coordinator && self->index >= nn)
		return GX_EUSAGE;
	if (strcmp(self->name, cfg->names[cfg->is_coordinator ? 0 : self->index]) != 0 ||
	    (!cfg->is_coordinator && (self->index == 0 || self->index >= cfg->world)))
		return GX_EUSAGE;
	if (!self->nd_err && !self->addr4[0] && !self->addr6[0])
		return GX_EUSAGE;
	return sodium_init() < 0 ? -ENOMEM : 0;
}

void rdzv_result_clear(struct rdzv_result *res)
{
	if (!res)
		return;
	free(res->table);
	memset(res, 0, sizeof(*res));
}

int64_t rdzv_backoff_ms(int attempt)
{
	int64_t d = RDZV_BACKOFF_MIN_MS;

	while (attempt-- > 0 && d < RDZV_BACKOFF_MAX_MS)
		d *= 2;
	if (d > RDZV_BACKOFF_MAX_MS)
		d = RDZV_BACKOFF_MAX_MS;
	/* equal jitter: [d/2, d) */
	return d / 2 + (int64_t)randombytes_uniform((uint32_t)(d / 2));
}

int64_t rdzv_refused_ms(uint32_t world, int first)
{
	int64_t d = (int64_t)world * 1000 / RDZV_REFUSED_SYN_PER_S;

	if (d < RDZV_REFUSED_MIN_MS)
		d = RDZV_REFUSED_MIN_MS;
	return first ? (int64_t)randombytes_uniform((uint32_t)d) : d;
}
