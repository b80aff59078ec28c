//! `bareweb build`: a site directory into an image file.

use std::path::Path;

use bareweb_engine::site::{self, Site};

/// Builds the image of `dir` and writes it to `out`, after checking that it loads.
pub fn build(dir: &Path, out: &Path) -> Result<(), String> {
    let image =
        site::build_from_dir(dir).map_err(|e| format!("cannot build {}: {e}", dir.display()))?;
    let loaded =
        Site::load(&image).map_err(|e| format!("built image does not load (a bug): {e}"))?;
    std::fs::write(out, &image).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!(
        "{}: {} files, {} bytes",
        out.display(),
        loaded.len(),
        image.len()
    );
    Ok(())
}
