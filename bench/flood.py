#!/usr/bin/env python3
"""Floods next to nginx/Linux (the hardening work): a burst of spoofed SYNs, a sustained SYN flood,
and silent clients that hold connections and reconnect when closed, against bareweb (host
platform on a TAP, one core, defaults) and nginx on Linux (a veth into a second namespace,
SYN cookies on as Linux has them by default, `worker_connections 4096`: with the default
1024 the 1,100 silent clients take every connection nginx has). During each, a client on
a second address fetches / every 50 ms (1 s timeout) and for 2 s after; reported: probes
answered, their median and slowest time, and the SYN rate reached.

    sudo python3 bench/flood.py [--rounds 2] [--servers bareweb,nginx]

The floods come from a raw socket in the client namespace (tests/system/client.py
`synflood`, spoofed sources 10.0.0.10-249), the silent clients from its `silent`; the
client side of the link gets a queue of 10,000 frames on both (as the tests give the TAP:
the flood and the probe share it). Runs nothing outside the namespaces it makes.
"""
import argparse
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from conftest import Server  # noqa: E402
from loss import Nginx  # noqa: E402

PROBE_IP = "10.0.0.3"
SCENARIOS = {
    "burst": ("synflood", "50000", "20"),
    "sustained": ("synflood", "400000", "8"),
    "silent": ("silent", "1100", "8"),
}


def start(kind):
    if kind == "bareweb":
        s = Server(prefix="bwf")
        return s, s.mac
    if kind == "nginx":
        n = Nginx(worker_connections=4096, extra="client_header_timeout 60s;")
        return n, n.mac
    sys.exit(f"unknown server {kind}")


def run(kind, scenario):
    s, mac = start(kind)
    try:
        s.ns.run("ip", "addr", "add", f"{PROBE_IP}/24", "dev", "bw0")
        s.ns.run("ip", "link", "set", "bw0", "txqueuelen", "10000")
        cmd = SCENARIOS[scenario]
        args = (cmd[0], "bw0", mac, *cmd[1:]) if cmd[0] == "synflood" else cmd
        t0 = time.time()
        res = s.ns.client(*args, timeout=120, env={"BW_PROBE_IP": PROBE_IP})
        res["wall_s"] = time.time() - t0
    finally:
        if isinstance(s, Server):
            s.stop()
            s.close()
        else:
            s.close()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--servers", default="bareweb,nginx")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    a = ap.parse_args()
    kinds = a.servers.split(",")
    scenarios = a.scenarios.split(",")
    rows = {(k, sc): [] for k in kinds for sc in scenarios}
    for r in range(a.rounds):
        for sc in scenarios:
            for kind in kinds:
                res = run(kind, sc)
                rows[(kind, sc)].append(res)
                print(f"  round {r + 1} {sc} {kind}: {res}", flush=True)
    print("\n| scenario | server | probes answered | slowest probe s | SYNs/s sent |")
    print("|---|---|---|---|---|")
    for sc in scenarios:
        for kind in kinds:
            rs = rows[(kind, sc)]
            ok = sum(x["probes_ok"] for x in rs)
            n = sum(x["probes"] for x in rs)
            worst = max(x["probe_max_s"] or 0 for x in rs)
            rate = "-"
            if "flood_s" in rs[0]:
                rate = f"{statistics.mean(x['sent'] / max(x['flood_s'], 1e-3) for x in rs):,.0f}"
            print(f"| {sc} | {kind} | {ok} of {n} | {worst:.3f} | {rate} |")


if __name__ == "__main__":
    main()
