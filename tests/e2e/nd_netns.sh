#!/usr/bin/env bash
# nd_netns.sh - `gxboot netdetect` against real netlink in a network namespace
# this test creates. A "pod" namespace gets eth0 (veth, default route)
# and net1/net2 (veth); their peers live in a second namespace so carrier is real.
#   1 eth0 + net1                    -> chooses net1
#   2 net1's peer down (no carrier)  -> exit 4 naming net1
#   3 net1 + net2, --iface CIDR      -> the interface in that CIDR
#   4 only eth0                      -> exit 4 "no secondary interface: only eth0 ..."
#   5 only eth0, --allow-primary     -> eth0 with a warning
#   6 100 extra links, --json        -> completes; prints the time it took
#   7 hostNetwork shape: ens2f0 (default route) + ens1f0np0, no net1
#                                    -> ens1f0np0, the physical link without the default route
#   8 an IPv6-only secondary, and a link-local-only one -> the global one; the
#                                    link-local-only link is passed over with a reason
#   9 the default route on net1 (Multus default-route), eth0 without it
#                                    -> net1; the reason names rule 3 (eth0 in a pod);
#                                    one note says net1 holds the default route
#  10 hostNetwork on a Cilium/flannel-shaped node: cilium_host/cilium_net (a veth pair
#     inside the namespace, NOARP, /32), cni0 (bridge, pod CIDR gateway, a veth port),
#     flannel.1 (vxlan, /32), then the secondary NIC at a higher ifindex and the same
#     veth speed as cilium_host -> the NIC; each piece of plumbing passed over with why
# GXBOOT: the binary (default build/gxboot). ND_QEMU_ARCH=arm64: GXBOOT is that build under
# qemu-user (tests/e2e/gxboot-arm64); the lines say nd_netns_arm64/, and the time of case 6 has
# no target (qemu translates every instruction).
# Exit: 0 all passed, 1 a case failed, 77 skipped (not root / no netns).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GXBOOT=${GXBOOT:-$ROOT/build/gxboot}
ND=nd_netns${ND_QEMU_ARCH:+_$ND_QEMU_ARCH}
POD="gxnd$$-pod"
PEER="gxnd$$-peer"
TMP=$(mktemp -d)
fail=0

if [ "$(id -u)" -ne 0 ] || ! ip netns add "$POD" 2>/dev/null; then
  echo "SKIPPED: needs root/netns"
  rm -rf "$TMP"
  exit 77
fi
teardown() {
  ip netns del "$POD" 2>/dev/null
  ip netns del "$PEER" 2>/dev/null
  rm -rf "$TMP"
}
trap teardown EXIT INT TERM
if [ ! -x "$GXBOOT" ]; then
  echo "SKIPPED: $GXBOOT not built"
  exit 77
fi
# under qemu the wrapper always exists: a binary or qemu it cannot run fails, never skips
if [ -n "${ND_QEMU_ARCH:-}" ] && ! "$GXBOOT" version >"$TMP/version" 2>&1; then
  echo "FAIL $ND: $GXBOOT cannot run: $(tail -n 1 "$TMP/version")"
  exit 1
fi
ip netns add "$PEER"

# what a kubelet puts into every container of a pod (service links or not): netdetect takes
# eth0 for the pod network only in a Kubernetes pod (podman and docker order eth0, eth1 freely)
export KUBERNETES_SERVICE_HOST=10.96.0.1 KUBERNETES_SERVICE_PORT=443

pod() { ip netns exec "$POD" "$@"; }
peer() { ip netns exec "$PEER" "$@"; }

# up_wait NAME: until the kernel reports NAME's operstate up (carrier comes through
# linkwatch a moment after both ends are set up; netdetect must not race it). Bounded.
up_wait() {
  local k
  for k in $(seq 1 50); do
    pod ip -o link show dev "$1" | grep -q 'state UP' && return 0
    sleep 0.1
  done
  echo "$1 did not come up"
}

# veth NAME ADDR/PLEN: NAME in the pod, NAME-p in the peer namespace, both up.
veth() {
  ip link add "$1" netns "$POD" type veth peer name "$1-p" netns "$PEER"
  pod ip addr add "$2" dev "$1"
  pod ip link set "$1" up
  peer ip link set "$1-p" up
  up_wait "$1"
}

