#!/usr/bin/env bash
# `gxboot check --rails` on 4 pods with net1..net4, each rail on its own bridge
# and subnet (a rail-optimised fabric: net3 of one pod reaches only net3 of the others).
# No RDMA here, so the rails are netdev rails (netdetect/README.md "Rails").
#  a) netdetect --rails net1,net2,net3,net4 --json lists the four netdevs as rails
#     (and no RDMA device); the check's dry run names them.
#  b) all good: check --rails auto exits 0 on every pod, "12/12 pairs OK over TCP" and
#     "rails: 48/48 probes OK"; --json has 12 probes per rail, each from/to its own subnet.
#  c) job-worker-2's net3 dropped by nftables (both ways): every pod exits 1, the exit line
#     names exactly "job-worker-2 (rail net3)", the net3 matrix shows ✗ only in row and
#     column 2, the bootstrap TCP pairs and the other rails stay ✓.
#  d) job-worker-1's net4 link down: it has no rail net4, every pod exits 1 naming
#     "job-worker-1 (rail net4)".
# The time each check took is printed, with a bootstrap-only (--rails none) run for
# comparison (no timing assertion: it would flake on a loaded machine).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 4 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..3}' --token-file "$T" --timeout 15)

# net2..net4: bridge ${GX_P}-r<k>, subnet 10.<x>.<k+1>.0/24 (GX_NET_A is 10.<x>.1)
RX=${GX_NET_A#10.}
RX=${RX%.1}
rail_net() { echo "10.$RX.$(($1 + 1))"; } # rail_net k
rails_destroy() {
  local k
  for k in 2 3 4; do ip link del "${GX_P}-r$k" 2>/dev/null; done
  return 0
}
trap 'rails_destroy; cluster_destroy' EXIT
for k in 2 3 4; do
  ip -4 addr | grep -q " $(rail_net "$k")\." && { echo "SKIP: $(rail_net "$k").0/24 in use"; exit 77; }
  gx_bridge "${GX_P}-r$k" || fail "bridge r$k"
  for i in 0 1 2 3; do
    ns=$(pod_ns "$i")
    ip link add "${GX_P}-q$k$i" type veth peer name "net$k" netns "$ns" || fail "veth net$k pod $i"
    ip link set "${GX_P}-q$k$i" master "${GX_P}-r$k" up
    ip -n "$ns" addr add "$(rail_net "$k").$((10 + i))/24" dev "net$k"
    ip -n "$ns" link set "net$k" up
  done
done
rail_addr() { # rail_addr i k
  if [ "$2" = 1 ]; then pod_net1 "$1"; else echo "$(rail_net "$2").$((10 + $1))"; fi
}

# a) netdetect lists the netdevs as rails; the dry run names them
pod_exec 0 "$GXBOOT" netdetect --rails net1,net2,net3,net4 --json >"$GX_DIR/nd.json" 2>"$GX_DIR/nd.err" ||
  fail "netdetect --rails LIST" "$GX_DIR/nd.err"
$PY - "$GX_DIR/nd.json" "$(rail_addr 0 3)" <<'PYEOF' || fail "netdetect rails" "$GX_DIR/nd.json"
import json, sys
doc = json.load(open(sys.argv[1]))
rails = doc["rails"]
assert [r["iface"] for r in rails] == ["net1", "net2", "net3", "net4"], rails
assert all(r["dev"] == "" for r in rails), rails
assert rails[2]["addr"] == sys.argv[2], rails
print("netdetect rails:", [r["iface"] for r in rails])
PYEOF
pod_exec 0 "$GXBOOT" netdetect --rails net1,net9 >"$GX_DIR/nd9.log" 2>&1
[ $? = 4 ] || fail "netdetect --rails net9: want exit 4" "$GX_DIR/nd9.log"
grep -q -- "--rails net9" "$GX_DIR/nd9.log" || fail "net9 not named" "$GX_DIR/nd9.log"
pod_exec 1 "$GXBOOT" check "${P[@]}" --rails auto --dry-run >"$GX_DIR/dry.log" 2>&1 ||
  fail "check --rails --dry-run" "$GX_DIR/dry.log"
grep -Eq 'rails: +net1 \(TCP\), net2 \(TCP\), net3 \(TCP\), net4 \(TCP\)' "$GX_DIR/dry.log" ||
  fail "dry run rails" "$GX_DIR/dry.log"

RAILS=auto
check_all() { # check_all [EXTRA ARGS for the coordinator] (coordinator last); RAILS=none: no rails
  local i t0
  t0=$(date +%s%N)
  for i in 3 2 1; do
    pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check "${P[@]}" --rails "$RAILS"
    GX_PIDS[i]=$GX_PID
  done
  pod_bg 0 "$GX_DIR/pod0.log" "$GXBOOT" check "${P[@]}" --rails "$RAILS" "$@"
  GX_PIDS[0]=$GX_PID
  gx_wait_all 50 0 1 2 3
  CHECK_MS=$((($(date +%s%N) - t0) / 1000000))
  echo "4-pod check, rails $RAILS, took $CHECK_MS ms (rc ${GX_RC[*]})"
}

# the bootstrap-only check for comparison (printed, not asserted)
RAILS=none check_all
gx_expect_rc 0 0 1 2 3
gx_expect_in 0 '^12/12 pairs OK over TCP, RDMA: no device on 4 pods$'
grep -q 'rail' "$GX_DIR/pod0.log" && fail "--rails none probed rails" "$GX_DIR/pod0.log"
BASE_MS=$CHECK_MS

# b) all good, the coordinator in JSON
check_all --json
gx_expect_rc 0 0 1 2 3
echo "4-rail check: $CHECK_MS ms, bootstrap only: $BASE_MS ms"
for i in 1 2 3; do gx_expect_in "$i" '^12/12 pairs OK over TCP, RDMA: no device on 4 pods, rails: 48/48 probes OK$'; done
$PY - "$GX_DIR/pod0.log" "$GX_NET_A" "$RX" <<'PYEOF' || fail "check --rails --json" "$GX_DIR/pod0.log"
import json, sys
text = "".join(l for l in open(sys.argv[1]) if " gxboot[" not in l)
doc = json.loads(text)
s = doc["summary"]
assert s["ok"] is True and s["rails_ok"] == 48 and s["rails_total"] == 48, s
for rail in ("net1", "net2", "net3", "net4"):
    ps = [p for p in doc["probes"] if p.get("rail") == rail]
    assert len(ps) == 12 and all(p["ok"] and p["proto"] == "tcp" for p in ps), (rail, ps)
    pairs = sorted((p["from"], p["to"]) for p in ps)
    assert pairs == [(i, j) for i in range(4) for j in range(4) if i != j], pairs
assert len([p for p in doc["probes"] if "rail" not in p]) == 12
print("json ok:", s["line"])
PYEOF

# c) job-worker-2's net3 cut both ways
ip netns exec "$(pod_ns 2)" nft -f - <<EOF || fail "nft"
table inet gxrail {
  chain in { type filter hook input priority 0; policy accept; iifname "net3" drop; }
  chain out { type filter hook output priority 0; policy accept; oifname "net3" drop; }
}
EOF
check_all
gx_expect_rc 1 0 1 2 3
for i in 0 1 2 3; do
  gx_expect_in "$i" '^12/12 pairs OK over TCP, RDMA: no device on 4 pods, rails: 42/48 probes OK$'
  gx_expect_in "$i" 'check failed: .*failing: job-worker-2 \(rail net3\)$'
done
gx_expect_in 0 '^TCP rail net3 '
# the net3 matrix: row 2 all ✗, column 2 ✗ in the other rows, the rest ✓
$PY - "$GX_DIR/pod0.log" <<'PYEOF' || fail "net3 matrix" "$GX_DIR/pod0.log"
import re, sys
lines = open(sys.argv[1]).read().split("\n")
def matrix(title):
    k = next(i for i, l in enumerate(lines) if l.startswith(title + " (rows"))
    return [re.split(r"\s{2,}|\s(?=[✓✗-])", l) for l in lines[k + 2:k + 6]]
for rail in ("net1", "net2", "net3", "net4"):
    m = matrix("TCP rail " + rail)
    for i, row in enumerate(m):
        cells = [c for c in row[1:] if c and (c[0] in "✓✗-")]
        assert len(cells) == 4, (rail, row)
        for j, c in enumerate(cells):
            want = "-" if i == j else ("✗" if rail == "net3" and 2 in (i, j) else "✓")
            assert c[0] == want, (rail, i, j, c)
print("net3 matrix ok")
PYEOF
# exactly one pod and rail named on the exit line
grep -E 'check failed' "$GX_DIR/pod0.log" | grep -q 'job-worker-[013]' &&
  fail "other pods named" "$GX_DIR/pod0.log"
ip netns exec "$(pod_ns 2)" nft delete table inet gxrail

# d) job-worker-1's net4 down: it lists no net4 rail
ip -n "$(pod_ns 1)" link set net4 down
check_all
gx_expect_rc 1 0 1 2 3
for i in 0 1 2 3; do gx_expect_in "$i" 'check failed: .*failing: job-worker-1 \(rail net4\)$'; done
gx_expect_in 0 '✗ job-worker-1 -> job-worker-0 tcp rail net4: no rail here'
gx_expect_in 0 '✗ job-worker-0 -> job-worker-1 tcp rail net4: no rail at peer'
sed -n '/^TCP rail net1 /,$p' "$GX_DIR/pod0.log" | head -40
echo "PASS"
