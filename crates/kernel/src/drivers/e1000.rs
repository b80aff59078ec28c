//! Intel 82540EM ("e1000", the paper's internal NIC; QEMU `-device e1000`), polled.
//!
//! Heads up! read the PCI/PCI-X Family of Gigabit Ethernet Controllers Software
//! Developer's Manual (8254x), §3.2 (receive descriptors), §3.3 (transmit descriptors),
//! §13 (registers); Linux e1000_main.c `e1000_clean_rx_irq`/`e1000_xmit_frame` for the
//! batching this follows.
//!
//! - Legacy descriptors, one RX and one TX ring of 256 each, interrupts masked (IMC) while
//!   the core polls. To wake a halting core the receive causes (RXT0, RXO, RXDMT0) are
//!   enabled in IMS just before it halts ([`E1000Rx::arm`]): the INTx line, routed through
//!   the I/O APIC to that core, is level-triggered and stays up until ICR is read.
//! - Receive: buffers are not tied to ring positions: the driver keeps a shadow of which
//!   buffer each descriptor holds, loans buffers to the engine by id and refills the
//!   ring from recycled buffers in a batch, writing RDT once per refill batch.
//! - Transmit: a frame is the head slot (one descriptor) and, if any, the body pointing
//!   straight into the site image (a second descriptor, EOP|RS on the last). TDT is
//!   written once per `flush`.
//! - Device-written fields (status, errors, length) are checked: frames without EOP, with
//!   error bits or impossible lengths are counted and dropped (e1000 `e1000_clean_rx_irq`
//!   does the same); buffer identities come only from the shadow, and the driver reads
//!   no head register (RDH, TDH): where the device is comes from the DD bits alone.
//! - Generic over the machine ([`Hal`]): rings and buffers from `H::dma_alloc`, the
//!   device given their DMA addresses (the site image's from `H::dma_addr_static`), the
//!   registers a typed block ([`Regs`]) mapped through `H`. On the machine `H` is
//!   [`Identity`] (the default); the host tests run it against `drivers::fake`'s device.
//! - Shared with the 82574 (`e1000e.rs`): [`Regs`] and its reset and enable steps, the
//!   queue sides with the write-back layout ([`Layout`]) and wake-up ([`RxWake`]) chosen
//!   at bring-up, and `post_tso` (a context descriptor and extended data descriptors),
//!   which only the 82574's driver turns on.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::Cell;
use core::marker::PhantomData;
use core::mem::offset_of;
use core::sync::atomic::{fence, Ordering};

use alloc::boxed::Box;
use bareweb_engine::iface::egress::TSO_LIMIT;
use bareweb_engine::nic::{
    LinkSense, Nic, NicCaps, NicCounters, RxFrame, RxRing, Tso, TxFull, TxRing, TX_HEAD_ROOM,
};
use bareweb_engine::wire::EthernetAddress;

use super::hal::{Array, Dma, Hal, Identity, Mmio, Reg, Value, RO, RW, WO};
use super::{Arm, Driver, Open};
use crate::arch::pci::{Bar, Device};
use crate::arch::{ioapic, irq::NIC_VECTOR};

/// Intel.
pub const VENDOR: u16 = 0x8086;
/// 82540EM (QEMU's e1000), 82545EM copper. (The 82574L is `e1000e.rs`'s, on this file's
/// registers and queue code.)
pub const DEVICES: [u16; 2] = [0x100E, 0x100F];

/// Bytes of the register BAR (BAR 0).
pub const REGION: usize = 0x20000;

/// BAR 0 of an Intel gigabit part this module's register set fits (the 8254x, and the
/// 82574 and 82576 drivers built on it), checked to hold [`REGION`] bytes, mapped after
/// memory decoding and bus mastering are enabled.
pub fn map_registers<H: Hal>(dev: &Device) -> Result<Mmio, Error> {
    let base = match dev.bars[0] {
        Bar::Mem { addr, size, .. } if addr != 0 && size >= REGION as u64 => addr,
        _ => return Err(Error::NoRegisters),
    };
    dev.enable();
    // SAFETY: BAR 0 of the device, at least REGION bytes (checked above).
    Ok(unsafe { Mmio::map::<H>(base, REGION) })
}

const CTRL: usize = 0x0000;
const STATUS: usize = 0x0008;
const EERD: usize = 0x0014;
const ICR: usize = 0x00C0;
const ICS: usize = 0x00C8;
const IMS: usize = 0x00D0;
const IMC: usize = 0x00D8;
const RCTL: usize = 0x0100;
const TCTL: usize = 0x0400;
const TIPG: usize = 0x0410;
const RDBAL: usize = 0x2800;
#[cfg(test)]
const RDH: usize = 0x2810;
/// The receive tail (the driver's doorbell), for the fake device.
pub const RDT: usize = 0x2818;
const TDBAL: usize = 0x3800;
#[cfg(test)]
const TDH: usize = 0x3810;
/// The transmit tail (the driver's doorbell), for the fake device.
pub const TDT: usize = 0x3818;
const RXCSUM: usize = 0x5000;
const MTA: usize = 0x5200;
const RAL0: usize = 0x5400;
const RAH0: usize = 0x5404;
const CRCERRS: usize = 0x4000;
const MPC: usize = 0x4010;
const GPRC: usize = 0x4074;
const GPTC: usize = 0x4080;
const GORCL: usize = 0x4088;
const GOTCL: usize = 0x4090;
const RNBC: usize = 0x40A0;

/// The registers the driver uses (§13), each typed by how the driver may use it. Built
/// once from the mapped BAR; the queue sides keep only the few they touch after bring-up.
#[derive(Debug, Clone, Copy)]
pub struct Regs {
    pub(super) ctrl: Reg<u32, RW>,
    pub(super) status: Reg<u32, RO>,
    pub(super) eerd: Reg<u32, RW>,
    /// Read-to-clear.
    pub(super) icr: Reg<u32, RO>,
    /// ICR written: write-1-to-clear on the 82574 (one queue's cause, leaving the
    /// others'); unused on the 82540EM.
    pub(super) icr_clear: Reg<u32, WO>,
    pub(super) ics: Reg<u32, WO>,
    pub(super) ims: Reg<u32, WO>,
    pub(super) imc: Reg<u32, WO>,
    pub(super) rctl: Reg<u32, WO>,
    pub(super) tctl: Reg<u32, WO>,
    pub(super) tipg: Reg<u32, WO>,
    /// (base low, base high, length, head, tail) of the receive ring.
    pub(super) rd: [Reg<u32, WO>; 5],
    /// As `rd`, of the transmit ring.
    pub(super) td: [Reg<u32, WO>; 5],
    pub(super) rxcsum: Reg<u32, WO>,
    pub(super) mta: Array<u32, WO>,
    pub(super) ral0: Reg<u32, RW>,
    pub(super) rah0: Reg<u32, RW>,
    /// Statistics registers, clear on read: GPRC, GPTC, MPC, RNBC, CRCERRS.
    pub(super) counts: [Reg<u32, RO>; 5],
    /// (low, high) of GORC and GOTC (reading the high dword clears both).
    pub(super) octets: [[Reg<u32, RO>; 2]; 2],
}

impl Regs {
    /// The block in register region `m`, or `None` if `m` is smaller than the BAR.
    pub fn new(m: &Mmio) -> Option<Regs> {
        if m.len() < REGION {
            return None;
        }
        Some(Regs {
            ctrl: m.reg(CTRL)?,
            status: m.reg(STATUS)?,
            eerd: m.reg(EERD)?,
            icr: m.reg(ICR)?,
            icr_clear: m.reg(ICR)?,
            ics: m.reg(ICS)?,
            ims: m.reg(IMS)?,
            imc: m.reg(IMC)?,
            rctl: m.reg(RCTL)?,
            tctl: m.reg(TCTL)?,
            tipg: m.reg(TIPG)?,
            rd: Regs::queue(m, RDBAL, 0)?,
            td: Regs::queue(m, TDBAL, 0)?,
            rxcsum: m.reg(RXCSUM)?,
            mta: m.array(MTA, 128)?,
            ral0: m.reg(RAL0)?,
            rah0: m.reg(RAH0)?,
            counts: [
                m.reg(GPRC)?,
                m.reg(GPTC)?,
                m.reg(MPC)?,
                m.reg(RNBC)?,
                m.reg(CRCERRS)?,
            ],
            octets: [
                [m.reg(GORCL)?, m.reg(GORCL + 4)?],
                [m.reg(GOTCL)?, m.reg(GOTCL + 4)?],
            ],
        })
    }

