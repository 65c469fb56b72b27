#!/usr/bin/env bash
# The container image, built (container/image.sh, podman, offline) and run for real:
# a 3-pod job whose pods' containers are podman containers, each pod's containers in its
# network namespace (--network ns:/run/netns/<pod>), its hostname, and the kubelet's
# /etc/hosts and /etc/resolv.conf of that pod mounted read-only.
# (a) init-container mode, per pod: `gxboot install` of the image into the pod's shared
#     volume (a host dir = emptyDir), `gxboot init` in an init container (image user, read-only
#     root), then a main container from another image (the bookworm base, which has a shell)
#     runs `/opt/gxboot/gxboot exec -- sh -c ...` and prints the env it got.
# (b) entrypoint mode: ENTRYPOINT /gxboot with `--peers ... -- CMD`, read-only root, CMD a
#     static busybox `env` in a test image made FROM the gxboot image (the image has no shell).
# Asserts: the image holds exactly one file, /gxboot; Config.User 65532:65532, ENTRYPOINT
# /gxboot; `--entrypoint /bin/sh` fails; files written by the containers are owned by 65532;
# every pod exits 0 in both modes; the main container / CMD see NODE_RANK = pod index,
# NNODES=3, MASTER_ADDR = the coordinator's net1 address, GXBOOT_IFACE=net1, GXBOOT_ADDR =
# own net1 address, no GXBOOT_TOKEN.
# gx-timeout: 900
# GX_IMAGE (default localhost/gxboot:latest) names the image to build and test.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
command -v podman >/dev/null && command -v runc >/dev/null ||
  { echo "SKIP: podman/runc not installed (make deps)"; exit 77; }

IMG=${GX_IMAGE:-localhost/gxboot:latest}
BASE=docker.io/library/debian:bookworm
# The image is (re)built from this tree: layers are cached, so this is seconds when nothing
# changed and minutes on a fresh machine (make image before, as make check does).
GX_IMAGE=$IMG "$GX_ROOT/container/image.sh" --quiet || fail "container/image.sh failed"
export CONTAINERS_CONF=${GX_IMAGE_CACHE:-/var/cache/gxboot-image}/containers.conf

# --- the image itself
u=$(podman image inspect --format '{{.Config.User}}' "$IMG") || fail "no image $IMG"
[ "$u" = 65532:65532 ] || fail "image user '$u' (want 65532:65532)"
ep=$(podman image inspect --format '{{json .Config.Entrypoint}}' "$IMG")
[ "$ep" = '["/gxboot"]' ] || fail "image entrypoint $ep (want [\"/gxboot\"])"
m=$(podman image mount "$IMG") || fail "podman image mount $IMG"
files=$(cd "$m" && find . -mindepth 1 | sort | tr '\n' ' ')
podman image unmount "$IMG" >/dev/null
[ "$files" = "./gxboot " ] || fail "the image holds more than /gxboot: $(echo "$files" | cut -c1-200)..."
if podman run --rm --entrypoint /bin/sh "$IMG" -c true >/dev/null 2>&1; then
  fail "podman run --entrypoint /bin/sh worked: the image has a shell"
fi
v=$(podman run --rm --read-only "$IMG" version) || fail "podman run $IMG version exited $?"
echo "image: $IMG user $u entrypoint $ep files $files: $v"

cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
# the test image for entrypoint mode: the gxboot image + a static busybox as CMD
TIMG=localhost/gxboot-test:$GX_P
mkdir -p "$GX_DIR/ctx"
bb=$(command -v busybox) || fail "busybox (busybox-static) not installed (make deps)"
file -L "$bb" | grep -q 'statically linked' || fail "$bb is not static (install busybox-static)"
cp "$bb" "$GX_DIR/ctx/busybox"
printf 'FROM %s\nCOPY busybox /bin/busybox\n' "$IMG" >"$GX_DIR/ctx/Containerfile"
podman build --pull=never -q -t "$TIMG" "$GX_DIR/ctx" >/dev/null || fail "test image build"

img_cleanup() {
  podman ps -aq --filter "label=gxcase=$GX_P" | xargs -r podman rm -f >/dev/null 2>&1
  podman rmi -f "$TIMG" >/dev/null 2>&1
  cluster_destroy
}
trap 'img_cleanup' EXIT

