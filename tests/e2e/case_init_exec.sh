#!/usr/bin/env bash
# Init-container flow: `gxboot install` into a shared dir, `gxboot init` in
# every pod (eth0 closed except DNS + 29410), then `gxboot exec -- env` in each pod inside a
# network namespace with no interface at all (exec uses no network).
# Asserts: install: DIR/gxboot is a 0755 copy of the binary; init: exit 0 in all pods, env,
# env.json, rendezvous.json written in every pod, hostfile on the coordinator only (no
# --full-table); exec -- env shows MASTER_ADDR=<coord net1>, MASTER_PORT=29500, NODE_RANK,
# NNODES=3, GXBOOT_RANK, GXBOOT_WORLD_SIZE=3, GXBOOT_IFACE=net1, GXBOOT_ADDR=<own net1>,
# PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT, NCCL_SOCKET_IFNAME==net1,
# GLOO_SOCKET_IFNAME=net1, OMPI_MCA_btl_tcp_if_include=net1, OMPI_MCA_oob_tcp_if_include=net1,
# and no GXBOOT_TOKEN; env.json has the same values as env; in exec a user MASTER_ADDR is
# replaced and a user GLOO_SOCKET_IFNAME is kept; exec of a missing command exits 127.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
S=$GX_DIR/shared
mkdir -p "$S"
"$GXBOOT" install "$S" || fail "gxboot install exited $?"
cmp -s "$GXBOOT" "$S/gxboot" || fail "installed binary differs"
[ "$(stat -c %a "$S/gxboot")" = 755 ] || fail "installed mode $(stat -c %a "$S/gxboot")"
GXBOOT=$S/gxboot
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
for i in 1 2 0; do
  mkdir -p "$GX_DIR/out$i"
  pod_bg "$i" "$GX_DIR/pod$i.log" env GXBOOT_TOKEN_FILE="$T" \
    "$GXBOOT" init --peers 'job-worker-{0..2}' --timeout 15 --out "$GX_DIR/out$i"
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 30 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do
  for f in env env.json rendezvous.json; do
    [ -s "$GX_DIR/out$i/$f" ] || fail "job-worker-$i: no $f after init" "$GX_DIR/pod$i.log"
  done
done
[ -s "$GX_DIR/out0/hostfile" ] || fail "coordinator: no hostfile"
for i in 1 2; do [ ! -e "$GX_DIR/out$i/hostfile" ] || fail "member job-worker-$i wrote a hostfile"; done

M=$(pod_net1 0)
for i in 0 1 2; do
  o=$GX_DIR/exec$i.out
  # a fresh network namespace: no interface, so any network use would fail
  pod_exec "$i" unshare -n env MASTER_ADDR=10.9.9.9 GLOO_SOCKET_IFNAME=eth0 GXBOOT_TOKEN=secret \
    "$GXBOOT" exec --out "$GX_DIR/out$i" -- env >"$o" 2>"$GX_DIR/exec$i.err" ||
    fail "job-worker-$i: gxboot exec -- env exited $?" "$GX_DIR/exec$i.err"
  for kv in "MASTER_ADDR=$M" MASTER_PORT=29500 "NODE_RANK=$i" NNODES=3 "GXBOOT_RANK=$i" \
    GXBOOT_WORLD_SIZE=3 GXBOOT_IFACE=net1 "GXBOOT_ADDR=$(pod_net1 "$i")" PET_NNODES=3 \
    "PET_NODE_RANK=$i" "PET_MASTER_ADDR=$M" PET_MASTER_PORT=29500 NCCL_SOCKET_IFNAME==net1 \
    GLOO_SOCKET_IFNAME=eth0 OMPI_MCA_btl_tcp_if_include=net1 OMPI_MCA_oob_tcp_if_include=net1; do
    grep -qxF -- "$kv" "$o" || fail "job-worker-$i: exec -- env lacks $kv" "$o" "$GX_DIR/exec$i.err"
  done
  grep -q "^GXBOOT_TOKEN=" "$o" && fail "job-worker-$i: GXBOOT_TOKEN reached CMD"
  # env.json carries the same values as env
  "$PY" - "$GX_DIR/out$i/env.json" "$GX_DIR/out$i/env" <<'PYEOF' || fail "job-worker-$i: env.json != env"
import json, subprocess, sys
j = json.load(open(sys.argv[1]))
for k, v in j.items():
    got = subprocess.run(["env", "-i", "/bin/sh", "-c", '. "$1" && printenv "$2"', "sh", sys.argv[2], k],
                         capture_output=True, text=True).stdout.rstrip("\n")
    if got != str(v):
        sys.exit("%s: env.json %r, env %r" % (k, v, got))
for k in ("MASTER_ADDR", "NODE_RANK", "GXBOOT_IFACE"):
    if k not in j:
        sys.exit("env.json lacks " + k)
PYEOF
done
pod_exec 1 "$GXBOOT" exec --out "$GX_DIR/out1" -- /nonexistent/cmd 2>/dev/null
rc=$?
[ "$rc" = 127 ] || fail "exec of a missing command exited $rc (want 127)"
echo "install + init + exec OK"
