//! The console: COM1 (16550 UART at port 0x3F8), polled, transmit only, and the screen
//! ([`crate::fbcon`]) when the loader set up a framebuffer. Every line goes to both.
//!
//! - **Serial**: found by its scratch register (a PC without a legacy port reads 0xFF
//!   there); when absent, nothing is written to it (no port I/O wasted on missing
//!   hardware). Every port access is a VM exit under virtualisation (~10-20 µs here), so
//!   output waits for the transmitter once per 16 bytes (the FIFO depth), not once per
//!   byte, and the hot path prints nothing unless asked (`log=access`, `log=stats`).
//! - **Screen**: attached once the heap exists ([`attach_screen`]: a framebuffer above
//!   4 GiB needs page tables); what was printed before is kept (up to 4 KiB) and drawn
//!   then, so the screen shows the boot from its first line.
//!
//! A small spin lock makes lines whole when several cores print, and guards the
//! screen's text.

use core::cell::UnsafeCell;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::cpu::{inb, outb};
use crate::boot_info::Framebuffer;
use crate::fbcon::{Geometry, Refused, Screen};

const COM1: u16 = 0x3F8;
const FIFO: usize = 16;

static LOCK: AtomicBool = AtomicBool::new(false);
static PRESENT: AtomicBool = AtomicBool::new(false);

/// Bytes printed before the screen is attached, kept to draw then.
const EARLY_MAX: usize = 4096;

/// The screen and the early text: touched only under [`LOCK`].
struct Shared {
    screen: Screen,
    early: [u8; EARLY_MAX],
    early_len: usize,
    /// [`print_busy`]'s rate limit.
    busy: RateLimit,
    /// The TSC's rate (0 until known: no rate limit).
    tsc_hz: u64,
}

/// At most [`BUSY_LINES_PER_SEC`] lines in each second (by the TSC), counting the rest.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct RateLimit {
    /// The TSC at the start of the current second.
    since: u64,
    /// Lines let through in it.
    drawn: u32,
    /// Lines refused since the last one let through.
    skipped: u64,
}

impl RateLimit {
    /// Whether a line at TSC `now` may be drawn (`hz`: the TSC's rate): `Some(n)` with
    /// the lines refused before it, or None (counted).
    fn allow(&mut self, now: u64, hz: u64) -> Option<u64> {
        if now.wrapping_sub(self.since) >= hz {
            self.since = now;
            self.drawn = 0;
        }
        if self.drawn >= BUSY_LINES_PER_SEC {
            self.skipped += 1;
            return None;
        }
        self.drawn += 1;
        Some(core::mem::take(&mut self.skipped))
    }
}

/// Per-request lines (the access log) drawn on the screen per second at most: drawing a
/// line costs far more than sending it to the UART (measured: docs/kernel.md), and a
/// screen scrolling faster than this cannot be read anyway.
const BUSY_LINES_PER_SEC: u32 = 20;

struct Locked(UnsafeCell<Shared>);

// SAFETY: the contents are only reached through `with_shared`, by the holder of LOCK.
unsafe impl Sync for Locked {}

static SHARED: Locked = Locked(UnsafeCell::new(Shared {
    screen: Screen::new(),
    early: [0; EARLY_MAX],
    early_len: 0,
    busy: RateLimit {
        since: 0,
        drawn: 0,
        skipped: 0,
    },
    tsc_hz: 0,
}));

/// Runs `f` on the shared console state.
///
/// # Safety
/// The caller holds LOCK (acquired, not given up on).
unsafe fn with_shared<R>(f: impl FnOnce(&mut Shared) -> R) -> R {
    // SAFETY: LOCK is held (caller): no other reference exists meanwhile.
    f(unsafe { &mut *SHARED.0.get() })
}

/// Sets COM1 to 115200 8N1 with FIFOs on, if a UART answers there.
pub fn init() {
    // SAFETY: COM1's ports belong to the console, which only this module drives.
    unsafe {
        outb(COM1 + 7, 0xA5); // scratch register: is there a UART?
        if inb(COM1 + 7) != 0xA5 {
            return;
        }
        outb(COM1 + 1, 0x00); // no interrupts
        outb(COM1 + 3, 0x80); // DLAB
        outb(COM1, 0x01); // divisor 1: 115200 baud
        outb(COM1 + 1, 0x00);
        outb(COM1 + 3, 0x03); // 8N1
        outb(COM1 + 2, 0xC7); // FIFO on, cleared, 14-byte threshold
        outb(COM1 + 4, 0x03); // DTR, RTS
    }
    PRESENT.store(true, Ordering::Relaxed);
}

