"""Virtual hosts on the bare machine: `bareweb run examples/vhosts` under QEMU serves each
site by the request's Host field from the image's names table, the default site for other
hosts and HTTP/1.0 without Host, and the server's own page on every host; two Host fields
get 400. (The same image format and lookup as `serve`: tests/system/test_vhosts.py.)"""
from conftest import ROOT, SERVER_IP, Kernel

URL = f"http://{SERVER_IP}"
EXAMPLE = ROOT / "examples" / "vhosts"


def get(k, host, path="/", *args):
    hdr = ["-H", f"Host: {host}"] if host is not None else []
    r = k.ns.run("curl", "-sS", "--max-time", "30", "-w", "\n%{http_code}", *hdr, *args,
                 URL + path)
    body, _, status = r.stdout.rpartition("\n")
    return int(status), body


def test_each_host_gets_its_site_on_the_bare_machine():
    k = Kernel(site=EXAMPLE)
    try:
        status, body = get(k, "blog.example")
        assert status == 200 and "<h1>The blog</h1>" in body, k.report()
        for host in ["shop.example", "WWW.SHOP.EXAMPLE:80", "www.shop.example."]:
            status, body = get(k, host)
            assert status == 200 and "<h1>The shop</h1>" in body, (host, k.report())
        status, body = get(k, "shop.example", "/products/")
        assert status == 200 and "teapot.txt" in body
        assert get(k, "blog.example", "/products/")[0] == 404
        status, body = get(k, "unknown.example")
        assert status == 200 and "<h1>The blog</h1>" in body
        status, body = get(k, None, "/", "--http1.0", "-H", "Host:")
        assert status == 200 and "<h1>The blog</h1>" in body
        # The stats page is the server's: on every host.
        for host in ["shop.example", "unknown.example"]:
            assert get(k, host, "/.well-known/bareweb/")[0] in (200, 403), host
        res = k.ns.client("raw", (b"GET / HTTP/1.1\r\nHost: shop.example\r\n"
                                  b"Host: blog.example\r\n\r\n").hex(), "5")
        assert res["statuses"] == ["400"], res
        k.check_alive()
    finally:
        k.close()
