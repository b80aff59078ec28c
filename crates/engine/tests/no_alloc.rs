//! No allocation on the hot path (DESIGN.md's rule): a counting global
//! allocator, and the server engine driven through keep-alive requests and through whole
//! connections (handshake, GET, close) over an in-memory queue pair that itself never
//! allocates. After a warm-up, the allocations made inside `Server::poll` must be zero.
//!
//! Only the calls into the engine are counted (a thread-local switch around `poll`): the
//! test's own client builds its frames outside, with the heap if it likes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bareweb_engine::iface::egress::{write_l2l3, L2L3};
use bareweb_engine::nic::{Clock, Nic, RxFrame, RxRing, TxFull, TxRing, TX_HEAD_ROOM};
use bareweb_engine::resource::{block_sums_into, Body, Found, Lookup, Resource};
use bareweb_engine::server::{Config, NoLog, Server};
use bareweb_engine::wire::{
    checksum, EtherType, Ipv6Address, Ipv6NextHeader, Ipv6Packet, Ipv6Repr,
};
use bareweb_engine::wire::{tcp as wtcp, EthernetAddress, IpProtocol, Ipv4Address};
use bareweb_engine::wire::{EthernetFrame, Ipv4Packet, TcpPacket};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// This thread's count: the tests run side by side, each counts its own server.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    if COUNTING.with(Cell::get) {
        ALLOCS.with(|a| a.set(a.get() + 1));
    }
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const SERVER_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 2]);
const CLIENT_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
const SERVER_IP: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT_IP: Ipv4Address = Ipv4Address([10, 0, 0, 1]);
const FILE: usize = 4096;

#[derive(Clone, Copy)]
struct Site(Resource<'static>);

impl Site {
    fn new() -> Site {
        let data: &'static [u8] = Vec::leak((0..FILE).map(|i| (i * 7) as u8).collect());
        let mut sums = vec![0u8; 2 * Body::blocks_for(data.len())];
        block_sums_into(data, &mut sums);
        Site(Resource {
            content_type: "text/html",
            etag: "\"e1\"",
            last_modified: 1_700_000_000,
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
}

impl Lookup<'static> for Site {
    fn lookup(&self, path: &[u8]) -> Found<'static> {
        if path == b"/4k.html" {
            Found::Resource(self.0)
        } else {
            Found::NotFound
        }
    }
}

/// A queue pair over fixed buffers: frames in and out are copied into storage made once.
struct Pool {
    frames: Vec<Vec<u8>>,
    /// Indices of `frames` holding something, in order.
    queue: Vec<usize>,
    free: Vec<usize>,
    slot: Vec<u8>,
}

impl Pool {
    fn new(n: usize) -> Pool {
        Pool {
            frames: (0..n).map(|_| Vec::with_capacity(8192)).collect(),
            queue: Vec::with_capacity(n),
            free: (0..n).rev().collect(),
            slot: vec![0; TX_HEAD_ROOM],
        }
    }

    /// Outside the engine: a frame in.
    fn push(&mut self, f: &[u8]) {
        let i = self.free.pop().expect("pool full");
        self.frames[i].clear();
        self.frames[i].extend_from_slice(f);
        self.queue.push(i);
    }

    /// Outside the engine: every frame out, in order.
    fn take(&mut self) -> Vec<Vec<u8>> {
        let out = self.queue.iter().map(|&i| self.frames[i].clone()).collect();
        self.free.append(&mut self.queue);
        out
    }
}

impl RxRing for Pool {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let n = out.len().min(self.queue.len());
        for (o, &i) in out.iter_mut().zip(&self.queue[..n]) {
            *o = RxFrame {
                buf: i as u32,
                len: self.frames[i].len() as u32,
            };
        }
        self.queue.drain(..n);
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        &self.frames[f.buf as usize]
    }

    fn recycle(&mut self, f: RxFrame) {
        self.free.push(f.buf as usize);
    }
}

impl TxRing for Pool {
    fn slot(&mut self) -> Option<&mut [u8]> {
        Some(&mut self.slot[..])
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        let i = self.free.pop().ok_or(TxFull)?;
        let f = &mut self.frames[i];
        f.clear();
        f.extend_from_slice(&self.slot[..head_len]);
        f.extend_from_slice(body);
        self.queue.push(i);
        Ok(())
    }

    fn flush(&mut self) {}

    fn room(&mut self) -> usize {
        self.free.len()
    }
}

struct PoolNic {
    rx: Pool,
    tx: Pool,
}

impl Nic for PoolNic {
    type Rx = Pool;
    type Tx = Pool;

    fn split(&mut self) -> (&mut Pool, &mut Pool) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        SERVER_MAC
    }
}

