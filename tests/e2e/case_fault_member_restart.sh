#!/usr/bin/env bash
# Fault: a member restarts with a new incarnation mid-rendezvous (same name, new connection: PING the old one).
# A. job-worker-1 joins, is SIGKILLed, and starts again (a fresh process: new incarnation)
#    before job-worker-2 starts.
# B. (port 29420) job-worker-1 joins and is frozen (SIGSTOP: its connection stays open but
#    answers nothing); a new job-worker-1 process starts in the same pod. The coordinator PINGs
#    the old connection, gets no answer within 2 s and lets the new one replace it.
# Asserts, both: every pod exits 0 within --timeout 20; each CMD got its rank (job-worker-1
# keeps rank 1), NNODES=3, MASTER_ADDR=<coordinator's net1>:29500. eth0 closed but DNS + ports.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i" 29410 29420; done

# A. SIGKILL and restart
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 20)
gx_start 0 "${P[@]}" -- "${GX_REPORT[@]}"
gx_start 1 "${P[@]}" -- "${GX_REPORT[@]}"
first=$GX_PID
sleep 2
kill -0 "$first" 2>/dev/null || fail "job-worker-1 ended before the restart" "$GX_DIR/pod1.log"
kill -KILL "$first"
wait "$first" 2>/dev/null
mv "$GX_DIR/pod1.log" "$GX_DIR/pod1.first.log"
sleep 0.5
t0=$(date +%s%N)
gx_start 1 "${P[@]}" -- "${GX_REPORT[@]}"
sleep 0.5
gx_start 2 "${P[@]}" -- "${GX_REPORT[@]}"
gx_wait_all 30 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i"; done
echo "A. member SIGKILLed after joining and restarted: all exit 0, ranks stable ($((($(date +%s%N) - t0) / 1000000)) ms after the restart)"

# B. old process frozen, a new one in the same pod
for i in 0 1 2; do mv "$GX_DIR/pod$i.log" "$GX_DIR/pod$i.a.log"; rm -rf "$GX_DIR/out$i"; done
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 --port 29420)
gx_start 0 "${P[@]}" -v -- "${GX_REPORT[@]}"
pod_bg 1 "$GX_DIR/pod1.frozen.log" "$GXBOOT" --out "$GX_DIR/out1.frozen" "${P[@]}" -- "${GX_REPORT[@]}"
frozen=$GX_PID
sleep 2
kill -0 "$frozen" 2>/dev/null || fail "job-worker-1 ended before it was frozen" "$GX_DIR/pod1.frozen.log"
kill -STOP "$frozen"
t0=$(date +%s%N)
gx_start 1 "${P[@]}" -- "${GX_REPORT[@]}"
sleep 0.5
gx_start 2 "${P[@]}" -- "${GX_REPORT[@]}"
gx_wait_all 30 0 1 2
dt=$((($(date +%s%N) - t0) / 1000000))
kill -KILL "$frozen" 2>/dev/null
kill -CONT "$frozen" 2>/dev/null
wait "$frozen" 2>/dev/null
# regression of fault-3 (fixed in e2ff587): job-worker-2 joins within the 2 s PING window; the coordinator COMMITs with the
# frozen (old) incarnation of job-worker-1 and closes the pending new one, which exits 3 "no
# COMMIT from the coordinator". Expected: no COMMIT while a replacement is
# pending; after 2 s without PONG the new incarnation replaces the old (rdzv/rdzv_coord.c
# co_check_commit ignores st[i].pending).
if [ "${GX_RC[1]}" != 0 ] && grep -q 'COMMIT' "$GX_DIR/pod0.log"; then
  fail "regression of fault-3 (fixed in e2ff587): new job-worker-1 exited ${GX_RC[1]} while the coordinator committed with its frozen old incarnation" \
    "$GX_DIR/pod0.log" "$GX_DIR/pod1.log"
fi
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i"; done
[ ! -e "$GX_DIR/out1.frozen/env" ] || fail "the frozen job-worker-1 wrote files"
echo "B. frozen member replaced by a new incarnation: all exit 0, ranks stable ($dt ms after the new start)"
