#!/usr/bin/env bash
# The transport report after the exec, on a real torch Gloo job (fabric_gloo.py under
# torchrun, 2 pods, gxboot --supervise; the coordinator of run C as PID 1 of its own PID
# namespace with a termination log):
#  A) eth0 closed but DNS and the rendezvous port: every pod's verdict is secondary, CMD's
#     net1 bytes > 0 and its eth0 bytes 0 (fabric.json and the line); the coordinator's
#     job-wide line says 2 of 2 pods on the secondary network, 0 with peer traffic on eth0.
#  B) eth0 open and the user's GLOO_SOCKET_IFNAME=eth0: every pod's verdict is primary, the
#     warning names eth0 and the variable, the job-wide line counts both pods on eth0.
#  C) the same with --expect-fabric secondary and a job that would run for minutes: every
#     pod exits 6, the coordinator's termination log has the one line, the job never
#     finished (no FABRICJOB line).
# Bytes are the kernel's (tcp_info of CMD's sockets), not the job's own count.
# gx-timeout: 150
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 2 || fail "cluster_create"
T=$(cluster_token)
JOB=("$PY" -m torch.distributed.run --nproc_per_node 1 --rdzv_backend static --redirects 1
  --tee 1 "$GX_E2E_DIR/fabric_gloo.py")
P=(--peers 'job-worker-{0..1}' --token-file "$T" --timeout 30 --supervise)
jv() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$GX_DIR/out$1/fabric.json" "$2"; }

# A) eth0 closed
for i in 0 1; do cluster_cut_eth0 "$i"; done
for i in 1 0; do gx_start "$i" "${P[@]}" -- "${JOB[@]}"; done
gx_wait_all 90 0 1
gx_expect_rc 0 0 1
for i in 0 1; do
  grep -q 'FABRICJOB rank=.* gloo_if=net1 .* OK' "$GX_DIR/pod$i.log" || fail "A: pod $i job" "$GX_DIR/pod$i.log"
  [ "$(jv "$i" 'd["verdict"]')" = secondary ] || fail "A: pod $i verdict" "$GX_DIR/out$i/fabric.json"
  [ "$(jv "$i" 'd["final"]')" = True ] || fail "A: pod $i fabric.json not final" "$GX_DIR/out$i/fabric.json"
  [ "$(jv "$i" 'd["tcp"]["net1"]["bytes"] > 0')" = True ] || fail "A: pod $i no net1 bytes" "$GX_DIR/out$i/fabric.json"
  [ "$(jv "$i" 'd["tcp"]["eth0"]["bytes"]')" = 0 ] || fail "A: pod $i eth0 bytes" "$GX_DIR/out$i/fabric.json"
  gx_expect_in "$i" "info: fabric: secondary: no NCCL/UCX lines; CMD's TCP: 0 on eth0, [0-9.]+ [kMG]B on net1$"
done
gx_expect_in 0 'info: fabric: job: 2 of 2 pods on the secondary network \(TCP\), 0 with peer traffic on eth0$'
echo "fabric A (eth0 closed): $(grep -h 'info: fabric: secondary' "$GX_DIR/pod1.log" | tail -1 | sed 's/.*info: //')"
echo "fabric A job: $(grep -h 'info: fabric: job' "$GX_DIR/pod0.log" | tail -1 | sed 's/.*info: //')"
echo "fabric A bytes on net1: pod0 $(jv 0 'd["tcp"]["net1"]["bytes"]'), pod1 $(jv 1 'd["tcp"]["net1"]["bytes"]') (the job moved $(grep -ho 'bytes=[0-9]*' "$GX_DIR/pod0.log" | head -1) per rank each way)"

