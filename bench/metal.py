#!/usr/bin/env python3
"""Measurements of the bare-machine kernel under QEMU (TCG here), on a TAP in
a network namespace as tests/kernel runs it: what an idle core costs, what halting costs a
request, the idle spell's default, segmentation offload, boot. Not a test: figures for
docs/kernel.md and docs/perf/log/2026-11-24-bare-machine-idle-size.md.

    sudo python3 bench/metal.py [--what idle,wake,spell,load,offload] [--rounds 3]
                                [--idle-secs 60]

- idle:    QEMU's CPU over 5 s without traffic, halting (default) and `--poll-always`,
           for 1 and 2 cores (per-queue, network-core), e1000 and microvm.
- wake:    the first response after `--idle-secs` of silence (the core halted all along),
           next to the same request on a polling kernel.
- spell:   `--idle-poll-us` 0, 50, 200, 1000, 10000 and `--poll-always`: one keep-alive
           client fetching 4 KiB back to back (fetches/s, response p50/p99), and 200
           fresh connections a second (QEMU's CPU, response p50/p99).
- load:    16 keep-alive clients, halting next to `--poll-always` (fetches/s): the same
           serving figures within noise.
- offload: 1 MiB downloads (fresh connection each), offload on and off, interleaved.

Configurations are interleaved per round so a slow spell of the shared machine hits all
alike; each prints a Markdown table with the load average at its start. Needs root
(namespaces, TAP); everything it starts is stopped by PID and its namespaces removed.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import qemu_harness  # noqa: E402
from qemu_harness import BIN, SERVER_IP, Netns  # noqa: E402

URL = f"http://{SERVER_IP}"
TICK = os.sysconf("SC_CLK_TCK")


class Ns(Netns):
    prefix = "bwb"


class Kernel(qemu_harness.Kernel):
    netns = Ns
    tap = "bwb0"
    qemu_limit = 3600
    ready_limit = 180


def loadavg():
    return open("/proc/loadavg").read().split()[0]


def qemu_pid(k):
    r = subprocess.run(["ip", "netns", "pids", k.ns.name], capture_output=True, text=True)
    for pid in r.stdout.split():
        try:
            if open(f"/proc/{pid}/comm").read().startswith("qemu-system"):
                return int(pid)
        except OSError:
            pass
    raise RuntimeError("no QEMU")


def cpu_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def cpu_share(k, secs, during=None):
    """QEMU's CPU (share of one CPU) over `secs`, or over `during()` if given."""
    pid = qemu_pid(k)
    t0, c0 = time.time(), cpu_ticks(pid)
    out = during() if during else time.sleep(secs)
    t1, c1 = time.time(), cpu_ticks(pid)
    return (c1 - c0) / TICK / (t1 - t0), out


def load(k, *args):
    r = k.ns.run(BIN, "load", *args, "--json", "-q", timeout=600)
    return json.loads(r.stdout)


def curl_secs(k, path="/files/4k.html"):
    r = k.ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
                 "--max-time", "30", URL + path)
    code, secs = r.stdout.split()
    assert code == "200", r.stdout
    return float(secs)


def boot(extra=(), nic="virtio", smp=None, mq=False):
    return Kernel(nic=nic, extra=list(extra), smp=smp, multi_queue=mq)


def table(head, rows):
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print()


def med(v):
    return statistics.median(v) if v else float("nan")


def idle(rounds):
    configs = [
        ("virtio, 1 core", dict()),
        ("virtio, 2 cores per-queue", dict(smp=2, mq=True)),
        ("virtio, 2 cores network-core", dict(smp=2, extra=["--mode", "netcore"])),
        ("e1000, 1 core", dict(nic="e1000")),
        ("e1000, 2 cores network-core", dict(nic="e1000", smp=2)),
        ("microvm, 1 core", dict(extra=["--machine", "microvm"])),
        ("microvm, 2 cores network-core", dict(smp=2, extra=["--machine", "microvm"])),
    ]
    print(f"## Idle: QEMU's CPU over 5 s without traffic (load average {loadavg()})\n")
    rows = []
    for name, c in configs:
        res = {}
        for mode, more in (("halting", []), ("poll-always", ["--poll-always"])):
            k = boot(extra=c.get("extra", []) + more, nic=c.get("nic", "virtio"),
                     smp=c.get("smp"), mq=c.get("mq", False))
            try:
                curl_secs(k)
                time.sleep(1)
                res[mode] = [100 * cpu_share(k, 5)[0] for _ in range(rounds)]
            finally:
                k.close()
        rows.append((name, f"{med(res['halting']):.1f} %", f"{med(res['poll-always']):.0f} %"))
    table(["configuration", "halting (default)", "--poll-always"], rows)


def wake(idle_secs):
    print(f"## Wake-up: the first response after {idle_secs} s of silence "
          f"(load average {loadavg()})\n")
    rows = []
    for mode, more in (("halting", []), ("poll-always", ["--poll-always"])):
        k = boot(extra=more)
        try:
            curl_secs(k)
            warm = [1000 * curl_secs(k) for _ in range(5)]
            time.sleep(idle_secs)
            first = 1000 * curl_secs(k)
            st = k.stats_json()["total"]
            rows.append((mode, f"{first:.1f}", f"{med(warm):.1f}", st["sleeps"],
                         st["wakes"]["device"], st["wakes"]["timer"]))
        finally:
            k.close()
    table(["kernel", f"first GET after {idle_secs} s idle, ms", "GET when warm, ms (median of 5)",
           "sleeps", "woken by NIC", "woken by timer"], rows)


