#!/usr/bin/env bash
# run.sh SECONDS: build every tests/fuzz/fuzz_*.c with libFuzzer (clang-14, ASan+UBSan)
# and run each for SECONDS on its corpus (tests/fuzz/corpus/<name>/, seeds committed;
# new inputs go to build/fuzz/corpus/<name>/). Crashes are kept in build/fuzz/.
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
CLANG=${CLANG:-clang-14}
if ! command -v "$CLANG" >/dev/null; then
  echo "FAIL fuzz: $CLANG missing (make deps installs it)"; exit 1
fi
out=build/fuzz
mkdir -p "$out/obj"
PKGS="libibverbs librdmacm libnl-route-3.0 libcares libsodium jansson"
CFLAGS="-std=gnu11 -D_GNU_SOURCE -I. -g -O1 -fsanitize=fuzzer-no-link,address,undefined $(pkg-config --cflags $PKGS)"
objs=()
for src in $(ls rdzv/*.c netdetect/*.c agent/*.c 2>/dev/null | grep -v '^agent/main.c$'); do
  o="$out/obj/${src//\//_}.o"
  if [ ! -f "$o" ] || [ "$src" -nt "$o" ] || [ -n "$(find rdzv netdetect agent -name '*.h' -newer "$o" 2>/dev/null | head -1)" ]; then
    $CLANG $CFLAGS -c "$src" -o "$o" || { echo "FAIL fuzz build $src"; exit 1; }
  fi
  objs+=("$o")
done
$CLANG $CFLAGS -c tests/unit/test_support.c -o "$out/obj/support.o" -Wno-missing-prototypes
fail=0
for f in tests/fuzz/fuzz_*.c; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .c); name=${name#fuzz_}
  bin="$out/fuzz_$name"
  if ! $CLANG $CFLAGS -fsanitize=fuzzer "$f" "${objs[@]}" "$out/obj/support.o" $(pkg-config --libs $PKGS) -o "$bin"; then
    echo "FAIL fuzz/$name (build)"; fail=1; continue
  fi
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
