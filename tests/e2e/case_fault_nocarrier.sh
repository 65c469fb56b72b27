#!/usr/bin/env bash
# Fault: net1 without carrier. job-worker-2's net1 is administratively up, but its
# veth peer on the secondary bridge is down (the cable is out): NO-CARRIER inside the pod.
# (case_net1_down covers net1 set down inside the pod.)
# Asserts: job-worker-2 exits 4 and its last line says "net1 is down (no carrier)" (README
# troubleshooting); job-worker-0 and -1 exit 5 naming job-worker-2; nobody wrote files.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
ip link set "${GX_P}-n2" down
no_carrier() { ip -n "$(pod_ns 2)" link show net1 | grep -q NO-CARRIER; }
gx_wait_until 2 no_carrier
ip -n "$(pod_ns 2)" link show net1 | grep -q 'NO-CARRIER.*state LOWERLAYERDOWN\|NO-CARRIER' ||
  fail "net1 of job-worker-2 still has carrier: $(ip -n "$(pod_ns 2)" link show net1)"
for i in 2 1 0; do gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 10 -- "${GX_REPORT[@]}"; done
gx_wait_all 25 0 1 2
gx_expect_rc 4 2
last=$(grep -v '^$' "$GX_DIR/pod2.log" | tail -n 1)
echo "$last" | grep -q 'net1 is down (no carrier)' || fail "job-worker-2's last line: '$last'" "$GX_DIR/pod2.log"
gx_expect_rc 5 0 1
for i in 0 1; do gx_expect_in "$i" 'job-worker-2.*no carrier'; done
gx_expect_no_files 0 1 2
for i in 0 1 2; do echo "job-worker-$i: $(tail -n 1 "$GX_DIR/pod$i.log")"; done
