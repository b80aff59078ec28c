//! Single-instruction wrappers: port I/O, time stamp counter, CPUID, control registers,
//! random numbers. Each `unsafe fn` wraps one instruction with exact `options(..)`.

use core::arch::asm;
use core::sync::atomic::{AtomicBool, Ordering};

static PAUSE: AtomicBool = AtomicBool::new(false);

/// Decides once, on the boot CPU, how [`relax`] waits: `pause` on a bare machine, nothing
/// under a hypervisor (CPUID.1:ECX bit 31), where PAUSE costs more than it saves: QEMU's
/// TCG implements it by leaving the translated code (`helper_pause` → `cpu_loop_exit`),
/// and its multi-threaded vCPU loop then takes QEMU's global lock before going round, so
/// spinning cores would keep taking the lock QEMU's I/O thread and waking vCPUs need;
/// KVM turns tight PAUSE loops into pause-loop exits. Returns whether PAUSE is used.
pub fn init_relax() -> bool {
    let bare = cpuid(1, 0).2 & (1 << 31) == 0;
    PAUSE.store(bare, Ordering::Relaxed);
    bare
}

/// One turn of a polling loop (see [`init_relax`]).
#[inline]
pub fn relax() {
    if PAUSE.load(Ordering::Relaxed) {
        core::hint::spin_loop();
    }
}

/// Writes a byte to an I/O port.
///
/// # Safety
/// The port must belong to a device whose state the caller owns.
#[inline]
pub unsafe fn outb(port: u16, v: u8) {
    // SAFETY: the caller owns the device behind `port`; `out` touches no memory.
    unsafe {
        asm!("out dx, al", in("dx") port, in("al") v, options(nomem, nostack, preserves_flags))
    }
}

/// Reads a byte from an I/O port.
///
/// # Safety
/// As [`outb`]: reading some ports changes device state.
#[inline]
pub unsafe fn inb(port: u16) -> u8 {
    let v: u8;
    // SAFETY: the caller owns the device behind `port`; `in` touches no memory.
    unsafe {
        asm!("in al, dx", out("al") v, in("dx") port, options(nomem, nostack, preserves_flags))
    };
    v
}

/// Writes a word to an I/O port.
///
/// # Safety
/// As [`outb`].
#[inline]
pub unsafe fn outw(port: u16, v: u16) {
    // SAFETY: the caller owns the device behind `port`; `out` touches no memory.
    unsafe {
        asm!("out dx, ax", in("dx") port, in("ax") v, options(nomem, nostack, preserves_flags))
    }
}

/// Reads a word from an I/O port.
///
/// # Safety
/// As [`outb`].
#[inline]
pub unsafe fn inw(port: u16) -> u16 {
    let v: u16;
    // SAFETY: the caller owns the device behind `port`; `in` touches no memory.
    unsafe {
        asm!("in ax, dx", out("ax") v, in("dx") port, options(nomem, nostack, preserves_flags))
    };
    v
}

/// Writes a double word to an I/O port.
///
/// # Safety
/// As [`outb`].
#[inline]
pub unsafe fn outl(port: u16, v: u32) {
    // SAFETY: the caller owns the device behind `port`; `out` touches no memory.
    unsafe {
        asm!("out dx, eax", in("dx") port, in("eax") v, options(nomem, nostack, preserves_flags))
    }
}

/// Reads a double word from an I/O port.
///
/// # Safety
/// As [`outb`].
#[inline]
pub unsafe fn inl(port: u16) -> u32 {
    let v: u32;
    // SAFETY: the caller owns the device behind `port`; `in` touches no memory.
    unsafe {
        asm!("in eax, dx", out("eax") v, in("dx") port, options(nomem, nostack, preserves_flags))
    };
    v
}

/// The time stamp counter.
#[inline]
pub fn rdtsc() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: rdtsc only reads the counter (CR4.TSD is clear: we never set it).
    unsafe {
        asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    };
    ((hi as u64) << 32) | lo as u64
}

/// CPUID leaf `leaf`, sub-leaf `sub`: (eax, ebx, ecx, edx).
#[inline]
pub fn cpuid(leaf: u32, sub: u32) -> (u32, u32, u32, u32) {
    let r = core::arch::x86_64::__cpuid_count(leaf, sub);
    (r.eax, r.ebx, r.ecx, r.edx)
}

/// CR2: the address of the last page fault.
#[inline]
pub fn cr2() -> u64 {
    let v: u64;
    // SAFETY: reading CR2 has no side effects (ring 0).
    unsafe { asm!("mov {}, cr2", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// A hardware random number, when the CPU has RDRAND and it delivers within 10 tries.
pub fn rdrand() -> Option<u64> {
    if cpuid(1, 0).2 & (1 << 30) == 0 {
        return None;
    }
    for _ in 0..10 {
        let v: u64;
        let ok: u8;
        // SAFETY: CPUID said RDRAND exists; it only writes the two output registers.
        unsafe {
            asm!("rdrand {}", "setc {}", out(reg) v, out(reg_byte) ok, options(nomem, nostack))
        };
        if ok != 0 {
            return Some(v);
        }
    }
    None
}

/// A seed-grade hardware random number (RDSEED: straight from the entropy conditioner,
/// not a DRBG's output), when the CPU has it (CPUID.7.0:EBX bit 18) and it delivers
/// within 100 tries. RDSEED may run dry when asked fast (Intel's DRNG guide: retry with
/// a pause), so the bound is larger than RDRAND's.
pub fn rdseed() -> Option<u64> {
    if cpuid(0, 0).0 < 7 || cpuid(7, 0).1 & (1 << 18) == 0 {
        return None;
    }
    for _ in 0..100 {
        let v: u64;
        let ok: u8;
        // SAFETY: CPUID said RDSEED exists; it only writes the two output registers.
        unsafe {
            asm!("rdseed {}", "setc {}", out(reg) v, out(reg_byte) ok, options(nomem, nostack))
        };
        if ok != 0 {
            return Some(v);
        }
        core::hint::spin_loop();
    }
    None
}

/// Stops this CPU for good: interrupts off, `hlt` forever.
pub fn halt_forever() -> ! {
    loop {
        // SAFETY: cli; hlt only stops this CPU; nothing runs after it.
        unsafe { asm!("cli", "hlt", options(nomem, nostack)) };
    }
}

/// Reads a model-specific register.
///
/// # Safety
/// The MSR must exist (else #GP).
#[inline]
pub unsafe fn rdmsr(msr: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: the caller guarantees the MSR exists; rdmsr touches no memory.
    unsafe {
        asm!("rdmsr", in("ecx") msr, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    };
    (hi as u64) << 32 | lo as u64
}

/// Writes a model-specific register.
///
/// # Safety
/// The MSR must exist and the value must be valid for it (else #GP), and changing it must
/// not break what the rest of the kernel assumes.
#[inline]
pub unsafe fn wrmsr(msr: u32, v: u64) {
    // SAFETY: forwarded to the caller.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") v as u32, in("edx") (v >> 32) as u32, options(nomem, nostack, preserves_flags))
    };
}
