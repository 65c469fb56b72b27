# cluster.sh - a simulated Kubernetes cluster of N pods in network namespaces.
# Sourced by tests/e2e/case_*.sh and demo.sh (bash). Needs root, iproute2, nftables, dnsmasq.
#
#   pod i   = netns ${GX_P}-p<i>, hostname job-worker-<i> (unshare -u per command; see
#             GX_POD_NAMES), subdomain job (see GX_SUBDOMAIN)
#     eth0  = veth on the primary bridge   10.<x>.1.<10+i>/24, default route via 10.<x>.1.254,
#             which is the host's bridge address: ip_forward stays 0, so it routes nowhere
#     net1  = veth on the secondary bridge 192.168.<y>.<10+i>/24 (unknown to DNS)
#   above 244 pods a /16 plan (GX_PLEN=16 for eth0, net1 and the bridge address): pod i is
#   host 10 + i % 244 of block i / 244, eth0 10.<x>.<1+block>.<host>, net1
#   192.168.<y+block>.<host>; up to 244 pods every address and prefix is as above
#   dnsmasq on 10.<x>.1.254:53 only: job-worker-<i>.job.default.svc.cluster.local -> eth0
#   /etc/netns/<ns>/{resolv.conf,hosts} exactly as a kubelet writes them (ndots:5, search list
#   <ns>.svc.cluster.local svc.cluster.local cluster.local: bare job-worker-<i> is NXDOMAIN,
#   job-worker-<i>.job resolves; /etc/hosts "<eth0> job-worker-<i>.job.default.svc... job-worker-<i>")
#
# API (i = pod index; every command is passed as separate arguments, never through a shell):
#   cluster_create N                 create pods 0..N-1, DNS records for all (see GX_UNPUBLISHED)
#   cluster_destroy                  idempotent; also runs from the EXIT/INT/TERM trap
#   pod_ns i | pod_name i | pod_fqdn i | pod_eth0 i | pod_net1 i
#   pod_exec i CMD...                run CMD in pod i (foreground), hostname job-worker-<i>
#   pod_bg i LOG CMD...              same in the background, stdout+stderr to LOG; sets GX_PID
#   pod_wait PID SEC                 wait for PID at most SEC s; returns its status, 124 on timeout
#   cluster_publish i | cluster_unpublish i   add / remove pod i's DNS record (dnsmasq SIGHUP)
#   cluster_cut_eth0 i [PORT...]     nftables in pod i: drop eth0 except DNS and PORTs
#                                    (default 29410; "none" keeps DNS only)
#   cluster_net1_down i              link net1 down in pod i
#   cluster_net1_other_subnet i      move pod i's net1 to another bridge + 192.168.<y+1>.0/24
#   cluster_loss i PCT [IFACE]       drop PCT % of packets arriving on IFACE (net1) in pod i
#   cluster_throttle i RATE          tbf on pod i's net1 both ways (in the pod and on the
#                                    host-side veth): a slow link, e.g. 4mbit
#   cluster_delay i MS               pod i's net1 becomes a tap whose frames are held MS each
#                                    way (delay_link.py: no netem here; TCP stays end to end)
#   cluster_router "BRIDGE ADDR/PLEN"...  a router: netns ${GX_P}-rt with a leg (veth) into
#                                    each bridge, forwarding on inside it only
#   cluster_leaf i BRIDGE ADDR/PLEN  move pod i's net1 to BRIDGE with address ADDR (a leaf)
#   pod_net1_addr i ADDR             pod i's net1 address is ADDR from now on (for pod_net1)
#   cluster_token [FILE]             write a random token (0600), print its path
#   cluster_need_root                exit 77 "SKIPPED: needs root/netns" unless possible
# Variables after cluster_create: GX_P (prefix), GX_DIR (state + logs), GX_N, GX_NET_A (10.x.1),
#   GX_NET_B (192.168.y), GX_NET_C (192.168.y+1), GX_DNS (dnsmasq address), GX_HOSTMAP
#   (lines "net1-IP eth0-IP ns hostname", for the netns rsh agent), GX_PLEN (24, or 16
#   above 244 pods).
# Set before cluster_create: GX_UNPUBLISHED="2 3" (pods without DNS record at start),
#   GX_NOSUBDOMAIN="1" (pods without a subdomain: /etc/hosts has no FQDN for them),
#   GX_POD_NAMES="a b c" (pod i's hostname is the i-th word instead of job-worker-<i>, for a
#   case that runs pods named by what a job system generated), GX_SUBDOMAIN=NAME (the pods'
#   subdomain, i.e. the headless Service that publishes them, instead of job),
#   GX_IPV6=1 keeps IPv6 on in the pods (link-local only; default off),
#   GX_NET1_V6=1 gives net1 only a global IPv6 address (fd00:<x>::<10+i>/64, nodad),
#   GX_KEEP=1 keeps GX_DIR after teardown, GX_STATE_ROOT (run.sh: where leftovers are swept).

