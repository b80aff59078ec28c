//! One queue-pair type over every driver ([`AnyNic`]), so the engine's per-NIC generic
//! code (`Server::poll` and everything under it, `cores::run`, the network core's
//! wrappers, bonding) is compiled once for the kernel instead of once per driver and per
//! mode: with a type per driver the stripped kernel was 790 KB, 218 KB of which was the
//! e1000's second copy of that code (the size budget, docs/kernel.md "Size").
//!
//! Each ring call is a `match` on which driver it is: one predictable branch per burst or
//! per posted frame, nothing per byte. A new driver is one more variant here and in
//! [`AnyNic::matches`]/[`AnyNic::open`].

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use bareweb_engine::cores::CoreQueue;
use bareweb_engine::nic::{
    LinkSense, Nic, NicCaps, NicCounters, RxFrame, RxRing, Tso, TxFull, TxRing,
};
use bareweb_engine::wire::EthernetAddress;

use super::e1000::{E1000Link, E1000Rx, E1000Tx, E1000};
use super::e1000e::E1000e;
use super::igb::Igb;
use super::virtio_net::{VirtioLink, VirtioNet, VirtioRx, VirtioTx};
use super::vmxnet3::{Vmxnet3, Vmxnet3Link, Vmxnet3Rx, Vmxnet3Tx};
use super::{Arm, Driver, Open, Wake, WakeRx};
use crate::arch::pci::Device;

/// A receive side of any driver (the 82574's are the 82540EM's: one variant, one copy of
/// the code). (The e1000's is larger, its descriptor shadow inline:
/// there is one per queue pair, and boxing it would add a pointer chase per call.)
#[allow(clippy::large_enum_variant)]
pub enum AnyRx {
    /// virtio-net (PCI or MMIO).
    Virtio(VirtioRx),
    /// e1000.
    E1000(E1000Rx),
    /// vmxnet3.
    Vmxnet3(Vmxnet3Rx),
}

/// A transmit side of any driver.
pub enum AnyTx {
    /// virtio-net (PCI or MMIO).
    Virtio(VirtioTx),
    /// e1000.
    E1000(E1000Tx),
    /// vmxnet3.
    Vmxnet3(Vmxnet3Tx),
}

/// A device's link, for the bonding monitor.
#[derive(Clone, Copy)]
enum AnyLink {
    Virtio(VirtioLink),
    E1000(E1000Link),
    Vmxnet3(Vmxnet3Link),
}

/// The multicast filter of the NIC a queue pair is of ([`Driver::multicast`]).
enum AnyMulticast {
    Unfiltered,
    E1000(Box<super::e1000::E1000Multicast>),
    Vmxnet3(super::vmxnet3::Vmxnet3Multicast),
}

/// A queue pair of any driver.
pub struct AnyNic {
    rx: AnyRx,
    tx: AnyTx,
    mac: EthernetAddress,
    caps: NicCaps,
    link: AnyLink,
    mcast: AnyMulticast,
    name: &'static str,
}

impl From<VirtioNet> for AnyNic {
    fn from(n: VirtioNet) -> AnyNic {
        let (mac, caps, link) = (n.mac(), n.caps(), AnyLink::Virtio(n.link_sense()));
        let mcast = AnyMulticast::Unfiltered;
        let (rx, tx) = n.into_rings();
        AnyNic {
            rx: AnyRx::Virtio(rx),
            tx: AnyTx::Virtio(tx),
            mac,
            caps,
            link,
            mcast,
            name: <VirtioNet>::NAME,
        }
    }
}

impl From<E1000e> for AnyNic {
    fn from(n: E1000e) -> AnyNic {
        let mut any = AnyNic::from(n.into_inner());
        any.name = <E1000e>::NAME;
        any
    }
}

impl From<Igb> for AnyNic {
    fn from(n: Igb) -> AnyNic {
        let mut any = AnyNic::from(n.into_inner());
        any.name = <Igb>::NAME;
        any
    }
}

impl From<Vmxnet3> for AnyNic {
    fn from(n: Vmxnet3) -> AnyNic {
        let (mac, caps, link) = (n.mac(), n.caps(), AnyLink::Vmxnet3(n.link_sense()));
        let mcast = AnyMulticast::Vmxnet3(n.multicast_filter());
        let (rx, tx) = Driver::into_rings(n);
        AnyNic {
            rx: AnyRx::Vmxnet3(rx),
            tx: AnyTx::Vmxnet3(tx),
            mac,
            caps,
            link,
            mcast,
            name: <Vmxnet3>::NAME,
        }
    }
}

