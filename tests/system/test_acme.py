"""Whole-system tests of ACME on the host platform: `bareweb serve --acme-domain` on a TAP
in a network namespace obtains its certificate from a real CA, Debian's pebble, with
pebble-challtestsrv as the DNS server both use, over nothing but the engine's own stack
(its TCP, its TLS client, its DNS resolver). pebble validates for real: it fetches the
HTTP-01 answer from the server's port 80, or makes a TLS-ALPN-01 handshake with its port
443. curl then verifies the HTTPS chain the server serves against pebble's root. A
restart with the same --state serves the kept certificate and places no new order."""
import json
import re
import subprocess
import time

import pytest

from acme_ca import (CA_NAME, DNS_MGMT, DNS_PORT, DOMAIN, PEBBLE_PORT, Pebble, cleanup,
                     https_load, listener_cert, load_report, need, served_serial)
from conftest import BIN, HOST_IP, ROOT, SERVER_IP, SITE, Netns, Server, require_root


class AcmeServer(Server):
    """`bareweb serve --acme-domain` in namespace `ns` (where pebble runs already), its CA
    pebble, its state in `state`."""

    # Plain HTTP answers the site, or with a certificate held the redirect to HTTPS.
    ready_codes = ("200", "308")

    def __init__(self, ns, tmp, state, alpn=False, directory=None):
        self.ns = ns
        self.log = open(tmp / f"serve-{time.monotonic_ns()}.log", "w+")
        self.mac = "02:00:00:00:00:02"
        extra = ["--acme-domain", DOMAIN, "--acme-ca", tmp / "listener.pem", "--state", state,
                 "--acme-email", "ops@site.test", "--http-redirect"]
        if directory:
            extra += ["--acme-directory", directory]
        else:
            extra += ["--acme-directory", f"https://{CA_NAME}:{PEBBLE_PORT}/dir",
                      "--dns", f"{HOST_IP}:{DNS_PORT}"]
        if alpn:
            extra += ["--acme-challenge", "tls-alpn-01"]
        self.proc = subprocess.Popen(
            ns.cmd(BIN, "serve", SITE, "--tap", "bw0", "--ip", f"{SERVER_IP}/24",
                   "--mac", self.mac, *extra),
            stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            self.log.close()
            raise

    def close(self):
        self.stop()
        self.log.close()

    def stats(self):
        # Followed to HTTPS once --http-redirect sends plain HTTP there (not verified:
        # the name is the site's, the URL the address).
        r = self.ns.run("curl", "-sS", "-k", "-L", "--max-time", "5",
                        f"http://{SERVER_IP}/.well-known/bareweb/stats")
        return json.loads(r.stdout)

    def wait_certificate(self, timeout=90):
        """Waits for the console's line saying the certificate is in service."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            out = self.output()
            if "acme: certificate for site.test installed" in out or \
                    "acme: the kept certificate for site.test is served" in out:
                return out
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {out}")
            time.sleep(0.2)
        raise AssertionError(f"no certificate in {timeout} s: {self.output()}")

    def curl_https(self, root, path="/"):
        return self.ns.run("curl", "-sS", "--max-time", "10", "--cacert", root,
                           "--resolve", f"{DOMAIN}:443:{SERVER_IP}", "-o", "/dev/null",
                           "-w", "%{http_code} %{ssl_verify_result}",
                           f"https://{DOMAIN}{path}", check=False)


@pytest.mark.parametrize("alpn", [False, True], ids=["http-01", "tls-alpn-01"])
def test_serve_obtains_a_certificate_that_curl_verifies_and_a_restart_reuses_it(tmp_path, alpn):
    require_root()
    need("pebble")
    need("pebble-challtestsrv")
    ns = Netns("bwa")
    pebble = s = None
    state = tmp_path / "state"
    try:
        pebble = Pebble(ns, tmp_path)
        s = AcmeServer(ns, tmp_path, state, alpn=alpn)
        out = s.wait_certificate()
        root = pebble.root()
        # The chain served verifies against pebble's root, for the name.
        r = s.curl_https(root)
        assert r.stdout == "200 0", (r.stdout, r.stderr, out)
        orders = pebble.orders()
        assert orders >= 1, pebble.output()
        # With a certificate, --http-redirect sends plain HTTP to HTTPS.
        r = ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                   f"http://{SERVER_IP}/", check=False)
        assert r.stdout == "308", r
        # The stats JSON and the metrics say where issuance stands.
        acme = s.stats()["acme"]
        assert acme["installed"] == 1 and acme["failures"] == 0, acme
        assert acme["certificate_not_after"] > time.time(), acme
        assert acme["next_attempt"] > time.time() and acme["phase"] == "idle", acme
        metrics = ns.run("curl", "-sS", "-k", "-L", "--max-time", "5",
                         f"http://{SERVER_IP}/metrics").stdout
        assert f"bareweb_acme_certificate_not_after_seconds {acme['certificate_not_after']}" \
            in metrics, metrics[-2000:]
        s.close()
        s = None
        # A restart with the same state serves the kept certificate: no new order.
        s = AcmeServer(ns, tmp_path, state, alpn=alpn)
        out = s.wait_certificate(timeout=20)
        assert "the kept certificate for site.test is served" in out, out
        r = s.curl_https(root)
        assert r.stdout == "200 0", (r.stdout, r.stderr, out)
        time.sleep(2)
        assert pebble.orders() == orders, "a restart holding a valid certificate ordered"
        acme = s.stats()["acme"]
        assert acme["phase"] == "idle" and acme["failures"] == 0, acme
        assert acme["installed"] == 1, acme
        assert acme["next_attempt"] > time.time() + 86400, "renewal is years away: " + str(acme)
    except BaseException:
        cleanup(*(c for c in (s and (lambda: print(s.output())),
                               pebble and (lambda: print(pebble.output()))) if c))
        raise
    finally:
        cleanup(*(c for c in (s and s.close, pebble and pebble.close, ns.close) if c))


# One TLS connection held open across a renewal: its certificate's serial, then 40
# fetches on it, a second apart, each answered 200; then its certificate's serial again.
HELD_CONNECTION = r"""
import socket, ssl, sys, time
ip, name, root = sys.argv[1:4]
ctx = ssl.create_default_context(cafile=root)
s = ctx.wrap_socket(socket.create_connection((ip, 443), timeout=10), server_hostname=name)
from cryptography import x509
serial = lambda: format(x509.load_der_x509_certificate(s.getpeercert(True)).serial_number, "x")
print(serial())
f = s.makefile("rb")
for i in range(40):
    s.sendall(f"GET /index.html HTTP/1.1\r\nHost: {name}\r\n\r\n".encode())
    status = f.readline()
    assert b" 200 " in status, status
    n = 0
    while True:
        line = f.readline()
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
        if line in (b"\r\n", b""):
            break
    f.read(n)
    time.sleep(1)
print(serial())
"""


def test_a_short_lived_certificate_is_renewed_while_https_fetches_go_on_without_failing(tmp_path):
    """pebble issues certificates for 24 s: renewal is due two thirds in (16 s). `bareweb
    load` fetches over HTTPS throughout, for 30 s, each body checked against the site: one
    run on a new connection per fetch, one over kept connections. None fails, and the
    certificate served changes; a connection opened on the first certificate is held
    across the renewal and keeps it."""
    require_root()
    need("pebble")
    need("pebble-challtestsrv")
    ns = Netns("bwa")
    pebble = s = None
    loads = []
    try:
        pebble = Pebble(ns, tmp_path, validity=24)
        s = AcmeServer(ns, tmp_path, tmp_path / "state")
        s.wait_certificate()
        root = pebble.root()
        first = served_serial(ns, root)
        assert first.startswith("serial="), first
        # A connection opened on the first certificate, kept across the renewal.
        held = subprocess.Popen(
            ns.cmd("python3", "-c", HELD_CONNECTION, SERVER_IP, DOMAIN, str(root)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        loads = [https_load(ns, BIN, root, 30, keepalive, SITE) for keepalive in (False, True)]
        new, kept = (load_report(p) for p in loads)
        renewed = served_serial(ns, root)
        assert renewed.startswith("serial="), renewed
        held_out, held_err = held.communicate(timeout=60)
        assert held.returncode == 0, held_err
        before, after = held_out.split()
        # Its certificate stayed the first one all along; its fetches all answered.
        assert int(before, 16) == int(after, 16) == int(first.split("=")[1], 16), \
            (before, after, first)
        out = s.output()
        installs = out.count("acme: certificate for site.test installed")
        assert installs >= 2, out
        assert renewed != first, (first, renewed)
        assert new["connections"] >= new["fetches"], new
        print(f"renewed {installs - 1} time(s); bareweb load: {new['fetches_ok']} fetches on "
              f"new connections, {kept['fetches_ok']} on {kept['connections']} kept ones, "
              "none failed")
    except BaseException:
        cleanup(*(c for c in (s and (lambda: print(s.output())),
                               pebble and (lambda: print(pebble.output()))) if c))
        raise
    finally:
        for p in loads:
            if p.poll() is None:
                p.kill()
                p.wait()
        cleanup(*(c for c in (s and s.close, pebble and pebble.close, ns.close) if c))


FAILED = re.compile(r"bareweb: acme: (.+); next try in (\d+) s")

# scenario: (what the reason says, least wait before the next try, requests at most)
HOSTILE = {
    "malformed": ("directory", 45, 1),
    "badnonce": ("badNonce", 45, 6),
    "ratelimit": ("rateLimited", 3500, 3),
    # Two: the test's own probe of the port may be logged after the log was emptied.
    "silent": ("10.0.0.1:14000 stopped answering", 45, 2),
    "wrongkey": ("key", 45, 8),
}


@pytest.mark.parametrize("scenario", sorted(HOSTILE))
def test_a_hostile_ca_ends_in_a_reason_and_a_bounded_retry(tmp_path, scenario):
    """A CA that answers broken JSON, refuses every nonce, rate-limits with Retry-After,
    never answers, or issues a chain for another key: the attempt fails with the reason on
    the console and the next try well away (the backoff, or Retry-After); no request
    follows meanwhile; plain HTTP goes on serving and HTTPS refuses handshakes (no
    certificate, no stand-in)."""
    require_root()
    ns = Netns("bwa")
    ca = s = None
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
        s = AcmeServer(ns, tmp_path, tmp_path / "state",
                       directory=f"https://{HOST_IP}:14000/dir")
        want, least, most = HOSTILE[scenario]
        deadline = time.time() + 45
        while not FAILED.search(s.output()):
            assert time.time() < deadline, s.output()
            time.sleep(0.2)
        reason, wait = FAILED.search(s.output()).groups()
        assert want in reason, reason
        assert int(wait) >= least, (reason, wait)
        seen = log.read_text().splitlines()
        time.sleep(8)
        after = log.read_text().splitlines()
        assert after == seen, f"requests after the failure: {after[len(seen):]}"
        assert 1 <= len(seen) <= most, seen
        # Plain HTTP serves (--http-redirect waits for a certificate); HTTPS refuses every
        # handshake with an alert.
        r = ns.run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                   f"http://{SERVER_IP}/", check=False)
        assert r.stdout == "200", r
        r = ns.run("curl", "-sS", "-k", "-o", "/dev/null", "--max-time", "5",
                   f"https://{SERVER_IP}/", check=False)
        assert r.returncode != 0 and "alert" in r.stderr, r
        assert s.proc.poll() is None, "the server stopped"
        acme = s.stats()["acme"]
        assert acme["failures"] == 1 and acme["installed"] == 0, acme
        assert acme["next_attempt"] >= time.time() + least - 5, acme
        print(f"{scenario}: {reason}; next try in {wait} s; {len(seen)} request(s)")
    except BaseException:
        cleanup(*(c for c in (s and (lambda: print(s.output())),
                               lambda: print(log.read_text())) if c))
        raise
    finally:
        if ca and ca.poll() is None:
            ca.kill()
            ca.wait()
        cleanup(*(c for c in (s and s.close, ns.close) if c))


def test_a_challenge_that_never_validates_ends_in_the_cas_reason(tmp_path):
    """pebble's DNS sends site.test to an address no one holds: the HTTP-01 validation
    fails, the authorization is invalid, and the console gives pebble's reason."""
    require_root()
    need("pebble")
    need("pebble-challtestsrv")
    ns = Netns("bwa")
    pebble = s = None
    try:
        pebble = Pebble(ns, tmp_path)
        ns.run("curl", "-sS", "--max-time", "5", "-d",
               json.dumps({"host": f"{DOMAIN}.", "addresses": ["10.0.0.77"]}),
               f"http://127.0.0.1:{DNS_MGMT}/add-a")
        s = AcmeServer(ns, tmp_path, tmp_path / "state")
        deadline = time.time() + 60
        while not FAILED.search(s.output()):
            assert time.time() < deadline, s.output()
            time.sleep(0.2)
        reason, wait = FAILED.search(s.output()).groups()
        assert "site.test was not validated" in reason, reason
        assert int(wait) >= 45, wait
        print(f"{reason}; next try in {wait} s")
    except BaseException:
        cleanup(*(c for c in (s and (lambda: print(s.output())),
                               pebble and (lambda: print(pebble.output()))) if c))
        raise
    finally:
        cleanup(*(c for c in (s and s.close, pebble and pebble.close, ns.close) if c))
