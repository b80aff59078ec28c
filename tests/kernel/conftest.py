"""Fixtures for the bare-machine kernel tests: `bareweb run` boots the kernel under QEMU
attached to a TAP device inside a network namespace the test creates; clients run in
that namespace (tests/system/client.py).

Every QEMU run has a hard time limit (`timeout -s KILL`), is stopped by PID at the end,
and its serial console is checked: a kernel panic, CPU exception or fatal boot error
fails the test with the serial log shown.

Accelerator: `bareweb run --accel auto` (KVM when /dev/kvm is usable and hardware-backed,
TCG otherwise); BW_ACCEL=kvm|tcg forces one. The header of the test run says which.
These tests need root (netns, TAP): skipped with a reason otherwise, failing under CI=true.
"""
import json
import os
import pathlib
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SITE = ROOT / "examples" / "site"
CLIENT = ROOT / "tests" / "system" / "client.py"
BIN = pathlib.Path(os.environ.get("BAREWEB_BIN", ROOT / "target" / "release" / "bareweb"))
IN_CI = os.environ.get("CI") in ("true", "1")
ACCEL = os.environ.get("BW_ACCEL", "auto")
SERVER_IP = "10.0.0.2"
HOST_IP = "10.0.0.1"
MAC = "02:00:00:00:00:02"
TAP = "bwk0"
QEMU_LIMIT = 900  # seconds any one QEMU may live, whatever happens to the test
FAILURE_MARKS = ("!!! KERNEL PANIC", "!!! CPU EXCEPTION", "!!! FATAL")


def require():
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("kernel tests need root (netns, TAP) and CI=true forbids skipping")
        pytest.skip("needs root for network namespaces and TAP devices")
    if not BIN.exists():
        pytest.fail(f"{BIN} missing: run `cargo build --release` (cargo xtask test does)")
    if subprocess.run(["which", "qemu-system-x86_64"], capture_output=True).returncode != 0:
        pytest.fail("qemu-system-x86_64 missing: sudo apt-get install qemu-system-x86 "
                    "(cargo xtask setup does it)")


def accel_line():
    """What `bareweb run` chooses here, and why (its own words)."""
    r = subprocess.run([BIN, "run", SITE, "--dry-run", "--accel", ACCEL], capture_output=True,
                       text=True, timeout=60)
    for line in r.stderr.splitlines():
        if "accel" in line:
            return line.split("accel", 1)[1].strip()
    return f"unknown ({r.stderr.strip()[-200:]})"


def pytest_report_header(config):
    if BIN.exists():
        return f"bareweb kernel tests: QEMU accel {accel_line()}"
    return None