# nd NAME ARGS...: run netdetect in the pod; stdout/stderr in $TMP/NAME.{out,err}; sets rc.
nd() {
  local name=$1
  shift
  pod "$GXBOOT" netdetect "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
  rc=$?
}

result() {
  if [ "$2" = ok ]; then
    echo "PASS $ND/$1"
  else
    echo "FAIL $ND/$1: $2"
    sed 's/^/    /' "$TMP/$1.out" "$TMP/$1.err" 2>/dev/null | tail -n 30
    fail=1
  fi
}

json_choice() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choice"]["iface"])' "$1"; }

pod ip link set lo up
peer ip link set lo up
veth eth0 10.77.1.2/24
peer ip addr add 10.77.1.1/24 dev eth0-p
pod ip route add default via 10.77.1.1 dev eth0
veth net1 192.168.77.2/24

# 1: eth0 (default route) + net1 -> net1
nd choose_net1
if [ $rc -ne 0 ]; then result choose_net1 "exit $rc"
elif ! grep -q '^choice: *net1 192.168.77.2/24' "$TMP/choose_net1.out"; then result choose_net1 "did not choose net1"
elif ! grep -q 'passed over: eth0 is the pod network (eth0 in a pod)' "$TMP/choose_net1.out"; then result choose_net1 "eth0 not passed over"
elif ! grep -q 'no RDMA devices' "$TMP/choose_net1.out"; then result choose_net1 "no 'no RDMA devices' line"
else result choose_net1 ok; fi

nd choose_net1_json --json
if [ $rc -ne 0 ] || [ "$(json_choice "$TMP/choose_net1_json.out")" != net1 ]; then
  result choose_net1_json "exit $rc or JSON choice is not net1"
else result choose_net1_json ok; fi

# 2: net1's peer goes down: net1 loses carrier -> exit 4 naming net1
peer ip link set net1-p down
nd net1_down
if [ $rc -ne 4 ]; then result net1_down "exit $rc, want 4"
elif ! grep -q 'net1 is down (no carrier)' "$TMP/net1_down.err"; then result net1_down "error line does not name net1 down"
else result net1_down ok; fi
peer ip link set net1-p up
up_wait net1

# 3: two secondaries, --iface CIDR picks the one inside it
veth net2 192.168.78.2/24
nd cidr_net2 --iface 192.168.78.0/24
if [ $rc -ne 0 ] || ! grep -q '^choice: *net2 ' "$TMP/cidr_net2.out"; then result cidr_net2 "exit $rc or not net2"
else result cidr_net2 ok; fi
nd cidr_net1 --iface 192.168.77.0/24
if [ $rc -ne 0 ] || ! grep -q '^choice: *net1 ' "$TMP/cidr_net1.out"; then result cidr_net1 "exit $rc or not net1"
else result cidr_net1 ok; fi
nd iface_missing --iface net7
if [ $rc -ne 4 ] || ! grep -q -- '--iface net7: no such interface' "$TMP/iface_missing.err"; then
  result iface_missing "exit $rc or wrong line"
else result iface_missing ok; fi

# 4: only eth0 -> exit 4
pod ip link del net1
pod ip link del net2
nd only_eth0
if [ $rc -ne 4 ]; then result only_eth0 "exit $rc, want 4"
elif ! grep -q 'no secondary interface: only eth0 (default route) found' "$TMP/only_eth0.err"; then result only_eth0 "wrong error line"
else result only_eth0 ok; fi

# 5: --allow-primary -> eth0 with a warning
nd allow_primary --allow-primary
if [ $rc -ne 0 ]; then result allow_primary "exit $rc"
elif ! grep -q '^choice: *eth0 ' "$TMP/allow_primary.out"; then result allow_primary "did not choose eth0"
elif ! grep -qi 'warning.*allow-primary' "$TMP/allow_primary.out" "$TMP/allow_primary.err"; then result allow_primary "no warning"
else result allow_primary ok; fi

# 6: 100 more links (and net1 back): --json completes; the time is printed, not asserted
veth net1 192.168.77.2/24
for i in $(seq 1 100); do echo "link add d$i type bridge"; done | pod ip -batch -
for i in $(seq 1 100); do echo "link set d$i up"; done | pod ip -batch -
t0=$(date +%s%N)
nd links100 --json
t1=$(date +%s%N)
if [ $rc -ne 0 ] || [ "$(json_choice "$TMP/links100.out")" != net1 ]; then
  result links100 "exit $rc or JSON choice is not net1"
