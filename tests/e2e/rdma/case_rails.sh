#!/usr/bin/env bash
# The fabric gate per HCA. 3 pods, two RoCE rails each: rxe<i> on net1 (the
# bootstrap), rxf<i> on net2.
#  a) init: every pod exits 0 with NCCL_IB_HCA listing both of its own rails (exact form) and
#     NCCL_IB_GID_INDEX the index the verification traffic used.
#  b) job-worker-2's net2 RoCE dropped (nftables, UDP 4791 on net2 only): every pod still exits
#     0 (the bootstrap rail works); job-worker-2's NCCL_IB_HCA lists only rxe2, its line and
#     rendezvous.json name net2 (rxf2); the others keep both rails.
#  c) check --rails auto with that rail broken: exit 1, every pod's line names job-worker-2's
#     rail net2 (before the rails probes' budget in the rendezvous was bounded, job-worker-2's
#     VERIFY came late and the line blamed net1).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
gx_need_gxboot
rxe_pods 3
rxe_net2
T=$(cluster_token)
P=(init --peers 'job-worker-{0..2}' --token-file "$T" --out @OUT@ --timeout 60)

# a)
rxe_run 120 "${P[@]}"
gx_expect_rc 0 0 1 2
for i in 0 1 2; do
  hca=$(gx_env "$GX_DIR/out$i/env" NCCL_IB_HCA)
  [ "$hca" = "=rxe$i:1,rxf$i:1" ] || fail "job-worker-$i: NCCL_IB_HCA '$hca'" "$GX_DIR/pod$i.log"
  [ "$(gx_env "$GX_DIR/out$i/env" NCCL_IB_GID_INDEX)" = 1 ] || fail "job-worker-$i: NCCL_IB_GID_INDEX" "$GX_DIR/out$i/env"
  ! grep -q 'left out' "$GX_DIR/pod$i.log" || fail "job-worker-$i left a rail out" "$GX_DIR/pod$i.log"
done
echo "rdma rails all verified: $(gx_env "$GX_DIR/out1/env" NCCL_IB_HCA)"

# b)
rxe_drop_roce_on 2 net2
rxe_run 120 "${P[@]}"
gx_expect_rc 0 0 1 2
[ "$(gx_env "$GX_DIR/out2/env" NCCL_IB_HCA)" = "=rxe2:1" ] || fail "job-worker-2 kept its broken rail" "$GX_DIR/out2/env"
gx_expect_in 2 'RDMA rails left out of NCCL_IB_HCA \(not verified\): net2 \(rxf2\): to rxf0'
grep -q '"rails_left_out": "net2 (rxf2)' "$GX_DIR/out2/rendezvous.json" || fail "rendezvous.json" "$GX_DIR/out2/rendezvous.json"
for i in 0 1; do
  [ "$(gx_env "$GX_DIR/out$i/env" NCCL_IB_HCA)" = "=rxe$i:1,rxf$i:1" ] || fail "job-worker-$i lost a rail" "$GX_DIR/out$i/env"
done
echo "rdma rails broken: $(grep -h 'left out' "$GX_DIR/pod2.log")"

# c)
rxe_run 150 check --peers 'job-worker-{0..2}' --token-file "$T" --timeout 60 --rails auto
for i in 0 1 2; do
  [ "${GX_RC[i]}" = 1 ] || fail "check --rails: job-worker-$i exited ${GX_RC[i]} (want 1)" "$GX_DIR/pod$i.log"
  gx_expect_in "$i" 'check failed: 6/6 pairs OK over TCP, 6/6 over RDMA, rails: 20/24 probes OK; failing: job-worker-2 \(rail net2\)$'
done
echo "rdma check --rails: $(grep -h 'gxboot: check failed' "$GX_DIR/pod1.log")"
