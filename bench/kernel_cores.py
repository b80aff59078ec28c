#!/usr/bin/env python3
"""Side-by-side benchmark of the bare-machine kernel on one and two cores:
`bareweb run --smp 1`, `--smp 2` per-queue (virtio-net multiqueue on a multi-queue TAP),
`--smp 2 --mode netcore` with and without `--bsp-http`, and next to them the host platform
(`bareweb serve --cores 1|2`), each in its own network namespace, the same 4 KiB file, a
connection per request, interleaved A B C ... A B C ... Only the configuration being
measured runs: a kernel's cores poll without sleeping, so an idle VM would take CPU from
the one being measured.

Reports requests/s (wrk), the ratio to the kernel on one core, how busy the machine's CPUs
were (/proc/stat), where the CPU went: for the kernel QEMU's threads (its vCPU threads, its
main loop, which emulates virtio-net and moves every frame to and from the TAP, and the
rest), for the host platform the server process; wrk's CPU; the drivers' doorbells per
request; and for each core the split of its time into RCV / HTTP / SEND / Main (idle),
from the stats JSON read before and after each run. Needs root and wrk.

    sudo python3 bench/kernel_cores.py [--secs 10] [--rounds 3] [--conns 16] [--no-host] [--out FILE]

Every run is bounded by --secs (and every QEMU by a hard time limit); namespaces (prefix
bwm) and processes are removed at the end of each run, also on failure.
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
SERVER = "10.0.0.2"
TAP = "bwb0"
TICK = os.sysconf("SC_CLK_TCK")

# (name, kind, arguments, multi-queue TAP)
KERNEL = [
    ("kernel, 1 core", "kernel", ["--smp", "1"], False),
    ("kernel, perqueue, 2 cores", "kernel", ["--smp", "2", "--mode", "perqueue"], True),
    ("kernel, netcore, 2 cores", "kernel", ["--smp", "2", "--mode", "netcore"], False),
    ("kernel, netcore, 2 cores, --bsp-http", "kernel",
     ["--smp", "2", "--mode", "netcore", "--bsp-http"], False),
]
HOST = [
    ("host, 1 core", "host", ["--cores", "1"], False),
    ("host, perqueue, 2 cores", "host", ["--cores", "2", "--mode", "perqueue"], True),
    ("host, netcore, 2 cores", "host", ["--cores", "2", "--mode", "netcore"], False),
]


def sh(*args, **kw):
    return subprocess.run(list(map(str, args)), check=True, capture_output=True, text=True, **kw)


def ticks(path):
    """utime + stime from a /proc stat file, in seconds."""
    try:
        f = pathlib.Path(path).read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / TICK
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return 0.0


def threads(pid):
    """{tid: (comm, cpu seconds)} of a process."""
    out = {}
    try:
        for t in pathlib.Path(f"/proc/{pid}/task").iterdir():
            comm = (t / "comm").read_text().strip()
            out[int(t.name)] = (comm, ticks(t / "stat"))
    except FileNotFoundError:
        pass
    return out


def descendants(pid):
    """PIDs below `pid` in the process tree (to find the QEMU that `bareweb run` started)."""
    kids = {}
    for p in pathlib.Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, IndexError, ProcessLookupError):
                continue
            kids.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def machine_busy():
    f = [int(x) for x in pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


class Run:
    """One configuration, up in its own namespace for one measurement."""
    counter = 0

    def __init__(self, name, kind, args, mq):
        Run.counter += 1
        self.name, self.kind = name, kind
        self.ns = f"bwm{os.getpid()}b{Run.counter}"
        self.log = tempfile.NamedTemporaryFile(prefix="bwm-bench-", suffix=".log", delete=False)
        self.serial = self.log.name + ".serial"
        self.proc = None
        sh("ip", "netns", "add", self.ns)
        try:
            sh("ip", "-n", self.ns, "link", "set", "lo", "up")
            if kind == "kernel":
                sh("ip", "-n", self.ns, "tuntap", "add", "dev", TAP, "mode", "tap",
                   *(["multi_queue"] if mq else []))
                sh("ip", "-n", self.ns, "addr", "add", "10.0.0.1/24", "dev", TAP)
                sh("ip", "-n", self.ns, "link", "set", TAP, "up")
                cmd = [BIN, "run", SITE, "--net", f"tap:{TAP}", "--ip", f"{SERVER}/24", "--gw",
                       "none", "--headless", "--serial-log", self.serial, "--accel", "tcg", *args]
            else:
                cmd = [BIN, "serve", SITE, "--tap", TAP, "--ip", f"{SERVER}/24", *args]
            self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, "timeout", "-s", "KILL",
                                          "600", *map(str, cmd)],
                                         stdout=self.log, stderr=subprocess.STDOUT)
            deadline = time.time() + 120
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise SystemExit(f"{name}: exited:\n{self.output()}")
                r = subprocess.run(["ip", "netns", "exec", self.ns, "curl", "-s", "-o", "/dev/null",
                                    "-w", "%{http_code}", "--max-time", "1",
                                    f"http://{SERVER}{PATH}"], capture_output=True, text=True)
                if r.stdout == "200":
                    break
                time.sleep(0.2)
            else:
                raise SystemExit(f"{name}: did not come up:\n{self.output()}")
            time.sleep(1)
            self.pid = self.server_pid()
        except BaseException:
            self.close()
            raise

    def output(self):
        text = pathlib.Path(self.log.name).read_text(errors="replace")[-3000:]
        if os.path.exists(self.serial):
            text += "\n--- serial ---\n" + pathlib.Path(self.serial).read_text(errors="replace")[-3000:]
        return text

    def server_pid(self):
        """The process doing the serving: QEMU for the kernel, bareweb for the host."""
        want = "qemu-system-x86" if self.kind == "kernel" else "bareweb"
        for p in descendants(self.proc.pid) + [self.proc.pid]:
            try:
                if pathlib.Path(f"/proc/{p}/comm").read_text().strip().startswith(want):
                    return p
            except FileNotFoundError:
                pass
        raise SystemExit(f"{self.name}: no {want} process found")

    def stats(self):
        r = sh("ip", "netns", "exec", self.ns, "curl", "-s", "--max-time", "10",
               f"http://{SERVER}{STATS}")
        return json.loads(r.stdout)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # timeout(1) passes it on; bareweb passes it to QEMU
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        r = subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True, text=True)
        for pid in r.stdout.split():  # only processes inside our own namespace
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        for f in (self.log.name, self.serial):
            pathlib.Path(f).unlink(missing_ok=True)


def wrk(ns, url, secs, conns):
    """Runs wrk; returns req/s, errors, and wrk's own CPU use in % of one CPU."""
    cmd = ["ip", "netns", "exec", ns, "wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--timeout", "5s",
           "-H", "Connection: close", url]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0, cpu = time.time(), 0.0
    while p.poll() is None and time.time() - t0 < secs + 30:
        cpu = max(cpu, ticks(f"/proc/{p.pid}/stat"))  # `ip netns exec` execs wrk: same pid
        time.sleep(0.2)
    out, _ = p.communicate(timeout=30)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Socket errors: (.*)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    err = (errors.group(1) if errors else "") + (f" non2xx {non2xx.group(1)}" if non2xx else "")
    return rps, err, 100.0 * cpu / secs


