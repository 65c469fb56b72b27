#!/usr/bin/env bash
# --preflight, a fixed world of 4 pods (gxboot init). A clean run first: every pod exits 0 and
# the coordinator's preflight.json names nobody. Then job-worker-2's net1 is throttled with
# tbf to 4 Mbit/s both ways: every pod exits at once (no CMD, no NCCL timeout), job-worker-2
# with 8 (the preflight named it) and the others with 7 (it named another pod); every pod's
# line names job-worker-2 as slow with its figure against the job median, and no other pod;
# preflight.json keeps the matrix and names it. Seconds taken are printed, not asserted.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
N=4
cluster_create $N || fail "cluster_create"
T=$(cluster_token)
all=$(seq 0 $((N - 1)))
run() {
  local i
  for i in $(seq $((N - 1)) -1 0); do # the coordinator last
    gx_start "$i" init --peers "job-worker-{0..$((N - 1))}" --token-file "$T" --timeout 30 \
      --preflight
  done
  gx_wait_all 55 $all
}
blamed() { "$PY" -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["blamed"]))' "$1"; }
run
# shellcheck disable=SC2086
gx_expect_rc 0 $all
[ -z "$(blamed "$GX_DIR/out0/preflight.json")" ] ||
  fail "clean run: preflight.json names $(blamed "$GX_DIR/out0/preflight.json")" "$GX_DIR/pod0.log"
grep -m1 'preflight: 4 pods, the job median' "$GX_DIR/pod0.log"
rm -rf "$GX_DIR"/out* # the clean run's files
cluster_throttle 2 4mbit || fail "tc tbf"
t0=$(date +%s%N)
run
echo "throttled: every pod ended $((($(date +%s%N) - t0) / 1000000)) ms after the start"
gx_expect_rc 8 2
gx_expect_rc 7 0 1 3
for i in $all; do
  line=$(grep '^gxboot: ' "$GX_DIR/pod$i.log" | tail -1)
  case $line in
  "gxboot: preflight failed: job-worker-2: slow: "*" its peers against the job median "*) ;;
  *) fail "job-worker-$i does not name job-worker-2 slow: $line" "$GX_DIR/pod$i.log" ;;
  esac
  others=$(echo "$line" | grep -oE 'job-worker-[0-9]+:' | grep -vx 'job-worker-2:')
  [ -z "$others" ] || fail "job-worker-$i names others too: $line" "$GX_DIR/pod0.log"
done
[ "$(blamed "$GX_DIR/out0/preflight.json")" = job-worker-2 ] || fail "preflight.json" "$GX_DIR/out0/preflight.json"
gx_expect_no_files 1 2 3
echo "$(grep '^gxboot: ' "$GX_DIR/pod1.log")"
