"""A hostile DHCP server for tests/kernel/test_dhcp.py (plain sockets, no scapy):
`dhcp_server.py IFACE SERVER_IP ADDRESS`, run in the test's namespace on the kernel's TAP.

First exchange: to the DISCOVER it answers with OFFERs a client must refuse — the wrong
xid, another client's MAC, an option running past the end, a zero lease, the broadcast
address as "your address" — then a good OFFER (lease 3600 s, T1 4 s); to the REQUEST an
ACK with a zero lease, then the good ACK. At the renewal (a REQUEST with ciaddr set) it
says NAK, ignores DISCOVERs for 3 s (so the test sees the kernel without an address), and
then leases the address again for 60 s. Prints one line per message, for the test's log.
"""
import socket
import struct
import sys
import time

IFACE, SERVER, ADDR = sys.argv[1:4]
MAGIC = bytes([99, 130, 83, 99])
DISCOVER, OFFER, REQUEST, ACK, NAK = 1, 2, 3, 5, 6


def ip(a):
    return socket.inet_aton(a)


def options(msg):
    out, i = {}, 240
    while i + 1 < len(msg) and msg[i] != 255:
        if msg[i] == 0:
            i += 1
            continue
        n = msg[i + 1]
        out[msg[i]] = msg[i + 2:i + 2 + n]
        i += 2 + n
    return out


def reply(req, kind, *, xid=None, chaddr=None, yiaddr=ADDR, lease=3600, t1=None, tail=b"",
          end=True):
    b = bytearray(240)
    b[0:4] = bytes([2, 1, 6, 0])
    b[4:8] = xid if xid is not None else req[4:8]
    b[10:12] = req[10:12]
    b[16:20] = ip(yiaddr) if kind != NAK else bytes(4)
    b[20:24] = ip(SERVER)
    b[28:44] = chaddr if chaddr is not None else req[28:44]
    b[236:240] = MAGIC
    b += bytes([53, 1, kind, 54, 4]) + ip(SERVER)
    if kind != NAK:
        b += bytes([1, 4, 255, 255, 255, 0, 3, 4]) + ip(SERVER)
        if lease is not None:
            b += bytes([51, 4]) + struct.pack(">I", lease)
        if t1 is not None:
            b += bytes([58, 4]) + struct.pack(">I", t1)
    b += tail
    if end:
        b += bytes([255])
    return bytes(b)


def main():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, IFACE.encode())
    s.bind(("0.0.0.0", 67))
    first, lost_at = True, None

    def send(b, what):
        s.sendto(b, ("255.255.255.255", 68))
        print("sent", what, flush=True)

    while True:
        req, _ = s.recvfrom(2048)
        if len(req) < 240 or req[0] != 1:
            continue
        kind = options(req).get(53, b"\0")[0]
        renewing = req[12:16] != bytes(4)
        print("got", {DISCOVER: "DISCOVER", REQUEST: "REQUEST"}.get(kind, kind),
              "renewing" if renewing else "", flush=True)
        if kind == DISCOVER:
            if lost_at is not None and time.time() - lost_at < 3:
                print("ignored a DISCOVER while the address is lost", flush=True)
                continue
            if first:
                bad_xid = struct.pack(">I", struct.unpack(">I", req[4:8])[0] ^ 1)
                send(reply(req, OFFER, xid=bad_xid), "OFFER wrong xid")
                send(reply(req, OFFER, chaddr=bytes([2, 9, 9, 9, 9, 9]) + bytes(10)),
                     "OFFER another MAC")
                send(reply(req, OFFER, tail=bytes([51, 4, 0, 0]), end=False),
                     "OFFER option past the end")
                send(reply(req, OFFER, lease=0), "OFFER zero lease")
                send(reply(req, OFFER, yiaddr="255.255.255.255"), "OFFER broadcast address")
                time.sleep(0.2)
            send(reply(req, OFFER, lease=3600 if first else 60), "OFFER")
        elif kind == REQUEST and renewing:
            send(reply(req, NAK), "NAK")
            lost_at, first = time.time(), False
        elif kind == REQUEST:
            if first:
                send(reply(req, ACK, lease=0), "ACK zero lease")
                time.sleep(0.1)
                send(reply(req, ACK, lease=3600, t1=4), "ACK")
            else:
                send(reply(req, ACK, lease=60), "ACK")


if __name__ == "__main__":
    main()
