"""`bareweb run` as a new user meets it (the deployability work's "honest start-up"): what can be checked
is checked before QEMU starts, "serving" is said only once the kernel is ready, QEMU's
failures come back as their cause, bootable images written by `bareweb build` run as they
are, and nothing is left behind on any way out. QEMU user networking on a free loopback
port: no root, no namespace.
"""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from qemu_harness import BIN, SITE, require


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(*args, tmp=None):
    """`bareweb run`; with `tmp`, its work directory goes there (TMPDIR), where no earlier
    process of the same PID can have left one."""
    env = dict(os.environ, TMPDIR=str(tmp)) if tmp else None
    return subprocess.Popen([BIN, "run", *args, "--headless", "--accel", "tcg"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_serving(p, limit=120):
    """Lines of stderr up to and including the `serving` one."""
    lines = []
    deadline = time.time() + limit
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        lines.append(line)
        if "serving at" in line:
            return lines
    raise AssertionError("no `serving` line:\n" + "".join(lines))


def get(port, path="/"):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as r:
        return r.status, r.read()


def stop(p):
    p.send_signal(signal.SIGHUP)  # a closed terminal: the run must clean up as for Ctrl-C
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise


def work_dirs(pid, tmp="/tmp"):
    return glob.glob(f"{tmp}/bareweb-run-{pid}-*")


def test_port_in_use_and_too_little_memory_are_said_before_qemu(tmp_path):
    require()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    r = subprocess.run([BIN, "run", SITE, "--listen", f"127.0.0.1:{port}", "--headless"],
                       capture_output=True, text=True, timeout=120)
    s.close()
    assert r.returncode == 1, r.stderr
    assert f"127.0.0.1:{port} is already in use" in r.stderr, r.stderr
    assert "serving" not in r.stderr and "booting" not in r.stderr, r.stderr
    # The same for an IPv6 host address given with --listen6.
    s6 = socket.socket(socket.AF_INET6)
    s6.bind(("::1", 0))
    s6.listen()
    port6 = s6.getsockname()[1]
    r = subprocess.run([BIN, "run", SITE, "--listen", f"127.0.0.1:{free_port()}", "--listen6",
                        f"[::1]:{port6}", "--headless"], capture_output=True, text=True,
                       timeout=120)
    s6.close()
    assert r.returncode == 1, r.stderr
    assert f"[::1]:{port6} is already in use" in r.stderr, r.stderr
    assert "booting" not in r.stderr, r.stderr
    big = tmp_path / "big"
    big.mkdir()
    (big / "data.bin").write_bytes(os.urandom(20 << 20))
    r = subprocess.run([BIN, "run", big, "--mem", "32M", "--listen", f"127.0.0.1:{free_port()}",
                        "--headless"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "--mem 32M is too small" in r.stderr and "give --mem" in r.stderr, r.stderr
    assert "booting" not in r.stderr, r.stderr


def test_serving_only_when_ready_and_nothing_left_behind(tmp_path):
    """Also the IPv6 host address: `[::1]` with --listen's port answers every file
    byte-exact (relayed by `run` to QEMU's IPv4 forward), and the kernel takes an
    address from slirp's router advertisement (fec0::/64) as it would from any router."""
    require()
    port = free_port()
    serial = tmp_path / "console.log"
    p = start(SITE, "--listen", f"127.0.0.1:{port}", "--serial-log", serial, tmp=tmp_path)
    try:
        lines = wait_serving(p)
        # Said only once the kernel is ready: the very first request is answered.
        assert get(port)[0] == 200
        assert work_dirs(p.pid, tmp_path), "the kernel and site are in a work directory"
        assert f"over IPv6 http://[::1]:{port}/" in lines[-1], lines[-1]
        files = [f for f in SITE.rglob("*") if f.is_file() and f.name != "bareweb.toml"]
        assert len(files) > 3
        for f in files:
            path = "/" + f.relative_to(SITE).as_posix()
            with urllib.request.urlopen(f"http://[::1]:{port}{path}", timeout=60) as r:
                assert r.status == 200 and r.read() == f.read_bytes(), path
        deadline = time.time() + 60
        while "IPv6 fec0:" not in serial.read_text() and time.time() < deadline:
            time.sleep(0.5)
        assert re.search(r"IPv6 fec0:[0-9a-f:]+ on the link", serial.read_text()), \
            serial.read_text()
    finally:
        stop(p)
    assert not work_dirs(p.pid, tmp_path), "SIGHUP left the work directory behind"


def test_a_kernel_failure_is_said_as_one():
    require()
    r = subprocess.run([BIN, "run", SITE, "--append", "crash=panic", "--headless",
                        "--accel", "tcg", "--listen", f"127.0.0.1:{free_port()}"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 1
    assert "kernel stopped on a panic" in r.stderr, r.stderr
    assert "serving" not in r.stderr, r.stderr


def test_elf_and_iso_from_build_run_as_they_are(tmp_path):
    require()
    elf, iso, disk = tmp_path / "site.ELF", tmp_path / "site.ISO", tmp_path / "site.img"
    subprocess.run([BIN, "build", SITE, "-o", elf, "--iso", iso.with_suffix(".iso"),
                    "--disk", disk], check=True, capture_output=True, timeout=300)
    (tmp_path / "site.iso").rename(iso)
    for image in (elf, iso, disk):
        port = free_port()
        p = start(image, "--listen", f"127.0.0.1:{port}")
        try:
            wait_serving(p, limit=240)
            status, body = get(port)
            assert status == 200 and body == (SITE / "index.html").read_bytes()
        finally:
            stop(p)
    # An ISO carries its command line: options for it are a usage error.
    r = subprocess.run([BIN, "run", iso, "--port", "81"], capture_output=True, text=True)
    assert r.returncode == 2 and "ISO" in r.stderr, r.stderr


def test_a_uefi_image_says_its_machine_and_leaves_the_terminal_plain(tmp_path):
    """`build SITE -o site.iso` (no --ip: DHCP, as every bootable image) run with
    `--firmware uefi`: the start line names q35 with OVMF, OVMF's and GRUB's screen control
    does not reach the terminal, and the host's URL comes before the kernel's ready line
    with the guest's address."""
    require()
    if not os.path.exists("/usr/share/ovmf/OVMF.fd"):
        import pytest
        pytest.skip("OVMF is not installed (apt-get install ovmf)")
    iso = tmp_path / "site.iso"
    r = subprocess.run([BIN, "build", SITE, "-o", iso], capture_output=True, text=True,
                       timeout=300, check=True)
    assert '"ip=dhcp"' in r.stdout, r.stdout
    port = free_port()
    out = tmp_path / "console"
    with open(out, "wb") as f:
        p = subprocess.Popen([BIN, "run", iso, "--firmware", "uefi", "--accel", "tcg",
                              "--listen", f"127.0.0.1:{port}"], stdout=f, stderr=f)
        try:
            deadline = time.time() + 300
            while time.time() < deadline and b"bareweb: ready:" not in out.read_bytes():
                assert p.poll() is None, out.read_bytes()
                time.sleep(0.5)
            status, body = get(port)
            assert status == 200 and body == (SITE / "index.html").read_bytes()
        finally:
            stop(p)
    text = out.read_bytes()
    assert b"\x1b" not in text, text[:2000]
    lines = text.decode(errors="replace").splitlines()
    assert any("machine q35 with OVMF (UEFI)" in ln for ln in lines), lines[:5]
    host = next(i for i, ln in enumerate(lines) if f"serving at http://127.0.0.1:{port}/" in ln)
    guest = next(i for i, ln in enumerate(lines) if "bareweb: ready:" in ln)
    assert host < guest, lines[host - 2:guest + 2]


def test_dry_run_keeps_its_files_where_it_says(tmp_path):
    require()
    r = subprocess.run([BIN, "run", SITE, "--dry-run"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    kept = [w for w in r.stdout.split() if w.endswith("bareweb-kernel.elf")]
    assert kept and os.path.exists(kept[0]), r.stdout
    d = os.path.dirname(kept[0])
    assert d in r.stderr, r.stderr
    subprocess.run(["rm", "-rf", d], check=True)


def test_metrics_and_healthz_on_the_bare_machine(tmp_path):
    """The kernel's /metrics (Prometheus text, the stats JSON's counters per core) and
    /healthz: off in an image unless its bareweb.toml turns them on; on, the
    metrics only for `--stats-allow` (QEMU user networking's clients come from 10.0.2.2),
    the health check for everyone."""
    require()
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<!doctype html><title>m</title><p>metrics\n")
    (site / "bareweb.toml").write_text("metrics = true\nhealthz = true\n")

    def boot(site, *args):
        port = free_port()
        p = start(site, "--listen", f"127.0.0.1:{port}", *args)
        wait_serving(p)
        return p, port

    def status(port, path):
        try:
            return get(port, path)
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    p, port = boot(site, "--stats-allow", "10.0.2.2")
    try:
        assert get(port)[0] == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            body = r.read().decode()
        assert "# TYPE bareweb_http_requests_total counter" in body, body[:500]
        # The NIC's statistics registers' metrics (virtio-net has none: zero).
        assert "# TYPE bareweb_hw_rx_frames_total counter" in body, body[:500]
        m = re.search(r'^bareweb_http_requests_total\{core="0",role="[a-z+]+"\} (\d+)$', body, re.M)
        assert m and int(m.group(1)) >= 1, body[:500]
        stats = json.loads(get(port, "/.well-known/bareweb/stats")[1])
        assert stats["total"]["counters"]["http_requests"] >= int(m.group(1))
        assert get(port, "/healthz") == (200, b"ok\n")
    finally:
        stop(p)
    # A source outside --stats-allow: a 403 that says why, for the metrics and the JSON.
    p, port = boot(site, "--stats-allow", "192.168.0.0/16")
    try:
        assert status(port, "/metrics")[0] == 403
        assert status(port, "/.well-known/bareweb/stats")[0] == 403
        assert get(port, "/healthz") == (200, b"ok\n")
    finally:
        stop(p)
    # Without a configuration that turns them on, an image answers neither.
    p, port = boot(SITE)
    try:
        assert status(port, "/metrics")[0] == 404
        assert status(port, "/healthz")[0] == 404
    finally:
        stop(p)
