"""delay_link.py IFNAME PEER DELAY_MS STATS: a link that holds every frame DELAY_MS.

This kernel has no netem. A tap device IFNAME (the pod's net1) is bridged in user space to
the veth end PEER (in the same namespace, plugged into the secondary bridge), each frame held
DELAY_MS in each direction. It is a plain Ethernet link to the pod: TCP stays end to end,
sockets bound to IFNAME and the kernel's routes work as on the veth it replaces (a TCP relay
in the path would terminate the connection and break both). Counts of frames carried each way
are written to STATS every second and on SIGTERM; "ready" is printed once the tap exists.
"""
import fcntl
import heapq
import os
import select
import signal
import socket
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_CSUMNOTREADY = 8


def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def complete_checksum(frame):
    """A veth hands frames on with the TCP/UDP checksum left to the device (checksum
    offload: only the pseudo-header sum is there). A packet socket sees them so; written to
    the tap as they are, the pod's kernel would drop them. Complete it here."""
    off, eth = 14, struct.unpack("!H", frame[12:14])[0]
    if eth == 0x8100:
        off, eth = 18, struct.unpack("!H", frame[16:18])[0]
    if eth == 0x0800:
        ihl, proto = (frame[off] & 0xF) * 4, frame[off + 9]
        total = struct.unpack("!H", frame[off + 2 : off + 4])[0]
        l4, l4len = off + ihl, total - ihl
        pseudo = frame[off + 12 : off + 20] + struct.pack("!BBH", 0, proto, l4len)
    elif eth == 0x86DD:
        proto, l4len = frame[off + 6], struct.unpack("!H", frame[off + 4 : off + 6])[0]
        l4 = off + 40
        pseudo = frame[off + 8 : off + 40] + struct.pack("!I3xB", l4len, proto)
    else:
        return frame
    where = {6: 16, 17: 6}.get(proto)
    if where is None or l4 + l4len > len(frame):
        return frame
    seg = bytearray(frame[l4 : l4 + l4len])
    seg[where : where + 2] = b"\0\0"
    c = csum16(pseudo + bytes(seg)) or (0xFFFF if proto == 17 else 0)
    return frame[: l4 + where] + struct.pack("!H", c) + frame[l4 + where + 2 :]


def main():
    ifname, peer, delay, stats = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000, sys.argv[4]
    tap = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tap, TUNSETIFF, struct.pack("16sH", ifname.encode(), IFF_TAP | IFF_NO_PI))
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    raw.bind((peer, 0))
    raw.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    raw.setblocking(False)
    os.set_blocking(tap, False)
    queue = []  # (due, seq, to_tap, frame)
    count = {"out": 0, "in": 0}
    seq = 0
    running = [True]

    def stop(*_):
        running[0] = False

    def dump():
        with open(stats + ".tmp", "w") as f:
            f.write("out=%d in=%d\n" % (count["out"], count["in"]))
        os.replace(stats + ".tmp", stats)

    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    next_dump = time.monotonic() + 1
    while running[0]:
        now = time.monotonic()
        wait = min([next_dump - now] + ([queue[0][0] - now] if queue else []))
        try:
            readable, _, _ = select.select([tap, raw], [], [], max(0, wait))
        except InterruptedError:
            continue
        now = time.monotonic()
        if tap in readable:
            while True:
                try:
                    frame = os.read(tap, 65536)
                except BlockingIOError:
                    break
                seq += 1
                heapq.heappush(queue, (now + delay, seq, False, frame))
        if raw in readable:
            while True:
                try:
                    frame, anc, _, addr = raw.recvmsg(65536, socket.CMSG_SPACE(32))
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:  # our own sends, seen again
                    continue
                for level, kind, data in anc:
                    status = struct.unpack("I", data[:4])[0]
                    if level == SOL_PACKET and kind == PACKET_AUXDATA and status & TP_STATUS_CSUMNOTREADY:
                        frame = complete_checksum(frame)
                seq += 1
                heapq.heappush(queue, (now + delay, seq, True, frame))
        while queue and queue[0][0] <= now:
            _, _, to_tap, frame = heapq.heappop(queue)
            try:
                if to_tap:
                    os.write(tap, frame)
                    count["in"] += 1
                else:
                    raw.send(frame)
                    count["out"] += 1
            except OSError:
                pass  # a full queue drops the frame, as a link would
        if now >= next_dump:
            dump()
            next_dump = now + 1
    dump()


if __name__ == "__main__":
    main()