def spell(rounds):
    values = [("0", ["--idle-poll-us", "0"]), ("50", ["--idle-poll-us", "50"]),
              ("200 (default)", []), ("1000", ["--idle-poll-us", "1000"]),
              ("10000", ["--idle-poll-us", "10000"]), ("poll-always", ["--poll-always"])]
    print(f"## Idle spell before halting (load average {loadavg()}; {rounds} rounds, "
          "medians)\n")
    kernels = {name: boot(extra=more) for name, more in values}
    res = {name: {"seq": [], "p50": [], "p99": [], "cpu": [], "rp50": [], "rp99": []}
           for name, _ in values}
    try:
        for k in kernels.values():
            curl_secs(k)
        for _ in range(rounds):
            for name, k in kernels.items():
                r = load(k, URL + "/files/4k.html", "--parallel", "1", "-k", "--seconds", "4")
                res[name]["seq"].append(r["fetches_per_sec"])
                res[name]["p50"].append(r["response"]["p50_ms"])
                res[name]["p99"].append(r["response"]["p99_ms"])
                cpu, r = cpu_share(k, 0, lambda: load(k, URL + "/files/4k.html", "--rate", "200",
                                                      "--seconds", "4"))
                res[name]["cpu"].append(100 * cpu)
                res[name]["rp50"].append(r["response"]["p50_ms"])
                res[name]["rp99"].append(r["response"]["p99_ms"])
    finally:
        for k in kernels.values():
            k.close()
    table(["idle_poll_us", "1 keep-alive client: fetches/s", "response p50 ms", "p99 ms",
           "200 conn/s: QEMU CPU", "response p50 ms", "p99 ms"],
          [(n, f"{med(r['seq']):.0f}", f"{med(r['p50']):.2f}", f"{med(r['p99']):.2f}",
            f"{med(r['cpu']):.0f} %", f"{med(r['rp50']):.2f}", f"{med(r['rp99']):.2f}")
           for n, r in res.items()])


def loaded(rounds):
    print(f"## Under load: 16 keep-alive clients, 4 KiB (load average {loadavg()})\n")
    kernels = {"halting": boot(), "poll-always": boot(extra=["--poll-always"])}
    res = {n: [] for n in kernels}
    try:
        for k in kernels.values():
            curl_secs(k)
        for _ in range(rounds):
            for n, k in kernels.items():
                r = load(k, URL + "/files/4k.html", "--parallel", "16", "-k", "--seconds", "5")
                res[n].append(r["fetches_per_sec"])
    finally:
        for k in kernels.values():
            k.close()
    h, p = med(res["halting"]), med(res["poll-always"])
    table(["kernel", "fetches/s (median)", "rounds", "ratio to poll-always"],
          [(n, f"{med(v):.0f}", " ".join(f"{x:.0f}" for x in v), f"{med(v) / p:.2f}")
           for n, v in res.items()])
    return h / p


def offload(rounds):
    print(f"## 1 MiB downloads, fresh connection each (load average {loadavg()})\n")
    kernels = {"offload (default)": boot(), "--no-offload": boot(extra=["--no-offload"])}
    res = {n: {"t": [], "ka": []} for n in kernels}
    try:
        for k in kernels.values():
            curl_secs(k)
        for _ in range(rounds):
            for n, k in kernels.items():
                res[n]["t"] += [1000 * curl_secs(k, "/files/1m.bin") for _ in range(10)]
                r = load(k, URL + "/files/1m.bin", "--parallel", "2", "-k", "--seconds", "4")
                res[n]["ka"].append(r["fetches_per_sec"])
        tso = {n: k.stats_json()["total"]["counters"]["tx_tso_frames"] for n, k in kernels.items()}
    finally:
        for k in kernels.values():
            k.close()
    base = med(res["--no-offload"]["t"])
    table(["kernel", "one 1 MiB download, ms (median)", "MB/s", "2 keep-alive clients: fetches/s",
           "offloaded frames", "time ratio to --no-offload"],
          [(n, f"{med(r['t']):.1f}", f"{1.048576 / (med(r['t']) / 1000):.0f}",
            f"{med(r['ka']):.1f}", tso[n], f"{med(r['t']) / base:.2f}")
           for n, r in res.items()])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--what", default="idle,wake,spell,load,offload")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle-secs", type=int, default=60)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces, TAP)")
    what = a.what.split(",")
    print(f"bareweb kernel under QEMU ({qemu_harness.accel_line()})\n")
    if "idle" in what:
        idle(a.rounds)
    if "wake" in what:
        wake(a.idle_secs)
    if "spell" in what:
        spell(a.rounds)
    if "load" in what:
        loaded(a.rounds)
    if "offload" in what:
        offload(a.rounds)


if __name__ == "__main__":
    main()
