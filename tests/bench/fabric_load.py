"""fabric_load.py PROCS CONNS SECONDS CHURN - a job for the transport watcher to watch.

PROCS worker processes (a torch job's ranks and helpers) each hold CONNS TCP connections to
this process and stream bytes over them for SECONDS; every worker also opens and closes
CHURN short connections a second (what makes the watcher walk the tree and read fd tables
again). All on loopback. Prints one line:
  FABRICLOAD procs=P conns=C bytes=B seconds=S
"""
import os
import selectors
import socket
import sys
import time


def worker(port, conns, seconds, churn):
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(conns)]
    for s in socks:
        s.setblocking(False)
    buf = b"x" * 65536
    end = time.time() + seconds
    next_churn = time.time()
    sent = 0
    while time.time() < end:
        for s in socks:
            try:
                sent += s.send(buf)
            except BlockingIOError:
                pass
        if churn and time.time() >= next_churn:
            c = socket.create_connection(("127.0.0.1", port))
            c.sendall(b"y" * 1000)
            c.close()
            next_churn += 1.0 / churn
        time.sleep(0.002)
    for s in socks:
        s.close()
    os._exit(0)


def main():
    procs, conns, seconds, churn = (int(a) for a in sys.argv[1:5])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(1024)
    port = ls.getsockname()[1]
    kids = []
    for _ in range(procs):
        pid = os.fork()
        if pid == 0:
            ls.close()
            worker(port, conns, seconds, churn)
        kids.append(pid)
    sel = selectors.DefaultSelector()
    ls.setblocking(False)
    sel.register(ls, selectors.EVENT_READ)
    got, t0, live = 0, time.time(), len(kids)
    while live and time.time() < t0 + seconds + 10:
        for key, _ in sel.select(0.2):
            if key.fileobj is ls:
                try:
                    c, _ = ls.accept()
                except BlockingIOError:
                    continue
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ)
                continue
            try:
                b = key.fileobj.recv(1 << 20)
            except BlockingIOError:
                continue
            if not b:
                sel.unregister(key.fileobj)
                key.fileobj.close()
            got += len(b)
        while live:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if not pid:
                break
            live -= 1
    print("FABRICLOAD procs=%d conns=%d bytes=%d seconds=%.1f" % (procs, procs * conns, got,
                                                                  time.time() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
