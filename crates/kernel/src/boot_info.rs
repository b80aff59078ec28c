//! What the loader tells us, in one form for both boot protocols: the memory map, the
//! command line and the modules (the site image is module 0 under QEMU `-initrd`).
//!
//! - PVH: `hvm_start_info` (xen/include/public/arch-x86/hvm/start_info.h), version ≥ 1
//!   for the memory map; `rsdp_paddr` for ACPI. Told apart by its magic 0x336ec578.
//! - multiboot2: the information block (already copied to low memory by the entry code),
//!   tags 1 (command line), 3 (module), 6 (memory map), 17 (the EFI memory map: used when
//!   a loader on UEFI gives it without tag 6), 14/15 (a copy of the ACPI RSDP, which stays
//!   where the copied block is) and 8 (the framebuffer: the screen console, `crate::fbcon`).
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

/// Where the usable-RAM regions came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapSource {
    /// None given.
    None,
    /// PVH `memmap` (E820 entries).
    Pvh,
    /// multiboot2 tag 6 (GRUB's, converted from E820 or UEFI's map).
    Mb2Basic,
    /// multiboot2 tag 17, UEFI's own memory descriptors (no tag 6 given).
    Mb2Efi,
}

impl fmt::Display for MapSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MapSource::None => "none",
            MapSource::Pvh => "PVH memmap",
            MapSource::Mb2Basic => "multiboot2 memory map",
            MapSource::Mb2Efi => "multiboot2 EFI memory map",
        })
    }
}

