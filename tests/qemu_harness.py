"""The kernel under QEMU on a TAP inside a network namespace, for tests/kernel and
tests/kernel_smp (each directory's conftest.py picks its namespace prefix, TAP name and
time limits; the rest is here, once). tests/system uses its `Netns` too.

Every QEMU run has a hard time limit (`timeout -s KILL`), is stopped by PID at the end,
and its serial console is checked: a kernel panic, CPU exception or fatal boot error
fails the test with the serial log shown. Namespaces are deleted at the end, also on
failure; the logs of a failed kernel stay in /tmp for a look.

Accelerator: `bareweb run --accel auto` (KVM when /dev/kvm is usable and hardware-backed,
TCG otherwise); BW_ACCEL=kvm|tcg forces one. These tests need root (netns, TAP): skipped
with a reason otherwise, failing under CI=true.
"""
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SITE = ROOT / "examples" / "site"
CLIENT = ROOT / "tests" / "system" / "client.py"
BIN = pathlib.Path(os.environ.get("BAREWEB_BIN", ROOT / "target" / "release" / "bareweb"))
IN_CI = os.environ.get("CI") in ("true", "1")
# The QEMU the tests boot (`bareweb run --qemu`): another than PATH's, e.g. one unpacked
# from bookworm-backports to try it before installing it.
QEMU = os.environ.get("BAREWEB_QEMU", "qemu-system-x86_64")
ACCEL = os.environ.get("BW_ACCEL", "auto")
SERVER_IP = "10.0.0.2"
HOST_IP = "10.0.0.1"
MAC = "02:00:00:00:00:02"
STATS = "/.well-known/bareweb/stats"
FAILURE_MARKS = ("!!! KERNEL PANIC", "!!! CPU EXCEPTION", "!!! FATAL")


def hmp(path, command, wait=10):
    """One command to QEMU's human monitor on the Unix socket `path` (`bareweb run
    --monitor PATH`): waits up to `wait` s for the socket, then for the prompt (a command
    sent before it may be lost), sends, and returns the output up to the next prompt, or
    up to QEMU closing the monitor (`quit`)."""
    deadline = time.time() + wait
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.1)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(path))
    out = b""
    try:
        while b"(qemu)" not in out:
            out += s.recv(4096)
        s.sendall(command.encode() + b"\n")
        out = b""
        while b"(qemu)" not in out:
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
    finally:
        s.close()
    return out.decode(errors="replace")


def require():
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("kernel tests need root (netns, TAP) and CI=true forbids skipping")
        pytest.skip("needs root for network namespaces and TAP devices")
    if not BIN.exists():
        pytest.fail(f"{BIN} missing: run `cargo build --release` (cargo xtask test does)")
    if subprocess.run(["which", QEMU], capture_output=True).returncode != 0:
        pytest.fail("qemu-system-x86_64 missing: sudo apt-get install qemu-system-x86 "
                    "(cargo xtask setup does it)")


def accel_line():
    """What `bareweb run` chooses here, and why (its own words)."""
    r = subprocess.run([BIN, "run", SITE, "--dry-run", "--accel", ACCEL], capture_output=True,
                       text=True, timeout=60)
    # A dry run keeps its work directory for the command it prints: not needed here.
    for w in r.stdout.split():
        if w.endswith("bareweb-kernel.elf"):
            shutil.rmtree(os.path.dirname(w), ignore_errors=True)
    for line in r.stderr.splitlines():
        if "accel" in line:
            return line.split("accel", 1)[1].strip()
    return f"unknown ({r.stderr.strip()[-200:]})"


def parse_stats(line):
    """A `stats: k=v k=v …` console line as a dict (ValueError if the line is cut)."""
    return {k: int(v) for k, v in (w.split("=") for w in line.split()[1:])}


def published_requests(fetch, want, timeout=30):
    """Stats JSON once its request count reaches `want`, and the count it must then show
    exactly. Every core publishes its own row (every 10 ms while it runs), so a count read
    after a fixed sleep missed the requests of a core thread or vCPU that a busy host had
    not run meanwhile. `fetch()` renders a new stats JSON: each is itself a request,
    counted once answered, so every retry expects one more."""
    deadline = time.time() + timeout
    while True:
        st = fetch()
        if st["total"]["requests"] >= want or time.time() > deadline:
            return st, want
        want += 1
        time.sleep(0.05)


