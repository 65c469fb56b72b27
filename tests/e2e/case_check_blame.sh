#!/usr/bin/env bash
# Issue 30: blame the broken pod, not both ends. 6 pods; job-worker-3 drops what arrives on
# its net1 for the check port (nftables): its rendezvous and secondary verification pass
# (they connect out), but nobody reaches its check service. Every pod exits 1 and the exit
# line names job-worker-3 alone, confirmed by the coordinator's second probe:
#  a) --mode all: every probe to 3 fails, 3's own probes and all the others pass;
#  b) --mode star: the only failed pair is 0 -> 3; job-worker-0 is known good (its pairs
#     with 1, 2, 4, 5 pass), so the pair is blamed on 3 alone (c43d6af named job-worker-0
#     too: it took part in every failed pair).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
gx_skip_unless check
N=6
cluster_create $N || fail "cluster_create"
T=$(cluster_token)
all=$(seq 0 $((N - 1)))
# job-worker-3's check service is unreachable on net1 (the check port: --port + 1)
ip netns exec "$(pod_ns 3)" nft -f - <<'NFT' || fail "nft"
table inet gxblame {
  chain in {
    type filter hook input priority 0; policy accept;
    iifname "net1" tcp dport 29411 counter drop
  }
}
NFT
for mode in all star; do
  for i in $(seq $((N - 1)) -1 0); do
    pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check --peers "job-worker-{0..$((N - 1))}" \
      --token-file "$T" --timeout 15 --mode "$mode"
    GX_PIDS[i]=$GX_PID
  done
  gx_wait_all 55 $all
  # shellcheck disable=SC2086
  gx_expect_rc 1 $all
  for i in $all; do
    line=$(grep 'gxboot: check failed' "$GX_DIR/pod$i.log")
    [ -n "$line" ] || fail "$mode: job-worker-$i: no exit line" "$GX_DIR/pod$i.log"
    case "${line#*failing:}" in
    " job-worker-3 (no pod reaches it; job-worker-0's second probe: "*) ;;
    *) fail "$mode: job-worker-$i does not blame job-worker-3 first: $line" ;;
    esac
    others=$(echo "${line#*failing:}" | sed 's/([^)]*)//g' | grep -oE 'job-worker-[0-9]+' | grep -vx job-worker-3)
    [ -z "$others" ] || fail "$mode: job-worker-$i also blames $others: $line" "$GX_DIR/pod0.log"
  done
  echo "$mode: $(grep 'gxboot: check failed' "$GX_DIR/pod1.log")"
done
