#!/usr/bin/env bash
# --out moved under a running gxboot, on loopback (one-pod job). --out is a subfolder of a
# directory every user can write without the sticky bit (a shared volume, 0777); an
# unprivileged user (uid 65534) swaps --out with a symlink of its own to a root-owned 0700
# directory, with renameat2(RENAME_EXCHANGE), in a loop (out_racer.py), while root runs
# `gxboot init` 20 times, and `gxboot exec` 20 times.
# Asserts: nothing is written outside --out (the 0700 directory stays empty) and every run
# either exits 0 or refuses with exit 2 naming the writable parent; the racer really swapped.
# On 9740b38 init wrote env, env.json, hostfile or rendezvous.json into the 0700 directory
# in 19 of 20 runs.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
GXBOOT=${GXBOOT:-build/gxboot}
[ -x "$GXBOOT" ] || { echo "SKIP: $GXBOOT not built"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (the racer runs as uid 65534)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv not installed"; exit 77; }
tmp=$(mktemp -d /tmp/gxfswap.XXXXXX)
racer=
cleanup() {
  [ -n "$racer" ] && kill "$racer" 2>/dev/null && wait "$racer" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $1"
  [ -z "${2:-}" ] || { echo "---- $2"; cat "$2"; }
  exit 1
}
port=$((20000 + ($$ * 17) % 9000)) # below the ephemeral range (32768-60999)
chmod 0755 "$tmp"
mkdir -m 0777 "$tmp/shared" # a shared volume: anyone writes, no sticky bit
chmod 0777 "$tmp/shared"
mkdir -m 0700 "$tmp/victim"
mkdir "$tmp/shared/out"
cp "$(dirname "$0")/out_racer.py" "$tmp/racer.py"
chmod 0644 "$tmp/racer.py"
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
  /usr/bin/python3 -u "$tmp/racer.py" "$tmp/shared" out "$tmp/victim" >"$tmp/racer.log" 2>&1 &
racer=$!
for _ in $(seq 1 50); do grep -q ready "$tmp/racer.log" && break; sleep 0.1; done
grep -q ready "$tmp/racer.log" || fail "the racer did not start" "$tmp/racer.log"

n0=0 n2=0
for k in $(seq 1 20); do
  "$GXBOOT" init --peers 127.0.0.1 --iface lo --port "$port" --timeout 10 --out "$tmp/shared/out" \
    >"$tmp/init.$k.log" 2>&1 </dev/null
  rc=$?
  case $rc in
  0) n0=$((n0 + 1)) ;;
  2)
    n2=$((n2 + 1))
    grep -q "writable by group or others without the sticky bit" "$tmp/init.$k.log" ||
      grep -q "refusing --out" "$tmp/init.$k.log" || fail "init run $k: exit 2 without a refusal" "$tmp/init.$k.log"
    ;;
  *) fail "init run $k exited $rc (want 0 or 2)" "$tmp/init.$k.log" ;;
  esac
  [ -z "$(ls -A "$tmp/victim")" ] || fail "init run $k wrote outside --out: $(ls -A "$tmp/victim")" "$tmp/init.$k.log"
done
echo "init, 20 runs while --out is swapped with a symlink: $n0 exited 0, $n2 refused; nothing written outside --out"
tail -n 1 "$tmp/init.1.log"

# exec reads --out/env: a planted env behind the symlink must never be applied
printf "export MASTER_ADDR='6.6.6.6'\n" >"$tmp/victim/env"
chmod 0644 "$tmp/victim/env"
e0=0 e2=0
for k in $(seq 1 20); do
  "$GXBOOT" exec --out "$tmp/shared/out" -- /bin/sh -c 'echo "MASTER_ADDR=$MASTER_ADDR"' \
    >"$tmp/exec.$k.log" 2>&1 </dev/null
  rc=$?
  grep -q 'MASTER_ADDR=6.6.6.6' "$tmp/exec.$k.log" && fail "exec run $k applied the env behind the symlink" "$tmp/exec.$k.log"
  case $rc in 0) e0=$((e0 + 1)) ;; 2) e2=$((e2 + 1)) ;; *) fail "exec run $k exited $rc" "$tmp/exec.$k.log" ;; esac
done
kill "$racer" 2>/dev/null
wait "$racer" 2>/dev/null
racer=
swaps=$(sed -n 's/^swaps=//p' "$tmp/racer.log")
echo "exec, 20 runs: $e0 exited 0, $e2 refused; the racer swapped --out ${swaps:-?} times"
[ "${swaps:-0}" -gt 0 ] || fail "the racer never swapped" "$tmp/racer.log"
