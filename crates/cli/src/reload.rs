//! `serve`'s reload without downtime: on SIGHUP (or `bareweb reload --pid-file FILE`,
//! which sends it) the site directory and its configuration are built again from disk;
//! a site that builds is published as the next generation ([`Generations`]), which every
//! core swaps in between two rounds; the old image is freed once no connection sends from
//! it. A site that does not build is refused, with the reason, and the old one keeps
//! serving. What cannot change without a restart (the server's own pages' place, switches
//! and access rule from `[stats]`, their header lines) is said and left as it was; the
//! command-line options are not re-read (addresses, cores, TAPs: a restart).
//! docs/design/reload.md has the design.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bareweb_engine::site::Site;
use bareweb_host::reload::Generations;

use crate::util::load_site_owned;

/// What a reload reads again.
pub struct Source {
    /// The site directory (or image file).
    pub site: PathBuf,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// How long the old image may be held by connections before they are reset.
    pub drain_timeout: Duration,
    /// HTTPS: the certificate and key files, read again and put in service for new
    /// connections.
    pub tls: Option<crate::tls::Renewal>,
}

/// What the reload thread works with: the generations, or why serve cannot reload.
pub enum Reloads {
    /// Reloads publish into these.
    On(&'static Generations),
    /// SIGHUP is answered with this reason (`--runner`).
    Off(&'static str),
}

/// From now on SIGHUP reloads (on a thread of its own; signal-hook's iterator: the
/// handler itself only wakes it).
pub fn on_sighup(reloads: Reloads, source: Source) {
    use signal_hook::consts::SIGHUP;
    let mut signals = match signal_hook::iterator::Signals::new([SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bareweb: cannot catch signal {SIGHUP}: {e}");
            return;
        }
    };
    let _ = std::thread::Builder::new()
        .name("bareweb-reload".into())
        .spawn(move || {
            for _ in signals.forever() {
                match &reloads {
                    Reloads::On(gens) => {
                        if let Err(why) = reload(gens, &source) {
                            gens.refuse();
                            eprintln!(
                                "bareweb: reload refused: {why}; still serving generation {}",
                                gens.counts().generation
                            );
                        }
                    }
                    Reloads::Off(why) => eprintln!("bareweb: SIGHUP: no reload {why}"),
                }
            }
        });
}

/// One reload: build, check, publish, wait for every core's swap, then for the old
/// image's release.
pub fn reload(gens: &Generations, source: &Source) -> Result<(), String> {
    let t = Instant::now();
    eprintln!("bareweb: reloading {}", source.site.display());
    // The certificate first: a bad one refuses the reload before anything is built.
    let renewed = source
        .tls
        .as_ref()
        .map(crate::tls::Renewal::read)
        .transpose()?;
    let (bytes, site) = load_site_owned(&source.site, source.config.as_deref())?;
    for what in restart_only(&gens.site(), &site) {
        eprintln!("bareweb: reload: {what} needs a restart: kept as it was");
    }
    if let (Some(r), Some((server, said))) = (&source.tls, renewed) {
        r.install(server);
        eprintln!("bareweb: reload: {said}, in service for new connections");
    }
    let files = site.len();
    let built_ms = t.elapsed().as_millis();
    let t = Instant::now();
    // SAFETY: `bytes` is a leaked `Box<[u8]>` (load_site_owned), used only through
    // `site`, which the generations now own.
    let g = unsafe { gens.publish(bytes, site) };
    // Every core looks every 10 ms (bareweb_host::reload::SWAP_EVERY_NS).
    while !gens.swapped(g) {
        if t.elapsed() > Duration::from_secs(10) {
            eprintln!("bareweb: reload: a core has not swapped after 10 s (stopped?)");
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    eprintln!(
        "bareweb: reloaded: generation {g}, {files} files (built in {built_ms} ms), in service on every core {} ms later",
        t.elapsed().as_millis()
    );
    let d = gens.drain(g, source.drain_timeout, || {
        std::thread::sleep(Duration::from_millis(5))
    });
    eprintln!(
        "bareweb: reload: generation {} freed after {} ms ({} connections reset at the drain timeout)",
        g - 1,
        d.ms,
        d.reset
    );
    Ok(())
}

/// The parts of a site's configuration that the running server took at start and does
/// not take again: its own pages (`[stats]`) and their header lines.
fn restart_only(old: &Site<'_>, new: &Site<'_>) -> Vec<&'static str> {
    let (a, b) = (old.pages(), new.pages());
    let mut out = Vec::new();
    if (a.stats, a.metrics, a.healthz, a.stats_path, a.stats_allow)
        != (b.stats, b.metrics, b.healthz, b.stats_path, b.stats_allow)
    {
        out.push("[stats] (the server's own pages)");
    }
    if a.headers != b.headers {
        out.push("[[headers]] for the server's own pages (the site's files take the new ones)");
    }
    out
}

/// `bareweb reload`: SIGHUP to the `serve` whose `--pid-file` is given.
#[derive(clap::Args)]
pub struct ReloadArgs {
    /// The `--pid-file` of the serve to reload.
    #[arg(long, value_name = "FILE")]
    pub pid_file: PathBuf,
}

/// Sends SIGHUP to the process named in the pid file.
pub fn send(a: &ReloadArgs) -> Result<(), String> {
    let pid = read_pid(&a.pid_file)?;
    // SAFETY: kill(2) with a plain pid and signal number; no memory is involved.
    if unsafe { libc::kill(pid, libc::SIGHUP) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!(
            "cannot signal process {pid} (from {}): {e}",
            a.pid_file.display()
        ));
    }
    eprintln!(
        "bareweb: SIGHUP sent to {pid}: it says on its stderr whether the reload was done or refused \
         (and counts both: bareweb_reloads_total, bareweb_reload_refused_total)"
    );
    Ok(())
}

fn read_pid(path: &Path) -> Result<i32, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read {}: {e} (is serve running with --pid-file?)",
            path.display()
        )
    })?;
    text.trim()
        .parse::<i32>()
        .ok()
        .filter(|&p| p > 1)
        .ok_or_else(|| format!("{} does not hold a process id: {text:?}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_file_holds_one_process_id() {
        let dir = std::env::temp_dir().join(format!("bareweb-pid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("pid");
        std::fs::write(&p, "1234\n").unwrap();
        assert_eq!(read_pid(&p), Ok(1234));
        for bad in ["", "x", "1", "-5", "12 13"] {
            std::fs::write(&p, bad).unwrap();
            assert!(read_pid(&p).is_err(), "{bad:?}");
        }
        assert!(read_pid(&dir.join("none"))
            .unwrap_err()
            .contains("--pid-file"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
