//! The engine fetching over HTTP/1.1 on its own TCP: a load generator's
//! transport with no operating system in its path. [`Fetcher`] owns an address on a link,
//! its connections in the same connection table as the server's (`tcp::table`: TCBs of
//! [`Connection`]s in active open, `tcp::active`, each with a [`FetchConn`], keyed by the
//! local port), a FIFO free-list of local ports and, per *slot* (one stream of fetches of
//! the load's schedule), the request being sent. The owner asks [`Fetcher::get`] for a fetch on a slot, calls
//! [`Fetcher::poll`] in a loop with its NIC, and hears of each fetch's end, and of the
//! response body as it comes, through a [`Handler`].
//!
//! A slot may also send several requests at once, pipelined on one connection
//! ([`Fetcher::get_pipelined`]: a Surge session's burst, as httperf sends it); their
//! responses are read in order and each ends in the handler on its own.
//!
//! A fetch runs on the slot's open connection when the previous one kept it
//! (keep-alive), else on a new connection: a free TCB, the port at the head of the
//! free-list, an RFC 6528 ISN, our SYN, and the request queued at once (it goes with the
//! ACK of the SYN-ACK). The response is read by [`http::Reader`]; when it asks to close,
//! or the fetch said `close`, we close our side (the server usually has: passive close,
//! CLOSE-WAIT → LAST-ACK). TIME-WAIT is not held (as on the server): a TCB is freed when
//! both FINs are acknowledged and its port goes to the tail of the free-list, so it comes
//! back only after every other port was used — with 28,232 ports (Linux's default
//! ephemeral range, 32768–60999) and 10,000 connections a second, after 2.8 s; a server
//! still in TIME-WAIT for that 4-tuple takes a new SYN whose ISN is above the old
//! connection's (RFC 1122 §4.2.2.13), which RFC 6528's clock-driven ISNs give.
//!
//! Every way a fetch can fail is counted by the handler's [`End::Failed`] with its
//! [`Failure`]: refused (RST to our SYN), no answer (the SYN's retries spent),
//! reset, closed before the response was complete, a response that does not parse,
//! stalled (the retransmission limit or the stall timeout).
//!
//! Nothing allocates after [`Fetcher::new`].

mod api;
mod arp;
mod end;
pub mod http;
mod ports;
mod stream;
mod timers;
mod v6;

pub use api::{Config, Counters, End, Failure, Handler};

use alloc::vec;
use alloc::vec::Vec;

use crate::iface::client6::Client6;
use crate::iface::egress::{self, Egress};
use crate::iface::ipv6::Link;
use crate::iface::{ingress_offloaded, Ingress, Interface};
use crate::nic::{Nic, RxFrame, RxRing, TxRing};
use crate::tcp::conn::OUR_MSS_V6;
use crate::tcp::emit::{self, Sender};
use crate::tcp::isn::IsnGenerator;
use crate::tcp::port_table::{mapped, Peer};
use crate::tcp::table::{App, Table, Tcb};
use crate::tcp::{Connection, Reply, Segment, State};
use crate::wire::tcp::ParsedRepr as TcpRepr;
use crate::wire::{ethernet, EtherType, EthernetAddress, EthernetFrame};
use ports::Ports;

/// The most bytes of one request (of a slot's requests, unless
/// [`Config::request_max`] says more).
pub const REQUEST_MAX: usize = 1024;
/// The receive window a connection advertises unless [`Config::rx_window`] says
/// otherwise: the most an unscaled window can say.
pub const RX_WINDOW: u32 = 65_535;
const RX_BURST: usize = 32;
const NONE: u32 = u32::MAX;
const ARP_EVERY_NS: u64 = 200_000_000;
/// How often the TCBs' timers are looked at.
const TIMER_EVERY_NS: u64 = 1_000_000;

/// The least window scale shift that can advertise `window` bytes (RFC 7323: at most 14).
pub fn window_shift(window: u32) -> u8 {
    let mut s = 0;
    while s < 14 && (65_535u32 << s) < window {
        s += 1;
    }
    s
}

