"""Whole-system tests of HTTPS on the host platform: `bareweb serve --tls-cert --tls-key`
on a TAP in a network namespace, against real clients: `openssl s_client` (TLS 1.3 and
1.2, each group and suite, resumption), curl byte-exact for every file of the example site
(one connection per file, and all on one keep-alive connection), Python's ssl for
pipelined requests, the HTTP → HTTPS redirect, the start-up refusals of bad
certificates and keys, and a renewed certificate put in service by SIGHUP. The test makes its own CA and certificates with openssl (ECDSA
P-256 and P-384)."""
import glob
import hashlib
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, SERVER_IP, SITE, Server

HTTPS = f"https://{SERVER_IP}"


def site_files():
    return sorted(p for p in SITE.rglob("*") if p.is_file() and not p.name.startswith("."))


def url_path(p):
    return "/" + p.relative_to(SITE).as_posix()


class HttpsServer(Server):
    """`bareweb serve` with HTTPS on 443; ready when HTTPS answers."""

    def __init__(self, pki, key="p256", extra=()):
        self.pki = pki
        super().__init__(extra=("--tls-cert", pki / f"{key}.pem", "--tls-key", pki / f"{key}.key",
                                *extra))

    def wait_ready(self):
        import time
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.output()}")
            r = self.ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                            "2", "--cacert", self.pki / "ca.pem", f"{HTTPS}/", check=False)
            if r.stdout == "200":
                return
            time.sleep(0.2)
        raise AssertionError(f"server not ready in 20 s: {self.output()}")

    def s_client(self, *args, request=b"", timeout=30):
        """`openssl s_client` to the HTTPS port, `request` written, the whole exchange."""
        r = subprocess.run(
            self.ns.cmd("openssl", "s_client", "-connect", f"{SERVER_IP}:443",
                        "-CAfile", self.pki / "ca.pem", "-verify_return_error", "-ign_eof",
                        *args),
            input=request, capture_output=True, timeout=timeout)
        return r.returncode, (r.stdout + r.stderr).decode(errors="replace")


@pytest.fixture(scope="module")
def https(pki):
    s = HttpsServer(pki, extra=("--http-redirect",))
    yield s
    s.close()


GET_CLOSE = b"GET /index.html HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"

TLS13_SUITES = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256"]
TLS12_SUITES = ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                "ECDHE-ECDSA-CHACHA20-POLY1305"]
GROUPS = {"X25519": "X25519", "P-256": "prime256v1"}


@pytest.mark.parametrize("group", sorted(GROUPS))
@pytest.mark.parametrize("suite", TLS13_SUITES)
def test_tls13_each_suite_and_group(https, suite, group):
    rc, out = https.s_client("-tls1_3", "-ciphersuites", suite, "-groups", group,
                             request=GET_CLOSE)
    assert rc == 0, out
    assert "Verify return code: 0 (ok)" in out, out
    assert f"New, TLSv1.3, Cipher is {suite}" in out, out
    assert f"Server Temp Key: {'X25519' if group == 'X25519' else 'ECDH, prime256v1'}" in out, out
    assert "ALPN" not in out or "No ALPN negotiated" in out
    assert "HTTP/1.1 200 OK" in out, out
    assert "<title>" in out or "<html" in out.lower(), out


@pytest.mark.parametrize("group", sorted(GROUPS))
@pytest.mark.parametrize("suite", TLS12_SUITES)
def test_tls12_each_suite_and_group(https, suite, group):
    # TLS 1.2 clients check the certificate's curve against their own groups (RFC 8422
    # §5.1): P-256 is offered after X25519, which the server prefers.
    groups = "X25519:P-256" if group == "X25519" else group
    rc, out = https.s_client("-tls1_2", "-cipher", suite, "-groups", groups, request=GET_CLOSE)
    assert rc == 0, out
    assert "Verify return code: 0 (ok)" in out, out
    assert f"New, TLSv1.2, Cipher is {suite}" in out, out
    assert f"Server Temp Key: {'X25519' if group == 'X25519' else 'ECDH, prime256v1'}" in out, out
    assert "HTTP/1.1 200 OK" in out, out


