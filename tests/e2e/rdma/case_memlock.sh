#!/usr/bin/env bash
# A pod without CAP_IPC_LOCK and with a 64 KiB RLIMIT_MEMLOCK (what a container gets when the
# manifest forgets both) on real soft-RoCE: the device is there, but RDMA cannot register
# memory (netdetect's memlock rule: TCP with one warning, or exit 4 with --rdma require).
#  a) `init --rdma auto` on 3 such pods: every pod exits 0 over TCP, says so in exactly one
#     warning, and writes no RDMA variables (no NCCL_IB_HCA, GXBOOT_RDMA_VERIFIED not 1), but
#     NCCL_IB_DISABLE=1: NCCL would find the device and fail to register memory the same way.
#  b) `init --rdma require` on such a pod: exit 4 with the memlock line (never TCP silently).
#  c) `check` on 3 such pods: 6/6 over TCP, and the summary says RDMA is "not available on 3
#     of 3 pods" (before the fix it said "no device on 3 pods": the devices exist).
#  d) the same check with IPC_LOCK: 6/6 over RDMA (the restriction was the only cause).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
gx_need_gxboot
rxe_pods 3
T=$(cluster_token)
MSG='RLIMIT_MEMLOCK is 64 KiB and IPC_LOCK is missing'
lim() { # lim i ARGS... : rxe_start, but without CAP_IPC_LOCK and with a 64 KiB memlock limit
  local i=$1 a args=()
  shift
  rm -rf "$GX_DIR/out$i"
  mkdir -p "$GX_DIR/out$i"
  for a in "$@"; do args+=("${a//@OUT@/$GX_DIR/out$i}"); done
  pod_bg "$i" "$GX_DIR/pod$i.log" setpriv --bounding-set=-ipc_lock prlimit --memlock=65536:65536 \
    "$GXBOOT" "${args[@]}"
  GX_PIDS[i]=$GX_PID
}
P=(init --peers 'job-worker-{0..2}' --token-file "$T" --out @OUT@ --timeout 60)
C=(check --peers 'job-worker-{0..2}' --token-file "$T" --timeout 60)

# a)
for i in 2 1 0; do lim "$i" "${P[@]}" --rdma auto; done
gx_wait_all 90 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do
  n=$(grep -c "warning: $MSG" "$GX_DIR/pod$i.log")
  [ "$n" = 1 ] || fail "job-worker-$i: $n memlock warnings (want 1)" "$GX_DIR/pod$i.log"
  ! grep -q NCCL_IB_HCA "$GX_DIR/out$i/env" || fail "job-worker-$i: NCCL_IB_HCA without usable RDMA" "$GX_DIR/out$i/env"
  [ "$(gx_env "$GX_DIR/out$i/env" GXBOOT_RDMA_VERIFIED)" != 1 ] || fail "job-worker-$i: verified" "$GX_DIR/out$i/env"
  [ "$(gx_env "$GX_DIR/out$i/env" NCCL_SOCKET_IFNAME)" = "=net1" ] || fail "job-worker-$i: NCCL_SOCKET_IFNAME" "$GX_DIR/out$i/env"
  [ "$(gx_env "$GX_DIR/out$i/env" NCCL_IB_DISABLE)" = 1 ] || fail "job-worker-$i: no NCCL_IB_DISABLE=1 with TCP for memlock" "$GX_DIR/out$i/env"
  [ "$(gx_env "$GX_DIR/out$i/env" UCX_NET_DEVICES)" = net1 ] || fail "job-worker-$i: UCX_NET_DEVICES" "$GX_DIR/out$i/env"
done
echo "rdma memlock auto: $(grep -h "warning: $MSG" "$GX_DIR/pod1.log" | cut -d' ' -f3- | cut -c1-160)"

# b)
lim 1 "${P[@]}" --rdma require --timeout 20
gx_wait_all 30 1
gx_expect_rc 4 1
gx_expect_in 1 "gxboot: --rdma require: $MSG"

# c)
for i in 2 1 0; do lim "$i" "${C[@]}"; done
gx_wait_all 90 0 1 2
gx_expect_rc 0 0 1 2
gx_expect_in 0 '6/6 pairs OK over TCP, RDMA: not available on 3 of 3 pods'
echo "rdma memlock check: $(grep -h 'pairs OK' "$GX_DIR/pod0.log" | tail -n 1)"

# d)
for i in 2 1 0; do rxe_start "$i" "${C[@]}"; done
gx_wait_all 90 0 1 2
gx_expect_rc 0 0 1 2
gx_expect_in 0 '6/6 pairs OK over TCP, 6/6 over RDMA'
echo "rdma memlock check with IPC_LOCK: $(grep -h 'pairs OK' "$GX_DIR/pod0.log" | tail -n 1)"