struct Ticks(Cell<u64>);

impl Clock for Ticks {
    fn now_ns(&self) -> u64 {
        // Every look at the clock moves it 20 µs: timers run as they would.
        let t = self.0.get() + 20_000;
        self.0.set(t);
        t
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000 + self.0.get() / 1_000_000_000
    }
}

struct Seg {
    seq: u32,
    ack: u32,
    syn: bool,
    fin: bool,
    len: usize,
    /// The payload (copied outside the engine's count; read by the TLS test).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    data: Vec<u8>,
}

/// A TCP segment of ours, over IPv4 or IPv6 (`None`: another frame, e.g. an IPv6 router
/// solicitation).
fn parse(frame: &[u8]) -> Option<Seg> {
    let eth = EthernetFrame::new_checked(frame).expect("ethernet");
    let tcp = if eth.ethertype() == EtherType::Ipv6 {
        let ip = Ipv6Packet::new_checked(eth.payload()).expect("ipv6");
        if ip.next_header() != Ipv6NextHeader::Tcp {
            return None;
        }
        &eth.payload()[40..]
    } else {
        let ip = Ipv4Packet::new_checked(eth.payload()).expect("ipv4");
        &eth.payload()[usize::from(ip.header_len())..usize::from(ip.total_len())]
    };
    let t = TcpPacket::new_checked(tcp).expect("tcp");
    Some(Seg {
        seq: t.seq_number(),
        ack: t.ack_number(),
        syn: t.syn(),
        fin: t.fin(),
        len: t.payload().len(),
        data: t.payload().to_vec(),
    })
}

fn frame(sport: u16, seq: u32, ack: Option<u32>, syn: bool, fin: bool, payload: &[u8]) -> Vec<u8> {
    frame_to(80, sport, seq, ack, syn, fin, payload)
}

fn frame_to(
    dport: u16,
    sport: u16,
    seq: u32,
    ack: Option<u32>,
    syn: bool,
    fin: bool,
    payload: &[u8],
) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: sport,
        dst_port: dport,
        seq_number: seq,
        ack_number: ack,
        flags: wtcp::Flags {
            fin,
            syn,
            rst: false,
            psh: !payload.is_empty(),
            ack: ack.is_some(),
        },
        window_len: 65535,
        max_seg_size: syn.then_some(1460),
        window_scale: None,
        sack_permitted: false,
        timestamps: None,
    };
    let hl = repr.header_len();
    let mut f = vec![0u8; L2L3 + hl + payload.len()];
    write_l2l3(
        &mut f,
        CLIENT_MAC,
        SERVER_MAC,
        CLIENT_IP,
        SERVER_IP,
        IpProtocol::Tcp,
        hl + payload.len(),
    );
    repr.emit_header(&mut f[L2L3..]);
    f[L2L3 + hl..].copy_from_slice(payload);
    TcpPacket::new_unchecked(&mut f[L2L3..]).fill_checksum(CLIENT_IP, SERVER_IP);
    f
}

struct Bench {
    server: Server<Site>,
    nic: PoolNic,
    clock: Ticks,
    /// Over IPv6: the server's link-local address (the client is `fe80::1`).
    v6: Option<Ipv6Address>,
}

/// The IPv6 client.
const CLIENT_IP6: Ipv6Address = Ipv6Address::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);

