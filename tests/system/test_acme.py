"""Whole-system tests of ACME on the host platform: `bareweb serve --acme-domain` on a TAP
in a network namespace obtains its certificate from a real CA, Debian's pebble, with
pebble-challtestsrv as the DNS server both use, over nothing but the engine's own stack
(its TCP, its TLS client, its DNS resolver). pebble validates for real: it fetches the
HTTP-01 answer from the server's port 80, or makes a TLS-ALPN-01 handshake with its port
443. curl then verifies the HTTPS chain the server serves against pebble's root. A
restart with the same --state serves the kept certificate and places no new order."""
import json
import re
import shutil
import socket
import subprocess
import time

import pytest

from conftest import BIN, HOST_IP, IN_CI, SERVER_IP, SITE, Netns, Server, require_root

DOMAIN = "site.test"
CA_NAME = "ca.test"
PEBBLE_PORT = 14000
PEBBLE_MGMT = 15000
DNS_PORT = 8053
DNS_MGMT = 8055


def need(tool):
    if shutil.which(tool) is None:
        msg = f"{tool} is missing: `cargo xtask setup` installs it (Debian's pebble)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)


class Pebble:
    """pebble and pebble-challtestsrv on the host side of a server's namespace (HOST_IP):
    the CA at https://ca.test:14000/dir (its listener's certificate made here, for that
    name), every other name answered with the server's address."""

    def __init__(self, ns, tmp):
        need("pebble")
        need("pebble-challtestsrv")
        self.ns, self.tmp = ns, tmp
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-days", "2", "-subj", "/CN=pebble listener",
             "-addext", f"subjectAltName=DNS:{CA_NAME}",
             "-addext", "basicConstraints=critical,CA:FALSE",
             "-keyout", tmp / "listener.key", "-out", tmp / "listener.pem"],
            check=True, capture_output=True)
        cfg = {"pebble": {
            "listenAddress": f"0.0.0.0:{PEBBLE_PORT}",
            "managementListenAddress": f"0.0.0.0:{PEBBLE_MGMT}",
            "certificate": str(tmp / "listener.pem"), "privateKey": str(tmp / "listener.key"),
            "httpPort": 80, "tlsPort": 443, "ocspResponderURL": "",
            "externalAccountBindingRequired": False}}
        (tmp / "pebble.json").write_text(json.dumps(cfg))
        self.dns_log = open(tmp / "dns.log", "w+")
        self.log = open(tmp / "pebble.log", "w+")
        self.dns = subprocess.Popen(
            ns.cmd("pebble-challtestsrv", "-dns01", f":{DNS_PORT}",
                   "-management", f":{DNS_MGMT}", "-http01", "", "-https01", "",
                   "-tlsalpn01", "", "-defaultIPv4", SERVER_IP, "-defaultIPv6", ""),
            stdout=self.dns_log, stderr=subprocess.STDOUT)
        self.ca = None
        try:
            self.wait_port(DNS_MGMT)
            # The CA's own name is the host side's; every other name is the server's.
            self.ns.run("curl", "-sS", "--max-time", "5", "-d",
                        json.dumps({"host": f"{CA_NAME}.", "addresses": [HOST_IP]}),
                        f"http://127.0.0.1:{DNS_MGMT}/add-a")
            self.ca = subprocess.Popen(
                ns.cmd("env", "PEBBLE_VA_NOSLEEP=1", "pebble", "-config", tmp / "pebble.json",
                       "-dnsserver", f"127.0.0.1:{DNS_PORT}"),
                stdout=self.log, stderr=subprocess.STDOUT)
            self.wait_port(PEBBLE_PORT)
            self.wait_port(PEBBLE_MGMT)
        except BaseException:
            self.close()
            raise

    def wait_port(self, port):
        deadline = time.time() + 20
        while time.time() < deadline:
            r = self.ns.run("bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}", check=False)
            if r.returncode == 0:
                return
            time.sleep(0.1)
        raise AssertionError(f"port {port} did not open: {self.output()}")

    def root(self):
        """pebble's root certificate (made afresh at each start), as a file."""
        r = self.ns.run("curl", "-sS", "-k", "--max-time", "5",
                        f"https://127.0.0.1:{PEBBLE_MGMT}/roots/0")
        path = self.tmp / "pebble-root.pem"
        path.write_text(r.stdout)
        return path

    def output(self):
        out = ""
        for f in (self.log, self.dns_log):
            f.flush()
            f.seek(0)
            out += f.read()
        return out

    def orders(self):
        """Orders pebble was asked for so far."""
        self.log.flush()
        self.log.seek(0)
        return len(re.findall(r"POST /order-plz", self.log.read()))

    def close(self):
        for p in (self.ca, self.dns):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.log.close()
        self.dns_log.close()


class AcmeServer(Server):
    """`bareweb serve --acme-domain` in namespace `ns` (where pebble runs already), its CA
    pebble, its state in `state`."""

    def __init__(self, ns, tmp, state, alpn=False):
        self.ns = ns
        self.log = open(tmp / f"serve-{time.monotonic_ns()}.log", "w+")
        self.mac = "02:00:00:00:00:02"
        extra = ["--acme-domain", DOMAIN, "--acme-directory",
                 f"https://{CA_NAME}:{PEBBLE_PORT}/dir", "--acme-ca", tmp / "listener.pem",
                 "--dns", f"{HOST_IP}:{DNS_PORT}", "--state", state,
                 "--acme-email", "ops@site.test"]
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
        s.close()
        # A restart with the same state serves the kept certificate: no new order.
        s = AcmeServer(ns, tmp_path, state, alpn=alpn)
        out = s.wait_certificate(timeout=20)
        assert "the kept certificate for site.test is served" in out, out
        r = s.curl_https(root)
        assert r.stdout == "200 0", (r.stdout, r.stderr, out)
        time.sleep(2)
        assert pebble.orders() == orders, "a restart holding a valid certificate ordered"
    except BaseException:
        if s:
            print(s.output())
        if pebble:
            print(pebble.output())
        raise
    finally:
        if s:
            s.close()
        if pebble:
            pebble.close()
        ns.close()
