#!/usr/bin/env bash
# The coordinator pod runs gxboot -- mpirun -np 6 mpi_allreduce (no -hostfile
# on the command line); the two other pods run gxboot in worker form (-- sleep). OpenMPI
# reaches the workers through the test's netns rsh agent (plm_rsh_agent; `gxboot rsh` has
# its own cases: case_rsh*). eth0 is closed except DNS and 29410 in every pod.
# Asserts: coordinator exits 0; its hostfile is exactly "<net1 of pod k> slots=2" for k=0..2;
# its env sets OMPI_MCA_orte_default_hostfile to that file, OMPI_MCA_btl_tcp_if_include and
# OMPI_MCA_oob_tcp_if_include to net1; mpirun started daemons on exactly the net1 addresses of
# pods 1 and 2 (read from gxboot's hostfile) and ranks 2k,2k+1 ran on job-worker-k; sum=21.
# Workers: exit status not checked (killed at teardown), their env has their NODE_RANK.
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
for i in 1 2; do gx_start "$i" "${P[@]}" -- sleep 55; done
mkdir -p "$GX_DIR/out0"
pod_bg 0 "$GX_DIR/pod0.log" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_plm_rsh_agent="$GX_E2E_DIR/netns_rsh.sh" OMPI_MCA_plm_rsh_no_tree_spawn=1 \
  GX_HOSTMAP="$GX_HOSTMAP" GX_RSH_LOG="$GX_DIR/rsh.log" \
  "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" -- mpirun -np 6 "$MPIPROG"
GX_PIDS[0]=$GX_PID
gx_wait_all 45 0
gx_expect_rc 0 0
want=$(for i in 0 1 2; do echo "$(pod_net1 "$i") slots=2"; done)
[ "$(cat "$GX_DIR/out0/hostfile")" = "$want" ] || fail "coordinator hostfile" "$GX_DIR/out0/hostfile"
e=$GX_DIR/out0/env
[ "$(gx_env "$e" OMPI_MCA_orte_default_hostfile)" = "$GX_DIR/out0/hostfile" ] ||
  fail "env OMPI_MCA_orte_default_hostfile is not gxboot's hostfile" "$e"
[ "$(gx_env "$e" OMPI_MCA_btl_tcp_if_include)" = net1 ] || fail "env OMPI_MCA_btl_tcp_if_include" "$e"
[ "$(gx_env "$e" OMPI_MCA_oob_tcp_if_include)" = net1 ] || fail "env OMPI_MCA_oob_tcp_if_include" "$e"
[ "$(sort "$GX_DIR/rsh.log" 2>/dev/null | tr '\n' ' ')" = "$(sed -n '2,3p' "$GX_DIR/out0/hostfile" | cut -d' ' -f1 | sort | tr '\n' ' ')" ] ||
  fail "mpirun did not start its daemons on the hostfile's hosts: $(cat "$GX_DIR/rsh.log" 2>/dev/null)" "$GX_DIR/pod0.log"
for r in 0 1 2 3 4 5; do
  grep -q "^MPIALLREDUCE rank=$r world=6 host=job-worker-$((r / 2)) sum=21 OK" "$GX_DIR/pod0.log" ||
    fail "rank $r not OK on job-worker-$((r / 2))" "$GX_DIR/pod0.log"
done
for i in 1 2; do
  [ "$(gx_env "$GX_DIR/out$i/env" NODE_RANK)" = "$i" ] || fail "job-worker-$i env NODE_RANK" "$GX_DIR/pod$i.log"
done
echo "mpirun -np 6 over gxboot's hostfile (net1) OK"
