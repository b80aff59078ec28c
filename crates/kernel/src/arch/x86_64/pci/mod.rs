//! PCI: configuration space through ports 0xCF8/0xCFC (mechanism #1), enumeration that
//! follows bridges from bus 0 instead of probing all 256 buses (each access is two VM
//! exits), BAR sizing, and BAR assignment for memory BARs the firmware left at 0 (qboot
//! and microvm assign none; SeaBIOS does and its choice is kept).
//!
//! Unassigned memory BARs get addresses from [`MMIO_WINDOW`], inside the PCI hole of
//! QEMU's pc and q35 machines (which ends at 0xFEC0_0000, the I/O APIC) and inside our
//! identity map (uncached there). 64-bit BARs are placed below 4 GiB too. A BAR the
//! firmware put above 4 GiB (UEFI firmware does: OVMF's 64-bit window) is kept there and
//! identity-mapped uncached ([`crate::arch::paging::map_mmio`]).

use core::fmt;

pub mod msix;

use crate::arch::cpu::{inl, outl};

/// Where unassigned memory BARs are put: [start, end).
pub const MMIO_WINDOW: (u64, u64) = (0xE000_0000, 0xFE00_0000);

/// A function's address on the bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address {
    /// Bus.
    pub bus: u8,
    /// Device (0..32).
    pub dev: u8,
    /// Function (0..8).
    pub func: u8,
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02x}:{:02x}.{}", self.bus, self.dev, self.func)
    }
}

impl Address {
    fn cfg(&self, off: u8) -> u32 {
        0x8000_0000
            | (self.bus as u32) << 16
            | (self.dev as u32) << 11
            | (self.func as u32) << 8
            | (off as u32 & 0xFC)
    }

    /// Reads a config double word.
    pub fn read32(&self, off: u8) -> u32 {
        // SAFETY: 0xCF8/0xCFC are the PCI configuration ports, owned by this module;
        // probing is single-threaded at boot.
        unsafe {
            outl(0xCF8, self.cfg(off));
            inl(0xCFC)
        }
    }

    /// Writes a config double word.
    pub fn write32(&self, off: u8, v: u32) {
        // SAFETY: as read32.
        unsafe {
            outl(0xCF8, self.cfg(off));
            outl(0xCFC, v);
        }
    }

    /// Reads a config byte.
    pub fn read8(&self, off: u8) -> u8 {
        (self.read32(off) >> ((off & 3) * 8)) as u8
    }

    /// Reads a config word.
    pub fn read16(&self, off: u8) -> u16 {
        (self.read32(off) >> ((off & 2) * 8)) as u16
    }

    /// Writes a config word (read-modify-write of its double word).
    pub fn write16(&self, off: u8, v: u16) {
        let shift = (off & 2) * 8;
        let old = self.read32(off);
        let new = (old & !(0xFFFF << shift)) | (v as u32) << shift;
        self.write32(off, new);
    }
}

/// A base address register, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bar {
    /// Not implemented (or the upper half of a 64-bit BAR).
    #[default]
    None,
    /// Memory space.
    Mem {
        /// Physical address (0: unassigned and could not be assigned).
        addr: u64,
        /// Size in bytes.
        size: u64,
        /// 64-bit BAR (uses the next slot too).
        is64: bool,
    },
    /// I/O space.
    Io {
        /// Port base.
        port: u16,
        /// Size in ports.
        size: u32,
    },
}

/// One PCI function.
#[derive(Debug, Clone, Copy)]
pub struct Device {
    /// Where it is.
    pub addr: Address,
    /// Vendor id.
    pub vendor: u16,
    /// Device id.
    pub device: u16,
    /// Class, subclass, programming interface.
    pub class: (u8, u8, u8),
    /// Decoded BARs (type 0 headers only).
    pub bars: [Bar; 6],
}

impl Device {
    /// Enables memory decoding and bus mastering (DMA), and masks INTx: the drivers poll.
    pub fn enable(&self) {
        let cmd = self.addr.read16(0x04);
        self.addr
            .write16(0x04, (cmd | 0x0002 | 0x0004 | 0x0400) & !0x0001);
    }

    /// Lets the function raise its INTx line (clears "interrupt disable" in the command
    /// register, which [`Device::enable`] sets).
    pub fn allow_intx(&self) {
        let cmd = self.addr.read16(0x04);
        self.addr.write16(0x04, cmd & !0x0400);
    }

    /// The INTx line the firmware assigned (interrupt line register, an ISA IRQ number on
    /// PC firmware), if the function has an interrupt pin and a line was set.
    pub fn intx_line(&self) -> Option<u8> {
        let r = self.addr.read32(0x3C);
        let (line, pin) = (r as u8, (r >> 8) as u8);
        (pin != 0 && line != 0 && line != 0xFF).then_some(line)
    }

    /// The capability list: (id, offset) pairs, bounded against loops.
    pub fn capabilities(&self) -> impl Iterator<Item = (u8, u8)> + '_ {
        let has = self.addr.read16(0x06) & 0x10 != 0;
        let mut ptr = if has { self.addr.read8(0x34) & 0xFC } else { 0 };
        let mut steps = 0;
        core::iter::from_fn(move || {
            if ptr < 0x40 || steps >= 48 {
                return None;
            }
            steps += 1;
            let at = ptr;
            let id = self.addr.read8(at);
            ptr = self.addr.read8(at + 1) & 0xFC;
            Some((id, at))
        })
    }
}

