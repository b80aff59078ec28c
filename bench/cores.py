#!/usr/bin/env python3
"""Side-by-side benchmark of bareweb's many-core modes on the host platform:
one core, per-queue mode (pinned, and with --no-pin), network-core mode (with and without
--bsp-http), each in its own network namespace, same 4 KiB file, connection per request,
interleaved A B C D E A B C D E.

Reports requests/s (wrk), the ratio to one core, how busy the machine's CPUs were (from
/proc/stat), the server's and wrk's CPU use (% of one CPU, from /proc/PID/stat), and for
each core the split of its time during the run into RCV / HTTP / SEND / Main (idle), read
from the stats JSON before and after each run. Needs root and wrk.

    sudo python3 bench/cores.py [--secs 10] [--rounds 3] [--conns 16] [--out FILE]

Every run is bounded by --secs; namespaces (prefix bwsb) and processes are removed at the
end, also on failure.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SITE = ROOT / "examples" / "site"
BIN = ROOT / "target" / "release" / "bareweb"
PATH = "/files/4k.html"
STATS = "/.well-known/bareweb/stats"

CONFIGS = [
    ("1 core", ["--cores", "1"]),
    ("perqueue, 2 cores", ["--cores", "2", "--mode", "perqueue"]),
    ("perqueue, 2 cores, --no-pin", ["--cores", "2", "--mode", "perqueue", "--no-pin"]),
    ("netcore, 2 cores", ["--cores", "2", "--mode", "netcore"]),
    ("netcore, 2 cores, --bsp-http", ["--cores", "2", "--mode", "netcore", "--bsp-http"]),
]


def sh(*args, **kw):
    return subprocess.run(list(map(str, args)), check=True, capture_output=True, text=True, **kw)


class Server:
    def __init__(self, idx, name, extra):
        self.name = name
        self.ns = f"bwsb{os.getpid()}n{idx}"
        sh("ip", "netns", "add", self.ns)
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, BIN, "serve", SITE, "--tap", "bw0",
                                      "--ip", "10.0.0.2/24", "--tcbs", "4096", *extra],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.base = "http://10.0.0.2"
        for _ in range(100):
            r = subprocess.run(["ip", "netns", "exec", self.ns, "curl", "-s", "-o", "/dev/null", "-w",
                                "%{http_code}", "--max-time", "1", self.base + PATH],
                               capture_output=True, text=True)
            if r.stdout == "200":
                return
            time.sleep(0.1)
        raise SystemExit(f"{name}: server did not come up")

    def stats(self):
        r = sh("ip", "netns", "exec", self.ns, "curl", "-s", "--max-time", "5", self.base + STATS)
        return json.loads(r.stdout)

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["ip", "netns", "del", self.ns])


TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """utime + stime of a process (all its threads), in seconds."""
    try:
        f = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / TICK
    except (FileNotFoundError, IndexError):
        return 0.0


def machine_busy():
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    f = [int(x) for x in pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


def wrk(ns, url, secs, conns):
    """Runs wrk; returns req/s, errors, and wrk's own CPU use in % of one CPU."""
    cmd = ["ip", "netns", "exec", ns, "wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--timeout", "5s",
           "-H", "Connection: close", url]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0, cpu = time.time(), 0.0
    while p.poll() is None and time.time() - t0 < secs + 30:
        cpu = max(cpu, proc_cpu(p.pid))  # `ip netns exec` execs wrk: same pid
        time.sleep(0.2)
    out, _ = p.communicate(timeout=30)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Socket errors: (.*)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    err = (errors.group(1) if errors else "") + (f" non2xx {non2xx.group(1)}" if non2xx else "")
    return rps, err, 100.0 * cpu / secs


def split(before, after):
    """Per-core % of the interval spent in rcv/http/send/main, and requests served."""
    out = []
    for b, a in zip(before["cores"], after["cores"]):
        el = max(1, a["elapsed_ns"] - b["elapsed_ns"])
        pct = {k: 100.0 * (a[k + "_ns"] - b[k + "_ns"]) / el for k in ("rcv", "http", "send", "main")}
        pct["requests"] = a["requests"] - b["requests"]
        pct["role"] = a["role"]
        out.append(pct)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces, TAP)")
    if not shutil.which("wrk"):
        sys.exit("wrk missing: apt-get install wrk")
    if not BIN.exists():
        sys.exit("build first: cargo build --release -p bareweb")
    servers = []
    results = {name: [] for name, _ in CONFIGS}
    try:
        servers = [Server(i, name, extra) for i, (name, extra) in enumerate(CONFIGS)]
        for rnd in range(a.rounds):
            for s in servers:  # interleaved
                before = s.stats()
                m0, c0, t0 = machine_busy(), proc_cpu(s.proc.pid), time.time()
                rps, err, wrk_cpu = wrk(s.ns, s.base + PATH, a.secs, a.conns)
                m1, c1, t1 = machine_busy(), proc_cpu(s.proc.pid), time.time()
                after = s.stats()
                sp = split(before, after)
                cpu = {"machine": 100.0 * (m1[0] - m0[0]) / max(1, m1[1] - m0[1]),
                       "server": 100.0 * (c1 - c0) / (t1 - t0), "wrk": wrk_cpu}
                results[s.name].append((rps, sp, cpu))
                cores = "  ".join(f"c{i} {c['role']} rcv {c['rcv']:.0f}% http {c['http']:.0f}% "
                                  f"send {c['send']:.0f}% main {c['main']:.0f}% ({c['requests']} req)"
                                  for i, c in enumerate(sp))
                print(f"round {rnd + 1} {s.name:30} {rps:9.0f} req/s {err} machine {cpu['machine']:.0f}% "
                      f"server {cpu['server']:.0f}% wrk {cpu['wrk']:.0f}%  {cores}", flush=True)
    finally:
        for s in servers:
            s.close()
    base = statistics.median(r[0] for r in results[CONFIGS[0][0]])
    lines = [f"File {PATH} (4096 bytes), connection per request, wrk -t1 -c{a.conns} -d{a.secs}s, "
             f"{a.rounds} interleaved rounds, medians (split: the run with the median req/s). "
             f"Machine: {os.cpu_count()} CPUs shared by server and client, `{os.uname().release}`.", "",
             "| configuration | req/s | vs 1 core | machine CPU busy | server CPU | wrk CPU | "
             "per-core split RCV / HTTP / SEND / Main |",
             "|---|---|---|---|---|---|---|"]
    for name, _ in CONFIGS:
        runs = sorted(results[name], key=lambda r: r[0])
        rps, sp, cpu = runs[len(runs) // 2]
        cores = "<br>".join(f"core {i} ({c['role']}): {c['rcv']:.0f} / {c['http']:.0f} / {c['send']:.0f} / "
                            f"{c['main']:.0f} %, {c['requests']} req" for i, c in enumerate(sp))
        lines.append(f"| {name} | {rps:.0f} | {rps / base:.2f}x | {cpu['machine']:.0f}% | {cpu['server']:.0f}% | "
                     f"{cpu['wrk']:.0f}% | {cores} |")
    table = "\n".join(lines)
    print("\n" + table)
    if a.out:
        pathlib.Path(a.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
