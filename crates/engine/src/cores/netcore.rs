//! Network-core mode (the multi-core paper §IV, the UDP paper §4): core 0 owns the NIC, HTTP cores own
//! connections, and SPSC rings carry frames between them.
//!
//! ```text
//!            ┌──────────── core 0 (NetCoreNic under a Server) ─────────────┐
//!  NIC rx ──►│ Dispatch: ARP/ICMP/other → own Server │ SYN → pick core (RR)│
//!            │   known connection → its core's CLIST │ record in ConnMap   │
//!  NIC tx ◄──│ Drain (at flush): every DLIST → NIC   │ notes → forget conn │
//!            └──────┬──────────────▲─────────────────────▲────────────────┘
//!              CLIST k (frames)  DLIST k (head + &'static body)  notes k (closed)
//!            ┌──────▼──────────────┴─────────────────────┴────────────────┐
//!            │ core k: Server over RingNic (ClistRx, DlistTx), unchanged   │
//!            └─────────────────────────────────────────────────────────────┘
//! ```
//!
//! - **SYN (the papers' ListenHandler) on core 0**: core 0 checks the SYN (checksum,
//!   options, source), picks the next HTTP core with a free connection round robin and
//!   records (client IP, port) → core in its [`ConnMap`], indexed by the client port like
//!   the TCB port table. The chosen core builds the TCB and the SYN-ACK itself, so the TCB
//!   exists only where it is used and core 0, the papers' bottleneck, does less.
//! - **Later frames (OtherHandler on the HTTP core)**: core 0 looks the connection up and
//!   copies the frame into that core's CLIST slot (a request frame is small; the NIC buffer
//!   is recycled at once). A frame for no known connection goes to core 0's own `Server`,
//!   which answers as a single-core server would: a RST (RFC 9293 §3.10.7.1).
//! - **Sending**: an HTTP core writes each frame's head straight into a DLIST slot and
//!   puts the `&'static` body slice of the site image beside it; core 0 copies the head
//!   into the NIC's slot and posts the same body slice: the body is never copied.
//! - **Forgetting a connection, without locks**: when a `Server` frees a TCB it reports
//!   (peer, frames it had received so far) through `CoreQueue::connections_closed`; the HTTP
//!   core's ring pushes that note to core 0. Core 0 removes the mapping only if the core
//!   had already received every frame core 0 forwarded for that peer (`seen >= last_fwd`);
//!   otherwise a newer frame (a new SYN from a reused port) is in flight and the mapping
//!   stays. A mapping whose note was lost is dropped after more silence than any TCB
//!   survives (the server's stall timeout), so the map cannot leak.
//! - **UDP requests (the UDP paper)**: a datagram for the stateless protocol's port goes to
//!   the next HTTP core round robin, with no mapping (nothing outlives the answer); the
//!   core's id in every packet says which core answered.
//! - **Several NICs** (bonding): an HTTP core's server names each frame's NIC
//!   (`TxRing::select`, its connection's send-id) and writes that NIC's MAC as the source;
//!   the DLIST slot keeps the NIC and core 0's drain selects it on the device (a
//!   `bond::BondTx`) before posting. Core 0 classifies frames for the set's receive MAC,
//!   which a failover changes.
//! - **Capacity**: core 0 dispatches a SYN only to a core with fewer mappings than TCBs.
//!   A TCB exists only after its mapping and is freed before its note, so the chosen core
//!   always has a free TCB; when every core is full core 0 drops the SYN (the client
//!   retries), as a single full server does.

use alloc::vec::Vec;

mod ids;
mod links;
mod map;

pub use ids::{CoreIds, Done};
pub use links::{
    links, links_dozing, ClistRx, Closed, DlistTx, HttpEnds, InFrame, NetEnds, OutFrame, RingNic,
    RingSizes, FRAME_MAX,
};
pub use map::ConnMap;

