//! MSI-X (PCI 3.0 §6.8.2): a function's interrupt messages, each a memory write the device
//! makes to the local APIC of the core it names. The virtio-net driver gives each receive
//! queue its own message, aimed at the core that owns the queue pair.
//!
//! The table lives in one of the function's memory BARs (its offset and BAR in the
//! capability). An entry is (address, data, vector control): address 0xFEE0_0000 with the
//! destination APIC id in bits 19:12 (physical destination, fixed delivery), data = the
//! vector (edge-triggered), control bit 0 = masked.

use core::ptr::write_volatile;

use super::{Bar, Device};

/// PCI capability id of MSI-X.
const CAP_MSIX: u8 = 0x11;
const CTRL_ENABLE: u16 = 1 << 15;
const CTRL_FUNCTION_MASK: u16 = 1 << 14;

/// A function's MSI-X table.
#[derive(Debug, Clone, Copy)]
pub struct MsiX {
    dev: Device,
    cap: u8,
    table: *mut u32,
    /// Entries in the table.
    pub entries: u16,
}

// SAFETY: the table pointer is device memory of this function; whoever holds the value
// is the function's driver (one owner), moving it to another core moves that ownership.
unsafe impl Send for MsiX {}

impl MsiX {
    /// The MSI-X table of `dev`, if it has the capability and the table lies inside an
    /// assigned memory BAR.
    pub fn find(dev: &Device) -> Option<MsiX> {
        let (_, cap) = dev.capabilities().find(|&(id, _)| id == CAP_MSIX)?;
        let ctrl = dev.addr.read16(cap + 2);
        let entries = (ctrl & 0x7FF) + 1;
        let t = dev.addr.read32(cap + 4);
        let (bir, off) = ((t & 7) as usize, (t & !7) as u64);
        let Some(Bar::Mem { addr, size, .. }) = dev.bars.get(bir).copied() else {
            return None;
        };
        if addr == 0 || off + 16 * entries as u64 > size {
            return None;
        }
        Some(MsiX {
            dev: *dev,
            cap,
            table: (addr + off) as *mut u32,
            entries,
        })
    }

    /// Points entry `i` at `vector` on the core with APIC id `dest` and unmasks it.
    /// Returns false if there is no such entry or the id does not fit 8 bits.
    pub fn set(&self, i: u16, dest: u32, vector: u8) -> bool {
        if i >= self.entries || dest > 0xFF {
            return false;
        }
        let e = self.table.wrapping_add(4 * i as usize);
        // SAFETY: entry i lies inside the table, which lies inside the BAR (checked in
        // find); identity-mapped, uncached device memory. Masked while it changes.
        unsafe {
            write_volatile(e.add(3), 1);
            write_volatile(e, 0xFEE0_0000 | dest << 12);
            write_volatile(e.add(1), 0);
            write_volatile(e.add(2), vector as u32);
            write_volatile(e.add(3), 0);
        }
        true
    }

    /// Turns MSI-X on for the function (INTx is then unused by the device).
    pub fn enable(&self) {
        let a = self.dev.addr;
        let ctrl = a.read16(self.cap + 2);
        a.write16(self.cap + 2, (ctrl | CTRL_ENABLE) & !CTRL_FUNCTION_MASK);
    }
}
