"""Fixtures for the bare-machine kernel tests: `bareweb run` boots the kernel under QEMU
attached to a TAP device inside a network namespace the test creates (prefix `bwk`);
clients run in that namespace (tests/system/client.py). The harness (time limits, console
checks, clean-up by PID) is tests/qemu_harness.py. The header of the test run says which
QEMU accelerator is used and why.
"""
import pathlib
import subprocess
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


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, and a P-256 server certificate for SERVER_IP signed by it."""
    d = tmp_path_factory.mktemp("pki")
    openssl("ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", "ca.key", cwd=d)
    openssl("req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", "30",
            "-subj", "/CN=bareweb test CA", "-out", "ca.pem", cwd=d)
    (d / "san.cnf").write_text(f"subjectAltName=IP:{SERVER_IP},DNS:localhost\n")
    openssl("ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", "p256.key", cwd=d)
    openssl("req", "-new", "-key", "p256.key", "-subj", f"/CN={SERVER_IP}", "-out", "p256.csr",
            cwd=d)
    openssl("x509", "-req", "-in", "p256.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "30", "-sha256", "-extfile", "san.cnf",
            "-out", "p256.pem", cwd=d)
    return d


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
