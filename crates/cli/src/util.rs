//! Helpers shared by the subcommands: reading sites, randomness. (Option values are
//! parsed in [`crate::opts`].)

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bareweb_engine::server::drain::Drain;
use bareweb_engine::site::Site;

/// The image of a site directory (built, with its configuration, what was left out said
/// on stderr) or of an image file (read; a configuration cannot apply to it), checked; and
/// its number of files.
pub fn site_image(path: &Path, config: Option<&Path>) -> Result<(Vec<u8>, usize), String> {
    site_image_excluding(path, config, &[])
}

/// [`site_image`] for `bareweb build`, which writes `outputs`: a site directory's build
/// leaves them out (listed with what else was), should they lie inside the site.
pub fn site_image_excluding(
    path: &Path,
    config: Option<&Path>,
    outputs: &[&Path],
) -> Result<(Vec<u8>, usize), String> {
    let bytes = if path.is_dir() {
        let built = bareweb_site::build_dir_excluding(path, config, outputs)
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
    let site = Site::load(&bytes)
        .map_err(|e| format!("{} is not a usable site image: {e}", path.display()))?;
    if let Some(line) = sites_line(&site) {
        eprintln!("bareweb: {}: {line}", path.display());
    }
    let files = site.len();
    Ok((bytes, files))
}

/// For an image with virtual hosts, one line naming its sites: `2 sites by Host:
/// a.example (www.a.example; 3 files), b.example (default; 1 file)`, and who gets a host
/// no site names.
pub fn sites_line(site: &Site<'_>) -> Option<String> {
    let count = site.site_count();
    if count == 0 {
        return None;
    }
    let mut names: Vec<Vec<&str>> = vec![Vec::new(); count];
    for (name, i) in site.names() {
        if let Some(n) = names.get_mut(i) {
            n.push(name);
        }
    }
    let each: Vec<String> = (0..count)
        .map(|i| {
            let files = site.site(i).map_or(0, |s| s.len());
            let mut notes: Vec<String> = names[i].iter().skip(1).map(|s| s.to_string()).collect();
            if site.default_site() == Some(i) {
                notes.push("default".into());
            }
            notes.push(format!("{files} file{}", if files == 1 { "" } else { "s" }));
            format!(
                "{} ({})",
                names[i].first().unwrap_or(&"?"),
                notes.join("; ")
            )
        })
        .collect();
    let unknown = match site.default_site() {
        Some(_) => "other hosts get the default",
        None => "other hosts get 421",
    };
    Some(format!(
        "{count} sites by Host: {}; {unknown}",
        each.join(", ")
    ))
}

/// `%XX` sequences decoded (a `%` not followed by two hex digits is kept as it is).
pub fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        let pair = (
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        );
        match (b[i], pair) {
            (b'%', (Some(h), Some(l))) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The file under the site directory `dir` that a URL path names, as the server reads the
/// path: query and fragment dropped, percent-decoded (`my%20file.txt` is `my file.txt`),
/// `index.html` for a path ending in `/` (`get --verify`, `load --verify`).
pub fn site_file(dir: &Path, path: &str) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let decoded = std::ffi::OsString::from_vec(percent_decode(path.trim_start_matches('/')));
    let file = dir.join(decoded);
    if path.ends_with('/') {
        file.join("index.html")
    } else {
        file
    }
}

/// Reads a site directory or image into a leaked `Box<[u8]>` (its bytes returned with the
/// site): kept for the life of the process, or until a reload's generations free it once
/// no connection sends from it (`bareweb_host::reload`).
pub fn load_site_owned(
    path: &Path,
    config: Option<&Path>,
) -> Result<(&'static [u8], Site<'static>), String> {
    let (bytes, _) = site_image(path, config)?;
    let image: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    match Site::load(image) {
        Ok(site) => Ok((image, site)),
        Err(e) => {
            let raw = core::ptr::from_ref::<[u8]>(image).cast_mut();
            // SAFETY: `image` was leaked just above and nothing refers to it: the site
            // that would have did not load.
            drop(unsafe { Box::from_raw(raw) });
            Err(format!(
                "{} is not a usable site image: {e}",
                path.display()
            ))
        }
    }
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    b
}

/// A 16-byte secret kept for the life of the machine's boot in `/run/bareweb/NAME`
/// (`/run` is emptied at boot), made from `/dev/urandom` by the first process that asks:
/// a TCP client's ISN key (RFC 6528 wants one per boot, as a kernel has, so that a later
/// run's connections on reused ports follow on from an earlier run's). Where the file
/// cannot be made or read (no `/run`, not root), a fresh random key.
pub fn boot_secret(name: &str) -> [u8; 16] {
    secret_in(std::path::Path::new("/run/bareweb"), name)
}

/// [`boot_secret`] kept in `dir`.
fn secret_in(dir: &std::path::Path, name: &str) -> [u8; 16] {
    use std::io::{Read, Write};
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = dir.join(name);
    let read = |p: &std::path::Path| -> Option<[u8; 16]> {
        let mut b = [0u8; 16];
        std::fs::File::open(p).ok()?.read_exact(&mut b).ok()?;
        Some(b)
    };
    if let Some(b) = read(&path) {
        return b;
    }
    let fresh: [u8; 16] = random_bytes();
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    // Written under a name of our own, then linked into place: a process racing us
    // either links first (we then read its key) or finds ours whole.
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(&fresh));
    if made.is_ok() {
        let _ = std::fs::hard_link(&tmp, &path);
    }
    let _ = std::fs::remove_file(&tmp);
    read(&path).unwrap_or(fresh)
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

/// From now on each of `signals` only sets [`stop_flag`] (said on stderr if one cannot be
/// caught).
fn stop_on(signals: &[std::ffi::c_int]) {
    for &sig in signals {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(stop_arc())) {
            eprintln!("bareweb: cannot catch signal {sig}: {e}");
        }
    }
}