GX_SVC=job.default.svc.cluster.local
# What a kubelet puts into every container of a pod, with or without service links: netdetect
# takes eth0 for the pod network only in a Kubernetes pod (podman and docker name eth0, eth1 in
# any order)
export KUBERNETES_SERVICE_HOST=10.96.0.1 KUBERNETES_SERVICE_PORT=443 # cluster_create: ${GX_SUBDOMAIN:-job}.default.svc...
# gxboot reads GXBOOT_<OPTION> from the environment: the cases set what they mean to
while read -r _gxv; do unset "$_gxv"; done < <(compgen -e | grep '^GXBOOT_')
GX_E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GX_ROOT=$(cd "$GX_E2E_DIR/../.." && pwd)
GX_P=
GX_DIR=
GX_N=0

gx_log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

cluster_need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: needs root/netns"
    exit 77
  fi
  local t="gxprobe$$"
  if ! ip netns add "$t" 2>/dev/null; then
    echo "SKIPPED: needs root/netns"
    exit 77
  fi
  ip netns del "$t"
  for c in nft dnsmasq unshare; do
    command -v "$c" >/dev/null || { echo "SKIPPED: $c not installed (make deps)"; exit 77; }
  done
}

pod_ns() { echo "${GX_P}-p$1"; }
pod_name() {
  if [ -n "${GX_POD_NAMES:-}" ]; then
    local names
    read -r -a names <<<"$GX_POD_NAMES"
    echo "${names[$1]}"
  else
    echo "job-worker-$1"
  fi
}
pod_fqdn() { echo "$(pod_name "$1").$GX_SVC"; }
# the address plan: block i / 244 (0 up to 244 pods), host 10 + i % 244
pod_eth0() { echo "${GX_NET_A%.*}.$((${GX_NET_A##*.} + $1 / 244)).$((10 + $1 % 244))"; }
pod_net1() {
  if [ -s "$GX_DIR/net1.$1" ]; then cat "$GX_DIR/net1.$1"; return; fi
  if [ "${GX_NET1_V6:-0}" = 1 ]; then echo "$GX_NET_V6$((10 + $1))"; return; fi
  local net=$GX_NET_B
  [ -e "$GX_DIR/other.$1" ] && net=$GX_NET_C
  echo "${net%.*}.$((${net##*.} + $1 / 244)).$((10 + $1 % 244))"
}

# A per-run prefix and subnets that no other run (or the host) is using.
gx_pick_names() {
  local base=$(($$ % 10000)) k x
  for k in $(seq 0 50); do
    GX_P="gx$(((base + k) % 10000))"
    ip netns list | grep -q "^${GX_P}-" && continue
    ip link show "${GX_P}-b0" >/dev/null 2>&1 && continue
    break
  done
  for k in $(seq 0 200); do
    x=$((((base + k) % 200) + 20))
    ip -4 addr | grep -q " 10\.$x\.1\." && continue
    break
  done
  GX_NET_A="10.$x.1"
  GX_NET_B="192.168.$((x + 1))"
  GX_NET_C="192.168.$((x + 2))"
  GX_DNS="$GX_NET_A.254"
  GX_NET_V6="fd00:$x::"
}

