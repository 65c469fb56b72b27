#!/usr/bin/env bash
# The init-container DNS trap: the coordinator's record is never published (a
# headless Service that hides not-ready pods, with the coordinator stuck in its own init).
# job-worker-1 runs `gxboot init` with --timeout 34.
# Asserts: it exits 3; after 30 s of NXDOMAIN it printed the hint once as a warning, and its
# final line repeats it (publishNotReadyAddresses / publish-not-ready-addresses / entrypoint).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
GX_UNPUBLISHED="0" cluster_create 2 || fail "cluster_create"
T=$(cluster_token)
gx_start 1 init --peers 'job-worker-{0..1}' --token-file "$T" --timeout 34
gx_wait_all 50 1
gx_expect_rc 3 1
L=$GX_DIR/pod1.log
[ "$(grep -c 'warn.*publishNotReadyAddresses' "$L")" = 1 ] || fail "the hint was not printed once as a warning" "$L"
tail -n 1 "$L" | grep -q 'publishNotReadyAddresses: true' || fail "the final line lacks the hint" "$L"
tail -n 1 "$L" | grep -q 'publish-not-ready-addresses' || fail "the final line lacks the Volcano hint" "$L"
gx_expect_no_files 1
echo "init DNS trap: $(tail -n 1 "$L" | cut -c1-160)..."
