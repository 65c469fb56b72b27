#!/usr/bin/env bash
# Exec and PID-1 duties, on loopback (a one-pod job: --peers 127.0.0.1 --iface lo).
# Asserts: CMD's exit code comes back (and 128+n for a signal); SIGTERM to gxboot reaches
# CMD's process group and its exit code comes back, and so does every other signal (SIGALRM);
# an inherited SIGCHLD SIG_IGN changes nothing; CMD gets the terminal; as PID 1 of a PID
# namespace, orphaned zombies are reaped; exec failures give 127 / 126, supervised with the
# termination log's line; SIGTERM while waiting for peers ends gxboot at once with 143 and
# leaves no files.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
GXBOOT=${GXBOOT:-build/gxboot}
[ -x "$GXBOOT" ] || { echo "SKIP: $GXBOOT not built"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (unshare -p)"; exit 77; }
tmp=$(mktemp -d /tmp/gxsup.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
port=$((20000 + $$ % 9000)) # below the ephemeral range (32768-60999): a flood elsewhere holds those
fail() { echo "FAIL: $*"; exit 1; }
gx() { # gx OUTDIR ARGS... : a one-pod job on loopback
  local out=$1
  shift
  "$GXBOOT" --peers 127.0.0.1 --iface lo --port "$port" --timeout 10 --out "$out" -q "$@"
}

# 1. exit codes: plain exec and supervised, normal and by signal
gx "$tmp/o1" -- sh -c 'exit 3'; rc=$?
[ $rc -eq 3 ] || fail "exec: CMD exit 3 gave $rc"
gx "$tmp/o2" --supervise -- sh -c 'exit 4'; rc=$?
[ $rc -eq 4 ] || fail "supervise: CMD exit 4 gave $rc"
gx "$tmp/o3" --supervise -- sh -c 'kill -KILL $$'; rc=$?
[ $rc -eq 137 ] || fail "supervise: CMD killed by SIGKILL gave $rc (want 137)"
echo "exit codes: OK"

# 2. a signal to gxboot reaches CMD's process group; CMD's own code returned
# (not through gx(): $! of a backgrounded function is a bash subshell, not gxboot)
fwd_check() { # fwd_check SIG CODE OUT: CMD traps SIG and exits CODE
  local sig=$1 code=$2 out=$3 p rc
  "$GXBOOT" --peers 127.0.0.1 --iface lo --port "$port" --timeout 10 --out "$tmp/$out" -q \
    --supervise -- sh -c "trap 'echo got-$sig; exit $code' $sig; echo trap-set; sleep 30 & wait" \
    >"$tmp/$out.log" 2>&1 &
  p=$!
  pids+=("$p")
  # CMD's trap is in place (waited for, not slept for: a signal before it ends sh)
  for _ in $(seq 100); do grep -q trap-set "$tmp/$out.log" && break; sleep 0.1; done
  kill -"$sig" "$p"
  wait "$p"; rc=$?
  grep -q "got-$sig" "$tmp/$out.log" || fail "SIG$sig did not reach CMD: $(cat "$tmp/$out.log")"
  [ $rc -eq "$code" ] || fail "forwarded SIG$sig: gxboot exited $rc (want CMD's $code)"
}
fwd_check TERM 7 o4
echo "signal forwarding: OK"

# 2b. every signal is CMD's, not only the 7 gxboot used to forward (SIGALRM ended a
# supervising gxboot and orphaned CMD); an inherited SIGCHLD SIG_IGN does not hide CMD's exit
fwd_check ALRM 9 o4b
timeout -k 5 20 /usr/bin/python3 -c 'import signal, os, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$GXBOOT" --peers 127.0.0.1 --iface lo --port "$port" \
  --timeout 10 --out "$tmp/o4c" -q --supervise -- sh -c 'exit 7'
rc=$?
[ $rc -eq 7 ] || fail "SIGCHLD ignored by the parent: gxboot exited $rc (want CMD's 7)"
# a terminal, gxboot PID 1 and session leader (a pod with tty: true; setsid -c as a runtime
# does): CMD's process group gets it (else a CMD that reads it stops on SIGTTIN for ever);
# under a shell's job control gxboot keeps it
if command -v script >/dev/null; then
  (sleep 1; echo hi) | timeout -k 5 20 script -qec "unshare -fp --mount-proc setsid -c $GXBOOT \
    --peers 127.0.0.1 --iface lo --port $port --timeout 10 --out $tmp/o4d -q -- \
    sh -c 'read x; echo got-\$x'" /dev/null >"$tmp/tty.log" 2>&1
  rc=$?
  grep -q got-hi "$tmp/tty.log" || fail "CMD could not read the terminal (rc $rc): $(cat "$tmp/tty.log")"
fi
echo "every signal, SIGCHLD ignored, terminal: OK"

# 3. PID 1 of a PID namespace: orphans reaped, no zombie left
out=$(unshare -fp --mount-proc "$GXBOOT" --peers 127.0.0.1 --iface lo --port "$port" \
  --timeout 10 --out "$tmp/o5" -q -- sh -c \
  'for i in 1 2 3; do sh -c "sleep 0.2 &"; done; sleep 1; ps -eo stat= | grep -c "^Z"; true')
rc=$?
[ $rc -eq 0 ] || fail "PID 1 run exited $rc"
[ "$(echo "$out" | tail -1)" = 0 ] || fail "zombies left under gxboot as PID 1: $out"
echo "PID 1 reaping: OK"

# 4. exec failures as a shell reports them
gx "$tmp/o6" -- /nonexistent/cmd 2>/dev/null; rc=$?
[ $rc -eq 127 ] || fail "missing CMD gave $rc (want 127)"
printf 'x' >"$tmp/notexec"
gx "$tmp/o7" -- "$tmp/notexec" 2>/dev/null; rc=$?
[ $rc -eq 126 ] || fail "non-executable CMD gave $rc (want 126)"
# supervised (as PID 1 in a pod), the failure is the termination log's line too: the
# parent sees only 127 (a /dev of our own in a mount namespace, for the log to exist)
unshare -m bash -c "mount -t tmpfs -o size=1m gxdev /dev && mknod -m 666 /dev/null c 1 3 &&
  touch /dev/termination-log && $GXBOOT --peers 127.0.0.1 --iface lo --port $port --timeout 10 \
  --out $tmp/o7b -q --supervise -- /nonexistent/cmd 2>/dev/null; echo rc=\$?;
  cat /dev/termination-log" >"$tmp/tlog" 2>&1
grep -q '^rc=127$' "$tmp/tlog" || fail "supervised missing CMD: $(cat "$tmp/tlog")"
grep -q '^gxboot: cannot run /nonexistent/cmd' "$tmp/tlog" ||
  fail "no termination-log line for a supervised exec failure: $(cat "$tmp/tlog")"
echo "exec failures: OK"

# 5. SIGTERM while waiting for a peer that never comes: 143, no files
"$GXBOOT" --peers 127.0.0.1,127.0.0.2 --self 127.0.0.1 --iface lo --port "$port" --timeout 30 \
  --out "$tmp/o8" -q -- true >"$tmp/wait.log" 2>&1 &
p=$!
pids+=("$p")
sleep 1
kill -TERM "$p"
wait "$p"; rc=$?
[ $rc -eq 143 ] || fail "SIGTERM while waiting gave $rc (want 143)"
[ -z "$(ls -A "$tmp/o8" 2>/dev/null)" ] || fail "files left after SIGTERM: $(ls -A "$tmp/o8")"
echo "SIGTERM while waiting: OK"
