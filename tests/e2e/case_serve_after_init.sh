#!/usr/bin/env bash
# Issue 31 item 1: `serve` on 2 pods, eth0 closed except DNS and the rendezvous port. Pod 1 runs
# `serve`; pod 0, the coordinator, runs only `init` and exits after the rendezvous: it is not
# serving, so pod 1's serve must end with exit 5 and a line saying so and how to fix it (--serve,
# --supervise or PID 1), not "Operation not permitted".
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_skip_unless serve
gx_need_gxboot
cluster_create 2 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1; do cluster_cut_eth0 "$i"; done
P=(--peers 'job-worker-{0..1}.job' --token-file "$T" --timeout 20)

# Run 1: pod 1 serves, the coordinator runs a plain init and exits after the rendezvous.
gx_start 1 serve "${P[@]}"
gx_start 0 init "${P[@]}"
gx_wait_all 30 0 1
gx_expect_rc 0 0
gx_expect_rc 5 1
gx_expect_in 1 "^gxboot: the coordinator's session ended after the rendezvous: job-worker-0.job is not serving \(run the coordinator with --serve, --supervise or as PID 1\)$"
! grep -q "Operation not permitted" "$GX_DIR/pod1.log" || fail "an errno line" "$GX_DIR/pod1.log"
line=$(grep -E "^gxboot: " "$GX_DIR/pod1.log" | tail -1)
echo "serve without a serving coordinator: exit 5, '$line'"

