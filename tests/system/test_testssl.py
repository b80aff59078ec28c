"""Real-component audits of `bareweb serve`'s HTTPS: testssl.sh (protocols, ciphers,
server defaults, vulnerabilities) read from its JSON report, and headless Chromium
loading the example site over https:// with the test CA trusted through an NSS database
in a temporary HOME (certutil). `cargo xtask setup` installs both (packages testssl.sh,
libnss3-tools, chromium)."""
import json
import shutil
import subprocess

from conftest import SERVER_IP
from test_browser import Browser, assert_not_blank
from test_https import HttpsServer


def test_testssl_report(pki, tmp_path):  # noqa: F811
    assert shutil.which("testssl"), "testssl missing: cargo xtask setup installs testssl.sh"
    s = HttpsServer(pki)
    try:
        out = tmp_path / "testssl.json"
        r = subprocess.run(s.ns.cmd("testssl", "--quiet", "--color", "0", "--warnings", "off",
                                    "--fast", "-p", "-S", "-U", "--connect-timeout", "5",
                                    "--openssl-timeout", "5", "--jsonfile", out,
                                    f"{SERVER_IP}:443"),
                           capture_output=True, text=True, timeout=180)
        assert out.exists(), r.stdout[-3000:] + r.stderr[-2000:]
        findings = json.loads(out.read_text())
    finally:
        s.close()
    by_id = {f["id"]: f for f in findings}
    said = "\n".join(f"{f['id']} {f['severity']}: {f['finding']}" for f in findings)
    # Properties of the test's own throwaway certificate, not of the server: a private CA
    # testssl does not trust, 30 days of validity, no CRL/OCSP URI.
    cert_only = {"cert_chain_of_trust", "cert_expirationStatus", "cert_notAfter",
                 "cert_revocation"}
    bad = [f for f in findings
           if f["severity"] in ("HIGH", "CRITICAL") and f["id"] not in cert_only]
    assert not bad, f"HIGH/CRITICAL findings:\n{said}"
    for proto in ("SSLv2", "SSLv3", "TLS1", "TLS1_1"):
        assert by_id[proto]["finding"].startswith("not offered"), f"{proto}:\n{said}"
    for proto in ("TLS1_2", "TLS1_3"):
        assert by_id[proto]["finding"].startswith("offered"), f"{proto}:\n{said}"
    # BREACH (MEDIUM, "potentially"): compressed responses that reflect a secret; a static
    # site's files carry none.
    vuln = [f for f in findings if "VULNERABLE" in f["finding"] and "not vulnerable"
            not in f["finding"].lower() and f["id"] != "BREACH"]
    assert not vuln, f"vulnerable:\n{said}"


def test_chromium_trusts_the_test_ca(pki, tmp_path):  # noqa: F811
    home = tmp_path / "home"
    db = home / ".pki" / "nssdb"
    db.mkdir(parents=True)
    subprocess.run(["certutil", "-d", f"sql:{db}", "-N", "--empty-password"], check=True)
    subprocess.run(["certutil", "-d", f"sql:{db}", "-A", "-t", "C,,", "-n", "test-ca",
                    "-i", pki / "ca.pem"], check=True)
    s = HttpsServer(pki)
    try:
        browser = Browser(tmp_path, prefix=[*s.ns.cmd(), "env", f"HOME={home}"])
        dom = browser.dom(f"https://{SERVER_IP}/")
        # The site's own heading, not Chromium's certificate interstitial.
        assert "<h1>bareweb example site</h1>" in dom, dom[:1000]
        assert_not_blank(browser.screenshot(f"https://{SERVER_IP}/", "https-example.png"))
    finally:
        s.close()
