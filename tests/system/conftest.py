"""Fixtures for bareweb's whole-system tests: a network namespace per server, a TAP in it
made by `bareweb serve`, and clients run inside the namespace.

These tests need root (network namespaces, TAP). Outside CI they are skipped with a
reason when not root; under CI=true they fail instead, so a CI without root is loud.
"""
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import qemu_harness  # noqa: E402
from qemu_harness import BIN, CLIENT, HOST_IP, IN_CI, ROOT, SERVER_IP, SITE  # noqa: E402,F401


def require_root():
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("whole-system tests need root (netns, TAP) and CI=true forbids skipping")
        pytest.skip("needs root for network namespaces and TAP devices")
    if not BIN.exists():
        pytest.fail(f"{BIN} missing: run `cargo build --release` (cargo xtask test does)")


class Netns(qemu_harness.Netns):
    """A namespace for a whole-system test: prefix `bwt` unless the test gives one."""

    prefix = "bwt"


class Server:
    """`bareweb serve` inside a namespace, with its counters read at stop."""

    def __init__(self, extra=(), site=SITE, prefix="bwt"):
        require_root()
        self.ns = Netns(prefix)
        self.log = open(f"/tmp/{self.ns.name}.log", "w+")
        self.mac = "02:00:00:00:00:02"
        self.proc = subprocess.Popen(
            self.ns.cmd(BIN, "serve", site, "--tap", "bw0", "--ip", f"{SERVER_IP}/24",
                        "--mac", self.mac, *extra),
            stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.wait_ready()
        except BaseException:
            # No caller holds this object yet: stop the server and remove the namespace
            # here (the log stays in /tmp for a look).
            self.stop()
            self.ns.close()
            self.log.close()
            raise

    def wait_ready(self):
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.output()}")
            r = self.ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1",
                            f"http://{SERVER_IP}/", check=False)
            if r.stdout == "200":
                return
            time.sleep(0.1)
        raise AssertionError(f"server not ready in 20 s: {self.output()}")

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        """SIGINT, wait, parse the counters it prints."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        counters = {}
        for line in self.output().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                counters[parts[0]] = int(parts[1])
        return counters

    def close(self):
        self.stop()
        self.ns.close()
        self.log.close()


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.close()
