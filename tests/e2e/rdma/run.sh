#!/usr/bin/env bash
# run.sh - INSIDE the soft-RoCE VM: runs every tests/e2e/rdma/case_*.sh (or the ones named),
# prints "PASS name" / "FAIL name" / "SKIP name" and "N passed, N failed, N skipped"; exit 1 on
# any failure. A failed case's log is printed. Booted by tests/e2e/rdma_vm.sh.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
export LC_ALL=C
modprobe -a ib_core ib_uverbs rdma_ucm rdma_cm rdma_rxe 2>/dev/null
logs=$(mktemp -d /tmp/gxrdma.XXXXXX)
export GX_STATE_ROOT=$logs/state
mkdir -p "$GX_STATE_ROOT"
if [ $# -gt 0 ]; then cases=("${@/#/tests/e2e/rdma/case_}"); cases=("${cases[@]/%/.sh}")
else cases=(tests/e2e/rdma/case_*.sh); fi
pass=0 fail=0 skip=0
for c in "${cases[@]}"; do
  name=$(basename "$c" .sh)
  name=${name#case_}
  t0=$(date +%s)
  timeout -k 10 "${GX_CASE_TIMEOUT:-400}" bash "$c" >"$logs/$name.log" 2>&1
  rc=$?
  dt=$(($(date +%s) - t0))
  for s in "$GX_STATE_ROOT"/gx*; do [ -e "$s" ] && (. tests/e2e/cluster.sh; cluster_sweep "$s"); done
  case $rc in
  0) pass=$((pass + 1)); echo "PASS rdma_$name (${dt}s)"; grep -E '^(rdma|MEASURE|broken|verify)' "$logs/$name.log" | sed 's/^/  /' ;;
  77) skip=$((skip + 1)); echo "SKIP rdma_$name: $(grep -m1 -E '^SKIP' "$logs/$name.log")" ;;
  *) fail=$((fail + 1)); echo "FAIL rdma_$name (rc $rc, ${dt}s)"; tail -n 60 "$logs/$name.log" | sed 's/^/  | /' ;;
  esac
done
echo "rdma: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
