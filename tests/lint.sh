#!/usr/bin/env bash
# lint.sh [FILE...] - bans functions the house style forbids (see msg below) in the
# sources (every tracked .c/.h outside tests/, or the FILEs given, relative to
# LINT_ROOT, default the tree), and tracker numbers (refs_re) in every tracked file
# (lint_refs). `lint.sh --selftest` plants one bad file per rule
# and fails unless the lint catches each (so a rule cannot rot silently).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

# Connections read and write through gx_frame. Besides it: the transport report's netlink
# reads (sock_diag dumps, not a connection of ours).
sock_io_exempt='^rdzv/gx/gx_frame\.c$|^agent/fabric/fabric_tcp\.c$'

# One ban per index: the regex, the paths it allows (a regex; "" none), the message.
re=(
  '\b(atoi|sprintf|strcpy|sleep|usleep)[[:space:]]*\('
  '\b(nanosleep|clock_nanosleep)[[:space:]]*\(|\bpoll[[:space:]]*\([[:space:]]*NULL|\bpoll[[:space:]]*\([^,]*,[[:space:]]*0[[:space:]]*,'
  '\b(poll|ppoll|select|pselect|epoll_wait|epoll_pwait)[[:space:]]*\('
  '\b(getaddrinfo|gethostbyname2?|gethostbyname_r|gethostbyaddr|getnameinfo|res_n?query|res_n?search)[[:space:]]*\('
  '(^|[^_a-z])exit[[:space:]]*\('
  '\brdzv_rdma_probe_run[[:space:]]*\('
  '(->|\.|\bibv_)(get_cq_event|poll_cq)[[:space:]]*\('
  '(^|[^.>_[:alnum:]])(recv|send)[[:space:]]*\(|(^|[^.>_[:alnum:]])(read|write)[[:space:]]*\([^,]*(->|\.)fd\b'
)
exempt=(
  ''
  ''
  '^rdzv/gx/gx_ev\.c$'
  '^agent/peers/dns\.c$'
  '^agent/cli/main\.c$'
  '^rdzv/rdma/rdzv_rdma[a-z_]*\.c$'
  '^rdzv/rdma/rdzv_rdma_(wire|cm)\.c$'
  "$sock_io_exempt"
)
msg=(
  'banned function'
  'a sleep: use a gx_ev timer'
  'a wait outside the event loop (rdzv/gx/gx_ev.c): put the fd in the gx_ev loop'
  'a blocking DNS lookup: use agent_dns_start in the loop'
  'exit() outside agent/cli/main.c'
  'a blocking RDMA-CM probe: use rdzv_rdma_probe_start in the loop'
  'a completion-queue loop of its own: use rdzv_rdma_cq_drain (rdzv_rdma_wire.c)'
  'socket I/O of its own: read and write a connection through gx_frame (rdzv/gx/gx_frame.c)'
)

# Comments do not count: /* ... */ on one line, // to the end, and comment lines.
lint_files() {
  local bad=0 f k
  for f in "$@"; do
    [ -f "$f" ] || continue
    for k in "${!re[@]}"; do
      [ -n "${exempt[$k]}" ] && [[ $f =~ ${exempt[$k]} ]] && continue
      if sed -E 's#/\*.*\*/##g; s#//.*$##; s#^[[:space:]]*/?\*.*$##' "$f" | grep -nE "${re[$k]}"; then
        echo "lint: ${msg[$k]} in $f" >&2; bad=1
      fi
    done
  done
  return $bad
}

