#!/usr/bin/env bash
# An interface pin on mpirun's own line (agent/launch/rewrite.c): `mpirun --mca
# btl_tcp_if_include eth0 --mca btl tcp,self -np 6` on 3 pods with eth0 closed except DNS and
# 29410 (OpenMPI reaches the workers through the test's netns rsh agent, as in case_mpirun).
# Part 1, no --override-env: gxboot keeps the user's pin, as it keeps the same variable in the
# environment, and says so with gxboot's choice (the job would then wait on the closed eth0:
# the case stops it once the warning is there, it does not wait for a hang).
# Part 2, --override-env: the pin is rewritten to net1 (a warning says so) and the job
# finishes: exit 0, ranks 2k,2k+1 on job-worker-k, sum=21.
# gx-timeout: 120
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
MPIPROG=$GX_ROOT/build/tools/mpi_allreduce
[ -x "$MPIPROG" ] || make -C "$GX_ROOT" --no-print-directory tools >/dev/null || fail "make tools"
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 20 --slots 2)
# run_job [gxboot options...] : workers wait in `gxboot -- sleep`, pod 0 runs the pinned mpirun
run_job() {
  for i in 1 2; do gx_start "$i" "${P[@]}" -- sleep 55; done
  mkdir -p "$GX_DIR/out0"
  pod_bg 0 "$GX_DIR/pod0.log" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_plm_rsh_agent="$GX_E2E_DIR/netns_rsh.sh" OMPI_MCA_plm_rsh_no_tree_spawn=1 \
    GX_HOSTMAP="$GX_HOSTMAP" "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" "$@" -- \
    mpirun --mca btl_tcp_if_include eth0 --mca btl tcp,self -np 6 "$MPIPROG"
  GX_PIDS[0]=$GX_PID
}
run_job
gx_wait_until 30 grep -q "keeping the user's --mca btl_tcp_if_include eth0 (gxboot chose net1; --override-env replaces it)" "$GX_DIR/pod0.log" ||
  fail "no warning for the user's --mca btl_tcp_if_include eth0" "$GX_DIR/pod0.log"
gx_kill_ns_procs KILL
for i in 0 1 2; do pod_wait "${GX_PIDS[i]}" 10 >/dev/null; done
echo "pinned to eth0 without --override-env: kept, with the warning naming net1"

run_job --override-env
gx_wait_all 60 0
gx_expect_rc 0 0
gx_expect_in 0 "warning: rewrite --mca btl_tcp_if_include: eth0 -> net1: --override-env"
for r in 0 1 2 3 4 5; do
  grep -q "^MPIALLREDUCE rank=$r world=6 host=job-worker-$((r / 2)) sum=21 OK" "$GX_DIR/pod0.log" ||
    fail "rank $r not OK on job-worker-$((r / 2))" "$GX_DIR/pod0.log"
done
echo "--override-env: the pin rewritten to net1, mpirun -np 6 over net1 OK"
