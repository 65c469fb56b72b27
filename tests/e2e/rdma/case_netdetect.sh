#!/usr/bin/env bash
# netdetect against REAL shared-mode GID tables. 3 pods, rxe on each
# net1, IPv6 on (link-local GIDs too): every pod sees all three rxe devices, every pod's net1
# has the same ifindex, so the other pods' GIDs carry OUR ifindex; only the ifindex-and-address
# rule keeps the choice right.
#  a) each pod picks net1 + its OWN rxe<i>, a RoCE v2 GID equal to ::ffff:<its net1 IPv4>;
#     every GID of another pod's device is marked not ours although its ndev_ifindex is ours.
#  b) job-worker-1's rxe deleted: it sees two devices, neither ours: no RDMA device chosen,
#     and `--rdma require` exits 4 (never the neighbour's device).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
gx_need_gxboot
GX_IPV6=1
rxe_pods 3

for i in 0 1 2; do
  pod_exec "$i" "$GXBOOT" netdetect --json >"$GX_DIR/nd$i.json" 2>"$GX_DIR/pod$i.log" ||
    fail "job-worker-$i: netdetect" "$GX_DIR/pod$i.log"
  $PY - "$GX_DIR/nd$i.json" "$i" "$(pod_net1 "$i")" <<'PYEOF' || fail "job-worker-$i netdetect --json" "$GX_DIR/nd$i.json"
import json, sys
d = json.load(open(sys.argv[1])); i = int(sys.argv[2]); ip = sys.argv[3]
c = d["choice"]
assert c["iface"] == "net1" and c["rdma_dev"] == "rxe%d" % i and c["rdma_usable"], c
assert c["gid_type"] and "v2" in c["gid_type"], c
devs = {x["name"]: x for x in d["rdma"]}
assert sorted(devs) == ["rxe0", "rxe1", "rxe2"], sorted(devs)   # shared mode: all visible
ours = [g for g in devs["rxe%d" % i]["ports"][0]["gids"] if g["ours"]]
chosen = [g for g in ours if g["index"] == c["gid_index"]]
assert chosen and chosen[0]["gid"] == "::ffff:" + ip, (chosen, ip)
ll = [g for g in devs["rxe%d" % i]["ports"][0]["gids"] if g["gid"].startswith("fe80:")]
collide = 0
for name, x in devs.items():
    if name == "rxe%d" % i:
        continue
    for g in x["ports"][0]["gids"]:
        assert not g["ours"], (name, g)
        collide += g["ndev_ifindex"] == c["ifindex"]
assert collide > 0, "no ifindex collision seen: the case tests nothing"
print("rdma netdetect job-worker-%d: %s gid %d %s; %d foreign GIDs with our ifindex %d, not ours; %d link-local GIDs"
      % (i, c["rdma_dev"], c["gid_index"], chosen[0]["gid"], collide, c["ifindex"], len(ll)))
PYEOF
done

rxe_del 1
pod_exec 1 "$GXBOOT" netdetect --json >"$GX_DIR/nd1.json" 2>"$GX_DIR/pod1.log"
$PY - "$GX_DIR/nd1.json" <<'PYEOF' || fail "job-worker-1 without rxe1" "$GX_DIR/nd1.json"
import json, sys
d = json.load(open(sys.argv[1]))
assert sorted(x["name"] for x in d["rdma"]) == ["rxe0", "rxe2"], d["rdma"]
assert d["choice"]["iface"] == "net1" and not d["choice"]["rdma_dev"], d["choice"]
PYEOF
pod_exec 1 "$GXBOOT" netdetect --rdma require >"$GX_DIR/pod1.log" 2>&1
rc=$?
[ "$rc" = 4 ] || fail "job-worker-1 netdetect --rdma require without its rxe: exit $rc (want 4)" "$GX_DIR/pod1.log"
echo "rdma netdetect without own rxe: $(grep -m1 'gxboot:' "$GX_DIR/pod1.log")"
