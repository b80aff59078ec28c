//! The runners' plumbing under several threads, with no root and no TAP: an in-memory wire
//! (a receive queue the runner's thread 0 reads and waits on, one transmit side per
//! thread) and a scripted TCP client of many concurrent connections on the test thread.
//! Every runner, with 1, 2 and 4 threads, must deliver every byte of every response (the
//! client reassembles out-of-order segments: threads write their batches in any order),
//! answer every request, and end with no TCB in use; the board's rows must add up.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bareweb_engine::cores::board::{Board, Role, WithStatsPage};
use bareweb_engine::fake::segment;
use bareweb_engine::nic::{NicCaps, RxFrame, RxRing, Tso, TxFull, TxRing, TX_HEAD_ROOM};
use bareweb_engine::server::{Config, NoLog};
use bareweb_engine::site::{self, Site};
use bareweb_engine::wire::{
    ethernet, ipv4, tcp as wtcp, EtherType, EthernetAddress, EthernetFrame, IpProtocol,
    Ipv4Address, Ipv4Packet, Ipv4Repr, TcpPacket,
};

use super::{run, Runner, RxWait};
use crate::cores::{CoreReport, Shared};

const SERVER_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 2]);
const CLIENT_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
const SERVER_IP: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT_IP: Ipv4Address = Ipv4Address([10, 0, 0, 1]);
const L2L3: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN;

#[derive(Default)]
struct Wire {
    inbox: Mutex<VecDeque<Vec<u8>>>,
    arrived: Condvar,
    outbox: Mutex<Vec<Vec<u8>>>,
}

struct WireRx {
    wire: Arc<Wire>,
    loaned: Vec<Option<Vec<u8>>>,
}

impl RxRing for WireRx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let mut inbox = self.wire.inbox.lock().unwrap();
        let mut n = 0;
        while n < out.len() {
            let Some(f) = inbox.pop_front() else { break };
            let len = f.len() as u32;
            let i = match self.loaned.iter().position(Option::is_none) {
                Some(i) => i,
                None => {
                    self.loaned.push(None);
                    self.loaned.len() - 1
                }
            };
            self.loaned[i] = Some(f);
            out[n] = RxFrame { buf: i as u32, len };
            n += 1;
        }
        n
    }
    fn bytes(&self, f: &RxFrame) -> &[u8] {
        self.loaned[f.buf as usize].as_deref().unwrap_or(&[])
    }
    fn recycle(&mut self, f: RxFrame) {
        self.loaned[f.buf as usize] = None;
    }
}

impl RxWait for WireRx {
    fn wait_us(&mut self, us: u64) {
        let inbox = self.wire.inbox.lock().unwrap();
        if inbox.is_empty() {
            let _ = self
                .wire
                .arrived
                .wait_timeout(inbox, Duration::from_micros(us));
        }
    }
}

struct WireTx {
    wire: Arc<Wire>,
    slot: Vec<u8>,
}

impl TxRing for WireTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        Some(&mut self.slot[..])
    }
    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        let mut f = self.slot[..head_len].to_vec();
        f.extend_from_slice(body);
        self.wire.outbox.lock().unwrap().push(f);
        Ok(())
    }
    /// Cut like a device with segmentation offload would (panics on a wrong partial
    /// checksum or length).
    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        let mut f = self.slot[..head_len].to_vec();
        f.extend_from_slice(body);
        self.wire.outbox.lock().unwrap().extend(segment(&f, tso));
        Ok(())
    }
    fn flush(&mut self) {}
}

fn frame(sport: u16, seq: u32, ack: Option<u32>, flags: wtcp::Flags, payload: &[u8]) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: sport,
        dst_port: 80,
        seq_number: seq,
        ack_number: ack,
        flags,
        window_len: 65535,
        max_seg_size: flags.syn.then_some(1460),
        window_scale: None,
        sack_permitted: false,
        timestamps: None,
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
        src_addr: CLIENT_IP,
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
    TcpPacket::new_unchecked(&mut buf[L2L3..]).fill_checksum(CLIENT_IP, SERVER_IP);
    buf
}

