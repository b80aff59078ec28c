//! The local APIC: x2APIC (MSRs) when the CPU offers it, else xAPIC (MMIO at the address
//! in IA32_APIC_BASE): starting and stopping the other cores (INIT, STARTUP and NMI
//! inter-processor interrupts), the wake-up IPI between cores, the end-of-interrupt write,
//! and the one-shot timer of an idle core (TSC-deadline mode where the CPU has it, else
//! one-shot counting at a rate measured against the TSC at boot). Interrupts reach a
//! core only while it halts ([`super::irq`]).
//!
//! Heads up! read Intel SDM vol. 3A §10.4 (APIC base and enabling), §10.5.4 (the APIC
//! timer, TSC-deadline mode), §10.6 (ICR), §10.8.5 (EOI), §10.12 (x2APIC), §8.4.4 (the
//! INIT-SIPI-SIPI sequence).
//!
//! The mode is chosen once by the boot CPU ([`init_bsp`]) and every other core switches to
//! the same mode ([`init_ap`]): all APICs of a system must be in one mode.

use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use super::cpu::{cpuid, rdmsr, wrmsr};

const IA32_APIC_BASE: u32 = 0x1B;
const BASE_ENABLE: u64 = 1 << 11;
const BASE_X2APIC: u64 = 1 << 10;
/// x2APIC MSR of a register at xAPIC offset `off`.
const fn x2msr(off: usize) -> u32 {
    0x800 + (off as u32 >> 4)
}

const REG_ID: usize = 0x20;
const REG_TPR: usize = 0x80;
const REG_EOI: usize = 0xB0;
const REG_SVR: usize = 0xF0;
const REG_ICR_LO: usize = 0x300;
const REG_ICR_HI: usize = 0x310;
const REG_LVT_TIMER: usize = 0x320;
const REG_LVT_LINT0: usize = 0x350;
const REG_LVT_ERROR: usize = 0x370;
const REG_TIMER_INIT: usize = 0x380;
const REG_TIMER_CUR: usize = 0x390;
const REG_TIMER_DIV: usize = 0x3E0;

const LVT_MASKED: u32 = 1 << 16;
const LVT_TSC_DEADLINE: u32 = 0b10 << 17;
const IA32_TSC_DEADLINE: u32 = 0x6E0;
/// Divide configuration 1011: the timer counts at the APIC bus rate.
const DIV_1: u32 = 0b1011;

const SVR_ENABLE: u32 = 1 << 8;
const SPURIOUS_VECTOR: u32 = 0xFF;

const ICR_FIXED: u32 = 0;
const ICR_INIT: u32 = 0b101 << 8;
const ICR_STARTUP: u32 = 0b110 << 8;
const ICR_NMI: u32 = 0b100 << 8;
const ICR_ASSERT: u32 = 1 << 14;
const ICR_PENDING: u32 = 1 << 12;
const ICR_ALL_BUT_SELF: u32 = 0b11 << 18;

/// Which interface the APICs are driven through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Not set up (before [`init_bsp`], or no APIC at all).
    None,
    /// Memory-mapped registers (8-bit APIC ids).
    XApic,
    /// MSRs (32-bit APIC ids).
    X2Apic,
}

static MODE: AtomicU8 = AtomicU8::new(0);
static XAPIC_BASE: AtomicU64 = AtomicU64::new(0);

fn mode() -> Mode {
    match MODE.load(Ordering::Acquire) {
        1 => Mode::XApic,
        2 => Mode::X2Apic,
        _ => Mode::None,
    }
}

/// Whether this CPU has an APIC at all, and x2APIC support.
fn features() -> (bool, bool) {
    let (_, _, ecx, edx) = cpuid(1, 0);
    (edx & (1 << 9) != 0, ecx & (1 << 21) != 0)
}

/// Sets the boot CPU's APIC up: x2APIC if offered and `allow_x2apic`, xAPIC otherwise.
/// Returns the mode (None when the CPU has no APIC: then there is one core).
pub fn init_bsp(allow_x2apic: bool) -> Mode {
    let (has, x2) = features();
    if !has {
        return Mode::None;
    }
    // SAFETY: CPUID says there is an APIC, so IA32_APIC_BASE exists.
    let base = unsafe { rdmsr(IA32_APIC_BASE) };
    let m = if x2 && allow_x2apic {
        Mode::X2Apic
    } else if base & BASE_X2APIC != 0 {
        // Firmware left x2APIC on: leaving it requires disabling the APIC altogether
        // (SDM §10.12.5); keep it.
        Mode::X2Apic
    } else {
        Mode::XApic
    };
    XAPIC_BASE.store(base & 0x000F_FFFF_FFFF_F000, Ordering::Relaxed);
    MODE.store(
        match m {
            Mode::XApic => 1,
            _ => 2,
        },
        Ordering::Release,
    );
    enable(m);
    m
}

