//! The UDP protocol through the whole server: request frames in, answer frames out
//! (checksums verified), the client state machine driving downloads, through loss,
//! duplication, reordering and corruption; the bounds.

use super::*;
use crate::udp::fetch::{Counts, Sink, Step, Timing, Transfer};
use crate::udp::wire::{
    self, write_request, Header, Start, State, FLAG_BOUNDED, HEADER_LEN, PAD_TO, TOKEN_LEN, UNIT,
};
use crate::wire::{UdpPacket, UdpRepr};

const UDP_PORT: u16 = 8081;

fn udp_server(cfg_udp: impl FnOnce(&mut crate::udp::Config)) -> Server<TestSite> {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    let mut u = crate::udp::Config::new(UDP_PORT);
    cfg_udp(&mut u);
    cfg.udp = Some(u);
    Server::new(cfg, TestSite::new(), SERVER_MAC)
}

/// A client → server UDP frame from `src`:`sport`.
fn udp_frame(src: Ipv4Address, sport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; L2L3 + 8 + payload.len()];
    write_l2l3(
        &mut f,
        CLIENT_MAC,
        SERVER_MAC,
        src,
        SERVER_IP,
        IpProtocol::Udp,
        8 + payload.len(),
    );
    UdpRepr {
        src_port: sport,
        dst_port: UDP_PORT,
    }
    .emit(
        &mut UdpPacket::new_unchecked(&mut f[L2L3..]),
        src,
        SERVER_IP,
        payload.len(),
        |p| p.copy_from_slice(payload),
    );
    f
}

fn request(path: &str, start: Start, token: Option<&[u8; TOKEN_LEN]>, pad: usize) -> Vec<u8> {
    let mut buf = [0u8; 1500];
    let n = write_request(&mut buf, "10.0.0.2", path, start, token, pad).unwrap();
    buf[..n].to_vec()
}

/// The UDP payload of a server frame to `dst`:`dport`, checksums verified (`None` if a
/// check fails, as a client's stack would drop it).
fn answer_of(frame: &[u8], dst: Ipv4Address, dport: u16) -> Option<Vec<u8>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if !ip.verify_checksum() || ip.dst_addr() != dst || ip.src_addr() != SERVER_IP {
        return None;
    }
    let u = UdpPacket::new_checked(ip.payload()).ok()?;
    assert_ne!(u.checksum(), 0, "the server always computes a checksum");
    if !u.verify_checksum(SERVER_IP, dst) || u.dst_port() != dport || u.src_port() != UDP_PORT {
        return None;
    }
    Some(u.payload().to_vec())
}

fn exchange(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &ManualClock,
    frame: Vec<u8>,
) -> Vec<Vec<u8>> {
    nic.rx.inbox.push_back(frame);
    s.poll(nic, clock, &mut NoLog);
    nic.tx
        .outbox
        .drain(..)
        .map(|f| answer_of(&f, CLIENT_IP, 40000).expect("a good frame"))
        .collect()
}

/// A client's sink: the body, and the response head (used by the IPv6 tests too).
#[derive(Default)]
pub(super) struct Body(pub(super) Vec<u8>, pub(super) Vec<u8>);

impl Sink for Body {
    fn begin(&mut self, total: u64) -> bool {
        self.0 = vec![0; total as usize];
        true
    }
    fn head(&mut self, head: &[u8]) {
        self.1 = head.to_vec();
    }
    fn data(&mut self, off: u64, bytes: &[u8]) {
        self.0[off as usize..off as usize + bytes.len()].copy_from_slice(bytes);
    }
}

#[test]
fn initial_get_answer_frames_match_the_spec() {
    let mut s = udp_server(|u| u.core = 3);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    // Padded initial GET from an unproven source: Get-Ack + head + 2 data packets.
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(
            CLIENT_IP,
            40000,
            &request("/index.html", Start::Initial, None, PAD_TO),
        ),
    );
    assert_eq!(
        got.len(),
        3,
        "index.html is small: Get-Ack, head, one data packet"
    );
    let (ack, token) = Header::parse(&got[0]).unwrap();
    assert_eq!(ack.state, State::GetAck);
    assert_eq!((ack.a, ack.b, ack.core, ack.request_id), (15, 2, 3, 1));
    assert_eq!(token.len(), TOKEN_LEN);
    let (h, head) = Header::parse(&got[1]).unwrap();
    assert_eq!((h.state, h.b), (State::Header, 1));
    assert!(head.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(std::str::from_utf8(head)
        .unwrap()
        .contains("Content-Length: 15\r\n"));
    let (d, data) = Header::parse(&got[2]).unwrap();
    assert_eq!((d.state, d.a, d.b), (State::Last, 15, 2));
    assert_eq!(data, b"<h1>hello</h1>\n");
    let st = s.stats();
    assert_eq!(
        (st.udp_datagrams, st.udp_initial, st.udp_packets),
        (1, 1, 3)
    );
    assert_eq!(st.udp_ids_max, 1);
    assert_eq!(s.active(), 0, "nothing kept: no TCB");
}