def test_alpn_http11(https):
    rc, out = https.s_client("-alpn", "http/1.1", request=GET_CLOSE)
    assert rc == 0 and "ALPN protocol: http/1.1" in out, out


@pytest.mark.parametrize("version", ["-tls1_3", "-tls1_2"])
def test_resumption_is_reused(https, version, tmp_path):
    sess = tmp_path / "sess.pem"
    rc, out = https.s_client(version, "-sess_out", sess, request=GET_CLOSE)
    assert rc == 0 and "HTTP/1.1 200 OK" in out, out
    assert sess.exists() and sess.stat().st_size > 0
    rc, out = https.s_client(version, "-sess_in", sess, request=GET_CLOSE)
    assert rc == 0, out
    assert "Reused, TLSv1." in out, out
    assert "HTTP/1.1 200 OK" in out, out


def test_curl_every_file_byte_exact_one_connection_each(https, tmp_path):
    for f in site_files():
        out = tmp_path / "body"
        r = https.ns.run("curl", "-sS", "--max-time", "60", "--cacert", https.pki / "ca.pem",
                         "-o", out, "-w", "%{http_code} %{ssl_verify_result}",
                         HTTPS + url_path(f))
        assert r.stdout == "200 0", (url_path(f), r.stdout, r.stderr)
        assert hashlib.sha256(out.read_bytes()).digest() == hashlib.sha256(f.read_bytes()).digest(), \
            url_path(f)


@pytest.mark.parametrize("version", ["--tlsv1.3", "--tls-max"])
def test_curl_every_file_on_one_keepalive_connection(https, version, tmp_path):
    files = site_files()
    args = ["curl", "-sS", "--max-time", "120", "--cacert", https.pki / "ca.pem",
            "-w", "%{http_code} %{num_connects}\\n"]
    args += ["--tlsv1.3"] if version == "--tlsv1.3" else ["--tlsv1.2", "--tls-max", "1.2"]
    for i, f in enumerate(files):
        args += ["-o", tmp_path / f"f{i}", HTTPS + url_path(f)]
    r = https.ns.run(*args)
    lines = r.stdout.split()
    codes, connects = lines[0::2], lines[1::2]
    assert codes == ["200"] * len(files), r.stdout + r.stderr
    assert sum(int(c) for c in connects) == 1, f"one connection for all: {r.stdout}"
    for i, f in enumerate(files):
        assert (tmp_path / f"f{i}").read_bytes() == f.read_bytes(), url_path(f)


def test_pipelined_requests_in_one_record(https):
    """Three requests in one write (one TLS record), over Python's ssl."""
    code = f"""
import socket, ssl, sys
ctx = ssl.create_default_context(cafile={str(https.pki / 'ca.pem')!r})
s = ctx.wrap_socket(socket.create_connection(({SERVER_IP!r}, 443), timeout=20),
                    server_hostname={SERVER_IP!r})
s.sendall(b"GET /index.html HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n"
          b"HEAD /files/4k.html HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n"
          b"GET /files/1m.bin HTTP/1.1\\r\\nHost: a\\r\\nConnection: close\\r\\n\\r\\n")
data = b""
while True:
    try:
        b = s.recv(65536)
    except ssl.SSLEOFError:
        sys.exit("no close_notify")
    if not b:
        break
    data += b
sys.stdout.write(f"{{data.count(b'HTTP/1.1 200 OK')}} {{len(data)}}")
"""
    r = https.ns.run("python3", "-c", code)
    count, total = map(int, r.stdout.split())
    assert count == 3, r.stdout + r.stderr
    assert total > 1024 * 1024 + 1225, r.stdout


def test_http_redirects_to_https_except_acme(https):
    r = https.ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
                     f"http://{SERVER_IP}/files/4k.html?x=1")
    assert r.stdout == f"308 https://{SERVER_IP}/files/4k.html?x=1", r.stdout
    r = https.ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                     f"http://{SERVER_IP}/.well-known/acme-challenge/token")
    assert r.stdout == "404", "the challenge path is served over plain HTTP, not redirected"
    # curl -L follows it to the same bytes over HTTPS.
    r = subprocess.run(https.ns.cmd("curl", "-sSL", "--cacert", https.pki / "ca.pem",
                                    f"http://{SERVER_IP}/files/4k.html"),
                       capture_output=True, check=True)
    assert r.stdout == (SITE / "files" / "4k.html").read_bytes()


