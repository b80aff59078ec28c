"""The UDP paper's stateless protocol on the bare machine: `bareweb run --udp-port` under
QEMU on a TAP in a namespace, every file of examples/site fetched with `bareweb get
bwudp://` (bytes compared), on one core (virtio-net and e1000) and on several in
network-core and per-queue mode (the core octet of the packets says which core answered),
and over a path that drops 10% and duplicates 5% of the frames each way."""
import hashlib
import json
import pathlib

import pytest

from conftest import BIN, HOST_IP, SERVER_IP, SITE, Kernel, Netns
from qemu_harness import has_nic
from udp_net import Routed

UDP_PORT = 8081
SPEC_CLIENT = pathlib.Path(__file__).resolve().parents[1] / "system" / "bwudp.py"


def site_files():
    return sorted(p for p in SITE.rglob("*") if p.is_file() and not p.name.startswith("."))


def url_path(p):
    return "/" + p.relative_to(SITE).as_posix()


def fetch_all(ns, tmp_path):
    """Every file with `bareweb get`, compared; the `-v` lines."""
    lines = []
    for f in site_files():
        out = tmp_path / "got"
        r = ns.run(BIN, "get", f"bwudp://{SERVER_IP}:{UDP_PORT}{url_path(f)}", "-o", out, "-v",
                   check=False, timeout=300)
        assert r.returncode == 0, f"{url_path(f)}: {r.stderr}"
        assert out.read_bytes() == f.read_bytes(), f"{url_path(f)}: wrong bytes"
        lines.append(r.stderr.strip())
    return lines


def cores_seen(ns, tmp_path, paths):
    """The core octets of the packets answering `paths` (through the spec's client)."""
    seen = set()
    for p in paths:
        r = ns.run("python3", SPEC_CLIENT, "get", SERVER_IP, UDP_PORT, p, tmp_path / "x",
                   check=False, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        res = json.loads(r.stdout.strip().splitlines()[-1])
        assert res["sha256"] == hashlib.sha256((SITE / p.lstrip("/")).read_bytes()).hexdigest()
        seen |= set(res["counts"]["cores"])
    return seen


@pytest.mark.parametrize("nic", ["virtio", "e1000", "igb", "vmxnet3"])
def test_every_file_on_one_core(nic, tmp_path):
    k = Kernel(nic=nic, extra=["--udp-port", str(UDP_PORT)])
    try:
        fetch_all(k.ns, tmp_path)
        assert cores_seen(k.ns, tmp_path, ["/files/4k.html", "/index.html"]) == {0}
        st = k.stats()
    finally:
        k.close()
    assert st["udp_initial"] >= len(site_files()), st
    assert st["late_allocs"] == 0, st


@pytest.mark.parametrize("nic,smp,mode,mq", [("virtio", 3, "netcore", False),
                                             ("virtio", 2, "perqueue", True),
                                             ("e1000e", 2, "perqueue", False),
                                             ("igb", 4, "perqueue", False),
                                             ("vmxnet3", 3, "netcore", False)],
                         ids=["netcore3", "perqueue2", "e1000e-perqueue2", "igb-perqueue4",
                              "vmxnet3-netcore3"])
def test_every_file_on_several_cores(nic, smp, mode, mq, tmp_path):
    if nic == "igb":
        has_nic("igb")
    k = Kernel(nic=nic, smp=smp, multi_queue=mq,
               extra=["--udp-port", str(UDP_PORT), "--mode", mode])
    try:
        fetch_all(k.ns, tmp_path)
        paths = ["/files/4k.html", "/index.html", "/style.css", "/robots.txt"]
        seen = cores_seen(k.ns, tmp_path, paths)
        st = k.stats()
    finally:
        k.close()
    if mode == "netcore":
        # Core 0 dispatches; HTTP cores 1 and 2 answer, round robin.
        assert seen == {1, 2}, seen
    else:
        assert seen and seen <= set(range(smp)), seen
    assert st["udp_initial"] >= len(site_files()), st
    assert st["late_allocs"] == 0, st


class ClientNetns(Netns):
    prefix = "bwkc"


@pytest.mark.parametrize("smp,mode,mq", [(1, None, False), (3, "netcore", False),
                                         (2, "perqueue", True)],
                         ids=["single", "netcore3", "perqueue2"])
def test_every_file_over_ten_percent_loss_and_five_percent_duplication(smp, mode, mq, tmp_path):
    extra = ["--udp-port", str(UDP_PORT)] + (["--mode", mode] if mode else [])
    k = Kernel(nic="virtio", smp=smp, multi_queue=mq, extra=extra, gw=HOST_IP)
    routed = None
    try:
        routed = Routed(k.ns, k.tap, loss=10, dup=5, netns_class=ClientNetns)
        lines = fetch_all(routed.client, tmp_path)
        k.check_alive()
    finally:
        if routed:
            routed.close()
        k.close()
    print("\n".join(lines))
    assert any(" 0 re-requested" not in line for line in lines), lines


FAMILIES = {
    # The server's own address words, the client's, and the server's host in the URL.
    "ipv4": ([], ["--ip", "10.0.0.3/24"], SERVER_IP),
    "ipv6": (["--ip6", "2001:db8::2/64"], ["--ip6", "2001:db8::3/64"], "[2001:db8::2]"),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_bare_client_booted_as_a_kernel(family, tmp_path):
    """`bareweb load --udp --kernel`: the bare client boots under QEMU on a TAP bridged
    with the kernel server's TAP (two bare machines, as in the paper), runs the paper's
    schedule and reports; every request completed. Over IPv6 the kernel server holds
    2001:db8::2 and the kernel client 2001:db8::3 (`--ip6`, after DAD), which solicits the
    server's MAC."""
    server_words, client_words, host = FAMILIES[family]
    k = Kernel(nic="virtio", extra=["--udp-port", str(UDP_PORT), "--udp-paper-mode",
                                    *server_words])
    try:
        ns = k.ns
        ns.ip("tuntap", "add", "bwkc0", "mode", "tap")
        ns.ip("link", "add", "bwkbr", "type", "bridge")
        # The server's TAP carries the host's address: move it to the bridge.
        ns.ip("addr", "flush", "dev", k.tap)
        for d in (k.tap, "bwkc0"):
            ns.ip("link", "set", d, "master", "bwkbr")
        ns.ip("addr", "add", f"{HOST_IP}/24", "dev", "bwkbr")
        for d in ("bwkbr", "bwkc0"):
            ns.ip("link", "set", d, "up")
        r = ns.run(BIN, "load", "--udp", "--kernel", "--tap", "bwkc0", *client_words,
                   f"bwudp://{host}:{UDP_PORT}/files/4k.html", "--frequency", "40",
                   "--maxreq", "4", "--seconds", "2", "--json", "-q", check=False, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        rep = json.loads(r.stdout)
        k.check_alive()
    finally:
        k.close()
    print(rep)
    assert rep["client"] == "bare kernel", rep
    assert rep["started"] >= 700 and rep["completed"] == rep["started"], rep
    assert rep["bytes"] == rep["completed"] * 4096, rep