    /// The ring registers (base low, base high, length, head, tail) of queue `k` whose
    /// queue 0 starts at `base` (RDBAL or TDBAL; queue k's are 0x100 × k further on, as
    /// the 82574 has them; the 82540EM has queue 0 only).
    pub(super) fn queue(m: &Mmio, base: usize, k: usize) -> Option<[Reg<u32, WO>; 5]> {
        let b = base + 0x100 * k;
        Some([
            m.reg(b)?,
            m.reg(b + 4)?,
            m.reg(b + 8)?,
            m.reg(b + 0x10)?,
            m.reg(b + 0x18)?,
        ])
    }

    /// Points ring registers `r` (RDBAL.. or TDBAL..) at `len` bytes of descriptors at
    /// DMA address `at`, head and tail 0.
    fn ring(r: &[Reg<u32, WO>; 5], at: u64, len: usize) {
        r[0].write(at as u32);
        r[1].write((at >> 32) as u32);
        r[2].write(len as u32);
        r[3].write(0);
        r[4].write(0);
    }
}

/// STATUS.LU: link up (§13.4.2).
const STATUS_LU: u32 = 1 << 1;
const CTRL_SLU: u32 = 1 << 6;
const CTRL_ASDE: u32 = 1 << 5;
const CTRL_RST: u32 = 1 << 26;
const RCTL_EN: u32 = 1 << 1;
const RCTL_BAM: u32 = 1 << 15;
const RCTL_SECRC: u32 = 1 << 26;
const TCTL_EN: u32 = 1 << 1;
const TCTL_PSP: u32 = 1 << 3;

/// Interrupt causes that mean "a frame came": receiver timer (RXT0), overrun (RXO),
/// descriptors below the threshold (RXDMT0).
const IMS_RX: u32 = 1 << 7 | 1 << 6 | 1 << 4;

const STA_DD: u8 = 1;
const STA_EOP: u8 = 2;
const CMD_EOP: u8 = 1;
const CMD_IFCS: u8 = 2;
const CMD_RS: u8 = 8;

/// Receive errors that make a frame unusable (CE, SE, SEQ, CXE, RXE: Linux
/// E1000_RXD_ERR_FRAME_ERR_MASK). Checksum error bits are not among them: receive
/// checksum offload is off, and the engine checks every checksum itself.
const FRAME_ERR: u8 = 0x01 | 0x02 | 0x04 | 0x10 | 0x80;
/// Refill the receive ring (one RDT write) once this many buffers are free, or sooner
/// when the device holds fewer than [`RX_LOW`] (Linux: E1000_RX_BUFFER_WRITE = 16).
const RX_BATCH: usize = 16;
const RX_LOW: usize = 64;

const RING: usize = 256;
/// Receive buffers: a full ring plus what the engine may hold at once.
const RX_POOL: usize = RING + 64;
const RX_BUF: usize = 2048;
/// Head slots: a frame takes at most two descriptors.
const TX_SLOTS: usize = RING / 2;
const TX_SLOT: usize = TX_HEAD_ROOM;

/// Why the device could not be brought up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// BAR 0 is not an assigned memory BAR of at least 128 KiB.
    NoRegisters,
    /// The device did not come out of reset.
    NoReset,
    /// The heap is exhausted.
    NoMemory,
}

/// A legacy receive descriptor (§3.2.3): the driver writes `addr` (and zeroes the rest),
/// the device writes back the others.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RxDesc {
    addr: u64,
    len: u16,
    csum: u16,
    status: u8,
    errors: u8,
    special: u16,
}

/// A legacy transmit descriptor (§3.3.3): the device writes back only `status`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TxDesc {
    addr: u64,
    len: u16,
    cso: u8,
    cmd: u8,
    status: u8,
    css: u8,
    special: u16,
}
const _: () = assert!(core::mem::size_of::<RxDesc>() == 16 && core::mem::size_of::<TxDesc>() == 16);

// SAFETY: plain integers: any bit pattern is a descriptor.
unsafe impl Value for RxDesc {
    #[inline(always)]
    fn le_to_cpu(self) -> Self {
        RxDesc {
            addr: u64::from_le(self.addr),
            len: u16::from_le(self.len),
            csum: u16::from_le(self.csum),
            special: u16::from_le(self.special),
            ..self
        }
    }
    #[inline(always)]
    fn cpu_to_le(self) -> Self {
        self.le_to_cpu()
    }
}

// SAFETY: plain integers.
unsafe impl Value for TxDesc {
    #[inline(always)]
    fn le_to_cpu(self) -> Self {
        TxDesc {
            addr: u64::from_le(self.addr),
            len: u16::from_le(self.len),
            special: u16::from_le(self.special),
            ..self
        }
    }
    #[inline(always)]
    fn cpu_to_le(self) -> Self {
        self.le_to_cpu()
    }
}

/// Receive side.
pub struct E1000Rx {
    /// The tail: the only register the receive path writes.
    rdt: Reg<u32, WO>,
    /// Interrupt cause (read-to-clear), set and clear: for arming a wake-up.
    icr: Reg<u32, RO>,
    icr_clear: Reg<u32, WO>,
    ims: Reg<u32, WO>,
    imc: Reg<u32, WO>,
    /// The descriptor ring's memory, which `ring` views (kept alive, never read).
    _mem: Dma,
    ring: Array<RxDesc, RW>,
    bufs: Dma,
    /// Which buffer each descriptor holds (the shadow; never read back from the device).
    desc_buf: [u16; RING],
    /// Next descriptor to look at.
    next: usize,
    /// RDT: one past the last descriptor given to the device.
    tail: usize,
    /// Buffers free to post.
    free: Vec<u16>,
    /// Per buffer: 0 = free, 1 = posted, 2 = loaned to the engine.
    state: Vec<u8>,
    frames: u64,
    bad: u64,
    doorbells: u64,
    /// Where the device's descriptor write-back puts status, errors and length.
    layout: Layout,
    /// How a frame wakes the core that owns this side.
    wake: RxWake,
    /// The device's statistics registers, on one side per device (pair 0's).
    stats: Option<DeviceStats>,
}

/// A device's statistics registers (8254x manual §13.7; the 82574 and the 82576 keep
/// them at the same offsets): good frames and octets each way, and the frames it lost
/// (MPC: no room in its packet buffer; RNBC: no free descriptor; CRCERRS). They clear on
/// read, so each reading is added to 64-bit totals; they are read at most about once a
/// second, whatever asks for the counters (the run loop gathers them on every idle
/// poll, and a register read is a VM exit), never per packet. QEMU's models count the
/// good frames and octets; the loss counters stay 0 there (a frame with no descriptor
/// waits in QEMU's queue).
pub(super) struct DeviceStats {
    counts: [Reg<u32, RO>; 5],
    octets: [[Reg<u32, RO>; 2]; 2],
    /// GPRC, GPTC, MPC, RNBC, CRCERRS, GORC, GOTC so far.
    totals: Cell<[u64; 7]>,
    /// The TSC at which the registers are read next.
    next_tsc: Cell<u64>,
}

impl DeviceStats {
    fn new(regs: &Regs) -> DeviceStats {
        DeviceStats {
            counts: regs.counts,
            octets: regs.octets,
            totals: Cell::new([0; 7]),
            next_tsc: Cell::new(0),
        }
    }

    /// Reads every register once (clearing it) and adds what it held.
    pub(super) fn read(&self) {
        let mut t = self.totals.get();
        for (i, r) in self.counts.iter().enumerate() {
            t[i] += r.read() as u64;
        }
        for (i, [lo, hi]) in self.octets.iter().enumerate() {
            // Low first: reading the high dword clears both.
            let lo = lo.read() as u64;
            t[5 + i] += lo | (hi.read() as u64) << 32;
        }
        self.totals.set(t);
    }

    /// Adds the totals to `c`, reading the registers first if a second has passed.
    fn add_to(&self, c: &mut NicCounters) {
        self.add_at(crate::arch::cpu::rdtsc(), crate::arch::clock::tsc_hz(), c);
    }

