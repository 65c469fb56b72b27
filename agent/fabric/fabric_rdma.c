/* SPDX-License-Identifier: MIT */
/*
 * fabric_rdma.c - the bytes a verified rail moved: its port counters in sysfs, read at the
 * exec and at every sample. mlx5 (and every device with the IB PMA counters) has
 * counters/port_xmit_data and port_rcv_data in 4-byte units (the IBTA's PortXmitData);
 * rxe has them too on the newer kernel of the soft-RoCE VM (measured: port_xmit_data x 4 ==
 * hw_counters/sent_bytes to the byte after ib_write_bw), and hw_counters/sent_bytes,
 * rcvd_bytes, sent_pkts, rcvd_pkts. In a pod's network namespace in shared mode the device
 * is the IB core's compat device, whose sysfs has neither (measured in the VM: ports/1 lists
 * cap_mask .. state only): there the RDMA netlink's STAT_GET (what `rdma statistic show link
 * rxe0/1` prints, through libnl-3) still gives the hw counters. A port shared by several pods
 * (shared mode) counts all of them: the library's own line is what ties the bytes to this job
 * (FABRIC.md).
 */
#include "agent/fabric/fabric_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* One counter file as an unsigned integer; -ENOENT when absent. */
static int read_u64(const char *sysfs, const struct fabric_rail *r, const char *name, uint64_t *v)
{
	char path[512], buf[64];
	unsigned long long x;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%d/%s", sysfs, r->dev, r->port,
		 name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	if (sscanf(buf, "%llu", &x) != 1)
		return -EIO;
	*v = x;
	return 0;
}

/* Two counters summed (sent + received); 0, or the first one's error. */
static int read_pair(const char *sysfs, const struct fabric_rail *r, const char *a, const char *b,
		     uint64_t *sum)
{
	uint64_t x = 0, y = 0;
	int rc = read_u64(sysfs, r, a, &x);

	if (rc == 0)
		rc = read_u64(sysfs, r, b, &y);
	if (rc == 0)
		*sum = x + y;
	return rc;
}

/* ---- the RDMA netlink (nldev), through libnl-3 ---- */

struct nldev {
	const char *dev;
	int port;
	uint32_t index;
	int found, done, err;
	uint64_t sb, rb, sp, rp;
	int have_b, have_p;
};

static int nldev_valid_dev(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	struct nldev *q = arg;

	if (nlmsg_parse(nlmsg_hdr(msg), 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) < 0 ||
	    !tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME])
		return NL_OK;
	if (strcmp(nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]), q->dev) == 0) {
		q->index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
		q->found = 1;
	}
	return NL_OK;
}

/* one hw counter: the byte and packet ones rxe has ("sent_bytes", "rcvd_pkts", ...) */
static void nldev_counter(struct nldev *q, const char *name, uint64_t v)
{
	if (strcmp(name, "sent_bytes") == 0)
		q->sb = v, q->have_b |= 1;
	else if (strcmp(name, "rcvd_bytes") == 0)
		q->rb = v, q->have_b |= 2;
	else if (strcmp(name, "sent_pkts") == 0)
		q->sp = v, q->have_p |= 1;
	else if (strcmp(name, "rcvd_pkts") == 0)
		q->rp = v, q->have_p |= 2;
}

static int nldev_valid_stat(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX], *ent, *e[RDMA_NLDEV_ATTR_MAX];
	struct nldev *q = arg;
	int rem;

	if (nlmsg_parse(nlmsg_hdr(msg), 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) < 0 ||
	    !tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS])
		return NL_OK;
	q->found = 1;
	nla_for_each_nested(ent, tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS], rem)
	{
		if (nla_parse_nested(e, RDMA_NLDEV_ATTR_MAX - 1, ent, NULL) < 0 ||
		    !e[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME] ||
		    !e[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE])
			continue;
		nldev_counter(q, nla_get_string(e[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME]),
			      nla_get_u64(e[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE]));
	}
	return NL_OK;
}

static int nldev_stop(struct nl_msg *msg, void *arg)
{
	(void)msg;
	((struct nldev *)arg)->done = 1;
	return NL_STOP;
}

static int nldev_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct nldev *q = arg;

	(void)nla;
	q->err = e->error ? e->error : -EIO;
	q->done = 1;
	return NL_STOP;
}

