#!/usr/bin/env bash
# A stranger without the token holds thousands of connections to the
# coordinator's rendezvous port, each sending a HELLO with the right job id (it is a hash of
# public names and travels in clear; here read from the clean run's rendezvous.json) and then
# never proving anything; every connection the coordinator closes is reopened at once. The
# stranger uses 300 source addresses (150 on eth0, 150 on net1), so it can hold more than the
# coordinator's connection bound (1024) even with the per-source cap: the coordinator must drop
# the oldest unauthenticated connection instead of pausing accept.
# Asserts: the 3-pod job with a token comes up (every pod exits 0 with its rank, NNODES=3 and
# MASTER_ADDR = the coordinator's net1) while the stranger holds its connections, and the
# stranger really held them (>= 1000 open when the members start). Printed: the job's time
# clean and under attack (no timing assertion), and the coordinator's log size
# (warnings are rate-limited: first 3, then one summary line per 10 s).
# On c43d6af (before the pre-authentication budget) the members log "never answered" and every pod exits 3.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/stranger.sh"
cluster_need_root
gx_need_gxboot
N=3
S=$N # the stranger's pod
CONNS=${GX_FLOOD_CONNS:-5000}
cluster_create $((N + 1)) || fail "cluster_create"
T=$(cluster_token)
ALL=$(seq 0 $((N - 1)))
MEMBERS=$(seq 1 $((N - 1)))
P=(--peers "job-worker-{0..$((N - 1))}" --token-file "$T" --timeout 30)
start_coord() {
  rm -rf "$GX_DIR/out0"
  gx_start 0 "${P[@]}" -- "${GX_REPORT[@]}"
}
run_members() { # run_members TAG : start the members; DT = ms until every pod exited
  local tag=$1 i t0
  t0=$(date +%s%N)
  for i in $MEMBERS; do
    rm -rf "$GX_DIR/out$i"
    gx_start "$i" "${P[@]}" -- "${GX_REPORT[@]}"
  done
  gx_wait_all 45 $ALL
  DT=$((($(date +%s%N) - t0) / 1000000))
  for i in $ALL; do cp "$GX_DIR/pod$i.log" "$GX_DIR/pod$i.$tag.log"; done
}
start_coord
sleep 1
run_members clean
clean=$DT
gx_expect_rc 0 $ALL
for i in $ALL; do gx_expect_report "$i" $N; done
JOB=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["job_id"])' "$GX_DIR/out0/rendezvous.json")
[ -n "$JOB" ] || fail "no job id in the clean run's rendezvous.json"

# the stranger's extra source addresses: x.y.z.100..249 on both of its interfaces
SRCS=$(stranger_addrs $S "eth0:$(pod_eth0 0)" "net1:$(pod_net1 0)")
start_coord
# shellcheck disable=SC2086
pod_bg "$S" "$GX_DIR/flood.log" "$PY" -u "$STRANGER" hold "$GX_DIR/flood.status" 29410 "$CONNS" "hello:$JOB" $SRCS
flood=$GX_PID
# the stranger's connections are in and it is reopening the closed ones (3 status lines)
for _ in $(seq 1 40); do
  [ -e "$GX_DIR/flood.status.history" ] && [ "$(wc -l <"$GX_DIR/flood.status.history")" -ge 3 ] && break
  sleep 0.5
done
st0=$(cat "$GX_DIR/flood.status" 2>/dev/null)
n_open=$(echo "$st0" | sed -n 's/^open=\([0-9]*\) .*/\1/p')
run_members attack
attack=$DT
st=$(cat "$GX_DIR/flood.status" 2>/dev/null)
sleep "${GX_FLOOD_LINGER:-0}"
kill "$flood" 2>/dev/null
cut -c1-120 "$GX_DIR/flood.status.history" | tail -n 12
echo "stranger when the members started: $st0; at the end: $st"
grep 'warning' "$GX_DIR/pod0.attack.log" | head -n 6 | cut -c1-200
echo "coordinator log: $(wc -l <"$GX_DIR/pod0.attack.log") lines under attack ($(grep -c 'more in the last' "$GX_DIR/pod0.attack.log") summary lines)"
echo "3 pods with a token, clean: $clean ms; while a stranger holds $CONNS HELLO connections: $attack ms" \
  "(ratio $(awk -v a="$attack" -v b="$clean" 'BEGIN { printf "%.1f", a / b }')x)"
[ "${n_open:-0}" -ge 1000 ] || fail "the stranger held only '$st0' connections" "$GX_DIR/flood.log"
for i in $ALL; do
  [ "${GX_RC[i]}" = 0 ] ||
    fail "job-worker-$i exited ${GX_RC[i]} while a stranger held $CONNS connections (want 0): $(tail -n 1 "$GX_DIR/pod$i.log" | cut -c1-300)" "$GX_DIR/pod$i.log"
done
for i in $ALL; do gx_expect_report "$i" $N; done
n_warn=$(grep -c 'warning' "$GX_DIR/pod0.attack.log")
[ "$n_warn" -le 40 ] || fail "the coordinator printed $n_warn warnings under attack (rate limit: 3 + one per 10 s)" "$GX_DIR/pod0.attack.log"
