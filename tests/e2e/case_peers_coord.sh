#!/usr/bin/env bash
# One pod's --peers starts with another name: job-worker-1 runs with
# --peers job-worker-1,job-worker-0,job-worker-2, so it is the coordinator of its own list and
# waits for the others, while they meet job-worker-0 and wait for job-worker-1. No frame passes
# between the two coordinators. (Each used to name only healthy pods: job-worker-1 "peers
# missing: job-worker-0, job-worker-2", job-worker-0 "peers missing: job-worker-1".)
# Asserts: job-worker-0 and job-worker-1 exit 3, and each one's line names the other as a pod
# that listens on port 29410 as a coordinator (or a relay) does but never joined, whose list
# names another coordinator than its own; job-worker-1's adds that no peer joined it (its own
# list is likely the odd one); job-worker-2 exits 3 (its coordinator's waiting list); no files.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
gx_start 0 --peers 'job-worker-{0..2}' --token-file "$T" --timeout 8 -- "${GX_REPORT[@]}"
gx_start 2 --peers 'job-worker-{0..2}' --token-file "$T" --timeout 8 -- "${GX_REPORT[@]}"
gx_start 1 --peers 'job-worker-1,job-worker-0,job-worker-2' --token-file "$T" --timeout 8 -- "${GX_REPORT[@]}"
gx_wait_all 30 0 1 2
gx_expect_rc 3 0 1 2
re() { printf '%s' "$1" | sed 's/[.()]/\\&/g'; }
line0="^gxboot: peers missing after 8s: job-worker-1; job-worker-1 \($(re "$(pod_eth0 1)")\) listens on port 29410 as a coordinator \(or a relay\) does but never joined: its --peers list names another coordinator than this pod's \(job-worker-0\)\$"
line1="^gxboot: peers missing after 8s: job-worker-0, job-worker-2; job-worker-0 \($(re "$(pod_eth0 0)")\) listens on port 29410 as a coordinator \(or a relay\) does but never joined: its --peers list names another coordinator than this pod's \(job-worker-1\); no peer joined this pod: its own list is likely the one that differs\$"
for i in 0 1; do
  eval "want=\$line$i"
  last=$(grep -v '^$' "$GX_DIR/pod$i.log" | tail -n 1)
  echo "$last" | grep -Eq -- "$want" || fail "job-worker-$i's last line: '$last'" "$GX_DIR/pod$i.log"
done
gx_expect_in 2 'job-worker-1'
gx_expect_no_files 0 1 2
for i in 0 1 2; do echo "job-worker-$i: $(tail -n 1 "$GX_DIR/pod$i.log")"; done
