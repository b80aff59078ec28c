//! Memory: a bump allocator over the largest free piece of RAM, for start-up, and
//! size-class free lists for what is allocated after it.
//!
//! The engine allocates every table once in `Server::new`; drivers allocate their rings
//! and buffers once at probe time. After start-up the heap is [`seal`]ed: any later
//! allocation still succeeds but is counted in [`late_allocs`], which the stats line
//! shows and the tests of plain HTTP require to be 0. Start-up memory is never freed.
//!
//! HTTPS allocates after start-up by nature: rustls makes each connection's state (the
//! engine's session box, the handshake's key schedule and messages, a buffer per record
//! sealed) and frees it. So a block allocated after the seal, up to [`MAX_CLASS`] bytes,
//! is rounded up to a power of two and, when freed, kept on that size's free list
//! (intrusive, one spin lock for all of them: HTTPS's allocations are rustls's, on the
//! handshake and per record, never the plain request path); the next allocation of that
//! size takes it back. Memory stays with its size class, so the heap grows to the peak
//! of live blocks per class, not with the number of connections ([`late_live`] shows what
//! is live). All of RAM below 4 GiB is identity-mapped, so a heap address is also the
//! physical address a device is given.

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::boot_info::{BootInfo, Region};

#[cfg(target_os = "none")]
extern "C" {
    static __kernel_start: u8;
    static __kernel_end: u8;
}

/// Host builds (unit tests): no linker script, no kernel span.
#[cfg(not(target_os = "none"))]
#[allow(non_upper_case_globals)]
static __kernel_start: u8 = 0;
#[cfg(not(target_os = "none"))]
#[allow(non_upper_case_globals)]
static __kernel_end: u8 = 0;

/// The kernel's own span `[start, end)` in physical memory.
pub fn kernel_span() -> Region {
    // Linker-defined symbols: only their addresses are taken.
    Region {
        start: core::ptr::addr_of!(__kernel_start) as u64,
        end: core::ptr::addr_of!(__kernel_end) as u64,
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);
static END: AtomicU64 = AtomicU64::new(0);
static START: AtomicU64 = AtomicU64::new(0);
static SEALED: AtomicBool = AtomicBool::new(false);
static LATE: AtomicU64 = AtomicU64::new(0);
/// The bump pointer when the heap was sealed: blocks above it may be freed.
static SEAL_MARK: AtomicU64 = AtomicU64::new(u64::MAX);
/// Blocks allocated after the seal and not freed.
static LIVE: AtomicU64 = AtomicU64::new(0);
/// Bytes on the free lists.
static FREE_BYTES: AtomicU64 = AtomicU64::new(0);

/// The largest block kept on a free list (larger late blocks are never freed).
pub const MAX_CLASS: usize = 1 << 18;
/// The smallest (a list link fits).
const MIN_CLASS: usize = 16;
const CLASSES: usize = (MAX_CLASS.trailing_zeros() - MIN_CLASS.trailing_zeros() + 1) as usize;

/// The free lists: the first free block of each class (0: none); each free block holds
/// the address of the next.
static FREE: spin::Mutex<[u64; CLASSES]> = spin::Mutex::new([0; CLASSES]);

/// The size class of a late allocation (`None`: too large or too aligned for one): the
/// index and the block size, a power of two at least the size and the alignment, whose
/// blocks are aligned to min(size, 4096).
pub fn class(layout: Layout) -> Option<(usize, usize)> {
    if layout.align() > 4096 {
        return None;
    }
    let size = layout
        .size()
        .max(layout.align())
        .max(MIN_CLASS)
        .checked_next_power_of_two()?;
    (size <= MAX_CLASS).then(|| {
        let i = (size.trailing_zeros() - MIN_CLASS.trailing_zeros()) as usize;
        (i, size)
    })
}

fn bump(layout: Layout) -> *mut u8 {
    let align = layout.align() as u64;
    let size = layout.size() as u64;
    let mut cur = NEXT.load(Ordering::Relaxed);
    loop {
        let start = (cur + align - 1) & !(align - 1);
        let Some(end) = start.checked_add(size) else {
            return core::ptr::null_mut();
        };
        if end > END.load(Ordering::Relaxed) {
            return core::ptr::null_mut();
        }
        match NEXT.compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return start as *mut u8,
            Err(now) => cur = now,
        }
    }
}

/// The start-up allocator.
pub struct Bump;

