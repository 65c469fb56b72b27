#!/usr/bin/env bash
# job-worker-2's net1 is up but on another bridge and subnet
# (192.168.<y+1>.0/24), so it cannot reach the coordinator's net1 address (packets to it
# leave by eth0's default route and are dropped silently: the host does not forward).
# Asserts: all 3 pods exit 5 within --timeout + 10 s; every pod's output names job-worker-2;
# no pod wrote env/env.json/hostfile/rendezvous.json.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
cluster_net1_other_subnet 2
for i in 2 1 0; do gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 10 -- "${GX_REPORT[@]}"; done
gx_wait_all 25 0 1 2
gx_expect_rc 5 0 1 2
for i in 0 1 2; do gx_expect_in "$i" 'job-worker-2'; done
gx_expect_no_files 0 1 2
for i in 0 1 2; do echo "job-worker-$i: $(tail -n 1 "$GX_DIR/pod$i.log")"; done
