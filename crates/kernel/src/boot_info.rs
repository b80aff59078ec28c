//! What the loader tells us, in one form for both boot protocols: the memory map, the
//! command line and the modules (the site image is module 0 under QEMU `-initrd`).
//!
//! - PVH: `hvm_start_info` (xen/include/public/arch-x86/hvm/start_info.h), version ≥ 1
//!   for the memory map; `rsdp_paddr` for ACPI. Told apart by its magic 0x336ec578.
//! - multiboot2: the information block (already copied to low memory by the entry code),
//!   tags 1 (command line), 3 (module), 6 (memory map) and 14/15 (a copy of the ACPI
//!   RSDP, which stays where the copied block is).
//!
//! Everything is copied into [`BootInfo`] (fixed arrays, no allocation), reading the
//! loader's memory with bounds on every count, so later allocations may overwrite it.

use core::fmt;

/// PVH `hvm_start_info.magic`.
pub const PVH_MAGIC: u32 = 0x336e_c578;
/// `eax` value of a multiboot2 entry.
pub const MB2_MAGIC: u32 = 0x36d7_6289;

const MAX_REGIONS: usize = 64;
const MAX_MODULES: usize = 4;
const CMDLINE_MAX: usize = 1024;

/// A range of physical memory the loader reports as usable RAM.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// A module the loader placed in memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Module {
    /// Physical address of the first byte.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
}

/// Which protocol started us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Xen PVH direct boot (QEMU `-kernel`, qboot).
    Pvh,
    /// Multiboot2 (GRUB).
    Multiboot2,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Pvh => "PVH",
            Protocol::Multiboot2 => "multiboot2",
        })
    }
}

/// Why the boot information could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Neither the PVH magic at `ebx` nor the multiboot2 magic in `eax`.
    UnknownProtocol {
        /// `eax` at entry.
        eax: u32,
    },
    /// PVH start_info older than version 1 has no memory map.
    NoMemoryMap,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownProtocol { eax } => write!(
                f,
                "unknown boot protocol (eax={eax:#x}, no PVH start_info magic at ebx)"
            ),
            Error::NoMemoryMap => f.write_str("the loader gave no memory map"),
        }
    }
}

/// The boot information, copied out of the loader's memory.
#[derive(Clone)]
pub struct BootInfo {
    /// Protocol used.
    pub protocol: Protocol,
    regions: [Region; MAX_REGIONS],
    n_regions: usize,
    modules: [Module; MAX_MODULES],
    n_modules: usize,
    cmdline: [u8; CMDLINE_MAX],
    cmdline_len: usize,
    /// Physical address of the ACPI RSDP the loader gave (0: none; search the BIOS area).
    pub rsdp: u64,
    /// multiboot2: offset of the RSDP copy inside the information block (0: none).
    rsdp_in_block: usize,
}

/// Reads `len` bytes of physical memory.
///
/// # Safety
/// `[addr, addr+len)` must be mapped (the first 4 GiB are) and not written meanwhile.
unsafe fn phys(addr: u64, len: usize) -> &'static [u8] {
    // SAFETY: forwarded to the caller.
    unsafe { core::slice::from_raw_parts(addr as *const u8, len) }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u32_at(b, at) as u64 | ((u32_at(b, at + 4) as u64) << 32)
}

const LOW_4G: u64 = 1 << 32;

impl BootInfo {
    fn empty(protocol: Protocol) -> BootInfo {
        BootInfo {
            protocol,
            regions: [Region::default(); MAX_REGIONS],
            n_regions: 0,
            modules: [Module::default(); MAX_MODULES],
            n_modules: 0,
            cmdline: [0; CMDLINE_MAX],
            cmdline_len: 0,
            rsdp: 0,
            rsdp_in_block: 0,
        }
    }

    /// Reads the boot information given `eax` and `ebx` at entry.
    ///
    /// # Safety
    /// `ebx` must be what the loader passed (the entry code passes it through), and the
    /// loader's structures must still be intact (nothing has been allocated yet).
    pub unsafe fn from_entry(eax: u32, ebx: u32) -> Result<BootInfo, Error> {
        let ebx = ebx as u64;
        if eax == MB2_MAGIC {
            // SAFETY: forwarded; the entry code copied the block to ebx.
            return Ok(unsafe { Self::multiboot2(ebx) });
        }
        // SAFETY: PVH start_info is at least 56 bytes at ebx when it is PVH; otherwise we
        // read 4 bytes of some mapped low memory (ebx < 4 GiB) and compare the magic.
        if ebx != 0 && u32_at(unsafe { phys(ebx, 4) }, 0) == PVH_MAGIC {
            // SAFETY: forwarded.
            return unsafe { Self::pvh(ebx) };
        }
        Err(Error::UnknownProtocol { eax })
    }

