#!/usr/bin/env bash
# demo.sh (make demo) - a simulated 4-pod Kubernetes cluster on this machine: network
# namespaces with eth0 (primary, cluster DNS) and net1 (secondary, no DNS). Every pod's eth0 is
# closed by nftables except DNS and gxboot's rendezvous port, then each pod runs
#   gxboot --peers 'job-worker-{0..3}' -- torchrun --nproc_per_node 2 allreduce.py
# The all_reduce can only succeed over net1. Prints the rendezvous table and the result,
# then tears everything down.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
if [ "$(id -u)" -ne 0 ]; then echo "demo: needs root (network namespaces)" >&2; exit 1; fi
cluster_need_root >/dev/null || exit 1
[ -x "$GXBOOT" ] || { echo "demo: $GXBOOT missing: run 'make all'" >&2; exit 1; }
N=${GX_DEMO_PODS:-4}
NPROC=2
t0=$(date +%s)
step() { printf '\n\033[1m== %s\033[0m (%ss)\n' "$*" "$(($(date +%s) - t0))"; }

step "creating $N pods (netns + bridges + dnsmasq)"
cluster_create "$N" || { echo "demo: cluster setup failed" >&2; exit 1; }
T=$(cluster_token)
for i in $(seq 0 $((N - 1))); do
  cluster_cut_eth0 "$i"
  printf '  %-13s eth0 %-13s net1 %-15s DNS %s\n' "$(pod_name "$i")" "$(pod_eth0 "$i")" \
    "$(pod_net1 "$i")" "$(pod_fqdn "$i")"
done
echo "  eth0 in every pod: nftables drops all but DNS (53) and the rendezvous port (29410)"

step "starting gxboot -- torchrun in every pod (coordinator last)"
for i in $(seq $((N - 1)) -1 0); do
  gx_start "$i" --peers "job-worker-{0..$((N - 1))}" --token-file "$T" --timeout 60 --slots "$NPROC" -- \
    "$PY" -m torch.distributed.run --nproc_per_node "$NPROC" --rdzv_backend static \
    --redirects 1 --tee 1 "$GX_E2E_DIR/allreduce.py"
done

# Follow every pod's output, prefixed, until all have ended (or 100 s).
declare -a seen
end=$(($(date +%s) + 100))
while :; do
  running=0
  for i in $(seq 0 $((N - 1))); do
    kill -0 "${GX_PIDS[i]}" 2>/dev/null && running=1
    f=$GX_DIR/pod$i.log
    [ -f "$f" ] || continue
    total=$(wc -l <"$f")
    if [ "$total" -gt "${seen[i]:-0}" ]; then
      sed -n "$((${seen[i]:-0} + 1)),${total}p" "$f" | grep -v -e '^\*\*\*\*' -e OMP_NUM_THREADS -e '^$' -e '^WARNING:__main__:$' |
        sed "s/^/  [job-worker-$i] /"
      seen[i]=$total
    fi
  done
  [ "$running" -eq 1 ] || break
  [ "$(date +%s)" -lt "$end" ] || { echo "demo: still running after 100 s, stopping" >&2; break; }
  sleep 0.5
done
ok=1
gx_wait_all 5 $(seq 0 $((N - 1)))
for i in $(seq 0 $((N - 1))); do
  [ "${GX_RC[i]}" = 0 ] || { echo "  job-worker-$i exited ${GX_RC[i]}"; ok=0; }
done

step "rendezvous table (from each pod's --out/env)"
printf '  %-4s %-13s %-15s %-15s %-11s %s\n' rank pod eth0 net1 role MASTER_ADDR
for i in $(seq 0 $((N - 1))); do
  e=$GX_DIR/out$i/env
  if [ ! -f "$e" ]; then printf '  %-4s %-13s (no env written)\n' - "$(pod_name "$i")"; continue; fi
  r=$(gx_env "$e" NODE_RANK)
  role=member
  [ "$r" = 0 ] && role=coordinator
  printf '  %-4s %-13s %-15s %-15s %-11s %s\n' "$r" "$(pod_name "$i")" "$(pod_eth0 "$i")" \
    "$(gx_env "$e" GXBOOT_ADDR)" "$role" "$(gx_env "$e" MASTER_ADDR)"
done

step "training result"
W=$((N * NPROC))
good=$(cat "$GX_DIR"/pod*.log | grep -c "ALLREDUCE .* master_addr=$(pod_net1 0) .*gloo_if=net1 sum=$((W * (W + 1) / 2)) OK")
echo "  all_reduce over net1: $good of $W ranks got sum=$((W * (W + 1) / 2))"
for i in $(seq 0 $((N - 1))); do
  echo "  job-worker-$i eth0 packets dropped (in out):$(cluster_cut_counters "$i")"
done
[ "$good" = "$W" ] || ok=0

step "tearing down"
cluster_destroy
if [ "$ok" = 1 ]; then
  echo "demo: OK in $(($(date +%s) - t0))s: torch all_reduce ran on net1 with eth0 closed"
  exit 0
fi
echo "demo: FAILED (see the output above)"
exit 1