gx_state() { # record what teardown needs, so run.sh can sweep after a SIGKILL
  {
    echo "GX_P=$GX_P"
    echo "GX_N=$GX_N"
    echo "GX_DIR=$GX_DIR"
  } >"$GX_DIR/state"
  if [ -n "${GX_STATE_ROOT:-}" ] && [ -d "$GX_STATE_ROOT" ]; then
    cp "$GX_DIR/state" "$GX_STATE_ROOT/$GX_P"
  fi
}

gx_bridge() { # gx_bridge NAME [ADDR/PLEN]
  ip link add "$1" type bridge
  sysctl -qw "net.ipv6.conf.$1.disable_ipv6=1" 2>/dev/null || true
  [ -z "${2:-}" ] || ip addr add "$2" dev "$1"
  ip link set "$1" up
}

# The kubelet's /etc/hosts (pkg/kubelet/kubelet_pods.go managedHostsFileContent): the pod's
# FQDN only when it has a subdomain; GX_NOSUBDOMAIN="i ..." makes pods without one.
gx_kubelet_hosts() { # gx_kubelet_hosts IP i
  printf '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
  printf 'fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n'
  case " ${GX_NOSUBDOMAIN:-} " in
  *" $2 "*) printf '%s\t%s\n' "$1" "$(pod_name "$2")" ;;
  *) printf '%s\t%s\t%s\n' "$1" "$(pod_fqdn "$2")" "$(pod_name "$2")" ;;
  esac
}

gx_pod_create() { # gx_pod_create i
  local i=$1 ns eth net
  ns=$(pod_ns "$i")
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  # IPv4 only unless GX_IPV6=1: no router solicitations / MLD, so the eth0 cut's drop
  # counters count only what a program sent
  [ "${GX_IPV6:-0}" = 1 ] || ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 \
    net.ipv6.conf.all.disable_ipv6=1
  # eth0 on the primary bridge
  ip link add "${GX_P}-e$i" type veth peer name eth0 netns "$ns"
  ip link set "${GX_P}-e$i" master "${GX_P}-b0" up
  eth=$(pod_eth0 "$i")
  ip -n "$ns" addr add "$eth/${GX_PLEN:-24}" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "$GX_DNS" dev eth0
  # net1 on the secondary bridge
  ip link add "${GX_P}-n$i" type veth peer name net1 netns "$ns"
  ip link set "${GX_P}-n$i" master "${GX_P}-b1" up
  net=$(pod_net1 "$i")
  if [ "${GX_NET1_V6:-0}" = 1 ]; then # IPv6-only secondary; nodad: no address still tentative when the test starts
    # no link-local address: gloo takes an interface's first address, and a
    # scope-less fe80:: would be unusable to its peers
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.net1.addr_gen_mode=1
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.net1.disable_ipv6=0
    # and IPv6 on lo, as in a real pod: a connect to the pod's own v6 address is delivered
    # through lo (without it torch's TCPStore client on the master hangs in SYN-SENT)
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.lo.disable_ipv6=0
    ip -n "$ns" addr add "$net/64" dev net1 nodad
  else
    ip -n "$ns" addr add "$net/${GX_PLEN:-24}" dev net1
  fi
  ip -n "$ns" link set net1 up
  # exactly what a kubelet writes into a pod with hostname + subdomain: the
  # search list holds the namespace, NOT the subdomain, so a bare sibling name is NXDOMAIN
  mkdir -p "/etc/netns/$ns"
  printf 'search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver %s\noptions ndots:5\n' \
    "$GX_DNS" >"/etc/netns/$ns/resolv.conf"
  gx_kubelet_hosts "$eth" "$i" >"/etc/netns/$ns/hosts"
  echo "$net $eth $ns $(pod_name "$i")" >>"$GX_HOSTMAP"
}

