"""Bonding on the bare machine (the bonding paper): `bareweb run --net tap:A --net tap:B
--bond split|spread` under QEMU with two virtio-net, e1000, e1000e, igb or vmxnet3 NICs whose TAPs sit on
one bridge in the test's namespace (which also holds the client addresses). A capture on
the bridge shows which MAC every frame left from; failover is QEMU's monitor `set_link`
taking a send NIC down, back up, then the receive NIC down, under 20 parallel 1 MiB
downloads. Both many-core modes run the failover too (two CPUs: network-core mode, and
per-queue mode on multi-queue TAPs, and on two e1000e or two igb with RSS; two vmxnet3, one queue
each: network-core mode). A set may mix models
(`--nic e1000e --nic virtio`: NIC 0 an 82574L, NIC 1 a virtio-net, each through its own
driver). And `--net user` twice: one QEMU hub, no root."""
import hashlib
import json
import signal
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

import qemu_harness
from qemu_harness import has_nic
from conftest import HOST_IP, MAC, SERVER_IP, SITE, Kernel

# NIC 0's MAC is the harness's (`bareweb run --mac MAC`), NIC 1's is given here.
MACS = [MAC, "02:00:00:00:0c:01"]
TAPS = ["bwk0", "bwk1"]
BRIDGE = "bwkbr"
CLIENTS = ["10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"]
BIG = "/files/1m.bin"


def sha(path):
    return hashlib.sha256((SITE / path.lstrip("/")).read_bytes()).hexdigest()


def site_files():
    return sorted("/" + p.relative_to(SITE).as_posix() for p in SITE.rglob("*")
                  if p.is_file() and not p.name.startswith("."))


