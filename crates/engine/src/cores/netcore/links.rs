//! The rings between core 0 and one HTTP core (CLIST for frames in, DLIST for frames out,
//! notes for closed connections, done for answered UDP requests), and the HTTP core's queue pair over them ([`RingNic`]):
//! the ordinary `Server` polls it as it would a device.

use super::ids::Done;
use crate::cores::{CoreQueue, DispatchCounters};
use crate::nic::{Nic, NicCounters, RxFrame, RxRing, TxFull, TxRing, TX_HEAD_ROOM};
use crate::ring::{channel, Consumer, Doze, Producer};
use crate::tcp::port_table::Peer;
use crate::wire::EthernetAddress;

/// Bytes of a CLIST slot: a whole Ethernet frame without FCS fits.
pub const FRAME_MAX: usize = 2048;

/// A received frame on its way to an HTTP core, copied out of the NIC buffer.
pub struct InFrame {
    pub(super) len: u16,
    /// The request id core 0 gave a UDP protocol request (0: none).
    pub(super) tag: u16,
    pub(super) bytes: [u8; FRAME_MAX],
}

impl Default for InFrame {
    fn default() -> Self {
        InFrame {
            len: 0,
            tag: 0,
            bytes: [0; FRAME_MAX],
        }
    }
}

/// A frame on its way from an HTTP core to the NIC: head bytes and a borrowed body, and
/// the NIC of a set it leaves from (`TxRing::select`; 0 with one NIC).
pub struct OutFrame {
    pub(super) head_len: u16,
    pub(super) nic: u8,
    pub(super) body: &'static [u8],
    pub(super) head: [u8; TX_HEAD_ROOM],
}

impl Default for OutFrame {
    fn default() -> Self {
        OutFrame {
            head_len: 0,
            nic: 0,
            body: &[],
            head: [0; TX_HEAD_ROOM],
        }
    }
}

/// An HTTP core freed the connection of `peer` after receiving `seen` frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Closed {
    /// The client.
    pub peer: Peer,
    /// Frames the core's server had received from its CLIST when it freed the TCB.
    pub seen: u64,
}

/// Ring sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSizes {
    /// Slots of each CLIST (frames to an HTTP core).
    pub clist: usize,
    /// Slots of each DLIST (frames from an HTTP core).
    pub dlist: usize,
    /// Slots of each note ring (closed connections); at least the core's TCBs.
    pub notes: usize,
    /// Slots of each done ring (UDP requests answered): at least every request id.
    pub done: usize,
}

impl RingSizes {
    /// Sizes for HTTP cores with `tcbs` TCBs each.
    pub fn for_tcbs(tcbs: usize) -> RingSizes {
        RingSizes {
            clist: 1024,
            dlist: 1024,
            notes: (2 * tcbs).max(64),
            done: 2,
        }
    }

    /// The sizes with room for `ids` UDP request ids in the done rings.
    pub fn with_udp_ids(mut self, ids: u16) -> RingSizes {
        self.done = usize::from(ids).max(2);
        self
    }
}

/// Core 0's ends of the rings to one HTTP core.
pub struct NetEnds {
    pub(super) clist: Producer<InFrame>,
    pub(super) dlist: Consumer<OutFrame>,
    pub(super) notes: Consumer<Closed>,
    pub(super) done: Consumer<Done>,
    /// The HTTP core's doze, nudged after forwarding to it.
    pub(super) http: Doze,
}

/// An HTTP core's ends of its rings.
pub struct HttpEnds {
    pub(super) clist: Consumer<InFrame>,
    pub(super) dlist: Producer<OutFrame>,
    pub(super) notes: Producer<Closed>,
    pub(super) done: Producer<Done>,
    /// This core's own doze (it announces sleep on it).
    pub(super) own: Doze,
    /// Core 0's doze, nudged after a flush that put frames on the DLIST.
    pub(super) net: Doze,
}

/// The three rings between core 0 and one HTTP core (allocated now, once), for cores that
/// never sleep (see [`links_dozing`]).
pub fn links(sizes: RingSizes) -> (NetEnds, HttpEnds) {
    links_dozing(sizes, &Doze::none(), Doze::none())
}

/// [`links`] for cores that sleep when idle: core 0 sleeps on `net` (shared by all its
/// links), the HTTP core on `http`; each side nudges the other after filling a ring.
pub fn links_dozing(sizes: RingSizes, net: &Doze, http: Doze) -> (NetEnds, HttpEnds) {
    let (cp, cc) = channel(sizes.clist);
    let (dp, dc) = channel(sizes.dlist);
    let (np, nc) = channel(sizes.notes);
    let (op, oc) = channel(sizes.done);
    (
        NetEnds {
            clist: cp,
            dlist: dc,
            notes: nc,
            done: oc,
            http: http.clone(),
        },
        HttpEnds {
            clist: cc,
            dlist: dp,
            notes: np,
            done: op,
            own: http,
            net: net.clone(),
        },
    )
}

// ------------------------------------------------------------------------- HTTP core side

/// An HTTP core's queue pair: frames from its CLIST, frames to its DLIST.
pub struct RingNic {
    pub(super) rx: ClistRx,
    pub(super) tx: DlistTx,
    pub(super) own: Doze,
    pub(super) mac: EthernetAddress,
}