gx_dnsmasq_start() {
  cat >"$GX_DIR/dnsmasq.conf" <<EOF
port=53
listen-address=$GX_DNS
bind-interfaces
no-resolv
no-hosts
addn-hosts=$GX_DIR/dns.hosts
local=/cluster.local/
domain-needed
neg-ttl=2
local-ttl=1
pid-file=$GX_DIR/dnsmasq.pid
log-queries
log-facility=$GX_DIR/dnsmasq.log
EOF
  dnsmasq --keep-in-foreground --conf-file="$GX_DIR/dnsmasq.conf" 2>>"$GX_DIR/dnsmasq.log" &
  echo $! >"$GX_DIR/dnsmasq.pid.bg"
  local k
  for k in $(seq 1 50); do # answered once it is bound
    ss -lun | grep -q "$GX_DNS:53 " && return 0
    sleep 0.1
  done
  gx_log "dnsmasq did not start:"
  cat "$GX_DIR/dnsmasq.log" >&2
  return 1
}

gx_dns_reload() {
  local pid
  pid=$(cat "$GX_DIR/dnsmasq.pid.bg" 2>/dev/null) || return 0
  kill -HUP "$pid" 2>/dev/null || true
}

cluster_publish() {
  grep -q " $(pod_fqdn "$1")\$" "$GX_DIR/dns.hosts" 2>/dev/null && return 0
  echo "$(pod_eth0 "$1") $(pod_fqdn "$1")" >>"$GX_DIR/dns.hosts"
  gx_dns_reload
}

cluster_unpublish() {
  local f=$GX_DIR/dns.hosts
  grep -v " $(pod_fqdn "$1")\$" "$f" >"$f.new" || true
  mv "$f.new" "$f"
  chmod 0644 "$f"
  gx_dns_reload
}

# Above 244 pods: every netns's neighbour entries share the host's ARP table (gc_thresh3
# 1024 by default), and N x (N - 1) entries overflow it; raised for N (never lowered), the
# old values kept in $GX_DIR/arp and put back by cluster_destroy (as check_scale.sh does).
gx_arp_raise() { # gx_arp_raise N
  local k v want
  for k in 1 2 3; do
    v=$(sysctl -n "net.ipv4.neigh.default.gc_thresh$k") || return 0
    want=$(($1 * $1 * 2 * k))
    [ "$v" -ge "$want" ] && continue
    echo "$k=$v" >>"$GX_DIR/arp"
    sysctl -qw "net.ipv4.neigh.default.gc_thresh$k=$want"
  done
}
gx_arp_restore() {
  local kv
  [ -f "$GX_DIR/arp" ] || return 0
  while read -r kv; do sysctl -qw "net.ipv4.neigh.default.gc_thresh${kv%%=*}=${kv#*=}"; done <"$GX_DIR/arp"
  rm -f "$GX_DIR/arp"
}

gx_links_up() { # gx_links_up i : eth0 and net1 of pod i report state UP
  [ "$(ip -n "$(pod_ns "$1")" -o link show up 2>/dev/null | grep -cE ': (eth0|net1)@[^:]*:.*state UP')" = 2 ]
}

