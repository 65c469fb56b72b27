#!/usr/bin/env bash
# `gxboot check` on 3 pods with a real rxe device on each net1.
#  a) every pair OK over TCP and over RDMA (RDMA-CM connect, send/recv, RDMA WRITE): every
#     pod exits 0 and prints "6/6 pairs OK over TCP, 6/6 over RDMA". Before the fix the probes
#     ran in a child forked after librdmacm had opened the uverbs device in the parent, and
#     every probe failed with "ibv_post_send: Permission denied": this is the regression test.
#  b) job-worker-2's RoCE traffic dropped (nftables, UDP 4791 on net1; TCP unaffected):
#     every pod exits 1 and names job-worker-2; TCP stays 6/6.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
gx_need_gxboot
rxe_pods 3
T=$(cluster_token)
P=(check --peers 'job-worker-{0..2}' --token-file "$T" --timeout 60 --size 1048576)

rxe_run 150 "${P[@]}" --json
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_in "$i" '"line": "6/6 pairs OK over TCP, 6/6 over RDMA'; done
! grep -q 'Permission denied' "$GX_DIR"/pod*.log || fail "EACCES in a probe" "$GX_DIR/pod0.log"
$PY - "$GX_DIR/pod0.log" <<'PYEOF' || fail "coordinator --json" "$GX_DIR/pod0.log"
import json, sys
text = "".join(l for l in open(sys.argv[1]) if " gxboot[" not in l)
doc = json.loads(text)
rd = [p for p in doc["probes"] if p["proto"] == "rdma"]
assert len(rd) == 6 and all(p["ok"] for p in rd), rd
assert all(p.get("gid_index", -1) >= 0 for p in rd), rd
w = [p.get("write_us", 0) for p in rd]
print("rdma probes ok; RDMA WRITE of 1 MiB: %s us (MB/s: %s)" %
      (w, [round(1048576 / x, 1) if x else 0 for x in w]))
PYEOF

rxe_drop_roce 2
rxe_run 150 "${P[@]}"
gx_expect_rc 1 0 1 2
for i in 0 1 2; do
  gx_expect_in "$i" 'job-worker-2'
  gx_expect_in "$i" '^6/6 pairs OK over TCP, 2/6 over RDMA'
done
echo "rdma check with a broken rail: $(grep -h "gxboot: check failed" "$GX_DIR/pod1.log")"
