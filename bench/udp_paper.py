#!/usr/bin/env python3
"""The UDP paper's experiment, side by side in one run: requests/s for files of
4 KiB x N (N = 1, 2, 4, 8, 16, 32) over the stateless UDP protocol and over TCP (HTTP/1.1,
a connection per request and keep-alive), on bareweb with 1, 2 and 3 HTTP cores in
network-core mode and 1, 2 and 3 cores in per-queue mode, the UDP loads from the socket
client and from the bare client (the engine's own frames on a TAP bridged with the
server's); per-core time split (RCV / HTTP / SEND / idle) from the stats JSON, max
parallel requests, send list (DLIST) high-water mark, processing time at the client and
(network-core mode) at the server, and the paper's schedule (8 requests every 9/4 ms,
3,555/s) on 4 KiB.

    sudo python3 bench/udp_paper.py [--secs 2] [--rounds 1] [--parallel 16] [--out FILE]
    sudo python3 bench/udp_paper.py --quick      # 4 KiB and 32 KiB, two configurations
    sudo python3 bench/udp_paper.py --sizes 4,8 --json a.json   # a run per group of sizes,
    sudo python3 bench/udp_paper.py --sizes 16,32 --json b.json # each side by side, then
    python3 bench/udp_paper.py --report a.json b.json           # their tables together

Every server runs for the whole bench in its own namespace (prefix bwup) with a bridge
holding its TAP, the bare client's TAP and the host address 10.0.0.1; loads interleave
across servers and transports within each file size. Servers run with
--udp-paper-mode (the paper's protocol, no bounds: every client is on a private link) and
--no-pin (the clients share the same 2 CPUs). Namespaces and processes are removed at the
end, also on failure. Needs root and a release build.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = ROOT / "target" / "release" / "bareweb"
STATS = "/.well-known/bareweb/stats"
UDP_PORT = 8081
MULTIPLES = [1, 2, 4, 8, 16, 32]

CONFIGS = [
    ("single: 1 core", ["--cores", "1"], False),
    ("perqueue: 2 cores", ["--cores", "2", "--mode", "perqueue", "--no-pin"], True),
    ("perqueue: 3 cores", ["--cores", "3", "--mode", "perqueue", "--no-pin"], True),
    ("netcore: 1 HTTP core", ["--cores", "2", "--mode", "netcore", "--no-pin"], False),
    ("netcore: 2 HTTP cores", ["--cores", "3", "--mode", "netcore", "--no-pin"], False),
    ("netcore: 3 HTTP cores", ["--cores", "4", "--mode", "netcore", "--no-pin"], False),
]
LOADS = ["udp socket", "udp bare", "tcp per request", "tcp keep-alive"]


def sh(*args, check=True, **kw):
    return subprocess.run(list(map(str, args)), check=check, capture_output=True, text=True, **kw)


class Server:
    def __init__(self, idx, name, extra, multi_queue, site):
        self.name = name
        self.ns = f"bwup{os.getpid()}n{idx}"
        sh("ip", "netns", "add", self.ns)
        self.proc = None
        ip = lambda *a: sh("ip", "-n", self.ns, *a)  # noqa: E731
        ip("link", "set", "lo", "up")
        ip("tuntap", "add", "bw0", "mode", "tap", *(["multi_queue"] if multi_queue else []))
        ip("tuntap", "add", "bwc0", "mode", "tap")
        ip("link", "add", "br0", "type", "bridge")
        for d in ("bw0", "bwc0"):
            ip("link", "set", d, "master", "br0")
        ip("addr", "add", "10.0.0.1/24", "dev", "br0")
        for d in ("br0", "bw0", "bwc0"):
            ip("link", "set", d, "up")
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, BIN, "serve", site, "--tap", "bw0", "--host-ip", "none",
             "--ip", "10.0.0.2/24", "--stats-allow", "10.0.0.0/24", "--tcbs", "4096", "--udp-port", str(UDP_PORT),
             "--udp-paper-mode", *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(100):
            r = sh("ip", "netns", "exec", self.ns, "curl", "-s", "-o", "/dev/null", "-w",
                   "%{http_code}", "--max-time", "1", "http://10.0.0.2/index.html", check=False)
            if r.stdout == "200":
                return
            time.sleep(0.1)
        self.log.seek(0)
        raise SystemExit(f"{name}: server did not come up: {self.log.read().decode()[-2000:]}")

    def stats(self):
        r = sh("ip", "netns", "exec", self.ns, "curl", "-s", "--max-time", "5",
               "http://10.0.0.2" + STATS)
        return json.loads(r.stdout)

    def load(self, kind, path, secs, parallel, paper=False):
        b = ["ip", "netns", "exec", self.ns, BIN, "load", "--json", "-q", "--seconds", str(secs)]
        sched = ["--frequency", "9", "--maxreq", "8"] if paper else ["--parallel", str(parallel)]
        if kind == "udp socket":
            cmd = b + ["--udp", f"bwudp://10.0.0.2:{UDP_PORT}{path}", *sched]
        elif kind == "udp bare":
            cmd = b + ["--udp", "--tap", "bwc0", "--ip", "10.0.0.3/24",
                       f"bwudp://10.0.0.2:{UDP_PORT}{path}", *sched]
        else:
            cmd = b + [f"http://10.0.0.2{path}", *sched] + (["-k"] if "keep" in kind else [])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + 120)
        if r.returncode != 0:
            return {"error": r.stderr.strip()[-300:]}
        rep = json.loads(r.stdout)
        if kind.startswith("udp"):
            return {"rps": rep["completed_per_sec"], "errors": rep["failed_timeout"] + rep["failed_refused"]
                    + rep["failed_other"] + rep["bad_status"], "max_parallel": rep["max_parallel"],
                    "time_mean_ms": rep["time_mean_ms"], "time_max_ms": rep["time_max_ms"],
                    "lost": rep["lost_rerequested"], "cpu": rep["client_cpu_secs"]}
        return {"rps": rep["fetches_per_sec"], "errors": rep["errors_total"],
                "max_parallel": rep["max_parallel"], "time_mean_ms": rep["response"]["mean_ms"],
                "time_max_ms": rep["response"]["max_ms"], "lost": 0, "cpu": rep["client_cpu_secs"]}

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["ip", "netns", "del", self.ns])


def split(before, after):
    """Per-core % of the interval in rcv/http/send/main."""
    out = []
    for b, a in zip(before["cores"], after["cores"]):
        el = max(1, a["elapsed_ns"] - b["elapsed_ns"])
        out.append({"role": a["role"], **{k: 100.0 * (a[k + "_ns"] - b[k + "_ns"]) / el
                                          for k in ("rcv", "http", "send", "main")}})
    return out


def machine_busy():
    f = [int(x) for x in pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(f) - f[3] - f[4], sum(f)


def make_site(d, multiples):
    files = d / "files"
    files.mkdir(parents=True)
    for n in multiples:
        size = 4096 * n
        (files / f"{4 * n}k.bin").write_bytes(bytes((i * 7 + i // 251) % 256 for i in range(size)))
    (d / "index.html").write_text("<!doctype html><title>udp bench</title>\n")


def server_summary(f):
    """Core 0's request ids and server processing time, the DLIST high-water mark."""
    c0 = (f.get("cores") or [{}])[0].get("nic", {})
    done = c0.get("udp_done", 0)
    return {
        "done": done,
        "ids_max": c0.get("udp_ids_max", 0),
        "srv_mean_ms": c0.get("udp_time_sum_ns", 0) / max(1, done) / 1e6,
        "srv_max_ms": c0.get("udp_time_max_ns", 0) / 1e6,
        "dlist": max((c.get("nic", {}).get("tx_ring_high", 0) for c in f.get("cores", [])[1:]
                      if c.get("role") == "http"), default=None),
    }


