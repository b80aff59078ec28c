//! Many cores: starting the application processors (APs) and what each core owns.
//!
//! Heads up! read Intel SDM vol. 3A §8.4 (multiple-processor initialisation: INIT-SIPI-SIPI)
//! and §9.9 (switching to long mode); the multi-core paper, §V.B (caches must be turned on for APs).
//!
//! - **Trampoline.** A STARTUP IPI starts a core in real mode at a page below 1 MiB. The
//!   code below (`bw_tramp_*`, assembled into the kernel's rodata and copied to
//!   [`TRAMPOLINE`] at run time) goes 16 → 32 → 64-bit with its own small GDT, turns the
//!   caches on (clears CR0.CD and CR0.NW, which are set after INIT), enables SSE, PAE and
//!   long mode, loads the boot CPU's page tables (every core shares them) and calls
//!   [`bw_ap_entry`] on the stack the boot CPU wrote into the trampoline's data words.
//! - **One core at a time.** The trampoline's data words serve one AP: the boot CPU sends
//!   INIT, waits 10 ms on an old processor and not at all on one that needs no wait (as
//!   Linux decides: [`init_delay_us`]), sends STARTUP (again after 200 µs if the core has
//!   not checked in) and waits for the core to check in before the next.
//! - **Per-core data.** [`PerCpu`] (a static array, `GS.base` points at the core's entry),
//!   a stack of [`AP_STACK`] bytes with an unmapped guard page below it, and a GDT/TSS with
//!   its own double-fault stack (`gdt::CpuTables`). The IDT is shared.
//! - **Work.** A started core waits for a job ([`run_on`]): a boxed closure the boot CPU
//!   built with everything the core needs (its server, its queue pair), then runs it
//!   forever.
//! - **Stopping.** A panic or exception on any core sends an NMI to every other core
//!   ([`stop_others`]), whose handler halts quietly, and reports which core failed.
//! - **TSC.** Each AP compares its TSC with the boot CPU's in a ping-pong ([`tsc_sync`]); a
//!   consistent offset is corrected through IA32_TSC_ADJUST when the CPU has it, so
//!   `now_ns` is comparable across cores.

use alloc::boxed::Box;
use core::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use super::cpu::{cpuid, rdmsr, rdtsc, wrmsr};
use super::{apic, cache, gdt, idt, paging};

/// Most cores used (more in the MADT are left in wait-for-SIPI).
pub const MAX_CPUS: usize = 32;
/// Bytes of each application core's stack (the guard page comes on top): as the boot
/// stack's ([`super::boot::BOOT_STACK`]), the deepest path measured (see [`stack_used`])
/// well below it; the engine allocates its tables on the heap.
pub const AP_STACK: usize = 128 * 1024;
/// Where the trampoline is copied: page 8, below the copied multiboot2 information at
/// 0x10000 and above the real-mode interrupt table and BIOS data area.
pub const TRAMPOLINE: u64 = 0x8000;
const STACK_PAINT: u8 = 0xC5;

const IA32_GS_BASE: u32 = 0xC000_0101;
const IA32_TSC_ADJUST: u32 = 0x3B;

/// A job a core runs (forever, in practice: a core whose job returns halts).
pub type Job = Box<dyn FnOnce() + Send>;

const ABSENT: u32 = 0;
const BOOTING: u32 = 1;
const UP: u32 = 2;

/// One core's own data. The boot CPU fills it before the core starts; the core reaches
/// its entry through `GS.base`.
pub struct PerCpu {
    index: AtomicU32,
    apic_id: AtomicU32,
    state: AtomicU32,
    job: AtomicPtr<Job>,
    tables: AtomicPtr<gdt::CpuTables>,
    stack_lo: AtomicU64,
    stack_hi: AtomicU64,
    /// TSC ping-pong: round number written by the boot CPU (odd) and the AP (even).
    sync: AtomicU64,
    sync_tsc: AtomicU64,
    /// Measured TSC offset of this core from the boot CPU (cycles, before correction).
    tsc_offset: AtomicI64,
    /// Whether the offset was corrected through IA32_TSC_ADJUST.
    tsc_adjusted: AtomicBool,
}

