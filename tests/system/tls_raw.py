#!/usr/bin/env python3
"""Hand-built TLS for the hostile HTTPS tests (test_tls_hostile.py), where no client tool
sends what is wanted: ClientHellos of odd shapes, records too long or cut short, garbage
and alerts at chosen points, and connections that stop mid-hello. Runs *inside* the test
network namespace (`ip netns exec NS python3 tls_raw.py CMD ...`) and prints one JSON
object on stdout; every socket has a timeout and every loop a bound.

What the server sent back is reported record by record (`[type, length, first bytes]`,
an alert's level and description readable while unencrypted) with how the connection
ended: "fin" (the server closed), "rst", or "open" (still open when the read gave up).

Commands:
  hello KIND [TIMEOUT]      one ClientHello of shape KIND (see HELLOS), then read
  after KIND                a real handshake (Python's ssl over a memory BIO, our own
                            socket), then KIND written raw after Finished
  slowloris N TIMEOUT       N connections each send half a ClientHello and stop; reports
                            when each was closed
"""
import json
import os
import socket
import ssl
import struct
import sys
import time

SERVER = os.environ.get("BW_SERVER", "10.0.0.2")
PORT = int(os.environ.get("BW_PORT", "443"))
CA = os.environ.get("BW_CA")


def out(obj):
    print(json.dumps(obj))


def u16(n):
    return struct.pack("!H", n)


def vec8(b):
    return bytes([len(b)]) + b


def vec16(b):
    return u16(len(b)) + b


def ext(kind, data):
    return u16(kind) + vec16(data)


SNI = ext(0, vec16(b"\x00" + vec16(b"localhost")))
GROUPS = ext(10, vec16(u16(0x001D) + u16(0x0017)))  # x25519, secp256r1
POINT_FORMATS = ext(11, vec8(b"\x00"))
SIG_ALGS = ext(13, vec16(u16(0x0403) + u16(0x0503) + u16(0x0804)))
EMS = ext(23, b"")
RENEGOTIATION_INFO = ext(0xFF01, vec8(b""))
VERSIONS13 = ext(43, vec8(u16(0x0304) + u16(0x0303)))
TLS13_SUITES = [0x1301, 0x1302, 0x1303]
TLS12_SUITES = [0xC02B, 0xC02C, 0xCCA9]


def key_share():
    # Any 32 bytes but a few are an X25519 public key; random ones are fine.
    return ext(51, vec16(u16(0x001D) + vec16(os.urandom(32))))


def client_hello(suites, exts):
    """A ClientHello handshake message (not yet in records)."""
    body = (u16(0x0303) + os.urandom(32) + vec8(os.urandom(32))
            + vec16(b"".join(u16(s) for s in suites)) + vec8(b"\x00") + vec16(b"".join(exts)))
    return b"\x01" + len(body).to_bytes(3, "big") + body


def records(payload, ctype=0x16, size=16384):
    """`payload` cut into records of `size` bytes at most."""
    out_ = b""
    for i in range(0, len(payload), size):
        chunk = payload[i:i + size]
        out_ += bytes([ctype]) + b"\x03\x01" + vec16(chunk)
    return out_


def hello13(sni=True):
    return client_hello(TLS13_SUITES + TLS12_SUITES,
                        ([SNI] if sni else []) + [GROUPS, SIG_ALGS, VERSIONS13, key_share()])


def hello12():
    """TLS 1.2 only: no supported_versions extension."""
    return client_hello(TLS12_SUITES, [SNI, GROUPS, POINT_FORMATS, SIG_ALGS, EMS,
                                       RENEGOTIATION_INFO])


def unknown_extensions(n, size=0):
    """`n` extensions of `size` zero bytes, of types nobody assigned (0x6000 + i)."""
    return [ext(0x6000 + i, bytes(size)) for i in range(n)]


def sslv2_hello():
    """An SSLv2-compatible CLIENT-HELLO (RFC 5246 appendix E.2): a two-byte header with
    the top bit set, message type 1, version 3.1, cipher specs of three bytes."""
    specs = b"".join(b"\x00" + u16(s) for s in [0xC02B, 0xC02F, 0x002F, 0x0035])
    challenge = os.urandom(16)
    body = b"\x01" + u16(0x0301) + u16(len(specs)) + u16(0) + u16(len(challenge)) + specs \
        + challenge
    return u16(0x8000 | len(body)) + body


HELLOS = {
    # Shapes a server must take: a handshake follows.
    "nosni": lambda: records(hello13(sni=False)),
    "noversions": lambda: records(hello12()),
    "manyext": lambda: records(client_hello(TLS13_SUITES, [SNI, GROUPS, SIG_ALGS, VERSIONS13,
                                                           key_share()]
                                            + unknown_extensions(2000))),
    "split": lambda: records(hello13(), size=7),  # one ClientHello in many records
    # Shapes it must refuse: an alert or a close, no handshake.
    "sslv2": sslv2_hello,
    "badsuites": lambda: records(client_hello([0x002F, 0x0035, 0x000A, 0xC013],
                                              [SNI, GROUPS, POINT_FORMATS, SIG_ALGS])),
    # A handshake message announcing 128 KiB (more than rustls takes), 70,000 bytes sent.
    "toolong": lambda: records(b"\x01" + (1 << 17).to_bytes(3, "big") + bytes(70000)),
    "overflow": lambda: b"\x16\x03\x01" + u16(16384 + 256 + 1) + b"\x01" + b"\x00" * 16640,
    "overflow_header": lambda: b"\x16\x03\x01" + u16(0xFFFF),
    "garbage_after": lambda: records(hello13()) + os.urandom(3000),
    "junk_record_after": lambda: records(hello13()) + b"\x16\x03\x03\x00\x04\xff\xff\xff\xff",
    "close_notify_mid": lambda: records(hello13()) + b"\x15\x03\x03\x00\x02\x01\x00",
    "fatal_mid": lambda: records(hello13()) + b"\x15\x03\x03\x00\x02\x02\x28",
    "truncated_fin": lambda: records(hello13())[:60],
}