impl From<E1000> for AnyNic {
    fn from(n: E1000) -> AnyNic {
        let (mac, caps, link) = (n.mac(), n.caps(), AnyLink::E1000(n.link_sense()));
        let mcast = AnyMulticast::E1000(Box::new(n.multicast_filter()));
        let (rx, tx) = Driver::into_rings(n);
        AnyNic {
            rx: AnyRx::E1000(rx),
            tx: AnyTx::E1000(tx),
            mac,
            caps,
            link,
            mcast,
            name: <E1000>::NAME,
        }
    }
}

/// The NICs the kernel drives, as "name vendor:device/device" (for a machine where it
/// finds none).
pub struct Supported;

impl fmt::Display for Supported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list: [(&str, u16, &[u16]); 5] = [
            (
                <VirtioNet>::NAME,
                super::virtio_net::VENDOR,
                &super::virtio_net::DEVICES,
            ),
            (<E1000>::NAME, super::e1000::VENDOR, &super::e1000::DEVICES),
            (
                <E1000e>::NAME,
                super::e1000::VENDOR,
                &super::e1000e::DEVICES,
            ),
            (<Igb>::NAME, super::e1000::VENDOR, &super::igb::DEVICES),
            (
                <Vmxnet3>::NAME,
                super::vmxnet3::VENDOR,
                &super::vmxnet3::DEVICES,
            ),
        ];
        for (i, (name, vendor, devices)) in list.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{name} {vendor:04x}:")?;
            for (j, d) in devices.iter().enumerate() {
                write!(f, "{}{d:04x}", if j == 0 { "" } else { "/" })?;
            }
        }
        Ok(())
    }
}

/// Why a device could not be brought up, with its driver's name.
pub enum AnyError {
    /// virtio-net's reason.
    Virtio(super::virtio::Error),
    /// e1000's reason.
    E1000(super::e1000::Error),
    /// e1000e's reason.
    E1000e(super::e1000::Error),
    /// igb's reason.
    Igb(super::e1000::Error),
    /// vmxnet3's reason.
    Vmxnet3(super::vmxnet3::Error),
}

impl fmt::Debug for AnyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyError::Virtio(e) => write!(f, "virtio-net: {e:?}"),
            AnyError::E1000(e) => write!(f, "e1000: {e:?}"),
            AnyError::E1000e(e) => write!(f, "e1000e: {e:?}"),
            AnyError::Igb(e) => write!(f, "igb: {e:?}"),
            AnyError::Vmxnet3(e) => write!(f, "vmxnet3: {e:?}"),
        }
    }
}

impl AnyNic {
    /// The driver's short name ("virtio-net", "e1000", "e1000e", "igb", "vmxnet3").
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Which driver drives `dev` (its name), if any.
    pub fn driver_of(dev: &Device) -> Option<&'static str> {
        if VirtioNet::matches(dev) {
            Some(<VirtioNet>::NAME)
        } else if E1000::matches(dev) {
            Some(<E1000>::NAME)
        } else if E1000e::matches(dev) {
            Some(<E1000e>::NAME)
        } else if Igb::matches(dev) {
            Some(<Igb>::NAME)
        } else if Vmxnet3::matches(dev) {
            Some(<Vmxnet3>::NAME)
        } else {
            None
        }
    }
}

impl Nic for AnyNic {
    type Rx = AnyRx;
    type Tx = AnyTx;

    fn split(&mut self) -> (&mut AnyRx, &mut AnyTx) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn caps(&self) -> NicCaps {
        self.caps
    }

    fn counters(&self) -> NicCounters {
        super::counters::<AnyNic>(&self.rx, &self.tx)
    }
}

impl CoreQueue for AnyNic {}

impl Driver for AnyNic {
    type Error = AnyError;
    const NAME: &'static str = "NIC";

