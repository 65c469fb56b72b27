/* SPDX-License-Identifier: MIT */
/*
 * out_int.h - what gxboot hands the job (README.md "Files written to --out"
 * and "Environment handed to CMD"): the variable set and its rules, the env
 * file (writer and strict reader), env.json, hostfile, rendezvous.json,
 * atomic file writes, and the default slot count.
 */
#ifndef AGENT_OUT_INT_H
#define AGENT_OUT_INT_H

#include "agent/agent.h"
#include "agent/pipeline/pipeline.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- an ordered NAME=value list ------------------------------------------ */
struct agent_kv {
	char *name;
	char *value;
};

struct agent_env {
	struct agent_kv *v;
	size_t n, cap;
};

/* 1 when s is [A-Za-z_][A-Za-z0-9_]* (at most 255 bytes). */
int agent_env_name_ok(const char *s, size_t len);
/* Sets name (replacing its value in place, else appending). -EINVAL / -ENOMEM. */
int agent_env_set(struct agent_env *e, const char *name, const char *value);
/* Marks name as removed from CMD's environment (an entry with value NULL: the env file
 * and env.json leave it out, agent_env_apply_to drops it from the base). */
int agent_env_unset(struct agent_env *e, const char *name);
/* The value of name, or NULL. */
const char *agent_env_get(const struct agent_env *e, const char *name);
void agent_env_free(struct agent_env *e);

/* ---- the variable set -------------------------------------------------------- */
struct agent_env_input {
	const char *master_addr; /* the coordinator's secondary address */
	long master_port;
	long rank, world;
	const char *iface;    /* bootstrap interface, e.g. "net1" */
	const char *addr;     /* this pod's secondary address */
	const char *rails;    /* "mlx5_0:1,mlx5_3:1", "" or NULL when no RDMA */
	int nccl_gid_index;   /* -1: not exported */
	const char *hostfile; /* path of the hostfile, NULL when none is written */
	int override_env;     /* --override-env */
	/* gxboot uses TCP though an RDMA device serves iface (memlock, an unusable device or
	 * port): NCCL would hit the same wall, so NCCL_IB_DISABLE=1 (agent_rdma_unusable) */
	int rdma_unusable;
	/* an observer (MPI launcher): rank -1, no rank variables; addr NULL when it has
	 * no secondary of its own (then iface is the peers' and mpirun's own
	 * OMPI_MCA_oob_tcp_if_include is left out) */
	int observer;
	/* "<path to gxboot> rsh" when every peer serves (remote exec), else NULL */
	const char *rsh_agent;
	const char *rsh_key_file; /* GXBOOT_RSH_KEY_FILE for the agent, or NULL */
	/* Hydra (MPICH, Intel MPI): the agent as ONE executable (the
	 * --out/gxboot-rsh link) and the "host:slots" host file, or NULL */
	const char *rsh_exec;
	const char *hydra_hostfile;
	/* Ray: the head's GCS port (RAY_ADDRESS=<master>:<port>); 0 = not Ray.
	 * A worker also gets FQ_RAY_IP / RAY_IP = the head's secondary address. */
	long ray_port;
	int ray_worker;
};

/* gxboot's own values, exactly README.md's set ("Environment handed to CMD"). GX_EUSAGE on an
 * invalid input. */
int agent_env_ours(const struct agent_env_input *in, struct agent_env *out, char *err,
		   size_t errlen);
/*
 * Applies the rules against the user's environment: host/address/port/rank/
 * count/hostfile variables are always ours (a different user value is logged
 * "NAME: old -> new"); interface/device selections the user set are kept with
 * a warning when they differ, unless override_env. A user's
 * OMPI_MCA_{btl,oob}_tcp_if_exclude is such a selection too: OpenMPI refuses it
 * beside an include list, so ours is left out (or, with override_env, the
 * user's exclude is unset). out gets the result.
 */
int agent_env_merge(const struct agent_env *ours, char **user_envp, int override_env,
		    struct agent_env *out);
