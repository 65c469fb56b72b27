#!/bin/sh
# netns_rsh.sh - plm_rsh_agent for the simulated cluster (what `kubectl exec` is to MPI
# Operator v1): netns_rsh.sh [ssh flags] HOST CMD... runs "CMD..." under sh -c in the pod
# whose net1 or eth0 address (or hostname) is HOST. The pods come from GX_HOSTMAP (lines
# "net1 eth0 netns hostname", written by cluster.sh). Every call is logged to
# GX_RSH_LOG as "HOST" so a test can see which addresses mpirun used.
while [ $# -gt 0 ]; do # ssh flags MPI launchers pass (-x, -T, -o X, -p N)
  case "$1" in
  -o | -p | -l | -i) shift 2 ;;
  -*) shift ;;
  *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: netns_rsh.sh HOST CMD..." >&2; exit 255; }
host=$1
shift
map=${GX_HOSTMAP:?GX_HOSTMAP not set}
line=$(awk -v h="$host" '$1 == h || $2 == h || $4 == h { print; exit }' "$map")
[ -n "$line" ] || { echo "netns_rsh.sh: $host: unknown host" >&2; exit 255; }
set -- "$(echo "$line" | cut -d' ' -f3)" "$(echo "$line" | cut -d' ' -f4)" "$*"
[ -z "${GX_RSH_LOG:-}" ] || echo "$host" >>"$GX_RSH_LOG"
exec ip netns exec "$1" unshare -u /bin/sh -c 'hostname "$1" && exec /bin/sh -c "$2"' sh "$2" "$3"
