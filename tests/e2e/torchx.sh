# torchx.sh - run the pods the real TorchX generates on the simulated cluster (cluster.sh).
# Sourced after cluster.sh by case_torchx_volcano.sh and case_torchx_mcad.sh.
#
# TorchX is ../shared/third_party/python (pinned upstream code, never copied into the
# project); tests/container/torchx_pods.py runs its CLI, parses the request with python3-yaml
# and writes each pod's argv and env as the kubelet and the runtime would start them. A
# missing TorchX is a failure, not a skip.
#
#   tx_request ARGS...        `torchx run --workspace="" --dryrun ARGS` -> the request (YAML)
#   tx_cluster REQ            cluster_create with the request's pod hostnames and subdomain
#   tx_export REQ DIR OPT...  DIR/<i>.argv, DIR/<i>.env (torchx_pods.py export OPT...)
#   tx_netstatus i NETWORK    $GX_DIR/podinfo<i>/network-status: what Multus writes for a pod
#                             whose networks annotation names NETWORK (net1)
#   tx_pod_start i DIR        run pod i as exported in DIR (env -i ENV... ARGV...), with
#                             $GX_DIR/run<i> mounted at /run/gxboot; GX_PIDS[i], log pod<i>.log
#   tx_networks i             pod i's Multus networks annotation ("-": none)
#   tx_train REQ NETWORK SOURCE   the component's pods to a finished all_reduce over net1
#   tx_entrypoint REQ         plain dist.ddp from an image whose ENTRYPOINT is gxboot

TX_PODS=$GX_ROOT/tests/container/torchx_pods.py

tx_request() {
  "$PY" "$TX_PODS" request -- "$@"
}

tx_cluster() {
  local lines subs
  lines=$(printf '%s\n' "$1" | "$PY" "$TX_PODS" pods) || return 1
  subs=$(awk '{ print $3 }' <<<"$lines" | sort -u)
  [ "$(wc -l <<<"$subs")" = 1 ] || { gx_log "pods in several subdomains: $subs"; return 1; }
  GX_POD_NAMES=$(awk '{ print $2 }' <<<"$lines" | tr '\n' ' ')
  GX_SUBDOMAIN=$subs
  TX_LINES=$lines
  cluster_create "$(wc -l <<<"$lines")"
}

tx_networks() { awk -v i="$1" '$1 == i { print $4 }' <<<"$TX_LINES"; }

tx_export() {
  local req=$1 dir=$2
  shift 2
  printf '%s\n' "$req" | "$PY" "$TX_PODS" export --out "$dir" "$@"
}

# What Multus writes into the network-status annotation (a JSON array): the cluster network
# on eth0, then each network of the networks annotation as net1, net2, ... named
# <namespace>/<network>
tx_netstatus() {
  local i=$1 net=$2
  mkdir -p "$GX_DIR/podinfo$i"
  printf '[{"name":"cbr0","interface":"eth0","ips":["%s"],"default":true,"dns":{}},{"name":"default/%s","interface":"net1","ips":["%s"],"mac":"02:00:00:00:01:%02x","dns":{}}]\n' \
    "$(pod_eth0 "$i")" "$net" "$(pod_net1 "$i")" "$i" >"$GX_DIR/podinfo$i/network-status"
}

# The pod's emptyDir at /run/gxboot (gxboot's default --out, where the manifests mount one)
# is $GX_DIR/run<i>, in a mount namespace of the pod's own: pods share this machine's /run.
tx_pod_start() {
  local i=$1 dir=$2 argv envv
  mapfile -d '' -t argv <"$dir/$i.argv"
  mapfile -d '' -t envv <"$dir/$i.env"
  mkdir -p "$GX_DIR/run$i"
  pod_bg "$i" "$GX_DIR/pod$i.log" unshare -m /bin/sh -c \
    'mount --make-rprivate / && mount -t tmpfs -o mode=0755 gxrun /run && mkdir /run/gxboot &&
     mount --bind "$0" /run/gxboot && exec "$@"' "$GX_DIR/run$i" \
    env -i "${envv[@]}" "${argv[@]}"
  GX_PIDS[i]=$GX_PID
}