    fn matches(dev: &Device) -> bool {
        Self::driver_of(dev).is_some()
    }

    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<AnyNic>, usize), AnyError> {
        if VirtioNet::matches(dev) {
            let (q, n) = <VirtioNet as Driver>::open(dev, with).map_err(AnyError::Virtio)?;
            Ok((q.into_iter().map(AnyNic::from).collect(), n))
        } else if E1000e::matches(dev) {
            let (q, n) = <E1000e as Driver>::open(dev, with).map_err(AnyError::E1000e)?;
            Ok((q.into_iter().map(AnyNic::from).collect(), n))
        } else if Igb::matches(dev) {
            let (q, n) = <Igb as Driver>::open(dev, with).map_err(AnyError::Igb)?;
            Ok((q.into_iter().map(AnyNic::from).collect(), n))
        } else if Vmxnet3::matches(dev) {
            let (q, n) = <Vmxnet3 as Driver>::open(dev, with).map_err(AnyError::Vmxnet3)?;
            Ok((q.into_iter().map(AnyNic::from).collect(), n))
        } else {
            let (q, n) = <E1000 as Driver>::open(dev, with).map_err(AnyError::E1000)?;
            Ok((q.into_iter().map(AnyNic::from).collect(), n))
        }
    }

    fn rx_counters(rx: &AnyRx, c: &mut NicCounters) {
        match rx {
            AnyRx::Virtio(r) => <VirtioNet>::rx_counters(r, c),
            AnyRx::E1000(r) => <E1000>::rx_counters(r, c),
            AnyRx::Vmxnet3(r) => <Vmxnet3>::rx_counters(r, c),
        }
    }

    fn tx_counters(tx: &AnyTx, c: &mut NicCounters) {
        match tx {
            AnyTx::Virtio(t) => <VirtioNet>::tx_counters(t, c),
            AnyTx::E1000(t) => <E1000>::tx_counters(t, c),
            AnyTx::Vmxnet3(t) => <Vmxnet3>::tx_counters(t, c),
        }
    }

    fn into_rings(self) -> (AnyRx, AnyTx) {
        (self.rx, self.tx)
    }

    fn link(&self) -> Box<dyn LinkSense> {
        match self.link {
            AnyLink::Virtio(l) => Box::new(l),
            AnyLink::E1000(l) => Box::new(l),
            AnyLink::Vmxnet3(l) => Box::new(l),
        }
    }

    fn multicast(&self) -> Box<dyn super::Multicast> {
        match &self.mcast {
            AnyMulticast::Unfiltered => Box::new(super::virtio_net::Unfiltered),
            AnyMulticast::E1000(m) => m.clone(),
            AnyMulticast::Vmxnet3(m) => Box::new(*m),
        }
    }
}

impl RxRing for AnyRx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        match self {
            AnyRx::Virtio(r) => r.burst(out),
            AnyRx::E1000(r) => r.burst(out),
            AnyRx::Vmxnet3(r) => r.burst(out),
        }
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        match self {
            AnyRx::Virtio(r) => r.bytes(f),
            AnyRx::E1000(r) => r.bytes(f),
            AnyRx::Vmxnet3(r) => r.bytes(f),
        }
    }

    fn recycle(&mut self, f: RxFrame) {
        match self {
            AnyRx::Virtio(r) => r.recycle(f),
            AnyRx::E1000(r) => r.recycle(f),
            AnyRx::Vmxnet3(r) => r.recycle(f),
        }
    }
    fn csum_trusted(&self, f: &RxFrame) -> bool {
        match self {
            AnyRx::Vmxnet3(r) => r.csum_trusted(f),
            AnyRx::Virtio(_) | AnyRx::E1000(_) => false,
        }
    }
}

impl WakeRx for AnyRx {
    fn arm(&mut self) -> Arm {
        match self {
            AnyRx::Virtio(r) => r.arm(),
            AnyRx::E1000(r) => r.arm(),
            AnyRx::Vmxnet3(r) => r.arm(),
        }
    }

    fn disarm(&mut self) {
        match self {
            AnyRx::Virtio(r) => r.disarm(),
            AnyRx::E1000(r) => r.disarm(),
            AnyRx::Vmxnet3(r) => r.disarm(),
        }
    }

    fn wake(&self) -> Wake {
        match self {
            AnyRx::Virtio(r) => r.wake(),
            AnyRx::E1000(r) => r.wake(),
            AnyRx::Vmxnet3(r) => r.wake(),
        }
    }
}

impl TxRing for AnyTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        match self {
            AnyTx::Virtio(t) => t.slot(),
            AnyTx::E1000(t) => t.slot(),
            AnyTx::Vmxnet3(t) => t.slot(),
        }
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        match self {
            AnyTx::Virtio(t) => t.post(head_len, body),
            AnyTx::E1000(t) => t.post(head_len, body),
            AnyTx::Vmxnet3(t) => t.post(head_len, body),
        }
    }

    fn flush(&mut self) {
        match self {
            AnyTx::Virtio(t) => t.flush(),
            AnyTx::E1000(t) => t.flush(),
            AnyTx::Vmxnet3(t) => t.flush(),
        }
    }

    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        match self {
            AnyTx::Virtio(t) => t.post_tso(head_len, body, tso),
            AnyTx::E1000(t) => t.post_tso(head_len, body, tso),
            AnyTx::Vmxnet3(t) => t.post_tso(head_len, body, tso),
        }
    }

    fn room(&mut self) -> usize {
        match self {
            AnyTx::Virtio(t) => t.room(),
            AnyTx::E1000(t) => t.room(),
            AnyTx::Vmxnet3(t) => t.room(),
        }
    }
}
