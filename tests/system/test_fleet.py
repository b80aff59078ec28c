"""Several bareweb instances behind HAProxy (Debian's, started here): health checks on
/healthz, the PROXY protocol v2, graceful drain and rolling updates with zero failed
fetches, and what an instance killed without warning costs.

Topology (all in namespaces this test makes and deletes):

    client ns  192.168.77.2 ──veth── 192.168.77.1  lb ns: haproxy :80
                                                   ├─ TAP bwf1 10.71.0.1 → instance 1 at 10.71.0.2
                                                   ├─ TAP bwf2 10.72.0.1 → instance 2 at 10.72.0.2
                                                   └─ TAP bwf3 10.73.0.1 → instance 3 at 10.73.0.2

Instances 1 and 2 are `bareweb serve` (host platform); instance 3 is the bare-machine
kernel under QEMU (`bareweb run`, KVM or TCG as `--accel auto` finds). Each accepts the
PROXY protocol from its balancer only (`--proxy-protocol 10.7N.0.1/32`), so its access
log must show the load client's own address.
"""
import glob
import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, SITE, require_root
from qemu_harness import ACCEL, FAILURE_MARKS, Netns, hmp

CLIENT_IP = "192.168.77.2"
LB_IP = "192.168.77.1"
GRACE = 2      # --drain-grace: HAProxy's check (every 200 ms, fall 1) notices well inside it
TIMEOUT = 10   # --drain-timeout
URLS = ["/", "/style.css", "/robots.txt"]

HAPROXY_CFG = """
global
    log stdout format raw local0 info
    maxconn 4096
defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    retries 3
    retry-on conn-failure empty-response response-timeout
    option redispatch
frontend web
    bind {lb}:80
    default_backend bareweb
backend bareweb
    balance roundrobin
    option httpchk
    http-check send meth GET uri /healthz
    default-server inter 200ms fastinter 100ms downinter 200ms fall 1 rise 2 send-proxy-v2 check-send-proxy
{servers}
"""


def version_site(tmp, n):
    """examples/site with a version mark in every file the load fetches, and /healthz on
    (images leave it off unless their bareweb.toml asks for it)."""
    d = pathlib.Path(tmp) / f"v{n}"
    shutil.copytree(SITE, d)
    (d / "bareweb.toml").write_text("healthz = true\nmetrics = true\n")
    for u in URLS:
        f = d / ("index.html" if u == "/" else u.lstrip("/"))
        f.write_bytes(f.read_bytes() + f"\n<!-- site version {n} -->\n".encode())
    return d


