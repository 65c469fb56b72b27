#!/usr/bin/env bash
# The MPI Operator v2 shape without sshd: /etc/mpi/hostfile lists
# job-worker-1..3 (the launcher, job-worker-0, is not in it). The workers run `gxboot serve`
# (worker 1 is the coordinator, and serves too); the launcher takes its peers from
# /etc/mpi/hostfile as an observer and runs `gxboot -- mpirun -np 6 mpi_allreduce`, with no
# plm_rsh_agent from the test. eth0 closed except DNS and the rendezvous port everywhere.
# The workers get no --slots (a CPU MPIJob: they detect 1); the launcher's hostfile takes
# slotsPerWorker from /etc/mpi/hostfile's slots=2, so mpirun fits 6 ranks.
# Asserts: the launcher exits 0, its hostfile says slots=2 for each worker, every rank ran in
# the worker pods (2 per worker: their
# hostnames) with sum=21; the launcher's END reaches the coordinator, which tells the others:
# all three servers exit 0 by themselves.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
MPIPROG=$GX_ROOT/build/tools/mpi_allreduce
[ -x "$MPIPROG" ] || make -C "$GX_ROOT" --no-print-directory tools >/dev/null || fail "make tools"
created_etc_mpi=0
[ -d /etc/mpi ] || { mkdir /etc/mpi && created_etc_mpi=1; }
cleanup_etc_mpi() { [ "$created_etc_mpi" = 1 ] && rmdir /etc/mpi 2>/dev/null; }
trap 'cleanup_etc_mpi' EXIT
cluster_create 4 || fail "cluster_create"
trap 'cluster_destroy; cleanup_etc_mpi' EXIT
T=$(cluster_token)
for i in 0 1 2 3; do cluster_cut_eth0 "$i"; done
mkdir -p "$GX_DIR/mpi"
printf 'job-worker-1 slots=2\njob-worker-2 slots=2\njob-worker-3 slots=2\n' >"$GX_DIR/mpi/hostfile"
for i in 1 2 3; do
  gx_start "$i" serve --peers 'job-worker-{1..3}' --token-file "$T" --timeout 30
done
mkdir -p "$GX_DIR/out0"
pod_bg 0 "$GX_DIR/pod0.log" unshare -m /bin/sh -c \
  'mount --make-rprivate / && mount --bind "$1" /etc/mpi && shift && exec "$@"' sh "$GX_DIR/mpi" \
  env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  "$GXBOOT" --token-file "$T" --timeout 30 --out "$GX_DIR/out0" -- mpirun -np 6 "$MPIPROG"
GX_PIDS[0]=$GX_PID
gx_wait_all 60 0
gx_expect_rc 0 0
gx_expect_in 0 'observer'
for r in 0 1 2 3 4 5; do
  grep -q "^MPIALLREDUCE rank=$r world=6 host=job-worker-$((r / 2 + 1)) sum=21 OK" "$GX_DIR/pod0.log" ||
    fail "rank $r not OK on job-worker-$((r / 2 + 1))" "$GX_DIR/pod0.log"
done
want=$(printf '%s slots=2\n' "$(pod_net1 1)" "$(pod_net1 2)" "$(pod_net1 3)")
[ "$(cat "$GX_DIR/out0/hostfile")" = "$want" ] || fail "the launcher's hostfile lacks slots=2" "$GX_DIR/out0/hostfile"
[ "$(gx_env "$GX_DIR/out0/env" OMPI_MCA_plm_rsh_agent)" = "$GXBOOT rsh" ] ||
  fail "the launcher's OMPI_MCA_plm_rsh_agent" "$GX_DIR/out0/env"
gx_wait_all 10 1 2 3
gx_expect_rc 0 1 2 3
for i in 1 2 3; do gx_expect_in "$i" "the job ended with status 0"; done
echo "MPIJob shape: launcher (observer) -> mpirun -np 6 over gxboot rsh to 3 serving workers OK"