/// [`frame`] over IPv6, from [`CLIENT_IP6`] to `us`.
fn frame6(
    us: Ipv6Address,
    sport: u16,
    seq: u32,
    ack: Option<u32>,
    syn: bool,
    fin: bool,
    payload: &[u8],
) -> Vec<u8> {
    let v4 = frame(sport, seq, ack, syn, fin, payload);
    let tcp = &v4[L2L3..];
    let mut f = vec![0u8; 54 + tcp.len()];
    f[..14].copy_from_slice(&v4[..14]);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    Ipv6Repr {
        src_addr: CLIENT_IP6,
        dst_addr: us,
        next_header: Ipv6NextHeader::Tcp,
        payload_len: tcp.len(),
        hop_limit: 64,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut f[14..54]));
    f[54..].copy_from_slice(tcp);
    f[54 + 16..54 + 18].fill(0);
    let acc = checksum::pseudo_header_v6(&CLIENT_IP6.0, &us.0, 6, tcp.len() as u32);
    let sum = !checksum::fold(checksum::accumulate(acc, &f[54..]));
    f[54 + 16..54 + 18].copy_from_slice(&sum.to_be_bytes());
    f
}

impl Bench {
    fn new() -> Bench {
        let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
        cfg.tcbs = 64;
        Self::with(cfg)
    }

    fn with(cfg: Config) -> Bench {
        Bench {
            server: Server::new(cfg, Site::new(), SERVER_MAC),
            nic: PoolNic {
                rx: Pool::new(64),
                tx: Pool::new(256),
            },
            clock: Ticks(Cell::new(1_000_000_000)),
            v6: None,
        }
    }

    /// A server with IPv6 on, its link-local address past duplicate address detection
    /// (clients reach it there).
    fn new6() -> Bench {
        let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
        cfg.tcbs = 64;
        cfg.ipv6 = true;
        cfg.ipv6_secret = Some([7; 16]);
        let mut b = Self::with(cfg);
        for _ in 0..40 {
            b.clock.0.set(b.clock.0.get() + 100_000_000);
            b.exchange(None);
        }
        b.v6 = Some(b.server.ipv6_address().expect("started").0);
        b
    }

    /// A client frame to the server, over IPv6 when the bench is.
    fn f(
        &self,
        sport: u16,
        seq: u32,
        ack: Option<u32>,
        syn: bool,
        fin: bool,
        payload: &[u8],
    ) -> Vec<u8> {
        match self.v6 {
            Some(us) => frame6(us, sport, seq, ack, syn, fin, payload),
            None => frame(sport, seq, ack, syn, fin, payload),
        }
    }

    /// Hands `f` to the server and polls it once, counting the engine's allocations.
    fn exchange(&mut self, f: Option<&[u8]>) -> Vec<Seg> {
        if let Some(f) = f {
            self.nic.rx.push(f);
        }
        COUNTING.with(|c| c.set(true));
        self.server.poll(&mut self.nic, &self.clock, &mut NoLog);
        COUNTING.with(|c| c.set(false));
        self.nic.tx.take().iter().filter_map(|f| parse(f)).collect()
    }

    /// Opens a connection from `sport`: (client next seq, server next seq).
    fn open(&mut self, sport: u16) -> (u32, u32) {
        let out = self.exchange(Some(&self.f(sport, 1000, None, true, false, &[])));
        assert!(out.len() == 1 && out[0].syn && out[0].ack == 1001);
        let srv = out[0].seq.wrapping_add(1);
        let out = self.exchange(Some(&self.f(sport, 1001, Some(srv), false, false, &[])));
        assert!(out.is_empty());
        (1001, srv)
    }