#[test]
fn downloads_through_the_client_state_machine() {
    let mut s = udp_server(|_| {});
    let mut nic = FakeNic::new(SERVER_MAC);
    let (body, counts) = download(&mut s, &mut nic, "/big.bin").unwrap();
    assert_eq!(body, big_file());
    assert_eq!((counts.timeouts, counts.rerequested, counts.bad), (0, 0, 0));
    let st = s.stats().clone();
    assert_eq!(st.udp_initial, 1);
    // 1 MiB / 1408 = 745 data packets: 2 after the padded initial GET, then bursts of 8.
    assert_eq!(st.udp_subsequent, (745 - 2_u64).div_ceil(8), "{st:?}");
    assert_eq!(
        st.udp_malformed + st.udp_rate_limited + st.udp_token_bad,
        0,
        "{st:?}"
    );
}

/// A device the test client can put frames into and take the server's frames from.
trait Wire: Nic {
    fn inject(&mut self, f: Vec<u8>);
    fn collect(&mut self) -> Vec<Vec<u8>>;
}

impl Wire for FakeNic {
    fn inject(&mut self, f: Vec<u8>) {
        self.rx.inbox.push_back(f);
    }
    fn collect(&mut self) -> Vec<Vec<u8>> {
        self.tx.outbox.drain(..).collect()
    }
}

impl Wire for FaultInjector<FakeQueues, FakeQueues> {
    fn inject(&mut self, f: Vec<u8>) {
        self.inner_rx().inbox.push_back(f);
    }
    fn collect(&mut self) -> Vec<Vec<u8>> {
        self.inner_tx().outbox.drain(..).collect()
    }
}

/// Downloads `path` with the client state machine over `nic`, the timeout driven by a
/// manual clock (1 ms per server round).
fn download<N: Wire>(
    s: &mut Server<TestSite>,
    nic: &mut N,
    path: &str,
) -> Result<(Vec<u8>, Counts), String> {
    let mut clock = ManualClock(1_000_000);
    let timing = Timing {
        rto_ns: 20_000_000,
        rto_max_ns: 200_000_000,
        tries: 10,
    };
    let mut t = Transfer::new(timing, None);
    let mut sink = Body::default();
    let mut sends = vec![t.begin(clock.0)];
    for _ in 0..200_000 {
        for step in sends.drain(..) {
            match step {
                Step::Send(start) => {
                    let pad = if start == Start::Initial { PAD_TO } else { 0 };
                    let req = request(path, start, t.token(), pad);
                    nic.inject(udp_frame(CLIENT_IP, 40000, &req));
                }
                Step::Done => return Ok((sink.0, t.counts)),
                Step::Failed(f) => return Err(format!("{f:?} after {:?}", t.counts)),
                Step::Wait => {}
            }
        }
        s.poll(nic, &clock, &mut NoLog);
        for frame in nic.collect() {
            if let Some(p) = answer_of(&frame, CLIENT_IP, 40000) {
                sends.push(t.on_packet(&p, clock.0, &mut sink));
            }
        }
        clock.0 += 1_000_000;
        sends.push(t.on_timeout(clock.0));
    }
    Err("did not finish".into())
}

#[test]
fn downloads_through_loss_duplication_reordering_and_corruption() {
    for seed in 1..=4 {
        let mut s = udp_server(|_| {});
        let f = Faults {
            drop_pct: 10,
            dup_pct: 5,
            reorder_pct: 5,
            corrupt_pct: 2,
            seed,
        };
        let mut nic = FaultInjector::new(
            SERVER_MAC,
            FakeQueues::default(),
            FakeQueues::default(),
            f,
            f,
        );
        let (body, counts) =
            download(&mut s, &mut nic, "/big.bin").unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(body, big_file(), "seed {seed}");
        assert!(
            counts.rerequested > 0 && counts.duplicates > 0,
            "{counts:?}"
        );
        let small = download(&mut s, &mut nic, "/index.html").unwrap().0;
        assert_eq!(small, b"<h1>hello</h1>\n");
    }
}

