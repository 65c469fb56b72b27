#!/usr/bin/env bash
# Fault: symlinks planted in --out are not followed, on loopback (one-pod job).
# Before `gxboot init`, --out/env, env.json, hostfile and rendezvous.json are symlinks to files
# outside --out ("victims"), and a dangling symlink points where no file exists.
# Asserts: exit 0; every victim keeps its bytes and mtime; the dangling target is not created;
# each name in --out is now a regular file with gxboot's content (the link replaced, not
# followed). Then --out/env as a symlink to a directory: nothing is written inside it.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
GXBOOT=${GXBOOT:-build/gxboot}
[ -x "$GXBOOT" ] || { echo "SKIP: $GXBOOT not built"; exit 77; }
tmp=$(mktemp -d /tmp/gxflnk.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
port=$((20000 + ($$ * 13) % 9000)) # below the ephemeral range (32768-60999): a flood elsewhere holds those
fail() {
  echo "FAIL: $1"
  [ -z "${2:-}" ] || { echo "---- $2"; cat "$2"; }
  exit 1
}
mkdir -p "$tmp/out" "$tmp/victims"
for f in env env.json hostfile rendezvous.json; do
  printf 'VICTIM %s do not touch\n' "$f" >"$tmp/victims/$f"
  touch -d '2020-01-01 00:00:00' "$tmp/victims/$f"
  ln -s "$tmp/victims/$f" "$tmp/out/$f"
done
ln -s "$tmp/victims/created-through-link" "$tmp/out/.env.tmp"
sum_before=$(cd "$tmp/victims" && sha256sum env env.json hostfile rendezvous.json)
mt_before=$(stat -c '%n %Y' "$tmp/victims"/*)
"$GXBOOT" init --peers 127.0.0.1 --iface lo --port "$port" --timeout 10 --out "$tmp/out" \
  >"$tmp/log" 2>&1 </dev/null
rc=$?
[ $rc -eq 0 ] || fail "init exited $rc" "$tmp/log"
sum_after=$(cd "$tmp/victims" && sha256sum env env.json hostfile rendezvous.json)
[ "$sum_before" = "$sum_after" ] || fail "a victim file behind a planted symlink changed: $sum_after"
[ "$mt_before" = "$(stat -c '%n %Y' "$tmp/victims"/*)" ] || fail "a victim's mtime changed"
[ ! -e "$tmp/victims/created-through-link" ] || fail "a file was created through a dangling link"
for f in env env.json hostfile rendezvous.json; do
  [ -f "$tmp/out/$f" ] && [ ! -L "$tmp/out/$f" ] || fail "--out/$f is not a regular file now"
  grep -q VICTIM "$tmp/out/$f" && fail "--out/$f still shows the victim"
done
[ "$(env -i /bin/sh -c '. "$1" && echo "$NODE_RANK/$NNODES"' sh "$tmp/out/env")" = 0/1 ] ||
  fail "--out/env is not gxboot's" "$tmp/out/env"
echo "symlinks planted at --out/{env,env.json,hostfile,rendezvous.json}: not followed, replaced: OK"

# --out/env a symlink to a directory: still not followed (the directory is left alone)
rm -f "$tmp/out/env"
mkdir "$tmp/victims/dir"
ln -s "$tmp/victims/dir" "$tmp/out/env"
"$GXBOOT" init --peers 127.0.0.1 --iface lo --port "$port" --timeout 10 --out "$tmp/out" \
  >"$tmp/log" 2>&1 </dev/null
rc=$?
[ -z "$(ls -A "$tmp/victims/dir")" ] || fail "a file was written inside a directory a link pointed to"
echo "symlink to a directory at --out/env: exit $rc, directory untouched: OK"
