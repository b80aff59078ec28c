//! VMware's paravirtual NIC, vmxnet3 (PCI 15ad:07b0; QEMU `-device vmxnet3`): one queue
//! pair over shared memory the driver lays out and hands the device by address.
//!
//! Heads up! read Linux `drivers/net/vmxnet3/vmxnet3_defs.h` (the layouts: the driver
//! shared area, queue descriptors, descriptors and completions with their generation
//! bits) and `vmxnet3_drv.c` (`vmxnet3_setup_driver_shared`, `vmxnet3_activate_dev`) for
//! the order this follows; QEMU `hw/net/vmxnet3.c` for what the emulation does.
//!
//! - Registers: BAR 0 holds the doorbells (TXPROD, RXPROD) and the interrupt masks (IMR),
//!   BAR 1 the revision selects, the shared area's address (DSAL/DSAH), the command
//!   register (CMD: a command is written, its answer read back) and the MAC (MACL/MACH).
//!   QEMU reads the transmit ring on a TXPROD write only, whatever index it carries: the
//!   driver rings when any descriptor was handed over since it last rang (counted: a
//!   whole ring's worth brings the tail back to the index last rung).
//! - Shared memory: the driver shared area (magic, the queue descriptors' address, MTU,
//!   interrupts, receive filter), one transmit and one receive queue descriptor (ring
//!   addresses and sizes), a transmit ring, its completion ring, receive ring 0 (head
//!   buffers of 2 KiB: every frame fits one), an empty ring 1 and the receive completion
//!   ring. Ownership is a generation bit per descriptor, flipped on every wrap of a ring:
//!   a descriptor is the device's when its bit is the ring's current one.
//! - Queue pairs: one. QEMU's vmxnet3 delivers every frame to receive queue 0 (its
//!   `RXQ_IDX`), so there is no receive-side scaling to spread flows over cores with; the
//!   per-queue many-core mode gets one queue pair from this device (network-core mode
//!   and bonding work as with the 82540EM).
//! - Device memory is untrusted: a completion is taken only with the ring's generation;
//!   its queue id, descriptor index (it must be the oldest posted one: the device fills
//!   ring 0 in order), start/end-of-packet bits, error bit and length are checked, and a
//!   bad one gives its buffer back to the ring. A transmit completion names a descriptor:
//!   frames in flight up to it are done; one that names none is counted and ignored.
//! - Wake-ups: MSI-X entry 0 for receive completions (interrupt 0, IMR 0 unmasked when a
//!   core arms), transmit completions and events on interrupt 1, never unmasked. Without
//!   MSI-X the core wakes by its timer.
//! - Link: the GET_LINK command (bit 0 of the answer), for bonding's failover.
//! - Offloads (unless `offload=off`): the engine's `post_tso` frames go out with the
//!   first descriptor's offload mode TSO, over IPv4 and IPv6 alike (`hlen` the Ethernet +
//!   IP + TCP header bytes,
//!   `msscof` the MSS; the body in descriptors of at most 16 KiB), or CSUM when the
//!   payload fits one segment (`hlen` where the TCP header starts, `msscof` where its
//!   checksum field is). The engine leaves the pseudo-header sum with the whole TCP length
//!   in the checksum field; for TSO the driver takes the length out (Linux
//!   `vmxnet3_prepare_tso`). The shared area's UPT features ask for receive checksums
//!   (UPT1_F_RXCSUM): a completion that says IPv4, TCP, IP and TCP checksums correct,
//!   checksum calculated and not a fragment makes its frame `csum_trusted`.
//! - Statistics: the GET_STATS command has the device write its UPT1 transmit and receive
//!   queue statistics (running totals) into the queue descriptors; the receive side reads
//!   them when its counters are gathered, at most once a second (a command is a VM exit),
//!   onto the engine's `hw_*` counters. The command shares CMD with GET_LINK: both are
//!   issued by core 0 (the link monitor, and pair 0's owner), never at once.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::cell::Cell;
use core::marker::PhantomData;
use core::sync::atomic::{fence, Ordering};

use bareweb_engine::iface::egress::TSO_LIMIT;
use bareweb_engine::nic::{
    LinkSense, Nic, NicCaps, NicCounters, RxFrame, RxRing, Tso, TxFull, TxRing, TX_HEAD_ROOM,
};
use bareweb_engine::wire::EthernetAddress;

use super::hal::{Array, Dma, Hal, Identity, Mmio, Reg, RO, RW, WO};
use super::{Arm, Driver, Open};
use crate::arch::irq::NIC_VECTOR;
use crate::arch::pci::msix::MsiX;
use crate::arch::pci::{Bar, Device};

/// VMware's PCI vendor id.
pub const VENDOR: u16 = 0x15AD;
/// vmxnet3 (QEMU's, tested there; VMware's, the same ID, not tested).
pub const DEVICES: [u16; 1] = [0x07B0];

/// BAR 0: interrupt mask of interrupt i at `IMR + 8 * i`.
pub const IMR: usize = 0x000;
/// BAR 0: transmit producer index of queue 0.
pub const TXPROD: usize = 0x600;
/// BAR 0: receive ring 0's producer index of queue 0.
pub const RXPROD: usize = 0x800;
/// BAR 1 registers.
pub const VRRS: usize = 0x00;
/// BAR 1: UPT version select.
pub const UVRS: usize = 0x08;
/// BAR 1: the driver shared area's address, low half.
pub const DSAL: usize = 0x10;
/// BAR 1: high half.
pub const DSAH: usize = 0x18;
/// BAR 1: the command register.
pub const CMD: usize = 0x20;
/// BAR 1: MAC, first four bytes.
pub const MACL: usize = 0x28;
/// BAR 1: MAC, last two.
pub const MACH: usize = 0x30;

/// Commands.
pub const CMD_ACTIVATE: u32 = 0xCAFE_0000;
/// Reset.
pub const CMD_RESET: u32 = 0xCAFE_0002;
/// Receive mode from the shared area.
pub const CMD_UPDATE_RX_MODE: u32 = 0xCAFE_0003;
/// VLAN filter from the shared area.
pub const CMD_UPDATE_VLAN: u32 = 0xCAFE_0005;
/// Command: take the multicast filter table again (`mfTableLen`, `mfTablePA`).
pub const CMD_UPDATE_MAC_FILTERS: u32 = 0xCAFE_0004;
/// Statistics into the queue descriptors (no answer).
pub const CMD_GET_STATS: u32 = 0xF00D_0001;
/// Link: bit 0 of the answer is up.
pub const CMD_GET_LINK: u32 = 0xF00D_0002;

/// The shared area's magic.
pub const MAGIC: u32 = 0xBABE_FEE1;
/// Shared area offsets (`Vmxnet3_DriverShared`).
pub mod shared {
    /// Magic.
    pub const MAGIC: usize = 0;
    /// Driver version, guest OS, revision and UPT version supported.
    pub const DRIVER_INFO: usize = 8;
    /// UPT features asked (u64).
    pub const UPT_FEATURES: usize = 24;
    /// Queue descriptors' address, length.
    pub const QUEUE_DESC_PA: usize = 40;
    /// Their length.
    pub const QUEUE_DESC_LEN: usize = 52;
    /// MTU.
    pub const MTU: usize = 56;
    /// Receive scatter-gather maximum (u16), then transmit and receive queues (u8 each).
    pub const MAX_RX_SG: usize = 60;
    /// Interrupts: auto-mask, count, event interrupt (u8 each).
    pub const INTR: usize = 80;
    /// Interrupt control (bit 0: all off).
    pub const INTR_CTRL: usize = 108;
    /// Receive mode.
    pub const RX_MODE: usize = 120;
    /// Multicast filter table: its length in bytes (u16), then its address (u64).
    pub const MF_TABLE_LEN: usize = 124;
    /// See [`MF_TABLE_LEN`].
    pub const MF_TABLE_PA: usize = 128;
    /// VLAN filter table (4096 bits).
    pub const VF_TABLE: usize = 136;
    /// Bytes.
    pub const LEN: usize = 720;
}
/// Queue descriptors after the shared area: the transmit queue's, then the receive's.
const QD: usize = 1024;
const QD_LEN: usize = 256;
/// In a queue descriptor: its UPT1 statistics (ten u64 each way), written on GET_STATS.
pub const QD_STATS: usize = 88;
/// UPT feature: receive checksum validation.
pub const UPT1_F_RXCSUM: u64 = 1;

