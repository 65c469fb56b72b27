#!/usr/bin/env bash
# The proof is the job's path, on routed leaves. job-worker-2's net1 is on a leaf of its own
# (192.168.<y+1>.0/24) behind a router namespace; every pod's default route leads through eth0
# to a gateway that reaches the secondary leaves too, as real clusters' routers do: a
# weak-host shortcut through eth0 then works, and hides the mistake.
#  A. job-worker-2's attachment has no route to the coordinator's leaf. Every pod exits 5 at
#     once (no waiting for --timeout), naming job-worker-2, the interface the kernel would take
#     (eth0) and the prefix that is missing; `gxboot check` on the same pods names it too.
#  B. The route is there (and the coordinator's leaf has one back). A real torch all_reduce
#     runs with MASTER_ADDR on net1, and job-worker-2 sent nothing to the coordinator's leaf
#     through eth0 and something through net1 (nftables counters on its output).
# gx-timeout: 180
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
A=${GX_NET_B%.*}.$((${GX_NET_B##*.})) # the coordinator's leaf, 192.168.y
B=${GX_NET_C}                         # job-worker-2's leaf, 192.168.y+1
GW=${GX_NET_A}.253                    # the gateway on the pod network
cluster_router "${GX_P}-b1 $A.1/24" "${GX_P}-b2 $B.1/24" "${GX_P}-b0 $GW/24" ||
  fail "cluster_router"
cluster_leaf 2 "${GX_P}-b2" "$B.12/24"
for i in 0 1 2; do ip -n "$(pod_ns "$i")" route replace default via "$GW" dev eth0; done
for i in 0 1; do ip -n "$(pod_ns "$i")" route add "$B.0/24" via "$A.1" dev net1; done

# job-worker-2's packets to the coordinator's leaf, by the interface they leave on (made
# anew to count one run: a rule's own counter has no reset of its own)
path_table() {
  ip netns exec "$(pod_ns 2)" nft delete table inet gxpath 2>/dev/null
  ip netns exec "$(pod_ns 2)" nft -f - <<EOF
table inet gxpath {
  chain out {
    type filter hook output priority 0; policy accept;
    ip daddr $A.0/24 oifname "eth0" counter
    ip daddr $A.0/24 oifname "net1" counter
  }
}
EOF
}
path_table
path_counts() { # "eth0-packets net1-packets" of job-worker-2 towards the coordinator's leaf
  ip netns exec "$(pod_ns 2)" nft list table inet gxpath |
    awk '/counter/ { for (k = 1; k <= NF; k++) if ($k == "packets") s = s " " $(k + 1) } END { print s }'
}

# A: the route back is missing
ip netns exec "$(pod_ns 2)" ip route get "$A.10" from "$B.12" | grep -q "dev eth0" ||
  fail "setup: job-worker-2 should route $A.10 through eth0"
t0=$(date +%s)
for i in 2 1 0; do gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 30 -- "${GX_REPORT[@]}"; done
gx_wait_all 40 0 1 2
gx_expect_rc 5 0 1 2
dt=$(($(date +%s) - t0))
for i in 0 1 2; do
  gx_expect_in "$i" "job-worker-2: the kernel routes $A.10 from $B.12 via $GW dev eth0: its net1 attachment has no route to $A.0/24"
done
gx_expect_no_files 0 1 2
echo "A: every pod exited 5 in ${dt}s (--timeout 30): $(tail -n 1 "$GX_DIR/pod0.log")"
[ "$dt" -lt 30 ] || fail "A: the route failure waited for --timeout (${dt}s)"

# A, check: the same rules, the same pod
for i in 2 1 0; do
  pod_bg "$i" "$GX_DIR/check$i.log" "$GXBOOT" check --peers "job-worker-{0..2}" --token-file "$T" \
    --timeout 30
  GX_PIDS[i]=$GX_PID
done
for i in 0 1 2; do
  pod_wait "${GX_PIDS[i]}" 60
  rc=$?
  [ "$rc" = 1 ] || fail "check on job-worker-$i exited $rc (want 1)" "$GX_DIR/check$i.log"
  grep -Eq "failing: .*job-worker-2" "$GX_DIR/check$i.log" ||
    fail "check on job-worker-$i does not blame job-worker-2" "$GX_DIR/check$i.log"
done
grep -q "routes $A.10 from $B.12 via $GW dev eth0" "$GX_DIR/check0.log" ||
  fail "check: the coordinator's line lacks the route" "$GX_DIR/check0.log"
echo "A, check: $(grep -m1 'failing:' "$GX_DIR/check0.log")"

# B: job-worker-2's attachment routes the coordinator's leaf through its own leaf router
ip -n "$(pod_ns 2)" route add "$A.0/24" via "$B.1" dev net1
path_table
for i in 0 1 2; do rm -rf "$GX_DIR/out$i"; done
for i in 2 1 0; do
  gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 30 -- \
    "$PY" -m torch.distributed.run --nproc_per_node 1 --rdzv_backend static \
    --redirects 1 --tee 1 "$GX_E2E_DIR/allreduce.py"
done
gx_wait_all 120 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do
  grep -Eq "ALLREDUCE rank=$i world=3 host=job-worker-$i master_addr=$A.10 .*gloo_if=net1 sum=6 OK" \
    "$GX_DIR/pod$i.log" || fail "B: rank $i: no 'sum=6 OK' on net1" "$GX_DIR/pod$i.log"
done
read -r via_eth0 via_net1 <<<"$(path_counts)"
echo "B: job-worker-2 sent $via_eth0 packets to $A.0/24 through eth0, $via_net1 through net1"
[ "$via_eth0" = 0 ] || fail "B: job-worker-2 sent $via_eth0 packets to the coordinator's leaf through eth0"
[ "${via_net1:-0}" -gt 0 ] || fail "B: job-worker-2 sent nothing through net1"
