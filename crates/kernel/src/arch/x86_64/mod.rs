//! x86_64: boot to long mode, descriptor tables, single-instruction helpers, page-table
//! changes, the local APIC and the start of the other cores, the I/O APIC and the
//! interrupts that wake a halted core; the firmware's processor list (ACPI MADT), the
//! clocks (TSC, PIT, CMOS RTC), the isa-debug-exit port, the ACPI power button and
//! power-off (`power`), and PCI (`pci`: configuration space through ports 0xCF8/0xCFC).

pub mod acpi;
pub mod apic;
pub mod boot;
pub mod cache;
pub mod clock;
pub mod cpu;
pub mod exit;
pub mod gdt;
pub mod idt;
pub mod ioapic;
pub mod irq;
pub mod paging;
pub mod pci;
pub mod power;
pub mod smp;

/// Sets up the boot CPU's per-core data (`GS.base`), GDT/TSS and IDT.
///
/// # Safety
/// Call once, first thing, on the boot CPU.
pub unsafe fn init_cpu() {
    // SAFETY: forwarded: once, on the boot CPU, in this order (the IDT uses IST1).
    unsafe {
        smp::init_bsp();
        gdt::init();
        idt::init();
    }
}