def test_garbage_on_the_tls_port_is_closed_and_the_server_serves_on(https):
    code = f"""
import socket
s = socket.create_connection(({SERVER_IP!r}, 443), timeout=10)
s.sendall(b"GET / HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n")
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(data[:1].hex(), len(data))
"""
    r = https.ns.run("python3", "-c", code)
    first, n = r.stdout.split()
    assert first in ("15", "") and int(n) <= 7, f"an alert at most, then the close: {r.stdout}"
    r = https.ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                     https.pki / "ca.pem", f"{HTTPS}/")
    assert r.stdout == "200"


def test_p384_certificate_and_tls13_only(pki):
    s = HttpsServer(pki, key="p384", extra=("--tls-min", "1.3"))
    try:
        rc, out = s.s_client("-tls1_3", request=GET_CLOSE)
        assert rc == 0 and "HTTP/1.1 200 OK" in out, out
        assert "Peer signature type: ECDSA" in out, out
        assert "Peer signing digest: SHA384" in out and "id-ecPublicKey, 384" in out, out
        rc, out = s.s_client("-tls1_2", request=GET_CLOSE)
        assert "HTTP/1.1 200 OK" not in out, "TLS 1.2 refused under --tls-min 1.3"
        assert "alert protocol version" in out or "no protocols available" in out \
            or "wrong version" in out or rc != 0, out
    finally:
        s.close()


@pytest.mark.parametrize("mode", [
    ("--cores", "2"),
    ("--cores", "2", "--mode", "netcore"),
    ("--runner", "pool", "--threads", "2"),
    ("--runner", "tasks", "--threads", "2"),
], ids=["perqueue", "netcore", "pool", "tasks"])
def test_many_cores(pki, mode, tmp_path):
    """Per queue (a TAP queue per core), network core (core 0 dispatches the HTTPS port to
    the HTTP cores) and two parallel runners (the split round; `tasks` steps a connection
    only when a segment gives it work, which caught records left in flight after their
    response was sealed): 1 MiB byte-exact four times, on four connections, in
    parallel."""
    s = HttpsServer(pki, extra=mode)
    try:
        procs = [subprocess.Popen(s.ns.cmd("curl", "-sS", "--max-time", "20", "--cacert",
                                           pki / "ca.pem", "-o", tmp_path / f"b{i}",
                                           f"{HTTPS}/files/1m.bin"))
                 for i in range(4)]
        assert [p.wait(90) for p in procs] == [0] * 4
        want = (SITE / "files" / "1m.bin").read_bytes()
        assert all((tmp_path / f"b{i}").read_bytes() == want for i in range(4))
    finally:
        s.close()


def said(s, text, after, timeout=15):
    """Waits until serve's output after offset `after` holds `text`; returns it."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = s.output()[after:]
        if text in out:
            return out
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not said: {s.output()[after:][-2000:]}")


KEEP_ALIVE = """
import os, socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[1])
c = ctx.wrap_socket(socket.create_connection((sys.argv[2], 443), timeout=20),
                    server_hostname=sys.argv[2])
def get():
    c.sendall(b"HEAD /index.html HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n")
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        head += c.recv(65536)
    return head.split(b" ")[1].decode()
