#!/usr/bin/env bash
# Launch lines written for eth0 (agent/launch/rewrite.c) as gxboot hands them to torchrun, on 3
# pods with eth0 closed but DNS and 29410. CMD is the first "torchrun" on PATH: the case's own
# script that prints each argument as an "ARG <word>" line and exits, so the case asserts what
# gxboot passes after a real rendezvous, not torch (case_torchrun runs the real one).
#   pod 0, the coordinator: --rdzv_backend c10d --rdzv_endpoint=<its own eth0 address>:29400
#     --node_rank 1 --nnodes 3 -> the endpoint on its net1 address (an address of this pod
#     names it), --node_rank 0 and the static backend, each with a warning saying why
#   pod 1: --master_addr <pod 0's eth0 address> --nnodes 2 -> pod 0's net1 address (the
#     address job-worker-0 resolved to), --nnodes 3 with a warning
#   pod 2: --master_addr job-worker-0.otherjob.otherns --node_rank 5 -> left as written (another
#     namespace's pod with the coordinator's first label), one warning, no rewrite lines
# Part 2: torchrun --nnodes 1:2 (an elastic range) with gxboot's peers fixed at 2 pods: both
# exit 2 with a line naming gxboot's --nnodes 1:2 and --no-rewrite; the coordinator alone with
# gxboot --nnodes 1:2 runs it as that range (rewritten to 2, with the warning), its hostfile
# listing the pods that joined (the listed job-worker-1 has not).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
mkdir -p "$GX_DIR/bin"
printf '#!/bin/sh\nfor a in "$@"; do echo "ARG $a"; done\n' >"$GX_DIR/bin/torchrun"
chmod 755 "$GX_DIR/bin/torchrun"
export PATH="$GX_DIR/bin:$PATH"
# args i : pod i's torchrun arguments, one line
args() { sed -n 's/^ARG //p' "$GX_DIR/pod$1.log" | tr '\n' ' '; }
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 20)
E0=$(pod_eth0 0)
N0=$(pod_net1 0)
gx_start 0 "${P[@]}" -- torchrun --rdzv_backend c10d --rdzv_endpoint="$E0:29400" --node_rank 1 \
  --nnodes 3 x.py
gx_start 1 "${P[@]}" -- torchrun --master_addr "$E0" --nnodes 2 x.py
gx_start 2 "${P[@]}" -- torchrun --master_addr job-worker-0.otherjob.otherns --node_rank 5 x.py
gx_wait_all 40 0 1 2
gx_expect_rc 0 0 1 2
want="--rdzv_backend static --rdzv_endpoint=$N0:29400 --node_rank 0 --nnodes 3 x.py "
[ "$(args 0)" = "$want" ] || fail "coordinator: torchrun got '$(args 0)', want '$want'" "$GX_DIR/pod0.log"
gx_expect_in 0 "warning: rewrite --node_rank: 1 -> 0: gxboot's rendezvous ranked this pod 0"
gx_expect_in 0 "warning: rewrite --rdzv_backend: c10d -> static: torch's c10d rendezvous"
! grep -q "names another host" "$GX_DIR/pod0.log" || fail "coordinator: its own eth0 address named 'another host'" "$GX_DIR/pod0.log"
want="--master_addr $N0 --nnodes 3 x.py "
[ "$(args 1)" = "$want" ] || fail "job-worker-1: torchrun got '$(args 1)', want '$want'" "$GX_DIR/pod1.log"
gx_expect_in 1 "warning: rewrite --nnodes: 2 -> 3: gxboot's rendezvous has 3 pods"
want="--master_addr job-worker-0.otherjob.otherns --node_rank 5 x.py "
[ "$(args 2)" = "$want" ] || fail "job-worker-2: torchrun got '$(args 2)', want '$want'" "$GX_DIR/pod2.log"
gx_expect_in 2 "torchrun --master_addr job-worker-0.otherjob.otherns names another host: left alone"
! grep -q "rewrite --" "$GX_DIR/pod2.log" || fail "job-worker-2: a line left as written logged rewrites" "$GX_DIR/pod2.log"
echo "torchrun lines: the coordinator's eth0 address mapped on both sides, meanings warned, another namespace's host left alone"

# ---- part 2: an elastic range ----
P=(--peers 'job-worker-{0..1}' --token-file "$T" --timeout 20)
for i in 0 1; do
  rm -rf "$GX_DIR/out$i"
  gx_start "$i" "${P[@]}" -- torchrun --nnodes 1:2 --master_addr job-worker-0 x.py
done
gx_wait_all 30 0 1
gx_expect_rc 2 0 1
for i in 0 1; do
  gx_expect_in "$i" "gxboot: torchrun --nnodes 1:2 is an elastic range, .* give gxboot the same range \(--nnodes 1:2\) .* or --no-rewrite"
  ! grep -q '^ARG' "$GX_DIR/pod$i.log" || fail "job-worker-$i: torchrun ran although refused" "$GX_DIR/pod$i.log"
done
rm -rf "$GX_DIR/out0"
# the coordinator alone: it commits at MIN = 1; job-worker-1 is listed but not there (its
# hostfile line comes when it joins)
gx_start 0 "${P[@]}" --nnodes 1:2 -- torchrun --nnodes 1:2 --master_addr job-worker-0 x.py
gx_wait_all 30 0
gx_expect_rc 0 0
want="--nnodes 2 --master_addr $N0 x.py "
[ "$(args 0)" = "$want" ] || fail "elastic: torchrun got '$(args 0)', want '$want'" "$GX_DIR/pod0.log"
gx_expect_in 0 "warning: rewrite --nnodes: 1:2 -> 2: the elastic range runs as gxboot's own --nnodes 1:2"
[ "$(cat "$GX_DIR/out0/hostfile")" = "$N0 slots=1" ] || fail "elastic: hostfile is not the coordinator alone" "$GX_DIR/out0/hostfile"
echo "torchrun --nnodes 1:2: refused under a fixed gxboot job, run as gxboot's --nnodes 1:2"
