#!/usr/bin/env bash
# The README's headline, bare pod names, on exactly the DNS a kubelet gives a pod
# with hostname + subdomain: search <ns>.svc.cluster.local svc.cluster.local cluster.local,
# ndots:5, /etc/hosts "<eth0> job-worker-<i>.job.default.svc.cluster.local job-worker-<i>".
# The subdomain is not in the search list, so job-worker-0 alone is NXDOMAIN in every pod.
# Part 1: 4 pods run `gxboot --peers job-worker-{0..3} --token-file T --require-token -v -- CMD`,
# eth0 closed except DNS + 29410. Asserts: all exit 0, each CMD got its rank and the
# coordinator's net1 address; each member logged once (-v) that it qualified the bare name
# with its subdomain from /etc/hosts; DNS was asked for the qualified name only.
# Part 2: a pod without a subdomain (its /etc/hosts has only "<ip> job-worker-4") with bare
# names exits 3 at --timeout and its final line says that it has no subdomain and the fix.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
GX_NOSUBDOMAIN="4" cluster_create 5 || fail "cluster_create"
T=$(cluster_token)
pod_exec 1 getent hosts job-worker-0 >/dev/null && fail "bare job-worker-0 resolves: not a kubelet's DNS"
for i in 0 1 2 3; do cluster_cut_eth0 "$i"; done
mark=$(wc -l <"$GX_DIR/dnsmasq.log")
for i in 3 2 1 0; do
  gx_start "$i" --peers 'job-worker-{0..3}' --token-file "$T" --require-token -v --timeout 30 \
    -- "${GX_REPORT[@]}"
done
gx_wait_all 60 0 1 2 3
gx_expect_rc 0 0 1 2 3
for i in 0 1 2 3; do gx_expect_report "$i" 4; done
q="'job-worker-0' is a bare name: resolving it in this pod's subdomain as job-worker-0.job.default.svc.cluster.local."
for i in 1 2 3; do
  [ "$(grep -cF "$q" "$GX_DIR/pod$i.log")" = 1 ] || fail "job-worker-$i: the qualification was not logged once" "$GX_DIR/pod$i.log"
done
! tail -n +$((mark + 1)) "$GX_DIR/dnsmasq.log" | grep -q 'job-worker-0\.default\.svc' ||
  fail "a member asked DNS for the namespace-qualified bare name" "$GX_DIR/dnsmasq.log"
echo "bare names on a kubelet's DNS: 4 pods up"

# part 2: no subdomain
gx_start 4 init --peers 'job-worker-0,job-worker-4' --token-file "$T" --timeout 5
gx_wait_all 30 4
gx_expect_rc 3 4
last=$(tail -n 1 "$GX_DIR/pod4.log")
case $last in
*"never resolved"*"this pod has no subdomain"*"spec.subdomain"*"<pod>.<service>"*) ;;
*) fail "job-worker-4's final line does not name the missing subdomain and the fix: $last" "$GX_DIR/pod4.log" ;;
esac
echo "no subdomain: $(echo "$last" | cut -c1-200)"

# part 3: a bare --peers name that is a Service of the namespace, not a sibling: the member
# asks for it in its subdomain first (NXDOMAIN), then as written (the search list finds it)
echo "$(pod_eth0 0) coord-svc.default.svc.cluster.local" >>"$GX_DIR/dns.hosts"
gx_dns_reload
for i in 1 0; do
  rm -rf "$GX_DIR/out$i"
  gx_start "$i" init --peers 'coord-svc,job-worker-1' $([ "$i" = 0 ] && echo --self coord-svc) \
    --token-file "$T" --timeout 30
done
gx_wait_all 40 0 1
gx_expect_rc 0 0 1
[ "$(gx_env "$GX_DIR/out1/env" MASTER_ADDR)" = "$(pod_net1 0)" ] || fail "Service name: MASTER_ADDR" "$GX_DIR/out1/env"
echo "bare Service name in --peers: resolved as written after the subdomain guess"
