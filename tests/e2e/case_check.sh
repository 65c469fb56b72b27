#!/usr/bin/env bash
# Issue 7 case 8: `gxboot check` on 4 pods: all pairs OK (exit 0); then with job-worker-2's
# net1 down: every pod exits 1 (DECISIONS 22: the broken pod stays in over the primary
# network) and the matrix / output names job-worker-2.
# Skipped (77) while this build says check is not available.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
gx_skip_unless check
cluster_create 4 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..3}' --token-file "$T" --timeout 15)
for i in 0 1 2 3; do pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check "${P[@]}"; GX_PIDS[i]=$GX_PID; done
gx_wait_all 30 0 1 2 3
gx_expect_rc 0 0 1 2 3
cat "$GX_DIR/pod0.log"
cluster_net1_down 2
for i in 0 1 2 3; do pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check "${P[@]}"; GX_PIDS[i]=$GX_PID; done
gx_wait_all 30 0 1 2 3
gx_expect_rc 1 0 1 2 3
for i in 0 1 3; do gx_expect_in "$i" 'job-worker-2'; done
cat "$GX_DIR/pod0.log"
