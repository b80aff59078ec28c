//! Changes to the boot page tables (identity map of the first 4 GiB, 2 MiB pages, built by
//! `boot`): unmapping single 4 KiB pages, e.g. the guard page below each core's stack.
//!
//! A 2 MiB page holding such a page is split into a page table of 512 4 KiB entries with
//! the same frames and cache bits, then the guard entry is cleared. Every core uses these
//! same tables (the APs load the boot CR3), so changes are made only on the boot CPU
//! before any other core runs, and [`flush`] reloads CR3 once afterwards.

use core::arch::asm;

#[cfg(target_os = "none")]
extern "C" {
    static mut bw_pd: [u64; 2048];
}

/// Host builds (unit tests): a page directory of their own to exercise the splitting.
#[cfg(not(target_os = "none"))]
#[allow(non_upper_case_globals)]
static mut bw_pd: [u64; 2048] = [0; 2048];

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