use super::replay::{replay, ReplayError};
use super::{CoreQueue, DispatchCounters};
use crate::iface::{admissible_syn, ingress, Ingress, Interface};
use crate::nic::{Clock, Nic, NicCounters, RxFrame, RxRing, TxFull, TxRing, TX_HEAD_ROOM};
use crate::ring::{channel, Consumer, Doze, Producer};
use crate::server::Config;
use crate::tcp::port_table::{mapped, Peer};
use crate::tcp::syncookie::SynCookies;
use crate::wire::EthernetAddress;

/// What core 0 needs to know to classify frames: the server's address and port.
#[derive(Debug, Clone, Copy)]
pub struct Addressing {
    iface: Interface,
    /// The NIC set, if any: frames are for its receive NIC's MAC, which may change.
    bond: Option<&'static crate::bond::Bond>,
    /// The servers' SYN cookies (same key): an ACK returning one opens a connection.
    cookies: SynCookies,
    /// A mapping silent this long is dropped (longer than any TCB outlives silence).
    expire_ns: u64,
    /// Request ids of the UDP protocol, when served (core 0 owns the stack).
    udp_ids: Option<u16>,
    /// The HTTPS port, when served: its connections are dispatched as the HTTP port's.
    tls_port: Option<u16>,
}

impl Addressing {
    /// From the servers' configuration (every core's is the same but for `tcbs`).
    pub fn new(cfg: &Config, mac: EthernetAddress) -> Addressing {
        Addressing {
            bond: cfg.bond.map(|r| r.bond),
            cookies: SynCookies::new(cfg.isn_key),
            iface: Interface {
                mac,
                ip: cfg.ip,
                prefix_len: cfg.prefix_len,
                gateway: cfg.gateway.is_some(),
                port: cfg.port,
                udp_port: cfg.udp.map(|u| u.port),
                vips: cfg.vips,
            },
            // The stall timeout frees any TCB that long after the peer's last frame, and
            // a half-open one is gone after 1+2+4+8 s; add a margin for timer ticks.
            expire_ns: (cfg.timeouts.stall_ms.max(16_000) + 2_000) * 1_000_000,
            udp_ids: cfg.udp.map(|u| u.ids),
            tls_port: cfg.tls.map(|t| t.port),
        }
    }
}

/// The network core's setup.
pub struct NetCoreSetup {
    /// Core 0's ends of each HTTP core's rings, HTTP core `k` (numbered from 1) at `k-1`.
    pub ends: Vec<NetEnds>,
    /// TCBs of each HTTP core (the most connections it may be given).
    pub http_tcbs: usize,
    /// Whether core 0 serves HTTP too (`--bsp-http`), and then its own TCBs.
    pub bsp_tcbs: Option<usize>,
    /// Addresses and timeouts.
    pub addressing: Addressing,
}

/// Core 0's queue pair: the NIC's rings wrapped so that a `Server` polling it dispatches
/// (in `burst`) and drains the DLISTs (in `flush`). Only frames for core 0 itself (ARP,
/// ICMP, strays, and with `--bsp-http` its own connections) reach its server.
pub struct NetCoreNic<R: RxRing, T: TxRing, C: Clock> {
    rx: Dispatch<R, C>,
    tx: Drain<T, C>,
    mac: EthernetAddress,
}

/// Receive side of core 0.
pub struct Dispatch<R: RxRing, C: Clock> {
    inner: R,
    clock: C,
    addr: Addressing,
    clists: Vec<Producer<InFrame>>,
    /// Each HTTP core's doze, and whether this burst forwarded to it.
    dozes: Vec<(Doze, bool)>,
    notes: Vec<Consumer<Closed>>,
    local_notes: Consumer<Closed>,
    map: ConnMap,
    /// Frames handed to each core's server so far (index 0: core 0's own).
    fwd: Vec<u64>,
    caps: Vec<u32>,
    targets: Vec<u16>,
    next: usize,
    /// The next core for a UDP request (round robin over `targets`).
    next_udp: usize,
    /// UDP requests handed to cores.
    udp_dispatched: u64,
    /// The UDP paper's request-id stack (when the UDP protocol is served).
    ids: Option<CoreIds>,
    next_sweep_ns: u64,
    dispatched: u64,
    ring_full: u64,
    no_core: u64,
    /// SYNs no core had room for, answered by core 0 with a cookie.
    cookie_syns: u64,
    dispatch_ns: u64,
}

