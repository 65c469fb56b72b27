#!/usr/bin/env bash
# LeaderWorkerSet: a group of a leader and 2 workers with the env LWS sets
# (LWS_LEADER_ADDRESS=<lws>-<group>.<lws>.<ns>, LWS_GROUP_SIZE, LWS_WORKER_INDEX; verified in
# kubernetes-sigs/lws) and the pods' host names lws-0, lws-0-1, lws-0-2; no --peers. The
# leader's name resolves (cluster DNS) to its eth0 address; eth0 is closed except DNS + 29410.
# Asserts: all exit 0; the source logged is LeaderWorkerSet; every pod's MASTER_ADDR is the
# leader's net1 address and its NODE_RANK its LWS_WORKER_INDEX.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
pod_name() { if [ "$1" = 0 ]; then echo lws-0; else echo "lws-0-$1"; fi; }
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
echo "$(pod_eth0 0) lws-0.lws.default.svc.cluster.local" >>"$GX_DIR/dns.hosts"
gx_dns_reload
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
for i in 2 1 0; do
  mkdir -p "$GX_DIR/out$i"
  pod_bg "$i" "$GX_DIR/pod$i.log" env LWS_LEADER_ADDRESS=lws-0.lws.default LWS_GROUP_SIZE=3 \
    LWS_WORKER_INDEX="$i" LWS_NAME=lws "$GXBOOT" init --out "$GX_DIR/out$i" --token-file "$T" --timeout 20
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 30 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do
  gx_expect_in "$i" 'peers from LeaderWorkerSet: 3 peers'
  [ "$(gx_env "$GX_DIR/out$i/env" MASTER_ADDR)" = "$(pod_net1 0)" ] || fail "pod $i: MASTER_ADDR" "$GX_DIR/pod$i.log"
  [ "$(gx_env "$GX_DIR/out$i/env" NODE_RANK)" = "$i" ] || fail "pod $i: NODE_RANK" "$GX_DIR/pod$i.log"
done
echo "LeaderWorkerSet group elected the leader's net1 $(pod_net1 0)"
