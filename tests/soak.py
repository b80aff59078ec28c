#!/usr/bin/env python3
"""A long soak of `bareweb serve` (host platform, a TAP in a network namespace): for the
given minutes, rounds of keep-alive and connection-per-request load over every file of the
example site (each body checked by SHA-256), 1 MiB downloads over a link dropping 3% of
frames each way, malformed requests, and silent connections. It fails unless every
response was right, no TCB is left at the end, and the server's resident memory did not
grow after the first round (everything is allocated at start).

    sudo python3 tests/soak.py [MINUTES]      (cargo xtask soak [MINUTES]; default 30)

Not part of CI (it is long by design). Bounded: each step has its own time limit, the whole
run stops after MINUTES plus one round; the namespace and server are removed at the end.
"""
import hashlib
import json
import subprocess
import sys
import time
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "system"))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import Server  # noqa: E402
from qemu_harness import BIN, SERVER_IP, SITE  # noqa: E402

LOSS = """
table netdev bwsoak {
  chain in { type filter hook ingress device "bw0" priority 0; policy accept;
    numgen random mod 100 < 3 drop
  }
  chain out { type filter hook egress device "bw0" priority 0; policy accept;
    numgen random mod 100 < 3 drop
  }
}
"""

BAD = [
    b"GARBAGE\r\n\r\n",
    b"GET / HTTP/2.0\r\nHost: x\r\n\r\n",
    b"GET /" + b"a" * 3000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    bytes(range(256)) * 4 + b"\r\n\r\n",
]


def rss_kib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def load(ns, urls, keepalive, seconds):
    args = [BIN, "load", "--url-file", urls, "--parallel", "16", "--seconds", str(seconds),
            "--verify", SITE, "--json", "-q", "--timeout", "10"]
    if keepalive:
        args.append("-k")
    r = ns.run(*args, timeout=seconds + 60)
    return json.loads(r.stdout)


def main():
    minutes = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    files = sorted(p for p in SITE.rglob("*") if p.is_file() and not p.name.startswith("."))
    urls = pathlib.Path("/tmp/bareweb-soak-urls.txt")
    urls.write_text("".join(f"http://{SERVER_IP}/{p.relative_to(SITE).as_posix()}\n"
                            for p in files))
    want = hashlib.sha256((SITE / "files" / "1m.bin").read_bytes()).hexdigest()
    s = Server(prefix="bws")
    totals = {"fetches": 0, "errors": 0, "downloads": 0, "bad_downloads": 0, "malformed": 0}
    rss = []
    failures = []
    t_end = time.time() + minutes * 60
    rounds = 0
    try:
        while time.time() < t_end or rounds == 0:
            rounds += 1
            for keepalive, secs in ((True, 20), (False, 10)):
                rep = load(s.ns, urls, keepalive, secs)
                totals["fetches"] += rep["fetches"]
                # Errors (connect, timeouts, bad responses) and any response whose status
                # or body (checked against the site by SHA-256) was wrong.
                n_err = rep["errors_total"] + rep["fetches"] - rep["fetches_ok"]
                totals["errors"] += n_err
                if n_err or rep["fetches"] == 0:
                    failures.append(f"round {rounds} load keepalive={keepalive}: "
                                    f"{rep['errors']} ok {rep['fetches_ok']}/{rep['fetches']}")
            r = subprocess.run(s.ns.cmd("nft", "-f", "-"), input=LOSS, text=True,
                               capture_output=True)
            assert r.returncode == 0, r.stderr
            try:
                res = s.ns.client("loss", "5", "/files/1m.bin", want, timeout=300)
            finally:
                s.ns.run("nft", "delete", "table", "netdev", "bwsoak", check=False)
            totals["downloads"] += 5
            totals["bad_downloads"] += 5 - res["ok"]
            if res["ok"] != 5:
                failures.append(f"round {rounds} lossy downloads: {res['bad']}")
            for req in BAD:
                out = s.ns.client("raw", req.hex(), "5")
                totals["malformed"] += 1
                if not out["statuses"] or not out["statuses"][0].startswith("4") \
                        and not out["statuses"][0].startswith("5") or not out["closed"]:
                    failures.append(f"round {rounds} malformed {req[:20]!r}: {out}")
            s.ns.client("silent", "50", "3")
            rss.append(rss_kib(s.proc.pid))
            print(f"round {rounds}: {totals}, rss {rss[-1]} KiB", flush=True)
        time.sleep(12)  # silent connections meet the 10 s request timeout
    finally:
        counters = s.stop()
        s.ns.close()
    print(json.dumps({"rounds": rounds, **totals, "rss_kib_first": rss[0] if rss else None,
                      "rss_kib_last": rss[-1] if rss else None,
                      "rss_kib_max": max(rss) if rss else None,
                      "tcbs_in_use": counters.get("tcbs_in_use"),
                      "tcbs_max": counters.get("tcbs_max"),
                      "http_requests": counters.get("http_requests")}))
    if counters.get("tcbs_in_use") != 0:
        failures.append(f"TCBs left: {counters.get('tcbs_in_use')}")
    if len(rss) > 1 and max(rss[1:]) > rss[0] + 1024:
        failures.append(f"memory grew after the first round: {rss}")
    if failures:
        print("\n".join(["SOAK FAILED:"] + failures[:20]))
        sys.exit(1)
    print("soak ok")


if __name__ == "__main__":
    main()
