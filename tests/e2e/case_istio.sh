#!/usr/bin/env bash
# A service mesh: the member's downward-API annotations file shows an injected Istio
# sidecar (sidecar.istio.io/status) and the coordinator's name resolves but its port refuses
# (as a sidecar's iptables redirect to a proxy that is not up yet makes it look).
# Asserts: exit 3 with one line that names the mesh and the annotations that exclude the
# ports; without the sidecar annotation the same failure has no mesh hint.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 2 || fail "cluster_create"
A=$GX_DIR/annotations
printf 'kubectl.kubernetes.io/default-container="main"\nsidecar.istio.io/status="{\\"initContainers\\":[\\"istio-init\\"],\\"containers\\":[\\"istio-proxy\\"]}"\n' >"$A"
gx_start 1 init --peers 'job-worker-{0..1}' --timeout 5 --network-status "$A"
gx_wait_all 20 1
gx_expect_rc 3 1
tail -n 1 "$GX_DIR/pod1.log" | grep -q 'Istio sidecar intercepts .*excludeOutboundPorts and excludeInboundPorts: "29410,29411,29412"' ||
  fail "no mesh hint in the final line" "$GX_DIR/pod1.log"
printf 'kubectl.kubernetes.io/default-container="main"\n' >"$A"
gx_start 1 init --peers 'job-worker-{0..1}' --timeout 5 --network-status "$A"
gx_wait_all 20 1
gx_expect_rc 3 1
! grep -q Istio "$GX_DIR/pod1.log" || fail "a mesh hint without a sidecar" "$GX_DIR/pod1.log"
echo "mesh hint: $(tail -n 1 "$GX_DIR/pod1.log" | cut -c1-200)..."
