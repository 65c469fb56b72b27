#!/usr/bin/env bash
# The NCCL half of the transport report end to end, without a GPU: fabric_nccl_fake.py writes
# NCCL's own lines (rendered from NCCL's source at a pinned commit, tests/fixtures/fabric/
# upstream.json) through the NCCL_DEBUG_FILE gxboot set, and moves real bytes over MASTER_ADDR.
# 2 pods, --supervise, eth0 closed.
#  A) the user's NCCL_IB_DISABLE=1: NCCL says NET/Socket on net1 and why; gxboot set
#     NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET,ENV and the file in --out; every pod's line is
#     "secondary: NCCL NET/Socket on net1 (NCCL_IB_DISABLE=1, NET/IB : No device found.)",
#     fabric.json has the network, the variable and the net1 bytes.
#  B) NCCL says NET/IB on two devices of which none verified (no RDMA here): "(0 of 0
#     verified rails)", the bytes still TCP: secondary.
#  C) the user's own NCCL_DEBUG=WARN: gxboot sets none of the three, the file is not written,
#     and the line says NCCL's choice is unknown.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 2 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1; do cluster_cut_eth0 "$i"; done
P=(--peers 'job-worker-{0..1}' --token-file "$T" --timeout 20 --supervise)
FAKE=("$PY" "$GX_E2E_DIR/fabric_nccl_fake.py")
jv() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$GX_DIR/out$1/fabric.json" "$2"; }
run() { # run ENV... -- IDS...
  local i env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  for i in 1 0; do
    mkdir -p "$GX_DIR/out$i"
    pod_bg "$i" "$GX_DIR/pod$i.log" env "${env[@]}" "$GXBOOT" --out "$GX_DIR/out$i" "${P[@]}" -- \
      "${FAKE[@]}" "$@"
    GX_PIDS[i]=$GX_PID
  done
  gx_wait_all 50 0 1
  gx_expect_rc 0 0 1
}

# A)
run NCCL_IB_DISABLE=1 -- env-ib-disable ib-none sock-using net-socket
for i in 0 1; do
  gx_expect_in "$i" "NCCLFAKE rank=$i debug=INFO subsys=INIT,NET,ENV file=nccl.job-worker-$i.[0-9]+.log bytes="
  ls "$GX_DIR/out$i"/nccl.job-worker-"$i".*.log >/dev/null || fail "A: pod $i: no NCCL file in --out"
  gx_expect_in "$i" "info: fabric: secondary: NCCL NET/Socket on net1 \(NCCL_IB_DISABLE=1, NET/IB : No device found.\); CMD's TCP: 0 on eth0, [0-9.]+ MB on net1$"
  [ "$(jv "$i" 'd["library"]["nccl"]["network"]')" = Socket ] || fail "A: pod $i network" "$GX_DIR/out$i/fabric.json"
  [ "$(jv "$i" 'd["library"]["nccl"]["env"]')" = "['NCCL_IB_DISABLE=1']" ] || fail "A: pod $i env" "$GX_DIR/out$i/fabric.json"
  [ "$(jv "$i" 'd["tcp"]["net1"]["bytes"] >= 8 << 20')" = True ] || fail "A: pod $i net1 bytes" "$GX_DIR/out$i/fabric.json"
done
echo "fabric nccl A: $(grep -h 'info: fabric: secondary' "$GX_DIR/pod1.log" | tail -1 | sed 's/.*info: //')"

# B)
run -- ib-using net-ib
for i in 0 1; do
  gx_expect_in "$i" "info: fabric: secondary: NCCL NET/IB on mlx5_0:1,mlx5_3:1 \(0 of 0 verified rails\); CMD's TCP: 0 on eth0, [0-9.]+ MB on net1$"
done
echo "fabric nccl B: $(grep -h 'info: fabric: secondary' "$GX_DIR/pod1.log" | tail -1 | sed 's/.*info: //')"

# C)
run NCCL_DEBUG=WARN -- net-socket
for i in 0 1; do
  gx_expect_in "$i" "NCCLFAKE rank=$i debug=WARN subsys= file=none"
  ! ls "$GX_DIR/out$i"/nccl.*.log >/dev/null 2>&1 || fail "C: pod $i: an NCCL file although the user set NCCL_DEBUG"
  gx_expect_in "$i" "info: fabric: secondary: NCCL's choice unknown \(NCCL_DEBUG set by the user\); CMD's TCP: 0 on eth0, [0-9.]+ MB on net1$"
  [ "$(jv "$i" 'd["library"]["nccl"]["state"]')" = "unknown (NCCL_DEBUG set by the user)" ] || fail "C: pod $i state" "$GX_DIR/out$i/fabric.json"
done
echo "fabric nccl C: $(grep -h 'info: fabric: secondary' "$GX_DIR/pod1.log" | tail -1 | sed 's/.*info: //')"
