#!/usr/bin/env bash
# TCP mode needs no privilege. In 3 pods, `gxboot -- CMD` runs as uid/gid 65534 with
# no supplementary groups, no capability (effective, permitted, inheritable, ambient and
# bounding sets empty: setpriv), eth0 closed but DNS + 29410.
# Asserts: every pod exits 0; each CMD got its rank, NNODES=3 and MASTER_ADDR=<coordinator's
# net1>:29500; CMD ran as uid 65534 with CapEff 0; the files in --out belong to 65534.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
command -v setpriv >/dev/null || { echo "SKIP: setpriv not installed"; exit 77; }
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
chown 65534:65534 "$T"
for i in 0 1 2; do
  cluster_cut_eth0 "$i"
  mkdir -p "$GX_DIR/out$i"
  chown 65534:65534 "$GX_DIR/out$i"
done
# the binary must be reachable by 65534 (a build dir under /root may not be)
cp "$GXBOOT" "$GX_DIR/gxboot"
chmod 0755 "$GX_DIR/gxboot"
NOPRIV=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all)
CMD=(/bin/sh -c "${GX_REPORT[2]}"'; echo "IDENT uid=$(id -u) gid=$(id -g) $(grep CapEff /proc/self/status | tr -d "\t")"')
for i in 2 1 0; do
  pod_bg "$i" "$GX_DIR/pod$i.log" "${NOPRIV[@]}" "$GX_DIR/gxboot" --out "$GX_DIR/out$i" \
    --peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 -- "${CMD[@]}"
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 30 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do
  gx_expect_report "$i"
  gx_expect_in "$i" '^IDENT uid=65534 gid=65534 CapEff:0000000000000000$'
  own=$(stat -c '%u' "$GX_DIR/out$i/env" 2>/dev/null)
  [ "$own" = 65534 ] || fail "job-worker-$i: --out/env owned by '$own' (want 65534)"
done
grep -h '^IDENT' "$GX_DIR"/pod*.log | sort | uniq -c
echo "TCP mode as uid 65534 with no capability: all 3 pods exit 0: OK"