# B) eth0 open, the user's Gloo on eth0
for i in 0 1; do ip netns exec "$(pod_ns "$i")" nft delete table inet gxcut; done
for i in 1 0; do
  mkdir -p "$GX_DIR/out$i"
  pod_bg "$i" "$GX_DIR/pod$i.log" env GLOO_SOCKET_IFNAME=eth0 "$GXBOOT" --out "$GX_DIR/out$i" \
    "${P[@]}" -- "${JOB[@]}"
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 90 0 1
gx_expect_rc 0 0 1
for i in 0 1; do
  grep -q 'FABRICJOB rank=.* gloo_if=eth0 .* OK' "$GX_DIR/pod$i.log" || fail "B: pod $i job" "$GX_DIR/pod$i.log"
  [ "$(jv "$i" 'd["verdict"]')" = primary ] || fail "B: pod $i verdict" "$GX_DIR/out$i/fabric.json"
  [ "$(jv "$i" 'd["tcp"]["eth0"]["peer_primary"] > 0')" = True ] || fail "B: pod $i eth0 peer bytes" "$GX_DIR/out$i/fabric.json"
  gx_expect_in "$i" "warning: fabric: CMD's peer traffic goes over the primary network: [0-9.]+ [kMG]B on eth0 to job-worker-[01] \(10\.[0-9.]+\) from pid [0-9]+ \(GLOO_SOCKET_IFNAME=eth0 in its environment\)"
  gx_expect_in "$i" "info: fabric: primary: "
done
gx_expect_in 0 'info: fabric: job: 2 of 2 pods on the primary network, 2 with peer traffic on eth0: job-worker-0, job-worker-1$'
echo "fabric B (GLOO_SOCKET_IFNAME=eth0): $(grep -h 'warning: fabric: CMD' "$GX_DIR/pod1.log" | tail -1 | sed 's/.*warning: //')"
echo "fabric B job: $(grep -h 'info: fabric: job' "$GX_DIR/pod0.log" | tail -1 | sed 's/.*info: //')"

# C) the same with the gate; the coordinator as PID 1 with a termination log (a /dev of its
# own: the host's devices the job needs bound into a tmpfs)
dev_setup='d=$1; shift; mkdir -p "$d/realdev" && mount --bind /dev "$d/realdev" &&
  mount -t tmpfs -o size=1m gxdev /dev && for n in null zero full random urandom; do
  touch "/dev/$n" && mount --bind "$d/realdev/$n" "/dev/$n"; done &&
  mkdir /dev/shm && mount -t tmpfs -o size=64m gxshm /dev/shm && ln -s /proc/self/fd /dev/fd &&
  : >/dev/termination-log && "$@"; rc=$?; cp /dev/termination-log "$d/tlog"; exit $rc'
for i in 1 0; do
  mkdir -p "$GX_DIR/out$i"
  if [ "$i" = 0 ]; then
    pod_bg 0 "$GX_DIR/pod0.log" env GLOO_SOCKET_IFNAME=eth0 FABRIC_ROUNDS=1000000 \
      unshare -m -f -p --mount-proc sh -c "$dev_setup" sh "$GX_DIR" \
      "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" --expect-fabric secondary -- "${JOB[@]}"
  else
    pod_bg 1 "$GX_DIR/pod1.log" env GLOO_SOCKET_IFNAME=eth0 FABRIC_ROUNDS=1000000 \
      "$GXBOOT" --out "$GX_DIR/out1" "${P[@]}" --expect-fabric secondary -- "${JOB[@]}"
  fi
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 90 0 1
gx_expect_rc 6 0 1
for i in 0 1; do
  ! grep -q 'FABRICJOB' "$GX_DIR/pod$i.log" || fail "C: pod $i's job ran to its end" "$GX_DIR/pod$i.log"
  gx_expect_in "$i" "^gxboot: --expect-fabric secondary: .*peer traffic goes over the primary network: .* on eth0 to job-worker-[01] .*; job ended$"
  [ "$(jv "$i" 'd["gate"]["ended"] is not None')" = True ] || fail "C: pod $i fabric.json gate" "$GX_DIR/out$i/fabric.json"
done
grep -q '^gxboot: --expect-fabric secondary: .*primary network: .* on eth0 .*; job ended$' "$GX_DIR/tlog" ||
  fail "C: the coordinator's termination log" "$GX_DIR/tlog" "$GX_DIR/pod0.log"
echo "fabric C (--expect-fabric secondary): exit 6 on both pods; termination log: $(cat "$GX_DIR/tlog")"