    /// As [`DeviceStats::add_to`] at TSC `now`, `hz` ticks a second.
    pub(super) fn add_at(&self, now: u64, hz: u64, c: &mut NicCounters) {
        if now >= self.next_tsc.get() {
            self.next_tsc.set(now.saturating_add(hz));
            self.read();
        }
        let [rx, tx, missed, no_buffer, crc, rx_octets, tx_octets] = self.totals.get();
        c.hw_rx_frames += rx;
        c.hw_tx_frames += tx;
        c.hw_rx_missed += missed;
        c.hw_rx_no_buffer += no_buffer;
        c.hw_rx_crc_errors += crc;
        c.hw_rx_octets += rx_octets;
        c.hw_tx_octets += tx_octets;
    }
}

/// A receive descriptor's write-back layout: (status byte, errors byte, length) offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout(usize, usize, usize);

impl Layout {
    /// Legacy (§3.2.3): length at 8, status at 12, errors at 13.
    pub(super) const LEGACY: Layout = Layout(
        offset_of!(RxDesc, status),
        offset_of!(RxDesc, errors),
        offset_of!(RxDesc, len),
    );
    /// Extended (82574 datasheet §7.1.5.2, RFCTL.EXTEN), as written back: MRQ and the RSS
    /// hash in bytes 0-7, then status (bits 19:0) and errors (31:24) in a little-endian
    /// dword at 8, length at 12, VLAN at 14. Same bits as the legacy ones.
    pub(super) const EXTENDED: Layout = Layout(8, 11, 12);
}

/// How a receive side wakes its halting core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RxWake {
    /// It does not (the core polls, or halts until its timer).
    None,
    /// The device's INTx line, this GSI, level-triggered, routed to the core.
    Line(u32),
    /// An MSI-X message (this table entry) for this cause bit (the 82574's ICR.RXQ0/RXQ1;
    /// the 82576's EICR bit of the vector, its registers given by
    /// [`E1000Rx::set_cause_regs`]), edge-triggered: the cause is cleared by the driver
    /// before arming.
    Msi(u16, u32),
}

/// Transmit side, lending bodies to the device through `H`.
pub struct E1000Tx<H: Hal = Identity> {
    /// The tail: the only register the transmit path writes.
    tdt: Reg<u32, WO>,
    /// The descriptor ring's memory, which `ring` views (kept alive, never read).
    _mem: Dma,
    ring: Array<TxDesc, RW>,
    slots: Dma,
    /// Next descriptor to fill.
    tail: usize,
    /// TDT as last written.
    written_tail: usize,
    /// Descriptors in use (filled, not yet seen done).
    used: usize,
    /// Frames in flight, oldest first: (last descriptor, descriptors, head slot).
    in_flight: VecDeque<(u16, u8, u16)>,
    free_slots: Vec<u16>,
    current: Option<u16>,
    frames: u64,
    full: u64,
    doorbells: u64,
    /// Whether `post_tso` is offered (the 82574 with offloads on; the 82540EM driver
    /// leaves it off).
    tso: bool,
    /// Frames posted for segmentation.
    tso_frames: u64,
    /// Every frame as advanced descriptors (the 82576's; else legacy ones, and the
    /// 82574's extended ones for segmentation).
    advanced: bool,
    _hal: PhantomData<fn() -> H>,
}

/// The link of an 82540EM: STATUS.LU, one register read (QEMU clears it on `set_link off`).
#[derive(Clone, Copy)]
pub struct E1000Link(Reg<u32, RO>);

impl LinkSense for E1000Link {
    fn link_up(&mut self) -> bool {
        self.0.read() & STATUS_LU != 0
    }
}

/// An 82540EM as one engine queue pair.
pub struct E1000<H: Hal = Identity> {
    rx: E1000Rx,
    tx: E1000Tx<H>,
    mac: EthernetAddress,
    regs: Regs,
}

impl E1000 {
    /// Whether `dev` is an 8254x we drive.
    pub fn matches(dev: &Device) -> bool {
        dev.vendor == VENDOR && DEVICES.contains(&dev.device)
    }
}

/// The multicast table array (MTA, §13.5.1) of the 8254x, 82574 and 82576 alike: 4096
/// bits, one per value of a 12-bit hash of the destination MAC; a multicast frame is
/// received when its bit is set. With RCTL.MO = 00 (as reset leaves it) the hash is the
/// MAC's bits 36-47: `mac[4] >> 4 | mac[5] << 4` (Linux `e1000_hash_mc_addr`, QEMU
/// `e1000x_rx_group_filter`). The table is write-only, so the filter keeps what it wrote
/// and, after writing every word once, writes only the words that change.
#[derive(Clone)]
pub struct E1000Multicast {
    mta: Array<u32, WO>,
    table: [u32; 128],
    written: bool,
}

/// The MTA bit of multicast MAC `m` (RCTL.MO = 00): word `h >> 5`, bit `h & 31`.
pub fn mta_hash(m: &EthernetAddress) -> usize {
    (usize::from(m.0[4]) >> 4 | usize::from(m.0[5]) << 4) & 0xFFF
}

impl super::Multicast for E1000Multicast {
    fn set(&mut self, macs: &[EthernetAddress]) {
        let mut t = [0u32; 128];
        for m in macs {
            let h = mta_hash(m);
            t[h >> 5] |= 1 << (h & 31);
        }
        for (i, (&new, old)) in t.iter().zip(self.table.iter_mut()).enumerate() {
            if new != *old || !self.written {
                self.mta.at(i).write(new);
                *old = new;
            }
        }
        self.written = true;
    }
}

impl<H: Hal> E1000<H> {
    /// The device's link, as [`Driver::link`] reads it.
    pub fn link_sense(&self) -> E1000Link {
        E1000Link(self.regs.status)
    }

    /// The device's multicast filter, as [`Driver::multicast`] gives it.
    pub fn multicast_filter(&self) -> E1000Multicast {
        E1000Multicast {
            mta: self.regs.mta,
            table: [0; 128],
            written: false,
        }
    }

    /// Resets the device and brings up both rings, interrupts masked.
    pub fn new(dev: &Device) -> Result<E1000<H>, Error> {
        let m = map_registers::<H>(dev)?;
        E1000::bring_up(Regs::new(&m).ok_or(Error::NoRegisters)?)
    }

    /// Resets the device whose registers are `regs` and brings up both rings,
    /// interrupts masked.
    pub fn bring_up(regs: Regs) -> Result<E1000<H>, Error> {
        let mac = regs.reset()?;
        let mut rx = E1000Rx::new::<H>(&regs, &regs.rd, Layout::LEGACY)?;
        rx.count_device(&regs);
        let tx = E1000Tx::new(&regs.td)?;
        regs.enable_tx();
        regs.rxcsum.write(0);
        regs.enable_rx();
        rx.refill();
        Ok(E1000 { rx, tx, mac, regs })
    }

    /// A queue pair of sides brought up by the 82574's driver on the same registers.
    pub(super) fn from_parts(
        rx: E1000Rx,
        tx: E1000Tx<H>,
        mac: EthernetAddress,
        regs: Regs,
    ) -> Self {
        E1000 { rx, tx, mac, regs }
    }

    /// The receive side, for the 82574's driver (its wake-up).
    pub(super) fn rx_mut(&mut self) -> &mut E1000Rx {
        &mut self.rx
    }

    /// The transmit side, for the 82574's driver (its offload).
    pub(super) fn tx_mut(&mut self) -> &mut E1000Tx<H> {
        &mut self.tx
    }
}

impl Regs {
    /// Resets the device (interrupts masked before and after), sets the link up, clears
    /// the multicast table; returns the station address (RAL0/RAH0, else the EEPROM's).
    /// The same steps on the 82540EM and the 82574.
    pub(super) fn reset(&self) -> Result<EthernetAddress, Error> {
        self.imc.write(0xFFFF_FFFF);
        self.ctrl.write(self.ctrl.read() | CTRL_RST);
        let mut spins = 0;
        while self.ctrl.read() & CTRL_RST != 0 {
            spins += 1;
            if spins > 1_000_000 {
                return Err(Error::NoReset);
            }
        }
        self.imc.write(0xFFFF_FFFF);
        self.ctrl.write(
            (self.ctrl.read() | CTRL_SLU | CTRL_ASDE) & !(1 << 3 | 1 << 31 | 1 << 7 | 1 << 30),
        );
        let mac = read_mac(self);
        for i in 0..128 {
            self.mta.at(i).write(0);
        }
        Ok(mac)
    }

