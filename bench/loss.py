#!/usr/bin/env python3
"""1 MiB downloads over a lossy link: bareweb (host platform on a TAP, with and without
segmentation offload) next to nginx on Linux (a veth into a second namespace), the same
nftables rules dropping a given share of packets each way on the client's link.

The path is routed, as on a real network: the server's link (bareweb's TAP, or nginx's
veth) ends in a router namespace, and the client sits behind a second veth whose
offloads are off, so every packet on the lossy hop is one MTU-sized packet whatever the
server hands its device: bareweb's offloaded 64 KiB frames are cut into segments by the
router (as a NIC's TSO would on a wire) before the loss, and so are Linux's GSO frames.
`--hop` puts the loss on the server's own link instead (the older set-up): there
bareweb's offloaded frames are dropped whole.

    sudo python3 bench/loss.py [--loss 1,5,10] [--n 20] [--servers bareweb,bareweb-bbr,nginx-cubic,nginx-bbr]

`bareweb` runs with its default congestion control (CUBIC), `bareweb-bbr` with BBR
(`bareweb-cubic` names CUBIC; a `-no-tso` suffix turns segmentation offload off).

nginx runs with Linux's CUBIC (`nginx-cubic`, upstream Linux's default) and BBR
(`nginx-bbr`; this machine's default, and far better at high loss), each set in nginx's
namespace; ratios are against the better of them per loss rate (the peer at its best).

Each download is a new connection (`Connection: close`) fetching /files/1m.bin of the
example site, checked by SHA-256; the times are per download, sequential. Servers and
loss rates are interleaved per round so a slow spell of the machine hits all alike.
Prints a Markdown table (median, mean, max, and the ratio of medians to nginx) and each
server's loss-recovery counters. Needs root (namespaces, TAP, veth); runs nothing outside
the namespaces it makes and removes them at the end.
"""
import argparse
import hashlib
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import Server  # noqa: E402
from qemu_harness import HOST_IP, SERVER_IP, SITE, Netns  # noqa: E402

FILE = "/files/1m.bin"
COUNTERS = ("tcp_fast_retransmits", "tcp_sack_retransmits", "tcp_lost_retransmits",
            "tcp_loss_probes", "tcp_rto_retransmits")


def loss_rules(loss, dev="bw0"):
    return f"""
table netdev bwloss {{
  chain in {{ type filter hook ingress device "{dev}" priority 0; policy accept;
    numgen random mod 100 < {loss} drop
  }}
  chain out {{ type filter hook egress device "{dev}" priority 0; policy accept;
    numgen random mod 100 < {loss} drop
  }}
}}
"""


def apply_loss(ns, loss, dev="bw0"):
    r = subprocess.run(ns.cmd("nft", "-f", "-"), input=loss_rules(loss, dev), text=True,
                       capture_output=True)
    if r.returncode != 0:
        sys.exit(f"nft: {r.stderr}")


ROUTER_IP = "10.99.0.1"
CLIENT_IP = "10.99.0.2"


