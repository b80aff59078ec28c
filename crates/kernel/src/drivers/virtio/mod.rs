//! virtio 1.x transports: how a driver reaches a virtio device's registers, queues and
//! interrupts, so that one device driver (virtio-net, `super::virtio_net`) runs over PCI
//! (`pci`: QEMU's pc/q35 machines, clouds) and over MMIO (`mmio`: QEMU's microvm,
//! Firecracker, Cloud Hypervisor) alike. Modelled on virtio-drivers' `Transport` trait
//! (src/transport/mod.rs), reduced to what a polled driver with wake-up interrupts needs.
//!
//! Heads up! read virtio 1.2 §3.1 (device initialisation), §4.1 (PCI), §4.2 (MMIO).

pub mod mmio;
pub mod pci;

use super::hal::{Reg, RO, WO};
use super::virtqueue::QueueError;
pub use super::Wake;

/// Device status bits (virtio 1.2 §2.1).
pub const S_ACKNOWLEDGE: u8 = 1;
/// The driver knows how to drive the device.
pub const S_DRIVER: u8 = 2;
/// The driver is ready.
pub const S_DRIVER_OK: u8 = 4;
/// Feature negotiation is complete.
pub const S_FEATURES_OK: u8 = 8;
/// The driver gave up on the device.
pub const S_FAILED: u8 = 128;
/// VIRTIO_F_VERSION_1: a modern (non-legacy) device.
pub const F_VERSION_1: u64 = 1 << 32;

/// Why a virtio device could not be brought up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// A virtio PCI capability is missing or points outside its BAR.
    MissingCapability(&'static str),
    /// The device lacks VIRTIO_F_VERSION_1 (legacy-only devices are not supported).
    NotModern,
    /// The device refused FEATURES_OK.
    FeaturesRejected,
    /// The device did not reset.
    NoReset,
    /// A queue has size 0 or could not be allocated.
    Queue(u16, QueueError),
    /// The heap is exhausted.
    NoMemory,
    /// A queue's notification register lies outside the notification capability.
    BadNotifyOffset(u16),
    /// The device did not acknowledge VQ_PAIRS_SET (the ack byte, or none in time).
    MqRefused(u8),
    /// An MMIO region is not a virtio device of version 2 (magic, version).
    NotVirtioMmio(u32, u32),
}

/// Where and how a queue's doorbell is written: the queue index, 16 bits wide on PCI (a
/// notification address per queue), 32 bits on MMIO (one QueueNotify register).
#[derive(Debug, Clone, Copy)]
pub enum Notify {
    /// A 16-bit doorbell (PCI).
    U16(Reg<u16, WO>),
    /// A 32-bit doorbell (MMIO's QueueNotify).
    U32(Reg<u32, WO>),
}

impl Notify {
    /// Rings the doorbell of queue `index`.
    #[inline(always)]
    pub fn ring(&self, index: u16) {
        match *self {
            Notify::U16(r) => r.write(index),
            Notify::U32(r) => r.write(index as u32),
        }
    }
}

/// The operations a virtio device driver needs from its transport. The device is given
/// DMA addresses ([`Transport::queue_enable`]); registers are reached through typed views.
/// A host test implements it with a fake device (`drivers::fake`).
pub trait Transport {
    /// The device's feature bits.
    fn device_features(&mut self) -> u64;
    /// Tells the device which features the driver uses.
    fn set_driver_features(&mut self, f: u64);
    /// The device status.
    fn status(&mut self) -> u8;
    /// Sets the device status (0 resets the device).
    fn set_status(&mut self, s: u8);
    /// The largest size the device allows for queue `q` (0: no such queue).
    fn queue_max(&mut self, q: u16) -> u16;
    /// Gives queue `q` (of `size` entries, rings at the physical addresses `desc`,
    /// `driver`, `device`) to the device, interrupting through `wake` (an MSI-X entry;
    /// other kinds need no per-queue setting), and enables it. Returns its doorbell.
    fn queue_enable(
        &mut self,
        q: u16,
        size: u16,
        rings: (u64, u64, u64),
        wake: Wake,
    ) -> Result<Notify, Error>;
    /// Bytes of the device-specific configuration.
    fn config_len(&self) -> usize;
    /// Byte `off` of the device-specific configuration (0 past its end).
    fn config8(&self, off: usize) -> u8;
    /// The 16-bit field at `off` of the device-specific configuration, if the region
    /// holds it (a field read later, e.g. the link status).
    fn config_u16(&self, off: usize) -> Option<Reg<u16, RO>>;
    /// How queue pair `k`'s receive interrupts can reach the core with APIC id `apic`
    /// (set up now: an MSI-X entry aimed at that core, or the device's line routed to
    /// it); [`Wake::None`] when they cannot.
    fn wake_for(&mut self, k: u16, apic: u32) -> Wake;
    /// After `DRIVER_OK`: turns the interrupts set up by `wake_for` on.
    fn interrupts_on(&mut self) {}
    /// The device's interrupt status register and its acknowledgement register, for a
    /// line-triggered transport (MMIO): the driver reads the one and writes the other to
    /// lower the line.
    fn interrupt_ack(&self) -> Option<(Reg<u32, RO>, Reg<u32, WO>)> {
        None
    }
}

/// Resets the device and negotiates features (virtio 1.2 §3.1.1 steps 1-6): `want(offered)`
/// chooses from what the device offers; VERSION_1 is required. Returns the accepted set.
pub fn negotiate<T: Transport>(t: &mut T, want: impl FnOnce(u64) -> u64) -> Result<u64, Error> {
    t.set_status(0);
    let mut spins = 0;
    while t.status() != 0 {
        spins += 1;
        if spins > 1_000_000 {
            return Err(Error::NoReset);
        }
    }
    t.set_status(S_ACKNOWLEDGE);
    t.set_status(S_ACKNOWLEDGE | S_DRIVER);
    let offered = t.device_features();
    if offered & F_VERSION_1 == 0 {
        t.set_status(S_FAILED);
        return Err(Error::NotModern);
    }
    let wanted = (want(offered) & offered) | F_VERSION_1;
    t.set_driver_features(wanted);
    t.set_status(S_ACKNOWLEDGE | S_DRIVER | S_FEATURES_OK);
    if t.status() & S_FEATURES_OK == 0 {
        t.set_status(S_FAILED);
        return Err(Error::FeaturesRejected);
    }
    Ok(wanted)
}
