#!/usr/bin/env bash
# MPICH's Hydra (mpiexec.mpich, ch4:ofi) with no sshd and no flags on mpiexec. Every
# pod's eth0 is closed except DNS and the rendezvous port. Pods 1 and 2 run `gxboot serve`; the
# coordinator runs `gxboot -- mpiexec.mpich -n 6 mpi_allreduce_mpich`: gxboot hands Hydra its
# host file (HYDRA_HOST_FILE, "net1-addr:slots"), its launcher (HYDRA_LAUNCHER=ssh,
# HYDRA_LAUNCHER_EXEC=--out/gxboot-rsh, a link to gxboot that acts as `gxboot rsh`) and its
# interface (HYDRA_IFACE for the proxies' control port, FI_TCP_IFACE / FI_SOCKETS_IFACE for
# libfabric under ch4:ofi, UCX_NET_DEVICES for UCX under Debian's ch4:ucx). Asserts: the coordinator exits 0; ranks 2k,2k+1 ran in job-worker-k
# (the proxies ran inside the serving pods: their hostname) with sum=21; the env names the
# link and the host file, whose lines are the pods' net1 addresses; each server logged the
# coordinator's net1 address running hydra_pmi_proxy; the servers exit 0 on the job's END.
# Part 2: `-f FILE` naming the pods is rewritten onto net1. Part 3: an IPv6-only net1, where
# gxboot adds Hydra's -localhost <FQDN>.
# Known MPICH 4.0.2 bug, not gxboot (seen ~1 run in 2-4 on loaded cores, any part; hydra_wait
# below ends such a job with SIGTERM and asserts gxboot's part): every rank prints OK,
# then one rank spins in mpich 4.0.2's ch4:ucx finalize hook (ucp_disconnect_nb + progress loop)
# waiting for a peer that already sits in the PMI barrier that follows it and no longer progresses
# UCX (its socket holds the unread request); upstream removed that barrier (pmodels/mpich PR 6596).
# UCX_TCP_PUT_ENABLE=n and UCX_RNDV_THRESH=inf do not avoid it (tried, hangs stay).
# gx-timeout: 300
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
command -v mpiexec.mpich >/dev/null && command -v mpicc.mpich >/dev/null ||
  { echo "SKIP: MPICH is not installed (apt-get install mpich libmpich-dev)"; exit 77; }
