"""allreduce.py - one gloo all_reduce, checked. Started by torchrun (env:// rendezvous).

Every rank contributes rank+1; the sum must be W*(W+1)/2. Prints one line per rank:
  ALLREDUCE rank=R world=W host=H master_addr=A master_port=P gloo_if=I sum=S OK
and exits 1 (with "ALLREDUCE ... BAD") when the sum is wrong.
"""
import os
import socket
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    world = dist.get_world_size()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    want = world * (world + 1) / 2
    ok = t.item() == want
    print(
        "ALLREDUCE rank=%d world=%d host=%s master_addr=%s master_port=%s gloo_if=%s "
        "sum=%g %s"
        % (
            rank,
            world,
            socket.gethostname(),
            os.environ.get("MASTER_ADDR", ""),
            os.environ.get("MASTER_PORT", ""),
            os.environ.get("GLOO_SOCKET_IFNAME", ""),
            t.item(),
            "OK" if ok else "BAD want=%g" % want,
        ),
        flush=True,
    )
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
