//! The connection table: TCBs ([`Tcb`]) in one array, with the application's state as a
//! type parameter, and what every user of TCP needs around them — the free list, the port
//! table (a segment's key → its TCB, `port_table`), the run list (connections with work
//! for their application), the paced list (connections pacing holds back), the timer scan
//! ([`scan_timers`]) and the frame of a segment ([`Tcb::frame`], for `iface`'s egress) —
//! so that a server, a client and whatever comes next keep and send connections the same
//! way.
//!
//! The table owns no buffer and knows no protocol above TCP: a TCB's application part
//! `A` is opaque to it beyond [`App`] (the state of an unused slot). What to do with a
//! segment's data, a timer or a free send window is the owner's — it holds the table, the
//! application's buffers and the interface, and drives the state machine
//! ([`Connection`]) of each TCB it finds here:
//!
//! - the HTTP server (`server`) is a `Table<HttpConn>`: the HTTP side of a connection
//!   (`http::conn`); admission (the per-address limit, SYN cookies, the half-open
//!   backlog, eviction) is the server's, and decides whether a SYN or a cookie's ACK gets
//!   a TCB here at all;
//! - the HTTP fetcher (`fetch`) is a `Table<FetchConn>`: the fetch running on the
//!   connection (its slot and request), keyed by its local port.
//!
//! # HTTPS
//!
//! An HTTPS connection is not a third `A`: it is a TCB of the server's own table with
//! `HttpConn::tls` set, its TLS state in a slab beside the TCBs (`server::tls`), so that
//! HTTP and HTTPS share one budget of TCBs, one admission and one timer scan. The key is
//! the peer's address and port only: one peer port on both of our ports at once finds
//! one connection (docs/design/tls.md, "Known limits").
//!
//! Nothing here allocates after [`Table::new`]: the array, the free, run and paced lists
//! are reserved for the table's size at once, and TCBs are made as first needed within it.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::ops::{Index, IndexMut, Range};

use super::conn::Connection;
use super::output::{Segment, TimerAction};
use super::port_table::{Links, Peer, PortTable, NONE};
pub use super::tcb::{App, Tcb};
use crate::iface::egress::{self, TcpOut};
use crate::wire::tcp as wtcp;
use crate::wire::EthernetAddress;

impl<A> Links for [Tcb<A>] {
    fn count(&self) -> usize {
        self.len()
    }
    fn peer(&self, i: u32) -> Peer {
        self[i as usize].peer
    }
    fn next(&self, i: u32) -> u32 {
        self[i as usize].chain
    }
    fn set_next(&mut self, i: u32, next: u32) {
        self[i as usize].chain = next;
    }
}

/// Up to `max` connections with application state `A`.
pub struct Table<A> {
    /// The TCBs made so far (at most `max`; a freed one stays, for reuse).
    tcbs: Vec<Tcb<A>>,
    max: usize,
    /// Freed TCBs, taken again first (last freed first); past them a new one is made.
    free: Vec<u32>,
    ports: PortTable,
    /// Connections whose application has work (each at most once: [`Tcb::queued`]).
    run: VecDeque<u32>,
    /// Connections pacing holds back, each woken at its pacing deadline by the owner
    /// (each at most once: [`Tcb::paced`]).
    paced: Vec<u32>,
}

impl<A: App> Table<A> {
    /// A table of up to `max` TCBs (reserved now, made as needed).
    pub fn new(max: usize) -> Table<A> {
        Table {
            tcbs: Vec::with_capacity(max),
            max,
            free: Vec::with_capacity(max),
            ports: PortTable::new(),
            run: VecDeque::with_capacity(max),
            paced: Vec::with_capacity(max),
        }
    }

    /// The most TCBs the table holds.
    pub fn max(&self) -> usize {
        self.max
    }

    /// TCBs made so far (the range a scan covers: [`Table::ids`]).
    pub fn made(&self) -> usize {
        self.tcbs.len()
    }

    /// TCBs the array has room for without growing (at least [`Table::max`]).
    pub fn reserved(&self) -> usize {
        self.tcbs.capacity()
    }

