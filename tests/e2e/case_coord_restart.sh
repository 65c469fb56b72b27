#!/usr/bin/env bash
# The coordinator is killed (SIGKILL) mid-rendezvous, after job-worker-1
# joined and before job-worker-2 started, and restarted under the same name 1 s later.
# Asserts: the restarted coordinator and both members exit 0 within --timeout 20; each CMD
# got its rank, NNODES=3 and MASTER_ADDR=<coordinator's net1>:29500.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 20)
gx_start 0 "${P[@]}" -- "${GX_REPORT[@]}"
first=$GX_PID
gx_start 1 "${P[@]}" -- "${GX_REPORT[@]}"
sleep 2
kill -0 "$first" 2>/dev/null || fail "coordinator ended before the restart" "$GX_DIR/pod0.log"
kill -KILL "$first"
wait "$first" 2>/dev/null
mv "$GX_DIR/pod0.log" "$GX_DIR/pod0.first.log"
sleep 1
gx_start 0 "${P[@]}" -- "${GX_REPORT[@]}"
gx_start 2 "${P[@]}" -- "${GX_REPORT[@]}"
gx_wait_all 35 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i"; done
echo "coordinator restarted mid-rendezvous: OK"