    /// One GET on an open connection, every data segment acknowledged; the next server
    /// sequence number.
    fn get(&mut self, sport: u16, cli: u32, mut srv: u32, close: bool) -> u32 {
        let req: &[u8] = if close {
            b"GET /4k.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        } else {
            b"GET /4k.html HTTP/1.1\r\nHost: t\r\n\r\n"
        };
        let mut got = 0;
        let mut out = self.exchange(Some(&self.f(sport, cli, Some(srv), false, false, req)));
        let cli = cli.wrapping_add(req.len() as u32);
        let mut fin = false;
        for _ in 0..16 {
            if out.is_empty() {
                break;
            }
            for s in &out {
                assert_eq!(s.seq, srv, "in order, no retransmission");
                srv = srv.wrapping_add(s.len as u32 + u32::from(s.fin));
                got += s.len;
                fin |= s.fin;
            }
            out = self.exchange(Some(&self.f(sport, cli, Some(srv), false, false, &[])));
        }
        assert!(got > FILE, "response of {got} bytes");
        assert_eq!(fin, close);
        if close {
            let out = self.exchange(Some(&self.f(sport, cli, Some(srv), false, true, &[])));
            assert!(out.iter().all(|s| s.ack == cli.wrapping_add(1)));
        }
        srv
    }
}

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

#[test]
fn keep_alive_requests_and_whole_connections_allocate_nothing() {
    // The counter counts: one allocation while switched on.
    let before = allocs();
    COUNTING.with(|c| c.set(true));
    let v = std::hint::black_box(Vec::<u8>::with_capacity(64));
    COUNTING.with(|c| c.set(false));
    drop(v);
    assert_eq!(
        allocs() - before,
        1,
        "the counting allocator does not count"
    );

    let (keep_alive, per_connection, requests) = requests_and_connections(Bench::new());
    assert_eq!(
        (keep_alive, per_connection),
        (0, 0),
        "allocations inside Server::poll: 1000 keep-alive requests, 500 connections"
    );
    assert!(requests >= 1600);
}

/// The same over IPv6 (to the link-local address): the same count of requests and
/// connections, so `callgrind` of the two tests compares their instructions.
#[test]
fn ipv6_keep_alive_requests_and_whole_connections_allocate_nothing() {
    let (keep_alive, per_connection, requests) = requests_and_connections(Bench::new6());
    assert_eq!(
        (keep_alive, per_connection),
        (0, 0),
        "allocations inside Server::poll over IPv6: 1000 keep-alive requests, 500 connections"
    );
    assert!(requests >= 1600);
}

/// 50 + 1000 keep-alive requests, then 50 + 500 connections of one request each: the
/// allocations of the second batch of each, and the requests served.
fn requests_and_connections(mut b: Bench) -> (u64, u64, u64) {
    // Keep-alive: one connection, many requests.
    let (cli, mut srv) = b.open(40_000);
    let req = b"GET /4k.html HTTP/1.1\r\nHost: t\r\n\r\n".len() as u32;
    let mut c = cli;
    for _ in 0..50 {
        srv = b.get(40_000, c, srv, false);
        c = c.wrapping_add(req);
    }
    let before = allocs();
    for _ in 0..1000 {
        srv = b.get(40_000, c, srv, false);
        c = c.wrapping_add(req);
    }
    let keep_alive = allocs() - before;

    // A connection per request: handshake, GET with close, FIN both ways.
    for port in 41_000..41_050 {
        let (cli, srv) = b.open(port);
        b.get(port, cli, srv, true);
    }
    let before = allocs();
    for port in 42_000..42_500 {
        let (cli, srv) = b.open(port);
        b.get(port, cli, srv, true);
    }
    let per_connection = allocs() - before;
    (keep_alive, per_connection, b.server.stats().http_requests)
}

