"""HTTPS on the bare machine: `bareweb run --tls-cert --tls-key` boots the kernel with the
certificate and key in its image (docs/kernel.md "TLS on the bare machine"), on a TAP in a
namespace, against real clients: `openssl s_client` (TLS 1.3 and 1.2, resumption with
`-sess_out`/`-sess_in`), `curl --cacert` byte-exact for every file of the example site,
plain HTTP beside it. Three kernels (QEMU instances are the cost): one core, two cores
per-queue on a multi-queue TAP, and two cores in network-core mode (core 0 dispatches the
HTTPS port's segments as the HTTP port's). The test makes its own CA and certificate with openssl
(ECDSA P-256), as tests/system/test_https.py does."""
import hashlib
import subprocess
import time

import pytest

from conftest import BIN, ROOT, SERVER_IP, SITE, Kernel

HTTPS = f"https://{SERVER_IP}"
GET_CLOSE = b"GET /index.html HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"


def site_files():
    return sorted(p for p in SITE.rglob("*") if p.is_file() and not p.name.startswith("."))


MODES = {"single": {}, "perqueue": dict(smp=2, multi_queue=True),
         "netcore": dict(smp=2, extra=["--mode", "netcore"])}


@pytest.fixture(scope="module", params=sorted(MODES))
def kernel(request, pki):
    kw = dict(MODES[request.param])
    extra = ["--tls-cert", pki / "p256.pem", "--tls-key", pki / "p256.key", *kw.pop("extra", [])]
    k = Kernel(extra=extra, **kw)
    k.pki = pki
    k.mode = request.param
    yield k
    k.close()


def s_client(k, *args, request=GET_CLOSE, timeout=120):
    r = subprocess.run(
        k.ns.cmd("openssl", "s_client", "-connect", f"{SERVER_IP}:443", "-CAfile",
                 k.pki / "ca.pem", "-verify_return_error", "-ign_eof", *args),
        input=request, capture_output=True, timeout=timeout)
    return r.returncode, (r.stdout + r.stderr).decode(errors="replace")


def test_boot_says_https_and_where_its_randomness_comes_from(kernel):
    log = kernel.log()
    assert "tls: HTTPS on port 443 (TLS 1.2 and 1.3)" in log, kernel.report()
    # QEMU TCG's `-cpu max` has RDRAND (no RDSEED); KVM's `host` on a CPU since Broadwell has both.
    assert "ChaCha20 seeded from RDSEED" in log or "seeded from RDRAND" in log, kernel.report()
    # TCG's `-cpu max` emulates AES-NI, PCLMULQDQ and SSSE3: the AES-GCM assembly runs.
    assert "AES-GCM on AES-NI" in log, kernel.report()
    assert kernel.stats_json()["mode"] == kernel.mode


@pytest.mark.parametrize("version,name", [("-tls1_3", "TLSv1.3"), ("-tls1_2", "TLSv1.2")])
def test_handshake_and_a_request_on_each_version(kernel, version, name):
    rc, out = s_client(kernel, version)
    assert rc == 0, out + kernel.report()
    assert "Verify return code: 0 (ok)" in out, out
    assert f"New, {name}, Cipher is" in out, out
    assert "HTTP/1.1 200 OK" in out, out
    assert out.count("DONE") <= 1 and "alert" not in out.lower(), out


def test_every_file_byte_exact_over_https_and_http_still_served(kernel):
    for p in site_files():
        path = "/" + p.relative_to(SITE).as_posix()
        r = subprocess.run(
            kernel.ns.cmd("curl", "-sS", "--fail", "--max-time", "120", "--cacert",
                          kernel.pki / "ca.pem", f"{HTTPS}{path}"),
            capture_output=True, timeout=180)
        assert r.returncode == 0, (path, r.stderr.decode(errors="replace"), kernel.report())
        assert hashlib.sha256(r.stdout).hexdigest() == hashlib.sha256(p.read_bytes()).hexdigest(), path
    # Plain HTTP on its port as before, the same bytes.
    index = SITE / "index.html"
    r = subprocess.run(kernel.ns.cmd("curl", "-sS", "--fail", "--max-time", "60",
                                     f"http://{SERVER_IP}/index.html"),
                       capture_output=True, timeout=90)
    assert r.returncode == 0 and r.stdout == index.read_bytes(), kernel.report()


@pytest.mark.parametrize("version", ["-tls1_3", "-tls1_2"])
def test_resumption_is_reused(kernel, version, tmp_path):
    sess = tmp_path / "sess.pem"
    rc, out = s_client(kernel, version, "-sess_out", sess)
    assert rc == 0 and "New, TLSv1." in out, out
    assert sess.exists() and sess.stat().st_size > 0, out
    rc, out = s_client(kernel, version, "-sess_in", sess)
    assert rc == 0, out
    assert "Reused, TLSv1." in out, out
    assert "HTTP/1.1 200 OK" in out, out


def test_connections_give_their_memory_back(kernel):
    """rustls allocates per connection; the kernel's late blocks are reused (mem.rs's
    size classes), so handshakes and requests leave no live block behind once closed."""
    def settled():
        return kernel.settled("tcbs_in_use", 0)

    for _ in range(3):
        assert s_client(kernel, "-tls1_3")[0] == 0
    before = settled()
    assert before["tcbs_in_use"] == 0, before
    for v in ["-tls1_3", "-tls1_2"] * 3:
        rc, out = s_client(kernel, v)
        assert rc == 0, out
    after = settled()
    assert after["tcbs_in_use"] == 0, after
    assert after["late_live"] == before["late_live"], (before, after, kernel.report())
    assert after["late_allocs"] > before["late_allocs"]  # they did allocate


