#!/usr/bin/env python3
"""Clients for bareweb's whole-system tests. Runs *inside* the test network namespace
(`ip netns exec NS python3 client.py CMD ...`) and prints one JSON object on stdout.

Every loop here is bounded in count and in time; every socket has a timeout.
"""
import hashlib
import http.client
import json
import os
import re
import socket
import struct
import sys
import threading
import time

SERVER = os.environ.get("BW_SERVER", "10.0.0.2")
PORT = int(os.environ.get("BW_PORT", "80"))
TIMEOUT = 20


def out(obj):
    print(json.dumps(obj))


def fetch(conn, path, headers=None, method="GET"):
    conn.request(method, path, headers=headers or {})
    r = conn.getresponse()
    body = r.read()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def cmd_get(args):
    """get PATH [Header:Value ...]: one request on a fresh connection."""
    path, hdrs = args[0], dict(h.split(":", 1) for h in args[1:])
    hdrs = {k: v.strip() for k, v in hdrs.items()}
    c = http.client.HTTPConnection(SERVER, PORT, timeout=TIMEOUT)
    method = hdrs.pop("X-Method", "GET")
    st, h, body = fetch(c, path, hdrs, method)
    c.close()
    out({"status": st, "headers": h, "len": len(body), "sha256": hashlib.sha256(body).hexdigest()})


def cmd_keepalive(args):
    """keepalive N_CONN N_REQ PATH...: N_CONN concurrent persistent connections, each
    fetching every PATH N_REQ times; reports digests seen per path and errors."""
    n_conn, n_req, paths = int(args[0]), int(args[1]), args[2:]
    digests, errors, lock = {}, [], threading.Lock()
    # The first connection waits for the last: 500 threads connecting to a kernel under
    # TCG on a busy host may take longer than one request's timeout. A guard, not a bound.
    barrier = threading.Barrier(n_conn, timeout=6 * TIMEOUT)

    def worker(i):
        try:
            c = http.client.HTTPConnection(SERVER, PORT, timeout=TIMEOUT)
            c.connect()
            barrier.wait()  # all connections open at once
            for _ in range(n_req):
                for p in paths:
                    st, h, body = fetch(c, p)
                    if st != 200:
                        raise RuntimeError(f"{p}: status {st}")
                    with lock:
                        digests.setdefault(p, set()).add(hashlib.sha256(body).hexdigest())
            c.close()
        except Exception as e:  # reported, not swallowed
            with lock:
                errors.append(f"conn {i}: {e!r}")

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(n_conn)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(TIMEOUT * 3)
    out({"digests": {p: sorted(d) for p, d in digests.items()}, "errors": errors[:10],
         "n_errors": len(errors)})


def cmd_cpr(args):
    """cpr N PATH: N fetches, each on its own connection (Connection: close)."""
    n, path = int(args[0]), args[1]
    ok, errors, digests = 0, [], set()
    deadline = time.time() + 120
    for i in range(n):
        if time.time() > deadline:
            errors.append("deadline")
            break
        try:
            c = http.client.HTTPConnection(SERVER, PORT, timeout=TIMEOUT)
            st, h, body = fetch(c, path, {"Connection": "close"})
            c.close()
            if st == 200:
                ok += 1
                digests.add(hashlib.sha256(body).hexdigest())
            else:
                errors.append(f"{i}: status {st}")
        except Exception as e:
            errors.append(f"{i}: {e!r}")
    out({"ok": ok, "errors": errors[:10], "n_errors": len(errors), "digests": sorted(digests)})


def raw_exchange(data, read_for=3.0, shutdown=False):
    """Sends raw bytes on a new connection, returns what came back until close/timeout."""
    s = socket.create_connection((SERVER, PORT), timeout=TIMEOUT)
    s.sendall(data)
    if shutdown:
        s.shutdown(socket.SHUT_WR)
    s.settimeout(read_for)
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except socket.timeout:
        pass
    s.close()
    return got


