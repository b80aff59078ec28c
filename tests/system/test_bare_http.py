"""The bare HTTP load client: `bareweb load URL --tap NAME --ip A/N`, the
engine's own TCP on a TAP of its own, bridged with `bareweb serve`'s TAP in a namespace.
Bodies are checked (`--verify`), keep-alive and a connection per fetch, parallel and rate
modes, the same load from the socket client for comparison (one report shape for both), and
a server killed mid-run: every failed fetch counted and the exit status non-zero."""
import json
import re
import signal
import subprocess
import time

from conftest import BIN, HOST_IP, SERVER_IP, SITE, Netns, require_root

CLIENT_IP = "10.0.0.3"
XDP_IP = "10.0.0.4"


def wait_for(output, text, timeout=20):
    """Waits until `output()` holds `text`."""
    deadline = time.time() + timeout
    while text not in output():
        assert time.time() < deadline, (text, output())
        time.sleep(0.1)


class Bridged:
    """`bareweb serve` on TAP bw0 and the bare client's TAP bwc0 on one bridge, which also
    holds the namespace's own address (for the socket client) and veth end xs0, whose peer
    xc0 (no address, not bridged) is the AF_XDP client's link (xs0 completes checksums)."""

    def __init__(self, site=SITE, serve_args=()):
        require_root()
        self.ns = Netns("bwth")
        self.proc = None
        try:
            for tap in ("bw0", "bwc0"):
                self.ns.ip("tuntap", "add", tap, "mode", "tap")
            self.ns.ip("link", "add", "br0", "type", "bridge")
            self.ns.ip("link", "add", "xc0", "type", "veth", "peer", "name", "xs0")
            for port in ("bw0", "bwc0", "xs0"):
                self.ns.ip("link", "set", port, "master", "br0")
            for d in ("br0", "bw0", "bwc0", "xs0", "xc0"):
                self.ns.ip("link", "set", d, "up")
            # The server's TAP frames carry partial checksums (segmentation offload): the
            # veth end before the XDP client completes them, as a wire's sender does.
            self.ns.run("ethtool", "-K", "xs0", "tx", "off")
            self.ns.ip("addr", "add", f"{HOST_IP}/24", "dev", "br0")
            self.log = open(f"/tmp/{self.ns.name}.log", "w+")
            self.proc = subprocess.Popen(
                self.ns.cmd(BIN, "serve", site, "--tap", "bw0", "--host-ip", "none", "--ip",
                            f"{SERVER_IP}/24", "--mac", "02:00:00:00:00:02", *serve_args),
                stdout=self.log, stderr=subprocess.STDOUT)
            deadline = time.time() + 20
            while "serving" not in open(self.log.name).read():
                assert self.proc.poll() is None and time.time() < deadline, self.output()
                time.sleep(0.1)
        except BaseException:
            self.close()
            raise

    def output(self):
        return open(self.log.name).read()

    def bare(self, *args, timeout=60):
        r = self.ns.run(BIN, "load", "--tap", "bwc0", "--ip", f"{CLIENT_IP}/24", *args,
                        "--json", "-q", timeout=timeout, check=False)
        assert r.returncode == 0, (r.stdout, r.stderr)
        return r

    def xdp(self, *args, timeout=60, check=True):
        r = self.ns.run(BIN, "load", "--xdp", "xc0", "--ip", f"{XDP_IP}/24", *args,
                        timeout=timeout, check=False)
        assert not check or r.returncode == 0, (r.stdout, r.stderr)
        return r

    def xdp_prog(self):
        """The XDP program id attached to xc0 now, or None."""
        words = self.ns.run("ip", "-d", "link", "show", "xc0").stdout.split()
        for i, w in enumerate(words):
            if w == "prog/xdp" and i + 2 < len(words) and words[i + 1] == "id":
                return int(words[i + 2])
        return None

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.ns.close()


def fetching(run):
    """Waits for the first progress line (one a second) of a `load` started without -q
    that counts fetches done: the client is attached, past ARP and fetching, however
    slowly this machine started it (a fixed sleep was a guess)."""
    seen = []
    for line in run.stderr:
        seen.append(line)
        if line.startswith("[") and " fetches (" in line and \
                int(line.split("]")[1].split()[0]) > 0:
            return line
    raise AssertionError(f"the client ended before its first progress line: {''.join(seen)}")


