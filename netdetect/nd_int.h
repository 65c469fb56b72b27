/* SPDX-License-Identifier: MIT */
/*
 * nd_int.h - netdetect internals: the inventory model (links, RDMA devices,
 * network-status), the verbs ops seam, and the pure functions the choice is
 * built from. See netdetect/README.md.
 */
#ifndef ND_INT_H
#define ND_INT_H

#include "netdetect/netdetect.h"

#include <stdint.h>
#include <sys/types.h>

#define ND_PORT_ACTIVE 4 /* IBV_PORT_ACTIVE */
#define ND_ARPHRD_INFINIBAND 32
#define ND_MEMLOCK_MIN (64ull << 20) /* below this (without IPC_LOCK) RDMA is unusable */
#define ND_MEMLOCK_INF UINT64_MAX
#define ND_MAX_LINKS 4096
#define ND_MAX_DEVS 256
#define ND_MAX_GIDS 4096

struct nd_addr {
	int family; /* AF_INET / AF_INET6 */
	int prefixlen;
	int scope; /* RT_SCOPE_*: 0 universe, 253 link, 254 host */
	unsigned char a[16];
	char str[ND_ADDR6SIZ];
};

struct nd_link {
	char name[ND_IFNAMSIZ];
	int ifindex;
	char kind[16]; /* veth, macvlan, ..., physical, ipoib, loopback */
	int admin_up;  /* IFF_UP */
	int carrier;
	int operstate; /* IF_OPER_* */
	int mtu;
	int arptype;
	unsigned char lladdr[32];
	int lladdr_len;
	char mac[64];	/* lladdr as text */
	int is_default; /* holds a default route (v4 or v6): a fact, not the primary */
	int is_loopback;
	unsigned int flags; /* IFF_* (ifi_flags): NOARP, POINTOPOINT, ... */
	int master;	    /* IFLA_MASTER: the bridge, bond or VRF it is a port of; 0 none */
	int peer_here;	    /* a veth/netkit whose peer is in this namespace (no LINK_NETNSID) */
	int speed_mbps;	    /* -1 unknown */
	struct nd_addr *addrs;
	size_t naddrs;
};

struct nd_gid {
	uint32_t index;
	uint32_t port;
	uint32_t type; /* enum nd_gid_type */
	uint32_t ifindex;
	unsigned char raw[16];
};

struct nd_port {
	int num;
	int state; /* IBV_PORT_* */
	int link_layer;
	int mtu; /* bytes */
	int rate_mbps;
	struct nd_gid *gids;
	size_t ngids;
};

struct nd_device {
	char name[ND_DEVSIZ];
	char uverbs[32]; /* "uverbs0" */
	int uverbs_ok;	 /* /dev/infiniband/<uverbs> present and read-write */
	int open_err;	 /* 0 or -errno from opening / querying */
	uint64_t guid;	 /* node GUID, host order */
	struct nd_port *ports;
	size_t nports;
};

struct nd_net {
	char name[320]; /* "namespace/name": 63 + 1 + 253 */
	char iface[ND_IFNAMSIZ];
	char mac[96]; /* as text; IPoIB's is 20 bytes (59 characters), MAX_ADDR_LEN 32 */
	int is_default;
	char **ips;
	size_t nips;
	char pci[32];
	char rdma_dev[ND_DEVSIZ];
};

/* One device the SR-IOV network device plugin handed this pod (nd_pcidev.c), or the
 * pci-address of a network-status device-info resolved through sysfs (var ""). */
struct nd_pcidev {
	char var[128]; /* "PCIDEVICE_NVIDIA_COM_RDMA_VF"; "" = network-status device-info */
	char addr[64]; /* "0000:3b:00.2" (PCI BDF) or an auxiliary id "mlx5_core.sf.4" */
	char rdma_dev[ND_DEVSIZ]; /* "" unknown */
	char rdma_src[8];	  /* where rdma_dev came from: "_INFO", "sysfs", "uverbs", "" */
	char uverbs[32];	  /* "uverbs3" from _INFO rdma.uverbs, "" */
	char netdev[ND_IFNAMSIZ]; /* its netdev in this namespace (sysfs), "" none */
	int vfio; /* _INFO has a "vfio" provider: a DPDK device, no netdev by design */
};