def cmd_raw(args):
    """raw HEXBYTES [READ_SECONDS]: send bytes, report the response head and whether the
    server closed the connection."""
    data = bytes.fromhex(args[0])
    read_for = float(args[1]) if len(args) > 1 else 3.0
    s = socket.create_connection((SERVER, PORT), timeout=TIMEOUT)
    s.sendall(data)
    s.settimeout(read_for)
    got, closed = b"", False
    t0 = time.time()
    try:
        while True:
            b = s.recv(65536)
            if not b:
                closed = True
                break
            got += b
    except socket.timeout:
        pass
    s.close()
    head = got.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    out({"head": head, "closed": closed, "len": len(got), "secs": round(time.time() - t0, 3),
         "statuses": re.findall(r"HTTP/1\.[01] (\d{3}) ", got.decode("latin-1"))})


def cmd_stall(args):
    """stall PATH SECONDS: requests PATH, reads nothing for SECONDS, then closes."""
    path, secs = args[0], float(args[1])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(TIMEOUT)
    s.connect((SERVER, PORT))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    time.sleep(secs)
    s.close()
    out({"stalled": secs})


def cmd_frames(args):
    """frames IFNAME DST_MAC: sends a barrage of malformed Ethernet/IPv4/TCP frames to the
    server through a raw packet socket on IFNAME."""
    ifname, dst_mac = args[0], bytes.fromhex(args[1].replace(":", ""))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    src_mac = s.getsockname()[4]
    src_ip = socket.inet_aton(os.environ.get("BW_HOST_IP", "10.0.0.1"))
    dst_ip = socket.inet_aton(SERVER)

    def csum(b):
        if len(b) % 2:
            b += b"\0"
        s_ = sum(struct.unpack(f"!{len(b)//2}H", b))
        while s_ >> 16:
            s_ = (s_ & 0xFFFF) + (s_ >> 16)
        return (~s_) & 0xFFFF

    def ip(payload, proto=6, ihl=5, total=None, frag=0x4000, ttl=64, fix=True, opts=b""):
        total = total if total is not None else 20 + len(opts) + len(payload)
        h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, total, 1, frag, ttl, proto, 0, src_ip, dst_ip) + opts
        if fix:
            h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
        return h + payload

    def tcp(sport, flags, seq=1, ack=0, doff=5, payload=b"", fix=True, opts=b""):
        h = struct.pack("!HHIIBBHHH", sport, PORT, seq, ack, doff << 4, flags, 65535, 0, 0) + opts
        if fix:
            pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 6, len(h) + len(payload))
            c = csum(pseudo + h + payload)
            h = h[:16] + struct.pack("!H", c) + h[18:]
        return h + payload

    eth = dst_mac + src_mac
    frames = [
        b"",                                            # empty
        eth[:7],                                        # truncated Ethernet
        eth + b"\x08\x00",                              # IPv4 with no header
        eth + b"\x08\x00" + ip(b"")[:19],               # truncated IPv4
        eth + b"\x08\x00" + ip(b"", ihl=4),             # IHL < 5
        eth + b"\x08\x00" + ip(b"", ihl=15),            # IHL past the buffer
        eth + b"\x08\x00" + ip(b"x" * 8, total=9000),   # total length past the buffer
        eth + b"\x08\x00" + ip(b"x" * 8, total=10),     # total length < IHL
        eth + b"\x08\x00" + ip(b"", fix=False)[:10] + b"\xde\xad" + ip(b"")[12:],  # bad IP checksum
        eth + b"\x08\x00" + ip(tcp(4000, 0x02), frag=0x2000),  # first fragment
        eth + b"\x08\x00" + ip(tcp(4000, 0x02), frag=0x0010),  # later fragment
        eth + b"\x08\x00" + ip(tcp(4000, 0x02)[:12]),    # truncated TCP
        eth + b"\x08\x00" + ip(tcp(4001, 0x02, doff=3)),  # data offset < 5
        eth + b"\x08\x00" + ip(tcp(4002, 0x02, doff=15)),  # data offset past the segment
        eth + b"\x08\x00" + ip(tcp(4003, 0x02, fix=False)),  # bad TCP checksum
        eth + b"\x08\x00" + ip(tcp(4004, 0x02, opts=b"\x02\x01\x00\x00")),  # MSS option len 1
        eth + b"\x08\x00" + ip(tcp(4005, 0x02, opts=b"\x03\x09\x00\x00")),  # WS option past end
        eth + b"\x08\x00" + ip(tcp(4006, 0x02, doff=6, opts=b"\x02\x00\x00\x00")),  # option len 0
        eth + b"\x08\x00" + ip(tcp(4007, 0x10, seq=5, ack=777)),  # stray ACK: RST expected
        eth + b"\x08\x00" + ip(tcp(4008, 0x04)),        # stray RST
        eth + b"\x08\x00" + ip(tcp(4009, 0x03)),        # SYN+FIN
        eth + b"\x08\x00" + ip(b"\x08\x00", proto=1),   # truncated ICMP
        eth + b"\x08\x00" + ip(b"\x08\x00\x00\x00\x00\x01\x00\x01", proto=1),  # bad ICMP checksum
        eth + b"\x08\x00" + ip(b"\x00" * 8, proto=17),  # UDP to a port we do not serve
        eth + b"\x08\x00" + ip(b"", proto=99),          # unknown protocol
        eth + b"\x08\x00" + ip(tcp(4010, 0x02), opts=b"\x01\x01\x01\x00", ihl=6),  # IP options + SYN
        eth + b"\x08\x06" + b"\x00\x01\x08\x00\x06\x04\x00\x01" + src_mac,  # truncated ARP
        eth + b"\x08\x06" + b"\x00\x06\x08\x00\x06\x04\x00\x01" + src_mac + src_ip + b"\0" * 6 + dst_ip,  # bad htype
        eth + b"\x86\xdd" + b"\x60" + b"\0" * 39,       # IPv6
        eth + b"\x12\x34" + b"junk" * 20,               # unknown EtherType
        b"\xff" * 6 + src_mac + b"\x08\x00" + ip(b"x" * 30, proto=17),  # broadcast UDP
    ]
    sent = 0
    for _ in range(3):
        for f in frames:
            try:
                s.send(f if len(f) >= 14 else f + b"\0" * (14 - len(f)))
                sent += 1
            except OSError:
                pass
    # Random garbage, seeded.
    rnd = __import__("random").Random(1234)
    for _ in range(300):
        n = rnd.randrange(14, 200)
        f = eth + b"\x08\x00" + bytes(rnd.randrange(256) for _ in range(n))
        s.send(f)
        sent += 1
    out({"sent": sent})


