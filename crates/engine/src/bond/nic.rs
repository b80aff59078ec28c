//! The NIC set as one queue pair: [`BondNic`] is the `Nic` a server polls when it serves
//! on several NICs (queue pair `q` of each NIC, for the core that owns queue `q`).
//!
//! - **Receive** ([`BondRx`]): a burst comes from the receive NIC's ring only (read from
//!   the set's live word at every burst, so a failover takes effect on every core at its
//!   next burst). The other NICs' rings are emptied every [`DRAIN_EVERY`] bursts and what
//!   they held is dropped and counted (`rx_ignored`): a switch may flood a frame to every
//!   port, and an ARP request reaches them all, but only the receive NIC answers. A
//!   frame's buffer id carries its ring in its top byte, so `bytes` and `recycle` find it
//!   whatever happens between burst and recycle.
//! - **Transmit** ([`BondTx`]): [`TxRing::select`] says which NIC the following frames
//!   leave from (the server calls it with a connection's send-id, and writes that NIC's MAC
//!   as the source); `slot`/`post` go to that NIC's ring, `flush` to every ring (one
//!   doorbell each at most), `room` is the least room among the NICs in use now.
//! - **Link monitor** ([`LinkWatch`], on one core only): every `--bond-monitor-ms`, at the
//!   start of a burst, reads each NIC's link ([`LinkSense`]) and runs the failover state
//!   machine ([`Monitor`]), publishing the new word for every core.
//!
//! Per-NIC frame counters are published to the set's slot for this core at each burst and
//! flush that changed them (relaxed stores to words only this core writes).

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::{Bond, Monitor, NicCounts, Part, MAX_NICS};
use crate::nic::{
    Clock, LinkSense, Nic, NicCaps, NicCounters, RxFrame, RxRing, Tso, TxFull, TxRing,
};
use crate::wire::EthernetAddress;

/// Bursts between two emptyings of the rings of the NICs that do not receive.
pub const DRAIN_EVERY: u32 = 16;
/// Most bursts one drain of an idle NIC takes.
const DRAIN_BURSTS: usize = 64;
/// Frames taken from a non-receive ring per emptying.
const DRAIN_BUDGET: usize = 32;
/// Where a frame's ring is kept in its buffer id.
const RING_SHIFT: u32 = 24;
const BUF_MASK: u32 = (1 << RING_SHIFT) - 1;

/// The link monitor: the failover state machine, every NIC's link, and the time to read
/// them. Owned by one core's [`BondRx`].
pub struct LinkWatch {
    monitor: Monitor,
    links: Vec<Box<dyn LinkSense>>,
    clock: Box<dyn Clock + Send>,
    interval_ns: u64,
    next_ns: u64,
    /// Readings taken.
    pub readings: u64,
}

impl LinkWatch {
    /// A monitor over `links` (NIC k's at k, as many as the set has), read every
    /// `bond.monitor_ms()` by `clock`.
    pub fn new(bond: &Bond, links: Vec<Box<dyn LinkSense>>, clock: Box<dyn Clock + Send>) -> Self {
        LinkWatch {
            monitor: Monitor::new(bond.count()),
            links,
            clock,
            interval_ns: u64::from(bond.monitor_ms()) * 1_000_000,
            next_ns: 0,
            readings: 0,
        }
    }

    /// Reads the links if a reading is due, and publishes what changed.
    fn poll(&mut self, bond: &Bond) {
        let now = self.clock.now_ns();
        if now < self.next_ns {
            return;
        }
        self.next_ns = now + self.interval_ns;
        self.readings += 1;
        let mut sensed = 0u8;
        for (k, l) in self.links.iter_mut().enumerate().take(bond.count()) {
            if l.link_up() {
                sensed |= 1 << k;
            }
        }
        let before = self.monitor.links();
        let report = self.monitor.observe(sensed);
        if self.monitor.links() != before {
            bond.count_events(&report);
            bond.publish(self.monitor.links());
        }
    }
}

/// Receive side of a NIC set.
pub struct BondRx<R> {
    rings: Vec<R>,
    bond: &'static Bond,
    core: usize,
    receive: usize,
    watch: Option<LinkWatch>,
    counts: [NicCounts; MAX_NICS],
    bursts: u32,
    scratch: [RxFrame; DRAIN_BUDGET],
}

/// Transmit side of a NIC set.
pub struct BondTx<T> {
    rings: Vec<T>,
    bond: &'static Bond,
    core: usize,
    sel: usize,
    counts: [NicCounts; MAX_NICS],
    dirty: bool,
}

/// One queue pair of every NIC of a set, as one queue pair.
pub struct BondNic<R, T> {
    rx: BondRx<R>,
    tx: BondTx<T>,
    caps: NicCaps,
    device: fn(&R, &T, &mut NicCounters),
}

