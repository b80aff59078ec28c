#!/usr/bin/env python3
"""Side-by-side benchmark of bareweb's engine (host platform, TAP) against nginx (veth),
each in its own network namespace, same file, same load, interleaved A B A B.

Reports requests/s, p50/p99 latency (wrk) and the server's CPU time per request
(utime+stime of the server's processes from /proc, divided by requests served), for a
4 KiB file with keep-alive and with a connection per request. Needs root, wrk, nginx.

    sudo python3 bench/engine_vs_nginx.py [--secs 10] [--rounds 3] [--conns 16] [--out FILE]

Every run is bounded by --secs; namespaces and processes are removed at the end.
"""
import argparse
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
TICK = os.sysconf("SC_CLK_TCK")


def sh(*args, **kw):
    return subprocess.run(list(map(str, args)), check=True, capture_output=True, text=True, **kw)


def cpu_secs(pids):
    total = 0
    for pid in pids:
        try:
            fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (FileNotFoundError, IndexError):
            pass
    return total / TICK


def wrk(ns, url, secs, conns, close):
    cmd = ["ip", "netns", "exec", ns, "wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--latency", "--timeout", "5s"]
    if close:
        cmd += ["-H", "Connection: close"]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=secs + 30).stdout
    req = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def pct(p):
        m = re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        v, unit = float(m.group(1)), m.group(2)
        return v * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    errors = re.search(r"Socket errors: (.*)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"requests": req, "rps": rps, "p50_ms": pct(50), "p99_ms": pct(99),
            "errors": (errors.group(1) if errors else "") + (f" non2xx {non2xx.group(1)}" if non2xx else "")}


class Ours:
    name = "bareweb (host, TAP)"

    def __init__(self):
        self.ns = "bwb-ours"
        sh("ip", "netns", "add", self.ns)
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, BIN, "serve", SITE, "--tap", "bw0",
                                      "--ip", "10.0.0.2/24", "--tcbs", "4096"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.url = "http://10.0.0.2" + PATH
        self.client_ns = self.ns
        wait_up(self.client_ns, self.url)

    def pids(self):
        return [self.proc.pid]

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)
        subprocess.run(["ip", "netns", "del", self.ns])


class Nginx:
    name = "nginx (veth)"

    def __init__(self):
        self.ns, self.client_ns = "bwb-ngx", "bwb-ngxc"
        for n in (self.ns, self.client_ns):
            sh("ip", "netns", "add", n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
        sh("ip", "link", "add", "bwbv0", "netns", self.client_ns, "type", "veth", "peer", "name", "bwbv1",
           "netns", self.ns)
        sh("ip", "-n", self.client_ns, "addr", "add", "10.0.1.1/24", "dev", "bwbv0")
        sh("ip", "-n", self.ns, "addr", "add", "10.0.1.2/24", "dev", "bwbv1")
        sh("ip", "-n", self.client_ns, "link", "set", "bwbv0", "up")
        sh("ip", "-n", self.ns, "link", "set", "bwbv1", "up")
        self.dir = tempfile.mkdtemp(prefix="bwb-nginx-")
        conf = pathlib.Path(self.dir, "nginx.conf")
        conf.write_text(f"""
worker_processes 1;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log;
events {{ worker_connections 4096; }}
http {{
    include /etc/nginx/mime.types;
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    open_file_cache max=100;
    client_body_temp_path {self.dir};
    proxy_temp_path {self.dir};
    fastcgi_temp_path {self.dir};
    uwsgi_temp_path {self.dir};
    scgi_temp_path {self.dir};
    server {{ listen 10.0.1.2:80; root {SITE}; }}
}}
""")
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, "nginx", "-c", conf, "-g", "daemon off;"])
        self.url = "http://10.0.1.2" + PATH
        wait_up(self.client_ns, self.url)

    def pids(self):
        r = subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True, text=True)
        return [int(p) for p in r.stdout.split()]

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)
        for n in (self.ns, self.client_ns):
            subprocess.run(["ip", "netns", "del", n])
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_up(ns, url):
    for _ in range(100):
        r = subprocess.run(["ip", "netns", "exec", ns, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                            "--max-time", "1", url], capture_output=True, text=True)
        if r.stdout == "200":
            return
        time.sleep(0.1)
    raise SystemExit(f"server at {url} did not come up")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces, TAP)")
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool):
            sys.exit(f"{tool} missing: apt-get install {tool if tool == 'wrk' else 'nginx-light'}")
    if not BIN.exists():
        sys.exit("build first: cargo build --release -p bareweb")
    servers = []
    try:
        servers = [Ours(), Nginx()]
        results = {(s.name, mode): [] for s in servers for mode in ("keep-alive", "conn-per-request")}
        for rnd in range(a.rounds):
            for mode in ("keep-alive", "conn-per-request"):
                for s in servers:  # interleaved: A B A B ...
                    c0 = cpu_secs(s.pids())
                    r = wrk(s.client_ns, s.url, a.secs, a.conns, mode == "conn-per-request")
                    r["cpu_us_per_req"] = (cpu_secs(s.pids()) - c0) / max(r["requests"], 1) * 1e6
                    results[(s.name, mode)].append(r)
                    print(f"round {rnd + 1} {mode:17} {s.name:20} {r['rps']:10.0f} req/s  p50 {r['p50_ms']:.3f} ms"
                          f"  p99 {r['p99_ms']:.3f} ms  cpu {r['cpu_us_per_req']:.1f} us/req {r['errors']}",
                          flush=True)
    finally:
        for s in servers:
            s.close()
    lines = [f"File {PATH} (4096 bytes), wrk -t1 -c{a.conns} -d{a.secs}s, {a.rounds} interleaved rounds, "
             f"medians. Machine: {os.cpu_count()} cores, `{os.uname().release}`.", "",
             "| mode | server | req/s | p50 ms | p99 ms | server CPU µs/req | req/s vs nginx | CPU/req vs nginx |",
             "|---|---|---|---|---|---|---|---|"]
    for mode in ("keep-alive", "conn-per-request"):
        med = {}
        for s in ("bareweb (host, TAP)", "nginx (veth)"):
            rs = results[(s, mode)]
            med[s] = {k: statistics.median(r[k] for r in rs) for k in ("rps", "p50_ms", "p99_ms", "cpu_us_per_req")}
        base = med["nginx (veth)"]
        for s, m in med.items():
            lines.append(f"| {mode} | {s} | {m['rps']:.0f} | {m['p50_ms']:.3f} | {m['p99_ms']:.3f} | "
                         f"{m['cpu_us_per_req']:.1f} | {m['rps'] / base['rps']:.2f}x | "
                         f"{m['cpu_us_per_req'] / base['cpu_us_per_req']:.2f}x |")
    table = "\n".join(lines)
    print("\n" + table)
    if a.out:
        pathlib.Path(a.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
