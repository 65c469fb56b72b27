#!/usr/bin/env bash
# The arm64 binary in a job: GH200 and GB200 nodes are arm64. build-arm64/gxboot runs under
# qemu-user (tests/e2e/gxboot-arm64) beside the amd64 build/gxboot, so each build meets the
# other on the wire too. Every pod's eth0 is closed except DNS and 29410.
#   job 1, init + exec: job-worker-0 (the coordinator) and job-worker-1 arm64, job-worker-2
#          amd64; then the arm64 `gxboot exec` starts a (native) command in pods 0 and 1
#   job 2, gxboot -- CMD: job-worker-0 (the coordinator) amd64, job-worker-1 and -2 arm64
# Asserts: job 1: every pod exits 0 and its env has MASTER_ADDR = the coordinator's net1
# address, NODE_RANK = its index, NNODES=3, GXBOOT_IFACE=net1 and GXBOOT_ADDR = its own net1
# address; the arm64 pods logged their interface choice net1; `exec -- sh` in each arm64 pod
# sees the same MASTER_ADDR and NODE_RANK. job 2: every pod exits 0 and CMD reports its rank,
# MASTER_ADDR:29500 on the coordinator's net1, GXBOOT_IFACE and GLOO_SOCKET_IFNAME net1.
# No arm64 binary or no qemu-aarch64-static fails the case: make check builds the binary
# first (tests/cross_arm64.sh), make deps installs qemu-user-static.
# Prints how long each job took (qemu-user translates every instruction).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
ARM64=$GX_E2E_DIR/gxboot-arm64
# not a skip: a missing binary or qemu is a broken test bed
v=$("$ARM64" version) || fail "gxboot-arm64 version exited $?"
gx_log "arm64: $v"
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
M=$(pod_net1 0)
declare -a BIN

# job_start LOG i ARGS... : pod i runs ${BIN[i]} ARGS, its log $GX_DIR/LOG<i>.log
job_start() {
  local log=$1 i=$2
  shift 2
  pod_bg "$i" "$GX_DIR/$log$i.log" "${BIN[i]}" "$@"
  GX_PIDS[i]=$GX_PID
}

# job_wait LOG T0 : every pod's run (60 s in all) exited 0; logs how long the job took since T0
job_wait() {
  local log=$1 t0=$2 i arch=""
  gx_wait_all 60 0 1 2
  for i in 0 1 2; do
    [ "${BIN[i]}" = "$ARM64" ] && arch="${arch:+$arch }arm64" || arch="${arch:+$arch }amd64"
  done
  gx_log "$log: pods 0-2 ($arch) exited ${GX_RC[*]} within $((($(date +%s%N) - t0) / 1000000)) ms"
  for i in 0 1 2; do
    [ "${GX_RC[i]}" = 0 ] || fail "$log: job-worker-$i exited ${GX_RC[i]}" "$GX_DIR/$log$i.log"
  done
}

# job 1: init, then exec; the coordinator and one member arm64
BIN=("$ARM64" "$ARM64" "$GXBOOT")
t0=$(date +%s%N)
for i in 2 1 0; do
  mkdir -p "$GX_DIR/out$i"
  job_start init "$i" init --peers 'job-worker-{0..2}' --token-file "$T" --timeout 30 --out "$GX_DIR/out$i"
done
job_wait init "$t0"
for i in 0 1 2; do
  e=$GX_DIR/out$i/env
  [ -s "$e" ] || fail "job-worker-$i: no env after init" "$GX_DIR/init$i.log"
  for kv in "MASTER_ADDR=$M" "NODE_RANK=$i" NNODES=3 GXBOOT_IFACE=net1 "GXBOOT_ADDR=$(pod_net1 "$i")"; do
    [ "$(gx_env "$e" "${kv%%=*}")" = "${kv#*=}" ] || fail "job-worker-$i: env lacks $kv" "$e" "$GX_DIR/init$i.log"
  done
done
for i in 0 1; do
  grep -q "interface net1 ($(pod_net1 "$i"))" "$GX_DIR/init$i.log" ||
    fail "job-worker-$i: no interface choice net1 logged" "$GX_DIR/init$i.log"
  o=$(pod_exec "$i" "$ARM64" exec --out "$GX_DIR/out$i" -- /bin/sh -c 'echo "$MASTER_ADDR $NODE_RANK"' \
    2>"$GX_DIR/exec$i.err") || fail "job-worker-$i: arm64 exec exited $?" "$GX_DIR/exec$i.err"
  [ "$o" = "$M $i" ] || fail "job-worker-$i: arm64 exec -- sh printed '$o', want '$M $i'" "$GX_DIR/exec$i.err"
done
echo "init: arm64 coordinator and member, amd64 member: MASTER_ADDR=$M on net1; arm64 exec OK"

# job 2: gxboot -- CMD; the coordinator amd64, both members arm64
BIN=("$GXBOOT" "$ARM64" "$ARM64")
t0=$(date +%s%N)
for i in 2 1 0; do
  mkdir -p "$GX_DIR/run$i"
  job_start pod "$i" --out "$GX_DIR/run$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 30 \
    -- "${GX_REPORT[@]}"
done
job_wait pod "$t0"
for i in 0 1 2; do gx_expect_report "$i"; done
echo "gxboot -- CMD: amd64 coordinator, arm64 members: MASTER_ADDR=$M on net1"
