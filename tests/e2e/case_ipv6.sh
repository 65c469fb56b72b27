#!/usr/bin/env bash
# An IPv6-only secondary network: net1 has only a global IPv6 address (nodad), eth0
# stays IPv4 (DNS, rendezvous phase 1) and is closed except DNS + 29410. 2 pods run
# gxboot -- torchrun --nproc_per_node 2 allreduce.py (torch 1.13, gloo, static rendezvous).
# Asserts: both exit 0; the 4 ranks sum to 10 over MASTER_ADDR = the coordinator's IPv6 net1
# address with gloo on net1 (eth0 is closed); env has NCCL_SOCKET_FAMILY=AF_INET6 and
# GXBOOT_ADDR = the pod's own v6 address; the coordinator's hostfile lists the two v6
# addresses. (lo carries IPv6 in the pods, as in a real pod: the master's TCPStore client
# connects to its own v6 address through it.)
# gx-timeout: 200
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
GX_NET1_V6=1 cluster_create 2 || fail "cluster_create"
export GX_NET1_V6=1
T=$(cluster_token)
for i in 0 1; do cluster_cut_eth0 "$i"; done
M=$(pod_net1 0)
# pod 1 (a member) names --hostfile-format: it asks for the whole table and writes a hostfile
for i in 1 0; do
  [ "$i" = 1 ] && F=(--hostfile-format mpich) || F=()
  gx_start "$i" --peers 'job-worker-{0..1}' --token-file "$T" --timeout 20 --slots 2 "${F[@]}" -- \
    "$PY" -m torch.distributed.run --nproc_per_node 2 --rdzv_backend static \
    --redirects 1 --tee 1 "$GX_E2E_DIR/allreduce.py"
done
gx_wait_all 100 0 1 # torch imports on 2 loaded cores
gx_expect_rc 0 0 1
for r in 0 1 2 3; do
  grep -q "ALLREDUCE rank=$r world=4 host=job-worker-$((r / 2)) master_addr=$M master_port=29500 gloo_if=net1 sum=10 OK" \
    "$GX_DIR/pod0.log" "$GX_DIR/pod1.log" || fail "rank $r not OK over [$M]" "$GX_DIR/pod0.log" "$GX_DIR/pod1.log"
done
for i in 0 1; do
  e=$GX_DIR/out$i/env
  [ "$(gx_env "$e" NCCL_SOCKET_FAMILY)" = AF_INET6 ] || fail "job-worker-$i: NCCL_SOCKET_FAMILY" "$e"
  [ "$(gx_env "$e" GXBOOT_ADDR)" = "$(pod_net1 "$i")" ] || fail "job-worker-$i: GXBOOT_ADDR" "$e"
done
want=$(printf '%s slots=2\n' "$(pod_net1 0)" "$(pod_net1 1)")
[ "$(cat "$GX_DIR/out0/hostfile")" = "$want" ] || fail "hostfile" "$GX_DIR/out0/hostfile"
# `gxboot hosts` brackets v6 ("host:slots" cannot be split otherwise) and honours
# --hostfile-format; Hydra's file (which splits at every ':') names such peers
want=$(printf '[%s]:2\n' "$(pod_net1 0)" "$(pod_net1 1)")
got=$("$GXBOOT" hosts --out "$GX_DIR/out0")
[ "$got" = "$want" ] || fail "gxboot hosts: got '$got', want '$want'"
want=$(printf '%s slots=2\n' "$(pod_net1 0)" "$(pod_net1 1)")
got=$("$GXBOOT" hosts --out "$GX_DIR/out0" --hostfile-format openmpi)
[ "$got" = "$want" ] || fail "gxboot hosts --hostfile-format openmpi: got '$got', want '$want'"
[ "$(cat "$GX_DIR/out0/hostfile.hydra")" = "$(printf 'job-worker-0:2\njob-worker-1:2')" ] ||
  fail "hostfile.hydra" "$GX_DIR/out0/hostfile.hydra"
want=$(printf '[%s]:2\n' "$(pod_net1 0)" "$(pod_net1 1)")
[ "$(cat "$GX_DIR/out1/hostfile" 2>/dev/null)" = "$want" ] ||
  fail "the member with --hostfile-format mpich has no such hostfile" "$GX_DIR/out1/hostfile"
echo "IPv6-only net1: torchrun all_reduce over [$M], env and hostfile OK"