# References a reader who has only the repository cannot resolve: an issue number or a number
# in a decisions list kept elsewhere. Write the reason itself, in place. Upstream projects'
# bugs are named with their repository ("NVIDIA/nccl#1580"). refs_pending: paths (bash
# patterns) not swept yet, skipped for now; empty it once they are.
# the words are joined here, so that this line is not a reference itself
refs_words=('[Ii]ss''ue' 'DECI''SIONS')
refs_re="(${refs_words[0]}|${refs_words[1]}) [0-9]+"
refs_pending=()
# lint_refs FILE...: 1 and the lines when any of the files (pending ones left out) has one.
lint_refs() {
  local f p n=0 skipped=0 out
  local -a keep=()
  for f in "$@"; do
    [ -f "$f" ] || continue
    for p in "${refs_pending[@]}"; do
      # shellcheck disable=SC2053
      [[ $f == $p ]] && { skipped=$((skipped + 1)); continue 2; }
    done
    keep+=("$f")
  done
  if [ ${#keep[@]} -gt 0 ]; then
    out=$(grep -InE -- "$refs_re" "${keep[@]}")
    [ -n "$out" ] && { printf '%s\n' "$out"; n=$(printf '%s\n' "$out" | wc -l); }
  fi
  echo "lint: $n tracker references in ${#keep[@]} files ($skipped pending files not checked)" >&2
  [ "$n" -eq 0 ] || { echo "lint: write the reason in place of the number" >&2; return 1; }
}

selftest() {
  local tmp fail=0 bad ok
  tmp=$(mktemp -d /tmp/gxlint.XXXXXX) || return 1
  mkdir -p "$tmp/agent/cli" "$tmp/rdzv/gx" "$tmp/rdzv/rdma"
  # one file per rule that must be caught ...
  printf 'int f(void)\n{\n\treturn atoi("1");\n}\n' >"$tmp/agent/b_banned.c"
  printf 'void f(void)\n{\n\tpoll(NULL, 0, 20);\n}\n' >"$tmp/agent/b_sleep.c"
  printf 'void f(int fd)\n{\n\tstruct pollfd p = {fd, 1, 0};\n\tpoll(&p, 1, 100);\n}\n' >"$tmp/agent/b_poll.c"
  printf 'void f(void)\n{\n\tepoll_wait(3, 0, 1, -1);\n}\n' >"$tmp/rdzv/b_epoll.c"
  printf 'void f(void)\n{\n\tselect(1, 0, 0, 0, 0);\n}\n' >"$tmp/agent/b_select.c"
  printf 'void f(void)\n{\n\tgetaddrinfo("x", 0, 0, 0);\n}\n' >"$tmp/agent/b_gai.c"
  printf 'void f(void)\n{\n\tgethostbyname("x");\n}\n' >"$tmp/rdzv/b_ghbn.c"
  printf 'void f(void)\n{\n\texit(1);\n}\n' >"$tmp/agent/b_exit.c"
  printf 'void f(void)\n{\n\trdzv_rdma_probe_run(0, 0, 0, 0, 0, 0, 0);\n}\n' >"$tmp/agent/b_rdma.c"
  printf 'void f(void)\n{\n\twhile (cm->poll_cq(cq, 1, &wc) == 1)\n\t\t;\n}\n' >"$tmp/rdzv/b_cq.c"
  printf 'void f(void)\n{\n\tibv_get_cq_event(cc, &cq, &ctx);\n}\n' >"$tmp/agent/b_cqev.c"
  printf 'void f(int fd)\n{\n\trecv(fd, b, 4, 0);\n}\n' >"$tmp/agent/b_recv.c"
  printf 'void f(struct c *c)\n{\n\twrite(c->fd, b, 4);\n}\n' >"$tmp/rdzv/b_write.c"
  # ... and the exemptions and look-alikes that must pass
  printf 'void f(void)\n{\n\tepoll_wait(3, 0, 1, -1);\n}\n' >"$tmp/rdzv/gx/gx_ev.c"
  printf 'void f(void)\n{\n\tares_getaddrinfo(0, "x", 0, 0, 0, 0);\n}\n' >"$tmp/agent/ok_ares.c"
  printf 'void f(void)\n{\n\t/* poll(NULL, 0, 1) and getaddrinfo() are banned */\n\tgx_ev_poll_x();\n}\n' >"$tmp/agent/ok_comment.c"
  printf 'int main(void)\n{\n\texit(0);\n}\n' >"$tmp/agent/cli/main.c"
  printf 'int f(void)\n{\n\treturn cm->poll_cq(q->cq, 1, &wc);\n}\n' >"$tmp/rdzv/rdma/rdzv_rdma_wire.c"
  printf 'void f(int fd)\n{\n\tsend(fd, b, 4, 0);\n}\n' >"$tmp/rdzv/gx/gx_frame.c"
  printf 'void f(void)\n{\n\tw->cfg.send(w, 0);\n\tagent_send(0);\n\twrite(1, b, 4);\n}\n' >"$tmp/agent/ok_send.c"
  for bad in "$tmp"/*/b_*.c; do
    if (cd "$tmp" && lint_files "${bad#"$tmp"/}") >/dev/null 2>&1; then
      echo "lint selftest: ${bad#"$tmp"/} was not caught" >&2; fail=1
    fi
  done
  for ok in rdzv/gx/gx_ev.c agent/ok_ares.c agent/ok_comment.c agent/cli/main.c \
    rdzv/rdma/rdzv_rdma_wire.c rdzv/gx/gx_frame.c agent/ok_send.c; do
    if ! (cd "$tmp" && lint_files "$ok"); then
      echo "lint selftest: $ok was refused" >&2; fail=1
    fi
  done
  # references: caught in a source and a doc, an upstream's number and a pending path pass
  mkdir -p "$tmp/docs" "$tmp/agent/fabric"
  local ri='Iss''ue' rd='DECI''SIONS' # (spelled apart, or this file would be caught itself)
  printf '/* see %s %d */\n' "$ri" 26 >"$tmp/agent/r_issue.c"
  printf 'as %s %d says\n' "$rd" 6 >"$tmp/docs/r_decisions.md"
  printf '/* NCCL reads it once (NVIDIA/nccl#1580) */\n' >"$tmp/agent/r_upstream.c"
  printf '/* %s %d */\n' "$ri" 12 >"$tmp/agent/fabric/r_pending.c"
  for bad in agent/r_issue.c docs/r_decisions.md; do
    if (cd "$tmp" && lint_refs "$bad") >/dev/null 2>&1; then
      echo "lint selftest: the reference in $bad was not caught" >&2; fail=1
    fi
  done
  # the pending list is the selftest's own, so that it holds whether the real one is empty
  if ! (cd "$tmp" && refs_pending=('agent/fabric/*') &&
    lint_refs agent/r_upstream.c agent/fabric/r_pending.c) >/dev/null 2>&1; then
    echo "lint selftest: an upstream's number or a pending path was refused" >&2; fail=1
  fi
  rm -rf "$tmp"
  [ $fail -eq 0 ] && echo "lint selftest: ok"
  # the layering's own plants (tests/layers.py: faces, ranks, unranked folders, circles)
  python3 "$here/tests/layers.py" --selftest || fail=1
  return $fail
}

if [ "${1:-}" = --selftest ]; then
  selftest
  exit $?
fi
cd "${LINT_ROOT:-$here}" || exit 1
if [ $# -gt 0 ]; then
  files=$(printf '%s\n' "$@")
else
  files=$(git ls-files '*.c' '*.h' 2>/dev/null; find agent rdzv netdetect -name '*.c' -o -name '*.h')
  files=$(printf '%s\n' $files | grep -v '^tests/' | sort -u)
fi
# shellcheck disable=SC2086
lint_files $files
bad=$?
# references, in every tracked file (sources, tests, docs) or the FILEs given
if [ $# -gt 0 ]; then
  lint_refs "$@" || bad=1
else
  mapfile -t all < <(git ls-files 2>/dev/null || find . -path ./build -prune -o -path ./.git -prune -o -type f -print | sed 's#^\./##')
  lint_refs "${all[@]}" || bad=1
fi
# include rules (the layering): rdzv/gx is the base layer and the only part of rdzv that
# netdetect may include; rdzv never includes agent; rdzv/gx includes nothing of ours but itself;
# agent/fabric (the transport watcher) is given plain data by the pipeline: of ours it
# includes rdzv/gx and itself only.
for f in $files; do
  case $f in
  agent/fabric/*) pat='#include "(agent/[^f]|agent/f[^a]|netdetect/|rdzv/(rdzv|rdma/))' ;;
  netdetect/*) pat='#include "(agent/|rdzv/(rdzv|rdma/))' ;;
  rdzv/gx/*) pat='#include "(agent/|netdetect/|rdzv/(rdzv|rdma/))' ;;
  rdzv/*) pat='#include "agent/' ;;
  *) continue ;;
  esac
  if grep -nE "$pat" "$f"; then
    echo "lint: include rule broken in $f (netdetect, agent/fabric -> rdzv/gx only; rdzv -/-> agent)" >&2; bad=1
  fi
done
# module prefixes (one face per module): every symbol a module exports carries its prefix: agent_ in
# agent/, rdzv_ or gx_ in rdzv/, nd_ or netdetect_ in netdetect/ (main is the program's).
if [ -z "${LINT_NO_BUILD:-}" ]; then
  ${MAKE:-make} -s --no-print-directory MODE=debug build/debug/libgx.a \
    build/debug/agent/cli/main.o >/dev/null ||
    { echo "lint: cannot build build/debug/libgx.a for the prefix and layer checks" >&2; bad=1; }
fi
for f in $(git ls-files 'agent/*.c' 'rdzv/*.c' 'netdetect/*.c' | grep -v '^agent/cli/main\.c$'); do
  o=build/debug/${f%.c}.o
  [ -f "$o" ] || continue
  nm -g --defined-only "$o" | awk -v f="$f" '
    { s = $3; m = substr(f, 1, index(f, "/") - 1) }
    m == "agent" && s !~ /^agent_/ { print f ": " s; next }
    m == "rdzv" && s !~ /^(rdzv_|gx_)/ { print f ": " s; next }
    m == "netdetect" && s !~ /^(nd_|netdetect_)/ { print f ": " s }' | grep . &&
    { echo "lint: exported symbol without its module prefix in $f" >&2; bad=1; }
done
# the layering (tests/layers.py): faces, ranks and circles of files, from the same objects;
# it fails for agent/ (and a stale PENDING entry), and reports rdzv/ and netdetect/
python3 "$here/tests/layers.py" --root "$PWD" || bad=1
[ $bad -eq 0 ] && echo "lint: ok"
exit $bad