/// What the fetcher keeps per connection in its table: the fetch running on it. The TCB's
/// key ([`Tcb::peer`]) is the server's address and our local port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchConn {
    /// The slot whose fetch runs on it (NONE once the fetch ended).
    slot: u32,
    /// Sequence number of the request's first byte.
    req_seq: u32,
    /// Close after the response.
    close: bool,
}

impl App for FetchConn {
    const IDLE: FetchConn = FetchConn {
        slot: NONE,
        req_seq: 0,
        close: false,
    };
}

impl Tcb<FetchConn> {
    /// A kept connection that can take the next request: established, not closing, and
    /// every byte sent acknowledged.
    fn reusable(&self) -> bool {
        self.tcp.state() == State::Established && !self.tcp.is_closing() && self.tcp.all_acked()
    }
}

#[derive(Debug, Clone)]
struct Slot {
    /// The TCB of the slot's connection (NONE: none open).
    tcb: u32,
    req_len: usize,
    reader: http::Reader,
    busy: bool,
    /// A byte of the response came.
    heard: bool,
    /// Responses still to come (pipelined requests), the one being read included.
    pending: u32,
    /// A byte stream ([`Fetcher::open_stream`]): what comes is handed over unread, and the
    /// request buffer grows by [`Fetcher::stream_send`].
    stream: bool,
    /// Bytes of the stream received so far.
    stream_rx: u64,
}

/// The fetcher.
pub struct Fetcher {
    cfg: Config,
    iface: Interface,
    egress: Egress,
    isn: IsnGenerator,
    next_hop_mac: Option<EthernetAddress>,
    next_arp_ns: u64,
    next_timer_ns: u64,
    /// The connections: TCBs with their fetch, keyed by our local port. Its run list
    /// holds those that owe an ACK for data of this burst: one ACK each after the burst
    /// (as a receiver with GRO acknowledges a burst), not one per segment.
    conns: Table<FetchConn>,
    slots: Vec<Slot>,
    requests: Vec<u8>,
    ports: Ports,
    /// Kept connections whose fetch just ended and which owe an ACK: held back so that the
    /// owner's next request on the slot carries it ([`flush_acks`](Self::flush_acks)).
    deferred: Vec<u32>,
    /// Over IPv6 ([`FetchLink::v6`](crate::iface::FetchLink::v6)): the link and the next
    /// hop (`v6`).
    c6: Option<Client6>,
    /// Counters.
    pub counters: Counters,
}

impl Fetcher {
    /// A fetcher; allocates every table now.
    pub fn new(cfg: Config) -> Fetcher {
        let iface = cfg.link.interface();
        let slots = cfg.slots.max(1);
        let n = cfg.tcbs.max(slots);
        let mut egress = Egress::new(&iface);
        let c6 = cfg.link.v6.map(|v| {
            let c = Client6::new(v, cfg.link.mac, cfg.isn_key);
            egress = egress.with_ip6(c.src());
            c
        });
        Fetcher {
            egress,
            c6,
            iface,
            isn: IsnGenerator::new(cfg.isn_key),
            next_hop_mac: None,
            next_arp_ns: 0,
            next_timer_ns: 0,
            conns: Table::new(n),
            slots: vec![
                Slot {
                    tcb: NONE,
                    req_len: 0,
                    reader: http::Reader::new(),
                    busy: false,
                    heard: false,
                    pending: 0,
                    stream: false,
                    stream_rx: 0,
                };
                slots
            ],
            requests: vec![0; slots * cfg.request_max.max(1)],
            ports: Ports::new(cfg.ports.0, cfg.ports.1, usize::from(cfg.port_start)),
            deferred: Vec::with_capacity(n),
            counters: Counters::default(),
            cfg,
        }
    }

    /// Sets the next hop's MAC without ARP (a link of two, such as the in-memory wire).
    pub fn set_next_hop_mac(&mut self, mac: EthernetAddress) {
        self.next_hop_mac = Some(mac);
    }

    /// The IPv6 link, over IPv6 ([`FetchLink::v6`](crate::iface::FetchLink::v6)).
    pub fn link6(&self) -> Option<&Link> {
        self.c6.as_ref().map(Client6::link)
    }

    /// Whether the next hop's MAC is known (fetches may start).
    pub fn ready(&self) -> bool {
        self.next_hop_mac.is_some()
    }

    /// Connections open (TCBs in use).
    pub fn open_connections(&self) -> usize {
        self.conns.active()
    }

