//! The bare client against a whole server, frame by frame over two in-memory devices (and
//! through the fault injector): ARP first, then the schedule's requests, every one
//! completed with its body's octets counted.

use std::vec::Vec;

use super::*;
use crate::fake::{FakeNic, FakeQueues, FaultInjector, Faults};
use crate::nic::Clock;
use crate::resource::{block_sums_into, Body, Found, Lookup, Resource};
use crate::server::{Config as ServerConfig, NoLog, Server};
use crate::udp::fetch::Timing;
use crate::udp::load::Schedule;

const SERVER_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
const CLIENT_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 3]);
const SERVER_IP: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT_IP: Ipv4Address = Ipv4Address([10, 0, 0, 3]);

#[derive(Clone, Copy)]
struct Files;

fn file(n: usize) -> Resource<'static> {
    let data: &'static [u8] = Vec::leak((0..n).map(|i| (i % 251) as u8).collect());
    let mut sums = vec![0u8; 2 * Body::blocks_for(n)];
    block_sums_into(data, &mut sums);
    Resource {
        content_type: "application/octet-stream",
        etag: "\"e\"",
        last_modified: 1_700_000_000,
        identity: Body {
            data,
            block_sums: Vec::leak(sums),
        },
        gzip: None,
        br: None,
        zstd: None,
        headers: "",
    }
}

impl Lookup<'static> for Files {
    fn lookup(&self, path: &[u8]) -> Found<'static> {
        match path {
            b"/4k" => Found::Resource(file(4096)),
            b"/big" => Found::Resource(file(100_000)),
            _ => Found::NotFound,
        }
    }
}

struct Manual(u64);
impl Clock for Manual {
    fn now_ns(&self) -> u64 {
        self.0
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000
    }
}

fn client(paths: &[&str], schedule: Schedule, slots: usize, requests: u64) -> BareFetcher {
    BareFetcher::new(BareConfig {
        link: FetchLink {
            mac: CLIENT_MAC,
            ip: CLIENT_IP,
            prefix_len: 24,
            gateway: None,
            server: SERVER_IP,
            port: 8081,
            v6: None,
        },
        host: "10.0.0.2:8081".into(),
        paths: paths.iter().map(|p| String::from(*p)).collect(),
        load: Config {
            schedule,
            slots,
            requests,
            timing: Timing {
                rto_ns: 5_000_000,
                rto_max_ns: 50_000_000,
                tries: 20,
            },
        },
        pad: true,
    })
}

fn server(paper: bool) -> Server<Files> {
    let mut cfg = ServerConfig::new(SERVER_IP, 24, [7; 16]);
    let mut u = crate::udp::Config::new(8081);
    u.paper_mode = paper;
    cfg.udp = Some(u);
    Server::new(cfg, Files, SERVER_MAC)
}

/// Runs client and server against each other until the client finishes (or 20 s of
/// simulated time): `wire(client_out, server_out)` carries the frames.
fn run(
    c: &mut BareFetcher,
    s: &mut Server<Files>,
    mut moved: impl FnMut(&mut FakeNic, &mut FakeNic, u64),
) -> u64 {
    let mut cn = FakeNic::new(CLIENT_MAC);
    let mut sn = FakeNic::new(SERVER_MAC);
    let mut clock = Manual(1_000_000);
    while !c.finished() && clock.0 < 20_000_000_000 {
        c.poll(&mut cn, clock.0);
        moved(&mut cn, &mut sn, clock.0);
        s.poll(&mut sn, &clock, &mut NoLog);
        moved(&mut cn, &mut sn, clock.0);
        clock.0 += 100_000;
    }
    clock.0
}

fn straight(cn: &mut FakeNic, sn: &mut FakeNic, _: u64) {
    sn.rx.inbox.extend(cn.tx.outbox.drain(..));
    cn.rx.inbox.extend(sn.tx.outbox.drain(..));
}

#[test]
fn arp_then_every_request_completes() {
    let mut c = client(&["/4k", "/big"], Schedule::Closed, 4, 40);
    let mut s = server(false);
    run(&mut c, &mut s, straight);
    let l = c.load().expect("ARP was answered");
    let k = l.counters;
    assert_eq!((k.started, k.completed), (40, 40), "{k:?}");
    assert_eq!(k.bytes, 20 * 4096 + 20 * 100_000);
    assert_eq!(k.failed_timeout + k.failed_refused + k.failed_status, 0);
    assert_eq!(k.max_parallel, 4);
    assert_eq!(c.frames.arp_requests, 1);
    assert_eq!(s.stats().arp_replies, 1);
    // The first request was unproven (bounded); the rest carried the token.
    assert!(k.bounded >= 1, "{k:?}");
    assert_eq!(s.stats().udp_token_bad, 0);
}

