#!/usr/bin/env bash
# check --report FILE.html. 4 pods, everything arriving on job-worker-2's net1 is
# dropped; the coordinator writes the page. It is rendered by a real headless chromium
# (Debian package "chromium"; skipped without it): --dump-dom must show every pod's name,
# the summary, job-worker-2 blamed, and a ✗ cell for the pair job-worker-0 -> job-worker-2;
# --screenshot must produce a PNG. The page must be self-contained (no script, no URL).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
  { echo "SKIP: chromium not installed (tests/deps.sh: chromium)"; exit 77; }
N=4
cluster_create $N || fail "cluster_create"
T=$(cluster_token)
all=$(seq 0 $((N - 1)))
ip netns exec "$(pod_ns 2)" nft -f - <<'NFT' || fail "nft"
table inet gxreport {
  chain in {
    type filter hook input priority 0; policy accept;
    iifname "net1" counter drop
  }
}
NFT
R=$GX_DIR/report.html
for i in 3 2 1 0; do
  extra=()
  [ "$i" = 0 ] && extra=(--report "$R")
  pod_bg "$i" "$GX_DIR/pod$i.log" "$GXBOOT" check --peers "job-worker-{0..3}" --token-file "$T" \
    --timeout 15 "${extra[@]}"
  GX_PIDS[i]=$GX_PID
done
gx_wait_all 55 $all
# shellcheck disable=SC2086
gx_expect_rc 1 $all
[ -s "$R" ] || fail "no report written" "$GX_DIR/pod0.log"
[ ! -e "$R.tmp" ] || fail "report.html.tmp left behind"
! grep -qiE '<script|https?:|src=|<link' "$R" || fail "the page is not self-contained" "$R"
prof=$(mktemp -d "$GX_DIR/chromium.XXXXXX")
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$prof")
timeout 60 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$R" >"$GX_DIR/dom.html" 2>"$GX_DIR/chromium.log" ||
  fail "chromium --dump-dom failed" "$GX_DIR/chromium.log"
timeout 60 "$CHROMIUM" "${flags[@]}" --window-size=1200,900 --screenshot="$GX_DIR/report.png" \
  "file://$R" >>"$GX_DIR/chromium.log" 2>&1 || fail "chromium --screenshot failed" "$GX_DIR/chromium.log"
dom=$GX_DIR/dom.html
for i in $all; do grep -q "job-worker-$i" "$dom" || fail "the rendered page lacks job-worker-$i" "$dom"; done
grep -q 'id="summary"[^>]*>✗ 6/12 pairs OK over TCP' "$dom" || fail "no summary in the page" "$dom"
grep -q 'class="blame">job-worker-2 (' "$dom" || fail "job-worker-2 not blamed in the page" "$dom"
grep -q 'title="job-worker-0 → job-worker-2: [^"]*">✗</td>' "$dom" ||
  fail "no ✗ cell for job-worker-0 -> job-worker-2" "$dom"
[ "$(head -c 8 "$GX_DIR/report.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
  fail "no PNG from chromium --screenshot" "$GX_DIR/chromium.log"
echo "report: $(wc -c <"$R") bytes, screenshot $(wc -c <"$GX_DIR/report.png") bytes"
