//! `bareweb load` (the load generator, [`bareweb_loadgen::load`]; on a TAP with the
//! engine's own TCP: [`crate::load_bare`]; with `--udp`: [`crate::load_udp`]) and `bareweb
//! surge-site` (writes the Surge file set a session run fetches). Owns the choice of
//! client and the socket client's run; what every client shares (the options, the
//! progress line, the report's printing) is [`crate::load_common`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use bareweb_loadgen::surge::{FileSet, SurgeParams};
use bareweb_loadgen::{parse_url_with, Expect, LoadConfig, Mode, UrlEntry};
use sha2::{Digest, Sha256};

use crate::load_common::{emit, progress_done, progress_printer, LoadArgs};

/// `bareweb surge-site`: write a Surge file set as a site directory.
#[derive(clap::Args)]
pub struct SurgeSiteArgs {
    /// Directory to write (files under surge/, manifest surge.tsv).
    pub dir: PathBuf,
    /// Number of files.
    #[arg(long, default_value_t = 2000)]
    pub files: usize,
    /// Largest file in bytes (Surge's Pareto tail is cut here).
    #[arg(long, default_value_t = 1 << 20)]
    pub max_size: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn surge_site(a: SurgeSiteArgs) -> Result<(), String> {
    let params = SurgeParams {
        files: a.files,
        max_size: a.max_size,
        ..SurgeParams::default()
    };
    let set = FileSet::generate(&params, a.seed)?;
    set.write_site(&a.dir)?;
    eprintln!(
        "bareweb: wrote {} files, {} bytes, to {} (mean request {:.0} bytes under Zipf popularity)",
        set.files.len(),
        set.total_bytes(),
        a.dir.display(),
        set.mean_request_bytes()
    );
    Ok(())
}

/// Length and SHA-256 of the file a URL path names under `dir` (percent-decoded, as the
/// server reads it).
fn expect_for(dir: &Path, path: &str) -> Result<Expect, String> {
    let p = crate::util::site_file(dir, path);
    let bytes = std::fs::read(&p).map_err(|e| format!("--verify: {}: {e}", p.display()))?;
    Ok(Expect {
        len: bytes.len() as u64,
        sha256: Sha256::digest(&bytes).into(),
    })
}

/// The URLs given and those of `--url-file`.
fn url_list(a: &LoadArgs) -> Result<Vec<String>, String> {
    let mut urls = a.urls.clone();
    if let Some(f) = &a.url_file {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        urls.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from),
        );
    }
    Ok(urls)
}

pub fn build_config(a: &LoadArgs) -> Result<LoadConfig, String> {
    let urls = url_list(a)?;
    if urls.is_empty() {
        return Err("no URL given".into());
    }
    let (target, _) = parse_url_with(&urls[0], &a.resolve)?;
    let mut paths = Vec::new();
    for u in &urls {
        let (t, path) = parse_url_with(u, &a.resolve)?;
        if t.addr != target.addr {
            return Err(format!(
                "{u}: every URL must name {} (one server per run)",
                target.addr
            ));
        }
        if t.tls_name != target.tls_name {
            return Err(format!(
                "{u}: every URL must have the scheme and name of {} (one server per run)",
                urls[0]
            ));
        }
        paths.push(path);
    }
    let mode = if let Some(rate) = a.sessions_rate {
        let dir = a
            .surge
            .as_ref()
            .ok_or("--sessions-rate needs --surge DIR")?;
        let set = FileSet::read_manifest(dir)?;
        paths = set.files.iter().map(|f| f.path.clone()).collect();
        let params = SurgeParams {
            think_scale: a.think_scale,
            ..set.params
        };
        Mode::Sessions { rate, params }
    } else if let Some(r) = a.rate {
        Mode::Rate(r)
    } else {
        Mode::Parallel(a.parallel.unwrap_or(1))
    };
    let urls = paths
        .into_iter()
        .map(|path| {
            let expect = a
                .verify
                .iter()
                .map(|dir| expect_for(dir, &path))
                .collect::<Result<Vec<_>, String>>()?;
            Ok(UrlEntry { path, expect })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let https = target.tls_name.is_some();
    let mut c = LoadConfig::new(target, urls, mode);
    if https {
        let pem = match &a.cacert {
            Some(f) => {
                Some(std::fs::read(f).map_err(|e| format!("--cacert {}: {e}", f.display()))?)
            }
            None => None,
        };
        c.tls = Some(
            bareweb_loadgen::load::tls::client_config(pem.as_deref()).map_err(|e| {
                match &a.cacert {
                    Some(f) => format!("--cacert {}: {e}", f.display()),
                    None => e,
                }
            })?,
        );
    }
    c.keepalive = a.keepalive;
    c.fetches = a.fetches;
    c.sessions = a.sessions;
    c.seconds = a.seconds;
    c.timeout = a.timeout;
    if let Some(m) = a.max_conns {
        c.max_conns = m;
    }
    c.seed = a.seed;
    c.expect_status = a.expect_status;
    c.progress_every = (!a.quiet).then_some(Duration::from_secs(1));
    Ok(c)
}

pub fn load(a: LoadArgs) -> Result<(), String> {
    if a.udp.udp {
        let urls = url_list(&a)?;
        return crate::load_udp::load(&a, urls);
    }
    let cfg = build_config(&a)?;
    if a.udp.tap.is_some() || a.udp.xdp.is_some() {
        if cfg.target.tls_name.is_some() {
            return Err(
                "https:// URLs are fetched by the socket client only (without --tap or --xdp)"
                    .into(),
            );
        }
        return crate::load_bare::load(&a, &cfg);
    }
    let mut progress = progress_printer(a.quiet);
    let report = bareweb_loadgen::run(&cfg, &mut progress)?;
    progress_done(a.quiet);
    emit(&a, &report, &report.text())?;
    crate::load_common::none_good(report.fetches_started, report.fetches_ok)
}
