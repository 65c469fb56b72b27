/* SPDX-License-Identifier: MIT */
/*
 * netdetect.h - the public API of netdetect/ (prefix nd_): find the secondary /
 * RDMA interface a job must use, its RDMA port and GID, every RDMA rail, and say
 * why. Design note: netdetect/README.md.
 *
 * Library code: never prints, returns 0 / -errno / GX_E* with one line in err.
 */
#ifndef NETDETECT_H
#define NETDETECT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#define ND_IFNAMSIZ 16
#define ND_DEVSIZ 64
#define ND_ADDR6SIZ 46

/* Same values as enum agent_rdma_mode. */
enum nd_rdma_mode {
	ND_RDMA_AUTO = 0,
	ND_RDMA_REQUIRE = 1,
	ND_RDMA_OFF = 2,
};

/* Same values as enum ibv_port_attr.link_layer. */
enum nd_link_layer {
	ND_LL_UNSPEC = 0,
	ND_LL_IB = 1,
	ND_LL_ETH = 2,
};

/* Same values as enum ibv_gid_type; ND_GID_NONE when no GID was chosen. */
enum nd_gid_type {
	ND_GID_IB = 0,
	ND_GID_ROCE_V1 = 1,
	ND_GID_ROCE_V2 = 2,
	ND_GID_NONE = -1,
};

struct nd_request {
	const char *iface;	    /* NAME or CIDR (or a bare IP); NULL = auto */
	const char *rdma_dev;	    /* DEV[:PORT][,...]: the rail set as given; NULL = auto */
	const char *network;	    /* Multus network name (with network_status) */
	const char *network_status; /* file: JSON array or downward-API annotations file */
	int allow_primary;	    /* accept the default-route link when nothing else exists */
	int rdma_mode;		    /* enum nd_rdma_mode */
	const char *rails;	    /* "auto" (NULL), "none", or a list of netdevs / DEV[:PORT] */
	int keep_on_error;	    /* on GX_ENOSECONDARY / GX_ENORDMA still hand back *ret */
	const char *sysfs_root;	    /* PCIDEVICE_* lookups under it; NULL = "/sys" (tests) */
};

/*
 * One rail. A netdev rail (README "Rails": --rails LIST of netdevs with no RDMA
 * rail among them, or nd_rails_netdevs()) has dev "", port 0, no GID: TCP only,
 * never in NCCL_IB_HCA / UCX_NET_DEVICES (those need rdma_usable).
 */
struct nd_rail {
	char dev[ND_DEVSIZ]; /* "" for a netdev rail */
	int port;
	char iface[ND_IFNAMSIZ]; /* "" when an explicit --rdma-dev port has no GID of ours */
	int ifindex;
	char addr[ND_ADDR6SIZ]; /* the netdev's first global address of the bootstrap family */
	int gid_index;		/* the GID NCCL would use on this rail, -1 none */
	int gid_type;		/* enum nd_gid_type */
	int gid_v2_v4;		/* RoCE v2 entry of the IPv4 address, -1 none */
	int gid_v2_v6;		/* RoCE v2 entry of a global IPv6 address, -1 none */
	int link_layer;		/* enum nd_link_layer */
	int rate_mbps;
	int mtu;	/* active RDMA MTU in bytes */
	int netdev_mtu; /* the netdev's MTU */
};

struct nd_passed {
	char iface[ND_IFNAMSIZ];
	char why[160];
};

struct nd_inventory;

struct nd_result {
	/* the bootstrap interface */
	char iface[ND_IFNAMSIZ];
	int ifindex;
	int mtu;
	int is_primary;		 /* it is the pod (node) network: --allow-primary or explicit */
	char addr4[16];		 /* first global IPv4, "" none */
	char addr6[ND_ADDR6SIZ]; /* first global IPv6, "" none */
	int prefix4, prefix6;
	int family;	   /* AF_INET when addr4 is set, else AF_INET6, 0 for no address */
	char network[320]; /* the Multus network name when network-status chose it */
	/* its RDMA port (when one is bound to it) */
	char rdma_dev[ND_DEVSIZ];
	int rdma_port;
	int gid_index; /* -1 none */
	int gid_type;  /* enum nd_gid_type */
	int link_layer;
	int rdma_usable; /* device opened, uverbs present, memlock fine, mode not off */
	/* rails (a GPU node's HCAs), netdev-name order */
	struct nd_rail *rails;
	size_t nrails;
	int nccl_gid_index; /* -1 = leave NCCL_IB_GID_INDEX unset */
	char nccl_gid_why[256];
	/* explanation */
	char reason[1024];
	char **warnings;
	size_t nwarnings;
	struct nd_passed *passed;
	size_t npassed;
	/*
	 * The pod (or node) network, decided before the choice (README "The pod network"),
	 * and what the choice means next to it.
	 */
	char primary[ND_IFNAMSIZ]; /* its interface; rule 4: the first default-route link; "" */
	int primary_ifindex;
	int primary_rule; /* 1 network-status default, 3 eth0 in a pod, 4 default route */
	int host_network; /* this namespace is the node's own (a hostNetwork pod) */
	char host_network_why[128];
	char overlap[200]; /* "net1's A/24 overlaps eth0's B/24: ..." or "" (not fatal here) */
	char **notes;	   /* info-level lines (the agent logs them at info) */
	size_t nnotes;
	/* what was seen (for the JSON / table); owned when own_inv is set */
	const struct nd_inventory *inv;
	struct nd_inventory *own_inv;
};

