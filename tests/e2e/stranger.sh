# stranger.sh - sourced by the flood cases after cluster.sh: the stranger's addresses and its
# connection holder (stranger.py).
STRANGER="$(dirname "${BASH_SOURCE[0]}")/stranger.py"

# stranger_addrs POD IFACE:DST... : give POD the addresses .100-.249 of each DST's /24 on
# IFACE (noprefixroute, so its routes stay as they are) and print the SRC,DST pairs for
# `stranger.py hold`: 150 sources per DST, so a per-source cap alone cannot stop it.
stranger_addrs() {
  local pod=$1 spec k ifc dst out=""
  shift
  for k in $(seq 100 249); do
    for spec in "$@"; do
      ifc=${spec%%:*}
      dst=${spec#*:}
      ip -n "$(pod_ns "$pod")" addr add "${dst%.*}.$k/24" dev "$ifc" noprefixroute 2>/dev/null
      out="$out ${dst%.*}.$k,$dst"
    done
  done
  echo "$out"
}