/// Transmit descriptor, word 3: header length (bits 0-9), offload mode (10-11).
pub const TXD_OM_SHIFT: u32 = 10;
/// Offload mode: complete the TCP checksum (`hlen` its start, `msscof` its field).
pub const OM_CSUM: u32 = 2;
/// Offload mode: segment (`hlen` the headers' length, `msscof` the MSS).
pub const OM_TSO: u32 = 3;
/// Transmit descriptor, word 2: `msscof` in bits 18-31.
pub const TXD_MSSCOF_SHIFT: u32 = 18;
/// Bytes one transmit descriptor carries at most (its 14-bit length).
const TXD_MAX: usize = 0x3FFF;

/// Receive completion, word 0: checksum not calculated.
pub const RCD_CNC: u32 = 1 << 30;
/// Receive completion, word 3: TCP/UDP checksum correct, TCP, IP checksum correct, IPv4.
pub const RCD_CSUM_OK: u32 = 1 << 16 | 1 << 18 | 1 << 19 | 1 << 21;
/// Receive completion, word 3: an IP fragment.
pub const RCD_FRG: u32 = 1 << 22;

/// Receive mode: unicast to us, broadcast.
pub const RXM_UCAST_BCAST: u32 = 1 | 4;
/// Receive mode: multicast to the MACs of the filter table.
pub const RXM_MCAST: u32 = 2;
/// The multicast filter table, in the shared area's page after the queue descriptors:
/// room for [`MF_MAX`] MACs of 6 bytes.
pub const MF_TABLE: usize = 2048;
/// MACs the filter table holds (the engine asks for at most ten).
const MF_MAX: usize = 32;

const RING: usize = 256;
/// Receive ring 1 (body buffers): never posted, sized as the device wants (a multiple of 32).
const RING1: usize = 32;
/// Receive completions: room for both rings.
const RX_COMP: usize = 512;
const RX_POOL: usize = RING + 64;
const RX_BUF: usize = 2048;
const TX_SLOTS: usize = RING / 2;
const TX_SLOT: usize = TX_HEAD_ROOM;
/// Transmit data ring (small frames copied in; unused here, given because VMware wants one).
const TX_DATA: usize = 128;
const RX_BATCH: usize = 16;
/// A command answer is read at most this many times (a device answers at once; the host
/// fake answers from another thread).
const CMD_READS: usize = 1 << 20;

/// Why the device could not be brought up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// BAR 0 or BAR 1 is not an assigned memory BAR of 4 KiB.
    NoRegisters,
    /// The device refused activation (its answer).
    Refused(u32),
    /// The heap is exhausted.
    NoMemory,
}

/// A command: written, then its answer read back (bounded).
fn command(cmd: Reg<u32, RW>, c: u32) -> u32 {
    cmd.write(c);
    let mut v = cmd.read();
    for _ in 0..CMD_READS {
        if v != c {
            break;
        }
        core::hint::spin_loop();
        v = cmd.read();
    }
    v
}

/// The device's link: GET_LINK, one command per reading (the bonding monitor's).
#[derive(Clone, Copy)]
pub struct Vmxnet3Link(Reg<u32, RW>);

impl LinkSense for Vmxnet3Link {
    fn link_up(&mut self) -> bool {
        let v = command(self.0, CMD_GET_LINK);
        v != CMD_GET_LINK && v & 1 != 0
    }
}

/// The device's multicast filter: an exact list of MACs in the shared area's page
/// (`Vmxnet3_RxFilterConf`: `mfTableLen`, `mfTablePA`), taken by UPDATE_MAC_FILTERS, and
/// RXM_MCAST in the receive mode while the list is not empty (QEMU
/// `vmxnet3_update_mcast_filters`, `vmxnet3_is_allowed_mcast`). Commands written only,
/// as at activation.
#[derive(Clone, Copy)]
pub struct Vmxnet3Multicast {
    cmd: Reg<u32, RW>,
    mode: Reg<u32, WO>,
    len: Reg<u16, WO>,
    table: Array<u8, WO>,
}

impl super::Multicast for Vmxnet3Multicast {
    fn set(&mut self, macs: &[EthernetAddress]) {
        let macs = &macs[..macs.len().min(MF_MAX)];
        for (i, m) in macs.iter().enumerate() {
            for (j, b) in m.0.iter().enumerate() {
                self.table.at(6 * i + j).write(*b);
            }
        }
        self.len.write((6 * macs.len()) as u16);
        let mcast = if macs.is_empty() { 0 } else { RXM_MCAST };
        self.mode.write(RXM_UCAST_BCAST | mcast);
        fence(Ordering::SeqCst);
        self.cmd.write(CMD_UPDATE_MAC_FILTERS);
        self.cmd.write(CMD_UPDATE_RX_MODE);
    }
}

/// The device's UPT1 statistics (`UPT1_TxStats`, `UPT1_RxStats` in Linux
/// `vmxnet3_defs.h`): running totals since activation, written into the queue descriptors
/// when GET_STATS is issued. Issued and read at most once a second, whatever asks for the
/// counters (the run loop gathers them on every idle poll, and a command is a VM exit),
/// never per packet. What the device writes is only ever added up (saturating) and shown.
pub struct DeviceStats {
    cmd: Reg<u32, RW>,
    /// TSO frames and octets, then unicast, multicast, broadcast frames and octets sent,
    /// frames in error, discarded.
    tx: Array<u64, RO>,
    /// LRO frames and octets, then unicast, multicast, broadcast frames and octets
    /// received, frames that found no buffer, frames in error.
    rx: Array<u64, RO>,
    /// Last reading: frames and octets received, sent; received in error, without buffer.
    last: Cell<[u64; 6]>,
    /// The TSC at which the device is asked next.
    next_tsc: Cell<u64>,
}

impl DeviceStats {
    /// Asks the device for its statistics and reads them.
    pub fn read(&self) {
        self.cmd.write(CMD_GET_STATS);
        fence(Ordering::SeqCst);
        let sum = |a: Array<u64, RO>, first: usize| {
            (0..3).fold(0u64, |t, i| t.saturating_add(a.at(first + 2 * i).read()))
        };
        self.last.set([
            sum(self.rx, 2),
            sum(self.rx, 3),
            sum(self.tx, 2),
            sum(self.tx, 3),
            self.rx.at(9).read(),
            self.rx.at(8).read(),
        ]);
    }

    /// Adds the last reading to `c`, asking the device again first if a second has passed.
    fn add_to(&self, c: &mut NicCounters) {
        self.add_at(crate::arch::cpu::rdtsc(), crate::arch::clock::tsc_hz(), c);
    }

    /// As [`DeviceStats::add_to`] at TSC `now`, `hz` ticks a second.
    pub fn add_at(&self, now: u64, hz: u64, c: &mut NicCounters) {
        if now >= self.next_tsc.get() {
            self.next_tsc.set(now.saturating_add(hz));
            self.read();
        }
        let [rx, rx_octets, tx, tx_octets, rx_error, no_buffer] = self.last.get();
        c.hw_rx_frames = c.hw_rx_frames.saturating_add(rx);
        c.hw_rx_octets = c.hw_rx_octets.saturating_add(rx_octets);
        c.hw_tx_frames = c.hw_tx_frames.saturating_add(tx);
        c.hw_tx_octets = c.hw_tx_octets.saturating_add(tx_octets);
        c.hw_rx_missed = c.hw_rx_missed.saturating_add(rx_error);
        c.hw_rx_no_buffer = c.hw_rx_no_buffer.saturating_add(no_buffer);
    }
}

/// How the receive side wakes its core.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RxWake {
    None,
    Msi(u16),
}

