//! The I/O APIC: routes a device's interrupt line (a GSI) to a core's vector. Used for the
//! NICs without MSI-X (the e1000's INTx line, virtio-mmio's line on the microvm machine),
//! which are level-triggered: the interrupt handler masks the line and the core unmasks it
//! when it arms the device again.
//!
//! Heads up! read the 82093AA I/O APIC datasheet §3.2 (IOREGSEL/IOWIN, the redirection
//! table) and ACPI 6.5 §5.2.12.3/5 (the MADT's I/O APIC and interrupt source override
//! entries, which say where each GSI is and how ISA lines map to GSIs).
//!
//! Every I/O APIC the MADT lists is masked entirely at boot ([`init`]); only lines the
//! kernel routes are ever unmasked. Register access is an index/data pair shared by all
//! lines of one chip, so each access holds a small lock (taken only with interrupts off).

use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

const MAX_CHIPS: usize = 4;
const REDIR_BASE: u32 = 0x10;
const MASKED: u32 = 1 << 16;
const LEVEL: u32 = 1 << 15;
const ACTIVE_LOW: u32 = 1 << 13;
const REMOTE_IRR: u32 = 1 << 14;

struct Chip {
    addr: AtomicU64,
    gsi_base: AtomicU32,
    lines: AtomicU32,
}

static CHIPS: [Chip; MAX_CHIPS] = [const {
    Chip {
        addr: AtomicU64::new(0),
        gsi_base: AtomicU32::new(0),
        lines: AtomicU32::new(0),
    }
}; MAX_CHIPS];
static LOCK: AtomicBool = AtomicBool::new(false);

fn with_lock<T>(f: impl FnOnce() -> T) -> T {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        super::cpu::relax();
    }
    let r = f();
    LOCK.store(false, Ordering::Release);
    r
}

fn read(base: u64, reg: u32) -> u32 {
    // SAFETY: base is an I/O APIC's register page from the MADT, in the identity-mapped,
    // uncached 4th GiB; IOREGSEL at +0, IOWIN at +0x10. Callers hold LOCK.
    unsafe {
        write_volatile(base as *mut u32, reg);
        read_volatile((base + 0x10) as *const u32)
    }
}

fn write(base: u64, reg: u32, v: u32) {
    // SAFETY: as read.
    unsafe {
        write_volatile(base as *mut u32, reg);
        write_volatile((base + 0x10) as *mut u32, v);
    }
}

/// Records the I/O APICs (address, first GSI) and masks every line of each.
pub fn init(chips: &[(u64, u32)]) -> usize {
    let mut n = 0;
    for (&(addr, gsi_base), c) in chips.iter().zip(CHIPS.iter()) {
        if addr == 0 || addr >= 1 << 32 {
            continue;
        }
        let lines = with_lock(|| {
            let lines = ((read(addr, 1) >> 16) & 0xFF) + 1;
            for i in 0..lines {
                write(addr, REDIR_BASE + 2 * i, MASKED);
                write(addr, REDIR_BASE + 2 * i + 1, 0);
            }
            lines
        });
        c.gsi_base.store(gsi_base, Ordering::Relaxed);
        c.lines.store(lines, Ordering::Relaxed);
        c.addr.store(addr, Ordering::Release);
        n += 1;
    }
    n
}

/// The chip and line of `gsi`.
fn find(gsi: u32) -> Option<(u64, u32)> {
    CHIPS.iter().find_map(|c| {
        let addr = c.addr.load(Ordering::Acquire);
        let base = c.gsi_base.load(Ordering::Relaxed);
        let lines = c.lines.load(Ordering::Relaxed);
        (addr != 0 && gsi >= base && gsi - base < lines).then_some((addr, gsi - base))
    })
}

/// Routes `gsi` to `vector` on the core with APIC id `dest` (fixed delivery, physical
/// destination), masked; [`unmask`] lets it through. Returns false if no I/O APIC has
/// the line or the destination does not fit (8 bits without interrupt remapping).
pub fn route(gsi: u32, vector: u8, dest: u32, level: bool, active_low: bool) -> bool {
    let Some((addr, line)) = find(gsi) else {
        return false;
    };
    if dest > 0xFF {
        return false;
    }
    let mut lo = vector as u32 | MASKED;
    if level {
        lo |= LEVEL;
    }
    if active_low {
        lo |= ACTIVE_LOW;
    }
    with_lock(|| {
        write(addr, REDIR_BASE + 2 * line, MASKED);
        write(addr, REDIR_BASE + 2 * line + 1, dest << 24);
        write(addr, REDIR_BASE + 2 * line, lo);
    });
    true
}

fn set_mask(gsi: u32, masked: bool) {
    if let Some((addr, line)) = find(gsi) {
        with_lock(|| {
            let lo = read(addr, REDIR_BASE + 2 * line);
            let lo = if masked { lo | MASKED } else { lo & !MASKED };
            write(addr, REDIR_BASE + 2 * line, lo);
        });
    }
}

/// Whether `gsi`'s level-triggered interrupt has been delivered and not yet ended by an
/// EOI (the redirection entry's Remote IRR bit): IRQ probing reads it with interrupts off.
pub fn delivered(gsi: u32) -> bool {
    match find(gsi) {
        Some((addr, line)) => with_lock(|| read(addr, REDIR_BASE + 2 * line)) & REMOTE_IRR != 0,
        None => false,
    }
}

/// Stops `gsi` from interrupting (the interrupt handler, for a level-triggered line).
pub fn mask(gsi: u32) {
    set_mask(gsi, true);
}

/// Lets `gsi` interrupt again.
pub fn unmask(gsi: u32) {
    set_mask(gsi, false);
}