/// Switches this (application) core's APIC to the boot CPU's mode and enables it.
pub fn init_ap() {
    enable(mode());
}

fn enable(m: Mode) {
    if m == Mode::None {
        return;
    }
    // SAFETY: init_bsp saw an APIC; every core of the system has one.
    let mut base = unsafe { rdmsr(IA32_APIC_BASE) };
    // Disabled → xAPIC → x2APIC: going from disabled straight to x2APIC is an invalid
    // transition (SDM §10.12.5, figure 10-27).
    if base & BASE_ENABLE == 0 {
        base |= BASE_ENABLE;
        // SAFETY: setting EN keeps the base address; the documented way to enable xAPIC.
        unsafe { wrmsr(IA32_APIC_BASE, base) };
    }
    if m == Mode::X2Apic && base & BASE_X2APIC == 0 {
        // SAFETY: xAPIC → x2APIC is a valid transition; CPUID offered x2APIC on the boot
        // CPU, and the cores of one system offer the same features.
        unsafe { wrmsr(IA32_APIC_BASE, base | BASE_X2APIC) };
    }
    let svr = read(REG_SVR);
    write(REG_SVR, svr | SVR_ENABLE | SPURIOUS_VECTOR);
    // The legacy PIC's line (LINT0, ExtINT in the firmware's virtual-wire mode), the timer
    // and the error LVT masked: nothing reaches the core but what the kernel arms.
    write(REG_LVT_LINT0, LVT_MASKED);
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_LVT_ERROR, LVT_MASKED);
    // Every interrupt class accepted. Written last, after LINT0 is masked: a TPR write
    // makes the APIC look again at what it has pending, so an ExtINT request the PIC made
    // through LINT0 before the mask is withdrawn, not left to be taken at the first `sti`
    // (QEMU's TCG APIC then delivers vector -1: a #GP, see `super::irq::mask_legacy_pic`).
    write(REG_TPR, 0);
}

fn read(off: usize) -> u32 {
    match mode() {
        // SAFETY: x2APIC mode is on (MODE says so on every core after init): the MSR exists.
        Mode::X2Apic => unsafe { rdmsr(x2msr(off)) as u32 },
        Mode::XApic => {
            let p = (XAPIC_BASE.load(Ordering::Relaxed) as usize + off) as *const u32;
            // SAFETY: the xAPIC page lies in the identity-mapped, uncached 4th GiB;
            // registers are 32-bit aligned.
            unsafe { core::ptr::read_volatile(p) }
        }
        Mode::None => 0,
    }
}

fn write(off: usize, v: u32) {
    match mode() {
        // SAFETY: as in read; writes of SVR and ICR only.
        Mode::X2Apic => unsafe { wrmsr(x2msr(off), v as u64) },
        Mode::XApic => {
            let p = (XAPIC_BASE.load(Ordering::Relaxed) as usize + off) as *mut u32;
            // SAFETY: as in read.
            unsafe { core::ptr::write_volatile(p, v) }
        }
        Mode::None => {}
    }
}

/// This core's APIC id (from CPUID when the APIC is not set up yet).
pub fn id() -> u32 {
    match mode() {
        Mode::X2Apic => read(REG_ID),
        Mode::XApic => read(REG_ID) >> 24,
        Mode::None => {
            let (max, ..) = cpuid(0, 0);
            if max >= 0xB {
                cpuid(0xB, 0).3
            } else {
                cpuid(1, 0).1 >> 24
            }
        }
    }
}

/// Sends an inter-processor interrupt: `low` is the ICR's low word, `dest` the APIC id.
/// Waits (bounded) until an xAPIC has sent it.
fn send(dest: u32, low: u32) {
    match mode() {
        Mode::X2Apic => {
            // SAFETY: x2APIC ICR is one 64-bit MSR write: destination in the high half.
            unsafe { wrmsr(x2msr(REG_ICR_LO), (dest as u64) << 32 | low as u64) };
        }
        Mode::XApic => {
            write(REG_ICR_HI, dest << 24);
            write(REG_ICR_LO, low);
            let mut spins = 0u32;
            while read(REG_ICR_LO) & ICR_PENDING != 0 && spins < 1_000_000 {
                spins += 1;
                super::cpu::relax();
            }
        }
        Mode::None => {}
    }
}

/// INIT (assert) to the core with APIC id `dest`: it resets into wait-for-SIPI.
pub fn send_init(dest: u32) {
    send(dest, ICR_INIT | ICR_ASSERT);
}

/// STARTUP to `dest`: it starts in real mode at `page * 4096` (CS = page << 8, IP = 0).
pub fn send_startup(dest: u32, page: u8) {
    send(dest, ICR_STARTUP | ICR_ASSERT | page as u32);
}

