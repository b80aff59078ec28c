"""Fixtures for the many-core kernel tests (issue 4, phase 2): `bareweb run --smp N` boots
the kernel under QEMU on a TAP inside a network namespace (prefix `bwm`), single-queue or
multi-queue; clients run in that namespace (tests/system/client.py).

Every QEMU run has a hard time limit (`timeout -s KILL`), is stopped by PID at the end,
and its serial console is checked: a kernel panic, CPU exception or fatal boot error fails
the test with the serial log shown. Namespaces are deleted at the end, also on failure.

Accelerator: `bareweb run --accel auto` (KVM when /dev/kvm is usable and hardware-backed,
TCG otherwise; on this project's machine TCG, which runs the guest's cores as host
threads); BW_ACCEL=kvm|tcg forces one. These tests need root (netns, TAP): skipped with a
reason otherwise, failing under CI=true.
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
TAP = "bwm0"
QEMU_LIMIT = 600  # seconds any one QEMU may live, whatever happens to the test
FAILURE_MARKS = ("!!! KERNEL PANIC", "!!! CPU EXCEPTION", "!!! FATAL")
STATS = "/.well-known/bareweb/stats"


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


class Netns:
    counter = 0

    def __init__(self):
        Netns.counter += 1
        self.name = f"bwm{os.getpid()}n{Netns.counter}"
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        self.ip("link", "set", "lo", "up")

    def ip(self, *args):
        subprocess.run(["ip", "-n", self.name, *args], check=True, capture_output=True)

    def cmd(self, *args):
        return ["ip", "netns", "exec", self.name, *map(str, args)]

    def run(self, *args, timeout=120, check=True):
        return subprocess.run(self.cmd(*args), capture_output=True, text=True, timeout=timeout,
                              check=check)

    def client(self, *args, timeout=300):
        r = subprocess.run(self.cmd("python3", CLIENT, *args), capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(f"client {args[0]} failed: {r.stderr[-2000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    def close(self):
        subprocess.run(["ip", "netns", "del", self.name], check=False)


class Kernel:
    """`bareweb run --smp N` on a TAP (multi-queue when `multi_queue`) in a fresh
    namespace, console to a file."""

    def __init__(self, smp, extra=(), nic="virtio", multi_queue=True, wait=True, accel=ACCEL):
        require()
        self.smp = smp
        self.ns = Netns()
        try:
            self.ns.ip("tuntap", "add", "dev", TAP, "mode", "tap",
                       *(["multi_queue"] if multi_queue else []))
            self.ns.ip("addr", "add", f"{HOST_IP}/24", "dev", TAP)
            self.ns.ip("link", "set", TAP, "up")
        except Exception:
            self.ns.close()
            raise
        self.serial = pathlib.Path(f"/tmp/{self.ns.name}.serial")
        self.stderr = open(f"/tmp/{self.ns.name}.stderr", "w+")
        args = [BIN, "run", SITE, "--smp", smp, "--net", f"tap:{TAP}", "--nic", nic,
                "--ip", f"{SERVER_IP}/24", "--gw", "none", "--mac", MAC, "--accel", accel,
                "--headless", "--serial-log", self.serial, "--log", "stats", *extra]
        self.t0 = time.time()
        self.proc = subprocess.Popen(self.ns.cmd("timeout", "-s", "KILL", QEMU_LIMIT, *args),
                                     stdout=self.stderr, stderr=subprocess.STDOUT)
        if wait:
            try:
                self.wait_ready()
            except BaseException:
                # No caller holds this object yet: stop QEMU and remove the namespace here
                # (the logs stay in /tmp for a look).
                self.stop()
                self.ns.close()
                self.stderr.close()
                raise

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
                f"--- serial console ---\n{self.log()[-8000:]}")

    def check_alive(self):
        log = self.log()
        for mark in FAILURE_MARKS:
            if mark in log:
                raise AssertionError(f"kernel failed ({mark}):\n{self.report()}")
        if self.proc.poll() is not None:
            raise AssertionError(f"QEMU exited ({self.proc.returncode}):\n{self.report()}")

    def wait_ready(self, limit=180):
        deadline = time.time() + limit
        while time.time() < deadline:
            self.check_alive()
            if "bareweb: ready" in self.log():
                self.boot_secs = time.time() - self.t0
                return
            time.sleep(0.05)
        raise AssertionError(f"kernel not ready in {limit} s:\n{self.report()}")

    def stats_line(self, after=None, timeout=20):
        """The first `stats:` console line (printed every second) whose uptime is past
        `after` ms (default: now), as a dict."""
        if after is None:
            last = self.stats_lines()
            after = last[-1]["uptime_ms"] if last else 0
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.check_alive()
            for s in self.stats_lines():
                if s["uptime_ms"] > after:
                    return s
            time.sleep(0.2)
        raise AssertionError(f"no stats line after {after} ms:\n{self.report()}")

    def stats_lines(self):
        out = []
        for line in self.log().splitlines():
            if line.startswith("stats: "):
                try:
                    out.append({k: int(v) for k, v in (w.split("=") for w in line.split()[1:])})
                except ValueError:
                    pass  # a line cut by the end of the file
        return out

    def settled(self, key, want_at_most, timeout=30):
        """Waits for a stats line with `key` <= `want_at_most`; returns the last line seen."""
        deadline = time.time() + timeout
        s = self.stats_line()
        while s[key] > want_at_most and time.time() < deadline:
            s = self.stats_line(after=s["uptime_ms"])
        return s

    def stats_json(self):
        r = self.ns.run("curl", "-sS", "--max-time", "30", f"http://{SERVER_IP}{STATS}")
        return json.loads(r.stdout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # timeout(1) passes SIGTERM on to bareweb; its QEMU
            try:                   # then gets SIGKILL through PR_SET_PDEATHSIG
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        # Whatever is left in the namespace (only what this test started) is killed by PID.
        r = subprocess.run(["ip", "netns", "pids", self.ns.name], capture_output=True, text=True)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass

    def close(self, expect_failure=False):
        ok = False
        try:
            if not expect_failure:
                for mark in FAILURE_MARKS:
                    if mark in self.log():
                        raise AssertionError(f"kernel failed ({mark}):\n{self.report()}")
            ok = True
        finally:
            self.stop()
            self.ns.close()
            self.stderr.close()
            if ok:  # logs of a failed kernel stay in /tmp for a look
                self.serial.unlink(missing_ok=True)
                pathlib.Path(self.stderr.name).unlink(missing_ok=True)
