#!/usr/bin/env bash
# `gxboot rsh` behaves like ssh as mpirun uses it, through pods running
# `gxboot serve`; eth0 closed except DNS and the rendezvous port in every pod.
# Asserts: `serve` without a token exits 2 naming the token; then from the coordinator's CMD:
# HOST as a peer name, as its eth0 FQDN, as its eth0 address and as its net1 address all reach
# that pod (its hostname); words are joined as ssh does (the remote sh splits "a  b", expands
# '$GXBOOT_RANK' in the pod's own environment); stdin streams to the remote command; 50 MB of output arrive intact while the
# server's peak RSS stays under 32 MB; a remote `exit 7` gives 7; a remote kill -TERM gives
# 143; a signal to rsh reaches the remote command; a dropped client gets its remote process
# group killed; a wrong credential is refused with 255 and a log line on the server; an
# unknown host gives 255; `gxboot hosts` prints "net1:slots" for every peer.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
P=(--peers 'job-worker-{0..2}' --timeout 30 --slots 2)
# no token: refused at once
pod_exec 1 "$GXBOOT" serve "${P[@]}" --out "$GX_DIR/notok" >"$GX_DIR/notok.log" 2>&1 </dev/null
rc=$?
[ "$rc" = 2 ] && grep -q "needs a token" "$GX_DIR/notok.log" || fail "serve without a token exited $rc" "$GX_DIR/notok.log"
for i in 1 2; do gx_start "$i" serve "${P[@]}" --token-file "$T"; done
R=$GX_DIR/res
mkdir -p "$R"
printf 'key=%064d\nport=29412\n' 0 >"$R/bad.key"
chmod 600 "$R/bad.key"
cat >"$GX_DIR/script.sh" <<EOS
G=$GXBOOT; R=$R
\$G rsh job-worker-1 hostname >\$R/name 2>&1
\$G rsh $(pod_fqdn 2) hostname >\$R/fqdn 2>&1
\$G rsh $(pod_eth0 1) hostname >\$R/eth0 2>&1
\$G rsh -o StrictHostKeyChecking=no -x $(pod_net1 2) hostname >\$R/net1 2>&1
\$G rsh job-worker-1 echo "a  b" '\$GXBOOT_RANK' >\$R/join 2>&1
printf 'hello\\nworld\\n' | \$G rsh job-worker-2 'tr a-z A-Z' >\$R/stdin 2>&1
\$G rsh job-worker-1 'head -c 50000000 /dev/zero' | cksum >\$R/big 2>&1
\$G rsh job-worker-1 'test "\$(ps -o sid= -p \$\$ | tr -d " ")" = "\$\$" && echo own-session' >\$R/sid 2>&1
$PY -c 'import os, time
os.write(1, b"\\0" * 400000)
for _ in range(3000):
    os.write(1, b"x"); time.sleep(0.0002)' | timeout 30 \$G rsh job-worker-2 'sleep 1.5; wc -c' >\$R/burst 2>&1
awk '/VmHWM/ {print \$2}' /proc/${GX_PIDS[1]}/status >\$R/hwm
\$G rsh job-worker-2 exit 7; echo \$? >\$R/rc7
\$G rsh job-worker-2 'kill -TERM \$\$'; echo \$? >\$R/rc143
\$G rsh job-worker-1 'trap "echo got-int; exit 3" INT; echo ready; while :; do sleep 0.1; done' >\$R/sig 2>&1 &
p=\$!; for k in 1 2 3 4 5 6 7 8 9 10; do grep -q ready \$R/sig && break; sleep 0.3; done
kill -INT \$p; wait \$p; echo \$? >\$R/rcsig
\$G rsh job-worker-2 'echo \$\$ >/tmp/$GX_P.orphan; exec sleep 301' &
p=\$!; for k in \$(seq 50); do [ -s /tmp/$GX_P.orphan ] && break; sleep 0.1; done
kill -KILL \$p; wait \$p 2>/dev/null
GXBOOT_RSH_KEY_FILE=\$R/bad.key \$G rsh --out $GX_DIR/out0 job-worker-1 true 2>\$R/bad.err; echo \$? >\$R/rcbad
\$G rsh job-worker-9 true 2>\$R/unknown.err; echo \$? >\$R/rcunknown
\$G hosts --out $GX_DIR/out0 >\$R/hosts
sed 's/^port=.*/port=29413/' $GX_DIR/out0/rsh.key >\$R/late.key; chmod 600 \$R/late.key
GXBOOT_RSH_KEY_FILE=\$R/late.key \$G rsh --out $GX_DIR/out0 job-worker-2 hostname >\$R/late 2>\$R/late.err &
p=\$!; sleep 1
ip netns exec $(pod_ns 2) $PY $GX_DIR/relay.py $(pod_net1 2) 29413 29412 >\$R/relay.log 2>&1 &
r=\$!; wait \$p; echo \$? >\$R/rclate; kill \$r 2>/dev/null
EOS
# a serve that opens its port a moment after the client tries (serve starts
# listening after its own rendezvous, the launcher's mpirun starts at once): one relay from
# port 29413 to the real serve, started 1 s after the client
cat >"$GX_DIR/relay.py" <<'EOP'
import socket, sys, threading
addr, lport, dport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, lport)); ls.listen(1)
c, _ = ls.accept(); u = socket.create_connection((addr, dport))
def pump(a, b):
    while True:
        d = a.recv(65536)
        if not d:
            b.shutdown(socket.SHUT_WR); return
        b.sendall(d)