def measure(a, multiples, configs):
    """One bench run: every server up at once, the loads interleaved within each size."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="bwup-site-"))
    servers = []
    res = []  # [config, load, multiple, run]
    splits = {}  # config -> split of its 4K UDP bare run (the paper's Fig. 9)
    paper = []  # [config, client, run] at the paper's schedule
    load0 = os.getloadavg()
    t_start = time.time()
    try:
        make_site(tmp, multiples)
        servers = [Server(i, name, extra, mq, tmp) for i, (name, extra, mq) in enumerate(configs)]
        for rnd in range(a.rounds):
            for n in multiples:
                path = f"/files/{4 * n}k.bin"
                for load in LOADS:
                    for s in servers:  # interleaved
                        before = s.stats()
                        r = s.load(load, path, a.secs, a.parallel)
                        after = s.stats()
                        res.append([s.name, load, n, r])
                        if n == 1 and load == "udp bare":
                            splits[s.name] = split(before, after)
                        print(f"round {rnd + 1} {4 * n:3}K {load:16} {s.name:24} "
                              f"{r.get('rps', 0):9.0f} req/s {r.get('error', '')}", flush=True)
            if 1 not in multiples:
                continue
            for client in ("udp socket", "udp bare"):
                for s in servers:
                    r = s.load(client, "/files/4k.bin", a.secs, a.parallel, paper=True)
                    paper.append([s.name, client, r])
                    print(f"round {rnd + 1} paper schedule {client:10} {s.name:24} "
                          f"{r.get('rps', 0):7.0f} req/s, max parallel {r.get('max_parallel')}, "
                          f"client time mean {r.get('time_mean_ms', 0):.2f} ms", flush=True)
        finals = {s.name: server_summary(s.stats()) for s in servers}
    finally:
        for s in servers:
            s.close()
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = os.getloadavg()
    cmd = (f"sudo python3 bench/udp_paper.py --secs {a.secs:g} --rounds {a.rounds} --parallel "
           f"{a.parallel} --sizes {','.join(str(4 * n) for n in multiples)}"
           + (" --quick" if a.quick else ""))
    return {"cmd": cmd, "cpus": os.cpu_count(), "load0": load0[0], "load1": load1[0],
            "duration": time.time() - t_start, "secs": a.secs, "rounds": a.rounds,
            "parallel": a.parallel, "multiples": multiples, "configs": [c[0] for c in configs],
            "res": res, "splits": splits, "paper": paper, "finals": finals}


def render(chunks):
    """The markdown tables of one or more runs (e.g. one per group of sizes)."""
    multiples = sorted({n for c in chunks for n in c["multiples"]})
    configs = []
    for c in chunks:
        configs += [n for n in c["configs"] if n not in configs]
    res, splits, paper, finals = {}, {}, {}, {}
    for c in chunks:
        for name, load, n, r in c["res"]:
            res.setdefault((name, load, n), []).append(r)
        splits.update(c["splits"])
        for name, client, r in c["paper"]:
            paper.setdefault((name, client), []).append(r)
        if c["paper"]:
            finals.update(c["finals"])

    def med(runs, key="rps"):
        v = [r[key] for r in runs if key in r]
        return statistics.median(v) if v else float("nan")

    out = []
    for c in chunks:
        out.append(f"- `{c['cmd']}`: {c['cpus']} CPUs shared by the servers, the clients and "
                   f"other work (load average {c['load0']:.1f} at the start, {c['load1']:.1f} at "
                   f"the end), {c['duration']:.0f} s.")
    c = chunks[0]
    out += ["", f"Closed loop: {c['parallel']} requests in flight, {c['secs']:g} s per run; "
            f"medians of {c['rounds']} interleaved round(s). Requests/s:", ""]
    for load in LOADS:
        out.append(f"**{load}**" + (" (the bare client: the engine's frames on a TAP bridged with "
                                    "the server's)" if load == "udp bare" else ""))
        out.append("")
        out.append("| configuration | " + " | ".join(f"{4 * n} KiB" for n in multiples) + " |")
        out.append("|---|" + "---|" * len(multiples))
        for name in configs:
            cells = []
            for n in multiples:
                runs = res.get((name, load, n), [])
                bad = sum(r.get("errors", 0) for r in runs) + sum("error" in r for r in runs)
                cells.append(f"{med(runs):.0f}" + (f" ({bad} err)" if bad else ""))
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
    for num, den in (("udp bare", "tcp keep-alive"), ("udp bare", "tcp per request"),
                     ("udp bare", "udp socket")):
        out.append(f"Ratio {num} / {den}, same configuration and size:")
        out.append("")
        out.append("| configuration | " + " | ".join(f"{4 * n} KiB" for n in multiples) + " |")
        out.append("|---|" + "---|" * len(multiples))
        for name in configs:
            out.append(f"| {name} | " + " | ".join(
                f"{med(res.get((name, num, n), [])) / max(1e-9, med(res.get((name, den, n), []))):.2f}x"
                for n in multiples) + " |")
        out.append("")
    out.append("Per-core time during the 4 KiB bare-client run (paper Fig. 9): RCV / HTTP / SEND "
               "(core 0 draining the DLISTs) / idle, % of the run:")
    out.append("")
    out.append("| configuration | cores |")
    out.append("|---|---|")
    for name in configs:
        sp = splits.get(name, [])
        out.append(f"| {name} | " + "<br>".join(
            f"core {i} ({c['role']}): {c['rcv']:.0f} / {c['http']:.0f} / {c['send']:.0f} / "
            f"{c['main']:.0f}" for i, c in enumerate(sp)) + " |")
    out.append("")
    if not paper:
        return "\n".join(out)
    out.append("The paper's schedule on 4 KiB (8 requests every 9/4 ms: 3,555/s offered; paper "
               "Figs. 10 and 12). Max parallel and processing time at the client; in "
               "network-core mode also core 0's request ids out at once and the time from a "
               "request's arrival at core 0 to its answer's last frame on the TAP (over the "
               "whole run holding the 4 KiB loads); DLIST high-water mark: most frames waiting "
               "in an HTTP core's send ring (same run):")
    out.append("")
    out.append("| configuration | client | req/s | max parallel (client) | client time mean / max "
               "| core 0 ids max | server time mean / max | DLIST high |")
    out.append("|---|---|---|---|---|---|---|---|")
    for name in configs:
        f = finals.get(name, {})
        done = f.get("done", 0)
        srv = f"{f['srv_mean_ms']:.2f} / {f['srv_max_ms']:.2f} ms" if done else "n/a"
        ids = f["ids_max"] if done else "n/a"
        dlist = f.get("dlist") if f.get("dlist") is not None else "n/a"
        for client in ("udp socket", "udp bare"):
            runs = paper.get((name, client), [])
            out.append(f"| {name} | {client.split()[1]} | {med(runs):.0f} | "
                       f"{med(runs, 'max_parallel'):.0f} | {med(runs, 'time_mean_ms'):.2f} / "
                       f"{med(runs, 'time_max_ms'):.2f} ms | {ids} | {srv} | {dlist} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=16)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=None,
                    help="KiB sizes to run, e.g. 4,8 (default all: 4,8,16,32,64,128); a long "
                         "bench splits into runs by size, each one side by side")
    ap.add_argument("--out", default=None, help="write the markdown tables here")
    ap.add_argument("--json", default=None, help="write the raw results here (for --report)")
    ap.add_argument("--report", nargs="+", default=None,
                    help="no measuring: the tables of these --json files together")
    a = ap.parse_args()
    if a.report:
        table = render([json.loads(pathlib.Path(f).read_text()) for f in a.report])
        print(table)
        if a.out:
            pathlib.Path(a.out).write_text(table + "\n")
        return
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces, TAP)")
    if not BIN.exists():
        sys.exit("build first: cargo build --release -p bareweb")
    multiples = [1, 8] if a.quick else MULTIPLES
    if a.sizes:
        multiples = sorted(int(k) // 4 for k in a.sizes.split(","))
        if any(n not in MULTIPLES for n in multiples):
            sys.exit(f"--sizes: KiB among {','.join(str(4 * n) for n in MULTIPLES)}")
    configs = [CONFIGS[0], CONFIGS[3]] if a.quick else CONFIGS
    run = measure(a, multiples, configs)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(run))
    table = render([run])
    print("\n" + table)
    if a.out:
        pathlib.Path(a.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
