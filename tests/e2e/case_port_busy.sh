#!/usr/bin/env bash
# hostNetwork: two jobs on one node collide on the rendezvous port. In one pod a
# listener already holds 29410 (the other job's coordinator); this job's coordinator starts.
# Asserts: exit 2 at once with one line naming the port and --port; no files written. The same
# when the holder is another job's gxboot coordinator (part B).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 1 || fail "cluster_create"
pod_bg 0 "$GX_DIR/holder.log" /usr/bin/python3 -c '
import socket, time
s = socket.socket(); s.bind(("0.0.0.0", 29410)); s.listen(); print("held", flush=True); time.sleep(30)'
holder=$GX_PID
for k in $(seq 1 50); do grep -q held "$GX_DIR/holder.log" && break; sleep 0.1; done
gx_start 0 init --peers 'job-worker-0' --timeout 10
gx_wait_all 15 0
kill "$holder" 2>/dev/null
gx_expect_rc 2 0
gx_expect_in 0 'port 29410 is already in use on this node .*--port'
gx_expect_no_files 0
echo "port collision: $(tail -n 1 "$GX_DIR/pod0.log")"

# B: the holder is another job's gxboot coordinator in the same network namespace (hostNetwork
# pods of two jobs on one node). Its listeners share the port with SO_REUSEPORT (the wildcard
# beside the one bound to net1), so bind alone would let this one in too and split the
# connections between two jobs: gxboot asks the kernel for the port's listeners and refuses.
rm -rf "$GX_DIR/out0"
pod_bg 0 "$GX_DIR/other.log" "$GXBOOT" init --peers 'job-worker-0,job-worker-7' --timeout 20 \
  --out "$GX_DIR/other"
other=$GX_PID
gx_wait_until 10 grep -q 'peers from --peers' "$GX_DIR/other.log" || fail "the other job's coordinator did not start" "$GX_DIR/other.log"
gx_wait_until 10 sh -c "ip netns exec $(pod_ns 0) ss -ltn | grep -q ':29410 '" || fail "the other job does not listen"
gx_start 0 init --peers 'job-worker-0' --timeout 10
gx_wait_all 15 0
kill "$other" 2>/dev/null
gx_expect_rc 2 0
gx_expect_in 0 'port 29410 is already in use on this node .*--port'
gx_expect_no_files 0
echo "port shared with another gxboot: $(tail -n 1 "$GX_DIR/pod0.log")"
