# out_racer.py - the unprivileged user of case_out_swap: in a directory it can write
# (no sticky bit), it swaps DIR/NAME and DIR/NAME.link, a symlink it made to TARGET, with
# renameat2(RENAME_EXCHANGE), as fast as it can, until killed. Prints "swaps=N" on SIGTERM.
import ctypes, os, signal, sys

AT_FDCWD = -100
RENAME_EXCHANGE = 2
libc = ctypes.CDLL(None, use_errno=True)
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                           ctypes.c_uint]


def main(d, name, target):
    a = os.path.join(d, name).encode()
    b = os.path.join(d, name + ".link").encode()
    if not os.path.lexists(b):
        os.symlink(target, b)
    swaps = 0

    def done(*_):
        print("swaps=%d" % swaps, flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, done)
    print("ready", flush=True)
    while True:
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
            swaps += 1


if __name__ == "__main__":
    main(*sys.argv[1:4])
