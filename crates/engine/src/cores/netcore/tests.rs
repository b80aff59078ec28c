//! Network-core tests: the dispatcher on its own (round robin at SYN, later frames follow,
//! strays stay on core 0, capacity, notes and expiry), the send-ring drain (zero-copy
//! bodies), and a whole exchange through core 0 and two HTTP cores' unchanged servers.

use std::cell::Cell;
use std::rc::Rc;
use std::vec::Vec;

use super::*;
use crate::cores::CoreQueue;
use crate::fake::FakeQueues;
use crate::resource::{block_sums_into, Body, Found, Lookup, Resource};
use crate::server::{Config, NoLog, Server};
use crate::tcp::syncookie::SynCookies;
use crate::wire::{
    ethernet, ipv4, tcp as wtcp, ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetFrame,
    IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, TcpPacket,
};

const SERVER_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 2]);
const CLIENT_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
const SERVER_IP: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT_IP: Ipv4Address = Ipv4Address([10, 0, 0, 1]);
const L2L3: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN;

#[derive(Clone)]
struct TestClock(Rc<Cell<u64>>);

impl Clock for TestClock {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000 + self.0.get() / 1_000_000_000
    }
}

fn flags(syn: bool, ack: bool, fin: bool, rst: bool) -> wtcp::Flags {
    wtcp::Flags {
        fin,
        syn,
        rst,
        psh: false,
        ack,
    }
}

fn tcp_frame(sport: u16, seq: u32, ack: Option<u32>, f: wtcp::Flags, payload: &[u8]) -> Vec<u8> {
    tcp_frame_ts((CLIENT_IP, sport), seq, ack, f, payload, None)
}

/// [`tcp_frame`] from `src` (address, port), with the timestamps option `(TSval, TSecr)`
/// if `ts`.
fn tcp_frame_ts(
    (src, sport): (Ipv4Address, u16),
    seq: u32,
    ack: Option<u32>,
    f: wtcp::Flags,
    payload: &[u8],
    ts: Option<(u32, u32)>,
) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: sport,
        dst_port: 80,
        seq_number: seq,
        ack_number: ack,
        flags: f,
        window_len: 65535,
        max_seg_size: f.syn.then_some(1460),
        window_scale: None,
        sack_permitted: false,
        timestamps: ts,
    };
    let hl = repr.header_len();
    let mut buf = vec![0u8; L2L3 + hl + payload.len()];
    let mut eth = EthernetFrame::new_unchecked(&mut buf[..]);
    ethernet::Repr {
        src_addr: CLIENT_MAC,
        dst_addr: SERVER_MAC,
        ethertype: EtherType::Ipv4,
    }
    .emit(&mut eth);
    Ipv4Repr {
        src_addr: src,
        dst_addr: SERVER_IP,
        next_header: IpProtocol::Tcp,
        payload_len: hl + payload.len(),
        hop_limit: 64,
    }
    .emit(&mut Ipv4Packet::new_unchecked(
        &mut eth.payload_mut()[..ipv4::HEADER_LEN],
    ));
    repr.emit_header(&mut buf[L2L3..]);
    buf[L2L3 + hl..].copy_from_slice(payload);
    TcpPacket::new_unchecked(&mut buf[L2L3..]).fill_checksum(src, SERVER_IP);
    buf
}

fn syn(port: u16) -> Vec<u8> {
    tcp_frame(port, 1000, None, flags(true, false, false, false), &[])
}

fn ack(port: u16) -> Vec<u8> {
    tcp_frame(port, 1001, Some(5), flags(false, true, false, false), &[])
}

fn arp_request() -> Vec<u8> {
    let mut buf = vec![0u8; ethernet::HEADER_LEN + crate::wire::arp::BUFFER_LEN];
    let mut eth = EthernetFrame::new_unchecked(&mut buf[..]);
    ethernet::Repr {
        src_addr: CLIENT_MAC,
        dst_addr: EthernetAddress([0xff; 6]),
        ethertype: EtherType::Arp,
    }
    .emit(&mut eth);
    ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: CLIENT_MAC,
        source_protocol_addr: CLIENT_IP,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: SERVER_IP,
    }
    .emit(&mut ArpPacket::new_unchecked(eth.payload_mut()));
    buf
}