/* agent_env_ours + agent_env_merge(user_envp). */
int agent_env_build(const struct agent_env_input *in, char **user_envp, struct agent_env *out,
		    char *err, size_t errlen);

/*
 * The envp for execve: base (NULL: environ) with every variable of e set,
 * GXBOOT_TOKEN removed. Free with agent_envp_free.
 */
int agent_env_apply_to(char **base, const struct agent_env *e, char ***envp_out);
int agent_env_apply(const struct agent_env *e, char ***envp_out);
void agent_envp_free(char **envp);

/* ---- the env file --------------------------------------------------------------- */
#define AGENT_ENV_FILE_MAX (1 << 20)

/* "export NAME='value'\n" per variable; values with control bytes are refused. */
int agent_env_serialize_sh(const struct agent_env *e, char **out, size_t *len, char *err,
			   size_t errlen);
/* {"NAME": "value", ...} in order. NULL on ENOMEM. */
json_t *agent_env_json(const struct agent_env *e);
/*
 * Strict reader of what agent_env_serialize_sh writes: only `export NAME='v'`
 * lines ('\'' escapes); anything else is GX_EUSAGE "malformed env file line N".
 */
int agent_env_parse(const char *buf, size_t len, struct agent_env *out, char *err, size_t errlen);
/* agent_env_parse of a file (at most AGENT_ENV_FILE_MAX bytes). */
int agent_env_load(const char *path, struct agent_env *out, char *err, size_t errlen);
/* The same from an open file (path: for lines); fd stays open. */
int agent_env_load_fd(int fd, const char *path, struct agent_env *out, char *err, size_t errlen);

/* ---- files ------------------------------------------------------------------------ */
/*
 * --out (dir), opened once as a directory descriptor (O_DIRECTORY|O_NOFOLLOW, created 0755
 * first with create): every later create, chmod, rename and unlink is relative to *dfd, so
 * a --out moved or swapped for a symlink after this is never followed. Refused (GX_EUSAGE,
 * one line in err): --out a symlink or not a directory, owned by another user than us or
 * root; a directory on the way to it (the parent, its ancestors, a symlink's target, the
 * working directory's chain for a relative one) that another user could change the entries
 * of: owned by another user, or writable by group or others without the sticky bit. With
 * create, a --out of ours loses group and other write (a Kubernetes emptyDir is 0777).
 * Other failures: -errno with "--out DIR: <why>".
 */
int agent_out_open(const char *dir, int create, int *dfd, char *err, size_t errlen);

/*
 * Writes name atomically in the directory dfd (dir: its path, for lines): a temp file
 * (O_CREAT|O_EXCL|O_NOFOLLOW), fchmod, renameat over name (a symlink planted at name is
 * replaced, never followed); no fsync: readers see whole files, and every start writes
 * them again (an fsync cost ~30 ms with 64 pods writing at once). -errno / GX_EUSAGE.
 */
int agent_write_file_at(int dfd, const char *dir, const char *name, const char *data, size_t len,
			mode_t mode, char *err, size_t errlen);

/* name in dfd as a symlink to target, replaced atomically (temp link + renameat). */
int agent_write_link_at(int dfd, const char *dir, const char *name, const char *target, char *err,
			size_t errlen);

/* A temp file older than this is removed whoever wrote it (a write takes ms). */
#define AGENT_OUT_TEMP_OLD_S 3600

/*
 * Tidy --out: temp files a killed writer left (its pid gone, provably this
 * PID namespace's and this boot's writer, or the file older than
 * AGENT_OUT_TEMP_OLD_S); with all, also
 * env (first: what `gxboot exec` loads), env.json, hostfile, rendezvous.json, rsh.key,
 * failed.json (a failed write leaves no half set that `gxboot exec` could load; a run that
 * meets leaves no earlier answer). Best effort.
 */
void agent_out_clean(int dfd, int all);

/*
 * ---- out_failed.c: a run that did not commit ----
 * A run that meets removes the previous answer first (agent_out_clean(dfd, 1)); one that
 * fails without writing its own writes AGENT_OUT_FAILED: {"command", "exit", "error",
 * "at"}. exec and hosts refuse with its line and exit code.
 */