/// HTTPS keep-alive: after the handshake (which allocates: rustls's handshake state, the
/// session, the record keys), requests and responses over TLS allocate nothing inside
/// `Server::poll`: records are opened in place, and sealed from the head and the site image
/// straight into the frames that carry them.
#[cfg(feature = "tls")]
#[test]
fn tls_keep_alive_requests_allocate_nothing() {
    use std::io::{Read, Write};
    use std::sync::Arc;

    use bareweb_engine::server::tls::rustls_session::Acceptor;
    use bareweb_engine::server::tls::TlsListen;
    use bareweb_tls::testing::TestRandom;
    use bareweb_tls::{Options, Platform, TlsServer};
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    use rustls::{ClientConfig, ClientConnection, RootCertStore};

    static SERVER_RNG: TestRandom = TestRandom::new(7);
    static CLIENT_RNG: TestRandom = TestRandom::new(8);
    const HTTPS: u16 = 443;
    let platform = Platform {
        random: &SERVER_RNG,
        time: Arc::new(rustls::time_provider::DefaultTimeProvider),
    };
    let server = TlsServer::new(
        include_bytes!("../../tls/testdata/cert.pem"),
        include_bytes!("../../tls/testdata/key.pem"),
        &Options::default(),
        &platform,
    )
    .unwrap();
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 64;
    cfg.tls = Some(TlsListen {
        port: HTTPS,
        acceptor: Box::leak(Box::new(Acceptor(server))),
    });

    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let mut b = Bench::with(cfg.clone());
        let mut roots = RootCertStore::empty();
        roots
            .add(
                CertificateDer::from_pem_slice(include_bytes!("../../tls/testdata/ca.pem"))
                    .unwrap(),
            )
            .unwrap();
        let mut ccfg = ClientConfig::builder_with_provider(Arc::new(
            bareweb_tls::provider::provider(&CLIENT_RNG),
        ))
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        ccfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        let mut c = ClientConnection::new(Arc::new(ccfg), "localhost".try_into().unwrap()).unwrap();

        let sport = 45_000;
        let out = b.exchange(Some(&frame_to(HTTPS, sport, 1000, None, true, false, &[])));
        assert!(out.len() == 1 && out[0].syn);
        let mut srv = out[0].seq.wrapping_add(1);
        let mut cli = 1001u32;
        b.exchange(Some(&frame_to(
            HTTPS,
            sport,
            cli,
            Some(srv),
            false,
            false,
            &[],
        )));

        // Sends what the client has to say, then moves the server's answer to the client
        // (ACKing it) until the server is quiet.
        let round = |b: &mut Bench, c: &mut ClientConnection, cli: &mut u32, srv: &mut u32| {
            let mut wire = Vec::new();
            while c.wants_write() {
                c.write_tls(&mut wire).unwrap();
            }
            let mut out = Vec::new();
            for piece in wire.chunks(1400) {
                out.extend(b.exchange(Some(&frame_to(
                    HTTPS,
                    sport,
                    *cli,
                    Some(*srv),
                    false,
                    false,
                    piece,
                ))));
                *cli = cli.wrapping_add(piece.len() as u32);
            }
            if wire.is_empty() {
                out.extend(b.exchange(None));
            }
            for _ in 0..64 {
                if out.is_empty() {
                    break;
                }
                for s in &out {
                    assert_eq!(s.seq, *srv, "in order, no retransmission");
                    *srv = srv.wrapping_add(s.len as u32);
                    let mut rd = &s.data[..];
                    while !rd.is_empty() {
                        c.read_tls(&mut rd).unwrap();
                        c.process_new_packets().unwrap();
                    }
                }
                out = b.exchange(Some(&frame_to(
                    HTTPS,
                    sport,
                    *cli,
                    Some(*srv),
                    false,
                    false,
                    &[],
                )));
            }
        };
        while c.is_handshaking() || c.wants_write() {
            round(&mut b, &mut c, &mut cli, &mut srv);
        }
        let get = |b: &mut Bench, c: &mut ClientConnection, cli: &mut u32, srv: &mut u32| {
            c.writer()
                .write_all(b"GET /4k.html HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            round(b, c, cli, srv);
            let mut resp = vec![0u8; 4096];
            let mut got = Vec::new();
            while let Ok(n) = c.reader().read(&mut resp) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&resp[..n]);
            }
            let head = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            assert!(
                got.starts_with(b"HTTP/1.1 200 "),
                "{:?}",
                &got[..head.min(64)]
            );
            assert_eq!(got.len() - head, FILE, "one whole response");
        };
        for _ in 0..50 {
            get(&mut b, &mut c, &mut cli, &mut srv);
        }
        let before = allocs();
        for _ in 0..500 {
            get(&mut b, &mut c, &mut cli, &mut srv);
        }
        assert_eq!(
            allocs() - before,
            0,
            "allocations inside Server::poll: 500 keep-alive requests over {version:?}"
        );
        assert!(b.server.stats().http_requests >= 550);
    }
}
