//! The console: COM1 (16550 UART at port 0x3F8), polled, transmit only.
//!
//! Every port access is a VM exit under virtualisation (~10-20 µs here), so output waits
//! for the transmitter once per 16 bytes (the FIFO depth), not once per byte, and the hot
//! path prints nothing unless asked (`log=access`, `log=stats`). A small spin lock makes
//! lines whole when several cores print (issue 4).

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::cpu::{inb, outb};

const COM1: u16 = 0x3F8;
const FIFO: usize = 16;

static LOCK: AtomicBool = AtomicBool::new(false);
static PRESENT: AtomicBool = AtomicBool::new(false);

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

struct Console;

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_bytes(s.as_bytes());
        Ok(())
    }
}

/// Prints formatted text, whole, under the console lock.
pub fn print(args: fmt::Arguments<'_>) {
    let mut spins = 0u64;
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins > 100_000_000 {
            break; // a holder died (exception while printing): print anyway
        }
        core::hint::spin_loop();
    }
    let _ = Console.write_fmt(args);
    LOCK.store(false, Ordering::Release);
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
