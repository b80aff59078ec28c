#!/usr/bin/env python3
"""1 MiB downloads over a lossy link: bareweb (host platform on a TAP, with and without
segmentation offload) next to nginx on Linux (a veth into a second namespace, offloads
off), the same nftables rules dropping a given share of frames each way on the client's
device. `bareweb-no-tso` and `nginx` put MTU-sized packets on the lossy hop, as a wire
does; `bareweb` (offload on) hands the TAP frames of up to 64 KiB, each dropped whole.

    sudo python3 bench/loss.py [--loss 1,5,10] [--n 20] [--servers bareweb,bareweb-no-tso,nginx]

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


def apply_loss(ns, loss):
    r = subprocess.run(ns.cmd("nft", "-f", "-"), input=loss_rules(loss), text=True,
                       capture_output=True)
    if r.returncode != 0:
        sys.exit(f"nft: {r.stderr}")


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


def start(kind):
    if kind == "bareweb":
        return Server(prefix="bwl")
    if kind == "bareweb-no-tso":
        return Server(extra=["--no-tso"], prefix="bwl")
    if kind == "nginx":
        return Nginx()
    sys.exit(f"unknown server {kind}")


def round_of(kind, loss, n, want):
    s = start(kind)
    try:
        apply_loss(s.ns, loss)
        res = s.ns.client("loss", str(n), FILE, want, timeout=n * 130)
        counters = s.stop()
    finally:
        if isinstance(s, Server):
            s.close()
        else:
            s.close()
    if res["ok"] != n:
        print(f"  {kind} {loss}%: {n - res['ok']} of {n} failed: {res['bad'][:3]}", flush=True)
    return res["times"], {k: counters.get(k, 0) for k in COUNTERS if k in counters}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loss", default="1,5,10", help="percent dropped each way, comma list")
    ap.add_argument("--n", type=int, default=20, help="downloads per server and loss rate")
    ap.add_argument("--rounds", type=int, default=2, help="rounds the downloads are split in")
    ap.add_argument("--servers", default="bareweb,bareweb-no-tso,nginx")
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
                t, c = round_of(kind, loss, per_round, want)
                times[(kind, loss)] += t
                for k, v in c.items():
                    counters[(kind, loss)][k] = counters[(kind, loss)].get(k, 0) + v
                print(f"  round {r + 1} {kind} {loss}%: median {statistics.median(t):.3f} s",
                      flush=True)
    print(f"\n{a.rounds * per_round} downloads of 1 MiB per cell, {time.time() - t0:.0f} s in all\n")
    print("| loss each way | server | median s | mean s | max s | median vs nginx |")
    print("|---|---|---|---|---|---|")
    for loss in losses:
        base = statistics.median(times[("nginx", loss)]) if "nginx" in kinds else None
        for kind in kinds:
            t = times[(kind, loss)]
            med = statistics.median(t)
            ratio = f"{med / base:.2f}x" if base else "-"
            print(f"| {loss}% | {kind} | {med:.3f} | {statistics.mean(t):.3f} | {max(t):.3f} "
                  f"| {ratio} |")
    print()
    for (kind, loss), c in counters.items():
        if c:
            print(f"{kind} {loss}%: " + ", ".join(f"{k} {v}" for k, v in c.items()))


if __name__ == "__main__":
    main()
