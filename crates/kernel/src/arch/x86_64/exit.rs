//! Stopping: through QEMU's isa-debug-exit device (port 0xF4) when present, so tests see
//! an exit status instead of a hung VM; on a real PC the write is ignored and the CPU
//! halts.
//!
//! QEMU exits with `(code << 1) | 1`: [`fail`] writes 0x11 (exit status 35), [`finish`]
//! 0x10 (33).

use crate::arch::cpu::{halt_forever, outb};

const DEBUG_EXIT: u16 = 0xF4;
/// Written on a panic or CPU exception: QEMU exits with 35.
pub const FAIL: u8 = 0x11;

/// Written when a run ends as it should (the bare client's): QEMU exits with 33.
pub const DONE: u8 = 0x10;

/// Stops after a finished run: every other core is halted (NMI), then QEMU exits with 33.
pub fn finish() -> ! {
    crate::arch::smp::stop_others();
    // SAFETY: port 0xF4 is isa-debug-exit under QEMU (the VM stops) and unused on a PC.
    unsafe { outb(DEBUG_EXIT, DONE) };
    halt_forever()
}

/// Stops after a fatal error: every other core is halted (NMI), then QEMU exits.
pub fn fail() -> ! {
    crate::arch::smp::stop_others();
    // SAFETY: port 0xF4 is isa-debug-exit under QEMU (the VM stops) and unused on a PC.
    unsafe { outb(DEBUG_EXIT, FAIL) };
    halt_forever()
}
