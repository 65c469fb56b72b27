#!/usr/bin/env bash
# A coordinator started without any token, members holding one.
# Asserts: the members accept nothing from it (no ASSIGN, no COMMIT, no address): they keep
# retrying until --timeout, then exit 5 saying the coordinator failed authentication, and
# write no files. The coordinator (no token) never completes either.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
P=(--peers 'job-worker-{0..2}' --timeout 6)
gx_start 0 "${P[@]}" -- "${GX_REPORT[@]}"
gx_start 1 "${P[@]}" --token-file "$T" -- "${GX_REPORT[@]}"
gx_start 2 "${P[@]}" --token-file "$T" -- "${GX_REPORT[@]}"
gx_wait_all 20 0 1 2
for i in 1 2; do
  gx_expect_rc 5 "$i"
  gx_expect_in "$i" 'coordinator .*failed authentication'
  gx_expect_no_files "$i"
done
gx_expect_rc 3 0
gx_expect_no_files 0
for i in 0 1 2; do echo "job-worker-$i: $(tail -n 1 "$GX_DIR/pod$i.log")"; done
