#!/usr/bin/env bash
# The simulated cluster itself, without gxboot: DNS (published, late, NXDOMAIN), pod
# hostnames, eth0 cut by nftables, then a plain torchrun (static rendezvous on net1,
# GLOO_SOCKET_IFNAME=net1) and a plain mpirun (hostfile of net1 addresses, netns rsh agent)
# with every pod's eth0 closed except DNS. If this fails, the gxboot cases cannot pass.
# gx-timeout: 240
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
GX_UNPUBLISHED="2" cluster_create 3 || fail "cluster_create"

[ "$(pod_exec 1 hostname)" = job-worker-1 ] || fail "pod hostname"
# a kubelet's DNS: the sibling's bare name is NXDOMAIN, <name>.<subdomain> resolves
pod_exec 1 getent hosts job-worker-0 >/dev/null && fail "bare job-worker-0 resolves: not a kubelet's search list"
got=$(pod_exec 1 getent hosts job-worker-0.job | awk '{print $1}')
[ "$got" = "$(pod_eth0 0)" ] || fail "job-worker-0.job resolves to '$got', want $(pod_eth0 0)"
got=$(pod_exec 1 getent hosts job-worker-1 | awk '{print $1}')
[ "$got" = "$(pod_eth0 1)" ] || fail "the pod's own name resolves to '$got' (/etc/hosts), want $(pod_eth0 1)"
pod_exec 1 getent hosts job-worker-2.job >/dev/null && fail "unpublished job-worker-2 resolves"
cluster_publish 2
got=
resolves2() { got=$(pod_exec 1 getent hosts job-worker-2.job | awk '{print $1}'); [ -n "$got" ]; }
gx_wait_until 5 resolves2 # dnsmasq rereads its hosts on SIGHUP: waited for, not slept for
[ "$got" = "$(pod_eth0 2)" ] || fail "late record: job-worker-2 resolves to '$got'"

# TCP over eth0 works, then the cut closes it (but not DNS); net1 stays open.
tcp_ok() { # tcp_ok FROM_POD ADDR PORT
  pod_exec "$1" timeout 3 /usr/bin/python3 -c \
    'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2).close()' "$2" "$3" 2>/dev/null
}
pod_bg 0 "$GX_DIR/listen.log" /usr/bin/python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", 29411)); s.listen(8)
while True: s.accept()[0].close()'
gx_wait_until 10 tcp_ok 1 "$(pod_eth0 0)" 29411 || fail "tcp over eth0 before the cut" "$GX_DIR/listen.log"
tcp_ok 1 "$(pod_net1 0)" 29411 || fail "tcp over net1"
cluster_cut_eth0 1 none
tcp_ok 1 "$(pod_eth0 0)" 29411 && fail "tcp over eth0 after the cut"
tcp_ok 1 "$(pod_net1 0)" 29411 || fail "tcp over net1 after the cut"
pod_exec 1 getent hosts job-worker-0.job >/dev/null || fail "DNS after the cut"
kill "$GX_PID"
for i in 0 2; do cluster_cut_eth0 "$i" none; done

# plain torchrun: 3 nodes x 2 procs, static rendezvous on pod 0's net1 address
M=$(pod_net1 0)
t0=$(date +%s)
for i in 0 1 2; do
  pod_bg "$i" "$GX_DIR/torch$i.log" env PET_NNODES=3 PET_NODE_RANK="$i" PET_MASTER_ADDR="$M" \
    PET_MASTER_PORT=29500 GLOO_SOCKET_IFNAME=net1 "$PY" -m torch.distributed.run \
    --nproc_per_node 2 --rdzv_backend static --redirects 1 --tee 1 "$GX_E2E_DIR/allreduce.py"
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 100 0 1 2 # 9 Pythons importing torch on 2 cores: slow when loaded
for i in 0 1 2; do
  [ "${GX_RC[i]}" = 0 ] || fail "plain torchrun in job-worker-$i exited ${GX_RC[i]}" "$GX_DIR/torch$i.log"
done
n=$(cat "$GX_DIR"/torch*.log | grep -c "ALLREDUCE .*master_addr=$M .*sum=21 OK")
[ "$n" = 6 ] || fail "plain torchrun: $n of 6 ranks OK" "$GX_DIR"/torch*.log
echo "plain torchrun over net1 (eth0 closed): $(($(date +%s) - t0))s"

# plain mpirun: hostfile of net1 addresses, netns rsh agent, eth0 closed
[ -x "$GX_ROOT/build/tools/mpi_allreduce" ] || fail "build/tools/mpi_allreduce missing (make tools)"
for i in 0 1 2; do echo "$(pod_net1 "$i") slots=2"; done >"$GX_DIR/hostfile"
t0=$(date +%s)
pod_bg 0 "$GX_DIR/mpi.log" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_plm_rsh_agent="$GX_E2E_DIR/netns_rsh.sh" OMPI_MCA_plm_rsh_no_tree_spawn=1 \
  OMPI_MCA_oob_tcp_if_include=net1 OMPI_MCA_btl_tcp_if_include=net1 \
  GX_HOSTMAP="$GX_HOSTMAP" GX_RSH_LOG="$GX_DIR/rsh.log" \
  mpirun -np 6 -hostfile "$GX_DIR/hostfile" "$GX_ROOT/build/tools/mpi_allreduce"
pod_wait "$GX_PID" 60 || fail "plain mpirun exited $?" "$GX_DIR/mpi.log"
for r in 0 1 2 3 4 5; do
  grep -q "^MPIALLREDUCE rank=$r world=6 host=job-worker-$((r / 2)) sum=21 OK" "$GX_DIR/mpi.log" ||
    fail "plain mpirun: rank $r" "$GX_DIR/mpi.log"
done
[ "$(sort "$GX_DIR/rsh.log" | tr '\n' ' ')" = "$(pod_net1 1) $(pod_net1 2) " ] ||
  fail "rsh agent called for: $(cat "$GX_DIR/rsh.log")"
echo "plain mpirun over net1 (eth0 closed): $(($(date +%s) - t0))s"
exit 0
