#!/usr/bin/env bash
# A NetworkAttachmentDefinition whose range overlaps the pod network: net1 is 10.<x>.1.10<i>/24
# on the secondary bridge, inside eth0's own 10.<x>.1.0/24. The kernel holds two routes for one
# prefix and takes eth0's, so the job's sockets to net1 addresses leave through eth0.
# Asserts: every pod exits 5 at once, and the line names a member, eth0, and the overlap with
# both prefixes; `gxboot check` exits 1 with the same cause, not a bare "timeout".
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_leaf "$i" "${GX_P}-b1" "$GX_NET_A.$((100 + i))/24"; done
ip netns exec "$(pod_ns 1)" ip route get "$GX_NET_A.100" from "$GX_NET_A.101" | grep -q "dev eth0" ||
  fail "setup: the overlap should route through eth0"

for i in 2 1 0; do gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 -- "${GX_REPORT[@]}"; done
gx_wait_all 30 0 1 2
gx_expect_rc 5 0 1 2
for i in 0 1 2; do
  gx_expect_in "$i" "job-worker-[12]: the kernel routes $GX_NET_A.100 from $GX_NET_A.10[12] dev eth0, not through net1: net1 $GX_NET_A.10[12]/24 overlaps eth0 $GX_NET_A.1[12]/24"
done
gx_expect_no_files 0 1 2
echo "run: $(tail -n 1 "$GX_DIR/pod0.log")"

for i in 2 1 0; do
  pod_bg "$i" "$GX_DIR/check$i.log" "$GXBOOT" check --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20
  GX_PIDS[i]=$GX_PID
done
for i in 0 1 2; do
  pod_wait "${GX_PIDS[i]}" 60
  rc=$?
  [ "$rc" = 1 ] || fail "check on job-worker-$i exited $rc (want 1)" "$GX_DIR/check$i.log"
done
grep -Eq "failing: .*overlaps eth0" "$GX_DIR/check0.log" ||
  fail "check does not name the overlap" "$GX_DIR/check0.log"
echo "check: $(grep -m1 'failing:' "$GX_DIR/check0.log")"
