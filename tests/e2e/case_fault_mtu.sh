#!/usr/bin/env bash
# Fault: MTU mismatch on net1 during a run (not check: case_check_mtu covers that).
# job-worker-2's net1 has MTU 1400, the others 1500. The job still comes up (the rendezvous'
# small messages fit), and the coordinator warns once, naming the pod and its MTU.
# Asserts: all 3 pods exit 0 with their ranks and MASTER_ADDR = the coordinator's net1; the
# coordinator's output has "warning: rdzv: MTU mismatch on the secondary network:
# job-worker-0 has 1500; job-worker-2 1400" exactly once.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
ip -n "$(pod_ns 2)" link set net1 mtu 1400
T=$(cluster_token)
for i in 2 1 0; do gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 15 -- "${GX_REPORT[@]}"; done
gx_wait_all 25 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i"; done
want='warning: rdzv: MTU mismatch on the secondary network: job-worker-0 has 1500; job-worker-2 1400$'
n=$(grep -Ec "$want" "$GX_DIR/pod0.log")
[ "$n" = 1 ] || fail "coordinator printed the MTU warning $n times (want 1)" "$GX_DIR/pod0.log"
grep -E "MTU mismatch" "$GX_DIR/pod0.log" | sed 's/^[^ ]* //'
echo "MTU mismatch on net1: warned once, job up: OK"