def split(before, after):
    """Per-core % of the interval in rcv/http/send/main, and requests served."""
    out = []
    for b, a in zip(before["cores"], after["cores"]):
        el = max(1, a["elapsed_ns"] - b["elapsed_ns"])
        pct = {k: 100.0 * (a[k + "_ns"] - b[k + "_ns"]) / el for k in ("rcv", "http", "send", "main")}
        pct["requests"] = a["requests"] - b["requests"]
        pct["role"] = a["role"]
        busy = sum(a[k + "_ns"] - b[k + "_ns"] for k in ("rcv", "http", "send"))
        pct["busy_ns"] = busy
        out.append(pct)
    total = max(1, sum(c["requests"] for c in out))
    for c in out:  # the core's busy time per request the whole server answered
        c["us_per_req"] = c["busy_ns"] / 1000.0 / total
    return out


def cpu_split(kind, pid, t0, t1, dt):
    """Where the serving process's CPU went, in % of one CPU."""
    if kind == "host":
        return {"server": 100.0 * (sum(c for _, c in t1.values()) - sum(c for _, c in t0.values())) / dt}
    vcpu = main = other = 0.0
    for tid, (comm, c) in t1.items():
        d = 100.0 * (c - t0.get(tid, (comm, 0.0))[1]) / dt
        if comm.startswith("CPU "):
            vcpu += d
        elif tid == pid:
            main += d
        else:
            other += d
    return {"vcpus": vcpu, "main": main, "other": other}


def measure(cfg, secs, conns):
    name, kind, args, mq = cfg
    r = Run(name, kind, args, mq)
    try:
        before = r.stats()
        m0, th0, t0 = machine_busy(), threads(r.pid), time.time()
        rps, err, wrk_cpu = wrk(r.ns, f"http://{SERVER}{PATH}", secs, conns)
        m1, th1, t1 = machine_busy(), threads(r.pid), time.time()
        after = r.stats()
    finally:
        r.close()
    reqs = after["total"]["requests"] - before["total"]["requests"]
    bells = after["total"]["nic"].get("doorbells", 0) - before["total"]["nic"].get("doorbells", 0)
    cpu = cpu_split(kind, r.pid, th0, th1, t1 - t0)
    cpu["machine"] = 100.0 * (m1[0] - m0[0]) / max(1, m1[1] - m0[1])
    cpu["wrk"] = wrk_cpu
    return {"rps": rps, "err": err, "split": split(before, after), "cpu": cpu,
            "bells": bells / max(1, reqs), "kind": kind}


