#!/usr/bin/env bash
# Security: hostile input around a real rendezvous.
# 1. A peer list or --self carrying shell syntax is refused with exit 2 and nothing runs.
# 2. While 3 pods meet, a 4th pod without the token (not in --peers) keeps opening connections
#    to the coordinator's rendezvous port on eth0 and net1: 40 that send nothing and 40 that
#    send random bytes, then a fake JOIN-sized garbage burst.
# Asserts: (1) exit 2 and the marker file is never created; (2) the 3 pods exit 0 and each CMD
# got its rank and MASTER_ADDR = the coordinator's net1 address (the stranger steered nothing).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 4 || fail "cluster_create"
T=$(cluster_token)
X=$GX_DIR/pwned
for bad in "job-worker-{0..1},\$(touch $X)" "job-worker-0;touch $X" "job-worker-\`touch $X\`"; do
  pod_exec 0 "$GXBOOT" --peers "$bad" --token-file "$T" --timeout 2 --out "$GX_DIR/bad" -- true \
    >"$GX_DIR/bad.log" 2>&1
  rc=$?
  [ "$rc" = 2 ] || fail "--peers '$bad' exited $rc (want 2)" "$GX_DIR/bad.log"
  grep -q "not available" "$GX_DIR/bad.log" && fail "gxboot run is not built" "$GX_DIR/bad.log"
  [ ! -e "$X" ] || fail "--peers '$bad' ran a command"
done
pod_exec 0 "$GXBOOT" --peers 'job-worker-{0..2}' --self "job-worker-0;touch $X" --token-file "$T" \
  --timeout 2 --out "$GX_DIR/bad" -- true >"$GX_DIR/bad.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "--self with shell syntax exited $rc (want 2)" "$GX_DIR/bad.log"
[ ! -e "$X" ] || fail "--self ran a command"

# the stranger: pod 3, no token
# (a file, not stdin: pod_bg gives the command /dev/null as stdin)
cat >"$GX_DIR/stranger.py" <<'PYEOF'
import os, socket, sys, time
held = []
end = time.time() + 25
while time.time() < end:
    for host in sys.argv[1:3]:
        for mode in ("idle", "junk"):
            try:
                s = socket.create_connection((host, 29410), 1)
            except OSError:
                continue
            if mode == "junk":
                try:
                    s.sendall(os.urandom(512))
                except OSError:
                    pass
            held.append(s)
    if len(held) > 160:
        for s in held[:80]:
            s.close()
        del held[:80]
    time.sleep(0.2)
    with open(sys.argv[3], "w") as f:
        f.write("%d\n" % len(held))
PYEOF
pod_bg 3 "$GX_DIR/stranger.log" "$PY" "$GX_DIR/stranger.py" "$(pod_eth0 0)" "$(pod_net1 0)" \
  "$GX_DIR/stranger.n"
stranger=$GX_PID
P=(--peers 'job-worker-{0..2}' --token-file "$T" --timeout 20)
# the coordinator first; the members once the stranger holds connections to it
gx_start 0 "${P[@]}" -- "${GX_REPORT[@]}"
for k in $(seq 1 100); do
  [ "$(cat "$GX_DIR/stranger.n" 2>/dev/null || echo 0)" -ge 40 ] && break
  sleep 0.1
done
[ "$(cat "$GX_DIR/stranger.n" 2>/dev/null || echo 0)" -ge 40 ] ||
  fail "the stranger could not connect to the coordinator" "$GX_DIR/stranger.log"
for i in 1 2; do gx_start "$i" "${P[@]}" -- "${GX_REPORT[@]}"; done
gx_wait_all 40 0 1 2
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i" 3; done
kill "$stranger" 2>/dev/null
[ -s "$GX_DIR/stranger.n" ] || fail "the stranger never ran" "$GX_DIR/stranger.log"
echo "shell syntax refused; rendezvous completed under a stranger's connections ($(cat "$GX_DIR/stranger.n") held at the end)"
