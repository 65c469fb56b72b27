/* SPDX-License-Identifier: MIT */
/* rdzv_rdma.c - placeholder until the RDMA-CM implementation lands (helper R owns this file). */
#include "rdzv/rdzv_rdma.h"

#include <errno.h>
#include <string.h>

const struct rdzv_rdma_cm_ops *rdzv_rdma_cm_real(void)
{
	return NULL;
}

int rdzv_rdma_ctx_new(const struct rdzv_rdma_cm_ops *cm, size_t max_write,
		      struct rdzv_rdma_ctx **ret)
{
	(void)cm;
	(void)max_write;
	*ret = NULL;
	return -ENOSYS;
}

void rdzv_rdma_ctx_free(struct rdzv_rdma_ctx *c)
{
	(void)c;
}

const struct rdzv_rdma_ops *rdzv_rdma_ops(struct rdzv_rdma_ctx *c)
{
	(void)c;
	return NULL;
}

int rdzv_rdma_serve(struct rdzv_rdma_ctx *c, struct gx_ev *ev, const struct rdzv_peer *self,
		    uint16_t port, char *why, size_t whylen)
{
	(void)c;
	(void)ev;
	(void)self;
	(void)port;
	gx_strlcpy(why, "RDMA-CM not built", whylen);
	return -ENOSYS;
}

int rdzv_rdma_probe_run(struct rdzv_rdma_ctx *c, const struct rdzv_peer *self,
			const struct rdzv_peer *peer, uint16_t port, size_t size,
			int64_t deadline_ms, struct rdzv_rdma_probe *out)
{
	(void)c;
	(void)self;
	(void)peer;
	(void)port;
	(void)size;
	(void)deadline_ms;
	memset(out, 0, sizeof(*out));
	return -ENOSYS;
}
