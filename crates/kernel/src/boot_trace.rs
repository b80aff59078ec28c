//! Where boot time goes: the TSC at each start-up stage, printed as one console line when
//! the kernel is ready (`boot: stages ...`, in µs), for the boot budget (docs/kernel.md). Marks are
//! taken on the boot CPU only, before the other cores get their jobs: no locking needed
//! beyond the atomics.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const MAX: usize = 16;

static TSCS: [AtomicU64; MAX] = [const { AtomicU64::new(0) }; MAX];
static N: AtomicUsize = AtomicUsize::new(0);
/// The names, by index (a mark stores its index, so only `'static` names are kept).
static mut TABLE: [&str; MAX] = [""; MAX];

/// Marks the end of stage `name` now.
pub fn mark(name: &'static str) {
    let i = N.load(Ordering::Relaxed);
    if i >= MAX {
        return;
    }
    // SAFETY: marks are taken by the boot CPU alone, before any other core runs a job
    // (module contract); each index is written once, before N publishes it.
    unsafe { (*core::ptr::addr_of_mut!(TABLE))[i] = name };
    TSCS[i].store(crate::arch::cpu::rdtsc(), Ordering::Relaxed);
    N.store(i + 1, Ordering::Release);
}

/// Writes `name=µs` for every stage (time since the previous mark; the first since
/// `since`), at `hz` TSC ticks per second.
pub fn write(f: &mut core::fmt::Formatter<'_>, since: u64, hz: u64) -> core::fmt::Result {
    let n = N.load(Ordering::Acquire);
    let mut prev = since;
    let per_us = (hz / 1_000_000).max(1);
    for (i, tsc) in TSCS.iter().enumerate().take(n) {
        let t = tsc.load(Ordering::Relaxed);
        // SAFETY: index i < N was written before N was published (mark).
        let name = unsafe { (*core::ptr::addr_of!(TABLE))[i] };
        write!(f, " {name}={}", t.saturating_sub(prev) / per_us)?;
        prev = t;
    }
    Ok(())
}

/// The stages as a displayable value.
pub struct Stages {
    /// TSC the first stage is measured from.
    pub since: u64,
    /// TSC ticks per second.
    pub hz: u64,
}

impl core::fmt::Display for Stages {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write(f, self.since, self.hz)
    }
}
