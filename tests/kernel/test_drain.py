"""The kernel's graceful drain on the ACPI power button (docs/design/drain.md): QEMU's
monitor `system_powerdown` presses it; /healthz turns 503 at once, fetches during the
grace all succeed, the console says the drain started and how it ended, and the kernel
then powers the machine off (ACPI S5), so QEMU exits by itself with status 0.
"""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BIN, SERVER_IP, SITE, Kernel
from qemu_harness import hmp

GRACE = 3
TIMEOUT = 10


def healthz(k):
    r = k.ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                 f"http://{SERVER_IP}/healthz", check=False)
    return r.stdout


@pytest.mark.parametrize("machine", [None, "q35"])
def test_power_button_drains_then_powers_off(tmp_path, machine):
    """On the default machine (pc with qboot: PIIX4's PM, ACPI mode by writing 0xF1 to
    port 0xB2) and on q35 (ICH9's PM, ACPI mode by 0x02)."""
    site = tmp_path / "site"
    shutil.copytree(SITE, site)
    (site / "bareweb.toml").write_text("healthz = true\nmetrics = true\n")
    monitor = f"/tmp/bwkdrain{os.getpid()}.monitor"
    k = Kernel(site=site, machine=machine, extra=["--drain-grace", str(GRACE), "--drain-timeout", str(TIMEOUT),
                                 "--monitor", monitor])
    try:
        assert "power: the ACPI power button drains" in k.log(), k.report()
        assert healthz(k) == "200"
        load = subprocess.Popen(
            k.ns.cmd(BIN, "load", "--rate", "10", "--seconds", str(GRACE - 1), "--timeout", "5",
                     "--json", "-q", f"http://{SERVER_IP}/", f"http://{SERVER_IP}/style.css"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)
        t0 = time.monotonic()
        hmp(monitor, "system_powerdown")
        deadline = time.monotonic() + 30  # TCG on a loaded machine: fetches of up to 5 s, QMP steps of up to 3 s
        while healthz(k) != "503":
            assert time.monotonic() < deadline, f"/healthz never said draining\n{k.report()}"
            time.sleep(0.1)
        out, err = load.communicate(timeout=60)
        assert load.returncode == 0, err
        r = json.loads(out)
        assert r["fetches"] >= 5 and r["fetches_ok"] == r["fetches"], r
        assert r["errors_total"] == 0 and r["unfinished"] == 0, r
        # QEMU exits by itself once the drain is over: soon after the grace.
        k.proc.wait(GRACE + 30)
        took = time.monotonic() - t0
        assert k.proc.returncode == 0, k.report()
        assert took < TIMEOUT + 5, f"QEMU exited {took:.1f} s after the button"
        log = k.log()
        assert "drain: power button: /healthz answers 503" in log, k.report()
        assert "drain: done in" in log and "powering off (ACPI S5)" in log, k.report()
        assert "0 reset at the timeout" in log, k.report()
    finally:
        k.close()
        if os.path.exists(monitor):
            os.unlink(monitor)


def test_sigterm_to_run_presses_the_power_button(tmp_path):
    """`bareweb run` on SIGTERM (systemd's, libvirt's or a supervisor's stop) presses the
    machine's power button through QMP: the kernel drains, powers off, and `bareweb run`
    exits 0 once QEMU has. (QEMU runs in its own process group, so a signal to ours does
    not stop it before the drain.)"""
    site = tmp_path / "site"
    shutil.copytree(SITE, site)
    (site / "bareweb.toml").write_text("healthz = true\n")
    grace = 2
    k = Kernel(site=site, extra=["--drain-grace", str(grace), "--drain-timeout", str(TIMEOUT)])
    try:
        assert healthz(k) == "200"
        t0 = time.monotonic()
        k.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30  # TCG on a loaded machine: fetches of up to 5 s, QMP steps of up to 3 s
        while healthz(k) != "503":
            assert time.monotonic() < deadline, f"/healthz never said draining\n{k.report()}"
            time.sleep(0.1)
        k.proc.wait(grace + 30)
        took = time.monotonic() - t0
        assert k.proc.returncode == 0, k.report()
        assert took < TIMEOUT + 5, f"bareweb run exited {took:.1f} s after SIGTERM"
        assert "SIGTERM: pressed the machine's power button" in k.output(), k.report()
        log = k.log()
        assert "drain: power button: /healthz answers 503" in log, k.report()
        assert "powering off (ACPI S5)" in log, k.report()
    finally:
        k.close()
