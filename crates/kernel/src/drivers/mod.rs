//! Network drivers: each is a type implementing the engine's `Nic` (one RX/TX queue pair,
//! polled, no interrupts, scatter-gather transmit straight from the site image) plus
//! [`Driver`]: how it is found on PCI and brought up with as many queue pairs as the plan
//! wants, and how each of its two sides reports its own device work in the engine's
//! `NicCounters` (so the counters stay whole when a wrapper, the network core, owns the
//! sides apart). `serve` is generic over `Driver`: a new driver is a `Driver` impl and one
//! line in `serve`'s probe list.

pub mod e1000;
pub mod virtio_net;
pub mod virtqueue;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt::Debug;

use bareweb_engine::cores::CoreQueue;
use bareweb_engine::nic::{LinkSense, NicCounters};

use crate::pci::Device;

/// A polled NIC driver.
pub trait Driver: CoreQueue + Send + Sized + 'static {
    /// Why the device could not be brought up.
    type Error: Debug;
    /// Short name for the console ("virtio-net", "e1000").
    const NAME: &'static str;
    /// Whether this driver drives PCI function `dev`.
    fn matches(dev: &Device) -> bool;
    /// Brings `dev` up with up to `want` queue pairs (at least one; as many as the device
    /// offers if that is fewer, or one if it cannot give `want`). Returns the queue pairs
    /// and how many the device offered.
    fn open(dev: &Device, want: usize) -> Result<(Vec<Self>, usize), Self::Error>;
    /// Adds the receive side's device counters (frames, doorbells, bad completions) to `c`.
    fn rx_counters(rx: &Self::Rx, c: &mut NicCounters);
    /// Adds the transmit side's device counters to `c`.
    fn tx_counters(tx: &Self::Tx, c: &mut NicCounters);
    /// The two sides, for a wrapper that owns them apart (the network core).
    fn into_rings(self) -> (Self::Rx, Self::Tx);
    /// The device's link, as the bonding link monitor reads it (issue 14): a register
    /// read per reading, never on the request path. Any queue pair of the device gives it.
    fn link(&self) -> Box<dyn LinkSense>;
}

/// A driver's queue-pair counters: both sides' (each driver's `Nic::counters`).
pub fn counters<D: Driver>(rx: &D::Rx, tx: &D::Tx) -> NicCounters {
    let mut c = NicCounters::default();
    D::rx_counters(rx, &mut c);
    D::tx_counters(tx, &mut c);
    c
}
