//! The fetcher against the engine's own server over the in-memory wire: fetches with a
//! connection each and kept alive, bodies compared byte for byte, a 256 KiB body, many
//! slots at once, and the failures (refused, no answer, reset mid-response).

use std::vec::Vec;

use super::*;
use crate::http::log::NoLog;
use crate::memwire::{MemSite, Wire};
use crate::nic::Clock;
use crate::server::{Config as ServerConfig, Server};
use crate::wire::{Ipv4Address, Ipv6Address};

const SERVER_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 2]);
const CLIENT_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
const SERVER_IP: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT_IP: Ipv4Address = Ipv4Address([10, 0, 0, 1]);

struct At(u64);

impl Clock for At {
    fn now_ns(&self) -> u64 {
        self.0
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000
    }
}

/// Collects what the fetcher reports.
#[derive(Default)]
struct Record {
    bodies: Vec<Vec<u8>>,
    ends: Vec<(u32, End)>,
    /// (slot, event, time): "connected", "first", "end".
    events: Vec<(u32, &'static str, u64)>,
}

impl Handler for Record {
    fn body(&mut self, slot: u32, offset: u64, data: &[u8]) {
        let b = &mut self.bodies[slot as usize];
        if offset == 0 {
            b.clear(); // the next of pipelined responses
        }
        assert_eq!(offset as usize, b.len(), "body bytes in order");
        b.extend_from_slice(data);
    }
    fn connected(&mut self, slot: u32, now: u64) {
        self.events.push((slot, "connected", now));
    }
    fn first_byte(&mut self, slot: u32, now: u64) {
        self.events.push((slot, "first", now));
    }
    fn end(&mut self, slot: u32, end: End, now: u64) {
        self.ends.push((slot, end));
        self.events.push((slot, "end", now));
    }
}

struct Pair {
    wire: Wire,
    server: Server<MemSite>,
    fetcher: Fetcher,
    rec: Record,
    now: u64,
    site: MemSite,
    /// Whether the server runs (false: it is gone).
    serving: bool,
}

fn site() -> MemSite {
    let big: Vec<u8> = (0..262_144u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    MemSite::new(vec![
        ("/index.html", "text/html", b"<h1>hello</h1>\n".to_vec()),
        ("/4k.bin", "application/octet-stream", vec![b'z'; 4096]),
        ("/big.bin", "application/octet-stream", big),
    ])
}

impl Pair {
    fn new(slots: usize, port: u16) -> Pair {
        let mut cfg = FetchConfig::new(CLIENT_MAC, CLIENT_IP, 24, SERVER_IP, port, slots);
        cfg.ports = (40_000, 40_015);
        let mut fetcher = Fetcher::new(cfg);
        fetcher.set_next_hop_mac(SERVER_MAC);
        Pair::of(fetcher, ServerConfig::new(SERVER_IP, 24, [7; 16]), slots)
    }

    /// The fetcher `fetcher` of `slots` slots and a server of `scfg` on the wire.
    fn of(fetcher: Fetcher, scfg: ServerConfig, slots: usize) -> Pair {
        Pair {
            wire: Wire::new(SERVER_MAC, CLIENT_MAC, 4096),
            server: Server::new(scfg, site(), SERVER_MAC),
            fetcher,
            rec: Record {
                bodies: vec![Vec::new(); slots],
                ends: Vec::new(),
                events: Vec::new(),
            },
            now: 1_000_000,
            site: site(),
            serving: true,
        }
    }

    fn get(&mut self, slot: u32, path: &str, close: bool) {
        let n = http::write_get(self.fetcher.request_buf(slot), "t", path, close).unwrap();
        self.rec.bodies[slot as usize].clear();
        let tx = &mut self.wire.b.tx;
        assert!(self
            .fetcher
            .get(slot, n, close, self.now, tx, &mut self.rec));
    }

    /// One round of both engines, 10 µs on, and the wire carried: for a test that stops
    /// part-way, where [`Pair::run`] would go on until the wire is quiet.
    fn step(&mut self) {
        self.now += 10_000;
        self.server
            .poll(&mut self.wire.a, &At(self.now), &mut NoLog);
        self.fetcher.poll(&mut self.wire.b, self.now, &mut self.rec);
        self.wire.carry();
    }

    /// Runs both engines until the wire is quiet, advancing 10 µs a round.
    fn run(&mut self) {
        for _ in 0..100_000 {
            self.now += 10_000;
            if self.serving {
                self.server
                    .poll(&mut self.wire.a, &At(self.now), &mut NoLog);
            }
            self.fetcher.poll(&mut self.wire.b, self.now, &mut self.rec);
            if !self.serving {
                self.wire.a.rx.clear();
            }
            if self.wire.carry() == 0 && self.wire.idle() {
                return;
            }
        }
        panic!("the wire never went quiet");
    }

    /// Runs for `ns` of clock in 50 ms steps.
    fn run_for(&mut self, ns: u64) {
        let until = self.now + ns;
        while self.now < until {
            self.run();
            self.now += 50_000_000;
        }
    }
}

use super::Config as FetchConfig;

#[test]
fn a_fetch_per_connection_gets_the_body_and_frees_everything() {
    let mut p = Pair::new(1, 80);
    for i in 0..40 {
        p.get(0, "/index.html", true);
        p.run();
        assert_eq!(
            p.rec.ends.last(),
            Some(&(
                0,
                End::Done {
                    status: 200,
                    body: 15
                }
            )),
            "fetch {i}"
        );
        assert_eq!(p.rec.bodies[0], b"<h1>hello</h1>\n");
        assert_eq!(p.fetcher.open_connections(), 0, "both FINs done, TCB freed");
    }
    assert_eq!(p.rec.ends.len(), 40);
    assert_eq!(p.fetcher.counters.connections, 40);
    assert_eq!(p.fetcher.counters.retransmits, 0);
    assert_eq!(p.server.active(), 0);
    assert_eq!(
        p.fetcher.free_ports(),
        16,
        "every port back on the free-list"
    );
}

#[test]
fn keep_alive_fetches_share_one_connection() {
    let mut p = Pair::new(1, 80);
    for path in ["/4k.bin", "/index.html", "/big.bin", "/4k.bin"] {
        p.get(0, path, false);
        p.run();
        let want = p.site.bytes(path).unwrap();
        assert_eq!(
            p.rec.ends.last().unwrap().1,
            End::Done {
                status: 200,
                body: want.len() as u64
            }
        );
        assert!(p.rec.bodies[0] == want, "{path}: body differs");
    }
    assert_eq!(p.fetcher.counters.connections, 1);
    assert_eq!(p.fetcher.open_connections(), 1);
    // The times a load generator measures: connect once, then a first byte before each end.
    let kinds: Vec<&str> = p.rec.events.iter().map(|e| e.1).collect();
    assert_eq!(
        kinds,
        [
            "connected",
            "first",
            "end",
            "first",
            "end",
            "first",
            "end",
            "first",
            "end"
        ]
    );
    assert!(p.rec.events.windows(2).all(|w| w[0].2 <= w[1].2));
    assert!(
        p.rec.events[2].2 > p.rec.events[0].2,
        "a round trip at least"
    );
    // The last fetch closes it.
    p.get(0, "/index.html", true);
    p.run();
    assert_eq!(p.fetcher.open_connections(), 0);
    assert_eq!(p.fetcher.counters.connections, 1);
}

#[test]
fn many_slots_at_once_reuse_ports_fifo() {
    let mut p = Pair::new(8, 80);
    for round in 0..10 {
        for s in 0..8 {
            p.get(s, "/4k.bin", true);
        }
        p.run();
        let done = p
            .rec
            .ends
            .iter()
            .filter(|(_, e)| {
                *e == End::Done {
                    status: 200,
                    body: 4096,
                }
            })
            .count();
        assert_eq!(done, 8 * (round + 1));
    }
    assert_eq!(p.rec.ends.len(), 80);
    assert_eq!(p.fetcher.counters.connections, 80);
}

#[test]
fn a_closed_port_refuses() {
    let mut p = Pair::new(1, 81);
    p.get(0, "/", true);
    p.run();
    assert_eq!(p.rec.ends, [(0, End::Failed(Failure::Refused))]);
    assert_eq!(p.fetcher.open_connections(), 0);
}

#[test]
fn no_server_no_answer_after_the_syn_retries() {
    let mut p = Pair::new(1, 80);
    p.serving = false;
    p.get(0, "/", true);
    p.run_for(14 * 1_000_000_000);
    assert!(p.rec.ends.is_empty(), "1 + 2 + 4 + 8 s not yet over");
    p.run_for(2 * 1_000_000_000);
    assert_eq!(p.rec.ends, [(0, End::Failed(Failure::NoAnswer))]);
    assert_eq!(p.fetcher.counters.retransmits, 3);
    assert_eq!(p.fetcher.open_connections(), 0);
}

#[test]
fn a_server_that_goes_away_mid_response_is_a_failure() {
    let mut p = Pair::new(1, 80);
    p.get(0, "/big.bin", false);
    // A few rounds: the response has begun.
    for _ in 0..6 {
        p.step();
    }
    assert!(!p.rec.bodies[0].is_empty() && p.rec.ends.is_empty());
    p.serving = false;
    p.wire.cut();
    p.run_for(40 * 1_000_000_000);
    assert_eq!(p.rec.ends, [(0, End::Failed(Failure::Stalled))]);
    assert_eq!(p.fetcher.open_connections(), 0);
}

#[test]
fn the_next_hop_is_found_by_arp_before_the_first_fetch() {
    let mut p = Pair::new(1, 80);
    let mut cfg = FetchConfig::new(CLIENT_MAC, CLIENT_IP, 24, SERVER_IP, 80, 1);
    cfg.ports = (40_000, 40_015);
    p.fetcher = Fetcher::new(cfg);
    assert!(!p.fetcher.ready());
    p.run();
    assert!(p.fetcher.ready(), "the server answered the ARP request");
    assert_eq!(p.fetcher.counters.arp_requests, 1);
    assert_eq!(p.server.stats().arp_replies, 1);
    p.get(0, "/index.html", true);
    p.run();
    assert_eq!(
        p.rec.ends.last(),
        Some(&(
            0,
            End::Done {
                status: 200,
                body: 15
            }
        ))
    );
}

/// Writes `paths` one after the other in slot 0's request buffer (`close` for those
/// marked); returns the bytes written.
fn burst(p: &mut Pair, paths: &[(&str, bool)]) -> usize {
    let mut at = 0;
    for (path, close) in paths {
        let buf = &mut p.fetcher.request_buf(0)[at..];
        at += http::write_get(buf, "t", path, *close).unwrap();
    }
    at
}

#[test]
fn a_pipelined_burst_ends_each_response_in_order_on_one_connection() {
    let mut p = Pair::new(1, 80);
    let paths = ["/4k.bin", "/index.html", "/big.bin", "/4k.bin"];
    for round in 0..3 {
        let list: Vec<(&str, bool)> = paths.iter().map(|p| (*p, false)).collect();
        let n = burst(&mut p, &list);
        let tx = &mut p.wire.b.tx;
        assert!(p
            .fetcher
            .get_pipelined(0, n, 4, false, p.now, tx, &mut p.rec));
        assert!(p.fetcher.busy(0));
        p.run();
        assert!(!p.fetcher.busy(0), "every response of the burst came");
        let ends = &p.rec.ends[round * 4..];
        let want: Vec<(u32, End)> = paths
            .iter()
            .map(|path| {
                let body = p.site.bytes(path).unwrap().len() as u64;
                (0, End::Done { status: 200, body })
            })
            .collect();
        assert_eq!(ends, want, "round {round}");
    }
    assert_eq!(p.rec.bodies[0], p.site.bytes("/4k.bin").unwrap());
    assert_eq!(p.fetcher.counters.connections, 1, "one kept connection");
    // connect once; then a first byte before each end.
    let firsts = p.rec.events.iter().filter(|e| e.1 == "first").count();
    assert_eq!(firsts, 12);
    assert_eq!(
        p.rec.events.iter().filter(|e| e.1 == "connected").count(),
        1
    );
    // The session ends: its connection closes.
    p.fetcher.close_slot(0, p.now, &mut p.wire.b.tx);
    p.run();
    assert_eq!(p.fetcher.open_connections(), 0);
    assert_eq!(p.server.active(), 0);
}

#[test]
fn a_close_inside_a_burst_fails_the_requests_after_it() {
    let mut p = Pair::new(1, 80);
    let n = burst(
        &mut p,
        &[
            ("/index.html", false),
            ("/4k.bin", true),
            ("/index.html", false),
        ],
    );
    let tx = &mut p.wire.b.tx;
    assert!(p
        .fetcher
        .get_pipelined(0, n, 3, false, p.now, tx, &mut p.rec));
    p.run();
    assert_eq!(
        p.rec.ends,
        [
            (
                0,
                End::Done {
                    status: 200,
                    body: 15
                }
            ),
            (
                0,
                End::Done {
                    status: 200,
                    body: 4096
                }
            ),
            (0, End::Failed(Failure::Closed)),
        ]
    );
    assert!(!p.fetcher.busy(0));
    assert_eq!(p.fetcher.open_connections(), 0);
}

#[test]
fn a_burst_that_does_not_fit_or_is_empty_is_refused() {
    let mut p = Pair::new(1, 80);
    let tx = &mut p.wire.b.tx;
    assert!(!p
        .fetcher
        .get_pipelined(0, REQUEST_MAX + 1, 2, false, p.now, tx, &mut p.rec));
    assert!(!p
        .fetcher
        .get_pipelined(0, 10, 0, false, p.now, tx, &mut p.rec));
    assert!(!p.fetcher.busy(0) && p.rec.ends.is_empty());
}

#[test]
fn the_next_request_carries_the_ack_of_a_kept_connections_response() {
    let mut p = Pair::new(1, 80);
    p.get(0, "/4k.bin", false);
    p.run();
    for _ in 0..3 {
        p.get(0, "/4k.bin", false);
        // Step until the response ended in a fetcher poll.
        let ends = p.rec.ends.len();
        while p.rec.ends.len() == ends {
            p.step();
        }
        let sent = p.fetcher.counters.tx;
        // The load loop begins the next fetch at once: one frame, the request with the ACK.
        p.get(0, "/index.html", false);
        p.fetcher.flush_acks(p.now, &mut p.wire.b.tx);
        assert_eq!(p.fetcher.counters.tx, sent + 1, "no separate ACK");
        p.run();
        assert_eq!(
            p.rec.ends.last().unwrap().1,
            End::Done {
                status: 200,
                body: 15
            }
        );
    }
    // With no next request, the held ACK goes at the next poll.
    let ends = p.rec.ends.len();
    p.get(0, "/4k.bin", false);
    while p.rec.ends.len() == ends {
        p.step();
    }
    let sent = p.fetcher.counters.tx;
    p.fetcher.poll(&mut p.wire.b, p.now, &mut p.rec);
    assert_eq!(p.fetcher.counters.tx, sent + 1, "the ACK");
    p.run();
    assert_eq!(p.fetcher.counters.retransmits, 0);
    assert_eq!(p.fetcher.counters.connections, 1);
}

/// `can_start` says whether a fetch would start rather than end at once with
/// `NoResources`: with one local port, a second slot cannot start while the first
/// slot's connection holds the port, can once its close completes, and a slot whose kept
/// connection can take the request can start with no port free.
#[test]
fn can_start_waits_for_a_port_or_a_tcb_held_by_a_closing_connection() {
    let mut p = Pair::new(2, 80);
    let mut cfg = FetchConfig::new(CLIENT_MAC, CLIENT_IP, 24, SERVER_IP, 80, 2);
    cfg.ports = (40_000, 40_000);
    p.fetcher = Fetcher::new(cfg);
    p.fetcher.set_next_hop_mac(SERVER_MAC);
    assert!(p.fetcher.can_start(0) && p.fetcher.can_start(1));
    assert!(!p.fetcher.can_start(2), "out of range");
    p.get(0, "/index.html", true);
    assert!(!p.fetcher.can_start(0), "busy");
    assert!(!p.fetcher.can_start(1), "the one port is taken");
    // Started anyway, the fetch ends at once, as before.
    let n = http::write_get(p.fetcher.request_buf(1), "t", "/", true).unwrap();
    assert!(p
        .fetcher
        .get(1, n, true, p.now, &mut p.wire.b.tx, &mut p.rec));
    assert_eq!(p.rec.ends, [(1, End::Failed(Failure::NoResources))]);
    p.run();
    assert_eq!(p.fetcher.open_connections(), 0, "closed: port and TCB free");
    assert!(p.fetcher.can_start(0) && p.fetcher.can_start(1));
    // A kept connection needs no new port.
    p.get(1, "/index.html", false);
    p.run();
    assert_eq!(p.fetcher.free_ports(), 0);
    assert!(
        p.fetcher.can_start(1),
        "its kept connection takes the next request"
    );
    assert!(
        !p.fetcher.can_start(0),
        "no port for a connection of its own"
    );
}
#[test]
fn the_ports_begin_where_the_config_says() {
    for start in [0u16, 3, 15, 16 + 5, u16::MAX] {
        let mut cfg = FetchConfig::new(CLIENT_MAC, CLIENT_IP, 24, SERVER_IP, 80, 1);
        cfg.ports = (40_000, 40_015);
        cfg.port_start = start;
        let mut c = Fetcher::new(cfg);
        c.set_next_hop_mac(SERVER_MAC);
        let mut nic = crate::fake::FakeNic::new(CLIENT_MAC);
        let n = http::write_get(c.request_buf(0), "t", "/", true).unwrap();
        let mut rec = Record::default();
        assert!(c.get(0, n, true, 1_000_000, &mut nic.tx, &mut rec));
        let syn = crate::wire::TcpPacket::new_checked(&nic.tx.outbox[0][34..]).unwrap();
        assert!(syn.syn());
        assert_eq!(syn.src_port(), 40_000 + start % 16, "start {start}");
    }
}

mod offload;

#[test]
fn abort_all_leaves_the_server_holding_nothing() {
    let mut p = Pair::new(2, 80);
    p.get(0, "/big.bin", true);
    p.get(1, "/big.bin", false);
    // A few rounds: both connections established, the bodies under way.
    for _ in 0..4 {
        p.step();
    }
    assert_eq!(p.fetcher.open_connections(), 2);
    assert_eq!(p.server.active(), 2);
    assert!(p.rec.ends.is_empty(), "nothing finished yet");
    assert_eq!(p.fetcher.abort_all(&mut p.wire.b.tx), 2);
    assert_eq!(p.fetcher.open_connections(), 0);
    assert_eq!(p.fetcher.free_ports(), 16);
    assert!(!p.fetcher.busy(0) && !p.fetcher.busy(1));
    p.run();
    assert_eq!(p.server.active(), 0, "the RSTs freed the server's TCBs");
    assert!(p.rec.ends.is_empty(), "the run was over: no ends reported");
    // The slots take new fetches, answered at once.
    p.get(0, "/index.html", true);
    p.run();
    assert_eq!(
        p.rec.ends.last(),
        Some(&(
            0,
            End::Done {
                status: 200,
                body: 15
            }
        ))
    );
    assert_eq!(p.fetcher.counters.retransmits, 0);
}

const SERVER6: Ipv6Address = Ipv6Address([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
const CLIENT6: Ipv6Address = Ipv6Address([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]);

impl Pair {
    /// The fetcher and the server over IPv6, each holding its configured address (DAD not
    /// run yet).
    fn new6(slots: usize) -> Pair {
        Pair::new6_with(slots, |_, _| {})
    }

    /// [`Pair::new6`] with `more` done to the fetcher's and the server's configuration.
    fn new6_with(
        slots: usize,
        more: impl FnOnce(&mut crate::iface::FetchV6, &mut ServerConfig),
    ) -> Pair {
        use crate::iface::FetchV6;
        let mut cfg = FetchConfig::new(CLIENT_MAC, Ipv4Address([0; 4]), 0, SERVER_IP, 80, slots);
        cfg.ports = (40_000, 40_015);
        cfg.link.v6 = Some(FetchV6 {
            ip: CLIENT6,
            prefix_len: 64,
            gateway: None,
            server: SERVER6,
        });
        let mut scfg = ServerConfig::new(SERVER_IP, 24, [7; 16]);
        scfg.ipv6 = true;
        scfg.ipv6_static = Some((SERVER6, 64));
        if let Some(v6) = cfg.link.v6.as_mut() {
            more(v6, &mut scfg);
        }
        Pair::of(Fetcher::new(cfg), scfg, slots)
    }
}

/// The fetcher over IPv6 against the server's IPv6: both hold a configured address
/// behind DAD; the fetcher resolves the server by neighbour solicitation, then fetches
/// over a connection each and kept alive, bodies byte for byte, and offers IPv6's MSS.
#[test]
fn over_ipv6_the_server_is_solicited_then_fetched_from() {
    let mut p = Pair::new6(2);
    assert!(
        !p.fetcher.ready(),
        "nothing sent from our address before DAD"
    );
    p.run_for(4_000_000_000);
    assert!(
        p.fetcher.ready(),
        "the server's MAC learned from its advertisement"
    );
    assert!(
        p.fetcher.counters.arp_requests >= 1,
        "a solicitation was sent"
    );
    for (slot, close) in [(0, true), (1, false), (1, false)] {
        for path in ["/index.html", "/big.bin"] {
            p.get(slot, path, close);
            p.run();
            let want = p.site.bytes(path).unwrap();
            assert_eq!(
                p.rec.ends.last().unwrap(),
                &(
                    slot,
                    End::Done {
                        status: 200,
                        body: want.len() as u64
                    }
                )
            );
            assert!(p.rec.bodies[slot as usize] == want, "{path} differs");
        }
    }
    assert_eq!(p.fetcher.counters.connections, 3, "two closed, one kept");
    assert_eq!(p.fetcher.counters.retransmits, 0);
    assert_eq!(p.server.stats().tcp_accepted, 3);
}

/// Each in its own /64 on one link, so each answers the other only through a router:
/// the fetcher's `--gw6` is the server itself (its next hop, resolved by solicitation),
/// the server's `--gw6` any router. Without the server's router its SYN-ACKs never go
/// (counted as no route) and the fetch does not complete; with it the fetch does, the
/// fetcher taking the SYN-ACK from beyond its prefix through its own router (without it
/// the fetcher would drop it).
#[test]
fn over_ipv6_each_side_beyond_the_others_prefix_answers_only_with_a_router() {
    let server: Ipv6Address = "2001:db8:2::2".parse().unwrap();
    for server_router in [None, Some("fe80::1".parse().unwrap())] {
        let mut p = Pair::new6_with(1, |v6, s| {
            v6.server = server;
            v6.gateway = Some(server);
            s.ipv6_static = Some((server, 64));
            s.ipv6_gateway = server_router;
        });
        p.run_for(4_000_000_000);
        assert!(p.fetcher.ready(), "the next hop (the server) resolved");
        p.get(0, "/index.html", true);
        p.run_for(3_000_000_000);
        let done = p
            .rec
            .ends
            .iter()
            .any(|e| matches!(e, (0, End::Done { status: 200, .. })));
        match server_router {
            None => {
                assert!(!done);
                assert!(p.server.stats().drop_no_route >= 1);
                assert_eq!(p.server.stats().tcp_accepted, 0);
            }
            Some(_) => {
                assert!(done, "{:?}", p.rec.ends);
                assert_eq!(p.server.stats().drop_no_route, 0);
            }
        }
    }
}

#[test]
fn over_ipv6_the_next_hop_is_the_server_on_the_link_else_a_router() {
    use crate::iface::FetchV6;
    let a = |s: &str| -> Ipv6Address { s.parse().unwrap() };
    let mut v = FetchV6 {
        ip: a("2001:db8::3"),
        prefix_len: 64,
        gateway: None,
        server: a("2001:db8::2"),
    };
    assert_eq!(
        v.next_hop(Some(a("fe80::1"))),
        Some(v.server),
        "in our prefix"
    );
    v.server = a("fe80::9");
    assert_eq!(v.next_hop(None), Some(v.server), "link-local: on the link");
    v.server = a("2001:db8:2::2");
    assert_eq!(v.next_hop(None), None, "off the link, no router yet");
    assert_eq!(
        v.next_hop(Some(a("fe80::1"))),
        Some(a("fe80::1")),
        "advertised"
    );
    v.gateway = Some(a("2001:db8::1"));
    assert_eq!(v.next_hop(Some(a("fe80::1"))), v.gateway, "--gw6 first");
}

/// A Packet Too Big from a router on the way, quoting the fetcher's request in flight,
/// is taken by its connection (counted; the request fits the narrow link, so nothing is
/// sent again); one quoting a sequence number not in flight, another peer, or an MTU
/// below 1280 is ignored; the fetch then completes.
#[test]
fn over_ipv6_a_packet_too_big_for_the_request_in_flight_is_taken_and_forgeries_not() {
    use crate::iface::ipv6::tests::frame;
    use crate::wire::Icmpv6Repr;
    let mut p = Pair::new6(1);
    p.run_for(4_000_000_000);
    p.get(0, "/big.bin", false);
    // The handshake carried; the request caught before it goes (longer than any SYN).
    let mut request = None;
    for _ in 0..20 {
        request = (0..8)
            .filter_map(|i| p.wire.b.tx.waiting(i))
            .find(|f| f.len() > 14 + 40 + 60);
        if request.is_some() {
            break;
        }
        p.wire.carry();
        p.now += 10_000;
        p.server.poll(&mut p.wire.a, &At(p.now), &mut NoLog);
        p.wire.carry();
        p.fetcher.poll(&mut p.wire.b, p.now, &mut p.rec);
    }
    let request = request.expect("the request, waiting on the wire");
    let router: Ipv6Address = "2001:db8::1".parse().unwrap();
    let ptb = |mtu: u32, quoted: &[u8]| {
        let m = Icmpv6Repr::PacketTooBig {
            mtu,
            invoking: &quoted[14..],
        };
        frame(CLIENT_MAC, router, CLIENT6, 64, &m, false)
    };
    let mut not_in_flight = request.clone();
    let seq_at = 14 + 40 + 4;
    let seq = u32::from_be_bytes(not_in_flight[seq_at..seq_at + 4].try_into().unwrap());
    not_in_flight[seq_at..seq_at + 4].copy_from_slice(&seq.wrapping_add(1 << 30).to_be_bytes());
    let mut other_peer = request.clone();
    other_peer[14 + 24 + 15] ^= 1;
    let before = p.fetcher.counters.ignored;
    for f in [
        ptb(1280, &request),
        ptb(1280, &not_in_flight),
        ptb(1280, &other_peer),
        ptb(1200, &request),
    ] {
        let (now, tx) = (p.now, &mut p.wire.b.tx);
        p.fetcher.frame(&f, false, now, tx, &mut p.rec);
    }
    assert_eq!(p.fetcher.counters.too_big, 1);
    // Forged: not in flight, another peer (ignored by the fetcher); below 1280 (dropped
    // by the link, counted as ignored too).
    assert_eq!(p.fetcher.counters.ignored, before + 3);
    p.run();
    let want = p.site.bytes("/big.bin").unwrap();
    assert!(p.rec.bodies[0] == want, "the fetch completes byte for byte");
}

/// Over IPv6 an ARP reply "from" the unused IPv4 next hop (0.0.0.0) is not taken: the
/// fetcher stays not ready until DAD passed and the server's advertisement came.
#[test]
fn over_ipv6_an_arp_reply_does_not_make_the_fetcher_ready() {
    use crate::wire::{ArpOperation, ArpPacket, ArpRepr};
    let mut p = Pair::new6(1);
    let mut f = vec![0u8; 14 + 28];
    ethernet::Repr {
        src_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x66]),
        dst_addr: CLIENT_MAC,
        ethertype: EtherType::Arp,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    ArpRepr {
        operation: ArpOperation::Reply,
        source_hardware_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x66]),
        source_protocol_addr: Ipv4Address([0; 4]),
        target_hardware_addr: CLIENT_MAC,
        target_protocol_addr: Ipv4Address([0; 4]),
    }
    .emit(&mut ArpPacket::new_unchecked(&mut f[14..]));
    let (now, tx) = (p.now, &mut p.wire.b.tx);
    p.fetcher.frame(&f, false, now, tx, &mut p.rec);
    assert!(!p.fetcher.ready());
    assert_eq!(p.fetcher.counters.ignored, 1);
}

/// Once resolved, the next hop is looked up again: an advertisement overriding the
/// server's MAC (a NIC swapped, a failover) is followed within 200 ms.
#[test]
fn over_ipv6_a_new_mac_for_the_server_is_followed() {
    use crate::iface::ipv6::tests::frame;
    use crate::wire::Icmpv6Repr;
    let mut p = Pair::new6(1);
    p.run_for(4_000_000_000);
    assert_eq!(p.fetcher.next_hop_mac, Some(SERVER_MAC));
    let moved = EthernetAddress([0x02, 0, 0, 0, 0, 0x22]);
    let na = Icmpv6Repr::NeighborAdvert {
        router: false,
        solicited: false,
        override_: true,
        target: SERVER6,
        target_lladdr: Some(moved),
    };
    let f = frame(CLIENT_MAC, SERVER6, CLIENT6, 255, &na, false);
    let (now, tx) = (p.now, &mut p.wire.b.tx);
    p.fetcher.frame(&f, false, now, tx, &mut p.rec);
    p.run_for(300_000_000);
    assert_eq!(p.fetcher.next_hop_mac, Some(moved));
}

#[test]
fn a_stream_carries_bytes_sent_in_pieces_and_hands_over_what_comes_unread() {
    let mut p = Pair::new(1, 80);
    let tx = &mut p.wire.b.tx;
    assert!(p.fetcher.open_stream(0, p.now, tx, &mut p.rec));
    p.run();
    assert_eq!(p.rec.events.first().map(|e| e.1), Some("connected"));
    // The request in two pieces, the second after the first was carried.
    for piece in [
        &b"GET /index.html HTTP/1.1\r\nHost: t\r\n"[..],
        b"Connection: close\r\n\r\n",
    ] {
        let tx = &mut p.wire.b.tx;
        assert!(p.fetcher.stream_send(0, piece, p.now, tx));
        p.run();
    }
    // The server's whole answer, head included, then its FIN ends the stream.
    let got = &p.rec.bodies[0];
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"), "{got:?}");
    assert!(got.ends_with(b"\r\n\r\n<h1>hello</h1>\n"));
    assert_eq!(
        p.rec.ends,
        vec![(
            0,
            End::Done {
                status: 0,
                body: got.len() as u64
            }
        )]
    );
    // Our FIN answered theirs: everything freed; nothing more can be sent.
    p.run();
    assert_eq!(p.fetcher.open_connections(), 0);
    let tx = &mut p.wire.b.tx;
    assert!(!p.fetcher.stream_send(0, b"x", p.now, tx));
}

#[test]
fn a_stream_refuses_more_than_its_buffer_and_abort_frees_it() {
    let mut p = Pair::new(1, 80);
    let tx = &mut p.wire.b.tx;
    assert!(p.fetcher.open_stream(0, p.now, tx, &mut p.rec));
    let big = vec![b'a'; REQUEST_MAX + 1];
    assert!(p.fetcher.stream_send(0, b"x", p.now, tx));
    p.fetcher.close_stream(0, p.now, tx);
    assert!(
        !p.fetcher.stream_send(0, b"y", p.now, tx),
        "nothing after our FIN"
    );
    assert!(!p.fetcher.stream_send(0, &big, p.now, tx));
    p.step();
    let tx = &mut p.wire.b.tx;
    let before = p.rec.ends.len();
    p.fetcher.abort(0, tx);
    p.run();
    assert_eq!(p.fetcher.open_connections(), 0);
    assert!(!p.fetcher.busy(0));
    assert_eq!(
        p.rec.ends.len(),
        before,
        "an abandoned stream is not reported"
    );
    assert!(p.fetcher.can_start(0));
}

#[test]
fn retarget_waits_for_a_running_stream_and_resets_what_lingers() {
    let mut p = Pair::new(1, 80);
    let tx = &mut p.wire.b.tx;
    assert!(p.fetcher.open_stream(0, p.now, tx, &mut p.rec));
    let here = (CLIENT_IP, 24, None);
    assert!(
        !p.fetcher.retarget(here, (SERVER_IP, 81), tx),
        "a stream runs"
    );
    p.run();
    let tx = &mut p.wire.b.tx;
    p.fetcher.finish_stream(0, p.now, tx);
    assert_eq!(p.fetcher.open_connections(), 1, "still closing");
    // Same next hop: the MAC is kept; the lingering connection is reset and freed.
    assert!(p.fetcher.retarget(here, (SERVER_IP, 81), tx));
    assert_eq!(p.fetcher.open_connections(), 0);
    assert!(p.fetcher.ready());
    p.run();
    assert_eq!(p.server.active(), 0, "the server heard the reset");
    // Another next hop: learnt again.
    let tx = &mut p.wire.b.tx;
    assert!(p
        .fetcher
        .retarget(here, (Ipv4Address([10, 0, 0, 9]), 80), tx));
    assert!(!p.fetcher.ready());
    // Another router, same address and server: the interface follows.
    assert!(p
        .fetcher
        .retarget((CLIENT_IP, 16, Some(SERVER_IP)), (SERVER_IP, 80), tx));
    assert_eq!(p.fetcher.aim().0, (CLIENT_IP, 16, Some(SERVER_IP)));
}

#[test]
fn a_finished_stream_closes_on_its_own_and_frees_the_slot_at_once() {
    let mut p = Pair::new(1, 80);
    let tx = &mut p.wire.b.tx;
    assert!(p.fetcher.open_stream(0, p.now, tx, &mut p.rec));
    p.run();
    let tx = &mut p.wire.b.tx;
    let req = b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n";
    assert!(p.fetcher.stream_send(0, req, p.now, tx));
    p.run();
    assert!(p.rec.bodies[0].ends_with(b"<h1>hello</h1>\n"));
    let tx = &mut p.wire.b.tx;
    p.fetcher.finish_stream(0, p.now, tx);
    assert!(!p.fetcher.busy(0), "the slot is free at once");
    p.run_for(100_000_000);
    assert_eq!(p.fetcher.open_connections(), 0, "the close completed");
    assert_eq!(p.server.active(), 0);
    assert!(p.rec.ends.is_empty(), "nothing reported after the finish");
    assert_eq!(p.fetcher.counters.resets_sent, 0, "closed, not reset");
}
