#!/usr/bin/env python3
"""The bonding paper's experiment, side by side in one run: bareweb on the host platform
(`serve`) with two TAPs as its NICs, 2 and 3 clients, file sizes 4 KiB to 1 MiB, connection
time and first-response time for the three configurations (`--bond off`: one NIC; `split`: one
receives, one sends; `spread`: one receives, both send); then the time to recover from a
link failure.

    sudo python3 bench/bond.py [--mbit 100] [--seconds 5] [--rounds 3] [--sizes 4k,64k,256k,1m]
                               [--clients 2,3] [--skip-experiment] [--skip-throughput]
                               [--parallel 4] [--skip-recovery] [--recovery-runs 5]

**Line rate.** A TAP has none, so one is emulated per NIC in the kernel: the server's
transmit on each TAP (the TAP's ingress) is redirected to an `ifb` device whose root qdisc
is `tbf rate MBIT` (burst 64 KiB, 50 ms of queue), and each client's link gets the same
rate towards the client (`tbf` on its bridge port). So one server NIC carries MBIT, as
the paper's gigabit NICs carried a gigabit, and a client can take a whole NIC. Requests
(client to server) are not shaped.

**Topology.** Namespace S holds the server, its two TAPs (persistent, so the server can
restart on them) on a bridge, the ifb devices; each client is a namespace of its own
behind a veth on that bridge (10.0.0.11, .12, .13), running `bareweb load --rate` (open
loop, as the paper's http_load) against http://10.0.0.2/sz/SIZE.bin for SECONDS. The rate
per client offers 80 % of one NIC in total (capped at 1000/s per client, the paper's
rate for 4 KiB): one NIC is then busy and queues, two are not.

**Measured.** For every configuration, client count and size, in rounds that rotate the
configuration order: each client's mean connect time (connect() to established: the
SYN-ACK waits behind data on a busy NIC), mean first-response time (request sent to the
first response byte) and mean whole-response time (to the last byte), averaged over the
clients; the table shows medians over rounds and
the gain of spread over off, next to the paper's (Fig. 8-11: 44 % connection time and 29 %
first response for 1 MB with two clients, 42 % and 21 % with three).

**Throughput.** The same clients in closed loop (`bareweb load --parallel P`, P fetches of
1 MiB in flight each, new connection per fetch) for SECONDS: the body bytes per second of
all clients together, for one and two send NICs; two NICs can carry twice one's line rate.

**Recovery.** One client streams a 1 MiB file again and again on a keep-alive connection
with a 64 KiB receive buffer (client.py stream); after 1.5 s a TAP is taken down (`ip
link set T down`): the send NIC (`--bond split`, so the connection's NIC is known) or the
receive NIC (`spread`). The recovery time is from the link going down to the end of the
longest stall of the client's reads that begins within 200 ms (data flowing again; 0 if
no read waited more than 5 ms); median of
`--recovery-runs` runs, for `--bond-monitor-ms` 100 (the default) and 20.

Needs root (namespaces, TAP, veth, ifb, tc). Everything it starts runs in namespaces it
makes (`bwn<pid>...`), is bounded in time and is removed at the end, also on errors.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from qemu_harness import BIN, CLIENT, SERVER_IP, Netns  # noqa: E402

TAPS = ["bwt0", "bwt1"]
MACS = ["02:00:00:00:0d:00", "02:00:00:00:0d:01"]
BRIDGE = "bwtbr"
CLIENT_IPS = ["10.0.0.11", "10.0.0.12", "10.0.0.13"]
PAPER = {  # (clients, metric) -> the paper's gain of two send NICs over one, 1 MB
    (2, "connect"): 44, (2, "first"): 29, (3, "connect"): 42, (3, "first"): 21,
}


def sh(ns, *args, check=True):
    r = subprocess.run(ns.cmd(*args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: {r.stderr.strip()}")
    return r


def size_bytes(s):
    s = s.lower()
    mult = {"k": 1024, "m": 1 << 20}.get(s[-1], 1)
    return int(s.rstrip("km")) * mult


class Testbed:
    """The server's namespace (TAPs, bridge, line rates) and the client namespaces."""

    def __init__(self, mbit, clients):
        self.mbit = mbit
        self.s = Netns("bwn")
        self.clients = []
        s = self.s
        s.ip("link", "add", BRIDGE, "type", "bridge")
        s.ip("link", "set", BRIDGE, "up")
        for k, tap in enumerate(TAPS):
            s.ip("tuntap", "add", tap, "mode", "tap")
            s.ip("link", "set", tap, "master", BRIDGE, "up")
            ifb = f"bwi{k}"
            s.ip("link", "add", ifb, "type", "ifb")
            s.ip("link", "set", ifb, "up")
            # The server's transmit is the TAP's ingress: through the ifb's tbf.
            sh(s, "tc", "qdisc", "add", "dev", tap, "handle", "ffff:", "ingress")
            sh(s, "tc", "filter", "add", "dev", tap, "parent", "ffff:", "protocol", "all",
               "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect",
               "dev", ifb)
            self.tbf(s, ifb)
        for i in range(clients):
            c = Netns("bwn")
            vb, vc = f"bwv{i}", "eth0"
            subprocess.run(["ip", "-n", s.name, "link", "add", vb, "type", "veth", "peer",
                            "name", vc, "netns", c.name], check=True)
            s.ip("link", "set", vb, "master", BRIDGE, "up")
            self.tbf(s, vb)  # the client's line, towards the client
            c.ip("addr", "add", f"{CLIENT_IPS[i]}/24", "dev", vc)
            c.ip("link", "set", vc, "up")
            self.clients.append(c)
        self.proc = None

    def tbf(self, ns, dev):
        sh(ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{self.mbit}mbit",
           "burst", "64kb", "latency", "50ms")

    def start(self, site, bond, monitor_ms=100, extra=()):
        self.stop()
        args = [BIN, "serve", site, "--ip", f"{SERVER_IP}/24", "--host-ip", "none", "--bond",
                bond, "--bond-monitor-ms", str(monitor_ms), *extra]
        for tap, mac in zip(TAPS, MACS):
            args += ["--tap", tap, "--mac", mac]
        self.log = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(self.s.cmd(*args), stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"serve exited: {self.log.read()}")
            r = self.clients[0].run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                    "--max-time", "1", f"http://{SERVER_IP}/", check=False)
            if r.stdout == "200":
                # Every client has the server in its neighbour table before loads start.
                for c in self.clients[1:]:
                    c.run("curl", "-s", "-o", "/dev/null", "--max-time", "5",
                          f"http://{SERVER_IP}/", check=False)
                return
            time.sleep(0.1)
        raise RuntimeError("serve not ready in 20 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        for tap in TAPS:  # a test may have taken one down
            self.s.ip("link", "set", tap, "up")

    def close(self):
        self.stop()
        for c in self.clients:
            c.close()
        self.s.close()


def load_all(bed, n_clients, url, rate, seconds):
    """`bareweb load --rate` in the first `n_clients` clients at once; their reports."""
    procs = []
    for c in bed.clients[:n_clients]:
        procs.append(subprocess.Popen(
            c.cmd(BIN, "load", url, "--rate", f"{rate:.2f}", "--seconds", str(seconds),
                  "--timeout", "10", "--json", "--quiet"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        o, e = p.communicate(timeout=seconds + 60)
        if p.returncode != 0:
            raise RuntimeError(f"load failed: {e[-500:]}")
        out.append(json.loads(o))
    return out


def experiment(args, bed, site):
    sizes = [s.strip() for s in args.sizes.split(",")]
    counts = [int(c) for c in args.clients.split(",")]
    configs = ["off", "split", "spread"]
    res = {}  # (config, clients, size) -> list of (connect, first, response, errors)
    for rnd in range(args.rounds):
        order = configs[rnd % 3:] + configs[:rnd % 3]
        for config in order:
            bed.start(site, config)
            for n in counts:
                for size in sizes:
                    b = size_bytes(size)
                    per_fetch_bits = (b + 400) * 8 * 1.05
                    rate = min(1000.0, 0.8 * args.mbit * 1e6 / per_fetch_bits / n)
                    url = f"http://{SERVER_IP}/sz/{b}.bin"
                    reps = load_all(bed, n, url, rate, args.seconds)
                    m = lambda k: statistics.mean(r[k]["mean_ms"] for r in reps)
                    errors = sum(r["errors_total"] + r["timeouts"] for r in reps)
                    ok = sum(r["fetches_ok"] for r in reps)
                    res.setdefault((config, n, size), []).append(
                        (m("connect"), m("first_response"), m("response"), errors, ok, rate))
                    print(f"round {rnd + 1} {config:6} {n} clients {size:>4}: rate {rate:7.1f}/s "
                          f"each, connect {m('connect'):7.2f} ms, first response "
                          f"{m('first_response'):7.2f} ms, response {m('response'):7.2f} ms, "
                          f"{ok} ok, {errors} errors", flush=True)
                    if errors:
                        kinds = {}
                        for r in reps:
                            for k, v in r["errors"].items():
                                kinds[k] = kinds.get(k, 0) + v
                        print(f"    errors by kind: {kinds}, timeouts "
                              f"{sum(r['timeouts'] for r in reps)}", flush=True)
    bed.stop()
    return res


def table(args, res):
    sizes = [s.strip() for s in args.sizes.split(",")]
    counts = [int(c) for c in args.clients.split(",")]
    med = lambda xs: statistics.median(xs)
    lines = ["| clients | size | rate/client | connect off / split / spread (ms) | gain spread vs off | "
             "first response off / split / spread (ms) | gain | "
             "whole response off / split / spread (ms) | gain | errors |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n in counts:
        for size in sizes:
            row = {c: res[(c, n, size)] for c in ("off", "split", "spread")}
            con = {c: med([x[0] for x in v]) for c, v in row.items()}
            fst = {c: med([x[1] for x in v]) for c, v in row.items()}
            whole = {c: med([x[2] for x in v]) for c, v in row.items()}
            err = sum(x[3] for v in row.values() for x in v)
            g = lambda d: f"{100 * (1 - d['spread'] / d['off']):.0f} %" if d["off"] else "-"
            paper_c = f" (paper {PAPER[(n, 'connect')]} %)" if size == "1m" else ""
            paper_f = f" (paper {PAPER[(n, 'first')]} %)" if size == "1m" else ""
            lines.append(
                f"| {n} | {size} | {row['off'][0][5]:.1f}/s | {con['off']:.2f} / {con['split']:.2f} / "
                f"{con['spread']:.2f} | {g(con)}{paper_c} | {fst['off']:.2f} / {fst['split']:.2f} / "
                f"{fst['spread']:.2f} | {g(fst)}{paper_f} | {whole['off']:.1f} / "
                f"{whole['split']:.1f} / {whole['spread']:.1f} | {g(whole)} | {err} |")
    return "\n".join(lines)


def throughput(args, bed, site):
    """Every client saturating (closed loop): the total body rate per configuration."""
    counts = [int(c) for c in args.clients.split(",")]
    configs = ["off", "split", "spread"]
    url = f"http://{SERVER_IP}/sz/1048576.bin"
    res = {}  # (config, clients) -> list of (Mbit/s, errors)
    for rnd in range(args.rounds):
        order = configs[rnd % 3:] + configs[:rnd % 3]
        for config in order:
            bed.start(site, config)
            for n in counts:
                procs = [subprocess.Popen(
                    c.cmd(BIN, "load", url, "--parallel", str(args.parallel), "--seconds",
                          str(args.seconds), "--timeout", "10", "--json", "--quiet"),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for c in bed.clients[:n]]
                reps = []
                for p in procs:
                    o, e = p.communicate(timeout=args.seconds + 60)
                    if p.returncode != 0:
                        raise RuntimeError(f"load failed: {e[-500:]}")
                    reps.append(json.loads(o))
                mbit = sum(r["bytes_per_sec"] for r in reps) * 8 / 1e6
                errors = sum(r["errors_total"] + r["timeouts"] for r in reps)
                res.setdefault((config, n), []).append((mbit, errors))
                print(f"round {rnd + 1} {config:6} {n} clients, {args.parallel} in flight each: "
                      f"{mbit:6.1f} Mbit/s, {errors} errors", flush=True)
    bed.stop()
    med = statistics.median
    lines = ["| clients | off (1 NIC) | split (1 send NIC) | spread (2 send NICs) | spread / off | "
             "errors |", "|---|---|---|---|---|---|"]
    for n in counts:
        m = {c: med([x[0] for x in res[(c, n)]]) for c in configs}
        err = sum(x[1] for c in configs for x in res[(c, n)])
        lines.append(f"| {n} | {m['off']:.1f} Mbit/s | {m['split']:.1f} Mbit/s | "
                     f"{m['spread']:.1f} Mbit/s | {m['spread'] / m['off']:.2f}x | {err} |")
    return "\n".join(lines)


def recovery(args, bed, site):
    """Time from a TAP going down to the next byte the streaming client reads."""
    cases = [("send NIC", "split", 1), ("receive NIC", "spread", 0)]
    out = {}
    for monitor in (100, 20):
        for name, bond, down in cases:
            times = []
            for _ in range(args.recovery_runs):
                bed.start(site, bond, monitor_ms=monitor)
                c = bed.clients[0]
                p = subprocess.Popen(c.cmd("python3", CLIENT, "stream", "/sz/1048576.bin", "4"),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                time.sleep(1.5)
                t_down = time.monotonic()
                bed.s.ip("link", "set", TAPS[down], "down")
                o, e = p.communicate(timeout=60)
                if p.returncode != 0:
                    raise RuntimeError(f"stream failed: {e[-500:]}")
                r = json.loads(o.strip().splitlines()[-1])
                # The longest stall of the stream that ends after the link went down and
                # begins within 200 ms of it (the client may read what was already on its
                # way for a moment first: at the line rate, the 50 ms of tbf queue and
                # the 64 KiB window drain sooner): data flows again at its end. None (no
                # read gap of more than 5 ms) means the failure did not stall the stream.
                after = [g for g in r["gaps"] if g[1] > t_down and g[0] < t_down + 0.2]
                stall = max(after, key=lambda g: g[1] - g[0], default=None)
                times.append(1000 * (stall[1] - t_down) if stall else 0.0)
            out[(monitor, name)] = times
            print(f"recovery, {name} down, monitor {monitor} ms: "
                  f"{', '.join(f'{t:.0f}' for t in times)} ms", flush=True)
    bed.stop()
    lines = ["| link taken down | --bond-monitor-ms | recovery, median (min-max) |", "|---|---|---|"]
    for (monitor, name), ts in out.items():
        lines.append(f"| {name} | {monitor} | {statistics.median(ts):.0f} ms "
                     f"({min(ts):.0f}-{max(ts):.0f}) |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mbit", type=int, default=100, help="line rate of each NIC and client")
    ap.add_argument("--seconds", type=int, default=5, help="each load run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="4k,64k,256k,1m")
    ap.add_argument("--clients", default="2,3")
    ap.add_argument("--skip-recovery", action="store_true")
    ap.add_argument("--skip-experiment", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--parallel", type=int, default=4, help="fetches in flight per client "
                    "in the throughput runs")
    ap.add_argument("--recovery-runs", type=int, default=5)
    args = ap.parse_args()
    site = tempfile.mkdtemp(prefix="bwbond-site-")
    (pathlib.Path(site) / "index.html").write_text("<h1>bond</h1>\n")
    sz = pathlib.Path(site) / "sz"
    sz.mkdir()
    for s in {*(x.strip() for x in args.sizes.split(",")), "1m"}:
        b = size_bytes(s)
        (sz / f"{b}.bin").write_bytes(bytes((i * 2654435761 >> 13) & 0xFF for i in range(b)))
    bed = Testbed(args.mbit, max(int(c) for c in args.clients.split(",")))
    load = subprocess.run(["cat", "/proc/loadavg"], capture_output=True, text=True).stdout
    print(f"machine load at start: {load.strip()}", flush=True)
    try:
        if not args.skip_experiment:
            res = experiment(args, bed, site)
            print()
            print(f"Line rate {args.mbit} Mbit/s per NIC and per client (tbf), {args.seconds} s "
                  f"per run, medians of {args.rounds} rounds:")
            print(table(args, res))
        if not args.skip_throughput:
            res = throughput(args, bed, site)
            print()
            print(f"Throughput, 1 MiB files, line rate {args.mbit} Mbit/s per NIC and per "
                  f"client (tbf), {args.seconds} s per run, medians of {args.rounds} rounds:")
            print(res)
        if not args.skip_recovery:
            print()
            print(recovery(args, bed, site))
        load = pathlib.Path("/proc/loadavg").read_text()
        print(f"\nmachine load at end: {load.strip()}", flush=True)
    finally:
        bed.close()
        subprocess.run(["rm", "-rf", site])


if __name__ == "__main__":
    main()
