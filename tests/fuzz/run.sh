#!/usr/bin/env bash
# run.sh SECONDS: build every tests/fuzz/fuzz_*.c with libFuzzer (`make fuzz-bins`: MODE=fuzz,
# clang-14, ASan+UBSan, build/fuzz/fuzz_<name>) and run each for SECONDS on its corpus
# (tests/fuzz/corpus/<name>/, seeds committed; new inputs go to build/fuzz/corpus/<name>/).
# Crashes are kept in build/fuzz/.
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
CLANG=${CLANG:-clang-14}
if ! command -v "$CLANG" >/dev/null; then
  echo "FAIL fuzz: $CLANG missing (make deps installs it)"; exit 1
fi
out=build/fuzz
if ! make --no-print-directory CLANG="$CLANG" fuzz-bins; then
  echo "FAIL fuzz (build)"; exit 1
fi
fail=0
for f in tests/fuzz/fuzz_*.c; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .c); name=${name#fuzz_}
  bin="$out/fuzz_$name"
  mkdir -p "$out/corpus/$name" "tests/fuzz/corpus/$name"
  log="$out/$name.log"
  if ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$out/$name-" "$out/corpus/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
    stats=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW)' "$log" | tail -1 | sed -E 's/^#([0-9]+).*cov: ([0-9]+).*/\1 execs, cov \2/')
    echo "PASS fuzz/$name ($secs s: $stats)"
  else
    echo "FAIL fuzz/$name: see $log"; tail -30 "$log" | sed 's/^/    /'; fail=1
  fi
done
exit $fail
