"""pebble, Debian's ACME test CA, for the ACME tests of both platforms (tests/system's
`serve`, tests/kernel's bare machine): pebble and pebble-challtestsrv started in a test's
network namespace on its host side (HOST_IP), the CA's listener certificate made for its
name, and the helpers the tests share."""
import json
import re
import shutil
import subprocess
import time

import pytest

from qemu_harness import HOST_IP, IN_CI, SERVER_IP

DOMAIN = "site.test"
CA_NAME = "ca.test"
PEBBLE_PORT = 14000
PEBBLE_MGMT = 15000
DNS_PORT = 8053
DNS_MGMT = 8055


def cleanup(*closers):
    """Runs every closer, even when one fails (a failed one is said, not raised): a
    namespace or a CA left running would outlive the test."""
    for close in closers:
        try:
            close()
        except Exception as e:  # noqa: BLE001 - each closer runs whatever the others did
            print(f"cleanup: {close!r}: {e}")


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

    def __init__(self, ns, tmp, validity=None, dns_port=DNS_PORT, rsa=False):
        """`dns_port`: challtestsrv's DNS port (53: the one a DHCP lease's server is
        asked on)."""
        need("pebble")
        need("pebble-challtestsrv")
        self.ns, self.tmp = ns, tmp
        listener_cert(tmp, rsa)
        cfg = {"pebble": {
            "listenAddress": f"0.0.0.0:{PEBBLE_PORT}",
            "managementListenAddress": f"0.0.0.0:{PEBBLE_MGMT}",
            "certificate": str(tmp / "listener.pem"), "privateKey": str(tmp / "listener.key"),
            "httpPort": 80, "tlsPort": 443, "ocspResponderURL": "",
            "externalAccountBindingRequired": False}}
        if validity:
            cfg["pebble"]["certificateValidityPeriod"] = validity
        (tmp / "pebble.json").write_text(json.dumps(cfg))
        self.dns_log = open(tmp / "dns.log", "w+")
        self.log = open(tmp / "pebble.log", "w+")
        self.dns = subprocess.Popen(
            ns.cmd("pebble-challtestsrv", "-dns01", f":{dns_port}",
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
                       "-dnsserver", f"127.0.0.1:{dns_port}"),
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



def listener_cert(tmp, rsa=False):
    """The CA's HTTPS certificate, pebble's or the fake's (for its name and its address;
    P-256, or with `rsa` RSA-2048, whose signatures the client then verifies: TLS 1.3's
    RSA-PSS), and another certificate for the site's name with a key of its own: a chain
    not for our key."""
    key = ["rsa:2048"] if rsa else ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", *key,
         "-nodes", "-days", "2", "-subj", "/CN=test ca",
         "-addext", f"subjectAltName=DNS:{CA_NAME},IP:{HOST_IP}",
         "-addext", "basicConstraints=critical,CA:FALSE",
         "-keyout", tmp / "listener.key", "-out", tmp / "listener.pem"],
        check=True, capture_output=True)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "2", "-subj", "/CN=site.test",
         "-addext", f"subjectAltName=DNS:{DOMAIN}",
         "-keyout", tmp / "other.key", "-out", tmp / "other.pem"],
        check=True, capture_output=True)


def served_serial(ns, root):
    """The serial number of the certificate the server presents for the name now."""
    r = ns.run("bash", "-c",
               f"openssl s_client -connect {SERVER_IP}:443 -servername {DOMAIN} "
               f"-CAfile {root} -verify_return_error </dev/null 2>/dev/null "
               "| openssl x509 -noout -serial", check=False)
    return r.stdout.strip()


def https_load(ns, bin_, root, seconds, keepalive, site):
    """`bareweb load` over HTTPS at the server for `seconds`, four fetches in flight, each
    body checked against `site`; new connections for every fetch unless `keepalive`. The
    process (its JSON report on stdout)."""
    args = [bin_, "load", f"https://{DOMAIN}/index.html", "--resolve",
            f"{DOMAIN}:443:{SERVER_IP}", "--cacert", root, "--parallel", "4",
            "--seconds", seconds, "--fetches", "10000000", "--timeout", "10",
            "--verify", site, "--json", "-q"]
    if keepalive:
        args.append("-k")
    return subprocess.Popen(ns.cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def load_report(p, timeout=120):
    """The JSON report of an `https_load`, checked: it ran, and no fetch failed."""
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, err[-3000:]
    r = json.loads(out)
    assert r["errors_total"] == 0 and r["timeouts"] == 0, (r["errors"], err[-2000:])
    assert r["fetches_ok"] == r["fetches"] and r["fetches_ok"] > 50, r
    return r