class BondKernel(Kernel):
    """The kernel with two NICs on TAPs bridged in its namespace, and a QEMU monitor."""

    def __init__(self, nic, bond, smp=None, mode=None, multi_queue=False, more=()):
        """`nic`: one model for both NICs, or `A+B` (NIC 0 model A, NIC 1 model B);
        `more`: further `run` arguments."""
        self.monitor = None
        nic, _, second = nic.partition("+")
        extra = ["--nic", second] if second else []
        extra += [str(m) for m in more]
        extra += ["--bond", bond, "--bond-monitor-ms", "20", "--net", f"tap:{TAPS[1]}",
                 "--mac", MACS[1], "--monitor", "{monitor}"]
        if mode:
            extra += ["--mode", mode]
        self.bond = bond
        self._extra = extra
        # The monitor's socket is named after the namespace, known only once it exists:
        # `setup_net` (run before QEMU starts) replaces the placeholder in this list.
        super().__init__(nic=nic, extra=extra, smp=smp, multi_queue=multi_queue)
        if second:
            log = self.log()
            assert f"nic: {nic} 0 at" in log and "nic: virtio-net 1 at" in log, log[-3000:]

    def setup_net(self, multi_queue):
        mq = ["multi_queue"] if multi_queue else []
        self.ns.ip("link", "add", BRIDGE, "type", "bridge")
        for tap in TAPS:
            self.ns.ip("tuntap", "add", "dev", tap, "mode", "tap", *mq)
            self.ns.ip("link", "set", tap, "master", BRIDGE)
            self.ns.ip("link", "set", tap, "up")
        for ip in [HOST_IP, *CLIENTS]:
            self.ns.ip("addr", "add", f"{ip}/24", "dev", BRIDGE)
        self.ns.ip("link", "set", BRIDGE, "up")
        self.monitor = f"/tmp/{self.ns.name}.monitor"
        self._extra[self._extra.index("{monitor}")] = self.monitor

    def hmp(self, command):
        """One QEMU monitor command; returns its output."""
        return qemu_harness.hmp(self.monitor, command)

    def neighbour(self):
        r = self.ns.run("ip", "neigh", "show", SERVER_IP)
        words = r.stdout.split()
        return words[words.index("lladdr") + 1] if "lladdr" in words else None

    def sniff(self, seconds):
        from qemu_harness import CLIENT
        p = subprocess.Popen(self.ns.cmd("python3", CLIENT, "sniff", BRIDGE, seconds, SERVER_IP),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Traffic starts once the capture's socket is bound (it says so on stderr).
        line = p.stderr.readline()
        assert line == "ready\n", line + p.stderr.read()
        return p


def capture_result(p, seconds):
    """The capture's counts; it is stopped now (SIGTERM), having seen what came before."""
    time.sleep(0.2)
    p.terminate()
    out, err = p.communicate(timeout=seconds + 60)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("nic", ["virtio", "e1000", "e1000e", "igb", "vmxnet3", "e1000e+virtio"])
@pytest.mark.parametrize("bond", ["spread", "split"])
def test_every_file_intact_and_frames_leave_from_the_right_macs(nic, bond):
    if nic == "igb":
        has_nic("igb")
    k = BondKernel(nic, bond)
    try:
        cap = k.sniff(60)
        r = k.ns.client("parallel", "4", BIG, sha(BIG), "0", ",".join(CLIENTS[:2]))
        assert r["ok"] == 4, r
        for path in site_files():
            got = k.ns.client("get", path)
            assert got["status"] == 200 and got["sha256"] == sha(path), path
        c = capture_result(cap, 60)
        if bond == "spread":
            assert set(c["data"]) == set(MACS), f"data from both NICs: {c}"
        else:
            assert set(c["data"]) == {MACS[1]}, f"data only from the send NIC: {c}"
            assert set(c["control"]) == {MACS[1]}, c
        assert c["arps"] and all(a[1] == MACS[0] and a[2] == MACS[0] for a in c["arps"]), c
        assert k.neighbour() == MACS[0]
        st = k.stats_json()["bond"]
        assert (st["mode"], st["receive"], st["nics"][0]["garps"]) == (bond, 0, 3), st
        k.check_log()
    finally:
        k.close()


FAILOVER = [
    ("virtio", None, None, False),
    ("e1000", None, None, False),
    ("virtio", 2, "netcore", False),
    ("virtio", 2, "perqueue", True),
    ("e1000e", 2, "perqueue", False),
    ("e1000+virtio", None, None, False),
    ("igb", 2, "perqueue", False),
    ("vmxnet3", None, None, False),
    ("vmxnet3", 2, "netcore", False),
]


@pytest.mark.parametrize("nic,smp,mode,mq", FAILOVER,
                         ids=["virtio", "e1000", "virtio-netcore-2", "virtio-perqueue-2",
                              "e1000e-perqueue-2", "e1000-virtio", "igb-perqueue-2", "vmxnet3",
                              "vmxnet3-netcore-2"])
def test_set_link_under_twenty_downloads(nic, smp, mode, mq):
    if nic == "igb":
        has_nic("igb")
    k = BondKernel(nic, "spread", smp=smp, mode=mode, multi_queue=mq)
    try:
        events = []

        def seen(nic, link):
            """Each change must be seen by the kernel before the next: a vCPU that a busy
            host (TCG) did not run within the fixed pause never saw the flap. 30 s at most."""
            deadline = time.time() + 30
            while k.stats_json()["bond"]["nics"][nic]["link"] != link and \
                    time.time() < deadline:
                time.sleep(0.1)

        def fail():
            # Once every download is connected (they then take ~5 s each).
            k.ns.wait_established(20)
            time.sleep(0.8)
            events.append(("nic1 off", k.hmp("set_link nic1 off")))
            time.sleep(0.8)
            seen(1, "down")
            events.append(("nic1 on", k.hmp("set_link nic1 on")))
            time.sleep(0.8)
            seen(1, "up")
            events.append(("nic0 off", k.hmp("set_link nic0 off")))

        t = threading.Thread(target=fail)
        t.start()
        # 20 downloads of 1 MiB at 200 KiB/s each from four client addresses: ~5 s each,
        # so every link change falls in the middle of them.
        r = k.ns.client("parallel", "20", BIG, sha(BIG), "200", ",".join(CLIENTS))
        t.join()
        assert r["ok"] == 20, (r, k.report())
        assert len(events) == 3, events
        assert min(r["times"]) > 3.0, "the downloads outlived the link changes"
        assert k.neighbour() == MACS[1], "the neighbour table moved to the new receive MAC"
        st = k.stats_json()["bond"]
        n0, n1 = st["nics"]
        assert st["receive"] == 1 and st["elections"] == 1, st
        assert (n0["link"], n0["link_downs"]) == ("down", 1), n0
        assert (n1["link"], n1["link_downs"], n1["link_ups"]) == ("up", 1, 1), n1
        assert n1["moved_off"] >= 1 and n0["moved_off"] >= 1, st
        assert n1["garps"] == 3, n1
        k.check_log()
    finally:
        k.close()


def test_https_downloads_survive_failover(pki, tmp_path):
    """HTTPS over a bond (spread, two virtio-net): eight 1 MiB downloads over TLS from four
    client addresses, rate-limited to last through NIC 1 going down and NIC 0 going down
    after it came back; every body byte-exact (a segment lost in the move is
    retransmitted inside the TLS stream, so a record torn by it would fail to decrypt)."""
    k = BondKernel("virtio", "spread", more=["--tls-cert", pki / "p256.pem",
                                             "--tls-key", pki / "p256.key"])
    try:
        procs = [subprocess.Popen(k.ns.cmd(
            "curl", "-sS", "--fail", "--max-time", "120", "--limit-rate", "200k",
            "--interface", CLIENTS[i % len(CLIENTS)], "--cacert", pki / "ca.pem",
            "-o", tmp_path / f"b{i}", f"https://{SERVER_IP}{BIG}"),
            stderr=subprocess.PIPE, text=True) for i in range(8)]
        k.ns.wait_established(8, port=443)
        time.sleep(0.8)
        k.hmp("set_link nic1 off")
        time.sleep(1.5)
        k.hmp("set_link nic1 on")
        time.sleep(1.5)
        k.hmp("set_link nic0 off")
        errors = [p.communicate(timeout=180)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 8, (errors, k.report())
        want = (SITE / BIG.lstrip("/")).read_bytes()
        assert all((tmp_path / f"b{i}").read_bytes() == want for i in range(8))
        st = k.stats_json()["bond"]
        assert st["nics"][0]["link_downs"] == 1 and st["nics"][1]["link_downs"] == 1, st
        k.check_log()
    finally:
        k.close()


def test_ipv6_downloads_survive_failover_and_every_nic_filters_our_groups(tmp_path):
    """IPv6 over a bond of two e1000 (each with a multicast filter to program): six 1 MiB
    downloads over IPv6 while NIC 0, the receive NIC, goes down; the namespace's IPv6
    neighbour entry moves to NIC 1's MAC by the kernel's unsolicited advertisements, every
    body arrives byte-exact, and with the entry flushed a new solicitation (multicast, to
    our solicited-node group) is answered through NIC 1: its filter holds our groups too."""
    server6 = "2001:db8::2"
    k = BondKernel("e1000", "spread", more=["--ip6", f"{server6}/64"])
    try:
        k.ns.ip("-6", "addr", "add", "2001:db8::1/64", "dev", BRIDGE, "nodad")
        url = f"http://[{server6}]{BIG}"
        deadline = time.time() + 60
        while k.ns.run("curl", "-gs", "-o", "/dev/null", "--max-time", "2", url,
                       check=False).returncode != 0:
            assert time.time() < deadline, k.report()
            time.sleep(0.5)

        def neighbour6():
            words = k.ns.run("ip", "-6", "neigh", "show", server6).stdout.split()
            return words[words.index("lladdr") + 1] if "lladdr" in words else None

        assert neighbour6() == MACS[0]
        procs = [subprocess.Popen(k.ns.cmd(
            "curl", "-gsS", "--fail", "--max-time", "120", "--limit-rate", "200k",
            "-o", tmp_path / f"d{i}", url), stderr=subprocess.PIPE, text=True)
            for i in range(6)]
        k.ns.wait_established(6)
        time.sleep(1.0)
        k.hmp("set_link nic0 off")
        deadline = time.time() + 10
        while neighbour6() != MACS[1] and time.time() < deadline:
            time.sleep(0.1)
        assert neighbour6() == MACS[1], k.report()
        errors = [p.communicate(timeout=180)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 6, (errors, k.report())
        want = (SITE / BIG.lstrip("/")).read_bytes()
        assert all((tmp_path / f"d{i}").read_bytes() == want for i in range(6))
        k.ns.run("ip", "-6", "neigh", "flush", "dev", BRIDGE)
        r = k.ns.run("curl", "-gsS", "--max-time", "20", "-o", "/dev/null", "-w",
                     "%{http_code}", f"http://[{server6}]/", check=False)
        assert r.stdout == "200", (r.stderr, k.report())
        assert neighbour6() == MACS[1]
        st = k.stats_json()["bond"]
        assert st["receive"] == 1 and st["nics"][1]["garps"] == 3, st
        k.check_log()
    finally:
        k.close()


def test_two_user_networks_on_one_hub_serve_tcp_and_udp(tmp_path):
    """`run --net user --net user` (no root, no TAP): both NICs on one QEMU hub with user
    networking. The receive NIC alone reads (the hub gives NIC 1 every frame too, and it
    drops them all, counted); with `--bond-policy size` the data of a TCP download and of
    a UDP one (the UDP paper's protocol, on the same forwarded port number) leave from NIC 1,
    and both arrive intact."""
    from qemu_harness import BIN, require
    require()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    uport = u.getsockname()[1]
    u.close()
    p = subprocess.Popen([BIN, "run", SITE, "--net", "user", "--net", "user", "--bond",
                          "spread", "--bond-policy", "size", "--udp-port", str(uport),
                          "--listen", f"127.0.0.1:{port}", "--headless", "--accel", "tcg"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines, deadline = [], time.time() + 180
        while time.time() < deadline:
            line = p.stderr.readline()
            if not line:
                break
            lines.append(line)
            if "serving at" in line:
                break
        assert lines and "serving at" in lines[-1], "".join(lines)
        assert "2 NICs on one QEMU hub" in lines[-1], lines[-1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{BIG}", timeout=120) as r:
            assert hashlib.sha256(r.read()).hexdigest() == sha(BIG)
        out = tmp_path / "udp.bin"
        r = subprocess.run([BIN, "get", f"bwudp://127.0.0.1:{uport}{BIG}", "-o", out],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert hashlib.sha256(out.read_bytes()).hexdigest() == sha(BIG)
        stats = f"http://127.0.0.1:{port}/.well-known/bareweb/stats?json"
        with urllib.request.urlopen(stats, timeout=60) as r:
            st = json.loads(r.read())["bond"]
        n0, n1 = st["nics"]
        assert (st["mode"], st["policy"], st["receive"]) == ("spread", "size", 0), st
        assert n1["tx_bytes"] >= 2 << 20, f"both files' data from the data NIC: {st}"
        assert n0["tx_bytes"] < 256 << 10, f"only small frames from the control NIC: {st}"
        assert n0["rx_frames"] > 0 and n1["rx_frames"] == 0 and n1["rx_ignored"] > 0, st
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
