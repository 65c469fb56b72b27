#!/usr/bin/env bash
# hostNetwork pods on a Cilium node. Each "node" has its NIC eno1 (the default route),
# Cilium's cilium_host / cilium_net veth pair (cilium_host with a /32, NOARP) and the
# secondary NIC ens2f0, made after them: the same speed as cilium_host and a higher ifindex,
# which once made cilium_host the choice (MASTER_ADDR on an address routed over the node's
# primary network).
# Asserts: every pod exits 0 with MASTER_ADDR on job-worker-0's ens2f0 address and its own
# ens2f0 as GXBOOT_IFACE; the interface line says hostNetwork and passes over cilium_host.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do
  ns=$(pod_ns "$i")
  ip -n "$ns" link set eth0 down
  ip -n "$ns" link set eth0 name eno1
  ip -n "$ns" link set eno1 up
  ip -n "$ns" route replace default via "$GX_DNS" dev eno1
  ip -n "$ns" link del net1
  ip -n "$ns" link add cilium_host type veth peer name cilium_net
  ip -n "$ns" link set cilium_host arp off
  ip -n "$ns" addr add "10.250.$((10 + i)).1/32" dev cilium_host
  ip -n "$ns" link set cilium_net up
  ip -n "$ns" link set cilium_host up
  ip link add "${GX_P}-n$i" type veth peer name ens2f0 netns "$ns"
  ip link set "${GX_P}-n$i" master "${GX_P}-b1" up
  ip -n "$ns" addr add "$(pod_net1 "$i")/24" dev ens2f0
  ip -n "$ns" link set ens2f0 up
done
for i in 2 1 0; do gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 -- "${GX_REPORT[@]}"; done
gx_wait_all 40 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do
  want="GXREPORT rank=$i nnodes=3 master=$(pod_net1 0):29500 iface=ens2f0 addr=$(pod_net1 "$i") gloo=ens2f0 token=none"
  grep -qxF -- "$want" "$GX_DIR/pod$i.log" || fail "job-worker-$i: want '$want'" "$GX_DIR/pod$i.log"
  gx_expect_in "$i" "interface ens2f0 .*hostNetwork"
done
pod_exec 1 "$GXBOOT" netdetect | grep -E '^(choice|passed over: cilium_host)' || fail "netdetect table"
echo "job-worker-1: $(grep -m1 'interface ens2f0' "$GX_DIR/pod1.log" | sed 's/.*info: //')"
