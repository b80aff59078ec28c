"""The access log of `bareweb serve` as an operator uses it: `--access-log-file` in JSON,
one object per line that a JSON parser reads whatever bytes a client sent; the client a
PROXY protocol header names is the one logged; and logrotate's way (rename the file, send
SIGUSR1) under a stream of requests: the next lines go to the new file, none is lost."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import SERVER_IP, Server

# A second address of the namespace's side, trusted to send PROXY headers; the ready
# check and curl use 10.0.0.1.
BALANCER_IP = "10.0.0.3"


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    d = tmp_path_factory.mktemp("logs")
    path = d / "access.log"
    s = Server(extra=("--access-log-file", path, "--log-format", "json",
                      "--proxy-protocol", f"{BALANCER_IP}/32", "--cores", "2"))
    s.ns.ip("addr", "add", f"{BALANCER_IP}/24", "dev", "bw0")
    s.path = path
    yield s
    s.close()


def lines(path):
    if not path.exists():
        return []
    return path.read_bytes().decode("utf-8").splitlines()


def wait_for(path, pred, timeout=5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = [json.loads(l) for l in lines(path)]
        if pred(got):
            return got
        time.sleep(0.05)
    raise AssertionError(f"log never matched: {lines(path)[-5:]}")


def raw(s, data, source=None):
    """Sends `data` on a new connection (from `source`) and returns the answer's status."""
    bind = f"c.bind(('{source}',0));" if source else ""
    code = (
        "import socket,sys;"
        "c=socket.socket();c.settimeout(5);" + bind +
        f"c.connect(('{SERVER_IP}',80));"
        f"c.sendall(bytes.fromhex('{data.hex()}'));"
        "print(c.recv(100).split(b' ')[1].decode())"
    )
    return s.ns.run("python3", "-c", code).stdout.strip()


def test_json_lines_have_every_field(logged):
    r = logged.ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-e",
                      "http://ref.example/", "-A", "curl-json-test",
                      f"http://{SERVER_IP}/?json-fields")
    assert r.stdout == "200"
    got = wait_for(logged.path, lambda g: any(x["path"] == "/?json-fields" for x in g))
    line = next(x for x in got if x["path"] == "/?json-fields")
    assert line["client"] == "10.0.0.1"
    assert line["method"] == "GET" and line["protocol"] == "HTTP/1.1"
    assert line["status"] == 200 and line["bytes"] > 0
    assert line["host"] == SERVER_IP
    assert line["referer"] == "http://ref.example/"
    assert line["user_agent"] == "curl-json-test"
    assert isinstance(line["duration_us"], int)
    assert line["time"].endswith("Z") and line["time"][4] == "-"


def test_hostile_bytes_keep_one_valid_line(logged):
    # Control characters, a terminal escape, a quote, a backslash, bytes that are not
    # UTF-8, U+2028: the server refuses the request (400) and still logs one line.
    ua = b"\x01\x1b[31mred\x7f\"\\\xff\xfe\xe2\x80\xa8end"
    req = b"GET /?hostile HTTP/1.1\r\nHost: x\r\nUser-Agent: " + ua + b"\r\n\r\n"
    raw(logged, req)
    got = wait_for(logged.path, lambda g: any(x["path"] == "/?hostile" for x in g))
    line = next(x for x in got if x["path"] == "/?hostile")
    assert line["user_agent"] == "\x01\x1b[31mred\x7f\"\\\ufffd\ufffd\u2028end", line
    text = logged.path.read_bytes()
    assert b"\x1b" not in text and b"\xff" not in text and b"\xe2\x80\xa8" not in text


def test_the_proxy_protocols_client_is_logged(logged):
    req = b"PROXY TCP4 192.0.2.7 10.0.0.2 4321 80\r\nGET /?proxied HTTP/1.1\r\nHost: x\r\n\r\n"
    assert raw(logged, req, source=BALANCER_IP) == "200"
    got = wait_for(logged.path, lambda g: any(x["path"] == "/?proxied" for x in g))
    assert next(x for x in got if x["path"] == "/?proxied")["client"] == "192.0.2.7"


def test_sigusr1_reopens_the_file_and_loses_nothing(logged):
    # A stream of requests (curl, one connection each) while the file is rotated twice.
    before = len(lines(logged.path))
    n = 300
    loop = subprocess.Popen(logged.ns.cmd(
        "sh", "-c",
        f"ok=0; for i in $(seq {n}); do "
        f"c=$(curl -s -o /dev/null -w '%{{http_code}}' http://{SERVER_IP}/?rot-$i); "
        "[ \"$c\" = 200 ] && ok=$((ok+1)); done; echo $ok"),
        stdout=subprocess.PIPE, text=True)
    rotated = []
    for k in (1, 2):
        time.sleep(0.5)
        old = logged.path.with_name(f"access.log.{k}")
        os.rename(logged.path, old)
        rotated.append(old)
        logged.proc.send_signal(signal.SIGUSR1)
    out, _ = loop.communicate(timeout=120)
    assert int(out.strip()) == n
    assert logged.proc.poll() is None, "SIGUSR1 must not stop the server"
    deadline = time.time() + 5
    every = []
    while time.time() < deadline:
        every = [json.loads(l) for f in [*rotated, logged.path] for l in lines(f)]
        if sum(x["path"].startswith("/?rot-") for x in every) >= n:
            break
        time.sleep(0.05)
    rot = [x["path"] for x in every if x["path"].startswith("/?rot-")]
    assert sorted(rot) == sorted(f"/?rot-{i}" for i in range(1, n + 1)), "lost or doubled"
    assert len(every) == before + n
    # Each file got some of the stream: the reopen took effect both times.
    for f in [*rotated[1:], logged.path]:
        assert any(json.loads(l)["path"].startswith("/?rot-") for l in lines(f)), f
    assert "access log" in logged.output() and "reopened" in logged.output()
