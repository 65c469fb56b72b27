#!/usr/bin/env bash
# Issue 25 finding 3: a stranger without the token holds 1000 connections to one pod's remote
# exec port (net1:29412), each sending the rsh HELLO (magic + nonce) and then nothing, from 150
# source addresses; every connection the server closes is reopened at once. Before issue 25
# the server closed new connections once 128 were open (each may idle 10 s), so `gxboot rsh`
# got "Connection reset" and exit 255 (mpirun could not start).
# Asserts: from the coordinator's CMD, 5 `gxboot rsh job-worker-1 hostname` under attack all
# print job-worker-1 and exit 0; the stranger really opened its 1000 connections; the attacked
# server's warnings are rate-limited (first 3, then one summary line per 10 s). Printed: the
# time of the 5 calls to the attacked pod vs the same 5 to the other serving pod (no timing
# assertion, DECISIONS 27).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_skip_unless serve
gx_need_gxboot
S=3 # the stranger's pod
CONNS=${GX_FLOOD_CONNS:-1000}
cluster_create 4 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..2}' --timeout 30)
B=$(pod_net1 1)
SRCS=""
for k in $(seq 100 249); do
  ip -n "$(pod_ns $S)" addr add "${B%.*}.$k/24" dev net1 noprefixroute 2>/dev/null
  SRCS="$SRCS ${B%.*}.$k"
done
cat >"$GX_DIR/flood.py" <<'PYEOF'
# flood.py STATUSFILE DST CONNS SRC... : CONNS connections to DST:29412 (round robin over the
# sources), each sending the rsh HELLO and then nothing; closed ones are reopened at once,
# refused ones (the server not up yet) after 50 ms. STATUSFILE: "open=N opened=N closed=N".
import os, resource, selectors, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
status, dst, conns, srcs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
sel = selectors.DefaultSelector()
opened = closed = 0
later = []
def start(k):
    global opened
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    s.bind((srcs[k % len(srcs)], 0))
    s.connect_ex((dst, 29412))
    sel.register(s, selectors.EVENT_WRITE, [k, "connecting"])
    opened += 1
for k in range(conns):
    start(k)
last = 0
while True:
    for key, ev in sel.select(0.1):
        s, (k, state) = key.fileobj, key.data
        if state == "connecting":
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                sel.unregister(s); s.close(); later.append((time.time() + 0.05, k)); continue
            try:
                s.send(b"GXRSH1\n\0" + os.urandom(32))
            except OSError:
                pass
            sel.modify(s, selectors.EVENT_READ, [k, "open"])
            continue
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:
            closed += 1
            sel.unregister(s); s.close(); start(k)
    now = time.time()
    for t, k in [x for x in later if x[0] <= now]:
        later.remove((t, k)); start(k)
    if time.time() - last > 0.5:
        last = time.time()
        n = sum(1 for key in sel.get_map().values() if key.data[1] == "open")
        with open(status + ".new", "w") as f:
            f.write("open=%d opened=%d closed=%d\n" % (n, opened, closed))
        os.replace(status + ".new", status)
PYEOF
# shellcheck disable=SC2086
pod_bg "$S" "$GX_DIR/flood.log" "$PY" -u "$GX_DIR/flood.py" "$GX_DIR/flood.status" "$B" "$CONNS" $SRCS
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
