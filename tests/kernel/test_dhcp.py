"""`ip=dhcp` — the kernel gets its address from a DHCP server before serving,
keeps it while serving (renewing at T1), shows it on the console and the stats page, and
refuses hostile answers, counting them.

- QEMU user networking's own DHCP server (`bareweb run --ip dhcp`, no root);
- dnsmasq in a network namespace on the kernel's TAP, with T1 = 3 s, so a renewal happens
  within the test;
- a hostile server (tests/kernel/dhcp_server.py) that first sends the answers a client must
  refuse (wrong xid, another client's MAC, options running past the end, a zero lease,
  a broadcast address), then a good lease; at the renewal it says NAK: the kernel drops
  the address, stops answering on it, discovers again and gets it back.
"""
import json
import pathlib
import subprocess
import sys
import time

import pytest

from conftest import HOST_IP, SERVER_IP, SITE, TAP, Kernel
from qemu_harness import STATS, require
from test_run_startup import free_port, get, start, stop, wait_serving

HERE = pathlib.Path(__file__).resolve().parent
URL = f"http://{SERVER_IP}"


def wait_log(k, text, limit=60):
    deadline = time.time() + limit
    while time.time() < deadline:
        k.check_alive()
        if text in k.log():
            return
        time.sleep(0.1)
    raise AssertionError(f"no {text!r} on the console in {limit} s:\n{k.report()}")


def curl(k, path="/", secs=10):
    r = k.ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", secs,
                 URL + path, check=False)
    return r.stdout.strip()


def test_from_qemu_user_networking(tmp_path):
    """`bareweb run --ip dhcp` under QEMU user networking: slirp's DHCP server gives
    10.0.2.15 and the router 10.0.2.2; the page is served through the host forward."""
    require()
    port = free_port()
    serial = tmp_path / "serial"
    p = start(SITE, "--ip", "dhcp", "--listen", f"127.0.0.1:{port}", "--serial-log", serial)
    try:
        wait_serving(p, limit=120)
        status, body = get(port)
        assert status == 200 and body == (SITE / "index.html").read_bytes()
        log = serial.read_text(errors="replace")
        assert "dhcp: 10.0.2.15/24 router 10.0.2.2 lease 86400 s from 10.0.2.2" in log, log
        status, body = get(port, STATS)
        d = json.loads(body)["dhcp"]
        assert d["state"] == "bound" and d["address"] == "10.0.2.15/24", d
        assert d["router"] == "10.0.2.2" and d["lease_s"] == 86400 and d["refused"] == 0, d
    finally:
        stop(p)


class DhcpKernel(Kernel):
    """The kernel with `--ip dhcp` on its TAP, a DHCP server (`server`: the command to
    run in the namespace, its output to a log) started on the TAP before QEMU."""

    server = None

    def __init__(self, **kw):
        super().__init__(ip="dhcp", **kw)

    def setup_net(self, multi_queue):
        super().setup_net(multi_queue)
        self.server_log = pathlib.Path(f"/tmp/{self.ns.name}.dhcp")
        out = open(self.server_log, "w")
        # Killed by PID with everything else in the namespace (`Kernel.stop`).
        self.server_proc = subprocess.Popen(self.ns.cmd("timeout", "-s", "KILL", 600,
                                                        *self.server(self.ns.name)),
                                            stdout=out, stderr=subprocess.STDOUT)
        time.sleep(0.3)

    def server_output(self):
        return self.server_log.read_text(errors="replace")


class Dnsmasq(DhcpKernel):
    @staticmethod
    def server(name):
        return ["dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts", "--port=0",
                f"--interface={TAP}", "--bind-interfaces", "--user=root", "--pid-file",
                f"--dhcp-range={SERVER_IP},{SERVER_IP},255.255.255.0,2m",
                f"--dhcp-option=option:router,{HOST_IP}", "--dhcp-option=option:T1,3",
                "--dhcp-option=option:T2,100", f"--dhcp-leasefile=/tmp/{name}.leases",
                "--no-ping", "--log-dhcp", "--log-facility=-"]


# One core; two cores per-queue (a reply may come in on either queue: core 1 hands it to
# core 0, which runs the client); two cores network-core (core 0 sees every reply); two
# cores per-queue on an e1000e (RSS puts a reply on either queue); one core on a vmxnet3
# (its receive filter: broadcast and the NIC's own MAC).
MODES = [("single", {}), ("perqueue", dict(smp=2, multi_queue=True)),
         ("netcore", dict(smp=2, extra=["--mode", "netcore"])),
         ("perqueue", dict(nic="e1000e", smp=2)), ("single", dict(nic="igb")),
         ("single", dict(nic="vmxnet3"))]


@pytest.mark.parametrize("mode,kw", MODES,
                         ids=[f"{kw['nic']}-{m}" if "nic" in kw else m for m, kw in MODES])
def test_from_dnsmasq_and_renewed_while_serving(mode, kw):
    k = Dnsmasq(**kw)
    try:
        wait_log(k, f"dhcp: {SERVER_IP}/24 router {HOST_IP} lease 120 s from {HOST_IP}")
        assert curl(k) == "200", k.report()
        # T1 = 3 s: a renewal, unicast to dnsmasq, while serving.
        wait_log(k, "dhcp: renewed", limit=30)
        assert curl(k, "/files/4k.html") == "200", k.report()
        out = k.server_output()
        assert out.count("DHCPACK") >= 2, out
        full = k.stats_json()
        assert full["mode"] == mode, full["mode"]
        st = full["dhcp"]
        assert st["state"] == "bound" and st["address"] == f"{SERVER_IP}/24", st
        assert st["acks"] >= 2 and st["refused"] == 0, st
        assert 0 < st["remaining_s"] <= 120, st
    finally:
        k.close()


class Hostile(DhcpKernel):
    @staticmethod
    def server(name):
        return [sys.executable, HERE / "dhcp_server.py", TAP, HOST_IP, SERVER_IP]


def test_hostile_answers_are_refused_and_a_nak_ends_the_lease():
    k = Hostile()
    try:
        wait_log(k, f"dhcp: {SERVER_IP}/24 router {HOST_IP} lease 3600 s from {HOST_IP}")
        assert curl(k) == "200", k.report()
        st = k.stats_json()["dhcp"]
        # wrong xid, another MAC, an option past the end, a zero lease, a broadcast
        # address (OFFERs); a zero lease (ACK).
        assert st["refused"] >= 6 and st["refused_not_ours"] >= 2, (st, k.server_output())
        # The renewal at T1 = 4 s gets a NAK: the address is dropped at once.
        wait_log(k, "dhcp: lost 10.0.0.2 (NAK)", limit=30)
        # Not answering on it (the server ignores DISCOVERs for 3 s).
        assert curl(k, secs=1) == "000", k.report()
        # ... and given again by the server at the next discovery.
        wait_log(k, "dhcp: 10.0.0.2/24 router 10.0.0.1 lease 60 s", limit=30)
        assert curl(k) == "200", k.report()
        st = k.stats_json()["dhcp"]
        assert st["naks"] == 1 and st["discovers"] >= 2, st
        out = k.server_output()
        assert "sent NAK" in out and "ignored a DISCOVER while the address is lost" in out, out
    finally:
        k.close()