    /// Turns the transmitter on (every queue's ring set up before).
    pub(super) fn enable_tx(&self) {
        self.tipg.write(10 | 8 << 10 | 6 << 20);
        self.tctl.write(TCTL_EN | TCTL_PSP | 0x0F << 4 | 0x40 << 12);
    }

    /// Turns the receiver on: BSIZE 00 = 2048-byte buffers; broadcast accepted; CRC
    /// stripped (every queue's ring set up before).
    pub(super) fn enable_rx(&self) {
        self.rctl.write(RCTL_EN | RCTL_BAM | RCTL_SECRC);
    }
}

/// Finds which I/O APIC line (GSI) the device's INTx reaches, by making it interrupt on
/// purpose (ICS) with every candidate line routed, level-triggered, to this core while its
/// interrupts are off, and reading which line's Remote IRR bit the delivery set (Linux's
/// IRQ probing, `probe_irq_on`, in I/O APIC terms). The interrupt line register alone is
/// not enough: QEMU's qboot writes one off by one from QEMU's i440FX routing (SeaBIOS's
/// is right), and on Q35 the PCI lines reach the I/O APIC as GSIs 16-23. Candidates: the
/// firmware's line (through the MADT's overrides), GSIs 16-23, the PCI link lines 5, 9,
/// 10, 11; a line already delivering before the device is made to (another device's) is
/// not taken. Waits up to 100 ms (QEMU's e1000 holds an interrupt back while its
/// mitigation timer runs, and that timer needs QEMU's I/O thread, which a busy host may
/// not run for a while). Returns the line, routed and masked until armed, or None.
/// Runs on the core `apic` names (the boot CPU, before the cores serve).
pub(super) fn probe_line(dev: &Device, regs: &Regs, apic: u32) -> Option<u32> {
    let mut cand = [0u32; 13];
    let mut n = 0;
    let firmware = dev.intx_line().map(crate::arch::acpi::isa_irq);
    for g in firmware
        .map(|(g, ..)| g)
        .into_iter()
        .chain(16..24)
        .chain([5, 9, 10, 11])
    {
        if !cand[..n].contains(&g) && ioapic::route(g, NIC_VECTOR, apic, true, false) {
            cand[n] = g;
            n += 1;
        }
    }
    let cand = &cand[..n];
    let busy = |g: u32| ioapic::delivered(g);
    dev.allow_intx();
    regs.imc.write(0xFFFF_FFFF);
    let _ = regs.icr.read();
    cand.iter().for_each(|&g| ioapic::unmask(g));
    // Lines already raised by someone else.
    let mut others = [false; 13];
    for (i, &g) in cand.iter().enumerate() {
        others[i] = busy(g);
    }
    regs.ims.write(IMS_RX);
    regs.ics.write(1 << 7);
    let end = crate::arch::cpu::rdtsc() + crate::arch::clock::tsc_hz() / 10;
    let mut found = None;
    while found.is_none() && crate::arch::cpu::rdtsc() < end {
        found = cand
            .iter()
            .enumerate()
            .find(|&(i, &g)| !others[i] && busy(g))
            .map(|(_, &g)| g);
    }
    regs.imc.write(0xFFFF_FFFF);
    let _ = regs.icr.read();
    cand.iter().for_each(|&g| ioapic::mask(g));
    // The delivered interrupt is pending at the local APIC: take it (the handler's EOI
    // ends it at the I/O APIC too).
    crate::arch::irq::window();
    for &g in cand.iter().filter(|&&g| Some(g) != found) {
        ioapic::route(g, 0, apic, false, false); // left masked and unused
    }
    let g = found?;
    let (level, low) = match firmware {
        Some((fg, level, low)) if fg == g => (level, low),
        _ => (true, false), // QEMU's I/O APIC ignores polarity
    };
    ioapic::route(g, NIC_VECTOR, apic, level, low);
    crate::arch::irq::set_level_line(crate::arch::smp::core_index().unwrap_or(0), Some(g));
    Some(g)
}