class Fleet:
    """The namespaces, HAProxy and the instances."""

    def __init__(self, tmp):
        require_root()
        if shutil.which("haproxy") is None:
            pytest.fail("haproxy missing: sudo apt-get install haproxy (cargo xtask setup does it)")
        self.tmp = pathlib.Path(tmp)
        self.lb = Netns("bwf")
        self.client = Netns("bwf")
        self.procs = {}
        self.logs = {}
        self.haproxy = None
        # `run`'s work directories now: one an instance killed without warning leaves
        # (SIGKILL gives it no chance to remove its own) is removed at close.
        self.work_dirs = set(glob.glob(f"{tempfile.gettempdir()}/bareweb-run-*"))
        subprocess.run(["ip", "link", "add", "bwfa", "netns", self.lb.name, "type", "veth",
                        "peer", "name", "bwfb", "netns", self.client.name], check=True)
        self.lb.ip("addr", "add", f"{LB_IP}/24", "dev", "bwfa")
        self.lb.ip("link", "set", "bwfa", "up")
        self.client.ip("addr", "add", f"{CLIENT_IP}/24", "dev", "bwfb")
        self.client.ip("link", "set", "bwfb", "up")
        # The kernel's TAP exists before QEMU opens it; `serve` makes its own.
        self.lb.ip("tuntap", "add", "dev", "bwf3", "mode", "tap")
        self.lb.ip("addr", "add", "10.73.0.1/24", "dev", "bwf3")
        self.lb.ip("link", "set", "bwf3", "up")

    # --- instances ---------------------------------------------------------------------

    def start(self, k, site, tag):
        """Instance k (1..3) serving `site`; its log is self.logs[tag]."""
        net = f"10.7{k}.0"
        common = ["--proxy-protocol", f"{net}.1/32", "--drain-grace", str(GRACE),
                  "--drain-timeout", str(TIMEOUT), "--access-log"]
        log = open(self.tmp / f"{tag}.log", "w+")
        if k < 3:
            args = [BIN, "serve", site, "--tap", f"bwf{k}", "--ip", f"{net}.2/24", *common]
        else:
            args = [BIN, "run", site, "--net", "tap:bwf3", "--nic", "virtio", "--ip",
                    f"{net}.2/24", "--gw", "none", "--accel", ACCEL, "--headless",
                    "--serial-log", self.tmp / f"{tag}.serial",
                    "--monitor", self.tmp / f"{tag}.mon", *common]
        p = subprocess.Popen(self.lb.cmd("timeout", "-s", "KILL", "600", *args), stdout=log,
                             stderr=subprocess.STDOUT)
        self.procs[k] = (p, tag)
        self.logs[tag] = log
        self.wait_healthy(k, p, tag)

    def access_log(self, tag):
        """Where an instance's access log lines are: stdout for serve, the console for run."""
        serial = self.tmp / f"{tag}.serial"
        if serial.exists():
            return serial.read_text(errors="replace")
        self.logs[tag].flush()
        return (self.tmp / f"{tag}.log").read_text(errors="replace")

    def wait_healthy(self, k, p, tag, limit=120):
        """The instance answers /healthz 200 to a request carrying a PROXY header (curl's
        --haproxy-protocol), from the balancer's address as HAProxy would."""
        deadline = time.time() + limit
        while time.time() < deadline:
            if p.poll() is not None:
                raise AssertionError(f"instance {tag} exited: {self.access_log(tag)[-3000:]}")
            r = self.lb.run("curl", "-s", "--haproxy-protocol", "-o", "/dev/null", "-w",
                            "%{http_code}", "--max-time", "1", f"http://10.7{k}.0.2/healthz",
                            check=False)
            if r.stdout == "200":
                return
            time.sleep(0.2)
        raise AssertionError(f"instance {tag} not healthy in {limit} s")

    def drain(self, k):
        """Graceful stop: SIGTERM to serve, the ACPI power button to the kernel. Returns
        once the instance has exited by itself, with its exit time in seconds."""
        p, tag = self.procs[k]
        t0 = time.time()
        if k < 3:
            # timeout(1) is the process we hold; signal bareweb itself, its child.
            subprocess.run(["pkill", "-TERM", "-P", str(p.pid)], check=False)
        else:
            hmp(self.tmp / f"{tag}.mon", "system_powerdown")
        p.wait(TIMEOUT + 30)
        return time.time() - t0, tag

    def kill(self, k):
        """Without warning: SIGKILL to serve, `quit` to QEMU."""
        p, tag = self.procs[k]
        if k < 3:
            subprocess.run(["pkill", "-KILL", "-P", str(p.pid)], check=False)
        else:
            try:
                hmp(self.tmp / f"{tag}.mon", "quit")
            except OSError:
                pass  # QEMU may drop the monitor before its last word
        p.wait(30)

    # --- the balancer and the load -----------------------------------------------------

    def start_haproxy(self):
        servers = "\n".join(f"    server s{k} 10.7{k}.0.2:80 check" for k in (1, 2, 3))
        cfg = self.tmp / "haproxy.cfg"
        cfg.write_text(HAPROXY_CFG.format(lb=LB_IP, servers=servers))
        self.hlog = open(self.tmp / "haproxy.log", "w+")
        self.haproxy = subprocess.Popen(self.lb.cmd("timeout", "-s", "KILL", "600", "haproxy",
                                                    "-db", "-f", cfg),
                                        stdout=self.hlog, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            r = self.client.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                "--max-time", "1", f"http://{LB_IP}/", check=False)
            if r.stdout == "200":
                return
            time.sleep(0.2)
        raise AssertionError(f"haproxy not serving: {self.hlog_text()}")

    def hlog_text(self):
        self.hlog.flush()
        return (self.tmp / "haproxy.log").read_text(errors="replace")

    def load(self, seconds, rate, verify, out, fetches=None):
        """`bareweb load --rate` from the client namespace through HAProxy, in the
        background; its JSON report is written to `out`. With `fetches`, the run ends once
        that many have begun and finished (each within the 5 s timeout), `seconds` only
        bounding it."""
        fetches = fetches or int(rate * seconds) + 10
        args = [BIN, "load", "--rate", str(rate), "--seconds", str(seconds), "--timeout", "5",
                "--fetches", str(fetches), "-q", "--json-out", out]
        for v in verify:
            args += ["--verify", v]
        args += [f"http://{LB_IP}{u}" for u in URLS]
        return subprocess.Popen(self.client.cmd(*args), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)

    def close(self):
        for p, _ in self.procs.values():
            if p.poll() is None:
                subprocess.run(["pkill", "-KILL", "-P", str(p.pid)], check=False)
                p.kill()
                p.wait()
        if self.haproxy and self.haproxy.poll() is None:
            self.haproxy.kill()
            self.haproxy.wait()
        for ns in (self.lb, self.client):
            r = subprocess.run(["ip", "netns", "pids", ns.name], capture_output=True, text=True)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            ns.close()
        for f in self.logs.values():
            f.close()
        for d in set(glob.glob(f"{tempfile.gettempdir()}/bareweb-run-*")) - self.work_dirs:
            shutil.rmtree(d, ignore_errors=True)


def report(path):
    return json.loads(pathlib.Path(path).read_text())


def failed(r):
    return r["fetches_started"] - r["fetches_ok"]