def probe_loop(stop, results, every=0.05):
    """GET / every `every` seconds from BW_PROBE_IP (a second host address) until `stop`
    is set, each within BW_PROBE_TIMEOUT seconds (default 1: a lost SYN, retransmitted
    after 1 s, fails it); each probe's (ok, seconds) goes to `results`. With BW_PROBE_CA
    (a CA file) the probe speaks HTTPS (to BW_PORT), a full handshake each."""
    src = os.environ.get("BW_PROBE_IP")
    ca = os.environ.get("BW_PROBE_CA")
    timeout = float(os.environ.get("BW_PROBE_TIMEOUT", "1.0"))
    while not stop.is_set():
        t0 = time.time()
        ok = False
        try:
            src_addr = (src, 0) if src else None
            if ca:
                c = http.client.HTTPSConnection(
                    SERVER, PORT, timeout=timeout, source_address=src_addr,
                    context=__import__("ssl").create_default_context(cafile=ca))
            else:
                c = http.client.HTTPConnection(SERVER, PORT, timeout=timeout,
                                               source_address=src_addr)
            st, _, _ = fetch(c, "/")
            c.close()
            ok = st == 200
        except (OSError, http.client.HTTPException):
            pass
        results.append((ok, round(time.time() - t0, 3)))
        time.sleep(max(0.0, every - (time.time() - t0)))


def probe_report(results):
    ok = [t for good, t in results if good]
    return {"probes": len(results), "probes_ok": len(ok),
            "probe_max_s": max((t for _, t in results), default=None)}


