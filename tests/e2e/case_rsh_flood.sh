#!/usr/bin/env bash
# A stranger without the token holds 1000 connections to one pod's remote
# exec port (net1:29412), each sending the rsh HELLO (magic + nonce) and then nothing, from 150
# source addresses; every connection the server closes is reopened at once. Before the pre-authentication budget
# the server closed new connections once 128 were open (each may idle 10 s), so `gxboot rsh`
# got "Connection reset" and exit 255 (mpirun could not start).
# Asserts: from the coordinator's CMD, 5 `gxboot rsh job-worker-1 hostname` under attack all
# print job-worker-1 and exit 0; the stranger really opened its 1000 connections; the attacked
# server's warnings are rate-limited (first 3, then one summary line per 10 s). Printed: the
# time of the 5 calls to the attacked pod vs the same 5 to the other serving pod (no timing
# assertion).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/stranger.sh"
cluster_need_root
gx_need_gxboot
S=3 # the stranger's pod
CONNS=${GX_FLOOD_CONNS:-1000}
cluster_create 4 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..2}' --timeout 30)
B=$(pod_net1 1)
SRCS=$(stranger_addrs $S "net1:$B")
# shellcheck disable=SC2086
pod_bg "$S" "$GX_DIR/flood.log" "$PY" -u "$STRANGER" hold "$GX_DIR/flood.status" 29412 "$CONNS" rsh $SRCS
flood=$GX_PID
for i in 1 2; do gx_start "$i" serve "${P[@]}" --token-file "$T"; done
R=$GX_DIR/res
mkdir -p "$R"
cat >"$GX_DIR/script.sh" <<EOS
G=$GXBOOT; R=$R
# the stranger is at it: it has opened its $CONNS connections against the server
for k in \$(seq 1 40); do
  o=\$(sed -n 's/.*opened=\([0-9]*\).*/\1/p' $GX_DIR/flood.status 2>/dev/null)
  [ "\${o:-0}" -ge $((CONNS + 200)) ] && break
  sleep 0.25
done
cp $GX_DIR/flood.status \$R/st0
t0=\$(date +%s%N)
for k in 1 2 3 4 5; do \$G rsh job-worker-2 hostname >>\$R/clean 2>&1; echo \$? >>\$R/clean.rc; done
t1=\$(date +%s%N)
for k in 1 2 3 4 5; do \$G rsh job-worker-1 hostname >>\$R/attack 2>&1; echo \$? >>\$R/attack.rc; done
t2=\$(date +%s%N)
echo \$(((t1 - t0) / 1000000)) \$(((t2 - t1) / 1000000)) >\$R/ms
cp $GX_DIR/flood.status \$R/st1
EOS
mkdir -p "$GX_DIR/out0"
pod_bg 0 "$GX_DIR/pod0.log" "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" --token-file "$T" -- sh "$GX_DIR/script.sh"
GX_PIDS[0]=$GX_PID
gx_wait_all 60 0 1 2
kill "$flood" 2>/dev/null
read -r clean attack <"$R/ms" 2>/dev/null
echo "stranger when rsh started: $(cat "$R/st0" 2>/dev/null); after: $(cat "$R/st1" 2>/dev/null)"
grep 'warning' "$GX_DIR/pod1.log" | head -n 5 | cut -c1-200
echo "5 x gxboot rsh: other pod $clean ms; the pod a stranger holds $CONNS connections to: $attack ms" \
  "(ratio $(awk -v a="${attack:-0}" -v b="${clean:-1}" 'BEGIN { printf "%.1f", a / b }')x)"
gx_expect_rc 0 0 1 2
o=$(sed -n 's/.*opened=\([0-9]*\).*/\1/p' "$R/st0" 2>/dev/null)
[ "${o:-0}" -ge "$CONNS" ] || fail "the stranger opened only '$(cat "$R/st0" 2>/dev/null)'" "$GX_DIR/flood.log"
[ "$(sort -u "$R/attack")" = job-worker-1 ] || fail "rsh under attack printed '$(sort -u "$R/attack" | head -n 3)'" "$GX_DIR/pod1.log"
[ "$(sort -u "$R/attack.rc")" = 0 ] || fail "rsh under attack exited '$(tr '\n' ' ' <"$R/attack.rc")'" "$GX_DIR/pod1.log"
[ "$(sort -u "$R/clean")" = job-worker-2 ] || fail "rsh to the other pod printed '$(sort -u "$R/clean" | head -n 3)'"
n_warn=$(grep -c 'warning' "$GX_DIR/pod1.log")
[ "$n_warn" -le 20 ] || fail "the attacked server printed $n_warn warnings (rate limit: 3 + one per 10 s)" "$GX_DIR/pod1.log"
