"""Whole-system tests of many cores on the host platform: `bareweb serve --cores N
--mode perqueue|netcore [--bsp-http]` in a network namespace (prefix `bws`), loaded with
500 concurrent connections, and the stats JSON / HTML page checked against what the client
did."""
import hashlib
import json
import os
import time

import pytest

from conftest import SERVER_IP, SITE, Server
from qemu_harness import published_requests

URL = f"http://{SERVER_IP}"
STATS = "/.well-known/bareweb/stats"

# (id, extra serve arguments, cores)
CONFIGS = [
    ("one-core", ["--cores", "1"], 1),
    ("perqueue-2", ["--cores", "2", "--mode", "perqueue"], 2),
    ("netcore-2", ["--cores", "2", "--mode", "netcore"], 2),
    ("netcore-3-bsp", ["--cores", "3", "--mode", "netcore", "--bsp-http"], 3),
]


def sha(path):
    return hashlib.sha256((SITE / path.lstrip("/")).read_bytes()).hexdigest()


def stats(server):
    r = server.ns.run("curl", "-sS", "--max-time", "10", URL + STATS)
    return json.loads(r.stdout)


def settle(server, want_tcbs_at_most=1, timeout=10):
    """Waits until the published rows show no connection but (at most) the stats one, and
    core 0 (network-core mode) has applied the close notes for the rest."""
    deadline = time.time() + timeout
    while True:
        s = stats(server)
        in_use = s["total"]["counters"]["tcbs_in_use"]
        mapped = s["cores"][0].get("nic", {}).get("conn_map", 0)
        if (in_use <= want_tcbs_at_most and mapped <= want_tcbs_at_most) or time.time() > deadline:
            return s
        time.sleep(0.2)


@pytest.fixture(params=CONFIGS, ids=[c[0] for c in CONFIGS], scope="module")
def cores_server(request):
    name, extra, n = request.param
    s = Server(extra=extra, prefix="bws")
    s.n_cores = n
    s.mode_args = extra
    yield s
    s.close()


def test_500_concurrent_connections_right_bytes_no_tcb_left(cores_server):
    s = cores_server
    paths = ["/files/4k.html", "/gradient.png", "/index.html"]
    res = s.ns.client("keepalive", "500", "1", *paths, timeout=300)
    assert res["n_errors"] == 0, res["errors"]
    for p in paths:
        assert res["digests"][p] == [sha(p)], p
    st = settle(s)
    assert st["total"]["counters"]["tcbs_in_use"] <= 1, st["total"]["counters"]
    assert len(st["cores"]) == s.n_cores
    assert st["total"]["counters"]["tcp_no_tcb"] == 0
    if "netcore" in s.mode_args:
        core0 = st["cores"][0]
        assert core0["nic"]["conn_map"] <= 1, core0["nic"]  # only the stats request's
        assert core0["nic"]["dispatch_no_core"] == 0
        assert core0["nic"]["conn_map_high"] >= 100, "connections were concurrent"
    # Every core that serves HTTP got a share of the 500 connections.
    http_cores = [c for c in st["cores"] if c["role"] != "net"]
    for c in http_cores:
        assert c["counters"]["tcp_accepted"] > 0, (c["core"], c["role"])
    assert st["total"]["max_parallel"] >= 1


def test_stats_counters_add_up_to_the_clients_requests(cores_server):
    s = cores_server
    before = settle(s)
    k = 40
    res = s.ns.client("cpr", str(k), "/files/4k.html", timeout=120)
    assert res["ok"] == k, res
    # The first stats request is counted once it is answered; the one rendering `after`
    # is not yet counted in its own JSON.
    after, want = published_requests(lambda: stats(s), before["total"]["requests"] + 1 + k)
    assert after["total"]["requests"] == want
    per_core = sum(c["requests"] for c in after["cores"])
    assert per_core == after["total"]["requests"]
    assert sum(c["counters"]["http_2xx"] for c in after["cores"]) >= k
    for c in after["cores"]:
        assert c["elapsed_ns"] > 0
        split = c["rcv_ns"] + c["http_ns"] + c["send_ns"] + c["main_ns"]
        assert abs(split - c["elapsed_ns"]) <= max(1, c["elapsed_ns"] // 100), c
    assert after["total"]["stay"]["count"] >= k
    assert after["total"]["stay"]["max_ns"] > 0


def test_stats_page_html(cores_server):
    s = cores_server
    r = s.ns.run("curl", "-sS", "-D", "-", "--max-time", "10", URL + "/.well-known/bareweb/")
    head, _, body = r.stdout.replace("\r\n", "\n").partition("\n\n")
    assert head.startswith("HTTP/1.1 200"), head
    assert "text/html" in head
    assert "<svg" in body and "stats" in body
    assert "http://" not in body.replace("http://www.w3.org/2000/svg", ""), "external asset"


def test_no_stats_page_flag():
    s = Server(extra=["--cores", "2", "--no-stats-page"], prefix="bws")
    try:
        for path in (STATS, "/.well-known/bareweb/"):
            r = s.ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                         URL + path)
            assert r.stdout == "404", path
    finally:
        counters = s.stop()
        s.close()
    assert counters.get("tcbs_in_use") == 0