/// Transmit side of core 0.
pub struct Drain<T: TxRing, C: Clock> {
    inner: T,
    clock: C,
    dlists: Vec<Consumer<OutFrame>>,
    local_notes: Producer<Closed>,
    /// Answered UDP requests, released once their frames are drained.
    ids: ids::DrainIds,
    next: usize,
    drained: u64,
    drain_ns: u64,
    notes_lost: u64,
}

/// Inner bursts per `burst` call while every frame is forwarded (so a busy link cannot
/// keep core 0 inside one call).
const DISPATCH_BURSTS: usize = 8;
/// Frames moved from one DLIST per flush before the next DLIST's turn.
const DRAIN_BUDGET: usize = 256;
/// Interval of the sweep for silent mappings.
const SWEEP_NS: u64 = 1_000_000_000;

impl<R: RxRing, T: TxRing, C: Clock + Clone> NetCoreNic<R, T, C> {
    /// Core 0's queue pair over the NIC's rings.
    pub fn new(rx: R, tx: T, mac: EthernetAddress, clock: C, setup: NetCoreSetup) -> Self {
        let http = setup.ends.len();
        let cores = http + 1;
        let mut caps = alloc::vec![setup.http_tcbs as u32; cores];
        caps[0] = setup.bsp_tcbs.unwrap_or(0) as u32;
        let mut targets: Vec<u16> = (1..cores as u16).collect();
        if setup.bsp_tcbs.is_some() {
            targets.insert(0, 0);
        }
        // Room past the TCBs for connections dispatched over a full core (the ACK of a SYN
        // cookie, which that core makes room for by evicting, or refuses): their entries
        // live until that core's close note.
        let tcbs = caps.iter().map(|&c| c as usize).sum::<usize>();
        let entries = (tcbs + tcbs / 8 + 64).max(1);
        let (lp, lc) = channel(setup.bsp_tcbs.unwrap_or(1).max(64) * 2);
        let mut clists = Vec::with_capacity(http);
        let mut dozes = Vec::with_capacity(http);
        let mut notes = Vec::with_capacity(http);
        let mut dlists = Vec::with_capacity(http);
        let mut done = Vec::with_capacity(http);
        for e in setup.ends {
            clists.push(e.clist);
            dozes.push((e.http, false));
            notes.push(e.notes);
            dlists.push(e.dlist);
            done.push((e.done, 0));
        }
        let n_ids = setup.addressing.udp_ids.unwrap_or(1);
        let (rp, rc) = channel(usize::from(n_ids));
        NetCoreNic {
            rx: Dispatch {
                inner: rx,
                clock: clock.clone(),
                addr: setup.addressing,
                clists,
                dozes,
                notes,
                local_notes: lc,
                map: ConnMap::new(entries, cores),
                fwd: alloc::vec![0; cores],
                caps,
                targets,
                next: 0,
                next_udp: 0,
                udp_dispatched: 0,
                ids: setup.addressing.udp_ids.map(|n| CoreIds::new(n, rc)),
                next_sweep_ns: 0,
                dispatched: 0,
                ring_full: 0,
                no_core: 0,
                cookie_syns: 0,
                dispatch_ns: 0,
            },
            tx: Drain {
                inner: tx,
                clock,
                dlists,
                local_notes: lp,
                ids: ids::DrainIds {
                    done,
                    released: rp,
                    lost: 0,
                },
                next: 0,
                drained: 0,
                drain_ns: 0,
                notes_lost: 0,
            },
            mac,
        }
    }

