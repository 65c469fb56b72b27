# lib.sh - shared by tests/e2e/rdma/case_*.sh, which run INSIDE the soft-RoCE VM
# (tests/e2e/rdma_vm.sh boots it): cluster.sh pods plus one rdma_rxe device per pod on net1.
# rdma_rxe works across network namespaces only in shared mode (the default): every pod sees
# every pod's rxe device and GID table, and every pod's net1 has the same ifindex.
#
#   rxe_pods N      cluster_create N, then `rdma link add rxe<i> type rxe netdev net1` in pod i
#                   (once no rxe<i> is left from an earlier case: rxe_gone)
#   rxe_reap PID    end a case's helper process by its PID (before teardown)
#   rxe_del i       remove pod i's rxe device (its rail is gone)
#   rxe_drop_roce i drop RoCE v2 (UDP 4791) arriving on pod i's net1 (nftables; TCP stays)
#   rxe_check P...  gxboot check on every pod (coordinator last), GX_RC[i], logs pod<i>.log
. "$(dirname "${BASH_SOURCE[0]}")/../cluster.sh"

rxe_pods() {
  local i n=$1
  cluster_create "$n" || fail "cluster_create"
  for ((i = 0; i < n; i++)); do
    rxe_gone "rxe$i" || fail "rxe$i of the previous case still exists after 10 s"
    pod_exec "$i" rdma link add "rxe$i" type rxe netdev net1 || fail "rdma link add rxe$i"
  done
}

# rxe_gone NAME : wait (at most 10 s) until no RDMA link NAME exists. The previous case's
# devices go with its veths, asynchronously; adding a name still taken fails with "Too many
# open files in system" (-ENFILE from the IB core's assign_name), as it did after case_stranger.
rxe_gone() {
  local k
  for ((k = 0; k < 100; k++)); do
    rdma link show 2>/dev/null | grep -q "^link $1/" || return 0
    sleep 0.1
  done
  return 1
}

# rxe_reap PID : a helper process of the case (not gxboot) ended by its PID before the
# cluster goes: TERM, up to 5 s, then KILL; its RDMA-CM ids go with it
rxe_reap() {
  local pid=$1 k
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((k = 0; k < 50; k++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

rxe_del() { pod_exec "$1" rdma link del "rxe$1"; }

rxe_drop_roce() {
  printf '%s\n' 'table inet gxrxe {' \
    ' chain in { type filter hook input priority -10; iifname "net1" udp dport 4791 drop; }' \
    '}' | pod_exec "$1" nft -f - || fail "nft in pod $1"
}

# rxe_run SEC ARGS... : `gxboot ARGS` on pods N-1..0 (coordinator last), waits SEC s;
# GX_RC[i], logs $GX_DIR/pod<i>.log. "@OUT@" in ARGS becomes pod i's $GX_DIR/out<i>.
rxe_run() {
  local sec=$1 i
  shift
  for ((i = GX_N - 1; i >= 0; i--)); do
    rxe_start "$i" "$@"
  done
  gx_wait_all "$sec" $(seq 0 $((GX_N - 1)))
}

# rxe_start i ARGS... : `gxboot ARGS` in pod i in the background (GX_PIDS[i]); "@OUT@" as above
rxe_start() {
  local i=$1 a args=()
  shift
  rm -rf "$GX_DIR/out$i"
  mkdir -p "$GX_DIR/out$i"
  for a in "$@"; do args+=("${a//@OUT@/$GX_DIR/out$i}"); done
  pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" "${args[@]}"
  GX_PIDS[i]=$GX_PID
}

# rxe_json i EXPR : a value from pod i's rendezvous.json (python expression over d)
rxe_json() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$GX_DIR/out$1/rendezvous.json" "$2"; }

# rxe_net2 : a second rail: net2 in every pod (bridge ${GX_P}-r2, 10.<x>.2.<10+i>/24, as in
# case_check_rails.sh) with `rdma link add rxf<i> type rxe netdev net2`
rxe_net2() {
  local i ns rx=${GX_NET_A#10.}
  rx=${rx%.1}
  RXE_NET2=10.$rx.2
  trap 'ip link del "${GX_P}-r2" 2>/dev/null; cluster_destroy' EXIT
  gx_bridge "${GX_P}-r2" || fail "bridge r2"
  for ((i = 0; i < GX_N; i++)); do
    ns=$(pod_ns "$i")
    ip link add "${GX_P}-q2$i" type veth peer name net2 netns "$ns" || fail "veth net2 pod $i"
    ip link set "${GX_P}-q2$i" master "${GX_P}-r2" up
    ip -n "$ns" addr add "$RXE_NET2.$((10 + i))/24" dev net2
    ip -n "$ns" link set net2 up
    pod_exec "$i" rdma link add "rxf$i" type rxe netdev net2 || fail "rdma link add rxf$i"
  done
}

# rxe_drop_roce_on i IFACE : drop RoCE v2 arriving on one interface of pod i
rxe_drop_roce_on() {
  printf '%s\n' 'table inet gxrxe2 {' \
    " chain in { type filter hook input priority -10; iifname \"$2\" udp dport 4791 drop; }" \
    '}' | pod_exec "$1" nft -f - || fail "nft in pod $1"
}