fn peer(port: u16) -> Peer {
    Peer::v4(CLIENT_IP.0, port)
}

fn config(tcbs: usize) -> Config {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = tcbs;
    cfg.max_per_ip = Some(tcbs); // every test client has one address
    cfg.syn_backlog = Some(tcbs); // no SYN cookies: core 0 dispatches SYNs by capacity
    cfg
}

type Core0 = NetCoreNic<FakeQueues, FakeQueues, TestClock>;

fn setup(http: usize, tcbs: usize, bsp: Option<usize>) -> (Core0, Vec<RingNic>, TestClock) {
    let clock = TestClock(Rc::new(Cell::new(1_000_000)));
    let mut ends = Vec::new();
    let mut nics = Vec::new();
    for _ in 0..http {
        let (n, h) = links(RingSizes::for_tcbs(tcbs));
        ends.push(n);
        nics.push(RingNic::new(h, SERVER_MAC));
    }
    let core0 = NetCoreNic::new(
        FakeQueues::default(),
        FakeQueues::default(),
        SERVER_MAC,
        clock.clone(),
        NetCoreSetup {
            ends,
            http_tcbs: tcbs,
            bsp_tcbs: bsp,
            addressing: Addressing::new(&config(tcbs), SERVER_MAC),
        },
    );
    (core0, nics, clock)
}

/// Feeds frames to core 0's NIC and runs one dispatch burst; returns the local frames.
fn dispatch(core0: &mut Core0, frames: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    core0.inner_mut().0.inbox.extend(frames);
    let (rx, _) = core0.split();
    let mut out = [RxFrame { buf: 0, len: 0 }; 32];
    let n = rx.burst(&mut out);
    let local: Vec<Vec<u8>> = out[..n].iter().map(|f| rx.bytes(f).to_vec()).collect();
    for f in &out[..n] {
        rx.recycle(*f);
    }
    local
}

/// Frames waiting on an HTTP core's CLIST (taken).
fn clist(nic: &mut RingNic) -> Vec<Vec<u8>> {
    let (rx, _) = nic.split();
    let mut out = [RxFrame { buf: 0, len: 0 }; 64];
    let n = rx.burst(&mut out);
    let v = out[..n].iter().map(|f| rx.bytes(f).to_vec()).collect();
    for f in &out[..n] {
        rx.recycle(*f);
    }
    v
}

#[test]
fn syns_go_round_robin_and_later_frames_follow() {
    let (mut core0, mut http, _) = setup(2, 8, None);
    let local = dispatch(&mut core0, (0..4).map(|i| syn(1000 + i)).collect());
    assert!(local.is_empty(), "SYNs are dispatched, not kept");
    let map = core0.map();
    assert_eq!(map.core_of(peer(1000)), Some(1));
    assert_eq!(map.core_of(peer(1001)), Some(2));
    assert_eq!(map.core_of(peer(1002)), Some(1));
    assert_eq!(map.core_of(peer(1003)), Some(2));
    assert_eq!(clist(&mut http[0]), vec![syn(1000), syn(1002)]);
    assert_eq!(clist(&mut http[1]), vec![syn(1001), syn(1003)]);
    // Later frames of a connection go where its SYN went, byte for byte.
    let local = dispatch(&mut core0, vec![ack(1001), ack(1000), ack(1001)]);
    assert!(local.is_empty());
    assert_eq!(clist(&mut http[0]), vec![ack(1000)]);
    assert_eq!(clist(&mut http[1]), vec![ack(1001), ack(1001)]);
    assert_eq!(core0.dispatch_counters().dispatched, 7);
    assert_eq!(core0.dispatch_counters().conn_map, 4);
}

#[test]
fn strays_and_non_tcp_stay_on_core_0() {
    let (mut core0, mut http, _) = setup(2, 8, None);
    let mut bad_sum = syn(7000);
    let last = bad_sum.len() - 1;
    bad_sum[last] ^= 0xff; // corrupt the MSS option bytes: checksum now wrong
    let other_port = {
        let mut f = syn(7001);
        // Destination port 81: no service; core 0's server answers RST.
        f[L2L3 + 3] = 81;
        TcpPacket::new_unchecked(&mut f[L2L3..]).fill_checksum(CLIENT_IP, SERVER_IP);
        f
    };
    let frames = vec![
        arp_request(),
        ack(6000),
        bad_sum.clone(),
        other_port.clone(),
    ];
    let local = dispatch(&mut core0, frames.clone());
    assert_eq!(local, frames, "all four are core 0's own business");
    assert!(core0.map().is_empty());
    assert!(clist(&mut http[0]).is_empty() && clist(&mut http[1]).is_empty());
}

