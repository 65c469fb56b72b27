#!/usr/bin/env bash
# Issue 15, an IPv6-only secondary network: net1 has only a global IPv6 address (nodad), eth0
# stays IPv4 (DNS, rendezvous phase 1) and is closed except DNS + 29410. 2 pods run gxboot
# with a command that uses what gxboot handed it: rank 0 listens on [MASTER_ADDR]:MASTER_PORT,
# rank 1 connects from GXBOOT_ADDR and sends it (torch 1.13's static TCPStore did not come up
# over an IPv6 MASTER_ADDR here: the master waited for workers forever; see the issue note).
# Asserts: both exit 0; MASTER_ADDR = the coordinator's IPv6 net1 address and the exchange ran
# over net1 (eth0 is closed); env has NCCL_SOCKET_FAMILY=AF_INET6 and GXBOOT_ADDR = the pod's
# own v6 address; the coordinator's hostfile lists the two v6 addresses.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_skip_unless init
gx_need_gxboot
GX_NET1_V6=1 cluster_create 2 || fail "cluster_create"
export GX_NET1_V6=1
T=$(cluster_token)
for i in 0 1; do cluster_cut_eth0 "$i"; done
M=$(pod_net1 0)
XCHG='
import os, socket, sys, time
m, port, me = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), os.environ["GXBOOT_ADDR"]
if os.environ["NODE_RANK"] == "0":
    s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((m, port)); s.listen(1); s.settimeout(20)
    c, peer = s.accept(); print("V6XCHG got", c.recv(64).decode(), "from", peer[0], flush=True)
else:
    for _ in range(100):
        try:
            c = socket.create_connection((m, port), timeout=5, source_address=(me, 0)); break
        except OSError:
            time.sleep(0.2)
    c.sendall(me.encode()); print("V6XCHG sent", me, "to", m, flush=True)
'
for i in 1 0; do
  gx_start "$i" --peers 'job-worker-{0..1}' --token-file "$T" --timeout 20 -- "$PY" -c "$XCHG"
done
gx_wait_all 40 0 1
gx_expect_rc 0 0 1
W=$(pod_net1 1)
grep -q "V6XCHG got $W from $W" "$GX_DIR/pod0.log" || fail "rank 0 did not get $W over net1" "$GX_DIR/pod0.log"
grep -q "V6XCHG sent $W to $M" "$GX_DIR/pod1.log" || fail "rank 1 did not send to $M" "$GX_DIR/pod1.log"
for i in 0 1; do
  e=$GX_DIR/out$i/env
  [ "$(gx_env "$e" NCCL_SOCKET_FAMILY)" = AF_INET6 ] || fail "job-worker-$i: NCCL_SOCKET_FAMILY" "$e"
  [ "$(gx_env "$e" GXBOOT_ADDR)" = "$(pod_net1 "$i")" ] || fail "job-worker-$i: GXBOOT_ADDR" "$e"
done
want=$(printf '%s slots=1\n' "$(pod_net1 0)" "$(pod_net1 1)")
[ "$(cat "$GX_DIR/out0/hostfile")" = "$want" ] || fail "hostfile" "$GX_DIR/out0/hostfile"
echo "IPv6-only net1: rendezvous, env, hostfile and a TCP exchange over $M OK"