/*
 * Real detection: netlink (libnl-route-3), libibverbs, network-status file.
 * On success *ret is a new result. GX_ENOSECONDARY / GX_ENORDMA / GX_EUSAGE /
 * GX_EJSON / GX_ENETLINK / -errno with one line in err; with req->keep_on_error
 * *ret is also set for GX_ENOSECONDARY (iface "") and GX_ENORDMA (the choice so far).
 */
int nd_detect(const struct nd_request *req, struct nd_result **ret, char *err, size_t errlen);
/* The same choice over a given inventory (tests). inv must outlive *ret. */
int nd_detect_with(const struct nd_request *req, const struct nd_inventory *inv,
		   struct nd_result **ret, char *err, size_t errlen);
void nd_result_free(struct nd_result *r);

/* JSON: links, rdma, choice, passed_over, rails, warnings (README.md "Output"); NULL on
 * ENOMEM. */
json_t *nd_result_json(const struct nd_result *r);
/* Human table. */
void nd_result_print(FILE *f, const struct nd_result *r);

/*
 * When r has no rail: list every up secondary netdev with a global address (and
 * the bootstrap iface) as a netdev rail, in strverscmp name order (check --rails
 * on TCP-only pods). The number of rails after the call, or -ENOMEM.
 */
int nd_rails_netdevs(struct nd_result *r);

/* Rails as "mlx5_0:1,mlx5_3:1" (no "=" prefix); 0, -ENOENT (no rails), -ENOSPC. */
int nd_rails_hca(const struct nd_result *r, char *buf, size_t len);

/* 1 if ip (IPv4/IPv6 text) is an address of a local interface, 0 if not, -errno. */
int nd_addr_on_local_iface(const char *ip);

/*
 * The kernel's route (nd_route.c): RTM_GETROUTE "to dst from src", as `ip route get`.
 * One netlink socket, opened once and asked many times (a coordinator asks once per peer).
 */
struct nd_routes;
struct nd_route {
	int type;		   /* RTN_UNICAST, RTN_LOCAL (one of this host's addresses) */
	int ifindex;		   /* the interface it leaves through */
	char oif[ND_IFNAMSIZ];	   /* its name ("if<N>" when it has none here) */
	char gateway[ND_ADDR6SIZ]; /* "" on-link */
	char prefsrc[ND_ADDR6SIZ]; /* "" none */
	int answered;
};
int nd_routes_open(struct nd_routes **ret);
void nd_routes_close(struct nd_routes *rt);
/* src may be NULL (no source); same family as dst. 0, -EINVAL (a source that is not this
 * host's, or not an address), -ENETUNREACH, -EADDRNOTAVAIL, -ENOMEM, GX_ENETLINK. */
int nd_routes_get(struct nd_routes *rt, const char *src, const char *dst, struct nd_route *out);
/*
 * The path check: 0 when the kernel routes dst from src out of iface (or dst is this
 * host's own address); GX_EROUTE with one line in why otherwise, naming the interface it
 * takes and what is missing ("the kernel routes 192.168.66.100 from 192.168.67.102 via
 * 10.66.0.1 dev eth0: its net1 attachment has no route to 192.168.66.0/24"), dst_plen the
 * destination's prefix length when known (0 otherwise); overlap, when not NULL or "", is the
 * reason instead (the secondary's prefix overlaps the primary's: "..., not through net1: net1
 * 10.66.0.102/24 overlaps eth0 10.66.0.12/24"). No quotes in it: the line travels the wire.
 */
int nd_route_check(struct nd_routes *rt, const char *src, const char *dst, int dst_plen,
		   const char *iface, const char *overlap, char *why, size_t len);
/* The why line of a route out of another interface than iface (pure; tests). */
void nd_route_why(const struct nd_route *rt, const char *src, const char *dst, int dst_plen,
		  const char *iface, const char *overlap, char *why, size_t len);

/*
 * Layer 2 (nd_neigh.c): the neighbour entry of addr on ifindex. state: NUD_* bits; 0 or
 * -ENOENT (none), -ENOMEM, GX_ENETLINK. nd_neigh_why: 1 and "no ARP answer from
 * 192.168.1.7" ("no ND answer" for IPv6) when the entry is FAILED or INCOMPLETE, else 0.
 */
int nd_neigh_state(int ifindex, const char *addr, int *state);
int nd_neigh_why(int ifindex, const char *addr, char *why, size_t len);

/* Text of enum nd_gid_type / nd_link_layer ("RoCE v2", "Ethernet", ...). */
const char *nd_gid_type_str(int type);
const char *nd_link_layer_str(int ll);

#endif
