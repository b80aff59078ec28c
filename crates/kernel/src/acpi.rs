//! The processors of the machine, from the ACPI MADT (the `acpi` crate finds and checks the
//! RSDP, the RSDT/XSDT and the MADT's checksum; this module walks the MADT's entries).
//!
//! Heads up! read ACPI 6.5 §5.2.5 (RSDP), §5.2.12 (MADT: Processor Local APIC structure,
//! type 0, and Processor Local x2APIC structure, type 9; flag bit 0 = enabled).
//!
//! Where the RSDP comes from, in order: the loader (PVH `rsdp_paddr`, multiboot2 tags
//! 14/15), else the BIOS areas (EBDA and 0xE0000-0xFFFFF). Firmware tables are read in
//! place (all of the first 4 GiB is identity-mapped); anything that would lie above is
//! seen as zeros, which no table validates as. The MADT's entry list is checked (every
//! length at least 2 and inside the table) before it is walked, so a corrupt table ends
//! the list rather than the walk. Runs before the heap exists: no allocation.

use core::fmt;
use core::ptr::NonNull;

use acpi::madt::{Madt, MadtEntry};
use acpi::{AcpiHandler, AcpiTables, PhysicalMapping};

use crate::arch::smp::MAX_CPUS;
use crate::boot_info::BootInfo;

/// Physical memory reads: the identity map.
#[derive(Clone, Copy, Debug)]
struct Identity;

/// What reads of memory outside the identity map see: zeros (no valid table).
#[repr(C, align(4096))]
struct Zeros([u8; 4096]);
static ZEROS: Zeros = Zeros([0; 4096]);

impl AcpiHandler for Identity {
    unsafe fn map_physical_region<T>(&self, pa: usize, size: usize) -> PhysicalMapping<Self, T> {
        let inside = pa != 0 && pa.checked_add(size).is_some_and(|end| end <= 1 << 32);
        let at = if inside || size > ZEROS.0.len() {
            pa
        } else {
            ZEROS.0.as_ptr() as usize
        };
        // SAFETY: the first 4 GiB are identity-mapped, so `pa` is readable at `pa`; a
        // range outside is given the zero page instead (large ranges come only after a
        // header inside the map validated, i.e. from inside the map).
        unsafe {
            PhysicalMapping::new(
                pa,
                NonNull::new_unchecked(at.max(1) as *mut T),
                size,
                size,
                *self,
            )
        }
    }

    fn unmap_physical_region<T>(_region: &PhysicalMapping<Self, T>) {}
}

/// The enabled processors: APIC ids in MADT order.
pub struct Processors {
    ids: [u32; MAX_CPUS],
    n: usize,
    /// Enabled processors beyond [`MAX_CPUS`], not used.
    pub over: usize,
    /// Where the RSDP was found.
    pub source: &'static str,
}

impl Processors {
    /// APIC ids of the enabled processors (the boot CPU among them).
    pub fn apic_ids(&self) -> &[u32] {
        &self.ids[..self.n]
    }
}

/// Why no processor list could be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// No RSDP from the loader nor in the BIOS areas.
    NoRsdp,
    /// The RSDP or root table did not validate.
    BadTables,
    /// No MADT (APIC) table.
    NoMadt,
    /// The MADT's entry list is malformed.
    BadMadt,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::NoRsdp => "no ACPI RSDP (from the loader or in the BIOS areas)",
            Error::BadTables => "the ACPI RSDP or root table does not validate",
            Error::NoMadt => "no ACPI MADT",
            Error::BadMadt => "the ACPI MADT's entry list is malformed",
        })
    }
}

/// Reads the processor list.
pub fn processors(info: &BootInfo) -> Result<Processors, Error> {
    let (tables, source) = if info.rsdp != 0 {
        // SAFETY: the loader says an RSDP is there; from_rsdp validates it.
        match unsafe { AcpiTables::from_rsdp(Identity, info.rsdp as usize) } {
            Ok(t) => (t, "from the loader"),
            Err(_) => search()?,
        }
    } else {
        search()?
    };
    let madt = tables.find_table::<Madt>().map_err(|_| Error::NoMadt)?;
    let len = madt.get().header.length as usize;
    let hdr = core::mem::size_of::<Madt>();
    // SAFETY: the table's `length` bytes were checksummed by find_table, so they are
    // mapped firmware memory (identity map).
    let bytes =
        unsafe { core::slice::from_raw_parts(madt.virtual_start().as_ptr().cast::<u8>(), len) };
    if !entries_well_formed(bytes, hdr) {
        return Err(Error::BadMadt);
    }
    let mut p = Processors {
        ids: [0; MAX_CPUS],
        n: 0,
        over: 0,
        source,
    };
    for e in madt.get().entries() {
        let id = match e {
            MadtEntry::LocalApic(a) if a.flags & 1 != 0 => a.apic_id as u32,
            MadtEntry::LocalX2Apic(a) if a.flags & 1 != 0 => a.x2apic_id,
            _ => continue,
        };
        if p.apic_ids().contains(&id) {
            continue; // a firmware may list a processor as both types
        }
        if p.n < MAX_CPUS {
            p.ids[p.n] = id;
            p.n += 1;
        } else {
            p.over += 1;
        }
    }
    Ok(p)
}

fn search() -> Result<(AcpiTables<Identity>, &'static str), Error> {
    // SAFETY: a BIOS machine (PVH/multiboot2 loaders are BIOS-style); the search reads
    // the EBDA pointer and the 0xE0000-0xFFFFF area, identity-mapped.
    match unsafe { AcpiTables::search_for_rsdp_bios(Identity) } {
        Ok(t) => Ok((t, "found in the BIOS area")),
        Err(acpi::AcpiError::NoValidRsdp) => Err(Error::NoRsdp),
        Err(_) => Err(Error::BadTables),
    }
}

/// Whether the MADT's entries, from `at` to the end of `table`, each have a length of at
/// least 2 that stays inside the table (the crate's walk trusts them).
pub fn entries_well_formed(table: &[u8], mut at: usize) -> bool {
    let mut steps = 0;
    while at < table.len() {
        let Some(&len) = table.get(at + 1) else {
            return false;
        };
        let len = len as usize;
        if len < 2 || at + len > table.len() {
            return false;
        }
        at += len;
        steps += 1;
        if steps > 65_536 {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::entries_well_formed;

    #[test]
    fn madt_entry_lists() {
        let mut t = alloc::vec![0u8; 44];
        t.extend_from_slice(&[0, 8, 0, 0, 1, 0, 0, 0]); // local APIC 0, enabled
        t.extend_from_slice(&[0, 8, 1, 1, 1, 0, 0, 0]);
        assert!(entries_well_formed(&t, 44));
        assert!(entries_well_formed(&t[..44], 44), "no entries");
        let mut zero = t.clone();
        zero[45] = 0; // length 0 would make the walk stand still
        assert!(!entries_well_formed(&zero, 44));
        let mut long = t.clone();
        long[53] = 9; // past the end
        assert!(!entries_well_formed(&long, 44));
        assert!(
            !entries_well_formed(&t[..51], 44),
            "cut in the middle of an entry"
        );
        assert!(
            !entries_well_formed(&t[..45], 44),
            "cut after the type byte"
        );
    }
}
