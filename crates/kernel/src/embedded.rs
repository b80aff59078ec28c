//! A site (and a default command line) carried inside the kernel ELF itself, for the
//! single-file image `bareweb build SITE -o site.elf`.
//!
//! The kernel holds a descriptor in section `.bwsite` that starts with [`MAGIC`]. The
//! image builder finds it by that marker in the ELF file, appends the site as an extra
//! PT_LOAD segment at a physical address past the kernel, and patches the descriptor
//! with that address, its length and the command line. An unpatched kernel has a zero
//! length and takes the site from boot module 0 instead.

use core::cell::UnsafeCell;
use core::ptr::{addr_of, read_volatile};

/// Marker the image builder searches for (16 bytes).
pub const MAGIC: [u8; 16] = *b"BAREWEB-SITE-v1\0";
/// Bytes of command line the descriptor holds.
pub const CMDLINE_MAX: usize = 496;

/// The descriptor, as laid out in the ELF file (little endian).
#[repr(C)]
pub struct Descriptor {
    /// [`MAGIC`].
    pub magic: [u8; 16],
    /// Physical address of the site image (0: none embedded).
    pub site_addr: u64,
    /// Its length.
    pub site_len: u64,
    /// Length of the default command line.
    pub cmdline_len: u64,
    /// Default command line (used when the loader gives none).
    pub cmdline: [u8; CMDLINE_MAX],
}
const _: () = assert!(core::mem::size_of::<Descriptor>() == 536);

/// Interior mutability so the compiler never treats the compiled-in zeros as constants.
struct Patched(UnsafeCell<Descriptor>);
// SAFETY: nothing writes the descriptor at run time; it is only read.
unsafe impl Sync for Patched {}

#[used]
#[link_section = ".bwsite"]
static DESCRIPTOR: Patched = Patched(UnsafeCell::new(Descriptor {
    magic: MAGIC,
    site_addr: 0,
    site_len: 0,
    cmdline_len: 0,
    cmdline: [0; CMDLINE_MAX],
}));

/// What the image builder patched in: (site address, length, command line).
pub fn get() -> Option<(u64, u64, &'static [u8])> {
    let d = DESCRIPTOR.0.get();
    // SAFETY: d points at the live static; volatile reads stop the compiler from folding
    // the zeros it was compiled with (the file is patched after linking).
    let (addr, len, clen) = unsafe {
        (
            read_volatile(addr_of!((*d).site_addr)),
            read_volatile(addr_of!((*d).site_len)),
            read_volatile(addr_of!((*d).cmdline_len)),
        )
    };
    if len == 0 || addr == 0 || addr.checked_add(len)? > 1 << 32 {
        return None;
    }
    let clen = (clen as usize).min(CMDLINE_MAX);
    // SAFETY: the command line bytes are part of the static (read through a pointer so
    // the compiler cannot assume their compiled-in value).
    let cmdline = unsafe { core::slice::from_raw_parts(addr_of!((*d).cmdline).cast::<u8>(), clen) };
    Some((addr, len, cmdline))
}
