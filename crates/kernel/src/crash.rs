//! Failures on purpose (`crash=` on the command line), for the tests of the kernel's
//! failure reports: a panic or a page fault on the boot CPU, a page fault or a stack
//! overflow on the last application core.

use crate::cmdline::Crash;
use crate::kprintln;

/// `crash=panic` and `crash=fault`: fail on the boot CPU, right after the command line.
pub fn early(crash: Option<Crash>) {
    match crash {
        Some(Crash::Panic) => panic!("crash=panic on the command line"),
        Some(Crash::Fault) => {
            // SAFETY: deliberately reads an unmapped address (above the 4 GiB identity
            // map) to raise a page fault; the handler reports it and stops.
            let v = unsafe { core::ptr::read_volatile(0x10_0000_0000 as *const u64) };
            kprintln!("crash=fault: read {v} and did not fault");
        }
        _ => {}
    }
}

/// `crash=fault-ap` and `crash=overflow-ap`: fail on an application core, before it
/// serves.
pub fn on_ap(crash: Option<Crash>) {
    match crash {
        Some(Crash::FaultAp) => {
            // SAFETY: deliberately reads an unmapped address to raise a page fault
            // on this core; the handler reports it and stops the machine.
            let v = unsafe { core::ptr::read_volatile(0x10_0000_0000 as *const u64) };
            kprintln!("crash=fault-ap: read {v} and did not fault");
        }
        Some(Crash::OverflowAp) => {
            let v = recurse(1);
            kprintln!("crash=overflow-ap: returned {v}");
        }
        _ => {}
    }
}

/// Whether `crash` fails on an application core.
pub fn wants_ap(crash: Option<Crash>) -> bool {
    matches!(crash, Some(Crash::FaultAp | Crash::OverflowAp))
}

/// Recursion that only a stack's end stops (`crash=overflow-ap`).
#[inline(never)]
fn recurse(n: u64) -> u64 {
    let frame = core::hint::black_box([n; 32]);
    if n == u64::MAX {
        return 0;
    }
    recurse(n + 1).wrapping_add(frame[7])
}
