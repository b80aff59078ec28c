"""The AF_XDP platform: `bareweb serve --xdp IFACE[:QUEUES]` on one end of a
veth pair between a server namespace and a client namespace (prefix `bwx`, the PID in
both names). The server end also holds a host address of the server namespace's own
kernel (10.0.0.3), which must keep answering: the XDP program steers only the server's
address (10.0.0.2) to the sockets.

Needs root and a kernel with AF_XDP (Linux 5.9+ for the BPF link); under CI=true a missing
one fails (require_root, and the first server's start names the cause), never skips."""
import hashlib
import json
import pathlib
import signal
import subprocess
import time

import pytest

from conftest import BIN, SERVER_IP, SITE, Netns, require_root
from test_ipv6_link import console_addr

CLIENT_IP = "10.0.0.1"
HOST_ADDR = "10.0.0.3"
SIDE_S, SIDE_C = "xs0", "xc0"
BIG = "/files/1m.bin"
FOREIGN = pathlib.Path(__file__).with_name("xdp_foreign.py")


def sha(path):
    return hashlib.sha256((SITE / path.lstrip("/")).read_bytes()).hexdigest()


def site_files():
    return sorted("/" + p.relative_to(SITE).as_posix() for p in SITE.rglob("*")
                  if p.is_file() and not p.name.startswith(".") and p.name != "bareweb.toml")


class Pair:
    """Namespaces S (server) and C (client) joined by a veth with `queues` queue pairs;
    the client end sends complete checksums, as a wire does (docs/design/af-xdp.md)."""

    def __init__(self, queues=1):
        require_root()
        self.s = Netns("bwx")
        self.c = Netns("bwx")
        q = str(queues)
        subprocess.run(["ip", "link", "add", SIDE_C, "netns", self.c.name, "numtxqueues", q,
                        "numrxqueues", q, "type", "veth", "peer", "name", SIDE_S, "netns",
                        self.s.name, "numtxqueues", q, "numrxqueues", q], check=True)
        self.c.ip("addr", "add", f"{CLIENT_IP}/24", "dev", SIDE_C)
        self.c.ip("link", "set", SIDE_C, "up")
        self.s.ip("addr", "add", f"{HOST_ADDR}/24", "dev", SIDE_S)
        self.s.ip("link", "set", SIDE_S, "up")
        self.c.run("ethtool", "-K", SIDE_C, "tx", "off")

    def xdp_prog(self):
        """The XDP program id attached to the server end now, or None."""
        r = self.s.run("ip", "-d", "link", "show", SIDE_S)
        words = r.stdout.split()
        for i, w in enumerate(words):
            if w == "prog/xdp" and i + 1 < len(words) and words[i + 1] == "id":
                return int(words[i + 2])
        return None

    def foreign(self, *what):
        """Runs xdp_foreign.py WHAT in the server namespace; returns it once it holds it."""
        p = subprocess.Popen(self.s.cmd("/usr/bin/python3", FOREIGN, *what),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = p.stdout.readline()
        if line.strip() != "ready":
            p.kill()
            raise AssertionError(f"xdp_foreign.py {what}: {line}{p.stdout.read()}")
        return p

    def close(self):
        self.s.close()
        self.c.close()


class XdpServer:
    """`bareweb serve --xdp` in the pair's server namespace."""

    def __init__(self, pair, extra=(), iface=SIDE_S, wait=True, pre=(), site=SITE):
        self.pair = pair
        self.log = open(f"/tmp/{pair.s.name}-{time.monotonic_ns()}.log", "w+")
        self.proc = subprocess.Popen(
            pair.s.cmd(*pre, BIN, "serve", site, "--xdp", iface, "--ip", f"{SERVER_IP}/24",
                       *extra),
            stdout=self.log, stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready()

    def wait_ready(self):
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.output()}")
            r = self.pair.c.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                "--max-time", "1", f"http://{SERVER_IP}/", check=False)
            if r.stdout == "200":
                return
            time.sleep(0.1)
        self.stop(signal.SIGKILL)
        raise AssertionError(f"server not ready in 20 s: {self.output()}")

    def exit_output(self, limit=20):
        """For a start that must fail: its exit status and what it said."""
        try:
            code = self.proc.wait(limit)
        except subprocess.TimeoutExpired:
            self.stop(signal.SIGKILL)
            raise AssertionError(f"server did not exit: {self.output()}")
        return code, self.output()

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self, sig=signal.SIGINT):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.output()


