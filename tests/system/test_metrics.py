"""The server's own pages as an operator meets them on `bareweb serve`: /metrics is a scrape
Prometheus' own checker accepts, and the stats page, its JSON and /metrics answer one set
of clients (by default the machine serve runs on, the TAP's host side) while every other
client gets a plain 403 for all three."""
import json
import shutil
import subprocess

import pytest

from conftest import HOST_IP, SERVER_IP, Server

URL = f"http://{SERVER_IP}"
PAGES = ("/.well-known/bareweb/", "/.well-known/bareweb/stats", "/metrics")


def fetch(s, path, *curl):
    """(status, content type, body) of a GET from the server's namespace."""
    r = s.ns.run("curl", "-sS", "--max-time", "10", "-o", "-", "-w",
                 "\n%{http_code} %{content_type}", *curl, URL + path)
    body, _, tail = r.stdout.rpartition("\n")
    code, _, ctype = tail.partition(" ")
    return int(code), ctype, body


@pytest.mark.parametrize("cores", [["--cores", "1"], ["--cores", "2", "--mode", "netcore"]])
def test_a_scrape_passes_promtool(cores):
    """`promtool check metrics` (Prometheus' own linter and parser) finds nothing to say
    about a real scrape, with one core and with the network core's rows (whose UDP
    figures once repeated an HTTP core's family under a second TYPE line)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool missing: cargo xtask setup (Debian package prometheus)")
    s = Server(extra=cores, prefix="bwm")
    try:
        s.ns.run("curl", "-sS", "-o", "/dev/null", URL + "/")
        code, ctype, body = fetch(s, "/metrics")
        assert code == 200 and ctype.startswith("text/plain; version=0.0.4"), (code, ctype)
        r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr
        assert "# TYPE bareweb_http_requests_total counter" in body
        assert "# HELP bareweb_http_requests_total HTTP requests answered" in body
        if "netcore" in cores:
            assert 'bareweb_netcore_udp_no_id_total{core="0",role="net"}' in body
    finally:
        s.close()


def test_the_stats_are_for_the_host_side_only_by_default():
    """No --stats-allow and no [stats] allow: the host side of the TAP (the machine serve
    runs on) reads the page, its JSON and the metrics; a second address on the link gets
    403 with a plain explanation for all three, HTML included; /healthz answers both."""
    s = Server(prefix="bwd")
    try:
        assert f"answer {HOST_IP}/32 (others get 403" in s.output(), s.output()
        s.ns.ip("addr", "add", "10.0.0.200/24", "dev", "bw0")
        for path in PAGES:
            code, _, body = fetch(s, path)
            assert code == 200, (path, code, body[:300])
            code, ctype, body = fetch(s, path, "--interface", "10.0.0.200")
            assert code == 403, (path, code)
            assert ctype == "text/plain; charset=utf-8", (path, ctype)
            assert body.startswith("403 Forbidden: this server's statistics"), body
            assert f"answer only {HOST_IP}/32, and this client is 10.0.0.200." in body, body
            assert "--stats-allow" in body and "<" not in body, body
        # The same page under another spelling is refused too.
        code, _, _ = fetch(s, "/.well-known//barewe%62/", "--path-as-is",
                           "--interface", "10.0.0.200")
        assert code == 403
        for src in ((), ("--interface", "10.0.0.200")):
            assert fetch(s, "/healthz", *src)[:1] == (200,)
    finally:
        s.close()


def test_stats_allow_widens_to_a_network_for_page_json_and_metrics():
    """--stats-allow 0.0.0.0/0 opens all three to everyone, explicitly."""
    s = Server(extra=["--stats-allow", "0.0.0.0/0"], prefix="bwe")
    try:
        s.ns.ip("addr", "add", "10.0.0.200/24", "dev", "bw0")
        for path in PAGES:
            code, _, body = fetch(s, path, "--interface", "10.0.0.200")
            assert code == 200, (path, code)
        json.loads(fetch(s, PAGES[1], "--interface", "10.0.0.200")[2])
    finally:
        s.close()