MPIPROG=$GX_ROOT/build/tools/mpi_allreduce_mpich
[ -x "$MPIPROG" ] || make -C "$GX_ROOT" --no-print-directory tools-mpich >/dev/null || fail "make tools-mpich"
# hydra_wait N : the coordinator's job ends. MPICH 4.0.2 can hang in MPI_Finalize after every
# rank printed its result (see the header: upstream's bug, not gxboot's). gxboot's part is then
# done, so the test does what an operator would: SIGTERM the job, and the case asserts what
# gxboot owes then (every rank's result, mpiexec's status reaching the servers, nothing left
# in any pod) instead of MPICH's race. HYD_RC = the job's status to expect; HUNG=1 when it hung
# (a remote proxy's status then is whatever the signal made it).
HANGS=0
# hang_dump N : what each pod still runs when a job hangs (state, kernel wait channel), into
# the log, so a hang that is not MPICH's shows itself
hang_dump() {
  local i p
  for i in 0 1 2; do
    for p in $(ip netns pids "$(pod_ns "$i")" 2>/dev/null); do
      printf '  hang %s job-worker-%s: %s\n' "$1" "$i" \
        "$(ps -o pid=,ppid=,stat=,wchan:24=,etimes=,args= -p "$p" 2>/dev/null | cut -c1-160)"
    done
  done
}
hydra_wait() {
  local n=$1 end=$(($(date +%s) + 60))
  while [ "$(grep -c '^MPIALLREDUCE .* OK$' "$GX_DIR/pod0.log")" -lt "$n" ] &&
    kill -0 "${GX_PIDS[0]}" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do
    sleep 0.2
  done
  pod_wait "${GX_PIDS[0]}" 20
  GX_RC[0]=$?
  HYD_RC=0
  HUNG=0
  if [ "${GX_RC[0]}" = 124 ] && [ "$(grep -c '^MPIALLREDUCE .* OK$' "$GX_DIR/pod0.log")" -ge "$n" ]; then
    HANGS=$((HANGS + 1))
    HUNG=1
    echo "mpich 4.0.2 finalize hang after all $n ranks reported (pmodels/mpich PR 6596): SIGTERM"
    hang_dump "$n"
    # gxboot supervises mpiexec here (it serves the job's rsh): it forwards the signal to
    # mpiexec's process group, and its status is then mpiexec's, which Hydra decides: nonzero
    # in most runs, 0 in one CI run (2026-11-26). What gxboot owes is asserted by the callers:
    # the job ends, the servers get the same status and exit, nothing is left in any pod.
    kill -TERM "${GX_PIDS[0]}"
    pod_wait "${GX_PIDS[0]}" 20
    GX_RC[0]=$?
    HYD_RC=${GX_RC[0]}
    echo "  the job's status after SIGTERM: $HYD_RC"
    [ "$HYD_RC" != 124 ] || fail "the hung job did not end on SIGTERM" "$GX_DIR/pod0.log"
  fi
}
# no_leftovers i... : nothing of the job runs in these pods any more
no_leftovers() {
  local i left
  for i in "$@"; do
    left=$(ip netns pids "$(pod_ns "$i")" 2>/dev/null | tr '\n' ' ')
    [ -z "$left" ] || fail "job-worker-$i: processes left after the job: $left" "$GX_DIR/pod$i.log"
  done
}
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 30 --slots 2)
for i in 1 2; do gx_start "$i" serve "${P[@]}"; done
mkdir -p "$GX_DIR/out0"
# UCX_TLS=tcp,self: the pods share one kernel (and /dev/shm), where UCX would move the data
# through shared memory; real pods on other nodes cannot, so the data goes over the network
# here too (without UCX_NET_DEVICES=net1 from gxboot, UCX's tcp tries eth0 and hangs).
pod_bg 0 "$GX_DIR/pod0.log" env UCX_TLS=tcp,self "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" -- mpiexec.mpich -n 6 "$MPIPROG"
GX_PIDS[0]=$GX_PID
hydra_wait 6
gx_expect_rc "$HYD_RC" 0
for r in 0 1 2 3 4 5; do
  grep -q "^MPIALLREDUCE rank=$r world=6 host=job-worker-$((r / 2)) sum=21 OK" "$GX_DIR/pod0.log" ||
    fail "rank $r not OK on job-worker-$((r / 2))" "$GX_DIR/pod0.log"
done
e=$GX_DIR/out0/env
[ "$(gx_env "$e" HYDRA_LAUNCHER)" = ssh ] || fail "HYDRA_LAUNCHER is not ssh" "$e"
[ "$(gx_env "$e" HYDRA_LAUNCHER_EXEC)" = "$GX_DIR/out0/gxboot-rsh" ] || fail "HYDRA_LAUNCHER_EXEC" "$e"
[ "$(gx_env "$e" I_MPI_HYDRA_BOOTSTRAP_EXEC)" = "$GX_DIR/out0/gxboot-rsh" ] || fail "I_MPI_HYDRA_BOOTSTRAP_EXEC" "$e"
[ "$(readlink "$GX_DIR/out0/gxboot-rsh")" = "$(readlink -f "$GXBOOT")" ] || fail "gxboot-rsh is not a link to gxboot"
[ "$(gx_env "$e" HYDRA_HOST_FILE)" = "$GX_DIR/out0/hostfile.hydra" ] || fail "HYDRA_HOST_FILE" "$e"
[ "$(gx_env "$e" FI_TCP_IFACE)" = "$(gx_env "$e" GXBOOT_IFACE)" ] || fail "FI_TCP_IFACE" "$e"
[ "$(gx_env "$e" UCX_NET_DEVICES)" = "$(gx_env "$e" GXBOOT_IFACE)" ] || fail "UCX_NET_DEVICES" "$e"
want=$(printf '%s:2\n%s:2\n%s:2\n' "$(pod_net1 0)" "$(pod_net1 1)" "$(pod_net1 2)")
[ "$(cat "$GX_DIR/out0/hostfile.hydra")" = "$want" ] || fail "hostfile.hydra is not the net1 addresses" "$GX_DIR/out0/hostfile.hydra"
tok=$(cat "$T")
for i in 0 1 2; do
  ! grep -rqF "$tok" "$GX_DIR/out$i" || fail "the job token is in job-worker-$i's files"