    /// TCBs in use.
    pub fn active(&self) -> usize {
        self.tcbs.len() - self.free.len()
    }

    /// Whether a new connection can have a TCB ([`Table::take`] would give one).
    pub fn has_room(&self) -> bool {
        !self.free.is_empty() || self.tcbs.len() < self.max
    }

    /// A free TCB for a new connection: the last one freed, else a new one made (inside
    /// the capacity reserved by `new`: no allocation); `None` when all are in use. Until
    /// [`Table::open`] it is linked nowhere.
    pub fn take(&mut self) -> Option<u32> {
        if let Some(id) = self.free.pop() {
            return Some(id);
        }
        let id = self.tcbs.len();
        if id >= self.max {
            return None;
        }
        self.tcbs.push(Tcb::free());
        Some(id as u32)
    }

    /// Puts connection `tcp` with `peer` (its key), reached through `peer_mac`, in taken
    /// TCB `id` with application state `app`, and links it in the port table.
    pub fn open(
        &mut self,
        id: u32,
        peer: Peer,
        peer_mac: EthernetAddress,
        tcp: Connection,
        app: A,
    ) {
        // Field by field into the free TCB (`recycle` reset the rest): a whole `Tcb { .. }`
        // was built aside and copied in, two `memcpy`s a connection (callgrind).
        let t = &mut self.tcbs[id as usize];
        debug_assert!(!t.queued && !t.paced && t.chain == NONE);
        t.tcp = tcp;
        t.app = app;
        t.peer = peer;
        t.peer_mac = peer_mac;
        t.send = 0;
        t.per_ip_home = 0;
        self.ports.insert(&mut self.tcbs[..], id);
    }

    /// The TCB whose key is `peer`, if any.
    #[inline]
    pub fn find(&self, peer: Peer) -> Option<u32> {
        self.ports.find(&self.tcbs[..], peer)
    }

    /// Unlinks TCB `id` from the port table, the first half of freeing it; returns false
    /// when it was not linked (not allocated: nothing to free). The owner then lets go of
    /// what its application holds and calls [`Table::recycle`].
    pub fn unlink(&mut self, id: u32) -> bool {
        self.ports.remove(&mut self.tcbs[..], id)
    }

    /// Resets unlinked TCB `id`, takes it off the run and paced lists and puts it on the
    /// free list.
    pub fn recycle(&mut self, id: u32) {
        let t = &self.tcbs[id as usize];
        let (queued, paced) = (t.queued, t.paced);
        self.tcbs[id as usize] = Tcb::free();
        if queued {
            self.run.retain(|&x| x != id);
        }
        if paced {
            self.paced.retain(|&x| x != id);
        }
        self.free.push(id);
    }
}

impl<A> Table<A> {
    /// Every TCB made (in use or free: [`Tcb::in_use`]).
    #[inline]
    pub fn tcbs(&self) -> &[Tcb<A>] {
        &self.tcbs
    }

    /// The numbers of every TCB made, for a scan that may free some as it goes.
    pub fn ids(&self) -> Range<u32> {
        0..self.tcbs.len() as u32
    }

    /// Puts connection `id` on the run list unless it is there; returns whether it was
    /// added.
    #[inline]
    pub fn enqueue(&mut self, id: u32) -> bool {
        let t = &mut self.tcbs[id as usize];
        if t.queued {
            return false;
        }
        t.queued = true;
        self.run.push_back(id);
        true
    }

    /// Connections on the run list.
    #[inline]
    pub fn run_len(&self) -> usize {
        self.run.len()
    }

    /// Takes the connection at the head of the run list (still marked queued: its step
    /// clears that, so frames arriving before it do not queue it twice).
    #[inline]
    pub fn pop_run(&mut self) -> Option<u32> {
        self.run.pop_front()
    }

    /// Puts connection `id` on the paced list (pacing holds it back) unless it is there.
    #[inline]
    pub fn pace(&mut self, id: u32) {
        let t = &mut self.tcbs[id as usize];
        if !t.paced {
            t.paced = true;
            self.paced.push(id);
        }
    }