    /// The connection map (for tests and the platform's summary).
    pub fn map(&self) -> &ConnMap {
        &self.rx.map
    }

    /// Whether an HTTP core has put a frame on its DLIST that no flush has drained yet
    /// (core 0 checks this after announcing sleep on its doze).
    pub fn output_pending(&mut self) -> bool {
        self.tx.dlists.iter_mut().any(|d| d.available() > 0)
    }

    /// The wrapped NIC rings.
    pub fn inner(&self) -> (&R, &T) {
        (&self.rx.inner, &self.tx.inner)
    }

    /// The wrapped NIC rings, mutably (tests feed and read them).
    pub fn inner_mut(&mut self) -> (&mut R, &mut T) {
        (&mut self.rx.inner, &mut self.tx.inner)
    }
}

/// Where a received frame goes.
#[derive(Clone, Copy)]
enum Class {
    /// Core 0's own server.
    Local,
    /// A request of the stateless UDP protocol: any HTTP core may answer it.
    Udp,
    /// A TCP segment for our port from `peer`; `syn` when it may open a connection;
    /// `cookie_ack` (its sequence and acknowledgment numbers) when it is a bare ACK that
    /// could return a SYN cookie (an HTTP core past its SYN backlog sent one and kept no
    /// mapping): checked only if no mapping exists.
    Tcp {
        peer: Peer,
        syn: bool,
        cookie_ack: Option<(u32, u32)>,
        /// Our port it came to (HTTP's or HTTPS's: a cookie hashes it).
        port: u16,
    },
}

/// What to do with a received frame.
#[derive(Clone, Copy)]
enum Route {
    /// Give it to `core`'s server (0: core 0's own), for mapping `conn` if any, tagged with
    /// a UDP request id if any.
    To {
        core: usize,
        conn: Option<u32>,
        tag: u16,
    },
    /// Drop it: a SYN no core has room for.
    Drop,
}

fn classify(addr: &Addressing, bytes: &[u8]) -> Class {
    // The same classification the servers make (`iface::ingress`), and the same rule for
    // which SYN opens a connection: a SYN given to a core is one its LISTEN accepts.
    match ingress(&addr.iface, bytes) {
        Ingress::Udp { .. } => Class::Udp,
        Ingress::Tcp {
            src,
            seg,
            options_ok,
            ..
        } => tcp_class(src, &seg, options_ok),
        // The HTTPS port: `iface` serves one port; the servers take this one too.
        Ingress::ClosedPort {
            src,
            seg,
            options_ok,
            ..
        } if addr.tls_port == Some(seg.dst_port) => tcp_class(src, &seg, options_ok),
        _ => Class::Local,
    }
}

fn tcp_class(
    src: crate::wire::Ipv4Address,
    seg: &crate::wire::tcp::ParsedRepr<'_>,
    options_ok: bool,
) -> Class {
    Class::Tcp {
        peer: Peer::v4(src.0, seg.src_port),
        syn: admissible_syn(seg, options_ok),
        cookie_ack: match (seg.ack_number, seg.flags.syn || seg.flags.rst) {
            (Some(ack), false) => Some((seg.seq_number, ack)),
            _ => None,
        },
        port: seg.dst_port,
    }
}

impl<R: RxRing, C: Clock> Dispatch<R, C> {
    /// Core for a new connection: the next target round robin with room, if any.
    fn pick(&mut self) -> Option<usize> {
        for _ in 0..self.targets.len() {
            let core = usize::from(self.targets[self.next % self.targets.len()]);
            self.next = (self.next + 1) % self.targets.len();
            if (self.map.on_core(core) as u32) < self.caps[core] {
                return Some(core);
            }
        }
        None
    }

