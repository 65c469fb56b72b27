#!/usr/bin/env bash
# Drop-in: a PyTorchJob-style command line written for eth0, run behind gxboot with
# every pod's eth0 closed except DNS and the rendezvous port: torchrun --master_addr
# <coordinator eth0 name> --master_port 23456 --nnodes 3 --node_rank <i> ... (TorchX's own
# command lines run as TorchX generates them in case_torchx_volcano and case_torchx_mcad).
# Asserts: every pod exits 0, the 6 ranks of the real torch all_reduce print sum=21 OK with
# master_addr = the coordinator's net1 address (so the rewrite happened), and each pod
# logged the rewrite "old -> new".
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
M=$(pod_net1 0)
C=$(pod_fqdn 0)
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
for r in 0 1 2 3 4 5; do
  i=$((r / 2))
  grep -Eq "ALLREDUCE rank=$r world=6 host=job-worker-$i master_addr=$M master_port=[0-9]+ gloo_if=net1 sum=21 OK" \
    "$GX_DIR/pod$i.log" || fail "rank $r: no 'sum=21 OK' with master_addr=$M" "$GX_DIR/pod$i.log"
done
for i in 0 1 2; do gx_expect_in "$i" ' -> '; done
echo "--master_addr command line rewritten onto net1 and trained"