def add_client(router):
    """A client namespace behind a veth from `router` (which forwards), offloads off on
    both ends: what crosses it is MTU-sized packets. Returns the client namespace."""
    client = Netns("bwc")
    subprocess.run(["ip", "-n", router.name, "link", "add", "bwr0", "type", "veth", "peer",
                    "name", "bwc0", "netns", client.name], check=True)
    router.ip("addr", "add", f"{ROUTER_IP}/24", "dev", "bwr0")
    router.ip("link", "set", "bwr0", "up")
    client.ip("addr", "add", f"{CLIENT_IP}/24", "dev", "bwc0")
    client.ip("link", "set", "bwc0", "up")
    client.ip("route", "add", "default", "via", ROUTER_IP)
    router.run("sysctl", "-qw", "net.ipv4.ip_forward=1")
    for ns, dev in ((router, "bwr0"), (client, "bwc0")):
        ns.run("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
    return client


class Nginx:
    """nginx in its own namespace behind a veth; the client namespace holds `bw0`. Its best
    configuration found for the scenario, with `worker_connections` and extra `http`
    directives as the caller needs (bench/flood.py)."""

    def __init__(self, worker_connections=1024, extra=""):
        self.ns = Netns("bwl")
        self.srv = Netns("bwl")
        self.dir = tempfile.mkdtemp(prefix="bwloss-nginx-")
        subprocess.run(["ip", "-n", self.ns.name, "link", "add", "bw0", "type", "veth", "peer",
                        "name", "bwp0", "netns", self.srv.name], check=True)
        self.ns.ip("addr", "add", f"{HOST_IP}/24", "dev", "bw0")
        self.ns.ip("link", "set", "bw0", "up")
        self.srv.ip("addr", "add", f"{SERVER_IP}/24", "dev", "bwp0")
        self.srv.ip("link", "set", "bwp0", "up")
        # Offloads off on the veth: every frame on the lossy hop is one MTU-sized packet,
        # as on a wire (with them on, nftables sees 64 KiB GSO frames and one drop per
        # frame is far fewer drops per byte).
        for ns, dev in ((self.srv, "bwp0"), (self.ns, "bw0")):
            ns.run("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
        conf = pathlib.Path(self.dir) / "nginx.conf"
        d = self.dir
        conf.write_text(f"""worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log;
worker_rlimit_nofile {worker_connections * 2};
events {{ worker_connections {worker_connections}; }}
http {{
    include /etc/nginx/mime.types;
    access_log off;
    sendfile on;
    tcp_nopush off;
    tcp_nodelay on;
    client_body_temp_path {d};
    proxy_temp_path {d};
    fastcgi_temp_path {d};
    uwsgi_temp_path {d};
    scgi_temp_path {d};
    {extra}
    server {{ listen {SERVER_IP}:80; root {SITE}; }}
}}
""")
        self.proc = subprocess.Popen(self.srv.cmd("nginx", "-c", conf, "-g", "daemon off;"),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.mac = self.srv.run("cat", "/sys/class/net/bwp0/address").stdout.strip()
        deadline = time.time() + 10
        while time.time() < deadline:
            r = self.ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                            "1", f"http://{SERVER_IP}/", check=False)
            if r.stdout == "200":
                return
            time.sleep(0.1)
        self.close()
        sys.exit("nginx did not come up")

    def stop(self):
        return {}

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.ns.close()
        self.srv.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def start(kind, routed):
    gw = ["--gw", HOST_IP] if routed else []
    # bareweb with its default congestion control, or with BBR / CUBIC named
    # (`bareweb-bbr`, `bareweb-cubic`, `bareweb-cubic-no-tso`...), with or without offload.
    if kind.startswith("bareweb"):
        extra = list(gw)
        words = kind.split("-")[1:]
        for w in words:
            if w in ("bbr", "cubic"):
                extra += ["--cc", w]
        if kind.endswith("no-tso"):
            extra.append("--no-tso")
        elif any(w not in ("bbr", "cubic") for w in words):
            sys.exit(f"unknown server {kind}")
        return Server(extra=extra, prefix="bwl")
    if kind in ("nginx", "nginx-cubic", "nginx-bbr"):
        n = Nginx()
        try:
            if routed:
                n.srv.ip("route", "add", "default", "via", HOST_IP)
            # Linux's congestion control for nginx's connections: the machine's default
            # (`nginx`), or CUBIC (upstream Linux's default) or BBR by name.
            if kind != "nginx":
                allow_congestion_control(kind[6:])
                n.srv.run("sysctl", "-qw", f"net.ipv4.tcp_congestion_control={kind[6:]}")
        except BaseException:
            n.close()  # its namespaces and nginx, which round_of's finally never sees
            raise
        return n
    sys.exit(f"unknown server {kind}")


ALLOWED = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
ALLOWED_BEFORE = []


def allow_congestion_control(name):
    """A namespace may only pick an algorithm the host allows (else EPERM): add `name` to
    the host's allowed list (what unprivileged programs may choose; the default stays as it
    is), restored at exit."""
    now = pathlib.Path(ALLOWED).read_text().split()
    if name not in now:
        if not ALLOWED_BEFORE:
            ALLOWED_BEFORE.append(" ".join(now))
        pathlib.Path(ALLOWED).write_text(" ".join(now + [name]))


def restore_allowed():
    if ALLOWED_BEFORE:
        pathlib.Path(ALLOWED).write_text(ALLOWED_BEFORE[0])


def round_of(kind, loss, n, want, routed=True):
    s = start(kind, routed)
    client = None
    try:
        if routed:
            client = add_client(s.ns)
            apply_loss(client, loss, "bwc0")
        else:
            client = s.ns
            apply_loss(s.ns, loss)
        res = client.client("loss", str(n), FILE, want, timeout=n * 130)
        counters = s.stop()
    finally:
        s.close()
        if routed and client is not None:
            client.close()
    if res["ok"] != n:
        print(f"  {kind} {loss}%: {n - res['ok']} of {n} failed: {res['bad'][:3]}", flush=True)
    return res["times"], {k: counters.get(k, 0) for k in COUNTERS if k in counters}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loss", default="1,5,10", help="percent dropped each way, comma list")
    ap.add_argument("--n", type=int, default=20, help="downloads per server and loss rate")
    ap.add_argument("--rounds", type=int, default=2, help="rounds the downloads are split in")
    ap.add_argument("--servers", default="bareweb,bareweb-bbr,nginx-cubic,nginx-bbr",
                    help="bareweb (its default congestion control), bareweb-bbr, "
                    "bareweb-cubic, each with -no-tso for no segmentation offload; nginx (the "
                    "machine's default congestion control), nginx-cubic, nginx-bbr")
    ap.add_argument("--hop", action="store_true",
                    help="drop on the server's own link (offloaded frames dropped whole)")
    a = ap.parse_args()
    want = hashlib.sha256((SITE / FILE.lstrip("/")).read_bytes()).hexdigest()
    losses = [int(x) for x in a.loss.split(",")]
    kinds = a.servers.split(",")
    times = {(k, l): [] for k in kinds for l in losses}
    counters = {(k, l): {} for k in kinds for l in losses}
    per_round = max(1, a.n // a.rounds)
    t0 = time.time()
    for r in range(a.rounds):
        for loss in losses:
            for kind in kinds:
                t, c = round_of(kind, loss, per_round, want, routed=not a.hop)
                times[(kind, loss)] += t
                for k, v in c.items():
                    counters[(kind, loss)][k] = counters[(kind, loss)].get(k, 0) + v
                print(f"  round {r + 1} {kind} {loss}%: median {statistics.median(t):.3f} s",
                      flush=True)
    print(f"\n{a.rounds * per_round} downloads of 1 MiB per cell, {time.time() - t0:.0f} s in all\n")
    print("| loss each way | server | median s | mean s | p90 s | max s | median vs best nginx |")
    print("|---|---|---|---|---|---|---|")
    for loss in losses:
        peers = [k for k in kinds if k.startswith("nginx")]
        best = min(peers, key=lambda k: statistics.median(times[(k, loss)])) if peers else None
        base = statistics.median(times[(best, loss)]) if best else None
        for kind in kinds:
            t = sorted(times[(kind, loss)])
            med = statistics.median(t)
            ratio = f"{med / base:.2f}x ({best})" if base else "-"
            p90 = t[min(len(t) - 1, int(0.9 * len(t)))]
            print(f"| {loss}% | {kind} | {med:.3f} | {statistics.mean(t):.3f} | {p90:.3f} "
                  f"| {max(t):.3f} | {ratio} |")
    print()
    for (kind, loss), c in counters.items():
        if c:
            print(f"{kind} {loss}%: " + ", ".join(f"{k} {v}" for k, v in c.items()))


if __name__ == "__main__":
    try:
        main()
    finally:
        restore_allowed()