fn read_mac(regs: &Regs) -> EthernetAddress {
    let lo = regs.ral0.read();
    let hi = regs.rah0.read();
    if hi & (1 << 31) != 0 && (lo != 0 || hi & 0xFFFF != 0) {
        let b = lo.to_le_bytes();
        let h = hi.to_le_bytes();
        return EthernetAddress([b[0], b[1], b[2], b[3], h[0], h[1]]);
    }
    // EEPROM words 0..3 hold the address.
    let mut m = [0u8; 6];
    for w in 0..3u32 {
        regs.eerd.write(1 | w << 8);
        let mut v = 0;
        for _ in 0..100_000 {
            v = regs.eerd.read();
            if v & (1 << 4) != 0 {
                break;
            }
        }
        let word = (v >> 16) as u16;
        m[2 * w as usize] = word as u8;
        m[2 * w as usize + 1] = (word >> 8) as u8;
    }
    regs.ral0
        .write(u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
    regs.rah0
        .write(u32::from_le_bytes([m[4], m[5], 0, 0]) | 1 << 31);
    EthernetAddress(m)
}

impl Layout {
    /// The status byte of receive descriptor `d`, the one the device writes last.
    #[inline(always)]
    fn status(self, d: Reg<RxDesc, RW>) -> Reg<u8, RO> {
        // SAFETY: a byte of the 16-byte descriptor (offsets 8..14 in both layouts).
        unsafe { d.field(self.0) }
    }

    /// (length, errors) of receive descriptor `d`.
    #[inline(always)]
    fn len_errors(self, d: Reg<RxDesc, RW>) -> (u16, u8) {
        // SAFETY: a u16 at an even offset (8 or 12) and a byte, inside the 16-byte,
        // 8-aligned descriptor.
        unsafe {
            (
                d.field::<u16, RO>(self.2).read(),
                d.field::<u8, RO>(self.1).read(),
            )
        }
    }
}

impl E1000Rx {
    /// A receive ring on ring registers `rd`, its descriptors written back as `layout`
    /// says; nothing posted yet (the device's receiver is enabled first, then
    /// [`E1000Rx::refill`]).
    pub(super) fn new<H: Hal>(
        regs: &Regs,
        rd: &[Reg<u32, WO>; 5],
        layout: Layout,
    ) -> Result<E1000Rx, Error> {
        let mem = Dma::new::<H>(RING * 16, true).ok_or(Error::NoMemory)?;
        let ring = mem.array(0, RING).ok_or(Error::NoMemory)?;
        // Not zeroed: see `Hal::dma_alloc`.
        let bufs = Dma::new::<H>(RX_POOL * RX_BUF, false).ok_or(Error::NoMemory)?;
        Regs::ring(rd, mem.paddr(0), RING * 16);
        Ok(E1000Rx {
            rdt: rd[4],
            icr: regs.icr,
            icr_clear: regs.icr_clear,
            ims: regs.ims,
            imc: regs.imc,
            _mem: mem,
            ring,
            bufs,
            desc_buf: [0; RING],
            next: 0,
            tail: 0,
            free: (0..RX_POOL as u16).rev().collect(),
            state: vec![0; RX_POOL],
            frames: 0,
            bad: 0,
            doorbells: 0,
            layout,
            wake: RxWake::None,
            stats: None,
        })
    }

    /// Sets how a frame wakes this side's core.
    pub(super) fn set_wake(&mut self, wake: RxWake) {
        self.wake = wake;
    }

    /// Makes this side the one that reads and reports the device's statistics registers
    /// (one side per device).
    pub(super) fn count_device(&mut self, regs: &Regs) {
        self.stats = Some(DeviceStats::new(regs));
    }

    /// The device's statistics, if this side reports them (tests).
    #[cfg(test)]
    pub(super) fn device_stats(&self) -> Option<&DeviceStats> {
        self.stats.as_ref()
    }

    /// Arms and disarms an [`RxWake::Msi`] wake-up on other cause registers than ICR,
    /// IMS and IMC: (cause, write 1 to clear; mask set; mask clear), the 82576's EICR,
    /// EIMS and EIMC in its MSI-X mode.
    pub(super) fn set_cause_regs(
        &mut self,
        clear: Reg<u32, WO>,
        set: Reg<u32, WO>,
        mask: Reg<u32, WO>,
    ) {
        self.icr_clear = clear;
        self.ims = set;
        self.imc = mask;
    }

    /// Whether the descriptor the driver reads next has been written back (a frame).
    fn frame_waiting(&self) -> bool {
        if self.next == self.tail {
            return false;
        }
        self.layout.status(self.ring.at(self.next)).read() & STA_DD != 0
    }
}

impl super::WakeRx for E1000Rx {
    /// Lets the device interrupt the core at the next frame; see [`Arm`].
    fn arm(&mut self) -> Arm {
        match self.wake {
            RxWake::None => return Arm::Unable,
            RxWake::Line(gsi) => {
                let _ = self.icr.read(); // read-to-clear: causes of frames already handled
                ioapic::unmask(gsi);
                self.ims.write(IMS_RX);
            }
            RxWake::Msi(_, cause) => {
                // This queue's cause only (the other queue's core arms its own): a
                // stale one cleared, so the message means a frame after this point.
                self.icr_clear.write(cause);
                self.ims.write(cause);
            }
        }
        fence(Ordering::SeqCst);
        if self.frame_waiting() {
            self.disarm();
            Arm::Pending
        } else {
            Arm::Armed
        }
    }

    /// Interrupts off again, the line lowered.
    fn disarm(&mut self) {
        match self.wake {
            RxWake::None => {}
            RxWake::Line(gsi) => {
                self.imc.write(0xFFFF_FFFF);
                ioapic::mask(gsi);
                let _ = self.icr.read();
            }
            RxWake::Msi(_, cause) => self.imc.write(cause),
        }
    }

    fn wake(&self) -> super::Wake {
        match self.wake {
            RxWake::None => super::Wake::None,
            RxWake::Line(g) => super::Wake::Line(g),
            RxWake::Msi(e, _) => super::Wake::Msi(e),
        }
    }
}

#[cfg(test)]
impl E1000Rx {
    /// Whether `b` lies wholly inside this side's buffers (the 82574's tests).
    pub(super) fn holds(&self, b: &[u8]) -> bool {
        self.bufs.holds(b)
    }

    /// (frames, bad completions, doorbells) so far.
    pub(super) fn tally(&self) -> (u64, u64, u64) {
        (self.frames, self.bad, self.doorbells)
    }

    /// The descriptor the driver reads next.
    pub(super) fn next_index(&self) -> usize {
        self.next
    }
}

impl E1000Rx {
    fn posted(&self) -> usize {
        (self.tail + RING - self.next) % RING
    }

    /// Gives free buffers to the device; one RDT write for the whole batch.
    pub(super) fn refill(&mut self) {
        let before = self.tail;
        while self.posted() < RING - 1 {
            let Some(b) = self.free.pop() else { break };
            self.state[b as usize] = 1;
            self.desc_buf[self.tail] = b;
            // A descriptor the device does not own (outside [RDH, RDT) until RDT moves
            // past it below).
            self.ring.at(self.tail).write(RxDesc {
                addr: self.bufs.paddr(b as usize * RX_BUF),
                ..RxDesc::default()
            });
            self.tail = (self.tail + 1) % RING;
        }
        if self.tail != before {
            fence(Ordering::Release);
            self.rdt.write(self.tail as u32);
            self.doorbells += 1;
        }
    }
}

impl RxRing for E1000Rx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        let room = RING - 1 - self.posted();
        if room > 0 && (self.free.len() >= RX_BATCH || self.posted() < RX_LOW) {
            self.refill();
        }
        let mut n = 0;
        while n < out.len() && self.next != self.tail {
            // The device writes a descriptor back status first (DD), then, after a
            // fence, the other fields, so a descriptor being written is never read half
            // old (Linux: dma_rmb() after DD). The fields are checked below.
            let at = self.ring.at(self.next);
            let status = self.layout.status(at).read();
            if status & STA_DD == 0 {
                break;
            }
            fence(Ordering::Acquire);
            let (len, errors) = self.layout.len_errors(at);
            let b = self.desc_buf[self.next];
            self.next = (self.next + 1) % RING;
            let len = len as usize;
            if status & STA_EOP == 0 || errors & FRAME_ERR != 0 || len == 0 || len > RX_BUF {
                self.bad += 1;
                self.state[b as usize] = 0;
                self.free.push(b);
                continue;
            }
            self.state[b as usize] = 2;
            out[n] = RxFrame {
                buf: b as u32,
                len: len as u32,
            };
            n += 1;
        }
        self.frames += n as u64;
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        if f.buf as usize >= RX_POOL {
            return &[];
        }
        let len = (f.len as usize).min(RX_BUF);
        // SAFETY: a loaned buffer is in no descriptor, so the device does not write it;
        // the pool's bounds are checked by `bytes`.
        unsafe { self.bufs.bytes(f.buf as usize * RX_BUF, len) }.unwrap_or(&[])
    }

    fn recycle(&mut self, f: RxFrame) {
        let b = f.buf as usize;
        if b < RX_POOL && self.state[b] == 2 {
            self.state[b] = 0;
            self.free.push(b as u16);
        }
    }
}

impl<H: Hal> E1000Tx<H> {
    /// A transmit ring on ring registers `td` (the transmitter is enabled apart, by
    /// [`Regs::enable_tx`]).
    pub(super) fn new(td: &[Reg<u32, WO>; 5]) -> Result<E1000Tx<H>, Error> {
        let mem = Dma::new::<H>(RING * 16, true).ok_or(Error::NoMemory)?;
        let ring = mem.array(0, RING).ok_or(Error::NoMemory)?;
        let slots = Dma::new::<H>(TX_SLOTS * TX_SLOT, true).ok_or(Error::NoMemory)?;
        Regs::ring(td, mem.paddr(0), RING * 16);
        Ok(E1000Tx {
            tdt: td[4],
            _mem: mem,
            ring,
            slots,
            tail: 0,
            written_tail: 0,
            used: 0,
            in_flight: VecDeque::with_capacity(TX_SLOTS),
            free_slots: (0..TX_SLOTS as u16).rev().collect(),
            current: None,
            frames: 0,
            full: 0,
            doorbells: 0,
            tso: false,
            tso_frames: 0,
            advanced: false,
            _hal: PhantomData,
        })
    }

    /// Frees the frames the device has sent (DD on their last descriptor), oldest first.
    fn reclaim(&mut self) {
        while let Some(&(last, ndesc, slot)) = self.in_flight.front() {
            // The status byte is written by the device: only DD is looked at.
            // SAFETY: `status` is TxDesc's u8 field at this offset.
            let st = unsafe {
                self.ring
                    .at(last as usize)
                    .field::<u8, RO>(offset_of!(TxDesc, status))
                    .read()
            };
            if st & STA_DD == 0 {
                break;
            }
            self.in_flight.pop_front();
            self.used -= ndesc as usize;
            self.free_slots.push(slot);
        }
    }

    fn push(&mut self, d: TxDesc) -> u16 {
        let i = self.tail;
        // A free descriptor (counted in `used` from now on).
        self.ring.at(i).write(d);
        self.tail = (i + 1) % RING;
        self.used += 1;
        i as u16
    }

    /// Offers `post_tso` (TCP segmentation: context and data descriptors).
    pub(super) fn set_tso(&mut self, on: bool) {
        self.tso = on;
    }

    /// Posts every frame as advanced descriptors (the 82576's): QEMU's igb takes a legacy
    /// descriptor only as the advanced fields it happens to match, and keeps the offload
    /// request of the last advanced frame for it (`igb_process_tx_desc` updates
    /// `first_cmd_type_len` on advanced data descriptors only): after a segmented frame, a
    /// legacy ARP reply would be "segmented" and dropped. Linux igb uses nothing else.
    pub(super) fn set_advanced(&mut self) {
        self.advanced = true;
    }

    /// A data descriptor for `len` bytes at `addr`: legacy (`cmd` its command: EOP, RS)
    /// or, on an 82576, advanced (DEXT, DTYP data, IFCS; `paylen` in the offload field:
    /// the frame's length, or for a segmentation its TCP payload's; TSE and the checksum
    /// insertion with `tse`: `Some(v6)`, the TCP checksum, and IPv4's unless `v6`).
    fn data(&self, addr: u64, len: usize, cmd: u8, paylen: usize, tse: Option<bool>) -> TxDesc {
        if !self.advanced {
            return TxDesc {
                addr,
                len: len as u16,
                cmd: cmd | CMD_IFCS,
                ..TxDesc::default()
            };
        }
        let popts = match tse {
            Some(false) => ADV_POPTS_IXSM_TXSM,
            Some(true) => ADV_POPTS_TXSM,
            None => 0,
        };
        let olinfo = (paylen as u32) << 14 | popts << 8;
        TxDesc {
            addr,
            len: len as u16,
            cso: ADV_DTYP_DATA,
            cmd: CMD_DEXT | CMD_IFCS | cmd | if tse.is_some() { ADV_CMD_TSE } else { 0 },
            status: olinfo as u8,
            css: (olinfo >> 8) as u8,
            special: (olinfo >> 16) as u16,
        }
    }

