#!/usr/bin/env bash
# MPI with no sshd, kubectl or RBAC. Every pod's eth0 is closed except DNS and the
# rendezvous port. Pods 1 and 2 run `gxboot serve`; the coordinator runs
# `gxboot -- mpirun -np 6 mpi_allreduce` with NO plm_rsh_agent from the test: gxboot hands
# mpirun `<gxboot> rsh` (every other peer serves) and mpirun starts its daemons through it.
# Asserts: the coordinator exits 0, its env names `<gxboot> rsh` as OMPI / PRRTE agent and
# GXBOOT_RSH_KEY_FILE (0600 rsh.key, not the token); ranks 2k,2k+1 ran on job-worker-k (the
# orted ran inside the serving pods' namespaces: their hostname) with sum=21; each server
# logged one line per session from the coordinator's net1 address (orted's exit 0, or the
# teardown signal mpirun sends through rsh, logged as a normal end); the servers got the
# job's status (END) and exited 0 on their own, leaving no process in their pods; no token
# in any env file.
# Part 2: mpirun -np 6 sleep 300 under the same setup; once the sleeps run in pods 1 and 2,
# mpirun is SIGKILLed: within 10 s no process of the job is left in any pod, the coordinator
# exits 137 and the servers exit 137 too (the job's status).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
MPIPROG=$GX_ROOT/build/tools/mpi_allreduce
[ -x "$MPIPROG" ] || make -C "$GX_ROOT" --no-print-directory tools >/dev/null || fail "make tools"
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 30 --slots 2)
for i in 1 2; do gx_start "$i" serve "${P[@]}"; done
mkdir -p "$GX_DIR/out0"
pod_bg 0 "$GX_DIR/pod0.log" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" -- mpirun -np 6 "$MPIPROG"
GX_PIDS[0]=$GX_PID
gx_wait_all 60 0
gx_expect_rc 0 0
for r in 0 1 2 3 4 5; do
  grep -q "^MPIALLREDUCE rank=$r world=6 host=job-worker-$((r / 2)) sum=21 OK" "$GX_DIR/pod0.log" ||
    fail "rank $r not OK on job-worker-$((r / 2))" "$GX_DIR/pod0.log"
done
e=$GX_DIR/out0/env
[ "$(gx_env "$e" OMPI_MCA_plm_rsh_agent)" = "$GXBOOT rsh" ] || fail "OMPI_MCA_plm_rsh_agent is not '<gxboot> rsh'" "$e"
[ "$(gx_env "$e" PRTE_MCA_plm_ssh_agent)" = "$GXBOOT rsh" ] || fail "PRTE_MCA_plm_ssh_agent" "$e"
[ "$(gx_env "$e" GXBOOT_RSH_KEY_FILE)" = "$GX_DIR/out0/rsh.key" ] || fail "GXBOOT_RSH_KEY_FILE" "$e"
[ "$(stat -c %a "$GX_DIR/out0/rsh.key")" = 600 ] || fail "rsh.key is not 0600"
tok=$(cat "$T")
for i in 0 1 2; do
  ! grep -rqF "$tok" "$GX_DIR/out$i" || fail "the job token is in job-worker-$i's files"
done
# the servers end with the job's status, by themselves; each logged its orted session from
# the coordinator's net1 address. How orted ended is mpirun's race, not the job's result: it
# exits 0, or mpirun's teardown signal (forwarded by gxboot rsh) ends it first, which serve
# logs as a normal end, or mpirun drops its rsh client first
gx_wait_all 20 1 2
gx_expect_rc 0 1 2
for i in 1 2; do
  gx_expect_in "$i" "rsh: $(pod_net1 0) ran '[^']*': (exit 0|ended by signal [0-9]+ from the client \\(a normal end\\)|the client went away: session killed)"
  gx_expect_in "$i" "the job ended with status 0"
  left=$(for p in $(ip netns pids "$(pod_ns "$i")" 2>/dev/null); do echo "$p"; done)
  [ -z "$left" ] || fail "job-worker-$i: processes left after the job: $(for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)" "$GX_DIR/pod$i.log"
done
echo "mpirun -np 6 through gxboot rsh / serve on net1 OK (no ssh, no ip netns exec)"

# ---- part 2: kill mpirun, no orphans ----
job_procs() { # job_procs i : PIDs in pod i running the job's sleep
  local p
  for p in $(ip netns pids "$(pod_ns "$1")" 2>/dev/null); do
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '^sleep 300 ' && echo "$p"
  done
}
for i in 1 2; do rm -rf "$GX_DIR/out$i"; gx_start "$i" serve "${P[@]}"; done
pod_bg 0 "$GX_DIR/pod0.log" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" -- mpirun -np 6 sleep 300
GX_PIDS[0]=$GX_PID
end=$(($(date +%s) + 40))
while [ -z "$(job_procs 1)" ] || [ -z "$(job_procs 2)" ]; do
  [ "$(date +%s)" -lt "$end" ] || fail "the job's processes never started in pods 1 and 2" "$GX_DIR/pod0.log"
  sleep 0.2
done
mp=$(cat "/proc/${GX_PIDS[0]}/task/${GX_PIDS[0]}/children" 2>/dev/null | awk '{print $1}')
[ -n "$mp" ] && grep -q mpirun "/proc/$mp/cmdline" || fail "no mpirun under the coordinator's gxboot" "$GX_DIR/pod0.log"
kill -KILL "$mp"
gx_wait_all 15 0 1 2
gx_expect_rc 137 0 1 2
for i in 0 1 2; do
  left=$(job_procs "$i")
  [ -z "$left" ] || fail "job-worker-$i: orphans after mpirun was killed: $left" "$GX_DIR/pod$i.log"
done
echo "mpirun killed: no orphan in any pod, every server exited 137"
