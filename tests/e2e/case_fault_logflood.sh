#!/usr/bin/env bash
# A stranger cannot flood the log. A 2-pod job whose member never starts;
# a stranger sends 3000 HELLOs with a wrong job id (each on a new connection, as fast as the
# coordinator answers), first to a coordinator started plainly, then to one started with -q.
# Asserts: the plain coordinator prints at most 3 "job id mismatch" lines plus summary lines
# ("N more in the last 10 s"), and the count in its summaries is real (>= 100 refusals
# counted); the -q coordinator prints no warning at all. Both exit 3 at --timeout as usual.
# On c43d6af the plain coordinator printed one line per HELLO (3000) and -q did not help.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/stranger.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..1}' --token-file "$T" --timeout 6)
for mode in plain quiet; do
  q=()
  [ "$mode" = quiet ] && q=(-q)
  gx_start 0 "${q[@]}" "${P[@]}" -- true
  sleep 1
  pod_exec 2 "$PY" -u "$STRANGER" hellos "$(pod_eth0 0)" 29410 3000 not-this-job >"$GX_DIR/hello.$mode.log" 2>&1
  gx_wait_all 20 0
  gx_expect_rc 3 0
  cp "$GX_DIR/pod0.log" "$GX_DIR/pod0.$mode.log"
done
lines=$(grep -c 'warning: .*job id mismatch' "$GX_DIR/pod0.plain.log")
counted=$(sed -n 's/.*: \([0-9]*\) more in the last.*/\1/p' "$GX_DIR/pod0.plain.log" | awk '{ s += $1 } END { print s + 0 }')
qwarn=$(grep -c 'warning' "$GX_DIR/pod0.quiet.log")
echo "stranger: $(cat "$GX_DIR/hello.plain.log") (plain), $(cat "$GX_DIR/hello.quiet.log") (-q);" \
  "plain coordinator: $lines 'job id mismatch' lines, $counted more counted in summaries; -q: $qwarn warnings"
[ "$lines" -le 3 ] || fail "the coordinator printed $lines 'job id mismatch' lines (cap: 3 + summaries)" "$GX_DIR/pod0.plain.log"
[ "$counted" -ge 100 ] || fail "the summaries counted only $counted refusals" "$GX_DIR/pod0.plain.log" "$GX_DIR/hello.plain.log"
[ "$qwarn" = 0 ] || fail "-q: $qwarn warnings" "$GX_DIR/pod0.quiet.log"
