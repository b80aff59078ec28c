#!/usr/bin/env python3
"""Generates the non-handwritten files of examples/site, reproducibly.

Writes (relative to examples/site):
  files/1m.bin    exactly 1 MiB of pseudo-random bytes (SHA-256 in counter mode)
  files/4k.html   exactly 4096 bytes of valid HTML
  gradient.png    a 128x96 RGB image (plasma-like gradient)
  favicon.ico     a 16x16 32-bit icon

Run from anywhere: python3 examples/gen-site.py. Output is byte-for-byte stable, so the
generated files are committed and CI can check they match.
"""
import hashlib
import math
import os
import struct
import zlib

SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")


def write(rel, data):
    path = os.path.join(SITE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{rel}: {len(data)} bytes")


def one_mib():
    out = bytearray()
    i = 0
    while len(out) < 1 << 20:
        out += hashlib.sha256(b"bareweb 1m.bin " + i.to_bytes(8, "little")).digest()
        i += 1
    assert len(out) == 1048576
    return bytes(out)


def four_k_html():
    head = (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<title>4 KiB page</title>\n<link rel=\"stylesheet\" href=\"/style.css\">\n"
        "</head>\n<body>\n<h1>A page of exactly 4096 bytes</h1>\n"
        "<p>Used to measure small-response latency. <a href=\"/\">Home</a></p>\n<ol>\n"
    )
    tail = "</ol>\n</body>\n</html>\n"
    body = ""
    n = 1
    while True:
        item = f"<li>Line {n}: the quick brown fox jumps over the lazy dog.</li>\n"
        if len(head) + len(body) + len(item) + len(tail) > 4096:
            break
        body += item
        n += 1
    pad = 4096 - len(head) - len(body) - len(tail)
    if pad >= 8:
        body += "<!--" + "x" * (pad - 8) + "-->\n"
    elif pad == 7:
        body += "<!---->"
    else:
        body += " " * pad
    page = (head + body + tail).encode("ascii")
    assert len(page) == 4096, len(page)
    return page


def png(width, height, pixel):
    raw = bytearray()
    for y in range(height):
        raw.append(0)  # filter: none
        for x in range(width):
            raw += bytes(pixel(x, y))

    def chunk(kind, data):
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(bytes(raw), 9))
        + chunk(b"IEND", b"")
    )


def plasma(x, y):
    v = math.sin(x / 11.0) + math.sin(y / 7.0) + math.sin((x + y) / 13.0)
    v += math.sin(math.hypot(x - 64, y - 48) / 6.0)
    # Quantised to 16 levels per channel so the PNG stays small.
    r = int(7.5 + 7.5 * math.sin(v * math.pi / 2)) * 17
    g = int(7.5 + 7.5 * math.sin(v * math.pi / 2 + 2.09)) * 17
    b = int(7.5 + 7.5 * math.sin(v * math.pi / 2 + 4.19)) * 17
    return (r, g, b)


def ico16():
    size = 16
    pixels = bytearray()
    for y in reversed(range(size)):  # BMP rows go bottom-up
        for x in range(size):
            inside = (x - 7.5) ** 2 + (y - 7.5) ** 2 <= 7.5**2
            a = 255 if inside else 0
            pixels += bytes((200, 90 + 8 * y, 20 + 10 * x, a))  # BGRA
    mask = bytes(4 * size)  # AND mask, 1 bpp rows padded to 32 bits; alpha rules
    info = struct.pack("<IiiHHIIiiII", 40, size, 2 * size, 1, 32, 0, len(pixels) + len(mask), 0, 0, 0, 0)
    image = info + pixels + mask
    head = struct.pack("<HHH", 0, 1, 1)
    entry = struct.pack("<BBBBHHII", size, size, 0, 0, 1, 32, len(image), 6 + 16)
    return head + entry + image


def main():
    write("files/1m.bin", one_mib())
    write("files/4k.html", four_k_html())
    write("gradient.png", png(128, 96, plasma))
    write("favicon.ico", ico16())


if __name__ == "__main__":
    main()
