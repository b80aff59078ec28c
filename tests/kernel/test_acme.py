"""ACME on the bare machine: `bareweb run --acme-domain --state-disk` boots the kernel on a
TAP in a network namespace where Debian's pebble runs (with pebble-challtestsrv as the DNS
server both use). The kernel obtains its certificate over its own stack — the engine's TCP,
TLS client and DNS resolver, the agent `serve` runs too — and pebble validates for real
(HTTP-01 from the kernel's port 80, TLS-ALPN-01 from its port 443). curl verifies the
chain the kernel then serves against pebble's root. The state (account key, certificate)
is kept in the state area at the end of the virtio-blk disk: a second boot with the same
disk serves the kept certificate and places no new order, and QEMU killed while a record
is half written leaves the previous record for the next boot."""
import hashlib
import json
import os
import shutil
import re
import signal
import struct
import subprocess
import time
import zlib

import pytest

from acme_ca import (CA_NAME, DNS_PORT, DOMAIN, PEBBLE_PORT, Pebble, cleanup, https_load,
                     listener_cert, load_report, need, served_serial)
from conftest import BIN, HOST_IP, ROOT, SERVER_IP, SITE, Kernel, Netns
from qemu_harness import hmp

MAGIC = b"BWACME\x00\x01"
SLOT = 128 * 1024
AREA = 2 * SLOT


class AcmeKernel(Kernel):
    """The kernel with ACME, in namespace `ns` (where pebble runs already), its state on
    `disk`. Stopping it stops its QEMU alone: pebble lives on in the namespace."""

    def __init__(self, ns, tmp, disk, alpn=False, extra=(), monitor=None, smp=None,
                 image=False, dhcp=False, site=None, directory=None):
        """`image`: `disk` is a `bareweb build --disk` image carrying its settings, booted
        by QEMU from virtio-blk as a VM's disk would be. `dhcp`: the address from dnsmasq
        on the TAP, whose lease names the DNS server (no `--dns`). `site`: a site directory
        whose bareweb.toml's `[acme]` names the domain, the directory and the CA (none of
        them on the command line)."""
        self.netns = lambda: ns
        self.disk = disk
        self.dhcp = dhcp
        if image:
            super().__init__(qemu=["-drive", f"file={disk},format=raw,if=virtio,cache=writethrough"])
            return
        args = ["--state-disk", disk, "--http-redirect", *extra]
        if site is None:
            args += ["--acme-domain", DOMAIN, "--acme-ca", tmp / "listener.pem",
                     "--acme-email", "ops@site.test"]
        if site is None and directory is None:
            args += ["--acme-directory", f"https://{CA_NAME}:{PEBBLE_PORT}/dir"]
        if directory is not None:
            args += ["--acme-directory", directory]
        if not dhcp and directory is None:
            args += ["--dns", f"{HOST_IP}:{DNS_PORT}"]
        if alpn:
            args += ["--acme-challenge", "tls-alpn-01"]
        if monitor:
            args += ["--monitor", monitor]
        super().__init__(extra=args, smp=smp, ip="dhcp" if dhcp else None, site=site or SITE)

    def setup_net(self, multi_queue):
        # A second boot in the same namespace finds the TAP there.
        r = self.ns.run("ip", "link", "show", self.tap, check=False)
        if r.returncode != 0:
            super().setup_net(multi_queue)
        if self.dhcp:
            # Its DNS off (--port=0): port 53 is pebble-challtestsrv's.
            self.dnsmasq = subprocess.Popen(self.ns.cmd(
                "timeout", "-s", "KILL", 300, "dnsmasq", "--keep-in-foreground", "--no-resolv",
                "--no-hosts", "--port=0", f"--interface={self.tap}", "--bind-interfaces",
                "--user=root", "--pid-file", f"--dhcp-range={SERVER_IP},{SERVER_IP},255.255.255.0,2m",
                f"--dhcp-option=option:dns-server,{HOST_IP}", "--no-ping",
                f"--dhcp-leasefile=/tmp/{self.ns.name}.leases", "--log-facility=-"),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)

    def qemu_pids(self):
        # The QEMU whose drive is this test's disk (the console goes through `run`).
        r = subprocess.run(["pgrep", "-f", f"qemu-system.*file={self.disk},"],
                           capture_output=True, text=True)
        return [int(p) for p in r.stdout.split()]

    def stop(self):
        if getattr(self, "dnsmasq", None) is not None and self.dnsmasq.poll() is None:
            # SIGTERM, which timeout(1) passes on to dnsmasq (a SIGKILL would end timeout
            # alone and leave dnsmasq running after its namespace is gone).
            self.dnsmasq.terminate()
            try:
                self.dnsmasq.wait(5)
            except subprocess.TimeoutExpired:
                self.dnsmasq.kill()
                self.dnsmasq.wait()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for pid in self.qemu_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def end(self):
        """Stops this boot, keeping the namespace (and pebble) for the next."""
        self.check_log()
        self.stop()
        self.stderr.close()

    def wait_line(self, pattern, timeout=120, count=1):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.check_alive()
            found = re.findall(pattern, self.log())
            if len(found) >= count:
                return found
            time.sleep(0.1)
        raise AssertionError(f"no {pattern!r} (x{count}) in {timeout} s:\n{self.report()}")

    def wait_certificate(self, timeout=120):
        self.wait_line(r"acme: (certificate for site\.test installed|"
                       r"the kept certificate for site\.test is served)", timeout)

    def curl_https(self, root):
        return self.ns.run("curl", "-sS", "--max-time", "20", "--cacert", root,
                           "--resolve", f"{DOMAIN}:443:{SERVER_IP}", "-o", "/dev/null",
                           "-w", "%{http_code} %{ssl_verify_result}", f"https://{DOMAIN}/",
                           check=False)