/* One request (cmd, with the device and port when index >= 0) and its answers to fn. */
static int nldev_ask(struct nldev *q, int cmd, int dump, nl_recvmsg_msg_cb_t fn)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_msg *msg = NULL;
	int rc = -ENOMEM;

	if (!sk)
		return rc;
	q->done = q->err = 0;
	if (nl_connect(sk, NETLINK_RDMA) < 0) {
		rc = -ENOENT;
		goto out;
	}
	msg = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd),
				 NLM_F_REQUEST | NLM_F_ACK | (dump ? NLM_F_DUMP : 0));
	if (!msg ||
	    (!dump && (nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, q->index) < 0 ||
		       nla_put_u32(msg, RDMA_NLDEV_ATTR_PORT_INDEX, (uint32_t)q->port) < 0)))
		goto out;
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, fn, q);
	nl_socket_modify_cb(sk, NL_CB_FINISH, NL_CB_CUSTOM, nldev_stop, q);
	nl_socket_modify_cb(sk, NL_CB_ACK, NL_CB_CUSTOM, nldev_stop, q);
	nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, nldev_error, q);
	rc = nl_send_auto(sk, msg) < 0 ? -EIO : 0;
	while (rc == 0 && !q->done)
		if (nl_recvmsgs_default(sk) < 0) /* a libnl NLE_* code: not an errno */
			rc = -EIO;
	if (rc == 0 && q->err)
		rc = q->err < 0 ? q->err : -EIO;
out:
	nlmsg_free(msg);
	nl_socket_free(sk);
	return rc;
}

/* The port's counters through the RDMA netlink: bytes and packets when it has them. */
static int read_nldev(struct fabric_rail *r, uint64_t *bytes, int *hb, uint64_t *pkts, int *hp)
{
	struct nldev q = {.dev = r->dev, .port = r->port};
	int rc;

	if (!r->nl_index) {
		rc = nldev_ask(&q, RDMA_NLDEV_CMD_GET, 1, nldev_valid_dev);
		if (rc < 0 || !q.found)
			return rc < 0 ? rc : -ENOENT;
		r->nl_index = q.index + 1; /* 0: not looked up */
	}
	q.index = r->nl_index - 1;
	q.found = 0;
	rc = nldev_ask(&q, RDMA_NLDEV_CMD_STAT_GET, 0, nldev_valid_stat);
	if (rc < 0 || !q.found)
		return rc < 0 ? rc : -ENOENT;
	*hb = q.have_b == 3;
	*hp = q.have_p == 3;
	*bytes = q.sb + q.rb;
	*pkts = q.sp + q.rp;
	return *hb || *hp ? 0 : -ENOENT;
}

/* sysfs: bytes (returns 1 when read) and packets (*hp) */
static int read_sysfs(const char *sysfs, struct fabric_rail *r, uint64_t *bytes, int *hp,
		      uint64_t *pkts)
{
	int hb =
	    read_pair(sysfs, r, "counters/port_xmit_data", "counters/port_rcv_data", bytes) == 0;

	if (hb) {
		*bytes *= 4; /* PortXmitData counts 32-bit words */
		gx_strlcpy(r->source, "counters/port_*_data x4", sizeof(r->source));
	} else {
		hb = read_pair(sysfs, r, "hw_counters/sent_bytes", "hw_counters/rcvd_bytes",
			       bytes) == 0;
		if (hb)
			gx_strlcpy(r->source, "hw_counters/*_bytes", sizeof(r->source));
	}
	*hp = read_pair(sysfs, r, "counters/port_xmit_packets", "counters/port_rcv_packets",
			pkts) == 0 ||
	      read_pair(sysfs, r, "hw_counters/sent_pkts", "hw_counters/rcvd_pkts", pkts) == 0;
	return hb;
}

int agent_fabric_rail_read(const char *sysfs, struct fabric_rail *r, int first)
{
	uint64_t bytes = 0, pkts = 0;
	int hb, hp;

	if (r->use_nl) { /* sysfs had none of them at the exec */
		if (read_nldev(r, &bytes, &hb, &pkts, &hp) < 0)
			hb = hp = 0;
	} else {
		hb = read_sysfs(sysfs, r, &bytes, &hp, &pkts);
		if (!hb && !hp && first && read_nldev(r, &bytes, &hb, &pkts, &hp) == 0) {
			r->use_nl = 1;
			gx_strlcpy(r->source, hb ? "rdma netlink: *_bytes" : "rdma netlink: *_pkts",
				   sizeof(r->source));
		}
	}
	if (!hb && !hp)
		return -ENOENT;
	if (first) {
		r->have_bytes = hb;
		r->have_pkts = hp;
		r->base_bytes = bytes;
		r->base_pkts = pkts;
		r->bytes = r->pkts = 0;
		if (!hb)
			gx_strlcpy(r->source, "packets only", sizeof(r->source));
		return 0;
	}
	/* a counter that went back (a port reset, a 32-bit PMA counter that wrapped) starts
	 * a new base: what it counted before is kept */
	if (r->have_bytes && hb) {
		if (bytes < r->base_bytes + r->bytes)
			r->base_bytes = bytes - r->bytes;
		r->bytes = bytes - r->base_bytes;
	}
	if (r->have_pkts && hp) {
		if (pkts < r->base_pkts + r->pkts)
			r->base_pkts = pkts - r->pkts;
		r->pkts = pkts - r->base_pkts;
	}
	return 0;
}
