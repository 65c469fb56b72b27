#!/usr/bin/env bash
# The real torch job behind gxboot after a clean preflight: 3 pods, eth0 closed except DNS and
# the rendezvous port, gxboot --preflight -- torchrun --nproc_per_node 2 allreduce.py (gloo).
# The preflight measures every pair on net1 (port + 1), names nobody and the COMMIT follows:
# 6 ranks print sum=21 OK with MASTER_ADDR on net1; the coordinator's preflight.json holds
# every pair of the first pass (all pairs at 3 pods), each with a throughput figure.
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
  gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 30 --slots 2 --preflight \
    -- "$PY" -m torch.distributed.run --nproc_per_node 2 --rdzv_backend static \
    --redirects 1 --tee 1 "$GX_E2E_DIR/allreduce.py"
done
gx_wait_all 100 0 1 2
gx_expect_rc 0 0 1 2
for r in 0 1 2 3 4 5; do
  i=$((r / 2))
  grep -Eq "ALLREDUCE rank=$r world=6 host=job-worker-$i master_addr=$M master_port=[0-9]+ gloo_if=net1 sum=21 OK" \
    "$GX_DIR/pod$i.log" || fail "rank $r: no 'sum=21 OK' with master_addr=$M on net1" "$GX_DIR/pod$i.log"
done
"$PY" - "$GX_DIR/out0/preflight.json" <<'PYEOF' || fail "preflight.json" "$GX_DIR/out0/preflight.json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["blamed"] == [], d["blamed"]
tcp = [p for p in d["pairs"] if p["pass"] == 1 and p["proto"] == "tcp"]
assert sorted((p["from"], p["to"]) for p in tcp) == [(a, b) for a in range(3) for b in range(3) if a != b], tcp
assert all(p["ok"] and p["bps"] > 0 for p in tcp), tcp
print("preflight.json: 6 pairs, median %.1f Gbit/s" % (d["median_bps"]["tcp"] / 1e9))
PYEOF
grep -m1 'preflight: 3 pods, the job median' "$GX_DIR/pod0.log"
echo "torchrun all_reduce over net1 after a clean preflight OK"
