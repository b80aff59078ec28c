//! The processors and interrupt controllers of the machine, from the ACPI MADT: the `acpi`
//! crate finds and checks the RSDP, the RSDT/XSDT and the MADT (signature, length,
//! checksum); [`parse_madt`] reads the MADT's entries from its bytes with every length
//! checked (the crate's own entry walk trusts them: a zero length would make it stand
//! still).
//!
//! Heads up! read ACPI 6.5 §5.2.5 (RSDP), §5.2.12 (MADT: Processor Local APIC structure,
//! type 0, and Processor Local x2APIC structure, type 9; flag bit 0 = enabled; I/O APIC,
//! type 1; Interrupt Source Override, type 2, with its MPS INTI flags).
//!
//! Where the RSDP comes from, in order: the loader (PVH `rsdp_paddr`, multiboot2 tags
//! 14/15), else the BIOS areas (EBDA and 0xE0000-0xFFFFF). Firmware tables are read in
//! place (all of the first 4 GiB is identity-mapped); anything that would lie above is
//! seen as zeros, which no table validates as. Runs before the heap exists: no allocation.
//!
//! The FADT's fixed-feature power registers and the DSDT's `\_S5` sleep type, for the
//! power button and the power-off (`arch::power`): [`parse_fadt`] reads the SCI interrupt,
//! the SMI command port and its ACPI-enable value, the PM1 event and control blocks and
//! the DSDT's address (ACPI 6.5 §5.2.9, Table 5.9); [`s5_sleep_type`] finds the `\_S5`
//! package in the DSDT's AML (§7.4.2) without an AML interpreter: a named package whose
//! first two elements are the SLP_TYPa and SLP_TYPb values.
//!
//! # Fuzzing
//! `fuzz/fuzz_targets/kernel_madt.rs` feeds arbitrary bytes to [`parse_madt`], seeded with
//! the MADTs QEMU gives (`testdata/madt-*.bin`), and to [`parse_fadt`] and
//! [`s5_sleep_type`].

use core::fmt;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};

use acpi::madt::Madt;
use acpi::{AcpiHandler, AcpiTables, PhysicalMapping};

use crate::arch::smp::MAX_CPUS;
use crate::boot_info::BootInfo;

/// Physical memory reads: the identity map.
#[derive(Clone, Copy, Debug)]
struct Identity;

/// What reads of memory outside the identity map see: zeros (no valid table). In an
/// `UnsafeCell` so the page lands in `.bss` rather than 4 KiB of the image's `.rodata`;
/// nothing writes it.
#[repr(C, align(4096))]
struct Zeros(core::cell::UnsafeCell<[u8; 4096]>);
// SAFETY: never written, so shared reads from every core are sound.
unsafe impl Sync for Zeros {}
static ZEROS: Zeros = Zeros(core::cell::UnsafeCell::new([0; 4096]));