    /// Gives back slot `s`, taken for a frame that cannot be posted, and counts the
    /// refusal.
    fn refuse(&mut self, s: u16) -> Result<(), TxFull> {
        self.free_slots.push(s);
        self.full += 1;
        Err(TxFull)
    }

    /// Frames posted for segmentation so far.
    #[cfg(test)]
    pub(super) fn tso_frames(&self) -> u64 {
        self.tso_frames
    }
}

/// Extended transmit descriptors (82574 datasheet §7.3.2): DCMD.DEXT in the command byte;
/// DTYP (data = 1, context = 0) in the high nibble of byte 10.
const CMD_DEXT: u8 = 0x20;
const CMD_TSE: u8 = 0x04;
const DTYP_DATA: u8 = 0x10;
/// Context TUCMD: IPv4, TCP.
const TUCMD_IP: u8 = 0x02;
const TUCMD_TCP: u8 = 0x01;
/// Data POPTS: insert the IPv4 (IXSM) and TCP (TXSM) checksums; over IPv6 the TCP one
/// alone (IPv6 has no header checksum; Linux `e1000_tso` sets IXSM for IPv4 only).
const POPTS_IXSM_TXSM: u8 = 0x03;
const POPTS_TXSM: u8 = 0x02;
/// Advanced transmit descriptors (82576 datasheet §7.2.2.3, §7.2.2.5; Linux igb
/// `igb_tso`, `igb_tx_olinfo_status`): DTYP (data 3, context 2) in the high nibble of
/// byte 10, DEXT as on the 82574, TSE in the command byte's top bit; the offload field
/// (olinfo_status, bytes 12-15): POPTS at bit 8, PAYLEN from bit 14.
const ADV_DTYP_DATA: u8 = 0x30;
const ADV_DTYP_CONTEXT: u8 = 0x20;
const ADV_CMD_TSE: u8 = 0x80;
const ADV_POPTS_IXSM_TXSM: u32 = 0x03;
const ADV_POPTS_TXSM: u32 = 0x02;
/// Advanced context TUCMD: IPv4 (bit 10), TCP (L4T 01, bit 11); over IPv6 TCP alone
/// (Linux `igb_tso` sets IPV4 for an IPv4 frame only).
const ADV_TUCMD_IPV4: u16 = 1 << 10;
const ADV_TUCMD_TCP: u16 = 1 << 11;

/// The advanced context descriptor of a segmentation (82576, Linux `igb_tso`): MAC and IP
/// header lengths, IPv4 (unless `v6`) and TCP, the TCP header's length and the MSS
/// (context index 0).
fn tso_context_advanced(tso: Tso, v6: bool) -> TxDesc {
    let (l4, hl) = (tso.l4_offset as u64, tso.header_len as u64);
    TxDesc {
        // VLAN_MACIP_LENS: IPLEN (bits 8:0), MACLEN (15:9); SEQNUM_SEED 0.
        addr: (l4 - 14) | 14 << 9,
        // TYPE_TUCMD_MLHL: TUCMD in bits 11:9 ..., DTYP context, DEXT.
        len: if v6 {
            ADV_TUCMD_TCP
        } else {
            ADV_TUCMD_IPV4 | ADV_TUCMD_TCP
        },
        cso: ADV_DTYP_CONTEXT,
        cmd: CMD_DEXT,
        // MSS_L4LEN_IDX: IDX 0 (bits 6:4), L4LEN (15:8), MSS (31:16).
        status: 0,
        css: (hl - l4) as u8,
        special: tso.mss,
    }
}

/// The TCP/IP context descriptor of a segmentation (§7.3.1.2, Linux `e1000_tso`): where
/// the IP and TCP headers and checksums are, the payload, header length and MSS. Over
/// IPv6 (`v6`) TUCMD.IP is clear and IPCSE 0, as Linux sets them: there is no IP
/// checksum, and the device writes each segment's payload length.
fn tso_context(tso: Tso, payload: usize, v6: bool) -> TxDesc {
    let (l4, ip) = (tso.l4_offset as u64, 14u64);
    let ipcse = if v6 { 0 } else { l4 - 1 };
    TxDesc {
        // IPCSS, IPCSO, IPCSE; TUCSS, TUCSO (TUCSE 0: to the end).
        addr: ip | (ip + 10) << 8 | ipcse << 16 | l4 << 32 | (l4 + 16) << 40,
        len: payload as u16,
        cso: (payload >> 16) as u8 & 0x0F,
        cmd: CMD_DEXT | CMD_TSE | TUCMD_TCP | if v6 { 0 } else { TUCMD_IP },
        status: 0,
        css: tso.header_len as u8,
        special: tso.mss,
    }
}

/// `sum` (a folded 16-bit ones'-complement sum) less `n`, folded.
pub(super) fn ones_sub(sum: u16, n: u16) -> u16 {
    let s = sum as u32 + (!n) as u32;
    let s = (s & 0xFFFF) + (s >> 16);
    ((s & 0xFFFF) + (s >> 16)) as u16
}

