/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the agent module: CLI options, peer discovery, files, environment,
 * exec/supervise. It composes netdetect/ and rdzv/ into the commands of
 * README.md "The interface".
 */
#ifndef AGENT_H
#define AGENT_H

#include <stddef.h>
#include <stdint.h>

enum agent_cmd {
	AGENT_CMD_NONE = 0,
	AGENT_CMD_RUN,
	AGENT_CMD_INIT,
	AGENT_CMD_EXEC,
	AGENT_CMD_INSTALL,
	AGENT_CMD_NETDETECT,
	AGENT_CMD_CHECK,
	AGENT_CMD_SERVE,
	AGENT_CMD_RSH,
	AGENT_CMD_HOSTS,
	AGENT_CMD_TOKEN, /* print a fresh random token */
	AGENT_CMD_VERSION,
	AGENT_CMD_HELP,
};

enum agent_rdma_mode {
	AGENT_RDMA_AUTO = 0,
	AGENT_RDMA_REQUIRE,
	AGENT_RDMA_OFF,
};

enum agent_hostfile_fmt {
	AGENT_HF_DEFAULT = 0, /* not given: files openmpi, `gxboot hosts` "host:slots" */
	AGENT_HF_OPENMPI,
	AGENT_HF_MPICH,
	AGENT_HF_HOROVOD,
	AGENT_HF_HYDRA, /* hostfile.hydra: "host:slots", an IPv6 peer by name */
};

enum agent_check_mode {
	AGENT_CHECK_DEFAULT = 0,
	AGENT_CHECK_STAR,
	AGENT_CHECK_ALL,
	AGENT_CHECK_SAMPLED, /* --mode sampled: --sample K random peers per pod + the coordinator */
};

/* --expect-fabric (the transport watcher, agent/fabric/FABRIC.md) */
enum agent_fabric_expect {
	AGENT_FABRIC_REPORT = 0, /* not given: report, never end the job */
	AGENT_FABRIC_SECONDARY,	 /* end it when peer traffic goes over the primary network */
	AGENT_FABRIC_RDMA,	 /* ... or over TCP while verified RDMA rails exist */
	AGENT_FABRIC_OFF,	 /* no watcher, no library variables */
};

enum agent_pf_shape {
	AGENT_PF_SHAPE_RING = 0, /* ring + chord (all pairs up to 4 pods) */
	AGENT_PF_SHAPE_ALL,	 /* every pair (up to 64 pods) */
};

enum agent_ray_role {
	AGENT_RAY_AUTO = 0, /* KubeRay's env decides, else not Ray */
	AGENT_RAY_HEAD,
	AGENT_RAY_WORKER,
};

/* Parsed options. Strings point into argv/environ (never freed). */
struct agent_opts {
	enum agent_cmd cmd;
	/* peers and rendezvous */
	const char *peers;
	long nnodes_min, nnodes_max; /* 0 = not given */
	const char *self;
	const char *job_id;
	long port;	 /* default 29410 */
	long check_port; /* 0 = port + 1 */
	long timeout;	 /* seconds, default 600 */
	const char *token_file;
	int require_token;
	const char *dns_server;
	int full_table;
	int dry_run;
	int elastic;		 /* --elastic: the coordinator never waits for others (Ray) */
	enum agent_ray_role ray; /* --ray head|worker */
	/* interface and RDMA */
	const char *iface;
	const char *network;
	const char *network_status;
	int allow_primary;
	enum agent_rdma_mode rdma;
	const char *rdma_dev;
	const char *rails;
	/* files, environment, command */
	const char *out;  /* default /run/gxboot */
	long master_port; /* default 29500 */
	long slots;	  /* 0 = auto */
	enum agent_hostfile_fmt hostfile_format;
	int override_env;
	int no_rewrite;
	int supervise;
	int serve;
	enum agent_fabric_expect expect_fabric;
	/* --preflight (README "Preflight") */
	int preflight;
	long preflight_bytes;  /* 0: AGENT_PF_BYTES */
	double preflight_slow; /* 0: AGENT_PF_SLOW */
	enum agent_pf_shape preflight_shape;
	long preflight_settle; /* s, 0: AGENT_PF_SETTLE_S */
	/* check */
	enum agent_check_mode check_mode;
	long size;	    /* default 65536 */
	const char *report; /* check --report FILE.html */
	long sample;	    /* check --mode sampled: peers per pod (default 8) */
	/* output */
	int json;
	int verbosity; /* -v adds, -q subtracts */
	/* positional */
	const char *install_dir; /* install DIR */
	const char *rsh_host;	 /* rsh HOST */
	char **argv;		 /* CMD [ARGS...] after "--" (or rsh's CMD...), NULL-terminated */
	int argc;
	int help; /* --help given */
};

/* The command's word on the command line ("gxboot" for none). */
const char *agent_cmd_name(enum agent_cmd cmd);
/* 1 when NAME is an interface/device selection the user may keep. */
int agent_env_is_selection(const char *name);

#endif
