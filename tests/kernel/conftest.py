"""Fixtures for the bare-machine kernel tests: `bareweb run` boots the kernel under QEMU
attached to a TAP device inside a network namespace the test creates (prefix `bwk`);
clients run in that namespace (tests/system/client.py). The harness (time limits, console
checks, clean-up by PID) is tests/qemu_harness.py. The header of the test run says which
QEMU accelerator is used and why.
"""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import qemu_harness  # noqa: E402
from qemu_harness import (ACCEL, BIN, HOST_IP, MAC, ROOT, SERVER_IP, SITE,  # noqa: E402,F401
                          accel_line, require)

TAP = "bwk0"


class Netns(qemu_harness.Netns):
    prefix = "bwk"
    client_timeout = 240


class Kernel(qemu_harness.Kernel):
    netns = Netns
    tap = TAP
    qemu_limit = 900
    ready_limit = 120
    log_tail = 6000


def pytest_report_header(config):
    if BIN.exists():
        return f"bareweb kernel tests: QEMU accel {accel_line()}"
    return None


@pytest.fixture(scope="module", params=["virtio", "e1000", "e1000e", "igb", "vmxnet3"])
def kernel(request):
    k = Kernel(nic=request.param)  # igb: skipped without a QEMU that has it
    yield k
    k.close()


@pytest.fixture(autouse=True)
def _kernel_still_alive(request):
    """After every test that used the shared kernel: a panic, exception or QEMU exit that
    happened during it fails that test, with the serial log."""
    yield
    if "kernel" in request.fixturenames:
        request.getfixturevalue("kernel").check_alive()
