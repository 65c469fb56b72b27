#!/usr/bin/env bash
# check_scale.sh [N...]: `gxboot check` on N healthy netns pods (tests/e2e/cluster.sh), as root.
# Not a timed test: prints, per N, the pods that exited 0, the wall time from the last start
# to the last exit, the start (from the last start until the last pod begins its probes: the
# rendezvous, whose COMMIT carries the whole table), the time per pair, pairs/s, the
# coordinator's peak RSS and the largest member's, and the coordinator's summary. Figures are
# this machine's (2 cores shared: every pod is niced, and so are the busy loops).
#   CHECK_MODE=all|star|sampled (default all), CHECK_ARGS (extra options), REPS (default 1),
#   BUSY=1: one busy loop per core during the run (started here, killed by PID),
#   FLOOR=1: after each run, in the same pods and under the same busy loops, the floor with
#     no protocol (bench_floor pairs, FLOOR_BIN): every pod connects to every other at the
#     check port and makes the probe's echo round trips, as many in flight as the check; one
#     line "floor: N REP pods exit 0 K/N wall S" (the wall time measured as the check's),
#   CUT=i: pod i's net1 drops what arrives for the check port (nftables, as case_check_blame):
#   every pod should exit 1 naming job-worker-i alone; the line adds how many pods did,
#   CHECK_VERBOSE="i j ...": those pods log at debug level (-v), GXBOOT=path (default build/gxboot).
# Above 244 pods tests/e2e/cluster.sh switches to its /16 address plan; the largest N measured
# here is 512 (run it alone: it loads the machine to ~300 for about 4 minutes; its rendezvous
# --timeout is 600 s). 2026-11-26, busy loops on: 512/512 pods exit 0, 261,632/261,632 pairs,
# 160 s, 0.61 ms/pair, coordinator peak RSS 67 MiB.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LC_ALL=C
GXBOOT=$(realpath "${GXBOOT:-build/gxboot}")
FLOOR_BIN=$(realpath "${FLOOR_BIN:-build/release/bench/bench_floor}")
. tests/e2e/cluster.sh
cluster_need_root
gx_need_gxboot
[ "${FLOOR:-0}" != 1 ] || [ -x "$FLOOR_BIN" ] || { echo "FLOOR=1: $FLOOR_BIN not built"; exit 1; }
MODE=${CHECK_MODE:-all}
REPS=${REPS:-1}
busy=()
stop_busy() { local p; for p in "${busy[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; busy=(); }
# every netns's neighbour entries share the host's ARP table (gc_thresh3 1024 by default):
# N x (N - 1) entries overflow it and connects time out (a harness artifact, see
# tests/e2e/case_check_load.sh); raised here for the largest N, never lowered, put back on exit
arp=()
arp_restore() {
  local kv
  for kv in "${arp[@]}"; do sysctl -qw "net.ipv4.neigh.default.gc_thresh${kv%%=*}=${kv#*=}"; done
}
max=0
for n in "${@:-24}"; do [ "$n" -gt "$max" ] && max=$n; done
for k in 1 2 3; do
  v=$(sysctl -n "net.ipv4.neigh.default.gc_thresh$k")
  [ "$v" -ge $((max * max * 2 * k)) ] && continue
  arp+=("$k=$v")
  sysctl -qw "net.ipv4.neigh.default.gc_thresh$k=$((max * max * 2 * k))"
done
trap 'stop_busy; cluster_destroy; arp_restore' EXIT
cut_pod() { # cut_pod i: pod i unreachable on net1 at the check port (--port + 1)
  ip netns exec "$(pod_ns "$1")" nft -f - <<'NFT'
table inet gxcutcheck {
  chain in {
    type filter hook input priority 0; policy accept;
    iifname "net1" tcp dport 29411 counter drop
  }
}
NFT
}
# CUT=i: the pods whose exit line blames job-worker-i and no other pod
blamed_alone() {
  local n=$1 i line others k=0
  for i in $(seq 0 $((n - 1))); do
    line=$(grep 'gxboot: check failed' "$GX_DIR/pod$i.log" | tail -1)
    case "$line" in *"failing: job-worker-$CUT ("*) ;; *) continue ;; esac
    others=$(echo "${line#*failing:}" | sed 's/([^)]*)//g' | grep -oE 'job-worker-[0-9]+' |
      grep -vx "job-worker-$CUT")
    [ -z "$others" ] && k=$((k + 1))
  done
  echo "$k"
}
run_one() { # run_one N REP -> one table line
  local n=$1 rep=$2 i ok0 t0 t1 rss=0 rss0=0 r pairs line ts start=-
  T=$(cluster_token)
  for i in $(seq $((n - 1)) -1 0); do
    pod_bg "$i" "$GX_DIR/pod$i.log" nice -n 10 /usr/bin/time -f 'RSS %M' "$GXBOOT" check \
      --peers "job-worker-{0..$((n - 1))}" --token-file "$T" \
      --timeout "$((n > 244 ? 600 : 60))" --mode "$MODE" ${CHECK_ARGS:-} \
      $([[ " ${CHECK_VERBOSE:-} " == *" $i "* ]] && echo -v)
    GX_PIDS[i]=$GX_PID
  done
  t0=$(date +%s%N)
  gx_wait_all 900 $(seq 0 $((n - 1)))
  t1=$(date +%s%N)
  ok0=0
  for i in $(seq 0 $((n - 1))); do
    [ "${GX_RC[i]}" = 0 ] && ok0=$((ok0 + 1))
    r=$(sed -n 's/^RSS \([0-9]*\)$/\1/p' "$GX_DIR/pod$i.log" | tail -1)
    [ -n "$r" ] || continue
    if [ "$i" = 0 ]; then rss0=$r; elif [ "$r" -gt "$rss" ]; then rss=$r; fi
  done
  # the last pod to begin its probes (its log line's UTC time, ms)
  ts=$(for i in $(seq 0 $((n - 1))); do grep -m1 ' info: check: rank ' "$GX_DIR/pod$i.log"; done |
    cut -d' ' -f1 | sort | tail -1)
  [ -n "$ts" ] && start=$(awk -v a="$(date -d "$ts" +%s%3N)" -v b="$((t0 / 1000000))" \
    'BEGIN{printf "%.1f", (a - b) / 1000}')
  line=$(grep -E '^[0-9]+/[0-9]+ pairs' "$GX_DIR/pod0.log" | tail -1)
  pairs=$(echo "$line" | sed -n 's|^\([0-9]*\)/\([0-9]*\) pairs.*|\2|p')
  [ -n "$pairs" ] || pairs=0
  awk -v n="$n" -v rep="$rep" -v ok0="$ok0" -v t="$(((t1 - t0) / 1000000))" -v p="$pairs" \
    -v rss="$rss" -v rss0="$rss0" -v l="$line" -v st="$start" 'BEGIN {
      printf "%5d %3d %7d/%-5d %8.1f %8s %9.2f %9.0f %9d %9d  %s\n",
      n, rep, ok0, n, t / 1000, st, p ? t / p : 0, p ? p / (t / 1000) : 0, rss0, rss, l }'
  if [ -n "${CUT:-}" ]; then
    echo "  CUT=$CUT: $(blamed_alone "$n")/$n pods exit 1 naming job-worker-$CUT alone:" \
      "$(grep 'gxboot: check failed' "$GX_DIR/pod0.log" | tail -1 | sed 's/.*failing://' |
        cut -c1-200)"
  elif [ "$ok0" != "$n" ]; then
    # one line per distinct outcome, with its count; the coordinator's log is kept
    echo "  pods that did not exit 0 (count, exit code, last line):" >&2
    for i in $(seq 0 $((n - 1))); do
      [ "${GX_RC[i]}" = 0 ] ||
        echo "rc ${GX_RC[i]}: $(grep -E 'gxboot: |overloaded|no result' "$GX_DIR/pod$i.log" | tail -1 | cut -c1-200)"
    done | sort | uniq -c | sort -rn | head -10 >&2
    keep=/tmp/check_scale.$n.$rep.$$.pod0.log
    cp "$GX_DIR/pod0.log" "$keep" && echo "  the coordinator's log: $keep" >&2
    grep -E '^  ✗' "$GX_DIR/pod0.log" | head -40 >&2
  fi
}
floor_one() { # floor_one N REP -> "floor: N REP pods exit 0 K/N wall S"
  local n=$1 rep=$2 i ok0=0 t0 t1 addrs=()
  for i in $(seq 0 $((n - 1))); do addrs+=("$(pod_net1 "$i")"); done
  for i in $(seq $((n - 1)) -1 0); do
    pod_bg "$i" "$GX_DIR/floor$i.log" nice -n 10 "$FLOOR_BIN" pairs "$i" 29411 "${addrs[@]}"
    GX_PIDS[i]=$GX_PID
  done
  t0=$(date +%s%N)
  gx_wait_all 900 $(seq 0 $((n - 1)))
  t1=$(date +%s%N)
  for i in $(seq 0 $((n - 1))); do [ "${GX_RC[i]}" = 0 ] && ok0=$((ok0 + 1)); done
  echo "floor: $n $rep pods exit 0 $ok0/$n wall $(awk -v t="$(((t1 - t0) / 1000000))" 'BEGIN{printf "%.1f", t / 1000}')"
  if [ "$ok0" != "$n" ]; then
    for i in $(seq 0 $((n - 1))); do
      [ "${GX_RC[i]}" = 0 ] || echo "rc ${GX_RC[i]}: $(tail -1 "$GX_DIR/floor$i.log" | cut -c1-200)"
    done | sed 's/pod [0-9]*/pod K/' | sort | uniq -c | sort -rn | head -5 >&2
  fi
}
echo "gxboot check, mode $MODE, busy loops: ${BUSY:-0}${CUT:+, cut: job-worker-$CUT}, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%5s %3s %13s %8s %8s %9s %9s %9s %9s  %s\n' N rep 'pods exit 0' 'wall s' 'start s' 'ms/pair' \
  'pairs/s' \
  'RSS coord' 'RSS memb' 'summary (coordinator; RSS: peak KiB, members: the largest)'
for n in "${@:-24}"; do
  cluster_create "$n" || { echo "cluster_create $n failed"; exit 1; }
  trap 'stop_busy; cluster_destroy; arp_restore' EXIT # cluster_create sets its own
  [ -z "${CUT:-}" ] || cut_pod "$CUT" || { echo "CUT=$CUT: nft failed"; exit 1; }
  for rep in $(seq 1 "$REPS"); do
    if [ "${BUSY:-0}" = 1 ]; then
      for _ in $(seq 1 "$(nproc)"); do nice -n 10 sh -c "while :; do :; done" & busy+=($!); done
    fi
    run_one "$n" "$rep"
    [ "${FLOOR:-0}" = 1 ] && [ -z "${CUT:-}" ] && floor_one "$n" "$rep"
    stop_busy
  done
  cluster_destroy
done