fn flags(syn: bool, fin: bool) -> wtcp::Flags {
    wtcp::Flags {
        fin,
        syn,
        rst: false,
        psh: false,
        ack: !syn,
    }
}

const SMALL: &str = "/small.txt";
const BIG: &str = "/big.bin";

fn files() -> Vec<(String, Vec<u8>, u64)> {
    let big: Vec<u8> = (0..60_000u32).map(|i| (i * 7 + i / 300) as u8).collect();
    vec![
        (SMALL.into(), b"small and plain\n".to_vec(), 1_700_000_000),
        (BIG.into(), big, 1_700_000_000),
    ]
}

/// One client connection: SYN, then GET SMALL (keep-alive), GET BIG (close), FIN.
struct Conn {
    sport: u16,
    snd_nxt: u32,
    /// Server's initial sequence number + 1 (stream offset 0).
    base: u32,
    /// In-order bytes received.
    got: Vec<u8>,
    /// Out-of-order segments by stream offset.
    ooo: BTreeMap<u32, Vec<u8>>,
    fin_at: Option<u32>,
    established: bool,
    requests: usize,
    closed: bool,
    owe_ack: bool,
}

const REQ: [&str; 2] = [
    "GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n",
    "GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
];

impl Conn {
    fn rcv_nxt(&self) -> u32 {
        let fin = self.fin_at.is_some_and(|f| f as usize == self.got.len());
        self.base
            .wrapping_add(self.got.len() as u32)
            .wrapping_add(u32::from(fin))
    }

    fn take(&mut self, seq: u32, payload: &[u8], fin: bool) {
        let off = seq.wrapping_sub(self.base);
        if fin {
            self.fin_at = Some(off + payload.len() as u32);
        }
        if !payload.is_empty() {
            self.ooo.entry(off).or_insert_with(|| payload.to_vec());
        }
        // Move whatever is now in order.
        while let Some((&o, _)) = self.ooo.iter().next() {
            let have = self.got.len() as u32;
            if o > have {
                break;
            }
            let seg = self.ooo.remove(&o).unwrap();
            let skip = (have - o) as usize;
            if skip < seg.len() {
                self.got.extend_from_slice(&seg[skip..]);
            }
        }
        self.owe_ack = true;
    }