    /// Core for a completed handshake (a returned SYN cookie) when no core has room: the
    /// next target round robin regardless; its server evicts a connection without a
    /// response in flight for it, as a single server does, or refuses it (`tcp_no_tcb`).
    fn pick_over(&mut self) -> Option<usize> {
        let n = self.targets.len();
        let core = usize::from(*self.targets.get(self.next % n.max(1))?);
        self.next = (self.next + 1) % n;
        Some(core)
    }

    /// Applies close notes: forget a connection once its core has seen every frame
    /// forwarded for it.
    fn apply_notes(&mut self) {
        for k in 0..self.notes.len() {
            while let Some(n) = self.notes[k].take() {
                self.forget(k + 1, n);
            }
        }
        while let Some(n) = self.local_notes.take() {
            self.forget(0, n);
        }
    }

    fn forget(&mut self, core: usize, n: Closed) {
        if let Some(id) = self.map.find(n.peer) {
            let c = self.map.conns.0[id as usize];
            if usize::from(c.core) == core && n.seen >= c.last_fwd {
                self.map.remove(id);
            }
        }
    }

    fn sweep(&mut self, now: u64) {
        if now < self.next_sweep_ns {
            return;
        }
        self.next_sweep_ns = now + SWEEP_NS;
        for id in 0..self.map.conns.0.len() as u32 {
            let c = self.map.conns.0[id as usize];
            if c.used && now.saturating_sub(c.last_seen_ns) > self.addr.expire_ns {
                self.map.remove(id);
                self.map.expired += 1;
            }
        }
    }

    fn route(&mut self, class: Class, now: u64) -> Route {
        let (peer, syn, cookie_ack, port) = match class {
            Class::Tcp {
                peer,
                syn,
                cookie_ack,
                port,
            } => (peer, syn, cookie_ack, port),
            Class::Udp => {
                // The UDP paper, Fig. 3: each request to the next HTTP core, round robin; the
                // request leaves nothing behind, so no mapping. Its id comes from core 0's
                // stack (§5); one that core 0 keeps (`--bsp-http`) uses its server's own.
                let n = self.targets.len().max(1);
                let core = self.targets.get(self.next_udp % n).map_or(0, |&c| c.into());
                self.next_udp = (self.next_udp + 1) % n;
                let tag = match (&mut self.ids, core) {
                    (Some(ids), 1..) => match ids.take(now) {
                        Some(t) => t,
                        None => return Route::Drop,
                    },
                    _ => 0,
                };
                self.udp_dispatched += 1;
                return Route::To {
                    core,
                    conn: None,
                    tag,
                };
            }
            Class::Local => {
                return Route::To {
                    core: 0,
                    conn: None,
                    tag: 0,
                }
            }
        };
        let id = match self.map.find(peer) {
            Some(id) => id,
            None if syn || self.is_cookie(peer, port, cookie_ack, now) => {
                let core = match self.pick() {
                    Some(core) => core,
                    // Every core is full (a SYN flood's half-open connections, silent
                    // clients): core 0's server answers the SYN with a SYN cookie and keeps
                    // nothing, so the flood cannot lock new clients out. The ACK that
                    // returns it goes to a core that makes room.
                    None if syn => {
                        self.cookie_syns += 1;
                        return Route::To {
                            core: 0,
                            conn: None,
                            tag: 0,
                        };
                    }
                    None => match self.pick_over() {
                        Some(core) => core,
                        None => {
                            self.no_core += 1;
                            return Route::Drop;
                        }
                    },
                };
                match self.map.insert(peer, core, now) {
                    Some(id) => id,
                    None => {
                        self.no_core += 1;
                        return Route::Drop;
                    }
                }
            }
            // No connection: core 0's server answers (RST) as a single server would.
            None => {
                return Route::To {
                    core: 0,
                    conn: None,
                    tag: 0,
                }
            }
        };
        let c = &mut self.map.conns.0[id as usize];
        c.last_seen_ns = now;
        Route::To {
            core: usize::from(c.core),
            conn: Some(id),
            tag: 0,
        }
    }

