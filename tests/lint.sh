#!/usr/bin/env bash
# lint.sh - bans functions the house style forbids (STYLE.md 18).
set -uo pipefail
cd "$(dirname "$0")/.."
bad=0
files=$(git ls-files '*.c' '*.h' 2>/dev/null; find agent rdzv netdetect -name '*.c' -o -name '*.h')
files=$(printf '%s\n' $files | grep -v '^tests/' | sort -u)
for f in $files; do
  [ -f "$f" ] || continue
  if grep -nE '\b(atoi|sprintf|strcpy|getaddrinfo|sleep|usleep)[[:space:]]*\(' "$f" | grep -vE '(snprintf|vsnprintf|//|/\*)' ; then
    echo "lint: banned function in $f" >&2; bad=1
  fi
  # no sleeping anywhere (issue 29): waits are timers in the one event loop
  if grep -nE '\b(nanosleep|clock_nanosleep)[[:space:]]*\(|\bpoll[[:space:]]*\([[:space:]]*NULL|\bpoll[[:space:]]*\([^,]*,[[:space:]]*0[[:space:]]*,' "$f"; then
    echo "lint: a sleep in $f: use a gx_ev timer" >&2; bad=1
  fi
  if [ "$f" != agent/main.c ] && grep -nE '(^|[^_a-z])exit[[:space:]]*\(' "$f"; then
    echo "lint: exit() outside agent/main.c in $f" >&2; bad=1
  fi
done
[ $bad -eq 0 ] && echo "lint: ok"
exit $bad