impl PerCpu {
    const fn new() -> PerCpu {
        PerCpu {
            index: AtomicU32::new(0),
            apic_id: AtomicU32::new(0),
            state: AtomicU32::new(ABSENT),
            job: AtomicPtr::new(core::ptr::null_mut()),
            tables: AtomicPtr::new(core::ptr::null_mut()),
            stack_lo: AtomicU64::new(0),
            stack_hi: AtomicU64::new(0),
            sync: AtomicU64::new(0),
            sync_tsc: AtomicU64::new(0),
            tsc_offset: AtomicI64::new(0),
            tsc_adjusted: AtomicBool::new(false),
        }
    }
}

static CPUS: [PerCpu; MAX_CPUS] = [const { PerCpu::new() }; MAX_CPUS];
static CORES: AtomicU32 = AtomicU32::new(1);
static STOPPING: AtomicBool = AtomicBool::new(false);

#[cfg(target_os = "none")]
core::arch::global_asm!(
    r#"
    .section .rodata.bwtramp, "a"
    .p2align 4
    .global bw_tramp_start
    .code16
bw_tramp_start:
    cli
    cld
    mov %cs, %ax
    mov %ax, %ds
    lgdtl (bw_tramp_gdtr - bw_tramp_start)
    mov %cr0, %eax
    and $0x9FFFFFFF, %eax
    or $1, %eax
    mov %eax, %cr0
    ljmpl $0x18, ${base} + (bw_tramp_32 - bw_tramp_start)

    .code32
bw_tramp_32:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %cr4, %eax
    or $((1 << 5) | (1 << 9) | (1 << 10)), %eax
    mov %eax, %cr4
    mov ({base} + (bw_tramp_cr3 - bw_tramp_start)), %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx
    rdmsr
    or $(1 << 8), %eax
    wrmsr
    mov %cr0, %eax
    and $~(1 << 2), %eax
    or $((1 << 31) | (1 << 5) | (1 << 1) | 1), %eax
    mov %eax, %cr0
    ljmp $0x08, ${base} + (bw_tramp_64 - bw_tramp_start)

    .code64
bw_tramp_64:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    xor %ax, %ax
    mov %ax, %fs
    mov %ax, %gs
    mov ({base} + (bw_tramp_stack - bw_tramp_start)), %rsp
    mov ({base} + (bw_tramp_arg - bw_tramp_start)), %rdi
    mov ({base} + (bw_tramp_entry - bw_tramp_start)), %rax
    xor %ebp, %ebp
    call *%rax
1:  cli
    hlt
    jmp 1b

    .p2align 3
bw_tramp_gdt:
    .quad 0
    .quad 0x00AF9A000000FFFF
    .quad 0x00CF92000000FFFF
    .quad 0x00CF9A000000FFFF
bw_tramp_gdtr:
    .short 31
    .long {base} + (bw_tramp_gdt - bw_tramp_start)
    .p2align 3
    .global bw_tramp_cr3
bw_tramp_cr3:
    .quad 0
    .global bw_tramp_stack
bw_tramp_stack:
    .quad 0
    .global bw_tramp_entry
bw_tramp_entry:
    .quad 0
    .global bw_tramp_arg
bw_tramp_arg:
    .quad 0
    .global bw_tramp_end
bw_tramp_end:
    .text
"#,
    base = const TRAMPOLINE,
    options(att_syntax)
);

#[cfg(target_os = "none")]
extern "C" {
    static bw_tramp_start: u8;
    static bw_tramp_cr3: u8;
    static bw_tramp_stack: u8;
    static bw_tramp_entry: u8;
    static bw_tramp_arg: u8;
    static bw_tramp_end: u8;
}

/// Host builds (unit tests) have no trampoline; these only let the code compile.
#[cfg(not(target_os = "none"))]
#[allow(non_upper_case_globals)]
mod host {
    pub static bw_tramp_start: u8 = 0;
    pub static bw_tramp_cr3: u8 = 0;
    pub static bw_tramp_stack: u8 = 0;
    pub static bw_tramp_entry: u8 = 0;
    pub static bw_tramp_arg: u8 = 0;
    pub static bw_tramp_end: u8 = 0;
}
#[cfg(not(target_os = "none"))]
use host::*;