class Netns:
    counter = 0

    def __init__(self):
        Netns.counter += 1
        self.name = f"bwk{os.getpid()}n{Netns.counter}"
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        self.ip("link", "set", "lo", "up")

    def ip(self, *args):
        subprocess.run(["ip", "-n", self.name, *args], check=True, capture_output=True)

    def cmd(self, *args):
        return ["ip", "netns", "exec", self.name, *map(str, args)]

    def run(self, *args, timeout=120, check=True):
        return subprocess.run(self.cmd(*args), capture_output=True, text=True, timeout=timeout,
                              check=check)

    def client(self, *args, timeout=240):
        r = subprocess.run(self.cmd("python3", CLIENT, *args), capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(f"client {args[0]} failed: {r.stderr[-2000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    def close(self):
        subprocess.run(["ip", "netns", "del", self.name], check=False)


class Kernel:
    """`bareweb run` on a TAP in a fresh namespace, console to a file."""

    def __init__(self, nic="virtio", extra=(), site=SITE, machine=None, wait=True, accel=ACCEL,
                 qemu=None):
        """`qemu`: instead of `bareweb run`, these QEMU arguments (a bootable image built
        by `bareweb build`), with the TAP, NIC and console added here."""
        require()
        self.ns = Netns()
        self.nic = nic
        self.ns.ip("tuntap", "add", "dev", TAP, "mode", "tap")
        self.ns.ip("addr", "add", f"{HOST_IP}/24", "dev", TAP)
        self.ns.ip("link", "set", TAP, "up")
        self.serial = pathlib.Path(f"/tmp/{self.ns.name}.serial")
        self.stderr = open(f"/tmp/{self.ns.name}.stderr", "w+")
        if qemu is None:
            args = [BIN, "run", site, "--net", f"tap:{TAP}", "--nic", nic, "--ip",
                    f"{SERVER_IP}/24", "--gw", "none", "--mac", MAC, "--accel", accel,
                    "--headless", "--serial-log", self.serial, "--log", "stats", *extra]
            if machine:
                args += ["--machine", machine]
        else:
            dev = {"virtio": "virtio-net-pci", "e1000": "e1000"}[nic]
            args = ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
                    "-no-reboot", "-accel", "tcg", "-cpu", "max", "-m", "256M",
                    "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                    "-serial", f"file:{self.serial}",
                    "-netdev", f"tap,id=n0,ifname={TAP},script=no,downscript=no,vhost=off",
                    "-device", f"{dev},netdev=n0,mac={MAC}", *qemu]
        self.t0 = time.time()
        self.proc = subprocess.Popen(self.ns.cmd("timeout", "-s", "KILL", QEMU_LIMIT, *args),
                                     stdout=self.stderr, stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready()

    def log(self):
        try:
            return self.serial.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def output(self):
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read()

    def report(self):
        return (f"--- bareweb run output ---\n{self.output()[-3000:]}\n"
                f"--- serial console ---\n{self.log()[-6000:]}")

    def check_alive(self):
        log = self.log()
        for mark in FAILURE_MARKS:
            if mark in log:
                raise AssertionError(f"kernel failed ({mark}):\n{self.report()}")
        if self.proc.poll() is not None:
            raise AssertionError(f"QEMU exited ({self.proc.returncode}):\n{self.report()}")

    def wait_ready(self, limit=120):
        deadline = time.time() + limit
        while time.time() < deadline:
            self.check_alive()
            if "bareweb: ready" in self.log():
                self.boot_secs = time.time() - self.t0
                return
            time.sleep(0.05)
        raise AssertionError(f"kernel not ready in {limit} s:\n{self.report()}")

    def stats(self, wait=1.5):
        """The last `stats:` line of the console (printed every second) as a dict."""
        time.sleep(wait)
        lines = [l for l in self.log().splitlines() if l.startswith("stats: ")]
        assert lines, self.report()
        return {k: int(v) for k, v in (w.split("=") for w in lines[-1].split()[1:])}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # timeout(1) passes SIGTERM on to bareweb; its QEMU
            try:                   # then gets SIGKILL through PR_SET_PDEATHSIG
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        # timeout(1) runs bareweb as its child: make sure nothing is left in the namespace.
        r = subprocess.run(["ip", "netns", "pids", self.ns.name], capture_output=True, text=True)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass

    def close(self):
        ok = False
        try:
            self.check_alive_log_only()
            ok = True
        finally:
            self.stop()
            self.ns.close()
            self.stderr.close()
            if ok:  # logs of a failed kernel stay in /tmp for a look
                self.serial.unlink(missing_ok=True)
                pathlib.Path(self.stderr.name).unlink(missing_ok=True)

    def check_alive_log_only(self):
        log = self.log()
        for mark in FAILURE_MARKS:
            if mark in log:
                raise AssertionError(f"kernel failed ({mark}):\n{self.report()}")


@pytest.fixture(scope="module", params=["virtio", "e1000"])
def kernel(request):
    k = Kernel(nic=request.param)
    yield k
    k.close()


@pytest.fixture(autouse=True)
def _kernel_still_alive(request):
    """After every test that used the shared kernel: a panic, exception or QEMU exit that
    happened during it fails that test, with the serial log."""
    yield
    if "kernel" in request.fixturenames:
        request.getfixturevalue("kernel").check_alive()