def test_bare_client_fetches_and_verifies():
    b = Bridged()
    try:
        url = f"http://{SERVER_IP}"
        files = (f"{url}/files/4k.html", f"{url}/files/1m.bin", f"{url}/index.html")
        per_conn = json.loads(b.bare(*files, "--parallel", "4", "--fetches", "60",
                                     "--verify", SITE).stdout)
        kept = json.loads(b.bare(*files, "--parallel", "2", "--fetches", "30", "-k",
                                 "--verify", SITE).stdout)
        rate = json.loads(b.bare(f"{url}/files/4k.html", "--rate", "200", "--fetches", "100",
                                 "--verify", SITE).stdout)
        # Polling the TAP between frames instead of sleeping: the same fetches, all good.
        spun = json.loads(b.bare(*files, "--parallel", "2", "--fetches", "60", "-k",
                                 "--spin-us", "100", "--verify", SITE).stdout)
        # The same load from the socket client, through the namespace's own stack.
        sock = json.loads(b.ns.run(BIN, "load", f"{url}/files/4k.html", "--parallel", "4",
                                   "--fetches", "200", "--verify", SITE, "--json", "-q",
                                   timeout=60).stdout)
    finally:
        b.close()
    print(per_conn, kept, rate, spun, sock)
    # One report shape for both clients (the bench parses both with one code).
    assert set(per_conn) == set(sock), set(per_conn) ^ set(sock)
    assert per_conn["client"] == "bare-tap" and sock["client"] == "socket"
    assert per_conn["fetches_ok"] == 60 and per_conn["errors_total"] == 0, per_conn
    assert per_conn["connections"] == 60 and per_conn["max_parallel"] == 4, per_conn
    # Latencies: a connect per connection, a first byte and a whole response per fetch.
    assert per_conn["connect"]["count"] == 60, per_conn["connect"]
    assert per_conn["first_response"]["count"] == 60, per_conn["first_response"]
    r = per_conn["response"]
    assert 0 < r["min_ms"] <= r["p50_ms"] <= r["p99_ms"] <= r["max_ms"] < 5000, r
    assert per_conn["first_response"]["mean_ms"] <= r["mean_ms"], per_conn
    assert kept["fetches_ok"] == 30 and kept["errors_total"] == 0, kept
    assert kept["connections"] == 2 and kept["connect"]["count"] == 2, kept
    assert rate["fetches_ok"] == 100 and rate["errors_total"] == 0, rate
    assert spun["fetches_ok"] == 60 and spun["errors_total"] == 0, spun
    assert spun["connections"] == 2 and spun["client"] == "bare-tap-spin", spun
    assert rate["mode"].startswith("rate 200"), rate
    assert sock["fetches"] == 200, sock