/// Sets up the boot CPU's per-core data (index 0) and points `GS.base` at it.
///
/// # Safety
/// Once, on the boot CPU, first thing.
pub unsafe fn init_bsp() {
    let c = &CPUS[0];
    c.state.store(UP, Ordering::Relaxed);
    let (lo, hi) = super::boot::boot_stack();
    c.stack_lo.store(lo, Ordering::Relaxed);
    c.stack_hi.store(hi, Ordering::Relaxed);
    // SAFETY: IA32_GS_BASE exists on every x86_64 CPU; nothing uses GS but us.
    unsafe { wrmsr(IA32_GS_BASE, c as *const PerCpu as u64) };
}

/// Records the boot CPU's APIC id (after `apic::init_bsp`).
pub fn set_bsp_apic_id(id: u32) {
    CPUS[0].apic_id.store(id, Ordering::Relaxed);
}

/// This core's number (0 = boot CPU), from `GS.base`; `None` before the core set it.
pub fn core_index() -> Option<usize> {
    // SAFETY: reading IA32_GS_BASE has no side effects.
    let gs = unsafe { rdmsr(IA32_GS_BASE) } as usize;
    let first = CPUS.as_ptr() as usize;
    let size = core::mem::size_of::<PerCpu>();
    if gs < first || gs >= first + MAX_CPUS * size || (gs - first) % size != 0 {
        return None;
    }
    Some((gs - first) / size)
}

/// Cores running (the boot CPU and every AP that checked in).
pub fn cores() -> usize {
    CORES.load(Ordering::Acquire) as usize
}

/// APIC id of core `core`.
pub fn apic_id(core: usize) -> u32 {
    CPUS.get(core)
        .map_or(0, |c| c.apic_id.load(Ordering::Relaxed))
}

/// TSC offset of core `core` from the boot CPU as measured at start (cycles), and whether
/// it was corrected.
pub fn tsc_offset(core: usize) -> (i64, bool) {
    CPUS.get(core).map_or((0, false), |c| {
        (
            c.tsc_offset.load(Ordering::Relaxed),
            c.tsc_adjusted.load(Ordering::Relaxed),
        )
    })
}

/// Bytes of core `core`'s stack ever used: the high-water mark of its painted stack (the
/// boot CPU's stack is in the zeroed bss: its paint is 0).
pub fn stack_used(core: usize) -> usize {
    let Some(c) = CPUS.get(core) else { return 0 };
    let (lo, hi) = (
        c.stack_lo.load(Ordering::Relaxed),
        c.stack_hi.load(Ordering::Relaxed),
    );
    if lo == 0 || hi <= lo {
        return 0;
    }
    let paint = if core == 0 { 0 } else { STACK_PAINT };
    let mut at = lo;
    // SAFETY: [lo, hi) is the core's mapped stack (the guard page lies below lo); reading
    // bytes a running core may write concurrently gives some byte, never a fault.
    while at < hi && unsafe { core::ptr::read_volatile(at as *const u8) } == paint {
        at += 1;
    }
    (hi - at) as usize
}

/// What happened to one AP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Checked in as core `.0`, `.1` µs after its INIT, after `.2` STARTUP IPIs.
    Up(usize, u64, u32),
    /// Did not check in within the time allowed.
    NoAnswer,
    /// No memory for its stack or tables.
    NoMemory,
}

/// Microseconds of TSC at `hz`.
fn delay_us(hz: u64, us: u64) {
    let end = rdtsc() + hz / 1_000_000 * us;
    while rdtsc() < end {
        super::cpu::relax();
    }
}

/// The wait between INIT and STARTUP, in µs. The MP specification's 10 ms is for the
/// processors of its time; Linux waits none on Intel family 6, AMD family 0xF and later
/// and Hygon 0x18 and later (`smp_quirk_init_udelay`, arch/x86/kernel/smpboot.c), nor do
/// we, nor under a hypervisor (CPUID.1:ECX bit 31: the INIT is emulated, there is nothing
/// to settle). For the boot budget: it was 10 ms of boot per application core.
pub fn init_delay_us() -> u64 {
    let (_, b, c, d) = cpuid(0, 0);
    let vendor = |s: &[u8; 12]| {
        let mut v = [0u8; 12];
        v[..4].copy_from_slice(&b.to_le_bytes());
        v[4..8].copy_from_slice(&d.to_le_bytes());
        v[8..].copy_from_slice(&c.to_le_bytes());
        &v == s
    };
    let eax = cpuid(1, 0).0;
    let base = (eax >> 8) & 0xF;
    let family = if base == 0xF {
        base + ((eax >> 20) & 0xFF)
    } else {
        base
    };
    let guest = cpuid(1, 0).2 & (1 << 31) != 0;
    let modern = (vendor(b"GenuineIntel") && family == 6)
        || (vendor(b"AuthenticAMD") && family >= 0xF)
        || (vendor(b"HygonGenuine") && family >= 0x18);
    if guest || modern {
        0
    } else {
        10_000
    }
}