struct nd_inventory {
	struct nd_link *links;
	size_t nlinks;
	struct nd_device *devs;
	size_t ndevs;
	int rdma_err; /* listing devices failed: -ENOSYS when the kernel has no RDMA */
	struct nd_net *nets;
	size_t nnets;
	int nets_loaded;  /* a network-status file was read */
	int nets_old_key; /* ... from the older k8s.v1.cni.cncf.io/networks-status annotation */
	struct nd_pcidev *pcidevs;
	size_t npcidevs;
	uint64_t memlock; /* RLIMIT_MEMLOCK soft limit; ND_MEMLOCK_INF unlimited */
	/* a Kubernetes pod: the kubelet sets KUBERNETES_SERVICE_HOST in every container (with
	 * or without service links). Only there is eth0 the pod network by the CRI's
	 * CNI_IFNAME: podman's kube play and docker name their networks' interfaces eth0,
	 * eth1, ... in any order. */
	int kubernetes;
	int ipc_lock; /* CAP_IPC_LOCK effective */
};

void nd_inventory_free(struct nd_inventory *inv);

/* ---- nd_links.c: netlink ---------------------------------------------- */
/* The boundary: libnl's NLE_* (returned negated) to -errno / GX_ENETLINK, what in err. */
int nd_nl_err(int nle, const char *what, char *err, size_t errlen);
int nd_links_collect(struct nd_inventory *inv, char *err, size_t errlen);
/* up = IFF_UP, carrier, operstate not down; why (when not up) says which. */
int nd_link_is_up(const struct nd_link *l, const char **why);
const struct nd_link *nd_link_by_name(const struct nd_inventory *inv, const char *name);
const struct nd_link *nd_link_by_index(const struct nd_inventory *inv, int ifindex);
/* First global (scope universe) address of family, or NULL. */
const struct nd_addr *nd_link_global(const struct nd_link *l, int family);
const char *nd_operstate_str(int operstate);

/* ---- verbs seam (nd_verbs.c real, tests fake) ------------------------- */
struct nd_vdev {
	char name[ND_DEVSIZ];
	char uverbs[32];
	int uverbs_ok;
};

struct nd_port_attr {
	int state;
	int link_layer;
	int mtu; /* bytes */
	int rate_mbps;
	int gid_tbl_len;
};

struct nd_verbs_ops {
	/* 0 and a malloc'd array (caller frees), or -errno (-ENOSYS: no RDMA in the kernel) */
	int (*list)(void *arg, struct nd_vdev **devs, size_t *n);
	int (*open)(void *arg, const char *name, void **h);
	void (*close)(void *arg, void *h);
	int (*query_device)(void *arg, void *h, uint64_t *guid, int *nports);
	int (*query_port)(void *arg, void *h, int port, struct nd_port_attr *pa);
	/* every valid GID entry of every port; 0 and *n, or -errno */
	int (*query_gids)(void *arg, void *h, struct nd_gid *out, size_t max, size_t *n);
	void *arg;
};

const struct nd_verbs_ops *nd_verbs_real(void);

/* ---- nd_rdma.c: device / port / GID model ----------------------------- */
int nd_rdma_collect(const struct nd_verbs_ops *ops, struct nd_inventory *inv);
/* 1 when the GID belongs to link l (ifindex AND address: ifindexes repeat across pods). */
int nd_gid_owned(const struct nd_gid *g, const struct nd_link *l);
/* The link this port serves (RoCE: owns a GID; IB: IPoIB lladdr), or NULL. */
const struct nd_link *nd_port_link(const struct nd_inventory *inv, const struct nd_port *p);
/* The port serving link l (an active port of a usable device first): 0 or -ENOENT. */
int nd_link_port(const struct nd_inventory *inv, const struct nd_link *l,
		 const struct nd_device **dev, const struct nd_port **port);

