//! The PROXY protocol through a whole server: a balancer at the test client's address
//! (`Config::proxy_protocol`) sends HAProxy's captured headers before requests, in one
//! segment or split; the access log, the per-address limit and the stats page's `allow`
//! see the client the header names; a missing, malformed, oversized, late or forbidden
//! header resets the connection and is counted by reason.

use core::net::IpAddr;

use super::*;
use crate::server::config::ProxySources;

static V1_TCP4: &[u8] = include_bytes!("../../../testdata/proxy/haproxy-v1-tcp4.bin");
static V2_TCP6: &[u8] = include_bytes!("../../../testdata/proxy/haproxy-v2-tcp6.bin");
static V2_LOCAL: &[u8] = include_bytes!("../../../testdata/proxy/haproxy-v2-local-check.bin");

/// A server that takes PROXY headers from `net`/`prefix`.
fn behind(net: Ipv4Address, prefix: u8, max_per_ip: usize) -> Server<TestSite> {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(max_per_ip);
    cfg.syn_backlog = Some(8);
    let mut sources = ProxySources::NONE;
    assert!(sources.add(net, prefix));
    cfg.proxy_protocol = sources;
    Server::new(cfg, TestSite::new(), SERVER_MAC)
}

/// Records who each access record names and its status.
#[derive(Default)]
struct Who(Vec<(IpAddr, u16)>);

impl AccessLog for Who {
    fn record(&mut self, r: &AccessRecord<'_>) {
        self.0.push((r.peer, r.status));
    }
}

/// Sends `parts` as consecutive data segments of the connection on `port` (one poll each);
/// returns every segment the server sent meanwhile.
fn send(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &ManualClock,
    log: &mut Who,
    (port, mut cseq, sseq): (u16, u32, u32),
    parts: &[&[u8]],
) -> Vec<Out> {
    let mut out = Vec::new();
    for p in parts {
        let f = flags(false, true, false, false);
        nic.rx
            .inbox
            .push_back(tcp_frame(port, cseq, Some(sseq), f, p, None));
        cseq = cseq.wrapping_add(p.len() as u32);
        s.poll(nic, clock, log);
        out.extend(nic.tx.outbox.drain(..).filter_map(|f| parse_out(&f)));
    }
    out
}

fn open(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &ManualClock,
    port: u16,
) -> (u16, u32, u32) {
    let (c, srv) = handshake(s, nic, clock, port);
    (port, c, srv)
}

