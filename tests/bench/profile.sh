#!/usr/bin/env bash
# profile.sh [N]: the coordinator's cost per member, where it goes: bench_rdzv N P (P =
# PROFILE_PROCS member processes, 2 by default) once under strace (the coordinator process
# only is counted: syscalls per member by name), once plain (CPU us per member: user +
# system, getrusage) and once under perf record, then both per phase: accept, handshake,
# JOIN, VERIFY, COMMIT, end, loop. Needs strace, perf for the CPU per phase; run as root
# for the private netns (somaxconn raised as in run.sh (b)), else on the host's loopback.
#
# Syscalls per phase, from the trace (strace -ff -xx -s 65536 -ttt -T: one file per
# process, every byte of a recv or send):
# - accept4 (the EAGAIN that ends an accept batch included) and the epoll_ctl ADD of the
#   new fd are accept. Every other syscall on an accepted fd goes to the frames it carries:
#   the frame headers ("GXB1", version, u16 type, u32 length) are followed through the byte
#   stream of each fd and direction, so a frame split over two recvs is still known. One
#   recv or send carrying frames of k types (AUTH + JOIN, PROOF + ASSIGN, PROOF +
#   VERIFIED) is split, 1/k to each frame's phase: the per-phase sums stay whole syscalls.
#   HELLO, CHALLENGE, AUTH, PROOF, REJECT are handshake (on both connections); JOIN,
#   ASSIGN are JOIN; VERIFY, VERIFIED, VFAIL are VERIFY; COMMIT is COMMIT.
# - a syscall without frames on an accepted fd (EAGAIN, epoll_ctl MOD/DEL, getsockname,
#   ioctl, close) goes to the phase of the last frame seen on that fd: the phase-2
#   connection's close is VERIFY. After COMMIT it is end: the phase-1 connection's
#   epoll_ctl DEL and close when the coordinator is freed (rdzv_coord_free, at the
#   bench's end; a job keeps it open until the job ends).
# - everything else (epoll_wait, timers, memory, start and exit) and frames of other types
#   (WAITING, PING, PONG, ABORT) are loop.
# CPU per phase: the plain run's CPU split by the coordinator's perf samples (cpu-clock,
# 4 kHz, --call-graph dwarf; a kernel sample carries the user stack of its syscall). The
# release objects are linked once more with --eh-frame-hdr into build/prof (same code;
# without that table perf 6.1 unwinds no user frame past the leaf of a static binary). A
# sample goes to the innermost of these on its stack: on_accept (accept),
# rdzv_co_handshake (handshake), rdzv_co_accept_join / rdzv_co_assign (JOIN),
# verify_reply (VERIFY), rdzv_co_check_commit / rdzv_co_commit_* (COMMIT),
# rdzv_coord_free (end). One under conn_event with none of them (its recv, frame parsing
# and MAC checks, its last send, a close) is split over handshake, JOIN and VERIFY as the
# trace split that syscall (recvfrom's split for user code; JOIN and VERIFY only under
# rdzv_co_handle, where co_join and co_verify are inlined); the rest (epoll_wait, sweep,
# start) is loop. Without perf, or with under 100 samples or under 90% of the stacks
# reaching main, the split is an estimate from the trace instead: each syscall costs the
# time from the end of the one before to its own end, epoll_wait only up to its start;
# strace's own cost per syscall is in that time, so it overstates phases of many cheap
# syscalls (the line above the table says which split it used).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export LC_ALL=C
n=${1:-1024}
procs=${PROFILE_PROCS:-2}
case "$n$procs" in *[!0-9]*) echo "profile: N and PROFILE_PROCS are numbers" >&2; exit 2 ;; esac
B=${BENCH_BUILD:-build}
BENCH=$B/release/bench/bench_rdzv
PBENCH=$B/prof/release/bench/bench_rdzv
command -v strace >/dev/null || { echo "profile: skipped: strace not installed"; exit 0; }
make --no-print-directory MODE=release BUILD="$B" "$BENCH" >/dev/null ||
  { echo "profile: cannot build $BENCH"; exit 1; }
perf=perf
if ! command -v perf >/dev/null; then
  echo "profile: perf skipped: not installed (CPU per phase estimated from the trace)"
  perf=