def cmd_synflood(args):
    """synflood IFNAME DST_MAC N SECONDS: N SYNs from spoofed addresses 10.0.0.10-249 and
    random ports, sent through a raw socket on IFNAME within SECONDS at most, while a probe
    fetches / every 50 ms (1 s timeout), and for 2 s after the flood."""
    ifname, dst_mac = args[0], bytes.fromhex(args[1].replace(":", ""))
    n, limit = int(args[2]), float(args[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    src_mac = s.getsockname()[4]
    dst_ip = socket.inet_aton(SERVER)
    rnd = __import__("random").Random(99)

    def csum(b):
        if len(b) % 2:
            b += b"\0"
        s_ = sum(struct.unpack(f"!{len(b)//2}H", b))
        while s_ >> 16:
            s_ = (s_ & 0xFFFF) + (s_ >> 16)
        return (~s_) & 0xFFFF

    def syn(src_ip, sport, seq):
        h = struct.pack("!HHIIBBHHH", sport, PORT, seq, 0, 6 << 4, 0x02, 64240, 0, 0)
        h += b"\x02\x04\x05\xb4"  # MSS 1460
        c = csum(src_ip + dst_ip + struct.pack("!BBH", 0, 6, len(h)) + h)
        h = h[:16] + struct.pack("!H", c) + h[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(h), 1, 0x4000, 64, 6, 0, src_ip, dst_ip)
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        return dst_mac + src_mac + b"\x08\x00" + ip + h

    results, stop = [], threading.Event()
    t = threading.Thread(target=probe_loop, args=(stop, results))
    t.start()
    time.sleep(0.3)
    start = time.time()
    sent = 0
    while sent < n and time.time() - start < limit:
        src_ip = bytes([10, 0, 0, 10 + rnd.randrange(240)])
        try:
            s.send(syn(src_ip, rnd.randrange(1024, 65535), rnd.randrange(1 << 32)))
            sent += 1
        except OSError:
            time.sleep(0.001)
    flood_s = time.time() - start
    time.sleep(2.0)
    stop.set()
    t.join()
    out({"sent": sent, "flood_s": round(flood_s, 3), **probe_report(results)})


def cmd_silent(args):
    """silent N SECONDS: holds up to N connections that send nothing for SECONDS, opening a
    new one whenever one is closed or refused (churn), while a probe fetches / every 50 ms
    from BW_PROBE_IP (1 s timeout)."""
    import resource
    import selectors
    n, secs = int(args[0]), float(args[1])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, n + 256)), hard))
    sel = selectors.DefaultSelector()
    opened = closed = 0

    def open_one():
        nonlocal opened
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.setblocking(False)
        c.connect_ex((SERVER, PORT))
        sel.register(c, selectors.EVENT_READ)
        opened += 1

    results, stop = [], threading.Event()
    t = threading.Thread(target=probe_loop, args=(stop, results))
    t.start()
    end = time.time() + secs
    for _ in range(n):
        open_one()
    while time.time() < end:
        for key, _ in sel.select(timeout=0.1):
            c = key.fileobj
            try:
                data = c.recv(4096)
            except OSError:
                data = b""
            if not data:  # closed, reset or refused: reconnect at once
                sel.unregister(c)
                c.close()
                closed += 1
                if time.time() < end:
                    open_one()
    stop.set()
    t.join()
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    out({"opened": opened, "closed": closed, **probe_report(results)})