/// Port 443 is HTTPS (`Config::tls`): its SYNs are dispatched like port 80's, and a
/// cookie returned to it is recognised by the port it came to.
#[test]
fn the_https_port_is_dispatched_as_the_http_port() {
    #[derive(Debug)]
    struct NoSessions;
    impl crate::server::tls::TlsAcceptor for NoSessions {
        fn accept(&self) -> Option<alloc::boxed::Box<dyn crate::server::tls::TlsSession>> {
            None
        }
    }
    static NONE: NoSessions = NoSessions;
    let to = |mut f: Vec<u8>, port: u16| {
        f[L2L3 + 2..L2L3 + 4].copy_from_slice(&port.to_be_bytes());
        TcpPacket::new_unchecked(&mut f[L2L3..]).fill_checksum(CLIENT_IP, SERVER_IP);
        f
    };
    let clock = TestClock(Rc::new(Cell::new(1_000_000)));
    let mut cfg = config(8);
    cfg.tls = Some(crate::server::tls::TlsListen {
        port: 443,
        acceptor: &NONE,
    });
    let (mut ends, mut nics) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        let (n, h) = links(RingSizes::for_tcbs(8));
        ends.push(n);
        nics.push(RingNic::new(h, SERVER_MAC));
    }
    let mut http = nics;
    let mut core0 = NetCoreNic::new(
        FakeQueues::default(),
        FakeQueues::default(),
        SERVER_MAC,
        clock.clone(),
        NetCoreSetup {
            ends,
            http_tcbs: 8,
            bsp_tcbs: None,
            addressing: Addressing::new(&cfg, SERVER_MAC),
        },
    );
    let local = dispatch(
        &mut core0,
        vec![to(syn(1000), 443), to(syn(1001), 443), to(syn(1002), 444)],
    );
    assert_eq!(
        local,
        vec![to(syn(1002), 444)],
        "444 is nobody's: core 0's RST"
    );
    assert_eq!(core0.map().core_of(peer(1000)), Some(1));
    assert_eq!(core0.map().core_of(peer(1001)), Some(2));
    assert_eq!(clist(&mut http[0]), vec![to(syn(1000), 443)]);
    assert_eq!(clist(&mut http[1]), vec![to(syn(1001), 443)]);
    // A SYN cookie of port 443 opens a connection; the same numbers to port 80 do not.
    let cookies = SynCookies::new([0x42; 16]);
    let now = clock.0.get();
    let iss = cookies.make(
        ((mapped(SERVER_IP.0), 443), (mapped(CLIENT_IP.0), 2000)),
        1000,
        &wtcp::Options::default(),
        now,
    );
    let acked = |port| {
        to(
            tcp_frame(
                2000,
                1001,
                Some(iss.wrapping_add(1)),
                flags(false, true, false, false),
                &[],
            ),
            port,
        )
    };
    let local = dispatch(&mut core0, vec![acked(80)]);
    assert_eq!(local.len(), 1, "no cookie of port 80: core 0 answers");
    let local = dispatch(&mut core0, vec![acked(443)]);
    assert!(local.is_empty(), "port 443's cookie: dispatched");
    assert!(core0.map().core_of(peer(2000)).is_some());
}

#[test]
fn a_syn_no_core_has_room_for_is_core_0s_to_answer_with_a_cookie() {
    // Hardening: half-open connections of a SYN flood (or silent clients) fill every HTTP
    // core. A new SYN is not dropped (that locked every new client out until the half-open
    // ones expired): it stays on core 0, whose server answers with a SYN cookie and keeps
    // no mapping.
    let (mut core0, mut http, _) = setup(2, 1, None);
    let local = dispatch(&mut core0, vec![syn(1), syn(2), syn(3)]);
    assert_eq!(local, vec![syn(3)]);
    let d = core0.dispatch_counters();
    assert_eq!((d.dispatch_cookie_syns, d.dispatch_no_core), (1, 0));
    assert_eq!(core0.map().len(), 2);
    assert!(core0.map().core_of(peer(3)).is_none());
    assert_eq!(clist(&mut http[0]).len() + clist(&mut http[1]).len(), 2);
}

