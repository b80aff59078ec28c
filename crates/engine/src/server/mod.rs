//! The per-core server: one instance owns a TCB array, a port table, a run list and its
//! counters, and is driven by [`Server::poll`] over one NIC queue pair. Frames are handled
//! to completion (Ethernet → ARP | IPv4 → ICMP | TCP → HTTP); nothing here blocks,
//! allocates after [`Server::new`], or panics on what a peer sends.
//!
//! Scheduling follows paper 004: the receive path has priority. With [`Sched::Imt`] the
//! server looks at the receive ring again after every single HTTP step; with
//! [`Sched::Ist`] one HTTP pass serves every connection on the run list first.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

mod split;
pub use split::Ready;

use crate::cores::board::{self, Board};
pub use crate::http::log::{AccessLog, AccessRecord, NoLog};
use crate::http::{self, Parse};
use crate::nic::{Clock, Nic, RxFrame, RxRing, Tso, TxRing, TX_HEAD_ROOM};
use crate::resource::Lookup;
use crate::stats::{CoreTimes, Stats, Stay};
use crate::tcp::isn::IsnGenerator;
use crate::tcp::port_table::{Links, Peer, PortTable};
use crate::tcp::seq;
use crate::tcp::tcb::{Response, State, Tcb, NO_DYN, RTO_INITIAL_MS};
use crate::wire::{
    arp, checksum, ethernet, ipv4, tcp as wtcp, ArpOperation, ArpPacket, ArpRepr, EtherType,
    EthernetAddress, EthernetFrame, IcmpPacket, IcmpRepr, IpProtocol, Ipv4Address, Ipv4Packet,
    Ipv4Repr, TcpPacket,
};

/// Which HTTP scheduling policy the server uses (paper 004 §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sched {
    /// Internal multi-tasking: after each HTTP step, look at the receive ring again.
    #[default]
    Imt,
    /// Internal single task: one pass over the whole run list, then receive.
    Ist,
}

/// Timeouts, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// A request whose head is not complete after this long gets 408 and is closed.
    pub request_ms: u64,
    /// A keep-alive connection with nothing to do is closed after this long.
    pub idle_ms: u64,
    /// A connection whose peer makes no progress (zero window, no ACKs, half-closed) is
    /// aborted after this long.
    pub stall_ms: u64,
    /// Retransmissions of one segment (or of the SYN-ACK) before the connection is aborted.
    pub max_retries: u8,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request_ms: 10_000,
            idle_ms: 30_000,
            stall_ms: 60_000,
            max_retries: 8,
        }
    }
}

/// Server configuration; capacities are fixed at [`Server::new`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Our IPv4 address.
    pub ip: Ipv4Address,
    /// Prefix length of the link's subnet.
    pub prefix_len: u8,
    /// Router for clients beyond the link (frames from off-link sources are dropped
    /// without one).
    pub gateway: Option<Ipv4Address>,
    /// TCP port served.
    pub port: u16,
    /// Number of TCBs (the most connections at once).
    pub tcbs: usize,
    /// Bytes of request the server buffers per connection (at least `http::MAX_REQUEST`).
    pub rx_buffer: usize,
    /// Scheduling policy.
    pub sched: Sched,
    /// Secret for RFC 6528 initial sequence numbers: 128 bits from the platform's entropy
    /// at start. There is no default: a constant key would make ISNs predictable.
    pub isn_key: [u8; 16],
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Value of the `Server` header.
    pub server_name: &'static str,
}

impl Config {
    /// A configuration with defaults for everything but the address and the ISN secret
    /// (random bytes from the platform: `getrandom` on the host, RDRAND on the kernel).
    pub fn new(ip: Ipv4Address, prefix_len: u8, isn_key: [u8; 16]) -> Config {
        Config {
            ip,
            prefix_len,
            gateway: None,
            port: 80,
            tcbs: 1024,
            rx_buffer: http::MAX_REQUEST,
            sched: Sched::Imt,
            isn_key,
            timeouts: Timeouts::default(),
            server_name: "bareweb",
        }
    }
}

/// Receive bursts (IMT: each followed by one HTTP step; IST: by one pass) per poll.
const ROUND_BUDGET: u32 = 64;
/// Frames taken from the receive ring per burst.
const RX_BURST: usize = 32;
/// Our receive MSS for a 1500-byte MTU.
const OUR_MSS: u16 = 1460;
/// Largest TCP payload of one offloaded frame: the IPv4 total length must hold it with a
/// 20-byte IPv4 header and up to 60 bytes of TCP header.
const TSO_LIMIT: usize = 65535 - 20 - 60;
/// Most response-head bytes an offloaded frame may carry: what the transmit slot holds
/// after the largest Ethernet + IPv4 + TCP header.
const TSO_HEAD_MAX: usize = TX_HEAD_ROOM - L2L3 - 60;
/// Offset of the TCP checksum field in the TCP header.
const TCP_CHECKSUM_AT: usize = 16;
/// Ethernet + IPv4 header bytes in front of a TCP header.
const L2L3: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN;

struct TcbArray(Vec<Tcb>);

impl Links for TcbArray {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn peer(&self, i: u32) -> Peer {
        self.0[i as usize].peer
    }
    fn next(&self, i: u32) -> u32 {
        self.0[i as usize].chain
    }
    fn set_next(&mut self, i: u32, next: u32) {
        self.0[i as usize].chain = next;
    }
}

/// A segment to build: which TCB, which flags, which sequence range of its stream.
#[derive(Clone, Copy)]
struct Seg {
    seq: u32,
    len: u32,
    syn: bool,
    fin: bool,
    rst: bool,
    ack: bool,
}

/// The per-core server.
pub struct Server<L: Lookup<'static>> {
    cfg: Config,
    site: L,
    mac: EthernetAddress,
    tcbs: TcbArray,
    ports: PortTable,
    free: Vec<u32>,
    run: VecDeque<u32>,
    rx_slab: Vec<u8>,
    head_slab: Vec<u8>,
    isn: IsnGenerator,
    stats: Stats,
    next_tick_ns: u64,
    now_ns: u64,
    unix_secs: u64,
    /// Largest TCP payload of one frame the NIC segments itself (0: no offload), from
    /// `NicCaps::tso_max` at every poll.
    tso_max: u32,
    times: CoreTimes,
    stay: Stay,
    /// Connections freed this round, reported to `TxRing::connection_closed` at its end.
    closed: Vec<(Peer, u64)>,
    stats_page: Option<StatsPage>,
}

/// The stats JSON (issue 4): the first dynamic response. Its bytes are rendered into one
/// of a few per-server buffers, allocated once, which the connection holds until the
/// response is acknowledged (retransmissions re-read them); none free means 503.
struct StatsPage {
    board: &'static Board,
    core: usize,
    pool: Vec<u8>,
    free: Vec<u8>,
}

/// Dynamic-response buffers per server, and their size.
const DYN_SLOTS: usize = 4;
const DYN_MAX: usize = board::JSON_MAX;

/// Interval of the timer scan over all TCBs.
const TICK_NS: u64 = 10_000_000;