/// Starts the cores with APIC ids `aps` (the MADT's processors but the boot CPU), at most
/// `MAX_CPUS - 1`. Calls `report(apic_id, outcome)` for each. `hz` is the TSC frequency.
///
/// # Safety
/// Once, on the boot CPU, after the heap, the IDT, the APIC and the clock are set up, and
/// before anything else uses the memory at [`TRAMPOLINE`].
pub unsafe fn start_aps(aps: &[u32], hz: u64, mut report: impl FnMut(u32, Start)) {
    // 1. Stacks (guard pages unmapped) and tables for every AP, before any runs: the page
    //    table changes need no other core to forget a translation.
    let mut ready = [false; MAX_CPUS];
    let n = aps.len().min(MAX_CPUS - 1);
    for (k, &id) in aps[..n].iter().enumerate() {
        let c = &CPUS[k + 1];
        match prepare(c) {
            Ok(()) => ready[k + 1] = true,
            Err(()) => report(id, Start::NoMemory),
        }
    }
    paging::flush();
    // 2. The trampoline.
    // Linker symbols: only their addresses are used.
    let (start, end) = (
        core::ptr::addr_of!(bw_tramp_start) as usize,
        core::ptr::addr_of!(bw_tramp_end) as usize,
    );
    let len = end - start;
    let word = |sym: *const u8| (TRAMPOLINE as usize + (sym as usize - start)) as *mut u64;
    // SAFETY: the trampoline bytes are rodata of `len` bytes; the destination page lies in
    // conventional memory below 1 MiB, identity-mapped, used by nothing else (caller).
    unsafe {
        core::ptr::copy_nonoverlapping(start as *const u8, TRAMPOLINE as *mut u8, len);
        word(core::ptr::addr_of!(bw_tramp_cr3)).write_volatile(paging::cr3());
        word(core::ptr::addr_of!(bw_tramp_entry)).write_volatile(bw_ap_entry as *const () as u64);
    }
    // 3. One core at a time.
    let init_delay = init_delay_us();
    for (k, &id) in aps[..n].iter().enumerate() {
        let index = k + 1;
        if !ready[index] {
            continue;
        }
        let c = &CPUS[index];
        c.index.store(index as u32, Ordering::Relaxed);
        c.apic_id.store(id, Ordering::Relaxed);
        c.state.store(BOOTING, Ordering::Relaxed);
        // SAFETY: the trampoline's data words, in the page copied above; no AP is running
        // the trampoline now (the previous one checked in before we got here).
        unsafe {
            word(core::ptr::addr_of!(bw_tramp_stack))
                .write_volatile(c.stack_hi.load(Ordering::Relaxed));
            word(core::ptr::addr_of!(bw_tramp_arg)).write_volatile(c as *const PerCpu as u64);
        }
        core::sync::atomic::fence(Ordering::SeqCst);
        let t0 = rdtsc();
        apic::send_init(id);
        delay_us(hz, init_delay);
        let page = (TRAMPOLINE >> 12) as u8;
        apic::send_startup(id, page);
        // Looks at the state before the clock, so a boot CPU descheduled past the
        // deadline (a vCPU on a busy host) still sees a core that checked in meanwhile.
        let up = |limit_us: u64| {
            let end = rdtsc() + hz / 1_000_000 * limit_us;
            loop {
                if c.state.load(Ordering::Acquire) == UP {
                    return true;
                }
                if rdtsc() >= end {
                    return false;
                }
                super::cpu::relax();
            }
        };
        // A second STARTUP only if the first was not taken (SDM §8.4.4.1); an emulator on
        // a busy host may need long to schedule the new vCPU: wait up to 5 s in all.
        let mut sipis = 1;
        let mut ok = up(200);
        if !ok {
            // The core may check in between the end of that wait and now: then it needs
            // no second STARTUP, but it must still be waited for (not taken for absent).
            if c.state.load(Ordering::Acquire) == BOOTING {
                apic::send_startup(id, page);
                sipis = 2;
            }
            ok = up(5_000_000);
        }
        if ok {
            let us = (rdtsc() - t0) / (hz / 1_000_000).max(1);
            tsc_sync_bsp(c);
            CORES.store(index as u32 + 1, Ordering::Release);
            report(id, Start::Up(index, us, sipis));
        } else {
            report(id, Start::NoAnswer);
            // Cores are numbered without gaps and this one may still wake up on the
            // trampoline later: start no more.
            break;
        }
    }
}

