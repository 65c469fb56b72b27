#!/usr/bin/env bash
# Fault: SIGTERM / SIGKILL during the wait, on loopback (peers 127.0.9.1-3, --iface lo,
# no namespaces needed).
# 1. A member waiting for a coordinator that never comes gets SIGTERM: exit 143, --out empty.
# 2. Coordinator and member mid-rendezvous (member joined, a third peer missing) both get
#    SIGKILL: --out holds nothing (no env, no temp file).
# 3. SIGKILL at a spread of moments around the end of a rendezvous (the file-writing window):
#    every visible file left in --out is complete (env sources, env.json parses).
# 4. A later run of the same 3 peers into the same --out dirs succeeds (exit 0, every file
#    there) and leaves no hidden ".NAME.*.tmp" of the killed runs (fault-1, fixed in e2ff587).
# (case_supervise covers SIGTERM to a waiting coordinator: 143.)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
GXBOOT=${GXBOOT:-build/gxboot}
[ -x "$GXBOOT" ] || { echo "SKIP: $GXBOOT not built"; exit 77; }
tmp=$(mktemp -d /tmp/gxfsig.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
port=$((20000 + ($$ * 7) % 9000)) # below the ephemeral range (32768-60999): a flood elsewhere holds those
fail() { echo "FAIL: $*"; exit 1; }
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"
chmod 600 "$tmp/token"
PEERS=127.0.9.1,127.0.9.2,127.0.9.3
# gx_bg I OUT [ARGS]: gxboot init as peer 127.0.9.I in the background; PID in $p
gx_bg() {
  local i=$1 out=$2
  shift 2
  "$GXBOOT" init --peers "$PEERS" --self "127.0.9.$i" --iface lo --port "$port" --timeout 20 \
    --token-file "$tmp/token" --out "$out" "$@" >>"$tmp/log.$i" 2>&1 &
  p=$!
  pids+=("$p")
}
# complete OUT: every visible file in OUT is whole (env sources, env.json parses); hidden
# ".NAME.*.tmp" temp files are counted apart (step 4)
complete() {
  local out=$1 f
  for f in "$out"/.* "$out"/*; do
    case "$(basename "$f")" in . | .. | '*' | '.*' | .*.tmp) continue ;; esac
    case "$(basename "$f")" in
    env) env -i /bin/sh -c '. "$1" && [ -n "$NODE_RANK" ]' sh "$f" || return 1 ;;
    env.json | rendezvous.json) /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" || return 1 ;;
    hostfile | hostfile.hydra) [ -s "$f" ] || return 1 ;;
    *) echo "unexpected file $f" >&2; return 1 ;;
    esac
  done
  return 0
}

# 1. member waiting, SIGTERM
gx_bg 2 "$tmp/m1"
sleep 1
kill -0 "$p" 2>/dev/null || fail "member ended before SIGTERM: $(cat "$tmp/log.2")"
kill -TERM "$p"
wait "$p"
rc=$?
[ $rc -eq 143 ] || fail "SIGTERM to a waiting member gave $rc (want 143): $(tail -2 "$tmp/log.2")"
[ -z "$(ls -A "$tmp/m1" 2>/dev/null)" ] || fail "files left after SIGTERM: $(ls -A "$tmp/m1")"
echo "SIGTERM to a waiting member: 143, --out empty: OK"

# 2. SIGKILL both mid-rendezvous (127.0.9.3 missing)
gx_bg 1 "$tmp/o1"
c=$p
gx_bg 2 "$tmp/o2"
m=$p
sleep 1.5
kill -0 "$c" 2>/dev/null && kill -0 "$m" 2>/dev/null || fail "a peer ended before SIGKILL: $(cat "$tmp"/log.*)"
kill -KILL "$c" "$m"
wait "$c" "$m" 2>/dev/null
for o in o1 o2; do
  [ -z "$(ls -A "$tmp/$o" 2>/dev/null)" ] || fail "files left after SIGKILL mid-rendezvous: $(ls -A "$tmp/$o")"
done
echo "SIGKILL mid-rendezvous: --out empty: OK"

# 3. SIGKILL all three at moments spread over the end of the rendezvous (the file-writing
# window): member 3 starts last, all get SIGKILL after a busy loop of D iterations (~1 us each).
# The --out dirs k1..k3 are kept from one try to the next, like a pod's emptyDir across restarts.
for d in 0 100 200 400 700 1000 1500 2000 3000 4000 6000 8000 12000 16000 24000 32000; do
  gx_bg 1 "$tmp/k1"
  c=$p
  gx_bg 2 "$tmp/k2"
  m2=$p
  sleep 0.3
  gx_bg 3 "$tmp/k3"
  m3=$p
  for ((k = 0; k < d; k++)); do :; done
  kill -KILL "$c" "$m2" "$m3" 2>/dev/null
  wait "$c" "$m2" "$m3" 2>/dev/null
  for o in k1 k2 k3; do
    [ -d "$tmp/$o" ] || continue
    complete "$tmp/$o" || fail "SIGKILL after $d loops left a partial (visible) file in $o: $(ls -lA "$tmp/$o")"
  done
done
left=$(find "$tmp/k1" "$tmp/k2" "$tmp/k3" -name '.*.tmp' 2>/dev/null | wc -l)
echo "SIGKILL around the writing window (16 moments): every visible file complete: OK" \
  "($left hidden temp files left by SIGKILL)"

# 4. a later run into the same --out dirs succeeds, and leaves a clean --out
for i in 3 2 1; do gx_bg "$i" "$tmp/k$i"; eval "w$i=\$p"; done
for i in 1 2 3; do
  eval "wait \$w$i"
  rc=$?
  [ $rc -eq 0 ] || fail "later run: peer $i exited $rc: $(tail -3 "$tmp/log.$i")"
  for f in env env.json rendezvous.json; do
    [ -s "$tmp/k$i/$f" ] || fail "later run: peer $i has no $f"
  done
done
[ -s "$tmp/k1/hostfile" ] || fail "later run: coordinator wrote no hostfile"
echo "later run after SIGTERM/SIGKILL: exit 0, every file written: OK"
# regression of fault-1 (fixed in e2ff587): a temp file of a SIGKILLed writer (.env.json.<pid>.<us>.tmp) stays in --out
# for ever: nothing removes it (agent/pipeline/out_files.c). Expected: a later run removes stale
# ".<name>.*.tmp" files of gxboot's own names, or writes through O_TMPFILE + linkat.
stale=$(find "$tmp/k1" "$tmp/k2" "$tmp/k3" -name '.*.tmp' 2>/dev/null)
[ -z "$stale" ] || fail "regression of fault-1 (fixed in e2ff587): temp files of a SIGKILLed run still in --out after a later successful run: $(echo $stale)"
for i in 1 2 3; do complete "$tmp/k$i" || fail "later run: peer $i files incomplete"; done
echo "no stale temp file in --out: OK"
