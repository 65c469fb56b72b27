#!/usr/bin/env bash
# The transport report on real soft-RoCE: 2 pods (rxe<i> on each net1), a UCX job as CMD
# behind `gxboot --supervise` with gxboot's env (fabric_ucx.py: UCX's io_demo, rank 0 serves,
# rank 1 writes and reads 1 MiB blocks over UCP).
#  a) UCX_TLS=rc_verbs: every pod's verdict is rdma; its OWN rail (rxe<i>:1, verified) moved
#     bytes (> 1 MB, the port counters); UCX said rc_verbs on it; the coordinator's job-wide
#     line counts 2 of 2 pods on RDMA.
#  b) the same job forced onto TCP by the user (UCX_TLS=tcp UCX_NET_DEVICES=net1): the verdict
#     is secondary (TCP on net1), UCX's endpoints tcp/net1, and the warning names UCX_TLS=tcp
#     while verified rails exist.
#  c) b) with --expect-fabric rdma and a job that would run for minutes: every pod exits 6 with
#     the one line, its cause UCX's endpoints on tcp, or the bulk of TCP bytes while the rails
#     stayed idle when that came first (the library's file is read every 2 s).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
gx_need_gxboot
command -v io_demo >/dev/null || { echo "SKIP: no io_demo (ucx-utils)"; exit 77; }
rxe_pods 2
T=$(cluster_token)
P=(--peers 'job-worker-{0..1}' --token-file "$T" --out @OUT@ --timeout 60 --supervise)
JOB=("$PY" "$GX_E2E_DIR/rdma/fabric_ucx.py")
jv() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$GX_DIR/out$1/fabric.json" "$2"; }
run() { # run SEC ENV... -- GXBOOT-ARGS... : the user's ENV for gxboot and CMD; @OUT@ as rxe_start
  local sec=$1 i a env=() args
  shift
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  for i in 1 0; do
    rm -rf "$GX_DIR/out$i"
    mkdir -p "$GX_DIR/out$i"
    args=()
    for a in "$@"; do args+=("${a//@OUT@/$GX_DIR/out$i}"); done
    pod_bg "$i" "$GX_DIR/pod$i.log" env "${env[@]}" "$GXBOOT" "${args[@]}"
    GX_PIDS[i]=$GX_PID
  done
  gx_wait_all "$sec" 0 1
}

# a)
run 200 UCX_TLS=rc_verbs -- "${P[@]}" -- "${JOB[@]}"
gx_expect_rc 0 0 1
for i in 0 1; do
  gx_expect_in "$i" "UCXJOB rank=$i tls=rc_verbs devices=rxe$i:1 rc=0"
  [ "$(jv "$i" 'd["verdict"]')" = rdma ] || fail "a: job-worker-$i verdict" "$GX_DIR/out$i/fabric.json" "$GX_DIR/pod$i.log"
  [ "$(jv "$i" 'list(d["rdma"])')" = "['rxe$i:1']" ] || fail "a: job-worker-$i rails" "$GX_DIR/out$i/fabric.json"
  [ "$(jv "$i" 'd["rdma"]["rxe'$i':1"]["verified"] and d["rdma"]["rxe'$i':1"]["bytes"] > 1 << 20')" = True ] ||
    fail "a: job-worker-$i: no RDMA bytes on its own rail" "$GX_DIR/out$i/fabric.json"
  [ "$(jv "$i" '"rc_verbs/rxe'$i':1" in d["library"]["ucx"]["transports"]')" = True ] ||
    fail "a: job-worker-$i: UCX transports" "$GX_DIR/out$i/fabric.json"
  gx_expect_in "$i" "info: fabric: rdma: UCX rc_verbs/rxe$i:1, RDMA [0-9.]+ MB on 1 verified rail; CMD's TCP: "
  echo "rdma fabric a) job-worker-$i: $(grep -ah 'info: fabric: rdma' "$GX_DIR/pod$i.log" | tail -1 | sed 's/.*info: //') [rxe$i:1 $(jv "$i" 'd["rdma"]["rxe'$i':1"]["bytes"]') bytes, $(jv "$i" 'd["rdma"]["rxe'$i':1"]["counters"]')]"
done
gx_expect_in 0 'info: fabric: job: 2 of 2 pods on RDMA \(1 rail each\), 0 with peer traffic on eth0$'
echo "rdma fabric a) job: $(grep -ah 'info: fabric: job' "$GX_DIR/pod0.log" | tail -1 | sed 's/.*info: //')"

# b)
run 200 UCX_TLS=tcp UCX_NET_DEVICES=net1 -- "${P[@]}" -- "${JOB[@]}"
gx_expect_rc 0 0 1
for i in 0 1; do
  gx_expect_in "$i" "UCXJOB rank=$i tls=tcp devices=net1 rc=0"
  [ "$(jv "$i" 'd["verdict"]')" = secondary ] || fail "b: job-worker-$i verdict" "$GX_DIR/out$i/fabric.json" "$GX_DIR/pod$i.log"
  [ "$(jv "$i" 'd["tcp"]["net1"]["peer_secondary"] > 1 << 20')" = True ] || fail "b: job-worker-$i TCP bytes" "$GX_DIR/out$i/fabric.json"
  gx_expect_in "$i" "info: fabric: secondary: UCX tcp/net1, RDMA "
  gx_expect_in "$i" "warning: fabric: verified RDMA rails, but the job's traffic goes over TCP: UCX's endpoints use tcp/net1 and no RDMA transport \(UCX_TLS=tcp, UCX_NET_DEVICES=net1\)"
done
echo "rdma fabric b) $(grep -ah 'info: fabric: secondary' "$GX_DIR/pod1.log" | tail -1 | sed 's/.*info: //')"
echo "rdma fabric b) $(grep -ah 'warning: fabric: verified' "$GX_DIR/pod1.log" | tail -1 | sed 's/.*warning: //')"

# c)
run 200 UCX_TLS=tcp UCX_NET_DEVICES=net1 IO_ITERS=100000 -- "${P[@]}" --expect-fabric rdma -- "${JOB[@]}"
grep -ah 'fabric: \|^gxboot: \|UCXJOB' "$GX_DIR/pod0.log" "$GX_DIR/pod1.log" | sed 's/^/  c) /'
gx_expect_rc 6 0 1
for i in 0 1; do
  gx_expect_in "$i" "^gxboot: --expect-fabric rdma: (UCX's endpoints use tcp/net1 and no RDMA transport \(UCX_TLS=tcp, UCX_NET_DEVICES=net1\)|[0-9.]+ [kMG]B of CMD's TCP to peers while the verified rails moved nothing); job ended$"
done
# the client's IO was cut short (100000 iterations would take hours here)
! grep -aq "Client exit with status 'OK'" "$GX_DIR/pod1.log" || fail "c: the job ran to its end" "$GX_DIR/pod1.log"
for i in 0 1; do echo "rdma fabric c) job-worker-$i exit 6: $(grep -ah '^gxboot: --expect' "$GX_DIR/pod$i.log")"; done
