"""HTTP and HTTPS over IPv6 on the host platform: `bareweb serve` on a TAP takes its
link-local address (RFC 7217, DAD) and a global one from dnsmasq's router advertisements
(SLAAC, 2001:db8:1::/64), and Linux in the namespace fetches every file of the example
site byte-exact over both, with curl: one connection per file, all on one keep-alive
connection, and over HTTPS (the test CA's certificate, for `localhost`, reached at the
global address). A port the server does not serve is refused at once; the access log
names the IPv6 client. A configured address (`--ip6 ADDR/PREFIX`) serves in place of
advertised ones, and one another host holds is not taken. test_engine's HTTP checks and
test_browser's headless Chromium run again over IPv6.
"""
import hashlib
import time

import pytest

from conftest import SITE
from test_https import HttpsServer, site_files, url_path
from test_ipv6_link import SECRET, global_addr, router, server_addr

GLOBAL_PREFIX = "2001:db8:1:"
ROUTER = "2001:db8:1::1"


def sha(b):
    return hashlib.sha256(b).hexdigest()


@pytest.fixture(scope="module")
def v6(pki, tmp_path_factory):
    """One server for the module: HTTP on 80, HTTPS on 443, an access log; its link-local
    and global addresses once both passed DAD."""
    log = tmp_path_factory.mktemp("v6log") / "access.log"
    s = HttpsServer(pki, extra=("--ip6-secret", SECRET, "--access-log-file", log))
    s.access_log = log
    dns = None
    try:
        s.ll = server_addr(s.ns)
        s.ns.ip("-6", "addr", "add", f"{ROUTER}/64", "dev", "bw0", "nodad")
        dns = router(s.ns)
        s.glob = global_addr(s)
        yield s
    finally:
        if dns:
            dns.terminate()
            dns.wait(5)
        s.close()


def curl(s, *args, timeout=60):
    return s.ns.run("curl", "-sS", "-g", "--max-time", str(timeout), *args, check=False)


def test_every_file_byte_exact_over_the_link_local_address(v6, tmp_path):
    for f in site_files():
        out = tmp_path / "body"
        r = curl(v6, "-o", out, "-w", "%{http_code} %{remote_ip}",
                 f"http://[{v6.ll}%bw0]{url_path(f)}")
        assert r.stdout == f"200 {v6.ll}", (url_path(f), r.stdout, r.stderr)
        assert sha(out.read_bytes()) == sha(f.read_bytes()), url_path(f)


def test_every_file_on_one_keep_alive_connection_over_the_global_address(v6, tmp_path):
    files = site_files()
    args = ["-w", "%{http_code} %{num_connects}\\n"]
    for i, f in enumerate(files):
        args += ["-o", tmp_path / f"f{i}", f"http://[{v6.glob}]{url_path(f)}"]
    r = curl(v6, *args, timeout=120)
    words = r.stdout.split()
    assert words[0::2] == ["200"] * len(files), r.stdout + r.stderr
    assert sum(int(c) for c in words[1::2]) == 1, f"one connection for all: {r.stdout}"
    for i, f in enumerate(files):
        assert (tmp_path / f"f{i}").read_bytes() == f.read_bytes(), url_path(f)


def test_https_every_file_byte_exact_over_ipv6(v6, tmp_path):
    for f in site_files():
        out = tmp_path / "body"
        r = curl(v6, "--cacert", v6.pki / "ca.pem", "--resolve", f"localhost:443:[{v6.glob}]",
                 "-o", out, "-w", "%{http_code} %{ssl_verify_result} %{remote_ip}",
                 f"https://localhost{url_path(f)}")
        assert r.stdout == f"200 0 {v6.glob}", (url_path(f), r.stdout, r.stderr)
        assert sha(out.read_bytes()) == sha(f.read_bytes()), url_path(f)


def test_a_port_not_served_is_refused_at_once(v6):
    t = time.time()
    r = curl(v6, "-o", "/dev/null", f"http://[{v6.glob}]:81/", timeout=5)
    assert r.returncode == 7, (r.returncode, r.stderr)  # "Couldn't connect": a RST came
    assert time.time() - t < 3