else
  result links100 ok
  target=", target <= 20 ms"
  [ -z "${ND_QEMU_ARCH:-}" ] || target=" under qemu-user, no target"
  echo "INFO $ND/links100: netdetect --json with $(pod ip -o link | wc -l) links: $(((t1 - t0) / 1000000)) ms (whole process$target)"
fi

# 7: hostNetwork: physical names, the default route on one of them
ip netns del "$POD"
ip netns add "$POD"
pod ip link set lo up
veth ens2f0 10.78.1.2/24
peer ip addr add 10.78.1.1/24 dev ens2f0-p
pod ip route add default via 10.78.1.1 dev ens2f0
veth ens1f0np0 172.30.4.2/24
nd host_network
if [ $rc -ne 0 ] || ! grep -q '^choice: *ens1f0np0 172.30.4.2/24' "$TMP/host_network.out"; then
  result host_network "exit $rc or not ens1f0np0"
elif ! grep -q 'passed over: ens2f0 holds the default route' "$TMP/host_network.out"; then
  result host_network "ens2f0 not passed over"
else result host_network ok; fi

# 8: IPv6: a global-only secondary is chosen; a link-local-only one is passed over
pod ip link del ens1f0np0
pod sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0
ip link add net1 netns "$POD" type veth peer name net1-p netns "$PEER"
pod ip addr add fd00:77::2/64 dev net1 nodad
pod ip link set net1 up
peer ip link set net1-p up
up_wait net1
ip link add net2 netns "$POD" type veth peer name net2-p netns "$PEER"
pod ip link set net2 up
peer ip link set net2-p up
for k in $(seq 1 30); do pod ip -6 addr show dev net2 | grep -q 'scope link' && break; sleep 0.1; done
nd ipv6 --json
if [ $rc -ne 0 ] || [ "$(json_choice "$TMP/ipv6.out")" != net1 ]; then result ipv6 "exit $rc or not net1"
elif ! python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["choice"]; sys.exit(0 if "fd00:77::2" in json.dumps(c) else 1)' "$TMP/ipv6.out"; then
  result ipv6 "the choice does not carry fd00:77::2"
else result ipv6 ok; fi
nd ipv6_text
if ! grep -q 'passed over: net2' "$TMP/ipv6_text.out"; then result ipv6_linklocal "net2 (link-local only) not passed over with a reason"
else result ipv6_linklocal ok; fi

# new_pod: a fresh pod namespace. Its links are deleted first: deleting a veth end removes
# its peer at once, while a deleted namespace is torn down later (its peers' names in
# $PEER would still be taken).
new_pod() {
  local l
  for l in $(pod ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
    [ "$l" = lo ] || pod ip link del "$l" 2>/dev/null
  done
  ip netns del "$POD"
  ip netns add "$POD"
  pod ip link set lo up
}

json_get() { # json_get FILE EXPR: the Python expression over the JSON as j (a tuple: spaced)
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); v=eval(sys.argv[2])
print(" ".join(map(str, v)) if isinstance(v, tuple) else v)' "$1" "$2"
}

# 9: Multus moved the default route onto net1; eth0 is still the pod network
new_pod
veth eth0 10.77.9.2/24
veth net1 192.168.79.2/24
peer ip addr add 192.168.79.1/24 dev net1-p
pod ip route add default via 192.168.79.1 dev net1
nd default_on_net1 --json
if [ $rc -ne 0 ] || [ "$(json_choice "$TMP/default_on_net1.out")" != net1 ]; then
  result default_on_net1 "exit $rc or JSON choice is not net1"
elif ! json_get "$TMP/default_on_net1.out" 'j["choice"]["reason"]' | grep -q 'pod network eth0 (rule 3: in a pod, eth0 is the pod network)'; then
  result default_on_net1 "the reason does not name rule 3"
elif [ "$(json_get "$TMP/default_on_net1.out" 'j["primary"]["iface"], j["primary"]["rule"], j["host_network"]')" != "eth0 3 False" ]; then
  result default_on_net1 "primary is not eth0 by rule 3 in a pod"