@pytest.fixture
def fleet():
    with tempfile.TemporaryDirectory(prefix="bwfleet") as tmp:
        f = Fleet(tmp)
        try:
            yield f
        finally:
            f.close()


def test_rolling_update_behind_haproxy(fleet):
    """Every instance replaced, one at a time, by one serving the site's next version,
    under a constant rate of fetches: not one fails, every body is one version's file
    whole, the old instances drain and exit by themselves, and every access log names the
    load client, not HAProxy."""
    v1 = version_site(fleet.tmp, 1)
    v2 = version_site(fleet.tmp, 2)
    for k in (1, 2, 3):
        fleet.start(k, v1, f"old{k}")
    fleet.start_haproxy()
    out = fleet.tmp / "rolling.json"
    seconds = 25 + 3 * (GRACE + 4)
    load = fleet.load(seconds, 100, [v1, v2], out)
    time.sleep(2)
    exits = {}
    for k in (1, 2, 3):
        took, tag = fleet.drain(k)
        exits[tag] = took
        fleet.start(k, v2, f"new{k}")
        time.sleep(1)  # HAProxy's rise 2 at 200 ms, and a moment of load on the new one
    _, err = load.communicate(timeout=seconds + 60)
    r = report(out)
    print(f"rolling update: {r['fetches_ok']} of {r['fetches_started']} fetches good, "
          f"drain exits {exits}, errors {r['errors']}")
    assert r["fetches_started"] >= 100 * (seconds - 5), r
    assert failed(r) == 0, (r, err, fleet.hlog_text()[-3000:])
    for tag, took in exits.items():
        # Stopped within the drain timeout (plus QEMU's own exit), not killed.
        assert GRACE <= took <= TIMEOUT + 10, (tag, took)
        text = fleet.access_log(tag)
        assert "drain" in text, text[-2000:]
        for mark in FAILURE_MARKS:
            assert mark not in text, text[-3000:]
    # The new instances served the new version, and every access log names the client.
    for tag in ("old1", "old2", "old3", "new1", "new2", "new3"):
        lines = [line for line in fleet.access_log(tag).splitlines() if '"GET /' in line
                 and "/healthz" not in line]
        assert lines, f"{tag} logged no fetch"
        assert all(line.split()[0] == CLIENT_IP or line.split()[0].endswith(CLIENT_IP)
                   for line in lines), (tag, [x for x in lines if CLIENT_IP not in x][:3])


def test_instance_killed_without_warning(fleet):
    """SIGKILL to a host instance, then `quit` to the kernel's QEMU, under a constant rate
    of fetches: HAProxy's check takes each out. Fetches are begun in windows of 100 over
    half a second from the kill on, each window waiting for its fetches to end: how many
    failed (HAProxy's retries and redispatch hide most: those are slow, the slowest window
    says how slow), and how long until a window had none; HAProxy's own log says when it
    marked the server down. A window ends only when its fetches have, so none is counted
    as failed for being cut off (a CI run once was, at 3.97 s)."""
    site = version_site(fleet.tmp, 1)
    for k in (1, 2, 3):
        fleet.start(k, site, f"i{k}")
    fleet.start_haproxy()
    results = []
    for k in (1, 3):
        fleet.kill(k)
        t_kill = time.time()
        failed_total, started_total, last_bad, bad, slowest = 0, 0, None, [], 0
        for w in range(12):  # 6 s of windows
            wout = fleet.tmp / f"kill{k}w{w}.json"
            t_w = time.time() - t_kill
            # 100 fetches begun over half a second, each waited for: a fetch HAProxy
            # retried elsewhere is slow, not failed, and none is cut off by the window.
            fleet.load(10, 200, [site], wout, fetches=100).communicate(timeout=60)
            r = report(wout)
            slowest = max(slowest, time.time() - t_kill - t_w)
            failed_total += failed(r)
            started_total += r["fetches_started"]
            if failed(r):
                last_bad = time.time() - t_kill
                bad.append((w, round(t_w, 2), round(last_bad, 2), r["errors"]))
        down = f"Server bareweb/s{k} is DOWN" in fleet.hlog_text()
        results.append((k, failed_total, started_total, last_bad, round(slowest, 2), down,
                        bad))
        assert down, fleet.hlog_text()[-3000:]
        # Whatever failed, failed only in the first seconds: the check took it out.
        # What HAProxy said of each request that was not a plain 200 (status, retries,
        # termination state) tells a failure of the killed instance from any other.
        odd = [line for line in fleet.hlog_text().splitlines()
               if " 200 " not in line and "GET" in line]
        if bad:
            print("haproxy's requests not answered 200:", *odd[-10:], sep="\n  ")
        assert last_bad is None or last_bad < 3, (k, bad, odd[-20:])
        assert started_total >= 900, (k, started_total)
    print("killed without warning (instance, failed, of, seconds from the kill to the "
          "last window with a failure, the slowest window's seconds, marked down by "
          "haproxy, the windows with failures):", results)
