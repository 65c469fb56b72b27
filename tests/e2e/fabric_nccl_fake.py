"""fabric_nccl_fake.py ID... - a stand-in for an NCCL job where no GPU is (NCCL needs one).

It writes, through NCCL_DEBUG_FILE as NCCL does (%h the host name, %p the pid; only at
NCCL_DEBUG=INFO), the lines of tests/fixtures/fabric/upstream.json named by ID: lines
rendered from NCCL's own format strings at the pinned commits, with this host and pid in
their prefix. Then it moves real bytes as a job would: rank 0 (GXBOOT_RANK) listens on
MASTER_ADDR:MASTER_PORT, every other rank connects, sends FAKE_MB (default 8) megabytes and
keeps the connection a second and a half (the kernel's counters, not this script, are what
gxboot reports). Prints one line:
  NCCLFAKE rank=R debug=D subsys=S file=F bytes=B
"""
import json
import os
import re
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures", "fabric", "upstream.json")


def write_lines(ids):
    path = os.environ.get("NCCL_DEBUG_FILE")
    if not path or os.environ.get("NCCL_DEBUG") != "INFO":
        return None
    host, pid = socket.gethostname(), os.getpid()
    fn = path.replace("%h", host).replace("%p", str(pid))
    texts = {l["id"]: l["text"] for l in json.load(open(FIX))["lines"] if "id" in l}
    with open(fn, "w") as f:
        for i in ids:
            # the fixture's "host:pid:tid " prefix becomes this process's
            t = re.sub(r"^(\[[^]]*\] )?[^ :]+:\d+:\d+ ",
                       lambda m: (m.group(1) or "") + "%s:%d:%d " % (host, pid, pid),
                       texts[i], count=1)
            f.write(t + "\n")
            f.flush()
    return fn


def traffic(rank, world):
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    n = int(os.environ.get("FAKE_MB", "8")) << 20
    if rank == 0:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((addr, port))
        ls.listen(world)
        got = 0
        for _ in range(world - 1):
            c, _ = ls.accept()
            while True:
                b = c.recv(1 << 16)
                if not b:
                    break
                got += len(b)
            c.close()
        return got
    deadline = time.time() + 30
    while True:
        try:
            c = socket.create_connection((addr, port))
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    c.sendall(b"x" * n)
    time.sleep(1.5)
    c.close()
    return n


def main():
    fn = write_lines(sys.argv[1:])
    rank = int(os.environ.get("GXBOOT_RANK", "0"))
    world = int(os.environ.get("GXBOOT_WORLD_SIZE", "1"))
    b = traffic(rank, world)
    print("NCCLFAKE rank=%d debug=%s subsys=%s file=%s bytes=%d" % (
        rank, os.environ.get("NCCL_DEBUG", ""), os.environ.get("NCCL_DEBUG_SUBSYS", ""),
        os.path.basename(fn) if fn else "none", b), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
