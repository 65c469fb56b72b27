#!/usr/bin/env bash
# A stranger without the token makes RDMA-CM connects while `gxboot check`
# runs on 3 rxe pods (the stranger is pod 3, outside the job, with its own rxe device:
# NetworkPolicy does not filter RDMA). Before RDMA wire v2 every connect registered max_write
# bytes for anyone, 64 at once for 10 s each.
# The stranger (rdma_stranger.c, built here) goes at the coordinator's RDMA-CM server while the
# coordinator waits for its members: every 50 ms a connect, held open and silent, until 8 are
# refused; then 3 connects with a forged PING. Then the members start.
# Asserts: check still passes 6/6 over TCP and RDMA on every pod; the stranger held at most 4
# unproved connections at once (RDZV_RDMA_PREAUTH_PER_SRC) and was refused 8 times; no PONG
# answered a forged PING; no pod's server registered memory for the stranger's address.
# Printed: the coordinator's peak pinned bytes (check server) in a clean run and in the run
# with the stranger (asserted: at most one target per member).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
gx_need_gxboot
command -v cc >/dev/null || { echo "SKIP: no C compiler in the VM for rdma_stranger.c"; exit 77; }
SPID=""
rxe_pods 4
trap 'rxe_reap "$SPID"; cluster_destroy' EXIT
cc -O1 -Wall -o "$GX_DIR/rdma_stranger" "$(dirname "$0")/rdma_stranger.c" -lrdmacm -libverbs ||
  fail "cannot build rdma_stranger.c"
T=$(cluster_token)
SIZE=1048576
P=(check --peers 'job-worker-{0..2}' --token-file "$T" --timeout 60 --size $SIZE -v)
SIP=$(pod_net1 3)

check_job() { # the 3 job pods, coordinator last; every one exits 0 with 6/6 over RDMA
  local i
  for i in 2 1 0; do rxe_start "$i" "${P[@]}"; done
}
check_ok() {
  local i
  gx_expect_rc 0 0 1 2
  for i in 0 1 2; do gx_expect_in "$i" '6/6 pairs OK over TCP, 6/6 over RDMA'; done
}
peak() { # the highest "peak N" of pod 0's server lines
  grep -ho 'rdma server: registered .*peak [0-9]*' "$GX_DIR/pod0.log" | sed 's/.*peak //' |
    sort -n | tail -1
}

check_job
gx_wait_all 150 0 1 2
check_ok
clean=$(peak)
[ -n "$clean" ] || fail "the clean run registered nothing on pod 0" "$GX_DIR/pod0.log"

# Under attack: the coordinator first. Its rendezvous (check meets on --port + 1, 29411) serves
# RDMA-CM there for the members' phase-2 verification (the same server code as the probes',
# wire v2) while it waits for them; the stranger goes at it then, and the members start once
# it is done. (The probe servers live a fraction of a second under the VM: too short a target.)
rxe_start 0 "${P[@]}"
for ((k = 0; k < 100; k++)); do
  grep -q 'interface net1' "$GX_DIR/pod0.log" && break
  sleep 0.1
done
sleep 0.5
pod_bg 3 "$GX_DIR/stranger.log" "$GX_DIR/rdma_stranger" "$SIP" "$(pod_net1 0)" 29411 0
SPID=$GX_PID
pod_wait "$SPID" 60 >/dev/null
rxe_reap "$SPID"
SPID=""
for i in 2 1; do rxe_start "$i" "${P[@]}"; done
gx_wait_all 150 0 1 2
check_ok
gx_expect_in 0 'all 3 peers joined and verified'
line=$(grep '^stranger:' "$GX_DIR/stranger.log") || fail "the stranger said nothing" "$GX_DIR/stranger.log"
line=${line% (last*}
under=$(peak)
get() { echo "$line" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
[ "$(get refused)" = 8 ] || fail "the stranger was not refused 8 times: $line" "$GX_DIR/stranger.log" "$GX_DIR/pod0.log"
[ "$(get max_held)" -le 4 ] || fail "more than 4 unproved connections from one source: $line"
[ "$(get accepted)" -ge 1 ] || fail "the stranger never reached the server: $line" "$GX_DIR/pod0.log"
[ "$(get forged)" = 3 ] && [ "$(get pongs)" = 0 ] || fail "a forged PING was answered: $line"
! grep -h "rdma server: registered .* from $SIP " "$GX_DIR"/pod[0-2].log ||
  fail "a server registered memory for the stranger" "$GX_DIR/pod0.log"
n=$(grep -c "rdma server: connect request from $SIP rejected (reason 1)" "$GX_DIR/pod0.log")
[ "$n" -ge 8 ] || fail "pod 0 logged $n busy refusals of $SIP" "$GX_DIR/pod0.log"
echo "rdma stranger: $line; pod 0 refused $n of its connects as busy," \
  "closed $(grep -c "rdma server: .*$SIP.* prove" "$GX_DIR/pod0.log") unproved"
echo "MEASURE rdma pinned peak on the coordinator's check server: clean $clean bytes, after the" \
  "stranger $under bytes; registered for the stranger: 0 bytes"
# the job's own probes only: at most one target per member at once (the stranger's 4 held
# connects would have pinned 4 x 1 MiB more before wire v2)
[ "${under:-0}" -le $((2 * SIZE)) ] || fail "pinned peak $under bytes under the stranger" "$GX_DIR/pod0.log"
