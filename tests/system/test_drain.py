"""Graceful drain of `bareweb serve` on SIGTERM (docs/design/drain.md): under a steady
`bareweb load --rate`, SIGTERM turns /healthz to 503 at once, every fetch of the grace
still succeeds (keep-alive ones are told `Connection: close` and reconnect), the process
exits by itself soon after the grace, and its last line says how the drain went. A client
that never reads its response is reset at --drain-timeout and counted.
"""
import json
import signal
import subprocess
import time

from conftest import BIN, SERVER_IP, Server

GRACE = 3
TIMEOUT = 8


def drain_server():
    return Server(extra=("--drain-grace", str(GRACE), "--drain-timeout", str(TIMEOUT)),
                  prefix="bwdr")


def load(s, *extra, seconds):
    """`bareweb load` in the server's namespace, started now; its JSON report later."""
    return subprocess.Popen(
        s.ns.cmd(BIN, "load", "--rate", "40", "--seconds", seconds, "--timeout", "3", "--json",
                 "-q", *extra, f"http://{SERVER_IP}/", f"http://{SERVER_IP}/files/4k.html",
                 f"http://{SERVER_IP}/gradient.png"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def healthz(s):
    r = s.ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2",
                 f"http://{SERVER_IP}/healthz", check=False)
    return r.stdout


def test_sigterm_drains_without_a_failed_fetch_and_exits_after_the_grace():
    s = drain_server()
    try:
        assert healthz(s) == "200"
        # Both load clients end inside the grace (they start 1 s before SIGTERM and end
        # half a second before the grace does; ending with it raced the refusal of new
        # connections after it): every fetch they make must succeed.
        plain = load(s, seconds=str(GRACE + 0.5))
        kept = load(s, "--keepalive", seconds=str(GRACE + 0.5))
        time.sleep(1.0)
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        assert healthz(s) == "503", "the health check fails at once"
        reports = []
        for p in (plain, kept):
            out, err = p.communicate(timeout=GRACE + 20)
            assert p.returncode == 0, err
            reports.append(json.loads(out))
        s.proc.wait(TIMEOUT + 5)
        took = time.monotonic() - t0
        for r in reports:
            assert r["fetches"] > 40 * GRACE, r
            assert r["fetches_ok"] == r["fetches"], r
            assert r["errors_total"] == 0 and r["timeouts"] == 0 and r["unfinished"] == 0, r
        assert GRACE - 0.5 <= took <= GRACE + 2, f"exited {took:.2f} s after SIGTERM"
        assert s.proc.returncode == 0
        log = s.output()
        assert "bareweb: draining (SIGTERM)" in log, log
        line = [ln for ln in log.splitlines() if ln.startswith("bareweb: drained in")]
        assert line and "0 reset at the timeout" in line[0], log
        closed = int(line[0].split(": ")[2].split()[0])
        assert closed >= 1, line
    finally:
        s.close()


def test_what_is_left_at_the_timeout_is_reset_and_counted():
    s = drain_server()
    try:
        # A client that asks for 1 MiB with a tiny receive buffer and never reads.
        code = (
            "import socket,time\n"
            "c=socket.socket()\n"
            "c.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,4096)\n"
            f"c.connect(('{SERVER_IP}',80))\n"
            "c.sendall(b'GET /files/1m.bin HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
            "time.sleep(30)\n"
        )
        stuck = subprocess.Popen(s.ns.cmd("python3", "-c", code))
        s.ns.wait_established(1)
        time.sleep(0.3)
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(TIMEOUT + 5)
        took = time.monotonic() - t0
        stuck.kill()
        stuck.wait()
        assert TIMEOUT - 0.5 <= took <= TIMEOUT + 2, f"exited {took:.2f} s after SIGTERM"
        log = s.output()
        assert "1 reset at the timeout" in log, log
    finally:
        s.close()


def test_ctrl_c_during_a_drain_stops_at_once():
    s = drain_server()
    try:
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGINT)
        s.proc.wait(5)
        assert time.monotonic() - t0 < 1.0
        assert "drain cut short" in s.output(), s.output()
    finally:
        s.close()


def test_one_sigterm_delivered_twice_is_one_and_a_later_one_stops():
    """`timeout` and supervisors may deliver one stop twice at once (to the process and to
    its group): the pair starts one drain, not a drain and its cut. A SIGTERM a second or
    more later is the second one: it stops at once."""
    s = drain_server()
    try:
        s.proc.send_signal(signal.SIGTERM)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert s.proc.poll() is None, s.output()
        assert healthz(s) == "503"
        time.sleep(0.7)
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(5)
        assert time.monotonic() - t0 < 1.0
        assert "drain cut short" in s.output(), s.output()
    finally:
        s.close()
