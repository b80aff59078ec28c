//! The one queue-pair type the cores serve over: a NIC's queue pair ([`AnyNic`]) or a
//! core's queue pair of every NIC of a set (bonding's [`BondNic`]), as one type.
//!
//! Why one type: the engine's serving code (`Server::poll`, its send and input paths) is
//! generic over the queue pair and compiled again for every type that reaches it. With a
//! NIC and a NIC set as two types, the kernel carried five copies of it (each NIC kind
//! alone and under network-core mode's `Core0`, plus the HTTP cores' rings), ~33 KB each;
//! with this type, three (docs/kernel.md, "Size": 564,352 → 498,672 bytes). The cost is
//! one `match` per ring call, as [`AnyNic`] already pays per driver: a branch that always
//! goes the same way on a machine (for `AnyNic`'s, serving was measured within the noise).
//!
//! Every method of the engine's ring traits is forwarded, defaults included, so a set's
//! behaviour (its transmit NIC choice, `select`) is the same as when it was its own type.

use bareweb_engine::bond::{BondNic, BondRx, BondTx};
use bareweb_engine::cores::CoreQueue;
use bareweb_engine::nic::{Nic, NicCaps, NicCounters, RxFrame, RxRing, Tso, TxFull, TxRing};
use bareweb_engine::wire::EthernetAddress;

use crate::drivers::any::{AnyNic, AnyRx, AnyTx};
use crate::drivers::{Arm, Driver, Wake, WakeRx};
use crate::nics;
use crate::rest::Sleeper;

/// The receive side of a [`Queue`].
#[allow(clippy::large_enum_variant)]
pub enum QueueRx {
    /// One NIC's.
    One(AnyRx),
    /// Every NIC's of a set.
    Set(BondRx<AnyRx>),
}

/// The transmit side of a [`Queue`].
#[allow(clippy::large_enum_variant)]
pub enum QueueTx {
    /// One NIC's.
    One(AnyTx),
    /// Every NIC's of a set.
    Set(BondTx<AnyTx>),
}

/// A core's queue pair: one NIC's or a set's.
pub struct Queue {
    rx: QueueRx,
    tx: QueueTx,
    /// One NIC's MAC (a set's is its receive NIC's, read from the set).
    mac: EthernetAddress,
    caps: NicCaps,
}

impl From<AnyNic> for Queue {
    fn from(nic: AnyNic) -> Queue {
        let (mac, caps) = (nic.mac(), nic.caps());
        let (rx, tx) = Driver::into_rings(nic);
        Queue {
            rx: QueueRx::One(rx),
            tx: QueueTx::One(tx),
            mac,
            caps,
        }
    }
}

impl From<BondNic<AnyRx, AnyTx>> for Queue {
    fn from(set: BondNic<AnyRx, AnyTx>) -> Queue {
        let (mac, caps) = (set.mac(), set.caps());
        let (rx, tx) = set.into_rings();
        Queue {
            rx: QueueRx::Set(rx),
            tx: QueueTx::Set(tx),
            mac,
            caps,
        }
    }
}

impl Queue {
    /// The two sides, owned apart (network-core mode's core 0 wraps them).
    pub fn into_rings(self) -> (QueueRx, QueueTx) {
        (self.rx, self.tx)
    }

    /// Adds the devices' own counters (doorbells) of the two sides to `c`, summed over a
    /// set's NICs.
    pub fn device_counters(rx: &QueueRx, tx: &QueueTx, c: &mut NicCounters) {
        match (rx, tx) {
            (QueueRx::One(r), QueueTx::One(t)) => nics::device_counters(r, t, c),
            (QueueRx::Set(r), QueueTx::Set(t)) => nics::bond_counters(r, t, c),
            // The two sides of a queue pair come from one `From`: never mixed.
            _ => {}
        }
    }
}

impl Nic for Queue {
    type Rx = QueueRx;
    type Tx = QueueTx;

    fn split(&mut self) -> (&mut QueueRx, &mut QueueTx) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        match &self.rx {
            QueueRx::One(_) => self.mac,
            QueueRx::Set(r) => r.mac(),
        }
    }

    fn caps(&self) -> NicCaps {
        self.caps
    }

    fn counters(&self) -> NicCounters {
        let mut c = NicCounters::default();
        Queue::device_counters(&self.rx, &self.tx, &mut c);
        c
    }
}

impl CoreQueue for Queue {}

/// Its receive interrupt (every NIC's of a set).
impl Sleeper for Queue {
    fn arm(&mut self) -> Arm {
        self.rx.arm()
    }

    fn disarm(&mut self) {
        self.rx.disarm();
    }
}

impl RxRing for QueueRx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        match self {
            QueueRx::One(r) => r.burst(out),
            QueueRx::Set(r) => r.burst(out),
        }
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        match self {
            QueueRx::One(r) => r.bytes(f),
            QueueRx::Set(r) => r.bytes(f),
        }
    }

    fn recycle(&mut self, f: RxFrame) {
        match self {
            QueueRx::One(r) => r.recycle(f),
            QueueRx::Set(r) => r.recycle(f),
        }
    }

    fn request_tag(&self, f: &RxFrame) -> Option<u16> {
        match self {
            QueueRx::One(r) => r.request_tag(f),
            QueueRx::Set(r) => r.request_tag(f),
        }
    }

    fn csum_trusted(&self, f: &RxFrame) -> bool {
        match self {
            QueueRx::One(r) => r.csum_trusted(f),
            QueueRx::Set(r) => r.csum_trusted(f),
        }
    }
}

impl WakeRx for QueueRx {
    fn arm(&mut self) -> Arm {
        match self {
            QueueRx::One(r) => r.arm(),
            QueueRx::Set(r) => r.arm(),
        }
    }

    fn disarm(&mut self) {
        match self {
            QueueRx::One(r) => r.disarm(),
            QueueRx::Set(r) => r.disarm(),
        }
    }

    fn wake(&self) -> Wake {
        match self {
            QueueRx::One(r) => r.wake(),
            QueueRx::Set(r) => r.wake(),
        }
    }
}

impl TxRing for QueueTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        match self {
            QueueTx::One(t) => t.slot(),
            QueueTx::Set(t) => t.slot(),
        }
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        match self {
            QueueTx::One(t) => t.post(head_len, body),
            QueueTx::Set(t) => t.post(head_len, body),
        }
    }

    fn flush(&mut self) {
        match self {
            QueueTx::One(t) => t.flush(),
            QueueTx::Set(t) => t.flush(),
        }
    }

    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        match self {
            QueueTx::One(t) => t.post_tso(head_len, body, tso),
            QueueTx::Set(t) => t.post_tso(head_len, body, tso),
        }
    }

    fn room(&mut self) -> usize {
        match self {
            QueueTx::One(t) => t.room(),
            QueueTx::Set(t) => t.room(),
        }
    }

    fn select(&mut self, nic: u8) {
        match self {
            QueueTx::One(t) => t.select(nic),
            QueueTx::Set(t) => t.select(nic),
        }
    }

    fn request_done(&mut self, tag: u16) {
        match self {
            QueueTx::One(t) => t.request_done(tag),
            QueueTx::Set(t) => t.request_done(tag),
        }
    }
}