def test_stop_prints_per_core_lines_and_totals():
    s = Server(extra=["--cores", "2", "--mode", "netcore"], prefix="bws")
    try:
        res = s.ns.client("cpr", "10", "/index.html", timeout=60)
        assert res["ok"] == 10
    finally:
        counters = s.stop()
        out = s.output()
        s.close()
    assert "per core (netcore)" in out
    assert sum(1 for line in out.splitlines() if line.startswith("  core ")) == 2
    assert counters["http_requests"] >= 11  # the readiness probe and ours
    assert counters["tcbs_in_use"] == 0


def test_default_falls_back_to_netcore_without_a_multiqueue_tap():
    """`--cores 2` defaults to per-queue mode only when the TAP can have a queue per core;
    on an existing single-queue TAP it says so and serves in network-core mode."""
    import subprocess

    from conftest import BIN, Netns, require_root

    require_root()
    ns = Netns("bws")
    log = open(f"/tmp/{ns.name}.log", "w+")
    proc = None
    try:
        ns.run("ip", "tuntap", "add", "bw0", "mode", "tap")
        proc = subprocess.Popen(ns.cmd(BIN, "serve", SITE, "--tap", "bw0", "--ip", f"{SERVER_IP}/24",
                                       "--cores", "2"), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        code = ""
        while time.time() < deadline and code != "200":
            assert proc.poll() is None, "server exited"
            code = ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1",
                          URL + "/", check=False).stdout
            time.sleep(0.1)
        assert code == "200"
        st = json.loads(ns.run("curl", "-sS", "--max-time", "5", URL + STATS).stdout)
        assert st["mode"] == "netcore"
        assert [c["role"] for c in st["cores"]] == ["net", "http"]
    finally:
        if proc is not None:
            proc.send_signal(2)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.seek(0)
        out = log.read()
        log.close()
        ns.close()
    assert "offers no queue per core" in out, out


@pytest.mark.parametrize("bsp_http", [False, True], ids=["netcore", "netcore-bsp-http"])
def test_netcore_on_one_core_is_the_one_core_server_and_says_so(bsp_http):
    """A network core needs other cores to hand connections to: with `--cores 1` the
    engine's plan serves everything on the one core, as the kernel does, and says why."""
    extra = ["--cores", "1", "--mode", "netcore"] + (["--bsp-http"] if bsp_http else [])
    s = Server(extra=extra, prefix="bws")
    try:
        res = s.ns.client("cpr", "10", "/index.html", timeout=60)
        assert res["ok"] == 10
        st = stats(s)
        assert st["mode"] == "single"
        assert [c["role"] for c in st["cores"]] == ["single"]
    finally:
        counters = s.stop()
        out = s.output()
        s.close()
    assert "mode single: one core: network-core mode needs two or more" in out, out
    assert counters["tcbs_in_use"] == 0


def core_thread_cpus(server):
    """CPUs each core thread may run on, from /proc (thread name -> set of CPUs)."""
    out = {}
    task = f"/proc/{server.proc.pid}/task"
    for tid in os.listdir(task):
        with open(f"{task}/{tid}/comm") as f:
            name = f.read().strip()
        if name.startswith("bareweb-core"):
            with open(f"{task}/{tid}/status") as f:
                allowed = next(l for l in f if l.startswith("Cpus_allowed_list:")).split(":")[1]
            cpus = set()
            for part in allowed.strip().split(","):
                lo, _, hi = part.partition("-")
                cpus.update(range(int(lo), int(hi or lo) + 1))
            out[name] = cpus
    return out


@pytest.mark.parametrize("no_pin", [False, True], ids=["pinned", "no-pin"])
def test_core_threads_are_pinned_unless_no_pin(no_pin):
    mine = os.sched_getaffinity(0)  # what an unpinned thread inherits
    if len(mine) < 2:
        pytest.fail("this test needs 2 CPUs to tell a pinned thread from a free one")
    extra = ["--cores", "2", "--mode", "netcore"] + (["--no-pin"] if no_pin else [])
    s = Server(extra=extra, prefix="bws")
    try:
        res = s.ns.client("cpr", "20", "/index.html", timeout=60)
        assert res["ok"] == 20
        cpus = core_thread_cpus(s)
    finally:
        counters = s.stop()
        s.close()
    assert sorted(cpus) == ["bareweb-core0", "bareweb-core1"]
    if no_pin:
        assert all(c == mine for c in cpus.values()), cpus
    else:
        assert cpus == {"bareweb-core0": {0}, "bareweb-core1": {1}}, cpus
    assert counters["tcbs_in_use"] == 0
