#!/usr/bin/env bash
# A VERIFY that reaches the coordinator's net1 address through its eth0 is not accepted.
# Linux is a weak-host kernel: it takes a packet for any of its addresses on any interface.
# job-worker-2's net1 is plugged into the pod network's bridge (a NetworkAttachmentDefinition on
# the wrong master) but keeps its secondary address, and the coordinator holds a host route to
# it through eth0. job-worker-2's own checks pass (its route to the coordinator's net1 address
# is its net1, and it binds there), its SYN is answered by the coordinator's eth0 (ARP for
# any local address), and the VERIFY arrives on eth0, addressed to net1.
# Asserts: every pod exits 5, and the line names job-worker-2 and that its VERIFY did not come
# in through net1; nothing is written (a build that takes the VERIFY exits 0 everywhere).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
ip link set "${GX_P}-n2" nomaster
ip link set "${GX_P}-n2" master "${GX_P}-b0" up
ip -n "$(pod_ns 0)" route add "$(pod_net1 2)/32" dev eth0
for i in 2 1 0; do gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 8 -- "${GX_REPORT[@]}"; done
gx_wait_all 30 0 1 2
gx_expect_rc 5 0 1 2
for i in 0 1 2; do
  gx_expect_in "$i" "job-worker-2 \(.*VERIFY to $(pod_net1 0) did not come in through net1"
done
gx_expect_no_files 0 1 2
echo "job-worker-0: $(tail -n 1 "$GX_DIR/pod0.log")"
