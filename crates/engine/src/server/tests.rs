//! Whole-engine tests over a [`FakeNic`]: a scripted client made of wire `Repr`s talks to
//! the server frame by frame; a small cumulative-ACK client downloads through a seeded
//! [`FaultInjector`] to prove recovery from loss, duplication, reordering and corruption.

use std::vec::Vec;

use super::*;
use crate::fake::{FakeNic, FakeQueues, FaultInjector, Faults};
use crate::iface::egress::{write_l2l3, L2L3};
use crate::nic::{Clock, TxRing};
use crate::resource::{block_sums_into, Body, Found, Resource};
use crate::tcp::{seq, Algorithm};
use crate::wire::{tcp as wtcp, EtherType, EthernetAddress, EthernetFrame, IpProtocol, Ipv4Packet};
use crate::wire::{Ipv4Address, TcpPacket};

mod admission;
// Uses the network-core rings and the planner, which the loom build leaves out.
#[cfg(not(loom))]
mod bond;
mod deadline;
mod drain;
#[cfg(feature = "ipv6")]
mod ipv6;
mod pacing;
mod pressure;
mod proxy;
mod split;
mod state;
mod tls;
mod udp;
mod vip;

const SERVER_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 2]);
const CLIENT_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
const SERVER_IP: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT_IP: Ipv4Address = Ipv4Address([10, 0, 0, 1]);

/// A site of two files, leaked so bodies are `'static` like a loaded image.
struct TestSite {
    files: Vec<(&'static str, Resource<'static>)>,
}

/// The test site behind a copyable handle, as a plan wants it (`cores::plan`, absent
/// from the loom build, as are its tests).
#[derive(Clone, Copy)]
#[cfg_attr(loom, allow(dead_code))]
struct SiteRef(&'static TestSite);

impl Lookup<'static> for SiteRef {
    fn lookup(&self, path: &[u8]) -> Found<'static> {
        self.0.lookup(path)
    }
}

fn body(data: Vec<u8>) -> Body<'static> {
    let data: &'static [u8] = Vec::leak(data);
    let mut sums = vec![0u8; 2 * Body::blocks_for(data.len())];
    block_sums_into(data, &mut sums);
    Body {
        data,
        block_sums: Vec::leak(sums),
    }
}

fn big_file() -> Vec<u8> {
    (0..1_048_576u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

impl TestSite {
    fn new() -> TestSite {
        let res = |data: Vec<u8>, ct| Resource {
            content_type: ct,
            etag: "\"e1\"",
            last_modified: 1_700_000_000,
            identity: body(data),
            gzip: None,
            br: None,
            zstd: None,
            headers: "",
        };
        TestSite {
            files: vec![
                (
                    "/index.html",
                    res(b"<h1>hello</h1>\n".to_vec(), "text/html; charset=utf-8"),
                ),
                ("/big.bin", res(big_file(), "application/octet-stream")),
            ],
        }
    }
}

impl Lookup<'static> for TestSite {
    fn lookup(&self, path: &[u8]) -> Found<'static> {
        let path = if path == b"/" {
            &b"/index.html"[..]
        } else {
            path
        };
        match self.files.iter().find(|(p, _)| p.as_bytes() == path) {
            Some((_, r)) => Found::Resource(*r),
            None => Found::NotFound,
        }
    }
}

struct ManualClock(u64);

impl ManualClock {
    /// A client's timestamp clock: ms.
    fn ts(&self) -> u32 {
        (self.0 / 1_000_000) as u32 + 1
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.0
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000 + self.0 / 1_000_000_000
    }
}

fn server() -> Server<TestSite> {
    server_cc(Algorithm::default())
}

/// [`server`] with congestion control `cc`.
fn server_cc(cc: Algorithm) -> Server<TestSite> {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.congestion = cc;
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(8); // every test client has one address
    cfg.syn_backlog = Some(8); // SYN cookies only where a test asks for them
    Server::new(cfg, TestSite::new(), SERVER_MAC)
}