cluster_create() {
  local n=$1 i
  [ -n "$GX_P" ] && cluster_destroy
  gx_pick_names
  GX_N=$n
  GX_SVC=${GX_SUBDOMAIN:-job}.default.svc.cluster.local
  if [ -n "${GX_POD_NAMES:-}" ]; then
    local names
    read -r -a names <<<"$GX_POD_NAMES"
    [ "${#names[@]}" -eq "$n" ] || { gx_log "GX_POD_NAMES has ${#names[@]} names for $n pods"; return 1; }
  fi
  GX_PLEN=24
  [ "$n" -le 244 ] || GX_PLEN=16
  GX_DIR=$(mktemp -d "/tmp/${GX_P}.XXXXXX")
  chmod 0755 "$GX_DIR" # dnsmasq drops to nobody and re-reads dns.hosts on SIGHUP
  GX_HOSTMAP=$GX_DIR/hostmap
  : >"$GX_HOSTMAP"
  : >"$GX_DIR/pids"
  : >"$GX_DIR/dns.hosts"
  chmod 0644 "$GX_DIR/dns.hosts"
  gx_state
  [ "$n" -le 244 ] || gx_arp_raise "$n"
  trap 'cluster_destroy' EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  gx_bridge "${GX_P}-b0" "$GX_DNS/$GX_PLEN" || return 1
  gx_bridge "${GX_P}-b1" || return 1
  for i in $(seq 0 $((n - 1))); do
    gx_pod_create "$i" || return 1
  done
  # a new veth's carrier and operstate reach netlink through the kernel's link watch, up to
  # a second later (and later on a loaded node): a pod starts once its links say "UP", as a
  # kubelet starts containers after the CNI plugins returned
  for i in $(seq 0 $((n - 1))); do
    gx_wait_until 10 gx_links_up "$i" || { gx_log "pod $i: links not up"; return 1; }
  done
  for i in $(seq 0 $((n - 1))); do
    case " ${GX_UNPUBLISHED:-} " in *" $i "*) continue ;; esac
    echo "$(pod_eth0 "$i") $(pod_fqdn "$i")" >>"$GX_DIR/dns.hosts"
  done
  gx_dnsmasq_start || return 1
}

# pod_exec i CMD... : CMD runs in pod i's netns with its own hostname (a UTS namespace).
pod_exec() {
  local i=$1
  shift
  ip netns exec "$(pod_ns "$i")" unshare -u /bin/sh -c 'hostname "$1" && shift && exec "$@"' \
    sh "$(pod_name "$i")" "$@"
}

pod_bg() { # pod_bg i LOG CMD... ; GX_PID = the command's PID (exec chain keeps it)
  local i=$1 log=$2
  shift 2
  # exec in the subshell: $! of a backgrounded function is bash's own subshell,
  # and a kill of that would leave the command running
  (exec ip netns exec "$(pod_ns "$i")" unshare -u /bin/sh -c 'hostname "$1" && shift && exec "$@"' \
    sh "$(pod_name "$i")" "$@") >"$log" 2>&1 </dev/null &
  GX_PID=$!
  echo "$GX_PID" >>"$GX_DIR/pids"
}

pod_wait() { # pod_wait PID SEC -> the PID's exit status, 124 if still running after SEC s
  local pid=$1 end=$(($(date +%s%N) / 1000000 + $2 * 1000))
  while kill -0 "$pid" 2>/dev/null; do
    [ $(($(date +%s%N) / 1000000)) -lt "$end" ] || return 124
    sleep 0.1
  done
  wait "$pid"
}

# gx_wait_until SEC CMD... : run CMD every 0.1 s until it succeeds (0) or SEC s pass (1); the
# one way a case waits for a condition (a log line, a file, a link state)
gx_wait_until() {
  local end=$(($(date +%s%N) / 1000000 + $1 * 1000))
  shift
  until "$@"; do
    [ $(($(date +%s%N) / 1000000)) -lt "$end" ] || return 1
    sleep 0.1
  done
}

