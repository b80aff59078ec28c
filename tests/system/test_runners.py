"""Whole-system tests of the parallel runners (the OpenMP paper): `bareweb serve --runner R
--threads N` in a network namespace (prefix `bwr`) on a TAP. Each runner must serve every
file of examples/site with the right bytes, hold 200 concurrent keep-alive connections,
serve connections one after another, and end with no TCB in use; the stats JSON must show
a row per thread and one for the shared server."""
import hashlib
import json
import time

import pytest

from conftest import SERVER_IP, SITE, Server

URL = f"http://{SERVER_IP}"
STATS = "/.well-known/bareweb/stats"

# (id, runner, threads)
CONFIGS = [
    ("serial-1", "serial", 1),
    ("pool-2", "pool", 2),
    ("pool-4", "pool", 4),
    ("workshare-2", "workshare", 2),
    ("tasks-2", "tasks", 2),
    ("pinned-2", "pinned", 2),
]


def site_files():
    return sorted(p for p in SITE.rglob("*") if p.is_file() and not p.name.startswith("."))


def sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def stats(server):
    return json.loads(server.ns.run("curl", "-sS", "--max-time", "10", URL + STATS).stdout)


def settle(server, timeout=10):
    """Waits until no connection is open but the stats request's own."""
    deadline = time.time() + timeout
    while True:
        s = stats(server)
        if s["total"]["counters"]["tcbs_in_use"] <= 1 or time.time() > deadline:
            return s
        time.sleep(0.2)


@pytest.fixture(params=CONFIGS, ids=[c[0] for c in CONFIGS], scope="module")
def runner_server(request):
    _, runner, threads = request.param
    s = Server(extra=["--runner", runner, "--threads", str(threads)], prefix="bwr")
    s.runner, s.threads = runner, threads
    yield s
    s.close()


def test_every_file_right_bytes(runner_server, tmp_path):
    s = runner_server
    for f in site_files():
        path = "/" + f.relative_to(SITE).as_posix()
        out = tmp_path / "body"
        r = s.ns.run("curl", "-sS", "--max-time", "30", "-o", out, "-w", "%{http_code}", URL + path)
        assert r.stdout == "200", (path, r.stdout)
        assert hashlib.sha256(out.read_bytes()).hexdigest() == sha(f), f"{path}: wrong bytes"


def test_200_concurrent_connections_then_no_tcb_left(runner_server):
    s = runner_server
    paths = ["/files/4k.html", "/gradient.png", "/index.html"]
    res = s.ns.client("keepalive", "200", "2", *paths, timeout=300)
    assert res["n_errors"] == 0, res["errors"]
    for p in paths:
        assert res["digests"][p] == [sha(SITE / p.lstrip("/"))], p
    res = s.ns.client("cpr", "100", "/files/4k.html", timeout=120)
    assert res["ok"] == 100, res
    st = settle(s)
    c = st["total"]["counters"]
    assert c["tcbs_in_use"] <= 1, c
    assert c["tcbs_max"] >= 100, "the connections were concurrent"
    assert c["tcp_no_tcb"] == 0 and c["tcp_rst_sent"] == 0, c


def test_stats_rows_follow_the_runner(runner_server):
    s = runner_server
    st = stats(s)
    if s.runner == "pinned":
        assert st["mode"] == "perqueue"
        assert [c["role"] for c in st["cores"]] == ["queue"] * s.threads
        return
    assert st["mode"] == s.runner
    roles = [c["role"] for c in st["cores"]]
    assert len(roles) == s.threads + 1 and roles[-1] == "server", roles
    server_row = st["cores"][-1]
    assert server_row["elapsed_ns"] == 0 and server_row["requests"] == st["total"]["requests"]
    for c in st["cores"][:-1]:
        assert c["elapsed_ns"] > 0
        split = c["rcv_ns"] + c["http_ns"] + c["send_ns"] + c["lock_ns"] + c["main_ns"]
        assert abs(split - c["elapsed_ns"]) <= max(1, c["elapsed_ns"] // 100), c
    # Thread 0 owns the TAP: it received every frame's share of the work.
    assert st["cores"][0]["rcv_ns"] > 0


def test_stop_prints_threads_and_no_tcb_left():
    s = Server(extra=["--runner", "pool", "--threads", "3"], prefix="bwr")
    try:
        res = s.ns.client("cpr", "20", "/index.html", timeout=60)
        assert res["ok"] == 20
    finally:
        counters = s.stop()
        out = s.output()
        s.close()
    assert "per thread (pool)" in out, out
    assert sum(1 for line in out.splitlines() if line.startswith("  thread ")) == 3
    assert counters["http_requests"] >= 21  # the readiness probe and ours
    assert counters["tcbs_in_use"] == 0


def test_bad_runner_options_are_refused():
    from conftest import BIN, require_root
    import subprocess

    require_root()
    for extra in (["--runner", "serial", "--threads", "2"], ["--threads", "2"],
                  ["--runner", "pool", "--cores", "2"]):
        r = subprocess.run([BIN, "serve", SITE, "--tap", "bwrbad0", *extra], capture_output=True,
                           text=True, timeout=20)
        assert r.returncode != 0, extra
        assert r.stderr, extra