/// Receive side: ring 0 and the completion ring.
pub struct Vmxnet3Rx {
    /// RXPROD, written only when the device asks for it (the queue's `updateRxProd`).
    prod: Reg<u32, WO>,
    update_prod: Reg<u8, RO>,
    /// IMR 0: 0 lets receive completions interrupt.
    imr: Reg<u32, WO>,
    _mem: Dma,
    /// Ring 0, four words a descriptor.
    ring: Array<u32, RW>,
    /// Completions, four words each.
    comp: Array<u32, RO>,
    bufs: Dma,
    /// Which buffer each ring 0 descriptor holds.
    desc_buf: [u16; RING],
    /// Oldest posted descriptor (the next the device completes), and how many are posted.
    head: usize,
    posted: usize,
    /// Next descriptor to post, and the generation it is posted with.
    fill: usize,
    fill_gen: u32,
    /// Next completion, and the generation that makes it the device's.
    cnext: usize,
    cgen: u32,
    free: Vec<u16>,
    /// Per buffer: 0 free, 1 posted, 2 lent.
    state: Vec<u8>,
    /// Per buffer: its frame's TCP checksum was found correct by the device.
    csum: Vec<bool>,
    /// Receive checksums asked (UPT1_F_RXCSUM).
    rxcsum: bool,
    frames: u64,
    bad: u64,
    doorbells: u64,
    wake: RxWake,
    stats: DeviceStats,
}

/// Transmit side.
pub struct Vmxnet3Tx<H: Hal = Identity> {
    prod: Reg<u32, WO>,
    _mem: Dma,
    ring: Array<u32, RW>,
    comp: Array<u32, RO>,
    slots: Dma,
    tail: usize,
    gen: u32,
    /// Descriptors handed over since the last doorbell. Not `tail` against the tail last
    /// rung: a whole ring's worth (128 two-descriptor frames) brings `tail` back to it.
    unrung: usize,
    cnext: usize,
    cgen: u32,
    used: usize,
    /// Frames in flight, oldest first: (last descriptor, descriptors, head slot).
    in_flight: VecDeque<(u16, u8, u16)>,
    free_slots: Vec<u16>,
    current: Option<u16>,
    /// Whether `post_tso` is offered.
    offload: bool,
    frames: u64,
    /// Of which through `post_tso`.
    tso_frames: u64,
    full: u64,
    bad: u64,
    doorbells: u64,
    _hal: PhantomData<fn() -> H>,
}

/// One vmxnet3 as one engine queue pair.
pub struct Vmxnet3<H: Hal = Identity> {
    rx: Vmxnet3Rx,
    tx: Vmxnet3Tx<H>,
    mac: EthernetAddress,
    link: Vmxnet3Link,
    mcast: Vmxnet3Multicast,
    /// The shared area and queue descriptors (the device reads them; kept for its life).
    _shared: Dma,
}

// Ring memory layout: one allocation per side.
const RX_RING_OFF: usize = 0;
const RX_RING1_OFF: usize = RING * 16;
const RX_COMP_OFF: usize = RX_RING1_OFF + RING1 * 16;
const RX_MEM: usize = RX_COMP_OFF + RX_COMP * 16;
const TX_COMP_OFF: usize = RING * 16;
const TX_DATA_OFF: usize = TX_COMP_OFF + RING * 16;
const TX_MEM: usize = TX_DATA_OFF + RING * TX_DATA;

fn w32(d: &Dma, off: usize, v: u32) -> Option<()> {
    d.reg::<u32, WO>(off)?.write(v);
    Some(())
}
fn w64(d: &Dma, off: usize, v: u64) -> Option<()> {
    d.reg::<u64, WO>(off)?.write(v);
    Some(())
}

impl Vmxnet3 {
    /// Whether `dev` is a vmxnet3.
    pub fn matches(dev: &Device) -> bool {
        dev.vendor == VENDOR && DEVICES.contains(&dev.device)
    }
}

impl<H: Hal> Vmxnet3<H> {
    /// The device's multicast filter, as [`Driver::multicast`] gives it.
    pub fn multicast_filter(&self) -> Vmxnet3Multicast {
        self.mcast
    }

    /// Resets the device whose BAR 0 and BAR 1 are `pt` and `vd`, lays out the shared
    /// memory and activates it: one queue pair, interrupts masked; with `offload`, transmit
    /// checksum and segmentation offload and receive checksums.
    pub fn bring_up(pt: &Mmio, vd: &Mmio, offload: bool) -> Result<Vmxnet3<H>, Error> {
        let r = |m: &Mmio, off: usize| -> Result<Reg<u32, RW>, Error> {
            m.reg(off).ok_or(Error::NoRegisters)
        };
        let cmd = r(vd, CMD)?;
        cmd.write(CMD_RESET);
        r(vd, VRRS)?.write(1);
        r(vd, UVRS)?.write(1);
        let (lo, hi) = (r(vd, MACL)?.read(), r(vd, MACH)?.read());
        let mut mac = [0u8; 6];
        mac[..4].copy_from_slice(&lo.to_le_bytes());
        mac[4..].copy_from_slice(&hi.to_le_bytes()[..2]);

        let sh = Dma::new::<H>(4096, true).ok_or(Error::NoMemory)?;
        let rxm = Dma::new::<H>(RX_MEM, true).ok_or(Error::NoMemory)?;
        let txm = Dma::new::<H>(TX_MEM, true).ok_or(Error::NoMemory)?;
        let bufs = Dma::new::<H>(RX_POOL * RX_BUF, false).ok_or(Error::NoMemory)?;
        let slots = Dma::new::<H>(TX_SLOTS * TX_SLOT, false).ok_or(Error::NoMemory)?;
        let fill = || -> Option<()> {
            use shared::*;
            w32(&sh, MAGIC, self::MAGIC)?;
            w32(&sh, DRIVER_INFO, 0x0100_0000)?;
            w32(&sh, DRIVER_INFO + 4, 2 | 1 << 2)?; // 64-bit, Linux-like
            w32(&sh, DRIVER_INFO + 8, 1)?;
            w32(&sh, DRIVER_INFO + 12, 1)?;
            w64(&sh, UPT_FEATURES, if offload { UPT1_F_RXCSUM } else { 0 })?;
            w64(&sh, QUEUE_DESC_PA, sh.paddr(QD))?;
            w32(&sh, QUEUE_DESC_LEN, 2 * QD_LEN as u32)?;
            w32(&sh, MTU, 1500)?;
            // One receive buffer a frame; one transmit queue, one receive queue.
            w32(&sh, MAX_RX_SG, 1 | 1 << 16 | 1 << 24)?;
            // No auto-mask, two interrupts, events on interrupt 1.
            w32(&sh, INTR, 2 << 8 | 1 << 16)?;
            w32(&sh, INTR_CTRL, 0)?;
            w32(&sh, RX_MODE, RXM_UCAST_BCAST)?;
            // An empty multicast filter table, in the page (`Vmxnet3Multicast`).
            w64(&sh, MF_TABLE_PA, sh.paddr(self::MF_TABLE))?;
            // VLAN 0 (untagged frames) accepted.
            w32(&sh, VF_TABLE, 1)?;
            let t = QD;
            w64(&sh, t + 16, txm.paddr(0))?;
            w64(&sh, t + 24, txm.paddr(TX_DATA_OFF))?;
            w64(&sh, t + 32, txm.paddr(TX_COMP_OFF))?;
            w32(&sh, t + 56, RING as u32)?;
            w32(&sh, t + 60, RING as u32)?;
            w32(&sh, t + 64, RING as u32)?;
            w32(&sh, t + 72, 1 | (TX_DATA as u32) << 16)?; // interrupt 1
            let q = QD + QD_LEN;
            w64(&sh, q + 16, rxm.paddr(RX_RING_OFF))?;
            w64(&sh, q + 24, rxm.paddr(RX_RING1_OFF))?;
            w64(&sh, q + 32, rxm.paddr(RX_COMP_OFF))?;
            w32(&sh, q + 56, RING as u32)?;
            w32(&sh, q + 60, RING1 as u32)?;
            w32(&sh, q + 64, RX_COMP as u32)?;
            w32(&sh, q + 72, 0) // interrupt 0
        };
        fill().ok_or(Error::NoMemory)?;
        let view = || -> Option<_> {
            Some((
                rxm.array::<u32, RW>(RX_RING_OFF, RING * 4)?,
                rxm.array::<u32, RO>(RX_COMP_OFF, RX_COMP * 4)?,
                txm.array::<u32, RW>(0, RING * 4)?,
                txm.array::<u32, RO>(TX_COMP_OFF, RING * 4)?,
                sh.reg::<u8, RO>(QD + QD_LEN)?,
                sh.array::<u64, RO>(QD + QD_STATS, 16)?,
                sh.array::<u64, RO>(QD + QD_LEN + QD_STATS, 16)?,
            ))
        };
        let mcast = Vmxnet3Multicast {
            cmd,
            mode: sh.reg(shared::RX_MODE).ok_or(Error::NoMemory)?,
            len: sh.reg(shared::MF_TABLE_LEN).ok_or(Error::NoMemory)?,
            table: sh.array(MF_TABLE, 256).ok_or(Error::NoMemory)?,
        };
        let (rring, rcomp, tring, tcomp, update_prod, tstats, rstats) =
            view().ok_or(Error::NoMemory)?;
        // Every interrupt masked until a core arms.
        for i in 0..2 {
            r(pt, IMR + 8 * i)?.write(1);
        }
        fence(Ordering::SeqCst);
        r(vd, DSAL)?.write(sh.paddr(0) as u32);
        r(vd, DSAH)?.write((sh.paddr(0) >> 32) as u32);
        let answer = command(cmd, CMD_ACTIVATE);
        if answer != 0 {
            return Err(Error::Refused(answer));
        }
        // Commands without an answer: written only (QEMU warns when one is read back).
        cmd.write(CMD_UPDATE_RX_MODE);
        cmd.write(CMD_UPDATE_VLAN);
        let mut rx = Vmxnet3Rx {
            prod: pt.reg(RXPROD).ok_or(Error::NoRegisters)?,
            update_prod,
            imr: pt.reg(IMR).ok_or(Error::NoRegisters)?,
            _mem: rxm,
            ring: rring,
            comp: rcomp,
            bufs,
            desc_buf: [0; RING],
            head: 0,
            posted: 0,
            fill: 0,
            fill_gen: 1,
            cnext: 0,
            cgen: 1,
            free: (0..RX_POOL as u16).rev().collect(),
            state: alloc::vec![0; RX_POOL],
            csum: alloc::vec![false; RX_POOL],
            rxcsum: offload,
            frames: 0,
            bad: 0,
            doorbells: 0,
            wake: RxWake::None,
            stats: DeviceStats {
                cmd,
                tx: tstats,
                rx: rstats,
                last: Cell::new([0; 6]),
                next_tsc: Cell::new(0),
            },
        };
        rx.refill(true);
        let tx = Vmxnet3Tx {
            prod: pt.reg(TXPROD).ok_or(Error::NoRegisters)?,
            _mem: txm,
            ring: tring,
            comp: tcomp,
            slots,
            tail: 0,
            gen: 1,
            unrung: 0,
            cnext: 0,
            cgen: 1,
            used: 0,
            in_flight: VecDeque::with_capacity(RING),
            free_slots: (0..TX_SLOTS as u16).rev().collect(),
            current: None,
            offload,
            frames: 0,
            tso_frames: 0,
            full: 0,
            bad: 0,
            doorbells: 0,
            _hal: PhantomData,
        };
        Ok(Vmxnet3 {
            rx,
            tx,
            mac: EthernetAddress(mac),
            link: Vmxnet3Link(cmd),
            mcast,
            _shared: sh,
        })
    }

