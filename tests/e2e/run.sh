#!/usr/bin/env bash
# run.sh - run every tests/e2e/case_*.sh (or the ones named) with a 60 s cap each.
# Prints "PASS name" / "FAIL name" / "SKIP name" and "N passed, N failed, N skipped";
# exit 1 on any failure. A case exiting 77 is skipped. Logs: $GX_E2E_LOGS (default a temp
# dir, kept and named when something failed). After each case, leftovers of a case that
# had to be killed are swept (namespaces, bridges, dnsmasq) from its state file.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
export LC_ALL=C
cap=${GX_CASE_TIMEOUT:-120}
keep_logs=${GX_E2E_LOGS:+1}
logs=${GX_E2E_LOGS:-$(mktemp -d /tmp/gxe2e-logs.XXXXXX)}
mkdir -p "$logs"
export GX_STATE_ROOT
GX_STATE_ROOT=$(mktemp -d /tmp/gxe2e-state.XXXXXX)
chmod 0755 "$GX_STATE_ROOT"
trap 'rm -rf "$GX_STATE_ROOT"' EXIT

if [ $# -gt 0 ]; then
  cases=()
  for c in "$@"; do cases+=("tests/e2e/case_${c#case_}"); done
  cases=("${cases[@]/%.sh/}")
  cases=("${cases[@]/%/.sh}")
else
  cases=(tests/e2e/case_*.sh)
fi
[ -x build/tools/mpi_allreduce ] || make --no-print-directory tools >/dev/null 2>&1 || true

pass=0 fail=0 skip=0
start=$(date +%s)
for c in "${cases[@]}"; do
  name=$(basename "$c" .sh)
  name=${name#case_}
  t0=$(date +%s)
  # a case may ask for more time: a "# gx-timeout: SEC" line (two real torch jobs in a row)
  ccap=$(sed -n 's/^# gx-timeout: \([0-9][0-9]*\)$/\1/p' "$c" | head -1)
  timeout -k 10 "${ccap:-$cap}" bash "$c" >"$logs/$name.log" 2>&1
  rc=$?
  dt=$(($(date +%s) - t0))
  for s in "$GX_STATE_ROOT"/gx*; do # a case killed before its trap ran
    [ -f "$s" ] || continue
    (. tests/e2e/cluster.sh && cluster_sweep "$s") >>"$logs/$name.log" 2>&1
    echo "  swept leftovers of $name ($(basename "$s"))"
  done
  case $rc in
  0) echo "PASS $name (${dt}s)"; pass=$((pass + 1)) ;;
  77)
    why=$(grep -m1 -E '^SKIP' "$logs/$name.log" | sed -E 's/^SKIP(PED)?:? *//')
    echo "SKIP $name (${why:-exit 77})"
    skip=$((skip + 1))
    ;;
  *)
    [ "$rc" -eq 124 ] && why="timed out after ${ccap:-$cap}s" || why="exit $rc"
    echo "FAIL $name ($why, ${dt}s)"
    grep -E '^FAIL:' "$logs/$name.log" | head -3 | sed 's/^/  /'
    tail -n 15 "$logs/$name.log" | sed 's/^/  | /'
    fail=$((fail + 1))
    ;;
  esac
done
if [ "$fail" -eq 0 ] && [ -z "$keep_logs" ]; then
  rm -rf "$logs"
  echo "  e2e total $(($(date +%s) - start))s"
else
  echo "  e2e total $(($(date +%s) - start))s; logs in $logs"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