#[test]
fn a_returned_cookie_goes_to_a_full_core_which_makes_room() {
    // Every core is full; the ACK that returns a genuine cookie is dispatched anyway (past
    // the core's share of the map), round robin: that core's server evicts a connection
    // without a response in flight, or refuses (its close note then frees the entry).
    let (mut core0, mut http, clock) = setup(2, 1, None);
    dispatch(&mut core0, vec![syn(1), syn(2)]);
    let cookies = SynCookies::new([0x42; 16]);
    let ends = ((mapped(SERVER_IP.0), 80), (mapped(CLIENT_IP.0), 3001));
    let cookie = cookies.make(
        ends,
        999,
        &crate::wire::tcp::Options::default(),
        clock.now_ns(),
    );
    let ack = tcp_frame(
        3001,
        1000,
        Some(cookie.wrapping_add(1)),
        flags(false, true, false, false),
        &[],
    );
    let local = dispatch(&mut core0, vec![ack.clone()]);
    assert!(local.is_empty());
    assert_eq!(core0.map().len(), 3);
    let on = core0.map().core_of(peer(3001)).expect("mapped");
    assert_eq!(clist(&mut http[on - 1]).last(), Some(&ack));
    assert_eq!(core0.dispatch_counters().dispatch_no_core, 0);
}

#[test]
fn bsp_http_takes_its_turn() {
    let (mut core0, mut http, _) = setup(2, 8, Some(8));
    let local = dispatch(&mut core0, vec![syn(1), syn(2), syn(3), syn(4)]);
    assert_eq!(
        local,
        vec![syn(1), syn(4)],
        "core 0 is the first and fourth choice"
    );
    assert_eq!(core0.map().core_of(peer(2)), Some(1));
    assert_eq!(core0.map().core_of(peer(3)), Some(2));
    assert_eq!(clist(&mut http[0]), vec![syn(2)]);
    // A later frame of core 0's own connection stays local.
    assert_eq!(dispatch(&mut core0, vec![ack(1)]), vec![ack(1)]);
}

#[test]
fn close_note_forgets_only_when_every_frame_was_seen() {
    let (mut core0, mut http, _) = setup(1, 8, None);
    dispatch(&mut core0, vec![syn(5000), ack(5000)]); // frames 1 and 2 of core 1
                                                      // The core freed the connection after its first frame: a later frame is in flight
                                                      // (think: a new SYN from a reused port), so the mapping must stay.
    http[0].connections_closed(&[(peer(5000), 1)]);
    dispatch(&mut core0, vec![]);
    assert_eq!(core0.map().core_of(peer(5000)), Some(1));
    http[0].connections_closed(&[(peer(5000), 2)]);
    dispatch(&mut core0, vec![]);
    assert_eq!(core0.map().core_of(peer(5000)), None);
    // A note from a core that does not own the peer changes nothing.
    dispatch(&mut core0, vec![syn(5001)]);
    let (n2, h2) = links(RingSizes::for_tcbs(8));
    drop(n2);
    let mut other = RingNic::new(h2, SERVER_MAC);
    other.connections_closed(&[(peer(5001), 99)]);
    dispatch(&mut core0, vec![]);
    assert_eq!(core0.map().core_of(peer(5001)), Some(1));
}

#[test]
fn silent_mappings_expire() {
    let (mut core0, _http, clock) = setup(1, 8, None);
    dispatch(&mut core0, vec![syn(9)]);
    assert_eq!(core0.map().len(), 1);
    clock.0.set(clock.0.get() + 30_000_000_000);
    dispatch(&mut core0, vec![]);
    assert_eq!(core0.map().len(), 1, "not yet: a TCB may live this long");
    clock.0.set(clock.0.get() + 40_000_000_000);
    dispatch(&mut core0, vec![]);
    assert_eq!(core0.map().len(), 0);
    assert_eq!(core0.dispatch_counters().conn_map_expired, 1);
}