#[test]
fn a_v2_header_split_across_segments_names_the_logged_ipv6_client() {
    let mut s = behind(CLIENT_IP, 32, 8);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let mut log = Who::default();
    let conn = open(&mut s, &mut nic, &clock, 41000);
    // The 52-byte header in three pieces, the request's first bytes with the last.
    let out = send(
        &mut s,
        &mut nic,
        &clock,
        &mut log,
        conn,
        &[
            &V2_TCP6[..7],
            &V2_TCP6[7..30],
            &V2_TCP6[30..60],
            &V2_TCP6[60..],
        ],
    );
    let reply: Vec<u8> = out.iter().flat_map(|o| o.payload.clone()).collect();
    assert!(
        reply.starts_with(b"HTTP/1.1 404 Not Found\r\n"),
        "{:?}",
        String::from_utf8_lossy(&reply)
    );
    assert!(!out.iter().any(|o| o.rst));
    assert_eq!(log.0, [(IpAddr::from(core::net::Ipv6Addr::LOCALHOST), 404)]);
    assert_eq!(s.stats().proxy_headers, 1);
    // A second request on the connection is logged with the same client.
    let next = (
        conn.0,
        conn.1 + V2_TCP6.len() as u32,
        out.last().unwrap().seq + out.last().unwrap().payload.len() as u32,
    );
    send(
        &mut s,
        &mut nic,
        &clock,
        &mut log,
        next,
        &[b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"],
    );
    assert_eq!(
        log.0[1],
        (IpAddr::from(core::net::Ipv6Addr::LOCALHOST), 200)
    );
}

#[test]
fn a_v1_header_in_the_requests_segment_names_the_client_and_the_limit_counts_it() {
    // One connection per client, but the balancer's own address has many.
    let mut s = behind(Ipv4Address([10, 0, 0, 0]), 24, 1);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let mut log = Who::default();
    let a = open(&mut s, &mut nic, &clock, 42000);
    let b = open(&mut s, &mut nic, &clock, 42001);
    assert_eq!(s.active(), 2, "the balancer is not held to --max-per-ip");
    // HAProxy's line names 127.0.0.1; a request without `Connection: close` keeps it open.
    let out = send(&mut s, &mut nic, &clock, &mut log, a, &[V1_TCP4]);
    assert!(String::from_utf8_lossy(&out[0].payload).starts_with("HTTP/1.1 404"));
    assert_eq!(log.0, [(IpAddr::from([127, 0, 0, 1]), 404)]);
    // The same client again through the balancer: past its limit of one.
    let out = send(&mut s, &mut nic, &clock, &mut log, b, &[V1_TCP4]);
    assert!(out.len() == 1 && out[0].rst, "{out:?}");
    assert_eq!(s.stats().tcp_per_ip_refused, 1);
    assert_eq!(s.active(), 1);
    assert_eq!(log.0.len(), 1);
    // Another client is let in.
    let c = open(&mut s, &mut nic, &clock, 42002);
    let other = b"PROXY TCP4 192.0.2.9 10.0.0.2 5555 80\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let out = send(&mut s, &mut nic, &clock, &mut log, c, &[other]);
    assert!(String::from_utf8_lossy(&out[0].payload).starts_with("HTTP/1.1 200"));
    assert_eq!(log.0[1], (IpAddr::from([192, 0, 2, 9]), 200));
}

#[test]
fn a_local_header_keeps_the_connections_own_address() {
    let mut s = behind(CLIENT_IP, 32, 8);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let mut log = Who::default();
    let conn = open(&mut s, &mut nic, &clock, 43000);
    let mut bytes = V2_LOCAL.to_vec();
    bytes.extend_from_slice(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    send(&mut s, &mut nic, &clock, &mut log, conn, &[&bytes]);
    assert_eq!(log.0, [(IpAddr::from(CLIENT_IP.0), 404)]);
    assert_eq!(s.stats().proxy_headers, 1);
}

/// One refusal: the bytes sent, the counter it must bump, and what it is.
type Refusal<'a> = (&'a [u8], fn(&Stats) -> u64, &'a str);

#[test]
fn bad_headers_reset_the_connection_and_are_counted_by_reason() {
    let long = [&b"PROXY UNKNOWN "[..], &[b'f'; 100], b"\r\n"].concat();
    let cases: [Refusal; 4] = [
        (
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            |s| s.proxy_missing,
            "missing",
        ),
        (
            b"PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\nGET / HTTP/1.1\r\n\r\n",
            |s| s.proxy_malformed,
            "malformed",
        ),
        (&long, |s| s.proxy_too_long, "too long"),
        (
            &V1_TCP4[..20],
            |s| s.proxy_missing,
            "cut short by the client's FIN",
        ),
    ];
    for (bytes, counter, why) in cases {
        let mut s = behind(CLIENT_IP, 32, 8);
        let mut nic = FakeNic::new(SERVER_MAC);
        let clock = ManualClock(1_000_000);
        let mut log = Who::default();
        let conn = open(&mut s, &mut nic, &clock, 44000);
        let mut out = send(&mut s, &mut nic, &clock, &mut log, conn, &[bytes]);
        if why.starts_with("cut") {
            assert!(out.iter().all(|o| !o.rst), "a partial header waits");
            let f = flags(false, true, true, false);
            let seq = conn.1 + bytes.len() as u32;
            nic.rx
                .inbox
                .push_back(tcp_frame(conn.0, seq, Some(conn.2), f, &[], None));
            out = run(&mut s, &mut nic, &clock);
        }
        assert!(out.iter().any(|o| o.rst), "{why}: {out:?}");
        assert!(
            out.iter().all(|o| o.payload.is_empty()),
            "{why}: nothing answered"
        );
        assert_eq!(counter(s.stats()), 1, "{why}");
        assert_eq!((s.active(), log.0.len()), (0, 0), "{why}");
    }
}

#[test]
fn a_header_still_partial_at_the_request_timeout_is_missing_not_408() {
    let mut s = behind(CLIENT_IP, 32, 8);
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000_000);
    let mut log = Who::default();
    let conn = open(&mut s, &mut nic, &clock, 45000);
    send(
        &mut s,
        &mut nic,
        &clock,
        &mut log,
        conn,
        &[b"PROXY TCP4 1.2."],
    );
    clock.0 += 10_000_000_000 + 20_000_000;
    let out = run(&mut s, &mut nic, &clock);
    assert!(
        out.iter().any(|o| o.rst) && out.iter().all(|o| o.payload.is_empty()),
        "{out:?}"
    );
    assert_eq!(
        (s.stats().proxy_missing, s.stats().http_requests, s.active()),
        (1, 0, 0)
    );
}

#[test]
fn a_second_header_from_the_balancer_is_a_bad_request_not_forbidden() {
    // Found by the fuzzer (server_proxy): a trusted balancer's header is read, then the
    // bytes after it begin like a header again. That is one header and a bad request
    // (400), not a second outcome counted as forbidden.
    let mut s = behind(Ipv4Address([10, 0, 0, 0]), 24, 8);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let mut log = Who::default();
    let conn = open(&mut s, &mut nic, &clock, 46100);
    let header = b"PROXY TCP4 192.0.2.9 10.0.0.2 5555 80\r\n";
    let out = send(&mut s, &mut nic, &clock, &mut log, conn, &[header, header]);
    let answer = out
        .iter()
        .find(|o| !o.payload.is_empty())
        .expect("an answer");
    assert!(
        String::from_utf8_lossy(&answer.payload).starts_with("HTTP/1.1 400"),
        "{out:?}"
    );
    let st = s.stats();
    assert_eq!((st.proxy_headers, st.proxy_forbidden), (1, 0));
    assert_eq!(log.0, [(IpAddr::from([192, 0, 2, 9]), 400)]);
}

#[test]
fn a_header_from_an_untrusted_source_is_forbidden_not_a_request() {
    // The balancer is elsewhere: this client may not name another.
    let mut s = behind(Ipv4Address([192, 0, 2, 0]), 24, 8);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let mut log = Who::default();
    for (port, bytes) in [(46000, V1_TCP4), (46001, V2_TCP6)] {
        let conn = open(&mut s, &mut nic, &clock, port);
        let out = send(&mut s, &mut nic, &clock, &mut log, conn, &[bytes]);
        assert!(
            out.iter().any(|o| o.rst) && out.iter().all(|o| o.payload.is_empty()),
            "{out:?}"
        );
    }
    assert_eq!(s.stats().proxy_forbidden, 2);
    assert_eq!((log.0.len(), s.active()), (0, 0));
    // A plain request from it is served as ever, its own address logged.
    let conn = open(&mut s, &mut nic, &clock, 46002);
    send(
        &mut s,
        &mut nic,
        &clock,
        &mut log,
        conn,
        &[b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"],
    );
    assert_eq!(log.0, [(IpAddr::from(CLIENT_IP.0), 200)]);
    assert_eq!(s.stats().proxy_headers, 0);
}

#[test]
fn the_stats_allow_network_sees_an_ipv6_client_only_when_open_to_everyone() {
    use crate::cores::pages::{Allow, Page, PageSettings};
    let v6: IpAddr = "2001:db8::1".parse().unwrap();
    let open = PageSettings {
        metrics: true,
        healthz: true,
        ..PageSettings::default()
    };
    assert_eq!(open.page_for(b"/metrics", v6), Some(Page::Metrics));
    let closed = PageSettings {
        allow: Allow::network([10, 0, 0, 0], 8),
        ..open
    };
    assert_eq!(closed.page_for(b"/metrics", v6), Some(Page::Refused));
    assert_eq!(
        closed.page_for(b"/metrics", IpAddr::from([10, 1, 1, 1])),
        Some(Page::Metrics)
    );
    assert_eq!(closed.page_for(b"/healthz", v6), Some(Page::Healthz));
}