    /// Whether a bare ACK from `peer` returns a valid SYN cookie (then it opens a connection
    /// like a SYN: the chosen core checks it again and makes the TCB).
    fn is_cookie(&self, peer: Peer, port: u16, cookie_ack: Option<(u32, u32)>, now: u64) -> bool {
        let Some((seq, ack)) = cookie_ack else {
            return false;
        };
        let ends = ((mapped(self.addr.iface.ip.0), port), (peer.ip, peer.port));
        self.addr.cookies.check_ack(ends, seq, ack, now).is_some()
    }

    /// The frame just given to `core` is its `fwd[core]`-th: remember it for the mapping.
    fn delivered(&mut self, core: usize, conn: Option<u32>) {
        self.fwd[core] += 1;
        if let Some(id) = conn {
            self.map.conns.0[id as usize].last_fwd = self.fwd[core];
        }
    }
}

impl<R: RxRing, C: Clock> RxRing for Dispatch<R, C> {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let t0 = self.clock.now_ns();
        self.apply_notes();
        if let Some(ids) = &mut self.ids {
            ids.apply_released();
        }
        self.sweep(t0);
        if let Some(b) = self.addr.bond {
            self.addr.iface.mac = b.mac(usize::from(b.links().receive));
        }
        let mut local = 0;
        let mut forwarded = 0u64;
        for _ in 0..DISPATCH_BURSTS {
            if local == out.len() {
                break;
            }
            let n = self.inner.burst(&mut out[local..]);
            if n == 0 {
                break;
            }
            let first = local;
            for i in first..first + n {
                let f = out[i];
                let class = classify(&self.addr, self.inner.bytes(&f));
                match self.route(class, t0) {
                    Route::To { core: 0, conn, .. } => {
                        self.delivered(0, conn);
                        out[local] = f;
                        local += 1;
                    }
                    Route::To { core, conn, tag } => {
                        let bytes = self.inner.bytes(&f);
                        let ring = &mut self.clists[core - 1];
                        let mut sent = false;
                        if let Some(slot) = ring.slot() {
                            let len = bytes.len().min(FRAME_MAX);
                            slot.bytes[..len].copy_from_slice(&bytes[..len]);
                            slot.len = len as u16;
                            slot.tag = tag;
                            ring.commit();
                            sent = true;
                        }
                        if !sent && tag != 0 {
                            if let Some(ids) = &mut self.ids {
                                ids.untake(tag);
                            }
                        }
                        if sent {
                            self.delivered(core, conn);
                            self.dozes[core - 1].1 = true;
                            self.dispatched += 1;
                            forwarded += 1;
                        } else {
                            self.ring_full += 1;
                        }
                        self.inner.recycle(f);
                    }
                    Route::Drop => self.inner.recycle(f),
                }
            }
            if local > 0 {
                break;
            }
        }
        if forwarded > 0 {
            for (doze, pushed) in &mut self.dozes {
                if core::mem::take(pushed) {
                    doze.nudge();
                }
            }
        }
        if forwarded > 0 && local == 0 {
            // Counted here only when the server will not count this burst as RCV itself.
            self.dispatch_ns += self.clock.now_ns().saturating_sub(t0);
        }
        local
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        self.inner.bytes(f)
    }

    fn recycle(&mut self, f: RxFrame) {
        self.inner.recycle(f)
    }
}

impl<T: TxRing, C: Clock> TxRing for Drain<T, C> {
    fn slot(&mut self) -> Option<&mut [u8]> {
        self.inner.slot()
    }

    fn select(&mut self, nic: u8) {
        self.inner.select(nic)
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        self.inner.post(head_len, body)
    }

    fn room(&mut self) -> usize {
        self.inner.room()
    }

