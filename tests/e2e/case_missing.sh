#!/usr/bin/env bash
# A missing peer: 4 pods, job-worker-3 never starts (and, as in Kubernetes,
# has no DNS record). The others run with --timeout 6.
# Asserts: pods 0-2 exit 3, each within --timeout + 10 s, each one's output names
# job-worker-3; none of them wrote env/env.json/hostfile/rendezvous.json.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
GX_UNPUBLISHED="3" cluster_create 4 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do gx_start "$i" --peers 'job-worker-{0..3}' --token-file "$T" --timeout 6 -- "${GX_REPORT[@]}"; done
gx_wait_all 16 0 1 2
gx_expect_rc 3 0 1 2
for i in 0 1 2; do gx_expect_in "$i" 'job-worker-3'; done
gx_expect_no_files 0 1 2
for i in 0 1 2; do echo "job-worker-$i: $(tail -n 1 "$GX_DIR/pod$i.log")"; done
