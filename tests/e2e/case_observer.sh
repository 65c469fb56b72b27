#!/usr/bin/env bash
# The MPI Operator launcher as an observer: /etc/mpi/hostfile lists
# job-worker-1..3 (the launcher, job-worker-0, is not in it). The workers meet with
# --peers 'job-worker-{1..3}' --slots 2 --supervise (the coordinator keeps serving while its
# command runs); the launcher starts 1 s after them, takes its peers from /etc/mpi/hostfile
# (a private bind mount in its own mount namespace) and runs `gxboot init`.
# A. Asserts: all exit 0; the launcher logs that it is an observer; its hostfile lists the three
# workers' net1 addresses with slots=2 in rank order; its env has MASTER_ADDR = job-worker-1's
# net1 address, NNODES=3, OMPI_MCA_orte_default_hostfile = its hostfile, and no NODE_RANK.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
created_etc_mpi=0
[ -d /etc/mpi ] || { mkdir /etc/mpi && created_etc_mpi=1; }
cleanup_etc_mpi() { [ "$created_etc_mpi" = 1 ] && rmdir /etc/mpi 2>/dev/null; }
trap 'cleanup_etc_mpi' EXIT
cluster_create 4 || fail "cluster_create"
trap 'cluster_destroy; cleanup_etc_mpi' EXIT
T=$(cluster_token)
mkdir -p "$GX_DIR/mpi"
printf 'job-worker-1 slots=2\njob-worker-2 slots=2\njob-worker-3 slots=2\n' >"$GX_DIR/mpi/hostfile"
# the three workers run `sleep SEC`; the launcher starts 1 s after them
run_job() {
  local i
  for i in 1 2 3; do
    gx_start "$i" --peers 'job-worker-{1..3}' --slots 2 --supervise --token-file "$T" \
      --timeout 20 -- sleep "$1"
  done
  sleep 1
  mkdir -p "$GX_DIR/out0"
  pod_bg 0 "$GX_DIR/pod0.log" unshare -m /bin/sh -c \
    'mount --make-rprivate / && mount --bind "$1" /etc/mpi && shift && exec "$@"' sh "$GX_DIR/mpi" \
    "$GXBOOT" init --token-file "$T" --timeout 20 --out "$GX_DIR/out0"
  GX_PIDS[0]=$GX_PID
  gx_wait_all 40 0 1 2 3
}
run_job 6
gx_expect_rc 0 0 1 2 3
gx_expect_in 0 'observer'
want=$(printf '%s slots=2\n' "$(pod_net1 1)" "$(pod_net1 2)" "$(pod_net1 3)")
got=$(cat "$GX_DIR/out0/hostfile" 2>/dev/null)
[ "$got" = "$want" ] || fail "launcher hostfile: got '$got' want '$want'" "$GX_DIR/pod0.log"
E=$GX_DIR/out0/env
[ "$(gx_env "$E" MASTER_ADDR)" = "$(pod_net1 1)" ] || fail "launcher MASTER_ADDR: $(gx_env "$E" MASTER_ADDR)"
[ "$(gx_env "$E" NNODES)" = 3 ] || fail "launcher NNODES: $(gx_env "$E" NNODES)"
[ "$(gx_env "$E" OMPI_MCA_orte_default_hostfile)" = "$GX_DIR/out0/hostfile" ] ||
  fail "launcher hostfile variable: $(gx_env "$E" OMPI_MCA_orte_default_hostfile)"
[ -z "$(gx_env "$E" NODE_RANK)" ] || fail "an observer got NODE_RANK=$(gx_env "$E" NODE_RANK)"
echo "observer OK: $(tr '\n' ' ' <"$GX_DIR/out0/hostfile")"

# B. The same job with relays on (GXBOOT_RELAY_FANOUT=2: job-worker-3, index 2, is a relay with
# no children): the launcher, an observer, joins the coordinator (it read a relay name for
# its index SIZE_MAX and crashed before).
for i in 0 1 2 3; do mv "$GX_DIR/pod$i.log" "$GX_DIR/pod$i.a.log"; rm -rf "$GX_DIR/out$i"; done
export GXBOOT_RELAY_FANOUT=2
run_job 3
gx_expect_rc 0 0 1 2 3
got=$(cat "$GX_DIR/out0/hostfile" 2>/dev/null)
[ "$got" = "$want" ] || fail "B. launcher hostfile: got '$got' want '$want'" "$GX_DIR/pod0.log"
echo "B. observer with relays on (fan-out 2) OK"
