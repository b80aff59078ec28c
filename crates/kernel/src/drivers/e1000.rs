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
//!   does the same); buffer identities come only from the shadow.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{fence, Ordering};

use alloc::boxed::Box;
use bareweb_engine::nic::{
    LinkSense, Nic, NicCounters, RxFrame, RxRing, TxFull, TxRing, TX_HEAD_ROOM,
};
use bareweb_engine::wire::EthernetAddress;

use super::{Arm, Driver, Open};
use crate::arch::{ioapic, irq::NIC_VECTOR};
use crate::pci::{Bar, Device};

/// Intel.
pub const VENDOR: u16 = 0x8086;
/// 82540EM (QEMU's e1000), 82545EM copper, 82574L is not compatible (e1000e).
pub const DEVICES: [u16; 2] = [0x100E, 0x100F];

const CTRL: usize = 0x0000;
const STATUS: usize = 0x0008;
const EERD: usize = 0x0014;
const ICR: usize = 0x00C0;
const IMS: usize = 0x00D0;
const IMC: usize = 0x00D8;
const RCTL: usize = 0x0100;
const TCTL: usize = 0x0400;
const TIPG: usize = 0x0410;
const RDBAL: usize = 0x2800;
const RDBAH: usize = 0x2804;
const RDLEN: usize = 0x2808;
const RDH: usize = 0x2810;
const RDT: usize = 0x2818;
const TDBAL: usize = 0x3800;
const TDBAH: usize = 0x3804;
const TDLEN: usize = 0x3808;
const TDH: usize = 0x3810;
const TDT: usize = 0x3818;
const RXCSUM: usize = 0x5000;
const MTA: usize = 0x5200;
const RAL0: usize = 0x5400;
const RAH0: usize = 0x5404;

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

#[derive(Clone, Copy)]
struct Regs(*mut u8);