#[test]
fn the_papers_schedule_over_loss_and_duplication() {
    let mut c = client(
        &["/big"],
        Schedule::Paper {
            frequency: 40,
            maxreq: 2,
        },
        64,
        30,
    );
    let mut s = server(true);
    let f = Faults {
        drop_pct: 10,
        dup_pct: 5,
        reorder_pct: 5,
        corrupt_pct: 1,
        seed: 9,
    };
    let mut wire = FaultInjector::new(
        SERVER_MAC,
        FakeQueues::default(),
        FakeQueues::default(),
        f,
        f,
    );
    run(&mut c, &mut s, |cn, sn, _| {
        // Client → server through the injector's receive side, server → client through
        // its transmit side.
        wire.inner_rx().inbox.extend(cn.tx.outbox.drain(..));
        let (rx, tx) = wire.split();
        let mut got = [RxFrame { buf: 0, len: 0 }; 64];
        let n = rx.burst(&mut got);
        for g in &got[..n] {
            sn.rx.inbox.push_back(rx.bytes(g).to_vec());
            rx.recycle(*g);
        }
        for f in sn.tx.outbox.drain(..) {
            if let Some(slot) = tx.slot() {
                slot[..f.len()].copy_from_slice(&f);
                let _ = tx.post(f.len(), &[]);
            }
        }
        tx.flush();
        cn.rx.inbox.extend(wire.inner_tx().outbox.drain(..));
    });
    let k = c.load().unwrap().counters;
    assert_eq!(k.completed, 30, "{k:?}");
    assert_eq!(k.bytes, 30 * 100_000);
    assert!(k.rerequested > 0 && k.duplicates > 0, "{k:?}");
    assert!(
        c.frames.ignored > 0,
        "corrupted frames are dropped by their checksums"
    );
}

#[test]
fn ports_are_fresh_and_released() {
    let mut c = client(&["/4k"], Schedule::Closed, 2, 10);
    let mut s = server(true);
    let mut seen = Vec::new();
    run(&mut c, &mut s, |cn, sn, _| {
        for f in &cn.tx.outbox {
            if f.len() > 40 && f[23] == 17 {
                seen.push(u16::from_be_bytes([f[34], f[35]]));
            }
        }
        straight(cn, sn, 0)
    });
    seen.dedup();
    assert_eq!(seen.len(), 10, "one port per request: {seen:?}");
    assert!(c.ports.iter().all(|&p| p == 0), "every port released");
}

/// Over IPv6: the client holds its configured address after DAD, solicits the server's
/// MAC, and every request completes from the server's configured address; it sent no ARP.
#[test]
fn over_ipv6_the_server_is_solicited_then_every_request_completes() {
    use crate::iface::FetchV6;
    use crate::wire::Ipv6Address;
    let server6: Ipv6Address = "2001:db8::2".parse().unwrap();
    let mut c = client(&["/4k", "/big"], Schedule::Closed, 4, 40);
    c.cfg.link.v6 = Some(FetchV6 {
        ip: "2001:db8::3".parse().unwrap(),
        prefix_len: 64,
        gateway: None,
        server: server6,
    });
    let mut c = BareFetcher::new(c.cfg);
    let mut cfg = ServerConfig::new(SERVER_IP, 24, [7; 16]);
    cfg.udp = Some(crate::udp::Config::new(8081));
    cfg.ipv6 = true;
    cfg.ipv6_static = Some((server6, 64));
    let mut s = Server::new(cfg, Files, SERVER_MAC);
    run(&mut c, &mut s, straight);
    let l = c.load().expect("the server's advertisement came");
    let k = l.counters;
    assert_eq!((k.started, k.completed), (40, 40), "{k:?}");
    assert_eq!(k.bytes, 20 * 4096 + 20 * 100_000);
    assert_eq!(k.failed_timeout + k.failed_refused + k.failed_status, 0);
    assert!(c.frames.arp_requests >= 1, "a solicitation");
    assert_eq!(s.stats().arp_replies, 0);
    assert!(
        c.started_ns() > 1_000_000_000,
        "after DAD: {}",
        c.started_ns()
    );
}