#[test]
fn a_spoofed_initial_get_draws_at_most_three_times_its_size() {
    let mut s = udp_server(|_| {});
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000_000);
    let victim = Ipv4Address([10, 0, 0, 77]);
    for pad in [0, 60, 200, 600, PAD_TO, 1472] {
        for start in [Start::Initial, Start::From(1), Start::From(5)] {
            clock.0 += 100_000_000; // within the unproven rate limit
            let req = request("/big.bin", start, None, pad);
            nic.rx.inbox.push_back(udp_frame(victim, 40000, &req));
            s.poll(&mut nic, &clock, &mut NoLog);
            let sent: usize = nic
                .tx
                .outbox
                .drain(..)
                .map(|f| answer_of(&f, victim, 40000).unwrap().len())
                .sum();
            assert!(
                sent <= 3 * req.len(),
                "pad {pad} {start:?}: {sent} > 3 x {}",
                req.len()
            );
            assert!(sent > 0, "a Get-Ack at least");
        }
    }
    // A forged token proves nothing.
    let req = request("/big.bin", Start::From(5), Some(&[1; 8]), 0);
    nic.rx.inbox.push_back(udp_frame(victim, 40000, &req));
    s.poll(&mut nic, &clock, &mut NoLog);
    let sent: usize = nic
        .tx
        .outbox
        .drain(..)
        .map(|f| answer_of(&f, victim, 40000).unwrap().len())
        .sum();
    assert!(sent <= 3 * req.len());
    assert_eq!(s.stats().udp_token_bad, 1);
    assert!(s.stats().udp_bounded >= 10);
}

#[test]
fn a_token_proves_the_address_and_lifts_the_bound() {
    let mut s = udp_server(|_| {});
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(
            CLIENT_IP,
            40000,
            &request("/big.bin", Start::Initial, None, 0),
        ),
    );
    let (ack, tok) = Header::parse(&got[0]).unwrap();
    assert_eq!(ack.flags & FLAG_BOUNDED, FLAG_BOUNDED);
    assert_eq!(got.len(), 1, "an unpadded request earns the Get-Ack only");
    let token: [u8; 8] = tok.try_into().unwrap();
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(
            CLIENT_IP,
            40000,
            &request("/big.bin", Start::From(2), Some(&token), 0),
        ),
    );
    assert_eq!(got.len(), 8, "n packets, no Get-Ack");
    let (last, _) = Header::parse(&got[7]).unwrap();
    assert_eq!((last.state, last.b), (State::LastNow, 9));
    // The same token from another address is not valid there.
    nic.rx.inbox.push_back(udp_frame(
        Ipv4Address([10, 0, 0, 9]),
        40000,
        &request("/big.bin", Start::From(2), Some(&token), 0),
    ));
    s.poll(&mut nic, &clock, &mut NoLog);
    let to_other: Vec<_> = nic.tx.outbox.drain(..).collect();
    assert_eq!(
        to_other.len(),
        1,
        "only a Get-Ack (with a token of its own)"
    );
    // Expired after two periods.
    let later = ManualClock(1_000_000 + 2 * crate::udp::token::PERIOD_NS);
    let got = exchange(
        &mut s,
        &mut nic,
        &later,
        udp_frame(
            CLIENT_IP,
            40000,
            &request("/big.bin", Start::From(2), Some(&token), 0),
        ),
    );
    assert_eq!(got.len(), 1);
}

#[test]
fn paper_mode_answers_in_full_without_tokens() {
    let mut s = udp_server(|u| u.paper_mode = true);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(
            CLIENT_IP,
            40000,
            &request("/big.bin", Start::Initial, None, 0),
        ),
    );
    assert_eq!(got.len(), 10, "Get-Ack, head, 8 data packets");
    let (ack, tok) = Header::parse(&got[0]).unwrap();
    assert_eq!((ack.flags, tok.len()), (0, 0));
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(
            CLIENT_IP,
            40000,
            &request("/big.bin", Start::From(10), None, 0),
        ),
    );
    assert_eq!(got.len(), 8);
    // No rate limit either: 1000 GETs at once are all answered.
    for _ in 0..1000 {
        nic.rx.inbox.push_back(udp_frame(
            CLIENT_IP,
            40000,
            &request("/index.html", Start::From(1), None, 0),
        ));
    }
    for _ in 0..100 {
        s.poll(&mut nic, &clock, &mut NoLog);
    }
    assert_eq!(nic.tx.outbox.len(), 2000);
    assert_eq!(s.stats().udp_rate_limited, 0);
}

