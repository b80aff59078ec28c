//! MSI-X (PCI 3.0 §6.8.2): a function's interrupt messages, each a memory write the device
//! makes to the local APIC of the core it names. The virtio-net driver gives each receive
//! queue its own message, aimed at the core that owns the queue pair.
//!
//! The table lives in one of the function's memory BARs (its offset and BAR in the
//! capability). An entry is (address, data, vector control): address 0xFEE0_0000 with the
//! destination APIC id in bits 19:12 (physical destination, fixed delivery), data = the
//! vector (edge-triggered), control bit 0 = masked.

use super::{Bar, Device};
use crate::drivers::hal::{Hal, Mmio, Reg, WO};

/// PCI capability id of MSI-X.
const CAP_MSIX: u8 = 0x11;
const CTRL_ENABLE: u16 = 1 << 15;
const CTRL_FUNCTION_MASK: u16 = 1 << 14;

/// A function's MSI-X table.
#[derive(Debug, Clone, Copy)]
pub struct MsiX {
    dev: Device,
    cap: u8,
    table: Mmio,
    /// Entries in the table.
    pub entries: u16,
}

impl MsiX {
    /// The MSI-X table of `dev`, mapped through `H`, if it has the capability and the
    /// table lies inside an assigned memory BAR.
    pub fn find<H: Hal>(dev: &Device) -> Option<MsiX> {
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
            // SAFETY: the table lies inside an assigned memory BAR (checked above).
            table: unsafe { Mmio::map::<H>(addr + off, 16 * entries as usize) },
            entries,
        })
    }

    /// Points entry `i` at `vector` on the core with APIC id `dest` and unmasks it.
    /// Returns false if there is no such entry or the id does not fit 8 bits.
    pub fn set(&self, i: u16, dest: u32, vector: u8) -> bool {
        if i >= self.entries || dest > 0xFF {
            return false;
        }
        // Entry i: address low, address high, data, vector control (masked while it
        // changes). Inside the table (i < entries), so the views exist.
        let word = |k: usize| self.table.reg::<u32, WO>(16 * i as usize + 4 * k);
        let (Some(lo), Some(hi), Some(data), Some(ctrl)) = (word(0), word(1), word(2), word(3))
        else {
            return false;
        };
        let ctrl: Reg<u32, WO> = ctrl;
        ctrl.write(1);
        lo.write(0xFEE0_0000 | dest << 12);
        hi.write(0);
        data.write(vector as u32);
        ctrl.write(0);
        true
    }

    /// Turns MSI-X on for the function (INTx is then unused by the device).
    pub fn enable(&self) {
        let a = self.dev.addr;
        let ctrl = a.read16(self.cap + 2);
        a.write16(self.cap + 2, (ctrl | CTRL_ENABLE) & !CTRL_FUNCTION_MASK);
    }
}
