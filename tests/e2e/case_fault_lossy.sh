#!/usr/bin/env bash
# Fault: 20 % packet loss and 200 ms delay on net1 (no netem in this kernel: nftables numgen drops, a relay delays).
# 3 pods; in every pod nftables drops 20 % of the packets arriving on net1 (numgen random);
# each member's net1 is a tap bridged in user space to its veth (tests/e2e/delay_link.py) that
# holds every frame 200 ms in each direction, so TCP stays end to end on net1 (a TCP relay
# would terminate the connection: the proof would not be the path). eth0 closed but DNS + 29410.
# First a clean run (no loss, no relay) for the time, then the faulty one.
# Asserts: the faulty run completes (every pod exits 0 within --timeout 40, ranks, NNODES=3,
# MASTER_ADDR=<coordinator's net1>:29500) and the delay links carried frames both ways.
# Prints clean and faulty times and the loss counters.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
run_job() { # run_job TAG : one rendezvous of the 3 pods, coordinator last; DT = its ms
  local tag=$1 i t0
  t0=$(date +%s%N)
  for i in 2 1 0; do
    rm -rf "$GX_DIR/out$i"
    gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 40 -- "${GX_REPORT[@]}"
  done
  gx_wait_all 60 0 1 2
  DT=$((($(date +%s%N) - t0) / 1000000))
  for i in 0 1 2; do cp "$GX_DIR/pod$i.log" "$GX_DIR/pod$i.$tag.log"; done
}
run_job clean
clean=$DT
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i"; done

# the members' net1 holds every frame 200 ms each way (a user-space link: no netem here)
for i in 1 2; do cluster_delay "$i" 200 || fail "delay link in job-worker-$i" "$GX_DIR/delay$i.log"; done
for i in 0 1 2; do cluster_loss "$i" 20 net1; done
run_job faulty
faulty=$DT
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i"; done
for i in 1 2; do
  grep -Eq '^out=[1-9][0-9]* in=[1-9]' "$GX_DIR/delay$i.stats" ||
    fail "nothing went through the delay link of job-worker-$i" "$GX_DIR/delay$i.stats"
done
drops=""
for i in 0 1 2; do
  drops+=" $(ip netns exec "$(pod_ns "$i")" nft list table inet gxloss | awk '/packets/ { for (k = 1; k <= NF; k++) if ($k == "packets") print $(k + 1) }')"
done
echo "frames through the delay links: $(cat "$GX_DIR"/delay[12].stats | tr '\n' ' ')"
echo "net1 packets dropped by the 20 % rule (pods 0 1 2):$drops"
echo "clean run: $clean ms; with 20 % loss + 200 ms delay each way on net1: $faulty ms; all exit 0: OK"
