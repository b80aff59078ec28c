"""Helpers for tests/system/test_udp.py that run inside a test namespace (python3 FILE CMD ...),
printing one JSON line:

    exchanges HOST PORT          the exchanges of docs/udp-protocol.md §9, over a UDP socket:
                                 every request and every answer datagram, in hex
    spoof DEV SERVER_MAC SERVER_IP PORT SRC_IP
                                 GETs with a spoofed source address sent as raw frames on
                                 DEV, the answers to that address captured there: octets in
                                 and out per request
"""
import json
import socket
import struct
import sys
import time

INITIAL = 0x99999999


def request(host, path, start, token=None, pad_to=0, extra=""):
    head = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}"
    if token is not None:
        head += f"BW-Token: {token.hex()}\r\n"
    data = (head + "\r\n").encode()
    return data + b"\0" * max(0, pad_to - len(data) - 4) + struct.pack(">I", start)


def collect(sock, quiet=0.3, first=10.0):
    """Datagrams until `quiet` seconds pass without one, the first awaited for up to
    `first` seconds (a server that a busy host has not run yet answers late, not never)."""
    got = []
    sock.settimeout(first)
    while True:
        try:
            got.append(sock.recv(2048))
        except socket.timeout:
            return got
        sock.settimeout(quiet)


def cmd_exchanges(host, port):
    port = int(port)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", 0))
    sock.connect((host, port))
    auth = f"{host}:{port}"
    out = []

    def ex(name, req):
        sock.send(req)
        ans = collect(sock)
        out.append({"name": name, "request": req.hex(), "answers": [a.hex() for a in ans]})
        return ans

    ans = ex("initial", request(auth, "/files/4k.html", INITIAL, pad_to=1200))
    token = ans[0][16:24]
    ex("subsequent", request(auth, "/files/4k.html", 4, token))
    ex("not-found", request(auth, "/nope", INITIAL, token))
    ex("bad-start", request(auth, "/files/4k.html", 9, token))
    ex("unpadded", request(auth, "/index.html", INITIAL))
    ex("malformed", b"GET /index.html HTTP/1.1\r\nHost: x\r\n" + struct.pack(">I", INITIAL))
    print(json.dumps(out))


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def cmd_spoof(dev, server_mac, server_ip, port, src_ip):
    port = int(port)
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    raw.bind((dev, 0))
    raw.settimeout(0.05)
    smac = bytes.fromhex(server_mac.replace(":", ""))
    cmac = bytes.fromhex("020000000077")
    src = socket.inet_aton(src_ip)
    dst = socket.inet_aton(server_ip)
    results = []
    sport = 30000
    for path, start, pad in [("/files/1m.bin", INITIAL, 0), ("/files/1m.bin", INITIAL, 300),
                             ("/files/1m.bin", INITIAL, 1200), ("/files/1m.bin", INITIAL, 1472),
                             ("/files/1m.bin", 2, 0), ("/files/1m.bin", 2, 1472),
                             ("/files/4k.html", INITIAL, 1472), ("/nope", INITIAL, 0)]:
        sport += 1
        payload = request(f"{server_ip}:{port}", path, start, pad_to=pad)
        udp = struct.pack("!HHHH", sport, port, 8 + len(payload), 0) + payload
        pseudo = src + dst + struct.pack("!BBH", 0, 17, len(udp))
        c = csum(pseudo + udp) or 0xFFFF
        udp = udp[:6] + struct.pack("!H", c) + udp[8:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0x4000, 64, 17, 0, src, dst)
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        raw.send(smac + cmac + b"\x08\x00" + ip + udp)
        sent = 0
        frames = 0
        # Half a second of answer from its first frame, awaited for up to 10 s (from the
        # send, a server a busy host had not run for 0.5 s looked as if it never answered).
        end = time.time() + 10
        while time.time() < end:
            try:
                f = raw.recv(4096)
            except socket.timeout:
                continue
            if len(f) < 42 or f[12:14] != b"\x08\x00" or f[23] != 17:
                continue
            if f[30:34] != src or struct.unpack("!H", f[36:38])[0] != sport:
                continue
            if not frames:
                end = time.time() + 0.5
            sent += struct.unpack("!H", f[38:40])[0] - 8
            frames += 1
        results.append({"path": path, "start": start, "request": len(payload),
                        "answered": sent, "frames": frames})
        time.sleep(0.07)  # stay under the unproven rate limit (16/s)
    print(json.dumps(results))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"exchanges": cmd_exchanges, "spoof": cmd_spoof}[cmd](*args)