    /// # Safety
    /// `at` points at a PVH start_info.
    unsafe fn pvh(at: u64) -> Result<BootInfo, Error> {
        let mut info = BootInfo::empty(Protocol::Pvh);
        // SAFETY: start_info v1 is 56 bytes (caller).
        let si = unsafe { phys(at, 56) };
        let version = u32_at(si, 4);
        let nr_modules = u32_at(si, 12) as usize;
        let modlist = u64_at(si, 16);
        let cmdline = u64_at(si, 24);
        let rsdp = u64_at(si, 32);
        if rsdp < LOW_4G {
            info.rsdp = rsdp;
        }
        if cmdline != 0 && cmdline < LOW_4G {
            // SAFETY: the loader's NUL-terminated command line, in mapped memory.
            unsafe { info.copy_cmdline(cmdline) };
        }
        if modlist != 0 && modlist < LOW_4G {
            for i in 0..nr_modules.min(MAX_MODULES) {
                // SAFETY: the module list holds nr_modules entries of 32 bytes.
                let m = unsafe { phys(modlist + 32 * i as u64, 32) };
                info.push_module(u64_at(m, 0), u64_at(m, 8));
            }
        }
        if version < 1 {
            return Err(Error::NoMemoryMap);
        }
        let memmap = u64_at(si, 40);
        let entries = u32_at(si, 48) as usize;
        if memmap == 0 || memmap >= LOW_4G {
            return Err(Error::NoMemoryMap);
        }
        for i in 0..entries.min(256) {
            // SAFETY: the memory map holds `entries` entries of 24 bytes.
            let e = unsafe { phys(memmap + 24 * i as u64, 24) };
            if u32_at(e, 16) == 1 {
                info.push_region(u64_at(e, 0), u64_at(e, 8));
            }
        }
        Ok(info)
    }

    /// # Safety
    /// `at` points at a multiboot2 information block.
    unsafe fn multiboot2(at: u64) -> BootInfo {
        // SAFETY: the block starts with its total size (caller).
        let total = (u32_at(unsafe { phys(at, 8) }, 0) as u64).min(crate::arch::boot::MB2_COPY_MAX);
        // SAFETY: the copied block is `total` bytes long.
        let mut info = Self::multiboot2_bytes(unsafe { phys(at, total as usize) });
        if info.rsdp_in_block != 0 {
            info.rsdp = at + info.rsdp_in_block as u64;
        }
        info
    }

    /// Parses a multiboot2 information block; bounded by `b`, never panics.
    pub fn multiboot2_bytes(b: &[u8]) -> BootInfo {
        let mut info = BootInfo::empty(Protocol::Multiboot2);
        let mut off = 8usize;
        while off + 8 <= b.len() {
            let ty = u32_at(b, off);
            let size = u32_at(b, off + 4) as usize;
            if ty == 0 || size < 8 || off + size > b.len() {
                break;
            }
            let tag = &b[off..off + size];
            match ty {
                1 => {
                    let s = &tag[8..];
                    let n = s.iter().position(|&c| c == 0).unwrap_or(s.len());
                    info.set_cmdline(&s[..n]);
                }
                3 if size >= 16 => {
                    let start = u32_at(tag, 8) as u64;
                    let end = u32_at(tag, 12) as u64;
                    info.push_module(start, end.saturating_sub(start));
                }
                6 if size >= 16 => {
                    let esize = u32_at(tag, 8) as usize;
                    if esize >= 24 {
                        let mut e = 16;
                        while e + 24 <= size {
                            if u32_at(tag, e + 16) == 1 {
                                info.push_region(u64_at(tag, e), u64_at(tag, e + 8));
                            }
                            e += esize;
                        }
                    }
                }
                // ACPI 2.0+ RSDP copy (15) is preferred over the 1.0 one (14).
                15 if size >= 8 + 36 => info.rsdp_in_block = off + 8,
                14 if size >= 8 + 20 && info.rsdp_in_block == 0 => info.rsdp_in_block = off + 8,
                _ => {}
            }
            off += (size + 7) & !7;
        }
        info
    }

    /// # Safety
    /// `at` is a NUL-terminated string in mapped memory.
    unsafe fn copy_cmdline(&mut self, at: u64) {
        let mut n = 0;
        // SAFETY: reads byte by byte up to the NUL or our buffer size (caller).
        while n < CMDLINE_MAX && unsafe { *((at + n as u64) as *const u8) } != 0 {
            n += 1;
        }
        // SAFETY: the n bytes just scanned.
        let s = unsafe { phys(at, n) };
        self.set_cmdline(s);
    }

    fn set_cmdline(&mut self, s: &[u8]) {
        let n = s.len().min(CMDLINE_MAX);
        self.cmdline[..n].copy_from_slice(&s[..n]);
        self.cmdline_len = n;
    }

    fn push_region(&mut self, start: u64, len: u64) {
        if self.n_regions < MAX_REGIONS && len > 0 {
            self.regions[self.n_regions] = Region {
                start,
                end: start.saturating_add(len),
            };
            self.n_regions += 1;
        }
    }

