//! Network drivers: each is a type implementing the engine's `Nic` (one RX/TX queue pair,
//! polled, scatter-gather transmit straight from the site image) plus [`Driver`]: how it
//! is found on PCI and brought up with as many queue pairs as the plan wants, how each of
//! its two sides reports its own device work in the engine's `NicCounters` (so the
//! counters stay whole when a wrapper, the network core, owns the sides apart), and how
//! its receive side is armed to wake a halting core by interrupt ([`Arm`]). `serve` runs
//! them all as one `Driver`, [`any::AnyNic`] (one copy of the engine's per-NIC code, for
//! the size budget): a new driver is a `Driver` impl and a variant there.
//!
//! [`virtio_blk`] is the one disk driver: not a `Nic`, the bare machine's state disk (one
//! request at a time, polled, the device checked like every other).
//!
//! Drivers reach the machine only through [`hal`]: DMA memory and addresses, register
//! mappings ([`hal::Hal`], [`hal::Identity`] on the bare machine), typed registers
//! ([`hal::Reg`]). So each runs on the host against a fake device (`fake`: in the tests,
//! and with the `fake` feature in the fuzz crate's lying-device targets): a new driver is
//! written generic over `H: Hal` and tested there before it boots.

pub mod any;
pub mod e1000;
pub mod e1000e;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod hal;
pub mod igb;
pub mod virtio;
pub mod virtio_blk;
pub mod virtio_net;
pub mod virtqueue;
pub mod vmxnet3;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt::Debug;

use bareweb_engine::cores::CoreQueue;
use bareweb_engine::nic::{LinkSense, NicCounters};
use bareweb_engine::wire::EthernetAddress;

use crate::arch::pci::Device;

/// How a queue pair's receive interrupts wake its core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// They do not: the core polls, or wakes by its timer only.
    None,
    /// An MSI-X message (this table entry), edge-triggered, aimed at the core: nothing to
    /// acknowledge.
    Msi(u16),
    /// A level-triggered line (this GSI, routed to the core's NIC vector at the I/O APIC)
    /// that stays asserted until the driver acknowledges the device's interrupt cause.
    Line(u32),
}

impl core::fmt::Display for Wake {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Wake::None => f.write_str("none (timer only)"),
            Wake::Msi(e) => write!(f, "MSI-X entry {e}"),
            Wake::Line(g) => write!(f, "line GSI {g}"),
        }
    }
}

/// How a driver is asked to bring its device up.
#[derive(Debug, Clone, Copy)]
pub struct Open<'a> {
    /// Queue pairs wanted: at least one is made; as many as the device offers if that is
    /// fewer, or one if it cannot give this many.
    pub pairs: usize,
    /// Pair k's wake-up interrupts go to the core with APIC id `wake[k]` (an empty slice:
    /// the cores poll and never halt for the NIC).
    pub wake: &'a [u32],
    /// Use the device's transmit offloads (checksum, TCP segmentation) when it has them.
    pub offload: bool,
}

/// What arming a receive side for a wake-up interrupt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// Armed: the next frame interrupts the core (halt now).
    Armed,
    /// A frame (or work for the driver) is already there: poll instead of halting.
    Pending,
    /// This queue cannot interrupt its core (no MSI-X entry, no routable line): the core
    /// may halt only until its timer.
    Unable,
}

/// A receive side that can wake its core by interrupt (so that idle cores halt).
pub trait WakeRx {
    /// Lets the device interrupt the core at the next frame (before a halt); see [`Arm`].
    fn arm(&mut self) -> Arm;
    /// Turns the interrupt off again (after the halt, or when arming found a frame).
    fn disarm(&mut self);
    /// How the interrupts reach the core.
    fn wake(&self) -> Wake;
}

/// A NIC set's receive side (bonding): every NIC's (pending if any has a frame).
impl<R: WakeRx> WakeRx for bareweb_engine::bond::BondRx<R> {
    fn arm(&mut self) -> Arm {
        let mut all = Arm::Unable;
        for r in self.rings_mut() {
            match r.arm() {
                Arm::Pending => {
                    self.disarm();
                    return Arm::Pending;
                }
                Arm::Armed => all = Arm::Armed,
                Arm::Unable => {}
            }
        }
        all
    }

    fn disarm(&mut self) {
        for r in self.rings_mut() {
            r.disarm();
        }
    }

    fn wake(&self) -> Wake {
        self.rings().first().map_or(Wake::None, WakeRx::wake)
    }
}

/// A device's multicast receive filter. IPv6 needs the frames of its groups (all-nodes,
/// and the solicited-node group of each address, which neighbour discovery and DAD are
/// sent to); the engine lists their MACs (`iface::ipv6::Link::multicast_macs`) and core 0
/// sets them here when the list changes (at most every 100 ms, never on the request
/// path). Each driver says how its device filters: a hash table (the e1000 family), an
/// exact list (vmxnet3), or nothing to program (virtio-net).
pub trait Multicast: Send {
    /// Receives (at least) the frames sent to `macs`, and stops asking for others this
    /// filter asked for before (a hash filter may still let a few through).
    fn set(&mut self, macs: &[EthernetAddress]);
}

/// A polled NIC driver.
pub trait Driver:
    CoreQueue + bareweb_engine::nic::Nic<Rx: WakeRx> + Send + Sized + 'static
{
    /// Why the device could not be brought up.
    type Error: Debug;
    /// Short name for the console ("virtio-net", "e1000").
    const NAME: &'static str;
    /// Whether this driver drives PCI function `dev`.
    fn matches(dev: &Device) -> bool;
    /// Brings `dev` up as `with` asks (see [`Open`]). Returns the queue pairs and how many
    /// the device offered.
    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<Self>, usize), Self::Error>;
    /// Adds the receive side's device counters (frames, doorbells, bad completions) to `c`.
    fn rx_counters(rx: &Self::Rx, c: &mut NicCounters);
    /// Adds the transmit side's device counters to `c`.
    fn tx_counters(tx: &Self::Tx, c: &mut NicCounters);
    /// The two sides, for a wrapper that owns them apart (the network core).
    fn into_rings(self) -> (Self::Rx, Self::Tx);
    /// The device's link, as the bonding link monitor reads it: a register
    /// read per reading, never on the request path. Any queue pair of the device gives it.
    fn link(&self) -> Box<dyn LinkSense>;
    /// The device's multicast filter (see [`Multicast`]). Any queue pair gives it.
    fn multicast(&self) -> Box<dyn Multicast>;
}

/// A driver's queue-pair counters: both sides' (each driver's `Nic::counters`).
pub fn counters<D: Driver>(rx: &D::Rx, tx: &D::Tx) -> NicCounters {
    let mut c = NicCounters::default();
    D::rx_counters(rx, &mut c);
    D::tx_counters(tx, &mut c);
    c
}