/// Pixel layout of a linear framebuffer (multiboot2 tag 8), as the loader describes it;
/// `crate::fbcon` checks it before drawing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Framebuffer {
    /// Physical address of the first pixel.
    pub addr: u64,
    /// Bytes from one line to the next.
    pub pitch: u32,
    /// Pixels per line (characters for EGA text).
    pub width: u32,
    /// Lines (character rows for EGA text).
    pub height: u32,
    /// Bits per pixel.
    pub bpp: u8,
    /// 0: indexed colours, 1: direct RGB, 2: EGA text.
    pub kind: u8,
    /// Direct RGB: (bit position, bit count) of red, green, blue.
    pub rgb: [(u8, u8); 3],
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
    /// Where [`BootInfo::regions`] came from.
    pub map_source: MapSource,
    /// multiboot2: usable descriptors in the EFI memory map (tag 17), whether used or not.
    pub efi_regions: usize,
    /// multiboot2: bytes of usable RAM in the EFI memory map (tag 17), to compare with
    /// the basic map when both are given.
    pub efi_usable: u64,
    /// The framebuffer the loader set up (multiboot2 tag 8), if any.
    pub framebuffer: Option<Framebuffer>,
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
            map_source: MapSource::None,
            efi_regions: 0,
            efi_usable: 0,
            framebuffer: None,
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
        info.map_source = MapSource::Pvh;
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
        let mut efi_map: Option<(usize, usize)> = None;
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
                        info.map_source = MapSource::Mb2Basic;
                    }
                }
                17 if size >= 16 => efi_map = Some((off, size)),
                8 if size >= 32 => {
                    info.framebuffer = Some(Framebuffer {
                        addr: u64_at(tag, 8),
                        pitch: u32_at(tag, 16),
                        width: u32_at(tag, 20),
                        height: u32_at(tag, 24),
                        bpp: tag[28],
                        kind: tag[29],
                        rgb: match tag.get(32..38) {
                            Some(c) => [(c[0], c[1]), (c[2], c[3]), (c[4], c[5])],
                            None => [(0, 0); 3],
                        },
                    })
                }
                // ACPI 2.0+ RSDP copy (15) is preferred over the 1.0 one (14).
                15 if size >= 8 + 36 => info.rsdp_in_block = off + 8,
                14 if size >= 8 + 20 && info.rsdp_in_block == 0 => info.rsdp_in_block = off + 8,
                _ => {}
            }
            off += (size + 7) & !7;
        }
        if let Some((at, size)) = efi_map {
            let tag = &b[at..at + size];
            // The basic map (tag 6) wins when both are given: GRUB converts UEFI's map to
            // it (the same RAM); tag 17 alone is used as it stands.
            let use_it = info.map_source == MapSource::None;
            (info.efi_regions, info.efi_usable) = info.efi_memory_map(tag, use_it);
            if use_it && info.efi_regions > 0 {
                info.map_source = MapSource::Mb2Efi;
            }
        }
        info
    }

    /// Reads the UEFI memory descriptors of multiboot2 tag 17 (`tag`, header included):
    /// counts the usable ones and their bytes and, if `push`, adds them as regions. Usable once boot
    /// services have exited (UEFI 2.10 §7.2, "Memory Type Usage after
    /// ExitBootServices()"): loader code/data (1, 2), boot services code/data (3, 4) and
    /// conventional memory (7), as GRUB's own conversion counts them. The loader's data
    /// we still need (the information block, modules, the kernel) is cut out by
    /// `crate::mem` or copied already.
    fn efi_memory_map(&mut self, tag: &[u8], push: bool) -> (usize, u64) {
        let dsize = u32_at(tag, 8) as usize;
        // A descriptor is 40 bytes in UEFI 2.x; firmware may use larger ones (the size
        // says), never smaller.
        if dsize < 40 {
            return (0, 0);
        }
        let (mut n, mut bytes) = (0, 0u64);
        let mut e = 16;
        while e + 40 <= tag.len() {
            let ty = u32_at(tag, e);
            let start = u64_at(tag, e + 8);
            let len = u64_at(tag, e + 24).saturating_mul(4096);
            if matches!(ty, 1 | 2 | 3 | 4 | 7) && len > 0 {
                n += 1;
                bytes = bytes.saturating_add(len);
                if push {
                    self.push_region(start, len);
                }
            }
            e += dsize;
        }
        (n, bytes)
    }

    /// Bytes of usable RAM in [`BootInfo::regions`].
    pub fn usable(&self) -> u64 {
        self.regions()
            .iter()
            .fold(0u64, |t, r| t.saturating_add(r.end - r.start))
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
        if len == 0 {
            return;
        }
        // UEFI's map cuts RAM into many adjacent descriptors: join them.
        if let Some(last) = self.regions[..self.n_regions].last_mut() {
            if last.end == start {
                last.end = start.saturating_add(len);
                return;
            }
        }
        if self.n_regions < MAX_REGIONS {
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

    /// The framebuffer's bytes (empty when none): device memory, but kept out of the heap
    /// even if a loader's map calls it RAM.
    pub fn framebuffer_span(&self) -> Region {
        self.framebuffer.map_or(Region::default(), |f| Region {
            start: f.addr,
            end: f.addr.saturating_add(f.pitch as u64 * f.height as u64),
        })
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

    fn efi_desc(out: &mut Vec<u8>, ty: u32, start: u64, pages: u64, dsize: usize) {
        let at = out.len();
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // virtual start
        out.extend_from_slice(&pages.to_le_bytes());
        out.extend_from_slice(&0xFu64.to_le_bytes()); // attributes: UC WC WT WB
        out.resize(at + dsize, 0);
    }

    /// Tag 17 as GRUB writes it from OVMF's map (48-byte descriptors, version 1).
    fn efi_map_tag(dsize: usize) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&(dsize as u32).to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        efi_desc(&mut body, 3, 0, 1, dsize); // boot services code: page 0
        efi_desc(&mut body, 7, 0x1000, 0x9f, dsize); // conventional, up to 0xa0000
        efi_desc(&mut body, 0, 0xa0000, 0x60, dsize); // reserved
        efi_desc(&mut body, 7, 0x10_0000, 0x700, dsize); // conventional, 1..8 MiB
        efi_desc(&mut body, 10, 0x80_0000, 0x8, dsize); // ACPI NVS
        efi_desc(&mut body, 2, 0x80_8000, 0x7f8, dsize); // loader data
        efi_desc(&mut body, 4, 0x100_0000, 0x1000, dsize); // boot services data, adjacent
        efi_desc(&mut body, 9, 0x200_0000, 0x10, dsize); // ACPI reclaim: kept
        efi_desc(&mut body, 7, 0x201_0000, 0, dsize); // empty: ignored
        efi_desc(&mut body, 11, 0xFFC0_0000, 0x400, dsize); // MMIO
        body
    }

    #[test]
    fn efi_memory_map_used_only_without_the_basic_one() {
        let mut b = alloc::vec![0u8; 8];
        tag(&mut b, 17, &efi_map_tag(48));
        tag(&mut b, 0, &[]);
        let i = BootInfo::multiboot2_bytes(&b);
        assert_eq!(i.map_source, MapSource::Mb2Efi);
        assert_eq!(
            (i.efi_regions, i.efi_usable),
            (5, 0xa0000 + 0x70_0000 + 0x17f_8000)
        );
        assert_eq!(i.usable(), i.efi_usable);
        assert_eq!(
            i.regions(),
            &[
                Region {
                    start: 0,
                    end: 0xa0000
                },
                Region {
                    start: 0x10_0000,
                    end: 0x80_0000
                },
                Region {
                    start: 0x80_8000,
                    end: 0x200_0000
                }
            ],
            "usable types joined where adjacent, reserved/ACPI/MMIO left out"
        );
        // With the basic map too (GRUB gives both): the basic one is used.
        let mut g = grub_block();
        g.truncate(g.len() - 8); // the end tag
        tag(&mut g, 17, &efi_map_tag(40));
        tag(&mut g, 0, &[]);
        let i = BootInfo::multiboot2_bytes(&g);
        assert_eq!(i.map_source, MapSource::Mb2Basic);
        assert_eq!(i.efi_regions, 5, "40-byte descriptors read too");
        assert_eq!(i.usable(), 0x9fc00 + 0x7ee_0000, "the basic map's");
        assert_eq!(i.regions().len(), 2);
        // Descriptors smaller than UEFI's 40 bytes: nothing read.
        let mut b = alloc::vec![0u8; 8];
        tag(&mut b, 17, &efi_map_tag(48)[..8]);
        let mut t = efi_map_tag(48);
        t[..4].copy_from_slice(&24u32.to_le_bytes());
        tag(&mut b, 17, &t);
        tag(&mut b, 0, &[]);
        let i = BootInfo::multiboot2_bytes(&b);
        assert_eq!((i.map_source, i.regions().len()), (MapSource::None, 0));
    }

    /// Tag 8 as GRUB EFI writes it for OVMF's GOP mode (1024x768, 32 bpp, BGRX).
    pub(crate) fn fb_tag(addr: u64, pitch: u32, w: u32, h: u32, bpp: u8, kind: u8) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&addr.to_le_bytes());
        body.extend_from_slice(&pitch.to_le_bytes());
        body.extend_from_slice(&w.to_le_bytes());
        body.extend_from_slice(&h.to_le_bytes());
        body.extend_from_slice(&[bpp, kind, 0, 0]);
        body.extend_from_slice(&[16, 8, 8, 8, 0, 8]);
        body
    }

    #[test]
    fn framebuffer_tag() {
        let mut b = alloc::vec![0u8; 8];
        tag(&mut b, 8, &fb_tag(0x8000_0000, 4096, 1024, 768, 32, 1));
        tag(&mut b, 0, &[]);
        let fb = BootInfo::multiboot2_bytes(&b).framebuffer.unwrap();
        assert_eq!(
            fb,
            Framebuffer {
                addr: 0x8000_0000,
                pitch: 4096,
                width: 1024,
                height: 768,
                bpp: 32,
                kind: 1,
                rgb: [(16, 8), (8, 8), (0, 8)],
            }
        );
        // EGA text (GRUB i386-pc with gfxpayload=text): no colour fields.
        let mut b = alloc::vec![0u8; 8];
        tag(&mut b, 8, &fb_tag(0xb8000, 160, 80, 25, 16, 2)[..24]);
        tag(&mut b, 0, &[]);
        let fb = BootInfo::multiboot2_bytes(&b).framebuffer.unwrap();
        assert_eq!((fb.kind, fb.width, fb.rgb), (2, 80, [(0, 0); 3]));
        // Shorter than the common part: ignored.
        let mut b = alloc::vec![0u8; 8];
        tag(&mut b, 8, &fb_tag(0xb8000, 160, 80, 25, 16, 2)[..20]);
        tag(&mut b, 0, &[]);
        assert_eq!(BootInfo::multiboot2_bytes(&b).framebuffer, None);
    }

    #[test]
    fn truncated_and_corrupt_blocks_never_panic() {
        let mut good = grub_block();
        good.truncate(good.len() - 8);
        tag(&mut good, 8, &fb_tag(0x8000_0000, 4096, 1024, 768, 32, 1));
        tag(&mut good, 17, &efi_map_tag(48));
        tag(&mut good, 0, &[]);
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