fn no_device_counters<R, T>(_: &R, _: &T, _: &mut NicCounters) {}

impl<R: RxRing, T: TxRing> BondNic<R, T> {
    /// Core `core`'s queue pairs of the NICs of `bond` (NIC k's at k; as many as the set
    /// has: with `--bond off` the first only), each NIC's two sides as `into_rings`
    /// gives them, and what every ring can do (`caps`, the least of the NICs').
    ///
    /// # Panics
    ///
    /// If `pairs` does not hold a pair for every NIC of the set (a platform bug).
    pub fn new(bond: &'static Bond, core: usize, pairs: Vec<(R, T)>, caps: NicCaps) -> Self {
        assert!(
            pairs.len() >= bond.count(),
            "{} queue pairs for {} NICs",
            pairs.len(),
            bond.count()
        );
        let (rxs, txs): (Vec<R>, Vec<T>) = pairs.into_iter().take(bond.count()).unzip();
        BondNic {
            rx: BondRx {
                rings: rxs,
                bond,
                core,
                receive: 0,
                watch: None,
                counts: Default::default(),
                bursts: 0,
                scratch: [RxFrame { buf: 0, len: 0 }; DRAIN_BUDGET],
            },
            tx: BondTx {
                rings: txs,
                bond,
                core,
                sel: 0,
                counts: Default::default(),
                dirty: false,
            },
            caps,
            device: no_device_counters,
        }
    }

    /// The set from whole queue pairs (`Nic`s), split by `into_rings`; the capabilities
    /// are the least of theirs.
    pub fn from_nics<N: Nic<Rx = R, Tx = T>>(
        bond: &'static Bond,
        core: usize,
        nics: Vec<N>,
        into_rings: impl Fn(N) -> (R, T),
    ) -> Self {
        let caps = least_caps(nics.iter().map(Nic::caps));
        Self::new(bond, core, nics.into_iter().map(into_rings).collect(), caps)
    }

    /// Reports the devices' own counters (doorbells, frames) through `f`, summed over the
    /// NICs, as `Nic::counters` (a kernel driver's per-side counters).
    pub fn with_device_counters(mut self, f: fn(&R, &T, &mut NicCounters)) -> Self {
        self.device = f;
        self
    }

    /// Makes this the core that monitors the links.
    pub fn with_watch(mut self, watch: LinkWatch) -> Self {
        self.rx.watch = Some(watch);
        self
    }

    /// The two sides, owned apart (network-core mode's core 0 wraps them).
    pub fn into_rings(self) -> (BondRx<R>, BondTx<T>) {
        (self.rx, self.tx)
    }

    /// Every NIC's two sides (for a platform's own counters and waits).
    pub fn rings(&self) -> (&[R], &[T]) {
        (&self.rx.rings, &self.tx.rings)
    }
}

/// The capabilities every NIC of a set has: the least MTU and segmentation size.
pub fn least_caps(caps: impl Iterator<Item = NicCaps>) -> NicCaps {
    caps.reduce(|a, b| NicCaps {
        mtu: a.mtu.min(b.mtu),
        tso_max: a.tso_max.min(b.tso_max),
        tso6: a.tso6 && b.tso6,
    })
    .unwrap_or_default()
}

impl<R> BondRx<R> {
    /// Every NIC's receive side, NIC k's at k.
    pub fn rings(&self) -> &[R] {
        &self.rings
    }

    /// Every NIC's receive side, mutably (tests feed them).
    pub fn rings_mut(&mut self) -> &mut [R] {
        &mut self.rings
    }

    /// The receive NIC's MAC (the one ARP gives).
    pub fn mac(&self) -> EthernetAddress {
        self.bond.mac(usize::from(self.bond.links().receive))
    }

    /// The receive NIC as of the last burst.
    pub fn receive(&self) -> usize {
        self.receive
    }

    /// The link monitor, if this core runs it.
    pub fn watch(&self) -> Option<&LinkWatch> {
        self.watch.as_ref()
    }

    fn publish(&self) {
        self.bond.publish_counts(self.core, Part::Rx, &self.counts);
    }
}

impl<R: RxRing> BondRx<R> {
    /// Empties the rings of the NICs that do not receive now.
    fn drain_others(&mut self) -> bool {
        let mut any = false;
        for k in 0..self.rings.len() {
            if k == self.receive {
                continue;
            }
            // Until empty (a ring may give fewer than it holds per burst, as a TAP read
            // once per burst does), bounded.
            for _ in 0..DRAIN_BURSTS {
                let n = self.rings[k].burst(&mut self.scratch);
                for f in &self.scratch[..n] {
                    self.rings[k].recycle(*f);
                }
                self.counts[k].rx_ignored += n as u64;
                any |= n > 0;
                if n == 0 {
                    break;
                }
            }
        }
        any
    }
}

