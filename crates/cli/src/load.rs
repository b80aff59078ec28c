//! `bareweb load` (the load generator, [`bareweb_loadgen::load`]; on a TAP with the
//! engine's own TCP: [`crate::load_bare`]) and `bareweb
//! surge-site` (writes the Surge file set a session run fetches). Owns the options, the
//! progress line and the report's printing, which every load client shares.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bareweb_loadgen::surge::{FileSet, SurgeParams};
use bareweb_loadgen::{parse_url, Expect, LoadConfig, Mode, UrlEntry};
use sha2::{Digest, Sha256};

/// `bareweb load`: fetch URLs from a server under a bounded load and report like http_load.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// URLs to fetch (http://host[:port]/path); all must name the same host and port.
    /// In session mode, one URL naming the server.
    pub urls: Vec<String>,
    /// Read more URLs from a file, one per line (http_load's url_file).
    #[arg(long)]
    pub url_file: Option<PathBuf>,
    /// Parallel mode: keep N fetches in flight (the default, with N = 1).
    #[arg(long, conflicts_with_all = ["rate", "sessions_rate"])]
    pub parallel: Option<usize>,
    /// Rate mode: begin R fetches per second.
    #[arg(long, conflicts_with = "sessions_rate")]
    pub rate: Option<f64>,
    /// Session mode: R Surge sessions arrive per second (needs --surge).
    #[arg(long, requires = "surge")]
    pub sessions_rate: Option<f64>,
    /// The site written by `bareweb surge-site` (its surge.tsv gives files and popularity).
    #[arg(long)]
    pub surge: Option<PathBuf>,
    /// Session mode: multiply think times by this (Surge's are seconds long).
    #[arg(long, default_value_t = 1.0)]
    pub think_scale: f64,
    /// Reuse connections (HTTP/1.1 keep-alive) instead of one connection per fetch.
    #[arg(long, short = 'k')]
    pub keepalive: bool,
    /// Most fetches to begin (parallel and rate modes).
    #[arg(long, default_value_t = 1_000_000)]
    pub fetches: u64,
    /// Most sessions to begin (session mode).
    #[arg(long, default_value_t = 10_000)]
    pub sessions: u64,
    /// The run ends after this many seconds at most.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Seconds a connect or a response may go without progress.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Most connections open at once (default: N in parallel mode, else 2048).
    #[arg(long)]
    pub max_conns: Option<usize>,
    /// Seed of every random choice (URLs, sessions).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Check each body's length and SHA-256 against the files under this directory.
    #[arg(long)]
    pub verify: Option<PathBuf>,
    /// The status a good response has.
    #[arg(long, default_value_t = 200)]
    pub expect_status: u16,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to this file.
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub udp: crate::load_udp::UdpLoadArgs,
}

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

/// Length and SHA-256 of the file a URL path names under `dir`.
fn expect_for(dir: &Path, path: &str) -> Result<Expect, String> {
    let clean = path.split(['?', '#']).next().unwrap_or("/");
    let mut p = dir.join(clean.trim_start_matches('/'));
    if clean.ends_with('/') {
        p = p.join("index.html");
    }
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
    let (target, _) = parse_url(&urls[0])?;
    let mut paths = Vec::new();
    for u in &urls {
        let (t, path) = parse_url(u)?;
        if t.addr != target.addr {
            return Err(format!(
                "{u}: every URL must name {} (one server per run)",
                target.addr
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
            let expect = match &a.verify {
                Some(dir) => Some(expect_for(dir, &path)?),
                None => None,
            };
            Ok(UrlEntry { path, expect })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut c = LoadConfig::new(target, urls, mode);
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
        return crate::load_bare::load(&a, &cfg);
    }
    let mut progress = progress_printer(a.quiet);
    let report = bareweb_loadgen::run(&cfg, &mut progress)?;
    progress_done(a.quiet);
    emit(&a, &report, &report.text())
}

/// The progress line of an HTTP load run, every second on stderr (over itself on a
/// terminal); nothing when `quiet`.
pub fn progress_printer(quiet: bool) -> impl FnMut(&bareweb_loadgen::Progress) {
    let tty = std::io::stderr().is_terminal();
    move |p: &bareweb_loadgen::Progress| {
        if quiet {
            return;
        }
        let line = format!(
            "[{:6.1}s] {} fetches ({:.0}/s), {} errors, {} open{}",
            p.elapsed_secs,
            p.fetches,
            p.recent_rate,
            p.errors,
            p.open,
            if p.sessions > 0 {
                format!(", {} sessions done", p.sessions)
            } else {
                String::new()
            }
        );
        let mut e = std::io::stderr().lock();
        let _ = if tty {
            write!(e, "\r{line}   ")
        } else {
            writeln!(e, "{line}")
        };
    }
}

/// Ends the progress line (on a terminal).
pub fn progress_done(quiet: bool) {
    if !quiet && std::io::stderr().is_terminal() {
        eprintln!();
    }
}

/// Prints a report (every load client's: HTTP on sockets or bare, UDP): JSON with
/// `--json`, else `text`; and writes the JSON to `--json-out`.
pub fn emit<R: serde::Serialize>(a: &LoadArgs, report: &R, text: &str) -> Result<(), String> {
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    if let Some(f) = &a.json_out {
        std::fs::write(f, &json).map_err(|e| format!("{}: {e}", f.display()))?;
    }
    if a.json {
        println!("{json}");
    } else {
        print!("{text}");
    }
    Ok(())
}