#[test]
fn bad_input_is_counted_and_answered_within_the_bound() {
    let mut s = udp_server(|u| u.paper_mode = true);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let err = |got: &[Vec<u8>]| {
        assert_eq!(got.len(), 1);
        let (h, _) = Header::parse(&got[0]).unwrap();
        assert_eq!(h.state, State::Error);
        (h.a, h.b)
    };
    // No empty line before the tail.
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(
            CLIENT_IP,
            40000,
            b"GET / HTTP/1.1\r\nHost: x\r\n\x99\x99\x99\x99",
        ),
    );
    assert_eq!(err(&got), (1, 0));
    // Start beyond the end: the count comes back.
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(
            CLIENT_IP,
            40000,
            &request("/index.html", Start::From(3), None, 0),
        ),
    );
    assert_eq!(err(&got), (2, 2));
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(
            CLIENT_IP,
            40000,
            &request("/index.html", Start::From(0), None, 0),
        ),
    );
    assert_eq!(err(&got), (2, 2));
    // An unknown file: HTTP's 404 in packet 1.
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(CLIENT_IP, 40000, &request("/nope", Start::Initial, None, 0)),
    );
    assert_eq!(got.len(), 2);
    assert!(Header::parse(&got[1])
        .unwrap()
        .1
        .starts_with(b"HTTP/1.1 404 Not Found"));
    // Too short to be a request: nothing (1 octet cannot pay for 16).
    let got = exchange(&mut s, &mut nic, &clock, udp_frame(CLIENT_IP, 40000, b"G"));
    assert_eq!(got.len(), 1, "paper mode answers even that");
    let st = s.stats().clone();
    assert_eq!((st.udp_malformed, st.udp_bad_start), (2, 2));
    // With the bound: a 1-octet datagram gets nothing.
    let mut s = udp_server(|_| {});
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(CLIENT_IP, 40000, b"GET"),
    );
    assert!(got.is_empty());
    assert_eq!(s.stats().udp_malformed, 1);
    // The server still serves.
    let got = exchange(
        &mut s,
        &mut nic,
        &clock,
        udp_frame(
            CLIENT_IP,
            40000,
            &request("/index.html", Start::Initial, None, PAD_TO),
        ),
    );
    assert_eq!(got.len(), 3);
}

#[test]
fn the_rate_limit_holds_unproven_sources_to_a_trickle() {
    let mut s = udp_server(|_| {});
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(5_000_000_000);
    for _ in 0..200 {
        nic.rx.inbox.push_back(udp_frame(
            CLIENT_IP,
            40000,
            &request("/index.html", Start::Initial, None, 100),
        ));
    }
    for _ in 0..20 {
        s.poll(&mut nic, &clock, &mut NoLog);
    }
    let st = s.stats();
    assert_eq!(st.udp_initial, 16, "the unproven burst");
    assert_eq!(st.udp_rate_limited, 184);
}

#[test]
fn request_ids_come_back_and_a_full_ring_loses_packets_not_ids() {
    let mut s = udp_server(|u| {
        u.ids = 2;
        u.paper_mode = true;
    });
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    nic.tx.room = Some(3);
    nic.rx.inbox.push_back(udp_frame(
        CLIENT_IP,
        40000,
        &request("/big.bin", Start::Initial, None, 0),
    ));
    s.poll(&mut nic, &clock, &mut NoLog);
    assert_eq!(nic.tx.outbox.len(), 3, "the ring took three");
    nic.tx.room = None;
    for _ in 0..10 {
        let got = exchange(
            &mut s,
            &mut nic,
            &clock,
            udp_frame(
                CLIENT_IP,
                40000,
                &request("/index.html", Start::Initial, None, 0),
            ),
        );
        let (h, _) = Header::parse(&got[0]).unwrap();
        assert_eq!(h.request_id, 1, "the id was given back");
    }
    assert_eq!(s.stats().udp_no_id, 0);
    assert_eq!(s.stats().udp_ids_max, 1);
}

#[test]
fn udp_is_off_unless_configured_and_other_ports_are_dropped() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    nic.rx.inbox.push_back(udp_frame(
        CLIENT_IP,
        40000,
        &request("/", Start::Initial, None, 0),
    ));
    s.poll(&mut nic, &clock, &mut NoLog);
    assert!(nic.tx.outbox.is_empty());
    assert_eq!(s.stats().drop_not_for_us, 1);
    assert_eq!(s.stats().udp_datagrams, 0);
    let _ = wire::VERSION;
    let _ = (HEADER_LEN, UNIT);
}
