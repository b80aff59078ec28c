//! The kernel ELF this binary carries (crates/cli/build.rs builds it), and the kinds of
//! image file a path names: what `bareweb build` writes and `bareweb run` boots.

use std::path::Path;

/// The kernel ELF this binary was built with.
pub static KERNEL: &[u8] = include_bytes!(env!("BAREWEB_KERNEL_ELF"));

/// What `build` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The site alone (any name but `.elf`/`.iso`; `.bws` by convention).
    Site,
    /// The kernel with the site inside: one file that boots (PVH, multiboot2).
    Elf,
    /// That ELF in a GRUB rescue image (BIOS and UEFI): a CD.
    Iso,
    /// The same image as a raw disk (BIOS and UEFI): a USB stick, a cloud VM's disk.
    Disk,
}

/// The kind of file `path` names, by its extension, in any case.
pub fn kind_of(path: &Path) -> Kind {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("elf") => Kind::Elf,
        Some(e) if e.eq_ignore_ascii_case("iso") => Kind::Iso,
        Some(e) if e.eq_ignore_ascii_case("img") => Kind::Disk,
        _ => Kind::Site,
    }
}