    /// The paced list, in no particular order.
    #[inline]
    pub fn paced(&self) -> &[u32] {
        &self.paced
    }

    /// Takes the `i`th connection off the paced list (the last one takes its place).
    #[inline]
    pub fn unpace_at(&mut self, i: usize) -> u32 {
        let id = self.paced.swap_remove(i);
        self.tcbs[id as usize].paced = false;
        id
    }
}

impl<A> Tcb<A> {
    /// Segment `seg` of this connection as a frame for [`Egress::tcp`]: the header from the
    /// state machine (from port `ports.0` to the peer's `ports.1`, advertising `window`;
    /// building it pays the owed ACK), to the peer's address through `dst_mac`, carrying
    /// `head` (copied into the frame) and `body` (posted as it is). A segment longer than
    /// the MSS is cut by the device (segmentation offload) and checksummed there;
    /// otherwise `body_sum` gives the body's one's-complement sum (asked only for a body).
    /// Every owner of a table sends its segments through here.
    ///
    /// [`Egress::tcp`]: crate::iface::Egress::tcp
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn frame<'p>(
        &mut self,
        seg: &Segment,
        ports: (u16, u16),
        window: u32,
        dst_mac: EthernetAddress,
        head: &'p [u8],
        body: &'static [u8],
        body_sum: impl FnOnce() -> u16,
        now: u64,
    ) -> TcpOut<'p> {
        let repr = self.tcp.header(seg, ports.0, ports.1, window, now);
        let mss = self.tcp.mss();
        TcpOut {
            repr,
            dst_mac,
            dst: self.peer.ip,
            head,
            body,
            // An offloaded frame's checksum is the device's, and a frame without body bytes
            // (a SYN-ACK, an ACK, a FIN, a head-only segment) has none: no body sum needed.
            body_sum: if seg.len > mss || body.is_empty() {
                0
            } else {
                body_sum()
            },
            tso_mss: (seg.len > mss).then_some(mss as u16),
            copied: &[],
        }
    }

    /// The RST of this connection at sequence number `seq` (from port `ports.0` to the
    /// peer's `ports.1`), for [`Egress::tcp_bare`]: every owner's reset of a connection it
    /// holds (a timer's abort, an unacceptable segment, the end of a run).
    ///
    /// [`Egress::tcp_bare`]: crate::iface::Egress::tcp_bare
    #[inline]
    pub fn reset(&self, ports: (u16, u16), seq: u32) -> wtcp::Repr {
        egress::reset(ports.0, ports.1, seq, None)
    }
}

/// A table's owner as its timer scan ([`scan_timers`]) sees it: the application's own
/// timeouts, and what to do when a connection's TCP timer fires (send through the owner's
/// interface, count, tell the application, free the TCB).
pub trait Timed {
    /// The application state in the table's TCBs.
    type App;
    /// The table scanned.
    fn table(&mut self) -> &mut Table<Self::App>;
    /// The application's timeouts of connection `id` (in use), looked at before TCP's own
    /// timer: returns whether it dealt with the connection (then TCP's timer waits for
    /// the next scan).
    fn app_timer(&mut self, id: u32) -> bool;
    /// TCP's timer of connection `id` asks `action` (never [`TimerAction::None`]).
    fn fire(&mut self, id: u32, action: TimerAction);
}

/// What a timer scan found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scanned {
    /// The earliest precise TCP deadline left (a loss probe's; `u64::MAX`: none).
    pub next_precise_ns: u64,
    /// Whether any connection's TCP timer fired.
    pub fired: bool,
}

