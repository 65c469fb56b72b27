#!/usr/bin/env bash
# image.sh - build container/Dockerfile with podman, offline from any registry (`make image`).
#
# The build stage's `FROM debian:bookworm` is a Debian bookworm minbase root made here with
# debootstrap and imported with `podman import` as docker.io/library/debian:bookworm, and
# the build runs with --pull=never: podman never contacts a registry. The apt-get of the
# build stage reaches the Debian mirror this machine's apt uses (--network host).
#
#   container/image.sh [--quiet]  -> $GX_IMAGE (default localhost/gxboot:latest)
#   --quiet: the build's output goes to a log, shown only on failure; one PASS/FAIL line
#
# Cache: /var/cache/gxboot-image/ (GX_IMAGE_CACHE): bookworm-minbase.tar (made once,
# about a minute) and containers.conf, the settings `podman run` needs on this kind of host:
# runc (crun refuses hybrid cgroups), default_ulimits = [] (raising RLIMIT_NOFILE/NPROC is
# not permitted in every sandbox), cgroupfs + file events (no systemd as PID 1). Use it for
# your own runs: CONTAINERS_CONF=/var/cache/gxboot-image/containers.conf podman run ...
# Needs root and podman + runc (tests/deps.sh). Prints timings; exit 1 on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${GX_IMAGE:-localhost/gxboot:latest}
BASE=docker.io/library/debian:bookworm
cache=${GX_IMAGE_CACHE:-/var/cache/gxboot-image}
tar=$cache/bookworm-minbase.tar

quiet=0
[ "${1:-}" = --quiet ] && quiet=1
die() { echo "FAIL image: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (podman import/build of the bookworm base)"
for c in podman runc debootstrap; do
  command -v "$c" >/dev/null || die "$c is not installed (make deps)"
done
mkdir -p "$cache"
export CONTAINERS_CONF=$cache/containers.conf
cat >"$CONTAINERS_CONF.tmp" <<'EOF'
# written by container/image.sh
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
mv "$CONTAINERS_CONF.tmp" "$CONTAINERS_CONF"

mirror() { # the Debian mirror this machine's apt already uses (as ../shared/tools/fresh-machine)
  local m=""
  [ -f /etc/apt/sources.list.d/debian.sources ] &&
    m=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  [ -n "$m" ] || m=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  echo "${m:-http://deb.debian.org/debian}"
}

t0=$(date +%s)
if [ ! -s "$tar" ]; then
  t=$(mktemp -d /var/tmp/gxboot-base.XXXXXX)
  echo "image: debootstrap bookworm minbase into $tar (once)"
  if ! debootstrap --variant=minbase bookworm "$t" "$(mirror)" >"$t.log" 2>&1; then
    tail -5 "$t.log" >&2
    rm -rf "$t" "$t.log"
    die "debootstrap failed"
  fi
  rm -rf "$t"/var/cache/apt/archives/*.deb "$t"/var/lib/apt/lists/*
  tar -C "$t" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
  rm -rf "$t" "$t.log"
fi
t1=$(date +%s)
if ! podman image exists "$BASE"; then
  podman import --quiet --change 'CMD ["/bin/bash"]' "$tar" "$BASE" >/dev/null ||
    die "podman import $tar failed"
fi
t2=$(date +%s)
rev=$(git describe --always --dirty 2>/dev/null || echo unknown)
build=(podman build --pull=never --network host -f container/Dockerfile -t "$IMAGE"
  --build-arg GXBOOT_REV="$rev" .)
if [ "$quiet" = 1 ]; then
  log=$(mktemp /tmp/gxboot-image.XXXXXX)
  "${build[@]}" >"$log" 2>&1 || { tail -25 "$log" | sed 's/^/  | /'; rm -f "$log"; die "podman build failed"; }
  rm -f "$log"
else
  "${build[@]}" || die "podman build failed"
fi
t3=$(date +%s)
echo "PASS image $IMAGE ($rev): base root $((t1 - t0))s, import $((t2 - t1))s, build $((t3 - t2))s"
