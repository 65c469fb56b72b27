#!/usr/bin/env bash
# A failed run into a reused --out leaves no answer behind. Job 1 (`init` in 3 pods) succeeds;
# then job-worker-0's net1 goes down and job 2 into the same --out dirs fails (4 on
# job-worker-0, 5 on the others). (job 1's env, env.json, rendezvous.json and hostfile used to
# stay: `gxboot exec` started CMD with job 1's MASTER_ADDR, `gxboot hosts` listed job-worker-0's
# former address and `gxboot serve` served on job 1's init.)
# Asserts, after job 2: no env, env.json, hostfile, rendezvous.json in any --out; failed.json
# holds the command, the exit and the final line; `gxboot exec -- CMD` does not run CMD, exits
# with the failed run's code (4 / 5) and one line naming the failed init and its cause;
# `gxboot hosts` on the coordinator refuses the same way; `gxboot serve` meets again (no
# "serving after init") and ends at its --timeout (3). Then, net1 back, job 3 succeeds and
# removes failed.json, and a job 4 `init` SIGKILLed while it waits leaves no answer of job 3's
# (exec: no env, exit 2).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..2}' --token-file "$T")
# job J: init in every pod into the same --out dirs, --timeout S
job() {
  local i
  for i in 2 1 0; do
    mkdir -p "$GX_DIR/out$i"
    pod_bg "$i" "$GX_DIR/job$1.$i.log" "$GXBOOT" init "${P[@]}" --timeout "$2" --out "$GX_DIR/out$i"
    GX_PIDS[i]=$GX_PID
  done
  gx_wait_all 30 0 1 2
}
job 1 10
gx_expect_rc 0 0 1 2
M1=$(gx_env "$GX_DIR/out1/env" MASTER_ADDR)
[ "$M1" = "$(pod_net1 0)" ] || fail "job 1: MASTER_ADDR $M1"

cluster_net1_down 0
job 2 6
for i in 0 1 2; do
  want=5
  [ "$i" = 0 ] && want=4
  [ "${GX_RC[i]}" = "$want" ] || fail "job 2: job-worker-$i exited ${GX_RC[i]} (want $want)" "$GX_DIR/job2.$i.log"
  for f in env env.json hostfile hostfile.hydra rendezvous.json; do
    [ ! -e "$GX_DIR/out$i/$f" ] || fail "job-worker-$i: job 1's $f is still in --out after job 2 failed"
  done
  line=$(grep -v '^$' "$GX_DIR/job2.$i.log" | tail -n 1)
  line=${line#gxboot: }
  "$PY" - "$GX_DIR/out$i/failed.json" "$want" "$line" <<'PYEOF' || fail "job-worker-$i: failed.json" "$GX_DIR/out$i/failed.json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["command"] == "init" and j["exit"] == int(sys.argv[2]) and j["error"] == sys.argv[3], j
PYEOF
  o=$GX_DIR/exec$i
  pod_exec "$i" "$GXBOOT" exec --out "$GX_DIR/out$i" -- /bin/sh -c 'echo RAN MASTER_ADDR=$MASTER_ADDR' >"$o.out" 2>"$o.err"
  rc=$?
  [ "$rc" = "$want" ] || fail "job-worker-$i: exec after the failed init exited $rc (want $want)" "$o.out" "$o.err"
  ! grep -q RAN "$o.out" || fail "job-worker-$i: exec ran CMD with a stale env: $(cat "$o.out")"
  eline=$(tail -n 1 "$o.err")
  echo "$eline" | grep -qF -- "gxboot: the last 'gxboot init' into $GX_DIR/out$i did not commit (exit $want, " ||
    fail "job-worker-$i: exec's line: '$eline'"
  echo "$eline" | grep -qF -- "): $line" || fail "job-worker-$i: exec's line lacks the cause '$line': '$eline'"
done
grep -q 'job-worker-0' "$GX_DIR/out1/failed.json" || fail "job-worker-1's failed.json does not name job-worker-0"
echo "exec after job 2 failed: $(tail -n 1 "$GX_DIR/exec1.err")"
pod_exec 0 "$GXBOOT" hosts --out "$GX_DIR/out0" >"$GX_DIR/hosts.out" 2>"$GX_DIR/hosts.err"
rc=$?
[ "$rc" = 4 ] || fail "hosts after the failed init exited $rc (want 4): $(cat "$GX_DIR/hosts.out")" "$GX_DIR/hosts.err"
grep -qF "$(pod_net1 0)" "$GX_DIR/hosts.out" && fail "hosts listed job-worker-0's former address"
grep -qF "did not commit (exit 4" "$GX_DIR/hosts.err" || fail "hosts' line" "$GX_DIR/hosts.err"
pod_exec 1 timeout 30 "$GXBOOT" serve "${P[@]}" --timeout 3 --out "$GX_DIR/out1" >"$GX_DIR/serve.log" 2>&1
rc=$?
[ "$rc" = 3 ] || fail "serve after the failed init exited $rc (want 3: it meets again)" "$GX_DIR/serve.log"
! grep -q 'serving after init' "$GX_DIR/serve.log" || fail "serve used a failed init's files" "$GX_DIR/serve.log"

ip -n "$(pod_ns 0)" link set net1 up
job 3 10
gx_expect_rc 0 0 1 2
for i in 0 1 2; do
  [ -s "$GX_DIR/out$i/env" ] && [ ! -e "$GX_DIR/out$i/failed.json" ] || fail "job 3: job-worker-$i's --out: $(ls -A "$GX_DIR/out$i")"
done
# job 4: job-worker-0 alone, killed while it waits for the others
pod_bg 0 "$GX_DIR/job4.0.log" "$GXBOOT" init "${P[@]}" --timeout 30 --out "$GX_DIR/out0"
k=$GX_PID
gx_wait_until 10 grep -q 'joined 1/3' "$GX_DIR/job4.0.log" || fail "job 4 did not start waiting" "$GX_DIR/job4.0.log"
kill -KILL "$k"
wait "$k" 2>/dev/null
for f in env env.json hostfile hostfile.hydra rendezvous.json; do
  [ ! -e "$GX_DIR/out0/$f" ] || fail "job 3's $f is still in --out after job 4 was killed mid-run"
done
pod_exec 0 "$GXBOOT" exec --out "$GX_DIR/out0" -- /bin/sh -c 'echo RAN' >"$GX_DIR/exec4.out" 2>"$GX_DIR/exec4.err"
rc=$?
[ "$rc" = 2 ] && ! grep -q RAN "$GX_DIR/exec4.out" || fail "exec after a killed init: exit $rc" "$GX_DIR/exec4.err"
echo "exec after job 4 was killed: $(tail -n 1 "$GX_DIR/exec4.err")"
echo "a failed or killed run leaves no answer in a reused --out: OK"
