#!/usr/bin/env bash
# Ray on the secondary network, elastic: 3 pods shaped as KubeRay makes them (env
# from ray-project/kuberay common/pod.go: RAY_PORT, RAY_CLUSTER_NAME, the head's
# KUBERAY_GEN_RAY_START_CMD with --head, the workers' FQ_RAY_IP = the head Service's FQDN), no
# --peers. eth0 is closed except DNS and the rendezvous port. The head starts alone and runs a
# fake `ray start --head` (tests/e2e/fake_ray.py) that waits for 2 workers on
# RAY_ADDRESS; the workers start 2 s later (autoscaling) and connect to it.
# Asserts: the head's command started before any worker existed (the head never waits);
# RAY_ADDRESS = <head net1>:6379 everywhere; each worker's node IP is its own net1 address and
# the head saw it connect from there; workers got ranks 1 and 2; all exit 0; the head's
# rendezvous.json follows the late joiners: `gxboot hosts` lists all three.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
H=$(pod_net1 0)
# the head Service (KubeRay: <cluster>-head-svc) resolves to the head pod's eth0 address
echo "$(pod_eth0 0) rc1-head-svc.default.svc.cluster.local" >>"$GX_DIR/dns.hosts"
gx_dns_reload
FAKE=$GX_E2E_DIR/fake_ray.py
RAYENV=(RAY_PORT=6379 RAY_CLUSTER_NAME=rc1)
mkdir -p "$GX_DIR/out0"
pod_bg 0 "$GX_DIR/pod0.log" env "${RAYENV[@]}" KUBERAY_GEN_RAY_START_CMD='ray start --head --port=6379' \
  RAY_NODE_TYPE_NAME=headgroup "$GXBOOT" --out "$GX_DIR/out0" --token-file "$T" --timeout 30 -- \
  /usr/bin/python3 "$FAKE" head 2
GX_PIDS[0]=$GX_PID
for k in $(seq 1 100); do grep -q 'FAKERAY head' "$GX_DIR/pod0.log" && break; sleep 0.1; done
grep -q "FAKERAY head gcs=$H:6379 node_ip=$H" "$GX_DIR/pod0.log" ||
  fail "the head's command did not start alone with RAY_ADDRESS=$H:6379" "$GX_DIR/pod0.log"
sleep 2
for i in 1 2; do
  mkdir -p "$GX_DIR/out$i"
  pod_bg "$i" "$GX_DIR/pod$i.log" env "${RAYENV[@]}" FQ_RAY_IP=rc1-head-svc.default.svc.cluster.local \
    RAY_IP=rc1-head-svc RAY_CLOUD_INSTANCE_ID="rc1-worker-$i" "$GXBOOT" --out "$GX_DIR/out$i" \
    --token-file "$T" --timeout 30 -- /usr/bin/python3 "$FAKE" worker
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 45 1 2 0
for i in 1 2 0; do [ "${GX_RC[i]}" = 0 ] || fail "job-worker-$i exited ${GX_RC[i]}" "$GX_DIR/pod1.log" "$GX_DIR/pod2.log" "$GX_DIR/pod0.log"; done
ranks=""
for i in 1 2; do
  W=$(pod_net1 "$i")
  grep -Eq "FAKERAY worker gcs=$H:6379 node_ip=$W rank=[12]\$" "$GX_DIR/pod$i.log" ||
    fail "worker $i: no RAY_ADDRESS=$H:6379 / node_ip=$W / rank" "$GX_DIR/pod$i.log"
  grep -q "FAKERAY joined node_ip=$W from=$W" "$GX_DIR/pod0.log" ||
    fail "the head did not see worker $i connect from its net1 $W" "$GX_DIR/pod0.log"
  [ "$(gx_env "$GX_DIR/out$i/env" FQ_RAY_IP)" = "$H" ] || fail "worker $i: FQ_RAY_IP not rewritten"
  ranks="$ranks $(sed -n 's/.*rank=\([0-9]*\)$/\1/p' "$GX_DIR/pod$i.log")"
done
[ "$(echo $ranks | tr ' ' '\n' | sort | tr '\n' ' ')" = "1 2 " ] || fail "worker ranks:$ranks"
# The head's hostfile / `gxboot hosts` follow the live table (it started alone)
want=$(printf '%s:1\n' "$H" "$(pod_net1 1)" "$(pod_net1 2)" | sort)
got=$("$GXBOOT" hosts --out "$GX_DIR/out0" | sort)
[ "$got" = "$want" ] || fail "gxboot hosts on the head: got '$got', want '$want'" "$GX_DIR/pod0.log"
gx_expect_in 0 "peer table changed: 3 peers"
echo "Ray elastic: head alone at once, workers joined later with ranks$ranks over net1"
