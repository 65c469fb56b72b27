#!/usr/bin/env bash
# `gxboot check` with job-worker-3's net1 MTU lower (1400) than the others' (1500):
# every pair is still reachable (exit 0 everywhere) and the MTU warning names job-worker-3
# on the coordinator and on the members; --mode star probes 6 pairs only.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 4 || fail "cluster_create"
ip -n "$(pod_ns 3)" link set net1 mtu 1400
T=$(cluster_token)
P=(--peers 'job-worker-{0..3}' --token-file "$T" --timeout 15 --check-port 29500)
for mode in all star; do
  for i in 0 1 2 3; do pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check "${P[@]}" --mode "$mode"; GX_PIDS[i]=$GX_PID; done
  gx_wait_all 40 0 1 2 3
  gx_expect_rc 0 0 1 2 3
  for i in 0 1 2 3; do gx_expect_in "$i" 'warning: MTU differs on the secondary network \(most pods: 1500\): job-worker-3 1400$'; done
  want=12
  [ "$mode" = star ] && want=6
  for i in 0 1 2 3; do gx_expect_in "$i" "^$want/$want pairs OK over TCP"; done
done
grep -F 'job-worker-3' "$GX_DIR/pod0.log"