    fn flush(&mut self) {
        let n = self.dlists.len();
        let mut moved = 0u64;
        let mut t0 = 0;
        'rings: for k in 0..n {
            let at = (self.next + k) % n;
            let ring = &mut self.dlists[at];
            let avail = ring.available().min(DRAIN_BUDGET);
            if avail > 0 && moved == 0 {
                t0 = self.clock.now_ns();
            }
            for _ in 0..avail {
                let Some(f) = ring.peek(0) else { break };
                let head = &f.head[..usize::from(f.head_len).min(TX_HEAD_ROOM)];
                self.inner.select(f.nic);
                if replay(&mut self.inner, head, f.body, None) == Err(ReplayError::NoSlot) {
                    break 'rings; // the NIC is full: the rest waits for the next flush
                }
                // Sent, or refused by the device (lost; TCP retransmits it).
                ring.pop();
                moved += 1;
                self.ids.drained(at, 1);
            }
        }
        let clock = &self.clock;
        self.ids.release(|| clock.now_ns());
        if n > 0 {
            self.next = (self.next + 1) % n;
        }
        self.inner.flush();
        if moved > 0 {
            self.drained += moved;
            self.drain_ns += self.clock.now_ns().saturating_sub(t0);
        }
    }
}

impl<R: RxRing, T: TxRing, C: Clock> Nic for NetCoreNic<R, T, C> {
    type Rx = Dispatch<R, C>;
    type Tx = Drain<T, C>;

    fn split(&mut self) -> (&mut Dispatch<R, C>, &mut Drain<T, C>) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn counters(&self) -> NicCounters {
        let rx = &self.rx;
        NicCounters {
            rx_ring_slots: rx.clists.first().map_or(0, |r| r.capacity() as u64),
            rx_ring_high: rx
                .clists
                .iter()
                .map(|r| r.high_water() as u64)
                .max()
                .unwrap_or(0),
            ..NicCounters::default()
        }
    }
}

impl<R: RxRing, T: TxRing, C: Clock> CoreQueue for NetCoreNic<R, T, C> {
    fn set_address(&mut self, ip: crate::wire::Ipv4Address, prefix_len: u8, gateway: bool) {
        let i = &mut self.rx.addr.iface;
        (i.ip, i.prefix_len, i.gateway) = (ip, prefix_len, gateway);
    }

    /// Core 0's own server's closed connections (with `--bsp-http`, or strays): the
    /// dispatcher forgets their mappings as it does for an HTTP core's notes.
    fn connections_closed(&mut self, closed: &[(Peer, u64)]) {
        for &(peer, seen) in closed {
            if self.tx.local_notes.push(Closed { peer, seen }).is_err() {
                self.tx.notes_lost += 1;
            }
        }
    }

    fn dispatch_counters(&self) -> DispatchCounters {
        let rx = &self.rx;
        DispatchCounters {
            dispatched: rx.dispatched,
            drained: self.tx.drained,
            dispatch_ring_full: rx.ring_full,
            dispatch_no_core: rx.no_core,
            dispatch_cookie_syns: rx.cookie_syns,
            conn_map: rx.map.len() as u64,
            conn_map_high: rx.map.high,
            conn_map_expired: rx.map.expired,
            dispatch_ns: rx.dispatch_ns,
            drain_ns: self.tx.drain_ns,
            notes_lost: self.tx.notes_lost,
            udp_dispatched: rx.udp_dispatched,
            udp_no_id: rx.ids.as_ref().map_or(0, |i| i.no_id),
            udp_ids_max: rx.ids.as_ref().map_or(0, CoreIds::high),
            udp_done: rx.ids.as_ref().map_or(0, |i| i.completed),
            udp_time_sum_ns: rx.ids.as_ref().map_or(0, |i| i.time_sum_ns),
            udp_time_max_ns: rx.ids.as_ref().map_or(0, |i| i.time_max_ns),
        }
    }
}

#[cfg(test)]
mod tests;
