#!/usr/bin/env bash
# 3 pods run gxboot -- torchrun --nproc_per_node 2 allreduce.py (gloo).
# Every pod's eth0 is closed by nftables except DNS and the rendezvous port (29410) from the
# start, so the torch all_reduce can only succeed over net1.
# Asserts: all gxboot/torchrun exit 0; 6 ranks print sum=21 OK; every rank saw
# MASTER_ADDR = job-worker-0's net1 address and GLOO_SOCKET_IFNAME=net1; each pod's env file
# has NODE_RANK=<its index>, NNODES=3, MASTER_ADDR=<coordinator net1>; the coordinator's
# hostfile lists the three net1 addresses in rank order.
# gx-timeout: 200
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
M=$(pod_net1 0)
for i in 2 1 0; do
  gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 --slots 2 -- \
    "$PY" -m torch.distributed.run --nproc_per_node 2 --rdzv_backend static \
    --redirects 1 --tee 1 "$GX_E2E_DIR/allreduce.py"
done
gx_wait_all 100 0 1 2 # torch imports on 2 loaded cores
gx_expect_rc 0 0 1 2
for r in 0 1 2 3 4 5; do
  i=$((r / 2))
  grep -Eq "ALLREDUCE rank=$r world=6 host=job-worker-$i master_addr=$M master_port=[0-9]+ gloo_if=net1 sum=21 OK" \
    "$GX_DIR/pod$i.log" || fail "rank $r: no 'sum=21 OK' with master_addr=$M on net1" "$GX_DIR/pod$i.log"
done
for i in 0 1 2; do
  e=$GX_DIR/out$i/env
  [ "$(gx_env "$e" NODE_RANK)" = "$i" ] || fail "job-worker-$i env NODE_RANK" "$e"
  [ "$(gx_env "$e" NNODES)" = 3 ] || fail "job-worker-$i env NNODES" "$e"
  [ "$(gx_env "$e" MASTER_ADDR)" = "$M" ] || fail "job-worker-$i env MASTER_ADDR" "$e"
done
want=$(for i in 0 1 2; do echo "$(pod_net1 "$i") slots=2"; done)
[ "$(cat "$GX_DIR/out0/hostfile")" = "$want" ] || fail "coordinator hostfile" "$GX_DIR/out0/hostfile"
echo "torchrun all_reduce over net1 OK; cut counters (in/out dropped on eth0):"
for i in 0 1 2; do echo "  job-worker-$i: $(cluster_cut_counters "$i")"; done