#define AGENT_OUT_FAILED "failed.json"
struct agent_out_failed {
	char command[16]; /* "init", "run", "serve" */
	int exit;	  /* the failed run's exit status: 2..5 */
	char error[1024]; /* its final line */
	char at[32];	  /* UTC, ISO 8601, "" unknown */
};
/* Writes failed.json atomically into --out (dfd, dir its path for lines) for a run that failed
 * with code (GX_E* / -errno). */
int agent_out_mark_failed(int dfd, const char *dir, const char *command, int code,
			  const char *line);
/* 1 with f filled when dir holds gxboot's own marker (this user's or root's, not
 * group/other-writable), 0 when none; a marker that does not parse reads as exit 5. */
int agent_out_failed_load(const char *dir, struct agent_out_failed *f);
/* 0 when dir holds no marker; else the failed run's code (its exit status) and the line. */
int agent_out_failed_refuse(const char *dir, char *err, size_t errlen);

struct agent_hf_peer {
	const char *addr; /* secondary address */
	long slots;	  /* >= 1 */
	const char *name; /* the peer's name (AGENT_HF_HYDRA, IPv6), or NULL */
};
/* openmpi (and default) "ADDR slots=N", mpich / horovod "ADDR:N" ("[V6]:N"),
 * hydra "ADDR:N" with an IPv6 peer's name instead; one line per peer. */
int agent_hostfile_render(enum agent_hostfile_fmt fmt, const struct agent_hf_peer *peers, size_t n,
			  char **out, size_t *len, char *err, size_t errlen);

struct agent_rdzv_peer_info {
	long rank;
	const char *name;
	const char *addr4, *addr6; /* NULL or "" when absent */
	const char *iface;
	const char *rdma_dev; /* NULL or "" without RDMA */
	int rdma_port;
	const char *rails; /* "mlx5_0:1,..." or NULL */
	int gid_index;	   /* -1 = none */
	long slots;
	const char *primary; /* the phase-1 source address the coordinator saw, NULL/"" */
	int mtu;	     /* 0 unknown */
	int serves;	     /* serves remote exec (RDZV_PF_SERVES) */
};

struct agent_timing {
	const char *name; /* e.g. "peers_ms", "netdetect_ms", "rendezvous_ms" */
	int64_t ms;
};

struct agent_rdzv_info {
	long rank, world;
	const char *master; /* the coordinator's secondary address */
	const char *iface;
	const char *job_id;
	const char *source;	/* where the peers came from */
	const char *written_by; /* the command: "init", "run", "serve" (serve after init reuses only
				   init's) */
	uint64_t round;		/* the rendezvous' round id (0: none) */
	const struct agent_timing *timings;
	size_t ntimings;
	const struct agent_rdzv_peer_info *peers; /* those known here */
	size_t npeers;
};
/* The rendezvous.json object; every string validated first. NULL + err on failure. */
json_t *agent_rendezvous_json(const struct agent_rdzv_info *ri, char *err, size_t errlen);

/* JSON text (indented, trailing newline) for a file. */
int agent_json_text(const json_t *j, char **out, size_t *len);

/*
 * Slots per host: opt_slots when > 0, else NVIDIA_VISIBLE_DEVICES from envp (a
 * list: its length; "all": the count of root/dev/nvidia[0-9]*; none/void/
 * empty: 1), else the count of root/dev/nvidia[0-9]*, else 1.
 */
long agent_slots_detect(long opt_slots, char **envp, const char *root);
/* This pod's slots: --slots, else the job system's for this pod (MPI Operator's
 * "host slots=N", 0 = none), else agent_slots_detect. */
long agent_slots_self(long opt_slots, long job_slots, char **envp, const char *root);
/*
 * Peer i's slots in this pod's files: the job system's per-host value where it
 * has one (slotsPerWorker: the launcher reads /etc/mpi/hostfile, the workers
 * may not), --slots replacing it; else what the peer reported.
 */
long agent_slots_peer(long opt_slots, const long *job_slots, size_t njob, size_t i, long reported);

#endif