def records(disk):
    """Each slot of the disk's state area: (sequence, valid) of the record it begins with,
    or None when it holds none."""
    data = disk.read_bytes()
    out = []
    for i in range(2):
        slot = data[len(data) - AREA + i * SLOT:][:SLOT]
        if not slot.startswith(MAGIC):
            out.append(None)
            continue
        seq, length = struct.unpack(">QI", slot[8:20])
        crc = struct.unpack(">I", slot[20:24])[0]
        body = slot[8:20] + slot[24:24 + length]
        out.append((seq, length <= SLOT - 24 and zlib.crc32(body) == crc))
    return out


# HTTP-01 on one core; TLS-ALPN-01 on two in network-core mode, where core 0 owns the NIC
# and the agent, and the HTTP core's server hands the client's segments over.
@pytest.mark.parametrize("alpn,smp", [(False, None), (True, 2)],
                         ids=["http-01-one-core", "tls-alpn-01-netcore"])
def test_the_kernel_obtains_a_certificate_that_curl_verifies_and_a_reboot_reuses_it(
        tmp_path, alpn, smp):
    need("pebble")
    need("pebble-challtestsrv")
    ns = Netns("bwka")
    pebble = k = None
    disk = tmp_path / "state.img"
    try:
        # One core: the CA's HTTPS certificate is RSA (the Web PKI's often are), so the
        # kernel's TLS client verifies RSA-PSS.
        pebble = Pebble(ns, tmp_path, rsa=not smp)
        k = AcmeKernel(ns, tmp_path, disk, alpn=alpn, smp=smp)
        if smp:
            k.wait_line(r"netcore: core 0 owns the NIC")
        # `run` made the disk: the area's size, the owner's alone.
        assert disk.stat().st_size == AREA and disk.stat().st_mode & 0o777 == 0o600
        k.wait_line(r"acme: state disk virtio-blk at \S+, 256 KiB, area at byte 0: blank")
        k.wait_certificate()
        root = pebble.root()
        r = k.curl_https(root)
        assert r.stdout == "200 0", (r.stdout, r.stderr, k.report())
        orders = pebble.orders()
        assert orders >= 1, pebble.output()
        # With a certificate, --http-redirect sends plain HTTP to HTTPS.
        r = ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                   f"http://{SERVER_IP}/", check=False)
        assert r.stdout == "308", r
        r = ns.run("curl", "-sS", "-k", "-L", "--max-time", "10",
                   f"http://{SERVER_IP}/.well-known/bareweb/stats", check=False)
        acme = json.loads(r.stdout)["acme"]
        assert acme["installed"] == 1 and acme["failures"] == 0, acme
        assert acme["certificate_not_after"] > time.time(), acme
        # The account key, then the certificate: two records, the second the newest.
        k.wait_line(r"acme: state kept as record 2 in slot 1", timeout=20)
        assert records(disk) == [(1, True), (2, True)], records(disk)
        # The order's work (TLS client, signatures, RSA) stays well inside the core's
        # 128 KiB stack (an overflow is a double fault).
        stack = max(s["stack_max"] for s in [k.stats_line()] + k.stats_lines())
        assert stack < 112 * 1024, f"stack_max={stack} of 128 KiB"
        print(f"stack_max={stack}")
        k.end()
        k = None
        # A second boot with the same disk serves the kept certificate: no new order.
        k = AcmeKernel(ns, tmp_path, disk, alpn=alpn, smp=smp)
        k.wait_line(r"area at byte 0: record 2: an account key and a certificate")
        k.wait_certificate(timeout=30)
        assert "the kept certificate for site.test is served" in k.log(), k.report()
        r = k.curl_https(root)
        assert r.stdout == "200 0", (r.stdout, r.stderr, k.report())
        time.sleep(2)
        assert pebble.orders() == orders, "a reboot holding a valid certificate ordered"
        k.end()
        k = None
    except BaseException:
        cleanup(*(c for c in (k and (lambda: print(k.report())),
                               pebble and (lambda: print(pebble.output()))) if c))
        raise
    finally:
        cleanup(*(c for c in (k and k.stop, pebble and pebble.close, ns.close) if c))


