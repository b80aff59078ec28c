//! Helpers shared by the subcommands: reading sites, randomness. (Option values are
//! parsed in [`crate::opts`].)

use std::path::Path;

use bareweb_engine::site::{self, Site};

/// Reads a site directory or image and keeps it for the life of the process.
pub fn load_site(path: &Path) -> Result<Site<'static>, String> {
    let bytes = if path.is_dir() {
        site::build_from_dir(path).map_err(|e| format!("cannot build {}: {e}", path.display()))?
    } else {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
    };
    let image: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    Site::load(image).map_err(|e| format!("{} is not a usable site image: {e}", path.display()))
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    b
}