def cmd_inject(args):
    """inject IFNAME DST_MAC: opens a real connection, then injects RST and SYN segments
    with wrong sequence numbers into it through a raw socket; the connection must survive
    and still serve. Reports the statuses seen on the victim connection."""
    ifname, dst_mac = args[0], bytes.fromhex(args[1].replace(":", ""))
    c = http.client.HTTPConnection(SERVER, PORT, timeout=TIMEOUT)
    st1, _, _ = fetch(c, "/")
    sport = c.sock.getsockname()[1]
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    raw.bind((ifname, 0))
    src_mac = raw.getsockname()[4]
    src_ip = socket.inet_aton(os.environ.get("BW_HOST_IP", "10.0.0.1"))
    dst_ip = socket.inet_aton(SERVER)

    def csum(b):
        if len(b) % 2:
            b += b"\0"
        s_ = sum(struct.unpack(f"!{len(b)//2}H", b))
        while s_ >> 16:
            s_ = (s_ & 0xFFFF) + (s_ >> 16)
        return (~s_) & 0xFFFF

    def seg(flags, seq):
        h = struct.pack("!HHIIBBHHH", sport, PORT, seq, 0, 5 << 4, flags, 65535, 0, 0)
        pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 6, len(h))
        h = h[:16] + struct.pack("!H", csum(pseudo + h)) + h[18:]
        iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(h), 7, 0x4000, 64, 6, 0, src_ip, dst_ip)
        iph = iph[:10] + struct.pack("!H", csum(iph)) + iph[12:]
        return dst_mac + src_mac + b"\x08\x00" + iph + h

    for seq in (1, 0x7FFFFFFF, 0xDEADBEEF, 12345678):
        raw.send(seg(0x04, seq))  # RST with a sequence number far from rcv_nxt
        raw.send(seg(0x02, seq))  # SYN into an established connection
    time.sleep(0.3)
    st2, _, body = fetch(c, "/")
    c.close()
    out({"before": st1, "after": st2, "len": len(body)})


def cmd_loss(args):
    """loss N PATH SHA256: N sequential downloads of PATH; counts the intact ones and
    times each (seconds)."""
    n, path, want = int(args[0]), args[1], args[2]
    ok, bad, times = 0, [], []
    for i in range(n):
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection(SERVER, PORT, timeout=60)
            st, h, body = fetch(c, path, {"Connection": "close"})
            c.close()
            d = hashlib.sha256(body).hexdigest()
            if st == 200 and d == want:
                ok += 1
            else:
                bad.append(f"{i}: status {st} len {len(body)}")
        except Exception as e:
            bad.append(f"{i}: {e!r}")
        times.append(round(time.monotonic() - t0, 4))
    out({"ok": ok, "bad": bad, "times": times})


def cmd_parallel(args):
    """parallel N PATH SHA256 KBPS SRC[,SRC...]: N downloads of PATH at once, connection i
    from source address SRC[i % len], each reading at most KBPS KiB/s (a small receive
    buffer makes the server's sends follow the reader, so the downloads last long enough
    for a link to fail under them; 0: as fast as possible). Reports the intact ones, the
    failures and each download's time."""
    n, path, want, kbps = int(args[0]), args[1], args[2], int(args[3])
    srcs = args[4].split(",") if len(args) > 4 and args[4] else [""]
    results, lock = {}, threading.Lock()
    start = threading.Barrier(n, timeout=6 * TIMEOUT)  # as keepalive's: a guard

    def worker(i):
        t0 = time.monotonic()
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if kbps:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
            s.settimeout(60)
            s.bind((srcs[i % len(srcs)], 0))
            s.connect((SERVER, PORT))
            start.wait()
            t0 = time.monotonic()
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data, got = bytearray(), 0
            chunk = 16384
            while True:
                b = s.recv(chunk)
                if not b:
                    break
                data += b
                got += len(b)
                if kbps:
                    # Sleep until the reader is back on its rate.
                    ahead = got / (kbps * 1024) - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
            s.close()
            head, _, body = bytes(data).partition(b"\r\n\r\n")
            ok = head.startswith(b"HTTP/1.1 200") and hashlib.sha256(body).hexdigest() == want
            r = None if ok else f"{head[:40]!r} body {len(body)} bytes"
        except Exception as e:  # reported, not swallowed
            r = repr(e)
        with lock:
            results[i] = (r, round(time.monotonic() - t0, 3))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    bad = [f"{i}: {r}" for i, (r, _) in sorted(results.items()) if r]
    bad += [f"{i}: did not finish" for i in range(n) if i not in results]
    out({"ok": n - len(bad), "bad": bad[:10],
         "times": [t for _, (_, t) in sorted(results.items())]})