/// Builds a client → server TCP frame.
fn tcp_frame(
    sport: u16,
    seq: u32,
    ack: Option<u32>,
    flags: wtcp::Flags,
    payload: &[u8],
    mss: Option<u16>,
) -> Vec<u8> {
    tcp_frame_ts(sport, seq, ack, flags, payload, mss, None)
}

/// [`tcp_frame`] with a timestamps option `(TSval, TSecr)`.
fn tcp_frame_ts(
    sport: u16,
    seq: u32,
    ack: Option<u32>,
    flags: wtcp::Flags,
    payload: &[u8],
    mss: Option<u16>,
    timestamps: Option<(u32, u32)>,
) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: sport,
        dst_port: 80,
        seq_number: seq,
        ack_number: ack,
        flags,
        window_len: 65535,
        max_seg_size: mss,
        window_scale: None,
        sack_permitted: false,
        timestamps,
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

/// A server → client segment, parsed and checksum-verified.
#[derive(Debug, Clone)]
struct Out {
    seq: u32,
    ack: u32,
    syn: bool,
    fin: bool,
    rst: bool,
    has_ack: bool,
    payload: Vec<u8>,
    /// TSval of the timestamps option, if any.
    tsval: Option<u32>,
}

/// Parses a frame the server sent; frames with bad checksums (corrupted on the way by a
/// fault injector) are `None`, like a real client would drop them.
fn parse_out(frame: &[u8]) -> Option<Out> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if !ip.verify_checksum() {
        return None;
    }
    let t = TcpPacket::new_checked(ip.payload()).ok()?;
    if !t.verify_checksum(SERVER_IP, CLIENT_IP) {
        return None;
    }
    Some(Out {
        seq: t.seq_number(),
        ack: t.ack_number(),
        syn: t.syn(),
        fin: t.fin(),
        rst: t.rst(),
        has_ack: t.ack(),
        payload: t.payload().to_vec(),
        tsval: wtcp::parse_options(t.options())
            .ok()
            .and_then(|o| o.timestamps)
            .map(|(v, _)| v),
    })
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

fn run(s: &mut Server<TestSite>, nic: &mut FakeNic, clock: &ManualClock) -> Vec<Out> {
    s.poll(nic, clock, &mut NoLog);
    nic.tx
        .outbox
        .drain(..)
        .map(|f| parse_out(&f).expect("server sent a frame with a bad checksum"))
        .collect()
}

/// Completes a handshake on port `sport`; returns (client next seq, server next seq).
fn handshake(
    s: &mut Server<TestSite>,
    nic: &mut FakeNic,
    clock: &ManualClock,
    sport: u16,
) -> (u32, u32) {
    nic.rx.inbox.push_back(tcp_frame(
        sport,
        1000,
        None,
        flags(true, false, false, false),
        &[],
        Some(1460),
    ));
    let out = run(s, nic, clock);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].syn && out[0].has_ack && out[0].ack == 1001);
    let srv = out[0].seq.wrapping_add(1);
    nic.rx.inbox.push_back(tcp_frame(
        sport,
        1001,
        Some(srv),
        flags(false, true, false, false),
        &[],
        None,
    ));
    assert!(run(s, nic, clock).is_empty());
    assert_eq!(s.stats().tcp_established, s.stats().tcp_accepted);
    (1001, srv)
}