/// Records what is posted, keeping the body slice itself.
#[derive(Default)]
struct RecordTx {
    slot: Vec<u8>,
    sent: Vec<(Vec<u8>, &'static [u8])>,
    flushes: u32,
}

impl TxRing for RecordTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        self.slot.resize(TX_HEAD_ROOM, 0);
        Some(&mut self.slot[..])
    }
    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        self.sent.push((self.slot[..head_len].to_vec(), body));
        Ok(())
    }
    fn flush(&mut self) {
        self.flushes += 1;
    }
}

static BODY: [u8; 1000] = [7; 1000];

#[test]
fn drain_posts_the_same_body_slice() {
    let clock = TestClock(Rc::new(Cell::new(1)));
    let (n, h) = links(RingSizes::for_tcbs(8));
    let mut http = RingNic::new(h, SERVER_MAC);
    let mut core0 = NetCoreNic::new(
        FakeQueues::default(),
        RecordTx::default(),
        SERVER_MAC,
        clock,
        NetCoreSetup {
            ends: vec![n],
            http_tcbs: 8,
            bsp_tcbs: None,
            addressing: Addressing::new(&config(8), SERVER_MAC),
        },
    );
    let (_, tx) = http.split();
    for i in 0..3u8 {
        let s = tx.slot().unwrap();
        s[..4].copy_from_slice(&[i, 1, 2, 3]);
        tx.post(4, &BODY[i as usize * 100..]).unwrap();
    }
    core0.split().1.flush();
    let rec = core0.inner().1;
    assert_eq!(rec.flushes, 1, "one doorbell for the whole drain");
    assert_eq!(rec.sent.len(), 3);
    for (i, (head, body)) in rec.sent.iter().enumerate() {
        assert_eq!(head, &[i as u8, 1, 2, 3]);
        assert_eq!(body.as_ptr(), BODY[i * 100..].as_ptr(), "body not copied");
        assert_eq!(body.len(), 1000 - i * 100);
    }
    assert_eq!(core0.dispatch_counters().drained, 3);
    assert_eq!(http.counters().tx_ring_high, 3);
}

// ------------------------------------------------------------------ whole exchange

struct OnePage(Resource<'static>);

impl Lookup<'static> for OnePage {
    fn lookup(&self, path: &[u8]) -> Found<'static> {
        if path == b"/" || path == b"/index.html" {
            Found::Resource(self.0)
        } else {
            Found::NotFound
        }
    }
}

fn site() -> OnePage {
    let data: &'static [u8] = Vec::leak((0..3000u32).map(|i| (i * 7) as u8).collect());
    let mut sums = vec![0u8; 2 * Body::blocks_for(data.len())];
    block_sums_into(data, &mut sums);
    OnePage(Resource {
        content_type: "text/html",
        etag: "\"x\"",
        last_modified: 1_600_000_000,
        identity: Body {
            data,
            block_sums: Vec::leak(sums),
        },
        gzip: None,
        br: None,
        zstd: None,
        headers: "",
    })
}

struct Seg {
    seq: u32,
    ack: u32,
    syn: bool,
    fin: bool,
    rst: bool,
    payload: Vec<u8>,
}

fn parse(frame: &[u8]) -> Option<Seg> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    let t = TcpPacket::new_checked(ip.payload()).ok()?;
    assert!(
        t.verify_checksum(SERVER_IP, CLIENT_IP),
        "bad checksum from server"
    );
    Some(Seg {
        seq: t.seq_number(),
        ack: t.ack_number(),
        syn: t.syn(),
        fin: t.fin(),
        rst: t.rst(),
        payload: t.payload().to_vec(),
    })
}

/// Core 0 plus two HTTP cores, each an unchanged `Server`; one round polls them all.
struct Machine {
    clock: TestClock,
    core0: (Server<OnePage>, Core0),
    http: Vec<(Server<OnePage>, RingNic)>,
}

impl Machine {
    fn new() -> Machine {
        let (core0, nics, clock) = setup(2, 8, None);
        Machine {
            core0: (Server::new(config(1), site(), SERVER_MAC), core0),
            http: nics
                .into_iter()
                .map(|n| (Server::new(config(8), site(), SERVER_MAC), n))
                .collect(),
            clock,
        }
    }

