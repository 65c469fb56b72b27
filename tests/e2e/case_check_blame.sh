#!/usr/bin/env bash
# Blame the broken pod, not both ends. 6 pods; job-worker-3 drops what arrives on
# its net1 for the check port (nftables): its rendezvous and secondary verification pass
# (they connect out), but nobody reaches its check service. Every pod exits 1 and the exit
# line names job-worker-3 alone, confirmed by the second pass from two vantages: the
# coordinator's own probe and job-worker-1's (the first known-good member, asked over its
# report connection with a sealed PROBE, answering PROBED):
#  a) --mode all: every probe to 3 fails, 3's own probes and all the others pass;
#  b) --mode star: the only failed pair is 0 -> 3; job-worker-0 is known good (its pairs
#     with 1, 2, 4, 5 pass), so the pair is blamed on 3 alone (c43d6af named job-worker-0
#     too: it took part in every failed pair); job-worker-1 probes 3 although star mode
#     never pairs them;
#  c) --mode all with the coordinator's own probes cut (its net1 drops what it sends to the
#     check port: the members' verification and probes to it pass): it is not known good,
#     so only job-worker-1 probes it again, reaches it, and says so (a warning); the exit
#     line names job-worker-0 alone (before: no second pass at all without a good
#     coordinator).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
N=6
cluster_create $N || fail "cluster_create"
T=$(cluster_token)
all=$(seq 0 $((N - 1)))
cut() { # cut i: pod i's check service unreachable on net1 (the check port: --port + 1)
  ip netns exec "$(pod_ns "$1")" nft -f - <<'NFT' || fail "nft"
table inet gxblame {
  chain in {
    type filter hook input priority 0; policy accept;
    iifname "net1" tcp dport 29411 counter drop
  }
}
NFT
}
uncut() { ip netns exec "$(pod_ns "$1")" nft delete table inet gxblame || fail "nft delete"; }
cut_out() { # cut_out i: pod i's probes (to the check port on net1) are dropped
  ip netns exec "$(pod_ns "$1")" nft -f - <<'NFT' || fail "nft"
table inet gxblame {
  chain out {
    type filter hook output priority 0; policy accept;
    oifname "net1" tcp dport 29411 counter drop
  }
}
NFT
}
cut 3
for run in all:3 star:3 all:0; do
  mode=${run%:*} bad=${run#*:}
  if [ "$run" = all:0 ]; then uncut 3 && cut_out 0; fi
  for i in $(seq $((N - 1)) -1 0); do
    pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check --peers "job-worker-{0..$((N - 1))}" \
      --token-file "$T" --timeout 15 --mode "$mode"
    GX_PIDS[i]=$GX_PID
  done
  gx_wait_all 55 $all
  # shellcheck disable=SC2086
  gx_expect_rc 1 $all
  if [ "$bad" = 3 ]; then
    want=" job-worker-3 (no pod reaches it; job-worker-0's second probe: *, job-worker-1's second probe: *)"
  else
    want=" job-worker-0 (no pod reaches it or is reached by it)"
    grep -q "job-worker-0 failed its pairs, but answers job-worker-1's second probe" \
      "$GX_DIR/pod0.log" || fail "$run: no second probe through job-worker-1" "$GX_DIR/pod0.log"
  fi
  for i in $all; do
    line=$(grep 'gxboot: check failed' "$GX_DIR/pod$i.log")
    [ -n "$line" ] || fail "$run: job-worker-$i: no exit line" "$GX_DIR/pod$i.log"
    # shellcheck disable=SC2254
    case "${line#*failing:}" in
    $want) ;;
    *) fail "$run: job-worker-$i does not blame job-worker-$bad alone, from both vantages: $line" "$GX_DIR/pod0.log" ;;
    esac
    others=$(echo "${line#*failing:}" | sed 's/([^)]*)//g' | grep -oE 'job-worker-[0-9]+' | grep -vx "job-worker-$bad")
    [ -z "$others" ] || fail "$run: job-worker-$i also blames $others: $line" "$GX_DIR/pod0.log"
  done
  echo "$run: $(grep 'gxboot: check failed' "$GX_DIR/pod1.log")"
done