    /// The device's link.
    pub fn link_sense(&self) -> Vmxnet3Link {
        self.link
    }
}

impl Vmxnet3Rx {
    /// Posts free buffers to ring 0 (all of them with `force`, else once a batch is free),
    /// telling the device if it asks to be told.
    fn refill(&mut self, force: bool) {
        if self.posted == RING || (!force && RING - self.posted < RX_BATCH) {
            return;
        }
        let mut any = false;
        while self.posted < RING {
            let Some(b) = self.free.pop() else { break };
            let i = self.fill;
            let w = 4 * i;
            let addr = self.bufs.paddr(b as usize * RX_BUF);
            self.ring.at(w).write(addr as u32);
            self.ring.at(w + 1).write((addr >> 32) as u32);
            self.ring.at(w + 3).write(0);
            fence(Ordering::Release);
            // Length, head buffer, the generation last: the device's from here.
            self.ring
                .at(w + 2)
                .write(RX_BUF as u32 | self.fill_gen << 31);
            self.desc_buf[i] = b;
            self.state[b as usize] = 1;
            self.posted += 1;
            self.fill = (i + 1) % RING;
            if self.fill == 0 {
                self.fill_gen ^= 1;
            }
            any = true;
        }
        if any && self.update_prod.read() != 0 {
            fence(Ordering::SeqCst);
            self.prod.write(self.fill as u32);
            self.doorbells += 1;
        }
    }

    /// Whether a completion is waiting.
    fn frame_waiting(&self) -> bool {
        self.comp.at(4 * self.cnext + 3).read() >> 31 == self.cgen
    }

    /// Frames taken and completions refused, and buffers posted (tests).
    pub fn tally(&self) -> (u64, u64, usize) {
        (self.frames, self.bad, self.posted)
    }

    /// The descriptor the next completion must name (tests: a plausible lie).
    #[cfg(any(test, feature = "fake"))]
    pub fn next_index(&self) -> usize {
        self.head
    }

    /// Whether `b` lies in this side's buffers (tests).
    #[cfg(any(test, feature = "fake"))]
    pub fn holds(&self, b: &[u8]) -> bool {
        self.bufs.holds(b)
    }

    /// The device's statistics (this side reports them).
    pub fn device_stats(&self) -> &DeviceStats {
        &self.stats
    }
}

impl RxRing for Vmxnet3Rx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let mut n = 0;
        while n < out.len() && self.frame_waiting() {
            fence(Ordering::Acquire);
            let c = 4 * self.cnext;
            let (w0, w2, w3) = (
                self.comp.at(c).read(),
                self.comp.at(c + 2).read(),
                self.comp.at(c + 3).read(),
            );
            self.cnext = (self.cnext + 1) % RX_COMP;
            if self.cnext == 0 {
                self.cgen ^= 1;
            }
            let idx = (w0 & 0xFFF) as usize;
            let (eop, sop, rq) = (w0 >> 14 & 1, w0 >> 15 & 1, w0 >> 16 & 0x3FF);
            let (len, err) = ((w2 & 0x3FFF) as usize, w2 >> 14 & 1);
            if rq != 0 || self.posted == 0 {
                // Ring 1 (never posted) or nothing posted: no buffer of ours is named.
                self.bad += 1;
                continue;
            }
            // The oldest posted descriptor is the one completed, whatever was claimed.
            let b = self.desc_buf[self.head];
            self.head = (self.head + 1) % RING;
            self.posted -= 1;
            if idx != (self.head + RING - 1) % RING
                || sop == 0
                || eop == 0
                || err != 0
                || len == 0
                || len > RX_BUF
                || self.state[b as usize] != 1
            {
                self.bad += 1;
                self.state[b as usize] = 0;
                self.free.push(b);
                continue;
            }
            self.state[b as usize] = 2;
            self.csum[b as usize] = self.rxcsum
                && w0 & RCD_CNC == 0
                && w3 & RCD_CSUM_OK == RCD_CSUM_OK
                && w3 & RCD_FRG == 0;
            out[n] = RxFrame {
                buf: b as u32,
                len: len as u32,
            };
            n += 1;
            self.frames += 1;
        }
        self.refill(false);
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        let b = f.buf as usize;
        if b >= RX_POOL || self.state[b] != 2 {
            return &[];
        }
        // SAFETY: a lent buffer: not posted, so the device does not write it.
        unsafe { self.bufs.bytes(b * RX_BUF, (f.len as usize).min(RX_BUF)) }.unwrap_or(&[])
    }

    fn recycle(&mut self, f: RxFrame) {
        let b = f.buf as usize;
        if b < RX_POOL && self.state[b] == 2 {
            self.state[b] = 0;
            self.free.push(b as u16);
        }
    }

    /// The device found the frame's IPv4 and TCP checksums correct (UPT1_F_RXCSUM asked).
    fn csum_trusted(&self, f: &RxFrame) -> bool {
        let b = f.buf as usize;
        b < RX_POOL && self.state[b] == 2 && self.csum[b]
    }
}

impl super::WakeRx for Vmxnet3Rx {
    fn arm(&mut self) -> Arm {
        if self.wake == RxWake::None {
            return Arm::Unable;
        }
        self.imr.write(0);
        fence(Ordering::SeqCst);
        if self.frame_waiting() {
            self.disarm();
            Arm::Pending
        } else {
            Arm::Armed
        }
    }