/// Allocates the stack (with its guard page unmapped) and tables of one AP.
fn prepare(c: &PerCpu) -> Result<(), ()> {
    let layout = core::alloc::Layout::from_size_align(AP_STACK + 4096, 4096).map_err(|_| ())?;
    // SAFETY: non-zero size.
    let p = unsafe { alloc::alloc::alloc(layout) };
    if p.is_null() {
        return Err(());
    }
    let guard = p as u64;
    // SAFETY: the boot CPU alone runs (caller of start_aps); the page is ours and unused.
    unsafe { paging::unmap_4k(guard) }.map_err(|_| ())?;
    let lo = guard + 4096;
    // SAFETY: [lo, lo + AP_STACK) is the rest of our fresh allocation.
    unsafe { core::ptr::write_bytes(lo as *mut u8, STACK_PAINT, AP_STACK) };
    c.stack_lo.store(lo, Ordering::Relaxed);
    c.stack_hi.store(lo + AP_STACK as u64, Ordering::Relaxed);
    let t = gdt::CpuTables::alloc().ok_or(())?;
    c.tables.store(t, Ordering::Relaxed);
    Ok(())
}

/// Where an AP arrives from the trampoline, in long mode on its own stack.
extern "C" fn bw_ap_entry(c: &'static PerCpu) -> ! {
    let t = c.tables.swap(core::ptr::null_mut(), Ordering::Relaxed);
    // SAFETY: the boot CPU allocated these tables for this core alone (prepare) and handed
    // them over through `tables`, which we just emptied.
    unsafe {
        if let Some(t) = t.as_mut() {
            gdt::load(t);
        }
        wrmsr(IA32_GS_BASE, c as *const PerCpu as u64);
    }
    idt::load();
    cache::enable_write_back();
    apic::init_ap();
    c.apic_id.store(apic::id(), Ordering::Relaxed);
    c.state.store(UP, Ordering::Release);
    tsc_sync_ap(c);
    loop {
        let j = c.job.swap(core::ptr::null_mut(), Ordering::Acquire);
        if !j.is_null() {
            // SAFETY: run_on put a Box<Job> there with Box::into_raw and nobody else takes
            // it (we swapped it out).
            let job = unsafe { Box::from_raw(j) };
            (*job)();
            super::cpu::halt_forever();
        }
        super::cpu::relax();
    }
}

/// Gives core `core` (an AP that checked in) its job (boxed by the caller, so this
/// allocates nothing). Returns the job back if there is no such core.
pub fn run_on(core: usize, job: Box<Job>) -> Result<(), Box<Job>> {
    if core == 0 || core >= cores() {
        return Err(job);
    }
    CPUS[core].job.store(Box::into_raw(job), Ordering::Release);
    Ok(())
}

/// Rounds of the TSC ping-pong.
const SYNC_ROUNDS: u64 = 16;