def parse(data):
    """The records in `data`: [type, length, first bytes hex] each, alerts with their
    (level, description) while plain."""
    recs, i = [], 0
    while i + 5 <= len(data):
        ctype, length = data[i], struct.unpack("!H", data[i + 3:i + 5])[0]
        body = data[i + 5:i + 5 + length]
        rec = {"type": ctype, "len": length, "head": body[:4].hex()}
        if ctype == 0x15 and length == 2:
            rec["alert"] = [body[0], body[1]]
        if ctype == 0x16 and body:
            rec["hs"] = body[0]
        recs.append(rec)
        i += 5 + length
    return recs


def read_all(s, timeout):
    """Everything until the server closes or `timeout` seconds pass."""
    s.settimeout(0.2)
    data, end, how = b"", time.time() + timeout, "open"
    while time.time() < end:
        try:
            b = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            how = "rst"
            break
        if not b:
            how = "fin"
            break
        data += b
    return data, how


def cmd_hello(args):
    kind, timeout = args[0], float(args[1]) if len(args) > 1 else 5.0
    payload = HELLOS[kind]()
    s = socket.create_connection((SERVER, PORT), timeout=10)
    t0 = time.time()
    try:
        if kind == "truncated_fin":
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        else:
            s.sendall(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before it had all: what came back says how
    data, how = read_all(s, timeout)
    s.close()
    out({"records": parse(data), "end": how, "secs": round(time.time() - t0, 3),
         "bytes": len(data)})


def handshake(s):
    """Python's ssl over our own socket: the TLS 1.3 handshake, a request answered, and
    the SSLObject with its BIOs for what the test writes raw afterwards."""
    ctx = ssl.create_default_context(cafile=CA)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, outg, server_hostname=SERVER)

    def pump():
        if outg.pending:
            s.sendall(outg.read())

    def feed():
        b = s.recv(65536)
        if not b:
            inc.write_eof()
        else:
            inc.write(b)
        return b

    for _ in range(50):
        try:
            obj.do_handshake()
            pump()
            break
        except ssl.SSLWantReadError:
            pump()
            feed()
    obj.write(b"GET /files/4k.html HTTP/1.1\r\nHost: a\r\n\r\n")
    pump()
    got = b""

    def whole(got):
        # The whole response, by its Content-Length: a response spans several records
        # (the first records of a connection are one TCP segment each), and a record left
        # unread would be application data after our close_notify.
        head, sep, body = got.partition(b"\r\n\r\n")
        if not sep:
            return False
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                return len(body) >= int(line.split(b":", 1)[1])
        return True

    while not whole(got):
        try:
            got += obj.read(65536)
        except ssl.SSLWantReadError:
            if not feed():
                break
    return obj, inc, outg, pump, got


def cmd_after(args):
    kind = args[0]
    s = socket.create_connection((SERVER, PORT), timeout=10)
    obj, inc, outg, pump, got = handshake(s)
    first = got.split(b"\r\n", 1)[0].decode(errors="replace")
    raw = {
        # An encrypted-looking record longer than 2^14 + 256.
        "overflow": b"\x17\x03\x03" + u16(16384 + 256 + 17) + os.urandom(16384 + 256 + 17),
        # A record that does not decrypt.
        "garbage": b"\x17\x03\x03" + vec16(os.urandom(64)),
        # A plaintext fatal alert where only encrypted records may come.
        "plain_alert": b"\x15\x03\x03\x00\x02\x02\x28",
    }.get(kind)
    t0 = time.time()
    error = None
    if kind == "close_notify":
        try:
            obj.unwrap()
        except ssl.SSLWantReadError:
            pass
        pump()
    else:
        s.sendall(raw)
    data, how = read_all(s, 5.0)
    inc.write(data)
    if how == "fin":
        inc.write_eof()
    try:
        while True:
            if not obj.read(65536):
                break
    except ssl.SSLWantReadError:
        error = "want-read"
    except ssl.SSLZeroReturnError:
        error = "close_notify"
    except ssl.SSLEOFError:
        error = "eof"
    except ssl.SSLError as e:
        error = f"{e.reason or e}"
    s.close()
    out({"first": first, "end": how, "error": error, "bytes": len(data),
         "secs": round(time.time() - t0, 3)})


def cmd_slowloris(args):
    """N connections, each half a ClientHello; waits up to TIMEOUT seconds for the server to
    close each, reporting the seconds each took (None: still open)."""
    n, timeout = int(args[0]), float(args[1])
    hello = records(hello13())
    socks, t0 = [], time.time()
    for _ in range(n):
        c = socket.create_connection((SERVER, PORT), timeout=10)
        c.sendall(hello[:len(hello) // 2])
        c.setblocking(False)
        socks.append(c)
    closed = [None] * n
    while time.time() - t0 < timeout and None in closed:
        for i, c in enumerate(socks):
            if closed[i] is not None:
                continue
            try:
                b = c.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                b = b""
            if not b:
                closed[i] = round(time.time() - t0, 3)
        time.sleep(0.05)
    for c in socks:
        c.close()
    out({"closed": closed})


if __name__ == "__main__":
    {"hello": cmd_hello, "after": cmd_after, "slowloris": cmd_slowloris}[sys.argv[1]](
        sys.argv[2:])
