#!/usr/bin/env bash
# check.sh - everything `make check` runs, in order. Each step prints PASS/FAIL/SKIP
# lines; the last line is "N passed, N failed, N skipped". Exit 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
log=$(mktemp)
trap 'rm -f "$log"' EXIT
MAKE="${MAKE:-make} --no-print-directory"
JOBS=$(nproc 2>/dev/null || echo 2)

step() { # step NAME CMD... : run a step, its output filtered into PASS/FAIL/SKIP lines
  local name=$1; shift
  echo "== $name"
  "$@" 2>&1 | tee -a "$log" | grep -E '^(PASS|FAIL|SKIP)|^  |error|Error|warning:' | head -400
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 77 ]; then echo "SKIP $name" | tee -a "$log"; return 0; fi
  [ "$rc" -eq 0 ] || echo "FAIL $name (exit $rc)" | tee -a "$log"
  return 0
}

build_release() {
  $MAKE -j"$JOBS" all || return 1
  file build/gxboot | grep -q "statically linked" || { echo "FAIL static: $(file build/gxboot)"; return 1; }
  size=$(stat -c %s build/gxboot)
  echo "  build/gxboot: $size bytes stripped (limit 2621440)"
  [ "$size" -le 2621440 ] || { echo "FAIL size $size > 2.5 MB"; return 1; }
  build/gxboot --help >/dev/null || { echo "FAIL gxboot --help"; return 1; }
  echo "PASS build/static"
}

lint() {
  tests/lint.sh --selftest && tests/lint.sh || { echo "FAIL lint"; return 1; }
  $MAKE fmt-check || { echo "FAIL clang-format (run 'make fmt')"; return 1; }
  echo "PASS lint/format"
}

# gxboot.1 is what tests/man.py makes from the binary's help texts, and renders cleanly
man_page() {
  local new rc=0 w
  new=$(mktemp)
  tests/man.py build/gxboot >"$new" || { rm -f "$new"; echo "FAIL man: tests/man.py build/gxboot"; return 1; }
  if ! diff -u gxboot.1 "$new" >"$new.diff"; then
    sed 's/^/  /' "$new.diff" | head -80
    echo "FAIL man: gxboot.1 differs from the binary's help texts (run 'make man')"; rc=1
  fi
  rm -f "$new" "$new.diff"
  w=$(groff -man -Tutf8 -ww -z gxboot.1 2>&1)
  [ -z "$w" ] || { echo "$w" | sed 's/^/  /'; echo "FAIL man: groff warns"; rc=1; }
  MANPAGER=cat MANWIDTH=80 man -l gxboot.1 2>&1 | grep -q '^EXIT STATUS' ||
    { echo "FAIL man: 'man -l gxboot.1' shows no EXIT STATUS section"; rc=1; }
  [ "$rc" -eq 0 ] && echo "PASS man/page ($(wc -l <gxboot.1) lines)"
  return "$rc"
}

# make install into a staging root: the two files, their modes, and the binary runs
install_tree() {
  local d rc=0
  d=$(mktemp -d)
  $MAKE install DESTDIR="$d" PREFIX=/usr >/dev/null || { rm -rf "$d"; echo "FAIL install: make install"; return 1; }
  [ "$(stat -c %a "$d/usr/bin/gxboot")" = 755 ] || { echo "FAIL install: bin/gxboot not 0755"; rc=1; }
  [ "$(stat -c %a "$d/usr/share/man/man1/gxboot.1")" = 644 ] || { echo "FAIL install: man1/gxboot.1 not 0644"; rc=1; }
  cmp -s build/gxboot "$d/usr/bin/gxboot" || { echo "FAIL install: bin/gxboot is not build/gxboot"; rc=1; }
  cmp -s gxboot.1 "$d/usr/share/man/man1/gxboot.1" || { echo "FAIL install: man1/gxboot.1 is not gxboot.1"; rc=1; }
  "$d/usr/bin/gxboot" version | grep -q '^gxboot ' || { echo "FAIL install: bin/gxboot version"; rc=1; }
  $MAKE uninstall DESTDIR="$d" PREFIX=/usr >/dev/null
  [ -z "$(find "$d" -type f)" ] || { echo "FAIL uninstall left: $(find "$d" -type f)"; rc=1; }
  rm -rf "$d"
  [ "$rc" -eq 0 ] && echo "PASS install/uninstall (DESTDIR, PREFIX=/usr)"
  return "$rc"
}

step "lint" lint
step "release build" build_release
step "man page" man_page
step "make install" install_tree
[ -x tests/cross_arm64.sh ] && step "arm64 cross build" tests/cross_arm64.sh
step "debug build" $MAKE -j"$JOBS" MODE=debug build/debug/gxboot unit-bins tools
step "unit tests" tests/run-unit.sh build/debug
step "asan build" $MAKE -j"$JOBS" MODE=asan build/asan/gxboot unit-bins
step "unit tests (ASan+UBSan)" tests/run-unit.sh build/asan
step "unit tests (valgrind)" tests/run-unit.sh build/debug valgrind
[ -x tests/fuzz/run.sh ] && step "fuzz smoke" tests/fuzz/run.sh "${FUZZ_SECONDS:-10}"
[ -x tests/e2e/nd_netns.sh ] && step "netdetect in netns" tests/e2e/nd_netns.sh
# the arm64 cross build above under qemu-user: the real netlink path through qemu's syscall
# translation (the e2e case arm64 runs it in a job)
[ -x tests/e2e/nd_netns.sh ] && step "netdetect in netns (arm64 under qemu)" \
  env GXBOOT="$PWD/tests/e2e/gxboot-arm64" ND_QEMU_ARCH=arm64 tests/e2e/nd_netns.sh
[ -x tests/container/run.sh ] && step "container manifests" tests/container/run.sh
[ -x container/image.sh ] && step "container image" container/image.sh --quiet
[ -x tests/e2e/run.sh ] && step "end-to-end" tests/e2e/run.sh
[ -x tests/e2e/rdma_vm.sh ] && step "RDMA end-to-end (soft-RoCE VM)" tests/e2e/rdma_vm.sh
[ -x tests/bench/run.sh ] && step "bench smoke" tests/bench/run.sh --smoke

# A test cannot turn into a skip (a skip hides a broken test): a SKIP is accepted only when it matches this
# allow-list (the soft-RoCE VM where QEMU cannot run at all); any other SKIP counts as a
# failure. TorchX is not on it: the tests run it from ../shared/third_party/python.
SKIP_ALLOWED='^SKIP (rdma_vm: QEMU could not start|RDMA end-to-end \(soft-RoCE VM\)$)'
grep '^SKIP' "$log" | grep -Ev "$SKIP_ALLOWED" | sed 's/^SKIP /FAIL skipped, not allowed: /' >>"$log"
pass=$(grep -c '^PASS' "$log")
fail=$(grep -c '^FAIL' "$log")
skip=$(grep -c '^SKIP' "$log")
if [ "$skip" -gt 0 ]; then
  echo "Skipped:"; grep '^SKIP' "$log" | sed 's/^/  /'
fi
if [ "$fail" -gt 0 ]; then
  echo "Failures:"; grep '^FAIL' "$log" | sed 's/^/  /'
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
