#!/usr/bin/env python3
"""The bare HTTP load client validated against the socket client and wrk: one
`bareweb serve --tap` (TAP bw0 on a bridge that also holds the bare client's TAP bwc0, the
veth end whose peer xc0 the AF_XDP client uses, and the namespace's own address for the
socket client and wrk), `/files/4k.html`, loads where the client is not the limit:

- `--rate 2000` for 3 s, keep-alive and a connection per fetch: socket, bare-tap, bare-xdp
  (wrk has no open-loop rate);
- `--parallel 1` (wrk `-t1 -c1`) for 3 s, keep-alive: socket, bare-tap, bare-xdp, wrk.

ROUNDS interleaved rounds; each line gives fetches/s, the mean and p50 response time and the
client's CPU per fetch. Root; builds nothing (uses target/release/bareweb).

    sudo python3 bench/bare_http.py [ROUNDS]

Run it under `flock /work/coord/bench.lock nice -n -15` on a shared machine and report the
load (`uptime`) with the figures (docs/perf/log/2026-11-25-bare-client-vs-socket-client.md)."""
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "system"))

from test_bare_http import BIN, CLIENT_IP, SERVER_IP, XDP_IP, Bridged  # noqa: E402

URL = f"http://{SERVER_IP}/files/4k.html"
SECS = "3"


def load(b, client, *args):
    link = {"socket": (), "bare-tap": ("--tap", "bwc0", "--ip", f"{CLIENT_IP}/24"),
            "bare-xdp": ("--xdp", "xc0", "--ip", f"{XDP_IP}/24")}[client]
    r = b.ns.run(BIN, "load", *link, URL, *args, "--seconds", SECS, "--json", "-q",
                 timeout=60, check=False)
    rep = json.loads(r.stdout)
    return (rep["fetches_per_sec"], rep["response"]["mean_ms"], rep["response"]["p50_ms"],
            rep["client_cpu_us_per_fetch"], rep["errors"] or 0)


def ms(v, unit):
    return float(v) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def wrk(b):
    out = b.ns.run("wrk", "-t1", "-c1", f"-d{SECS}s", "--latency", URL, timeout=60).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    avg = re.search(r"Latency\s+([\d.]+)(us|ms|s)", out)
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    errs = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out)
    return rate, ms(*avg.groups()), ms(*p50.groups()), float("nan"), 1 if errs else 0


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    b = Bridged()
    cases = [
        ("rate 2000, keep-alive", ("--rate", "2000", "-k"), False),
        ("rate 2000, conn/fetch", ("--rate", "2000"), False),
        ("parallel 1, keep-alive", ("--parallel", "1", "-k"), True),
    ]
    try:
        for rnd in range(rounds):
            for name, args, with_wrk in cases:
                clients = ["socket", "bare-tap", "bare-xdp"]
                if rnd % 2:
                    clients.reverse()
                for c in clients + (["wrk"] if with_wrk else []):
                    fps, mean, p50, cpu, errs = wrk(b) if c == "wrk" else load(b, c, *args)
                    print(f"round {rnd}  {name:23} {c:9} {fps:8.0f}/s  mean {mean:6.3f} ms  "
                          f"p50 {p50:6.3f} ms  client CPU {cpu:5.1f} us/fetch  errors {errs}",
                          flush=True)
    finally:
        b.close()


if __name__ == "__main__":
    main()