struct nd_gid_pick {
	int index; /* -1 none */
	int type;  /* enum nd_gid_type */
	int v2_v4; /* RoCE v2 IPv4-mapped entry of l, -1 */
	int v2_v6; /* RoCE v2 global IPv6 entry of l, -1 */
};
/* GID choice for port p on link l: v2 IPv4-mapped, v2 IPv6 global, else v1; IB: 0. */
void nd_gid_choose(const struct nd_port *p, const struct nd_link *l, struct nd_gid_pick *out);
/* The device is usable from here (opened, uverbs present). */
int nd_dev_usable(const struct nd_device *d);
const struct nd_device *nd_dev_by_name(const struct nd_inventory *inv, const char *name);
void nd_gid_str(const unsigned char raw[16], char *buf, size_t len);

/* ---- nd_netstatus.c ---------------------------------------------------- */
/* Parse a network-status JSON array or annotations text (len bytes). */
int nd_netstatus_parse(const char *text, size_t len, struct nd_net **nets, size_t *n, char *err,
		       size_t errlen);
int nd_netstatus_load(const char *path, struct nd_inventory *inv, char *err, size_t errlen);
void nd_nets_free(struct nd_net *nets, size_t n);

/* ---- nd_pcidev.c: SR-IOV network device plugin env (README.md "Sources") -- */
#define ND_PCIDEV_MAX 64	       /* devices kept from the environment */
#define ND_PCIDEV_LIST_MAX 4096	       /* bytes of one PCIDEVICE_<RESOURCE> value */
#define ND_PCIDEV_INFO_MAX (64u << 10) /* bytes of one PCIDEVICE_<RESOURCE>_INFO value */
#define ND_SYSFS_ROOT "/sys"

/* 1 for "dddd:bb:dd.f" (hex) or an auxiliary device id ("mlx5_core.sf.4"). */
int nd_pcidev_addr_ok(const char *addr);
/*
 * PCIDEVICE_<RESOURCE>=<addr,...> and PCIDEVICE_<RESOURCE>_INFO={"<addr>":{"rdma":
 * {"rdma_dev":..,"uverbs":..},...}} from envp (NULL-terminated "NAME=VALUE"). *devs
 * (free()) gets every valid address with what _INFO says of it. 0; GX_EJSON with one
 * line in err when a variable was rejected (the valid ones are still returned);
 * -ENOMEM (nothing returned).
 */
int nd_pcidev_parse(char *const *envp, struct nd_pcidev **devs, size_t *n, char *err,
		    size_t errlen);
/* The RDMA device of PCI / auxiliary device addr under sysroot (bus/<pci|auxiliary>/devices/
 * <addr>/infiniband/<dev>): 0, -ENOENT, -EINVAL (not an address). Several: the first in byte
 * order, as the plugin's rdma_dev. */
int nd_sysfs_rdma(const char *sysroot, const char *addr, char *dev, size_t len);
/* Its netdev in this namespace (.../<addr>/net/<ifname>): 0, -ENOENT, -EINVAL. */
int nd_sysfs_netdev(const char *sysroot, const char *addr, char *ifname, size_t len);
/* Fill netdev, and rdma_dev where _INFO did not name it (sysfs, then uverbs -> ibdev). */
void nd_pcidev_resolve(const char *sysroot, struct nd_pcidev *devs, size_t n);
/* Parse envp (NULL = environ), resolve under sysroot (NULL = /sys), add network-status
 * device-info pci-addresses without rdma-device, into inv. Return as nd_pcidev_parse. */
int nd_pcidev_load(char *const *envp, const char *sysroot, struct nd_inventory *inv, char *err,
		   size_t errlen);
const struct nd_pcidev *nd_pcidev_by_addr(const struct nd_inventory *inv, const char *addr);
const struct nd_pcidev *nd_pcidev_by_netdev(const struct nd_inventory *inv, const char *ifname);
/* One warning per PCIDEVICE_* variable whose devices have no netdev in this pod. */
void nd_pcidev_absent(const struct nd_inventory *inv, struct nd_result *r);

