# stranger.py - the connection-holding stranger of the flood cases: one tool, so
# case_fault_flood, case_fault_junk and case_rsh_flood hold their connections the same way.
#
#   stranger.py hold STATUS PORT CONNS PAYLOAD TARGET...
#       CONNS connections to TARGET:PORT, round robin over the targets; a TARGET is DST or
#       SRC,DST (bound to SRC first; a SRC that cannot be bound is skipped). Each connection
#       sends PAYLOAD once connected and then nothing; one the server closes is reopened at
#       once, a refused one (the server not up yet) after 50 ms.
#       PAYLOAD: "idle" (nothing), "random" (512 random bytes), "rsh" (the remote-exec HELLO),
#       "hello:JOB" (a rendezvous HELLO for JOB, "has token", claiming job-worker-1), or
#       "mix:K:P" (the first K connections idle, the rest P).
#       STATUS gets "open=N opened=N closed_by_server=N" every 0.5 s; STATUS.history a
#       time-stamped line each time.
#   stranger.py hellos HOST PORT N JOB
#       N rendezvous HELLOs for JOB, one connection each, one after the other (20 s at most);
#       prints "sent N".
import os, re, resource, selectors, socket, struct, sys, time

# the rendezvous protocol's major version, from the source (a HELLO of another version is
# refused before the job id or the budget are looked at: the cases would test nothing)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "rdzv",
                       "rdzv_int.h")) as f:
    VMAJOR = int(re.search(r"#define RDZV_VMAJOR (\d+)", f.read()).group(1))


def tlv(t, v):
    return struct.pack("!HH", t, len(v)) + v


def hello(job):
    body = (tlv(1, os.urandom(32)) + tlv(2, struct.pack("!I", 1)) + tlv(3, b"job-worker-1") +
            tlv(8, struct.pack("!I", 1)) + tlv(4, job))
    return struct.pack("!IBBHI", 0x47584231, VMAJOR, 0, 1, len(body)) + body


def payload(spec, k):
    if spec.startswith("mix:"):
        _, idle, rest = spec.split(":", 2)
        return b"" if k < int(idle) else payload(rest, k)
    if spec == "idle":
        return b""
    if spec == "random":
        return os.urandom(512)
    if spec == "rsh":
        return b"GXRSH1\n\0" + os.urandom(32)
    if spec.startswith("hello:"):
        return hello(spec[6:].encode())
    raise SystemExit("stranger.py: unknown payload " + spec)


def hold(status, port, conns, spec, targets):
    want = conns + 256
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < want:
        want = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
    pairs = [t.split(",") if "," in t else [None, t] for t in targets]
    sel = selectors.DefaultSelector()
    count = {"opened": 0, "closed": 0}
    later = []

    def start(k):
        src, dst = pairs[k % len(pairs)]
        s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        if src:
            try:
                s.bind((src, 0))
            except OSError:
                s.close()
                return
        s.connect_ex((dst, port))
        sel.register(s, selectors.EVENT_WRITE, [k, "connecting"])
        count["opened"] += 1

    for k in range(conns):
        start(k)
    last = 0
    while True:
        for key, _ in sel.select(0.1):
            s, (k, state) = key.fileobj, key.data
            if state == "connecting":
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    sel.unregister(s)
                    s.close()
                    later.append((time.time() + 0.05, k))
                    continue
                data = payload(spec, k)
                if data:
                    try:
                        s.send(data)
                    except OSError:
                        pass
                sel.modify(s, selectors.EVENT_READ, [k, "open"])
                continue
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                count["closed"] += 1
                sel.unregister(s)
                s.close()
                start(k)
        now = time.time()
        due = [x for x in later if x[0] <= now]
        for x in due:
            later.remove(x)
            start(x[1])
        if now - last > 0.5:
            last = now
            n = sum(1 for key in sel.get_map().values() if key.data[1] == "open")
            line = "open=%d opened=%d closed_by_server=%d" % (n, count["opened"], count["closed"])
            with open(status + ".new", "w") as f:
                f.write(line + "\n")
            os.replace(status + ".new", status)
            with open(status + ".history", "a") as f:
                f.write("%.1f %s\n" % (last, line))


def hellos(host, port, n, job):
    msg = hello(job.encode())
    sent = 0
    end = time.time() + 20
    while sent < n and time.time() < end:
        try:
            s = socket.create_connection((host, port), timeout=2)
            s.sendall(msg)
            s.recv(4096)
            s.close()
            sent += 1
        except OSError:
            time.sleep(0.05)
    print("sent", sent)


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) >= 5 and a[0] == "hold":
        hold(a[1], int(a[2]), int(a[3]), a[4], a[5:])
    elif len(a) == 5 and a[0] == "hellos":
        hellos(a[1], int(a[2]), int(a[3]), a[4])
    else:
        raise SystemExit("usage: stranger.py hold STATUS PORT CONNS PAYLOAD TARGET... | hellos HOST PORT N JOB")
