"""Fixtures for the many-core kernel tests: `bareweb run --smp N` boots
the kernel under QEMU on a TAP inside a network namespace (prefix `bwm`), single-queue or
multi-queue; clients run in that namespace (tests/system/client.py). The harness (time
limits, console checks, clean-up by PID) is tests/qemu_harness.py. On this project's
machine the accelerator is TCG, which runs the guest's cores as host threads.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import qemu_harness  # noqa: E402
from qemu_harness import ACCEL, BIN, MAC, SERVER_IP, SITE, STATS, require  # noqa: E402,F401

TAP = "bwm0"


class Netns(qemu_harness.Netns):
    prefix = "bwm"
    client_timeout = 300


class Kernel(qemu_harness.Kernel):
    """`bareweb run --smp N` on a TAP (multi-queue when `multi_queue`) in a fresh
    namespace, console to a file."""

    netns = Netns
    tap = TAP
    qemu_limit = 600
    ready_limit = 180
    log_tail = 8000

    def __init__(self, smp, extra=(), nic="virtio", multi_queue=True, wait=True, accel=ACCEL):
        super().__init__(nic=nic, extra=extra, wait=wait, accel=accel, smp=smp,
                         multi_queue=multi_queue)