def cpu_text(r):
    c = r["cpu"]
    if r["kind"] == "kernel":
        return f"QEMU vCPUs {c['vcpus']:.0f}%, main loop {c['main']:.0f}%, other {c['other']:.0f}%"
    return f"server {c['server']:.0f}%"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--no-host", action="store_true", help="only the kernel configurations")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces, TAP)")
    if not shutil.which("wrk"):
        sys.exit("wrk missing: apt-get install wrk")
    if not BIN.exists():
        sys.exit("build first: cargo build --release -p bareweb")
    configs = KERNEL + ([] if a.no_host else HOST)
    results = {c[0]: [] for c in configs}
    load0 = os.getloadavg()
    for rnd in range(a.rounds):
        for cfg in configs:  # interleaved
            res = measure(cfg, a.secs, a.conns)
            results[cfg[0]].append(res)
            cores = "  ".join(f"c{i} {c['role']} rcv {c['rcv']:.0f}% http {c['http']:.0f}% "
                              f"send {c['send']:.0f}% main {c['main']:.0f}% "
                              f"{c['us_per_req']:.1f}us/req ({c['requests']} req)"
                              for i, c in enumerate(res["split"]))
            print(f"round {rnd + 1} {cfg[0]:38} {res['rps']:8.0f} req/s {res['err']} machine "
                  f"{res['cpu']['machine']:.0f}% {cpu_text(res)} wrk {res['cpu']['wrk']:.0f}% "
                  f"doorbells/req {res['bells']:.2f}  {cores}", flush=True)
    load1 = os.getloadavg()
    base = statistics.median(r["rps"] for r in results[KERNEL[0][0]])
    lines = [f"File {PATH} (4096 bytes), connection per request, `wrk -t1 -c{a.conns} -d{a.secs}s`, "
             f"{a.rounds} interleaved rounds, medians and (min–max) (CPU and split: the run with the "
             f"median req/s). Kernel: `bareweb run --accel tcg` (QEMU {qemu_version()}, TCG), "
             f"virtio-net on a TAP. Machine: {os.cpu_count()} CPUs shared by QEMU (or the host server), "
             f"wrk and whatever else runs (load average {load0[0]:.1f} before, {load1[0]:.1f} after), "
             f"`{os.uname().release}`.", "",
             "| configuration | req/s (min–max) | vs kernel 1 core | machine CPU busy | where the CPU went "
             "(% of one CPU) | wrk CPU | doorbells / request | per core: RCV / HTTP / SEND / Main, "
             "busy µs per request |",
             "|---|---|---|---|---|---|---|---|"]
    for cfg in configs:
        runs = sorted(results[cfg[0]], key=lambda r: r["rps"])
        r = runs[len(runs) // 2]
        cores = "<br>".join(f"core {i} ({c['role']}): {c['rcv']:.0f} / {c['http']:.0f} / {c['send']:.0f} / "
                            f"{c['main']:.0f} %, {c['us_per_req']:.1f} µs/req, {c['requests']} req"
                            for i, c in enumerate(r["split"]))
        bells = f"{r['bells']:.2f}" if r["kind"] == "kernel" else "-"
        lines.append(f"| {cfg[0]} | {r['rps']:.0f} ({runs[0]['rps']:.0f}–{runs[-1]['rps']:.0f}) | "
                     f"{r['rps'] / base:.2f}x | {r['cpu']['machine']:.0f}% | "
                     f"{cpu_text(r)} | {r['cpu']['wrk']:.0f}% | {bells} | {cores} |")
    lines += ["", "All runs (req/s): " + "; ".join(
        f"{name} " + ", ".join(f"{r['rps']:.0f}" for r in rs) for name, rs in results.items())]
    errs = [f"{name}: {r['err']}" for name, rs in results.items() for r in rs if r["err"]]
    lines.append("Errors: " + ("; ".join(errs) if errs else "none (no socket errors, no non-2xx)."))
    table = "\n".join(lines)
    print("\n" + table)
    if a.out:
        pathlib.Path(a.out).write_text(table + "\n")


def qemu_version():
    try:
        out = sh("qemu-system-x86_64", "--version").stdout
        return out.split("version", 1)[1].split()[0]
    except Exception:
        return "?"


if __name__ == "__main__":
    main()
