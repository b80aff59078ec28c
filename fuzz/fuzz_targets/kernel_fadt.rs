//! The ACPI FADT and the DSDT's `\_S5` package (the power button's registers and the
//! power-off's sleep type, read by the kernel at boot): never panic; a sleep type read is
//! three bits.
#![no_main]

use bareweb_kernel::arch::acpi::{parse_fadt, s5_sleep_type};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(f) = parse_fadt(data) {
        assert!(f.pm1_evt_len as usize <= 255);
    }
    if let Some((a, b)) = s5_sleep_type(data) {
        assert!(a < 8 && b < 8);
    }
});