t = threading.Thread(target=pump, args=(u, c)); t.start(); pump(c, u); t.join()
EOP
mkdir -p "$GX_DIR/out0"
pod_bg 0 "$GX_DIR/pod0.log" "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" --token-file "$T" -- sh "$GX_DIR/script.sh"
GX_PIDS[0]=$GX_PID
gx_wait_all 90 0
gx_expect_rc 0 0
hwm=$(cat "$R/hwm" 2>/dev/null)
gx_wait_all 10 1 2
gx_expect_rc 0 1 2
chk() { [ "$(cat "$R/$1")" = "$2" ] || fail "$3: got '$(cat "$R/$1")', want '$2'" "$GX_DIR/pod1.log" "$GX_DIR/pod2.log"; }
chk name job-worker-1 "HOST as peer name"
chk fqdn job-worker-2 "HOST as eth0 FQDN"
chk eth0 job-worker-1 "HOST as eth0 address"
chk net1 job-worker-2 "HOST as net1 address with ssh flags"
chk join "a b 1" "ssh-style joining"
chk stdin "$(printf 'HELLO\nWORLD')" "stdin streaming"
chk big "$(head -c 50000000 /dev/zero | cksum)" "50 MB of output"
chk sid own-session "the remote command in a session of its own (setsid)"
# stdin frames read while the command's stdin was full, then nothing more on the socket:
# delivered when the command reads (the session hung before, review 2026-11-27)
chk burst 403000 "stdin burst past the pipe while the command sleeps"
chk rc7 7 "remote exit 7"
chk rc143 143 "remote kill -TERM"
chk rcsig 3 "SIGINT forwarded (the remote trap exits 3)"
grep -q got-int "$R/sig" || fail "the remote trap did not run" "$R/sig"
chk rcbad 255 "wrong credential"
grep -q "refused our credential" "$R/bad.err" || fail "wrong credential: no clear line" "$R/bad.err"
gx_expect_in 1 "refused .*wrong credential"
chk rcunknown 255 "unknown host"
chk rclate 0 "rsh to a serve that opened its port 1 s late (refused connects are retried)"
chk late job-worker-2 "rsh through the late port"
want=$(for i in 0 1 2; do echo "$(pod_net1 "$i"):2"; done)
chk hosts "$want" "gxboot hosts"
opid=$(cat "/tmp/$GX_P.orphan" 2>/dev/null); rm -f "/tmp/$GX_P.orphan"
[ -n "$opid" ] || fail "the dropped session never started"
! kill -0 "$opid" 2>/dev/null || fail "the dropped client's remote process $opid still runs" "$GX_DIR/pod2.log"
gx_expect_in 2 "ran 'echo': the client went away: session killed"
[ -n "$hwm" ] && [ "$hwm" -lt 32768 ] || fail "serve peak RSS ${hwm:-?} kB after 50 MB of output (bound: 32 MB)" "$GX_DIR/pod1.log"
echo "gxboot rsh: names, joining, stdin, 50 MB (serve peak RSS ${hwm} kB), exit codes, signals, drops, credentials, hosts OK"
