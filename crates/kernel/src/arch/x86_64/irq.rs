//! Interrupts, used for one thing only: waking a halted core. A core polls with interrupts
//! off (IF clear) and enables them only inside [`halt`] (`sti; hlt`), so a handler runs
//! only while its core sleeps, never in the middle of the engine's work; the engine still
//! runs to completion in the core's loop.
//!
//! Heads up! read Intel SDM vol. 3A §6.8.1 (`sti` delays interrupts by one instruction:
//! `sti; hlt` cannot miss an interrupt between the two), §6.14 (64-bit interrupt frames),
//! §10.8 (EOI), §10.9 (spurious interrupts).
//!
//! - Vectors: [`WAKE_VECTOR`] (the wake-up IPI of a network-core ring producer),
//!   [`TIMER_VECTOR`] (the local APIC timer armed for the next deadline), [`NIC_VECTOR`]
//!   (the NIC: virtio-net MSI-X, or a level-triggered line through the I/O APIC for the
//!   e1000 and virtio-mmio), `power::SCI_VECTOR` (the ACPI SCI: the power button, on
//!   core 0; counted as stray), 0xFF spurious. Any other vector is counted as stray.
//! - A handler counts its vector for the core, masks a level-triggered line at the I/O
//!   APIC (its device keeps the line asserted until the driver acknowledges the cause;
//!   the core unmasks it when it next arms the device) and writes EOI. Nothing else.
//! - The legacy 8259 PICs are masked once at boot, before the local APIC's LINT0 is
//!   masked ([`super::apic`]; the order matters: [`mask_legacy_pic`]), so nothing
//!   arrives that was not armed.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::smp::MAX_CPUS;
use super::{apic, cpu};

/// The wake-up IPI between cores.
pub const WAKE_VECTOR: u8 = 0xF0;
/// The local APIC timer.
pub const TIMER_VECTOR: u8 = 0xF1;
/// The NIC.
pub const NIC_VECTOR: u8 = 0xF2;
/// The local APIC's spurious vector.
pub const SPURIOUS_VECTOR: u8 = 0xFF;

/// Which interrupt woke a core, as counted by the handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The NIC.
    Device = 0,
    /// The timer.
    Timer = 1,
    /// Another core's wake-up IPI.
    Core = 2,
    /// A vector nothing armed.
    Stray = 3,
}

struct PerCore {
    counts: [AtomicU64; 4],
    /// A level-triggered NIC line (GSI + 1; 0 = none) the handler masks.
    level_gsi: AtomicU32,
}

static CORES: [PerCore; MAX_CPUS] = [const {
    PerCore {
        counts: [const { AtomicU64::new(0) }; 4],
        level_gsi: AtomicU32::new(0),
    }
}; MAX_CPUS];

#[cfg(target_os = "none")]
core::arch::global_asm!(
    r#"
    .text
    .irp n, 240,241,242,243
bw_irq\n:
    push %rax
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %r8
    push %r9
    push %r10
    push %r11
    mov $\n, %edi
    cld
    call bw_irq
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
    iretq
    .endr
bw_irq_stray:
    push %rax
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %r8
    push %r9
    push %r10
    push %r11
    xor %edi, %edi
    cld
    call bw_irq
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
    iretq
bw_irq_spurious:
    iretq

    .section .rodata
    .p2align 3
    .global bw_irq_table
bw_irq_table:
    .quad bw_irq240, bw_irq241, bw_irq242, bw_irq_stray, bw_irq_spurious, bw_irq243
    .text
"#,
    options(att_syntax)
);

#[cfg(target_os = "none")]
extern "C" {
    static bw_irq_table: [u64; 6];
}

/// Host builds (unit tests) have no stubs.
#[cfg(not(target_os = "none"))]
#[allow(non_upper_case_globals)]
static bw_irq_table: [u64; 6] = [0; 6];

/// The handler address for vector `v` (32..=255), for the IDT.
pub fn stub(v: u8) -> u64 {
    // SAFETY: a read-only table of six addresses defined in the asm above.
    #[allow(unused_unsafe)]
    let t = unsafe { &*core::ptr::addr_of!(bw_irq_table) };
    match v {
        WAKE_VECTOR => t[0],
        TIMER_VECTOR => t[1],
        NIC_VECTOR => t[2],
        SPURIOUS_VECTOR => t[4],
        super::power::SCI_VECTOR => t[5],
        _ => t[3],
    }
}

