"""Whole-system test of the headers that come with HTTPS and of the default freshness:
`bareweb serve --hsts` on a TAP in a network namespace, every file of the example site
fetched with curl over plain HTTP and over HTTPS. Every response carries Cache-Control (the
site's default: `no-cache` for HTML, `max-age=3600` for the rest); Strict-Transport-Security
is on HTTPS responses only (RFC 6797 §7.2), and only when `--hsts` is given. Certificates
come from test_https's fixture (openssl, ECDSA P-256)."""
import subprocess

import pytest

from conftest import BIN, SERVER_IP, SITE
from test_https import HTTPS, HttpsServer, site_files, url_path

HSTS = "max-age=63072000; includeSubDomains"


def heads(server, base, paths, *curl_args):
    """The response heads of one curl fetching every path of `paths` on `base` (one
    keep-alive connection), as a list of {name: value} (names in lower case)."""
    urls = [a for p in paths for a in ("-o", "/dev/null", base + p)]
    r = server.ns.run("curl", "-sS", "--max-time", "20", "--cacert", server.pki / "ca.pem",
                      *curl_args, "-D", "-", *urls)
    out = []
    for block in r.stdout.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in block.split("\n") if line]
        if not lines:
            continue
        assert lines[0].startswith("HTTP/1.1 "), block
        fields = {":status": lines[0].split()[1]}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            assert name.lower() not in fields, f"{name} twice: {block}"
            fields[name.lower()] = value.strip()
        out.append(fields)
    assert len(out) == len(paths), r.stdout
    return out


def expected_cache_control(path):
    return "no-cache" if path.endswith((".html", "/")) else "max-age=3600"


@pytest.fixture(scope="module")
def hsts(pki):  # noqa: F811
    s = HttpsServer(pki, extra=("--hsts", HSTS))
    yield s
    s.close()


def test_every_file_has_cache_control_and_hsts_only_over_https(hsts):
    paths = ["/"] + [url_path(p) for p in site_files()]
    plain = heads(hsts, f"http://{SERVER_IP}", paths)
    secure = heads(hsts, HTTPS, paths)
    for path, h, s in zip(paths, plain, secure):
        assert (h[":status"], s[":status"]) == ("200", "200"), (path, h, s)
        want = expected_cache_control(path)
        assert h.get("cache-control") == want, (path, h)
        assert s.get("cache-control") == want, (path, s)
        assert "strict-transport-security" not in h, (path, h)
        assert s.get("strict-transport-security") == HSTS, (path, s)
    # An error over HTTPS carries it too; a 304 keeps the file's Cache-Control.
    missing, = heads(hsts, HTTPS, ["/no/such/file"])
    assert missing[":status"] == "404", missing
    assert missing["strict-transport-security"] == HSTS, missing
    plain_missing, = heads(hsts, f"http://{SERVER_IP}", ["/no/such/file"])
    assert "strict-transport-security" not in plain_missing, plain_missing
    again, = heads(hsts, HTTPS, ["/"], "-H", f"If-None-Match: {secure[0]['etag']}")
    assert again[":status"] == "304", again
    assert again["cache-control"] == "no-cache", again
    assert again["strict-transport-security"] == HSTS, again


def test_without_hsts_https_sends_none(pki):  # noqa: F811
    s = HttpsServer(pki)
    try:
        for h in heads(s, HTTPS, ["/", "/style.css"]):
            assert h[":status"] == "200", h
            assert "strict-transport-security" not in h, h
            assert "cache-control" in h, h
    finally:
        s.close()


def test_a_bad_policy_is_refused_before_start(pki):  # noqa: F811
    r = subprocess.run([BIN, "serve", SITE, "--tls-cert", pki / "p256.pem", "--tls-key",
                        pki / "p256.key", "--hsts", "max-age=1y"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 2, r
    assert "--hsts" in r.stderr and "expected max-age=SECONDS" in r.stderr, r.stderr
    r = subprocess.run([BIN, "serve", SITE, "--hsts", "max-age=60"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 2 and "need --tls-cert" in r.stderr, r


def test_the_sites_tls_table_turns_https_and_hsts_on(pki, tmp_path):  # noqa: F811
    """`[tls]` in the site's bareweb.toml, no HTTPS option on the command line: the key
    and certificate beside the file (relative paths), HSTS from `hsts`."""
    import shutil

    from conftest import Server
    site = tmp_path / "site"
    shutil.copytree(SITE, site)
    shutil.copytree(pki, tmp_path / "pki")
    (site / "bareweb.toml").write_text(
        '[tls]\ncert = "../pki/p256.pem"\nkey = "../pki/p256.key"\nhsts = "max-age=300"\n')

    class TomlServer(HttpsServer):
        def __init__(self):
            self.pki = pki
            Server.__init__(self, site=site)

    s = TomlServer()
    try:
        secure, = heads(s, HTTPS, ["/"])
        assert secure["strict-transport-security"] == "max-age=300", secure
        plain, = heads(s, f"http://{SERVER_IP}", ["/"])
        assert "strict-transport-security" not in plain, plain
    finally:
        s.close()
    # The key inside the site would be served: refused before start, naming the key.
    shutil.copy(pki / "p256.key", site / "key.pem")
    (site / "bareweb.toml").write_text(
        '[tls]\ncert = "../pki/p256.pem"\nkey = "key.pem"\n')
    r = subprocess.run([BIN, "serve", site], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and "[tls] key" in r.stderr and "would be served" in r.stderr, r
