# SPDX-License-Identifier: MIT
"""
gxboot_ddp: TorchX's ``dist.ddp`` with gxboot in front, so the job's rendezvous,
MASTER_ADDR and NCCL/Gloo traffic use the pod's secondary (Multus net1 / RDMA) network.

``dist.ddp`` runs ``bash -c "torchrun --rdzv_backend c10d --rdzv_endpoint
${TORCHX_RANK0_HOST:=localhost}:29500 ..."``; the endpoint names rank 0's eth0 host, and
command-line flags beat any environment, so the job stays on eth0. This component keeps
that command exactly as ``dist.ddp`` builds it and runs it as
``gxboot [OPTIONS] -- bash -c "torchrun ..."``: gxboot rewrites the endpoint to the
coordinator's net1 address (``--no-rewrite`` turns that off) and exports the rest.

    torchx run -s kubernetes -cfg queue=default \\
        container/torchx/gxboot_ddp.py:ddp -j 2x8 --gpu 8 --script train.py
    torchx run -s kubernetes_mcad -cfg network=rdma-shared-net \\
        container/torchx/gxboot_ddp.py:ddp --scheduler kubernetes_mcad -j 2x8 --gpu 8 \\
        --script train.py

Peers: on ``kubernetes`` (Volcano) gxboot reads them from the ``VC_*_HOSTS`` variables
the svc plugin sets (TorchX turns on ``--publish-not-ready-addresses``); on
``kubernetes_mcad`` the pods are ``<app_id>-<replica>.<app_id>`` and the component passes
that list with TorchX's ``${app_id}`` macro.

What TorchX cannot express in a pod and must come from the cluster (see container/README.md,
"Use it with TorchX"): the gxboot binary in the image (``COPY --from=<gxboot image>
/gxboot /usr/local/bin/gxboot``), the Multus annotation on ``kubernetes`` (``kubernetes_mcad``
has ``-cfg network=``), ``IPC_LOCK``, and the token / network-status volumes. A mutating
admission policy adds the latter for pods labelled ``app.kubernetes.io/managed-by:
torchx.pytorch.org``; the paths below are where it mounts them.
"""
import dataclasses
from typing import Dict, List, Optional

import torchx.specs as specs
from torchx.components import dist
from torchx.specs import macros

GXBOOT = "/usr/local/bin/gxboot"
TOKEN_FILE = "/etc/gxboot/token"
NETWORK_STATUS = "/etc/podinfo/network-status"
SCHEDULERS = ("kubernetes", "kubernetes_mcad")


def _nnodes(j: str) -> int:
    """The number of nodes in -j [{min}:]{max}x{nproc} (the max)."""
    nodes = j.split("x")[0] if "x" in j else "1"
    return int(nodes.split(":")[-1])


def _min_nnodes(j: str) -> int:
    """The least number of nodes in -j [{min}:]{max}x{nproc} (the max when no range)."""
    nodes = j.split("x")[0] if "x" in j else "1"
    return int(nodes.split(":")[0])


def gxboot_args(
    scheduler: str,
    nnodes: int,
    token_file: Optional[str] = TOKEN_FILE,
    network_status: Optional[str] = NETWORK_STATUS,
    rdma: str = "auto",
    extra: Optional[List[str]] = None,
    min_nnodes: Optional[int] = None,
) -> List[str]:
    """gxboot's options (everything before ``--``) for one scheduler.

    An elastic ``-j MIN:MAXxN`` makes dist.ddp write ``torchrun --nnodes MIN:MAX``; gxboot runs
    torchrun's static rendezvous on the secondary network, whose count is fixed, so it keeps
    the range only as its own ``--nnodes MIN:MAX`` (and refuses the torchrun line otherwise).
    """
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {SCHEDULERS}, not {scheduler!r}")
    args: List[str] = []
    count = str(nnodes)
    if min_nnodes is not None and min_nnodes < nnodes:
        count = f"{min_nnodes}:{nnodes}"
    if scheduler == "kubernetes_mcad":
        # kubernetes_mcad: pod <app_id>-<i>, hostname = pod name, subdomain = <app_id>
        app = macros.app_id
        args += ["--peers", f"{app}-{{0..{nnodes - 1}}}.{app}"]
        if count != str(nnodes):
            args += ["--nnodes", count]
    else:
        # kubernetes (Volcano): peers come from VC_*_HOSTS; --nnodes checks the count
        args += ["--nnodes", count]
    if token_file:
        args += ["--token-file", token_file, "--require-token"]
    if network_status:
        args += ["--network-status", network_status]
    if rdma != "auto":
        args += ["--rdma", rdma]
    return args + list(extra or [])