/// Called by the stubs with the vector (0: a vector nothing armed), interrupts off.
#[no_mangle]
extern "C" fn bw_irq(vector: u64) {
    let core = super::smp::core_index().unwrap_or(0);
    let c = &CORES[core];
    let cause = match vector as u8 {
        WAKE_VECTOR => Cause::Core,
        TIMER_VECTOR => Cause::Timer,
        NIC_VECTOR => {
            let g = c.level_gsi.load(Ordering::Relaxed);
            if g != 0 {
                super::ioapic::mask(g - 1);
            }
            Cause::Device
        }
        super::power::SCI_VECTOR => {
            // The ACPI power button (level-triggered: its status is cleared before EOI).
            super::power::on_sci();
            Cause::Stray
        }
        _ => Cause::Stray,
    };
    c.counts[cause as usize].fetch_add(1, Ordering::Relaxed);
    apic::eoi();
}

/// Interrupts that reached core `core` so far, by cause.
pub fn count(core: usize, cause: Cause) -> u64 {
    CORES
        .get(core)
        .map_or(0, |c| c.counts[cause as usize].load(Ordering::Relaxed))
}

/// Registers the level-triggered line (GSI) of the NIC that interrupts this core: its
/// handler masks it at the I/O APIC until the core re-arms the device.
pub fn set_level_line(core: usize, gsi: Option<u32>) {
    if let Some(c) = CORES.get(core) {
        c.level_gsi
            .store(gsi.map_or(0, |g| g + 1), Ordering::Relaxed);
    }
}

/// Moves both legacy 8259 PICs' vectors to 0x20..0x2F and masks every line. Firmware
/// leaves them at the BIOS's 0x08..0x0F and 0x70..0x77, where an interrupt latched
/// before the mask (SeaBIOS booting from a disk left one) would reach a halted core as an
/// exception (IRQ 5 as vector 13, a "general protection fault"); at 0x20.. it is a
/// stray interrupt, counted and ignored. (The PIT's IRQ 0 left unmasked would otherwise
/// come as vector 8, a "double fault".)
///
/// Call it before the boot CPU's local APIC is set up ([`apic::init_bsp`] masks LINT0),
/// while LINT0 still carries the PICs' output as ExtINT (the firmware's virtual-wire
/// mode). SeaBIOS leaves the PIT ticking on IRQ 0 (18.2 Hz), unmasked; the kernel runs
/// with interrupts off, so a tick that comes before this call holds the PIC's output
/// high, and the CPU has an ExtINT request pending. Masked here, the PIC drops its output
/// through LINT0 and the request is withdrawn. Masking LINT0 first left it pending, with
/// nothing behind it: QEMU's TCG APIC then delivered "vector -1" at the first `sti`, a
/// #GP with error code 0xffff_fff2 (its IDT index check on -1) in the wake-up of a
/// halting core, in 2 to 9 boots out of 10 on q35 or pc with SeaBIOS (when a tick fell
/// between the firmware's last `cli` and the APIC's setup). An 8259 acknowledged with
/// nothing behind it answers a spurious IRQ 7 on real hardware: remapped and masked
/// first, there is no request left to acknowledge.
pub fn mask_legacy_pic() {
    // SAFETY: ports 0x20/0x21 and 0xA0/0xA1 are the PICs' command and data registers; the
    // initialisation words (ICW1-4: edge, cascade on IRQ 2, 8086 mode) change nothing but
    // the PICs, whose lines all end masked (the kernel uses no PIC interrupt).
    unsafe {
        cpu::outb(0x20, 0x11);
        cpu::outb(0xA0, 0x11);
        cpu::outb(0x21, 0x20);
        cpu::outb(0xA1, 0x28);
        cpu::outb(0x21, 0x04);
        cpu::outb(0xA1, 0x02);
        cpu::outb(0x21, 0x01);
        cpu::outb(0xA1, 0x01);
        cpu::outb(0x21, 0xFF);
        cpu::outb(0xA1, 0xFF);
    }
}

/// Enables interrupts for a few instructions, so one already pending is taken now (IRQ
/// probing: a device made to interrupt on purpose shows whether its line is routed).
pub fn window() {
    // SAFETY: as in halt: the handlers save what they use; interrupts are off after.
    unsafe {
        core::arch::asm!(
            "sti",
            "nop",
            "nop",
            "nop",
            "cli",
            clobber_abi("C"),
            options(nostack)
        )
    };
}

/// Halts this core until an interrupt: the timer at TSC `deadline` if given, the NIC if
/// armed, a wake-up IPI. Interrupts are enabled only for the halt itself.
pub fn halt(timer: apic::Timer, deadline: Option<u64>) {
    if let Some(at) = deadline {
        apic::arm_timer(timer, TIMER_VECTOR, at, cpu::rdtsc());
    }
    // SAFETY: `sti; hlt` enables interrupts only for the halt (an interrupt pending at
    // `sti` ends the `hlt` at once: SDM §6.8.1), `cli` closes them again. The handlers
    // save the registers they use; clobber_abi covers the rest of the C ABI's.
    unsafe { core::arch::asm!("sti", "hlt", "cli", clobber_abi("C"), options(nostack)) };
    if deadline.is_some() {
        apic::disarm_timer(timer);
    }
}