cluster_cut_eth0() { # cluster_cut_eth0 i [PORT...|none]
  local i=$1 ports
  shift
  if [ $# -eq 0 ]; then ports=29410; else ports=$(echo "$*" | tr ' ' ','); fi
  local keep_in="" keep_out=""
  if [ "$ports" != none ]; then
    keep_in="iifname \"eth0\" tcp dport { $ports } accept
    iifname \"eth0\" tcp sport { $ports } accept"
    keep_out="oifname \"eth0\" tcp dport { $ports } accept
    oifname \"eth0\" tcp sport { $ports } accept"
  fi
  ip netns exec "$(pod_ns "$i")" nft -f - <<EOF
table inet gxcut {
  chain in {
    type filter hook input priority 0; policy accept;
    iifname "eth0" udp sport 53 accept
    iifname "eth0" tcp sport 53 accept
    $keep_in
    iifname "eth0" counter drop
  }
  chain out {
    type filter hook output priority 0; policy accept;
    oifname "eth0" udp dport 53 accept
    oifname "eth0" tcp dport 53 accept
    $keep_out
    oifname "eth0" counter drop
  }
}
EOF
}

# Packets dropped by the cut (proves that something tried eth0): "in out"
cluster_cut_counters() {
  ip netns exec "$(pod_ns "$1")" nft list table inet gxcut 2>/dev/null |
    awk '/counter/ { for (k = 1; k <= NF; k++) if ($k == "packets") s = s " " $(k + 1) } END { print s }'
}

cluster_net1_down() { ip -n "$(pod_ns "$1")" link set net1 down; }

cluster_net1_other_subnet() {
  local i=$1 ns old
  ns=$(pod_ns "$i")
  ip link show "${GX_P}-b2" >/dev/null 2>&1 || gx_bridge "${GX_P}-b2"
  old=$(pod_net1 "$i")
  ip link set "${GX_P}-n$i" nomaster
  ip link set "${GX_P}-n$i" master "${GX_P}-b2" up
  ip -n "$ns" addr del "$old/24" dev net1
  touch "$GX_DIR/other.$i"
  ip -n "$ns" addr add "$(pod_net1 "$i")/24" dev net1
  sed -i "s|^$old |$(pod_net1 "$i") |" "$GX_HOSTMAP"
}

# A router namespace: routed leaves of the secondary network, or a gateway that joins the
# primary and secondary networks as a cluster's routers do. Forwarding is on in its own
# namespace only: the host's net.ipv4.ip_forward stays 0, and it routes nowhere else.
cluster_router() { # cluster_router "BRIDGE ADDR/PLEN"...
  local ns="${GX_P}-rt" k=0 leg br
  ip netns add "$ns" || return 1
  ip -n "$ns" link set lo up
  ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
    net.ipv4.conf.default.rp_filter=0
  for leg in "$@"; do
    br=${leg%% *}
    ip link show "$br" >/dev/null 2>&1 || gx_bridge "$br" || return 1
    ip link add "${GX_P}-x$k" type veth peer name "leg$k" netns "$ns" || return 1
    ip link set "${GX_P}-x$k" master "$br" up
    ip -n "$ns" addr add "${leg#* }" dev "leg$k"
    ip -n "$ns" link set "leg$k" up
    k=$((k + 1))
  done
}

pod_net1_addr() { echo "$2" >"$GX_DIR/net1.$1"; } # pod_net1_addr i ADDR

cluster_leaf() { # cluster_leaf i BRIDGE ADDR/PLEN : pod i's net1 on another bridge and subnet
  local i=$1 ns old
  ns=$(pod_ns "$i")
  ip link show "$2" >/dev/null 2>&1 || gx_bridge "$2"
  old=$(pod_net1 "$i")
  ip link set "${GX_P}-n$i" nomaster
  ip link set "${GX_P}-n$i" master "$2" up
  ip -n "$ns" addr flush dev net1 scope global
  ip -n "$ns" addr add "$3" dev net1
  pod_net1_addr "$i" "${3%/*}"
  sed -i "s|^$old |${3%/*} |" "$GX_HOSTMAP"
}

cluster_delay() { # cluster_delay i MS
  local i=$1 ns addr
  ns=$(pod_ns "$i")
  addr=$(pod_net1 "$i")
  ip -n "$ns" link del net1 || return 1 # the veth pair goes with it
  ip link add "${GX_P}-n$i" type veth peer name dly netns "$ns" || return 1
  ip link set "${GX_P}-n$i" master "${GX_P}-b1" up
  ip -n "$ns" link set dly up promisc on
  pod_bg "$i" "$GX_DIR/delay$i.log" "$PY" -u "$GX_E2E_DIR/delay_link.py" net1 dly "$2" \
    "$GX_DIR/delay$i.stats"
  gx_wait_until 5 grep -q ready "$GX_DIR/delay$i.log" || return 1
  ip -n "$ns" addr add "$addr/${GX_PLEN:-24}" dev net1
  ip -n "$ns" link set net1 up
}

cluster_loss() { # cluster_loss i PCT [IFACE]
  ip netns exec "$(pod_ns "$1")" nft -f - <<EOF
table inet gxloss {
  chain in {
    type filter hook input priority 0; policy accept;
    iifname "${3:-net1}" numgen random mod 100 < $2 counter drop
  }
}
EOF
}

cluster_throttle() { # cluster_throttle i RATE (tbf: netem is not in this kernel)
  ip netns exec "$(pod_ns "$1")" tc qdisc add dev net1 root tbf rate "$2" burst 16kb latency 100ms &&
    tc qdisc add dev "${GX_P}-n$1" root tbf rate "$2" burst 16kb latency 100ms
}

cluster_token() {
  local f=${1:-$GX_DIR/token}
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$f")
  echo "$f"
}

gx_kill_ns_procs() { # gx_kill_ns_procs SIGNAL : every process inside one of our pods
  local i ns
  for i in $(seq 0 $((GX_N - 1))); do
    ns="${GX_P}-p$i"
    [ -e "/run/netns/$ns" ] || continue
    ip netns pids "$ns" 2>/dev/null | xargs -r kill "-$1" 2>/dev/null
  done
  return 0
}

# Teardown: recorded PIDs, everything else in the pods, dnsmasq, namespaces, bridges,
# /etc/netns dirs, the state dir. Safe to call twice and after a partial create.
cluster_destroy() {
  [ -n "$GX_P" ] || return 0
  local pid i left
  if [ -f "$GX_DIR/pids" ]; then
    while read -r pid; do kill -TERM "$pid" 2>/dev/null; done <"$GX_DIR/pids"
  fi
  gx_kill_ns_procs TERM
  for i in $(seq 1 20); do
    left=0
    for ns in $(seq 0 $((GX_N - 1))); do
      [ -z "$(ip netns pids "${GX_P}-p$ns" 2>/dev/null)" ] || left=1
    done
    [ "$left" -eq 0 ] && break
    sleep 0.1
  done
  gx_kill_ns_procs KILL
  if [ -f "$GX_DIR/dnsmasq.pid.bg" ]; then
    pid=$(cat "$GX_DIR/dnsmasq.pid.bg")
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  fi
  for i in $(seq 0 $((GX_N - 1))); do
    ip netns del "${GX_P}-p$i" 2>/dev/null
    rm -rf "/etc/netns/${GX_P}-p$i"
  done
  ip netns del "${GX_P}-rt" 2>/dev/null # a router's legs go with it
  for i in 0 1 2 3 4; do ip link del "${GX_P}-b$i" 2>/dev/null; done
  for i in 2 3 4 5 6 7 8; do ip link del "${GX_P}-r$i" 2>/dev/null; done # extra rails (case_check_rails)
  [ -n "${GX_STATE_ROOT:-}" ] && rm -f "$GX_STATE_ROOT/$GX_P"
  gx_arp_restore
  if [ "${GX_KEEP:-0}" = 1 ]; then
    gx_log "kept $GX_DIR"
  else
    case "$GX_DIR" in /tmp/gx*) rm -rf "$GX_DIR" ;; esac
  fi
  GX_P=
  return 0
}

