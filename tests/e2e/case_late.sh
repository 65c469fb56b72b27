#!/usr/bin/env bash
# Late peers: the coordinator's DNS record is published 3 s after the
# members start (they see NXDOMAIN first, negative TTL 2 s) and the coordinator pod is
# started last, 1 s after that. eth0 closed except DNS + 29410.
# Asserts: all 3 pods exit 0 within --timeout 20 and each CMD got its own rank, NNODES=3,
# MASTER_ADDR=<coordinator's net1>:29500, GXBOOT_IFACE=net1, GXBOOT_ADDR=<own net1>,
# GLOO_SOCKET_IFNAME=net1 and no GXBOOT_TOKEN.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
GX_UNPUBLISHED="0" cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 20)
for i in 1 2; do gx_start "$i" "${P[@]}" -- "${GX_REPORT[@]}"; done
sleep 3
pod_exec 1 getent hosts job-worker-0.job >/dev/null && fail "job-worker-0 resolved before it was published"
cluster_publish 0
sleep 1
gx_start 0 "${P[@]}" -- "${GX_REPORT[@]}"
gx_wait_all 40 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i"; done
echo "late coordinator record + coordinator started last: OK"