/// Boot CPU side: for each round, write our TSC and wait for the AP's; the AP's reading lies
/// between our send and our receive if the TSCs agree.
fn tsc_sync_bsp(c: &PerCpu) {
    // The AP's TSC reads the boot CPU's plus `offset`; each round bounds it:
    // t0 <= t1 - offset <= t2, so t1 - t2 <= offset <= t1 - t0.
    let (mut lower, mut upper) = (i64::MIN, i64::MAX);
    for r in 0..SYNC_ROUNDS {
        let t0 = rdtsc();
        c.sync.store(2 * r + 1, Ordering::SeqCst);
        let mut spins = 0u64;
        while c.sync.load(Ordering::SeqCst) != 2 * r + 2 {
            spins += 1;
            if spins > 100_000_000 {
                return; // the AP stopped answering: leave its offset unmeasured
            }
            super::cpu::relax();
        }
        let t2 = rdtsc();
        let t1 = c.sync_tsc.load(Ordering::SeqCst);
        lower = lower.max((t1 as i64).wrapping_sub(t2 as i64));
        upper = upper.min((t1 as i64).wrapping_sub(t0 as i64));
    }
    // Only an offset the rounds prove (0 outside [lower, upper]) is corrected, and only by
    // the smallest amount they prove.
    let offset = if lower > 0 {
        lower
    } else if upper < 0 {
        upper
    } else {
        0
    };
    c.tsc_offset.store(offset, Ordering::Relaxed);
    // The AP reads the verdict after the last round.
    c.sync_tsc.store(offset as u64, Ordering::SeqCst);
    c.sync.store(u64::MAX, Ordering::SeqCst);
}

/// AP side of the ping-pong; corrects a consistent offset through IA32_TSC_ADJUST.
fn tsc_sync_ap(c: &PerCpu) {
    for r in 0..SYNC_ROUNDS {
        let mut spins = 0u64;
        while c.sync.load(Ordering::SeqCst) != 2 * r + 1 {
            spins += 1;
            if spins > 100_000_000 {
                return;
            }
            super::cpu::relax();
        }
        c.sync_tsc.store(rdtsc(), Ordering::SeqCst);
        c.sync.store(2 * r + 2, Ordering::SeqCst);
    }
    let mut spins = 0u64;
    while c.sync.load(Ordering::SeqCst) != u64::MAX {
        spins += 1;
        if spins > 100_000_000 {
            return;
        }
        super::cpu::relax();
    }
    let offset = c.sync_tsc.load(Ordering::SeqCst) as i64;
    let has_adjust = cpuid(0, 0).0 >= 7 && cpuid(7, 0).1 & (1 << 1) != 0;
    if offset != 0 && has_adjust {
        // SAFETY: CPUID says IA32_TSC_ADJUST exists; subtracting the offset makes this
        // core's TSC read as the boot CPU's (SDM §17.17.3).
        unsafe {
            let adj = rdmsr(IA32_TSC_ADJUST) as i64;
            wrmsr(IA32_TSC_ADJUST, adj.wrapping_sub(offset) as u64);
        }
        c.tsc_adjusted.store(true, Ordering::Relaxed);
    }
}

/// Marks the machine as stopping. Returns true for the first caller (which reports the
/// failure), false for later ones (which should halt quietly).
pub fn begin_stop() -> bool {
    !STOPPING.swap(true, Ordering::AcqRel)
}

/// Whether a failure is being reported (an NMI then means "halt").
pub fn stopping() -> bool {
    STOPPING.load(Ordering::Acquire)
}

/// Halts every other core (an NMI each; their handler sees [`stopping`] and halts), and
/// waits a bounded while for them to say so ([`halting`]): a core in the middle of a
/// console line would otherwise go on printing into the report (seen under TCG, where an
/// NMI arrives late: "on s" + "core 2").
pub fn stop_others() {
    let n = cores();
    if n > 1 {
        STOPPING.store(true, Ordering::Release);
        apic::nmi_all_others();
        let mut spins = 0u32;
        while (HALTED.load(Ordering::Acquire) as usize) < n - 1 && spins < 20_000_000 {
            core::hint::spin_loop();
            spins += 1;
        }
    }
}

/// Cores that stopped for a failure being reported (their NMI, or their own failure).
static HALTED: AtomicU32 = AtomicU32::new(0);

/// The running core halts for good because another reports a failure.
pub fn halting() {
    HALTED.fetch_add(1, Ordering::AcqRel);
}

/// Displays as "core N (APIC id M)" for the running core, for failure reports.
pub struct Who;

impl core::fmt::Display for Who {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match core_index() {
            Some(i) => write!(f, "core {i} (APIC id {})", apic::id()),
            None => write!(f, "a core not yet set up (APIC id {})", apic::id()),
        }
    }
}