/// Whether a UART answered at COM1.
pub fn serial_present() -> bool {
    PRESENT.load(Ordering::Relaxed)
}

fn write_bytes(b: &[u8]) {
    if !PRESENT.load(Ordering::Relaxed) {
        return;
    }
    for chunk in b.chunks(FIFO) {
        let mut spins = 0u32;
        // SAFETY: COM1 belongs to the console; reading LSR has no side effect on output.
        while unsafe { inb(COM1 + 5) } & 0x20 == 0 && spins < 1_000_000 {
            spins += 1;
            core::hint::spin_loop();
        }
        for &c in chunk {
            // SAFETY: THR is empty (or we gave up waiting); writing it sends one byte.
            unsafe { outb(COM1, c) };
        }
    }
}

/// The console writer; `screen`: LOCK is held and the text goes to the screen too.
struct Console {
    screen: bool,
}

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_bytes(s.as_bytes());
        if self.screen {
            // SAFETY: LOCK is held (self.screen).
            unsafe {
                with_shared(|sh| {
                    if sh.screen.attached() {
                        for &b in s.as_bytes() {
                            sh.screen.write_byte(b);
                        }
                    } else {
                        let n = s.len().min(EARLY_MAX - sh.early_len);
                        sh.early[sh.early_len..sh.early_len + n]
                            .copy_from_slice(&s.as_bytes()[..n]);
                        sh.early_len += n;
                    }
                })
            };
        }
        Ok(())
    }
}

/// Takes LOCK; false if a holder seems dead (an exception while printing), in which case
/// the caller prints to the serial port anyway but leaves the screen alone.
fn lock() -> bool {
    let mut spins = 0u64;
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins > 100_000_000 {
            return false;
        }
        core::hint::spin_loop();
    }
    true
}

/// Prints formatted text, whole, under the console lock.
pub fn print(args: fmt::Arguments<'_>) {
    let locked = lock();
    let _ = Console { screen: locked }.write_fmt(args);
    LOCK.store(false, Ordering::Release);
}

/// Prints a line of per-request output (the access log): whole to the serial port, and
/// to the screen at most [`BUSY_LINES_PER_SEC`] lines a second; the lines left off the
/// screen are counted, and the next line drawn says how many.
pub fn print_busy(args: fmt::Arguments<'_>) {
    let locked = lock();
    let screen = locked && {
        // SAFETY: LOCK is held.
        unsafe {
            with_shared(|sh| {
                if !sh.screen.attached() || sh.tsc_hz == 0 {
                    return true;
                }
                let Some(skipped) = sh.busy.allow(crate::arch::cpu::rdtsc(), sh.tsc_hz) else {
                    return false;
                };
                if skipped > 0 {
                    let mut note = Note([0; 80], 0);
                    let _ = writeln!(
                        note,
                        "({skipped} lines not drawn: {BUSY_LINES_PER_SEC} a second at most)"
                    );
                    for &b in &note.0[..note.1] {
                        sh.screen.write_byte(b);
                    }
                }
                true
            })
        }
    };
    let _ = Console { screen }.write_fmt(args);
    LOCK.store(false, Ordering::Release);
}

/// A short line formatted without allocating (cut at its size).
struct Note([u8; 80], usize);

impl Write for Note {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(self.0.len() - self.1);
        self.0[self.1..self.1 + n].copy_from_slice(&s.as_bytes()[..n]);
        self.1 += n;
        Ok(())
    }
}