/// From now on SIGINT, SIGTERM and SIGHUP only set [`stop_flag`] (`signal-hook`: no
/// hand-written handler).
pub fn catch_stop_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    stop_on(&[SIGINT, SIGTERM, SIGHUP]);
}

/// How long after the first SIGTERM another one counts as a second (stop at once).
const REPEAT_NS: u64 = 1_000_000_000;

/// In a SIGTERM handler: whether this SIGTERM is a second one, [`REPEAT_NS`] or more after
/// the first (whose time `first` keeps: monotonic ns + 1, 0 before any). One stop asked
/// for twice at once is one request, not a request and its escalation: `timeout(1)` sends
/// the signal to its child and then to its process group, a supervisor may signal the
/// process and its group, and the two arrive a few microseconds apart (one test's drain
/// was cut short so on a busy machine). Async-signal-safe: clock_gettime(2) and atomics.
fn repeated_term(first: &AtomicU64) -> bool {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given; async-signal-safe (POSIX).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let now = (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64);
    repeated_at(first, now)
}

/// [`repeated_term`] at `now` (monotonic ns).
fn repeated_at(first: &AtomicU64, now: u64) -> bool {
    let now = now.saturating_add(1);
    match first.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => false,
        Err(t) => now.saturating_sub(t) >= REPEAT_NS,
    }
}

/// For `run`: SIGINT and SIGHUP set [`stop_flag`]; SIGTERM sets the returned flag (a
/// drain asked for: `run` presses the machine's power button), and a second SIGTERM, a
/// second or more later ([`repeated_term`]), sets [`stop_flag`]. Call instead of [`catch_stop_signals`].
pub fn catch_stop_signals_term_drains() -> &'static AtomicBool {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    static TERM: AtomicBool = AtomicBool::new(false);
    static FIRST: AtomicU64 = AtomicU64::new(0);
    stop_on(&[SIGINT, SIGHUP]);
    let stop = stop_flag();
    let on_term = move || {
        TERM.store(true, Ordering::Relaxed);
        if repeated_term(&FIRST) {
            stop.store(true, Ordering::Relaxed);
        }
    };
    // SAFETY: the action only swaps and stores atomics (async-signal-safe: no lock, no
    // allocation, no I/O), and what it touches is static.
    if let Err(e) = unsafe { signal_hook::low_level::register(SIGTERM, on_term) } {
        eprintln!("bareweb: cannot catch signal {SIGTERM}: {e}");
    }
    &TERM
}