/// The timer scan over every TCB in use of `o`'s table: the application's timeouts first,
/// then TCP's timer (`Connection::on_timer` with the stall bound and the retry limit),
/// whose action `o` carries out.
pub fn scan_timers<O: Timed>(o: &mut O, now: u64, stall_ns: u64, max_retries: u8) -> Scanned {
    let mut found = Scanned {
        next_precise_ns: u64::MAX,
        fired: false,
    };
    for id in o.table().ids() {
        let idx = id as usize;
        if !o.table()[idx].in_use() || o.app_timer(id) {
            continue;
        }
        let action = o.table()[idx].tcp.on_timer(now, stall_ns, max_retries);
        if action != TimerAction::None {
            found.fired = true;
            o.fire(id, action);
        }
        let t = &o.table()[idx];
        if t.in_use() {
            let at = t.tcp.timer().precise_deadline().unwrap_or(u64::MAX);
            found.next_precise_ns = found.next_precise_ns.min(at);
        }
    }
    found
}

impl<A> Index<usize> for Table<A> {
    type Output = Tcb<A>;
    #[inline]
    fn index(&self, i: usize) -> &Tcb<A> {
        &self.tcbs[i]
    }
}

impl<A> IndexMut<usize> for Table<A> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut Tcb<A> {
        &mut self.tcbs[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Note(u32);
    impl App for Note {
        const IDLE: Note = Note(0);
    }

    fn peer(host: u8) -> Peer {
        Peer::v4([10, 0, 0, host], 80)
    }

    #[test]
    fn takes_the_last_freed_first_and_makes_tcbs_only_as_needed() {
        let mut t: Table<Note> = Table::new(3);
        assert_eq!(t.made(), 0);
        let a = t.take().unwrap();
        t.open(
            a,
            peer(1),
            EthernetAddress([0; 6]),
            Connection::closed(),
            Note(7),
        );
        let b = t.take().unwrap();
        t.open(
            b,
            peer(2),
            EthernetAddress([0; 6]),
            Connection::closed(),
            Note(8),
        );
        assert_eq!((a, b, t.made(), t.active()), (0, 1, 2, 2));
        assert_eq!(t.find(peer(1)), Some(a));
        assert_eq!(
            (t.find(peer(2)), t[b as usize].app.clone()),
            (Some(b), Note(8))
        );
        assert!(t.enqueue(a) && !t.enqueue(a));
        assert!(t.unlink(a) && !t.unlink(a));
        t.recycle(a);
        assert_eq!((t.find(peer(1)), t.run_len(), t.active()), (None, 0, 1));
        assert_eq!(t[a as usize].app, Note(0));
        assert_eq!(t.take(), Some(a), "the freed one again");
        assert_eq!(t.take(), Some(2));
        assert_eq!(t.take(), None);
        assert!(!t.has_room());
    }

    /// An owner that records what the scan asks of it.
    struct Owner {
        t: Table<Note>,
        /// The connection whose application deals with its own timeout.
        app_deals: u32,
        fired: alloc::vec::Vec<(u32, TimerAction)>,
    }

    impl Timed for Owner {
        type App = Note;
        fn table(&mut self) -> &mut Table<Note> {
            &mut self.t
        }
        fn app_timer(&mut self, id: u32) -> bool {
            id == self.app_deals
        }
        fn fire(&mut self, id: u32, action: TimerAction) {
            self.fired.push((id, action));
        }
    }

    #[test]
    fn the_scan_asks_the_application_first_and_skips_free_tcbs() {
        let mut o = Owner {
            t: Table::new(4),
            app_deals: 0,
            fired: alloc::vec::Vec::new(),
        };
        for host in 1..=3 {
            let id = o.t.take().unwrap();
            let mut c = Connection::connect(1, 0);
            c.syn(0);
            o.t.open(id, peer(host), EthernetAddress([0; 6]), c, Note(0));
        }
        // TCB 2 is freed: in the array, not in use.
        assert!(o.t.unlink(2));
        o.t.recycle(2);
        let quiet = scan_timers(&mut o, 1_000, 10_000_000_000, 8);
        assert_eq!((quiet.fired, o.fired.len()), (false, 0));
        let due = scan_timers(&mut o, 5_000_000_000, 10_000_000_000, 8);
        assert!(due.fired);
        assert_eq!(
            o.fired,
            [(1, TimerAction::ResendSynAck)],
            "0 is the app's, 2 is free"
        );
        assert_eq!(due.next_precise_ns, u64::MAX, "no loss probe armed");
    }
}