first = get()
print(first, flush=True)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.05)
print(first, get(), flush=True)
"""


def test_sighup_puts_a_renewed_certificate_in_service(pki, tmp_path):
    """The certificate and key files replaced (a renewal), then SIGHUP: new connections get
    the new certificate, a keep-alive connection made before goes on being served, and a
    key that does not match the new certificate refuses the reload (said, with the file),
    the certificate in service staying."""
    live = tmp_path / "live"
    live.mkdir()
    shutil.copy(pki / "p256.pem", live / "p256.pem")
    shutil.copy(pki / "p256.key", live / "p256.key")
    shutil.copy(pki / "ca.pem", live / "ca.pem")  # what s_client and curl trust
    s = HttpsServer(live)
    try:
        rc, out = s.s_client(request=GET_CLOSE)
        assert rc == 0 and "id-ecPublicKey, 256" in out, out
        go = tmp_path / "go"
        held = subprocess.Popen(s.ns.cmd("python3", "-c", KEEP_ALIVE, pki / "ca.pem", SERVER_IP,
                                         go), stdout=subprocess.PIPE, text=True)
        assert held.stdout.readline().strip() == "200"
        # The renewal: other files under the same names (P-384 here, to tell them apart).
        shutil.copy(pki / "p384.pem", live / "p256.pem")
        shutil.copy(pki / "p384.key", live / "p256.key")
        at = len(s.output())
        s.proc.send_signal(signal.SIGHUP)
        out = said(s, "reloaded: generation", at)
        assert f"certificate {live / 'p256.pem'} read again, valid for 29 more days" in out \
            or f"certificate {live / 'p256.pem'} read again, valid for 30 more days" in out, out
        rc, out = s.s_client(request=GET_CLOSE)
        assert rc == 0 and "id-ecPublicKey, 384" in out and "HTTP/1.1 200 OK" in out, out
        go.touch()
        assert held.communicate(timeout=30)[0].split() == ["200", "200"]
        # A key that does not match the certificate: refused, the P-384 one stays.
        shutil.copy(pki / "p256.key", live / "p256.key")
        at = len(s.output())
        s.proc.send_signal(signal.SIGHUP)
        out = said(s, "reload refused", at)
        assert f"--tls-key {live / 'p256.key'}" in out and "does not match" in out, out
        rc, out = s.s_client(request=GET_CLOSE)
        assert rc == 0 and "id-ecPublicKey, 384" in out and "HTTP/1.1 200 OK" in out, out
    finally:
        s.close()


def serve_refuses(pki, cert, key):
    """`bareweb serve` with these files: it must exit at once, saying why."""
    r = subprocess.run([BIN, "serve", SITE, "--tap", "bwtlsx", "--tls-cert", cert,
                        "--tls-key", key], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0, r.stdout + r.stderr
    return r.stderr


def test_bad_certificates_and_keys_are_refused_at_start(pki):
    why = serve_refuses(pki, pki / "rsa.pem", pki / "rsa.key")
    assert f"--tls-key {pki / 'rsa.key'}" in why and "RSA keys are refused" in why, why
    assert "prime256v1" in why, "says what to use instead"
    why = serve_refuses(pki, pki / "p256.pem", pki / "p384.key")
    assert "does not match the certificate" in why, why
    why = serve_refuses(pki, pki / "san.cnf", pki / "p256.key")
    assert f"--tls-cert {pki / 'san.cnf'}" in why and "no PEM CERTIFICATE" in why, why
    why = serve_refuses(pki, pki / "p256.pem", pki / "nothing.key")
    assert f"--tls-key {pki / 'nothing.key'}: cannot read it" in why, why
    key = (pki / "p256.key").read_text()
    assert key.split("\n")[1] not in why, "the key never reaches a message"


def test_expired_certificate_is_warned_about(pki):
    s = Server(extra=("--tls-cert", pki / "expired.pem", "--tls-key", pki / "p256.key"))
    try:
        assert "expired" in s.output() and "warning" in s.output(), s.output()
    finally:
        s.close()


def test_build_writes_a_key_holding_image_0600_and_run_checks_as_serve(pki, tmp_path):
    """`build` and `run` carry the certificate and key into the bare machine's image (the
    kernel's HTTPS: tests/kernel/test_https.py): the image holds the key, so it is written
    with mode 0600 and `build` says so; the files are checked at start as serve checks
    them, naming the file; a built image cannot be given another key by `run`."""
    import stat
    out = tmp_path / "https.elf"
    r = subprocess.run([BIN, "build", SITE, "-o", out, "--tls-cert", pki / "p256.pem",
                        "--tls-key", pki / "p256.key"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"{out}: holds the private key of --tls-key {pki / 'p256.key'}" in r.stdout, r.stdout
    assert "mode 0600" in r.stdout, r.stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    image = out.read_bytes()
    assert (pki / "p256.key").read_bytes() in image and (pki / "p256.pem").read_bytes() in image
    assert b"tls_cert=p256.pem tls_key=p256.key" in image  # the built-in command line
    key = (pki / "p256.key").read_text()
    work_dirs = set(glob.glob(f"{tempfile.gettempdir()}/bareweb-run-*"))
    for cmd in (["run", SITE, "--dry-run"], ["build", SITE, "-o", tmp_path / "rsa.elf"]):
        r = subprocess.run([BIN, *cmd, "--tls-cert", pki / "rsa.pem", "--tls-key",
                            pki / "rsa.key"], capture_output=True, text=True, timeout=120)
        assert r.returncode != 0, (cmd, r.stdout)
        assert f"--tls-key {pki / 'rsa.key'}" in r.stderr and "RSA" in r.stderr, r.stderr
        r = subprocess.run([BIN, *cmd, "--tls-cert", pki / "p256.pem", "--tls-key",
                            pki / "p384.key"], capture_output=True, text=True, timeout=120)
        assert r.returncode != 0 and "does not match the certificate" in r.stderr, r.stderr
        assert key.split("\n")[1] not in r.stderr + r.stdout, "the key never reaches a message"
    assert not (tmp_path / "rsa.elf").exists()
    # A dry run that failed leaves no work directory behind.
    assert set(glob.glob(f"{tempfile.gettempdir()}/bareweb-run-*")) <= work_dirs
    r = subprocess.run([BIN, "run", out, "--tls-cert", pki / "p256.pem", "--tls-key",
                        pki / "p256.key"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "`bareweb build`" in r.stderr, r.stderr


def test_run_serves_https_on_listen_https_with_user_networking(pki, tmp_path):
    """A new user's HTTPS on the bare machine, no root: `bareweb run --tls-cert --tls-key`
    with QEMU's user networking forwards `--listen-https` (a free loopback port here) to
    the kernel's HTTPS port, beside `--listen` for plain HTTP; curl trusts the test CA and
    gets every file of the example site byte-exact over one connection. The kernel's
    deepest stack use through it (a TLS handshake under the core's loop, the stats line
    of `log=stats`) stays within three quarters of its 128 KiB stack: an overflow is a
    double fault, and it came once within a few KiB of the old 64 KiB."""
    from test_browser import free_port, until_serving
    port, tls_port = free_port(), free_port()
    serial = tmp_path / "serial.log"
    p = subprocess.Popen([BIN, "run", SITE, "--listen", f"127.0.0.1:{port}", "--listen-https",
                          f"127.0.0.1:{tls_port}", "--tls-cert", pki / "p256.pem", "--tls-key",
                          pki / "p256.key", "--headless", "--append", "log=stats",
                          "--serial-log", serial],
                         stderr=subprocess.PIPE, text=True)
    try:
        lines = until_serving(p)
        files = site_files()
        args = []
        for i, f in enumerate(files):
            args += [f"https://localhost:{tls_port}{url_path(f)}", "-o", tmp_path / str(i)]
        r = subprocess.run(["curl", "-sS", "--fail", "--max-time", "120", "--cacert",
                            pki / "ca.pem", "--resolve", f"localhost:{tls_port}:127.0.0.1", *args],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr + "".join(lines)
        for i, f in enumerate(files):
            assert (tmp_path / str(i)).read_bytes() == f.read_bytes(), f
        plain = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                                "--max-time", "30", f"http://127.0.0.1:{port}/"],
                               capture_output=True, text=True)
        assert plain.stdout == "200", plain.stderr
        # The stats line comes once a second: one after the fetches.
        deadline = time.time() + 10
        used = []
        while time.time() < deadline:
            time.sleep(1.2)
            used = [int(v) for v in re.findall(r"stack_max=(\d+)", serial.read_text())]
            if len(used) >= 2:
                break
        assert used, serial.read_text()[-3000:]
        assert max(used) < 96 * 1024, f"stack_max={max(used)} of 128 KiB"
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(30)