# Sweep a state file left by a case that was SIGKILLed (run.sh): same teardown.
cluster_sweep() { # cluster_sweep STATEFILE
  local GX_P GX_N GX_DIR
  GX_P=$(sed -n 's/^GX_P=//p' "$1")
  GX_N=$(sed -n 's/^GX_N=//p' "$1")
  GX_DIR=$(sed -n 's/^GX_DIR=//p' "$1")
  case "$GX_P" in gx[0-9]*) ;; *) rm -f "$1"; return 0 ;; esac
  # dnsmasq was a child of the dead case: its pid file names it
  if [ -f "$GX_DIR/dnsmasq.pid.bg" ]; then
    local pid
    pid=$(cat "$GX_DIR/dnsmasq.pid.bg")
    if grep -qs "$GX_DIR/dnsmasq.conf" "/proc/$pid/cmdline"; then kill -TERM "$pid"; fi
    rm -f "$GX_DIR/dnsmasq.pid.bg"
  fi
  cluster_destroy
  rm -f "$1"
}

# Things every case uses.
GXBOOT=${GXBOOT:-$GX_ROOT/build/gxboot}
PY=/usr/bin/python3

# gx_need_gxboot SUBCMD : skip (77) when the binary or a subcommand is missing.
gx_need_gxboot() {
  [ -x "$GXBOOT" ] || { echo "SKIP: $GXBOOT not built (make all)"; exit 77; }
}

