"""Reloading `bareweb serve` without downtime, as an operator does it: the site directory
changed on disk, then SIGHUP or `bareweb reload --pid-file`, under a stream of requests
(curl loops, large files in flight across the swaps). No fetch fails; every body is whole
and one version's; files added are served after the reload; a broken configuration is
refused with its reason and the old site keeps serving; the reloads are counted in
/metrics."""
import hashlib
import os
import signal
import subprocess
import time

import pytest

from conftest import BIN, SERVER_IP, Server

BIG = 3 * 1024 * 1024


def write_site(d, version):
    (d / "index.html").write_text(f"<h1>version {version}</h1>\n")
    # The same name, new bytes each version: a fetch in flight across a swap must get
    # one version whole.
    (d / "big.bin").write_bytes(hashlib.sha256(str(version).encode()).digest() * (BIG // 32))


@pytest.fixture(scope="module")
def reloading(tmp_path_factory):
    d = tmp_path_factory.mktemp("reload")
    site = d / "site"
    site.mkdir()
    write_site(site, 0)
    pid = d / "serve.pid"
    s = Server(extra=("--cores", "2", "--pid-file", pid, "--drain-timeout", "20"), site=site)
    s.site, s.pid = site, pid
    yield s
    s.close()


def get(s, path):
    r = s.ns.run("curl", "-s", "--max-time", "5", "-w", "\n%{http_code}",
                 f"http://{SERVER_IP}{path}", check=False)
    body, _, code = r.stdout.rpartition("\n")
    return code, body


def wait_output(s, text, after=0, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if text in s.output()[after:]:
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not said: {s.output()[after:][-2000:]}")


def metric(s, name):
    code, text = get(s, "/metrics")
    assert code == "200", text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


LOOP = r"""
fail=0; n=0
end=$(( $(date +%s) + {secs} ))
while [ $(date +%s) -lt $end ]; do
  for p in /big.bin /index.html; do
    n=$((n+1))
    out=$(curl -s --max-time 10 -o /tmp/bwreload.$$ -w '%{{http_code}} %{{size_download}}' http://{ip}$p) || out="curl-failed"
    case "$p $out" in
      "/big.bin 200 {big}") sha=$(sha256sum < /tmp/bwreload.$$ | cut -c1-64); echo "big $sha" ;;
      "/index.html 200 "*) echo "index $(cat /tmp/bwreload.$$)" ;;
      *) fail=$((fail+1)); echo "FAIL $p $out" ;;
    esac
  done
done
rm -f /tmp/bwreload.$$
echo "done $n $fail"
"""


def test_reloads_under_load_lose_no_fetch(reloading):
    s = reloading
    versions = {hashlib.sha256(hashlib.sha256(str(v).encode()).digest() * (BIG // 32)).hexdigest(): v
                for v in range(6)}
    loops = [subprocess.Popen(s.ns.cmd("sh", "-c", LOOP.format(secs=8, ip=SERVER_IP, big=BIG)),
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    time.sleep(1)
    for v in range(1, 5):
        at = len(s.output())
        write_site(s.site, v)
        if v % 2:
            s.proc.send_signal(signal.SIGHUP)
        else:
            r = subprocess.run([BIN, "reload", "--pid-file", s.pid], capture_output=True,
                               text=True, timeout=10)
            assert r.returncode == 0, r.stderr
        wait_output(s, f"reloaded: generation {v}", at)
        code, body = get(s, "/index.html")
        assert (code, body) == ("200", f"<h1>version {v}</h1>\n"), "a new request sees the new site"
        time.sleep(1)
    results = []
    for l in loops:
        out, _ = l.communicate(timeout=60)
        results.append(out)
    text = "".join(results)
    fails = [l for l in text.splitlines() if l.startswith("FAIL")]
    assert not fails, fails[:10]
    total = sum(int(l.split()[1]) for l in text.splitlines() if l.startswith("done"))
    assert total > 50, text[-500:]
    seen = {versions.get(l.split()[1], "torn") for l in text.splitlines() if l.startswith("big ")}
    assert "torn" not in seen, "a body mixed two versions"
    assert len(seen) >= 2, f"fetches spanned the reloads: {seen}"
    assert s.proc.poll() is None
    # Old images are freed once nothing sends from them.
    wait_output(s, "generation 3 freed")
    assert metric(s, "bareweb_reloads_total") == 4
    assert metric(s, "bareweb_site_generation") == 4
    assert metric(s, "bareweb_reload_images_freed_total") >= 3


def test_a_new_file_is_served_after_a_reload(reloading):
    s = reloading
    assert get(s, "/new.txt")[0] == "404"
    (s.site / "new.txt").write_text("fresh\n")
    at = len(s.output())
    s.proc.send_signal(signal.SIGHUP)
    wait_output(s, "reloaded: generation", at)
    assert get(s, "/new.txt") == ("200", "fresh\n")


def test_a_broken_configuration_is_refused_and_the_old_site_serves(reloading):
    s = reloading
    before = get(s, "/index.html")
    refused = metric(s, "bareweb_reload_refused_total")
    generation = metric(s, "bareweb_site_generation")
    (s.site / "bareweb.toml").write_text("[[redirects]]\nfrom = \"/a\"\nto = \n")
    (s.site / "index.html").write_text("<h1>must not be served</h1>\n")
    try:
        at = len(s.output())
        s.proc.send_signal(signal.SIGHUP)
        wait_output(s, "reload refused", at)
        said = s.output()[at:]
        assert "bareweb.toml" in said, said
        assert get(s, "/index.html") == before
        assert metric(s, "bareweb_reload_refused_total") == refused + 1
        assert metric(s, "bareweb_site_generation") == generation
    finally:
        os.remove(s.site / "bareweb.toml")


def test_a_client_that_stops_reading_is_reset_at_the_drain_timeout(tmp_path):
    # A client asks for the 3 MiB file and reads nothing: its response holds the old image
    # until --drain-timeout, then it is reset and counted, and the image freed.
    site = tmp_path / "site"
    site.mkdir()
    write_site(site, 0)
    s = Server(extra=("--drain-timeout", "2"), site=site)
    try:
        code = (
            "import socket,time;"
            "c=socket.socket();c.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,4096);"
            f"c.connect(('{SERVER_IP}',80));"
            "c.sendall(b'GET /big.bin HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n');"
            "time.sleep(8)"
        )
        stalled = subprocess.Popen(s.ns.cmd("python3", "-c", code))
        time.sleep(1)
        write_site(site, 1)
        at = len(s.output())
        s.proc.send_signal(signal.SIGHUP)
        wait_output(s, "reloaded: generation 1", at)
        assert get(s, "/index.html") == ("200", "<h1>version 1</h1>\n")
        wait_output(s, "generation 0 freed", at, timeout=10)
        said = s.output()[at:]
        assert "(1 connections reset at the drain timeout)" in said, said
        assert metric(s, "bareweb_reload_reset_total") == 1
        assert metric(s, "bareweb_reload_images_freed_total") == 1
        stalled.kill()
        stalled.wait()
    finally:
        s.close()
