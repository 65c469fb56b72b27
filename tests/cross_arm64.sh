#!/usr/bin/env bash
# cross_arm64.sh - the arm64 static binary (GH200 and GB200 nodes are arm64): installs Debian's aarch64 cross
# compiler, the :arm64 -dev packages and qemu-user-static when missing (root), runs
# `make arm64`, checks what `file` says, and runs `version` and `--help` under qemu-user
# (invoked by name: binfmt_misc is not mounted here). PASS/FAIL/SKIP lines; exit 0/1
# (77 = skipped). The netdetect and e2e runs under qemu: tests/e2e/gxboot-arm64.
set -uo pipefail
cd "$(dirname "$0")/.."
PKGS=(gcc-aarch64-linux-gnu libc6-dev:arm64 libibverbs-dev:arm64 librdmacm-dev:arm64 libnl-3-dev:arm64
  libnl-route-3-dev:arm64 libc-ares-dev:arm64 libsodium-dev:arm64 libjansson-dev:arm64 qemu-user-static)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then echo "SKIP arm64: missing ${missing[*]} (run as root)"; exit 77; fi
  echo "arm64: installing ${missing[*]}"
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/dev/null 2>&1; then
    echo "FAIL arm64: apt-get could not install ${missing[*]}"; exit 1
  fi
fi
mkdir -p build-arm64
if ! make --no-print-directory arm64 >build-arm64/make.log 2>&1; then
  echo "FAIL arm64: make arm64"; tail -20 build-arm64/make.log | sed 's/^/    /'; exit 1
fi
f=$(file build-arm64/gxboot)
size=$(stat -c %s build-arm64/gxboot)
if [[ "$f" == *"ARM aarch64"* && "$f" == *"statically linked"* ]] && [ "$size" -le 2621440 ]; then
  echo "PASS arm64: build-arm64/gxboot is ARM aarch64, statically linked, $size bytes stripped"
else
  echo "FAIL arm64: $f ($size bytes)"; exit 1
fi
q=(qemu-aarch64-static build-arm64/gxboot)
if v=$("${q[@]}" version 2>&1) && [[ "$v" =~ ^gxboot\ [0-9]+\.[0-9]+\.[0-9]+\ \( ]]; then
  echo "PASS arm64: ${q[*]} version: $v"
else
  echo "FAIL arm64: ${q[*]} version: $v"; exit 1
fi
if h=$("${q[@]}" --help 2>&1) && [[ "$h" == "gxboot - "* ]]; then
  echo "PASS arm64: ${q[*]} --help: $(wc -l <<<"$h") lines"
else
  echo "FAIL arm64: ${q[*]} --help:"; tail -5 <<<"$h" | sed 's/^/    /'; exit 1
fi
