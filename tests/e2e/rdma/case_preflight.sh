#!/usr/bin/env bash
# --preflight on soft-RoCE: 3 pods, rxe on each net1, `init --preflight --rdma require`. The
# rendezvous verifies RDMA-CM to the coordinator, so every pair also gets an RDMA WRITE of
# --preflight-bytes (1 MiB here: TCG) from its own pod's loop (no fork: a child may not use
# verbs its parent opened). Every pod exits 0; the coordinator's preflight.json holds, for every
# ordered pair (all pairs at 3 pods), a TCP pair and an RDMA pair that passed with a figure.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
gx_need_gxboot
rxe_pods 3
T=$(cluster_token)
rxe_run 150 init --peers 'job-worker-{0..2}' --token-file "$T" --out @OUT@ --timeout 90 \
  --rdma require --preflight --preflight-bytes 1048576
gx_expect_rc 0 0 1 2
"$PY" - "$GX_DIR/out0/preflight.json" <<'PYEOF' || { grep -hiE "rdma|preflight" "$GX_DIR"/pod*.log | grep -v "^ *\"" | head -40; fail "preflight.json"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["blamed"] == [], d["blamed"]
want = [(a, b) for a in range(3) for b in range(3) if a != b]
for proto in ("tcp", "rdma"):
    got = sorted((p["from"], p["to"]) for p in d["pairs"] if p["pass"] == 1 and p["proto"] == proto and p["ok"] and p["bps"] > 0)
    assert got == want, (proto, got)
print("MEASURE RDMA WRITE of 1 MiB, median %.2f Gbit/s; TCP median %.2f Gbit/s (TCG)" % (d["median_bps"]["rdma"] / 1e9, d["median_bps"]["tcp"] / 1e9))
PYEOF
echo "preflight on soft-RoCE: 3 pods, TCP and RDMA WRITE pairs all passed"