def test_the_bare_client_over_ipv6_on_the_link_and_through_a_router():
    """`load --ip6`: the bare client holds its address behind DAD, solicits the server's
    MAC and fetches over IPv6, verified, a connection each and kept alive; a server in
    another prefix is reached through `--gw6` (the namespace's bridge, forwarding), and
    without a router the run says what is missing. The server, too, answers a peer beyond
    its prefix only with a router (`serve --gw6`): without one it says so and a ping from
    another prefix goes unanswered while one from its own is answered."""
    b = Bridged(serve_args=("--ip6", "2001:db8::2/64"))
    try:
        b.ns.run("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        b.ns.ip("-6", "addr", "add", "2001:db8::1/64", "dev", "br0", "nodad")
        b.ns.ip("-6", "addr", "add", "2001:db8:2::1/64", "dev", "br0", "nodad")
        url = "http://[2001:db8::2]"
        files = (f"{url}/files/4k.html", f"{url}/files/1m.bin", f"{url}/index.html")
        load6 = ("load", "--tap", "bwc0", "--json", "-q")
        on_link = json.loads(b.ns.run(BIN, *load6, "--ip6", "2001:db8::3/64", *files,
                                      "--parallel", "4", "--fetches", "60", "--verify", SITE,
                                      timeout=60).stdout)
        kept = json.loads(b.ns.run(BIN, *load6, "--ip6", "2001:db8::3/64", *files,
                                   "--parallel", "2", "--fetches", "30", "-k", "--verify",
                                   SITE, timeout=60).stdout)
        # The server moved to another prefix: our client stays in 2001:db8::/64. With no
        # router (none advertised, no --gw6) the server answers only its own prefix.
        b.close()
        b = Bridged(serve_args=("--ip6", "2001:db8:2::2/64"))
        b.ns.ip("-6", "addr", "add", "2001:db8::1/64", "dev", "br0", "nodad")
        b.ns.ip("-6", "addr", "add", "2001:db8:2::1/64", "dev", "br0", "nodad")
        wait_for(b.output, "IPv6 2001:db8:2::2 on the link")
        ping = ("ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", "-I")
        near = b.ns.run(*ping, "2001:db8:2::1", "2001:db8:2::2", check=False)
        far = b.ns.run(*ping, "2001:db8::1", "2001:db8:2::2", check=False)
        b.close()
        unrouted = b.output()
        b = Bridged(serve_args=("--ip6", "2001:db8:2::2/64", "--gw6", "2001:db8:2::1"))
        b.ns.run("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        b.ns.ip("-6", "addr", "add", "2001:db8::1/64", "dev", "br0", "nodad")
        b.ns.ip("-6", "addr", "add", "2001:db8:2::1/64", "dev", "br0", "nodad")
        wait_for(b.output, "IPv6 router 2001:db8:2::1 (--gw6)")
        routed = json.loads(b.ns.run(BIN, *load6, "--ip6", "2001:db8::3/64", "--gw6",
                                     "2001:db8::1", "http://[2001:db8:2::2]/files/4k.html",
                                     "--parallel", "2", "--fetches", "20", "--verify", SITE,
                                     timeout=60).stdout)
        lost = b.ns.run(BIN, *load6, "--ip6", "2001:db8::3/64",
                        "http://[2001:db8:2::2]/index.html", "--fetches", "1", timeout=60,
                        check=False)
    finally:
        b.close()
    print(on_link, kept, routed, lost.stderr, near.stdout, far.stdout)
    assert near.returncode == 0, (near.stdout, unrouted)
    assert far.returncode != 0 and "0 received" in far.stdout, (far.stdout, unrouted)
    # Dropped by the server for want of a route (the counters it prints as it stops).
    no_route = re.search(r"drop_no_route\s+(\d+)", unrouted)
    assert no_route and int(no_route.group(1)) >= 2, unrouted
    assert on_link["client"] == "bare-tap", on_link
    assert on_link["fetches_ok"] == 60 and on_link["errors_total"] == 0, on_link
    assert on_link["connections"] == 60, on_link
    assert kept["fetches_ok"] == 30 and kept["errors_total"] == 0, kept
    assert kept["connections"] == 2, kept
    assert routed["fetches_ok"] == 20 and routed["errors_total"] == 0, routed
    assert lost.returncode != 0
    assert "no router advertised itself" in lost.stderr and "--gw6" in lost.stderr, lost.stderr


def test_a_server_killed_mid_run_is_counted_and_fails_the_run():
    b = Bridged()
    try:
        run = subprocess.Popen(
            b.ns.cmd(BIN, "load", "--tap", "bwc0", "--ip", f"{CLIENT_IP}/24",
                     f"http://{SERVER_IP}/files/1m.bin", "--parallel", "4", "--seconds", "6",
                     "--timeout", "1", "--json"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # A second in, some fetches done (however slow the start), 5 s to go: room for the
        # kill to land and the 1 s timeouts to fire before the run ends on a loaded CI
        # machine (with 4 s, one CI run ended with four fetches open and no error counted).
        fetching(run)
        b.proc.kill()
        b.proc.wait(10)
        out, err = run.communicate(timeout=30)
    finally:
        b.close()
    rep = json.loads(out)
    print(rep, err)
    assert run.returncode != 0 and "failed" in err, (run.returncode, err)
    assert rep["fetches_ok"] > 0 and rep["errors_total"] >= 1, rep
    assert rep["errors_total"] == sum(rep["errors"].values()), rep


def test_the_bare_client_on_af_xdp():
    """`load --xdp`: the same client on an AF_XDP socket of veth end xc0 (the host keeps
    the interface: only the client's address is steered), fetches verified, the program
    detached at exit; then the clear errors of a refused set-up (zero-copy on a veth, a
    host address, another program on the interface)."""
    b = Bridged()
    try:
        url = f"http://{SERVER_IP}"
        files = (f"{url}/files/4k.html", f"{url}/files/1m.bin", f"{url}/index.html")
        r = b.xdp(*files, "--parallel", "4", "--fetches", "60", "--verify", SITE, "--json")
        per_conn = json.loads(r.stdout)
        assert "through AF_XDP" in r.stderr and "XDP program detached" in r.stderr, r.stderr
        kept = json.loads(b.xdp(f"{url}/files/4k.html", "--rate", "300", "--fetches", "150",
                                "-k", "--verify", SITE, "--json", "-q").stdout)
        assert b.xdp_prog() is None, "detached at exit"
        # A refused set-up names the cause and the fallback.
        r = b.xdp(f"{url}/", "--xdp-mode", "zerocopy", "-q", check=False)
        zc = r.stderr
        assert r.returncode != 0 and "--xdp-mode copy" in zc and "--tap" in zc, zc
        r = b.ns.run(BIN, "load", "--xdp", "br0", "--ip", f"{HOST_IP}/24", f"{url}/", "-q",
                     check=False)
        assert r.returncode != 0 and "is an address of this host" in r.stderr, r.stderr
        r = b.ns.run(BIN, "load", "--xdp", "xc0:1", "--ip", f"{XDP_IP}/24", f"{url}/", "-q",
                     check=False)
        assert r.returncode != 0 and "has 1 receive queue" in r.stderr, r.stderr
        assert b.xdp_prog() is None
    finally:
        b.close()
    print(per_conn, kept)
    assert per_conn["client"] == "bare-xdp", per_conn
    assert per_conn["fetches_ok"] == 60 and per_conn["errors_total"] == 0, per_conn
    assert per_conn["connections"] == 60 and per_conn["connect"]["count"] == 60, per_conn
    assert kept["fetches_ok"] == 150 and kept["errors_total"] == 0, kept
    # Kept connections are reused: a new one opens only when a fetch falls due while every
    # kept one is busy, so never more connections than were ever in flight together. How
    # many that is depends on the scheduler, not on the client: after a stall every fetch
    # that fell due meanwhile starts at once (CI saw 5; a 60 ms stop of the client makes
    # 18, a 150 ms one 46), so no fixed bound holds; reuse shows as fewer connections than
    # fetches.
    assert kept["connections"] <= kept["max_parallel"], kept
    assert kept["connect"]["count"] == kept["connections"] < kept["fetches_ok"], kept


def test_ctrl_c_ends_an_af_xdp_run_with_its_report_and_a_kill_leaves_no_program():
    b = Bridged()
    try:
        args = ("load", "--xdp", "xc0", "--ip", f"{XDP_IP}/24", f"http://{SERVER_IP}/files/4k.html",
                "--parallel", "2", "-k", "--seconds", "20", "--json")
        run = subprocess.Popen(b.ns.cmd(BIN, *args), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        fetching(run)
        assert b.xdp_prog() is not None, "attached while it runs"
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=20)
        rep = json.loads(out)
        assert run.returncode == 0 and rep["fetches_ok"] > 0, (run.returncode, err, rep)
        assert rep["elapsed_secs"] < 10 and rep["errors_total"] == 0, rep
        assert b.xdp_prog() is None, "Ctrl-C detached it"
        # A killed client (no clean-up at all) leaves nothing attached: the BPF link dies
        # with the process.
        run = subprocess.Popen(b.ns.cmd(BIN, *args), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        fetching(run)
        assert b.xdp_prog() is not None
        run.kill()
        run.wait(10)
        # The kernel frees the link as the dead process's files close: wait for that
        # rather than guess how long it takes on a busy machine.
        deadline = time.time() + 10
        while b.xdp_prog() is not None and time.time() < deadline:
            time.sleep(0.05)
        assert b.xdp_prog() is None, "the kill detached it"
    finally:
        b.close()


def test_surge_sessions_as_the_socket_client_runs_them(tmp_path):
    """Session mode on the bare clients (TAP and AF_XDP) and on sockets, the same Surge
    file set and schedule: every session completes, every body verified, one kept
    connection per session."""
    site = tmp_path / "surge"
    subprocess.run([BIN, "surge-site", site, "--files", "40", "--max-size", "65536"],
                   check=True, capture_output=True)
    b = Bridged(site)
    try:
        args = (f"http://{SERVER_IP}/", "--sessions-rate", "40", "--sessions", "24", "--surge",
                site, "--think-scale", "0.01", "--verify", site, "--seconds", "20")
        bare = json.loads(b.bare(*args).stdout)
        xdp = json.loads(b.xdp(*args, "--json", "-q").stdout)
        sock = json.loads(b.ns.run(BIN, "load", *args, "--json", "-q", timeout=60).stdout)
    finally:
        b.close()
    print(bare, xdp, sock)
    for r in (bare, xdp, sock):
        assert r["mode"].startswith("surge sessions 40/s"), r
        assert r["sessions_started"] == 24 and r["sessions_completed"] == 24, r
        assert r["sessions_failed"] == 0 and r["errors_total"] == 0, r
        assert r["fetches_ok"] == r["fetches"] == r["fetches_started"] >= 24, r
        assert r["session"]["count"] == 24 and r["connections"] == 24, r
        # Bursts: more fetches than sessions' first pages alone, pipelined on one
        # connection each.
        assert r["fetches"] > 24, r


def test_receive_offloads_take_super_frames_whole():
    """The bare client's TAP takes receive offloads by default (TUNSETOFFLOAD): a 1 MiB body
    from bareweb (its TSO frames) and from the kernel's TCP (python's http.server on the
    namespace's address: GSO) arrives in super-frames of many segments, bodies verified
    (from bareweb, under a scaled window: fewer than 48 per 1 MiB); with --no-offload the
    kernel cuts them into single segments for the client."""
    b = Bridged()
    listener = subprocess.Popen(b.ns.cmd("python3", "-m", "http.server", "8000", "--bind", HOST_IP,
                                         "--directory", SITE),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            if b.ns.run("curl", "-s", "-o", "/dev/null", "--max-time", "1",
                        f"http://{HOST_IP}:8000/index.html", check=False).returncode == 0:
                break
            time.sleep(0.1)
        out = {}
        for name, url in (("bareweb", f"http://{SERVER_IP}"), ("kernel", f"http://{HOST_IP}:8000")):
            for offload in (True, False):
                args = (f"{url}/files/1m.bin", "--parallel", "2", "--fetches", "4", "-k",
                        "--verify", SITE, *(() if offload else ("--no-offload",)))
                out[name, offload] = json.loads(b.bare(*args).stdout)
        # Without -q: what the TAP received, said on stderr.
        r = b.ns.run(BIN, "load", "--tap", "bwc0", "--ip", f"{CLIENT_IP}/24",
                     f"http://{SERVER_IP}/files/1m.bin", "--fetches", "2", "--verify", SITE,
                     "--json", timeout=60)
    finally:
        listener.kill()
        listener.wait()
        b.close()
    print(r.stderr)
    for (name, offload), rep in out.items():
        print(name, offload, rep["offloaded_frames"], rep["client_cpu_us_per_fetch"])
        assert rep["fetches_ok"] == 4 and rep["errors_total"] == 0, (name, offload, rep)
        assert rep["bytes"] == 4 * 1048576, rep
        if not offload:
            assert rep["offloaded_frames"] == 0, (name, rep)
            continue
        # Each super-frame holds several MSS: far fewer frames than 4 MiB / 1460.
        assert rep["offloaded_frames"] > 0, (name, rep)
        if name == "bareweb":
            # The client's window is scaled (1 MiB): bareweb's frames reach 64 KiB once
            # slow start has opened its window, ~32 per 1 MiB on a new connection and ~17
            # on a kept one. The unscaled 64 KiB window of before took 64 or more (16 KiB
            # frames, a quarter window, docs/perf/log/2026-11-25-bare-client-window.md).
            assert rep["offloaded_frames"] < 4 * 48, rep
    assert "receive offloads on TAP bwc0:" in r.stderr and " 0 super-frames" not in r.stderr, \
        r.stderr