impl<R: RxRing> RxRing for BondRx<R> {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        if let Some(w) = self.watch.as_mut() {
            w.poll(self.bond);
        }
        let links = self.bond.links();
        self.receive = usize::from(links.receive).min(self.rings.len() - 1);
        self.bursts = self.bursts.wrapping_add(1);
        let mut changed = false;
        if self.bursts.is_multiple_of(DRAIN_EVERY) && self.rings.len() > 1 {
            changed |= self.drain_others();
        }
        let k = self.receive;
        let n = self.rings[k].burst(out);
        let mut kept = 0;
        for i in 0..n {
            let f = out[i];
            if f.buf > BUF_MASK {
                // A driver id too large to carry the ring: cannot be told apart, dropped.
                self.rings[k].recycle(f);
                self.counts[k].rx_ignored += 1;
                continue;
            }
            out[kept] = RxFrame {
                buf: f.buf | (k as u32) << RING_SHIFT,
                len: f.len,
            };
            kept += 1;
        }
        self.counts[k].rx_frames += kept as u64;
        if changed || n > 0 {
            self.publish();
        }
        kept
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        let k = (f.buf >> RING_SHIFT) as usize;
        match self.rings.get(k) {
            Some(r) => r.bytes(&RxFrame {
                buf: f.buf & BUF_MASK,
                len: f.len,
            }),
            None => &[],
        }
    }

    fn recycle(&mut self, f: RxFrame) {
        let k = (f.buf >> RING_SHIFT) as usize;
        if let Some(r) = self.rings.get_mut(k) {
            r.recycle(RxFrame {
                buf: f.buf & BUF_MASK,
                len: f.len,
            });
        }
    }
}

impl<T> BondTx<T> {
    /// Every NIC's transmit side, NIC k's at k.
    pub fn rings(&self) -> &[T] {
        &self.rings
    }

    /// Every NIC's transmit side, mutably (tests read them).
    pub fn rings_mut(&mut self) -> &mut [T] {
        &mut self.rings
    }

    /// The NIC frames go to now.
    pub fn selected(&self) -> usize {
        self.sel
    }

    fn count(&mut self, bytes: usize) {
        let c = &mut self.counts[self.sel];
        c.tx_frames += 1;
        c.tx_bytes += bytes as u64;
        self.dirty = true;
    }
}

impl<T: TxRing> TxRing for BondTx<T> {
    fn select(&mut self, nic: u8) {
        let k = usize::from(nic);
        self.sel = if k < self.rings.len() { k } else { 0 };
    }

    fn slot(&mut self) -> Option<&mut [u8]> {
        self.rings[self.sel].slot()
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        self.rings[self.sel].post(head_len, body)?;
        self.count(head_len + body.len());
        Ok(())
    }

    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        self.rings[self.sel].post_tso(head_len, body, tso)?;
        self.count(head_len + body.len());
        Ok(())
    }

    fn tso_copies(&self) -> bool {
        self.rings.iter().all(|r| r.tso_copies())
    }

    fn post_tso_copied(&mut self, head_len: usize, body: &[u8], tso: Tso) -> Result<(), TxFull> {
        self.rings[self.sel].post_tso_copied(head_len, body, tso)?;
        self.count(head_len + body.len());
        Ok(())
    }

    fn flush(&mut self) {
        for r in &mut self.rings {
            r.flush();
        }
        if core::mem::take(&mut self.dirty) {
            self.bond.publish_counts(self.core, Part::Tx, &self.counts);
        }
    }

    fn room(&mut self) -> usize {
        let links = self.bond.links();
        let used = self.bond.senders(links) | 1 << (links.receive & 7);
        let mut room = usize::MAX;
        for (k, r) in self.rings.iter_mut().enumerate() {
            if used & (1 << k) != 0 {
                room = room.min(r.room());
            }
        }
        room
    }
}

impl<R: RxRing, T: TxRing> Nic for BondNic<R, T> {
    type Rx = BondRx<R>;
    type Tx = BondTx<T>;

    fn split(&mut self) -> (&mut BondRx<R>, &mut BondTx<T>) {
        (&mut self.rx, &mut self.tx)
    }

    /// The receive NIC's MAC (the one ARP gives).
    fn mac(&self) -> EthernetAddress {
        self.rx.mac()
    }

    fn caps(&self) -> NicCaps {
        self.caps
    }

    fn counters(&self) -> NicCounters {
        let mut c = NicCounters::default();
        for (r, t) in self.rx.rings.iter().zip(&self.tx.rings) {
            (self.device)(r, t, &mut c);
        }
        c
    }
}

#[cfg(test)]
mod tests;
