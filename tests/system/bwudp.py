"""A second client of the stateless UDP protocol, written from docs/udp-protocol.md alone
(not from the Rust code), to check that the specification is enough to build one.

    python3 bwudp.py get HOST PORT PATH OUT   -> one JSON line: status, bytes, sha256, counts

Python's standard library only. Follows §7 of the spec: fresh port, padded initial GET,
the token echoed, subsequent GETs from the first missing packet, timeouts doubling.
"""
import hashlib
import json
import socket
import struct
import sys
import time

INITIAL = 0x99999999
UNIT = 1408
GET_ACK, HEADER, DATA, LAST, LAST_NOW, ERROR = 0x31, 0x32, 0x33, 0x34, 0x88, 0x45
FLAG_TOKEN, FLAG_BOUNDED = 0x01, 0x02


class Failed(Exception):
    pass


def request(host, path, start, token=None, pad_to=0):
    head = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n"
    if token is not None:
        head += f"BW-Token: {token.hex()}\r\n"
    head += "\r\n"
    data = head.encode()
    pad = max(0, pad_to - len(data) - 4)
    return data + b"\0" * pad + struct.pack(">I", start)


def parse(pkt):
    """(state, version, request_id, core, flags, unit, a, b, payload) or None (§5)."""
    if len(pkt) < 16:
        return None
    state, version, rid, core, flags, unit, a, b = struct.unpack(">BBHBBHII", pkt[:16])
    payload = pkt[16:]
    if version != 1 or state not in (GET_ACK, HEADER, DATA, LAST, LAST_NOW, ERROR):
        return None
    if state == GET_ACK:
        want = 8 if flags & FLAG_TOKEN else 0
    elif state == ERROR:
        want = 0
    else:
        want = a
    if len(payload) != want:
        return None
    return state, version, rid, core, flags, unit, a, b, payload


def get(host, port, path, rto=0.05, tries=8):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", 0))
    sock.connect((host, port))
    authority = f"{host}:{port}"
    token = None
    total = count = None
    have = {}  # packet number -> payload
    counts = {"gets": 0, "timeouts": 0, "duplicates": 0, "ignored": 0, "bounded": 0}
    cores = set()  # the core octet of every packet (which server core answered)
    start = INITIAL
    timeout = rto
    idle = 0

    def send(s):
        nonlocal start
        start = s
        counts["gets"] += 1
        pad = 1200 if s == INITIAL else 0
        sock.send(request(authority, path, s, token, pad))
        return time.monotonic() + timeout

    def first_missing():
        k = 1
        while k in have:
            k += 1
        return k

    deadline = send(INITIAL)
    while True:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            pkt = sock.recv(2048)
        except (socket.timeout, ConnectionRefusedError):
            counts["timeouts"] += 1
            idle += 1
            if idle > tries:
                raise Failed(f"no progress after {tries} timeouts: {counts}")
            timeout = min(timeout * 2, 1.0)
            deadline = send(INITIAL if count is None else first_missing())
            continue
        p = parse(pkt)
        if p is None:
            counts["ignored"] += 1
            continue
        state, _, _, core, flags, unit, a, b, payload = p
        cores.add(core)
        if state == ERROR:
            raise Failed(f"error code {a} (B={b})")
        if state == GET_ACK:
            if flags & FLAG_TOKEN:
                token = payload
            if flags & FLAG_BOUNDED:
                counts["bounded"] += 1
            if unit != UNIT or b != 1 + -(-a // UNIT):
                raise Failed(f"inconsistent Get-Ack: total {a} count {b} unit {unit}")
            if count is None:
                total, count = a, b
                idle = 0
            elif (total, count) != (a, b):
                raise Failed("the file changed during the transfer")
            continue
        if count is None:
            counts["ignored"] += 1
            if state in (LAST, LAST_NOW):
                deadline = send(INITIAL)  # the Get-Ack was lost
            continue
        k = b
        if not 1 <= k <= count or (k == 1) != (state == HEADER):
            counts["ignored"] += 1
            continue
        if k > 1 and a != min(UNIT, total - (k - 2) * UNIT):
            counts["ignored"] += 1
            continue
        if k in have:
            counts["duplicates"] += 1
        else:
            have[k] = payload
            idle = 0
            timeout = rto
        if len(have) == count:
            break
        if state in (LAST, LAST_NOW) and k >= (1 if start == INITIAL else start):
            deadline = send(first_missing())
    sock.close()
    counts["cores"] = sorted(cores)
    head = have[1]
    body = b"".join(have[k] for k in range(2, count + 1))
    if len(body) != total:
        raise Failed(f"{len(body)} octets for a total of {total}")
    status = int(head.split(b" ", 2)[1])
    return head, body, status, counts


def main():
    if len(sys.argv) != 6 or sys.argv[1] != "get":
        sys.exit("usage: bwudp.py get HOST PORT PATH OUT")
    _, _, host, port, path, out = sys.argv
    try:
        head, body, status, counts = get(host, int(port), path)
    except Failed as e:
        print(json.dumps({"error": str(e)}))
        sys.exit(1)
    with open(out, "wb") as f:
        f.write(body)
    print(json.dumps({"status": status, "bytes": len(body),
                      "sha256": hashlib.sha256(body).hexdigest(), "counts": counts,
                      "head": head.decode("latin-1")}))


if __name__ == "__main__":
    main()