impl Regs {
    fn r(&self, off: usize) -> u32 {
        // SAFETY: off is one of the register offsets above, inside the 128 KiB BAR 0.
        unsafe { read_volatile(self.0.add(off).cast()) }
    }
    fn w(&self, off: usize, v: u32) {
        // SAFETY: as r.
        unsafe { write_volatile(self.0.add(off).cast(), v) }
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RxDesc {
    addr: u64,
    len: u16,
    csum: u16,
    status: u8,
    errors: u8,
    special: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct TxDesc {
    addr: u64,
    len: u16,
    cso: u8,
    cmd: u8,
    status: u8,
    css: u8,
    special: u16,
}
const _: () = assert!(core::mem::size_of::<RxDesc>() == 16 && core::mem::size_of::<TxDesc>() == 16);

fn alloc_bytes(len: usize) -> Result<*mut u8, Error> {
    alloc_area(len, true)
}

/// `len` bytes, page-aligned, zeroed only if `zeroed`: receive buffers are written by the
/// device before the driver reads any byte of them (only the length the device reports,
/// clamped to the buffer), so they are not zeroed, which under an emulator was a
/// measurable part of boot (issue 16: ~2 MiB per queue, a store per 8 bytes).
fn alloc_area(len: usize, zeroed: bool) -> Result<*mut u8, Error> {
    let layout = core::alloc::Layout::from_size_align(len, 4096).map_err(|_| Error::NoMemory)?;
    // SAFETY: non-zero size.
    let p = unsafe {
        if zeroed {
            alloc::alloc::alloc_zeroed(layout)
        } else {
            alloc::alloc::alloc(layout)
        }
    };
    if p.is_null() {
        Err(Error::NoMemory)
    } else {
        Ok(p)
    }
}

/// Receive side.
pub struct E1000Rx {
    regs: Regs,
    ring: *mut RxDesc,
    bufs: *mut u8,
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
    /// The INTx line (GSI) routed to the core that owns this side, if any.
    line: Option<u32>,
}

/// Transmit side.
pub struct E1000Tx {
    regs: Regs,
    ring: *mut TxDesc,
    slots: *mut u8,
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
}

// SAFETY: an E1000Rx owns its descriptor ring and buffers alone (nothing else points at
// them) and after bring-up writes only RDT; moving it to another core moves that ownership.
unsafe impl Send for E1000Rx {}
// SAFETY: as E1000Rx: its ring and head slots are its own, and it writes only TDT.
unsafe impl Send for E1000Tx {}

/// The link of an 82540EM: STATUS.LU, one register read (QEMU clears it on `set_link off`).
#[derive(Clone, Copy)]
pub struct E1000Link(Regs);

// SAFETY: reading STATUS has no side effect and touches no memory the queue pairs own; the
// register block stays mapped for the life of the program.
unsafe impl Send for E1000Link {}

impl LinkSense for E1000Link {
    fn link_up(&mut self) -> bool {
        self.0.r(STATUS) & STATUS_LU != 0
    }
}

/// An 82540EM as one engine queue pair.
pub struct E1000 {
    rx: E1000Rx,
    tx: E1000Tx,
    mac: EthernetAddress,
}

impl E1000 {
    /// The device's link, as [`Driver::link`] reads it.
    pub fn link_sense(&self) -> E1000Link {
        E1000Link(self.rx.regs)
    }

    /// Whether `dev` is an 8254x we drive.
    pub fn matches(dev: &Device) -> bool {
        dev.vendor == VENDOR && DEVICES.contains(&dev.device)
    }

    /// Resets the device and brings up both rings, interrupts masked.
    pub fn new(dev: &Device) -> Result<E1000, Error> {
        let base = match dev.bars[0] {
            Bar::Mem { addr, size, .. } if addr != 0 && size >= 0x20000 => addr as *mut u8,
            _ => return Err(Error::NoRegisters),
        };
        dev.enable();
        let regs = Regs(base);
        regs.w(IMC, 0xFFFF_FFFF);
        regs.w(CTRL, regs.r(CTRL) | CTRL_RST);
        let mut spins = 0;
        while regs.r(CTRL) & CTRL_RST != 0 {
            spins += 1;
            if spins > 1_000_000 {
                return Err(Error::NoReset);
            }
        }
        regs.w(IMC, 0xFFFF_FFFF);
        regs.w(
            CTRL,
            (regs.r(CTRL) | CTRL_SLU | CTRL_ASDE) & !(1 << 3 | 1 << 31 | 1 << 7 | 1 << 30),
        );
        let mac = read_mac(regs);
        for i in 0..128 {
            regs.w(MTA + 4 * i, 0);
        }
        let rx = E1000Rx::new(regs)?;
        let tx = E1000Tx::new(regs)?;
        Ok(E1000 { rx, tx, mac })
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
fn probe_line(dev: &Device, regs: &Regs, apic: u32) -> Option<u32> {
    const ICS: usize = 0x00C8;
    let mut cand = [0u32; 13];
    let mut n = 0;
    let firmware = dev.intx_line().map(crate::acpi::isa_irq);
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
    regs.w(IMC, 0xFFFF_FFFF);
    let _ = regs.r(ICR);
    cand.iter().for_each(|&g| ioapic::unmask(g));
    // Lines already raised by someone else.
    let mut others = [false; 13];
    for (i, &g) in cand.iter().enumerate() {
        others[i] = busy(g);
    }
    regs.w(IMS, IMS_RX);
    regs.w(ICS, 1 << 7);
    let end = crate::arch::cpu::rdtsc() + crate::clock::tsc_hz() / 10;
    let mut found = None;
    while found.is_none() && crate::arch::cpu::rdtsc() < end {
        found = cand
            .iter()
            .enumerate()
            .find(|&(i, &g)| !others[i] && busy(g))
            .map(|(_, &g)| g);
    }
    regs.w(IMC, 0xFFFF_FFFF);
    let _ = regs.r(ICR);
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

fn read_mac(regs: Regs) -> EthernetAddress {
    let lo = regs.r(RAL0);
    let hi = regs.r(RAH0);
    if hi & (1 << 31) != 0 && (lo != 0 || hi & 0xFFFF != 0) {
        let b = lo.to_le_bytes();
        let h = hi.to_le_bytes();
        return EthernetAddress([b[0], b[1], b[2], b[3], h[0], h[1]]);
    }
    // EEPROM words 0..3 hold the address.
    let mut m = [0u8; 6];
    for w in 0..3u32 {
        regs.w(EERD, 1 | w << 8);
        let mut v = 0;
        for _ in 0..100_000 {
            v = regs.r(EERD);
            if v & (1 << 4) != 0 {
                break;
            }
        }
        let word = (v >> 16) as u16;
        m[2 * w as usize] = word as u8;
        m[2 * w as usize + 1] = (word >> 8) as u8;
    }
    regs.w(RAL0, u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
    regs.w(RAH0, u32::from_le_bytes([m[4], m[5], 0, 0]) | 1 << 31);
    EthernetAddress(m)
}

impl E1000Rx {
    fn new(regs: Regs) -> Result<E1000Rx, Error> {
        let ring = alloc_bytes(RING * 16)?.cast::<RxDesc>();
        let bufs = alloc_area(RX_POOL * RX_BUF, false)?;
        regs.w(RDBAL, ring as u64 as u32);
        regs.w(RDBAH, (ring as u64 >> 32) as u32);
        regs.w(RDLEN, (RING * 16) as u32);
        regs.w(RDH, 0);
        regs.w(RDT, 0);
        let mut rx = E1000Rx {
            regs,
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
            line: None,
        };
        regs.w(RXCSUM, 0);
        // BSIZE 00 = 2048-byte buffers; broadcast accepted; CRC stripped.
        regs.w(RCTL, RCTL_EN | RCTL_BAM | RCTL_SECRC);
        rx.refill();
        Ok(rx)
    }

    /// Whether the descriptor the driver reads next has been written back (a frame).
    fn frame_waiting(&self) -> bool {
        if self.next == self.tail {
            return false;
        }
        // SAFETY: next < RING, a descriptor of our ring; only the status byte is read.
        let st = unsafe { read_volatile(core::ptr::addr_of!((*self.ring.add(self.next)).status)) };
        st & STA_DD != 0
    }
}

impl super::WakeRx for E1000Rx {
    /// Lets the device interrupt the core at the next frame; see [`Arm`].
    fn arm(&mut self) -> Arm {
        let Some(gsi) = self.line else {
            return Arm::Unable;
        };
        let _ = self.regs.r(ICR); // read-to-clear: causes of frames already handled
        ioapic::unmask(gsi);
        self.regs.w(IMS, IMS_RX);
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
        if let Some(gsi) = self.line {
            self.regs.w(IMC, 0xFFFF_FFFF);
            ioapic::mask(gsi);
            let _ = self.regs.r(ICR);
        }
    }

    fn wake(&self) -> super::Wake {
        self.line.map_or(super::Wake::None, super::Wake::Line)
    }
}

impl E1000Rx {
    fn posted(&self) -> usize {
        (self.tail + RING - self.next) % RING
    }

    /// Gives free buffers to the device; one RDT write for the whole batch.
    fn refill(&mut self) {
        let before = self.tail;
        while self.posted() < RING - 1 {
            let Some(b) = self.free.pop() else { break };
            self.state[b as usize] = 1;
            self.desc_buf[self.tail] = b;
            let d = RxDesc {
                addr: self.bufs as u64 + b as u64 * RX_BUF as u64,
                len: 0,
                csum: 0,
                status: 0,
                errors: 0,
                special: 0,
            };
            // SAFETY: tail < RING: a descriptor of the ring we own and the device does
            // not (it lies outside [RDH, RDT) until RDT moves past it below).
            unsafe { write_volatile(self.ring.add(self.tail), d) };
            self.tail = (self.tail + 1) % RING;
        }
        if self.tail != before {
            fence(Ordering::Release);
            self.regs.w(RDT, self.tail as u32);
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
            let at = self.ring.wrapping_add(self.next);
            // SAFETY: next < RING, a descriptor of our ring. The device writes it back:
            // status first (DD), then, after a fence, the other fields, so a descriptor
            // being written is never read half old (Linux: dma_rmb() after DD).
            let status = unsafe { read_volatile(core::ptr::addr_of!((*at).status)) };
            if status & STA_DD == 0 {
                break;
            }
            fence(Ordering::Acquire);
            // SAFETY: as above; the fields are checked below.
            let (len, errors) = unsafe {
                (
                    read_volatile(core::ptr::addr_of!((*at).len)),
                    read_volatile(core::ptr::addr_of!((*at).errors)),
                )
            };
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
        // SAFETY: buffer f.buf lies in the pool we allocated; len is clamped to it; a
        // loaned buffer is in no descriptor, so the device does not write it.
        unsafe { core::slice::from_raw_parts(self.bufs.add(f.buf as usize * RX_BUF), len) }
    }

    fn recycle(&mut self, f: RxFrame) {
        let b = f.buf as usize;
        if b < RX_POOL && self.state[b] == 2 {
            self.state[b] = 0;
            self.free.push(b as u16);
        }
    }
}

impl E1000Tx {
    fn new(regs: Regs) -> Result<E1000Tx, Error> {
        let ring = alloc_bytes(RING * 16)?.cast::<TxDesc>();
        let slots = alloc_bytes(TX_SLOTS * TX_SLOT)?;
        regs.w(TDBAL, ring as u64 as u32);
        regs.w(TDBAH, (ring as u64 >> 32) as u32);
        regs.w(TDLEN, (RING * 16) as u32);
        regs.w(TDH, 0);
        regs.w(TDT, 0);
        regs.w(TIPG, 10 | 8 << 10 | 6 << 20);
        regs.w(TCTL, TCTL_EN | TCTL_PSP | 0x0F << 4 | 0x40 << 12);
        Ok(E1000Tx {
            regs,
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
        })
    }

    /// Frees the frames the device has sent (DD on their last descriptor), oldest first.
    fn reclaim(&mut self) {
        while let Some(&(last, ndesc, slot)) = self.in_flight.front() {
            // SAFETY: last < RING; the status byte is written by the device: only DD is
            // looked at.
            let st = unsafe {
                read_volatile(core::ptr::addr_of!((*self.ring.add(last as usize)).status))
            };
            if st & STA_DD == 0 {
                break;
            }
            self.in_flight.pop_front();
            self.used -= ndesc as usize;
            self.free_slots.push(slot);
        }
    }

    fn write_desc(&mut self, addr: u64, len: usize, cmd: u8) -> u16 {
        let i = self.tail;
        let d = TxDesc {
            addr,
            len: len as u16,
            cso: 0,
            cmd,
            status: 0,
            css: 0,
            special: 0,
        };
        // SAFETY: i < RING, a free descriptor (counted in `used` from now on).
        unsafe { write_volatile(self.ring.add(i), d) };
        self.tail = (i + 1) % RING;
        self.used += 1;
        i as u16
    }
}

impl TxRing for E1000Tx {
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
        // SAFETY: slot s is not in flight and lies inside the slot area.
        Some(unsafe { core::slice::from_raw_parts_mut(self.slots.add(s * TX_SLOT), TX_SLOT) })
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        let Some(s) = self.current.take() else {
            self.full += 1;
            return Err(TxFull);
        };
        let need = if body.is_empty() { 1 } else { 2 };
        if self.used + need > RING - 1 || body.len() > 16 * 1024 {
            self.free_slots.push(s);
            self.full += 1;
            return Err(TxFull);
        }
        let head = self.slots as u64 + s as u64 * TX_SLOT as u64;
        let head_len = head_len.min(TX_SLOT);
        let last = if body.is_empty() {
            self.write_desc(head, head_len, CMD_EOP | CMD_IFCS | CMD_RS)
        } else {
            self.write_desc(head, head_len, CMD_IFCS);
            // The body straight from the site image: identity-mapped and 'static.
            self.write_desc(
                body.as_ptr() as u64,
                body.len(),
                CMD_EOP | CMD_IFCS | CMD_RS,
            )
        };
        self.in_flight.push_back((last, need as u8, s));
        self.frames += 1;
        Ok(())
    }

    fn flush(&mut self) {
        if self.tail != self.written_tail {
            fence(Ordering::Release);
            self.regs.w(TDT, self.tail as u32);
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

impl bareweb_engine::cores::CoreQueue for E1000 {}

impl Nic for E1000 {
    type Rx = E1000Rx;
    type Tx = E1000Tx;

    fn split(&mut self) -> (&mut E1000Rx, &mut E1000Tx) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn counters(&self) -> NicCounters {
        super::counters::<E1000>(&self.rx, &self.tx)
    }
}

impl Driver for E1000 {
    type Error = Error;
    const NAME: &'static str = "e1000";

    fn matches(dev: &Device) -> bool {
        E1000::matches(dev)
    }

    /// One queue pair: the 82540EM has one. Its INTx line, found by probing, is routed to
    /// `wake[0]`'s core.
    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<E1000>, usize), Error> {
        let mut nic = E1000::new(dev)?;
        if let Some(&apic) = with.wake.first() {
            nic.rx.line = probe_line(dev, &nic.rx.regs, apic);
        }
        Ok((alloc::vec![nic], 1))
    }

    fn rx_counters(rx: &E1000Rx, c: &mut NicCounters) {
        c.device_rx_frames += rx.frames;
        c.doorbells += rx.doorbells;
        c.rx_doorbells += rx.doorbells;
        c.device_rx_bad += rx.bad;
    }

    fn tx_counters(tx: &E1000Tx, c: &mut NicCounters) {
        c.device_tx_frames += tx.frames;
        c.doorbells += tx.doorbells;
        c.device_tx_full += tx.full;
    }

    fn into_rings(self) -> (E1000Rx, E1000Tx) {
        (self.rx, self.tx)
    }

    fn link(&self) -> Box<dyn LinkSense> {
        Box::new(self.link_sense())
    }
}

#[cfg(test)]
mod tests {
    //! The driver against a simulated 82540EM: a register block in memory, descriptors
    //! written back by the test as the device would (and as no honest device would).
    use super::*;
    use alloc::vec::Vec;

    fn regs() -> (Regs, Vec<u32>) {
        let mut block = alloc::vec![0u32; 0x20000 / 4];
        (Regs(block.as_mut_ptr().cast()), block)
    }

    fn write_back(rx: &E1000Rx, i: usize, len: u16, status: u8, errors: u8) {
        // SAFETY: test-only: descriptor i < RING of the live ring.
        unsafe {
            let d = rx.ring.add(i);
            write_volatile(addr_of_mut!((*d).len), len);
            write_volatile(addr_of_mut!((*d).errors), errors);
            write_volatile(addr_of_mut!((*d).status), status);
        }
    }
    use core::ptr::addr_of_mut;

    #[test]
    fn receive_drops_bad_descriptors_and_refills_in_batches() {
        let (r, block) = regs();
        let mut rx = E1000Rx::new(r).unwrap();
        assert_eq!(rx.posted(), RING - 1);
        assert_eq!(block[RDT / 4], (RING - 1) as u32);
        assert_eq!(rx.doorbells, 1);
        write_back(&rx, 0, 60, STA_DD | STA_EOP, 0);
        write_back(&rx, 1, 60, STA_DD, 0); // no EOP
        write_back(&rx, 2, 60, STA_DD | STA_EOP, 0x01); // CRC error
        write_back(&rx, 3, 0, STA_DD | STA_EOP, 0);
        write_back(&rx, 4, 9000, STA_DD | STA_EOP, 0); // longer than the buffer
        write_back(&rx, 5, 1514, STA_DD | STA_EOP, 0x20); // TCP checksum bit: engine checks
        let mut out = [RxFrame { buf: 0, len: 0 }; 16];
        let n = rx.burst(&mut out);
        assert_eq!(n, 2);
        assert_eq!((out[0].len, out[1].len), (60, 1514));
        assert_eq!(rx.bad, 4);
        // Nothing more until the device writes DD.
        assert_eq!(rx.burst(&mut out), 0);
        rx.recycle(out[0]);
        rx.recycle(out[0]);
        // Fewer than RX_BATCH free and the ring far from empty: no RDT write yet.
        let bells = rx.doorbells;
        rx.burst(&mut out);
        assert_eq!(rx.doorbells, bells);
        drop(block);
    }

    #[test]
    fn transmit_uses_head_and_body_descriptors_and_one_tail_write_per_flush() {
        static BODY: [u8; 1000] = [1; 1000];
        let (r, block) = regs();
        let mut tx = E1000Tx::new(r).unwrap();
        for _ in 0..3 {
            tx.slot().unwrap()[..54].fill(2);
            tx.post(54, &BODY).unwrap();
        }
        tx.slot().unwrap();
        tx.post(60, &[]).unwrap();
        tx.flush();
        assert_eq!(block[TDT / 4], 7);
        assert_eq!(tx.doorbells, 1);
        // SAFETY: test-only reads of descriptors 0, 1 and 6 of the live ring.
        let (d0, d1, d6) = unsafe { (*tx.ring, *tx.ring.add(1), *tx.ring.add(6)) };
        assert_eq!((d0.len, d0.cmd), (54, CMD_IFCS));
        assert_eq!(
            (d1.addr, d1.len, d1.cmd),
            (BODY.as_ptr() as u64, 1000, CMD_EOP | CMD_IFCS | CMD_RS)
        );
        assert_eq!((d6.len, d6.cmd), (60, CMD_EOP | CMD_IFCS | CMD_RS));
        tx.flush();
        assert_eq!(tx.doorbells, 1, "nothing new: no tail write");
        // The device finishes the first two frames (DD on their last descriptors).
        // SAFETY: test-only writes of the status of descriptors 1 and 3.
        unsafe {
            (*tx.ring.add(1)).status = STA_DD;
            (*tx.ring.add(3)).status = STA_DD;
        }
        tx.reclaim();
        assert_eq!((tx.used, tx.in_flight.len()), (3, 2));
        drop(block);
    }
}
