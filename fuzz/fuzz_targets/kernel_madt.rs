//! An ACPI MADT (the processor list firmware gives the kernel): never panics, never lists
//! more processors than the kernel uses, never the same APIC id twice.
#![no_main]

use bareweb_kernel::arch::acpi::parse_madt;
use bareweb_kernel::arch::smp::MAX_CPUS;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = parse_madt(data) {
        let ids = p.apic_ids();
        assert!(ids.len() <= MAX_CPUS);
        for (i, a) in ids.iter().enumerate() {
            assert!(!ids[..i].contains(a));
        }
    }
});
