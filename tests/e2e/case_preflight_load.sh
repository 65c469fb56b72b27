#!/usr/bin/env bash
# --preflight never names a healthy pod under CPU load: 16 pods, a busy loop per core (started
# here, ended by PID), 10 runs of gxboot init --preflight: every pod exits 0 in every run. A
# pod's first-pass figure may well fall below half the job median on 2 shared cores (its
# streams overlapped more than others'); the second look must clear it: one stream at a time
# in the job, the best of 3 to each vantage, against a control pair measured in the same
# plan, and a pod slow there is measured once more (round 2) before it is named. Per run:
# its time, the pods that looked slow once (and in round 2), the least ratio of a cleared
# pod's measurement to its control, and the job median are printed (no timing assertions).
# gx-timeout: 110
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
N=16
RUNS=${PREFLIGHT_LOAD_RUNS:-10}
cluster_create $N || fail "cluster_create"
T=$(cluster_token)
busy=()
stop_busy() { local p; for p in "${busy[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; busy=(); }
trap 'stop_busy; cluster_destroy' EXIT
for _ in $(seq 1 "$(nproc)"); do
  sh -c 'while :; do :; done' &
  busy+=($!)
done
all=$(seq 0 $((N - 1)))
for run in $(seq 1 "$RUNS"); do
  t0=$(date +%s%N)
  for i in $(seq $((N - 1)) -1 0); do
    gx_start "$i" init --peers "job-worker-{0..$((N - 1))}" --token-file "$T" --timeout 40 \
      --preflight
  done
  gx_wait_all 55 $all
  # shellcheck disable=SC2086
  gx_expect_rc 0 $all
  echo "run $run: $((($(date +%s%N) - t0) / 1000000)) ms; looked slow once, cleared: $(grep -c 'looked slow in the first pass' "$GX_DIR/pod0.log") (in round 2: $(grep -c 'round 2:' "$GX_DIR/pod0.log"); the least of a cleared pod's measurements against its control: $(grep -o 'at least [0-9.]*' "$GX_DIR/pod0.log" | cut -d' ' -f3 | sort -n | head -1)); $(grep -o 'preflight: 16 pods, the job median [^,]*' "$GX_DIR/pod0.log")"
done
echo "OK: $RUNS of $RUNS runs of 16 healthy pods under a busy loop per core, nobody named"
