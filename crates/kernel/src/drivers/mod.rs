//! Network drivers: each is a type implementing the engine's `Nic` (one RX/TX queue pair,
//! polled, no interrupts, scatter-gather transmit straight from the site image) plus
//! [`Driver`] for its counters and for handing its two sides to the network core. Each
//! side counts its own device work ([`HalfCounters`]), so the counters stay whole when a
//! wrapper owns the sides apart.

pub mod e1000;
pub mod virtio_net;
pub mod virtqueue;

use bareweb_engine::nic::{Nic, NicCounters as EngineCounters};

/// Counters every driver keeps, read by the stats line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NicCounters {
    /// Frames handed to the engine.
    pub rx_frames: u64,
    /// Frames queued for transmit.
    pub tx_frames: u64,
    /// Doorbell writes (MMIO writes that make the device look: virtio notify, e1000 RDT
    /// and TDT). Each is a VM exit under virtualisation.
    pub doorbells: u64,
    /// Of which for the receive ring.
    pub rx_doorbells: u64,
    /// Flushes that needed no doorbell (virtio event index said the device was busy).
    pub suppressed: u64,
    /// Receive completions with a bad id, length or error bits: dropped and counted.
    pub rx_bad: u64,
    /// Transmit completions with a bad id: ignored and counted.
    pub tx_bad: u64,
    /// `post` calls refused because no slot or descriptor was free.
    pub tx_full: u64,
}

/// A polled NIC driver.
pub trait Driver: Nic
where
    Self::Rx: HalfCounters,
    Self::Tx: HalfCounters,
{
    /// Short name for the console ("virtio-net", "e1000").
    fn name(&self) -> &'static str;
    /// Its device counters (doorbells, bad completions). `Nic::counters` reports the
    /// same figures to the engine's stats board ([`engine_counters`]).
    fn device_counters(&self) -> NicCounters;
    /// The two sides, for a wrapper that owns them apart (the network core).
    fn into_rings(self) -> (Self::Rx, Self::Tx);
}

/// One side of a driver, counting its own device work.
pub trait HalfCounters {
    /// Adds this side's counters to `c`.
    fn add_to(&self, c: &mut NicCounters);
}

/// The engine's queue-pair counters holding these device counters.
pub fn engine_counters(d: &NicCounters) -> EngineCounters {
    let mut c = EngineCounters::default();
    add_engine(&mut c, d);
    c
}

/// Adds device counters to the engine's queue-pair counters.
pub fn add_engine(c: &mut EngineCounters, d: &NicCounters) {
    c.doorbells += d.doorbells;
    c.rx_doorbells += d.rx_doorbells;
    c.doorbells_suppressed += d.suppressed;
    c.device_rx_frames += d.rx_frames;
    c.device_tx_frames += d.tx_frames;
    c.device_rx_bad += d.rx_bad;
    c.device_tx_bad += d.tx_bad;
    c.device_tx_full += d.tx_full;
}