    fn disarm(&mut self) {
        if self.wake != RxWake::None {
            self.imr.write(1);
        }
    }

    fn wake(&self) -> super::Wake {
        match self.wake {
            RxWake::None => super::Wake::None,
            RxWake::Msi(e) => super::Wake::Msi(e),
        }
    }
}

impl<H: Hal> Vmxnet3Tx<H> {
    /// Writes descriptor `tail` (the generation is the ring's unless `hold`: the first
    /// of a frame is handed over last). Returns its index.
    fn push(&mut self, addr: u64, len: usize, last: bool, hold: bool) -> u16 {
        let i = self.tail;
        let w = 4 * i;
        self.ring.at(w).write(addr as u32);
        self.ring.at(w + 1).write((addr >> 32) as u32);
        // EOP and completion request on the last descriptor.
        self.ring
            .at(w + 3)
            .write(if last { 1 << 12 | 1 << 13 } else { 0 });
        let gen = if hold { self.gen ^ 1 } else { self.gen };
        self.ring.at(w + 2).write(len as u32 & 0x3FFF | gen << 14);
        self.tail = (i + 1) % RING;
        if self.tail == 0 {
            self.gen ^= 1;
        }
        self.used += 1;
        self.unrung += 1;
        i as u16
    }

    /// Takes the device's completions: every frame up to the descriptor named is done.
    fn reclaim(&mut self) {
        loop {
            let c = 4 * self.cnext;
            if self.comp.at(c + 3).read() >> 31 != self.cgen {
                return;
            }
            fence(Ordering::Acquire);
            let idx = (self.comp.at(c).read() & 0xFFF) as u16;
            self.cnext = (self.cnext + 1) % RING;
            if self.cnext == 0 {
                self.cgen ^= 1;
            }
            let Some(k) = self.in_flight.iter().position(|f| f.0 == idx) else {
                self.bad += 1;
                continue;
            };
            for (_, n, s) in self.in_flight.drain(..=k) {
                self.used -= n as usize;
                self.free_slots.push(s);
            }
        }
    }

    /// Frames sent, refused, and bad completions (tests).
    pub fn tally(&self) -> (u64, u64, u64) {
        (self.frames, self.full, self.bad)
    }

    /// Frames sent through `post_tso` (tests).
    pub fn tso_frames(&self) -> u64 {
        self.tso_frames
    }

    /// Queues the head in slot `s` and `body` (in descriptors of at most [`TXD_MAX`]
    /// bytes) as one frame, the first descriptor carrying `offload` (word 2's `msscof`
    /// bits, word 3's `hlen` and offload mode) and handed over last. False when the ring
    /// lacks the descriptors (the slot is then still the caller's).
    fn queue(&mut self, s: u16, head_len: usize, body: &'static [u8], offload: (u32, u32)) -> bool {
        let need = 1 + body.len().div_ceil(TXD_MAX);
        if self.used + need > RING || need > u8::MAX as usize {
            return false;
        }
        let head = self.slots.paddr(s as usize * TX_SLOT);
        let first = self.tail;
        let gen = self.gen;
        let mut last = self.push(head, head_len.min(TX_SLOT), body.is_empty(), true);
        let w = 4 * first;
        if offload != (0, 0) {
            let (w2, w3) = (self.ring.at(w + 2), self.ring.at(w + 3));
            w2.write(w2.read() | offload.0);
            w3.write(w3.read() | offload.1);
        }
        let mut chunks = body.chunks(TXD_MAX).peekable();
        while let Some(c) = chunks.next() {
            let end = chunks.peek().is_none();
            last = self.push(H::dma_addr_static(c), c.len(), end, false);
        }
        // The frame's first descriptor becomes the device's last.
        fence(Ordering::Release);
        let g = self.ring.at(w + 2);
        g.write(g.read() & !(1 << 14) | gen << 14);
        self.in_flight.push_back((last, need as u8, s));
        self.frames += 1;
        true
    }
}

impl<H: Hal> TxRing for Vmxnet3Tx<H> {
    fn slot(&mut self) -> Option<&mut [u8]> {
        if self.current.is_none() {
            if self.free_slots.is_empty() || self.used + 2 > RING {
                self.reclaim();
            }
            if (self.free_slots.is_empty() || self.used + 2 > RING) && self.unrung != 0 {
                self.flush();
            }
            if self.free_slots.is_empty() || self.used + 2 > RING {
                return None;
            }
            self.current = self.free_slots.pop();
        }
        let s = self.current? as usize;
        // SAFETY: slot s is not in flight: the device does not read it meanwhile.
        unsafe { self.slots.bytes_mut(s * TX_SLOT, TX_SLOT) }
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        let Some(s) = self.current.take() else {
            self.full += 1;
            return Err(TxFull);
        };
        if body.len() > TXD_MAX || head_len == 0 || !self.queue(s, head_len, body, (0, 0)) {
            self.free_slots.push(s);
            self.full += 1;
            return Err(TxFull);
        }
        Ok(())
    }

    /// One frame the device segments (offload mode TSO: `hlen` the headers' bytes,
    /// `msscof` the MSS), or, when its payload fits one segment, whose TCP checksum it
    /// completes (CSUM: `hlen` where the TCP header starts, `msscof` where its checksum
    /// field is). The engine leaves the pseudo-header sum *with* the whole TCP length in
    /// the checksum field, right for CSUM; for TSO the length is taken out (the device adds
    /// each segment's, as Linux `vmxnet3_prepare_tso` writes it).
    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        let Some(s) = self.current.take() else {
            self.full += 1;
            return Err(TxFull);
        };
        let (l4, hl, mss) = (
            tso.l4_offset as usize,
            tso.header_len as usize,
            tso.mss as usize,
        );
        let total = head_len + body.len();
        if !self.offload
            || head_len > TX_SLOT
            || hl > head_len
            || l4 < 14 + 20
            || l4 + 20 > hl
            || hl > 0x3FF
            || mss == 0
            || mss > TXD_MAX
            || body.len() > 0xFFFF
        {
            self.free_slots.push(s);
            self.full += 1;
            return Err(TxFull);
        }
        let segment = total - hl > mss;
        let offload = if segment {
            (
                (mss as u32) << TXD_MSSCOF_SHIFT,
                hl as u32 | OM_TSO << TXD_OM_SHIFT,
            )
        } else {
            (
                ((l4 + 16) as u32) << TXD_MSSCOF_SHIFT,
                l4 as u32 | OM_CSUM << TXD_OM_SHIFT,
            )
        };
        if segment {
            // SAFETY: slot s is not in flight (just taken from `current`): the device does
            // not read it until the descriptors are handed over.
            if let Some(h) = unsafe { self.slots.bytes_mut(s as usize * TX_SLOT, head_len) } {
                let c = l4 + 16;
                let sum = u16::from_be_bytes([h[c], h[c + 1]]);
                let fixed = super::e1000::ones_sub(sum, (total - l4) as u16);
                h[c..c + 2].copy_from_slice(&fixed.to_be_bytes());
            }
        }
        if !self.queue(s, head_len, body, offload) {
            self.free_slots.push(s);
            self.full += 1;
            return Err(TxFull);
        }
        self.tso_frames += 1;
        Ok(())
    }

    fn flush(&mut self) {
        if self.unrung != 0 {
            fence(Ordering::SeqCst);
            self.prod.write(self.tail as u32);
            self.unrung = 0;
            self.doorbells += 1;
        }
        self.reclaim();
    }

    fn room(&mut self) -> usize {
        self.reclaim();
        let room = |t: &Self| {
            (t.free_slots.len() + usize::from(t.current.is_some()))
                .min(RING.saturating_sub(t.used) / 2)
        };
        if room(self) == 0 && self.unrung != 0 {
            self.flush();
        }
        room(self)
    }
}

impl<H: Hal> bareweb_engine::cores::CoreQueue for Vmxnet3<H> {}

impl<H: Hal> Nic for Vmxnet3<H> {
    type Rx = Vmxnet3Rx;
    type Tx = Vmxnet3Tx<H>;