    /// Sends `frames`, runs core 0, every HTTP core, core 0 again; returns what went out.
    fn round(&mut self, frames: Vec<Vec<u8>>) -> Vec<Seg> {
        self.clock.0.set(self.clock.0.get() + 1_000_000);
        self.core0.1.inner_mut().0.inbox.extend(frames);
        let c = self.clock.clone();
        // As the per-core loop (`cores::run`) does: each poll, then its closed connections.
        let (s0, n0) = &mut self.core0;
        s0.poll(n0, &c, &mut NoLog);
        n0.connections_closed(s0.closed());
        for (s, n) in &mut self.http {
            s.poll(n, &c, &mut NoLog);
            n.connections_closed(s.closed());
        }
        let (s0, n0) = &mut self.core0;
        s0.poll(n0, &c, &mut NoLog);
        n0.connections_closed(s0.closed());
        let out = core::mem::take(&mut self.core0.1.inner_mut().1.outbox);
        out.iter().filter_map(|f| parse(f)).collect()
    }
}

#[test]
fn a_request_through_core_0_and_an_http_core() {
    let mut m = Machine::new();
    let port = 4242;
    let out = m.round(vec![syn(port)]);
    assert_eq!(out.len(), 1);
    assert!(
        out[0].syn && out[0].ack == 1001,
        "SYN-ACK from the HTTP core"
    );
    let iss = out[0].seq;
    let owner = m.core0.1.map().core_of(peer(port)).unwrap();
    let get = b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let out = m.round(vec![
        tcp_frame(
            port,
            1001,
            Some(iss + 1),
            flags(false, true, false, false),
            &[],
        ),
        tcp_frame(
            port,
            1001,
            Some(iss + 1),
            flags(false, true, false, false),
            get,
        ),
    ]);
    let mut body = Vec::new();
    let mut fin_seq = None;
    for s in &out {
        body.extend_from_slice(&s.payload);
        if s.fin {
            fin_seq = Some(s.seq + s.payload.len() as u32);
        }
    }
    let text = String::from_utf8_lossy(&body);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    let (_, got) = body.split_at(body.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4);
    assert_eq!(got, site().0.identity.data, "the body, byte for byte");
    let fin_seq = fin_seq.expect("FIN rides the last segment");
    // The client acknowledges everything and closes: the TCB is freed on its core and
    // core 0 forgets the connection.
    let after = 1001 + get.len() as u32;
    let out = m.round(vec![tcp_frame(
        port,
        after,
        Some(fin_seq + 1),
        flags(false, true, true, false),
        &[],
    )]);
    assert!(out.iter().any(|s| !s.syn && !s.rst && s.ack == after + 1));
    assert_eq!(m.http[owner - 1].0.active(), 0, "no TCB left");
    m.round(vec![]);
    assert!(
        m.core0.1.map().is_empty(),
        "mapping cleared by the close note"
    );
    // A late copy of the FIN now reaches core 0's server, which answers RST.
    let out = m.round(vec![tcp_frame(
        port,
        after,
        Some(fin_seq + 1),
        flags(false, true, true, false),
        &[],
    )]);
    assert!(out.len() == 1 && out[0].rst && out[0].seq == fin_seq + 1);
    assert_eq!(m.http[owner - 1].0.stats().http_requests, 1);
    assert_eq!(
        m.core0.0.stats().tcp_accepted,
        0,
        "core 0 opened nothing itself"
    );
    assert_eq!(m.http[owner - 1].0.stay().count, 1);
}

#[test]
fn a_late_segment_that_crosses_the_close_note_does_not_keep_the_mapping() {
    let mut m = Machine::new();
    let port = 4343;
    let iss = m.round(vec![syn(port)])[0].seq;
    let owner = m.core0.1.map().core_of(peer(port)).unwrap();
    let get = b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let out = m.round(vec![tcp_frame(
        port,
        1001,
        Some(iss + 1),
        flags(false, true, false, false),
        get,
    )]);
    let last = out.iter().find(|s| s.fin).expect("FIN on the last segment");
    let fin_seq = last.seq + last.payload.len() as u32;
    let after = 1001 + get.len() as u32;
    let fin = tcp_frame(
        port,
        after,
        Some(fin_seq + 1),
        flags(false, true, true, false),
        &[],
    );
    // The client's FIN and a retransmitted copy reach the HTTP core in one burst: the
    // first frees the TCB, the copy finds no connection there and gets a RST.
    let out = m.round(vec![fin.clone(), fin]);
    assert!(out.iter().any(|s| s.rst), "a RST for the copy");
    assert_eq!(m.http[owner - 1].0.active(), 0);
    m.round(vec![]);
    assert!(
        m.core0.1.map().is_empty(),
        "the RST'd copy told core 0 too; the mapping must not wait for expiry"
    );
}

