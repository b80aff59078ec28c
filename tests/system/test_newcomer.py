"""What a new user meets on a real run of `bareweb serve`: a site with listings and empty
directories, odd file names fetched and verified with `bareweb get`, redirects followed,
and a `--tap` that names one of the host's own interfaces.

Needs root (network namespaces, TAP), as every test here.
"""
import shutil

import pytest

from conftest import BIN, SERVER_IP, SITE, Netns, Server, require_root

URL = f"http://{SERVER_IP}"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("newcomer")
    (d / "index.html").write_text("<p>home</p>")
    (d / "bareweb.toml").write_text("listing = true\n")
    (d / "my file.txt").write_text("a name with a space\n")
    (d / "empty").mkdir()
    (d / "kept").mkdir()
    (d / "kept" / ".gitkeep").write_text("")
    (d / "docs").mkdir()
    (d / "docs" / "index.html").write_text("<p>docs</p>")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def served(site):
    s = Server(site=site, prefix="bwn")
    yield s
    s.close()


def curl(s, path):
    r = s.ns.run("curl", "-sS", "-w", "\n%{http_code}", URL + path)
    body, _, code = r.stdout.rpartition("\n")
    return int(code), body


def test_empty_directories_are_listed(served):
    """`listing = true` with an empty directory, or one holding only `.gitkeep`: the
    server starts and lists them (it refused to build the site before)."""
    for d in ("/empty/", "/kept/"):
        code, body = curl(served, d)
        assert code == 200 and f"Index of {d}" in body, (d, code, body)
    code, _ = curl(served, "/empty")
    assert code == 301


def test_get_verifies_decoded_paths_follows_redirects_and_names_its_file(served, site, tmp_path):
    """`bareweb get`: `--verify` finds `my file.txt` for `my%20file.txt`; `-L` follows
    `/docs` to `/docs/`; without `-o` the body lands in the file the URL names."""
    r = served.ns.run(BIN, "get", f"{URL}/my%20file.txt", "-o", "-", "--verify", site,
                      check=False)
    assert r.returncode == 0 and r.stdout == "a name with a space\n", r.stderr
    r = served.ns.run(BIN, "load", f"{URL}/my%20file.txt", "--fetches", "20", "--verify", site,
                      "-q", check=False)
    assert r.returncode == 0 and "20 ok" in r.stdout, r.stdout + r.stderr
    r = served.ns.run(BIN, "get", f"{URL}/docs", "-o", "-", check=False)
    assert r.returncode == 1 and "301" in r.stderr and "--follow" in r.stderr, r.stderr
    r = served.ns.run(BIN, "get", "-L", f"{URL}/docs", "-o", "-", "--verify", site, check=False)
    assert r.returncode == 0 and r.stdout == "<p>docs</p>", r.stderr
    r = served.ns.run("sh", "-c", f"cd {tmp_path} && {BIN} get {URL}/my%20file.txt", check=False)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "my file.txt").read_text() == "a name with a space\n"


def test_a_host_interface_is_no_tap():
    """`serve --tap lo` or a veth of the host: said not to be a TAP, no advice to delete
    it, and the interface is left as it was."""
    require_root()
    ns = Netns("bwi")
    try:
        ns.ip("link", "add", "d0", "type", "veth", "peer", "name", "d1")
        for name in ("lo", "d0"):
            r = ns.run(BIN, "serve", SITE, "--tap", name, check=False, timeout=60)
            assert r.returncode == 1, r.stderr
            assert f"{name} is a network interface of this host, not a TAP" in r.stderr, r.stderr
            assert "ip link del" not in r.stderr, r.stderr
        assert "d0" in ns.run("ip", "-o", "link", "show", "d0").stdout
    finally:
        ns.close()
