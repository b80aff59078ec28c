//! A multiboot2 information block (what GRUB hands the kernel): bounded, never panics.
#![no_main]

use bareweb_kernel::boot_info::BootInfo;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let i = BootInfo::multiboot2_bytes(data);
    assert!(i.regions().len() <= 64 && i.modules().len() <= 4);
    assert!(i.cmdline().len() <= 1024);
    for r in i.regions() {
        assert!(r.start <= r.end);
    }
});
