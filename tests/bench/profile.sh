#!/usr/bin/env bash
# profile.sh [N]: the coordinator's cost per member (issue 26): bench_rdzv N 2 once under
# strace (the coordinator process only is counted: syscalls per member by name) and
# once plain (CPU us per member: user + system, getrusage). Needs strace; run as root for
# the private netns (somaxconn raised as in run.sh (b)), else on the host's loopback.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LC_ALL=C
n=${1:-1024}
BENCH=${BENCH_BUILD:-build}/release/bench/bench_rdzv
command -v strace >/dev/null || { echo "profile: strace not installed"; exit 0; }
make --no-print-directory MODE=release BUILD="${BENCH_BUILD:-build}" "$BENCH" >/dev/null ||
  { echo "profile: cannot build $BENCH"; exit 1; }
tmp=$(mktemp -d /tmp/gxprof.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ns() { # ns CMD: in a fresh netns with raised backlogs when root
  if [ "$(id -u)" -eq 0 ]; then
    unshare -n bash -c "ip link set lo up; sysctl -qw net.core.somaxconn=65535 \
      net.ipv4.tcp_max_syn_backlog=65535; ulimit -n \$(ulimit -Hn); $1"
  else
    bash -c "$1"
  fi
}
plain=$(ns "$BENCH $n 2" 2>&1 | grep '^N=')
ns "strace -f -qq -o $tmp/st $BENCH $n 2 >$tmp/out 2>&1"
# the coordinator is the bench's first child: the first pid after the parent's in the trace
parent=$(head -1 "$tmp/st" | awk '{print $1}')
coord=$(awk -v p="$parent" '$1 != p {print $1; exit}' "$tmp/st")
cpu=$(echo "$plain" | grep -o 'coord_cpu_ms=[0-9]*' | cut -d= -f2)
echo "coordinator profile at N=$n (members in 2 processes; $(cut -d' ' -f1-3 /proc/loadavg) load)"
echo "  plain run: $plain"
awk -v c="$coord" -v n="$n" '$1 == c && $2 ~ /^[a-z_0-9]+\(/ {
    s = $2; sub(/\(.*/, "", s); k[s]++; t++ }
  END { printf "  syscalls per member: %.1f (", t / (n - 1);
    for (s in k) if (k[s] / (n - 1) >= 0.05) printf " %s=%.2f", s, k[s] / (n - 1); print " )" }' \
  "$tmp/st"
[ -n "$cpu" ] && echo "  CPU per member: $((cpu * 1000 / (n - 1))) us (user + system, no strace)"
