#!/usr/bin/env bash
# `--rdma require` means the RDMA-CM path to the coordinator was
# really exercised (connect + send/recv), not that a device is present.
#  a) 3 pods, rxe on each net1, `init --rdma require`: every pod exits 0, NCCL_IB_HCA names
#     the pod's OWN rxe device (shared mode: every pod sees all three), GXBOOT_RDMA_VERIFIED=1
#     in env and env.json, rendezvous.json says verified, the coordinator's line counts the
#     members that verified to it, both with the phase-2 ticket (-v: its COMMIT line).
#  b) the coordinator has no RDMA device (its rxe deleted; it runs --rdma auto): a member with
#     --rdma require exits 5 with one line naming the coordinator (before the fix: exit 0, a
#     device was present); a member with --rdma auto exits 0, says so once, and writes
#     GXBOOT_RDMA_VERIFIED=0.
#  c) job-worker-2's RoCE traffic dropped (UDP 4791): job-worker-2 fails on RDMA-CM, and the
#     coordinator's line names job-worker-2 and its device.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
gx_need_gxboot
rxe_pods 3
T=$(cluster_token)
P=(init --peers 'job-worker-{0..2}' --token-file "$T" --out @OUT@)

# a)
rxe_run 120 "${P[@]}" --timeout 60 --rdma require -v
gx_expect_rc 0 0 1 2
# The members' phase 2 used the ASSIGN's ticket (TVERIFY, then the check, then
# VERIFY in that session), not a second handshake
gx_expect_in 0 'all 3 peers joined and verified \(2 with a phase-2 ticket\)'
for i in 0 1 2; do
  hca=$(gx_env "$GX_DIR/out$i/env" NCCL_IB_HCA)
  [ "$hca" = "=rxe$i:1" ] || fail "job-worker-$i: NCCL_IB_HCA '$hca', want '=rxe$i:1'" "$GX_DIR/pod$i.log"
  [ "$(gx_env "$GX_DIR/out$i/env" GXBOOT_RDMA_VERIFIED)" = 1 ] || fail "job-worker-$i: not verified" "$GX_DIR/pod$i.log"
  grep -q '"GXBOOT_RDMA_VERIFIED": "1"' "$GX_DIR/out$i/env.json" || fail "job-worker-$i: env.json" "$GX_DIR/out$i/env.json"
  [ "$(rxe_json "$i" 'd["rdma"]["verified"]')" = True ] || fail "job-worker-$i: rendezvous.json" "$GX_DIR/out$i/rendezvous.json"
done
gx_expect_in 0 'RDMA verified: 2 of 2 members verified RDMA-CM to rxe0'
for i in 1 2; do gx_expect_in "$i" "RDMA verified: RDMA-CM connect \+ send/recv from rxe$i to the coordinator job-worker-0 \(rxe0\) passed in [0-9.]+ ms"; done
echo "verify cost per member (TCG):"
grep -ho 'from rxe[0-9] to .* passed in [0-9.]* ms' "$GX_DIR"/pod[12].log | sed 's/^/MEASURE /'

# b) the coordinator without a device
rxe_del 0
rxe_start 2 "${P[@]}" --timeout 40 --rdma require
rxe_start 1 "${P[@]}" --timeout 40
rxe_start 0 "${P[@]}" --timeout 40
gx_wait_all 90 0 1 2
gx_expect_rc 0 0 1
gx_expect_rc 5 2
gx_expect_in 2 'gxboot: --rdma require: RDMA not verified: the coordinator job-worker-0 has no usable RDMA device or RDMA-CM listener: not verified'
[ "$(grep -c 'RDMA not verified' "$GX_DIR/pod1.log")" = 1 ] || fail "job-worker-1: want one 'RDMA not verified' line" "$GX_DIR/pod1.log"
[ "$(gx_env "$GX_DIR/out1/env" GXBOOT_RDMA_VERIFIED)" = 0 ] || fail "job-worker-1: GXBOOT_RDMA_VERIFIED" "$GX_DIR/out1/env"
[ "$(rxe_json 1 'd["rdma"]["verified"]')" = False ] || fail "job-worker-1: rendezvous.json" "$GX_DIR/out1/rendezvous.json"
! grep -q GXBOOT_RDMA_VERIFIED "$GX_DIR/out0/env" || fail "job-worker-0 has no device: no key" "$GX_DIR/out0/env"

# c) job-worker-2's rail broken
pod_exec 0 rdma link add rxe0 type rxe netdev net1 || fail "rdma link add rxe0"
rxe_drop_roce 2
rxe_run 120 "${P[@]}" --timeout 30
for i in 0 2; do [ "${GX_RC[i]}" != 0 ] || fail "job-worker-$i exited 0 with job-worker-2's RoCE dropped" "$GX_DIR/pod$i.log"; done
gx_expect_in 0 'job-worker-2.*(RDMA|rxe)'
gx_expect_in 2 'RDMA-CM'
echo "verify broken rail: $(grep -h 'gxboot:' "$GX_DIR/pod0.log" | tail -1)"
echo "verify broken rail (member): $(grep -h 'gxboot:' "$GX_DIR/pod2.log" | tail -1)"