/// A graceful drain for `serve`'s server (`cfg.drain`, made from `cfg.timeouts`, kept for
/// the life of the process), asked for by SIGTERM: what a balancer, systemd, Docker or
/// Kubernetes sends to stop a service. SIGINT (Ctrl-C) still stops at once, as does a
/// second SIGTERM during the drain; SIGHUP is `serve`'s reload (crate::reload), not a
/// stop. Call instead of [`catch_stop_signals`].
pub fn drain_on_sigterm(cfg: &mut bareweb_engine::server::Config) -> &'static Drain {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let t = cfg.timeouts;
    let drain: &'static Drain =
        Box::leak(Box::new(Drain::new(t.drain_grace_ms, t.drain_timeout_ms)));
    cfg.drain = Some(drain);
    stop_on(&[SIGINT]);
    let stop = stop_flag();
    static FIRST: AtomicU64 = AtomicU64::new(0);
    let on_term = move || {
        if repeated_term(&FIRST) {
            stop.store(true, Ordering::Relaxed);
        } else {
            drain.request();
        }
    };
    // SAFETY: the action only loads and stores atomics (async-signal-safe: no lock, no
    // allocation, no I/O), and what it touches lives for the whole process.
    if let Err(e) = unsafe { signal_hook::low_level::register(SIGTERM, on_term) } {
        eprintln!("bareweb: cannot catch signal {SIGTERM}: {e}");
    }
    drain
}

/// Says on stderr when a drain starts and, once `serve` returned, how it ended; the
/// watcher runs on its own thread (the signal handler cannot print) until `stop` is set.
pub fn watch_drain(drain: &'static Drain) {
    let _ = std::thread::Builder::new()
        .name("bareweb-drain".into())
        .spawn(move || {
            while !stop_flag().load(Ordering::Relaxed) {
                if drain.draining() {
                    let (grace, timeout) = drain.limits_ms();
                    eprintln!(
                        "bareweb: draining (SIGTERM): /healthz answers 503; new connections served for {:.1} s, the rest reset at {:.1} s; SIGTERM or Ctrl-C again stops at once",
                        grace as f64 / 1e3,
                        timeout as f64 / 1e3
                    );
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
}

/// The line that ends a drained `serve` (nothing if no drain was asked for).
pub fn drain_report(drain: &Drain) {
    if !drain.draining() {
        return;
    }
    let c = drain.counts();
    if drain.finished() {
        eprintln!(
            "bareweb: drained in {} ms: {} connections closed, {} reset at the timeout, {} refused after the grace",
            c.took_ms, c.closed, c.reset, c.refused
        );
    } else {
        eprintln!("bareweb: drain cut short (stopped at once)");
    }
}

#[cfg(test)]
mod term_tests {
    use super::*;

    /// A SIGTERM delivered twice at once is one; one a second or more after the first is
    /// the second (stop at once), and so is any after it. A clock at 0 still counts.
    #[test]
    fn a_second_sigterm_counts_only_a_second_after_the_first() {
        let first = AtomicU64::new(0);
        assert!(!repeated_at(&first, 0));
        assert!(!repeated_at(&first, 40_000));
        assert!(!repeated_at(&first, REPEAT_NS - 1));
        assert!(repeated_at(&first, REPEAT_NS));
        assert!(repeated_at(&first, 5 * REPEAT_NS));
        let first = AtomicU64::new(0);
        assert!(!repeated_at(&first, 7 * REPEAT_NS));
        assert!(!repeated_at(&first, 7 * REPEAT_NS + 3));
        assert!(repeated_at(&first, 9 * REPEAT_NS));
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;

    #[test]
    fn url_paths_name_site_files_as_the_server_decodes_them() {
        let d = Path::new("/srv/site");
        assert_eq!(site_file(d, "/my%20file.txt"), d.join("my file.txt"));
        assert_eq!(site_file(d, "/a/b.txt?x=%20#f"), d.join("a/b.txt"));
        assert_eq!(site_file(d, "/"), d.join("index.html"));
        assert_eq!(site_file(d, "/d%C3%A9j%C3%A0/"), d.join("déjà/index.html"));
        assert_eq!(percent_decode("100%"), b"100%");
        assert_eq!(percent_decode("%zz%4"), b"%zz%4");
        assert_eq!(percent_decode("%41%62"), b"Ab");
    }
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    /// The first call makes the secret (0600, in a 0700 directory), later calls read the
    /// same bytes; an unusable directory gives a fresh random key each time.
    #[test]
    fn a_boot_secret_is_made_once_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("bw-secret-{}", std::process::id()));
        let a = secret_in(&dir, "k");
        let b = secret_in(&dir, "k");
        assert_eq!(a, b);
        assert_ne!(a, [0; 16]);
        let mode = std::fs::metadata(dir.join("k"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no scratch file left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let bad = std::path::Path::new("/proc/self/no-such-dir");
        assert_ne!(secret_in(bad, "k"), secret_in(bad, "k"));
    }
}
