//! The kernel binary: the entry code in `bareweb_kernel::arch::boot` calls
//! `bw_kernel_main` in long mode with the loader's `eax` and `ebx`.
#![no_std]
#![no_main]

/// Called by the entry code with the loader's `eax` and `ebx` (zero-extended).
#[no_mangle]
extern "C" fn bw_kernel_main(eax: u64, ebx: u64) -> ! {
    bareweb_kernel::start(eax as u32, ebx as u32)
}