def cmd_sniff(args):
    """sniff IFACE SECONDS SERVER_IP: every frame on IFACE for SECONDS, or until SIGTERM
    (AF_PACKET): the server's TCP frames counted by source MAC, with and without payload,
    its UDP datagrams by source MAC and size (128 payload bytes or more: big), and its ARP
    frames as (operation, Ethernet source, sender hardware address). Prints `ready` on
    stderr once its socket is bound."""
    import signal
    iface, secs, server = args[0], float(args[1]), socket.inet_aton(args[2])
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    # Room for what arrives while Python is slow (a TAP's frames are up to 64 KiB: the
    # default buffer holds three): root may set more than rmem_max.
    s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
    s.bind((iface, 0))
    s.settimeout(0.2)
    # The caller waits for this line before it starts the traffic (a fixed sleep was too
    # short on a loaded machine: the capture then saw nothing).
    print("ready", file=sys.stderr, flush=True)
    mac = lambda b: ":".join(f"{x:02x}" for x in b)
    data, data_bytes, control, arps, udp = {}, {}, {}, [], {}
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if stop:
            # Told to stop: what is queued was seen on the wire, so count it too (a
            # sniffer a busy host ran late had frames of the test's own traffic queued).
            s.setblocking(False)
        try:
            f, addr = s.recvfrom(70000)
        except socket.timeout:
            continue
        except BlockingIOError:
            break
        if addr[2] == socket.PACKET_OUTGOING or len(f) < 14:
            continue
        src, etype = mac(f[6:12]), struct.unpack("!H", f[12:14])[0]
        if etype == 0x0806 and len(f) >= 42 and f[28:32] == server:
            op = struct.unpack("!H", f[20:22])[0]
            arps.append(["request" if op == 1 else "reply", src, mac(f[22:28])])
        elif etype == 0x0800 and len(f) >= 42 and f[26:30] == server and f[23] == 17:
            ihl = (f[14] & 15) * 4
            size = "big" if struct.unpack("!H", f[14 + ihl + 4:14 + ihl + 6])[0] - 8 >= 128 \
                else "small"
            u = udp.setdefault(src, {})
            u[size] = u.get(size, 0) + 1
        elif etype == 0x0800 and len(f) >= 34 and f[26:30] == server and f[23] == 6:
            ihl = (f[14] & 15) * 4
            tot = struct.unpack("!H", f[16:18])[0]
            tcp = 14 + ihl
            doff = (f[tcp + 12] >> 4) * 4 if len(f) > tcp + 12 else 0
            payload = tot - ihl - doff
            d = data if payload > 0 else control
            d[src] = d.get(src, 0) + 1
            data_bytes[src] = data_bytes.get(src, 0) + max(payload, 0)
    out({"data": data, "data_bytes": data_bytes, "control": control, "arps": arps[:50],
         "udp": udp})


def cmd_stream(args):
    """stream PATH SECONDS: fetches PATH again and again on one keep-alive connection for
    SECONDS, timing every read; reports the gaps of more than 5 ms between reads (each as
    [start, end] on the system's monotonic clock, which other processes share), bytes
    and fetches. bench/bond.py times a link failure's recovery with it."""
    path, secs = args[0], float(args[1])
    end = time.monotonic() + secs
    c = http.client.HTTPConnection(SERVER, PORT, timeout=30)
    c.connect()
    # A small receive buffer: what the client reads follows what arrives, so a stall of
    # the sender shows as a gap between reads instead of being covered by buffered data.
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    gaps, fetches, total, last = [], 0, 0, time.monotonic()
    while time.monotonic() < end:
        c.request("GET", path)
        r = c.getresponse()
        while True:
            b = r.read(16384)
            now = time.monotonic()
            if now - last > 0.005:
                gaps.append([round(last, 4), round(now, 4)])
            last = now
            if not b:
                break
            total += len(b)
        fetches += 1
    c.close()
    out({"gaps": gaps, "bytes": total, "fetches": fetches})


if __name__ == "__main__":
    cmds = {k[4:]: v for k, v in globals().items() if k.startswith("cmd_")}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit("usage: client.py {" + ",".join(cmds) + "} ...")
    cmds[sys.argv[1]](sys.argv[2:])
