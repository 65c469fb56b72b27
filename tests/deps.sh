#!/usr/bin/env bash
# Installs exactly what building, testing and the demo need (Debian bookworm, as root).
# Idempotent. --if-missing: do nothing when every package is already installed.
set -euo pipefail
PKGS=(
  # build
  build-essential pkg-config file git
  libibverbs-dev librdmacm-dev libnl-3-dev libnl-route-3-dev libc-ares-dev
  libsodium-dev libjansson-dev
  # tests: unit, sanitizers, fuzzing, lint
  libcmocka-dev valgrind clang-14 libclang-rt-14-dev clang-format-14
  # simulated cluster: namespaces, DNS, firewall, real torchrun and mpirun
  iproute2 util-linux procps dnsmasq-base nftables python3-torch python3-yaml
  time  # /usr/bin/time -f %M: the bench's peak RSS (not in a minimal Debian)
  chromium  # check --report: the page is rendered in a real headless browser (issue 30)
  # TorchX (../shared/third_party/python) with Debian's python3: its dependencies
  python3-fsspec python3-tabulate python3-filelock python3-docker python3-kubernetes
  # container image (make image, e2e image/kube_play) and manifest schemas (issue 28)
  podman runc catatonit debootstrap busybox-static python3-jsonschema
  openmpi-bin libopenmpi-dev
  # MPICH (Hydra) beside OpenMPI, for the Hydra e2e (issue 27)
  mpich libmpich-dev
  # UCX's io_demo: the UCX job of the transport report's soft-RoCE case (rdma/case_fabric.sh)
  ucx-utils
  # qemu-aarch64-static: the arm64 binary runs here (tests/cross_arm64.sh, e2e case_arm64)
  qemu-user-static
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  [ "${1:-}" = "--if-missing" ] || echo "deps: all ${#PKGS[@]} packages installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${missing[*]}; run 'make deps' as root" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# OpenMPI stays the default mpirun / mpicc with MPICH installed (whichever came first would
# otherwise win when one was installed alone earlier)
update-alternatives --quiet --set mpirun /usr/bin/mpirun.openmpi 2>/dev/null || true
update-alternatives --quiet --set mpi /usr/bin/mpicc.openmpi 2>/dev/null || true
echo "deps: done"
