#!/usr/bin/env bash
# `serve` after `init` (it loads init's rendezvous.json) on 2 pods, eth0 closed except DNS
# and the rendezvous port. Pod 1 runs `init`, then `serve` (no second rendezvous); pod 0, the
# coordinator, runs only `init` and exits after the rendezvous: it is not serving, so pod 1's
# serve must end with exit 5 and a line saying so and how to fix it (--serve, --supervise or
# PID 1), not "Operation not permitted". Then a second run of the same job reuses both --out
# directories: pod 1's rendezvous.json is the first run's (same job id); `serve` must not trust
# it: the new coordinator (`--serve`) and pod 1 meet again, so the job comes up.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
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

# Run 2: the same job again in the same --out dirs, pod 1 straight to serve (a stale
# rendezvous.json from run 1), the coordinator with --serve this time.
for i in 0 1; do mv "$GX_DIR/pod$i.log" "$GX_DIR/pod$i-run1.log"; done
gx_start 1 serve "${P[@]}"
gx_start 0 "${P[@]}" --serve -- /bin/sh -c 'echo "GXREPORT rank=$NODE_RANK nnodes=$NNODES"'
gx_wait_all 30 0 1
gx_expect_rc 0 0 1
gx_expect_in 0 "GXREPORT rank=0 nnodes=2"
gx_expect_in 1 "the job ended with status 0"
gx_expect_in 1 "rendezvous.json is left from an earlier 'serve' of this job \(round [0-9a-f]{16}\), not from 'init': meeting again"
echo "serve with a stale rendezvous.json from an earlier run: met again, the job came up"

# Run 3, the plain form: `init --serve` on both pods, then `serve` in pod 1 loads
# rendezvous.json without a second rendezvous (the coordinator is gone) until SIGTERM (143).
for i in 0 1; do mv "$GX_DIR/pod$i.log" "$GX_DIR/pod$i-run2.log"; done
gx_start 1 init --serve "${P[@]}"
gx_start 0 init "${P[@]}"
gx_wait_all 30 0 1
gx_expect_rc 0 0 1
grep -q '"written_by": "init"' "$GX_DIR/out1/rendezvous.json" ||
  fail "rendezvous.json does not say init wrote it" "$GX_DIR/out1/rendezvous.json"
mv "$GX_DIR/pod1.log" "$GX_DIR/pod1-init.log"
gx_start 1 serve "${P[@]}"
gx_wait_until 5 grep -q "serving remote exec" "$GX_DIR/pod1.log"
gx_expect_in 1 "serving after init: .*no second rendezvous"
kill -TERM "${GX_PIDS[1]}"
gx_wait_all 10 1
gx_expect_rc 143 1
echo "serve after init: no second rendezvous, ended by SIGTERM"
