#!/usr/bin/env bash
# `podman kube play` of a Pod manifest with init containers, end to end, for 3
# pods, each on two podman (CNI bridge) networks: a primary one with the default route (pod
# names resolve to it through hostAliases, as DNS would) and an --internal secondary one with
# no route (the "net1"). Init containers `gxboot install` (into an emptyDir) and `gxboot init
# --peers`, main container (the bookworm base) `gxboot exec -- sh -c 'echo ...'`.
# Asserts: every pod's init containers succeed and its main container reports NODE_RANK = pod
# index, MASTER_ADDR = pod 0's secondary address, GXBOOT_ADDR = its own secondary address,
# GXBOOT_IFACE = the interface holding it (podman orders eth0/eth1 either way).
# podman 4.3 names an emptyDir volume after the manifest's volume name and shares it between
# pods (Kubernetes: one per pod), so each pod's volumes get their own names here.
# gx-timeout: 900
set -uo pipefail
GX_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
fail() {
  echo "FAIL: $1" >&2
  shift
  local f
  for f in "$@"; do [ -f "$f" ] && { echo "---- $f" >&2; tail -n 30 "$f" >&2; }; done
  exit 1
}
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: needs root/netns"; exit 77; }
command -v podman >/dev/null && command -v runc >/dev/null ||
  { echo "SKIP: podman/runc not installed (make deps)"; exit 77; }
IMG=${GX_IMAGE:-localhost/gxboot:latest}
BASE=docker.io/library/debian:bookworm
GX_IMAGE=$IMG "$GX_ROOT/container/image.sh" --quiet || fail "container/image.sh failed"
export CONTAINERS_CONF=${GX_IMAGE_CACHE:-/var/cache/gxboot-image}/containers.conf

P=gxkp$$
D=$(mktemp -d "/tmp/$P.XXXXXX")
# two /24s no route of this host uses yet
for _ in $(seq 1 50); do
  x=$((100 + RANDOM % 100)) y=$((100 + RANDOM % 100))
  ip route | grep -qE "^(10\.$x\.7\.|192\.168\.$y\.)" || break
done
A=10.$x.7 B=192.168.$y
cleanup() {
  local i
  for i in 0 1 2; do podman pod rm -f "$P-$i" >/dev/null 2>&1; done
  for i in 0 1 2; do podman volume rm -f "$P-bin-$i" "$P-run-$i" >/dev/null 2>&1; done
  podman network rm -f "$P-a" "$P-b" >/dev/null 2>&1
  case "$D" in /tmp/gxkp*) rm -rf "$D" ;; esac
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
podman network create --subnet "$A.0/24" "$P-a" >/dev/null || fail "network $P-a"
podman network create --internal --subnet "$B.0/24" "$P-b" >/dev/null || fail "network $P-b"

manifest() { # manifest i : the Pod, as a user would write it for Kubernetes
  local i=$1
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $P-$i
spec:
  hostname: $P-$i
  restartPolicy: Never
  hostAliases:
  - {ip: $A.10, hostnames: [$P-0]}
  - {ip: $A.11, hostnames: [$P-1]}
  - {ip: $A.12, hostnames: [$P-2]}
  initContainers:
  - name: install
    image: $IMG
    command: ["/gxboot", "install", "/opt/gxboot"]
    volumeMounts: [{name: $P-bin-$i, mountPath: /opt/gxboot}]
  - name: init
    image: $IMG
    args: ["init", "--peers", "$P-{0..2}", "--timeout", "60", "--out", "/gx/run"]
    volumeMounts: [{name: $P-run-$i, mountPath: /gx/run}]
  containers:
  - name: main
    image: $BASE
    securityContext: {runAsUser: 65532, runAsGroup: 65532} # the init containers' user (exec)
    command: ["/opt/gxboot/gxboot", "exec", "--out", "/gx/run", "--", "/bin/sh", "-c",
              'echo "GXREPORT rank=\$NODE_RANK master=\$MASTER_ADDR iface=\$GXBOOT_IFACE addr=\$GXBOOT_ADDR"']
    volumeMounts: [{name: $P-bin-$i, mountPath: /opt/gxboot, readOnly: true},
                   {name: $P-run-$i, mountPath: /gx/run, readOnly: true}]
  volumes:
  - {name: $P-bin-$i, emptyDir: {}}
  - {name: $P-run-$i, emptyDir: {}}
EOF
}

# kube play runs a pod's init containers to the end before it returns: all three at once
declare -a PIDS
for i in 1 2 0; do
  manifest "$i" >"$D/pod$i.yaml"
  podman kube play --log-driver k8s-file --log-opt "path=$D/pod$i.log" \
    --network "$P-a:ip=$A.1$i" --network "$P-b:ip=$B.1$i" "$D/pod$i.yaml" >"$D/play$i.out" 2>&1 &
  PIDS[i]=$!
done
for i in 0 1 2; do
  wait "${PIDS[i]}" || fail "$P-$i: podman kube play exited $?" "$D/play$i.out" "$D/pod$i.log"
done
for i in 0 1 2; do
  rc=$(timeout 60 podman wait "$P-$i-main") || fail "$P-$i: main container did not end" "$D/pod$i.log"
  [ "$rc" = 0 ] || fail "$P-$i: main container exited $rc" "$D/pod$i.log"
  want="rank=$i master=$B.10 iface=eth[01] addr=$B.1$i"
  grep -qE "GXREPORT $want\$" "$D/pod$i.log" || fail "$P-$i: want 'GXREPORT $want'" "$D/pod$i.log"
done
echo "podman kube play: 3 pods, init containers install + init, main exec on the secondary ($B.0/24) OK"
