#!/usr/bin/env bash
# A stranger against the relay tree: 8 pods, GXBOOT_RELAY_FANOUT=3 (job-worker-3 and 6 relay;
# 4, 5 join through 3, 7 through 6; 1, 2 join the coordinator), --timeout 20. The coordinator
# and the relays start first; then a stranger without the token holds silent connections to
# both relays' rendezvous port from 300 source addresses (150 on eth0, 150 on net1), 4 per
# source and relay, more than a relay's 1,024 child slots, reopening each one that is closed
# at once; then the other 5 pods start.
# Asserts: every pod exits 0 with its rank (report), and the stranger really held its
# connections (>= 1,500 open when the late pods start). Printed: the job's time clean and
# under attack and their ratio (no timing assertion), the stranger's counts.
# On 9740b38 every pod exited 3: the relays held the silent connections with no deadline
# until their slots were full and carried each one to the coordinator as a known entry of
# its pre-authentication budget, which then refused direct connections, VERIFYs included
# ("refused a connection from ...: 0 unauthenticated ones from there").
# gx-timeout: 100
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/stranger.sh"
cluster_need_root
gx_need_gxboot
N=8
S=$N # the stranger's pod
CONNS=${GX_FLOOD_CONNS:-2400}
cluster_create $((N + 1)) || fail "cluster_create"
T=$(cluster_token)
for i in $(seq 0 $((N - 1))); do cluster_cut_eth0 "$i"; done
export GXBOOT_RELAY_FANOUT=3
P=(--peers "job-worker-{0..$((N - 1))}" --token-file "$T" --timeout 20)
FIRST="0 3 6"
LATE="1 2 4 5 7"
ALL="0 1 2 3 4 5 6 7"

start_first() {
  local i
  for i in $FIRST; do
    rm -rf "$GX_DIR/out$i"
    gx_start "$i" "${P[@]}" -- "${GX_REPORT[@]}"
  done
}
run_late() { # run_late TAG : start the late pods; DT = ms until every pod exited
  local tag=$1 i t0
  t0=$(date +%s%N)
  for i in $LATE; do
    rm -rf "$GX_DIR/out$i"
    gx_start "$i" "${P[@]}" -- "${GX_REPORT[@]}"
  done
  gx_wait_all 45 $ALL
  DT=$((($(date +%s%N) - t0) / 1000000))
  for i in $ALL; do cp "$GX_DIR/pod$i.log" "$GX_DIR/pod$i.$tag.log"; done
}

start_first
sleep 2
run_late clean
clean=$DT
gx_expect_rc 0 $ALL
for i in $ALL; do gx_expect_report "$i" $N; done

# the stranger's sources: x.y.z.100..249 on both of its interfaces, each aimed at both relays
SRCS=$(stranger_addrs $S "eth0:$(pod_eth0 3)" "net1:$(pod_net1 3)" "eth0:$(pod_eth0 6)" "net1:$(pod_net1 6)")
start_first
sleep 2
# shellcheck disable=SC2086
pod_bg "$S" "$GX_DIR/flood.log" "$PY" -u "$STRANGER" hold "$GX_DIR/flood.status" 29410 "$CONNS" idle $SRCS
flood=$GX_PID
for _ in $(seq 1 40); do
  [ -e "$GX_DIR/flood.status.history" ] && [ "$(wc -l <"$GX_DIR/flood.status.history")" -ge 3 ] && break
  sleep 0.5
done
st0=$(cat "$GX_DIR/flood.status" 2>/dev/null)
n_open=$(echo "$st0" | sed -n 's/^open=\([0-9]*\) .*/\1/p')
run_late attack
attack=$DT
st=$(cat "$GX_DIR/flood.status" 2>/dev/null)
kill "$flood" 2>/dev/null
tail -n 6 "$GX_DIR/flood.status.history"
echo "stranger when the late pods started: $st0; at the end: $st"
for i in 0 3 6; do
  grep 'warning' "$GX_DIR/pod$i.attack.log" | head -n 3 | cut -c1-200
done
echo "8 pods, fan-out 3, 5 starting late, clean: $clean ms; while a stranger holds $CONNS silent" \
  "connections to the relays: $attack ms (ratio $(awk -v a="$attack" -v b="$clean" 'BEGIN { printf "%.1f", a / b }')x)"
[ "${n_open:-0}" -ge 1500 ] || fail "the stranger held only '$st0' connections" "$GX_DIR/flood.log"
for i in $ALL; do
  [ "${GX_RC[i]}" = 0 ] ||
    fail "job-worker-$i exited ${GX_RC[i]} while a stranger held the relays' slots (want 0): $(tail -n 1 "$GX_DIR/pod$i.log" | cut -c1-300)" "$GX_DIR/pod$i.log"
done
for i in $ALL; do gx_expect_report "$i" $N; done
