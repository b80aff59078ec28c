#!/usr/bin/env python3
"""The bare HTTP load client against the socket client (issue 18): the same `bareweb serve`
(TAP bw0 on a bridge that also holds the bare client's TAP bwc0 and the namespace's own
address), `/files/4k.html`, `--parallel 8 --seconds 4`, a connection per fetch and
keep-alive, ROUNDS interleaved rounds. Root; builds nothing (uses target/release/bareweb).

    sudo python3 bench/bare_http.py [ROUNDS]

Run it under `flock /work/coord/bench.lock nice -n -15` on a shared machine and report the
load (`uptime`) with the figures (docs/performance.md)."""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "system"))

from test_bare_http import BIN, CLIENT_IP, SERVER_IP, Bridged  # noqa: E402


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    b = Bridged()
    url = f"http://{SERVER_IP}/files/4k.html"
    try:
        for rnd in range(rounds):
            for ka in ([], ["-k"]):
                s = json.loads(b.ns.run(BIN, "load", url, "--parallel", "8", "--seconds", "4",
                                        *ka, "--json", "-q", timeout=60).stdout)
                r = b.ns.run(BIN, "load", "--tap", "bwc0", "--ip", f"{CLIENT_IP}/24", url,
                             "--parallel", "8", "--seconds", "4", *ka, "--json", "-q",
                             timeout=60, check=False)
                bb = json.loads(r.stdout)
                print(f"round {rnd} {'keep-alive' if ka else 'per-connection':14} "
                      f"socket {s['fetches_per_sec']:8.0f}/s p50 {s['response']['p50_ms']:.3f} ms"
                      f" (client CPU {s['client_cpu_us_per_fetch']:.1f} us/fetch)   "
                      f"bare {bb['fetches_per_sec']:8.0f}/s p50 {bb['response']['p50_ms']:.3f} ms"
                      f" (failed {bb['errors_total']}, client CPU "
                      f"{bb['client_cpu_us_per_fetch']:.1f} us/fetch, exit {r.returncode})",
                      flush=True)
    finally:
        b.close()


if __name__ == "__main__":
    main()
