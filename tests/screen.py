"""Reading the kernel's screen console back as text: QEMU's monitor
`screendump` writes the display as a PPM file; every 8x16 cell of it is matched against
the glyphs of the font the kernel draws with (font8x8's BASIC_LEGACY, each glyph row drawn
twice, light grey on black: crates/kernel/src/fbcon.rs), read from the crate's source in
cargo's registry. A cell that is not exactly a glyph reads as '#', so a wrong pixel
format, pitch or scroll shows up as text that does not match.
"""
import os
import pathlib
import re
import socket
import time

BG = (0, 0, 0)


def font():
    """{8-row bitmap: character} for printable ASCII, from the font8x8 crate's source."""
    home = pathlib.Path(os.environ.get("CARGO_HOME", pathlib.Path.home() / ".cargo"))
    found = sorted(home.glob("registry/src/*/font8x8-0.3*/src/legacy.rs"))
    if not found:
        raise AssertionError(f"font8x8's source not in {home}/registry: build the kernel first "
                             "(cargo build --release fetches it)")
    src = found[-1].read_text()
    body = src[src.index("BASIC_LEGACY: [[u8; 8]; 128] = [") :]
    body = body[body.index("=") + 1 :]
    entries = re.findall(r"NOTHING_TO_DISPLAY|\[((?:0x[0-9A-Fa-f]{2},?\s*){8})\]", body)[:128]
    assert len(entries) == 128, "unexpected font8x8 source layout"
    glyphs = {}
    for code, e in enumerate(entries):
        rows = tuple(int(x, 16) for x in re.findall(r"0x[0-9A-Fa-f]{2}", e)) if e else (0,) * 8
        if 0x20 <= code < 0x7F:
            glyphs.setdefault(rows, chr(code))
    return glyphs


def screendump(monitor, path, timeout=20):
    """The screen as (width, height, rgb bytes), through the QEMU monitor (HMP) socket."""
    path = pathlib.Path(path)
    path.unlink(missing_ok=True)
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    deadline = time.time() + timeout
    while True:
        try:
            s.connect(str(monitor))
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    try:
        s.sendall(f"screendump {path}\n".encode())
        while time.time() < deadline:
            if path.exists() and path.stat().st_size > 20:
                data = path.read_bytes()
                w, h, body = parse_ppm(data)
                if len(body) >= w * h * 3:
                    return w, h, body
            time.sleep(0.1)
    finally:
        s.close()
    raise AssertionError(f"no screendump in {path} after {timeout} s")


def parse_ppm(data):
    """A binary PPM (P6, maxval 255): (width, height, pixel bytes)."""
    fields, at = [], 0
    while len(fields) < 4:
        while data[at : at + 1].isspace():
            at += 1
        end = at
        while not data[end : end + 1].isspace():
            end += 1
        fields.append(data[at:end])
        at = end
    assert fields[0] == b"P6" and fields[3] == b"255", fields
    return int(fields[1]), int(fields[2]), data[at + 1 :]


def read_text(w, h, px, glyphs=None):
    """The screen's rows of text (trailing blanks cut), reading 8x16 cells from the top
    left: bits from the upper row of each glyph-row pair, which must equal the lower."""
    glyphs = glyphs or font()
    stride = w * 3

    def lit(x, y):
        o = y * stride + x * 3
        return tuple(px[o : o + 3]) != BG

    rows = []
    for r in range(h // 16):
        line = []
        for c in range(w // 8):
            cell = []
            for gy in range(8):
                bits = 0
                for gx in range(8):
                    x, y = c * 8 + gx, r * 16 + gy * 2
                    on = lit(x, y)
                    if on != lit(x, y + 1):
                        on = None
                        break
                    bits |= on << gx
                if on is None:
                    cell = None
                    break
                cell.append(bits)
            line.append(glyphs.get(tuple(cell), "#") if cell is not None else "#")
        rows.append("".join(line).rstrip())
    return rows