#[test]
fn many_connections_spread_over_both_cores() {
    let mut m = Machine::new();
    let out = m.round((0..6).map(|i| syn(3000 + i)).collect());
    assert_eq!(out.iter().filter(|s| s.syn).count(), 6);
    assert_eq!(m.http[0].0.active(), 3);
    assert_eq!(m.http[1].0.active(), 3);
}

// ------------------------------------------------------------------ the stats JSON

/// The stats JSON through an ordinary `Server`: each response holds one of the server's
/// four dynamic buffers until the client acknowledges it (retransmissions re-read it);
/// a fifth concurrent request gets 503; an acknowledged response frees its buffer.
#[test]
fn stats_json_buffers_are_held_until_acknowledged() {
    use crate::cores::board::{Board, Role};
    use crate::fake::FakeNic;

    let board: &'static Board = Box::leak(Box::new(Board::new("single", &[Role::Single])));
    let mut server = Server::new(config(8), site(), SERVER_MAC);
    server.serve_stats(board, 0);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = TestClock(Rc::new(Cell::new(1_000_000)));
    let get = b"GET /.well-known/bareweb/stats HTTP/1.1\r\nHost: t\r\n\r\n";
    let ack_flags = flags(false, true, false, false);
    let mut step = |frames: Vec<Vec<u8>>| -> Vec<Seg> {
        clock.0.set(clock.0.get() + 1_000_000);
        nic.rx.inbox.extend(frames);
        server.poll(&mut nic, &clock, &mut NoLog);
        let out = core::mem::take(&mut nic.tx.outbox);
        out.iter().filter_map(|f| parse(f)).collect()
    };
    // Opens a connection, asks for the JSON, acknowledges nothing of the answer.
    let ask = |step: &mut dyn FnMut(Vec<Vec<u8>>) -> Vec<Seg>, port: u16| -> (u32, Vec<u8>) {
        let out = step(vec![syn(port)]);
        let iss = out[0].seq;
        let out = step(vec![
            tcp_frame(port, 1001, Some(iss + 1), ack_flags, &[]),
            tcp_frame(port, 1001, Some(iss + 1), ack_flags, get),
        ]);
        let body: Vec<u8> = out.iter().flat_map(|s| s.payload.clone()).collect();
        (iss, body)
    };
    let mut held = Vec::new();
    for i in 0..4u16 {
        let (iss, resp) = ask(&mut step, 6000 + i);
        let text = String::from_utf8_lossy(&resp).into_owned();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        let (head, json) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("application/json"));
        assert!(head.contains(&format!("Content-Length: {}", json.len())));
        assert!(json.starts_with("{\"mode\":\"single\",\"cores\":[{\"core\":0,"));
        assert_eq!(json.matches('{').count(), json.matches('}').count());
        held.push((6000 + i, iss, resp.len() as u32));
    }
    let (_, resp) = ask(&mut step, 6004);
    assert!(
        resp.starts_with(b"HTTP/1.1 503 Service Unavailable\r\n"),
        "{}",
        String::from_utf8_lossy(&resp)
    );
    // The client acknowledges the first JSON response: its buffer is free again.
    let (port, iss, len) = held[0];
    step(vec![tcp_frame(
        port,
        1001 + get.len() as u32,
        Some(iss + 1 + len),
        ack_flags,
        &[],
    )]);
    let (_, resp) = ask(&mut step, 6005);
    assert!(resp.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert_eq!(server.stats().http_5xx, 1);
}

// ------------------------------------------------------------------ sleeping cores

fn counting_doze() -> (Doze, std::sync::Arc<core::sync::atomic::AtomicUsize>) {
    use core::sync::atomic::{AtomicUsize, Ordering};
    let rung = std::sync::Arc::new(AtomicUsize::new(0));
    let r = rung.clone();
    let d = Doze::new(std::boxed::Box::new(move || {
        r.fetch_add(1, Ordering::Relaxed);
    }));
    (d, rung)
}

