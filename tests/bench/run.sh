#!/usr/bin/env bash
# run.sh [--smoke]: gxboot's measured speed, memory and size (issue 10), one table.
# Not a timed test: absolute figures are this machine's; ratios are measured in one run.
#   (a) N real `gxboot init` processes on loopback (N = 2, 8, 64, 256)
#   (b) the real coordinator process against members driven by the real member code in
#       2 processes (N = 1024, 8192, 16384), inside a private network namespace whose
#       somaxconn / tcp_max_syn_backlog are raised (DECISIONS 30)
#   (c) torchrun 1.13 c10d rendezvous with a trivial script (N = 2, 4, 8), timed the same way
# --smoke: tiny N only, prints one PASS/FAIL line (make check runs it). BENCH_ONLY=a: (a) only.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LC_ALL=C
smoke=0
[ "${1:-}" = --smoke ] && smoke=1
GXBOOT=${GXBOOT:-build/gxboot}
BENCH=build/release/bench/bench_rdzv
REPS=${REPS:-5}
tmp=$(mktemp -d /tmp/gxbench.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
now_us() { echo $(($(date +%s%N) / 1000)); }
stats() { # stats V... -> "median p90" (ms, one decimal)
  printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {m=v[int((NR+1)/2)]; p=v[int(NR*0.9+0.999)]; if(p=="")p=v[NR]; printf "%.1f %.1f", m/1000, p/1000}'
}

# (a) one run of N gxboot init processes; echoes the latency in us after the last start
gx_run() {
  local n=$1 port=$2 peers="" i t_last rc=0
  for i in $(seq 1 "$n"); do peers+="${peers:+,}127.0.9.$i"; done
  pids=()
  for i in $(seq "$n" -1 1); do # coordinator (127.0.9.1) last
    /usr/bin/time -f %M -o "$tmp/rss.$i" "$GXBOOT" init --peers "$peers" --self "127.0.9.$i" \
      --iface lo --port "$port" --timeout 30 --out "$tmp/out.$i" --token-file "$tmp/token" -q \
      2>"$tmp/err.$i" &
    pids+=($!)
  done
  t_last=$(now_us)
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  pids=()
  [ $rc -eq 0 ] || { cat "$tmp"/err.* | tail -3 >&2; echo fail; return; }
  echo $(($(now_us) - t_last))
}

# (c) one torchrun c10d rendezvous of N nodes with a trivial script
torch_run() {
  local n=$1 port=$2 i t_last rc=0
  pids=()
  for i in $(seq 0 $((n - 1))); do
    PET_REDIRECTS=1 PET_TEE=1 /usr/bin/python3 -m torch.distributed.run --nnodes "$n" \
      --nproc_per_node 1 --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:$port" \
      --rdzv_id "b$port" --redirects 1 --tee 1 "$tmp/trivial.py" >/dev/null 2>&1 &
    pids+=($!)
  done
  t_last=$(now_us)
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  pids=()
  [ $rc -eq 0 ] || { echo fail; return; }
  echo $(($(now_us) - t_last))
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"
chmod 600 "$tmp/token"
echo 'pass' >"$tmp/trivial.py"
[ -x "$GXBOOT" ] || { echo "FAIL bench: $GXBOOT not built"; exit 1; }
[ -x "$BENCH" ] || make --no-print-directory MODE=release "$BENCH" >/dev/null || exit 1
port=$((10000 + $$ % 10000)) # below the ephemeral range

if [ $smoke -eq 1 ]; then
  a=$(gx_run 2 "$port")
  b=$("$BENCH" 64 2 2>&1)
  if [ "$a" != fail ] && [[ "$b" == *failed=0* ]]; then
    echo "PASS bench smoke (2 gxboot init: $((a / 1000)) ms; $b)"
  else
    echo "FAIL bench smoke: a=$a b=$b"; exit 1
  fi
  exit 0
fi

echo "gxboot bench — $(nproc) cores, $(uname -sr), $(date -u +%F); absolute times are this machine's"
echo "binary: $(stat -c %s "$GXBOOT") bytes stripped static ($GXBOOT)"
echo
echo "(a) N gxboot init processes on loopback, latency after the last start until all exit (ms), $REPS runs"
printf '%8s %10s %8s %16s %16s\n' N median p90 coord_rss_kb member_rss_kb
declare -A GX_MED
for n in 2 8 64 256; do
  vals=()
  for r in $(seq "$REPS"); do
    port=$((port + 1))
    v=$(gx_run "$n" "$port")
    [ "$v" = fail ] && { echo "  N=$n run $r failed"; continue; }
    vals+=("$v")
  done
  [ ${#vals[@]} -gt 0 ] || continue
  read -r med p90 <<<"$(stats "${vals[@]}")"
  GX_MED[$n]=$med
  printf '%8s %10s %8s %16s %16s\n' "$n" "$med" "$p90" "$(cat "$tmp/rss.1")" "$(cat "$tmp/rss.2")"
done
[ "${BENCH_ONLY:-}" = a ] && exit 0
echo
echo "(b) coordinator process vs members in 2 processes (real member code), private netns"
for n in 1024 8192 16384; do
  reps=$REPS
  [ "$n" -ge 16384 ] && reps=3
  unshare -n bash -c "ip link set lo up; sysctl -qw net.core.somaxconn=65535 \
    net.ipv4.tcp_max_syn_backlog=65535; ulimit -n \$(ulimit -Hn); \
    echo \"  netns: somaxconn=\$(sysctl -n net.core.somaxconn) \
tcp_max_syn_backlog=\$(sysctl -n net.ipv4.tcp_max_syn_backlog) nofile=\$(ulimit -n)\"; \
    for r in \$(seq $reps); do $BENCH $n 2; done" 2>&1 | sed 's/^/  /' | tee "$tmp/b.$n" | head -1
  lat=$(grep -o 'latency_ms=[0-9.]*' "$tmp/b.$n" | cut -d= -f2 | sort -n)
  nrun=$(echo "$lat" | grep -c .)
  med=$(echo "$lat" | awk -v n="$nrun" 'NR==int((n+1)/2)')
  p90=$(echo "$lat" | awk -v n="$nrun" 'NR==int(n*0.9+0.999)')
  fails=$(grep -c 'failed=[1-9]' "$tmp/b.$n")
  crss=$(grep -o 'coord_peak_rss_kb=[0-9]*' "$tmp/b.$n" | cut -d= -f2 | sort -n | tail -1)
  mrss=$(grep -o 'member_proc_peak_rss_kb=[0-9]*' "$tmp/b.$n" | cut -d= -f2 | sort -n | tail -1)
  echo "  N=$n: median ${med} ms, p90 ${p90} ms over $nrun runs, failed runs $fails," \
    "coordinator peak RSS ${crss} kB, member process peak RSS ${mrss} kB ($((n / 2)) members)"
done
echo
echo "(c) torchrun c10d rendezvous (torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)), same timing, $REPS runs"
printf '%8s %10s %8s %14s\n' N median p90 torchrun/gxboot
for n in 2 4 8; do
  vals=()
  for r in $(seq "$REPS"); do
    port=$((port + 1))
    v=$(torch_run "$n" "$port")
    [ "$v" = fail ] && { echo "  N=$n run $r failed"; continue; }
    vals+=("$v")
  done
  [ ${#vals[@]} -gt 0 ] || continue
  read -r med p90 <<<"$(stats "${vals[@]}")"
  gxm=${GX_MED[$n]:-}
  if [ -z "$gxm" ]; then
    port=$((port + 1))
    v=$(gx_run "$n" "$port")
    gxm=$(awk -v v="$v" 'BEGIN{printf "%.1f", v/1000}')
  fi
  printf '%8s %10s %8s %13.0fx\n' "$n" "$med" "$p90" "$(awk -v a="$med" -v b="$gxm" 'BEGIN{print a/b}')"
done
