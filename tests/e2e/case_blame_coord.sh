#!/usr/bin/env bash
# The coordinator is the odd one: its net1 is in another subnet (192.168.<y+1>.10/24) than the
# three members' (192.168.<y>.0/24). Every member's kernel routes it through eth0, and each
# says so; the first to say it is a healthy pod. The coordinator waits for the others'
# outcomes and names itself.
# Asserts: every pod exits 5, and every line names job-worker-0 (the coordinator) and its
# address as the odd one, with the members listed as the ones that failed to reach it.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 4 || fail "cluster_create"
T=$(cluster_token)
cluster_leaf 0 "${GX_P}-b2" "$GX_NET_C.10/24"
for i in 3 2 1 0; do gx_start "$i" --peers 'job-worker-{0..3}' --token-file "$T" --timeout 20 -- "${GX_REPORT[@]}"; done
gx_wait_all 40 0 1 2 3
gx_expect_rc 5 0 1 2 3
for i in 0 1 2 3; do
  gx_expect_in "$i" "job-worker-0 \(the coordinator\): its net1 address $GX_NET_C.10/24 is outside the subnet of every member that failed to reach it \(job-worker-1 $GX_NET_B.11/24, job-worker-2 $GX_NET_B.12/24, job-worker-3 $GX_NET_B.13/24\)"
done
gx_expect_no_files 0 1 2 3
echo "job-worker-2: $(tail -n 1 "$GX_DIR/pod2.log")"
