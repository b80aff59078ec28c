//! Changes to the boot page tables (identity map of the first 4 GiB, 2 MiB pages, built by
//! `boot`): unmapping single 4 KiB pages, e.g. the guard page below each core's stack, and
//! identity-mapping device memory above 4 GiB ([`map_mmio`]: 64-bit BARs that UEFI
//! firmware places high, as OVMF does).
//!
//! A 2 MiB page holding such a page is split into a page table of 512 4 KiB entries with
//! the same frames and cache bits, then the guard entry is cleared. Every core uses these
//! same tables (the APs load the boot CR3), so changes are made only on the boot CPU
//! before any other core runs, and [`flush`] reloads CR3 once afterwards.

use core::arch::asm;

#[cfg(target_os = "none")]
extern "C" {
    static mut bw_pd: [u64; 2048];
    static mut bw_pml4: [u64; 512];
}

/// Host builds (unit tests): a page directory of their own to exercise the splitting.
#[cfg(not(target_os = "none"))]
#[allow(non_upper_case_globals)]
static mut bw_pd: [u64; 2048] = [0; 2048];
/// Host builds (unit tests): a top-level table of their own for [`map_mmio`].
#[cfg(not(target_os = "none"))]
#[allow(non_upper_case_globals)]
static mut bw_pml4: [u64; 512] = [0; 512];

const PRESENT: u64 = 1;
const WRITABLE: u64 = 2;
const LARGE: u64 = 1 << 7;
/// PWT | PCD: cache bits, the same position in 2 MiB and 4 KiB entries.
const CACHE_BITS: u64 = 0x18;
const FRAME: u64 = 0x000F_FFFF_FFFF_F000;

/// Why a page could not be unmapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Outside the identity-mapped 4 GiB, or not page aligned.
    BadAddress(u64),
    /// No memory for the page table.
    NoMemory,
}

/// Makes the 4 KiB page at `addr` not present: a touch faults (a stack guard).
///
/// # Safety
/// Only on the boot CPU before any other core runs; nothing may live in that page.
/// Call [`flush`] after the last change.
pub unsafe fn unmap_4k(addr: u64) -> Result<(), Error> {
    if addr % 4096 != 0 || addr >= 1 << 32 {
        return Err(Error::BadAddress(addr));
    }
    // SAFETY: the boot CPU alone writes the tables now (caller); bw_pd is the page
    // directory array set up by the entry code, 2048 entries.
    let pd = unsafe { &mut *core::ptr::addr_of_mut!(bw_pd) };
    let i = (addr >> 21) as usize;
    let e = pd[i];
    let pt: *mut u64 = if e & LARGE != 0 {
        let layout =
            core::alloc::Layout::from_size_align(4096, 4096).map_err(|_| Error::NoMemory)?;
        // SAFETY: non-zero size.
        let pt = unsafe { alloc::alloc::alloc_zeroed(layout) }.cast::<u64>();
        if pt.is_null() {
            return Err(Error::NoMemory);
        }
        let base = e & FRAME & !0x1F_FFFF;
        for k in 0..512u64 {
            // SAFETY: pt is a fresh 4 KiB page of 512 entries.
            unsafe {
                pt.add(k as usize)
                    .write((base + k * 4096) | (e & CACHE_BITS) | PRESENT | WRITABLE)
            };
        }
        // Heap memory is identity-mapped: its address is the physical one the MMU needs.
        pd[i] = pt as u64 | PRESENT | WRITABLE;
        pt
    } else {
        (e & FRAME) as *mut u64
    };
    // SAFETY: pt is the page table of this 2 MiB range (just made, or made by boot/us).
    unsafe { pt.add((addr >> 12) as usize & 511).write(0) };
    Ok(())
}

/// Highest physical address [`map_mmio`] maps (x86-64's 52-bit limit).
const PHYS_LIMIT: u64 = 1 << 52;

/// The table `e` points to, made (zeroed, from the heap) and linked if `e` is not present.
fn table(e: &mut u64) -> Result<*mut u64, Error> {
    if *e & PRESENT == 0 {
        let layout =
            core::alloc::Layout::from_size_align(4096, 4096).map_err(|_| Error::NoMemory)?;
        // SAFETY: non-zero size.
        let t = unsafe { alloc::alloc::alloc_zeroed(layout) }.cast::<u64>();
        if t.is_null() {
            return Err(Error::NoMemory);
        }
        // Heap memory is identity-mapped: its address is the physical one the MMU needs.
        *e = t as u64 | PRESENT | WRITABLE;
    }
    Ok((*e & FRAME) as *mut u64)
}