done
gx_wait_all 20 1 2
gx_expect_rc "$HYD_RC" 1 2
for i in 1 2; do
  gx_expect_in "$i" "rsh: $(pod_net1 0) ran '.*hydra_pmi_proxy.*': $([ "$HUNG" = 0 ] && echo 'exit 0')"
  gx_expect_in "$i" "the job ended with status $HYD_RC"
done
no_leftovers 0 1 2
echo "mpiexec.mpich -n 6 through gxboot rsh / serve on net1 OK (no ssh, no mpiexec flags)"

# ---- part 2: a launch line written for eth0 names: `-f FILE` of pod names ----
printf 'job-worker-0:2\njob-worker-1.%s:2\njob-worker-2:2\n' "$GX_SVC" >"$GX_DIR/user_hosts"
for i in 1 2; do rm -rf "$GX_DIR/out$i"; gx_start "$i" serve "${P[@]}"; done
pod_bg 0 "$GX_DIR/pod0.log" env UCX_TLS=tcp,self "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" -- \
  mpiexec.mpich -f "$GX_DIR/user_hosts" -n 6 "$MPIPROG"
GX_PIDS[0]=$GX_PID
hydra_wait 6
gx_wait_all 20 1 2
gx_expect_rc "$HYD_RC" 0 1 2
no_leftovers 0 1 2
gx_expect_in 0 "rewrite -f: $GX_DIR/user_hosts -> $GX_DIR/out0/hostfile.launch"
[ "$(cat "$GX_DIR/out0/hostfile.launch")" = "$want" ] ||
  fail "hostfile.launch is not the net1 addresses" "$GX_DIR/out0/hostfile.launch"
for r in 0 1 2 3 4 5; do
  grep -q "^MPIALLREDUCE rank=$r world=6 host=job-worker-$((r / 2)) sum=21 OK" "$GX_DIR/pod0.log" ||
    fail "-f: rank $r not OK on job-worker-$((r / 2))" "$GX_DIR/pod0.log"
done
echo "mpiexec.mpich -f <pod names> rewritten onto net1 OK"

# ---- part 3: an IPv6-only net1. Hydra splits host:N at every ':' and its -iface takes IPv4
# only: hostfile.hydra names the pods (gxboot-rsh maps the names to net1), HYDRA_IFACE is left
# out, so Hydra's control connection uses eth0, which stays open here; MPI's data is on net1.
# The proxies connect back to the launcher by its host name, which a kubelet's DNS does not
# resolve bare: gxboot adds -localhost <its FQDN> to mpiexec's line itself.
GX_NET1_V6=1 cluster_create 2 || fail "cluster_create (IPv6)"
export GX_NET1_V6=1
T=$(cluster_token)
P=(--peers 'job-worker-{0..1}' --token-file "$T" --timeout 30 --slots 2)
gx_start 1 serve "${P[@]}"
mkdir -p "$GX_DIR/out0"
pod_bg 0 "$GX_DIR/pod0.log" env UCX_TLS=tcp,self "$GXBOOT" --out "$GX_DIR/out0" "${P[@]}" -- \
  mpiexec.mpich -n 4 "$MPIPROG"
GX_PIDS[0]=$GX_PID
hydra_wait 4
gx_wait_all 20 1
gx_expect_rc "$HYD_RC" 0 1
no_leftovers 0 1
[ "$(cat "$GX_DIR/out0/hostfile.hydra")" = "$(printf 'job-worker-0:2\njob-worker-1:2')" ] ||
  fail "IPv6: hostfile.hydra does not name the pods" "$GX_DIR/out0/hostfile.hydra"
[ -z "$(gx_env "$GX_DIR/out0/env" HYDRA_IFACE)" ] || fail "IPv6: HYDRA_IFACE is set" "$GX_DIR/out0/env"
gx_expect_in 0 "rewrite mpiexec.mpich: adding -localhost $(pod_fqdn 0) "
for r in 0 1 2 3; do
  grep -q "^MPIALLREDUCE rank=$r world=4 host=job-worker-$((r / 2)) sum=10 OK" "$GX_DIR/pod0.log" ||
    fail "IPv6: rank $r not OK on job-worker-$((r / 2))" "$GX_DIR/pod0.log"
done
gx_expect_in 1 "rsh: $(pod_net1 0) ran '.*hydra_pmi_proxy.*': $([ "$HUNG" = 0 ] && echo 'exit 0')"
echo "IPv6-only net1: mpiexec.mpich through pod names and gxboot rsh OK"
echo "mpich's finalize hang (upstream) seen in $HANGS of 3 jobs"
