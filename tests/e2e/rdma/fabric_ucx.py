"""fabric_ucx.py - a UCX job between pods, launched as CMD behind gxboot with its env.

UCX's own io_demo (ucx-utils) over UCP's client-server API: the connection is made through
the RDMA-CM (or TCP sockaddr) connection manager, so RC needs no UD auxiliary transport (UD
wireup times out between rxe pods, see agent/fabric/FABRIC.md). Rank 0 (GXBOOT_RANK) serves
on MASTER_ADDR:MASTER_PORT; every other rank runs IO_ITERS (20) writes and reads of 1 MiB and
then says "done RC" on MASTER_PORT + 1; rank 0 stops its server (SIGINT, io_demo's clean stop)
when every client said so, or 10 s after a client's connection went away without it (a rank
that died: the job failed, as a collective fails). The transports are UCX_TLS /
UCX_NET_DEVICES of the environment (gxboot sets UCX_NET_DEVICES to the verified rails).
Prints one line per rank:
  UCXJOB rank=R tls=T devices=D rc=N
and exits 0 when its client (rank 0: every client) said "Client exit with status 'OK'",
io_demo's line when its IO completed. The processes' own exit statuses are printed, not
judged: on rxe, UCX 1.13 aborts in its async thread when an RC connection goes away at the
end ("ib_device.c:279 Assertion `wait_ctx->cb_id == (-1)' failed", an IB async event), on the
server and at times on the client too, after the IO completed.
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

SIZE = "1048576:1048576"


def relay(proc, lost):
    """io_demo's output to ours; lost[0]: when a client's connection went away"""
    for raw in proc.stdout:
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        if b"disconnecting connection" in raw and not lost[0]:
            lost[0] = time.time()


def wait_done(addr, port, n, lost):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(n)
    ls.settimeout(1)
    rcs = []
    deadline = time.time() + 600
    while len(rcs) < n and time.time() < deadline:
        if lost[0] and time.time() > lost[0] + 10:
            break
        try:
            c, _ = ls.accept()
        except socket.timeout:
            continue
        msg = c.recv(16).decode(errors="replace").split()
        c.close()
        rcs.append(int(msg[1]) if len(msg) == 2 and msg[0] == "done" else 1)
    return rcs


def say_done(addr, port, rc):
    for _ in range(100):
        try:
            socket.create_connection((addr, port), timeout=5).sendall(b"done %d" % rc)
            return
        except OSError:
            time.sleep(0.2)


def server(demo, addr, port, world):
    proc = subprocess.Popen(demo, stdout=subprocess.PIPE)
    lost = [0.0]
    t = threading.Thread(target=relay, args=(proc, lost), daemon=True)
    t.start()
    rcs = wait_done(addr, port + 1, world - 1, lost)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        status = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        status = proc.wait()
    t.join(5)
    rc = 0 if len(rcs) == world - 1 and not any(rcs) else 1
    return rc, " server=%d clients=%s" % (status, ",".join(str(r) for r in rcs))


def client(demo, iters, addr, port):
    proc = subprocess.Popen(demo + ["-i", iters, "-o", "write,read", "-c", "60", "-y", "1", addr],
                            stdout=subprocess.PIPE)
    ok = False
    for raw in proc.stdout:
        sys.stdout.buffer.write(raw)
        ok = ok or b"Client exit with status 'OK'" in raw
    sys.stdout.flush()
    status = proc.wait()
    rc = 0 if ok else 1
    say_done(addr, port + 1, rc)
    return rc, " io_demo=%d" % status


def main():
    rank = int(os.environ["GXBOOT_RANK"])
    world = int(os.environ["GXBOOT_WORLD_SIZE"])
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    iters = os.environ.get("IO_ITERS", "20")
    demo = ["io_demo", "-p", str(port), "-d", SIZE, "-b", "4"]
    if rank == 0:
        rc, extra = server(demo, addr, port, world)
    else:
        rc, extra = client(demo, iters, addr, port)
    print("UCXJOB rank=%d tls=%s devices=%s rc=%d%s" % (
        rank, os.environ.get("UCX_TLS", ""), os.environ.get("UCX_NET_DEVICES", ""), rc, extra),
        flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