impl<H: Hal> TxRing for E1000Tx<H> {
    /// One frame cut by the device (82574, `set_tso`): a context descriptor, then the head
    /// and body as extended data descriptors asking for both checksums. The engine leaves
    /// the pseudo-header sum *with* the whole TCP length in the checksum field (virtio's
    /// convention); this device adds each segment's length itself, so the whole length is
    /// taken out again here (Linux `e1000_tso` writes the sum without it). Over IPv6 (the
    /// frame's EtherType) the same, without the IPv4 header's checksum.
    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        let Some(s) = self.current.take() else {
            self.full += 1;
            return Err(TxFull);
        };
        let (l4, hl) = (tso.l4_offset as usize, tso.header_len as usize);
        let total = head_len + body.len();
        let need = if body.is_empty() { 2 } else { 3 };
        if !self.tso
            || self.used + need > RING - 1
            || head_len > TX_SLOT
            || hl > head_len
            || l4 < 14 + 20
            || l4 + 20 > hl
            || total - hl > 0xF_FFFF
            || body.len() > 0xFFFF
        {
            return self.refuse(s);
        }
        // SAFETY: slot s is not in flight (just taken from `current`): the device does not
        // read it until the descriptors below are handed over.
        let Some(h) = (unsafe { self.slots.bytes_mut(s as usize * TX_SLOT, head_len) }) else {
            return self.refuse(s);
        };
        // IPv6 with its TCP header right after the fixed one (no extension header: the
        // engine's), or IPv4.
        let v6 = h[12..14] == [0x86, 0xDD];
        if v6 && l4 != 14 + 40 {
            return self.refuse(s);
        }
        let c = l4 + 16;
        let sum = u16::from_be_bytes([h[c], h[c + 1]]);
        let fixed = ones_sub(sum, (total - l4) as u16);
        h[c..c + 2].copy_from_slice(&fixed.to_be_bytes());
        let advanced = self.advanced;
        self.push(if advanced {
            tso_context_advanced(tso, v6)
        } else {
            tso_context(tso, total - hl, v6)
        });
        let extended = |addr: u64, len: usize, cmd: u8| TxDesc {
            addr,
            len: len as u16,
            cso: DTYP_DATA,
            cmd: CMD_DEXT | CMD_TSE | CMD_IFCS | cmd,
            status: 0,
            css: if v6 { POPTS_TXSM } else { POPTS_IXSM_TXSM },
            special: 0,
        };
        let data = |t: &Self, addr: u64, len: usize, cmd: u8| {
            if advanced {
                t.data(addr, len, cmd, total - hl, Some(v6))
            } else {
                extended(addr, len, cmd)
            }
        };
        let head = self.slots.paddr(s as usize * TX_SLOT);
        let last = if body.is_empty() {
            self.push(data(self, head, head_len, CMD_EOP | CMD_RS))
        } else {
            self.push(data(self, head, head_len, 0));
            let d = data(self, H::dma_addr_static(body), body.len(), CMD_EOP | CMD_RS);
            self.push(d)
        };
        self.in_flight.push_back((last, need as u8, s));
        self.frames += 1;
        self.tso_frames += 1;
        Ok(())
    }

    fn slot(&mut self) -> Option<&mut [u8]> {
        if self.current.is_none() {
            if self.free_slots.is_empty() || self.used + 2 > RING - 1 {
                self.reclaim();
            }
            if (self.free_slots.is_empty() || self.used + 2 > RING - 1)
                && self.tail != self.written_tail
            {
                // The ring filled up within one poll round: hand the device what is
                // queued now rather than refuse frames (an extra doorbell, counted).
                self.flush();
            }
            if self.free_slots.is_empty() || self.used + 2 > RING - 1 {
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
        let need = if body.is_empty() { 1 } else { 2 };
        if self.used + need > RING - 1 || body.len() > 16 * 1024 {
            return self.refuse(s);
        }
        let head = self.slots.paddr(s as usize * TX_SLOT);
        let head_len = head_len.min(TX_SLOT);
        let total = head_len + body.len();
        let last = if body.is_empty() {
            let d = self.data(head, head_len, CMD_EOP | CMD_RS, total, None);
            self.push(d)
        } else {
            let d = self.data(head, head_len, 0, total, None);
            self.push(d);
            // The body straight from the site image: 'static and immutable; the Hal
            // says at which address the device reads it.
            let d = self.data(
                H::dma_addr_static(body),
                body.len(),
                CMD_EOP | CMD_RS,
                total,
                None,
            );
            self.push(d)
        };
        self.in_flight.push_back((last, need as u8, s));
        self.frames += 1;
        Ok(())
    }

    fn flush(&mut self) {
        if self.tail != self.written_tail {
            fence(Ordering::Release);
            self.tdt.write(self.tail as u32);
            self.written_tail = self.tail;
            self.doorbells += 1;
        }
        self.reclaim();
    }

    fn room(&mut self) -> usize {
        self.reclaim();
        // Frames of two descriptors each (head and body), one descriptor kept empty.
        let room = |t: &Self| {
            (t.free_slots.len() + usize::from(t.current.is_some()))
                .min((RING - 1).saturating_sub(t.used) / 2)
        };
        if room(self) == 0 && self.tail != self.written_tail {
            self.flush();
        }
        room(self)
    }
}

impl<H: Hal> bareweb_engine::cores::CoreQueue for E1000<H> {}

impl<H: Hal> Nic for E1000<H> {
    type Rx = E1000Rx;
    type Tx = E1000Tx<H>;

    fn split(&mut self) -> (&mut E1000Rx, &mut E1000Tx<H>) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn caps(&self) -> NicCaps {
        if self.tx.tso {
            NicCaps::default().with_tso(TSO_LIMIT).with_tso6()
        } else {
            NicCaps::default()
        }
    }

    fn counters(&self) -> NicCounters {
        super::counters::<E1000<H>>(&self.rx, &self.tx)
    }
}

impl<H: Hal> Driver for E1000<H> {
    type Error = Error;
    const NAME: &'static str = "e1000";

    fn matches(dev: &Device) -> bool {
        E1000::matches(dev)
    }

    /// One queue pair: the 82540EM has one. Its INTx line, found by probing, is routed to
    /// `wake[0]`'s core.
    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<E1000<H>>, usize), Error> {
        let mut nic = E1000::<H>::new(dev)?;
        if let Some(&apic) = with.wake.first() {
            if let Some(g) = probe_line(dev, &nic.regs, apic) {
                nic.rx.wake = RxWake::Line(g);
            }
        }
        Ok((alloc::vec![nic], 1))
    }

    fn rx_counters(rx: &E1000Rx, c: &mut NicCounters) {
        c.device_rx_frames += rx.frames;
        c.doorbells += rx.doorbells;
        c.rx_doorbells += rx.doorbells;
        c.device_rx_bad += rx.bad;
        if let Some(s) = &rx.stats {
            s.add_to(c);
        }
    }

    fn tx_counters(tx: &E1000Tx<H>, c: &mut NicCounters) {
        c.device_tx_frames += tx.frames;
        c.doorbells += tx.doorbells;
        c.device_tx_full += tx.full;
    }

    fn into_rings(self) -> (E1000Rx, E1000Tx<H>) {
        (self.rx, self.tx)
    }

    fn link(&self) -> Box<dyn LinkSense> {
        Box::new(self.link_sense())
    }

    fn multicast(&self) -> Box<dyn super::Multicast> {
        Box::new(self.multicast_filter())
    }
}

#[cfg(test)]
mod tests {
    //! The driver against `drivers::fake`'s 82540EM: a register file in host memory and
    //! descriptors written back as the device would (and as no honest device would).
    use super::super::fake::{FakeE1000, FakeHal};
    use super::*;