class Netns:
    """A network namespace of its own; `prefix` keeps test directories apart."""

    counter = 0
    prefix = "bwk"
    client_timeout = 240

    def __init__(self, prefix=None):
        Netns.counter += 1
        self.name = f"{prefix or self.prefix}{os.getpid()}n{Netns.counter}"
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        self.ip("link", "set", "lo", "up")

    def ip(self, *args):
        subprocess.run(["ip", "-n", self.name, *args], check=True, capture_output=True)

    def cmd(self, *args):
        return ["ip", "netns", "exec", self.name, *map(str, args)]

    def run(self, *args, timeout=120, check=True):
        return subprocess.run(self.cmd(*args), capture_output=True, text=True, timeout=timeout,
                              check=check)

    def client(self, *args, timeout=None, env=None):
        r = subprocess.run(self.cmd("python3", CLIENT, *args), capture_output=True, text=True,
                           timeout=timeout or self.client_timeout,
                           env={**os.environ, **(env or {})})
        if r.returncode != 0:
            raise AssertionError(f"client {args[0]} failed: {r.stderr[-2000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    def wait_established(self, n, port=80, timeout=60):
        """Waits until `n` TCP connections to `port` are established in this namespace
        (clients that have connected), so what a test does next happens under them."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            r = self.run("ss", "-Htn", "state", "established", f"( dport = :{port} )",
                         check=False)
            if len(r.stdout.splitlines()) >= n:
                return
            time.sleep(0.05)
        raise AssertionError(f"{n} connections to port {port} not established in {timeout} s")

    def close(self):
        subprocess.run(["ip", "netns", "del", self.name], check=False)


class Kernel:
    """`bareweb run` (or QEMU with a bootable image) on a TAP in a fresh namespace,
    console to a file. Subclasses set the namespace class, TAP name and limits."""

    netns = Netns
    tap = "bwk0"
    qemu_limit = 900  # seconds any one QEMU may live, whatever happens to the test
    ready_limit = 120
    log_tail = 6000

    def __init__(self, nic="virtio", extra=(), site=SITE, machine=None, wait=True, accel=ACCEL,
                 qemu=None, smp=None, multi_queue=False, gw="none", serial=True, ip=None):
        """`qemu`: instead of `bareweb run`, these QEMU arguments (a bootable image built
        by `bareweb build`), with the TAP, NIC and console added here; `serial=False`
        gives that machine no serial port at all (a PC without one: the kernel is ready
        when it answers HTTP). `smp`: `--smp N`; `multi_queue`: the TAP is created
        multi-queue; `gw`: the kernel's router (`none`: clients on the TAP's link only);
        `ip`: the kernel's `--ip` (default SERVER_IP/24; `dhcp`: from a DHCP server the
        test runs, and no `--gw`)."""
        require()
        if nic == "igb":
            has_nic("igb")  # skips without it (QEMU < 8); fails under CI=true
        self.has_serial = serial or qemu is None
        self.ns = self.netns()
        self.nic = nic
        self.smp = smp
        tap = self.tap
        try:
            self.setup_net(multi_queue)
        except Exception:
            self.ns.close()
            raise
        self.serial = pathlib.Path(f"/tmp/{self.ns.name}.serial")
        self.stderr = open(f"/tmp/{self.ns.name}.stderr", "w+")
        if qemu is None:
            ip = ip or f"{SERVER_IP}/24"
            route = [] if ip == "dhcp" else ["--gw", gw]
            args = [BIN, "run", site, "--net", f"tap:{tap}", "--nic", nic, "--ip", ip, *route,
                    "--mac", MAC, "--accel", accel,
                    "--headless", "--serial-log", self.serial, "--stats-log", "--qemu", QEMU,
                    *extra]
            if machine:
                args += ["--machine", machine]
            if smp is not None:
                args += ["--smp", smp]
        else:
            dev = {"virtio": "virtio-net-pci", "e1000": "e1000", "e1000e": "e1000e",
                   "igb": "igb", "vmxnet3": "vmxnet3"}[nic]
            args = [QEMU, "-nodefaults", "-no-user-config", "-display", "none",
                    "-no-reboot", "-accel", "tcg", "-cpu", "max", "-m", "256M",
                    "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                    "-serial", f"file:{self.serial}" if self.has_serial else "none",
                    "-netdev", f"tap,id=n0,ifname={tap},script=no,downscript=no,vhost=off",
                    "-device", f"{dev},netdev=n0,mac={MAC}", *qemu]
        self.t0 = time.time()
        self.proc = subprocess.Popen(self.ns.cmd("timeout", "-s", "KILL", self.qemu_limit, *args),
                                     stdout=self.stderr, stderr=subprocess.STDOUT)
        if wait:
            try:
                self.wait_ready()
            except BaseException:
                # No caller holds this object yet: stop QEMU and remove the namespace here.
                self.stop()
                self.ns.close()
                self.stderr.close()
                raise

    def setup_net(self, multi_queue):
        """The TAP (with the host side's address) the kernel's NIC attaches to, made in
        the namespace before QEMU starts (a subclass may make more: tests/kernel's bond)."""
        tap = self.tap
        self.ns.ip("tuntap", "add", "dev", tap, "mode", "tap",
                   *(["multi_queue"] if multi_queue else []))
        self.ns.ip("addr", "add", f"{HOST_IP}/24", "dev", tap)
        self.ns.ip("link", "set", tap, "up")

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
                f"--- serial console ---\n{self.log()[-self.log_tail:]}")

    def ipv6_addr(self, prefix, timeout=30):
        """The IPv6 address in `prefix` the kernel says (on its console) passed DAD."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(rf"bareweb: IPv6 ({prefix}[0-9a-f:]+) on the link", self.log())
            if m:
                return m.group(1)
            time.sleep(0.3)
        raise AssertionError(f"no IPv6 address in {prefix} in {timeout} s:\n{self.report()}")

    def wait_linux_ipv6(self, timeout=10):
        """Waits until Linux's own link-local address on the TAP passed its DAD (its link
        came up when QEMU attached, about when the kernel's did): a packet sent from a
        tentative address is not answered, which is Linux's doing, not the kernel's."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            r = self.ns.run("ip", "-6", "addr", "show", "dev", self.tap, "tentative",
                            check=False)
            if r.returncode == 0 and "inet6" not in r.stdout:
                return
            time.sleep(0.2)
        raise AssertionError(f"Linux's address on {self.tap} still tentative after {timeout} s")

    def check_log(self):
        """A panic, exception or fatal boot error on the console fails the caller."""
        log = self.log()
        for mark in FAILURE_MARKS:
            if mark in log:
                raise AssertionError(f"kernel failed ({mark}):\n{self.report()}")

    def check_alive(self):
        self.check_log()
        if self.proc.poll() is not None:
            raise AssertionError(f"QEMU exited ({self.proc.returncode}):\n{self.report()}")

    def wait_ready(self, limit=None):
        limit = limit or self.ready_limit
        deadline = time.time() + limit
        while time.time() < deadline:
            self.check_alive()
            if self.has_serial and "bareweb: ready" in self.log():
                self.boot_secs = time.time() - self.t0
                return
            if not self.has_serial and self.ns.run(
                    "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1",
                    f"http://{SERVER_IP}/", check=False).stdout == "200":
                self.boot_secs = time.time() - self.t0
                return
            time.sleep(0.05)
        raise AssertionError(f"kernel not ready in {limit} s:\n{self.report()}")

    def stats(self):
        """The first `stats:` console line (printed every second) printed after this call,
        as a dict: it counts all that was done before the call. (The last line after a
        fixed 1.5 s sleep was older than the work whenever a busy host had not run the
        vCPU for that long.)"""
        return self.stats_line()

    def stats_lines(self):
        out = []
        # Whole lines only: the console's last one may be half written (a number cut
        # short still parses).
        for line in self.log().split("\n")[:-1]:
            line = line.rstrip("\r")
            if line.startswith("stats: "):
                try:
                    out.append(parse_stats(line))
                except ValueError:
                    pass  # a line cut by the end of the file
        return out

    def stats_line(self, after=None, timeout=20):
        """The first `stats:` console line whose uptime is past `after` ms (default: now),
        as a dict."""
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
            # Ctrl-C's SIGINT, which timeout(1) passes on: bareweb stops QEMU at once and
            # removes its work directory (SIGTERM would press the power button and drain,
            # and the SIGKILL after it would leave the directory behind).
            self.proc.send_signal(signal.SIGINT)
            try:
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
                self.check_log()
            ok = True
        finally:
            self.stop()
            self.ns.close()
            self.stderr.close()
            if ok:  # logs of a failed kernel stay in /tmp for a look
                self.serial.unlink(missing_ok=True)
                pathlib.Path(self.stderr.name).unlink(missing_ok=True)


def has_nic(model):
    """Whether the QEMU under test has NIC `model` (`-device help`). Without it a test of
    that model skips, except under CI=true, whose setup installs a QEMU that has it: there
    it fails."""
    out = subprocess.run([QEMU, "-device", "help"], capture_output=True, text=True).stdout
    if f'name "{model}"' in out:
        return True
    if IN_CI:
        pytest.fail(f"{QEMU} has no `{model}` NIC model; CI's `cargo xtask setup` installs a "
                    "QEMU that has it (bookworm-backports)")
    pytest.skip(f"{QEMU} has no `{model}` NIC model (QEMU >= 8; `cargo xtask setup`)")