def test_a_short_lived_certificate_is_renewed_while_bareweb_load_fetches_over_https(tmp_path):
    """pebble issues certificates for 24 s: the kernel renews 16 s in (and writes its
    state) while `bareweb load` fetches over HTTPS for 30 s, each body checked, one run
    on a new connection per fetch and one over kept connections: none fails, and the
    certificate served changes."""
    need("pebble")
    need("pebble-challtestsrv")
    ns = Netns("bwkr")
    pebble = k = None
    loads = []
    try:
        pebble = Pebble(ns, tmp_path, validity=24)
        k = AcmeKernel(ns, tmp_path, tmp_path / "state.img")
        k.wait_certificate()
        root = pebble.root()
        first = served_serial(ns, root)
        assert first.startswith("serial="), first
        loads = [https_load(ns, BIN, root, 30, keepalive, SITE) for keepalive in (False, True)]
        new, kept = (load_report(p) for p in loads)
        renewed = served_serial(ns, root)
        assert renewed.startswith("serial=") and renewed != first, (first, renewed)
        installs = k.log().count("acme: certificate for site.test installed")
        assert installs >= 2, k.report()
        assert "acme: state kept as record 3" in k.log(), k.report()
        print(f"renewed {installs - 1} time(s); bareweb load: {new['fetches_ok']} fetches on "
              f"new connections, {kept['fetches_ok']} on {kept['connections']} kept ones, "
              "none failed")
        k.end()
        k = None
    except BaseException:
        cleanup(*(c for c in (k and (lambda: print(k.report())),
                               pebble and (lambda: print(pebble.output()))) if c))
        raise
    finally:
        for p in loads:
            if p.poll() is None:
                p.kill()
                p.wait()
        cleanup(*(c for c in (k and k.stop, pebble and pebble.close, ns.close) if c))


def test_the_dns_server_comes_from_the_dhcp_lease(tmp_path):
    """`--ip dhcp` and no `--dns`: the kernel asks the DNS server dnsmasq's lease names
    (option 6; pebble-challtestsrv on port 53) for the CA's name. The ACME settings come
    from the site's bareweb.toml (`[acme]`), not the command line."""
    need("pebble")
    need("pebble-challtestsrv")
    need("dnsmasq")
    ns = Netns("bwkd")
    pebble = k = None
    try:
        pebble = Pebble(ns, tmp_path, dns_port=53)
        site = tmp_path / "site"
        shutil.copytree(SITE, site)
        (site / "bareweb.toml").write_text(
            f'[acme]\ndomains = ["{DOMAIN}"]\n'
            f'directory = "https://{CA_NAME}:{PEBBLE_PORT}/dir"\n'
            f'ca = "{tmp_path / "listener.pem"}"\n')
        k = AcmeKernel(ns, tmp_path, tmp_path / "state.img", dhcp=True, site=site)
        k.wait_line(rf"acme: DNS server {HOST_IP} from the DHCP lease")
        k.wait_certificate()
        r = k.curl_https(pebble.root())
        assert r.stdout == "200 0", (r.stdout, r.stderr, k.report())
        k.end()
        k = None
    except BaseException:
        cleanup(*(c for c in (k and (lambda: print(k.report())),
                               pebble and (lambda: print(pebble.output()))) if c))
        raise
    finally:
        cleanup(*(c for c in (k and k.stop, pebble and pebble.close, ns.close) if c))


