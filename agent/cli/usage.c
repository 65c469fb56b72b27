/* SPDX-License-Identifier: MIT */
/* usage.c - --help texts, one per command. */
#include "agent/agent.h"
#include "agent/cli/cli_int.h"

static const char usage_main[] =
    "gxboot - put distributed training on the pod's secondary / RDMA network\n"
    "\n"
    "Usage:\n"
    "  gxboot [OPTIONS] -- CMD [ARGS...]   wait for peers, detect the secondary/RDMA interface,\n"
    "                                      rendezvous, write files, exec CMD\n"
    "  gxboot init [OPTIONS]               the same without exec (init container)\n"
    "  gxboot exec [--out DIR] -- CMD ...  load DIR/env and exec CMD; no network use\n"
    "  gxboot install DIR                  copy this static binary to DIR/gxboot\n"
    "  gxboot netdetect [--json] [...]     interfaces, RDMA devices, the choice and why\n"
    "  gxboot check [OPTIONS] [--json]     all-pairs TCP/RDMA reachability check\n"
    "  gxboot serve [OPTIONS]              rendezvous, then serve remote exec (MPI workers)\n"
    "  gxboot rsh HOST CMD...              remote exec through a peer's gxboot (plm_rsh_agent)\n"
    "  gxboot hosts [--out DIR]            live peers as host:slots lines (Horovod)\n"
    "  gxboot token                        print a fresh random job token\n"
    "  gxboot version | --help             'gxboot help CMD' for one (run, init, ...)\n"
    "\n"
    "Peers and rendezvous:\n"
    "  --peers LIST          peers in rank order, brace ranges {0..3}; first = coordinator\n"
    "  --nnodes N|MIN:MAX    number of peers        --self NAME   this pod's name\n"
    "  --job-id ID           must match among peers  --port P  rendezvous port (29410)\n"
    "  --timeout SEC         give up after SEC (600)  --token-file F  shared job secret\n"
    "  --require-token       refuse to run without a token\n"
    "  --dns-server IP[:PORT]  ask this DNS server  --full-table  members get every peer\n"
    "  --dry-run             print the plan, use no network\n"
    "  --elastic             the coordinator never waits: pods join whenever they start\n"
    "  --ray head|worker     a Ray node (auto-detected in KubeRay pods): RAY_ADDRESS on net1\n"
    "Interface and RDMA:\n"
    "  --iface NAME|CIDR     bootstrap interface    --network NAME  Multus network to use\n"
    "  --network-status F    Multus network-status JSON or downward-API annotations file\n"
    "  --allow-primary       accept the default-route interface (warns)\n"
    "  --rdma auto|require|off  --require-rdma      --rdma-dev DEV[:PORT][,...]\n"
    "  --rails auto|none|LIST\n"
    "Files, environment, command:\n"
    "  --out DIR (/run/gxboot)  --master-port P (29500)  --slots N\n"
    "  --hostfile-format openmpi|mpich|horovod\n"
    "  --override-env        gxboot's interface choice replaces the user's, env and launch line\n"
    "  --no-rewrite          leave CMD's launch line (torchrun, mpirun, ...) as written\n"
    "  --supervise           stay as CMD's parent   --serve  also serve remote exec\n"
    "  --expect-fabric rdma|secondary|off  end the job (exit 6) when CMD's traffic is\n"
    "                        not on it (implies --supervise); off: no transport report\n"
    "Preflight (run, init, serve; before the COMMIT, on the secondary network):\n"
    "  --preflight           measure every pod's path (echo, stream, RDMA WRITE); a slow or\n"
    "                        broken pod is named: a fixed world exits 7 (it: 8), an elastic\n"
    "                        job starts without it (world and ranks shrink)\n"
    "  --preflight-bytes B (16 MiB)  --preflight-slow F (0.5 of the job's median)\n"
    "  --preflight-shape ring|all    --preflight-settle SEC (5: elastic gather after MIN)\n"
    "check:\n"
    "  --mode star|all|sampled  --sample K (8)   --size BYTES (65536)\n"
    "  --report FILE.html    one self-contained page: heatmap, blamed pods, worst pairs\n"
    "Output:\n"
    "  --json  -v  -q\n"
    "\n"
    "Environment:\n"
    "  GXBOOT_<NAME>  every option, e.g. GXBOOT_PEERS, GXBOOT_TOKEN_FILE; a flag wins\n"
    "  GXBOOT_TOKEN   the job token itself (instead of --token-file); never handed to CMD\n"
    "Files:\n"
    "  --out DIR      env, env.json, rendezvous.json, hostfile; failed.json when a run fails\n"
    "  /etc/hosts     this pod's subdomain, which qualifies bare peer names (job-worker-1)\n"
    "  /dev/termination-log  the failure line (kubectl describe pod shows it)\n"
    "Exit status:\n"
    "  0         ok (run: CMD's status; rsh: the remote status)\n"
    "  1         check: a pair or rail failed\n"
    "  2         usage (also an option the command does not take)\n"
    "  3         peers missing at --timeout\n"
    "  4         no usable secondary interface\n"
    "  5         rendezvous failed\n"
    "  6         --expect-fabric ended the job\n"
    "  7, 8      --preflight named another pod, this pod\n"
    "  126, 127  CMD cannot run, not found\n"
    "  128+n     CMD killed by signal n\n"
    "  255       rsh: the peer cannot be reached or refuses\n";

