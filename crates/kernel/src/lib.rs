//! bareweb's bare-machine kernel: boots on a PC or VM with no OS and runs the engine over
//! its own NIC drivers, polled, on every core it starts.
//!
//! Layers, bottom up:
//! - [`arch`]: the 32-bit entry (PVH note, multiboot2 header), long mode with identity
//!   2 MiB pages, GDT/TSS/IDT and exception reports, the local APIC, starting the other
//!   processors (INIT-SIPI-SIPI, per-core stacks and data), single-instruction helpers;
//!   the processors from the ACPI MADT (`arch::acpi`), the clocks (`arch::clock`: TSC +
//!   CMOS RTC), the isa-debug-exit port (`arch::exit`).
//! - [`console`] (COM1 and the screen, [`fbcon`]), [`boot_info`] (memory map, command
//!   line, modules), [`mem`] (start-up bump allocator, sealed once the cores serve; free lists after),
//!   [`cmdline`], [`embedded`] (a site carried inside the kernel ELF itself).
//! - [`arch::pci`](arch::x86_64::pci): enumeration and BAR assignment. [`drivers`]:
//!   virtio-net, e1000, e1000e, igb and vmxnet3, each a `Nic` per queue pair and a
//!   [`drivers::Driver`].
//! - [`boot`]: the start-up in ordered steps (command line, processors, site, heap,
//!   clocks, cores, NICs), each returning what the next need; [`launch`]: the engine's plan
//!   for the cores (mode, roles, servers, network-core wiring: `cores::plan`, shared with
//!   the host) onto the cores, each running the engine's per-core loop; [`adapters`]: the
//!   site lookup, access log and ISN key the engine asks for; [`report`]: the console's
//!   ready and stats lines; [`crash`]: failures on purpose; [`rest`]: how an idle core
//!   polls, then halts until its NIC, its timer or another core wakes it.
//! - [`state`]: the state area (the ACME client's records in two slots at the end of the
//!   virtio-blk disk, [`drivers::virtio_blk`]), so a write cut short leaves the previous
//!   state; [`acme`]: the engine's ACME agent given that disk, the CPU's randomness, the
//!   RTC and the console, run by core 0.
//! - [`tls`]: HTTPS's platform: a ChaCha20 generator seeded from RDSEED/RDRAND, the RTC
//!   clock for rustls, and the listener from the certificate and key the image carries.
//!
//! `unsafe` lives here and only here (the engine has none but its ring): every block says
//! why it holds.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

extern crate alloc;
// The drivers' host fakes (`drivers::fake`) use the host's allocator, lock and threads.
#[cfg(all(feature = "fake", not(test)))]
extern crate std;

pub mod acme;
pub mod adapters;
pub mod arch;
pub mod boot;
pub mod boot_info;
pub mod boot_trace;
pub mod cmdline;
pub mod console;
pub mod cores;
pub mod crash;
pub mod dhcp;
pub mod drivers;
pub mod embedded;
pub mod fbcon;
pub mod fetcher;
pub mod launch;
pub mod mem;
pub mod nics;
pub mod queue;
pub mod report;
pub mod rest;
pub mod state;
pub mod tls;

#[cfg(target_os = "none")]
#[global_allocator]
static HEAP: mem::Bump = mem::Bump;

/// Prints the return addresses found by walking frame pointers from `rbp` (the kernel is
/// built with frame pointers; look them up with `addr2line -e` on an unstripped build).
pub fn backtrace(mut rbp: u64) {
    kprint!("    backtrace:");
    let k = mem::kernel_span();
    for _ in 0..16 {
        if rbp % 8 != 0 || !(0x1000..1 << 32).contains(&rbp) {
            break;
        }
        // SAFETY: rbp is 8-aligned and inside the identity-mapped first 4 GiB; a frame is
        // (saved rbp, return address).
        let (next, ret) = unsafe { (*(rbp as *const u64), *((rbp + 8) as *const u64)) };
        if ret < k.start || ret >= k.end {
            break;
        }
        kprint!(" {ret:#x}");
        rbp = next;
    }
    kprintln!();
}

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    if !arch::smp::begin_stop() {
        arch::smp::halting();
        arch::cpu::halt_forever(); // another core is reporting its failure
    }
    arch::smp::stop_others();
    console::force_unlock();
    kprintln!("\n!!! KERNEL PANIC on {}: {info}", arch::smp::Who);
    let rbp: u64;
    // SAFETY: reads the frame pointer register only.
    unsafe { core::arch::asm!("mov {}, rbp", out(reg) rbp, options(nomem, nostack)) };
    backtrace(rbp);
    arch::exit::fail()
}

/// Stops with a message: a boot configuration that cannot work.
#[macro_export]
macro_rules! fatal {
    ($($arg:tt)*) => {{
        $crate::kprintln!("!!! FATAL: {}", format_args!($($arg)*));
        $crate::arch::exit::fail()
    }};
}

/// What the boot line says of an EFI memory map given beside the basic one: its usable
/// RAM, which should be the same (GRUB converts the one into the other).
struct EfiMap<'a>(&'a boot_info::BootInfo);

impl core::fmt::Display for EfiMap<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let i = self.0;
        if i.efi_regions == 0 || i.map_source == boot_info::MapSource::Mb2Efi {
            return Ok(());
        }
        write!(
            f,
            "; EFI memory map too: {} usable descriptor(s), {} KiB",
            i.efi_regions,
            i.efi_usable >> 10
        )
    }
}

/// The TSC when the kernel's Rust code started (the boot budget's "kernel's own part" is
/// measured from here; the TSC itself counts from the CPU's reset, so its value here is
/// what firmware and loader took).
pub static ENTRY_TSC: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Everything after the entry code: called by `main.rs` with `eax`/`ebx` at entry.
pub fn start(eax: u32, ebx: u32) -> ! {
    ENTRY_TSC.store(arch::cpu::rdtsc(), core::sync::atomic::Ordering::Relaxed);
    console::init();
    // SAFETY: first thing on the boot CPU, once.
    unsafe { arch::init_cpu() };
    let mtrr = arch::cache::enable_write_back();
    let pause = arch::cpu::init_relax();
    kprintln!(
        "bareweb kernel {} ({mtrr}; {})",
        env!("CARGO_PKG_VERSION"),
        if pause {
            "bare machine: polling loops PAUSE"
        } else {
            "under a hypervisor: polling loops spin without PAUSE"
        }
    );
    boot_trace::mark("cpu");
    // SAFETY: nothing has been allocated or written yet besides our own statics.
    let info = match unsafe { boot_info::BootInfo::from_entry(eax, ebx) } {
        Ok(i) => i,
        Err(e) => fatal!("boot: {e}"),
    };
    boot_trace::mark("bootinfo");
    kprintln!(
        "boot: memory map from the {}: {} usable region(s), {} KiB{}",
        info.map_source,
        info.regions().len(),
        info.usable() >> 10,
        EfiMap(&info)
    );
    boot::boot(&info)
}
