"""Someone else's XDP on an interface, for the fault tests of `serve --xdp` and the
AF_XDP measurements in docs/perf/log/2026-11-24-af-xdp.md: run inside a network namespace, it holds
what it made until it is killed, and prints `ready` once it holds it.

    python3 xdp_foreign.py prog IFACE [NAME]   # an XDP program that passes every frame,
                                               # attached natively by a BPF link
    python3 xdp_foreign.py socket IFACE QUEUE  # an AF_XDP socket bound to QUEUE (copy mode)

Plain ctypes on the bpf(2) and socket system calls: no compiler and no libbpf needed.
x86-64 only (the bpf system call's number)."""
import ctypes
import mmap
import os
import signal
import socket
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
SYS_BPF = 321
BPF_PROG_LOAD, BPF_LINK_CREATE = 5, 28
BPF_PROG_TYPE_XDP, BPF_XDP = 6, 37
XDP_FLAGS_DRV_MODE = 1 << 2
AF_XDP, SOL_XDP = 44, 283
XDP_RX_RING, XDP_UMEM_REG, XDP_UMEM_FILL_RING, XDP_UMEM_COMPLETION_RING = 2, 4, 5, 6
XDP_COPY = 1 << 1


def check(r, what):
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")
    return r


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    return check(libc.syscall(ctypes.c_long(SYS_BPF), ctypes.c_int(cmd), buf,
                              ctypes.c_uint(len(buf))), f"bpf({cmd})")


def attach_pass(iface, name):
    """Loads `r0 = XDP_PASS; exit` named `name` and links it to `iface`; returns the link fd."""
    insns = ctypes.create_string_buffer(struct.pack("<BBhi", 0xb7, 0, 0, 2)
                                        + struct.pack("<BBhi", 0x95, 0, 0, 0))
    lic = ctypes.create_string_buffer(b"GPL")
    attr = struct.pack("<IIQQIIQII16s", BPF_PROG_TYPE_XDP, 2, ctypes.addressof(insns),
                       ctypes.addressof(lic), 0, 0, 0, 0, 0, name.encode()[:15])
    prog = bpf(BPF_PROG_LOAD, attr)
    ifindex = socket.if_nametoindex(iface)
    return bpf(BPF_LINK_CREATE, struct.pack("<IIII", prog, ifindex, BPF_XDP, XDP_FLAGS_DRV_MODE))


def bind_socket(iface, queue):
    """An AF_XDP socket with a small UMEM and fill, completion and RX rings, bound to
    `queue` of `iface` in copy mode."""
    s = socket.socket(AF_XDP, socket.SOCK_RAW, 0)
    area = mmap.mmap(-1, 16 * 4096)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(area))
    s.setsockopt(SOL_XDP, XDP_UMEM_REG, struct.pack("<QQIIII", addr, len(area), 4096, 0, 0, 0))
    for opt in (XDP_UMEM_FILL_RING, XDP_UMEM_COMPLETION_RING, XDP_RX_RING):
        s.setsockopt(SOL_XDP, opt, 16)
    sa = ctypes.create_string_buffer(
        struct.pack("<HHIII", AF_XDP, XDP_COPY, socket.if_nametoindex(iface), queue, 0))
    check(libc.bind(s.fileno(), sa, ctypes.c_uint(16)), "bind")
    return s, area


def main():
    what, iface = sys.argv[1], sys.argv[2]
    if what == "prog":
        held = attach_pass(iface, sys.argv[3] if len(sys.argv) > 3 else "foreign_pass")
    elif what == "socket":
        held = bind_socket(iface, int(sys.argv[3]))
    else:
        sys.exit(f"unknown {what!r}: prog or socket")
    print("ready", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()
    del held


if __name__ == "__main__":
    main()
