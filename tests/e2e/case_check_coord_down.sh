#!/usr/bin/env bash
# The coordinator's own net1 is down: `gxboot check` on 3 pods with
# job-worker-0's net1 down still meets over the primary network and never aborts.
# Asserts: every pod exits 1 (not 4/5), the coordinator's line names job-worker-0 and the
# members' pairs with it fail while job-worker-1 <-> job-worker-2 are OK.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
cluster_net1_down 0
for i in 0 1 2; do
  pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check --peers 'job-worker-{0..2}' --token-file "$T" --timeout 15
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 40 0 1 2
gx_expect_rc 1 0 1 2
for i in 0 1 2; do gx_expect_in "$i" '2/6 pairs OK over TCP'; done
gx_expect_in 0 'failing: job-worker-0'
echo "check with the coordinator's net1 down: $(grep -h 'pairs OK' "$GX_DIR/pod1.log" | tail -1)"
