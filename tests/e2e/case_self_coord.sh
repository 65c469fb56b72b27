#!/usr/bin/env bash
# --self names another pod, on the coordinator: job-worker-0 runs with --self job-worker-1, so
# it thinks it is a member and waits, with the others, for a coordinator whose name resolves
# to its own eth0 address, where nothing listens. (It used to end like every pod at --timeout:
# exit 3, "coordinator job-worker-0 never answered ... Connection refused", the double claim of
# job-worker-1 never reported.)
# Asserts: job-worker-0 exits 2 with one line naming --self job-worker-1, its host name
# job-worker-0 as the coordinator's entry, its own address, the port, the double claim and the
# fix; the others still exit 3 (their coordinator never came); nobody wrote files. The time
# job-worker-0 took is printed against the --timeout.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 15)
gx_start 2 "${P[@]}" -- "${GX_REPORT[@]}"
gx_start 1 "${P[@]}" -- "${GX_REPORT[@]}"
t0=$(date +%s%N)
gx_start 0 "${P[@]}" --self job-worker-1 -- "${GX_REPORT[@]}"
gx_wait_all 30 0
dt=$((($(date +%s%N) - t0) / 1000000))
gx_wait_all 30 1 2
gx_expect_rc 2 0
gx_expect_rc 3 1 2
last=$(grep -v '^$' "$GX_DIR/pod0.log" | tail -n 1)
want="^gxboot: --self job-worker-1 makes this pod a member, but its host name job-worker-0 is the first entry of the peer list, the coordinator's: job-worker-0\.job\.default\.svc\.cluster\.local\.? resolves to this pod's own address $(pod_eth0 0 | sed 's/\./\\./g'), and nothing listens there on port 29410, so no coordinator will answer and job-worker-1 is claimed by two pods; drop --self, or set it to job-worker-0\$"
echo "$last" | grep -Eq -- "$want" || fail "job-worker-0's last line: '$last'" "$GX_DIR/pod0.log"
gx_expect_no_files 0 1 2
for i in 0 1 2; do echo "job-worker-$i: $(tail -n 1 "$GX_DIR/pod$i.log")"; done
echo "--self naming another pod on the coordinator: exit 2 after $dt ms (--timeout 15 s), others 3: OK"
