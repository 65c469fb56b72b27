#!/usr/bin/env bash
# The relay tree with real gxboot processes: 8 pods, GXBOOT_RELAY_FANOUT=3,
# so job-worker-3 and job-worker-6 relay (4, 5 join through 3; 7 through 6) and 1, 2 join
# the coordinator. eth0 closed except DNS + 29410 (the rendezvous port, the relays' too).
# A. Everyone exits 0 with its own rank and MASTER_ADDR on the coordinator's net1; the
#    coordinator says 3 of 7 members came through 2 relays; every member verified on
#    net1 (its report: GXBOOT_ADDR = its own net1).
# B. The relay job-worker-3 is SIGKILLed after its children joined through it (the COMMIT is
#    held back: job-worker-7 not started): the coordinator names the lost relay; 3 restarts
#    and everyone exits 0 with its rank.
# GX_RELAY_DEBUG=DIR: part B runs with -v and its pod logs are copied to DIR (the
# coordinator always runs with -v in B: its lines say when 4 and 5 have joined).
# C. The relay job-worker-6 never starts, --timeout 26: its child 7 gives up on it after
#    20 s (RDZV_RELAY_PATIENCE_MS) and joins the coordinator; the failure line names
#    job-worker-6 only.
# D. The same with --timeout 8, before 7's patience runs out: its line says it never got
#    through its relay, and does not blame DNS for the coordinator's name, which it never
#    looked up (on 9740b38: "(job-worker-0.job.default.svc.cluster.local. never resolved)").
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 8 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2 3 4 5 6 7; do cluster_cut_eth0 "$i"; done
export GXBOOT_RELAY_FANOUT=3
P=(--peers 'job-worker-{0..7}' --token-file "$T" --timeout 20)
all="0 1 2 3 4 5 6 7"

# A.
for i in $all; do gx_start "$i" "${P[@]}" -- "${GX_REPORT[@]}"; done
gx_wait_all 40 $all
gx_expect_rc 0 $all
for i in $all; do gx_expect_report "$i"; done
gx_expect_in 0 'rdzv: 3 of 7 members joined through 2 relays'
echo "A. 8 pods, fan-out 3: 3 members through 2 relays, all exit 0 with their ranks: OK"

# B.
for i in $all; do mv "$GX_DIR/pod$i.log" "$GX_DIR/pod$i.a.log"; rm -rf "$GX_DIR/out$i"; done
gx_start 0 "${P[@]}" -v -- "${GX_REPORT[@]}" # its debug lines say who joined
for i in 1 2 3 4 5 6; do gx_start "$i" "${P[@]}" ${GX_RELAY_DEBUG:+-v} -- "${GX_REPORT[@]}"; done
relay=${GX_PIDS[3]}
joined() { grep -q 'job-worker-4 joined from' "$1" && grep -q 'job-worker-5 joined from' "$1"; }
gx_wait_until 15 joined "$GX_DIR/pod0.log" ||
  fail "job-worker-4 and 5 did not join through their relay" "$GX_DIR/pod0.log"
kill -0 "$relay" 2>/dev/null || fail "job-worker-3 ended before it was killed" "$GX_DIR/pod3.log"
kill -KILL "$relay"
wait "$relay" 2>/dev/null
mv "$GX_DIR/pod3.log" "$GX_DIR/pod3.killed.log"
gx_wait_until 10 grep -q 'relay job-worker-3 lost' "$GX_DIR/pod0.log" ||
  fail "the coordinator did not name the lost relay" "$GX_DIR/pod0.log"
gx_start 3 "${P[@]}" ${GX_RELAY_DEBUG:+-v} -- "${GX_REPORT[@]}"
gx_start 7 "${P[@]}" -- "${GX_REPORT[@]}"
gx_wait_all 40 $all
[ -n "${GX_RELAY_DEBUG:-}" ] && cp "$GX_DIR"/pod*.log "$GX_RELAY_DEBUG"/
gx_expect_rc 0 $all
for i in $all; do gx_expect_report "$i"; done
echo "B. relay killed after its children joined: named by the coordinator ($(grep -o 'relay job-worker-3 lost[^)]*' "$GX_DIR/pod0.log" | head -1)), all exit 0: OK"

# C.
for i in $all; do mv "$GX_DIR/pod$i.log" "$GX_DIR/pod$i.b.log"; rm -rf "$GX_DIR/out$i"; done
P=(--peers 'job-worker-{0..7}' --token-file "$T" --timeout 26)
for i in 0 1 2 3 4 5 7; do gx_start "$i" "${P[@]}" -- "${GX_REPORT[@]}"; done
gx_wait_all 40 0 1 2 3 4 5 7
gx_expect_rc 3 0 1 2 3 4 5 7
gx_expect_in 7 'relay job-worker-6 failed .*joining the coordinator'
gx_expect_in 0 'peers missing after 26s: job-worker-6$'
echo "C. relay pod never started: its child went to the coordinator; the line names job-worker-6 alone: OK"

# D.
for i in 0 7; do mv "$GX_DIR/pod$i.log" "$GX_DIR/pod$i.c.log"; rm -rf "$GX_DIR/out$i"; done
P=(--peers 'job-worker-{0..7}' --token-file "$T" --timeout 8)
for i in 0 7; do gx_start "$i" "${P[@]}" -- "${GX_REPORT[@]}"; done
gx_wait_all 20 0 7
gx_expect_rc 3 0 7
gx_expect_in 7 'never answered in 8s through its relay job-worker-6 \('
if grep -q 'never resolved' "$GX_DIR/pod7.log"; then
  fail "job-worker-7 blames DNS for a name it never looked up" "$GX_DIR/pod7.log"
fi
echo "D. relay pod never started, --timeout 8: $(tail -n 1 "$GX_DIR/pod7.log" | cut -c1-200): OK"