    /// Local ports free.
    pub fn free_ports(&self) -> usize {
        self.ports.free()
    }

    /// Whether a fetch on slot `slot` would start now rather than end at once with
    /// [`Failure::NoResources`]: the slot is free and its kept connection can take the
    /// request, or a TCB and a local port are free for a new one (connections still
    /// closing hold theirs until the close completes or times out).
    pub fn can_start(&self, slot: u32) -> bool {
        let Some(s) = self.slots.get(slot as usize) else {
            return false;
        };
        if s.busy {
            return false;
        }
        if s.tcb != NONE && self.conns[s.tcb as usize].reusable() {
            return true;
        }
        self.conns.has_room() && self.ports.free() > 0
    }

    /// Whether slot `slot` has a fetch in progress.
    pub fn busy(&self, slot: u32) -> bool {
        self.slots.get(slot as usize).is_some_and(|s| s.busy)
    }

    /// The request buffer of slot `slot`, to write the next request into (see
    /// [`http::write_get`]) before [`get`](Self::get).
    pub fn request_buf(&mut self, slot: u32) -> &mut [u8] {
        let max = self.cfg.request_max.max(1);
        let at = slot as usize * max;
        &mut self.requests[at..at + max]
    }

    /// Closes slot `slot`'s kept connection, if it has one and no fetch runs on it (a
    /// session ended): the FIN goes now.
    pub fn close_slot<T: TxRing>(&mut self, slot: u32, now: u64, tx: &mut T) {
        let Some(s) = self.slots.get(slot as usize) else {
            return;
        };
        let idx = s.tcb;
        if idx != NONE && !s.busy {
            self.detach(idx);
            self.output(idx, now, tx);
        }
    }

    /// Starts a fetch on slot `slot` of the `len` request bytes in its
    /// [`request_buf`](Self::request_buf), on its kept connection or a new one; closes the
    /// connection after the response when `close`. Returns false if the slot is busy or
    /// out of range or the next hop is not known yet; a fetch that cannot get a TCB or a
    /// port ends at once with [`Failure::NoResources`].
    pub fn get<T: TxRing, H: Handler>(
        &mut self,
        slot: u32,
        len: usize,
        close: bool,
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) -> bool {
        self.get_pipelined(slot, len, 1, close, now, tx, h)
    }

