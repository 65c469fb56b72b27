"""fabric_gloo.py - a Gloo all_reduce job big enough to be seen on the wire.

Started by torchrun (env:// rendezvous). Every rank all_reduces a tensor of MB megabytes
(env FABRIC_MB, default 4) ROUNDS times (env FABRIC_ROUNDS, default 30), checks the sum
and prints one line per rank:
  FABRICJOB rank=R world=W gloo_if=I bytes=B seconds=S OK
and exits 1 (with "... BAD") when the sum is wrong. The transport report of gxboot, not
this script, says which network carried the bytes.
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    world = dist.get_world_size()
    mb = int(os.environ.get("FABRIC_MB", "4"))
    rounds = int(os.environ.get("FABRIC_ROUNDS", "30"))
    n = mb * (1 << 20) // 4
    t0 = time.time()
    ok = True
    for _ in range(rounds):
        t = torch.full((n,), float(rank + 1))
        dist.all_reduce(t)
        ok = ok and t[0].item() == world * (world + 1) / 2 and t[-1].item() == t[0].item()
    dt = time.time() - t0
    print(
        "FABRICJOB rank=%d world=%d gloo_if=%s bytes=%d seconds=%.2f %s"
        % (rank, world, os.environ.get("GLOO_SOCKET_IFNAME", ""), rounds * n * 4, dt,
           "OK" if ok else "BAD"),
        flush=True,
    )
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
