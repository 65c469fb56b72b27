#!/usr/bin/env bash
# `gxboot exec` trusts --out/env only as far as gxboot wrote it. No
# network: a directory on this machine.
# Asserts: an env file that also sets LD_PRELOAD, BASH_ENV or PATH is refused (exit 2, the
# name in the line, CMD not run); --out reached through a symlink, an env file writable by
# others or (as root) owned by another user even in a 0777 --out, and (as root) an --out owned
# by another user are refused (exit 2); the untouched file runs CMD with gxboot's variables
# (exit 0), also in a 0777 --out (a Kubernetes emptyDir).
# On c43d6af every hostile variant ran CMD with the planted variables.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
gx_need_gxboot
D=$(mktemp -d /tmp/gxexec.XXXXXX)
trap 'rm -rf "$D"' EXIT
good="export MASTER_ADDR='192.168.9.10'
export MASTER_PORT='29500'
export NODE_RANK='1'
export NNODES='2'"
mk() { # mk NAME EXTRA : a fresh --out with the env file, mode 0700 / 0644
  rm -rf "${D:?}/$1"
  mkdir -m 0700 "$D/$1"
  printf '%s\n%s' "$good" "$2" >"$D/$1/env"
  chmod 0644 "$D/$1/env"
}
run() { # run NAME : gxboot exec --out D/NAME -- env; RC, OUT
  OUT=$(env -u LD_PRELOAD -u BASH_ENV "$GXBOOT" exec --out "$D/$1" -- /usr/bin/env 2>&1)
  RC=$?
}
expect_refused() { # expect_refused NAME WHAT PATTERN
  run "$1"
  [ "$RC" = 2 ] || fail "$2: exit $RC (want 2): $(echo "$OUT" | grep -E 'LD_PRELOAD|BASH_ENV|PATH=/evil|gxboot' | head -n 3)"
  echo "$OUT" | grep -q "MASTER_ADDR=" && fail "$2: CMD ran"
  echo "$OUT" | grep -Eq "$3" || fail "$2: the line lacks /$3/: $OUT"
}
mk ok ""
run ok
[ "$RC" = 0 ] && echo "$OUT" | grep -qx "MASTER_ADDR=192.168.9.10" || fail "the untouched file: exit $RC: $OUT"
mk preload "export LD_PRELOAD='/nonexistent/evil.so'
"
expect_refused preload "LD_PRELOAD in env" "sets LD_PRELOAD"
mk bashenv "export BASH_ENV='/tmp/evil.sh'
"
expect_refused bashenv "BASH_ENV in env" "sets BASH_ENV"
mk path "export PATH='/evil:/usr/bin'
"
expect_refused path "PATH in env" "sets PATH"
mk real ""
ln -s "$D/real" "$D/link"
expect_refused link "--out through a symlink" "symlink"
# a world-writable --out (the shape of a Kubernetes emptyDir: root's, 0777) is judged by its
# files: gxboot's own env runs, one that another user planted there is refused
mk wide ""
chmod 0777 "$D/wide"
run wide
[ "$RC" = 0 ] && echo "$OUT" | grep -qx "MASTER_ADDR=192.168.9.10" || fail "0777 --out with gxboot's file: exit $RC: $OUT"
if [ "$(id -u)" = 0 ]; then
  chown 65534:65534 "$D/wide/env"
  expect_refused wide "env planted in a 0777 --out by another user" "another user"
fi
mk envwide ""
chmod 0666 "$D/envwide/env"
expect_refused envwide "env writable by others" "writable by group or others"
if [ "$(id -u)" = 0 ]; then
  mk foreign ""
  chown -R 65534:65534 "$D/foreign"
  expect_refused foreign "--out owned by another user" "another user"
fi
echo "gxboot exec: planted LD_PRELOAD / BASH_ENV / PATH, symlinked, shared and foreign --out refused; the written file runs"
