"""Whole-system tests of a site's bareweb.toml rules on `bareweb serve`, fetched with curl:
redirects (a prefix covering its directory, a non-ASCII source, placeholders), rewrites
for a single-page app, configured types in UTF-8, the `Server` field, site-wide headers
on the server's own pages, and a stats path that would take over the site refused at
start. Also examples/configured, the README's example, as shipped."""
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from conftest import BIN, ROOT, SERVER_IP, Netns, Server, require_root

URL = f"http://{SERVER_IP}"

TOML = """\
server_header = "shop"

[types]
md = "text/markdown"

[[headers]]
path = "/*"
set = { "X-Frame-Options" = "DENY" }

[[redirects]]
from = "/blog/*"
to = "/new/page.html?from="
status = 302

[[redirects]]
from = "/café"
to = "/new/page.html"

[[redirects]]
from = "/posts/:slug"
to = "/articles/:slug.html"

[[rewrites]]
from = "/app/*"
to = "/app/index.html"
"""


def make_site(toml):
    d = pathlib.Path(tempfile.mkdtemp(prefix="bw-rules-"))
    (d / "index.html").write_text("<!doctype html>home\n")
    (d / "notes.md").write_text("# Notes\n\nnaïve café\n")
    (d / "new").mkdir()
    (d / "new" / "page.html").write_text("<!doctype html>new page\n")
    (d / "app").mkdir()
    (d / "app" / "index.html").write_text("<!doctype html><title>app</title>" + "x" * 400 + "\n")
    (d / "app" / "main.js").write_text("console.log('app');\n")
    (d / "bareweb.toml").write_text(toml)
    return d


def head(server, path, *args):
    """(status, fields as a lower-case dict, body) of one GET with curl."""
    r = server.ns.run("curl", "-sS", "-D", "-", *args, URL + path)
    text = r.stdout.replace("\r\n", "\n")
    top, _, body = text.partition("\n\n")
    lines = top.split("\n")
    fields = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        fields[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), fields, body


@pytest.fixture(scope="module")
def rules_server():
    site = make_site(TOML)
    s = Server(site=site, prefix="bwr")
    yield s
    s.close()
    shutil.rmtree(site)


def test_redirect_prefix_covers_its_directory_and_non_ascii_sources_match(rules_server):
    status, h, _ = head(rules_server, "/blog")
    assert (status, h["location"]) == (302, "/new/page.html?from="), h
    status, h, _ = head(rules_server, "/blog/2024/post")
    assert (status, h["location"]) == (302, "/new/page.html?from=2024/post"), h
    status, h, _ = head(rules_server, "/caf%C3%A9")
    assert (status, h["location"]) == (301, "/new/page.html"), h
    # The site-wide header rides on redirects too.
    assert h["x-frame-options"] == "DENY"


def test_placeholder_redirect_fills_the_target(rules_server):
    status, h, _ = head(rules_server, "/posts/hello-world?utm=x")
    assert (status, h["location"]) == (301, "/articles/hello-world.html?utm=x"), h
    status, _, _ = head(rules_server, "/posts/a/b")
    assert status == 404


def test_rewrite_answers_200_with_the_target_file(rules_server):
    status, h, body = head(rules_server, "/app/users/7")
    _, h_index, body_index = head(rules_server, "/app/index.html")
    assert status == 200 and body == body_index and body.startswith("<!doctype html><title>app")
    assert h["etag"] == h_index["etag"] and h["content-type"] == "text/html; charset=utf-8"
    # Its encodings too: the same gzip variant as the file itself.
    _, hz, _ = head(rules_server, "/app/route", "-H", "Accept-Encoding: gzip", "-o", "/dev/null")
    assert hz.get("content-encoding") == "gzip", hz
    # A file under the prefix is itself; elsewhere 404 stays.
    status, _, body = head(rules_server, "/app/main.js")
    assert (status, body) == (200, "console.log('app');\n")
    assert head(rules_server, "/nowhere")[0] == 404


def test_configured_text_type_in_utf8_and_the_server_field(rules_server):
    status, h, body = head(rules_server, "/notes.md")
    assert status == 200 and h["content-type"] == "text/markdown; charset=utf-8", h
    assert "naïve café" in body
    assert h["server"] == "shop"


def test_site_wide_headers_reach_the_server_pages(rules_server):
    for path in ("/metrics", "/healthz", "/.well-known/bareweb/", "/.well-known/bareweb/stats"):
        status, h, _ = head(rules_server, path)
        assert status == 200, (path, status)
        assert h.get("x-frame-options") == "DENY", (path, h)
        assert h.get("server") == "shop", (path, h)


def test_no_server_field_when_the_site_says_false():
    site = make_site("server_header = false\n")
    s = Server(site=site, prefix="bws")
    try:
        _, h, _ = head(s, "/")
        assert "server" not in h, h
        _, h, _ = head(s, "/healthz")
        assert "server" not in h, h
    finally:
        s.close()
        shutil.rmtree(site)


def test_a_stats_path_over_the_site_is_refused_at_start():
    require_root()
    site = make_site('[stats]\npath = "/app"\n')
    ns = Netns("bwq")
    try:
        r = ns.run(BIN, "serve", site, "--tap", "bw0", "--ip", f"{SERVER_IP}/24",
                   check=False, timeout=60)
        assert r.returncode != 0, r.stderr
        assert 'bareweb.toml:2: [stats] path "/app" would take over /app/' in r.stderr, r.stderr
        assert "choose a path the site does not use" in r.stderr, r.stderr
        links = ns.run("ip", "-o", "link", "show").stdout
        assert "bw0" not in links, links
    finally:
        ns.close()
        shutil.rmtree(site)


def test_a_rewrite_to_a_missing_file_is_refused_at_start():
    require_root()
    site = make_site('\n[[rewrites]]\nfrom = "/spa/*"\nto = "/spa/index.html"\n')
    ns = Netns("bwq")
    try:
        r = ns.run(BIN, "serve", site, "--tap", "bw0", "--ip", f"{SERVER_IP}/24",
                   check=False, timeout=60)
        assert r.returncode != 0, r.stderr
        assert 'bareweb.toml:3: rewrite to "/spa/index.html": not a file of the site' in r.stderr, \
            r.stderr
    finally:
        ns.close()
        shutil.rmtree(site)


def test_examples_configured_loads_and_serves():
    s = Server(site=ROOT / "examples" / "configured", prefix="bwc")
    try:
        status, h, _ = head(s, "/old")
        assert (status, h["location"]) == (301, "/new/page.html"), h
        status, h, _ = head(s, "/blog")
        assert status == 302 and h["location"].startswith("/new/page.html?from="), h
        status, h, _ = head(s, "/")
        assert status == 200 and h["x-content-type-options"] == "nosniff", h
        status, h, _ = head(s, "/no-such-page")
        assert status == 404 and h["x-frame-options"] == "DENY", h
    finally:
        s.close()
