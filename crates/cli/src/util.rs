//! Helpers shared by the subcommands: reading sites, randomness. (Option values are
//! parsed in [`crate::opts`].)

use std::path::Path;

use bareweb_engine::site::Site;

/// The image of a site directory (built, with its configuration, what was left out said
/// on stderr) or of an image file (read; a configuration cannot apply to it), checked; and
/// its number of files.
pub fn site_image(path: &Path, config: Option<&Path>) -> Result<(Vec<u8>, usize), String> {
    let bytes = if path.is_dir() {
        let built = bareweb_site::build_dir(path, config)
            .map_err(|e| format!("cannot build {}: {e}", path.display()))?;
        for line in built.skipped_lines() {
            eprintln!("bareweb: {}: {line}", path.display());
        }
        if built.files == 0 {
            eprintln!(
                "bareweb: warning: {} has no file to serve (every path will be 404)",
                path.display()
            );
        }
        built.image
    } else {
        if let Some(c) = config {
            return Err(format!(
                "--config {} applies to a site directory; {} is an image (its configuration was built in)",
                c.display(),
                path.display()
            ));
        }
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
    };
    let files = Site::load(&bytes)
        .map_err(|e| format!("{} is not a usable site image: {e}", path.display()))?
        .len();
    Ok((bytes, files))
}

/// Reads a site directory or image and keeps it for the life of the process.
pub fn load_site(path: &Path, config: Option<&Path>) -> Result<Site<'static>, String> {
    let (bytes, _) = site_image(path, config)?;
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
