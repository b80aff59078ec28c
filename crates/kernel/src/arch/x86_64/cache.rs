//! Memory types. PVH loaders that skip the BIOS (qboot) leave the MTRRs as reset left
//! them: disabled, which makes all memory uncached wherever the guest's memory type is
//! honoured (real hardware, hardware virtualisation with device assignment). If the MTRRs
//! are off, we turn them on with write-back as the default type; the PCI hole stays
//! uncached through the page tables (PCD|PWT on the top GiB). Firmware that set MTRRs up
//! (SeaBIOS, GRUB's BIOS) is left alone.

use super::cpu::{cpuid, rdmsr, wrmsr};

const IA32_MTRR_DEF_TYPE: u32 = 0x2FF;
const IA32_MTRRCAP: u32 = 0xFE;

/// Makes RAM write-back cacheable if the MTRRs are disabled; says what it did.
pub fn enable_write_back() -> &'static str {
    if cpuid(1, 0).3 & (1 << 12) == 0 {
        return "no MTRRs";
    }
    // SAFETY: CPUID says MTRRs exist, so both MSRs exist.
    let def = unsafe { rdmsr(IA32_MTRR_DEF_TYPE) };
    if def & (1 << 11) != 0 {
        return "MTRRs set by firmware";
    }
    // SAFETY: as above.
    let _cap = unsafe { rdmsr(IA32_MTRRCAP) };
    // SAFETY: enabling MTRRs with default type write-back (6) and no variable ranges
    // makes all memory WB; device memory is mapped with PCD|PWT (uncached) by the page
    // tables, which wins over WB. Caches need no flush: nothing was cached while UC.
    unsafe { wrmsr(IA32_MTRR_DEF_TYPE, (1 << 11) | 6) };
    "MTRRs were off: default write-back"
}
