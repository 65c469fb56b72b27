#!/usr/bin/env bash
# rdma_vm.sh - the RDMA end-to-end suite on real soft-RoCE (this machine has no RDMA device). Boots ONE QEMU VM with
# ../shared/tools/rdma-vm (a Debian kernel with rdma_rxe; this machine's root filesystem
# read-only plus a RAM overlay, so build/gxboot and tests/e2e/cluster.sh run there as built
# here) and runs tests/e2e/rdma/run.sh inside: every tests/e2e/rdma/case_*.sh (or the ones
# named: `tests/e2e/rdma_vm.sh check verify`), one PASS/FAIL/SKIP line each.
# Builds nothing: run after `make` (build/gxboot). Skips (77) only where the VM cannot run:
# not root, the rdma-vm tool absent, or rdma-vm itself failing to start QEMU (exit 125).
# GX_RDMA_VM: the tool (default ../shared/tools/rdma-vm); RXE_TIMEOUT: the whole VM (900 s).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
vm=${GX_RDMA_VM:-../shared/tools/rdma-vm}
[ "$(id -u)" = 0 ] || { echo "SKIP rdma_vm: needs root (QEMU VM, network namespaces)"; exit 77; }
[ -x "$vm" ] || { echo "SKIP rdma_vm: no soft-RoCE VM tool at $vm"; exit 77; }
[ -x build/gxboot ] || { echo "FAIL rdma_vm: build/gxboot not built (make)"; exit 1; }
t0=$(date +%s)
RXE_TIMEOUT=${RXE_TIMEOUT:-900} "$vm" --no-ns -- "tests/e2e/rdma/run.sh $*"
rc=$?
echo "  rdma_vm: VM wall time $(($(date +%s) - t0)) s (TCG when the CPU shows no vmx/svm)"
case $rc in
124) echo "FAIL rdma_vm: the VM ran past RXE_TIMEOUT"; exit 1 ;;
125) echo "SKIP rdma_vm: QEMU could not start the soft-RoCE VM (rdma-vm exit 125)"; exit 77 ;;
esac
exit "$rc"
