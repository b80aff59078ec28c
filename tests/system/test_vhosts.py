"""Whole-system tests of virtual hosts on `bareweb serve`, fetched with curl: examples/vhosts
as shipped (two sites chosen by the Host field, an alias, each site's own rules, the
default site for other hosts and for HTTP/1.0 without Host, the server's own pages on
every host), a configuration without a default (421 Misdirected Request), and hostile
Host fields (two of them: 400; long or odd: no crash)."""
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from conftest import ROOT, SERVER_IP, Server

URL = f"http://{SERVER_IP}"
EXAMPLE = ROOT / "examples" / "vhosts"


def get(server, host, path="/", *args):
    """(status, fields as a lower-case dict, body) of one GET with curl and `Host: host`."""
    hdr = ["-H", f"Host: {host}"] if host is not None else []
    r = server.ns.run("curl", "-sS", "-D", "-", *hdr, *args, URL + path)
    text = r.stdout.replace("\r\n", "\n")
    top, _, body = text.partition("\n\n")
    lines = top.split("\n")
    fields = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        fields[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), fields, body


def raw(server, request):
    """The server's answer to `request` sent as bytes over one connection (python in the
    namespace), as text."""
    script = (
        "import socket,sys\n"
        f"s=socket.create_connection(('{SERVER_IP}',80),timeout=5)\n"
        "s.sendall(sys.stdin.buffer.read())\n"
        "out=b''\n"
        "while True:\n"
        "    b=s.recv(65536)\n"
        "    if not b: break\n"
        "    out+=b\n"
        "sys.stdout.buffer.write(out)\n"
    )
    r = subprocess.run(server.ns.cmd("python3", "-c", script), input=request,
                       capture_output=True, timeout=30, check=True)
    return r.stdout.decode("latin-1")


@pytest.fixture(scope="module")
def vhosts():
    s = Server(site=EXAMPLE, prefix="bwv")
    yield s
    s.close()


def test_each_host_gets_its_site_with_its_own_rules(vhosts):
    status, fields, body = get(vhosts, "blog.example")
    assert status == 200 and "<h1>The blog</h1>" in body
    assert fields["x-site"] == "blog"
    status, fields, body = get(vhosts, "shop.example")
    assert status == 200 and "<h1>The shop</h1>" in body
    assert fields["x-site"] == "shop"
    # The alias, any case, a port and a trailing dot: the same site.
    for host in ["www.shop.example", "WWW.Shop.Example:80", "shop.example."]:
        status, _, body = get(vhosts, host)
        assert status == 200 and "<h1>The shop</h1>" in body, host
    # Each site's own configuration: the shop's listing and redirect, the blog's rewrite.
    status, _, body = get(vhosts, "shop.example", "/products/")
    assert status == 200 and "teapot.txt" in body
    status, fields, _ = get(vhosts, "shop.example", "/buy")
    assert status == 302 and fields["location"] == "/products/"
    status, _, body = get(vhosts, "blog.example", "/posts/first")
    assert status == 200 and "First post" in body
    # Not the other site's: the blog has no listing, no /buy; the shop its own 404 page.
    assert get(vhosts, "blog.example", "/products/")[0] == 404
    assert get(vhosts, "blog.example", "/buy")[0] == 404
    status, _, body = get(vhosts, "shop.example", "/posts/first")
    assert status == 404 and "The shop has no such page" in body


def test_other_hosts_and_no_host_get_the_default_site(vhosts):
    for host in ["other.example", SERVER_IP, "[::1]:8080"]:
        status, fields, body = get(vhosts, host)
        assert status == 200 and "<h1>The blog</h1>" in body, host
    status, _, body = get(vhosts, None, "/", "--http1.0", "-H", "Host:")
    assert status == 200 and "<h1>The blog</h1>" in body


def test_the_server_pages_answer_on_every_host(vhosts):
    for host in ["shop.example", "blog.example", "other.example"]:
        status, _, body = get(vhosts, host, "/healthz")
        assert status == 200, host
        status, _, body = get(vhosts, host, "/metrics")
        assert status == 200 and "bareweb_" in body, host


def test_hostile_host_fields(vhosts):
    two = raw(vhosts, b"GET / HTTP/1.1\r\nHost: shop.example\r\nHost: blog.example\r\n\r\n")
    assert two.startswith("HTTP/1.1 400 "), two[:80]
    for host in [b"x" * 1500, b"a.example:99999999999999999999", b"[::1", b"%00.example",
                 b"\xff\xfe.example", b"a..b", b"."]:
        out = raw(vhosts, b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
        assert out.startswith("HTTP/1.1 "), (host[:40], out[:80])
    # Still serving.
    assert get(vhosts, "shop.example")[0] == 200


TOP = f"""\
[[sites]]
host = "{SERVER_IP}"
root = "ip"

[[sites]]
host = "a.example"
root = "a"
"""


def test_without_a_default_other_hosts_get_421():
    d = pathlib.Path(tempfile.mkdtemp(prefix="bw-vhosts-"))
    try:
        (d / "bareweb.toml").write_text(TOP)
        (d / "ip").mkdir()
        (d / "ip" / "index.html").write_text("by address\n")
        (d / "a").mkdir()
        (d / "a" / "index.html").write_text("site a\n")
        s = Server(site=d, prefix="bwv")
        try:
            assert get(s, "a.example")[2] == "site a\n"
            assert get(s, SERVER_IP)[2] == "by address\n"
            status, _, body = get(s, "b.example")
            assert status == 421 and "421 Misdirected Request" in body
            status, _, _ = get(s, None, "/", "--http1.0", "-H", "Host:")
            assert status == 421
            # The server's own pages still answer a host no site names.
            assert get(s, "b.example", "/healthz")[0] == 200
            out = s.output()
            assert "2 sites by Host" in out and "other hosts get 421" in out, out
        finally:
            s.close()
    finally:
        shutil.rmtree(d)
