#!/usr/bin/env bash
# --preflight, a fixed world of 4 pods: job-worker-2's net1 drops half of what arrives
# (nftables numgen: one direction only). Every pod exits (8 on job-worker-2, 7 elsewhere) with
# one line that names job-worker-2 and no other pod. Seconds taken are printed.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
N=4
cluster_create $N || fail "cluster_create"
T=$(cluster_token)
all=$(seq 0 $((N - 1)))
cluster_loss 2 50 || fail "nft numgen"
t0=$(date +%s%N)
for i in $(seq $((N - 1)) -1 0); do
  gx_start "$i" init --peers "job-worker-{0..$((N - 1))}" --token-file "$T" --timeout 40 --preflight
done
gx_wait_all 55 $all
echo "half of job-worker-2's net1 input dropped: every pod ended $((($(date +%s%N) - t0) / 1000000)) ms after the start"
gx_expect_rc 8 2
gx_expect_rc 7 0 1 3
for i in $all; do
  line=$(grep '^gxboot: ' "$GX_DIR/pod$i.log" | tail -1)
  case $line in
  "gxboot: preflight failed: job-worker-2: "*) ;;
  *) fail "job-worker-$i does not name job-worker-2: $line" "$GX_DIR/pod$i.log" ;;
  esac
  others=$(echo "$line" | grep -oE 'job-worker-[0-9]+:' | grep -vx 'job-worker-2:')
  [ -z "$others" ] || fail "job-worker-$i names others too: $line" "$GX_DIR/pod0.log"
done
echo "$(grep '^gxboot: ' "$GX_DIR/pod0.log")"
