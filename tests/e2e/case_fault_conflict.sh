#!/usr/bin/env bash
# Fault: two live pods claim the same peer name (the old one answers the PING: a conflict). job-worker-3 (not in
# --peers) runs with --self job-worker-1 while the real job-worker-1 is joined and alive;
# job-worker-2 is not started, so no COMMIT can come first.
# Asserts: the coordinator and both claimants exit 5; the coordinator's last line is
# "conflicting peers: two live pods claim job-worker-1 (<addr> and <addr>)" (README
# troubleshooting) and both claimants' last lines say "conflicting peers"; nobody wrote files.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 4 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 15)
gx_start 0 "${P[@]}" -- "${GX_REPORT[@]}"
gx_start 1 "${P[@]}" -- "${GX_REPORT[@]}"
sleep 2
for i in 0 1; do kill -0 "${GX_PIDS[i]}" 2>/dev/null || fail "job-worker-$i ended early" "$GX_DIR/pod$i.log"; done
t0=$(date +%s%N)
gx_start 3 "${P[@]}" --self job-worker-1 -- "${GX_REPORT[@]}"
gx_wait_all 25 0 1 3
dt=$((($(date +%s%N) - t0) / 1000000))
gx_expect_rc 5 0 1 3
ip='[0-9a-f.:]+'
last=$(grep -v '^$' "$GX_DIR/pod0.log" | tail -n 1)
echo "$last" | grep -Eq "^gxboot: conflicting peers: two live pods claim job-worker-1 \($ip and $ip\)$" ||
  fail "coordinator's last line: '$last'" "$GX_DIR/pod0.log"
for i in 1 3; do
  l=$(grep -v '^$' "$GX_DIR/pod$i.log" | tail -n 1)
  echo "$l" | grep -q 'conflicting peers' || fail "job-worker-$i's last line lacks 'conflicting peers': '$l'" "$GX_DIR/pod$i.log"
done
gx_expect_no_files 0 1 3
for i in 0 1 3; do echo "job-worker-$i: $(tail -n 1 "$GX_DIR/pod$i.log")"; done
echo "two pods claiming job-worker-1: exit 5 on all three, $dt ms after the second claimant started: OK"