impl<L: Lookup<'static>> Server<L> {
    /// Allocates every table once. Panics only on a configuration that cannot work
    /// (zero TCBs, more than 2^31 TCBs, a receive buffer smaller than one request).
    pub fn new(cfg: Config, site: L, mac: EthernetAddress) -> Server<L> {
        assert!(
            cfg.tcbs > 0 && cfg.tcbs < (1 << 31),
            "tcbs must be in 1..2^31"
        );
        assert!(cfg.rx_buffer >= 1024, "rx_buffer too small");
        let n = cfg.tcbs;
        Server {
            isn: IsnGenerator::new(cfg.isn_key),
            tcbs: TcbArray(vec![Tcb::free(); n]),
            ports: PortTable::new(),
            free: (0..n as u32).rev().collect(),
            run: VecDeque::with_capacity(n),
            rx_slab: vec![0; n * cfg.rx_buffer],
            head_slab: vec![0; n * http::HEAD_MAX],
            stats: Stats::default(),
            next_tick_ns: 0,
            now_ns: 0,
            unix_secs: 0,
            tso_max: 0,
            times: CoreTimes::default(),
            stay: Stay::default(),
            // A round frees at most the TCBs in use plus those its frames open.
            closed: Vec::with_capacity(n + (ROUND_BUDGET as usize) * RX_BURST),
            stats_page: None,
            site,
            mac,
            cfg,
        }
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// TCBs in use.
    pub fn active(&self) -> usize {
        self.cfg.tcbs - self.free.len()
    }

    /// Where this core's time went (RCV / HTTP; Main is the rest).
    pub fn times(&self) -> &CoreTimes {
        &self.times
    }

    /// Stay times and parallel requests.
    pub fn stay(&self) -> &Stay {
        &self.stay
    }

    /// Answers `GET /.well-known/bareweb/stats` with the JSON of `board`, where this
    /// server is core `core` (it publishes its own row first, so that row is current).
    /// Allocates the response buffers now, once. Without this call the path is the
    /// site's, as before.
    pub fn serve_stats(&mut self, board: &'static Board, core: usize) {
        self.stats_page = Some(StatsPage {
            board,
            core,
            pool: vec![0; DYN_SLOTS * DYN_MAX],
            free: (0..DYN_SLOTS as u8).collect(),
        });
    }

    /// One round: receive a burst and handle it, run HTTP work under the policy, fire due
    /// timers, flush the transmit ring once. Returns whether anything was done.
    pub fn poll<N: Nic, C: Clock, A: AccessLog>(
        &mut self,
        nic: &mut N,
        clock: &C,
        log: &mut A,
    ) -> bool {
        self.now_ns = clock.now_ns();
        self.unix_secs = clock.unix_secs();
        self.tso_max = nic.caps().tso_max.min(TSO_LIMIT) as u32;
        let (rx, tx) = nic.split();
        let mut worked = false;
        let mut frames = [RxFrame { buf: 0, len: 0 }; RX_BURST];
        // Bounded so timers run and the transmit ring is flushed at least every
        // ROUND_BUDGET receive bursts, however busy the link.
        let mut rounds = 0;
        // Time split (issue 4): a burst that brought frames counts as RCV up to the end of
        // their handling, an HTTP step as HTTP; empty bursts and the rest are Main.
        let mut mark = self.now_ns;
        match self.cfg.sched {
            Sched::Imt => {
                while rounds < ROUND_BUDGET {
                    rounds += 1;
                    // The clock as last read, so a long poll does not stamp late frames
                    // (and stay times) with its start.
                    self.now_ns = mark;
                    let n = rx.burst(&mut frames);
                    for f in &frames[..n] {
                        self.handle_frame(rx.bytes(f), tx);
                        rx.recycle(*f);
                    }
                    if n > 0 {
                        mark = self.times.add_rcv(mark, clock.now_ns());
                    }
                    let stepped = match self.run.pop_front() {
                        Some(id) => {
                            self.http_step(id, tx, log);
                            true
                        }
                        None => false,
                    };
                    if stepped {
                        mark = self.times.add_http(mark, clock.now_ns());
                    }
                    if n == 0 && !stepped {
                        break;
                    }
                    worked = true;
                }
            }
            Sched::Ist => {
                while rounds < ROUND_BUDGET {
                    rounds += 1;
                    // The clock as last read, so a long poll does not stamp late frames
                    // (and stay times) with its start.
                    self.now_ns = mark;
                    let n = rx.burst(&mut frames);
                    for f in &frames[..n] {
                        self.handle_frame(rx.bytes(f), tx);
                        rx.recycle(*f);
                    }
                    if n > 0 {
                        mark = self.times.add_rcv(mark, clock.now_ns());
                    }
                    let pass = self.run.len();
                    for _ in 0..pass {
                        if let Some(id) = self.run.pop_front() {
                            self.http_step(id, tx, log);
                        }
                    }
                    if pass > 0 {
                        mark = self.times.add_http(mark, clock.now_ns());
                    }
                    if n == 0 && pass == 0 {
                        break;
                    }
                    worked = true;
                }
            }
        }
        if worked {
            self.times.busy_polls += 1;
        }
        if self.now_ns >= self.next_tick_ns {
            self.next_tick_ns = self.now_ns + TICK_NS;
            self.timers(tx, log);
        }
        for (peer, seen) in self.closed.drain(..) {
            tx.connection_closed(peer, seen);
        }
        tx.flush();
        worked
    }

    // ---------------------------------------------------------------- receive path

    fn handle_frame<T: TxRing>(&mut self, bytes: &[u8], tx: &mut T) {
        self.stats.rx_frames += 1;
        let frame = match EthernetFrame::new_checked(bytes) {
            Ok(f) => f,
            Err(e) => return self.count(e),
        };
        let dst = frame.dst_addr();
        if dst != self.mac && !dst.is_broadcast() {
            self.stats.drop_not_for_us += 1;
            return;
        }
        match frame.ethertype() {
            EtherType::Arp => self.handle_arp(frame.src_addr(), frame.payload(), tx),
            EtherType::Ipv4 => self.handle_ipv4(frame.src_addr(), frame.payload(), tx),
            _ => self.stats.drop_not_for_us += 1,
        }
    }

    fn count(&mut self, e: crate::wire::Error) {
        use crate::wire::Error;
        match e {
            Error::Truncated => self.stats.drop_truncated += 1,
            Error::Malformed => self.stats.drop_malformed += 1,
            Error::Checksum => self.stats.drop_checksum += 1,
            Error::Unsupported => self.stats.drop_not_for_us += 1,
        }
    }

    fn handle_arp<T: TxRing>(&mut self, src_mac: EthernetAddress, payload: &[u8], tx: &mut T) {
        let repr = match ArpPacket::new_checked(payload).and_then(|p| ArpRepr::parse(&p)) {
            Ok(r) => r,
            Err(e) => return self.count(e),
        };
        if repr.operation != ArpOperation::Request || repr.target_protocol_addr != self.cfg.ip {
            self.stats.drop_not_for_us += 1;
            return;
        }
        let reply = ArpRepr {
            operation: ArpOperation::Reply,
            source_hardware_addr: self.mac,
            source_protocol_addr: self.cfg.ip,
            target_hardware_addr: repr.source_hardware_addr,
            target_protocol_addr: repr.source_protocol_addr,
        };
        let mac = self.mac;
        let Some(buf) = tx.slot() else {
            self.stats.tx_ring_full += 1;
            return;
        };
        let len = ethernet::HEADER_LEN + arp::BUFFER_LEN;
        let mut frame = EthernetFrame::new_unchecked(&mut buf[..len]);
        ethernet::Repr {
            src_addr: mac,
            dst_addr: src_mac,
            ethertype: EtherType::Arp,
        }
        .emit(&mut frame);
        reply.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
        self.post(tx, len, &[]);
        self.stats.arp_replies += 1;
    }

    fn handle_ipv4<T: TxRing>(&mut self, src_mac: EthernetAddress, payload: &[u8], tx: &mut T) {
        let packet = match Ipv4Packet::new_checked(payload) {
            Ok(p) => p,
            Err(e) => return self.count(e),
        };
        if packet.is_fragment() {
            self.stats.drop_fragment += 1;
            return;
        }
        let repr = match Ipv4Repr::parse(&packet) {
            Ok(r) => r,
            Err(e) => return self.count(e),
        };
        if repr.dst_addr != self.cfg.ip {
            self.stats.drop_not_for_us += 1;
            return;
        }
        let src = repr.src_addr;
        if src.is_multicast() || src.is_broadcast() || src.is_unspecified() {
            self.stats.drop_malformed += 1;
            return;
        }
        if !src.in_subnet(self.cfg.ip, self.cfg.prefix_len) && self.cfg.gateway.is_none() {
            self.stats.drop_no_route += 1;
            return;
        }
        let body = packet.payload();
        match repr.next_header {
            IpProtocol::Icmp => self.handle_icmp(src_mac, src, body, tx),
            IpProtocol::Tcp => self.handle_tcp(src_mac, src, body, tx),
            _ => self.stats.drop_not_for_us += 1,
        }
    }

    fn handle_icmp<T: TxRing>(
        &mut self,
        src_mac: EthernetAddress,
        src: Ipv4Address,
        body: &[u8],
        tx: &mut T,
    ) {
        let packet = match IcmpPacket::new_checked(body) {
            Ok(p) => p,
            Err(e) => return self.count(e),
        };
        let repr = match IcmpRepr::parse(&packet) {
            Ok(r) => r,
            Err(e) => return self.count(e),
        };
        let IcmpRepr::EchoRequest {
            ident,
            seq_no,
            data,
        } = repr
        else {
            self.stats.drop_not_for_us += 1;
            return;
        };
        let reply = IcmpRepr::EchoReply {
            ident,
            seq_no,
            data,
        };
        let icmp_len = reply.buffer_len();
        let len = L2L3 + icmp_len;
        if len > TX_HEAD_ROOM {
            self.stats.drop_malformed += 1;
            return;
        }
        let (mac, ip) = (self.mac, self.cfg.ip);
        let Some(buf) = tx.slot() else {
            self.stats.tx_ring_full += 1;
            return;
        };
        let buf = &mut buf[..len];
        write_l2l3(buf, mac, src_mac, ip, src, IpProtocol::Icmp, icmp_len);
        reply.emit(&mut IcmpPacket::new_unchecked(&mut buf[L2L3..]));
        self.post(tx, len, &[]);
        self.stats.icmp_echo += 1;
    }

    fn handle_tcp<T: TxRing>(
        &mut self,
        src_mac: EthernetAddress,
        src: Ipv4Address,
        body: &[u8],
        tx: &mut T,
    ) {
        let packet = match TcpPacket::new_checked(body) {
            Ok(p) => p,
            Err(e) => return self.count(e),
        };
        if !packet.verify_checksum(src, self.cfg.ip) {
            self.stats.drop_checksum += 1;
            return;
        }
        if packet.dst_port() != self.cfg.port {
            // RFC 9293 §3.10.7.1: a segment for a closed port gets a RST.
            if !packet.rst() {
                self.send_reset_for(src_mac, src, &packet, tx);
            } else {
                self.stats.drop_not_for_us += 1;
            }
            return;
        }
        let peer = Peer {
            ip: src.0,
            port: packet.src_port(),
        };
        match self.ports.find(&self.tcbs, peer) {
            Some(id) => self.segment_arrives(id, src_mac, &packet, tx),
            None => self.listen(src_mac, src, &packet, tx),
        }
    }

    /// LISTEN state (RFC 9293 §3.10.7.2).
    fn listen<T: TxRing>(
        &mut self,
        src_mac: EthernetAddress,
        src: Ipv4Address,
        p: &TcpPacket<&[u8]>,
        tx: &mut T,
    ) {
        let peer = Peer {
            ip: src.0,
            port: p.src_port(),
        };
        if p.rst() {
            return self.no_connection(peer);
        }
        if p.ack() || !p.syn() {
            self.send_reset_for(src_mac, src, p, tx);
            return self.no_connection(peer);
        }
        let opts = match wtcp::parse_options(p.options()) {
            Ok(o) => o,
            Err(e) => {
                self.count(e);
                return self.no_connection(peer);
            }
        };
        let Some(id) = self.free.pop() else {
            self.stats.tcp_no_tcb += 1;
            return self.no_connection(peer);
        };
        let now = self.now_ns;
        let iss = self
            .isn
            .isn((self.cfg.ip.0, self.cfg.port), (src.0, p.src_port()), now);
        let mss = u32::from(opts.mss.unwrap_or(536)).clamp(64, u32::from(OUR_MSS));
        let t = &mut self.tcbs.0[id as usize];
        *t = Tcb::free();
        t.state = State::SynReceived;
        t.peer = Peer {
            ip: src.0,
            port: p.src_port(),
        };
        t.peer_mac = src_mac;
        t.iss = iss;
        t.snd_una = iss;
        t.snd_nxt = iss;
        t.snd_max = iss;
        t.rcv_nxt = p.seq_number().wrapping_add(1);
        // RFC 7323 §2.2: the shift applies only if both sides send the option; we always
        // send ours (shift 0) when the peer offered one.
        t.snd_shift = opts.window_scale.map_or(0, |s| s.min(14));
        t.snd_wnd = u32::from(p.window_len()); // never scaled in a SYN
        t.snd_wl1 = p.seq_number();
        t.snd_wl2 = iss;
        t.mss = mss;
        t.cwnd = Tcb::initial_cwnd(mss);
        t.rto_ms = RTO_INITIAL_MS;
        t.last_heard_ns = now;
        let offer_ws = opts.window_scale.is_some();
        self.ports.insert(&mut self.tcbs, id);
        self.stats.tcp_accepted += 1;
        self.stats.tcbs_in_use = self.active() as u64;
        self.stats.tcbs_max = self.stats.tcbs_max.max(self.stats.tcbs_in_use);
        self.send_syn_ack(id, offer_ws, tx);
    }

    fn send_syn_ack<T: TxRing>(&mut self, id: u32, offer_ws: bool, tx: &mut T) {
        let t = &mut self.tcbs.0[id as usize];
        let seg = Seg {
            seq: t.iss,
            len: 0,
            syn: true,
            fin: false,
            rst: false,
            ack: true,
        };
        t.snd_nxt = t.iss.wrapping_add(1);
        t.snd_max = t.snd_nxt;
        t.rto_deadline_ns = self.now_ns + u64::from(t.rto_ms) * 1_000_000;
        self.emit(id, seg, Some((OUR_MSS, offer_ws.then_some(0))), tx);
    }

    /// Everything after LISTEN (RFC 9293 §3.10.7.3–4).
    fn segment_arrives<T: TxRing>(
        &mut self,
        id: u32,
        src_mac: EthernetAddress,
        p: &TcpPacket<&[u8]>,
        tx: &mut T,
    ) {
        let idx = id as usize;
        let seg_seq = p.seq_number();
        let payload = p.payload();
        let seg_len = payload.len() as u32 + u32::from(p.syn()) + u32::from(p.fin());
        let rcv_wnd = self.rcv_wnd(id);
        let t = &self.tcbs.0[idx];

        if t.state == State::SynReceived
            && p.syn()
            && !p.ack()
            && seg_seq.wrapping_add(1) == t.rcv_nxt
        {
            // Our SYN-ACK was lost: the client retransmitted its SYN.
            let offer_ws = t.snd_shift != 0
                || wtcp::parse_options(p.options()).is_ok_and(|o| o.window_scale.is_some());
            return self.send_syn_ack(id, offer_ws, tx);
        }

        // A SYN in a synchronized state, whatever its sequence number, gets a challenge
        // ACK (RFC 5961 §4, RFC 9293 §3.10.7.4 "fourth").
        if p.syn() && !p.rst() {
            self.stats.tcp_challenge_acks += 1;
            self.send_ack(id, tx);
            return;
        }

        // First: sequence number acceptability.
        let rcv_nxt = t.rcv_nxt;
        let acceptable = match (seg_len, rcv_wnd) {
            (0, 0) => seg_seq == rcv_nxt,
            (0, w) => seq::in_range(seg_seq, rcv_nxt, rcv_nxt.wrapping_add(w)),
            (_, 0) => false,
            (l, w) => {
                let end = rcv_nxt.wrapping_add(w);
                seq::in_range(seg_seq, rcv_nxt, end)
                    || seq::in_range(seg_seq.wrapping_add(l - 1), rcv_nxt, end)
            }
        };
        if !acceptable {
            self.stats.tcp_out_of_window += 1;
            if !p.rst() {
                self.send_ack(id, tx);
            }
            return;
        }

        // Second: RST (RFC 5961 §3.2).
        if p.rst() {
            if seg_seq == rcv_nxt {
                self.stats.tcp_rst_received += 1;
                self.free_tcb(id);
            } else {
                self.stats.tcp_challenge_acks += 1;
                self.send_ack(id, tx);
            }
            return;
        }

        // Fifth: ACK.
        if !p.ack() {
            return;
        }
        let ack = p.ack_number();
        let now = self.now_ns;
        let t = &mut self.tcbs.0[idx];
        t.peer_mac = src_mac;
        if t.state == State::SynReceived {
            if !(seq::lt(t.snd_una, ack) && seq::le(ack, t.snd_max)) {
                return self.send_reset_raw(id, ack, tx);
            }
            t.state = State::Synchronized;
            t.snd_una = ack;
            t.snd_wnd = u32::from(p.window_len()) << t.snd_shift;
            t.snd_wl1 = seg_seq;
            t.snd_wl2 = ack;
            t.rto_deadline_ns = 0;
            t.retries = 0;
            t.last_heard_ns = now;
            self.stats.tcp_established += 1;
        }
        let t = &mut self.tcbs.0[idx];
        if seq::gt(ack, t.snd_max) {
            // Acknowledges something not yet sent.
            return self.send_ack(id, tx);
        }
        let new_wnd = u32::from(p.window_len()) << t.snd_shift;
        let mut retransmit = false;
        if seq::gt(ack, t.snd_una) {
            let acked = ack.wrapping_sub(t.snd_una);
            if t.timing && seq::ge(ack, t.rtt_seq) {
                let us =
                    (now.saturating_sub(t.rtt_start_ns) / 1000).min(u64::from(u32::MAX)) as u32;
                t.rtt_sample(us);
                t.timing = false;
            }
            if t.in_recovery {
                if seq::ge(ack, t.recover) {
                    // Full acknowledgment (RFC 6582 §3.2 step 3).
                    t.snd_una = ack;
                    t.cwnd = t.ssthresh.min(t.flight().max(t.mss) + t.mss);
                    t.in_recovery = false;
                } else {
                    // Partial acknowledgment: retransmit the next hole, deflate.
                    t.snd_una = ack;
                    t.cwnd = t.cwnd.saturating_sub(acked).saturating_add(t.mss);
                    retransmit = true;
                }
            } else {
                t.snd_una = ack;
                t.grow_cwnd(acked);
            }
            if seq::lt(t.snd_nxt, t.snd_una) {
                t.snd_nxt = t.snd_una;
            }
            t.dupacks = 0;
            t.retries = 0;
            t.last_heard_ns = now;
            t.rto_deadline_ns = if t.flight() > 0 {
                now + u64::from(t.rto_ms) * 1_000_000
            } else {
                0
            };
            if t.fin_sent && seq::gt(ack, t.fin_seq) {
                t.fin_acked = true;
            }
        } else if ack == t.snd_una
            && payload.is_empty()
            && !p.fin()
            && new_wnd == t.snd_wnd
            && new_wnd != 0
            && t.flight() > 0
        {
            // RFC 5681 §2 duplicate ACK. One that advertises a zero window answers a window
            // probe or reports a full receiver, not a loss: retransmitting into a closed
            // window would be wasted, so it is not counted.
            t.dupacks = t.dupacks.saturating_add(1);
            if t.dupacks == 3
                && !t.in_recovery
                && seq::gt(ack.wrapping_sub(1), t.recover.wrapping_sub(1))
            {
                t.ssthresh = t.loss_ssthresh();
                t.recover = t.snd_max;
                t.cwnd = t.ssthresh + 3 * t.mss;
                t.in_recovery = true;
                t.timing = false;
                retransmit = true;
            } else if t.in_recovery {
                t.cwnd = t.cwnd.saturating_add(t.mss);
            }
        }
        // Window update (RFC 9293 §3.10.7.4, SND.WL1/WL2 rule).
        if seq::lt(t.snd_wl1, seg_seq) || (t.snd_wl1 == seg_seq && seq::le(t.snd_wl2, ack)) {
            t.snd_wnd = new_wnd;
            t.snd_wl1 = seg_seq;
            t.snd_wl2 = ack;
        }
        if retransmit {
            self.stats.tcp_fast_retransmits += 1;
            self.retransmit_una(id, tx);
        }

        // Seventh: segment text.
        let t = &mut self.tcbs.0[idx];
        if !payload.is_empty() || p.fin() {
            t.ack_pending = true;
        }
        let mut fin_in_order = p.fin();
        if !payload.is_empty() {
            if seq_in_order(seg_seq, t.rcv_nxt, payload.len()) && !t.peer_fin {
                let skip = t.rcv_nxt.wrapping_sub(seg_seq) as usize;
                let data = &payload[skip..];
                let cap = self.cfg.rx_buffer;
                let start = t.rx_len as usize;
                let take = data.len().min(cap - start);
                if !t.closing {
                    let base = idx * cap;
                    self.rx_slab[base + start..base + start + take].copy_from_slice(&data[..take]);
                    if t.rx_len == 0 && take > 0 {
                        t.request_start_ns = now;
                    }
                    t.rx_len += take as u32;
                }
                t.rcv_nxt = t.rcv_nxt.wrapping_add(take as u32);
                t.last_heard_ns = now;
                if take < data.len() {
                    fin_in_order = false; // the FIN lies beyond what we took
                }
            } else {
                self.stats.tcp_out_of_order += 1;
                fin_in_order = false;
            }
        }

        // Eighth: FIN.
        if fin_in_order && !t.peer_fin && seg_seq.wrapping_add(payload.len() as u32) == t.rcv_nxt {
            t.peer_fin = true;
            t.rcv_nxt = t.rcv_nxt.wrapping_add(1);
            t.last_heard_ns = now;
        }

        if t.fin_acked && t.peer_fin {
            // Both directions are closed. Acknowledge the peer's FIN if owed, then free
            // (no TIME-WAIT; see docs/tcp.md).
            if t.ack_pending {
                self.send_ack(id, tx);
            }
            let start = self.tcbs.0[idx].stay_start_ns;
            if start != 0 {
                self.stay.record(now.saturating_sub(start));
            }
            self.free_tcb(id);
            return;
        }
        let t = &self.tcbs.0[idx];
        let has_work = t.resp.is_some() || t.rx_len > 0 || t.peer_fin || t.ack_pending;
        if has_work {
            self.enqueue(id);
        }
    }

    fn enqueue(&mut self, id: u32) {
        let t = &mut self.tcbs.0[id as usize];
        if !t.queued {
            t.queued = true;
            self.run.push_back(id);
            self.stats.run_list_max = self.stats.run_list_max.max(self.run.len() as u64);
        }
    }

    fn rcv_wnd(&self, id: u32) -> u32 {
        let t = &self.tcbs.0[id as usize];
        (self.cfg.rx_buffer as u32)
            .saturating_sub(t.rx_len)
            .min(65535)
    }

    // ---------------------------------------------------------------- HTTP step

    /// The paper's HTTP task for one connection: start the next response if the previous
    /// one is acknowledged, then send what the windows allow.
    fn http_step<T: TxRing, A: AccessLog>(&mut self, id: u32, tx: &mut T, log: &mut A) {
        let idx = id as usize;
        self.tcbs.0[idx].queued = false;
        if self.tcbs.0[idx].state != State::Synchronized {
            return;
        }
        // A response is done when every byte of it is acknowledged.
        if let Some(r) = self.tcbs.0[idx].resp {
            if seq::ge(self.tcbs.0[idx].snd_una, r.end()) {
                self.tcbs.0[idx].resp = None;
                let slot = core::mem::replace(&mut self.tcbs.0[idx].dyn_slot, NO_DYN);
                self.release_dyn(slot);
            }
        }
        let t = &self.tcbs.0[idx];
        if t.resp.is_none() && !t.closing && t.rx_len > 0 {
            self.start_response(id, log);
        }
        let t = &mut self.tcbs.0[idx];
        if t.resp.is_none() && !t.closing && t.peer_fin && t.rx_len == 0 {
            // The client closed and asked for nothing more: close our side too.
            t.closing = true;
            t.fin_seq = t.snd_nxt;
        }
        self.output(id, tx);
        if self.tcbs.0[idx].ack_pending {
            self.send_ack(id, tx);
        }
    }

    fn start_response<A: AccessLog>(&mut self, id: u32, log: &mut A) {
        let idx = id as usize;
        let cap = self.cfg.rx_buffer;
        let rx_len = self.tcbs.0[idx].rx_len as usize;
        let rx = &self.rx_slab[idx * cap..idx * cap + rx_len];
        let head = &mut self.head_slab[idx * http::HEAD_MAX..(idx + 1) * http::HEAD_MAX];
        let now = self.unix_secs;
        let name = self.cfg.server_name;
        let mut dyn_slot = NO_DYN;
        let (resp, consumed) = match http::parse(rx) {
            Parse::Complete { request, len } => match self.stats_page.as_mut() {
                Some(page) if board::is_stats_target(request.target) => {
                    // The serving core's own row is published now, so it is current.
                    page.board
                        .publish_server(page.core, &self.stats, &self.times, &self.stay);
                    match page.free.pop() {
                        Some(slot) => {
                            dyn_slot = slot;
                            let s = usize::from(slot);
                            let out = &mut page.pool[s * DYN_MAX..(s + 1) * DYN_MAX];
                            let r = board::respond_stats(page.board, &request, now, name, out);
                            (r, len)
                        }
                        None => (http::respond_error(http::Status(503), now, name, head), len),
                    }
                }
                _ => (http::respond(&request, &self.site, now, name, head), len),
            },
            Parse::Partial => {
                let t = &self.tcbs.0[idx];
                if rx_len >= cap {
                    (
                        http::respond_error(http::Status(431), now, name, head),
                        rx_len,
                    )
                } else if t.peer_fin {
                    // The client half-closed in the middle of a request: nothing to answer.
                    let t = &mut self.tcbs.0[idx];
                    t.rx_len = 0;
                    return;
                } else {
                    return;
                }
            }
            Parse::Error(status) => (http::respond_error(status, now, name, head), rx_len),
        };
        let line_end = rx
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(rx.len())
            .min(consumed);
        let body_len = resp.body.as_ref().map_or(0, |b| b.end - b.start);
        log.record(&AccessRecord {
            peer: Ipv4Address(self.tcbs.0[idx].peer.ip),
            request_line: &rx[..line_end],
            status: resp.status,
            bytes: body_len,
            unix_secs: now,
        });
        self.stats.http_requests += 1;
        match resp.status {
            200..=299 => self.stats.http_2xx += 1,
            300..=399 => self.stats.http_3xx += 1,
            400..=499 => self.stats.http_4xx += 1,
            _ => self.stats.http_5xx += 1,
        }
        // Drop the consumed request; keep pipelined bytes that follow it.
        let base = idx * cap;
        self.rx_slab
            .copy_within(base + consumed..base + rx_len, base);
        let t = &mut self.tcbs.0[idx];
        t.rx_len = (rx_len - consumed) as u32;
        t.request_start_ns = if t.rx_len > 0 { self.now_ns } else { 0 };
        t.dyn_slot = dyn_slot;
        if t.stay_start_ns == 0 {
            t.stay_start_ns = self.now_ns.max(1);
            self.stay.parallel += 1;
            self.stay.parallel_max = self.stay.parallel_max.max(self.stay.parallel);
        }
        let (body, sums, sums_offset) = match resp.body {
            Some(b) => (&b.body.data[b.start..b.end], b.body, b.start as u32),
            None => (
                &[][..],
                crate::resource::Body {
                    data: &[],
                    block_sums: &[],
                },
                0,
            ),
        };
        let r = Response {
            start: t.snd_nxt,
            head_len: resp.head_len as u32,
            body,
            sums,
            sums_offset,
        };
        self.stats.http_bytes += u64::from(r.wire_len());
        t.resp = Some(r);
        // Close after this response when HTTP says so, or when the client has already
        // half-closed and sent nothing more: then the FIN rides the last data segment.
        if resp.close || (t.peer_fin && t.rx_len == 0) {
            t.closing = true;
            t.fin_seq = r.end();
        }
    }

    // ---------------------------------------------------------------- send path

    /// Sends new data while the congestion and receive windows allow, with the FIN on
    /// the last segment when the connection is closing.
    fn output<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let idx = id as usize;
        loop {
            let t = &self.tcbs.0[idx];
            let end = t.resp.map_or(t.snd_nxt, |r| r.end());
            let end = if t.fin_sent && seq::gt(end, t.fin_seq) {
                t.fin_seq
            } else {
                end
            };
            let avail = if seq::lt(t.snd_nxt, end) {
                end.wrapping_sub(t.snd_nxt)
            } else {
                0
            };
            let want_fin = t.closing && !t.fin_sent && t.snd_nxt.wrapping_add(avail) == t.fin_seq;
            if avail == 0 && !want_fin {
                break;
            }
            let wnd = t.cwnd.min(t.snd_wnd);
            let flight = t.flight();
            if avail > 0 && flight >= wnd {
                if t.snd_wnd == 0 && t.rto_deadline_ns == 0 {
                    // Zero window: arm the persist timer (probes go out on the RTO path).
                    let deadline = self.now_ns + u64::from(t.rto_ms) * 1_000_000;
                    self.tcbs.0[idx].rto_deadline_ns = deadline;
                }
                break;
            }
            let room = wnd.saturating_sub(flight);
            // With segmentation offload a frame carries whole segments up to the NIC's
            // limit (the device cuts them); the windows bound it exactly as they bound
            // single segments.
            // Head bytes are copied into the transmit slot, so a frame may carry only as
            // many as the slot holds: while more remain (a dynamic response keeps its whole
            // body there), segments are single.
            let head_left = t.resp.map_or(0, |r| {
                let head_end = r.start.wrapping_add(r.head_len);
                if seq::lt(t.snd_nxt, head_end) {
                    head_end.wrapping_sub(t.snd_nxt)
                } else {
                    0
                }
            });
            let seg_max = if self.tso_max > t.mss && head_left as usize <= TSO_HEAD_MAX {
                self.tso_max / t.mss * t.mss
            } else {
                t.mss
            };
            let mut len = avail.min(room).min(seg_max);
            if len > t.mss && len < avail {
                // An offloaded frame that does not end the response carries whole
                // segments only: its tail would be a silly small segment.
                len -= len % t.mss;
            }
            // Sender-side silly window avoidance (RFC 9293 §3.8.6.2.1): hold back a
            // small segment while data is in flight unless it ends the response.
            if len < t.mss && len < avail && flight > 0 {
                break;
            }
            let fin = want_fin && len == avail;
            let seg = Seg {
                seq: t.snd_nxt,
                len,
                syn: false,
                fin,
                rst: false,
                ack: true,
            };
            if !self.emit(id, seg, None, tx) {
                self.enqueue(id); // ring full: try again next round
                break;
            }
            let now = self.now_ns;
            let t = &mut self.tcbs.0[idx];
            let seg_end = t.snd_nxt.wrapping_add(len);
            if !t.timing && len > 0 && seq::gt(seg_end, t.snd_max) {
                // Time this segment's first new octets: never sent before, so the ACK
                // that covers them is unambiguous (Karn) even when the segment begins
                // with retransmitted data after a timeout. Up to one MSS of them: an
                // offloaded frame is many segments, and one loss among them would void
                // a sample that waited for all.
                let first_new = if seq::gt(t.snd_max, t.snd_nxt) {
                    t.snd_max
                } else {
                    t.snd_nxt
                };
                t.timing = true;
                t.rtt_seq = first_new.wrapping_add(seg_end.wrapping_sub(first_new).min(t.mss));
                t.rtt_start_ns = now;
            }
            t.snd_nxt = t.snd_nxt.wrapping_add(len + u32::from(fin));
            if fin {
                t.fin_sent = true;
            }
            if seq::gt(t.snd_nxt, t.snd_max) {
                t.snd_max = t.snd_nxt;
            }
            if t.rto_deadline_ns == 0 {
                t.rto_deadline_ns = now + u64::from(t.rto_ms) * 1_000_000;
            }
            if fin {
                break;
            }
        }
    }

    /// Retransmits one segment at snd_una (fast retransmit, partial ACK, timeout).
    fn retransmit_una<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let t = &self.tcbs.0[id as usize];
        let end = t.resp.map_or(t.snd_una, |r| r.end());
        let end = if t.fin_sent { t.fin_seq } else { end };
        let avail = if seq::lt(t.snd_una, end) {
            end.wrapping_sub(t.snd_una)
        } else {
            0
        };
        let len = avail.min(t.mss);
        let fin = t.fin_sent && t.snd_una.wrapping_add(len) == t.fin_seq;
        if len == 0 && !fin {
            return;
        }
        let seg = Seg {
            seq: t.snd_una,
            len,
            syn: false,
            fin,
            rst: false,
            ack: true,
        };
        self.emit(id, seg, None, tx);
    }

    fn send_ack<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let t = &self.tcbs.0[id as usize];
        let seg = Seg {
            seq: t.snd_nxt,
            len: 0,
            syn: false,
            fin: false,
            rst: false,
            ack: true,
        };
        self.emit(id, seg, None, tx);
    }

    /// Builds and posts one segment of connection `id`; its payload is the stream bytes
    /// `[seg.seq, seg.seq + seg.len)`: head bytes copied from the head slab, body bytes
    /// borrowed from the site image. Returns false when the ring is full.
    fn emit<T: TxRing>(
        &mut self,
        id: u32,
        seg: Seg,
        syn_opts: Option<(u16, Option<u8>)>,
        tx: &mut T,
    ) -> bool {
        let idx = id as usize;
        let rcv_wnd = self.rcv_wnd(id) as u16;
        let t = &mut self.tcbs.0[idx];
        let repr = wtcp::Repr {
            src_port: self.cfg.port,
            dst_port: t.peer.port,
            seq_number: seg.seq,
            ack_number: seg.ack.then_some(t.rcv_nxt),
            flags: wtcp::Flags {
                fin: seg.fin,
                syn: seg.syn,
                rst: seg.rst,
                psh: seg.fin || seg.len > 0,
                ack: seg.ack,
            },
            window_len: rcv_wnd,
            max_seg_size: syn_opts.map(|o| o.0),
            window_scale: syn_opts.and_then(|o| o.1),
        };
        if seg.ack {
            t.ack_pending = false;
        }
        // Where the payload comes from.
        let (head_part, body_part, body_from) = match t.resp {
            Some(r) if seg.len > 0 => {
                let off = seg.seq.wrapping_sub(r.start);
                let end = off + seg.len;
                let h0 = off.min(r.head_len) as usize;
                let h1 = end.min(r.head_len) as usize;
                let b0 = off.saturating_sub(r.head_len) as usize;
                let b1 = end.saturating_sub(r.head_len) as usize;
                (
                    h0..h1,
                    &r.body[b0.min(r.body.len())..b1.min(r.body.len())],
                    (r, b0),
                )
            }
            _ => (
                0..0,
                &[][..],
                (
                    Response {
                        start: 0,
                        head_len: 0,
                        body: &[],
                        sums: crate::resource::Body {
                            data: &[],
                            block_sums: &[],
                        },
                        sums_offset: 0,
                    },
                    0,
                ),
            ),
        };
        let peer_ip = Ipv4Address(t.peer.ip);
        let peer_mac = t.peer_mac;
        let (mac, ip) = (self.mac, self.cfg.ip);
        let tcp_hdr = repr.header_len();
        let payload_len = head_part.len() + body_part.len();
        let tso = (seg.len > t.mss).then_some(Tso {
            mss: t.mss as u16,
            l4_offset: L2L3 as u16,
            header_len: (L2L3 + tcp_hdr) as u16,
        });
        let Some(buf) = tx.slot() else {
            self.stats.tx_ring_full += 1;
            return false;
        };
        let frame_head = L2L3 + tcp_hdr + head_part.len();
        let Some(buf) = buf.get_mut(..frame_head) else {
            // Cannot happen (`output` bounds the head bytes of a frame by the slot); a bug
            // here must cost a frame, not the server.
            self.stats.tx_ring_full += 1;
            return false;
        };
        write_l2l3(
            buf,
            mac,
            peer_mac,
            ip,
            peer_ip,
            IpProtocol::Tcp,
            tcp_hdr + payload_len,
        );
        repr.emit_header(&mut buf[L2L3..L2L3 + tcp_hdr]);
        let head_bytes = match (&self.stats_page, t.dyn_slot) {
            (Some(page), s) if s != NO_DYN => {
                &page.pool[usize::from(s) * DYN_MAX..(usize::from(s) + 1) * DYN_MAX]
                    [head_part.clone()]
            }
            _ => &self.head_slab[idx * http::HEAD_MAX..][head_part.clone()],
        };
        buf[L2L3 + tcp_hdr..].copy_from_slice(head_bytes);
        // Checksum: pseudo-header + TCP header + head bytes, then the body from its
        // stored block sums (the body starts at payload offset head_part.len()).
        let tcp_len = (tcp_hdr + payload_len) as u16;
        let mut acc = checksum::pseudo_header_v4(ip.0, peer_ip.0, 6, tcp_len);
        if let Some(tso) = tso {
            // The device completes every segment's checksum: leave it the folded
            // pseudo-header sum, not complemented (a partial checksum).
            let partial = checksum::fold(acc);
            buf[L2L3 + TCP_CHECKSUM_AT..L2L3 + TCP_CHECKSUM_AT + 2]
                .copy_from_slice(&partial.to_be_bytes());
            match tx.post_tso(frame_head, body_part, tso) {
                Ok(()) => {
                    self.stats.tx_frames += 1;
                    self.stats.tx_tso_frames += 1;
                }
                Err(_) => self.stats.tx_ring_full += 1,
            }
            return true;
        }
        acc = checksum::accumulate(acc, &buf[L2L3..]);
        let mut sum = checksum::fold(acc);
        if !body_part.is_empty() {
            let (r, b0) = body_from;
            let s0 = r.sums_offset as usize + b0;
            let body_sum = r.sums.sum(s0, s0 + body_part.len());
            sum = checksum::combine(sum, body_sum, tcp_hdr + head_part.len());
        }
        buf[L2L3 + TCP_CHECKSUM_AT..L2L3 + TCP_CHECKSUM_AT + 2]
            .copy_from_slice(&(!sum).to_be_bytes());
        self.post(tx, frame_head, body_part);
        true
    }

    fn post<T: TxRing>(&mut self, tx: &mut T, head_len: usize, body: &'static [u8]) {
        match tx.post(head_len, body) {
            Ok(()) => self.stats.tx_frames += 1,
            Err(_) => self.stats.tx_ring_full += 1,
        }
    }

    /// RST for a segment that belongs to no connection (RFC 9293 §3.10.7.1).
    fn send_reset_for<T: TxRing>(
        &mut self,
        dst_mac: EthernetAddress,
        dst: Ipv4Address,
        p: &TcpPacket<&[u8]>,
        tx: &mut T,
    ) {
        let (seq_number, ack_number) = if p.ack() {
            (p.ack_number(), None)
        } else {
            let len = p.payload().len() as u32 + u32::from(p.syn()) + u32::from(p.fin());
            (0, Some(p.seq_number().wrapping_add(len)))
        };
        let repr = wtcp::Repr {
            src_port: p.dst_port(),
            dst_port: p.src_port(),
            seq_number,
            ack_number,
            flags: wtcp::Flags {
                fin: false,
                syn: false,
                rst: true,
                psh: false,
                ack: ack_number.is_some(),
            },
            window_len: 0,
            max_seg_size: None,
            window_scale: None,
        };
        self.send_bare(dst_mac, dst, &repr, tx);
    }

    /// RST on an existing connection with a given sequence number (the caller frees the
    /// TCB where the connection ends; in SYN-RECEIVED an unacceptable ACK keeps it).
    fn send_reset_raw<T: TxRing>(&mut self, id: u32, seq_number: u32, tx: &mut T) {
        let t = &self.tcbs.0[id as usize];
        let repr = wtcp::Repr {
            src_port: self.cfg.port,
            dst_port: t.peer.port,
            seq_number,
            ack_number: None,
            flags: wtcp::Flags {
                fin: false,
                syn: false,
                rst: true,
                psh: false,
                ack: false,
            },
            window_len: 0,
            max_seg_size: None,
            window_scale: None,
        };
        let (mac, ip) = (t.peer_mac, Ipv4Address(t.peer.ip));
        self.send_bare(mac, ip, &repr, tx);
    }

    fn send_bare<T: TxRing>(
        &mut self,
        dst_mac: EthernetAddress,
        dst: Ipv4Address,
        repr: &wtcp::Repr,
        tx: &mut T,
    ) {
        let (mac, ip) = (self.mac, self.cfg.ip);
        let Some(buf) = tx.slot() else {
            self.stats.tx_ring_full += 1;
            return;
        };
        let hl = repr.header_len();
        let len = L2L3 + hl;
        let buf = &mut buf[..len];
        write_l2l3(buf, mac, dst_mac, ip, dst, IpProtocol::Tcp, hl);
        repr.emit_header(&mut buf[L2L3..]);
        let acc = checksum::pseudo_header_v4(ip.0, dst.0, 6, hl as u16);
        let sum = checksum::fold(checksum::accumulate(acc, &buf[L2L3..]));
        buf[L2L3 + TCP_CHECKSUM_AT..L2L3 + TCP_CHECKSUM_AT + 2]
            .copy_from_slice(&(!sum).to_be_bytes());
        self.post(tx, len, &[]);
        self.stats.tcp_rst_sent += 1;
    }

    fn free_tcb(&mut self, id: u32) {
        let idx = id as usize;
        if self.tcbs.0[idx].state == State::Free {
            return;
        }
        self.ports.remove(&mut self.tcbs, id);
        let t = &self.tcbs.0[idx];
        let (queued, peer, slot) = (t.queued, t.peer, t.dyn_slot);
        if t.stay_start_ns != 0 {
            self.stay.parallel = self.stay.parallel.saturating_sub(1);
        }
        self.release_dyn(slot);
        if self.closed.len() < self.closed.capacity() {
            self.closed.push((peer, self.stats.rx_frames));
        }
        self.tcbs.0[idx] = Tcb::free();
        if queued {
            self.run.retain(|&x| x != id);
        }
        self.free.push(id);
        self.stats.tcp_closed += 1;
        self.stats.tcbs_in_use = self.active() as u64;
    }

    /// A segment from `peer` found no connection here and opened none. It is reported like
    /// a freed connection (`TxRing::connection_closed`, at the end of the round), so a
    /// dispatcher that still routes `peer` here learns that nothing is here: in the
    /// network-core mode a late segment (a retransmitted FIN that crossed the close note)
    /// must not keep core 0's mapping alive until it expires.
    fn no_connection(&mut self, peer: Peer) {
        if self.closed.len() < self.closed.capacity() {
            self.closed.push((peer, self.stats.rx_frames));
        }
    }

    /// Gives a dynamic-response buffer back (no-op for [`NO_DYN`]).
    fn release_dyn(&mut self, slot: u8) {
        if let Some(page) = self.stats_page.as_mut() {
            if slot != NO_DYN && usize::from(slot) < DYN_SLOTS && !page.free.contains(&slot) {
                page.free.push(slot);
            }
        }
    }

    // ---------------------------------------------------------------- timers

    fn timers<T: TxRing, A: AccessLog>(&mut self, tx: &mut T, log: &mut A) {
        let now = self.now_ns;
        let to = self.cfg.timeouts;
        for id in 0..self.tcbs.0.len() as u32 {
            let idx = id as usize;
            let t = &self.tcbs.0[idx];
            match t.state {
                State::Free => continue,
                State::SynReceived => {
                    if t.rto_deadline_ns != 0 && now >= t.rto_deadline_ns {
                        if t.retries >= 3 {
                            // Half-open: the client never completed the handshake.
                            self.stats.tcp_timeouts += 1;
                            self.free_tcb(id);
                        } else {
                            let t = &mut self.tcbs.0[idx];
                            t.retries += 1;
                            t.backoff();
                            let offer = t.snd_shift != 0;
                            self.stats.tcp_rto_retransmits += 1;
                            self.send_syn_ack(id, offer, tx);
                        }
                    }
                    continue;
                }
                State::Synchronized => {}
            }
            let ms = |x: u64| x * 1_000_000;
            let silent = now.saturating_sub(t.last_heard_ns);
            // Request head not complete in time: 408 and close.
            if t.request_start_ns != 0
                && t.resp.is_none()
                && !t.closing
                && now.saturating_sub(t.request_start_ns) >= ms(to.request_ms)
            {
                let head = &mut self.head_slab[idx * http::HEAD_MAX..(idx + 1) * http::HEAD_MAX];
                let resp = http::respond_error(
                    http::Status(408),
                    self.unix_secs,
                    self.cfg.server_name,
                    head,
                );
                log.record(&AccessRecord {
                    peer: Ipv4Address(t.peer.ip),
                    request_line: b"",
                    status: 408,
                    bytes: 0,
                    unix_secs: self.unix_secs,
                });
                self.stats.http_requests += 1;
                self.stats.http_4xx += 1;
                let t = &mut self.tcbs.0[idx];
                let r = Response {
                    start: t.snd_nxt,
                    head_len: resp.head_len as u32,
                    body: &[],
                    sums: crate::resource::Body {
                        data: &[],
                        block_sums: &[],
                    },
                    sums_offset: 0,
                };
                t.resp = Some(r);
                t.closing = true;
                t.fin_seq = r.end();
                t.rx_len = 0;
                t.request_start_ns = 0;
                self.enqueue(id);
                continue;
            }
            // Idle keep-alive connection: close it gracefully.
            if t.resp.is_none() && !t.closing && t.rx_len == 0 && silent >= ms(to.idle_ms) {
                let t = &mut self.tcbs.0[idx];
                t.closing = true;
                t.fin_seq = t.snd_nxt;
                self.enqueue(id);
                continue;
            }
            // No progress from the peer at all: abort.
            if silent >= ms(to.stall_ms) {
                self.stats.tcp_timeouts += 1;
                let seq = t.snd_nxt;
                self.send_reset_raw(id, seq, tx);
                self.free_tcb(id);
                continue;
            }
            if t.rto_deadline_ns != 0 && now >= t.rto_deadline_ns {
                self.retransmit_timeout(id, tx);
            }
        }
    }

    /// RTO expiry (RFC 6298 §5.4–5.7) or the persist timer (zero window).
    fn retransmit_timeout<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let idx = id as usize;
        let now = self.now_ns;
        let max = self.cfg.timeouts.max_retries;
        let t = &mut self.tcbs.0[idx];
        let data_end = t.resp.map_or(t.snd_una, |r| r.end());
        if t.snd_wnd == 0 && seq::lt(t.snd_una, data_end) {
            // Persist (RFC 9293 §3.8.6.1): the peer's window is closed and data waits.
            // Probe it with one octet, the first unacknowledged one, and back off. A probe
            // is not a retransmission: it never counts towards aborting (a peer that keeps
            // its window closed is cut off by the stall timeout instead). `snd_nxt` stays
            // at `snd_una`, so whatever was sent beyond the closed window, and the probe
            // octet if the peer refused it, goes out again as full segments once the
            // window opens; if the peer took the octet, its ACK moves `snd_una` past it.
            t.backoff();
            t.rto_deadline_ns = now + u64::from(t.rto_ms) * 1_000_000;
            t.snd_nxt = t.snd_una;
            t.timing = false;
            let seg = Seg {
                seq: t.snd_una,
                len: 1,
                syn: false,
                fin: false,
                rst: false,
                ack: true,
            };
            if self.emit(id, seg, None, tx) {
                let t = &mut self.tcbs.0[idx];
                let probe_end = t.snd_una.wrapping_add(1);
                if seq::gt(probe_end, t.snd_max) {
                    t.snd_max = probe_end;
                }
                self.stats.tcp_window_probes += 1;
            }
            return;
        }
        if t.flight() == 0 {
            t.rto_deadline_ns = 0;
            return;
        }
        if t.retries >= max {
            self.stats.tcp_timeouts += 1;
            let seq = t.snd_nxt;
            self.send_reset_raw(id, seq, tx);
            self.free_tcb(id);
            return;
        }
        t.retries += 1;
        t.ssthresh = t.loss_ssthresh();
        t.cwnd = t.mss; // loss window (RFC 5681 §3.1)
        t.in_recovery = false;
        t.dupacks = 0;
        t.recover = t.snd_max;
        t.timing = false;
        t.backoff();
        t.snd_nxt = t.snd_una; // go back: resend from the first unacknowledged byte
        if t.fin_sent && seq::le(t.snd_nxt, t.fin_seq) {
            t.fin_sent = false; // the FIN is resent with the data again
        }
        t.rto_deadline_ns = now + u64::from(t.rto_ms) * 1_000_000;
        self.stats.tcp_rto_retransmits += 1;
        self.output(id, tx);
    }
}

/// Whether a segment with `len` payload bytes starting at `seq` has new data at `rcv_nxt`.
fn seq_in_order(seq_n: u32, rcv_nxt: u32, len: usize) -> bool {
    seq::le(seq_n, rcv_nxt) && seq::lt(rcv_nxt, seq_n.wrapping_add(len as u32))
}

/// Writes Ethernet and IPv4 headers for an IPv4 payload of `payload_len` bytes.
fn write_l2l3(
    buf: &mut [u8],
    src_mac: EthernetAddress,
    dst_mac: EthernetAddress,
    src: Ipv4Address,
    dst: Ipv4Address,
    proto: IpProtocol,
    payload_len: usize,
) {
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    ethernet::Repr {
        src_addr: src_mac,
        dst_addr: dst_mac,
        ethertype: EtherType::Ipv4,
    }
    .emit(&mut frame);
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: proto,
        payload_len,
        hop_limit: 64,
    };
    ip.emit(&mut Ipv4Packet::new_unchecked(
        &mut frame.payload_mut()[..ipv4::HEADER_LEN],
    ));
}

#[cfg(test)]
mod tests;
