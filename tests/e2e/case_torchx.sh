#!/usr/bin/env bash
# gx-timeout: 240
# Issue 16, drop-in: the exact command lines users already have, written for eth0, run behind
# gxboot with every pod's eth0 closed except DNS and the rendezvous port.
# 1. TorchX dist.ddp on Volcano: bash -c "torchrun --rdzv_backend c10d --rdzv_endpoint
#    ${VC_TRAINER_0_HOSTS:=localhost}:29500 ..." with VC_TRAINER_0_HOSTS = the coordinator's
#    eth0 name on the members and unset (localhost) on the coordinator.
# 2. A PyTorchJob-style command: torchrun --master_addr <coordinator eth0 name> --master_port
#    23456 --nnodes 3 --node_rank <i> ...
# Asserts for both: every pod exits 0, the 6 ranks of the real torch all_reduce print sum=21 OK
# with master_addr = the coordinator's net1 address (so the rewrite happened: c10d over eth0
# would have hung), and each pod logged the rewrite "old -> new".
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
M=$(pod_net1 0)
C=$(pod_fqdn 0)
expect_sum() {
  local r i
  for r in 0 1 2 3 4 5; do
    i=$((r / 2))
    grep -Eq "ALLREDUCE rank=$r world=6 host=job-worker-$i master_addr=$M master_port=[0-9]+ gloo_if=net1 sum=21 OK" \
      "$GX_DIR/pod$i.log" || fail "$1: rank $r: no 'sum=21 OK' with master_addr=$M" "$GX_DIR/pod$i.log"
  done
  for i in 0 1 2; do gx_expect_in "$i" ' -> '; done
}
# 1. TorchX dist.ddp
DDP='torchrun --rdzv_backend c10d --rdzv_endpoint ${VC_TRAINER_0_HOSTS:=localhost}:29500 --rdzv_id torchx-app --nnodes 3 --nproc_per_node 2 --redirects 1 --tee 1 '"$GX_E2E_DIR/allreduce.py"
for i in 2 1 0; do
  vc=()
  [ "$i" = 0 ] || vc=(env "VC_TRAINER_0_HOSTS=$C")
  mkdir -p "$GX_DIR/out$i"
  pod_bg "$i" "$GX_DIR/pod$i.log" "${vc[@]}" "$GXBOOT" \
    --out "$GX_DIR/out$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 -- \
    bash -c "$DDP"
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 90 0 1 2
gx_expect_rc 0 0 1 2
expect_sum "TorchX dist.ddp"
# 2. --master_addr naming the coordinator's eth0 name
for i in 2 1 0; do
  mkdir -p "$GX_DIR/out$i"
  pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" \
    --out "$GX_DIR/out$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 -- \
    torchrun --master_addr "$C" --master_port 23456 --nnodes 3 --node_rank "$i" \
    --nproc_per_node 2 --redirects 1 --tee 1 "$GX_E2E_DIR/allreduce.py"
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 90 0 1 2
gx_expect_rc 0 0 1 2
expect_sum "--master_addr"
echo "TorchX dist.ddp and --master_addr command lines rewritten onto net1 and trained"