    fn split(&mut self) -> (&mut Vmxnet3Rx, &mut Vmxnet3Tx<H>) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn caps(&self) -> NicCaps {
        if self.tx.offload {
            // Over IPv6 as over IPv4: the first descriptor's header length and MSS, and
            // the pseudo-header sum without the length (Linux `vmxnet3_prepare_tso`).
            NicCaps::default().with_tso(TSO_LIMIT).with_tso6()
        } else {
            NicCaps::default()
        }
    }

    fn counters(&self) -> NicCounters {
        super::counters::<Vmxnet3<H>>(&self.rx, &self.tx)
    }
}

impl<H: Hal> Driver for Vmxnet3<H> {
    type Error = Error;
    const NAME: &'static str = "vmxnet3";

    fn matches(dev: &Device) -> bool {
        Vmxnet3::matches(dev)
    }

    /// One queue pair; its receive completions wake `wake[0]`'s core by MSI-X entry 0.
    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<Vmxnet3<H>>, usize), Error> {
        let bar = |i: usize| match dev.bars[i] {
            Bar::Mem { addr, size, .. } if addr != 0 && size >= 4096 => Ok(addr),
            _ => Err(Error::NoRegisters),
        };
        let (b0, b1) = (bar(0)?, bar(1)?);
        dev.enable();
        // SAFETY: BAR 0 and BAR 1 of a vmxnet3, 4 KiB each at least (checked above).
        let (pt, vd) = unsafe { (Mmio::map::<H>(b0, 4096), Mmio::map::<H>(b1, 4096)) };
        let mut nic = Vmxnet3::<H>::bring_up(&pt, &vd, with.offload)?;
        if let Some(&apic) = with.wake.first() {
            if let Some(x) = MsiX::find::<H>(dev) {
                if x.set(0, apic, NIC_VECTOR) {
                    nic.rx.wake = RxWake::Msi(0);
                }
                x.enable();
            }
        }
        Ok((alloc::vec![nic], 1))
    }

    fn rx_counters(rx: &Vmxnet3Rx, c: &mut NicCounters) {
        c.device_rx_frames += rx.frames;
        c.doorbells += rx.doorbells;
        c.rx_doorbells += rx.doorbells;
        c.device_rx_bad += rx.bad;
        rx.stats.add_to(c);
    }

    fn tx_counters(tx: &Vmxnet3Tx<H>, c: &mut NicCounters) {
        c.device_tx_frames += tx.frames;
        c.doorbells += tx.doorbells;
        c.device_tx_full += tx.full;
        c.device_tx_bad += tx.bad;
    }

    fn into_rings(self) -> (Vmxnet3Rx, Vmxnet3Tx<H>) {
        // The shared area lives as long as the device uses it: for ever.
        core::mem::forget(self._shared);
        (self.rx, self.tx)
    }

    fn link(&self) -> Box<dyn LinkSense> {
        Box::new(self.link)
    }

    fn multicast(&self) -> Box<dyn super::Multicast> {
        Box::new(self.multicast_filter())
    }
}

#[cfg(test)]
mod tests {
    //! The driver against `drivers::fake`'s vmxnet3: the shared area it lays out, frames
    //! both ways through the generation bits, the link, and a lying device.
    use super::super::fake::{FakeHal, FakeVmxnet3};
    use super::*;
    use bareweb_engine::nic::{RxFrame, RxRing, TxRing};