/// Starts drawing the console on the loader's framebuffer, checked first, mapped when it
/// lies above the 4 GiB identity map, cleared, then showing what was printed so far.
/// Returns the checked geometry, or why the screen is not used.
///
/// On the boot CPU, once the heap exists, before any other core runs.
pub fn attach_screen(fb: &Framebuffer) -> Result<Geometry, Refused> {
    let g = Geometry::check(fb)?;
    let end = g.addr + g.len();
    // Where a framebuffer can be: the VGA text window for EGA text, else above the first
    // MiB (the kernel's low pages) and clear of the kernel itself.
    let k = crate::mem::kernel_span();
    let placed = match g.mode {
        crate::fbcon::Mode::EgaText => g.addr >= 0xA_0000 && end <= 0xC_0000,
        _ => g.addr >= 0x10_0000 && (end <= k.start || g.addr >= k.end),
    };
    if !placed {
        return Err(Refused::Address);
    }
    if end > 1 << 32 {
        let from = g.addr.max(1 << 32);
        // SAFETY: on the boot CPU before the others run (caller); the range is the
        // framebuffer, device memory the loader described.
        if unsafe { crate::arch::paging::map_mmio(from, end - from) }.is_err() {
            return Err(Refused::Address);
        }
    }
    let locked = lock();
    if locked {
        // SAFETY: LOCK is held; the framebuffer is mapped (identity map below 4 GiB, or
        // just now) and is ours: the loader handed it over, nothing else draws.
        unsafe {
            with_shared(|sh| {
                sh.screen.attach(g);
                for i in 0..sh.early_len {
                    let b = sh.early[i];
                    sh.screen.write_byte(b);
                }
                sh.early_len = 0;
            })
        };
    }
    LOCK.store(false, Ordering::Release);
    if locked {
        Ok(g)
    } else {
        Err(Refused::Address)
    }
}

/// Frees the lock (from the panic and exception paths, which may interrupt a print).
pub fn force_unlock() {
    LOCK.store(false, Ordering::Release);
}

/// Prints to the console.
#[macro_export]
macro_rules! kprint {
    ($($arg:tt)*) => { $crate::console::print(format_args!($($arg)*)) };
}

/// Prints a line to the console.
#[macro_export]
macro_rules! kprintln {
    () => { $crate::console::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::console::print(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Attaches the screen if the loader gave a framebuffer ([`attach_screen`]) and says on
/// the console which consoles there are, and what clearing and drawing the screen so far
/// took (`tsc_hz`: the TSC's rate). On the boot CPU, once the heap exists, before any
/// other core runs.
pub fn screen_up(info: &crate::boot_info::BootInfo, tsc_hz: u64) {
    let t = crate::arch::cpu::rdtsc();
    if lock() {
        // SAFETY: LOCK is held.
        unsafe { with_shared(|sh| sh.tsc_hz = tsc_hz) };
    }
    LOCK.store(false, Ordering::Release);
    let serial = if serial_present() {
        "serial COM1"
    } else {
        "no serial port (COM1 does not answer)"
    };
    match info.framebuffer.as_ref().map(attach_screen) {
        None => crate::kprintln!("console: {serial}; no framebuffer from the loader"),
        Some(Ok(g)) => crate::kprintln!(
            "console: {serial}; screen {}x{} {} bpp at {:#x}, {}x{} text (cleared and drawn in {} us)",
            g.width,
            g.lines,
            g.bpp,
            g.addr,
            g.cols,
            g.rows,
            (crate::arch::cpu::rdtsc() - t) * 1_000_000 / tsc_hz.max(1)
        ),
        Some(Err(why)) => crate::kprintln!("console: {serial}; screen not used: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_lines_are_rate_limited_per_second_and_the_rest_counted() {
        let hz = 1_000_000;
        let mut r = RateLimit::default();
        let t0 = 5 * hz;
        for k in 0..BUSY_LINES_PER_SEC as u64 {
            assert_eq!(r.allow(t0 + k, hz), Some(0));
        }
        assert_eq!(r.allow(t0 + 100, hz), None);
        assert_eq!(r.allow(t0 + hz - 1, hz), None);
        // A new second: the next line through says how many were left off.
        assert_eq!(r.allow(t0 + hz, hz), Some(2));
        assert_eq!(r.allow(t0 + hz + 1, hz), Some(0));
        let mut n = Note([0; 80], 0);
        let _ = write!(n, "{}", "x".repeat(100));
        assert_eq!(n.1, 80, "a note is cut at its size");
    }
}