static const char usage_run[] =
    "Usage: gxboot [OPTIONS] -- CMD [ARGS...]\n"
    "Wait for every peer, detect the secondary/RDMA interface, rendezvous (ranks, MASTER_ADDR\n"
    "on the secondary network), write --out files, then exec CMD with the job's environment.\n"
    "As PID 1 (or with --supervise/--serve) gxboot forks CMD and stays as its parent, and\n"
    "reports which network and transport CMD's traffic really used (one 'fabric:' line\n"
    "once there is evidence and at CMD's exit, --out/fabric.json; the coordinator adds the\n"
    "job-wide line); --expect-fabric rdma|secondary ends the job with exit 6 when it is not.\n"
    "A launch line written for eth0 (torchrun, mpirun/mpiexec, deepspeed) is rewritten onto the\n"
    "secondary addresses of the hosts that are peers; every change of meaning (rank, count,\n"
    "port, c10d -> static) is a warning saying why. Interface pins on it (--mca\n"
    "*_tcp_if_include, -x/-genv UCX_NET_DEVICES=, -iface) are kept with a warning like the same\n"
    "variables in the environment; --override-env replaces both. --no-rewrite: CMD as written.\n"
    "torchrun --nnodes MIN:MAX needs gxboot's own --nnodes MIN:MAX (else exit 2).\n"
    "Options: --peers --nnodes --self --job-id --port --timeout --token-file --require-token\n"
    "  --dns-server --full-table --dry-run --iface --network --network-status --allow-primary\n"
    "  --rdma --rdma-dev --rails --out --master-port --slots --hostfile-format --override-env\n"
    "  --no-rewrite --supervise --serve --expect-fabric --elastic --ray --preflight\n"
    "  --preflight-bytes --preflight-slow --preflight-shape --preflight-settle -v -q\n";

static const char usage_init[] =
    "Usage: gxboot init [OPTIONS]\n"
    "Like the run command without exec: exit 0 once the files are written in --out\n"
    "(env, env.json, hostfile, rendezvous.json). Main container: gxboot exec -- CMD.\n"
    "It removes an earlier run's files first; when it fails, --out/failed.json says why.\n"
    "Options: as for the run command (gxboot help run).\n";

static const char usage_exec[] =
    "Usage: gxboot exec [--out DIR] -- CMD [ARGS...]\n"
    "Load DIR/env (written by 'gxboot init') and exec CMD. No network.\n"
    "When the last init (or run) into DIR did not commit (DIR/failed.json), CMD is not run:\n"
    "one line with that run's cause, and its exit status (2-5).\n";

static const char usage_install[] = "Usage: gxboot install DIR\n"
				    "Copy this static binary to DIR/gxboot (mode 0755, atomic).\n";

static const char usage_netdetect[] =
    "Usage: gxboot netdetect [--json] [--iface NAME|CIDR] [--rdma-dev DEV[:PORT]]\n"
    "                        [--network-status F] [--network NAME] [--allow-primary]\n"
    "List interfaces and RDMA devices, the chosen bootstrap interface, rails, and why.\n";

static const char usage_check[] =
    "Usage: gxboot check [OPTIONS] [--mode star|all|sampled] [--sample K] [--size BYTES]\n"
    "                    [--rails [auto|LIST]] [--json] [--report FILE.html]\n"
    "All-pairs (or star) TCP and RDMA-CM reachability among the peers on the chosen\n"
    "interface. --mode sampled: K random peers per pod and the coordinator. --rails also\n"
    "probes rail k <-> rail k between every pair (TCP on each rail's netdev, RDMA-CM on its\n"
    "device; without RDMA, auto = every up secondary netdev). --report: the coordinator\n"
    "writes the matrix as one HTML page.\n"
    "Exit 1 when any pair or rail probe fails. Port: --check-port, else --port + 1.\n";

static const char usage_serve[] =
    "Usage: gxboot serve [OPTIONS]\n"
    "Rendezvous (or load --out/rendezvous.json after 'init --serve'), then serve remote-exec\n"
    "requests from token holders on the secondary address, port --port + 2. Needs a token.\n"
    "Exits with the job's status when the coordinator says the job ended.\n"
    "Reports the transport of the sessions' commands (--expect-fabric as for the run).\n";

static const char usage_rsh[] =
    "Usage: gxboot rsh [ssh flags ignored] HOST CMD...\n"
    "Run CMD on HOST through its gxboot serve (OMPI_MCA_plm_rsh_agent).\n"
    "Exit: the remote status; 255 when HOST cannot be reached.\n";

static const char usage_hosts[] =
    "Usage: gxboot hosts [--out DIR]\n"
    "Print live peers as host:slots lines (Horovod host discovery).\n"
    "Refuses like exec, with the cause and exit status, when the last run did not commit.\n";

static const char usage_version[] = "Usage: gxboot version\n";
static const char usage_token[] =
    "Usage: gxboot token\n"
    "Prints a fresh job token: 32 random bytes (libsodium), base64, one line. For one Secret\n"
    "per job: kubectl create secret generic JOB-gxboot-token --from-literal=token=$(gxboot "
    "token)\n";

const char *agent_usage(enum agent_cmd cmd)
{
	switch (cmd) {
	case AGENT_CMD_RUN:
		return usage_run;
	case AGENT_CMD_INIT:
		return usage_init;
	case AGENT_CMD_EXEC:
		return usage_exec;
	case AGENT_CMD_INSTALL:
		return usage_install;
	case AGENT_CMD_NETDETECT:
		return usage_netdetect;
	case AGENT_CMD_CHECK:
		return usage_check;
	case AGENT_CMD_SERVE:
		return usage_serve;
	case AGENT_CMD_RSH:
		return usage_rsh;
	case AGENT_CMD_HOSTS:
		return usage_hosts;
	case AGENT_CMD_TOKEN:
		return usage_token;
	case AGENT_CMD_VERSION:
		return usage_version;
	case AGENT_CMD_NONE:
	case AGENT_CMD_HELP:
		return usage_main;
	}
	return usage_main;
}
