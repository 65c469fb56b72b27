#!/usr/bin/env bash
# job-worker-2 has a different token.
# Asserts: job-worker-2 exits 5 at its --timeout (12 s; the REJECT comes
# in clear, so a member holding a token retries it until the deadline), its output names the
# reject reason (the token), it wrote no files; job-worker-0 and -1 exit 3 at --timeout and
# name job-worker-2; the coordinator's line also says why (mentions token), marked unproven.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
BAD=$(cluster_token "$GX_DIR/token.bad")
P=(--peers 'job-worker-{0..2}' --timeout 12)
gx_start 0 "${P[@]}" --token-file "$T" -- "${GX_REPORT[@]}"
gx_start 1 "${P[@]}" --token-file "$T" -- "${GX_REPORT[@]}"
gx_start 2 "${P[@]}" --token-file "$BAD" -- "${GX_REPORT[@]}"
gx_wait_all 20 2
gx_expect_rc 5 2
gx_expect_in 2 'rejected our JOIN .*until the deadline.*bad token'
gx_expect_no_files 2
gx_wait_all 20 0 1
gx_expect_rc 3 0 1
for i in 0 1; do gx_expect_in "$i" 'job-worker-2'; done
gx_expect_in 0 'job-worker-2.*([Tt]oken|auth)'
for i in 0 1 2; do echo "job-worker-$i: $(tail -n 1 "$GX_DIR/pod$i.log")"; done
