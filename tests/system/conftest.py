"""Fixtures for bareweb's whole-system tests: a network namespace per server, a TAP in it
made by `bareweb serve`, and clients run inside the namespace.

These tests need root (network namespaces, TAP). Outside CI they are skipped with a
reason when not root; under CI=true they fail instead, so a CI without root is loud.
"""
import datetime
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

    # What plain HTTP's / answers once the server is up.
    ready_codes = ("200",)

    def wait_ready(self):
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.output()}")
            r = self.ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1",
                            f"http://{SERVER_IP}/", check=False)
            if r.stdout in self.ready_codes:
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


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, and a server certificate for SERVER_IP signed by it, for a P-256 and a P-384
    key; plus keys the server must refuse."""
    d = tmp_path_factory.mktemp("pki")
    openssl("ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", "ca.key", cwd=d)
    openssl("req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", "30",
            "-subj", "/CN=bareweb test CA", "-out", "ca.pem", cwd=d)
    (d / "san.cnf").write_text(f"subjectAltName=IP:{SERVER_IP},DNS:localhost\n")
    for name, curve in [("p256", "prime256v1"), ("p384", "secp384r1")]:
        openssl("ecparam", "-genkey", "-name", curve, "-noout", "-out", f"{name}.key", cwd=d)
        openssl("req", "-new", "-key", f"{name}.key", "-subj", f"/CN={SERVER_IP}",
                "-out", f"{name}.csr", cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "30", "-sha256", "-extfile", "san.cnf",
                "-out", f"{name}.pem", cwd=d)
    openssl("genrsa", "-out", "rsa.key", "2048", cwd=d)
    openssl("req", "-x509", "-new", "-key", "rsa.key", "-sha256", "-days", "30",
            "-subj", f"/CN={SERVER_IP}", "-out", "rsa.pem", cwd=d)
    # A certificate for the P-256 key that expired long ago (openssl 3.0's req cannot
    # date one in the past; Python's cryptography, on OpenSSL, can).
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID
    key = serialization.load_pem_private_key((d / "p256.key").read_bytes(), None)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_IP)])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(7)
            .not_valid_before(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))
            .not_valid_after(datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone.utc))
            .sign(key, hashes.SHA256()))
    (d / "expired.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return d