    const MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x59];

    fn up() -> (FakeVmxnet3, Vmxnet3<FakeHal>) {
        up_with(false)
    }

    fn up_with(offload: bool) -> (FakeVmxnet3, Vmxnet3<FakeHal>) {
        let mut dev = FakeVmxnet3::default();
        let (_, vd) = dev.mmio();
        vd.reg::<u32, RW>(MACL)
            .unwrap()
            .write(u32::from_le_bytes([MAC[0], MAC[1], MAC[2], MAC[3]]));
        vd.reg::<u32, RW>(MACH)
            .unwrap()
            .write(u32::from_le_bytes([MAC[4], MAC[5], 0, 0]));
        let nic = dev.answering(0, |pt, vd| Vmxnet3::<FakeHal>::bring_up(&pt, &vd, offload));
        (dev, nic.unwrap())
    }

    #[test]
    fn bring_up_lays_out_the_shared_area_and_posts_ring_0() {
        let (dev, mut nic) = up();
        assert_eq!(nic.mac(), EthernetAddress(MAC));
        let sh = dev.shared();
        let r = |off: u64| u32::from_le_bytes(FakeHal::read(sh + off, 4).try_into().unwrap());
        assert_eq!(r(0), MAGIC);
        assert_eq!(r(shared::MTU as u64), 1500);
        assert_eq!(r(shared::MAX_RX_SG as u64), 1 | 1 << 16 | 1 << 24);
        assert_eq!(r(shared::RX_MODE as u64), RXM_UCAST_BCAST);
        assert_eq!(r(shared::VF_TABLE as u64) & 1, 1, "VLAN 0 accepted");
        // Every ring is driver memory of the sizes given.
        for (rx, base, size, n) in [
            (false, 16, 56, RING),
            (false, 32, 64, RING),
            (true, 16, 56, RING),
            (true, 24, 60, RING1),
            (true, 32, 64, RX_COMP),
        ] {
            assert_eq!(dev.queue_u32(rx, size) as usize, n);
            assert!(FakeHal::translate(dev.queue_u64(rx, base), n * 16).is_some());
        }
        assert_eq!(dev.reg(0, IMR), 1, "receive interrupt masked");
        assert_eq!(dev.reg(0, IMR + 8), 1, "transmit/event interrupt masked");
        assert_eq!(nic.split().0.tally(), (0, 0, RING));
    }

    /// The multicast filter: the MACs listed in the table the shared area points at, its
    /// length, RXM_MCAST in the receive mode while the list is not empty; then the two
    /// commands that make the device read them.
    #[test]
    fn the_multicast_filter_lists_the_groups_and_turns_multicast_on() {
        use crate::drivers::Driver;
        let (dev, nic) = up();
        let sh = dev.shared();
        let r = |off: u64, n: usize| FakeHal::read(sh + off, n);
        let pa = u64::from_le_bytes(r(shared::MF_TABLE_PA as u64, 8).try_into().unwrap());
        assert_eq!(pa, sh + MF_TABLE as u64);
        let groups = [
            EthernetAddress([0x33, 0x33, 0, 0, 0, 1]),
            EthernetAddress([0x33, 0x33, 0xff, 0x53, 0x40, 0x48]),
        ];
        let mut f = nic.multicast();
        f.set(&groups);
        assert_eq!(r(shared::MF_TABLE_LEN as u64, 2), 12u16.to_le_bytes());
        assert_eq!(r(MF_TABLE as u64, 12), [groups[0].0, groups[1].0].concat());
        let mode = u32::from_le_bytes(r(shared::RX_MODE as u64, 4).try_into().unwrap());
        assert_eq!(mode, RXM_UCAST_BCAST | RXM_MCAST);
        assert_eq!(dev.reg(1, CMD), CMD_UPDATE_RX_MODE, "the last command");
        f.set(&[]);
        assert_eq!(r(shared::MF_TABLE_LEN as u64, 2), [0, 0]);
        let mode = u32::from_le_bytes(r(shared::RX_MODE as u64, 4).try_into().unwrap());
        assert_eq!(mode, RXM_UCAST_BCAST);
    }

    /// A frame's head: Ethernet, IPv4, TCP with `partial` in the checksum field.
    fn tcp_head(partial: u16) -> [u8; 54] {
        let mut h = [0u8; 54];
        h[12..14].copy_from_slice(&[8, 0]);
        h[14] = 0x45;
        h[23] = 6;
        h[46] = 5 << 4;
        h[50..52].copy_from_slice(&partial.to_be_bytes());
        h
    }

    #[test]
    fn segmentation_and_checksum_offload_fill_the_first_descriptor() {
        static BODY: [u8; 40_000] = [9; 40_000];
        let tso = Tso {
            mss: 1448,
            l4_offset: 34,
            header_len: 54,
        };
        // Off: nothing offered, asked or taken.
        let (dev, mut nic) = up();
        assert_eq!(nic.caps().tso_max, 0);
        let features = shared::UPT_FEATURES as u64;
        assert_eq!(FakeHal::read(dev.shared() + features, 8), [0; 8]);
        let (_, tx) = nic.split();
        tx.slot().unwrap()[..54].copy_from_slice(&tcp_head(0x1234));
        assert!(
            tx.post_tso(54, &BODY[..3000], tso).is_err(),
            "refused while off"
        );
        assert_eq!(tx.tally().1, 1);

        let (mut dev, mut nic) = up_with(true);
        assert_eq!(nic.caps().tso_max, TSO_LIMIT);
        let asked = FakeHal::read(dev.shared() + features, 8);
        assert_eq!(u64::from_le_bytes(asked.try_into().unwrap()), UPT1_F_RXCSUM);
        let (_, tx) = nic.split();
        // Segmented: TSO, the headers' length, the MSS; the whole TCP length taken out of
        // the pseudo-header sum.
        for body in [&BODY[..3000], &BODY[..]] {
            tx.slot().unwrap()[..54].copy_from_slice(&tcp_head(0x1234));
            tx.post_tso(54, body, tso).unwrap();
            tx.flush();
            let sent = dev.transmitted();
            assert_eq!(sent.len(), 1);
            assert_eq!(sent[0].len(), 54 + body.len());
            assert_eq!(&sent[0][54..], body, "in descriptors of at most 16 KiB");
            let tcp_len = (20 + body.len()) as u16;
            let fixed = crate::drivers::e1000::ones_sub(0x1234, tcp_len);
            assert_eq!(&sent[0][50..52], &fixed.to_be_bytes());
            let [w2, w3] = dev.tx_first.pop().unwrap();
            assert_eq!(w2 >> TXD_MSSCOF_SHIFT, 1448);
            assert_eq!(w3 & 0x3FF, 54);
            assert_eq!(w3 >> TXD_OM_SHIFT & 3, OM_TSO);
            assert_eq!(w3 & 1 << 12, 0, "end of packet on the last descriptor only");
        }
        // One segment's payload: the checksum only, the partial sum kept.
        tx.slot().unwrap()[..54].copy_from_slice(&tcp_head(0x1234));
        tx.post_tso(54, &BODY[..1000], tso).unwrap();
        tx.flush();
        let sent = dev.transmitted();
        assert_eq!(sent[0].len(), 1054);
        assert_eq!(&sent[0][50..52], &0x1234u16.to_be_bytes());
        let [w2, w3] = dev.tx_first.pop().unwrap();
        assert_eq!(w2 >> TXD_MSSCOF_SHIFT, 34 + 16, "the checksum field");
        assert_eq!(w3 & 0x3FF, 34, "where the TCP header starts");
        assert_eq!(w3 >> TXD_OM_SHIFT & 3, OM_CSUM);
        // A plain frame asks nothing.
        tx.slot().unwrap()[..54].copy_from_slice(&tcp_head(0));
        tx.post(54, &BODY[..100]).unwrap();
        tx.flush();
        assert_eq!(dev.transmitted().len(), 1);
        let [w2, w3] = dev.tx_first.pop().unwrap();
        assert_eq!((w2 >> TXD_MSSCOF_SHIFT, w3 & 0xFFF), (0, 0));
        // Impossible requests are refused, the slot kept.
        for bad in [
            Tso { mss: 0, ..tso },
            Tso { mss: 0x4000, ..tso },
            Tso {
                l4_offset: 20,
                ..tso
            },
            Tso {
                header_len: 60,
                ..tso
            },
            Tso {
                header_len: 40,
                ..tso
            },
        ] {
            tx.slot().unwrap()[..54].copy_from_slice(&tcp_head(0));
            assert!(tx.post_tso(54, &BODY[..3000], bad).is_err(), "{bad:?}");
        }
        tx.flush();
        assert!(dev.transmitted().is_empty());
        assert_eq!(tx.tso_frames(), 3);
        assert_eq!(tx.tally(), (4, 5, 0));
        assert_eq!(tx.room(), TX_SLOTS);
    }

    /// Over IPv6 (offered: `tso6`) the same first descriptor: the headers' 74 bytes and
    /// the MSS, the TCP length out of the pseudo-header sum; the TCP header at 54.
    #[test]
    fn segmentation_over_ipv6_fills_the_first_descriptor_alike() {
        static BODY: [u8; 5000] = [7; 5000];
        let (mut dev, mut nic) = up_with(true);
        assert!(nic.caps().tso6);
        let mut h = [0u8; 74];
        h[12..14].copy_from_slice(&[0x86, 0xDD]);
        h[14] = 0x60;
        h[20] = 6;
        h[66] = 5 << 4;
        h[70..72].copy_from_slice(&0x4321u16.to_be_bytes());
        let tso = Tso {
            mss: 1440,
            l4_offset: 54,
            header_len: 74,
        };
        let (_, tx) = nic.split();
        tx.slot().unwrap()[..74].copy_from_slice(&h);
        tx.post_tso(74, &BODY, tso).unwrap();
        tx.flush();
        let sent = dev.transmitted();
        assert_eq!(sent.len(), 1);
        assert_eq!(&sent[0][74..], &BODY[..]);
        // 0x4321 less the TCP length (20 + 5000 = 0x139c), in ones' complement.
        assert_eq!(&sent[0][70..72], &0x2F85u16.to_be_bytes());
        let [w2, w3] = dev.tx_first.pop().unwrap();
        assert_eq!(w2 >> TXD_MSSCOF_SHIFT, 1440);
        assert_eq!((w3 & 0x3FF, w3 >> TXD_OM_SHIFT & 3), (74, OM_TSO));
    }

    #[test]
    fn receive_checksums_are_trusted_only_as_the_completion_says() {
        let frame = [0x11u8; 80];
        let cases = [
            (0, RCD_CSUM_OK, true),
            (RCD_CNC, RCD_CSUM_OK, false),
            (0, RCD_CSUM_OK | RCD_FRG, false),
            (0, RCD_CSUM_OK & !(1 << 16), false), // TCP checksum not correct
            (0, RCD_CSUM_OK & !(1 << 19), false), // IP checksum not correct
            (0, RCD_CSUM_OK & !(1 << 18) | 1 << 17, false), // UDP
            (0, 0, false),
        ];
        for offload in [true, false] {
            let (mut dev, mut nic) = up_with(offload);
            let mut out = [RxFrame { buf: 0, len: 0 }; 1];
            for (w0, w3, trusted) in cases {
                assert!(dev.deliver_marked(&frame, w0, w3));
                let (rx, _) = nic.split();
                assert_eq!(rx.burst(&mut out), 1);
                assert_eq!(
                    rx.csum_trusted(&out[0]),
                    trusted && offload,
                    "{w0:x} {w3:x}"
                );
                rx.recycle(out[0]);
                assert!(!rx.csum_trusted(&out[0]), "not lent any more");
                let bogus = RxFrame { buf: 9999, len: 1 };
                assert!(!rx.csum_trusted(&bogus));
            }
        }
    }

    #[test]
    fn get_stats_is_read_once_a_second_onto_the_hw_counters() {
        let (mut dev, mut nic) = up();
        // TSO, unicast, multicast, broadcast (frames, octets), errors, discards.
        let tx = [1, 100, 10, 1000, 2, 200, 3, 300, 4, 5];
        // LRO, unicast, multicast, broadcast (frames, octets), out of buffer, errors.
        let rx = [0, 0, 20, 2000, 1, 64, 6, 384, 7, 8];
        dev.write_stats(tx, rx);
        dev.set_vd(CMD, 0);
        let hz = 1_000_000;
        let s = nic.split().0.device_stats();
        let mut c = NicCounters::default();
        s.add_at(5, hz, &mut c);
        assert_eq!(dev.reg(1, CMD), CMD_GET_STATS, "asked");
        assert_eq!((c.hw_rx_frames, c.hw_rx_octets), (27, 2448));
        assert_eq!((c.hw_tx_frames, c.hw_tx_octets), (15, 1500));
        assert_eq!(
            (c.hw_rx_no_buffer, c.hw_rx_missed, c.hw_rx_crc_errors),
            (7, 8, 0)
        );
        // Running totals: the device counts on; within the second nothing is asked.
        dev.write_stats([0, 0, 30, 3000, 0, 0, 0, 0, 0, 0], rx);
        dev.set_vd(CMD, 0);
        let mut again = NicCounters::default();
        s.add_at(5 + hz - 1, hz, &mut again);
        assert_eq!(again, c);
        assert_eq!(dev.reg(1, CMD), 0, "not asked within the second");
        let mut later = NicCounters::default();
        s.add_at(5 + hz, hz, &mut later);
        assert_eq!((later.hw_tx_frames, later.hw_tx_octets), (30, 3000));
        assert_eq!(later.hw_rx_frames, 27);
        // A lying device: every counter at its largest. Added up saturating, no panic.
        dev.write_stats([u64::MAX; 10], [u64::MAX; 10]);
        let mut lie = NicCounters::default();
        lie.hw_rx_frames = 5;
        s.add_at(5 + 2 * hz, hz, &mut lie);
        assert_eq!((lie.hw_rx_frames, lie.hw_tx_octets), (u64::MAX, u64::MAX));
        // The queue pair's counters carry them.
        dev.write_stats(tx, rx);
        s.read();
        assert_eq!(nic.counters().hw_rx_frames, 27);
    }

    #[test]
    fn a_refused_activation_is_an_error() {
        let mut dev = FakeVmxnet3::default();
        let nic = dev.answering(7, |pt, vd| Vmxnet3::<FakeHal>::bring_up(&pt, &vd, false));
        assert_eq!(nic.err(), Some(Error::Refused(7)));
    }

    #[test]
    fn frames_both_ways_across_several_wraps() {
        static BODY: [u8; 900] = [4; 900];
        let (mut dev, mut nic) = up();
        let mut out = [RxFrame { buf: 0, len: 0 }; 8];
        for round in 0..3 * RX_COMP {
            let f: Vec<u8> = (0..60 + round % 1400).map(|i| (i + round) as u8).collect();
            assert!(dev.deliver(&f), "round {round}");
            let (rx, tx) = nic.split();
            assert_eq!(rx.burst(&mut out), 1);
            assert_eq!(rx.bytes(&out[0]), &f[..]);
            assert!(rx.holds(rx.bytes(&out[0])));
            rx.recycle(out[0]);
            let h = tx.slot().unwrap();
            h[..54].fill(round as u8);
            tx.post(54, if round % 2 == 0 { &BODY } else { &[] })
                .unwrap();
            tx.flush();
            let sent = dev.transmitted();
            assert_eq!(sent.len(), 1);
            assert_eq!(sent[0].len(), 54 + if round % 2 == 0 { 900 } else { 0 });
            assert_eq!(sent[0][0], round as u8);
        }
        let (rx, tx) = nic.split();
        assert_eq!(rx.tally().1, 0);
        assert_eq!(tx.tally(), (3 * RX_COMP as u64, 0, 0));
        assert!(tx.room() > 0);
    }

    /// 128 frames of two descriptors each fill the ring and bring its tail back to where
    /// the last doorbell left it: the doorbell still rings (QEMU reads the ring on a
    /// doorbell only; without one the queue stalls, as it did over a TAP).
    #[test]
    fn a_whole_ring_between_doorbells_still_rings() {
        static BODY: [u8; 1400] = [6; 1400];
        let (mut dev, mut nic) = up();
        for round in 0..3 {
            let (_, tx) = nic.split();
            for i in 0..TX_SLOTS {
                let h = tx
                    .slot()
                    .unwrap_or_else(|| panic!("round {round}, frame {i}"));
                h[..54].fill(i as u8);
                tx.post(54, &BODY).unwrap();
            }
            assert!(tx.slot().is_none(), "every descriptor in flight");
            assert_eq!(
                dev.reg(0, TXPROD),
                0,
                "the doorbell rang with the wrapped tail"
            );
            let sent = dev.transmitted();
            assert_eq!(sent.len(), TX_SLOTS, "round {round}");
            assert!(sent.iter().all(|f| f.len() == 54 + 1400));
            let (_, tx) = nic.split();
            assert_eq!(tx.room(), TX_SLOTS, "all completed");
            assert!(dev.transmitted().is_empty(), "no doorbell, nothing read");
        }
    }

    #[test]
    fn link_is_the_answer_to_get_link() {
        let (mut dev, nic) = up();
        let mut l = nic.link_sense();
        let link = dev.link.clone();
        let (up, down) = dev.answering(0, |_, _| {
            let up = l.link_up();
            link.store(0, core::sync::atomic::Ordering::Release);
            (up, l.link_up())
        });
        assert!(up && !down);
    }

    #[test]
    fn a_lying_device_is_counted_and_never_lends_outside_the_buffers() {
        let (mut dev, mut nic) = up();
        let mut out = [RxFrame { buf: 0, len: 0 }; 2 * RING];
        let eop_sop = 3 << 14;
        dev.complete_rx([eop_sop, 0, 60, 0]); // honest: index 0
        dev.complete_rx([5 | eop_sop, 0, 60, 0]); // not the oldest posted
        dev.complete_rx([2 | 1 << 14, 0, 60, 0]); // no start of packet
        dev.complete_rx([3 | eop_sop, 0, 60 | 1 << 14, 0]); // error bit
        dev.complete_rx([4 | eop_sop, 0, 0, 0]); // empty
        dev.complete_rx([5 | eop_sop, 0, 2049, 0]); // past the buffer
        dev.complete_rx([6 | eop_sop | 1 << 16, 0, 60, 0]); // ring 1, never posted
        dev.complete_rx([6 | eop_sop, 0, 2048, 0]); // honest, the whole buffer
        let (rx, _) = nic.split();
        let n = rx.burst(&mut out);
        assert_eq!(n, 2);
        assert_eq!((out[0].len, out[1].len), (60, 2048));
        assert_eq!(rx.tally().1, 6);
        assert!(out[..n].iter().all(|f| rx.holds(rx.bytes(f))));
        // Bogus recycles change nothing; the ring keeps every buffer it can.
        rx.recycle(RxFrame { buf: 9999, len: 1 });
        rx.recycle(out[0]);
        rx.recycle(out[0]);
        assert!(rx.bytes(&out[0]).is_empty(), "not lent any more");
    }

    /// Fuzz-style: arbitrary completions (any words, any count) with the engine recycling
    /// and handing back frames it never got: every frame lent is inside the buffers, at
    /// most 2 KiB, never lent twice at once; an honest device works afterwards.
    #[test]
    fn arbitrary_completions_never_lead_outside_the_buffers() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut dev, mut nic) = up();
        let mut lent: Vec<RxFrame> = Vec::new();
        let mut out = [RxFrame { buf: 0, len: 0 }; 64];
        for _ in 0..20_000 {
            let r = next();
            match r % 4 {
                0 | 1 => {
                    let (a, b) = (next(), next());
                    let mut w = [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32];
                    if r & 1 << 40 != 0 {
                        // Plausible: start and end of packet, queue 0, a length near 2 KiB.
                        let head = nic.split().0.next_index() as u32;
                        w[0] = if r & 1 << 41 != 0 { head } else { w[0] & 0xFFF } | 3 << 14;
                        w[2] = (w[2] & 0xFFF) * 2 % 2100;
                    }
                    dev.complete_rx(w);
                }
                2 => {
                    let (rx, _) = nic.split();
                    let n = rx.burst(&mut out);
                    for f in &out[..n] {
                        let b = rx.bytes(f);
                        assert!(rx.holds(b) && b.len() <= 2048 && !b.is_empty());
                        assert!(!lent.iter().any(|l| l.buf == f.buf), "lent twice");
                        lent.push(*f);
                    }
                }
                _ => {
                    let (rx, _) = nic.split();
                    if r & 1 << 20 != 0 && !lent.is_empty() {
                        let k = (r >> 24) as usize % lent.len();
                        rx.recycle(lent.swap_remove(k));
                    } else {
                        let bogus = RxFrame {
                            buf: (r >> 32) as u32 % 1024,
                            len: (r >> 16) as u32,
                        };
                        if !lent.iter().any(|l| l.buf == bogus.buf) {
                            rx.recycle(bogus);
                            assert!(rx.bytes(&bogus).is_empty());
                        }
                    }
                }
            }
        }
        let (rx, _) = nic.split();
        for f in lent.drain(..) {
            rx.recycle(f);
        }
        assert!(
            rx.tally().0 > 0 && rx.tally().1 > 0,
            "lies both taken and refused"
        );
    }
}