def ddp(
    *script_args: str,
    script: Optional[str] = None,
    m: Optional[str] = None,
    image: str = "registry.example.com/trainer:latest",
    name: str = "/",
    h: Optional[str] = None,
    cpu: int = 2,
    gpu: int = 0,
    memMB: int = 1024,
    j: str = "1x2",
    env: Optional[Dict[str, str]] = None,
    max_retries: int = 0,
    rdzv_port: int = 29500,
    mounts: Optional[List[str]] = None,
    tee: int = 1,
    scheduler: str = "kubernetes",
    gxboot: str = GXBOOT,
    token_file: str = TOKEN_FILE,
    network_status: str = NETWORK_STATUS,
    rdma: str = "auto",
    rdma_resource: str = "rdma/rdma_shared_device_a",
    rdma_count: int = 1,
    gxboot_opts: Optional[str] = None,
) -> specs.AppDef:
    """
    dist.ddp on the secondary network: the same AppDef, its command run through gxboot.

    Args:
        script_args: arguments to the main module
        script: script or binary to run within the image
        m: the python module path to run
        image: image (must contain gxboot at ``gxboot``)
        name: job name override (see dist.ddp)
        h: a registered named resource
        cpu: number of cpus per replica
        gpu: number of gpus per replica
        memMB: cpu memory in MB per replica
        j: [{min_nnodes}:]{nnodes}x{nproc_per_node}
        env: environment variables to be passed to the run (e.g. ENV1=v1,ENV2=v2)
        max_retries: the number of scheduler retries allowed
        rdzv_port: the c10d store port on rank 0
        mounts: mounts (see dist.ddp)
        tee: tees the std stream(s) to console + file (1: stdout; see dist.ddp)
        scheduler: kubernetes (Volcano) or kubernetes_mcad
        gxboot: path of the gxboot binary in the image
        token_file: the job token file (mounted from a Secret); "" runs without a token
        network_status: the Multus network-status file (downward API); "" to auto-detect
        rdma: auto, require or off (off: TCP only, no RDMA device requested)
        rdma_resource: the RDMA device-plugin resource to request per replica
        rdma_count: how many of rdma_resource per replica
        gxboot_opts: more gxboot options, space separated (e.g. "--timeout 900 -v")
    """
    app = dist.ddp(
        *script_args,
        script=script,
        m=m,
        image=image,
        name=name,
        h=h,
        cpu=cpu,
        gpu=gpu,
        memMB=memMB,
        j=j,
        env=env,
        max_retries=max_retries,
        rdzv_port=rdzv_port,
        mounts=mounts,
        tee=tee,
    )
    nnodes = _nnodes(j)
    extra = gxboot_opts.split() if gxboot_opts else []
    for role in app.roles:
        opts = gxboot_args(scheduler, nnodes, token_file, network_status, rdma, extra,
                           _min_nnodes(j))
        # dist.ddp: entrypoint "bash", args ["-c", "torchrun ..."]; keep them verbatim
        role.args = opts + ["--", role.entrypoint] + list(role.args)
        role.entrypoint = gxboot
        if rdma != "off" and rdma_resource and rdma_count > 0:
            # a copy: a named resource (-h) is a shared object
            devices = dict(role.resource.devices)
            devices[rdma_resource] = rdma_count
            role.resource = dataclasses.replace(role.resource, devices=devices)
    return app