elif ! make --no-print-directory MODE=release BUILD="$B/prof" \
  EXTRA_LDFLAGS=-Wl,--eh-frame-hdr "$PBENCH" >/dev/null; then
  echo "profile: perf skipped: cannot build $PBENCH (CPU per phase estimated from the trace)"
  perf=
fi
tmp=$(mktemp -d /tmp/gxprof.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/cpu"
trap 'exit 130' INT TERM HUP
ns() { # ns CMD: in a fresh netns with raised backlogs when root
  if [ "$(id -u)" -eq 0 ]; then
    unshare -n bash -c "ip link set lo up; sysctl -qw net.core.somaxconn=65535 \
      net.ipv4.tcp_max_syn_backlog=65535; ulimit -n \$(ulimit -Hn); $1"
  else
    bash -c "$1"
  fi
}
plain=$(ns "$BENCH $n $procs" 2>&1 | grep '^N=')
load=$(cut -d' ' -f1-3 /proc/loadavg)
ns "strace -ff -qq -xx -s 65536 -ttt -T -o $tmp/st $BENCH $n $procs >$tmp/out 2>&1"
# the coordinator is the bench's first child: the first clone in the file of the process
# that exec'd the bench (the only execve in the trace)
parent=$(grep -l '^[0-9.]* execve(' "$tmp"/st.* 2>/dev/null | head -1)
coord=$([ -n "$parent" ] && awk '$2 ~ /^(clone|clone3|fork|vfork)\(/ && $(NF - 1) + 0 > 0 {
    print $(NF - 1) + 0; exit }' "$parent")
ctrace=$tmp/st.$coord
if [ -z "$coord" ] || [ ! -s "$ctrace" ]; then
  echo "profile: no coordinator in the trace"
  cat "$tmp/out"
  exit 1
fi
if [ -n "$perf" ]; then
  ns "perf record -q -e cpu-clock -F 4000 --call-graph dwarf,8192 -o $tmp/perf.data \
    -- $PBENCH $n $procs >$tmp/pout 2>&1"
  perf script -i "$tmp/perf.data" -F pid,ip,sym >"$tmp/perf.txt" 2>/dev/null || : >"$tmp/perf.txt"
  rm -f "$tmp/perf.data"
fi
cpu=$(echo "$plain" | grep -o 'coord_cpu_ms=[0-9]*' | cut -d= -f2)
echo "coordinator profile at N=$n (members in $procs processes; $load load)"
echo "  plain run: $plain"
echo "  traced run: $(grep '^N=' "$tmp/out" || tail -1 "$tmp/out")"
[ -n "$perf" ] && echo "  perf run: $(grep '^N=' "$tmp/pout" || tail -1 "$tmp/pout")"
awk -v n="$n" '$2 ~ /^[a-z_0-9]+\(/ {
    s = $2; sub(/\(.*/, "", s); k[s]++; t++ }
  END { printf "  syscalls per member: %.1f (", t / (n - 1);
    for (s in k) if (k[s] / (n - 1) >= 0.05) printf " %s=%.2f", s, k[s] / (n - 1); print " )" }' \
  "$ctrace"
[ -n "$cpu" ] && echo "  CPU per member: $((cpu * 1000 / (n - 1))) us (user + system, no strace)"

# the trace, per phase: "S phase syscall count", "B phase busy-seconds", "X lost-streams"
awk '
function num(h, off, len,   v, i) { # big-endian integer at byte off of a hex string
  v = 0
  for (i = 0; i < len; i++) v = v * 256 + hx[substr(h, (off + i) * 2 + 1, 2)]
  return v
}
function phase(t) { return (t in ph) ? ph[t] : "loop" }
# frames(k, h, nb): the frames that bytes [0, nb) of stream k (fd, direction) touch, in
# fp[1..nf]: the rest of a frame begun before, then each header in these bytes
function frames(k, h, nb,   off, take, need, len) {
  off = 0
  if (bad[k]) return
  if (rem[k] > 0) {
    fp[++nf] = phase(cur[k]); take = rem[k] < nb ? rem[k] : nb; rem[k] -= take; off = take
  }
  while (off < nb) {
    need = 12 - length(hb[k]) / 2; take = need < nb - off ? need : nb - off
    hb[k] = hb[k] substr(h, off * 2 + 1, take * 2); off += take
    if (length(hb[k]) < 24) break # the header goes on in the next syscall
    if (substr(hb[k], 1, 8) != "47584231") { bad[k] = 1; nbad++; nf = 0; return }
    cur[k] = num(hb[k], 6, 2); len = num(hb[k], 8, 4); hb[k] = ""
    fp[++nf] = phase(cur[k])
    take = len < nb - off ? len : nb - off; rem[k] = len - take; off += take
  }
}
function add(p, s, w, c) { cnt[p " " s] += w; busy[p] += c }
BEGIN {
  for (i = 0; i < 256; i++) hx[sprintf("%02x", i)] = i
  for (t = 1; t <= 5; t++) ph[t] = "handshake"
  ph[10] = ph[11] = "JOIN"; ph[12] = ph[13] = ph[14] = ph[21] = "VERIFY"; ph[15] = "COMMIT"
}
$2 ~ /^[a-z_0-9]+\(/ {
  s = $2; sub(/\(.*/, "", s)
  line = $0; dur = 0; nf = 0; fd = -1; p = "loop"
  if (match(line, / <[0-9.]+>$/)) {
    dur = substr(line, RSTART + 2, RLENGTH - 3) + 0; line = substr(line, 1, RSTART - 1)
  }
  ret = match(line, / = [^=]*$/) ? substr(line, RSTART + 3) + 0 : -1
  if (match(line, /^[0-9.]+ [a-z_0-9]+\([0-9]+/)) {
    fd = substr(line, RSTART, RLENGTH); sub(/.*\(/, "", fd); fd += 0
  }
  if (s == "accept4") {
    p = "accept"
    if (ret >= 0) {
      on[ret] = 1; last[ret] = "accept"
      for (d = 0; d < 2; d++) { k = ret SUBSEP d; rem[k] = 0; hb[k] = ""; bad[k] = 0 }
    }
  } else if (s == "epoll_ctl" && match(line, /EPOLL_CTL_[A-Z]+, [0-9]+/)) {
    split(substr(line, RSTART, RLENGTH), a, /, /)
    if ((a[2] + 0) in on)
      p = a[1] == "EPOLL_CTL_ADD" ? "accept" : last[a[2] + 0] == "COMMIT" ? "end" : last[a[2] + 0]
  } else if (fd in on) {
    p = last[fd] == "COMMIT" ? "end" : last[fd]
    if (s ~ /^(recvfrom|recv|read|sendto|send|write)$/ && ret > 0 &&
        match(line, /"[^"]*"/)) {
      h = substr(line, RSTART + 1, RLENGTH - 2); gsub(/\\x/, "", h)
      k = fd SUBSEP (s ~ /^(recv|read)/ ? 0 : 1)
      if (length(h) / 2 < ret) { bad[k] = 1; nbad++ } # cut by -s: the frame bounds are lost
      frames(k, h, ret)
    }
    if (s == "close") delete on[fd]
  }
  # busy time: from the end of the syscall before to this one'"'"'s end; epoll_wait to its start
  ts = $1 + 0
  c = started ? (s == "epoll_wait" ? ts : ts + dur) - pend : 0
  if (c < 0) c = 0
  started = 1; pend = ts + dur
  if (nf > 0) {
    for (i = 1; i <= nf; i++) add(fp[i], s, 1 / nf, c / nf)
    last[fd] = fp[nf]
  } else {
    add(p, s, 1, c)
  }
}
END {
  for (k in cnt) print "S", k, cnt[k]
  for (p in busy) print "B", p, busy[p]
  print "X", nbad + 0
}' "$ctrace" >"$tmp/phases"

# perf samples of the coordinator (the process that ran on_accept), per phase: "C phase
# samples", "U samples samples-reaching-main"
if [ -n "$perf" ]; then
  awk 'FNR == NR { if ($1 == "S") sc[$2, $3] = $4; next }
  function give(p, w) { got[pid, p] += w }
  function share(q1, q2, q3, key,   t) { # split one sample as the trace split syscall key
    t = sc[q1, key] + sc[q2, key] + sc[q3, key]
    if (t == 0) { key = "recvfrom"; t = sc[q1, key] + sc[q2, key] + sc[q3, key] }
    if (t == 0) { give("loop", 1); return }
    give(q1, sc[q1, key] / t); give(q2, sc[q2, key] / t); if (q3 != "") give(q3, sc[q3, key] / t)
  }
  function sample(   i, f, w, inh) {
    if (pid == "") return
    nsam[pid]++
    w = ""; inh = 0
    for (i = 1; i <= nfr; i++) if (fr[i] == "main") { deep[pid]++; break }
    for (i = 1; i <= nfr; i++) {
      f = fr[i]
      if (f == "on_accept") acc[pid] = 1
      if (f in mark) { give(mark[f], 1); return }
      if (w == "" && f ~ /^__x64_sys_/) { w = f; sub(/^__x64_sys_/, "", w) }
      if (f == "rdzv_co_handle") inh = 1
      if (f == "conn_event") {
        if (inh) share("JOIN", "VERIFY", "", w)
        else share("handshake", "JOIN", "VERIFY", w)
        return
      }
    }
    give("loop", 1)
  }
  BEGIN {
    mark["on_accept"] = "accept"; mark["rdzv_co_handshake"] = "handshake"
    mark["rdzv_co_accept_join"] = mark["rdzv_co_assign"] = "JOIN"
    mark["verify_reply"] = mark["rdzv_co_tverify"] = "VERIFY"
    mark["rdzv_co_check_commit"] = mark["rdzv_co_commit_conn"] = "COMMIT"
    mark["rdzv_co_commit_one"] = "COMMIT"; mark["rdzv_coord_free"] = "end"
  }
  /^ *[0-9]+ *$/ { sample(); pid = $1 + 0; nfr = 0; next }
  NF >= 2 { f = $2; sub(/\..*/, "", f); fr[++nfr] = f } # rdzv_coord_free.part.0
  END {
    sample()
    for (p in nsam) if (p in acc && (best == "" || nsam[p] > nsam[best])) best = p
    if (best == "") exit
    for (k in got) { split(k, a, SUBSEP); if (a[1] == best) print "C", a[2], got[k] }
    print "U", nsam[best], deep[best] + 0
  }' "$tmp/phases" "$tmp/perf.txt" >"$tmp/cpu"
fi

echo "  per phase at N=$n, $procs member processes, load $(cut -d' ' -f1-3 /proc/loadavg)" \
  "(coordinator only, per member):"
awk -v n="$n" -v cpu="${cpu:-}" '
  $1 == "S" { cnt[$2, $3] = $4; tot[$2] += $4; names[$3] = 1 }
  $1 == "B" { busy[$2] = $3 }
  $1 == "C" { sam[$2] = $3 }
  $1 == "U" { nsam = $2; deep = $3 }
  $1 == "X" { nbad = $2 }
  END {
    m = n - 1; np = split("accept handshake JOIN VERIFY COMMIT end loop", P, " ")
    use = nsam >= 100 && deep >= 0.9 * nsam
    for (i = 1; i <= np; i++) {
      p = P[i]; all += tot[p]; w[p] = use ? sam[p] : busy[p]; ws += w[p]
    }
    if (use)
      printf "    CPU us: the plain run'"'"'s CPU split by %d perf samples of it\n", nsam
    else
      printf "    CPU us: an estimate, the plain run'"'"'s CPU split by traced time%s\n",
        nsam ? sprintf(" (perf: %d samples, %d reach main)", nsam, deep) : ""
    ns = 0
    for (s in names) { # sorted by name (mawk has no asort)
      for (j = ns; j > 0 && sn[j] > s; j--) sn[j + 1] = sn[j]
      sn[j + 1] = s; ns++
    }
    printf "    %-10s %8s %7s  %s\n", "phase", "syscalls", "CPU us", "syscalls by name"
    for (i = 1; i <= np; i++) {
      p = P[i]; by = ""
      for (j = 1; j <= ns; j++)
        if (cnt[p, sn[j]] / m >= 0.005) by = by sprintf(" %s=%.2f", sn[j], cnt[p, sn[j]] / m)
      us = "?"
      if (cpu != "" && ws > 0) us = sprintf("%.0f", cpu * 1000 / m * w[p] / ws)
      printf "    %-10s %8.2f %7s %s\n", p, tot[p] / m, us, by
    }
    us = cpu != "" ? sprintf("%.0f", cpu * 1000 / m) : "?"
    printf "    %-10s %8.2f %7s\n", "total", all / m, us
    if (nbad)
      printf "    (%d streams lost their frame bounds: their rest went to the last phase)\n", nbad
  }' "$tmp/phases" "$tmp/cpu"
