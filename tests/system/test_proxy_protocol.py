"""The PROXY protocol behind a real balancer: HAProxy (Debian's, started by the test) in
the namespace in front of `bareweb serve --proxy-protocol`, with `send-proxy` (version 1)
and `send-proxy-v2`, on the HTTP port and (TCP mode, the header before the TLS bytes) on
the HTTPS port. curl through HAProxy: the access log names curl's own address, not
HAProxy's. A direct connection from the balancer's address without a header is reset and
counted (`proxy_missing`); one from elsewhere with a header is refused as forbidden."""
import shutil
import subprocess
import time

import pytest

from conftest import SERVER_IP, Server

# HAProxy connects from this second address of the namespace's side of the TAP, the one
# trusted to send headers; the ready check and other clients use HOST_IP (10.0.0.1).
BALANCER_IP = "10.0.0.3"
# curl talks to HAProxy from this loopback address: the one the log must show.
CURL_IP = "127.0.0.55"

CONFIG = """
global
    log stderr format raw local0
defaults
    mode tcp
    timeout connect 2s
    timeout client 5s
    timeout server 5s
frontend v1
    bind 127.0.0.1:8081
    default_backend v1
frontend v2
    bind 127.0.0.1:8082
    default_backend v2
frontend tls
    bind 127.0.0.1:8443
    default_backend tls
backend v1
    server s {server}:80 source {balancer} send-proxy
backend v2
    server s {server}:80 source {balancer} send-proxy-v2
backend tls
    server s {server}:443 source {balancer} send-proxy-v2
"""


@pytest.fixture(scope="module")
def balanced(tmp_path_factory):
    if shutil.which("haproxy") is None:
        pytest.fail("haproxy missing: `cargo xtask setup` installs it")
    d = tmp_path_factory.mktemp("haproxy")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", d / "key.pem",
                    "-out", d / "cert.pem", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True)
    s = Server(extra=("--proxy-protocol", f"{BALANCER_IP}/32", "--access-log",
                      "--tls-cert", d / "cert.pem", "--tls-key", d / "key.pem"))
    s.cert = d / "cert.pem"
    cfg = d / "h.cfg"
    cfg.write_text(CONFIG.format(server=SERVER_IP, balancer=BALANCER_IP))
    s.ns.ip("addr", "add", f"{BALANCER_IP}/24", "dev", "bw0")
    s.ns.ip("addr", "add", f"{CURL_IP}/8", "dev", "lo")
    log = open(f"/tmp/{s.ns.name}-haproxy.log", "w+")
    h = subprocess.Popen(s.ns.cmd("haproxy", "-f", cfg, "-db"), stdout=log,
                         stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            if s.ns.run("ss", "-Htln", "( sport = :8082 )", check=False).stdout.strip():
                break
            time.sleep(0.1)
        else:
            raise AssertionError("haproxy did not listen")
        yield s
    finally:
        h.terminate()
        h.wait(10)
        log.close()
        s.close()


def curl(s, url, *extra):
    return s.ns.run("curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}",
                    *extra, url, check=False)


def log_lines(s, path):
    return [l for l in s.output().splitlines() if f'"GET {path} HTTP/1.1"' in l]


@pytest.mark.parametrize("port,path", [(8081, "/?send-proxy"), (8082, "/?send-proxy-v2")])
def test_access_log_names_the_client_behind_haproxy(balanced, port, path):
    r = curl(balanced, f"http://127.0.0.1:{port}{path}", "--interface", CURL_IP)
    assert r.stdout == "200", r
    deadline = time.time() + 5
    while not log_lines(balanced, path) and time.time() < deadline:
        time.sleep(0.05)
    lines = log_lines(balanced, path)
    assert len(lines) == 1, balanced.output()[-2000:]
    assert lines[0].startswith(f"{CURL_IP} - - ["), lines[0]
    assert BALANCER_IP not in lines[0]


def test_https_behind_haproxy_in_tcp_mode_names_the_client(balanced):
    path = "/?tls-send-proxy-v2"
    r = curl(balanced, f"https://localhost:8443{path}", "--interface", CURL_IP,
             "--cacert", balanced.cert, "--resolve", "localhost:8443:127.0.0.1")
    assert r.stdout == "200", r
    deadline = time.time() + 5
    while not log_lines(balanced, path) and time.time() < deadline:
        time.sleep(0.05)
    lines = log_lines(balanced, path)
    assert len(lines) == 1, balanced.output()[-2000:]
    assert lines[0].startswith(f"{CURL_IP} - - ["), lines[0]


def test_headerless_connection_from_the_balancer_is_reset_and_counted(balanced):
    # curl from the balancer's own address, straight to the server: no header.
    r = curl(balanced, f"http://{SERVER_IP}/?direct", "--interface", BALANCER_IP)
    assert r.stdout == "000", r
    assert not log_lines(balanced, "/?direct")


def test_header_from_an_untrusted_address_is_forbidden(balanced):
    # 10.0.0.1 (the ready check's address) may not name a client.
    code = (
        "import socket;"
        f"c=socket.create_connection(('{SERVER_IP}',80),timeout=5);"
        "c.sendall(b'PROXY TCP4 192.0.2.1 10.0.0.2 1 80\\r\\nGET /?forged HTTP/1.1\\r\\n\\r\\n');"
        "print(repr(c.recv(100)))"
    )
    r = balanced.ns.run("python3", "-c", code, check=False)
    assert "192.0.2.1" not in balanced.output()
    assert "HTTP/1.1" not in r.stdout, r
    assert not log_lines(balanced, "/?forged")


def test_counters_say_why(balanced):
    # Last in this module: stopping the server prints its counters.
    counters = balanced.stop()
    assert counters["proxy_headers"] >= 3, counters
    assert counters["proxy_missing"] >= 1, counters
    assert counters["proxy_forbidden"] >= 1, counters
    assert counters["proxy_malformed"] == counters["proxy_too_long"] == 0, counters