/// Assigns addresses to unassigned memory BARs, bump-style, from [`MMIO_WINDOW`].
pub struct BarAllocator {
    next: u64,
}

impl Default for BarAllocator {
    fn default() -> Self {
        BarAllocator {
            next: MMIO_WINDOW.0,
        }
    }
}

impl BarAllocator {
    fn take(&mut self, size: u64) -> Option<u64> {
        let size = size.max(4096);
        let at = (self.next + size - 1) & !(size - 1); // BARs are naturally aligned
        let end = at.checked_add(size)?;
        if end > MMIO_WINDOW.1 {
            return None;
        }
        self.next = end;
        Some(at)
    }
}

/// Sizes (and if needed assigns) the BARs of a type-0 function.
fn read_bars(a: Address, alloc: &mut BarAllocator) -> [Bar; 6] {
    let mut bars = [Bar::None; 6];
    let cmd = a.read16(0x04);
    a.write16(0x04, cmd & !0x0003); // decoding off while sizing
    let mut i = 0;
    while i < 6 {
        let off = 0x10 + 4 * i as u8;
        let orig = a.read32(off);
        a.write32(off, 0xFFFF_FFFF);
        let mask = a.read32(off);
        a.write32(off, orig);
        if mask == 0 || mask == 0xFFFF_FFFF && orig == 0xFFFF_FFFF {
            i += 1;
            continue;
        }
        if orig & 1 == 1 {
            let size = (!(mask & 0xFFFF_FFFC)).wrapping_add(1) & 0xFFFF;
            bars[i] = Bar::Io {
                port: (orig & 0xFFFC) as u16,
                size,
            };
            i += 1;
            continue;
        }
        let is64 = (orig >> 1) & 3 == 2 && i < 5;
        let mut addr = (orig & 0xFFFF_FFF0) as u64;
        let mut size_mask = (mask & 0xFFFF_FFF0) as u64;
        if is64 {
            let hi_off = off + 4;
            let orig_hi = a.read32(hi_off);
            a.write32(hi_off, 0xFFFF_FFFF);
            let mask_hi = a.read32(hi_off);
            a.write32(hi_off, orig_hi);
            addr |= (orig_hi as u64) << 32;
            size_mask |= (mask_hi as u64) << 32;
        } else {
            size_mask |= 0xFFFF_FFFF_0000_0000;
        }
        let size = (!size_mask).wrapping_add(1);
        if addr == 0 && size != 0 {
            if let Some(at) = alloc.take(size) {
                a.write32(off, (orig & 0xF) | at as u32);
                if is64 {
                    a.write32(off + 4, 0);
                }
                addr = at;
            }
        }
        if addr.saturating_add(size) > 1 << 32 {
            // A 64-bit BAR the firmware put above 4 GiB (OVMF does): map it, or leave the
            // BAR out (a driver then finds its registers missing and says so).
            // SAFETY: the boot CPU scans PCI alone; a BAR is device memory.
            match unsafe { crate::arch::paging::map_mmio(addr, size) } {
                Ok(()) => crate::kprintln!("pci: {a} BAR{i} at {addr:#x} (above 4 GiB): mapped"),
                Err(e) => {
                    crate::kprintln!("pci: {a} BAR{i} at {addr:#x} not mapped: {e:?}");
                    i += if is64 { 2 } else { 1 };
                    continue;
                }
            }
        }
        bars[i] = Bar::Mem { addr, size, is64 };
        i += if is64 { 2 } else { 1 };
    }
    a.write16(0x04, cmd);
    bars
}

/// Calls `found` for every function, walking bus 0 and the buses behind bridges.
pub fn enumerate(mut found: impl FnMut(&Device)) {
    let mut alloc = BarAllocator::default();
    let mut buses = [0u8; 32];
    let mut n_buses = 1;
    let mut b = 0;
    while b < n_buses {
        let bus = buses[b];
        b += 1;
        for dev in 0..32 {
            let a0 = Address { bus, dev, func: 0 };
            if a0.read16(0x00) == 0xFFFF {
                continue;
            }
            let multi = a0.read8(0x0E) & 0x80 != 0;
            for func in 0..if multi { 8 } else { 1 } {
                let a = Address { bus, dev, func };
                let id = a.read32(0x00);
                if id & 0xFFFF == 0xFFFF {
                    continue;
                }
                let class = a.read32(0x08);
                let class = ((class >> 24) as u8, (class >> 16) as u8, (class >> 8) as u8);
                let header = a.read8(0x0E) & 0x7F;
                if header == 1 && class.0 == 0x06 && class.1 == 0x04 {
                    let secondary = a.read8(0x19);
                    if secondary != 0
                        && n_buses < buses.len()
                        && !buses[..n_buses].contains(&secondary)
                    {
                        buses[n_buses] = secondary;
                        n_buses += 1;
                    }
                }
                let bars = if header == 0 {
                    read_bars(a, &mut alloc)
                } else {
                    [Bar::None; 6]
                };
                found(&Device {
                    addr: a,
                    vendor: id as u16,
                    device: (id >> 16) as u16,
                    class,
                    bars,
                });
            }
        }
    }
}
