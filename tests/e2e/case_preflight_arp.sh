#!/usr/bin/env bash
# Layer 2 named (docs/network.md "Layer 2"): job-worker-3's net1 neither asks nor answers ARP
# (nftables arp family), except with the coordinator, whose entry it has as a static neighbour
# both ways (so its rendezvous and its verification pass). Its pairs with job-worker-1 and -2
# never resolve: their kernels' neighbour entries stay INCOMPLETE / FAILED.
#  a) gxboot check: exit 1 everywhere, and job-worker-1's own row says
#     "no ARP answer from <job-worker-3's net1>" (was: timeout);
#  b) gxboot init --preflight: job-worker-3 exits 8, the others 7, every pod's line names it
#     with "no ARP answer from <its net1>".
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
N=4
cluster_create $N || fail "cluster_create"
T=$(cluster_token)
all=$(seq 0 $((N - 1)))
mac() { ip netns exec "$(pod_ns "$1")" cat /sys/class/net/net1/address; }
ip -n "$(pod_ns 3)" neigh replace "$(pod_net1 0)" lladdr "$(mac 0)" dev net1 nud permanent || fail "neigh"
ip -n "$(pod_ns 0)" neigh replace "$(pod_net1 3)" lladdr "$(mac 3)" dev net1 nud permanent || fail "neigh"
ip netns exec "$(pod_ns 3)" nft -f - <<'NFT' || fail "nft arp"
table arp gxarp {
  chain in {
    type filter hook input priority 0; policy accept;
    iifname "net1" counter drop
  }
  chain out {
    type filter hook output priority 0; policy accept;
    oifname "net1" counter drop
  }
}
NFT
B=$(pod_net1 3)
for i in $(seq $((N - 1)) -1 0); do
  pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check --peers "job-worker-{0..$((N - 1))}" \
    --token-file "$T" --timeout 20 --mode all
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 55 $all
# shellcheck disable=SC2086
gx_expect_rc 1 $all
gx_expect_in 1 "no ARP answer from $B"
echo "check: $(grep -m1 -o "job-worker-3 *✗ no ARP answer from $B\|no ARP answer from $B" "$GX_DIR/pod1.log" | head -1)"
for i in $(seq $((N - 1)) -1 0); do
  gx_start "$i" init --peers "job-worker-{0..$((N - 1))}" --token-file "$T" --timeout 40 --preflight
done
gx_wait_all 55 $all
gx_expect_rc 8 3
gx_expect_rc 7 0 1 2
for i in $all; do
  gx_expect_in "$i" "^gxboot: preflight failed: job-worker-3: no ARP answer from $B "
done
grep '^gxboot: ' "$GX_DIR/pod1.log"