// SAFETY: alloc hands out disjoint, aligned ranges of RAM that nothing else uses (the
// range was cut out of the loader's usable memory minus the kernel and modules), or null.
unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !SEALED.load(Ordering::Relaxed) {
            return bump(layout);
        }
        LATE.fetch_add(1, Ordering::Relaxed);
        let Some((i, size)) = class(layout) else {
            return bump(layout);
        };
        let mut free = FREE.lock();
        let p = match free[i] {
            0 => bump(Layout::from_size_align(size, size.min(4096)).unwrap_or(layout)),
            head => {
                // SAFETY: a free block of this class, ours since its dealloc; its first
                // word is the next free block's address.
                free[i] = unsafe { *(head as *const u64) };
                FREE_BYTES.fetch_sub(size as u64, Ordering::Relaxed);
                head as *mut u8
            }
        };
        drop(free);
        if !p.is_null() {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded to alloc.
        let p = unsafe { self.alloc(layout) };
        if !p.is_null() {
            // SAFETY: alloc returned layout.size() bytes at p, ours alone.
            unsafe { zero(p, layout.size()) };
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Start-up blocks (below the mark) and large late ones are never freed.
        if (ptr as u64) < SEAL_MARK.load(Ordering::Relaxed) {
            return;
        }
        // Large late blocks were never counted live (see `alloc`) and are never freed.
        let Some((i, size)) = class(layout) else {
            return;
        };
        LIVE.fetch_sub(1, Ordering::Relaxed);
        FREE_BYTES.fetch_add(size as u64, Ordering::Relaxed);
        let mut free = FREE.lock();
        // SAFETY: the caller gives back a block this allocator made after the seal for
        // this layout, so it is a whole block of class i (at least 16 bytes, 8-aligned),
        // no longer used by anyone: it now holds the list's link.
        unsafe { *(ptr as *mut u64) = free[i] };
        free[i] = ptr as u64;
    }
}

/// Zeroes `len` bytes at `p` with 8-byte stores, 64 bytes per turn. Boot zeroes ~14 MiB
/// of tables and rings per serving core; QEMU's TCG runs `rep stosq` (what `write_bytes`
/// becomes) one iteration per pass through its translated code, several times slower than
/// a loop of plain stores (measured: docs/kernel.md, boot budget). Volatile stores keep
/// the loop from being turned back into `memset`.
///
/// # Safety
/// `[p, p + len)` must be writable memory that nothing else uses.
pub unsafe fn zero(p: *mut u8, len: usize) {
    let mut at = p as usize;
    let end = at + len;
    while at < end && at % 8 != 0 {
        // SAFETY: at lies inside [p, p + len), the caller's memory.
        unsafe { core::ptr::write_volatile(at as *mut u8, 0) };
        at += 1;
    }
    while at + 64 <= end {
        let q = at as *mut u64;
        // SAFETY: the 64 bytes at q lie inside [p, p + len), 8-aligned.
        unsafe {
            core::ptr::write_volatile(q, 0);
            core::ptr::write_volatile(q.add(1), 0);
            core::ptr::write_volatile(q.add(2), 0);
            core::ptr::write_volatile(q.add(3), 0);
            core::ptr::write_volatile(q.add(4), 0);
            core::ptr::write_volatile(q.add(5), 0);
            core::ptr::write_volatile(q.add(6), 0);
            core::ptr::write_volatile(q.add(7), 0);
        }
        at += 64;
    }
    while at + 8 <= end {
        // SAFETY: the 8 bytes at `at` lie inside [p, p + len), 8-aligned.
        unsafe { core::ptr::write_volatile(at as *mut u64, 0) };
        at += 8;
    }
    while at < end {
        // SAFETY: at lies inside [p, p + len).
        unsafe { core::ptr::write_volatile(at as *mut u8, 0) };
        at += 1;
    }
}

const LOW_4G: u64 = 1 << 32;

/// Picks the heap: the largest piece of usable RAM below 4 GiB that is not the kernel,
/// the first MiB, a module or one of `reserved`. Returns it.
pub fn init(info: &BootInfo, reserved: &[Region]) -> Option<Region> {
    let k = kernel_span();
    let mut cuts = [Region::default(); 12];
    let mut n = 0;
    cuts[n] = Region {
        start: 0,
        end: 0x10_0000,
    };
    n += 1;
    cuts[n] = k;
    n += 1;
    for m in info.modules() {
        if n < cuts.len() {
            cuts[n] = Region {
                start: m.start,
                end: m.start.saturating_add(m.len),
            };
            n += 1;
        }
    }
    for r in reserved {
        if n < cuts.len() {
            cuts[n] = *r;
            n += 1;
        }
    }
    let mut best = Region::default();
    for r in info.regions() {
        let r = Region {
            start: r.start,
            end: r.end.min(LOW_4G),
        };
        largest_piece(r, &cuts[..n], &mut best);
    }
    if best.end <= best.start {
        return None;
    }
    START.store(best.start, Ordering::Relaxed);
    NEXT.store(best.start, Ordering::Relaxed);
    END.store(best.end, Ordering::Relaxed);
    Some(best)
}

