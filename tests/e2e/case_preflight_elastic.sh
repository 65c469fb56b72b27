#!/usr/bin/env bash
# --preflight in an elastic job (--nnodes 4:6), 6 pods, job-worker-3's net1 throttled with tbf
# to 4 Mbit/s both ways. The coordinator gathers the six (MAX: no settle window), measures, and
# leaves job-worker-3 out before anyone holds a rank: job-worker-3 exits 8 with its line (what
# a controller reads in the termination log to reschedule it); the other five run CMD with
# world 5 and contiguous ranks 0-4 (job-worker-4 and -5 move down to 3 and 4), MASTER_ADDR
# the coordinator's net1, and each says the job started without job-worker-3. The
# coordinator's hostfile lists the five in rank order; its rendezvous.json says world 5.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
N=6
cluster_create $N || fail "cluster_create"
T=$(cluster_token)
cluster_throttle 3 4mbit || fail "tc tbf"
for i in $(seq $((N - 1)) -1 0); do
  gx_start "$i" --peers "job-worker-{0..$((N - 1))}" --nnodes 4:6 --token-file "$T" \
    --timeout 40 --preflight -- "${GX_REPORT[@]}"
done
gx_wait_all 55 $(seq 0 $((N - 1)))
gx_expect_rc 8 3
gx_expect_rc 0 0 1 2 4 5
grep -q '^gxboot: left out by the preflight: job-worker-3: slow: ' "$GX_DIR/pod3.log" ||
  fail "job-worker-3: no line saying why it is left out" "$GX_DIR/pod3.log"
M=$(pod_net1 0)
r=0
for i in 0 1 2 4 5; do
  want="GXREPORT rank=$r nnodes=5 master=$M:29500 iface=net1 addr=$(pod_net1 "$i") gloo=net1 token=none"
  grep -qxF -- "$want" "$GX_DIR/pod$i.log" || fail "job-worker-$i: want '$want'" "$GX_DIR/pod$i.log"
  gx_expect_in "$i" "preflight: the job starts with 5 pods, without job-worker-3: slow: "
  r=$((r + 1))
done
want=$(for i in 0 1 2 4 5; do echo "$(pod_net1 "$i") slots=1"; done)
[ "$(cat "$GX_DIR/out0/hostfile")" = "$want" ] || fail "coordinator hostfile" "$GX_DIR/out0/hostfile"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["world"] == 5, d["world"]' \
  "$GX_DIR/out0/rendezvous.json" || fail "rendezvous.json world" "$GX_DIR/out0/rendezvous.json"
echo "elastic 4:6: $(grep '^gxboot: ' "$GX_DIR/pod3.log"); the other five run with world 5, ranks 0-4"
