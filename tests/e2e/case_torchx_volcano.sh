#!/usr/bin/env bash
# TorchX `-s kubernetes` (a Volcano Job): the pods exactly as the real TorchX generates them
# (tests/e2e/torchx.sh, tests/container/torchx_pods.py).
# 1. The project's component (container/torchx/gxboot_ddp.py:ddp -j 3x1): each pod runs as
#    the Job and Volcano's svc and env plugins make it: hostname <job>-<task>-0, subdomain
#    <job> (the names DNS publishes), TorchX's env with TORCHX_RANK0_HOST=localhost on pod 0,
#    and VC_<TASK>_HOSTS / _NUM, VK_TASK_INDEX, VC_TASK_INDEX as job_env.json has them; only
#    the gxboot, token and network-status paths are the test's. TorchX cannot put a Multus
#    annotation on a Volcano pod (asserted): the network-status names rdma-shared-net, the
#    network container/README.md's admission policy adds. Asserts (tx_train): a finished
#    all_reduce on every pod with MASTER_ADDR on net1, eth0 closed except DNS and 29410,
#    peers from TorchX (the union of VC_*_HOSTS).
# 2. Plain dist.ddp (-j 2x1) from an image whose ENTRYPOINT is gxboot: gxboot never runs and
#    torchrun's c10d stays on eth0 (tx_entrypoint).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
. "$GX_E2E_DIR/torchx.sh"
cluster_need_root
gx_need_gxboot
# Debian's torch 1.13 on Python 3.11 crashes in torchrun unless redirects is non-zero: set
# through TorchX's own --env, so it is part of the generated pods' env
REQ=$(tx_request -s kubernetes -cfg queue=default container/torchx/gxboot_ddp.py:ddp \
  -j 3x1 --script "$GX_E2E_DIR/allreduce.py" --env PET_REDIRECTS=1) ||
  fail "torchx run --dryrun of the component"
nets=$(printf '%s\n' "$REQ" | "$PY" "$TX_PODS" pods | awk '{ print $4 }' | sort -u)
[ "$nets" = - ] || fail "TorchX put a Multus annotation ($nets) on a Volcano pod"
tx_train "$REQ" rdma-shared-net TorchX
REQ=$(tx_request -s kubernetes -cfg queue=default dist.ddp -j 2x1 --tee 1 \
  --script "$GX_E2E_DIR/allreduce.py" --env PET_REDIRECTS=1) || fail "torchx run --dryrun of dist.ddp"
tx_entrypoint "$REQ"