@pytest.fixture(scope="module")
def served():
    pair = Pair()
    srv = XdpServer(pair)
    yield pair, srv
    srv.stop()
    pair.close()


def test_every_file_intact_on_keepalive_and_fresh_connections(served):
    pair, _ = served
    env = {"BW_SERVER": SERVER_IP}
    files = site_files()
    r = pair.c.client("keepalive", "8", "3", *files, env=env)
    assert r["n_errors"] == 0, r["errors"]
    for f in files:
        assert r["digests"][f] == [sha(f)], f
    r = pair.c.client("cpr", "50", "/files/4k.html", env=env)
    assert (r["ok"], r["n_errors"], r["digests"]) == (50, 0, [sha("/files/4k.html")]), r
    r = pair.c.client("parallel", "8", BIG, sha(BIG), "0", "", env=env)
    assert r["ok"] == 8, r["bad"]


def test_the_host_keeps_its_own_address_on_the_shared_interface(served):
    pair, _ = served
    assert pair.xdp_prog() is not None
    # The host's kernel answers ARP and ping for its address, and serves TCP on it, beside
    # the server on the same interface.
    listener = subprocess.Popen(pair.s.cmd("python3", "-m", "http.server", "8000", "--bind",
                                           HOST_ADDR, "--directory", SITE),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = pair.c.run("ping", "-c", "2", "-W", "2", HOST_ADDR, check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        code = ""
        for _ in range(50):
            code = pair.c.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                              "2", f"http://{HOST_ADDR}:8000/index.html", check=False).stdout
            if code == "200":
                break
            time.sleep(0.1)
        assert code == "200", "the host's own TCP service did not answer beside the server"
    finally:
        listener.kill()
        listener.wait()
    # The server answers ARP and ping for its address with the interface's MAC.
    r = pair.c.run("ping", "-c", "2", "-W", "2", SERVER_IP, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    neigh = pair.c.run("ip", "neigh", "show", "dev", SIDE_C).stdout
    macs = {line.split()[0]: line.split()[2] for line in neigh.splitlines()
            if "lladdr" in line}
    mac = pair.s.run("cat", f"/sys/class/net/{SIDE_S}/address").stdout.strip()
    assert macs.get(SERVER_IP) == mac and macs.get(HOST_ADDR) == mac, neigh


def test_ipv6_is_served_beside_the_hosts_own(tmp_path):
    """IPv6 over AF_XDP: the program steers the server's own IPv6 destinations (its
    addresses and their solicited-node groups, in its map as the link takes them) and
    leaves the host's IPv6 on the shared interface alone. The client pings and fetches
    every file byte-exact at the server's link-local and configured
    (`--ip6 2001:db8:9::80/64`) addresses, and pings the host's own address on the same
    end (answered by the host's kernel). Then, with the client holding the configured
    address, a second start finds it in use: the client's advertisement defending it goes
    to all-nodes, and the program steers it to the server because its target is one of
    the server's (the console says the address is in use)."""
    pair = Pair()
    srv = None
    try:
        pair.c.ip("-6", "addr", "add", "2001:db8:9::1/64", "dev", SIDE_C, "nodad")
        pair.s.ip("-6", "addr", "add", "2001:db8:9::3/64", "dev", SIDE_S, "nodad")
        srv = XdpServer(pair, extra=("--ip6", "2001:db8:9::80/64"))
        ll = console_addr(srv, "fe80::", 15)
        glob = console_addr(srv, "2001:db8:9::80", 15)
        for target in (f"{ll}%{SIDE_C}", glob, "2001:db8:9::3"):
            r = pair.c.run("ping", "-6", "-n", "-c", "2", "-i", "0.2", "-W", "2", target,
                           check=False)
            assert r.returncode == 0 and "2 received" in r.stdout, (target, r.stdout + r.stderr)
        for host in (f"[{ll}%{SIDE_C}]", f"[{glob}]"):
            for path in site_files():
                out = tmp_path / "body"
                r = pair.c.run("curl", "-sS", "-g", "--max-time", "20", "-o", out, "-w",
                               "%{http_code}", f"http://{host}{path}", check=False)
                assert r.stdout == "200", (host, path, r.stdout, r.stderr)
                assert hashlib.sha256(out.read_bytes()).hexdigest() == sha(path), (host, path)
        # The configured address's group is joined to the interface while it serves.
        maddr = pair.s.run("ip", "maddr", "show", "dev", SIDE_S).stdout
        assert "33:33:ff:00:00:80" in maddr, maddr
        out = srv.stop()
        assert "bareweb: IPv6 off" not in out, out
        # The map and the groups go with the program: nothing of ours is left joined.
        maddr = pair.s.run("ip", "maddr", "show", "dev", SIDE_S).stdout
        assert "33:33:ff:00:00:80" not in maddr, maddr
        # The configured address held by the client: DAD hears its defence.
        pair.c.ip("-6", "addr", "add", "2001:db8:9::80/64", "dev", SIDE_C, "nodad")
        srv = XdpServer(pair, extra=("--ip6", "2001:db8:9::80/64"))
        deadline = time.time() + 15
        while "2001:db8:9::80 (configured) is in use" not in srv.output():
            assert time.time() < deadline, srv.output()
            time.sleep(0.2)
    finally:
        if srv:
            srv.stop()
        pair.close()


RA_SENDER = r"""
import socket, struct, sys, time
prefix = socket.inet_pton(socket.AF_INET6, "2001:db8:7::")
ra = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, 1800, 0, 0)
ra += struct.pack("!BBBBIII", 3, 4, 64, 0xC0, 86400, 14400, 0) + prefix
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, socket.if_nametoindex(sys.argv[1]))
for _ in range(int(sys.argv[2])):
    try:  # the link-local source may still be tentative (DAD) at first
        s.sendto(ra, ("ff02::1", 0, 0, socket.if_nametoindex(sys.argv[1])))
    except OSError:
        pass
    time.sleep(0.5)
"""


def test_ipv6_slaac_from_router_advertisements_the_host_keeps(tmp_path):
    """Router advertisements to all-nodes stay the host's (the XDP program hands a frame to
    one side); the server's packet socket copies them to its link. Advertisements sent
    only to all-nodes from the client's side (a raw socket, every 0.5 s: no router answers
    the server's solicitation, so no advertisement reaches it any other way) give it its
    SLAAC address in 2001:db8:7::/64, said on the console and serving every file; the
    host's kernel took the prefix too (its own address on the shared end)."""
    pair = Pair()
    srv = sender = None
    try:
        srv = XdpServer(pair)
        sender = subprocess.Popen(pair.c.cmd("python3", "-c", RA_SENDER, SIDE_C, "60"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        glob = console_addr(srv, "2001:db8:7:", 30)
        pair.c.ip("-6", "addr", "add", "2001:db8:7::1/64", "dev", SIDE_C, "nodad")
        for path in site_files():
            out = tmp_path / "body"
            r = pair.c.run("curl", "-sS", "-g", "--max-time", "20", "-o", out, "-w",
                           "%{http_code}", f"http://[{glob}]{path}", check=False)
            assert r.stdout == "200", (path, r.stdout, r.stderr)
            assert hashlib.sha256(out.read_bytes()).hexdigest() == sha(path), path
        host = pair.s.run("ip", "-6", "addr", "show", "dev", SIDE_S).stdout
        assert "2001:db8:7:" in host, host
    finally:
        if sender:
            sender.kill()
            sender.wait()
        if srv:
            srv.stop()
        pair.close()


def test_ctrl_c_detaches_the_program_and_reports_each_socket():
    pair = Pair()
    try:
        srv = XdpServer(pair)
        out = srv.output()
        assert "through AF_XDP" in out and "copy mode" in out, out
        assert pair.xdp_prog() is not None
        out = srv.stop()
        assert srv.proc.returncode == 0, out
        assert "XDP program detached" in out, out
        assert "per AF_XDP socket" in out, out
        assert pair.xdp_prog() is None
    finally:
        pair.close()


def test_a_killed_server_leaves_no_program_or_the_next_start_removes_it():
    pair = Pair()
    try:
        # A BPF link dies with the process.
        srv = XdpServer(pair)
        srv.stop(signal.SIGKILL)
        assert pair.xdp_prog() is None, "the BPF link outlived kill -9"
        # Attached the old way (netlink), the program outlives it: the next start finds it
        # by its name and its dead owner's pid, removes it and says so.
        srv = XdpServer(pair, ["--xdp-netlink"])
        stale = pair.xdp_prog()
        srv.stop(signal.SIGKILL)
        assert pair.xdp_prog() == stale and stale is not None
        srv = XdpServer(pair)
        out = srv.output()
        assert f"removed a stale bareweb XDP program (id {stale})" in out, out
        assert pair.xdp_prog() not in (None, stale)
        srv.stop()
        assert pair.xdp_prog() is None
    finally:
        pair.close()


def test_set_up_failures_name_the_cause_and_the_fallback():
    pair = Pair()
    try:
        def fails(extra=(), iface=SIDE_S):
            code, out = XdpServer(pair, extra, iface=iface, wait=False).exit_output()
            assert code != 0, out
            return out

        out = fails(iface="nosuch0")
        assert "no interface \"nosuch0\"" in out, out
        out = fails(iface=f"{SIDE_S}:4")
        assert "has 1 receive queue" in out, out
        # veth has native XDP but no zero-copy sockets.
        out = fails(["--xdp-mode", "zerocopy"])
        assert "refused zero-copy" in out and "--xdp-mode copy" in out and "--tap" in out, out
        assert pair.xdp_prog() is None, "a failed start left its program attached"
        # The interface is served already: the second start refuses, the first keeps on.
        first = XdpServer(pair)
        prog = pair.xdp_prog()
        out = fails()
        assert "already served by bareweb" in out, out
        assert pair.xdp_prog() == prog
        first.wait_ready()
        first.stop()
    finally:
        pair.close()


def test_the_servers_address_may_not_be_the_hosts():
    pair = Pair()
    try:
        pair.s.ip("addr", "add", f"{SERVER_IP}/24", "dev", SIDE_S)
        code, out = XdpServer(pair, wait=False).exit_output()
        assert code != 0 and "is an address of this host" in out, out
    finally:
        pair.close()


def test_per_queue_mode_serves_every_queue_with_a_core_each():
    pair = Pair(queues=2)
    try:
        srv = XdpServer(pair)
        assert "queues 0..2, one core each" in srv.output(), srv.output()
        env = {"BW_SERVER": SERVER_IP}
        r = pair.c.client("keepalive", "32", "5", "/files/4k.html", "/index.html", env=env)
        assert r["n_errors"] == 0, r["errors"]
        assert r["digests"]["/files/4k.html"] == [sha("/files/4k.html")]
        out = srv.stop()
        # Per socket: core, rx_frames, ...: both queues received the client's frames.
        lines = out.split("per AF_XDP socket:")[1].splitlines()[1:3]
        rx = [int(line.split()[2]) for line in lines]
        assert len(rx) == 2 and all(n > 0 for n in rx), out
        totals = {p[0]: int(p[1]) for p in (line.split() for line in out.splitlines())
                  if len(p) == 2 and p[1].isdigit()}
        assert totals["http_requests"] >= 320 and totals["http_2xx"] == totals["http_requests"], out
    finally:
        pair.close()


def test_faults_name_the_cause_and_the_fallback_and_leave_others_alone():
    """No permission, a driver that refuses a mode, a queue in use, someone else's
    program: each start fails, names the cause and the fallback, and leaves the
    interface as it found it."""
    pair = Pair()
    try:
        def fails(extra=(), iface=SIDE_S, pre=()):
            srv = XdpServer(pair, extra, iface=iface, wait=False, pre=pre)
            code, out = srv.exit_output()
            assert code != 0, out
            return out

        # Root without its capabilities (a user's shell): no BPF, no AF_XDP.
        out = fails(pre=("setpriv", "--bounding-set=-all", "--inh-caps=-all",
                         "--ambient-caps=-all", "--"))
        assert "Operation not permitted" in out and "CAP_BPF" in out and "--tap" in out, out
        assert pair.xdp_prog() is None
        # A driver without native XDP (a bridge) refuses copy mode's native attach.
        pair.s.ip("link", "add", "xd0", "type", "bridge")
        pair.s.ip("link", "set", "xd0", "up")
        out = fails(["--xdp-mode", "copy"], iface="xd0")
        assert "refused native XDP" in out and "--xdp-mode generic" in out and "--tap" in out, out
        # Someone else's program: refused, named, not removed.
        other = pair.foreign("prog", SIDE_S, "someone_elses")
        try:
            prog = pair.xdp_prog()
            out = fails()
            assert f"another XDP program attached (id {prog}, \"someone_elses\")" in out, out
            assert "does not replace it" in out and "--tap" in out, out
            assert pair.xdp_prog() == prog, "bareweb removed someone else's program"
        finally:
            other.kill()
            other.wait()
        # The queue is held by another AF_XDP socket: refused, and our program detached.
        other = pair.foreign("socket", SIDE_S, "0")
        try:
            out = fails()
            assert "queue 0 of xs0 is in use by another AF_XDP socket" in out, out
            assert "--tap" in out, out
            assert pair.xdp_prog() is None, "a failed start left its program attached"
        finally:
            other.kill()
            other.wait()
        # With both gone the interface serves.
        srv = XdpServer(pair)
        srv.stop()
    finally:
        pair.close()


def test_stop_prints_the_kernels_socket_counters_and_busy_polling_serves():
    pair = Pair()
    try:
        srv = XdpServer(pair, ["--xdp-busy-poll", "50", "--stats-allow", "0.0.0.0/0"])
        r = pair.c.client("keepalive", "8", "5", "/files/4k.html", env={"BW_SERVER": SERVER_IP})
        assert r["n_errors"] == 0, r["errors"]
        # While serving, the same counters are on the stats page and in the metrics.
        base = f"http://{SERVER_IP}"
        stats = json.loads(pair.c.run("curl", "-sS", base + "/.well-known/bareweb/stats").stdout)
        (sock,) = stats["xdp"]
        assert sock["queue"] == 0 and sock["rx_dropped"] == 0, stats["xdp"]
        assert set(sock) == {"queue", "rx_dropped", "rx_invalid_descs", "tx_invalid_descs",
                             "rx_ring_full", "rx_fill_ring_empty_descs", "tx_ring_empty_descs"}
        metrics = pair.c.run("curl", "-sS", base + "/metrics").stdout
        assert "# TYPE bareweb_xdp_rx_dropped_total counter" in metrics, metrics
        assert 'bareweb_xdp_rx_ring_full_total{queue="0"} 0' in metrics, metrics
        out = srv.stop()
        assert srv.proc.returncode == 0, out
        head = ("queue rx_dropped rx_invalid_descs tx_invalid_descs rx_ring_full "
                "rx_fill_ring_empty_descs tx_ring_empty_descs")
        assert f"the kernel's XDP_STATISTICS: {head}" in out, out
        row = out.split(head)[1].splitlines()[1].split()
        assert row[:2] == ["queue", "0"] and len(row) == 8 and all(v.isdigit() for v in row[2:])
        # Nothing was refused or lost on a quiet veth.
        assert row[2:6] == ["0", "0", "0", "0"], out
    finally:
        pair.close()


def test_sighup_reloads_the_site_on_xdp_too(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("one\n")
    pair = Pair()
    srv = XdpServer(pair, site=site)
    try:
        def get():
            return pair.c.run("curl", "-s", "--max-time", "2", f"http://{SERVER_IP}/",
                              check=False).stdout
        assert get() == "one\n"
        (site / "index.html").write_text("two\n")
        srv.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while "reloaded: generation 1" not in srv.output() and time.time() < deadline:
            time.sleep(0.05)
        assert "reloaded: generation 1" in srv.output(), srv.output()
        assert get() == "two\n"
        assert srv.proc.poll() is None
    finally:
        srv.stop()
        pair.close()


def test_https_on_af_xdp_every_file_byte_exact(pki, tmp_path):
    """HTTPS through the AF_XDP sockets, two queues with a core each: curl verifying the
    test CA fetches every file over TLS 1.3 and 1.2 (a connection each), byte-exact, and
    four 1 MiB downloads in parallel."""
    pair = Pair(queues=2)
    srv = XdpServer(pair, extra=("--tls-cert", pki / "p256.pem", "--tls-key", pki / "p256.key"))
    try:
        assert "queues 0..2, one core each" in srv.output(), srv.output()
        for version in ("--tlsv1.3", "--tlsv1.2"):
            for f in site_files():
                out = tmp_path / "got"
                pair.c.run("curl", "-sS", "--fail", "--max-time", "20", version,
                           "--tls-max", version.removeprefix("--tlsv"), "--cacert",
                           pki / "ca.pem", "-o", out, f"https://{SERVER_IP}{f}")
                assert hashlib.sha256(out.read_bytes()).hexdigest() == sha(f), (version, f)
        procs = [subprocess.Popen(pair.c.cmd("curl", "-sS", "--fail", "--max-time", "60",
                                             "--cacert", pki / "ca.pem", "-o",
                                             tmp_path / f"b{i}", f"https://{SERVER_IP}{BIG}"))
                 for i in range(4)]
        assert [p.wait(90) for p in procs] == [0] * 4, srv.output()
        assert all(hashlib.sha256((tmp_path / f"b{i}").read_bytes()).hexdigest() == sha(BIG)
                   for i in range(4))
    finally:
        srv.stop()
        pair.close()
