//! x86_64: boot to long mode, descriptor tables, single-instruction helpers.

pub mod boot;
pub mod cache;
pub mod cpu;
pub mod gdt;
pub mod idt;

/// Loads the boot CPU's GDT/TSS and IDT.
///
/// # Safety
/// Call once, first thing, on the boot CPU.
pub unsafe fn init_cpu() {
    // SAFETY: forwarded: once, on the boot CPU, in this order (the IDT uses IST1).
    unsafe {
        gdt::init();
        idt::init();
    }
}