    /// Responses complete so far (by Content-Length).
    fn responses(&self) -> Vec<&[u8]> {
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(h) = find(&self.got[at..], b"\r\n\r\n") {
            let head = std::str::from_utf8(&self.got[at..at + h]).unwrap();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .expect("Content-Length")
                .parse()
                .unwrap();
            let end = at + h + 4 + len;
            if end > self.got.len() {
                break;
            }
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            out.push(&self.got[at + h + 4..end]);
            at = end;
        }
        out
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// Runs `conns` connections against `runner` with `threads` threads; returns the
/// reports and the board.
fn exercise(
    runner: Runner,
    threads: usize,
    conns: u16,
    tso: bool,
) -> (Vec<CoreReport>, &'static Board) {
    let image: &'static [u8] = Vec::leak(site::build_from_files(&files()).unwrap());
    let site = WithStatsPage::new(Site::load(image).unwrap());
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 512;
    let board: &'static Board =
        Box::leak(Box::new(Board::new(runner.name(), &runner.roles(threads))));
    let stop = AtomicBool::new(false);
    let wire = Arc::new(Wire::default());
    let rx = WireRx {
        wire: wire.clone(),
        loaned: Vec::new(),
    };
    let txs: Vec<WireTx> = (0..threads)
        .map(|_| WireTx {
            wire: wire.clone(),
            slot: vec![0; TX_HEAD_ROOM],
        })
        .collect();
    let plan = Shared {
        site,
        cfg,
        mac: SERVER_MAC,
        board: Some(board),
        stop: &stop,
        caps: NicCaps::default().with_tso(if tso { 65_000 } else { 0 }),
    };
    let want: BTreeMap<String, Vec<u8>> = files().into_iter().map(|(p, d, _)| (p, d)).collect();
    let reports = std::thread::scope(|s| {
        let server = s.spawn(|| run(runner, threads, rx, txs, &plan, |_| NoLog));
        let mut cs: Vec<Conn> = (0..conns)
            .map(|i| Conn {
                sport: 30_000 + i,
                snd_nxt: 1000 * u32::from(i),
                base: 0,
                got: Vec::new(),
                ooo: BTreeMap::new(),
                fin_at: None,
                established: false,
                requests: 0,
                closed: false,
                owe_ack: false,
            })
            .collect();
        let mut sent_frames = 0u64;
        {
            let mut inbox = wire.inbox.lock().unwrap();
            for c in &cs {
                inbox.push_back(frame(c.sport, c.snd_nxt, None, flags(true, false), &[]));
            }
            sent_frames += cs.len() as u64;
            wire.arrived.notify_all();
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while !cs.iter().all(|c| c.closed) {
            assert!(
                Instant::now() < deadline,
                "{} of {conns} connections done",
                cs.iter().filter(|c| c.closed).count()
            );
            let sent = std::mem::take(&mut *wire.outbox.lock().unwrap());
            if sent.is_empty() {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            }
            for f in &sent {
                let eth = EthernetFrame::new_checked(&f[..]).unwrap();
                let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
                assert!(ip.verify_checksum());
                let t = TcpPacket::new_checked(ip.payload()).unwrap();
                assert!(t.verify_checksum(SERVER_IP, CLIENT_IP));
                assert!(!t.rst(), "a reset");
                let c = &mut cs[usize::from(t.dst_port() - 30_000)];
                if t.syn() {
                    if !c.established {
                        c.established = true;
                        c.base = t.seq_number().wrapping_add(1);
                        c.snd_nxt += 1;
                    }
                    c.owe_ack = true;
                } else if t.fin() || !t.payload().is_empty() {
                    c.take(t.seq_number(), t.payload(), t.fin());
                }
            }
            let mut to_server = Vec::new();
            for c in cs.iter_mut().filter(|c| c.owe_ack && !c.closed) {
                c.owe_ack = false;
                let done = c.responses().len();
                let mut payload: &[u8] = &[];
                if c.requests < 2 && done == c.requests {
                    payload = REQ[c.requests].as_bytes();
                    c.requests += 1;
                }
                let fin = c.fin_at.is_some_and(|f| f as usize == c.got.len());
                to_server.push(frame(
                    c.sport,
                    c.snd_nxt,
                    Some(c.rcv_nxt()),
                    flags(false, fin),
                    payload,
                ));
                c.snd_nxt += payload.len() as u32 + u32::from(fin);
                if fin {
                    c.closed = true;
                }
            }
            sent_frames += to_server.len() as u64;
            let mut inbox = wire.inbox.lock().unwrap();
            inbox.extend(to_server);
            wire.arrived.notify_all();
        }
        for c in &cs {
            let r = c.responses();
            assert_eq!(r.len(), 2, "port {}", c.sport);
            assert!(r[0] == want[SMALL], "small body on {}", c.sport);
            assert!(r[1] == want[BIG], "big body on {}", c.sport);
        }
        // Let the last ACKs reach the server: read the board (published every 10 ms)
        // until the server has handled every frame sent and no TCB is left.
        let row = threads;
        let deadline = Instant::now() + Duration::from_secs(10);
        while (board.snapshot(row).stat("rx_frames") < sent_frames
            || board.snapshot(row).stat("tcbs_in_use") != 0)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
            wire.outbox.lock().unwrap().clear();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        server.join().unwrap()
    });
    (reports, board)
}

fn check(runner: Runner, threads: usize, tso: bool) {
    // Whether a worker thread gets to step depends on the OS scheduler: on a loaded
    // machine the thread that owns the device may do all the work of one short run. Up
    // to 5 runs (each fully checked) must show a worker stepping at least once.
    for attempt in 1..=5 {
        if check_once(runner, threads, tso) {
            return;
        }
        eprintln!("{runner:?} with {threads} threads: no worker stepped in run {attempt}");
    }
    panic!("{runner:?} with {threads} threads: no worker stepped in 5 runs");
}

/// One fully checked run; returns whether a worker thread stepped (always true for one
/// thread or the serial runner).
fn check_once(runner: Runner, threads: usize, tso: bool) -> bool {
    let conns = 120;
    let (reports, board) = exercise(runner, threads, conns, tso);
    assert_eq!(
        reports.len(),
        threads + 1,
        "a report per thread and the server's"
    );
    let server = reports.last().unwrap();
    assert_eq!(server.role, Role::Server);
    let s = &server.stats;
    assert_eq!(s.http_2xx, 2 * u64::from(conns), "{s:?}");
    assert_eq!(s.tcp_accepted, u64::from(conns));
    assert_eq!(s.tx_tso_frames > 0, tso, "offloaded frames: {s:?}");
    assert_eq!(s.tcbs_in_use, 0, "no TCB left: {s:?}");
    assert_eq!(s.tcp_closed, u64::from(conns));
    assert_eq!(s.tcp_rst_sent + s.tcp_timeouts, 0, "{s:?}");
    assert_eq!(
        board.snapshot(threads).stat("http_requests"),
        2 * u64::from(conns)
    );
    // Every thread that takes connections did some of the steps; the time split of each
    // thread stays within its elapsed time.
    let steps: u64 = reports[..threads].iter().map(|r| r.times.busy_polls).sum();
    assert!(steps >= 2 * u64::from(conns), "steps {steps}");
    for r in &reports[..threads] {
        let busy = r.times.rcv_ns + r.times.http_ns + r.dispatch.drain_ns + r.lock_ns;
        assert!(busy <= r.run.elapsed_ns + 1_000_000, "{r:?}");
        assert!(r.run.elapsed_ns > 0);
    }
    threads == 1
        || runner == Runner::Serial
        || reports[1..threads].iter().any(|r| r.times.busy_polls > 0)
}

#[test]
fn serial_serves_every_byte() {
    check(Runner::Serial, 1, false);
}

#[test]
fn pool_serves_every_byte_with_1_2_and_4_threads() {
    for t in [1, 2, 4] {
        check(Runner::Pool, t, false);
    }
}

#[test]
fn workshare_serves_every_byte_with_1_2_and_4_threads() {
    for t in [1, 2, 4] {
        check(Runner::Workshare, t, false);
    }
}

#[test]
fn tasks_serves_every_byte_with_1_2_and_4_threads() {
    for t in [1, 2, 4] {
        check(Runner::Tasks, t, false);
    }
}

/// Every runner with segmentation offload: the frames built into the threads' batches
/// keep their offload request on the way to the device (the big file goes out as
/// offloaded frames, cut and checked by the wire).
#[test]
fn every_runner_serves_with_segmentation_offload() {
    for (runner, threads) in [
        (Runner::Serial, 1),
        (Runner::Pool, 2),
        (Runner::Workshare, 2),
        (Runner::Tasks, 2),
    ] {
        check(runner, threads, true);
    }
}

#[test]
fn roles_have_a_row_per_thread_and_the_server() {
    assert_eq!(
        Runner::Pool.roles(3),
        [Role::Net, Role::Worker, Role::Worker, Role::Server]
    );
    assert_eq!(Runner::Pool.roles(1), [Role::NetHttp, Role::Server]);
    assert_eq!(Runner::Serial.roles(1), [Role::Single, Role::Server]);
    assert_eq!(
        Runner::Tasks.roles(2),
        [Role::NetHttp, Role::Worker, Role::Server]
    );
    assert_eq!(Runner::Serial.max_threads(), 1);
}
