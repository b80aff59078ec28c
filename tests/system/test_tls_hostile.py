"""Hostile TLS input against `bareweb serve --tls-cert --tls-key` (HTTPS on 443, a TAP in a
namespace): records longer than 2^14 + 256, truncated records and garbage, ClientHellos of
odd shapes, TLS 1.2 renegotiation, endless KeyUpdates, early data, alerts at any point, and
clients that stop mid-hello (slowloris). Each ends in the right alert or a clean close,
never a stuck connection, and the server serves on; at the end no TCB is left and curl
fetches byte-exact. Then the SYN flood and the silent churning clients of test_hostile.py on
the HTTPS port, with HTTPS probes (a full handshake each) that must be answered within 1 s.

Real clients where one sends what is wanted (openssl s_client, curl, Python's ssl);
hand-built records (tls_raw.py) where none does. Bounded: every read has a timeout, every
loop a count."""
import base64
import json
import pathlib
import subprocess
import time

import pytest

from conftest import SERVER_IP, SITE, Server
from test_https import GET_CLOSE, HTTPS, HttpsServer

RAW = pathlib.Path(__file__).with_name("tls_raw.py")
PROBE_IP = "10.0.0.3"
PREFIX = "bwth"
REQUEST_TIMEOUT = 3


class HostileServer(HttpsServer):
    """HttpsServer in namespaces of this file's own prefix."""

    def __init__(self, pki, extra=()):  # noqa: F811
        self.pki = pki
        Server.__init__(self, extra=("--tls-cert", pki / "p256.pem", "--tls-key",
                                     pki / "p256.key", *extra), prefix=PREFIX)

    def raw(self, *args, timeout=60):
        r = self.ns.run("python3", RAW, *args, timeout=timeout)
        return json.loads(r.stdout.strip().splitlines()[-1])

    def raw_ssl(self, *args):
        r = subprocess.run(self.ns.cmd("env", f"BW_CA={self.pki / 'ca.pem'}", "python3", RAW,
                                       *args), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    def counters(self):
        r = self.ns.run("curl", "-sS", "--max-time", "10",
                        f"http://{SERVER_IP}/.well-known/bareweb/stats")
        return json.loads(r.stdout)["total"]["counters"]

    def serves(self):
        r = self.ns.run("curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w",
                        "%{http_code}", "--cacert", self.pki / "ca.pem", f"{HTTPS}/")
        return r.stdout == "200"

    def interactive(self, args, lines, gap=0.05, settle=1.0, tail=b""):
        """`openssl s_client` in its command mode (no -ign_eof): `lines` written one at a
        time `gap` apart (each a command such as R, K or k), then `tail` (a request); the
        output and how many lines it took before the connection was gone."""
        p = subprocess.Popen(
            self.ns.cmd("openssl", "s_client", "-connect", f"{SERVER_IP}:443", "-CAfile",
                        self.pki / "ca.pem", *args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        taken = 0
        try:
            time.sleep(settle)
            for line in [*lines, tail] if tail else lines:
                if p.poll() is not None:
                    break
                p.stdin.write(line if isinstance(line, bytes) else line.encode() + b"\n")
                p.stdin.flush()
                taken += 1
                time.sleep(gap)
            time.sleep(settle)
        except BrokenPipeError:
            pass
        finally:
            ended = p.poll() is not None
            if not ended:
                p.kill()
            out = p.communicate(timeout=10)[0].decode(errors="replace")
        return out, taken, ended


@pytest.fixture(scope="module")
def srv(pki):  # noqa: F811
    s = HostileServer(pki, extra=("--request-timeout", str(REQUEST_TIMEOUT)))
    yield s
    s.close()


def is_fatal_alert(rec, desc=None):
    return rec.get("alert") is not None and rec["alert"][0] == 2 and \
        (desc is None or rec["alert"][1] == desc)


def test_records_longer_than_2_14_plus_256_are_refused(srv):
    # In the clear: a ClientHello record of 2^14 + 257 bytes, and a header announcing
    # 65,535 (past 2^14 + 2048: refused from the header alone). decode_error (50), fatal.
    for kind in ("overflow", "overflow_header"):
        r = srv.raw("hello", kind, "3")
        assert len(r["records"]) == 1 and is_fatal_alert(r["records"][0], 50), r
        assert r["end"] in ("fin", "rst") and r["secs"] < 1.5, r
    # Encrypted, after a real handshake and a request answered: record_overflow.
    r = srv.raw_ssl("after", "overflow")
    assert r["first"] == "HTTP/1.1 200 OK", r
    assert r["error"] == "TLSV1_ALERT_RECORD_OVERFLOW" and r["end"] == "fin", r
    assert srv.serves()


@pytest.mark.parametrize("kind", ["nosni", "noversions", "manyext", "split"])
def test_odd_but_valid_hellos_get_a_server_hello(srv, kind):
    """No SNI; no supported_versions (a TLS 1.2 hello); 2,000 unknown extensions; one hello
    cut into 7-byte records."""
    r = srv.raw("hello", kind, "1")
    recs = r["records"]
    assert recs and recs[0]["type"] == 22 and recs[0].get("hs") == 2, r  # ServerHello
    # TLS 1.2 sends its whole flight in the clear; TLS 1.3 encrypts all after ServerHello.
    assert any(rec["type"] == 23 for rec in recs) == (kind != "noversions"), r
    assert not any(rec.get("alert") for rec in recs), r


@pytest.mark.parametrize("kind,desc", [
    ("sslv2", 50),       # an SSLv2-compatible hello: decode_error
    ("badsuites", 40),   # only suites it does not have (RSA key exchange, CBC): handshake_failure
    ("toolong", None),   # a hello announcing 128 KiB: closed, no alert (rustls has none queued)
])
def test_hellos_it_cannot_take_end_in_an_alert_or_a_close(srv, kind, desc):
    r = srv.raw("hello", kind, "3")
    assert r["end"] in ("fin", "rst") and r["secs"] < 1.5, r
    if desc is None:
        assert r["records"] == [] or is_fatal_alert(r["records"][-1]), r
    else:
        assert len(r["records"]) == 1 and is_fatal_alert(r["records"][0], desc), r
    assert srv.serves()


def test_only_unsupported_suites_from_openssl_get_handshake_failure(srv):
    rc, out = srv.s_client("-tls1_2", "-cipher", "AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256",
                           request=GET_CLOSE)
    assert rc != 0 and "alert handshake failure" in out, out
    rc, out = srv.s_client("-tls1_3", "-ciphersuites", "TLS_AES_128_CCM_SHA256",
                           request=GET_CLOSE)
    assert rc != 0 and "alert handshake failure" in out, out


@pytest.mark.parametrize("kind", ["garbage_after", "junk_record_after", "close_notify_mid",
                                  "fatal_mid", "truncated_fin"])
def test_garbage_alerts_and_truncation_mid_handshake_close_at_once(srv, kind):
    """After a valid ClientHello: 3,000 random bytes, a handshake record of a message type
    that does not exist, a close_notify, a fatal alert; and half a hello then the FIN. The
    server's first flight at most, then its close, within a second (the request timeout is
    3 s: no timer may be what ends it)."""
    r = srv.raw("hello", kind, "3")
    assert r["end"] in ("fin", "rst") and r["secs"] < 1.0, r
    recs = r["records"]
    if kind == "truncated_fin":
        assert recs == [], r
    else:
        assert recs[0].get("hs") == 2, r
        assert not any(rec.get("alert") and rec["alert"][0] != 2 for rec in recs), r


@pytest.mark.parametrize("kind,error", [
    ("garbage", "SSLV3_ALERT_BAD_RECORD_MAC"),      # a record that does not decrypt
    # A fatal alert in the clear: after the handshake every TLS 1.3 record is protected,
    # so its type is unexpected.
    ("plain_alert", "SSLV3_ALERT_UNEXPECTED_MESSAGE"),
    ("close_notify", None),                          # ours back, then the FIN
])
def test_after_finished_bad_records_and_alerts_end_the_connection(srv, kind, error):
    r = srv.raw_ssl("after", kind)
    assert r["first"] == "HTTP/1.1 200 OK", r
    assert r["end"] == "fin" and r["secs"] < 1.0, r
    if error:
        assert r["error"] == error, r
    else:
        assert r["error"] == "close_notify", r


def test_a_client_that_aborts_the_handshake_with_an_alert(srv):
    """curl without the CA: it sends a fatal alert (unknown CA) instead of its Finished."""
    before = srv.counters()
    for version in ("--tlsv1.3", "--tls-max"):
        args = ["--tlsv1.3"] if version == "--tlsv1.3" else ["--tlsv1.2", "--tls-max", "1.2"]
        r = srv.ns.run("curl", "-sS", "--max-time", "10", *args, f"{HTTPS}/", check=False)
        assert r.returncode == 60, (r.returncode, r.stderr)
    after = srv.counters()
    assert after["tls_failed"] - before["tls_failed"] == 2, (before, after)
    assert srv.serves()


def test_tls12_renegotiation_is_refused(srv):
    before = srv.counters()
    out, _, _ = srv.interactive(["-tls1_2"], ["R"], tail=GET_CLOSE)
    assert "Secure Renegotiation IS supported" in out, out
    assert "RENEGOTIATING" in out, out
    # rustls answers the renegotiating ClientHello with a no_renegotiation warning (OpenSSL
    # then gives up on the connection); there is never a second handshake.
    assert "no renegotiation" in out, out
    assert out.count("Server certificate") == 1, out
    after = srv.counters()
    assert after["tls_established"] - before["tls_established"] == 1, (before, after)
    # Twice in a row (a second request is fatal to rustls): the same.
    out, _, _ = srv.interactive(["-tls1_2"], ["R", "R"], tail=GET_CLOSE)
    assert out.count("Server certificate") == 1 and "HTTP/1.1 200" not in out, out


def test_endless_key_updates_end_the_connection(srv):
    """`K` (a KeyUpdate asking for ours) 200 times, 20 ms apart: rustls allows 32 with no
    application data between, then the connection ends (no spin: the server serves on).
    One `K` or a few `k` then a request: answered."""
    out, taken, ended = srv.interactive(["-tls1_3"], ["K"] * 200, gap=0.02)
    assert ended, "s_client still connected after 200 KeyUpdates"
    assert 33 <= out.count("KEYUPDATE") <= 40, (out.count("KEYUPDATE"), out[-1500:])
    assert taken < 200, taken
    for cmds in (["K"], ["k", "k", "k"], ["K", "k", "K"]):
        out, _, _ = srv.interactive(["-tls1_3"], cmds, tail=GET_CLOSE)
        assert out.count("KEYUPDATE") == len(cmds), out
        assert "HTTP/1.1 200 OK" in out, (cmds, out[-1500:])
    assert srv.serves()


def with_early_data_allowed(pem):
    """An OpenSSL session (PEM) with max_early_data set to 16384 (field [15] of its ASN.1
    SEQUENCE): what a ticket from a server that accepts 0-RTT would say. bareweb's tickets
    say 0, and s_client then sends no early data at all."""
    der = base64.b64decode("".join(l for l in pem.splitlines() if not l.startswith("-----")))

    def tlv(i):
        n, j = der[i + 1], i + 2
        if n & 0x80:
            k = n & 0x7F
            n, j = int.from_bytes(der[j:j + k], "big"), j + k
        return der[i], j + n

    tag, end = tlv(0)
    assert tag == 0x30
    i = 4 if der[1] == 0x82 else (3 if der[1] == 0x81 else 2)
    kids = []
    while i < end:
        t, e = tlv(i)
        kids.append((t, der[i:e]))
        i = e
    assert all(t != 0xAF for t, _ in kids)
    early = bytes([0xAF, 4, 2, 2, 0x40, 0])
    body, placed = b"", False
    for t, raw in kids:
        if not placed and t >= 0xB0:
            body, placed = body + early, True
        body += raw
    if not placed:
        body += early
    n = len(body)
    head = b"\x30" + (bytes([n]) if n < 128 else bytes([0x81, n]) if n < 256
                      else bytes([0x82]) + n.to_bytes(2, "big"))
    b64 = base64.b64encode(head + body).decode()
    return "-----BEGIN SSL SESSION PARAMETERS-----\n" + "\n".join(
        b64[k:k + 64] for k in range(0, len(b64), 64)) + "\n-----END SSL SESSION PARAMETERS-----\n"


def test_early_data_is_never_served_as_0rtt(srv, tmp_path):
    """A resumption whose ClientHello carries a request as early data (a ticket that says
    0-RTT is allowed): the data is skipped, the handshake completes as 1-RTT, and what
    is answered is the request timeout's 408, never the early request's 200."""
    sess, sess0 = tmp_path / "sess.pem", tmp_path / "sess0rtt.pem"
    rc, out = srv.s_client("-tls1_3", "-sess_out", sess, request=GET_CLOSE)
    assert rc == 0 and "HTTP/1.1 200 OK" in out, out
    sess0.write_text(with_early_data_allowed(sess.read_text()))
    early = tmp_path / "early.txt"
    early.write_bytes(GET_CLOSE)
    before = srv.counters()
    rc, out = srv.s_client("-tls1_3", "-sess_in", sess0, "-early_data", early,
                           timeout=REQUEST_TIMEOUT + 20)
    assert "Reused, TLSv1.3" in out, out
    assert "Early data was rejected" in out, out
    assert "HTTP/1.1 200" not in out, out
    assert "HTTP/1.1 408 Request Timeout" in out, out
    after = srv.counters()
    assert after["http_2xx"] - before["http_2xx"] <= 1, "the stats request's own 200 at most"
    assert after["http_4xx"] - before["http_4xx"] == 1, (before, after)
    assert after["tls_failed"] == before["tls_failed"], (before, after)


def test_slowloris_half_hellos_are_closed_by_the_request_timeout(srv):
    """Twenty connections each send half a ClientHello and stop: each is closed when the
    request timeout (3 s, from the connection's start) runs out, and counted as a 408."""
    before = srv.counters()
    r = srv.raw("slowloris", "20", str(REQUEST_TIMEOUT + 5))
    closed = r["closed"]
    assert None not in closed, r
    assert all(REQUEST_TIMEOUT - 0.5 <= t <= REQUEST_TIMEOUT + 2 for t in closed), r
    after = srv.counters()
    assert after["http_4xx"] - before["http_4xx"] >= 20, (before, after)
    assert srv.serves()


def test_zz_no_tcb_is_left_and_curl_fetches_byte_exact(srv, tmp_path):
    """After all of the above (runs last in the module): the connections in use go back to
    the stats request's own, and a fetch is byte-exact."""
    deadline = time.time() + REQUEST_TIMEOUT + 10
    while True:
        c = srv.counters()
        if c["tcbs_in_use"] <= 1 or time.time() > deadline:
            break
        time.sleep(0.5)
    assert c["tcbs_in_use"] <= 1, c
    out = tmp_path / "1m.bin"
    r = srv.ns.run("curl", "-sS", "--max-time", "30", "--cacert", srv.pki / "ca.pem", "-o", out,
                   "-w", "%{http_code}", f"{HTTPS}/files/1m.bin")
    assert r.stdout == "200" and out.read_bytes() == (SITE / "files" / "1m.bin").read_bytes()


def https_probe_env(pki):  # noqa: F811
    return {"BW_PROBE_IP": PROBE_IP, "BW_PORT": "443", "BW_PROBE_CA": str(pki / "ca.pem")}


def test_syn_flood_on_the_https_port_gets_cookies_and_https_clients_are_served(pki):  # noqa: F811
    s = HostileServer(pki)  # 1024 TCBs, SYN backlog 512
    try:
        s.ns.run("ip", "addr", "add", f"{PROBE_IP}/24", "dev", "bw0")
        s.ns.run("ip", "link", "set", "bw0", "txqueuelen", "10000")
        res = s.ns.client("synflood", "bw0", s.mac, "50000", "20", timeout=90,
                          env=https_probe_env(pki))
    finally:
        counters = s.stop()
        s.ns.close()
    print("synflood 443", res, {k: v for k, v in counters.items()
                                if k.startswith(("tcp_syn", "tcbs", "tls_"))})
    assert res["sent"] >= 20000, res
    assert res["probes"] >= 15 and res["probes_ok"] == res["probes"], res
    assert res["probe_max_s"] < 1.0, res
    received = counters["rx_frames"]
    assert received >= 5000, (received, counters)
    assert counters["tcp_syncookies_sent"] >= 0.95 * received - 600, counters
    assert counters["tcbs_max"] <= 512 + 8, counters
    assert counters["tls_established"] >= res["probes"], counters


def test_silent_churning_connections_on_the_https_port_do_not_lock_out_a_client(pki):  # noqa: F811
    s = HostileServer(pki, extra=("--tcbs", "64"))  # one address may hold 32
    try:
        s.ns.run("ip", "addr", "add", f"{PROBE_IP}/24", "dev", "bw0")
        res = s.ns.client("silent", "1100", "12", timeout=90, env=https_probe_env(pki))
    finally:
        counters = s.stop()
        s.ns.close()
    print("silent 443", res, {k: v for k, v in counters.items()
                              if k.startswith(("tcp_", "tcbs", "tls_"))})
    assert res["opened"] >= 1100, res
    assert res["probes"] >= 50 and res["probes_ok"] == res["probes"], res
    assert res["probe_max_s"] < 1.0, res
    assert counters["tcp_per_ip_refused"] > 0, counters