    fn push_module(&mut self, start: u64, len: u64) {
        if self.n_modules < MAX_MODULES {
            self.modules[self.n_modules] = Module { start, len };
            self.n_modules += 1;
        }
    }

    /// Usable RAM regions.
    pub fn regions(&self) -> &[Region] {
        &self.regions[..self.n_regions]
    }

    /// Modules, in the loader's order.
    pub fn modules(&self) -> &[Module] {
        &self.modules[..self.n_modules]
    }

    /// The kernel command line (empty when none; invalid UTF-8 is cut at the first bad
    /// byte).
    pub fn cmdline(&self) -> &str {
        let b = &self.cmdline[..self.cmdline_len];
        match core::str::from_utf8(b) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or(""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn tag(out: &mut Vec<u8>, ty: u32, body: &[u8]) {
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&(8 + body.len() as u32).to_le_bytes());
        out.extend_from_slice(body);
        while out.len() % 8 != 0 {
            out.push(0);
        }
    }

    /// A block laid out as GRUB 2.06 writes it: cmdline, module, memory map, end.
    fn grub_block() -> Vec<u8> {
        let mut b = alloc::vec![0u8; 8];
        tag(&mut b, 1, b"/boot/bareweb.elf ip=10.0.0.2/24\0");
        let mut m = Vec::new();
        m.extend_from_slice(&0x20_0000u32.to_le_bytes());
        m.extend_from_slice(&0x30_0000u32.to_le_bytes());
        m.extend_from_slice(b"site\0");
        tag(&mut b, 3, &m);
        let mut mm = Vec::new();
        mm.extend_from_slice(&24u32.to_le_bytes());
        mm.extend_from_slice(&0u32.to_le_bytes());
        for (base, len, ty) in [
            (0u64, 0x9fc00u64, 1u32),
            (0xf0000, 0x10000, 2),
            (0x10_0000, 0x7ee_0000, 1),
        ] {
            mm.extend_from_slice(&base.to_le_bytes());
            mm.extend_from_slice(&len.to_le_bytes());
            mm.extend_from_slice(&ty.to_le_bytes());
            mm.extend_from_slice(&0u32.to_le_bytes());
        }
        tag(&mut b, 6, &mm);
        tag(&mut b, 0, &[]);
        let n = b.len() as u32;
        b[..4].copy_from_slice(&n.to_le_bytes());
        b
    }

    #[test]
    fn multiboot2_block_from_grub() {
        let i = BootInfo::multiboot2_bytes(&grub_block());
        assert_eq!(i.cmdline(), "/boot/bareweb.elf ip=10.0.0.2/24");
        assert_eq!(
            i.modules(),
            &[Module {
                start: 0x20_0000,
                len: 0x10_0000
            }]
        );
        assert_eq!(
            i.regions(),
            &[
                Region {
                    start: 0,
                    end: 0x9fc00
                },
                Region {
                    start: 0x10_0000,
                    end: 0x7fe_0000
                }
            ]
        );
    }

    #[test]
    fn acpi_rsdp_tags_new_one_preferred() {
        let rsdp1 = *b"RSD PTR \x11BOCHS \x00\x00\x10\x00\x00";
        let mut rsdp2 = [0u8; 36];
        rsdp2[..8].copy_from_slice(b"RSD PTR ");
        rsdp2[15] = 2;
        let mut b = alloc::vec![0u8; 8];
        tag(&mut b, 14, &rsdp1);
        let at15 = b.len();
        tag(&mut b, 15, &rsdp2);
        tag(&mut b, 0, &[]);
        let i = BootInfo::multiboot2_bytes(&b);
        assert_eq!(i.rsdp_in_block, at15 + 8);
        assert_eq!(i.rsdp, 0, "the address is known only where the block lies");
        let mut b = alloc::vec![0u8; 8];
        tag(&mut b, 14, &rsdp1);
        tag(&mut b, 0, &[]);
        assert_eq!(BootInfo::multiboot2_bytes(&b).rsdp_in_block, 16);
        let mut b = alloc::vec![0u8; 8];
        tag(&mut b, 15, &rsdp2[..20]); // too short for an ACPI 2.0 RSDP
        tag(&mut b, 0, &[]);
        assert_eq!(BootInfo::multiboot2_bytes(&b).rsdp_in_block, 0);
    }

    #[test]
    fn truncated_and_corrupt_blocks_never_panic() {
        let good = grub_block();
        for cut in 0..good.len() {
            let _ = BootInfo::multiboot2_bytes(&good[..cut]);
        }
        let mut x = 99u32;
        for _ in 0..3000 {
            let mut b = good.clone();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let at = (x as usize) % b.len();
                b[at] = (x >> 8) as u8;
            }
            let i = BootInfo::multiboot2_bytes(&b);
            assert!(i.regions().len() <= 64 && i.modules().len() <= 4);
        }
    }
}
