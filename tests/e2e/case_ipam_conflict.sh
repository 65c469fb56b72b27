#!/usr/bin/env bash
# Two pods with one secondary address (an IPAM conflict: whereabouts after a restore, two
# attachments with one static IP): 3 pods, job-worker-2's net1 given job-worker-1's address on
# the same bridge. Without --preflight, three rounds: no pod ever exits 0 (before: 2 of 3 runs
# exited 0 everywhere with the address twice in the hostfile); every pod exits 5 at once with
# one line naming both pods and the address; nothing is written.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
N=3
cluster_create $N || fail "cluster_create"
T=$(cluster_token)
A=$(pod_net1 1)
ns2=$(pod_ns 2)
ip -n "$ns2" addr flush dev net1 scope global || fail "flush"
ip -n "$ns2" addr add "$A/24" dev net1 || fail "addr"
pod_net1_addr 2 "$A"
for round in 1 2 3; do
  rm -rf "$GX_DIR"/out*
  t0=$(date +%s%N)
  for i in 2 1 0; do
    gx_start "$i" init --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20
  done
  gx_wait_all 40 0 1 2
  gx_expect_rc 5 0 1 2
  for i in 0 1 2; do
    gx_expect_in "$i" "^gxboot: job-worker-1 and job-worker-2 both have $A on net1: two pods with one secondary address"
  done
  gx_expect_no_files 0 1 2
  echo "round $round: every pod exit 5 after $((($(date +%s%N) - t0) / 1000000)) ms"
done
grep '^gxboot: ' "$GX_DIR/pod0.log"
