#!/usr/bin/env bash
# `gxboot check` on 4 pods.
#  a) all pairs OK: every pod exits 0 and prints "12/12 pairs OK over TCP"; the coordinator
#     prints the matrix; --json on the coordinator is one document with 12 TCP probes.
#  b) job-worker-2's net1 down: every pod exits 1 (check never aborts: the broken pod stays in over
#     the primary network), every pod's output names job-worker-2, the coordinator's matrix
#     shows ✗ in row and column 2, and the exit line names job-worker-2.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 4 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..3}' --token-file "$T" --timeout 15)
check_all() { # check_all [EXTRA ARGS for the coordinator and job-worker-1] (coordinator last)
  local i
  for i in 3 2 1; do
    pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check "${P[@]}" $([ "$i" = 1 ] && echo "$@")
    GX_PIDS[i]=$GX_PID
  done
  pod_bg 0 "$GX_DIR/pod0.log" "$GXBOOT" check "${P[@]}" "$@"
  GX_PIDS[0]=$GX_PID
  gx_wait_all 40 0 1 2 3
}

# a) all OK; the coordinator and job-worker-1 in JSON (stdout only: logs go to stderr)
check_all --json
gx_expect_rc 0 0 1 2 3
for i in 2 3; do gx_expect_in "$i" '^12/12 pairs OK over TCP, RDMA: no device on 4 pods$'; done
gx_expect_in 0 '"line": "12/12 pairs OK over TCP, RDMA: no device on 4 pods"'
for i in 0 1; do
$PY - "$GX_DIR/pod$i.log" <<'PYEOF' || fail "job-worker-$i --json" "$GX_DIR/pod$i.log"
import json, sys
text = "".join(l for l in open(sys.argv[1]) if " gxboot[" not in l)
doc = json.loads(text)
tcp = [p for p in doc["probes"] if p["proto"] == "tcp"]
assert doc["world"] == 4 and doc["summary"]["ok"] is True, doc["summary"]
assert len(tcp) == 12 and all(p["ok"] and p["median_us"] > 0 for p in tcp), tcp
assert sorted((p["from"], p["to"]) for p in tcp) == [(i, j) for i in range(4) for j in range(4) if i != j]
assert all(p["mtu"] == 1500 for p in tcp)
print("json ok:", doc["summary"]["line"])
PYEOF
done

# b) net1 down on job-worker-2, human output
cluster_net1_down 2
check_all
gx_expect_rc 1 0 1 2 3
for i in 0 1 2 3; do gx_expect_in "$i" 'job-worker-2'; gx_expect_in "$i" '^6/12 pairs OK over TCP'; done
gx_expect_in 0 '^2 +✗ [a-z].* +-  +✗ .*job-worker-2$'
gx_expect_in 0 '^0 +- +✓ [0-9]+ +✗ '
gx_expect_in 1 'gxboot: check failed: .*failing: job-worker-2 '
cat "$GX_DIR/pod0.log"
