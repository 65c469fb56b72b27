#!/usr/bin/env bash
# One address family for the whole table, MASTER_ADDR's.
#  A. The coordinator's net1 is IPv6-only, the members' dual-stack. Every pod exits 0 with
#     MASTER_ADDR on the coordinator's IPv6 address, and every address the job is handed is
#     IPv6: the hostfile's rows, each member's GXBOOT_ADDR. (A table that mixed the members'
#     IPv4 addresses with an IPv6 MASTER_ADDR would send rank 0 to them through eth0.)
#  B. The same coordinator, and job-worker-2 with IPv4 only on net1: every pod exits 5 at once,
#     naming job-worker-2 and both families.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
export GX_IPV6=1
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
v6() { echo "${GX_NET_V6}$((10 + $1))"; }
for i in 0 1 2; do
  ns=$(pod_ns "$i")
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.net1.disable_ipv6=0 net.ipv6.conf.lo.disable_ipv6=0
  ip -n "$ns" addr add "$(v6 "$i")/64" dev net1 nodad
done
ip -n "$(pod_ns 0)" addr del "$(pod_net1 0)/24" dev net1

for i in 2 1 0; do gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 -- "${GX_REPORT[@]}"; done
gx_wait_all 40 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do
  [ "$(gx_env "$GX_DIR/out$i/env" MASTER_ADDR)" = "$(v6 0)" ] ||
    fail "A: job-worker-$i MASTER_ADDR is not $(v6 0)" "$GX_DIR/out$i/env"
  [ "$(gx_env "$GX_DIR/out$i/env" GXBOOT_ADDR)" = "$(v6 "$i")" ] ||
    fail "A: job-worker-$i GXBOOT_ADDR is not its IPv6 address" "$GX_DIR/out$i/env"
done
want=$(for i in 0 1 2; do echo "$(v6 "$i") slots=1"; done)
[ "$(cat "$GX_DIR/out0/hostfile")" = "$want" ] || fail "A: the hostfile is not all IPv6" "$GX_DIR/out0/hostfile"
echo "A: hostfile $(tr '\n' ' ' <"$GX_DIR/out0/hostfile")"

ip -n "$(pod_ns 2)" addr del "$(v6 2)/64" dev net1
for i in 0 1 2; do rm -rf "$GX_DIR/out$i"; done
for i in 2 1 0; do gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 -- "${GX_REPORT[@]}"; done
gx_wait_all 40 0 1 2
gx_expect_rc 5 0 1 2
for i in 0 1 2; do
  gx_expect_in "$i" "job-worker-2 has no IPv6 address on net1 \(only $(pod_net1 2)\), and MASTER_ADDR $(v6 0) is IPv6"
done
gx_expect_no_files 0 1 2
echo "B: $(tail -n 1 "$GX_DIR/pod1.log")"
