#!/usr/bin/env bash
# network-status that arrives late (the downward-API file is updated after
# the container starts): 2 pods run `gxboot init --network secnet --network-status FILE` with
# FILE empty at start; the Multus network-status JSON naming net1 for default/secnet is
# written into it 2 s later.
# Asserts: both pods exit 0 (not 2 at start), each logs that it re-read the file and that
# net1 became ready, and each env has GXBOOT_IFACE=net1 and MASTER_ADDR = job-worker-0's net1.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 2 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1; do
  : >"$GX_DIR/ns$i"
  gx_start "$i" init --peers 'job-worker-{0..1}' --token-file "$T" --timeout 20 \
    --network secnet --network-status "$GX_DIR/ns$i"
done
sleep 2
for i in 0 1; do
  printf '[{"name":"cbr0","interface":"eth0","ips":["%s"],"default":true},{"name":"default/secnet","interface":"net1","ips":["%s"],"mac":"02:00:00:00:00:0%s","default":false}]\n' \
    "$(pod_eth0 "$i")" "$(pod_net1 "$i")" "$i" >"$GX_DIR/ns$i.tmp"
  mv "$GX_DIR/ns$i.tmp" "$GX_DIR/ns$i"
done
gx_wait_all 30 0 1
gx_expect_rc 0 0 1
for i in 0 1; do
  gx_expect_in "$i" 're-reading .*ns'"$i"
  gx_expect_in "$i" 'network-status: net1 is ready after'
  [ "$(gx_env "$GX_DIR/out$i/env" GXBOOT_IFACE)" = net1 ] || fail "job-worker-$i: GXBOOT_IFACE" "$GX_DIR/pod$i.log"
  [ "$(gx_env "$GX_DIR/out$i/env" MASTER_ADDR)" = "$(pod_net1 0)" ] || fail "job-worker-$i: MASTER_ADDR" "$GX_DIR/pod$i.log"
done
echo "late network-status picked up"
