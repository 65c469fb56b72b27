#!/usr/bin/env bash
# run-unit.sh BUILD_DIR [valgrind]: run every unit test binary of one build.
# Prints one "PASS name" / "FAIL name" line per binary; exit 1 if any failed.
set -uo pipefail
dir=$1
mode=${2:-$(basename "$dir")}
fail=0
ulimit -n 4096 2>/dev/null || true
for t in "$dir"/tests/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  log=$(mktemp)
  if [ "$mode" = valgrind ]; then
    GX_TEST_VALGRIND=1 valgrind -q --error-exitcode=99 --leak-check=full \
      --errors-for-leak-kinds=definite,indirect --track-fds=no "$t" >"$log" 2>&1
  else
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      "$t" >"$log" 2>&1
  fi
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "PASS $mode/$name"
  else
    echo "FAIL $mode/$name (rc $rc)"
    tail -n 40 "$log" | sed 's/^/    /'
    fail=1
  fi
  rm -f "$log"
done
exit $fail
