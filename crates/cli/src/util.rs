//! Helpers shared by the subcommands: reading sites, randomness. (Option values are
//! parsed in [`crate::opts`].)

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

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

fn stop_arc() -> &'static Arc<AtomicBool> {
    static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    STOP.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// The flag SIGINT, SIGTERM and SIGHUP (a closed terminal) set once
/// [`catch_stop_signals`] ran: `serve` and `run` poll it and stop as for Ctrl-C, removing
/// what they made.
pub fn stop_flag() -> &'static AtomicBool {
    stop_arc()
}

/// From now on SIGINT, SIGTERM and SIGHUP only set [`stop_flag`] (`signal-hook`: no
/// hand-written handler).
pub fn catch_stop_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(stop_arc())) {
            eprintln!("bareweb: cannot catch signal {sig}: {e}");
        }
    }
}