/// Identity-maps the device memory `[addr, addr + len)`, which lies above the boot map's
/// 4 GiB, with uncached 2 MiB pages (a 64-bit BAR the firmware placed high: OVMF puts
/// them in a window past RAM). Page-directory-pointer and page-directory tables are made
/// from the heap where there are none; pages already mapped are left as they are.
/// New entries only (not-present ones are never cached), so no other core need flush.
///
/// # Safety
/// On one core at a time; `[addr, addr + len)` must be device memory, not RAM.
pub unsafe fn map_mmio(addr: u64, len: u64) -> Result<(), Error> {
    let end = addr.checked_add(len).ok_or(Error::BadAddress(addr))?;
    if addr < 1 << 32 || end > PHYS_LIMIT || len == 0 {
        return Err(Error::BadAddress(addr));
    }
    // SAFETY: the caller is the only core changing the tables; bw_pml4 is the boot
    // top-level table, 512 entries.
    let pml4 = unsafe { &mut *core::ptr::addr_of_mut!(bw_pml4) };
    let mut p = addr & !0x1F_FFFF;
    while p < end {
        let pdpt = table(&mut pml4[(p >> 39) as usize & 511])?;
        // SAFETY: pdpt is a 512-entry table (made by `table` or by an earlier call).
        let pd = table(unsafe { &mut *pdpt.add((p >> 30) as usize & 511) })?;
        // SAFETY: as pdpt.
        let e = unsafe { &mut *pd.add((p >> 21) as usize & 511) };
        if *e & PRESENT == 0 {
            *e = p | LARGE | CACHE_BITS | PRESENT | WRITABLE;
        }
        p += 1 << 21;
    }
    Ok(())
}

/// Drops every cached translation of this core (reloads CR3).
pub fn flush() {
    // SAFETY: writing CR3 with its own value only flushes the TLB.
    unsafe {
        asm!("mov {t}, cr3", "mov cr3, {t}", t = out(reg) _, options(nostack, preserves_flags))
    };
}

/// The current CR3 (the page tables every core shares).
pub fn cr3() -> u64 {
    let v: u64;
    // SAFETY: reading CR3 has no side effects.
    unsafe { asm!("mov {}, cr3", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_memory_above_4_gib_is_mapped_uncached_in_2_mib_pages() {
        let at = 0xE0_0000_0000u64 + (1 << 21) - 4096; // spans two 2 MiB pages
                                                       // SAFETY: the host's stand-in tables; nothing runs on them.
        unsafe {
            assert_eq!(map_mmio(at, 8192), Ok(()));
            assert_eq!(map_mmio(at, 8192), Ok(()), "a second time: already mapped");
            assert_eq!(
                map_mmio(0xFEC0_0000, 4096),
                Err(Error::BadAddress(0xFEC0_0000))
            );
            assert_eq!(
                map_mmio(u64::MAX - 5, 10),
                Err(Error::BadAddress(u64::MAX - 5))
            );
        }
        // SAFETY: reads of the stand-in tables map_mmio filled.
        let pml4 = unsafe { &*core::ptr::addr_of!(bw_pml4) };
        let walk = |p: u64| -> u64 {
            let pdpt = (pml4[(p >> 39) as usize & 511] & FRAME) as *const u64;
            // SAFETY: tables map_mmio made, 512 entries each.
            let pd = (unsafe { pdpt.add((p >> 30) as usize & 511).read() } & FRAME) as *const u64;
            // SAFETY: as above.
            unsafe { pd.add((p >> 21) as usize & 511).read() }
        };
        for p in [at & !0x1F_FFFF, (at & !0x1F_FFFF) + (1 << 21)] {
            assert_eq!(
                walk(p),
                p | LARGE | CACHE_BITS | PRESENT | WRITABLE,
                "{p:#x}"
            );
        }
    }

    #[test]
    fn a_large_page_is_split_keeping_frames_and_cache_bits() {
        // SAFETY: this test alone uses the host's stand-in page directory.
        let pd = unsafe { &mut *core::ptr::addr_of_mut!(bw_pd) };
        pd[5] = (5 << 21) | LARGE | CACHE_BITS | PRESENT | WRITABLE;
        let guard = (5 << 21) + 3 * 4096;
        // SAFETY: host stand-in tables; nothing runs on them.
        unsafe {
            assert_eq!(unmap_4k(guard), Ok(()));
            assert_eq!(
                unmap_4k(guard + 4096),
                Ok(()),
                "second page: the table exists"
            );
            assert_eq!(unmap_4k(guard + 1), Err(Error::BadAddress(guard + 1)));
            assert_eq!(unmap_4k(1 << 32), Err(Error::BadAddress(1 << 32)));
        }
        assert_eq!(pd[5] & LARGE, 0);
        let pt = (pd[5] & FRAME) as *const u64;
        for k in 0..512u64 {
            // SAFETY: pt is the 512-entry table unmap_4k made.
            let e = unsafe { pt.add(k as usize).read() };
            if k == 3 || k == 4 {
                assert_eq!(e, 0, "{k}");
            } else {
                assert_eq!(
                    e,
                    ((5 << 21) + k * 4096) | CACHE_BITS | PRESENT | WRITABLE,
                    "{k}"
                );
            }
        }
    }
}
