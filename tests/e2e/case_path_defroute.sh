#!/usr/bin/env bash
# The pod network is eth0 by the runtime's convention, not whichever interface holds the
# default route. Multus' `default-route` moved every pod's default route onto net1 (via a
# gateway on the secondary network); eth0 keeps its own subnet and the cluster range.
#  A. No network-status: every pod exits 0 with MASTER_ADDR on net1, and the interface line
#     names the rule (3: in a pod, eth0 is the pod network) and says the default route on net1
#     is allowed.
#  B. A network-status file whose eth0 entry is the default: the same, by rule 1.
#  C. A network-status file whose eth0 entry lacks "default": true: the same (eth0 is still
#     no candidate), by rule 3.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do
  ns=$(pod_ns "$i")
  ip -n "$ns" route replace default via "$GX_NET_B.1" dev net1
  ip -n "$ns" route add 10.96.0.0/12 via "$GX_DNS" dev eth0 # the cluster's Service range
done
netstatus() { # netstatus i DEFAULT(true|false) : pod i's network-status as Multus writes it
  printf '[{"name":"cbr0","interface":"eth0","ips":["%s"],"mac":"0a:58:0a:00:00:01","default":%s,"dns":{}},' \
    "$(pod_eth0 "$1")" "$2"
  printf '{"name":"default/sec-net","interface":"net1","ips":["%s"],"mac":"0a:58:0a:00:00:02","dns":{}}]\n' \
    "$(pod_net1 "$1")"
}
run() { # run TAG RULE [DEFAULT]
  local tag=$1 rule=$2 dflt=${3:-} i
  local -a opts
  for i in 0 1 2; do
    rm -rf "$GX_DIR/out$i"
    opts=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 20)
    if [ -n "$dflt" ]; then
      netstatus "$i" "$dflt" >"$GX_DIR/ns$i.json"
      opts+=(--network-status "$GX_DIR/ns$i.json")
    fi
    gx_start "$i" "${opts[@]}" -- "${GX_REPORT[@]}"
  done
  gx_wait_all 40 0 1 2
  gx_expect_rc 0 0 1 2
  for i in 0 1 2; do
    gx_expect_report "$i"
    gx_expect_in "$i" "pod network eth0 \(rule $rule: "
    gx_expect_in "$i" "net1 holds the default route: allowed"
  done
  echo "$tag: $(grep -m1 'interface net1' "$GX_DIR/pod1.log" | sed 's/.*info: //')"
}
run A 3
run B 1 true
run C 3 false
