//! The long-mode GDT with a TSS whose IST1 stack catches double faults (a kernel stack
//! overflow then still prints its report instead of triple-faulting).
//!
//! Per-core state: one GDT/TSS pair and double-fault stack per CPU ([`CpuTables`]): the
//! boot CPU's is a static, each other core's is allocated by the boot CPU before it starts
//! ([`CpuTables::alloc`]) and loaded by the core itself ([`load`]).

use core::arch::asm;
use core::cell::UnsafeCell;
use core::mem::size_of;

/// Kernel code selector.
pub const KERNEL_CS: u16 = 0x08;
/// IST slot (1-based) used by the double-fault handler.
pub const DOUBLE_FAULT_IST: u8 = 1;
const FAULT_STACK: usize = 16 * 1024;

#[repr(C, packed(4))]
struct Tss {
    _r0: u32,
    rsp: [u64; 3],
    _r1: u64,
    ist: [u64; 7],
    _r2: u64,
    _r3: u16,
    iomap_base: u16,
}
const _: () = assert!(size_of::<Tss>() == 104);

#[repr(C, align(16))]
struct FaultStack([u8; FAULT_STACK]);

/// One CPU's descriptor tables.
#[repr(C, align(16))]
pub struct CpuTables {
    gdt: [u64; 5],
    tss: Tss,
    fault_stack: FaultStack,
}

struct Boot(UnsafeCell<CpuTables>);
// SAFETY: only the boot CPU touches BOOT, once, in `init` before anything else runs.
unsafe impl Sync for Boot {}

static BOOT: Boot = Boot(UnsafeCell::new(CpuTables {
    gdt: [0; 5],
    tss: Tss {
        _r0: 0,
        rsp: [0; 3],
        _r1: 0,
        ist: [0; 7],
        _r2: 0,
        _r3: 0,
        // Set by `load`: all zeros here keeps the 16 KiB in `.bss`, out of the image.
        iomap_base: 0,
    },
    fault_stack: FaultStack([0; FAULT_STACK]),
}));

#[repr(C, packed)]
struct Pointer {
    limit: u16,
    base: u64,
}

impl CpuTables {
    /// Zeroed tables for another core, on the heap, never freed (`None`: no memory).
    pub fn alloc() -> Option<&'static mut CpuTables> {
        let layout = core::alloc::Layout::new::<CpuTables>();
        // SAFETY: non-zero size; all-zero bytes are a valid CpuTables (plain integers),
        // and `load` fills in every field the CPU reads.
        let p = unsafe { alloc::alloc::alloc_zeroed(layout) }.cast::<CpuTables>();
        // SAFETY: p is null or a fresh, aligned, zeroed allocation nobody else holds.
        unsafe { p.as_mut() }
    }
}

/// Loads the boot CPU's GDT and TSS.
///
/// # Safety
/// Call once, on the boot CPU, before interrupts or exceptions can use IST1.
pub unsafe fn init() {
    let t = BOOT.0.get();
    // SAFETY: called once before anything else reads BOOT (see the Sync impl).
    let t = unsafe { &mut *t };
    // SAFETY: forwarded.
    unsafe { load(t) }
}

/// Fills `t` and loads it as this core's GDT and TSS (selectors as the boot GDT's, so the
/// segment registers stay valid).
///
/// # Safety
/// Once per core, with tables no other core uses, before exceptions can use IST1.
pub unsafe fn load(t: &'static mut CpuTables) {
    t.tss.iomap_base = size_of::<Tss>() as u16;
    let stack_top = t.fault_stack.0.as_ptr() as u64 + FAULT_STACK as u64;
    t.tss.ist[(DOUBLE_FAULT_IST - 1) as usize] = stack_top;
    let base = &t.tss as *const Tss as u64;
    let limit = (size_of::<Tss>() - 1) as u64;
    t.gdt[0] = 0;
    t.gdt[1] = 0x00AF_9A00_0000_FFFF; // 64-bit code
    t.gdt[2] = 0x00CF_9200_0000_FFFF; // data
    t.gdt[3] = (limit & 0xFFFF)
        | ((base & 0xFF_FFFF) << 16)
        | (0x89 << 40) // present, 64-bit TSS (available)
        | (((limit >> 16) & 0xF) << 48)
        | (((base >> 24) & 0xFF) << 56);
    t.gdt[4] = base >> 32;
    let p = Pointer {
        limit: (size_of::<[u64; 5]>() - 1) as u16,
        base: t.gdt.as_ptr() as u64,
    };
    // SAFETY: the GDT keeps the boot GDT's code (0x08) and data (0x10) selectors, so the
    // loaded segment registers stay valid; the TSS descriptor (0x18) points at a live TSS.
    unsafe {
        asm!("lgdt [{}]", in(reg) &p, options(readonly, nostack, preserves_flags));
        asm!("ltr {0:x}", in(reg) 0x18u16, options(nomem, nostack, preserves_flags));
    }
}