impl RingNic {
    /// The queue pair over `ends`, answering for `mac` (the NIC's address).
    pub fn new(ends: HttpEnds, mac: EthernetAddress) -> RingNic {
        RingNic {
            rx: ClistRx {
                ring: ends.clist,
                loaned: 0,
                misordered: 0,
            },
            tx: DlistTx {
                ring: ends.dlist,
                notes: ends.notes,
                notes_lost: 0,
                done: ends.done,
                pushed: 0,
                done_lost: 0,
                net: ends.net,
                posted: false,
                nic: 0,
            },
            own: ends.own,
            mac,
        }
    }

    /// This core's doze: announce on it before sleeping, then check [`Self::input_pending`].
    pub fn doze(&self) -> &Doze {
        &self.own
    }

    /// Whether a frame waits in the CLIST that the server has not taken yet.
    pub fn input_pending(&mut self) -> bool {
        self.rx.ring.available() > self.rx.loaned
    }
}

/// Receive side of an HTTP core: loans CLIST slots in place.
pub struct ClistRx {
    pub(super) ring: Consumer<InFrame>,
    pub(super) loaned: usize,
    /// Recycles that did not name the oldest loaned frame (ignored; a bug if non-zero).
    pub misordered: u64,
}

impl RxRing for ClistRx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let avail = self.ring.available();
        let n = avail.saturating_sub(self.loaned).min(out.len());
        for (k, o) in out[..n].iter_mut().enumerate() {
            let i = self.loaned + k;
            let len = self.ring.peek(i).map_or(0, |f| f.len);
            *o = RxFrame {
                buf: self.ring.head().wrapping_add(i) as u32,
                len: u32::from(len),
            };
        }
        self.loaned += n;
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        let i = f.buf.wrapping_sub(self.ring.head() as u32) as usize;
        if i >= self.loaned {
            return &[];
        }
        match self.ring.peek(i) {
            Some(s) => &s.bytes[..usize::from(s.len).min(FRAME_MAX).min(f.len as usize)],
            None => &[],
        }
    }

    fn request_tag(&self, f: &RxFrame) -> Option<u16> {
        let i = f.buf.wrapping_sub(self.ring.head() as u32) as usize;
        if i >= self.loaned {
            return None;
        }
        self.ring.peek(i).map(|s| s.tag).filter(|&t| t != 0)
    }

    fn recycle(&mut self, f: RxFrame) {
        // The server recycles in the order it was loaned; the slot is released to core 0.
        if self.loaned > 0 && f.buf == self.ring.head() as u32 {
            self.ring.pop();
            self.loaned -= 1;
        } else {
            self.misordered += 1;
        }
    }
}

/// Transmit side of an HTTP core: builds frames in DLIST slots; sends close notes.
pub struct DlistTx {
    pub(super) ring: Producer<OutFrame>,
    pub(super) notes: Producer<Closed>,
    pub(super) notes_lost: u64,
    /// Answered UDP requests, to core 0 (which then frees their ids).
    pub(super) done: Producer<Done>,
    /// Frames committed so far.
    pub(super) pushed: u64,
    /// Done entries lost to a full ring (cannot happen: it has room for every id).
    pub(super) done_lost: u64,
    pub(super) net: Doze,
    /// Frames committed since the last flush.
    pub(super) posted: bool,
    /// The NIC the next frames leave from (`select`), kept with each frame.
    pub(super) nic: u8,
}

impl TxRing for DlistTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        self.ring.slot().map(|s| &mut s.head[..])
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        // The same slot `slot` lent: the ring's tail has not moved since.
        let s = self.ring.slot().ok_or(TxFull)?;
        s.head_len = head_len.min(TX_HEAD_ROOM) as u16;
        s.nic = self.nic;
        s.body = body;
        self.ring.commit();
        self.posted = true;
        self.pushed += 1;
        Ok(())
    }

    fn request_done(&mut self, tag: u16) {
        let d = Done {
            tag,
            pos: self.pushed,
        };
        if self.done.push(d).is_err() {
            self.done_lost += 1;
        }
        self.posted = true; // core 0 must look, even if the answer had no frame
    }

    fn room(&mut self) -> usize {
        self.ring.free()
    }

    fn select(&mut self, nic: u8) {
        self.nic = nic;
    }

    fn flush(&mut self) {
        // One nudge per burst: core 0, if it sleeps, wakes to drain what this flush ends.
        if self.posted {
            self.posted = false;
            self.net.nudge();
        }
    }
}

impl Nic for RingNic {
    type Rx = ClistRx;
    type Tx = DlistTx;

    fn split(&mut self) -> (&mut ClistRx, &mut DlistTx) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn counters(&self) -> NicCounters {
        NicCounters {
            rx_ring_slots: self.rx.ring.capacity() as u64,
            rx_ring_high: self.rx.ring.high_water() as u64,
            tx_ring_slots: self.tx.ring.capacity() as u64,
            tx_ring_high: self.tx.ring.high_water() as u64,
            ..NicCounters::default()
        }
    }
}

impl CoreQueue for RingNic {
    fn connections_closed(&mut self, closed: &[(Peer, u64)]) {
        for &(peer, seen) in closed {
            if self.tx.notes.push(Closed { peer, seen }).is_err() {
                self.tx.notes_lost += 1;
            }
        }
        // A close that sent nothing (the peer's last ACK) must still reach a sleeping
        // core 0, or its connection map keeps the entry until something else wakes it.
        if !closed.is_empty() {
            self.tx.net.nudge();
        }
    }

    fn dispatch_counters(&self) -> DispatchCounters {
        DispatchCounters {
            notes_lost: self.tx.notes_lost,
            ..DispatchCounters::default()
        }
    }
}

// ------------------------------------------------------------------------- core 0 side
