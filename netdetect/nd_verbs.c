/* SPDX-License-Identifier: MIT */
/*
 * nd_verbs.c - the real verbs ops table (README.md "Verbs seam"). The only file
 * that calls ibv_get_device_list, so the Makefile compiles it alone with
 * -DRDMA_STATIC_PROVIDERS in release: a static binary without the define finds
 * no device even on real hardware. verbs' conventions (NULL+errno,
 * positive errno, -1+errno) become -errno here.
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int nd_errno(int fallback)
{
	return errno > 0 ? -errno : -fallback;
}

static int nd_v_list(void *arg, struct nd_vdev **devs, size_t *n)
{
	struct ibv_device **list;
	struct nd_vdev *out = NULL;
	char path[64];
	int num = 0, i, rc = 0;

	(void)arg;
	errno = 0;
	list = ibv_get_device_list(&num);
	if (!list) /* ENOSYS: kernel without RDMA; never ibv_free_device_list(NULL) */
		return nd_errno(ENOSYS);
	if (num > ND_MAX_DEVS)
		num = ND_MAX_DEVS;
	out = calloc(num > 0 ? (size_t)num : 1, sizeof(*out));
	if (!out) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < num; i++) {
		gx_strlcpy(out[i].name, ibv_get_device_name(list[i]), sizeof(out[i].name));
		gx_strlcpy(out[i].uverbs, list[i]->dev_name, sizeof(out[i].uverbs));
		snprintf(path, sizeof(path), "/dev/infiniband/%s", out[i].uverbs);
		out[i].uverbs_ok = out[i].uverbs[0] && access(path, R_OK | W_OK) == 0;
	}
	*devs = out;
	*n = (size_t)num;
	out = NULL;
out:
	free(out);
	ibv_free_device_list(list);
	return rc;
}

static int nd_v_open(void *arg, const char *name, void **h)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int num = 0, i, rc = -ENODEV;

	(void)arg;
	errno = 0;
	list = ibv_get_device_list(&num);
	if (!list)
		return nd_errno(ENOSYS);
	for (i = 0; i < num; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) != 0)
			continue;
		errno = 0;
		ctx = ibv_open_device(list[i]);
		rc = ctx ? 0 : nd_errno(ENODEV);
		break;
	}
	ibv_free_device_list(list);
	*h = ctx;
	return rc;
}

static void nd_v_close(void *arg, void *h)
{
	(void)arg;
	if (h)
		ibv_close_device(h);
}

static int nd_v_query_device(void *arg, void *h, uint64_t *guid, int *nports)
{
	struct ibv_device_attr a;
	int rc;

	(void)arg;
	memset(&a, 0, sizeof(a));
	rc = ibv_query_device(h, &a);
	if (rc)
		return -(rc > 0 ? rc : EIO);
	*guid = be64toh(a.node_guid);
	*nports = a.phys_port_cnt;
	return 0;
}

/* Mb/s of ibv_port_attr active_speed (one bit: SDR..NDR per lane) x active_width (lanes). */
static int nd_rate_mbps(uint8_t speed, uint8_t width)
{
	static const int lane[] = {2500, 5000, 10000, 10000, 14000, 25000, 50000, 100000};
	static const int lanes[] = {1, 4, 8, 12, 2};
	int s, w;

	if (!speed || !width || (speed & (speed - 1)) || (width & (width - 1)))
		return 0;
	s = __builtin_ctz(speed);
	w = __builtin_ctz(width);
	if (s >= (int)(sizeof(lane) / sizeof(lane[0])) ||
	    w >= (int)(sizeof(lanes) / sizeof(lanes[0])))
		return 0;
	return lane[s] * lanes[w];
}

static int nd_v_query_port(void *arg, void *h, int port, struct nd_port_attr *pa)
{
	struct ibv_port_attr a;
	int rc;

	(void)arg;
	memset(&a, 0, sizeof(a));
	rc = ibv_query_port(h, (uint8_t)port, &a);
	if (rc)
		return -(rc > 0 ? rc : EIO);
	pa->state = a.state;
	pa->link_layer = a.link_layer;
	pa->mtu =
	    a.active_mtu >= IBV_MTU_256 && a.active_mtu <= IBV_MTU_4096 ? 128 << a.active_mtu : 0;
	pa->rate_mbps = nd_rate_mbps(a.active_speed, a.active_width);
	pa->gid_tbl_len = a.gid_tbl_len;
	return 0;
}

static int nd_v_query_gids(void *arg, void *h, struct nd_gid *out, size_t max, size_t *n)
{
	struct ibv_gid_entry *e = NULL;
	ssize_t got;
	size_t i;
	int rc = 0;

	(void)arg;
	*n = 0;
	e = calloc(max ? max : 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	errno = 0;
	got = ibv_query_gid_table(h, e, max, 0);
	if (got < 0) {
		rc = got < -1 ? (int)got : nd_errno(EIO);
		goto out;
	}
	for (i = 0; i < (size_t)got && i < max; i++) {
		out[i].index = e[i].gid_index;
		out[i].port = e[i].port_num;
		out[i].type = e[i].gid_type;
		out[i].ifindex = e[i].ndev_ifindex;
		memcpy(out[i].raw, e[i].gid.raw, 16);
	}
	*n = i;
out:
	free(e);
	return rc;
}

static const struct nd_verbs_ops nd_real_ops = {
    .list = nd_v_list,
    .open = nd_v_open,
    .close = nd_v_close,
    .query_device = nd_v_query_device,
    .query_port = nd_v_query_port,
    .query_gids = nd_v_query_gids,
    .arg = NULL,
};

const struct nd_verbs_ops *nd_verbs_real(void)
{
	return &nd_real_ops;
}