#[test]
fn handshake_get_and_close_with_fin_on_last_segment() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 40000);
    let req = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    nic.rx.inbox.push_back(tcp_frame(
        40000,
        cseq,
        Some(sseq),
        flags(false, true, false, false),
        req,
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    assert_eq!(out.len(), 1, "head and body fit one segment: {out:?}");
    let seg = &out[0];
    assert_eq!(seg.seq, sseq);
    assert_eq!(seg.ack, cseq + req.len() as u32);
    assert!(seg.fin, "FIN rides the last data segment");
    let text = String::from_utf8_lossy(&seg.payload);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\n<h1>hello</h1>\n"), "{text}");
    // Client ACKs data + FIN and sends its own FIN: the TCB is freed.
    let end = sseq + seg.payload.len() as u32 + 1;
    let cnext = cseq + req.len() as u32;
    nic.rx.inbox.push_back(tcp_frame(
        40000,
        cnext,
        Some(end),
        flags(false, true, true, false),
        &[],
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].ack, cnext + 1, "the client's FIN is acknowledged");
    assert_eq!(s.active(), 0);
    assert_eq!(s.stats().tcbs_in_use, 0);
}

#[test]
fn keepalive_then_client_close() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let (mut cseq, sseq) = handshake(&mut s, &mut nic, &clock, 40001);
    let mut snext = sseq;
    for _ in 0..3 {
        let req = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n";
        nic.rx.inbox.push_back(tcp_frame(
            40001,
            cseq,
            Some(snext),
            flags(false, true, false, false),
            req,
            None,
        ));
        let out = run(&mut s, &mut nic, &clock);
        assert_eq!(out.len(), 1);
        assert!(!out[0].fin);
        cseq += req.len() as u32;
        snext += out[0].payload.len() as u32;
        nic.rx.inbox.push_back(tcp_frame(
            40001,
            cseq,
            Some(snext),
            flags(false, true, false, false),
            &[],
            None,
        ));
        assert!(run(&mut s, &mut nic, &clock).is_empty());
    }
    assert_eq!(s.stats().http_2xx, 3);
    // Client closes: the server answers with its FIN (LAST-ACK), then frees on the ACK.
    nic.rx.inbox.push_back(tcp_frame(
        40001,
        cseq,
        Some(snext),
        flags(false, true, true, false),
        &[],
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    assert!(out.iter().any(|o| o.fin && o.ack == cseq + 1), "{out:?}");
    nic.rx.inbox.push_back(tcp_frame(
        40001,
        cseq + 1,
        Some(snext + 1),
        flags(false, true, false, false),
        &[],
        None,
    ));
    run(&mut s, &mut nic, &clock);
    assert_eq!(s.active(), 0);
}

#[test]
fn stray_segments_get_rst_and_bad_rst_gets_challenge_ack() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    // An ACK for no connection: RST with SEQ = SEG.ACK.
    nic.rx.inbox.push_back(tcp_frame(
        5555,
        77,
        Some(4242),
        flags(false, true, false, false),
        &[],
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    assert!(
        out.len() == 1 && out[0].rst && out[0].seq == 4242,
        "{out:?}"
    );
    let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 40002);
    // RST in the window but not at RCV.NXT: challenge ACK, connection kept.
    nic.rx.inbox.push_back(tcp_frame(
        40002,
        cseq + 100,
        None,
        flags(false, false, false, true),
        &[],
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    assert!(
        out.len() == 1 && out[0].has_ack && !out[0].rst && out[0].ack == cseq,
        "{out:?}"
    );
    assert_eq!(s.active(), 1);
    // RST far outside the window: dropped silently.
    nic.rx.inbox.push_back(tcp_frame(
        40002,
        cseq.wrapping_add(0x4000_0000),
        None,
        flags(false, false, false, true),
        &[],
        None,
    ));
    assert!(run(&mut s, &mut nic, &clock).is_empty());
    // SYN on the established connection: challenge ACK (half a second later: one per
    // connection per 500 ms, RFC 5961 §7).
    let clock = ManualClock(clock.0 + crate::tcp::conn::CHALLENGE_ACK_INTERVAL_NS);
    nic.rx.inbox.push_back(tcp_frame(
        40002,
        5,
        None,
        flags(true, false, false, false),
        &[],
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    assert!(
        out.len() == 1 && out[0].has_ack && out[0].ack == cseq,
        "{out:?}"
    );
    assert_eq!(s.active(), 1);
    assert_eq!(s.stats().tcp_challenge_acks, 2);
    // Exact RST: connection gone.
    nic.rx.inbox.push_back(tcp_frame(
        40002,
        cseq,
        None,
        flags(false, false, false, true),
        &[],
        None,
    ));
    run(&mut s, &mut nic, &clock);
    assert_eq!(s.active(), 0);
    let _ = sseq;
}

#[test]
fn half_open_connections_time_out() {
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let mut clock = ManualClock(1_000_000);
    nic.rx.inbox.push_back(tcp_frame(
        6000,
        1,
        None,
        flags(true, false, false, false),
        &[],
        None,
    ));
    run(&mut s, &mut nic, &clock);
    assert_eq!(s.active(), 1);
    let mut synacks = 0;
    for _ in 0..200 {
        clock.0 += 100_000_000;
        synacks += run(&mut s, &mut nic, &clock)
            .iter()
            .filter(|o| o.syn)
            .count();
    }
    assert_eq!(synacks, 3, "SYN-ACK retransmitted 3 times");
    assert_eq!(s.active(), 0);
    assert_eq!(s.stats().tcp_timeouts, 1);
}

/// A minimal receiving client: cumulative ACKs, in-order delivery, buffers nothing out of
/// order (so every loss must be repaired by the server).
struct Receiver {
    sport: u16,
    rcv_nxt: u32,
    snd_nxt: u32,
    data: Vec<u8>,
    fin: bool,
    /// With timestamps: the server's last TSval, echoed (RFC 7323).
    ts_recent: Option<u32>,
}

fn download_through_faults(faults: Faults, sched: Sched) -> (Vec<u8>, Stats) {
    download_through(faults, sched, 0)
}

/// As [`download_through_faults`], on a device offering segmentation offload of up to
/// `tso_max` payload bytes (0: none); the faults hit the segments it cuts.
fn download_through(faults: Faults, sched: Sched, tso_max: usize) -> (Vec<u8>, Stats) {
    download_with(faults, sched, tso_max, Algorithm::Cubic, BARE)
}

/// How the receiver of [`download_with`] behaves.
#[derive(Debug, Clone, Copy)]
struct Client {
    /// An ACK for every segment that arrives, in order or not (RFC 5681 §4.2: a
    /// duplicate ACK at once for out-of-order data), rather than one per round.
    ack_every_segment: bool,
    /// RFC 7323 timestamps: every ACK echoes the server's TSval.
    timestamps: bool,
}

/// One ACK per round, no options: no duplicate ACKs, so every loss waits for a
/// retransmission timeout.
const BARE: Client = Client {
    ack_every_segment: false,
    timestamps: false,
};
/// What today's clients do: an ACK per segment, timestamps.
const MODERN: Client = Client {
    ack_every_segment: true,
    timestamps: true,
};

/// [`download_through`] with congestion control `cc` and a receiver that behaves as
/// `client` says.
///
/// The bare receiver runs with CUBIC. Without duplicate ACKs, SACK or timestamps, every
/// loss costs a retransmission timeout, the go-back-N after it is all retransmissions (no
/// RTT sample, Karn), and a loss among them is another timeout with the RTO doubled;
/// BBR's windows are larger (it restores its window when a timeout's recovery ends, as
/// Linux's does), so more of them carry a loss, and the RTO backed off into the 60 s
/// stall timeout in 20 of 20 seeds (CUBIC: 2 of 20). With timestamps each ACK is an RTT
/// sample and the backoff resets.
fn download_with(
    faults: Faults,
    sched: Sched,
    tso_max: usize,
    cc: Algorithm,
    client: Client,
) -> (Vec<u8>, Stats) {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.congestion = cc;
    cfg.tcbs = 4;
    cfg.sched = sched;
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    let mut nic = FaultInjector::new(
        SERVER_MAC,
        FakeQueues::default(),
        FakeQueues::default(),
        faults,
        Faults {
            seed: faults.seed ^ 0x55,
            ..faults
        },
    )
    .with_tso(tso_max);
    let mut clock = ManualClock(1_000_000);
    let mut r = Receiver {
        sport: 41000,
        rcv_nxt: 0,
        snd_nxt: 5000,
        data: Vec::new(),
        fin: false,
        ts_recent: client.timestamps.then_some(0),
    };
    let req = b"GET /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let mut established = false;
    let mut req_acked = false;
    // A bound against a hang, not a speed test: this receiver ACKs once per round and
    // keeps nothing out of order, so with ~9% of segments lost or corrupted recovery rests
    // on backed-off retransmission timers and a download can take minutes of simulated
    // time (the loop ends as soon as it completes).
    for round in 0..1_000_000u32 {
        if r.fin {
            break;
        }
        // The client (re)sends its SYN, then its request, every 300 ms until answered.
        if round % 300 != 0 {
        } else if !established {
            nic.inner_rx().inbox.push_back(tcp_frame_ts(
                r.sport,
                r.snd_nxt,
                None,
                flags(true, false, false, false),
                &[],
                Some(1460),
                r.ts_recent.map(|_| (clock.ts(), 0)),
            ));
        } else if !req_acked {
            nic.inner_rx().inbox.push_back(tcp_frame_ts(
                r.sport,
                r.snd_nxt,
                Some(r.rcv_nxt),
                flags(false, true, false, false),
                req,
                None,
                r.ts_recent.map(|e| (clock.ts(), e)),
            ));
        }
        s.poll(&mut nic, &clock, &mut NoLog);
        let sent: Vec<Vec<u8>> = nic.inner_tx().outbox.drain(..).collect();
        let mut ack_now = false;
        for f in sent {
            let Some(o) = parse_out(&f) else { continue }; // corrupted on the way: dropped
            if o.rst {
                panic!("server reset the download: {o:?} stats {:?}", s.stats());
            }
            if let (Some(_), Some(v)) = (r.ts_recent, o.tsval) {
                r.ts_recent = Some(v);
            }
            if o.syn {
                if !established {
                    established = true;
                    r.rcv_nxt = o.seq.wrapping_add(1);
                    r.snd_nxt += 1;
                }
                ack_now = true;
                continue;
            }
            if established && o.has_ack && seq::ge(o.ack, r.snd_nxt + req.len() as u32) {
                req_acked = true;
            }
            if o.seq == r.rcv_nxt {
                r.data.extend_from_slice(&o.payload);
                r.rcv_nxt = r.rcv_nxt.wrapping_add(o.payload.len() as u32);
                if o.fin {
                    r.rcv_nxt = r.rcv_nxt.wrapping_add(1);
                    r.fin = true;
                }
            }
            if client.ack_every_segment {
                push_ack(&mut nic, &r, req_acked, req.len(), &clock);
            } else {
                ack_now = true;
            }
        }
        if ack_now && established {
            push_ack(&mut nic, &r, req_acked, req.len(), &clock);
        }
        clock.0 += 1_000_000; // 1 ms per round
    }
    assert!(
        r.fin,
        "download did not finish: {} bytes, {:?}",
        r.data.len(),
        s.stats()
    );
    let head_end = r
        .data
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response head")
        + 4;
    (r.data[head_end..].to_vec(), s.stats().clone())
}

/// The receiver's ACK of what it holds.
fn push_ack(
    nic: &mut FaultInjector<FakeQueues, FakeQueues>,
    r: &Receiver,
    req_acked: bool,
    req_len: usize,
    clock: &ManualClock,
) {
    let seq = if req_acked {
        r.snd_nxt + req_len as u32
    } else {
        r.snd_nxt
    };
    nic.inner_rx().inbox.push_back(tcp_frame_ts(
        r.sport,
        seq,
        Some(r.rcv_nxt),
        flags(false, true, false, false),
        &[],
        None,
        r.ts_recent.map(|e| (clock.ts(), e)),
    ));
}

#[test]
fn one_mib_download_survives_loss_dup_reorder_corruption() {
    let want = big_file();
    for (i, sched) in [Sched::Imt, Sched::Ist].into_iter().enumerate() {
        let faults = Faults {
            drop_pct: 5,
            dup_pct: 2,
            reorder_pct: 3,
            corrupt_pct: 4,
            seed: 7 + i as u64,
        };
        let (got, stats) = download_through_faults(faults, sched);
        assert_eq!(got.len(), want.len());
        assert!(got == want, "body differs");
        assert!(stats.tcp_rto_retransmits + stats.tcp_fast_retransmits > 0);
        assert!(
            stats.drop_checksum > 0,
            "corrupted frames were caught by checksums"
        );
    }
}

#[test]
fn clean_download_needs_no_retransmission() {
    for cc in [Algorithm::Cubic, Algorithm::Bbr] {
        for client in [BARE, MODERN] {
            let (got, stats) = download_with(Faults::default(), Sched::Imt, 0, cc, client);
            assert!(got == big_file(), "{cc:?}");
            assert_eq!(stats.tcp_rto_retransmits + stats.tcp_fast_retransmits, 0);
        }
    }
}

#[test]
fn bbr_downloads_survive_loss_dup_reorder_corruption() {
    let want = big_file();
    for (seed, tso) in [(7, 0), (8, 0), (11, 65455), (12, 65455)] {
        let faults = Faults {
            drop_pct: 5,
            dup_pct: 2,
            reorder_pct: 3,
            corrupt_pct: 4,
            seed,
        };
        let (got, stats) = download_with(faults, Sched::Imt, tso, Algorithm::Bbr, MODERN);
        assert!(got == want, "body differs (seed {seed})");
        assert!(stats.tcp_fast_retransmits > 0, "{stats:?}");
    }
}

#[test]
fn segmentation_offload_sends_few_large_frames_with_the_same_bytes() {
    let (got, plain) = download_through_faults(Faults::default(), Sched::Imt);
    let (got_tso, tso) = download_through(Faults::default(), Sched::Imt, 65455);
    assert!(got == big_file() && got_tso == got);
    assert_eq!(tso.tcp_rto_retransmits + tso.tcp_fast_retransmits, 0);
    assert_eq!(plain.tx_tso_frames, 0);
    // The congestion window, not the offload limit, bounds most frames; still every
    // frame carries several segments on average.
    assert!(tso.tx_tso_frames > 0);
    assert!(
        tso.tx_frames * 4 < plain.tx_frames,
        "{} frames with offload, {} without",
        tso.tx_frames,
        plain.tx_frames
    );
}

#[test]
fn one_mib_download_with_offload_survives_loss_dup_reorder_corruption() {
    let want = big_file();
    let faults = Faults {
        drop_pct: 5,
        dup_pct: 2,
        reorder_pct: 3,
        corrupt_pct: 4,
        seed: 11,
    };
    let (got, stats) = download_through(faults, Sched::Imt, 65455);
    assert!(got == want, "body differs");
    assert!(stats.tx_tso_frames > 0);
    assert!(stats.tcp_rto_retransmits + stats.tcp_fast_retransmits > 0);
}

/// Records the status and byte count of every access record.
#[derive(Default)]
struct Recorded(Vec<(u16, usize)>);

impl crate::server::AccessLog for Recorded {
    fn record(&mut self, r: &crate::server::AccessRecord<'_>) {
        self.0.push((r.status, r.bytes));
    }
}

#[test]
fn the_access_log_counts_an_error_pages_bytes() {
    // A 404's small page is content on the wire like a file's body (the access log
    // said 0 for a 404 that sent 107 bytes).
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 40100);
    let req = b"GET /missing HTTP/1.1\r\nHost: x\r\n\r\n";
    nic.rx.inbox.push_back(tcp_frame(
        40100,
        cseq,
        Some(sseq),
        flags(false, true, false, false),
        req,
        None,
    ));
    let mut log = Recorded::default();
    s.poll(&mut nic, &clock, &mut log);
    let sent: Vec<u8> = nic
        .tx
        .outbox
        .drain(..)
        .filter_map(|f| parse_out(&f))
        .flat_map(|o| o.payload)
        .collect();
    let text = String::from_utf8_lossy(&sent);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 404 Not Found"), "{head}");
    assert_eq!(log.0, [(404, body.len())]);
    assert_eq!(body.len(), 107);
}

/// Keeps each access record's text in the JSON format.
#[derive(Default)]
struct JsonLines(Vec<String>, usize);

impl crate::server::AccessLog for JsonLines {
    fn record(&mut self, r: &crate::server::AccessRecord<'_>) {
        self.0
            .push(r.line(crate::http::log::LogFormat::Json).to_string());
    }
    fn flush(&mut self) {
        self.1 += 1;
    }
}

#[test]
fn the_access_record_has_the_head_and_the_time_since_the_request_started() {
    // A request head in two segments 3 ms apart, 1 ms after the handshake: the record
    // names its headers, and its duration runs from the request's start (for a
    // connection's first request, its establishment); the log is flushed every round.
    let mut s = server();
    let mut nic = FakeNic::new(SERVER_MAC);
    let (cseq, sseq) = handshake(&mut s, &mut nic, &ManualClock(1_000_000), 40101);
    let first = b"GET /missing HTTP/1.1\r\nUser-Agent: t\"\\\r\n";
    let rest = b"Host: x\r\n\r\n";
    let mut log = JsonLines::default();
    nic.rx.inbox.push_back(tcp_frame(
        40101,
        cseq,
        Some(sseq),
        flags(false, true, false, false),
        first,
        None,
    ));
    s.poll(&mut nic, &ManualClock(2_000_000), &mut log);
    assert!(log.0.is_empty());
    nic.rx.inbox.push_back(tcp_frame(
        40101,
        cseq.wrapping_add(first.len() as u32),
        Some(sseq),
        flags(false, true, false, false),
        rest,
        None,
    ));
    s.poll(&mut nic, &ManualClock(5_000_000), &mut log);
    assert_eq!(log.0.len(), 1);
    assert!(log.1 >= 2, "flushed every round");
    let v: serde_json::Value = serde_json::from_str(&log.0[0]).unwrap();
    assert_eq!(v["path"], "/missing");
    assert_eq!(v["status"], 404);
    assert_eq!(v["host"], "x");
    assert_eq!(v["user_agent"], "t\"\\");
    assert_eq!(v["duration_us"], 4000);
}

/// The address range of `path`'s body in `site`.
fn body_range(site: &TestSite, path: &[u8]) -> core::ops::Range<usize> {
    let Found::Resource(r) = site.lookup(path) else {
        panic!("no {path:?}");
    };
    let a = r.identity.data.as_ptr() as usize;
    a..a + r.identity.data.len()
}

/// A reload's swap on one server: the response in flight keeps sending from the old
/// site (and is seen doing so, by address), the next request is answered from the new
/// one, and at a drain timeout the connection still on the old one is reset.
#[test]
fn a_new_site_serves_new_requests_while_old_responses_finish() {
    let old = TestSite::new();
    let big = body_range(&old, b"/big.bin");
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(8);
    let mut s = Server::new(cfg, old, SERVER_MAC);
    let mut nic = FakeNic::new(SERVER_MAC);
    let clock = ManualClock(1_000_000);
    let (cseq, sseq) = handshake(&mut s, &mut nic, &clock, 40200);
    let req = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    nic.rx.inbox.push_back(tcp_frame(
        40200,
        cseq,
        Some(sseq),
        flags(false, true, false, false),
        req,
        None,
    ));
    s.poll(&mut nic, &clock, &mut NoLog);
    nic.tx.outbox.clear();
    assert_eq!(
        s.responses_in(big.clone()),
        1,
        "1 MiB is not sent in one window"
    );

    let mut new = TestSite::new();
    new.files[0].1.identity = body(b"<h1>new</h1>\n".to_vec());
    let new_index = body_range(&new, b"/");
    s.set_site(new);
    assert_eq!(s.responses_in(big.clone()), 1, "the old response goes on");
    assert_eq!(s.responses_in(new_index.clone()), 0);

    let (cseq2, sseq2) = handshake(&mut s, &mut nic, &clock, 40201);
    nic.rx.inbox.push_back(tcp_frame(
        40201,
        cseq2,
        Some(sseq2),
        flags(false, true, false, false),
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        None,
    ));
    let out = run(&mut s, &mut nic, &clock);
    // The old connection sends nothing meanwhile (its window is full, no time passes).
    let text: Vec<u8> = out.iter().flat_map(|o| o.payload.clone()).collect();
    let text = String::from_utf8_lossy(&text);
    assert!(text.ends_with("<h1>new</h1>\n"), "{text}");

    // The drain timeout: the connection on the old image is reset, the other kept.
    let mut tx = FakeNic::new(SERVER_MAC);
    assert_eq!(s.reset_responses_in(big.clone(), &mut tx.tx), 1);
    assert_eq!(s.responses_in(big), 0);
    let rst: Vec<Out> = tx.tx.outbox.iter().filter_map(|f| parse_out(f)).collect();
    assert!(rst.len() == 1 && rst[0].rst, "{rst:?}");
    assert_eq!(s.active(), 1);
}
