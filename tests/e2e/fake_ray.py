#!/usr/bin/python3
"""A stand-in for `ray start` (Ray is not packaged in Debian): it records the addresses
gxboot hands it and connects head <-> worker over them, as Ray's GCS does.

  fake_ray.py head N   listen on $GXBOOT_ADDR at RAY_ADDRESS's port, accept N workers,
                       print "FAKERAY head gcs=<RAY_ADDRESS> node_ip=<GXBOOT_ADDR>" and one
                       "FAKERAY joined node_ip=<ip> from=<peer ip>" per worker, exit 0
  fake_ray.py worker   connect to RAY_ADDRESS, send its node IP ($GXBOOT_ADDR), print
                       "FAKERAY worker gcs=<RAY_ADDRESS> node_ip=<GXBOOT_ADDR> rank=<GXBOOT_RANK>"
"""
import os
import socket
import sys
import time


def split(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def main():
    gcs = os.environ["RAY_ADDRESS"]
    node_ip = os.environ["GXBOOT_ADDR"]
    host, port = split(gcs)
    if sys.argv[1] == "head":
        want = int(sys.argv[2])
        srv = socket.socket(socket.AF_INET6 if ":" in node_ip else socket.AF_INET)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((node_ip, port))
        srv.listen(16)
        srv.settimeout(40)
        print(f"FAKERAY head gcs={gcs} node_ip={node_ip}", flush=True)
        for _ in range(want):
            conn, peer = srv.accept()
            with conn:
                ip = conn.recv(128).decode().strip()
                conn.sendall(b"ok\n")
            print(f"FAKERAY joined node_ip={ip} from={peer[0]}", flush=True)
        return 0
    s = None
    for _ in range(100):  # the head's listener may come up a moment later
        try:
            s = socket.create_connection((host, port), timeout=5, source_address=(node_ip, 0))
            break
        except OSError:
            time.sleep(0.2)
    if s is None:
        print("FAKERAY worker could not reach the head", flush=True)
        return 1
    with s:
        s.sendall(node_ip.encode() + b"\n")
        assert s.recv(16).startswith(b"ok")
    rank = os.environ.get("GXBOOT_RANK", "?")
    print(f"FAKERAY worker gcs={gcs} node_ip={node_ip} rank={rank}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