    /// [`get`](Self::get) of `count` requests (1 to 64) written one after the other in
    /// the slot's request buffer, sent at once on one connection; each of their responses
    /// ends in the handler, in order (a failure ends each one still to come).
    #[allow(clippy::too_many_arguments)]
    pub fn get_pipelined<T: TxRing, H: Handler>(
        &mut self,
        slot: u32,
        len: usize,
        count: u32,
        close: bool,
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) -> bool {
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return false;
        };
        if s.busy
            || self.next_hop_mac.is_none()
            || len > self.cfg.request_max
            || !(1..=64).contains(&count)
        {
            return false;
        }
        s.busy = true;
        s.heard = false;
        s.pending = count;
        s.req_len = len;
        s.stream = false;
        s.stream_rx = 0;
        s.reader.reset();
        let kept = s.tcb;
        if kept != NONE {
            let t = &mut self.conns[kept as usize];
            if t.reusable() {
                t.app.slot = slot;
                t.app.close = close;
                t.app.req_seq = t.tcp.queue(len as u32);
                self.output(kept, now, tx);
                return true;
            }
            // Not reusable: let it finish closing on its own.
            self.detach(kept);
        }
        let port = if self.conns.has_room() {
            self.ports.take()
        } else {
            None
        };
        let Some((port, idx)) = port.and_then(|p| Some((p, self.conns.take()?))) else {
            self.end_all(slot, Failure::NoResources, now, h);
            return true;
        };
        let local = (self.local_ip(), port);
        let remote = (self.server_ip(), self.cfg.link.port);
        let (iss, ts_offset) = self.isn.isn_and_ts_offset(local, remote, now);
        let mut tcp = Connection::connect(iss, now).with_ts_offset(ts_offset);
        tcp.offer_rcv_shift(window_shift(self.cfg.rx_window));
        if let Some(c) = &self.c6 {
            // IPv6's MSS, or less on a link whose router advertised a smaller MTU.
            let mtu = c.link().slaac.mtu.unwrap_or(1500);
            tcp.offer_mss(OUR_MSS_V6.min(mtu.saturating_sub(60) as u16));
        }
        let req_seq = tcp.queue(len as u32);
        let fetch = FetchConn {
            slot,
            req_seq,
            close,
        };
        let key = Peer {
            ip: self.server_ip(),
            port,
        };
        self.conns
            .open(idx, key, EthernetAddress([0; 6]), tcp, fetch);
        self.slots[slot as usize].tcb = idx;
        self.counters.connections += 1;
        let syn = self.conns[idx as usize].tcp.syn(now);
        self.send(idx, &syn, now, tx);
        true
    }

    /// One round: receive and handle a burst, run the timers that are due, ARP while the
    /// next hop is unknown. Returns whether anything happened.
    pub fn poll<N: Nic, H: Handler>(&mut self, nic: &mut N, now: u64, h: &mut H) -> bool {
        let (rx, tx) = nic.split();
        self.flush_acks(now, tx);
        let mut frames = [RxFrame { buf: 0, len: 0 }; RX_BURST];
        let n = rx.burst(&mut frames);
        for f in &frames[..n] {
            self.counters.rx += 1;
            let trusted = rx.csum_trusted(f);
            self.counters.rx_csum_trusted += u64::from(trusted);
            self.frame(rx.bytes(f), trusted, now, tx, h);
            rx.recycle(*f);
        }
        self.tick(n > 0, now, tx, h)
    }

    /// One frame another owner of the NIC received and handed over (a server that shares
    /// its link with a fetcher of its own: [`crate::server::divert`]); its checksums are
    /// verified here. Call [`tick`](Self::tick) after a batch of them.
    pub fn receive<T: TxRing, H: Handler>(
        &mut self,
        bytes: &[u8],
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) {
        self.counters.rx += 1;
        self.frame(bytes, false, now, tx, h);
    }

    /// What [`poll`](Self::poll) does after receiving: the ACKs owed, the timers that are
    /// due, ARP while the next hop is unknown. `received`: frames came since the last
    /// tick. Returns whether anything happened.
    pub fn tick<T: TxRing, H: Handler>(
        &mut self,
        received: bool,
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) -> bool {
        while let Some(idx) = self.conns.pop_run() {
            let t = &self.conns[idx as usize];
            if !t.tcp.ack_pending() {
                self.conns[idx as usize].queued = false;
                continue;
            }
            // A kept connection whose response just ended: the owner's next request
            // (begun right after this poll, as a load loop does) carries the ACK; else
            // `flush_acks` or the next poll sends it (as a receiver's delayed ACK would).
            let idle = self
                .slots
                .get(t.app.slot as usize)
                .is_some_and(|s| s.tcb == idx && !s.busy)
                && t.tcp.state() == State::Established;
            if idle {
                self.deferred.push(idx); // still marked queued while it waits there
                continue;
            }
            self.conns[idx as usize].queued = false;
            emit::ack(&mut Out { f: self, now, tx }, idx);
        }
        let mut worked = received;
        if self.c6.is_some() {
            worked |= self.poll6(now, tx);
        } else if self.next_hop_mac.is_none() && now >= self.next_arp_ns {
            self.next_arp_ns = now + ARP_EVERY_NS;
            self.arp_request(tx);
            worked = true;
        }
        if now >= self.next_timer_ns {
            self.next_timer_ns = now + TIMER_EVERY_NS;
            worked |= self.timers(now, tx, h);
        }
        tx.flush();
        worked
    }

    /// Sends the ACKs [`poll`](Self::poll) held back for kept connections that no new
    /// request carried: call it after beginning the fetches a poll's ends allowed (then
    /// flush `tx`). The next poll calls it first in any case.
    pub fn flush_acks<T: TxRing>(&mut self, now: u64, tx: &mut T) {
        while let Some(idx) = self.deferred.pop() {
            let t = &mut self.conns[idx as usize];
            t.queued = false;
            if t.tcp.state() == State::Established {
                emit::ack_owed(&mut Out { f: self, now, tx }, idx);
            }
        }
    }

    /// Ends the fetch on TCB `idx` (if one runs) with `why`.
    fn fail<H: Handler>(&mut self, idx: u32, why: Failure, now: u64, h: &mut H) {
        let slot = self.conns[idx as usize].app.slot;
        if slot == NONE {
            return;
        }
        self.conns[idx as usize].app.slot = NONE;
        let s = &mut self.slots[slot as usize];
        if s.tcb == idx {
            s.tcb = NONE;
        }
        self.end_all(slot, why, now, h);
    }

    /// Ends every fetch still to come on slot `slot` with `why`.
    fn end_all<H: Handler>(&mut self, slot: u32, why: Failure, now: u64, h: &mut H) {
        let s = &mut self.slots[slot as usize];
        if s.busy {
            s.busy = false;
            for _ in 0..core::mem::take(&mut s.pending) {
                h.end(slot, End::Failed(why), now);
            }
        }
    }

    /// The slot lets go of TCB `idx` (it goes on closing by itself).
    fn detach(&mut self, idx: u32) {
        let t = &mut self.conns[idx as usize];
        if t.app.slot != NONE {
            if let Some(s) = self.slots.get_mut(t.app.slot as usize) {
                if s.tcb == idx {
                    s.tcb = NONE;
                }
            }
            t.app.slot = NONE;
        }
        t.tcp.close();
    }

    fn free_tcb(&mut self, idx: u32) {
        let t = &mut self.conns[idx as usize];
        if t.app.slot != NONE {
            if let Some(s) = self.slots.get_mut(t.app.slot as usize) {
                if s.tcb == idx {
                    s.tcb = NONE;
                }
            }
        }
        let port = t.peer.port;
        if self.conns.unlink(idx) {
            self.ports.give(port);
            self.conns.recycle(idx);
        }
    }

    /// One received frame (`trusted`: its TCP checksum is not verified, see
    /// [`RxRing::csum_trusted`]; a super-frame of many segments is one segment here).
    fn frame<T: TxRing, H: Handler>(
        &mut self,
        bytes: &[u8],
        trusted: bool,
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) {
        if let Ok(eth) = EthernetFrame::new_checked(bytes) {
            if self.c6.is_some() {
                // Over IPv6 nothing else is ours: an ARP reply "from" the unused IPv4
                // next hop must not make the fetcher ready before DAD passed.
                if eth.ethertype() == EtherType::Ipv6 {
                    return self.frame6(bytes, now, tx, h);
                }
                self.counters.ignored += 1;
                return;
            }
            if eth.ethertype() == EtherType::Arp
                && (eth.dst_addr() == self.cfg.link.mac || eth.dst_addr().is_broadcast())
            {
                self.arp(&bytes[ethernet::HEADER_LEN..], tx);
                return;
            }
        }
        match ingress_offloaded(&self.iface, bytes, trusted) {
            Ingress::ClosedPort { src, seg, .. }
                if src == self.cfg.link.server && seg.src_port == self.cfg.link.port =>
            {
                self.deliver(Peer::v4(src.0, seg.dst_port), &seg, now, tx, h);
            }
            Ingress::Echo {
                src_mac,
                src,
                ident,
                seq_no,
                data,
            } => {
                let sent = self
                    .egress
                    .echo_reply(tx, src_mac, src, (ident, seq_no, data));
                self.count(sent);
            }
            _ => self.counters.ignored += 1,
        }
    }

    /// A segment from the server to our port `key.port`: to its connection, or a RST
    /// when none is open there.
    fn deliver<T: TxRing, H: Handler>(
        &mut self,
        key: Peer,
        seg: &TcpRepr<'_>,
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) {
        let Some(idx) = self.conns.find(key) else {
            self.counters.ignored += 1;
            if !seg.flags.rst {
                self.bare(&egress::reset_for(seg), tx);
            }
            return;
        };
        self.segment(idx, seg, now, tx, h);
    }

    /// The server's address as the connection table keys it (IPv4-mapped for IPv4).
    fn server_ip(&self) -> [u8; 16] {
        match self.cfg.link.v6 {
            Some(v) => v.server.0,
            None => mapped(self.cfg.link.server.0),
        }
    }

    /// Our address as the ISN's hash takes it.
    fn local_ip(&self) -> [u8; 16] {
        match self.cfg.link.v6 {
            Some(_) => self.egress.ip6().0,
            None => mapped(self.cfg.link.ip.0),
        }
    }

    fn segment<T: TxRing, H: Handler>(
        &mut self,
        idx: u32,
        seg: &TcpRepr<'_>,
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) {
        let was = self.conns[idx as usize].tcp.state();
        let out = self.conns[idx as usize]
            .tcp
            .input(seg, now, self.cfg.rx_window);
        let t = &self.conns[idx as usize];
        if was == State::SynSent && t.tcp.state() == State::Established && t.app.slot != NONE {
            h.connected(t.app.slot, now);
        }
        if let Some((a, b)) = out.deliver {
            self.take(idx, &seg.payload[a..b], now, h);
        }
        if out.fin {
            self.peer_closed(idx, now, h);
        }
        match out.reply {
            Reply::None => {}
            Reply::Ack => {
                emit::ack(&mut Out { f: self, now, tx }, idx);
            }
            Reply::SynAck => {
                let s = self.conns[idx as usize].tcp.syn_ack(now);
                self.send(idx, &s, now, tx);
            }
            Reply::Reset { seq } => self.reset(idx, seq, tx),
        }
        if (out.retransmit || out.lost_retransmit)
            && emit::retransmit_una(&mut Out { f: self, now, tx }, idx, now)
        {
            self.counters.retransmits += 1;
        }
        if out.reset {
            let why = if was == State::SynSent {
                Failure::Refused
            } else {
                Failure::Reset
            };
            self.fail(idx, why, now, h);
        }
        if self.conns[idx as usize].tcp.state().is_done() {
            // Both FINs acknowledged (or reset): the response, if any, was handled above.
            self.fail(idx, Failure::Closed, now, h);
            self.free_tcb(idx);
            return;
        }
        emit::send(&mut Out { f: self, now, tx }, idx, now);
        let t = &self.conns[idx as usize];
        if t.tcp.ack_pending() {
            self.conns.enqueue(idx);
        }
    }

    /// Response bytes for TCB `idx`'s fetch.
    fn take<H: Handler>(&mut self, idx: u32, mut data: &[u8], now: u64, h: &mut H) {
        let slot = self.conns[idx as usize].app.slot;
        if slot == NONE {
            return; // the fetch already ended (failed): what follows is ignored
        }
        let s = &mut self.slots[slot as usize];
        if !s.heard && !data.is_empty() {
            s.heard = true;
            h.first_byte(slot, now);
        }
        if s.stream {
            let at = s.stream_rx;
            s.stream_rx += data.len() as u64;
            h.body(slot, at, data);
            return;
        }
        while !data.is_empty() {
            let s = &mut self.slots[slot as usize];
            let before = s.reader.body_len;
            let f = match s.reader.feed(data) {
                Ok(f) => f,
                Err(_) => {
                    self.fail(idx, Failure::BadResponse, now, h);
                    self.detach(idx);
                    return;
                }
            };
            if f.body.1 > f.body.0 {
                h.body(slot, before, &data[f.body.0..f.body.1]);
            }
            if f.done {
                let close = self.conns[idx as usize].app.close || s.reader.close;
                let end = End::Done {
                    status: s.reader.status,
                    body: s.reader.body_len,
                };
                s.pending = s.pending.saturating_sub(1);
                if s.pending > 0 && !close {
                    // The next pipelined response follows in the same stream.
                    s.reader.reset();
                    s.heard = false;
                    h.end(slot, end, now);
                    data = &data[f.used..];
                    if !data.is_empty() {
                        self.slots[slot as usize].heard = true;
                        h.first_byte(slot, now);
                    }
                    continue;
                }
                h.end(slot, end, now);
                // The server closes after this one: the rest of a burst cannot come.
                self.end_all(slot, Failure::Closed, now, h);
                if close {
                    self.detach(idx);
                }
                return; // bytes beyond the last response: none were asked for
            }
            if f.used == 0 {
                return;
            }
            data = &data[f.used..];
        }
    }

    /// The peer's FIN on TCB `idx`.
    fn peer_closed<H: Handler>(&mut self, idx: u32, now: u64, h: &mut H) {
        let slot = self.conns[idx as usize].app.slot;
        if slot != NONE && self.slots[slot as usize].busy {
            let s = &mut self.slots[slot as usize];
            if s.stream || s.reader.end_of_stream() {
                let end = match s.stream {
                    true => End::Done {
                        status: 0,
                        body: s.stream_rx,
                    },
                    false => End::Done {
                        status: s.reader.status,
                        body: s.reader.body_len,
                    },
                };
                s.pending = s.pending.saturating_sub(1);
                self.conns[idx as usize].app.slot = NONE;
                if s.tcb == idx {
                    s.tcb = NONE;
                }
                h.end(slot, end, now);
                self.end_all(slot, Failure::Closed, now, h);
            } else {
                self.fail(idx, Failure::Closed, now, h);
            }
        }
        self.detach(idx); // our FIN answers theirs
    }

    /// Sends what TCB `idx` may send now (`tcp::emit::send`), and the ACK it owes if
    /// nothing carried it.
    fn output<T: TxRing>(&mut self, idx: u32, now: u64, tx: &mut T) {
        let out = &mut Out { f: self, now, tx };
        emit::send(out, idx, now);
        emit::ack_owed(out, idx);
    }

    /// Builds and posts `seg` of TCB `idx` (payload from its slot's request).
    fn send<T: TxRing>(&mut self, idx: u32, seg: &Segment, now: u64, tx: &mut T) -> bool {
        let Some(mac) = self.next_hop_mac else {
            return false;
        };
        let t = &mut self.conns[idx as usize];
        let mut head: Option<&[u8]> = Some(&[]);
        if seg.len > 0 {
            // Only the slot's request is ever queued, and only while the slot holds it.
            let off = seg.seq.wrapping_sub(t.app.req_seq) as usize;
            let end = off + seg.len as usize;
            head = match self.slots.get(t.app.slot as usize) {
                Some(s) if s.tcb == idx && end <= s.req_len => {
                    let base = t.app.slot as usize * self.cfg.request_max.max(1);
                    Some(&self.requests[base + off..base + end])
                }
                _ => None,
            };
        }
        let (ports, window) = ((t.peer.port, self.cfg.link.port), self.cfg.rx_window);
        let out = t.frame(seg, ports, window, mac, head.unwrap_or(&[]), &[], || 0, now);
        if head.is_none() {
            return false; // the header was built (the owed ACK counts as paid), as before
        }
        let sent = self.egress.tcp(tx, &out);
        self.count(sent)
    }

    /// The RST of TCB `idx` at `seq` (the caller frees the TCB).
    fn reset<T: TxRing>(&mut self, idx: u32, seq: u32, tx: &mut T) {
        let t = &self.conns[idx as usize];
        let rst = t.reset((t.peer.port, self.cfg.link.port), seq);
        self.bare(&rst, tx);
    }

    fn bare<T: TxRing>(&mut self, rst: &crate::wire::tcp::Repr, tx: &mut T) {
        let Some(mac) = self.next_hop_mac else {
            return;
        };
        let sent = self.egress.tcp_bare(tx, mac, self.server_ip(), rst);
        if self.count(sent) {
            self.counters.resets_sent += 1;
        }
    }

    fn count(&mut self, sent: egress::Sent) -> bool {
        match sent {
            egress::Sent::Frame | egress::Sent::TsoFrame => {
                self.counters.tx += 1;
                true
            }
            _ => {
                self.counters.tx_full += 1;
                false
            }
        }
    }
}

/// The fetcher, the time and its transmit ring as `tcp::emit` sees them: segments built
/// by [`Fetcher::send`], one MSS each.
struct Out<'a, T> {
    f: &'a mut Fetcher,
    now: u64,
    tx: &'a mut T,
}

impl<T: TxRing> Sender for Out<'_, T> {
    #[inline]
    fn conn(&mut self, id: u32) -> &mut Connection {
        &mut self.f.conns[id as usize].tcp
    }

    #[inline]
    fn frame_max(&mut self, _id: u32) -> u32 {
        0
    }

    #[inline]
    fn emit(&mut self, id: u32, seg: &Segment) -> bool {
        self.f.send(id, seg, self.now, self.tx)
    }
}

#[cfg(test)]
mod tests;