# ctr i NAME : CTR = podman run of one container of pod i: its netns, hostname, the
# kubelet's hosts/resolv.conf, the job token as a Secret readable by 65532
ctr() {
  local ns
  ns=$(pod_ns "$1")
  CTR=(podman run --rm --name "$GX_P-$2-$1" --label "gxcase=$GX_P"
    --network "ns:/run/netns/$ns" --hostname "$(pod_name "$1")"
    -v "/etc/netns/$ns/hosts:/etc/hosts:ro" -v "/etc/netns/$ns/resolv.conf:/etc/resolv.conf:ro"
    -v "$GX_DIR/secret:/etc/gxboot:ro")
}
pod_ctr() { # pod_ctr i NAME ARGS... : run it in the foreground
  ctr "$1" "$2"
  shift 2
  "${CTR[@]}" "$@"
}
pod_ctr_bg() { # pod_ctr_bg i NAME LOG ARGS... : in the background, GX_PIDS[i], teardown stops it
  local i=$1 log=$3
  ctr "$1" "$2"
  shift 3
  (exec "${CTR[@]}" "$@") >"$log" 2>&1 </dev/null &
  GX_PIDS[i]=$!
  echo "$!" >>"$GX_DIR/pids"
}
mkdir -p "$GX_DIR/secret"
install -m 0400 -o 65532 -g 65532 "$T" "$GX_DIR/secret/token"
M=$(pod_net1 0)
OPTS=(--peers 'job-worker-{0..2}.job' --token-file /etc/gxboot/token --require-token --timeout 60)
REPORT='echo "GXREPORT rank=$NODE_RANK nnodes=$NNODES master=$MASTER_ADDR iface=$GXBOOT_IFACE addr=$GXBOOT_ADDR token=${GXBOOT_TOKEN:-none} uid=$(id -u)"'

# expect_report i FILE UID
expect_report() {
  local want
  want="GXREPORT rank=$1 nnodes=3 master=$M iface=net1 addr=$(pod_net1 "$1") token=none uid=$3"
  grep -qxF -- "$want" "$2" || fail "job-worker-$1: want '$want'" "$2"
}

# --- (a) init-container mode
for i in 0 1 2; do
  mkdir -p "$GX_DIR/bin$i" "$GX_DIR/run$i" # the pod's two emptyDirs
  chmod 0777 "$GX_DIR/bin$i" "$GX_DIR/run$i" # as a kubelet makes them: root's, 0777
  pod_ctr "$i" install --read-only -v "$GX_DIR/bin$i:/opt/gxboot" "$IMG" install /opt/gxboot \
    >"$GX_DIR/install$i.log" 2>&1 || fail "job-worker-$i: install exited $?" "$GX_DIR/install$i.log"
  [ "$(stat -c %u:%a "$GX_DIR/bin$i/gxboot")" = 65532:755 ] ||
    fail "installed $(stat -c %u:%a "$GX_DIR/bin$i/gxboot") (want 65532:755)"
done
for i in 1 2 0; do
  pod_ctr_bg "$i" init "$GX_DIR/init$i.log" --read-only -v "$GX_DIR/run$i:/run/gxboot" "$IMG" init "${OPTS[@]}"
done
for i in 0 1 2; do
  pod_wait "${GX_PIDS[i]}" 90
  rc=$?
  [ "$rc" = 0 ] || fail "job-worker-$i: init container exited $rc" "$GX_DIR/init$i.log"
  [ "$(stat -c %u "$GX_DIR/run$i/env")" = 65532 ] ||
    fail "job-worker-$i: env written by uid $(stat -c %u "$GX_DIR/run$i/env") (want 65532)"
done
for i in 0 1 2; do
  pod_ctr "$i" main -v "$GX_DIR/bin$i:/opt/gxboot:ro" -v "$GX_DIR/run$i:/run/gxboot:ro" \
    --user 65532:65532 "$BASE" /opt/gxboot/gxboot exec -- sh -c "$REPORT" \
    >"$GX_DIR/main$i.log" 2>&1 || fail "job-worker-$i: main container exited $?" "$GX_DIR/main$i.log"
  expect_report "$i" "$GX_DIR/main$i.log" 65532
done
echo "init-container mode: 3 pods install + init + exec OK (master $M)"

# --- (b) entrypoint mode: the image's ENTRYPOINT, read-only root, --out on a volume
for i in 1 2 0; do
  mkdir -p "$GX_DIR/ep$i"
  chown 65532:65532 "$GX_DIR/ep$i"
  pod_ctr_bg "$i" ep "$GX_DIR/ep$i.log" --read-only -v "$GX_DIR/ep$i:/run/gxboot" "$TIMG" \
    "${OPTS[@]}" -- /bin/busybox sh -c "$REPORT"
done
for i in 0 1 2; do
  pod_wait "${GX_PIDS[i]}" 90
  rc=$?
  [ "$rc" = 0 ] || fail "job-worker-$i: entrypoint container exited $rc" "$GX_DIR/ep$i.log"
  expect_report "$i" "$GX_DIR/ep$i.log" 65532
  [ "$(stat -c %u "$GX_DIR/ep$i/env")" = 65532 ] || fail "job-worker-$i: env not written by 65532"
done
# read-only root: gxboot itself cannot write outside its volumes (a 1-pod job, --out /)
if pod_ctr 0 ro --read-only "$TIMG" --peers job-worker-0.job --timeout 20 --out / \
  -- /bin/busybox true >"$GX_DIR/ro.log" 2>&1; then
  fail "--out on the read-only root worked" "$GX_DIR/ro.log"
fi
grep -q "Read-only file system" "$GX_DIR/ro.log" || fail "--out / did not fail with EROFS" "$GX_DIR/ro.log"
if pod_ctr 0 ro2 --read-only --entrypoint /bin/busybox "$TIMG" touch /x >/dev/null 2>&1; then
  fail "wrote /x on a --read-only root"
fi
echo "entrypoint mode: 3 pods 'gxboot --peers ... -- CMD' OK, read-only root holds"