    const MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x57];

    /// The device reset and brought up by the driver. A thread plays the reset: it
    /// clears CTRL.RST whenever the driver sets it, as the device does when done (the
    /// driver waits a bounded time: on a loaded host the thread may not have run yet, so
    /// a NoReset is tried again).
    fn up() -> (FakeE1000, E1000<FakeHal>) {
        let mut dev = FakeE1000::default();
        dev.set_reg(RAL0, u32::from_le_bytes([MAC[0], MAC[1], MAC[2], MAC[3]]));
        dev.set_reg(RAH0, u32::from_le_bytes([MAC[4], MAC[5], 0, 0]) | 1 << 31);
        dev.set_reg(STATUS, STATUS_LU);
        let nic = dev.bring_up(|m| E1000::<FakeHal>::bring_up(Regs::new(m).unwrap()));
        (dev, nic.unwrap())
    }

    #[test]
    fn ring_setup_points_the_device_at_dma_rings() {
        let (dev, mut nic) = up();
        assert_eq!(nic.mac(), EthernetAddress(MAC));
        assert_eq!(dev.reg(IMC), 0xFFFF_FFFF, "interrupts masked");
        assert_eq!(dev.reg(CTRL) & (CTRL_SLU | CTRL_RST), CTRL_SLU);
        assert_eq!(dev.reg(RCTL), RCTL_EN | RCTL_BAM | RCTL_SECRC);
        assert_eq!(dev.reg(TCTL) & TCTL_EN, TCTL_EN);
        assert!((0..128).all(|i| dev.reg(MTA + 4 * i) == 0));
        // Both rings: DMA memory of 256 descriptors, head and tail as the driver set them:
        // every receive descriptor but one posted, with one RDT write.
        for base in [RDBAL, TDBAL] {
            let (at, n) = dev.ring_at(base);
            assert_eq!(n, RING as u32);
            assert!(FakeHal::translate(at, RING * 16).is_some());
        }
        assert_eq!((dev.reg(RDT), dev.reg(TDT)), ((RING - 1) as u32, 0));
        let (rx, _) = nic.split();
        assert_eq!((rx.posted(), rx.doorbells), (RING - 1, 1));
        // The link from STATUS.LU.
        let mut link = nic.link_sense();
        assert!(link.link_up());
    }

    /// IPv6's groups set in the multicast table: all-nodes (33:33:00:00:00:01, hash
    /// 0x010: word 0, bit 16) and a solicited-node group (33:33:ff:53:40:48, hash 0x484:
    /// word 36, bit 4); a group no longer listed is cleared, and words that do not change
    /// are not written again.
    #[test]
    fn the_multicast_table_holds_the_groups_listed_and_no_others() {
        use crate::drivers::Driver;
        let (mut dev, nic) = up();
        let all_nodes = EthernetAddress([0x33, 0x33, 0, 0, 0, 1]);
        let solicited = EthernetAddress([0x33, 0x33, 0xff, 0x53, 0x40, 0x48]);
        assert_eq!((mta_hash(&all_nodes), mta_hash(&solicited)), (0x010, 0x484));
        let mut f = nic.multicast();
        f.set(&[all_nodes, solicited, all_nodes]);
        let words = |dev: &FakeE1000| (0..128).map(|i| dev.reg(MTA + 4 * i)).collect::<Vec<_>>();
        let mut want = vec![0u32; 128];
        want[0] = 1 << 16;
        want[36] = 1 << 4;
        assert_eq!(words(&dev), want);
        // Written only where it changes: a stale bit the driver never set stays.
        dev.set_reg(MTA + 4 * 100, 7);
        f.set(&[all_nodes]);
        want[36] = 0;
        want[100] = 7;
        assert_eq!(words(&dev), want);
    }

    #[test]
    fn a_frame_goes_out_and_a_frame_comes_in() {
        static BODY: [u8; 1000] = [1; 1000];
        let (mut dev, mut nic) = up();
        let (rx, tx) = nic.split();
        for _ in 0..3 {
            tx.slot().unwrap()[..54].fill(2);
            tx.post(54, &BODY).unwrap();
        }
        tx.slot().unwrap()[..60].fill(3);
        tx.post(60, &[]).unwrap();
        tx.flush();
        assert_eq!((dev.reg(TDT), tx.doorbells), (7, 1));
        tx.flush();
        assert_eq!(tx.doorbells, 1, "nothing new: no tail write");
        let out = dev.transmitted();
        assert_eq!(out.len(), 4);
        assert_eq!(out[0][..54], [2; 54]);
        assert_eq!(out[0][54..], BODY);
        assert_eq!(out[3], [3; 60]);
        tx.flush();
        assert_eq!((tx.used, tx.in_flight.len()), (0, 0), "all reclaimed");
        // In.
        let frame: Vec<u8> = (0..1514).map(|i| i as u8).collect();
        assert!(dev.deliver(&frame));
        let mut got = [RxFrame { buf: 0, len: 0 }; 16];
        assert_eq!(rx.burst(&mut got), 1);
        assert_eq!(rx.bytes(&got[0]), &frame[..]);
        assert!(rx.bufs.holds(rx.bytes(&got[0])));
        rx.recycle(got[0]);
        assert_eq!((rx.frames, rx.bad), (1, 0));
    }

    #[test]
    fn receive_drops_bad_descriptors_and_refills_in_batches() {
        let (mut dev, mut nic) = up();
        let (rx, _) = nic.split();
        dev.write_back_rx(0, 60, STA_DD | STA_EOP, 0);
        dev.write_back_rx(1, 60, STA_DD, 0); // no EOP
        dev.write_back_rx(2, 60, STA_DD | STA_EOP, 0x01); // CRC error
        dev.write_back_rx(3, 0, STA_DD | STA_EOP, 0);
        dev.write_back_rx(4, 9000, STA_DD | STA_EOP, 0); // length past the buffer
        dev.write_back_rx(5, 1514, STA_DD | STA_EOP, 0x20); // TCP checksum bit: engine checks
        dev.write_back_rx(6, (RX_BUF + 1) as u16, STA_DD | STA_EOP, 0); // one past
        let mut out = [RxFrame { buf: 0, len: 0 }; 16];
        let n = rx.burst(&mut out);
        assert_eq!(n, 2);
        assert_eq!((out[0].len, out[1].len), (60, 1514));
        assert_eq!(rx.bad, 5);
        assert!(out[..n].iter().all(|f| rx.bufs.holds(rx.bytes(f))));
        // Nothing more until the device writes DD.
        assert_eq!(rx.burst(&mut out), 0);
        rx.recycle(out[0]);
        rx.recycle(out[0]);
        // Fewer than RX_BATCH free and the ring far from empty: no RDT write yet.
        let bells = rx.doorbells;
        rx.burst(&mut out);
        assert_eq!(rx.doorbells, bells);
    }

    #[test]
    fn a_lying_device_cannot_move_the_receive_side_past_its_tail() {
        let (mut dev, mut nic) = up();
        let (rx, _) = nic.split();
        // DD on every descriptor, the one never posted (past RDT) too, and a head
        // register far past the ring: the driver reads only up to its own tail.
        for i in 0..RING as u32 {
            dev.write_back_rx(i, 60, STA_DD | STA_EOP, 0);
        }
        dev.set_reg(RDH, 100_000);
        let mut out = [RxFrame { buf: 0, len: 0 }; 2 * RING];
        let n = rx.burst(&mut out);
        assert_eq!((n, rx.bad), (RING - 1, 0));
        let mut bufs: Vec<u32> = out[..n].iter().map(|f| f.buf).collect();
        bufs.sort();
        bufs.dedup();
        assert_eq!(bufs.len(), n, "each buffer lent once");
        assert_eq!(rx.burst(&mut out[n..]), 0);
        // Lent buffers are not posted again until recycled; views of others are empty.
        assert_eq!(rx.bytes(&RxFrame { buf: 9999, len: 60 }), &[] as &[u8]);
        for f in &out[..n] {
            rx.recycle(*f);
        }
        // It keeps working: the refill posts them (one RDT write), an honest frame
        // arrives in the slot after the old tail.
        let before = rx.doorbells;
        assert_eq!(rx.burst(&mut out), 0);
        assert_eq!(rx.doorbells, before + 1);
        dev.rdh = (RING - 1) as u32;
        assert!(dev.deliver(&[5; 100]));
        assert_eq!(rx.burst(&mut out), 1);
        assert_eq!(rx.bytes(&out[0]), &[5; 100][..]);
    }

    #[test]
    fn statistics_registers_are_read_at_most_once_a_second_and_added_up_in_64_bits() {
        let (mut dev, nic) = up();
        let regs = [
            GPRC,
            GPTC,
            MPC,
            RNBC,
            CRCERRS,
            GORCL,
            GORCL + 4,
            GOTCL,
            GOTCL + 4,
        ];
        for (r, v) in regs.iter().zip([5, 4, 3, 2, 1, 0xFFFF_FFF0, 1, 700, 0]) {
            dev.set_reg(*r, v);
        }
        let s = nic
            .rx
            .device_stats()
            .expect("the 82540EM's one side reports them");
        let hz = 1_000_000;
        let mut c = NicCounters::default();
        s.add_at(5, hz, &mut c);
        assert_eq!((c.hw_rx_frames, c.hw_tx_frames, c.hw_rx_missed), (5, 4, 3));
        assert_eq!((c.hw_rx_no_buffer, c.hw_rx_crc_errors), (2, 1));
        assert_eq!((c.hw_rx_octets, c.hw_tx_octets), (0x1_FFFF_FFF0, 700));
        // The registers cleared when read; the device counts on.
        for r in regs {
            dev.set_reg(r, 0);
        }
        dev.set_reg(GPRC, 7);
        dev.set_reg(GORCL, 0x20);
        // Within the second: the totals as they were, no register read.
        let mut again = NicCounters::default();
        s.add_at(5 + hz - 1, hz, &mut again);
        assert_eq!(again, c);
        // A second on: read and added, in 64 bits.
        let mut later = NicCounters::default();
        s.add_at(5 + hz, hz, &mut later);
        assert_eq!((later.hw_rx_frames, later.hw_tx_frames), (12, 4));
        assert_eq!(later.hw_rx_octets, 0x2_0000_0010);
        // What the queue pair reports carries them (the registers cleared again).
        for r in regs {
            dev.set_reg(r, 0);
        }
        assert_eq!(nic.counters().hw_rx_frames, 12);
    }

    #[test]
    fn a_lying_device_on_transmit_frees_only_what_it_sent() {
        static BODY: [u8; 200] = [4; 200];
        let (mut dev, mut nic) = up();
        let (_, tx) = nic.split();
        // DD on descriptors never posted, a head register past the ring: nothing to free.
        dev.set_reg(TDH, 100_000);
        for _ in 0..2 {
            tx.slot().unwrap()[..54].fill(6);
            tx.post(54, &BODY).unwrap();
        }
        let (ring, _) = dev.ring_at(TDBAL);
        for i in 4..RING as u64 {
            FakeHal::write(ring + 16 * i + 12, &[STA_DD]);
        }
        tx.reclaim();
        assert_eq!((tx.used, tx.in_flight.len()), (4, 2));
        // DD on a frame's first descriptor but not its last: not sent yet.
        FakeHal::write(ring + 12, &[STA_DD]);
        tx.reclaim();
        assert_eq!(tx.in_flight.len(), 2);
        // It keeps working: the device sends both, the driver frees both.
        tx.flush();
        assert_eq!(dev.transmitted().len(), 2);
        tx.reclaim();
        assert_eq!((tx.used, tx.in_flight.len()), (0, 0));
    }
}