# tx_train REQ NETWORK SOURCE : run every pod of REQ (the project's component around
# allreduce.py, one process per pod) as generated, eth0 closed except DNS and the rendezvous
# port, pod i's network-status naming NETWORK ("-": its own networks annotation, which
# must exist). Asserts: every pod exits 0 after the all_reduce (world N, sum N(N+1)/2) with
# MASTER_ADDR = pod 0's net1 address and Gloo on net1, gxboot read its peers from SOURCE,
# pod 0 alone has TORCHX_RANK0_HOST=localhost and every pod a *_0_HOSTS variable,
# torchrun's line as generated was rewritten (" -> "), /run/gxboot/env has that MASTER_ADDR.
tx_train() {
  local req=$1 net=$2 source=$3 n i m sum tok
  tx_cluster "$req" || fail "cluster_create"
  n=$GX_N
  tok=$(cluster_token)
  for i in $(seq 0 $((n - 1))); do
    cluster_cut_eth0 "$i"
    if [ "$net" = - ]; then
      [ "$(tx_networks "$i")" != - ] || fail "pod $i: no k8s.v1.cni.cncf.io/networks annotation"
      tx_netstatus "$i" "$(tx_networks "$i")"
    else
      tx_netstatus "$i" "$net"
    fi
  done
  tx_export "$req" "$GX_DIR/tx" --map /usr/local/bin/gxboot="$GXBOOT" \
    --map /etc/gxboot/token="$tok" --map /etc/podinfo="$GX_DIR/podinfo{i}" ||
    fail "torchx_pods export"
  # what TorchX generated reaches the pods: rank 0's localhost, everyone's *_0_HOSTS
  for i in $(seq 0 $((n - 1))); do
    tr '\0' '\n' <"$GX_DIR/tx/$i.env" | grep -qE '^(VC|TORCHX_MCAD)_[A-Z0-9_]+_0_HOSTS=' ||
      fail "pod $i: no *_0_HOSTS variable" "$GX_DIR/tx/$i.env"
    [ "$(tr '\0' '\n' <"$GX_DIR/tx/$i.env" | grep -c '^TORCHX_RANK0_HOST=localhost$')" = \
      "$([ "$i" = 0 ] && echo 1 || echo 0)" ] || fail "pod $i: TORCHX_RANK0_HOST" "$GX_DIR/tx/$i.env"
  done
  for i in $(seq $((n - 1)) -1 0); do tx_pod_start "$i" "$GX_DIR/tx"; done
  gx_wait_all 100 $(seq 0 $((n - 1)))
  gx_expect_rc 0 $(seq 0 $((n - 1)))
  m=$(pod_net1 0)
  sum=$((n * (n + 1) / 2))
  for i in $(seq 0 $((n - 1))); do
    gx_expect_in "$i" "ALLREDUCE rank=$i world=$n host=$(pod_name "$i") master_addr=$m master_port=[0-9]+ gloo_if=net1 sum=$sum OK"
    gx_expect_in "$i" "peers from $source: $n peers, this pod is rank $i"
    gx_expect_in "$i" "rewrite --rdzv_endpoint: .* -> $m:"
    [ "$(gx_env "$GX_DIR/run$i/env" MASTER_ADDR)" = "$m" ] ||
      fail "pod $i: /run/gxboot/env MASTER_ADDR" "$GX_DIR/run$i/env"
  done
  echo "component: TorchX's pods trained over net1 ($m); eth0 drops (in out):"
  for i in $(seq 0 $((n - 1))); do echo "  $(pod_name "$i"): $(cluster_cut_counters "$i")"; done
}

# tx_entrypoint REQ : REQ is plain dist.ddp (two pods), run from an image whose ENTRYPOINT is
# gxboot (container/Dockerfile's). Kubernetes' command replaces the ENTRYPOINT and TorchX
# always sets it. Asserts: no pod's argv names gxboot (it is dist.ddp's bash -c); run as
# generated with eth0 closed, nothing is written to /run/gxboot, gxboot logs nothing, and pod
# 1's torchrun tries pod 0's eth0 address on the c10d port 29500 (a SYN the cut drops): the
# job cannot finish. The pods are stopped there, not waited on.
tx_entrypoint() {
  local req=$1 i argv e0
  tx_cluster "$req" || fail "cluster_create (dist.ddp)"
  [ "$GX_N" = 2 ] || fail "dist.ddp: $GX_N pods, want 2"
  tx_export "$req" "$GX_DIR/tx" --image-dockerfile "$GX_ROOT/container/Dockerfile" \
    --map /gxboot="$GXBOOT" || fail "torchx_pods export (dist.ddp)"
  for i in 0 1; do
    mapfile -d '' -t argv <"$GX_DIR/tx/$i.argv"
    [ "${argv[0]} ${argv[1]}" = "bash -c" ] || fail "pod $i runs ${argv[*]}, not dist.ddp's bash -c"
    case " ${argv[*]} " in *gxboot*) fail "pod $i: gxboot in ${argv[*]}" ;; esac
    cluster_cut_eth0 "$i"
  done
  for i in 1 0; do tx_pod_start "$i" "$GX_DIR/tx"; done
  e0=$(pod_eth0 0)
  tx_syn() { ip netns exec "$(pod_ns 1)" ss -Htn state syn-sent dst "$1" dport = :29500 | grep -q .; }
  gx_wait_until 60 tx_syn "$e0" ||
    fail "pod 1 never tried $e0:29500" "$GX_DIR/pod1.log" "$GX_DIR/pod0.log"
  for i in 0 1; do
    kill -0 "${GX_PIDS[i]}" 2>/dev/null || fail "pod $i's torchrun ended" "$GX_DIR/pod$i.log"
    [ -z "$(ls -A "$GX_DIR/run$i")" ] || fail "pod $i: gxboot wrote /run/gxboot"
    ! grep -q gxboot "$GX_DIR/pod$i.log" || fail "pod $i: gxboot ran" "$GX_DIR/pod$i.log"
  done
  echo "dist.ddp, gxboot as the image's ENTRYPOINT: not run (TorchX's command replaced it);" \
    "pod 1's c10d client waits on $e0:29500 (eth0), cut drops (in out):$(cluster_cut_counters 1)"
}
