"""The UDP protocol (the UDP paper, docs/udp-protocol.md) over IPv6 on the host platform:
`bareweb serve --udp-port` on a TAP takes its link-local address, and `bareweb get
bwudp://[fe80::…%25bw0]:PORT/…` and `bareweb load --udp` fetch every file of the example
site byte-exact over it, one core and in the network-core mode (where core 0 serves IPv6
itself). The answers' packets fit a 1500-octet link with the 40-octet IPv6 header.
"""
import json

import pytest

from conftest import BIN, SITE, Server
from test_ipv6_link import SECRET, server_addr
from test_udp import UDP_PORT, site_files, url_path


@pytest.mark.parametrize("cores", [[], ["--cores", "2", "--mode", "netcore"]],
                         ids=["single", "netcore2"])
def test_every_file_and_a_load_over_ipv6(cores, tmp_path):
    s = Server(extra=["--udp-port", str(UDP_PORT), "--ip6-secret", SECRET, "--no-pin", *cores])
    try:
        ll = server_addr(s.ns)
        base = f"bwudp://[{ll}%25bw0]:{UDP_PORT}"
        for f in site_files():
            out = tmp_path / "got"
            r = s.ns.run(BIN, "get", base + url_path(f), "-o", out, "-v", check=False,
                         timeout=120)
            assert r.returncode == 0, f"{url_path(f)}: {r.stderr}"
            assert out.read_bytes() == f.read_bytes(), f"{url_path(f)}: wrong bytes"
        r = s.ns.run(BIN, "load", "--udp", f"{base}/files/4k.html", f"{base}/files/1m.bin",
                     "--parallel", "4", "--fetches", "40", "--verify", SITE, "--json", "-q",
                     timeout=120)
        rep = json.loads(r.stdout)
        assert rep["completed"] == 40 and rep["verify_errors"] == 0, rep
        assert rep["failed_timeout"] + rep["bad_status"] == 0, rep
    finally:
        counters = s.stop()
        s.ns.close()
        s.log.close()
    assert counters["udp_initial"] >= len(site_files()) + 40, counters
    assert counters["udp_malformed"] + counters["udp_rate_limited"] == 0, counters
    assert counters.get("drop_ipv6_unserved", 0) == 0, counters