impl AcpiHandler for Identity {
    unsafe fn map_physical_region<T>(&self, pa: usize, size: usize) -> PhysicalMapping<Self, T> {
        let inside = pa != 0 && pa.checked_add(size).is_some_and(|end| end <= 1 << 32);
        let at = if inside || size > size_of::<Zeros>() {
            pa
        } else {
            ZEROS.0.get() as usize
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

/// Most I/O APICs and interrupt source overrides kept.
const MAX_IOAPICS: usize = 4;
const MAX_OVERRIDES: usize = 16;

/// An ISA interrupt's line as the MADT remaps it: (ISA IRQ, GSI, MPS INTI flags).
pub type Override = (u8, u32, u16);

/// The enabled processors (APIC ids in MADT order), the I/O APICs and the ISA interrupt
/// overrides.
pub struct Processors {
    ids: [u32; MAX_CPUS],
    n: usize,
    /// Enabled processors beyond [`MAX_CPUS`], not used.
    pub over: usize,
    /// Where the RSDP was found.
    pub source: &'static str,
    ioapics: [(u64, u32); MAX_IOAPICS],
    n_ioapics: usize,
    overrides: [Override; MAX_OVERRIDES],
    n_overrides: usize,
    /// The FADT's power registers, if the FADT reads.
    pub fadt: Option<Fadt>,
    /// S5's SLP_TYPa and SLP_TYPb from the DSDT, if its `\_S5` package reads.
    pub s5: Option<(u8, u8)>,
}

impl Processors {
    /// APIC ids of the enabled processors (the boot CPU among them).
    pub fn apic_ids(&self) -> &[u32] {
        &self.ids[..self.n]
    }

    /// The I/O APICs: (register address, first GSI).
    pub fn ioapics(&self) -> &[(u64, u32)] {
        &self.ioapics[..self.n_ioapics]
    }

    /// The interrupt source overrides of ISA (bus 0) interrupts.
    pub fn overrides(&self) -> &[Override] {
        &self.overrides[..self.n_overrides]
    }
}

/// The overrides, for [`isa_irq`]: ISA IRQ i is word i (0: none; else GSI + 1 in bits
/// 0..32 and the flags in bits 32..48).
static ISA: [AtomicU64; 16] = [const { AtomicU64::new(0) }; 16];

/// Keeps the MADT's ISA overrides for [`isa_irq`] (once, at boot).
pub fn keep_overrides(p: &Processors) {
    for &(irq, gsi, flags) in p.overrides() {
        if let Some(w) = ISA.get(irq as usize) {
            w.store((gsi as u64 + 1) | (flags as u64) << 32, Ordering::Relaxed);
        }
    }
}

/// The GSI, trigger and polarity of a PCI function's INTx line as PC firmware reports it
/// (an ISA IRQ number in the interrupt line register): the MADT's override when there is
/// one (QEMU's says level, active high for the PCI link lines 5, 9, 10, 11), else the
/// same number, level-triggered and active low as PCI interrupts are. Returns
/// (gsi, level, active_low).
pub fn isa_irq(irq: u8) -> (u32, bool, bool) {
    let w = ISA
        .get(irq as usize)
        .map_or(0, |w| w.load(Ordering::Relaxed));
    if w == 0 {
        return (irq as u32, true, true);
    }
    let gsi = (w as u32).wrapping_sub(1);
    let flags = (w >> 32) as u16;
    // MPS INTI flags: polarity bits 0-1 (01 high, 11 low), trigger bits 2-3 (01 edge,
    // 11 level); 00 "conforms to the bus", which for PCI means level, active low.
    let low = !matches!(flags & 3, 1);
    let level = !matches!((flags >> 2) & 3, 1);
    (gsi, level, low)
}

/// The FADT's fixed-feature hardware for the power button and S5 (port numbers of the
/// I/O space; a block at 0 is absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fadt {
    /// The SCI's interrupt (an ISA IRQ number in 8259 mode, which the MADT may override).
    pub sci: u16,
    /// The SMI command port, and the value that hands the hardware to the OS (ACPI mode);
    /// 0: the machine is always in ACPI mode.
    pub smi_cmd: u32,
    /// Written to `smi_cmd` to enter ACPI mode.
    pub acpi_enable: u8,
    /// PM1a and PM1b event blocks (status, then enable, each `pm1_evt_len / 2` bytes).
    pub pm1a_evt: u32,
    /// See `pm1a_evt`.
    pub pm1b_evt: u32,
    /// PM1a and PM1b control blocks (SCI_EN, SLP_TYP, SLP_EN).
    pub pm1a_cnt: u32,
    /// See `pm1a_cnt`.
    pub pm1b_cnt: u32,
    /// Bytes of one PM1 event block.
    pub pm1_evt_len: u8,
    /// The power button is the fixed-feature one (FADT flag PWR_BUTTON clear), not a
    /// control-method device.
    pub fixed_button: bool,
    /// The machine is hardware-reduced ACPI (no PM1 blocks: a GED device instead).
    pub hw_reduced: bool,
    /// The DSDT's physical address (X_DSDT if set, else DSDT).
    pub dsdt: u64,
}

/// The FADT fields bareweb uses, from the whole table (header included; a `length`
/// shorter than the slice limits it). `None` if it is not a FADT or is cut before the PM1
/// blocks. Never panics.
pub fn parse_fadt(table: &[u8]) -> Option<Fadt> {
    let declared = u32::from_le_bytes(table.get(4..8)?.try_into().ok()?) as usize;
    let t = table.get(..declared)?;
    if t.get(..4)? != b"FACP" || t.len() < 90 {
        return None;
    }
    let u8_at = |at: usize| t.get(at).copied().unwrap_or(0);
    let u16_at = |at: usize| {
        t.get(at..at + 2)
            .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        t.get(at..at + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |at: usize| {
        t.get(at..at + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    // Flags (offset 112): bit 4 PWR_BUTTON, bit 20 HW_REDUCED_ACPI.
    let flags = u32_at(112);
    let x_dsdt = u64_at(140);
    Some(Fadt {
        sci: u16_at(46),
        smi_cmd: u32_at(48),
        acpi_enable: u8_at(52),
        pm1a_evt: u32_at(56),
        pm1b_evt: u32_at(60),
        pm1a_cnt: u32_at(64),
        pm1b_cnt: u32_at(68),
        pm1_evt_len: u8_at(88),
        fixed_button: flags & (1 << 4) == 0,
        hw_reduced: flags & (1 << 20) != 0,
        dsdt: if x_dsdt != 0 {
            x_dsdt
        } else {
            u64::from(u32_at(40))
        },
    })
}

/// SLP_TYPa and SLP_TYPb of the S5 (soft-off) state from the DSDT's AML: the package
/// named `_S5_` (`NameOp` 0x08, optionally `\`-rooted, then `PackageOp` 0x12, its
/// PkgLength, NumElements, and two integers as `ZeroOp`, `OneOp` or `BytePrefix` n).
/// `None` when the DSDT has no such package (a value computed by a method, say). Never
/// panics; the table's header is skipped.
pub fn s5_sleep_type(dsdt: &[u8]) -> Option<(u8, u8)> {
    let aml = dsdt.get(36..)?;
    let mut from = 0;
    while let Some(i) = aml
        .get(from..)?
        .windows(4)
        .position(|w| w == b"_S5_")
        .map(|i| i + from)
    {
        from = i + 1;
        let named = (i >= 1 && aml[i - 1] == 0x08) || (i >= 2 && aml[i - 2..i] == [0x08, b'\\']);
        if !named {
            continue;
        }
        let mut at = i + 4;
        if aml.get(at) != Some(&0x12) {
            continue;
        }
        at += 1;
        // PkgLength: bits 6-7 of the lead byte give the bytes that follow it.
        let lead = *aml.get(at)?;
        at += 1 + usize::from(lead >> 6);
        let count = *aml.get(at)?;
        at += 1;
        if count < 2 {
            continue;
        }
        let mut int = || -> Option<u8> {
            let op = *aml.get(at)?;
            at += 1;
            match op {
                0x00 => Some(0),
                0x01 => Some(1),
                0x0A => {
                    let v = *aml.get(at)?;
                    at += 1;
                    Some(v)
                }
                _ => None,
            }
        };
        let a = int()?;
        let b = int()?;
        return Some((a & 7, b & 7));
    }
    None
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
    // SAFETY: the table's `length` bytes were checksummed by find_table, so they are
    // mapped firmware memory (identity map), not written by anyone while we read.
    let bytes =
        unsafe { core::slice::from_raw_parts(madt.virtual_start().as_ptr().cast::<u8>(), len) };
    let mut p = parse_madt(bytes)?;
    p.source = source;
    if let Ok(f) = tables.find_table::<acpi::fadt::Fadt>() {
        let at = f.virtual_start().as_ptr().cast::<u8>();
        // SAFETY: find_table checksummed the table's `length` bytes (read from its header,
        // the first 8 of which are the signature and that length): mapped firmware memory.
        let bytes = unsafe {
            let len = u32::from_le_bytes(*at.add(4).cast::<[u8; 4]>()) as usize;
            core::slice::from_raw_parts(at, len)
        };
        p.fadt = parse_fadt(bytes);
        p.s5 = p.fadt.and_then(|f| dsdt(f.dsdt)).and_then(s5_sleep_type);
    }
    Ok(p)
}

/// Most bytes of a DSDT read (QEMU's are a few KiB).
const DSDT_MAX: usize = 1 << 20;

/// The DSDT at `pa`, if it lies in the identity map, says so, fits [`DSDT_MAX`] and its
/// checksum holds.
fn dsdt(pa: u64) -> Option<&'static [u8]> {
    if pa == 0 || pa.checked_add(DSDT_MAX as u64)? > 1 << 32 {
        return None;
    }
    // SAFETY: `pa` and the next DSDT_MAX bytes lie in the identity-mapped first 4 GiB:
    // firmware memory read in place, before the heap exists (nothing writes it).
    let head = unsafe { core::slice::from_raw_parts(pa as *const u8, 8) };
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if &head[..4] != b"DSDT" || !(36..=DSDT_MAX).contains(&len) {
        return None;
    }
    // SAFETY: as above; `len` <= DSDT_MAX.
    let t = unsafe { core::slice::from_raw_parts(pa as *const u8, len) };
    (t.iter().fold(0u8, |a, &b| a.wrapping_add(b)) == 0).then_some(t)
}

/// Bytes of the MADT before its entries (SDT header, local APIC address, flags).
const MADT_HEADER: usize = 44;

/// The enabled processors listed in a MADT (`table`: the whole table, header included; a
/// `length` field shorter than the slice limits it). Processor Local APIC (type 0, 8 bytes)
/// and Local x2APIC (type 9, 16 bytes) entries with the enabled flag count; a processor
/// listed twice counts once. Never panics; a malformed entry list is an error.
pub fn parse_madt(table: &[u8]) -> Result<Processors, Error> {
    let declared = table
        .get(4..8)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let table = table.get(..declared).ok_or(Error::BadMadt)?;
    if declared < MADT_HEADER || &table[..4] != b"APIC" || !entries_well_formed(table, MADT_HEADER)
    {
        return Err(Error::BadMadt);
    }
    let mut p = Processors {
        ids: [0; MAX_CPUS],
        n: 0,
        over: 0,
        source: "",
        ioapics: [(0, 0); MAX_IOAPICS],
        n_ioapics: 0,
        overrides: [(0, 0, 0); MAX_OVERRIDES],
        n_overrides: 0,
        fadt: None,
        s5: None,
    };
    let u16_at = |e: &[u8], at: usize| e.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |e: &[u8], at: usize| {
        e.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut at = MADT_HEADER;
    while at < table.len() {
        // entries_well_formed: every entry has a length >= 2 that stays inside the table.
        let len = table[at + 1] as usize;
        let e = &table[at..at + len];
        at += len;
        let (id, flags) = match e[0] {
            0 if len >= 8 => (e[3] as u32, u32_at(e, 4)),
            9 if len >= 16 => (u32_at(e, 4).unwrap_or(0), u32_at(e, 8)),
            1 if len >= 12 => {
                if let (Some(addr), Some(base)) = (u32_at(e, 4), u32_at(e, 8)) {
                    if p.n_ioapics < MAX_IOAPICS {
                        p.ioapics[p.n_ioapics] = (addr as u64, base);
                        p.n_ioapics += 1;
                    }
                }
                continue;
            }
            2 if len >= 10 && e[2] == 0 => {
                if let (Some(gsi), Some(fl)) = (u32_at(e, 4), u16_at(e, 8)) {
                    if p.n_overrides < MAX_OVERRIDES && e[3] < 16 {
                        p.overrides[p.n_overrides] = (e[3], gsi, fl);
                        p.n_overrides += 1;
                    }
                }
                continue;
            }
            _ => continue,
        };
        if flags.unwrap_or(0) & 1 == 0 || p.apic_ids().contains(&id) {
            continue; // disabled, or listed as both types
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
    use super::*;

    #[test]
    fn madts_from_qemu() {
        // qboot, -smp 4: four local APICs, an I/O APIC, interrupt overrides, a NMI entry.
        let p = parse_madt(include_bytes!("../../../testdata/madt-qboot-smp4.bin")).unwrap();
        assert_eq!(p.apic_ids(), &[0, 1, 2, 3]);
        assert_eq!(p.over, 0);
        assert_eq!(p.ioapics(), &[(0xFEC0_0000, 0)]);
        // IRQ 0 (the PIT) on GSI 2; the PCI link lines level-triggered, active high.
        assert!(p.overrides().contains(&(0, 2, 0)), "{:?}", p.overrides());
        assert!(
            p.overrides().contains(&(11, 11, 0xD)),
            "{:?}",
            p.overrides()
        );
        // SeaBIOS on q35, -smp 2.
        let p = parse_madt(include_bytes!("../../../testdata/madt-q35-smp2.bin")).unwrap();
        assert_eq!(p.apic_ids(), &[0, 1]);
    }

    #[test]
    fn disabled_duplicate_x2apic_and_too_many_processors() {
        let mut t = include_bytes!("../../../testdata/madt-qboot-smp4.bin")[..44].to_vec();
        t.extend_from_slice(&[0, 8, 0, 7, 0, 0, 0, 0]); // APIC id 7, disabled
        t.extend_from_slice(&[0, 8, 1, 5, 1, 0, 0, 0]); // APIC id 5
        let mut x2 = vec![9, 16, 0, 0];
        x2.extend_from_slice(&300u32.to_le_bytes());
        x2.extend_from_slice(&1u32.to_le_bytes());
        x2.extend_from_slice(&9u32.to_le_bytes());
        t.extend_from_slice(&x2); // x2APIC id 300
        t.extend_from_slice(&[9, 16, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]); // 5 again
        t.extend_from_slice(&[0, 6, 1, 6, 1, 0]); // too short for its type: skipped
        for id in 10..10 + MAX_CPUS as u8 {
            t.extend_from_slice(&[0, 8, id, id, 1, 0, 0, 0]);
        }
        let n = t.len() as u32;
        t[4..8].copy_from_slice(&n.to_le_bytes());
        let p = parse_madt(&t).unwrap();
        assert_eq!(&p.apic_ids()[..3], &[5, 300, 10]);
        assert_eq!(p.apic_ids().len(), MAX_CPUS);
        assert_eq!(p.over, 2);
    }

    #[test]
    fn malformed_tables_are_errors_not_panics() {
        let good = include_bytes!("../../../testdata/madt-qboot-smp4.bin");
        for cut in 0..good.len() {
            let _ = parse_madt(&good[..cut]);
        }
        assert_eq!(
            parse_madt(&good[..100]).err(),
            Some(Error::BadMadt),
            "length past the end"
        );
        let mut x = 7u32;
        for _ in 0..5000 {
            let mut b = good.to_vec();
            for _ in 0..3 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let at = (x as usize) % b.len();
                b[at] = (x >> 8) as u8;
            }
            if let Ok(p) = parse_madt(&b) {
                assert!(p.apic_ids().len() <= MAX_CPUS);
            }
        }
    }

    #[test]
    fn madt_entry_lists() {
        let mut t = vec![0u8; 44];
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

    #[test]
    fn fadts_and_s5_from_qemu() {
        // QEMU's pc machine (PIIX4 PM at 0x600, SCI on IRQ 9, ACPI enable 0xF1 on 0xB2).
        let f = parse_fadt(include_bytes!("../../../testdata/fadt-qboot.bin")).unwrap();
        assert_eq!((f.sci, f.smi_cmd, f.acpi_enable), (9, 0xB2, 0xF1));
        assert_eq!((f.pm1a_evt, f.pm1b_evt, f.pm1_evt_len), (0x600, 0, 4));
        assert_eq!((f.pm1a_cnt, f.pm1b_cnt), (0x604, 0));
        assert!(f.fixed_button && !f.hw_reduced);
        assert_ne!(f.dsdt, 0);
        // q35 (ICH9 PM at 0x600, ACPI enable 0x02).
        let q = parse_fadt(include_bytes!("../../../testdata/fadt-q35.bin")).unwrap();
        assert_eq!((q.sci, q.smi_cmd, q.acpi_enable), (9, 0xB2, 0x02));
        assert_eq!((q.pm1a_evt, q.pm1a_cnt, q.pm1_evt_len), (0x600, 0x604, 4));
        assert!(q.fixed_button && !q.hw_reduced);
        // Both DSDTs say `Name (_S5, Package (4) { Zero, Zero, Zero, Zero })`.
        assert_eq!(
            s5_sleep_type(include_bytes!("../../../testdata/dsdt-qboot.bin")),
            Some((0, 0))
        );
        assert_eq!(
            s5_sleep_type(include_bytes!("../../../testdata/dsdt-q35.bin")),
            Some((0, 0))
        );
    }

    #[test]
    fn s5_packages_and_malformed_tables() {
        let aml = |body: &[u8]| {
            let mut t = b"DSDT".to_vec();
            t.resize(36, 0);
            t.extend_from_slice(body);
            t
        };
        // BytePrefix values, a root prefix, a two-byte PkgLength.
        let t = aml(b"\x10\x08\\_S5_\x12\x40\x0A\x04\x0A\x05\x0A\x07\x00\x00");
        assert_eq!(s5_sleep_type(&t), Some((5, 7)));
        // A `_S5_` that is not a named package, then the real one.
        let t = aml(b"_S5_\x14\x08_S5_\x12\x06\x04\x01\x00\x00\x00");
        assert_eq!(s5_sleep_type(&t), Some((1, 0)));
        // Computed by something else (a method call): not read.
        assert_eq!(s5_sleep_type(&aml(b"\x08_S5_\x12\x06\x04\x5B\x00")), None);
        assert_eq!(s5_sleep_type(&aml(b"\x08_S5_\x12")), None);
        assert_eq!(s5_sleep_type(b"DSDT"), None);
        let good = include_bytes!("../../../testdata/dsdt-qboot.bin");
        let i = good.windows(4).position(|w| w == b"_S5_").unwrap();
        for cut in i..i + 12 {
            let _ = s5_sleep_type(&good[..cut]);
        }
        let fadt = include_bytes!("../../../testdata/fadt-q35.bin");
        for cut in 0..fadt.len() {
            let _ = parse_fadt(&fadt[..cut]);
        }
        assert_eq!(parse_fadt(&fadt[..89]), None, "cut before the PM1 lengths");
        let mut bad = fadt.to_vec();
        bad[..4].copy_from_slice(b"APIC");
        assert_eq!(parse_fadt(&bad), None);
    }
}
