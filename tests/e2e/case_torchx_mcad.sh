#!/usr/bin/env bash
# TorchX `-s kubernetes_mcad` (an MCAD AppWrapper): the pods exactly as the real TorchX
# generates them (tests/e2e/torchx.sh, tests/container/torchx_pods.py).
# 1. The project's component with the options container/README.md documents
#    (`-cfg network=rdma-shared-net`, `--scheduler kubernetes_mcad`, -j 3x1): each pod runs as
#    its AppWrapper item says: hostname <app>-<i>, subdomain <app> (the AppWrapper's headless
#    Service of that name, which must select every pod), TorchX's env with
#    TORCHX_RANK0_HOST=localhost on pod 0 and TORCHX_MCAD_<ROLE>_0_HOSTS; only the gxboot,
#    token and network-status paths are the test's. The network-status is what Multus writes
#    for the pod's own k8s.v1.cni.cncf.io/networks annotation (net1). Asserts (tx_train): a
#    finished all_reduce on every pod with MASTER_ADDR on net1, eth0 closed except DNS and
#    29410, peers from the component's --peers '${app_id}-{0..2}.${app_id}'.
# 2. Plain dist.ddp (-j 2x1) from an image whose ENTRYPOINT is gxboot: gxboot never runs and
#    torchrun's c10d stays on eth0 (tx_entrypoint).
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
. "$GX_E2E_DIR/torchx.sh"
cluster_need_root
gx_need_gxboot
# PET_REDIRECTS=1 through TorchX's --env: Debian's torch 1.13 on Python 3.11 needs it
REQ=$(tx_request -s kubernetes_mcad -cfg network=rdma-shared-net \
  container/torchx/gxboot_ddp.py:ddp --scheduler kubernetes_mcad -j 3x1 \
  --script "$GX_E2E_DIR/allreduce.py" --env PET_REDIRECTS=1) ||
  fail "torchx run --dryrun of the component"
tx_train "$REQ" - --peers
REQ=$(tx_request -s kubernetes_mcad dist.ddp -j 2x1 --tee 1 \
  --script "$GX_E2E_DIR/allreduce.py" --env PET_REDIRECTS=1) || fail "torchx run --dryrun of dist.ddp"
tx_entrypoint "$REQ"