def test_the_access_log_names_the_ipv6_client(v6):
    r = curl(v6, "-o", "/dev/null", "-w", "%{http_code} %{local_ip}",
             f"http://[{v6.glob}]/robots.txt")
    code, client = r.stdout.split()
    assert code == "200", r.stderr
    assert client.startswith(GLOBAL_PREFIX), client  # Linux's own address in the prefix
    # Common Log Format, the address as nginx writes $remote_addr (RFC 5952, no brackets).
    want = f"{client} - - ["
    deadline = time.time() + 5
    lines = []
    while time.time() < deadline:
        text = v6.access_log.read_text() if v6.access_log.exists() else ""
        lines = [l for l in text.splitlines()
                 if l.startswith(want) and '"GET /robots.txt HTTP/1.1" 200 23' in l]
        if lines:
            break
        time.sleep(0.2)
    assert lines, text


def test_the_site_served_is_the_one_over_ipv4_too(v6):
    # Dual stack: the same server answers over IPv4 as before.
    from conftest import SERVER_IP
    r = curl(v6, "-o", "/dev/null", "-w", "%{http_code}", f"http://{SERVER_IP}/")
    assert r.stdout == "200", r.stderr
    assert (SITE / "index.html").exists()


def test_path_mtu_through_a_router_with_a_1280_octet_link(tmp_path):
    """A client behind a router whose next link is 1280 octets (Linux forwarding between
    the server's TAP and a veth whose router end has MTU 1280, into the client's
    namespace): the server's
    1500-octet segments draw Packet Too Big from the router, the connection's segments
    shrink to the path (RFC 8201) and the mebibyte arrives byte-exact."""
    from conftest import Netns, Server
    s = Server(extra=("--ip6-secret", SECRET))
    client = Netns("bwc")
    dns = None
    try:
        s.ns.run("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        s.ns.ip("-6", "addr", "add", f"{ROUTER}/64", "dev", "bw0", "nodad")
        s.ns.ip("link", "add", "v0", "type", "veth", "peer", "name", "v1", "netns", client.name)
        s.ns.ip("link", "set", "v0", "mtu", "1280", "up")
        s.ns.ip("-6", "addr", "add", "2001:db8:2::1/64", "dev", "v0", "nodad")
        # The client's own link is 1500 (it offers MSS 1440); the router's way to it is
        # 1280: the narrow link is past the router, as on a real path.
        client.ip("link", "set", "v1", "up")
        client.ip("-6", "addr", "add", "2001:db8:2::2/64", "dev", "v1", "nodad")
        client.ip("-6", "route", "add", "default", "via", "2001:db8:2::1")
        dns = router(s.ns)
        glob = global_addr(s)
        f = SITE / "files" / "1m.bin"
        out = tmp_path / "body"
        r = client.run("curl", "-sS", "-g", "--max-time", "60", "-o", out, "-w", "%{http_code}",
                       f"http://[{glob}]/files/1m.bin", check=False)
        assert r.stdout == "200", (r.stdout, r.stderr)
        assert sha(out.read_bytes()) == sha(f.read_bytes())
    finally:
        if dns:
            dns.terminate()
            dns.wait(5)
        counters = s.stop()
        s.ns.close()
        client.close()
        s.log.close()
    # The router's messages taken (one per segment it dropped, as Linux's rate limit lets
    # them go), the connection's segments lowered once, none refused.
    assert counters.get("icmp6_too_big", 0) >= 1, counters
    assert counters.get("tcp_pmtu_lowered", 0) == 1, counters
    assert counters.get("drop_too_big", 0) == 0, counters


def test_bareweb_get_and_load_over_ipv6(v6, tmp_path):
    """bareweb's own clients take IPv6 literals: `get` with an RFC 6874 zone to the
    link-local address, `load` to the global one, every body checked against the site."""
    from conftest import BIN
    out = tmp_path / "style.css"
    r = v6.ns.run(BIN, "get", f"http://[{v6.ll}%25bw0]/style.css", "--verify", SITE, "-o", out,
                  check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert out.read_bytes() == (SITE / "style.css").read_bytes()
    js = tmp_path / "load.json"
    r = v6.ns.run(BIN, "load", f"http://[{v6.glob}]/files/4k.html", "--parallel", "4",
                  "--keepalive", "--fetches", "400", "--seconds", "10", "--verify", SITE,
                  "--quiet", "--json-out", js, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    import json
    rep = json.loads(js.read_text())
    assert rep["fetches"] >= 400 and not rep["errors"], rep


def test_per_queue_cores_serve_ipv6_on_every_queue(tmp_path):
    """`--cores 2 --mode perqueue` on a multi-queue TAP, which spreads frames over the
    queues by its own flow hash: core 0 runs the link (DAD, the router's prefix) and core 1
    follows it (iface::share6). Pings from eight addresses of Linux's (their neighbour
    solicitations and echo requests hashed to either queue) are all answered; 32 keep-alive
    connections to the global address all complete byte-exact, and both cores accepted some
    of them (the stats page's per-core counters, read over IPv4)."""
    import json
    from conftest import BIN, SERVER_IP, Server
    s = Server(extra=("--cores", "2", "--mode", "perqueue", "--ip6-secret", SECRET))
    dns = None
    try:
        s.ll = server_addr(s.ns)
        s.ns.ip("-6", "addr", "add", f"{ROUTER}/64", "dev", "bw0", "nodad")
        dns = router(s.ns)
        glob = global_addr(s)
        sources = [f"{GLOBAL_PREFIX}:{100 + i:x}" for i in range(8)]
        for a in sources:
            s.ns.ip("-6", "addr", "add", f"{a}/64", "dev", "bw0", "nodad")
        for a in sources:
            r = s.ns.run("ping", "-6", "-n", "-c", "2", "-i", "0.2", "-W", "2", "-I", a, glob,
                         check=False)
            assert r.returncode == 0 and "2 received" in r.stdout, (a, r.stdout + r.stderr)

        def accepted():
            r = s.ns.run("curl", "-sS", "--max-time", "10",
                         f"http://{SERVER_IP}/.well-known/bareweb/stats")
            return [c["counters"]["tcp_accepted"] for c in json.loads(r.stdout)["cores"]]

        before = accepted()
        js = tmp_path / "load.json"
        r = s.ns.run(BIN, "load", f"http://[{glob}]/files/4k.html", "--parallel", "32",
                     "--keepalive", "--fetches", "640", "--seconds", "30", "--verify", SITE,
                     "--quiet", "--json-out", js, check=False, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        rep = json.loads(js.read_text())
        assert rep["fetches"] >= 640 and not rep["errors"], rep
        time.sleep(0.5)  # the board is published every few hundred ms
        after = accepted()
        # The stats requests add at most one connection to one core.
        assert all(b - a >= 2 for a, b in zip(before, after)), (before, after)
    finally:
        if dns:
            dns.terminate()
            dns.wait(5)
        counters = s.stop()
        s.ns.close()
        s.log.close()
    print(f"\nper-queue IPv6: accepted per core {before} -> {after}; "
          f"frames passed between cores {counters.get('ipv6_passed', 0)}")
    assert counters.get("drop_ipv6_unserved", 0) == 0, counters
    assert counters.get("drop_ipv6_pass_full", 0) == 0, counters


def test_a_configured_address_serves_and_advertised_prefixes_make_none(tmp_path):
    """`--ip6 2001:db8:7::80/64`: the server takes that address after DAD (the console
    says so), Linux on the link fetches a file from it, and a router advertisement of
    another prefix (dnsmasq) makes no address. A second server configured with an
    address Linux already holds says so and does not take it."""
    from conftest import Server
    s = Server(extra=("--ip6", "2001:db8:7::80/64"))
    dns = None
    try:
        s.ns.ip("-6", "addr", "add", "2001:db8:7::1/64", "dev", "bw0", "nodad")
        s.ns.ip("-6", "addr", "add", f"{ROUTER}/64", "dev", "bw0", "nodad")
        dns = router(s.ns)
        deadline = time.time() + 20
        while "bareweb: IPv6 2001:db8:7::80 on the link" not in s.output():
            assert time.time() < deadline, s.output()
            time.sleep(0.2)
        r = curl(s, "-o", tmp_path / "body", "-w", "%{http_code} %{remote_ip}",
                 "http://[2001:db8:7::80]/")
        assert r.stdout == "200 2001:db8:7::80", (r.stdout, r.stderr)
        assert (tmp_path / "body").read_bytes() == (SITE / "index.html").read_bytes()
        time.sleep(3)  # dnsmasq advertises at start and on our solicitations
        assert GLOBAL_PREFIX not in s.output(), s.output()
    finally:
        if dns:
            dns.terminate()
            dns.wait(5)
        s.close()
    # Held by Linux already (assigned without its own DAD): not taken, and said why.
    from test_ipv6_link import HeldServer
    s = HeldServer("2001:db8:7::80", extra=("--ip6", "2001:db8:7::80/64"))
    try:
        deadline = time.time() + 20
        want = "bareweb: IPv6 2001:db8:7::80 (configured) is in use by another host on the link"
        while want not in s.output():
            assert time.time() < deadline, s.output()
            time.sleep(0.2)
        # The link-local address serves on.
        ll = server_addr(s.ns)
        r = curl(s, "-o", "/dev/null", "-w", "%{http_code}", f"http://[{ll}%bw0]/")
        assert r.stdout == "200", (r.stdout, r.stderr)
    finally:
        counters = s.stop()
        s.ns.close()
        s.log.close()
    assert counters.get("nd_dad_conflicts", 0) == 1, counters


class _NsOver6:
    """A namespace whose Python client (`client.py`) talks to `addr`: the test_engine
    checks' own helper, pointed at an IPv6 address."""

    def __init__(self, ns, addr):
        self._ns, self.addr = ns, addr

    def run(self, *args, **kw):
        return self._ns.run(*args, **kw)

    def client(self, *args, timeout=None, env=None):
        return self._ns.client(*args, timeout=timeout, env={**(env or {}), "BW_SERVER": self.addr})


class _Over6:
    def __init__(self, s, addr):
        self.ns, self.mac = _NsOver6(s.ns, addr), s.mac


def test_the_http_checks_hold_over_ipv6(v6, tmp_path, monkeypatch):
    """test_engine's HTTP checks (validators, HEAD, 304 and 412, request limits, ranges,
    404/405/301, gzip, traversal, 200 keep-alive clients, pipelining, bad requests) run
    again against the server's global IPv6 address: curl and Python's clients over IPv6."""
    import test_engine as E
    monkeypatch.setattr(E, "URL", f"http://[{v6.glob}]")
    s = _Over6(v6, v6.glob)
    def logged():
        # Requests from Linux's global addresses (the access log's first field).
        return sum(1 for line in v6.access_log.read_text().splitlines()
                   if line.startswith(GLOBAL_PREFIX))

    before = logged()
    E.test_content_types_and_validators(s)
    E.test_head_has_headers_and_no_body(s)
    E.test_conditional_304(s)
    E.test_preconditions_412(s)
    E.test_request_limits(s)
    E.test_range_206_and_416(s, tmp_path)
    E.test_404_405_301(s)
    E.test_gzip_variant(s, tmp_path)
    E.test_path_traversal_stays_in_site(s)
    E.test_200_concurrent_keepalive(s)
    E.test_pipelined_requests_in_order(s)
    E.test_bad_requests_get_4xx_5xx_and_close(s)
    # They went over IPv6: the access log names Linux's global address for them (the
    # 200 keep-alive clients' 600 requests alone).
    deadline = time.time() + 10
    while logged() - before < 600 and time.time() < deadline:
        time.sleep(0.2)
    tail = v6.access_log.read_text().splitlines()[-3:]
    assert logged() - before >= 600, (logged() - before, tail)


def test_browser_over_ipv6(tmp_path):
    """Headless Chromium (test_browser's checks) loads examples/site and
    examples/configured from the server's global IPv6 address."""
    from conftest import Server
    from test_browser import CONFIGURED, Browser, check_configured, check_example
    for site in (SITE, CONFIGURED):
        s = Server(site=site, extra=("--ip6-secret", SECRET), prefix="bwb")
        dns = None
        try:
            s.ns.ip("-6", "addr", "add", f"{ROUTER}/64", "dev", "bw0", "nodad")
            dns = router(s.ns)
            base = f"http://[{global_addr(s)}]"
            browser = Browser(tmp_path, prefix=s.ns.cmd())
            if site == SITE:
                check_example(browser, base, "serve-example-v6.png")
            else:
                check_configured(browser, base)
        finally:
            if dns:
                dns.terminate()
                dns.wait(5)
            s.close()