/// Updates `best` with the largest part of `r` that avoids every cut.
fn largest_piece(r: Region, cuts: &[Region], best: &mut Region) {
    // The pieces of r between cuts: walk the cut start points in order.
    let mut start = r.start;
    loop {
        if start >= r.end {
            return;
        }
        // Skip forward past any cut containing `start`.
        if let Some(c) = cuts.iter().find(|c| c.start <= start && start < c.end) {
            start = c.end;
            continue;
        }
        // This piece ends at the nearest cut starting after `start`, or at r.end.
        let end = cuts
            .iter()
            .filter(|c| c.start > start)
            .map(|c| c.start)
            .fold(r.end, u64::min);
        let piece = Region {
            start: (start + 4095) & !4095,
            end: end & !4095,
        };
        if piece.end > piece.start && piece.end - piece.start > best.end - best.start {
            *best = piece;
        }
        start = end;
    }
}

/// Marks the end of start-up: allocations from now on are counted as late.
pub fn seal() {
    SEAL_MARK.store(NEXT.load(Ordering::Relaxed), Ordering::Relaxed);
    SEALED.store(true, Ordering::Relaxed);
}

/// Blocks allocated after [`seal`] and not yet freed (HTTPS's connections: back to the
/// same figure once they are closed).
pub fn late_live() -> u64 {
    LIVE.load(Ordering::Relaxed)
}

/// Allocations made after [`seal`] (0 when the engine keeps its promise).
pub fn late_allocs() -> u64 {
    LATE.load(Ordering::Relaxed)
}

/// Bytes an allocation can still get: the heap's untouched end and the free lists (which
/// serve their own size only, so an estimate).
pub fn room() -> u64 {
    END.load(Ordering::Relaxed)
        .saturating_sub(NEXT.load(Ordering::Relaxed))
        + FREE_BYTES.load(Ordering::Relaxed)
}

/// Bytes handed out so far.
pub fn used() -> u64 {
    NEXT.load(Ordering::Relaxed) - START.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_blocks_round_up_to_a_class_that_holds_size_and_alignment() {
        let l = |s, a| Layout::from_size_align(s, a).unwrap();
        assert_eq!(class(l(1, 1)), Some((0, 16)));
        assert_eq!(class(l(16, 8)), Some((0, 16)));
        assert_eq!(class(l(17, 1)), Some((1, 32)));
        assert_eq!(class(l(8, 64)), Some((2, 64)));
        assert_eq!(class(l(16_413, 1)), Some((11, 32_768)));
        assert_eq!(class(l(MAX_CLASS, 8)), Some((CLASSES - 1, MAX_CLASS)));
        assert_eq!(class(l(MAX_CLASS + 1, 8)), None);
        assert_eq!(class(l(64, 8192)), None);
    }

    fn r(start: u64, end: u64) -> Region {
        Region { start, end }
    }

    #[test]
    fn largest_piece_avoids_every_cut() {
        let mut best = Region::default();
        let cuts = [
            r(0, 0x10_0000),
            r(0x10_0000, 0x1b_8000),
            r(0x0fec_a000, 0x0ffd_8000),
        ];
        largest_piece(r(0, 0x1000_0000), &cuts, &mut best);
        assert_eq!(best, r(0x1b_8000, 0x0fec_a000));
        // A module in the middle: the larger side wins.
        let mut best = Region::default();
        largest_piece(
            r(0x10_0000, 0x1000_0000),
            &[r(0x200_0000, 0x300_0000)],
            &mut best,
        );
        assert_eq!(best, r(0x300_0000, 0x1000_0000));
        // Fully covered, or empty cuts: no endless loop.
        let mut best = Region::default();
        largest_piece(
            r(0x1000, 0x2000),
            &[r(0, 0x10_0000), r(0x1800, 0x1800)],
            &mut best,
        );
        assert_eq!(best, Region::default());
    }
}