# gx_start i ARGS... : gxboot ARGS in pod i, --out $GX_DIR/out<i>, log $GX_DIR/pod<i>.log;
# GX_PIDS[i] = its PID. ARGS are gxboot's (options, then -- CMD...).
declare -a GX_PIDS GX_RC
gx_start() {
  local i=$1
  shift
  mkdir -p "$GX_DIR/out$i"
  pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" --out "$GX_DIR/out$i" "$@"
  GX_PIDS[i]=$GX_PID
}

# gx_wait_all SEC i... : wait for each pod's gxboot (SEC s in all); GX_RC[i] = its status
gx_wait_all() {
  local end=$(($(date +%s) + $1)) i left
  shift
  for i in "$@"; do
    left=$((end - $(date +%s)))
    [ "$left" -gt 0 ] || left=1
    pod_wait "${GX_PIDS[i]}" "$left"
    GX_RC[i]=$?
  done
}

# gx_env FILE NAME : a variable's value from a written env file (POSIX sh, sourced alone)
gx_env() { env -i /bin/sh -c '. "$1" && printenv "$2"' sh "$1" "$2"; }

# gx_expect_rc WANT i... : every listed pod exited WANT
gx_expect_rc() {
  local want=$1 i
  shift
  for i in "$@"; do
    [ "${GX_RC[i]}" = "$want" ] ||
      fail "$(pod_name "$i") exited ${GX_RC[i]} (want $want)" "$GX_DIR/pod$i.log"
  done
}

# gx_expect_in i PATTERN : pod i's output matches the extended regex
gx_expect_in() {
  grep -Eq -- "$2" "$GX_DIR/pod$1.log" ||
    fail "$(pod_name "$1"): output lacks /$2/" "$GX_DIR/pod$1.log"
}

# gx_expect_no_files i... : nothing written to --out (a failed run leaves no env/hostfile)
gx_expect_no_files() {
  local i f
  for i in "$@"; do
    for f in env env.json hostfile rendezvous.json; do
      [ ! -e "$GX_DIR/out$i/$f" ] || fail "$(pod_name "$i") wrote $f although it failed" "$GX_DIR/pod$i.log"
    done
  done
}

# A CMD that reports what gxboot handed it, one line.
GX_REPORT=(/bin/sh -c 'echo "GXREPORT rank=$NODE_RANK nnodes=$NNODES master=$MASTER_ADDR:$MASTER_PORT iface=$GXBOOT_IFACE addr=$GXBOOT_ADDR gloo=$GLOO_SOCKET_IFNAME token=${GXBOOT_TOKEN:-none}"')

# gx_expect_report i [NNODES] : pod i's report line shows its rank, the peer count (default
# every pod) and the coordinator's net1 address
gx_expect_report() {
  local i=$1 want
  want="GXREPORT rank=$i nnodes=${2:-$GX_N} master=$(pod_net1 0):29500 iface=net1 addr=$(pod_net1 "$i") gloo=net1 token=none"
  grep -qxF -- "$want" "$GX_DIR/pod$i.log" ||
    fail "job-worker-$i: want '$want'" "$GX_DIR/pod$i.log"
}

# Print a file's tail under a heading (diagnosis on failure).
gx_show() {
  local f
  for f in "$@"; do
    [ -f "$f" ] || continue
    echo "---- $f" >&2
    tail -n 30 "$f" >&2
  done
}

# fail MSG [FILES...] : print the message and the logs, exit 1 (trap tears down)
fail() {
  local m=$1
  shift
  echo "FAIL: $m" >&2
  gx_show "$@"
  exit 1
}
