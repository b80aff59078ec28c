//! The interrupt descriptor table: the 32 CPU exceptions, each with a stub that saves the
//! registers and calls [`bw_exception`], which prints a report on the console and stops
//! the machine (through isa-debug-exit when QEMU has one, so a test never hangs).
//!
//! Vectors 32-255 go to [`super::irq`]'s stubs: device, timer and wake-up interrupts,
//! which reach a core only while it halts (interrupts are off while it polls).

use core::arch::asm;
use core::cell::UnsafeCell;
use core::mem::size_of;

use super::cpu;
use super::gdt::{DOUBLE_FAULT_IST, KERNEL_CS};

#[cfg(target_os = "none")]
core::arch::global_asm!(
    r#"
    .text
    .irp n, 0,1,2,3,4,5,6,7,9,15,16,18,19,20,22,23,24,25,26,27,28,31
bw_isr\n:
    pushq $0
    pushq $\n
    jmp bw_isr_common
    .endr
    .irp n, 8,10,11,12,13,14,17,21,29,30
bw_isr\n:
    pushq $\n
    jmp bw_isr_common
    .endr
bw_isr_common:
    push %rax
    push %rbx
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %rbp
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, %rdi
    cld
    call bw_exception
9:  cli
    hlt
    jmp 9b

    .section .rodata
    .p2align 3
    .global bw_isr_table
bw_isr_table:
    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    .quad bw_isr\n
    .endr
    .text
"#,
    options(att_syntax)
);

#[cfg(target_os = "none")]
extern "C" {
    static bw_isr_table: [u64; 32];
}

/// Host builds (unit tests) have no exception stubs.
#[cfg(not(target_os = "none"))]
#[allow(non_upper_case_globals)]
static bw_isr_table: [u64; 32] = [0; 32];

/// What the exception stubs push, lowest address first.
#[repr(C)]
#[derive(Debug)]
#[allow(missing_docs)]
pub struct ExceptionFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    pub vector: u64,
    pub error: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

#[derive(Clone, Copy)]
#[repr(C)]
struct Gate {
    off_lo: u16,
    sel: u16,
    ist: u8,
    attr: u8,
    off_mid: u16,
    off_hi: u32,
    _r: u32,
}
const _: () = assert!(size_of::<Gate>() == 16);

struct Idt(UnsafeCell<[Gate; 256]>);
// SAFETY: written once by `init` on the boot CPU before it is loaded; read only by the CPU.
unsafe impl Sync for Idt {}

static IDT: Idt = Idt(UnsafeCell::new(
    [Gate {
        off_lo: 0,
        sel: 0,
        ist: 0,
        attr: 0,
        off_mid: 0,
        off_hi: 0,
        _r: 0,
    }; 256],
));

#[repr(C, packed)]
struct Pointer {
    limit: u16,
    base: u64,
}

/// Names of the exceptions, by vector.
const NAMES: [&str; 32] = [
    "divide error",
    "debug",
    "NMI",
    "breakpoint",
    "overflow",
    "bound range exceeded",
    "invalid opcode",
    "device not available",
    "double fault",
    "coprocessor segment overrun",
    "invalid TSS",
    "segment not present",
    "stack-segment fault",
    "general protection fault",
    "page fault",
    "reserved",
    "x87 floating-point error",
    "alignment check",
    "machine check",
    "SIMD floating-point error",
    "virtualization exception",
    "control protection",
    "reserved",
    "reserved",
    "reserved",
    "reserved",
    "reserved",
    "reserved",
    "hypervisor injection",
    "VMM communication",
    "security exception",
    "reserved",
];

/// Builds and loads the IDT (after [`super::gdt::init`], whose IST1 the double fault uses).
///
/// # Safety
/// Call once on the boot CPU.
pub unsafe fn init() {
    // SAFETY: called once before the IDT is loaded; nothing else reads it yet.
    let idt = unsafe { &mut *IDT.0.get() };
    // SAFETY: bw_isr_table is a read-only table of 32 addresses defined in the asm above.
    #[allow(unused_unsafe)]
    let table = unsafe { &*core::ptr::addr_of!(bw_isr_table) };
    for (v, gate) in idt.iter_mut().enumerate() {
        let a = if v < 32 {
            table[v]
        } else {
            super::irq::stub(v as u8)
        };
        *gate = Gate {
            off_lo: a as u16,
            sel: KERNEL_CS,
            ist: if v == 8 { DOUBLE_FAULT_IST } else { 0 },
            attr: 0x8E, // present, ring 0, 64-bit interrupt gate
            off_mid: (a >> 16) as u16,
            off_hi: (a >> 32) as u32,
            _r: 0,
        };
    }
    load();
}

/// Loads the IDT (filled by [`init`] on the boot CPU) on this core. Every core shares it:
/// the double fault's IST1 names each core's own TSS stack.
pub fn load() {
    let p = Pointer {
        limit: (size_of::<[Gate; 256]>() - 1) as u16,
        base: IDT.0.get() as u64,
    };
    // SAFETY: p describes the static IDT, filled with valid gates by `init` before any
    // core loads it, and never written again.
    unsafe { asm!("lidt [{}]", in(reg) &p, options(readonly, nostack, preserves_flags)) };
}

/// Called by the stubs: prints the report and stops the machine (never returns). Only the
/// first core to fail reports; the others (stopped by its NMI, or failing meanwhile) halt.
#[no_mangle]
extern "C" fn bw_exception(f: &ExceptionFrame) -> ! {
    if !super::smp::begin_stop() {
        super::smp::halting();
        cpu::halt_forever();
    }
    super::smp::stop_others();
    let name = NAMES.get(f.vector as usize).copied().unwrap_or("?");
    crate::console::force_unlock();
    crate::kprintln!(
        "\n!!! CPU EXCEPTION {} ({name}) on {} error={:#x} rip={:#018x} cs={:#x} rflags={:#x} rsp={:#018x}",
        f.vector,
        super::smp::Who,
        f.error,
        f.rip,
        f.cs,
        f.rflags,
        f.rsp
    );
    if f.vector == 14 {
        crate::kprintln!(
            "    page fault address cr2={:#018x} ({}{}{})",
            cpu::cr2(),
            if f.error & 1 != 0 {
                "protection"
            } else {
                "not present"
            },
            if f.error & 2 != 0 {
                ", write"
            } else {
                ", read"
            },
            if f.error & 16 != 0 { ", fetch" } else { "" }
        );
    }
    crate::kprintln!(
        "    rax={:#x} rbx={:#x} rcx={:#x} rdx={:#x} rsi={:#x} rdi={:#x} rbp={:#x}",
        f.rax,
        f.rbx,
        f.rcx,
        f.rdx,
        f.rsi,
        f.rdi,
        f.rbp
    );
    crate::kprintln!(
        "    r8={:#x} r9={:#x} r10={:#x} r11={:#x} r12={:#x} r13={:#x} r14={:#x} r15={:#x}",
        f.r8,
        f.r9,
        f.r10,
        f.r11,
        f.r12,
        f.r13,
        f.r14,
        f.r15
    );
    crate::backtrace(f.rbp);
    crate::arch::exit::fail()
}
