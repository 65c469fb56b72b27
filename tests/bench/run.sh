#!/usr/bin/env bash
# run.sh [--smoke]: gxboot's measured speed, memory and size; ends with one table that reads
# every scale row against its floor. Not a timed test: absolute figures are this machine's
# (2 cores that the members share with the coordinator); the ratios are measured in one run.
#   (a) N real `gxboot init` processes on loopback (N = 2, 8, 64, 256)
#   (b) the real coordinator process against members driven by the real member code in
#       BENCH_PROCS processes (default N/256, 2 to 64: 4, 32, 64 for N = 1024, 8192, 16384),
#       inside a private network namespace whose somaxconn / tcp_max_syn_backlog are raised
#       (a pod cannot raise them, the bench can: it measures gxboot, not the default
#       backlog); N=16384 REPS_16K times (default 10) with a busy loop per core (a loaded
#       machine: 0 resets, p90 <= 1.5x the median). A pod is one process: with 2 processes
#       of 8192 members each, the bench's own members sent their HELLO seconds late and the
#       coordinator closed them (16,452 resets in one run), which no real pod does; with
#       1024 each, 14 resets in 10 runs; with 256 each, none
#   (c) torchrun 1.13 c10d rendezvous with a trivial script (N = 2, 4, 8), timed the same way
#   (d) time from execve of a member `gxboot init` to its first packet at the coordinator's
#       port (bench_boot owns the listening socket), CLOCK_MONOTONIC
#   (e) DNS: a member resolving the coordinator's name through c-ares at a dnsmasq on
#       127.0.0.1 (high port, --no-resolv, addn-hosts) whose record appears DELAY ms late
#       (file rewritten + SIGHUP): the lag from the record's appearance to the member's connect
#   (f) `gxboot check` all pairs on N netns pods with a busy loop per core
#       (tests/bench/check_scale.sh, as root): pods exit 0, time per pair, pairs/s, peak RSS,
#       the start (until the last pod begins its probes); then, in the same pods under the
#       same busy loops, its floor (check_scale.sh FLOOR=1: a TCP connect and the probe's 5
#       echo round trips per ordered pair, 16 in flight per pod, no protocol). CHECK_NS
#       (default "24 120 512": 512 is the largest N this 2-core machine holds, about 4
#       minutes; the table's check row is the largest N given: CHECK_NS=24 tries the table
#       in seconds), CHECK_REPS (default 1)
#   (g) the relay tree (fan-out 256, bench_rdzv N P 256): star and tree alternated at
#       N=16384 (2 pairs: the coordinator's CPU and open descriptors side by side), then
#       N=65536 REPS_64K times (default 3; 64 member processes of 1024, a relay and its
#       children in one process): latency, the coordinator's peak RSS and open descriptors
#       (sampled every 50 ms: held sessions plus the VERIFY connections in flight), resets
#   (h) the floor: bare TCP exchanges in a fresh netns on loopback, no protocol at all
#       (bench_floor E 32: connect, 100 bytes each way, close), for each scale row the same
#       connections: E = 2 (N - 1) (a member makes two: phase 1 and its VERIFY), N = 1024,
#       8192, 16384 (also with a busy loop per core, as that row runs; the two alternated run
#       by run), 65536; FLOOR_REPS runs each (default 3): what the kernel alone charges the
#       server and all processes per connection, and how much longer the busy loops make it.
#       Then the messages' own floor (bench_floor shape M 32, M = N - 1 for N = 1024, 8192,
#       16384): each member's two connections with the rendezvous' frames (count, sizes,
#       order) and closes, still no code. It is printed beside the star rows ("messages"):
#       what the protocol's round trips cost before any code of ours runs
#   (i) what --preflight adds: N gxboot init on loopback (N = 8, 64, 256), every pod its own
#       127.0.9.k/32 on lo in a private netns (root; --iface that address, so that each pod's
#       probe service has its own address), with and without --preflight alternated, REPS runs
#       (N=256: 3): the latency after the last start, the preflight's own time (the
#       coordinator's line), the job median of the streams and bytes / that median, against
#       the target 1 s + bytes / throughput at N=64
#   (j) the transport watcher (agent/fabric) during a running job: gxboot --supervise over
#       fabric_load.py (FABRIC_PROCS processes with FABRIC_CONNS connections each streaming
#       on loopback, FABRIC_CHURN short connections a second per process, FABRIC_SECS
#       seconds; defaults 16 x 8, 0/s, 60 s; then again with 2/s), gxboot as PID 1 of its
#       own PID and network namespaces as in a pod (root): gxboot's own CPU (utime + stime of its
#       /proc/PID/stat) as a share of one core over the job's first 30 s (5 s after the exec:
#       the rendezvous is not the watcher's; the watcher dumps 4 times a second then) and
#       over the rest but its last 3 s (target <= 1%), and the watcher's own account
#       (fabric.json "watcher")
# The table at the end: one line per scale row that ran,
#   <row>: <figure> <unit>, floor <floor> <unit>, ratio <R>x (target <T>x)
# the floor computed from (h)'s per-connection figures of this run for that row's N,
# connections per member and load ("floor not measured" when (h) did not run: such a row
# does not pass). Exit 1 when a row is over its target or has no floor (both named), else 0.
# A full run (no BENCH_ONLY) writes the table into README.md between <!-- bench:begin -->
# and <!-- bench:end --> with its date, machine and commit; BENCH_README=1 writes it after
# a partial run too, BENCH_README=0 never.
# --smoke: tiny N only, prints one PASS/FAIL line (make check runs it).
# BENCH_ONLY=a|b|...|j (letters, e.g. "bh"): those sections only. GXBOOT=path, BENCH_BUILD=dir
# (default build: the bench tools are $BENCH_BUILD/release/bench/bench_*), REPS (default 5),
# DNS_DELAYS (ms, default "500 3000"). Every section header prints the load average.
# Trying the table quickly (a few minutes):
#   BENCH_ONLY=bfgh REPS=1 REPS_16K=2 REPS_64K=1 CHECK_NS=24 BENCH_README=0 tests/bench/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export LC_ALL=C
smoke=0
[ "${1:-}" = --smoke ] && smoke=1
GXBOOT=${GXBOOT:-build/gxboot}
BENCH_BUILD=${BENCH_BUILD:-build}
BENCH=$BENCH_BUILD/release/bench/bench_rdzv
BOOT=$BENCH_BUILD/release/bench/bench_boot
FLOOR=$BENCH_BUILD/release/bench/bench_floor
REPS=${REPS:-5}
procs() { # members' processes for N: BENCH_PROCS, else 256 members each, 2 to 64
  local p=${BENCH_PROCS:-$(($1 / 256))}
  [ "$p" -lt 2 ] && p=2
  [ "$p" -gt 64 ] && p=64
  echo "$p"
}
ONLY=${BENCH_ONLY:-abcdefghij}
want() { [[ "$ONLY" == *"$1"* ]]; }
load() { echo "load $(cut -d' ' -f1-3 /proc/loadavg)"; }
tmp=$(mktemp -d /tmp/gxbench.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
now_us() { echo $(($(date +%s%N) / 1000)); }
stats() { # stats V... (us) -> "median p90" (ms, one decimal; STATS_DEC decimals)
  printf '%s\n' "$@" | sort -n | awk -v d="${STATS_DEC:-1}" '{v[NR]=$1} END {m=v[int((NR+1)/2)]; p=v[int(NR*0.9+0.999)]; if(p=="")p=v[NR]; printf "%.*f %.*f", d, m/1000, d, p/1000}'
}

# pod i's address (1-based): 127.0.9.1 .. 127.0.9.250, 127.0.10.1 ... (valid IPv4 for any N;
# "127.0.9.256" was a name, and --self matched another pod's rank: "conflicting peers")
gx_addr() { echo "127.0.$((9 + ($1 - 1) / 250)).$((($1 - 1) % 250 + 1))"; }

# (a) one run of N gxboot init processes; echoes the latency in us after the last start.
# ORDER (default last): the coordinator (127.0.9.1) started last, first, or at random.
# GX_TIMES=FILE: the coordinator logs its info lines (no -q) to $tmp/err.1, and
# "T_FIRST T_END" goes to FILE (wall clock us: the first member's start, all exited)
gx_run() {
  local n=$1 port=$2 order=${3:-last} peers="" i t_last rc=0 seq t_first="" t_end q=()
  for i in $(seq 1 "$n"); do peers+="${peers:+,}$(gx_addr "$i")"; done
  pids=()
  case $order in
  first) seq=$(seq 1 "$n") ;;
  random) seq=$(seq 1 "$n" | shuf) ;;
  *) seq=$(seq "$n" -1 1) ;;
  esac
  for i in $seq; do
    q=(-q)
    [ "$i" = 1 ] && [ -n "${GX_TIMES:-}" ] && q=()
    [ -z "$t_first" ] && [ "$i" != 1 ] && t_first=${EPOCHREALTIME/./}
    /usr/bin/time -f %M -o "$tmp/rss.$i" "$GXBOOT" init --peers "$peers" --self "$(gx_addr "$i")" \
      --iface lo --port "$port" --timeout 30 --out "$tmp/out.$i" --token-file "$tmp/token" "${q[@]}" \
      2>"$tmp/err.$i" &
    pids+=($!)
  done
  t_last=$(now_us)
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  t_end=${EPOCHREALTIME/./}
  pids=()
  [ -n "${GX_TIMES:-}" ] && echo "$t_first $t_end" >"$GX_TIMES"
  [ $rc -eq 0 ] || { cat "$tmp"/err.* | tail -3 >&2; echo fail; return; }
  echo $(($(now_us) - t_last))
}