elif [ "$(json_get "$TMP/default_on_net1.out" 'len(j["notes"]), len(j["warnings"])')" != "1 0" ] ||
  ! json_get "$TMP/default_on_net1.out" 'j["notes"][0]' | grep -q '^net1 holds the default route: allowed'; then
  result default_on_net1 "not one note (and no warning) about the default route on net1"
else result default_on_net1 ok; fi
nd default_on_net1_text
if [ $rc -ne 0 ] || ! grep -q '^choice: *net1 192.168.79.2/24' "$TMP/default_on_net1_text.out"; then
  result default_on_net1_text "exit $rc or not net1"
elif ! grep -q '^pod network: eth0 (rule 3)' "$TMP/default_on_net1_text.out" ||
  ! grep -q '^note: *net1 holds the default route' "$TMP/default_on_net1_text.out"; then
  result default_on_net1_text "no pod network line or no note"
else result default_on_net1_text ok; fi
# the same namespace outside Kubernetes (podman kube play, docker: no KUBERNETES_SERVICE_HOST):
# eth0 is not the pod network by convention there, the default route decides (rule 4)
KUBERNETES_SERVICE_HOST= nd default_on_net1_podman --json
if [ $rc -ne 0 ] || [ "$(json_choice "$TMP/default_on_net1_podman.out")" != eth0 ]; then
  result default_on_net1_podman "exit $rc or JSON choice is not eth0"
elif ! json_get "$TMP/default_on_net1_podman.out" 'j["choice"]["reason"]' | grep -q 'rule 3 not applied: no KUBERNETES_SERVICE_HOST'; then
  result default_on_net1_podman "the reason does not say why rule 3 was not applied"
else result default_on_net1_podman ok; fi

# 10: hostNetwork on a node with CNI plumbing: real netlink kinds, flags, masters, peers
new_pod
veth ens2f0 10.78.1.2/24
peer ip addr add 10.78.1.1/24 dev ens2f0-p
pod ip route add default via 10.78.1.1 dev ens2f0
pod ip link add cilium_host type veth peer name cilium_net
pod ip link set cilium_host arp off
pod ip link set cilium_net arp off
pod ip addr add 10.244.0.183/32 dev cilium_host
pod ip link set cilium_net up
pod ip link set cilium_host up
pod ip link add cni0 type bridge
pod ip addr add 10.244.0.1/24 dev cni0
ip link add vethc0 netns "$POD" type veth peer name vethc0-p netns "$PEER"
pod ip link set vethc0 master cni0 up
peer ip link set vethc0-p up
pod ip link set cni0 up
pod ip link add flannel.1 type vxlan id 1 dstport 8472 dev ens2f0
pod ip addr add 10.244.0.0/32 dev flannel.1
pod ip link set flannel.1 up
veth ens1f0np0 172.30.4.2/24
nd host_cni
why() { grep "^passed over: $1 " "$TMP/host_cni.out" | sed "s/^passed over: $1 //"; }
if [ $rc -ne 0 ] || ! grep -q '^choice: *ens1f0np0 172.30.4.2/24' "$TMP/host_cni.out"; then
  result host_cni "exit $rc or not ens1f0np0"
elif ! why cilium_host | grep -q 'veth pair inside this namespace' ||
  ! why cilium_net | grep -q 'veth pair inside this namespace'; then
  result host_cni "cilium_host/cilium_net not passed over as a veth pair inside the namespace"
elif [ "$(why cni0)" != "is a bridge without a physical port (a CNI or container bridge)" ]; then
  result host_cni "cni0 not passed over as a CNI bridge"
elif [ "$(why vethc0)" != "is a port of bridge cni0 (its master carries the address)" ]; then
  result host_cni "vethc0 not passed over as a port of cni0"
elif [ "$(why flannel.1)" != "is a virtual device (kind vxlan)" ]; then
  result host_cni "flannel.1 not passed over as a vxlan"
elif ! grep -q '^pod network: ens2f0 (rule 4)  hostNetwork: no eth0' "$TMP/host_cni.out"; then
  result host_cni "no hostNetwork line for ens2f0"
elif grep -q '^warning:' "$TMP/host_cni.out"; then
  result host_cni "a warning (a tie?)"
else result host_cni ok; fi

exit $fail
