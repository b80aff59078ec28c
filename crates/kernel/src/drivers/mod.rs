//! Network drivers: each is a type implementing the engine's `Nic` (one RX/TX queue pair,
//! polled, no interrupts, scatter-gather transmit straight from the site image) plus
//! [`Driver`] for its counters.

pub mod e1000;
pub mod virtio_net;
pub mod virtqueue;

use bareweb_engine::nic::Nic;

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
pub trait Driver: Nic {
    /// Short name for the console ("virtio-net", "e1000").
    fn name(&self) -> &'static str;
    /// Its device counters (doorbells, bad completions); the engine's `Nic::counters`
    /// is about rings and dispatch and stays at its default here.
    fn device_counters(&self) -> NicCounters;
}