# (i) one run of N gxboot init, pod k on its own 127.0.9.k/32 (the caller's netns has them),
# extra options after N PORT; echoes the latency in us after the last start (or fail); the
# coordinator logs to $tmp/err.1 and writes $tmp/out.1
pf_run() {
  local n=$1 port=$2 peers="" i t_last rc=0 q
  shift 2
  for i in $(seq 1 "$n"); do peers+="${peers:+,}$(gx_addr "$i")"; done
  pids=()
  rm -rf "$tmp"/out.*
  for i in $(seq "$n" -1 1); do
    q=-q
    [ "$i" = 1 ] && q=-v
    "$GXBOOT" init --peers "$peers" --self "$(gx_addr "$i")" --iface "$(gx_addr "$i")" \
      --port "$port" --timeout 60 --out "$tmp/out.$i" --token-file "$tmp/token" "$q" "$@" \
      2>"$tmp/err.$i" &
    pids+=($!)
  done
  t_last=$(now_us)
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  pids=()
  [ $rc -eq 0 ] || { cat "$tmp"/err.* | grep 'gxboot:' | sort | uniq -c | head -3 >&2; echo fail; return; }
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
# always through make: a tool built from older sources is rebuilt (a no-op when current)
make --no-print-directory MODE=release BUILD="$BENCH_BUILD" "$BENCH" "$BOOT" "$FLOOR" >/dev/null ||
  { echo "FAIL bench: cannot build $BENCH $BOOT $FLOOR"; exit 1; }
port=$((10000 + $$ % 10000)) # below the ephemeral range

# (a') one gx_run in a fresh netns (root) so that nstat counts this run's SYNs alone:
# echoes "latency_us syns" (syns: TcpActiveOpens, every member connect attempt); the
# run's wall clock times go to $tmp/times, the coordinator's info lines to $tmp/err.1
order_run() { # N PORT ORDER
  if [ "$(id -u)" -ne 0 ]; then
    echo "$(GX_TIMES=$tmp/times gx_run "$1" "$2" "$3") -"
    return
  fi
  GXBOOT=$GXBOOT tmp=$tmp unshare -n bash -c "$(declare -f gx_addr now_us gx_run);
    ip link set lo up; GX_TIMES=\$tmp/times; ulimit -n \$(ulimit -Hn); nstat -n;
    v=\$(gx_run $1 $2 $3);
    echo \"\$v \$(nstat -az TcpActiveOpens | awk '/TcpActiveOpens/{print \$2}')\""
}
# (a') after order_run: "from_listen_us syn_per_s wait_us" ("-" where unknown): wait_us
# from the first member's start to the listen. The listen: the coordinator's "interface"
# info line, its last before rdzv_coord_start opens the listener (wall clock, ms: taken
# as the middle of its ms, +500 us; the listen follows the line by ~0.3 ms, more when
# the coordinator is preempted: from_listen is an upper bound)
listen_figs() { # SYNS
  local tf te ts lms
  read -r tf te <"$tmp/times"
  ts=$(grep -m1 ' info: interface ' "$tmp/err.1" | cut -d' ' -f1)
  lms=
  [ -n "$ts" ] && lms=$(date -d "$ts" +%s%3N 2>/dev/null)
  echo "$([ -n "$lms" ] && echo $((te - lms * 1000 - 500)) || echo -)" \
    "$([ "$1" != - ] && [ "$te" -gt "$tf" ] && echo $(($1 * 1000000 / (te - tf))) || echo -)" \
    "$([ -n "$lms" ] && echo $((lms * 1000 + 500 - tf)) || echo -)"
}
med() { sort -n | awk '{v[NR]=$1} END{if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
SYN_RATE='' # the summary prints it

if [ $smoke -eq 1 ]; then
  a=$(gx_run 2 "$port")
  if [ "$(id -u)" -eq 0 ]; then # a rendezvous ends without a RST (a reset is a member lost)
    b=$(unshare -n bash -c "ip link set lo up; nstat -n; $BENCH 64 4 2>&1; nstat -az \
      TcpEstabResets | awk '/TcpEstabResets/{print \"resets=\" \$2}'" | tr '\n' ' ')
    t=$(unshare -n bash -c "ip link set lo up; $BENCH 96 4 16 2>&1" | tr '\n' ' ')
    [[ "$b" == *resets=0* ]] || b="$b (a reset: expected none)"
  else
    b=$("$BENCH" 64 4 2>&1)
    t=$("$BENCH" 96 4 16 2>&1)
  fi
  d=$("$BOOT" first "$GXBOOT" "$tmp/token" "$tmp/boot" 2>&1)
  f=$("$FLOOR" 256 4 2>&1)
  f+="; $("$FLOOR" shape 128 4 2>&1)"
  # check's floor: 4 pods on loopback, every pod probes the 3 others and serves their probes
  pa="127.0.5.1 127.0.5.2 127.0.5.3 127.0.5.4"
  pp="for i in 3 2 1 0; do $FLOOR pairs \$i $((port + 3)) $pa & done; wait"
  if [ "$(id -u)" -eq 0 ]; then pp=$(unshare -n bash -c "ip link set lo up; $pp" 2>&1); else pp=$(bash -c "$pp" 2>&1); fi
  [ "$(echo "$pp" | grep -c 'probed 3 served 3 ')" = 4 ] && pp="pairs: 4 pods probed 3 served 3" ||
    pp="pairs failed: $pp"
  # the relay tree: 96 pods, fan-out 16: 75 members through 5 relays
  if [ "$a" != fail ] && [[ "$b" == *failed=0* ]] && [[ "$b" != *expected* ]] &&
    [[ "$t" == *failed=0*via_relay=75* ]] && [[ "$d" == exec_to_accept_us=* ]] &&
    [[ "$f" == "floor: N=256 "*total_us=*"; shape: N=128 "*total_us=* ]] && [[ "$pp" == pairs:* ]]; then
    echo "PASS bench smoke (2 gxboot init: $((a / 1000)) ms; $b; tree: $t; $d; $f; $pp)"
  else
    echo "FAIL bench smoke: a=$a b=$b t=$t d=$d f=$f pp=$pp"; exit 1
  fi
  exit 0
fi

CPU_MODEL=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "gxboot bench — $(nproc) cores (${CPU_MODEL:-?}), $(uname -sr), $(date -u +%F); absolute times are this machine's"
echo "binary: $(stat -c %s "$GXBOOT") bytes stripped static ($GXBOOT)"
declare -A GX_MED
STAR_US= TREE_US= TREE_RELAYS= LAT_65536= RSS_65536= FDS_65536= RES_65536= PROFILE= MEMBER_RSS= COORD_RSS_8192= LAT_1024= LAT_8192= RES_16384= FIRST= DNS_LAG=
LAT_16384='' P90_16384='' RST_16384=''
if want a; then
  echo
  echo "(a) N gxboot init processes on loopback, latency after the last start until all exit (ms), $REPS runs; $(load)"
  printf '%8s %10s %8s %16s %16s\n' N median p90 coord_rss_kb member_rss_kb
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
    [ "$n" = 2 ] && MEMBER_RSS=$(cat "$tmp/rss.2")
    printf '%8s %10s %8s %16s %16s\n' "$n" "$med" "$p90" "$(cat "$tmp/rss.1")" "$(cat "$tmp/rss.2")"
  done
  # start orders: members retry a refused connect every max(5 ms, N/2000 s), the
  # first time after a random phase; the latency counts from the last process start (the
  # coordinator's, when last)
  echo "  start orders: latency after the last start (ms), $REPS runs (N=1024: 3); syns/run ="
  echo "  member connect attempts in the run's own netns (nstat TcpActiveOpens), median;"
  echo "  from_listen: the coordinator's listen (its last log line before it, ms resolution)"
  echo "  until all exit (ms, median p90); syn/s: syns over the first member's start until all"
  echo "  exit, median (cap ~2000/s); wait_syn/s: syns beyond order first's median (the refused"
  echo "  ones) over the first member's start until the listen, median"
  # (no latency target: these rows are read against the floor table at the end; the SYN cap stays)
  printf '  %6s %8s %10s %8s %10s %12s %8s %8s %11s\n' N order median p90 syns/run \
    from_listen p90 syn/s wait_syn/s
  syn_max=0 syn_at='' wait_max=0 wait_at=''
  for n in 8 64 1024; do
    base=''
    for order in first last random; do
      vals=() syns=() lvals=() rates=() wrates=() reps=$REPS
      [ "$n" -gt 64 ] && [ "$reps" -gt 3 ] && reps=3
      for r in $(seq "$reps"); do
        port=$((port + 1))
        read -r v s <<<"$(order_run "$n" "$port" "$order")"
        [ "$v" = fail ] && { echo "  N=$n $order run $r failed"; continue; }
        vals+=("$v") syns+=("$s")
        read -r l sr w <<<"$(listen_figs "$s")"
        [ "$l" != - ] && lvals+=("$l")
        [ "$sr" != - ] && rates+=("$sr")
        [ "$order" != first ] && [ "$s" != - ] && [ "$w" != - ] && [ "$w" -gt 0 ] &&
          [ -n "$base" ] && [ "$base" != - ] && wrates+=($(((s - base) * 1000000 / w)))
      done
      [ ${#vals[@]} -gt 0 ] || continue
      read -r med p90 <<<"$(stats "${vals[@]}")"
      lmed=- lp90=-
      [ ${#lvals[@]} -gt 0 ] && read -r lmed lp90 <<<"$(stats "${lvals[@]}")"
      rate=- wrate=-
      [ ${#rates[@]} -gt 0 ] && rate=$(printf '%s\n' "${rates[@]}" | med)
      [ ${#wrates[@]} -gt 0 ] && wrate=$(printf '%s\n' "${wrates[@]}" | med)
      [ "$order" = first ] && base=$(printf '%s\n' "${syns[@]}" | med)
      printf '  %6s %8s %10s %8s %10s %12s %8s %8s %11s\n' "$n" "$order" "$med" "$p90" \
        "$(printf '%s\n' "${syns[@]}" | med)" "$lmed" "$lp90" "$rate" "$wrate"
      [ "$rate" != - ] && [ "$rate" -gt "$syn_max" ] && syn_max=$rate syn_at="N=$n $order"
      [ "$wrate" != - ] && [ "$wrate" -gt "$wait_max" ] && wait_max=$wrate wait_at="N=$n $order"
    done
  done
  # shellcheck disable=SC2034 # printed by the summary
  [ -n "$syn_at" ] && SYN_RATE="max $syn_max SYN/s ($syn_at)"
  [ -n "$wait_at" ] && SYN_RATE+="${SYN_RATE:+, }while waiting for the listen max $wait_max/s ($wait_at)"
  [ -n "$SYN_RATE" ] && SYN_RATE+=" (medians of runs; cap ~2000/s)"
fi
# one (b) run in a fresh network namespace (no TIME_WAIT or port state carried over from
# the run before: reps in one namespace ran out of ephemeral ports, EADDRNOTAVAIL), then
# that run's TCP counters
b_run() {
  unshare -n bash -c "ip link set lo up; sysctl -qw net.core.somaxconn=65535 \
    net.ipv4.tcp_max_syn_backlog=65535; ulimit -n \$(ulimit -Hn); \
    echo \"netns: somaxconn=\$(sysctl -n net.core.somaxconn) \
tcp_max_syn_backlog=\$(sysctl -n net.ipv4.tcp_max_syn_backlog) syncookies=\$(sysctl -n \
net.ipv4.tcp_syncookies) ports=\$(sysctl -n net.ipv4.ip_local_port_range | tr '\t' -) \
nofile=\$(ulimit -n)\"; nstat -n; $BENCH $1 $(procs "$1") ${2:-}; nstat -az TcpActiveOpens TcpExtListenOverflows \
    TcpExtListenDrops TcpExtTCPReqQFullDrop TcpExtTCPSynRetrans TcpRetransSegs \
    TcpExtTCPTimeouts TcpEstabResets TcpExtTCPAbortOnClose | awk 'NR>1{printf \" %s=%s\", \$1, \$2} \
    END{print \"\"}' | sed 's/^/counters:/; s/Tcp\(Ext\)*//g'" 2>&1
}
if want b; then
  echo
  echo "(b) coordinator process vs members in N/256 processes (2 to 64; real member code), a fresh netns per run; $(load)"
  # the coordinator's cost per member: syscalls by name under strace, CPU plain
  if [ "$(id -u)" -eq 0 ] && command -v strace >/dev/null; then
    tests/bench/profile.sh 1024 | sed 's/^/  /' | tee "$tmp/profile"
    PROFILE=$(grep -o 'syscalls per member: [0-9.]*' "$tmp/profile" | cut -d' ' -f4)
    PROFILE="${PROFILE:-?} syscalls, $(grep -o 'CPU per member: [0-9]*' "$tmp/profile" | cut -d' ' -f4) us"
  fi
  for n in 1024 8192 16384; do
    reps=$REPS busy=()
    if [ "$n" -ge 16384 ]; then # a loaded machine: a busy loop per core
      reps=${REPS_16K:-10}
      for _ in $(seq "$(nproc)"); do
        (while :; do :; done) &
        busy+=("$!")
        pids+=("$!")
      done
      echo "  N=$n: $reps runs, ${#busy[@]} busy loops"
    fi
    : >"$tmp/b.$n"
    for r in $(seq "$reps"); do
      b_run "$n" >>"$tmp/b.$n"
      [ "$r" = 1 ] && grep -m1 'netns:' "$tmp/b.$n" | sed 's/^/  /'
      echo "  $(grep '^N=' "$tmp/b.$n" | tail -1)"
      echo "    $(grep '^counters:' "$tmp/b.$n" | tail -1) ($(load))"
    done
    [ ${#busy[@]} -gt 0 ] && kill "${busy[@]}" 2>/dev/null
    lat=$(grep -o 'latency_ms=[0-9.]*' "$tmp/b.$n" | cut -d= -f2 | sort -n)
    nrun=$(echo "$lat" | grep -c .)
    med=$(echo "$lat" | awk -v n="$nrun" 'NR==int((n+1)/2)')
    p90=$(echo "$lat" | awk -v n="$nrun" 'NR==int(n*0.9+0.999)')
    fails=$(grep -c 'failed=[1-9]' "$tmp/b.$n")
    crss=$(grep -o 'coord_peak_rss_kb=[0-9]*' "$tmp/b.$n" | cut -d= -f2 | sort -n | tail -1)
    mrss=$(grep -o 'member_proc_peak_rss_kb=[0-9]*' "$tmp/b.$n" | cut -d= -f2 | sort -n | tail -1)
    cpu=$(grep -o 'coord_cpu_ms=[0-9]*' "$tmp/b.$n" | cut -d= -f2 | sort -n |
      awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')
    sum() { grep -o "$1=[0-9]*" "$tmp/b.$n" | cut -d= -f2 | awk '{s+=$1} END{print s+0}'; }
    echo "  N=$n: median ${med} ms, p90 ${p90} ms over $nrun runs, failed runs $fails," \
      "coordinator peak RSS ${crss} kB and CPU ${cpu} ms (median, $((cpu * 1000 / n)) us/member)," \
      "member process peak RSS ${mrss} kB ($(((n + $(procs "$n") - 1) / $(procs "$n"))) members)"
    tk=$(grep -o 'tickets=[0-9]*' "$tmp/b.$n" | cut -d= -f2 | sort -n | head -1)
    tot="resets $(sum EstabResets), listen overflows $(sum ListenOverflows), SYN retransmits $(sum SynRetrans),"
    tot+=" phase-2 tickets ${tk:-?} of $((n - 1)) in the worst run (the rest: a second handshake),"
    tot+=" closed at a handshake deadline $(sum coord_hs_late), slow members spared $(sum coord_slow_spared)"
    echo "  N=$n over $nrun runs: $tot"
    case $n in
    1024) LAT_1024=$med ;;
    8192) LAT_8192=$med COORD_RSS_8192=$crss ;;
    16384)
      LAT_16384=$med P90_16384=$p90 RST_16384=$(sum EstabResets)
      RES_16384="$nrun runs with a busy loop per core, failed $fails, max $(echo "$lat" | tail -1) ms; $tot"
      ;;
    esac
  done
fi
if want c; then
  echo
  echo "(c) torchrun c10d rendezvous (torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)), same timing, $REPS runs; $(load)"
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
fi
if want d; then
  echo
  echo "(d) execve of a member \`gxboot init\` -> its first packet at the coordinator's port (ms), $REPS runs; $(load)"
  acc=() byte=()
  for r in $(seq "$REPS"); do
    v=$("$BOOT" first "$GXBOOT" "$tmp/token" "$tmp/boot") || { echo "  run $r failed"; continue; }
    acc+=("$(echo "$v" | sed 's/.*exec_to_accept_us=\([0-9]*\).*/\1/')")
    byte+=("$(echo "$v" | sed 's/.*exec_to_byte_us=\([0-9-]*\).*/\1/')")
  done
  if [ ${#acc[@]} -gt 0 ]; then
    read -r m1 p1 <<<"$(STATS_DEC=2 stats "${acc[@]}")"
    read -r m2 p2 <<<"$(STATS_DEC=2 stats "${byte[@]}")"
    FIRST="$m1 ms median, $m2 ms to its first bytes"
    echo "  connection accepted (first packet, the SYN): median $m1 ms, p90 $p1 ms"
    echo "  first bytes of its handshake:                median $m2 ms, p90 $p2 ms"
  fi
fi
if want e; then
  echo
  echo "(e) DNS: c-ares waiting on dnsmasq for the coordinator's record, which appears DELAY ms after exec;"
  echo "    lag = record published (SIGHUP) -> the member's connect accepted (ms), $REPS runs; $(load)"
  if ! command -v dnsmasq >/dev/null; then
    echo "  skipped: dnsmasq not installed"
  else
    chmod 755 "$tmp" # dnsmasq re-reads addn-hosts after SIGHUP
    : >"$tmp/dns.hosts"
    dport=$((port % 10000 + 40000))
    dnsmasq --keep-in-foreground --port="$dport" --listen-address=127.0.0.1 --bind-interfaces \
      --no-resolv --no-hosts --addn-hosts="$tmp/dns.hosts" --local=/bench.test/ --domain-needed \
      --neg-ttl=1 --local-ttl=1 --user=root --pid-file= 2>"$tmp/dnsmasq.log" &
    dpid=$!
    pids=("$dpid")
    for k in $(seq 50); do ss -lun | grep -q "127.0.0.1:$dport " && break; sleep 0.1; done
    printf '%8s %10s %8s %12s\n' delay_ms median p90 dnsmasq_reload
    for delay in ${DNS_DELAYS:-500 3000}; do
      lag=() vis=()
      for r in $(seq "$REPS"); do
        v=$("$BOOT" dns "$GXBOOT" "$tmp/token" "$tmp/boot" "$dport" "$tmp/dns.hosts" "$dpid" \
          "$delay" gxc.bench.test) || { echo "  delay $delay run $r failed"; continue; }
        lag+=("$(echo "$v" | sed 's/.*lag_us=\([0-9]*\).*/\1/')")
        vis+=("$(echo "$v" | sed 's/.*visible_us=\([0-9]*\).*/\1/')")
      done
      [ ${#lag[@]} -gt 0 ] || continue
      read -r med p90 <<<"$(stats "${lag[@]}")"
      read -r vmed _ <<<"$(STATS_DEC=2 stats "${vis[@]}")"
      DNS_LAG+="${DNS_LAG:+, }record at ${delay} ms: lag median $med ms p90 $p90 ms"
      printf '%8s %10s %8s %9s ms\n' "$delay" "$med" "$p90" "$vmed"
    done
    kill "$dpid" 2>/dev/null
    wait "$dpid" 2>/dev/null
    pids=()
    echo "  (member retry after NXDOMAIN: backoff 100 ms doubling to 2 s, equal jitter [d/2, d):"
    echo "   the lag is the rest of the current backoff; dnsmasq_reload = SIGHUP -> our own lookup answers)"
  fi
fi
CHECK_ROW='' CHECK_FIG='' CHECK_FLOOR='' CHECK_START=''
if want f; then
  echo
  echo "(f) gxboot check, all pairs, N healthy netns pods, a busy loop per core, then its floor in the" \
    "same pods; $(load)"
  if [ "$(id -u)" -ne 0 ]; then
    echo "  skipped: needs root (network namespaces)"
  else
    # shellcheck disable=SC2086
    env REPS="${CHECK_REPS:-1}" BUSY=1 FLOOR=1 GXBOOT="$GXBOOT" FLOOR_BIN="$FLOOR" \
      tests/bench/check_scale.sh ${CHECK_NS:-24 120 512} 2>&1 | tee "$tmp/f" | sed 's/^/  /'
    # the table's row: the largest N; the medians of its runs (wall s, start s; floor wall s)
    CHECK_ROW=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {print $1}' "$tmp/f" | sort -n | tail -1)
    if [ -n "$CHECK_ROW" ]; then
      # a run counts when every pod exited 0 ("512/512"); the floor's likewise
      CHECK_FIG=$(awk -v n="$CHECK_ROW" '$1 == n && $2 ~ /^[0-9]+$/ && $3 == n "/" n {print $4 * 1000}' \
        "$tmp/f" | med)
      CHECK_START=$(awk -v n="$CHECK_ROW" '$1 == n && $2 ~ /^[0-9]+$/ && $3 == n "/" n && $5 != "-" \
        {print $5 * 1000}' "$tmp/f" | med)
      CHECK_FLOOR=$(awk -v n="$CHECK_ROW" '$1 == "floor:" && $2 == n && $7 == n "/" n {print $9 * 1000}' \
        "$tmp/f" | med)
      for v in CHECK_FIG CHECK_START CHECK_FLOOR; do
        [ "${!v}" = - ] && printf -v "$v" '%s' ''
        [ -n "${!v}" ] && printf -v "$v" '%s' "$(awk -v x="${!v}" 'BEGIN{printf "%.1f", x / 1000}')"
      done
    fi
  fi
fi
if want g; then
  echo
  echo "(g) the relay tree, fan-out 256 (bench_rdzv N P 256), a fresh netns per run; $(load)"
  for r in 1 2; do
    for f in star 256; do
      b_run 16384 "${f#star}" >>"$tmp/g.16384.$f"
      echo "  $f: $(grep '^N=' "$tmp/g.16384.$f" | tail -1)"
      echo "    $(grep '^counters:' "$tmp/g.16384.$f" | tail -1) ($(load))"
    done
  done
  med16() { grep -o "$2=[0-9.]*" "$tmp/g.16384.$1" | cut -d= -f2 | sort -n | head -1; }
  echo "  N=16384, best of 2 each: latency star $(med16 star latency_ms) ms, tree $(med16 256 latency_ms) ms;" \
    "coordinator CPU star $(med16 star coord_cpu_ms) ms, tree $(med16 256 coord_cpu_ms) ms" \
    "($(awk -v a="$(med16 256 coord_cpu_ms)" -v b="$(med16 star coord_cpu_ms)" 'BEGIN{printf "%.2f", a/b}')x)"
  # the table's CPU rows: best of 2, per member (16,383 of them), and the tree's relays
  STAR_US=$(awk -v a="$(med16 star coord_cpu_ms)" 'BEGIN{if (a != "") printf "%.1f", a * 1000 / 16383}')
  TREE_US=$(awk -v a="$(med16 256 coord_cpu_ms)" 'BEGIN{if (a != "") printf "%.1f", a * 1000 / 16383}')
  TREE_RELAYS=$(med16 256 relays)
  : >"$tmp/g.65536"
  for r in $(seq "${REPS_64K:-3}"); do
    b_run 65536 256 >>"$tmp/g.65536"
    [ "$r" = 1 ] && grep -m1 'netns:' "$tmp/g.65536" | sed 's/^/  /'
    echo "  $(grep '^N=' "$tmp/g.65536" | tail -1)"
    echo "    $(grep '^counters:' "$tmp/g.65536" | tail -1) ($(load))"
  done
  lat=$(grep -o 'latency_ms=[0-9.]*' "$tmp/g.65536" | cut -d= -f2 | sort -n)
  nrun=$(echo "$lat" | grep -c .)
  LAT_65536=$(echo "$lat" | awk -v n="$nrun" 'NR==int((n+1)/2)')
  FDS_65536=$(grep -o 'coord_peak_fds=[0-9]*' "$tmp/g.65536" | cut -d= -f2 | sort -n | tail -1)
  RSS_65536=$(grep -o 'coord_peak_rss_kb=[0-9]*' "$tmp/g.65536" | cut -d= -f2 | sort -n | tail -1)
  RES_65536="$nrun runs, failed runs $(grep -c 'failed=[1-9]' "$tmp/g.65536"),"
  RES_65536+=" resets $(grep -o 'EstabResets=[0-9]*' "$tmp/g.65536" | cut -d= -f2 | awk '{s+=$1} END{print s+0}'),"
  RES_65536+=" relays lost $(grep -o 'relays_lost=[0-9]*' "$tmp/g.65536" | cut -d= -f2 | awk '{s+=$1} END{print s+0}'),"
  RES_65536+=" members that reconnected $(grep -o 'retried=reset:[0-9]*,timeout:[0-9]*,other:[0-9]*' "$tmp/g.65536" |
    tr ':,' '  ' | awk '{s+=$2+$4+$6} END{print s+0}'),"
  RES_65536+=" coordinator CPU $(grep -o 'coord_cpu_ms=[0-9]*' "$tmp/g.65536" | cut -d= -f2 | sort -n | head -1) ms (best)"
  echo "  N=65536: median $LAT_65536 ms; $RES_65536; coordinator peak open descriptors $FDS_65536"
fi
# (h) one bench_floor run of E exchanges in a fresh netns (root): its "floor:" line
floor_once() { # floor_once E
  if [ "$(id -u)" -eq 0 ]; then
    unshare -n bash -c "ip link set lo up; sysctl -qw net.core.somaxconn=65535 \
      net.ipv4.tcp_max_syn_backlog=65535; ulimit -n \$(ulimit -Hn); $FLOOR $1 32" 2>&1
  else
    $FLOOR $1 32 2>&1 # $1: E, or "shape M"
  fi
}
# the per-connection figures by row key (N, or N "L" with a busy loop per core): the median
# server_us, total_us and wall_ms of its runs, and the least server_us (the CPU rows' figures
# are the best of their runs too); "" when (h) did not run or its runs failed
declare -A FL_SRV FL_TOT FL_WALL FL_SRV_BEST SH_TOT SH_WALL SH_SRV_BEST
slowdown() { # the bare exchanges' wall at N=16384 with a busy loop per core / without, >= 1
  awk -v a="${FL_WALL[16384L]:-}" -v b="${FL_WALL[16384]:-}" \
    'BEGIN{if (a > 0 && b > 0) printf "%.2f", (a > b ? a / b : 1)}'
}
if want h; then
  echo
  echo "(h) the floor: bare TCP exchanges on loopback, no protocol at all (bench_floor E 32:" \
    "connect, 100 bytes each way, close), E = 2 (N - 1) for each row's N, a fresh netns per run; $(load)"
  # N=16384 with and without a busy loop per core alternated, run by run, so that both see
  # the same load from outside the bench (their ratio is the loaded row's slowdown)
  for key in 1024 8192 16384 65536; do
    : >"$tmp/h.$key"
    [ "$key" = 16384 ] && : >"$tmp/h.${key}L"
    for r in $(seq "${FLOOR_REPS:-3}"); do
      floor_once $((2 * (key - 1))) >>"$tmp/h.$key"
      [ "$key" = 16384 ] || continue
      busy=()
      for _ in $(seq "$(nproc)"); do
        (while :; do :; done) &
        busy+=("$!")
        pids+=("$!")
      done
      floor_once $((2 * (key - 1))) >>"$tmp/h.${key}L"
      kill "${busy[@]}" 2>/dev/null
    done
  done
  for key in 1024 8192 16384 16384L 65536; do
    n=${key%L} e=$((2 * (${key%L} - 1)))
    fmed() { grep -o "$1=[0-9.]*" "$tmp/h.$key" | cut -d= -f2 | med | sed 's/^-$//'; }
    FL_SRV[$key]=$(fmed server_us) FL_TOT[$key]=$(fmed total_us) FL_WALL[$key]=$(fmed wall_ms)
    FL_SRV_BEST[$key]=$(grep -o "server_us=[0-9.]*" "$tmp/h.$key" | cut -d= -f2 | sort -n | head -1)
    grep -v '^floor:' "$tmp/h.$key" | sort | uniq -c | sed 's/^/  failed: /'
    printf '  N=%-6s E=%-7s per connection: server %5s us (best %5s), all processes %5s us; wall %6s ms (median of %s)%s\n' \
      "$n" "$e" "${FL_SRV[$key]:--}" "${FL_SRV_BEST[$key]:--}" "${FL_TOT[$key]:--}" "${FL_WALL[$key]:--}" \
      "$(grep -c '^floor:' "$tmp/h.$key")" "$([ "$key" != "$n" ] && echo ", a busy loop per core")"
  done
  echo "  with a busy loop per core the bare exchanges at N=16384 take $(slowdown)x as long" \
    "(medians of the walls, with / without; at least 1: below is noise from outside the bench)"
  echo "  the messages' own floor (bench_floor shape M 32: the rendezvous' frames and closes on" \
    "two connections per member, no code), M = N - 1:"
  for key in 1024 8192 16384; do
    : >"$tmp/s.$key"
    for r in $(seq "${FLOOR_REPS:-3}"); do
      floor_once "shape $((key - 1))" >>"$tmp/s.$key"
    done
    smed() { grep -o "$1=[0-9.]*" "$tmp/s.$key" | cut -d= -f2 | med | sed 's/^-$//'; }
    SH_TOT[$key]=$(smed total_us) SH_WALL[$key]=$(smed wall_ms)
    SH_SRV_BEST[$key]=$(grep -o "server_us=[0-9.]*" "$tmp/s.$key" | cut -d= -f2 | sort -n | head -1)
    grep -v '^shape:' "$tmp/s.$key" | sort | uniq -c | sed 's/^/  failed: /'
    printf '  N=%-6s M=%-7s per member: server %5s us (best), all processes %5s us; wall %6s ms (median of %s); against two bare exchanges: server %sx, all processes %sx\n' \
      "$key" "$((key - 1))" "${SH_SRV_BEST[$key]:--}" "${SH_TOT[$key]:--}" "${SH_WALL[$key]:--}" \
      "$(grep -c '^shape:' "$tmp/s.$key")" \
      "$(awk -v a="${SH_SRV_BEST[$key]:-}" -v b="${FL_SRV_BEST[$key]:-}" 'BEGIN{if (a != "" && b > 0) printf "%.2f", a / (2 * b); else print "-"}')" \
      "$(awk -v a="${SH_TOT[$key]:-}" -v b="${FL_TOT[$key]:-}" 'BEGIN{if (a != "" && b > 0) printf "%.2f", a / (2 * b); else print "-"}')"
  done
fi

PF_64=''
if want i; then
  echo
  echo "(i) what --preflight adds (ring + chord; all pairs up to 4 pods): N gxboot init on loopback," \
    "pod k on its own 127.0.9.k/32 (a private netns), with and without --preflight alternated; $(load)"
  if [ "$(id -u)" -ne 0 ]; then
    echo "  skipped: needs root (a network namespace with an address per pod)"
  else
    printf '  %6s %10s %10s %10s %14s %14s %16s %10s\n' N without_ms with_ms added_ms \
      preflight_ms median_Gbit/s bytes/median_ms looked_again
    for n in 8 64 256; do
      reps=$REPS
      [ "$n" -ge 256 ] && [ "$reps" -gt 3 ] && reps=3
      port=$((port + 2))
      out=$(GXBOOT=$GXBOOT tmp=$tmp unshare -n bash -c "$(declare -f gx_addr now_us pf_run);
        ip link set lo up; ulimit -n \$(ulimit -Hn)
        # netdetect reads 256 addresses a link: lo keeps only the pods'
        ip addr del 127.0.0.1/8 dev lo; sysctl -qw net.ipv6.conf.lo.disable_ipv6=1
        for i in \$(seq 1 $n); do ip addr add \$(gx_addr \$i)/32 dev lo; done
        for r in \$(seq $reps); do
          a=\$(pf_run $n $port); b=\$(pf_run $n $port --preflight)
          pfm=\$(grep -o 'nobody named ([0-9]*' \$tmp/err.1 | grep -o '[0-9]*\$')
          med=\$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d[\"median_bps\"][\"tcp\"], d[\"bytes\"])' \$tmp/out.1/preflight.json 2>/dev/null)
          echo \"run \$a \$b \${pfm:--} \${med:-- -} \$(grep -c 'looked slow' \$tmp/err.1)\"
        done" 2>&1)
      echo "$out" | grep -v '^run ' | sed 's/^/  /'
      row() { echo "$out" | awk -v k="$1" '$1 == "run" && $k != "fail" && $k != "-" {print $k}' | med; }
      a=$(row 2) b=$(row 3) pfm=$(row 4) mbps=$(row 5) bytes=$(row 6) again=$(row 7)
      [ "$a" = - ] || [ "$b" = - ] && { echo "  N=$n: failed"; continue; }
      bm=$(awk -v b="$bytes" -v m="$mbps" 'BEGIN{if (m > 0) printf "%.0f", b * 8 / m * 1000; else print "-"}')
      printf '  %6s %10.0f %10.0f %10.0f %14s %14s %16s %10s\n' "$n" "$((a / 1000))" "$((b / 1000))" \
        "$(((b - a) / 1000))" "$pfm" "$(awk -v m="$mbps" 'BEGIN{printf "%.2f", m / 1e9}')" "$bm" "$again"
      [ "$n" = 64 ] && PF_64="added $(((b - a) / 1000)) ms (the preflight itself $pfm ms) against 1 s + bytes / median = $((1000 + ${bm/-/0})) ms"
    done
    echo "  (medians of the runs; looked_again: pods whose first-pass figure was below half the median," \
      "measured again one at a time)"
  fi
fi
FABRIC_PCT=''
# fabric_run CHURN: one job under the watcher; prints its lines, sets FABRIC_LAST (% of a core)
fabric_run() {
  local fp=${FABRIC_PROCS:-16} fc=${FABRIC_CONNS:-8} fs=${FABRIC_SECS:-60} fh=$1 gp up c0 c1 c2 t0 t1 t2 tck
  local pod=()
  # as in a pod: gxboot PID 1 of its own PID namespace, in a network namespace of its own
  # (in the host's, every other process's connections move sockstat and the destroy group)
  [ "$(id -u)" -eq 0 ] && pod=(unshare -n -fp --mount-proc sh -c 'ip link set lo up && exec "$@"' sh)
  echo "  $fp processes x $fc connections streaming on loopback, $fh short connections/s each," \
    "$fs s${pod:+, gxboot as PID 1 of its own PID and network namespaces}; $(load)"
  rm -rf "$tmp/i"
  "${pod[@]}" "$GXBOOT" --peers 127.0.0.1 --iface lo --port 29390 --timeout 10 --out "$tmp/i" \
    --supervise -- /usr/bin/python3 tests/bench/fabric_load.py "$fp" "$fc" "$fs" "$fh" \
    >"$tmp/i.log" 2>&1 &
  up=$!
  pids+=("$up")
  sleep 5 # the rendezvous and the job's start are not the watcher's
  gp=$up
  [ ${#pod[@]} -gt 0 ] && gp=$(cat "/proc/$up/task/$up/children" 2>/dev/null | awk '{print $1}')
  cpu() { awk '{print $14 + $15}' "/proc/$gp/stat" 2>/dev/null; }
  c0=$(cpu) t0=$(now_us)
  sleep 25
  c1=$(cpu) t1=$(now_us)
  sleep $((fs - 33))
  c2=$(cpu) t2=$(now_us)
  wait "$up"
  tck=$(getconf CLK_TCK)
  pct() { awk -v c="$1" -v t="$2" -v k="$tck" 'BEGIN{printf "%.2f", 100 * c / k / (t / 1e6)}'; }
  FABRIC_LAST='' FABRIC_FIRST=''
  if [ -n "$c0" ] && [ -n "$c2" ]; then
    FABRIC_FIRST=$(pct $((c1 - c0)) $((t1 - t0)))
    FABRIC_LAST=$(pct $((c2 - c1)) $((t2 - t1)))
    echo "    gxboot's CPU: $(((c1 - c0) * 1000 / tck)) ms over $(((t1 - t0) / 1000000)) s of the" \
      "job's start = $FABRIC_FIRST% of one core; $(((c2 - c1) * 1000 / tck)) ms over" \
      "$(((t2 - t1) / 1000000)) s after = $FABRIC_LAST%"
  fi
  grep -h 'FABRICLOAD\|info: fabric: [a-z]*: ' "$tmp/i.log" | sed 's/.*info: //; s/^/    /' | tail -2
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); w=d["watcher"]
print("    the watcher'"'"'s own account: %.1f ms CPU over %.1f s (%.2f%% of one core), %d dumps,"
      " %d processes of CMD at most" % (w["cpu_us"] / 1e3, w["elapsed_ms"] / 1e3,
      100.0 * w["cpu_us"] / 1e3 / w["elapsed_ms"], w["dumps"], d["processes"]))' "$tmp/i/fabric.json" ||
    echo "    no fabric.json"
}
if want j; then
  echo
  echo "(j) the transport watcher during a job"
  fabric_run 0
  FABRIC_PCT=$FABRIC_LAST FABRIC_START_PCT=$FABRIC_FIRST
  fabric_run "${FABRIC_CHURN:-2}"
  FABRIC_CHURN_PCT=$FABRIC_LAST
fi

vs() { # vs WHAT FIGURE TARGET UNIT: distance as figure/target
  if [ -n "$2" ]; then
    printf '  %-40s %10s %-3s target %6s %-3s (%sx the target)\n' "$1" "$2" "$4" "$3" "$4" \
      "$(awk -v a="$2" -v b="$3" 'BEGIN{printf "%.2f", a/b}')"
  fi
}
others() {
  vs "member peak RSS (a, N=2)" "$MEMBER_RSS" 4096 kB
  [ -n "${SYN_RATE:-}" ] && echo "  SYN rate (a): $SYN_RATE"
  [ -n "$PROFILE" ] && echo "  coordinator per member at N=1024 (b, under strace / plain): $PROFILE"
  vs "coordinator peak RSS at N=8192 (b)" "$COORD_RSS_8192" 16384 kB
  [ -n "$RES_16384" ] && echo "  N=16384 (b): $RES_16384"
  [ -n "${FDS_65536:-}" ] && echo "  N=65536 (g): coordinator peak open descriptors $FDS_65536 (target: a few hundred" \
    "connections; 255 relays + 255 direct members held, the rest VERIFY connections in flight); ${RES_65536:-}"
  [ -n "$PF_64" ] && echo "  --preflight at N=64 (i): $PF_64"
  [ -n "$FIRST" ] && echo "  exec -> first packet (d): $FIRST"
  [ -n "$DNS_LAG" ] && echo "  DNS late record (e): $DNS_LAG"
  vs "transport watcher's CPU, a job's start (j)" "${FABRIC_START_PCT:-}" 1 "%"
  vs "transport watcher's CPU, later (j)" "$FABRIC_PCT" 1 "%"
  vs "the same with 2 new connections/s/process" "${FABRIC_CHURN_PCT:-}" 1 "%"
}
other=$(others)
[ -n "$other" ] && printf '\nother figures against their targets, %s:\n%s\n' "$(load)" "$other"

# The scale rows: each figure against its floor from (h) of this run. A latency row's floor:
# its members' connections (2 each) x all processes' CPU per bare connection at that N,
# spread over the cores, and for the loaded row times the busy loops' slowdown of bare TCP
# measured in (h); a coordinator CPU row's floor: its connections per member at the
# coordinator x the bare server's CPU per connection.
TABLE=() MD=() OVER=() NOFLOOR=()
# row SECTION NAME FIGURE UNIT FLOOR TARGET [EXTRA [WHY_OVER [FLOOR_WORD]]]: one table line;
# nothing when SECTION did not run
row() {
  local sec=$1 name=$2 fig=$3 unit=$4 fl=$5 tgt=$6 extra=${7:-} xover=${8:-} fw=${9:-floor} r line
  want "$sec" || return 0
  if [ -z "$fig" ]; then
    line="$name: no figure (section ($sec) ran, its runs failed)"
    OVER+=("$name: no figure")
    MD+=("| $name | failed | | | ${tgt}x | |")
  elif [ -z "$fl" ]; then
    line="$name: $fig $unit, $fw not measured (target ${tgt}x)"
    NOFLOOR+=("$name")
    MD+=("| $name | $fig $unit | not measured | | ${tgt}x | |")
  else
    r=$(awk -v a="$fig" -v b="$fl" 'BEGIN{if (b > 0) printf "%.2f", a / b; else print "inf"}')
    line="$name: $fig $unit, $fw $fl $unit, ratio ${r}x (target ${tgt}x)"
    awk -v r="$r" -v t="$tgt" 'BEGIN{exit !(r == "inf" || r + 0 > t + 0)}' && OVER+=("$name: ${r}x > ${tgt}x")
    MD+=("| $name | $fig $unit | $([ "$fw" = floor ] || echo "$fw ")$fl $unit | ${r}x | ${tgt}x | |")
  fi
  [ -n "$extra" ] && line+="; $extra" && MD[-1]="${MD[-1]% |} $extra |"
  [ -n "$xover" ] && OVER+=("$name: $xover")
  TABLE+=("$line")
}
nproc_=$(nproc)
# cpu_floor N KEY US: (N - 1) members x US (all processes' CPU per member) over the cores, in
# ms (one decimal); KEY with L: times the busy loops' slowdown; nothing without US
cpu_floor() {
  local n=$1 key=$2 t=$3 slow=1
  [ -n "$t" ] || return 0
  if [ "$key" != "$n" ]; then
    slow=$(slowdown)
    [ -n "$slow" ] || return 0
  fi
  awk -v n="$n" -v t="$t" -v c="$nproc_" -v s="$slow" 'BEGIN{printf "%.1f", (n - 1) * t * s / c / 1000}'
}
# lat_floor N KEY: a member's 2 bare connections at KEY's N (total_us each)
lat_floor() {
  cpu_floor "$1" "$2" "$(awk -v t="${FL_TOT[$1]:-}" 'BEGIN{if (t != "") print 2 * t}')"
}
# msg_lat N KEY: the latency row's floor from the messages' own floor (all processes' CPU
# per member at N)
msg_lat() { cpu_floor "$1" "$2" "${SH_TOT[$1]:-}"; }
# msg_also FIGURE FLOOR UNIT: "messages' floor F UNIT, ratio R" for a star row, "" when not measured
msg_also() {
  [ -n "$1" ] && [ -n "$2" ] &&
    awk -v a="$1" -v b="$2" -v u="$3" 'BEGIN{if (b > 0) printf "messages'"'"' floor %s %s, ratio %.2fx", b, u, a / b}'
}
srv_floor() { # srv_floor CONNS: CONNS x the bare server's CPU per connection at N=16384 (best), us
  [ -n "${FL_SRV_BEST[16384]:-}" ] && awk -v k="$1" -v s="${FL_SRV_BEST[16384]}" 'BEGIN{printf "%.1f", k * s}'
}
# the tree's connections per member at the coordinator: every VERIFY, and phase 1 of the
# relays and of the members of the coordinator's own group (fan-out 256 - 1)
tree_conns=$(awk -v r="${TREE_RELAYS:-}" 'BEGIN{if (r != "") printf "%.3f", (16383 + 255 + r) / 16383}')
row g "coordinator CPU per member, star, N=16384" "$STAR_US" us "$(srv_floor 2)" 1.25 \
  "2 connections per member$(m=$(msg_also "$STAR_US" "${SH_SRV_BEST[16384]:-}" us); [ -n "$m" ] && echo "; $m")"
row g "coordinator CPU per member, tree, N=16384" "$TREE_US" us \
  "$([ -n "$tree_conns" ] && srv_floor "$tree_conns")" 1.25 "${tree_conns:-?} connections per member"
row b "N=1024 rendezvous, median" "$LAT_1024" ms "$(lat_floor 1024 1024)" 1.25 \
  "$(msg_also "$LAT_1024" "$(msg_lat 1024 1024)" ms)"
row b "N=8192 rendezvous, median" "$LAT_8192" ms "$(lat_floor 8192 8192)" 1.25 \
  "$(msg_also "$LAT_8192" "$(msg_lat 8192 8192)" ms)"
p9m=$(awk -v a="$P90_16384" -v b="$LAT_16384" 'BEGIN{if (b > 0) printf "%.2f", a / b}')
x16=''
[ -n "$RST_16384" ] && [ "$RST_16384" != 0 ] && x16="$RST_16384 resets (target 0)"
awk -v r="$p9m" 'BEGIN{exit !(r != "" && r + 0 > 1.5)}' && x16+="${x16:+, }p90/median ${p9m} > 1.5"
row b "N=16384 rendezvous, median, a busy loop per core" "$LAT_16384" ms "$(lat_floor 16384 16384L)" 1.25 \
  "resets ${RST_16384:-?} (target 0), p90/median ${p9m:-?} (target 1.5)$(m=$(msg_also "$LAT_16384" "$(msg_lat 16384 16384L)" ms); [ -n "$m" ] && echo "; $m")" "$x16"
row g "N=65536 rendezvous, tree, median" "${LAT_65536:-}" ms "$(lat_floor 65536 65536)" 1.25
row g "coordinator RSS per member, N=65536 tree" \
  "$(awk -v k="${RSS_65536:-}" 'BEGIN{if (k != "") printf "%.0f", k * 1024 / 65535}')" bytes 1024 1.00 \
  "peak RSS ${RSS_65536:-?} kB" "" limit
if [ "$(id -u)" -eq 0 ]; then
  row f "check, ${CHECK_ROW:-?} pods all pairs, busy loops" "$CHECK_FIG" s "$CHECK_FLOOR" 1.5 \
    "start ${CHECK_START:--} s (until the last pod probes)"
fi

echo
echo "scale rows against the floor of this run (h), $(load):"
[ ${#TABLE[@]} -gt 0 ] || echo "  no scale row ran (sections b, f, g)"
for l in "${TABLE[@]}"; do echo "  $l"; done
rc=0
if [ ${#OVER[@]} -gt 0 ]; then
  rc=1
  echo "over the target: $(printf '%s; ' "${OVER[@]}" | sed 's/; $//')"
fi
if [ ${#NOFLOOR[@]} -gt 0 ]; then
  rc=1
  echo "not proven, floor not measured ((h) did not run, or the floor's runs failed): $(printf '%s; ' "${NOFLOOR[@]}" | sed 's/; $//')"
fi
[ $rc -eq 0 ] && [ ${#TABLE[@]} -gt 0 ] && echo "every row at or under its target"

# README.md's measured block: after a full run (or BENCH_ONLY with BENCH_README=1)
wr=${BENCH_README:-}
[ -z "$wr" ] && { [ -z "${BENCH_ONLY:-}" ] && wr=1 || wr=0; }
if [ "$wr" = 1 ] && [ ${#TABLE[@]} -gt 0 ]; then
  if grep -q '^<!-- bench:begin -->$' README.md && grep -q '^<!-- bench:end -->$' README.md; then
    commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
    git diff --quiet HEAD -- . ':!README.md' 2>/dev/null || commit+=' with uncommitted changes'
    {
      echo "\`make bench\` on $(date -u +%F), $(nproc) cores (${CPU_MODEL:-?}), $(uname -sr), commit $commit;" \
        "load at the start $LOAD0, at the end $(cut -d' ' -f1-3 /proc/loadavg)${BENCH_ONLY:+; sections $BENCH_ONLY only}."
      echo "Each floor is the row's connections and closes with one 100-byte exchange each and no protocol;" \
        "the messages' floor is the rendezvous' own frames on them with no code; both measured in the same run."
      echo
      echo "| row | figure | floor | ratio | target | also |"
      echo "|---|---|---|---|---|---|"
      printf '%s\n' "${MD[@]}"
      [ ${#OVER[@]} -gt 0 ] && echo && echo "Over the target: $(printf '%s; ' "${OVER[@]}" | sed 's/; $//')."
      [ ${#NOFLOOR[@]} -gt 0 ] && echo && echo "Floor not measured: $(printf '%s; ' "${NOFLOOR[@]}" | sed 's/; $//')."
    } >"$tmp/block"
    awk -v f="$tmp/block" '/^<!-- bench:end -->$/ {skip = 0} !skip {print}
      /^<!-- bench:begin -->$/ {while ((getline l <f) > 0) print l; skip = 1}' README.md >"$tmp/README.md" &&
      cat "$tmp/README.md" >README.md && echo "README.md: the measured block rewritten"
  else
    echo "README.md: no <!-- bench:begin --> / <!-- bench:end --> block, not written"
  fi
fi
exit $rc