/// Core 0 wakes only the sleeping HTTP core it forwarded to, once per burst; an HTTP core
/// wakes a sleeping core 0 at the flush after it put frames on its DLIST, not before.
#[test]
fn forwarding_and_sending_wake_the_sleeping_core() {
    use core::sync::atomic::Ordering;
    let clock = TestClock(Rc::new(Cell::new(1_000_000)));
    let (net, net_rung) = counting_doze();
    let mut ends = Vec::new();
    let mut nics = Vec::new();
    let mut rungs = Vec::new();
    for _ in 0..2 {
        let (d, rung) = counting_doze();
        let (n, h) = links_dozing(RingSizes::for_tcbs(8), &net, d);
        ends.push(n);
        nics.push(RingNic::new(h, SERVER_MAC));
        rungs.push(rung);
    }
    let mut core0 = NetCoreNic::new(
        FakeQueues::default(),
        FakeQueues::default(),
        SERVER_MAC,
        clock,
        NetCoreSetup {
            ends,
            http_tcbs: 8,
            bsp_tcbs: None,
            addressing: Addressing::new(&config(8), SERVER_MAC),
        },
    );
    // Both HTTP cores sleep; two SYNs go to core 1 and one to core 2, in one burst.
    for n in &mut nics {
        n.doze().announce();
        assert!(!n.input_pending());
    }
    dispatch(&mut core0, vec![syn(1000), syn(1001), syn(1002)]);
    assert_eq!(rungs[0].load(Ordering::Relaxed), 1, "one ring per burst");
    assert_eq!(rungs[1].load(Ordering::Relaxed), 1);
    assert!(nics[0].input_pending() && nics[1].input_pending());
    // Awake cores are not rung.
    nics[0].doze().awake();
    nics[1].doze().awake();
    dispatch(&mut core0, vec![ack(1000)]);
    assert_eq!(rungs[0].load(Ordering::Relaxed), 1);
    // Core 0 sleeps; a post alone does not ring, the flush ending the burst does.
    net.announce();
    assert!(!core0.output_pending());
    let (_, tx) = nics[1].split();
    let s = tx.slot().unwrap();
    s[..4].copy_from_slice(&[1, 2, 3, 4]);
    tx.post(4, &BODY[..10]).unwrap();
    assert_eq!(net_rung.load(Ordering::Relaxed), 0);
    assert!(core0.output_pending(), "core 0's re-check sees the frame");
    tx.flush();
    assert_eq!(net_rung.load(Ordering::Relaxed), 1);
    tx.flush();
    assert_eq!(net_rung.load(Ordering::Relaxed), 1, "nothing new, no ring");
    core0.split().1.flush();
    assert!(!core0.output_pending());
}

#[test]
fn an_ack_returning_a_syn_cookie_is_dispatched_like_a_syn() {
    // An HTTP core past its SYN backlog answered with a cookie and kept no mapping: the ACK
    // that returns the cookie must reach an HTTP core (which makes the TCB), not stay on
    // core 0; a forged one stays on core 0, which answers it with a RST.
    let (mut core0, mut http, clock) = setup(2, 8, None);
    let cookies = SynCookies::new([0x42; 16]);
    let ends = ((mapped(SERVER_IP.0), 80), (mapped(CLIENT_IP.0), 3000));
    let options = crate::wire::tcp::Options::default();
    let cookie = cookies.make(ends, 999, &options, clock.now_ns());
    let good = tcp_frame(
        3000,
        1000,
        Some(cookie.wrapping_add(1)),
        flags(false, true, false, false),
        &[],
    );
    let forged = tcp_frame(
        3000,
        1000,
        Some(cookie.wrapping_add(2)),
        flags(false, true, false, false),
        &[],
    );
    let local = dispatch(&mut core0, vec![forged.clone()]);
    assert_eq!(local, vec![forged]);
    assert!(core0.map().core_of(peer(3000)).is_none());
    let local = dispatch(&mut core0, vec![good.clone()]);
    assert!(local.is_empty());
    assert_eq!(core0.map().core_of(peer(3000)), Some(1));
    assert_eq!(clist(&mut http[0]), vec![good]);
}

mod clocks;
mod udp;