def test_garbage_on_the_https_port_is_closed_and_serving_goes_on(kernel):
    """Bytes that are no TLS (plain HTTP, random bytes) get an alert or a close, never a
    stop; HTTPS and HTTP are served after."""
    code = ("import os, socket, sys\n"
            "for payload in (b'GET / HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n', os.urandom(3000),"
            " b'\\x16\\x03\\x01\\xff\\xff' + os.urandom(200)):\n"
            f"    s = socket.create_connection(('{SERVER_IP}', 443), timeout=60)\n"
            "    s.sendall(payload)\n"
            "    s.shutdown(socket.SHUT_WR)\n"
            "    while s.recv(4096): pass\n"
            "    s.close()\n")
    kernel.ns.run("python3", "-c", code, timeout=180)
    rc, out = s_client(kernel, "-tls1_3")
    assert rc == 0 and "HTTP/1.1 200 OK" in out, out + kernel.report()
    kernel.check_alive()


def test_a_built_image_serves_https_and_a_cpu_without_rdrand_gets_none(pki, tmp_path):
    """`bareweb build -o X.elf --tls-cert --tls-key`: the certificate and key ride in the
    ELF's embedded site segment; booted with QEMU -kernel alone it serves HTTPS. The same
    image on a CPU without RDRAND (TCG's `max` has no RDSEED) stops at boot saying why."""
    elf = tmp_path / "https.elf"
    subprocess.run([BIN, "build", SITE, "-o", elf, "--ip", f"{SERVER_IP}/24", "--gw", "none",
                    "--tls-cert", pki / "p256.pem", "--tls-key", pki / "p256.key"],
                   check=True, capture_output=True, timeout=300)
    k = Kernel(qemu=["-machine", "pc", "-bios", "qboot.rom", "-kernel", elf])
    try:
        k.pki = pki
        assert "(embedded)" in k.log() and "tls: HTTPS on port 443" in k.log(), k.report()
        rc, out = s_client(k, "-tls1_2")
        assert rc == 0 and "HTTP/1.1 200 OK" in out, out + k.report()
    finally:
        k.close()
    # QEMU takes the last -cpu given: the harness's `max`, then this one.
    k = Kernel(qemu=["-machine", "pc", "-bios", "qboot.rom", "-kernel", elf,
                     "-cpu", "max,rdrand=off,rdseed=off"], wait=False)
    try:
        deadline = time.time() + 120
        while "!!! FATAL" not in k.log() and time.time() < deadline:
            time.sleep(0.1)
        assert "tls: HTTPS refused: this CPU has neither RDSEED nor RDRAND" in k.log(), k.report()
        assert "bareweb: ready" not in k.log()
    finally:
        k.close(expect_failure=True)


RAW = ROOT / "tests" / "system" / "tls_raw.py"


def raw(k, *args, timeout=120):
    """tests/system/tls_raw.py in the kernel's namespace: hand-built TLS, one JSON line."""
    import json
    r = k.ns.run("python3", RAW, *args, timeout=timeout)
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_hostile_tls_oversized_records_renegotiation_and_half_hellos(kernel):
    """The bare machine's answers to hostile TLS, as serve's (tests/system/
    test_tls_hostile.py): a record over 2^14 + 256 gets a fatal decode_error and a close;
    TLS 1.2 renegotiation (`s_client` `R`) is refused, one handshake only; half a hello
    and a FIN is closed at once; clients that send half a ClientHello and stop are closed
    by the request timeout (10 s, from the connection's start); then HTTPS is served and
    no TCB is left."""
    for kind in ("overflow", "overflow_header"):
        r = raw(kernel, "hello", kind, "10")
        assert r["end"] in ("fin", "rst") and r["secs"] < 5, (r, kernel.report())
        assert len(r["records"]) == 1 and r["records"][0].get("alert") == [2, 50], r
    r = raw(kernel, "hello", "truncated_fin", "10")
    assert r["end"] in ("fin", "rst") and r["secs"] < 5 and r["records"] == [], r

    p = subprocess.Popen(
        kernel.ns.cmd("openssl", "s_client", "-connect", f"{SERVER_IP}:443", "-CAfile",
                      kernel.pki / "ca.pem", "-tls1_2"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        time.sleep(5)
        for line in (b"R\n", GET_CLOSE):
            if p.poll() is None:
                p.stdin.write(line)
                p.stdin.flush()
                time.sleep(3)
    except BrokenPipeError:
        pass
    finally:
        if p.poll() is None:
            p.kill()
        out = p.communicate(timeout=30)[0].decode(errors="replace")
    assert "RENEGOTIATING" in out and "no renegotiation" in out, out + kernel.report()
    assert out.count("Server certificate") == 1 and "HTTP/1.1 200" not in out, out

    r = raw(kernel, "slowloris", "5", "30", timeout=90)
    assert None not in r["closed"], (r, kernel.report())
    assert all(9.0 <= t <= 20.0 for t in r["closed"]), r
    rc, out = s_client(kernel, "-tls1_3")
    assert rc == 0 and "HTTP/1.1 200 OK" in out, out + kernel.report()
    assert kernel.settled("tcbs_in_use", 0)["tcbs_in_use"] == 0