/* ---- the choice (nd_choose.c, nd_rails.c, nd_detect.c) ----------------- */
#define ND_MAX_WANT 32

struct nd_devport {
	char dev[ND_DEVSIZ];
	int port; /* 0 = any */
};

enum nd_rails_mode {
	ND_RAILS_AUTO = 0,
	ND_RAILS_NONE,
	ND_RAILS_LIST,
};

struct nd_ctx {
	const struct nd_request *req;
	const struct nd_inventory *inv;
	struct nd_result *r;
	char *err;
	size_t errlen;
	const struct nd_link *chosen;
	int step;			     /* 1..5: the rule that chose */
	const char *ns_rdma;		     /* rdma-device network-status gives the chosen net */
	const char *ns_name;		     /* the network-status network chosen */
	const struct nd_net *ns_net;	     /* its entry (the addresses it names) */
	const struct nd_pcidev *pd;	     /* the PCIDEVICE_* device that chose (step 2) */
	struct nd_devport want[ND_MAX_WANT]; /* --rdma-dev */
	size_t nwant;
	int rails_mode;
	char rails_list[ND_MAX_WANT][ND_DEVSIZ];
	size_t nrails_list;
	/* RDMA environment */
	int memlock_low;
	char memlock_txt[32];
};

#define ND_WHY_MAX 160 /* a passed-over reason, as struct nd_passed.why */

/* Append "; "-separated text to r->reason. */
void nd_reason(struct nd_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int nd_result_warn(struct nd_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An info-level line (r->notes). */
int nd_result_note(struct nd_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int nd_result_pass(struct nd_result *r, const char *iface, const char *why);
/*
 * NULL when l may be a secondary (bootstrap) interface; else a predicate: "is down (...)",
 * "is the pod network (...)". r->inv and r's pod network (nd_primary_decide) are used;
 * buf (ND_WHY_MAX) holds texts that name another link.
 */
const char *nd_secondary_why(const struct nd_result *r, const struct nd_link *l, char *buf,
			     size_t len);
/* NULL when l holds a global address, else "has only link-local addresses" / "has no address". */
const char *nd_addr_why(const struct nd_link *l);

/* ---- nd_primary.c: the pod network, hostNetwork, CNI plumbing, overlap --- */
/* Rules 1, 3, 4 of README "The pod network" into r->primary*, r->host_network*. */
void nd_primary_decide(struct nd_ctx *c);
/* 1 when l is the pod (node) network r decided on. */
int nd_link_is_primary(const struct nd_result *r, const struct nd_link *l);
/* Why a primary link is passed over: "is the pod network (eth0 in a pod)", ... */
const char *nd_primary_why(const struct nd_result *r);
/* NULL, or why l is CNI / kernel plumbing and never a job's network (buf as above). */
const char *nd_virtual_why(const struct nd_result *r, const struct nd_link *l, char *buf,
			   size_t len);
/* After the choice: r->overlap and a warning when the chosen prefix overlaps the pod network's. */
void nd_overlap_check(struct nd_ctx *c);
/* l's address equal to the text ip ("192.168.1.5", "fd00::5", a "/plen" ignored), or NULL. */
const struct nd_addr *nd_link_addr_of(const struct nd_link *l, const char *ip);
/* Link speed for ranking: the larger of ethtool speed and an active port's rate (Mb/s). */
int nd_link_rank_speed(const struct nd_inventory *inv, const struct nd_link *l);
/* Steps 1-5 of README.md "The choice" (nd_choose.c): sets ctx->chosen or returns an error. */
int nd_choose_iface(struct nd_ctx *c);
void nd_fill_passed(struct nd_ctx *c);
/* RDMA of the chosen iface, rails, NCCL GID, memlock/uverbs (nd_rails.c). */
int nd_choose_rdma(struct nd_ctx *c);
int nd_parse_request(struct nd_ctx *c);

#endif