/// NMI to every other core (stopping the machine after a fatal error). Nothing happens
/// when the APIC was never set up (one core).
pub fn nmi_all_others() {
    send(0, ICR_NMI | ICR_ASSERT | ICR_ALL_BUT_SELF);
}

/// The mode in use.
pub fn current() -> Mode {
    mode()
}

/// A fixed interrupt on `vector` to the core with APIC id `dest` (the wake-up IPI).
pub fn send_ipi(dest: u32, vector: u8) {
    send(dest, ICR_FIXED | ICR_ASSERT | vector as u32);
}

/// End of interrupt: the in-service interrupt of this core is done.
pub fn eoi() {
    write(REG_EOI, 0);
}

/// Whether the CPU has the TSC-deadline timer mode (CPUID.1:ECX bit 24).
pub fn has_tsc_deadline() -> bool {
    cpuid(1, 0).2 & (1 << 24) != 0
}

/// How this core's one-shot timer is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// IA32_TSC_DEADLINE takes the TSC value to fire at.
    TscDeadline,
    /// The initial-count register counts down at this many ticks per second (divide 1).
    OneShot {
        /// Timer ticks per second, measured against the TSC.
        hz: u64,
        /// TSC ticks per second.
        tsc_hz: u64,
    },
}

/// Measures the timer's count rate against the TSC (`tsc_hz`): the median of five
/// windows of `window_us` each, every end a (TSC, count) pair read back to back, bracketed
/// by TSC reads so a pair split by a descheduled vCPU (an MMIO read under an emulator may
/// wait for a lock) is read again. Masked, so it never interrupts. Returns ticks per
/// second (0 if the timer did not move).
pub fn measure_timer_hz(tsc_hz: u64, window_us: u64) -> u64 {
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_TIMER_DIV, DIV_1);
    let tight = (tsc_hz / 100_000).max(1); // a pair must be read within 10 µs
    let pair = || {
        let mut best = (0, 0, u64::MAX);
        for _ in 0..8 {
            let a = super::cpu::rdtsc();
            let c = read(REG_TIMER_CUR);
            let b = super::cpu::rdtsc();
            if b - a < best.2 {
                best = (a + (b - a) / 2, c, b - a);
            }
            if b - a <= tight {
                break;
            }
        }
        (best.0, best.1)
    };
    let mut rates = [0u64; 5];
    for r in rates.iter_mut() {
        write(REG_TIMER_INIT, u32::MAX);
        let (t0, c0) = pair();
        let end = t0 + tsc_hz / 1_000_000 * window_us;
        while super::cpu::rdtsc() < end {
            super::cpu::relax();
        }
        let (t1, c1) = pair();
        let ticks = c0.saturating_sub(c1) as u128;
        *r = (ticks * tsc_hz as u128 / (t1 - t0).max(1) as u128) as u64;
    }
    write(REG_TIMER_INIT, 0);
    rates.sort_unstable();
    rates[2]
}

/// Starts the timer counting down from its largest count, masked (a calibration window).
pub fn timer_start_count() {
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_TIMER_DIV, DIV_1);
    write(REG_TIMER_INIT, u32::MAX);
}

/// The timer's current count.
pub fn timer_count() -> u32 {
    read(REG_TIMER_CUR)
}

/// Arms this core's timer to raise `vector` at TSC value `at` (`now` is the TSC now).
pub fn arm_timer(t: Timer, vector: u8, at: u64, now: u64) {
    match t {
        Timer::TscDeadline => {
            write(REG_LVT_TIMER, LVT_TSC_DEADLINE | vector as u32);
            // SAFETY: CPUID said TSC-deadline mode exists, so the MSR does; the write
            // only arms this core's timer (SDM §10.5.4.1: the LVT write comes first).
            unsafe { wrmsr(IA32_TSC_DEADLINE, at.max(1)) };
        }
        Timer::OneShot { hz, tsc_hz } => {
            write(REG_LVT_TIMER, vector as u32);
            write(REG_TIMER_DIV, DIV_1);
            let ticks = (at.saturating_sub(now) as u128 * hz as u128 / tsc_hz.max(1) as u128)
                .clamp(1, u32::MAX as u128);
            write(REG_TIMER_INIT, ticks as u32);
        }
    }
}

/// Stops this core's timer (a fire already pending stays pending: a spurious wake-up).
pub fn disarm_timer(t: Timer) {
    match t {
        // SAFETY: as in arm_timer; 0 disarms.
        Timer::TscDeadline => unsafe { wrmsr(IA32_TSC_DEADLINE, 0) },
        Timer::OneShot { .. } => write(REG_TIMER_INIT, 0),
    }
    write(REG_LVT_TIMER, LVT_MASKED);
}