def test_an_image_from_build_disk_keeps_its_state_in_its_own_last_256_kib(tmp_path):
    """`bareweb build --disk site.img` with the ACME options: the image's last 256 KiB are
    the state area. Booted as a VM's virtio disk it obtains a certificate and writes its
    records there, and every byte before the area stays as built. Rebuilt in place, the
    image keeps its area: the next boot serves the kept certificate, with no new order."""
    need("pebble")
    need("pebble-challtestsrv")
    ns = Netns("bwki")
    pebble = k = None
    img = tmp_path / "site.img"
    try:
        pebble = Pebble(ns, tmp_path)

        def build():
            r = subprocess.run(
                [BIN, "build", SITE, "--disk", img, "--ip", f"{SERVER_IP}/24", "--gw", "none",
                 "--acme-domain", DOMAIN, "--acme-ca", tmp_path / "listener.pem",
                 "--acme-directory", f"https://{CA_NAME}:{PEBBLE_PORT}/dir",
                 "--dns", f"{HOST_IP}:{DNS_PORT}"],
                capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stderr
            assert img.stat().st_mode & 0o777 == 0o600
            return r.stdout + r.stderr

        out = build()
        assert "state area 256 KiB at its end" in out, out
        size = img.stat().st_size
        content = hashlib.sha256(img.read_bytes()[:size - AREA]).hexdigest()
        assert records(img) == [None, None]
        k = AcmeKernel(ns, tmp_path, img, image=True)
        k.wait_line(rf"area at byte {size - AREA}: blank")
        k.wait_certificate()
        root = pebble.root()
        r = k.curl_https(root)
        assert r.stdout == "200 0", (r.stdout, r.stderr, k.report())
        k.wait_line(r"acme: state kept as record 2 in slot 1", timeout=20)
        k.end()
        k = None
        assert records(img) == [(1, True), (2, True)], records(img)
        assert hashlib.sha256(img.read_bytes()[:size - AREA]).hexdigest() == content
        orders = pebble.orders()
        # Rebuilt in place (a site update): the records come along.
        out = build()
        assert "the state area of the image it replaces is kept" in out, out
        assert records(img) == [(1, True), (2, True)], records(img)
        k = AcmeKernel(ns, tmp_path, img, image=True)
        k.wait_line(r"record 2: an account key and a certificate")
        k.wait_certificate(timeout=30)
        assert "the kept certificate for site.test is served" in k.log(), k.report()
        r = k.curl_https(root)
        assert r.stdout == "200 0", (r.stdout, r.stderr, k.report())
        time.sleep(2)
        assert pebble.orders() == orders, "a rebuilt image ordered anew"
        k.end()
        k = None
    except BaseException:
        cleanup(*(c for c in (k and (lambda: print(k.report())),
                               pebble and (lambda: print(pebble.output()))) if c))
        raise
    finally:
        cleanup(*(c for c in (k and k.stop, pebble and pebble.close, ns.close) if c))


FAILED = re.compile(r"acme: (.+); next try in (\d+) s")


# scenario: (what the reason says, least wait before the next try)
HOSTILE = {"wrongkey": ("not for our key", 45), "ratelimit": ("rateLimited", 3500)}


@pytest.mark.parametrize("scenario", sorted(HOSTILE))
def test_a_hostile_ca_ends_in_a_reason_and_a_bounded_retry(tmp_path, scenario):
    """tests/system/fake_acme.py as the CA: a chain issued for another key, or a 429 with
    Retry-After 3600. The kernel says why on its console and waits (its backoff, or the
    CA's Retry-After) with no request meanwhile; plain HTTP goes on serving (the redirect
    waits for a certificate), HTTPS refuses handshakes with an alert, and nothing is
    kept but the account key."""
    ns = Netns("bwkh")
    ca = k = None
    log = tmp_path / "ca.log"
    log.write_text("")
    try:
        listener_cert(tmp_path)
        ca = subprocess.Popen(ns.cmd("python3", ROOT / "tests" / "system" / "fake_acme.py",
                                     scenario, tmp_path / "listener.pem",
                                     tmp_path / "listener.key", log, tmp_path / "other.pem"),
                              stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while ns.run("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/14000", check=False).returncode:
            assert time.time() < deadline and ca.poll() is None, "the fake CA did not start"
            time.sleep(0.1)
        log.write_text("")
        k = AcmeKernel(ns, tmp_path, tmp_path / "state.img",
                       directory=f"https://{HOST_IP}:14000/dir")
        want, least = HOSTILE[scenario]
        k.wait_line(FAILED.pattern, timeout=60)
        reason, wait = FAILED.search(k.log()).groups()
        assert want in reason, reason
        assert int(wait) >= least, (reason, wait)
        seen = log.read_text().splitlines()
        time.sleep(8)
        assert log.read_text().splitlines() == seen, "requests after the failure"
        r = ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                   f"http://{SERVER_IP}/", check=False)
        assert r.stdout == "200", r
        r = ns.run("curl", "-sS", "-k", "-o", "/dev/null", "--max-time", "10",
                   f"https://{SERVER_IP}/", check=False)
        assert r.returncode != 0 and "alert" in r.stderr, r
        k.check_alive()
        assert "certificate for site.test installed" not in k.log()
        assert records(tmp_path / "state.img") == [(1, True), None]
        print(f"{scenario}: {reason}; next try in {wait} s; {len(seen)} request(s)")
        k.end()
        k = None
    except BaseException:
        cleanup(*(c for c in (k and (lambda: print(k.report())),
                               lambda: print(log.read_text())) if c))
        raise
    finally:
        if ca and ca.poll() is None:
            ca.kill()
            ca.wait()
        cleanup(*(c for c in (k and k.stop, ns.close) if c))


def test_qemu_killed_mid_write_leaves_the_previous_state_for_the_next_boot(tmp_path):
    """pebble issues certificates for 24 s, so the kernel renews 16 s in and writes its
    state again. Before that write, the state disk's writes are throttled to one request a
    second (QEMU's monitor); the kernel writes a record a sector per request, so QEMU,
    killed two seconds into the write, leaves a torn record on the disk (checked from the
    file: the magic and sequence number are there, the checksum fails). The next boot
    reads the previous record, and goes on to a certificate curl verifies."""
    need("pebble")
    need("pebble-challtestsrv")
    ns = Netns("bwkw")
    pebble = k = None
    disk = tmp_path / "state.img"
    monitor = tmp_path / "monitor.sock"
    try:
        pebble = Pebble(ns, tmp_path, validity=24)
        k = AcmeKernel(ns, tmp_path, disk, monitor=monitor)
        k.wait_certificate()
        k.wait_line(r"acme: state kept as record 2 in slot 1", timeout=20)
        out = hmp(monitor, "block_set_io_throttle state 0 0 0 0 0 1")
        assert "Error" not in out and "error" not in out, out
        # The renewal's write (the third), two seconds in: QEMU killed.
        k.wait_line(r"acme: writing the state to the disk's state area", timeout=60, count=3)
        time.sleep(2)
        pids = k.qemu_pids()
        assert pids, "no QEMU to kill"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        k.proc.wait(20)
        torn = records(disk)
        assert torn[1] == (2, True), torn
        assert torn[0] is not None and torn[0][0] == 3 and not torn[0][1], \
            f"the kill did not land mid-write: {torn}\n{k.report()}"
        assert "state kept as record 3" not in k.log()
        k.stderr.close()
        k = None
        # The next boot reads record 2, the previous state, and serves HTTPS again.
        k = AcmeKernel(ns, tmp_path, disk)
        k.wait_line(r"area at byte 0: record 2: an account key and a certificate")
        k.wait_line(r"acme: certificate for site\.test installed|"
                    r"the kept certificate for site\.test is served")
        r = k.curl_https(pebble.root())
        assert r.stdout == "200 0", (r.stdout, r.stderr, k.report())
        k.end()
        k = None
    except BaseException:
        cleanup(*(c for c in (k and (lambda: print(k.report())),
                               pebble and (lambda: print(pebble.output()))) if c))
        raise
    finally:
        cleanup(*(c for c in (k and k.stop, pebble and pebble.close, ns.close) if c))
