//! bareweb's site builder, on the host: a directory (and its `bareweb.toml`, or another
//! configuration file) into a site image the engine serves, with a report of everything
//! it left out and why.
//!
//! What it does with a directory ([`build_dir`]):
//! - regular files become files of the site, with a content type from the shared MIME
//!   database (`mime_guess`, overridable per extension in `[types]`) and, for
//!   compressible types, gzip, brotli and zstd variants kept when smaller;
//! - symbolic links are followed when their target stays inside the site directory, and
//!   refused (left out, listed) when it leaves it; a link loop is refused too;
//! - names starting with `.` are left out and listed, except under `/.well-known/`
//!   (security.txt, ACME challenges, assetlinks.json must be served);
//! - sockets, FIFOs and devices are left out and listed; `bareweb.toml` at the root is the
//!   configuration, not content;
//! - the files the build writes ([`build_dir_excluding`]) and images of earlier builds (a
//!   site image, a bootable `.elf`/`.iso`/`.img` carrying bareweb's kernel) are left out
//!   and listed: an image is never packed into the next;
//! - the configuration ([`config`]) is resolved into the image: each file's header lines,
//!   the redirect and error-page tables, index names, listings, the server pages'
//!   switches. Nothing of it is parsed or matched per request.
//!
//! The image layout itself is the engine's (`bareweb_engine::site::build`).

pub mod config;
mod listing;
pub mod sites;

use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use bareweb_engine::site::{self, FileSpec, RedirectSpec, Spec};

pub use config::{Config, ConfigError};

/// The configuration file looked for at the site's root.
pub const CONFIG_NAME: &str = "bareweb.toml";

/// Something the builder left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The path under the site directory.
    pub path: PathBuf,
    /// Why it was left out.
    pub why: String,
}

/// A built image and what went into it.
#[derive(Debug, Clone)]
pub struct Built {
    /// The image bytes.
    pub image: Vec<u8>,
    /// Files in the site.
    pub files: usize,
    /// What was left out.
    pub skipped: Vec<Skipped>,
    /// The configuration used (its file is `None` when there was none).
    pub config: Config,
}

impl Built {
    /// The report `bareweb build` prints: one line per thing left out.
    pub fn skipped_lines(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|s| format!("skipped {}: {}", s.path.display(), s.why))
            .collect()
    }
}

/// Why a site could not be built.
#[derive(Debug)]
pub enum Error {
    /// Reading the directory or a file failed.
    Io(PathBuf, std::io::Error),
    /// The configuration is invalid.
    Config(ConfigError),
    /// A file name is not UTF-8.
    NotUtf8(PathBuf),
    /// The image could not be laid out (a configured error page missing, a limit).
    Image(site::BuildError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Error::Config(e) => e.fmt(f),
            Error::NotUtf8(p) => write!(f, "{}: file name is not UTF-8", p.display()),
            Error::Image(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

/// Builds the site in `dir` with the configuration in `config`, or `dir/bareweb.toml` if
/// there is one.
pub fn build_dir(dir: &Path, config: Option<&Path>) -> Result<Built, Error> {
    build_dir_excluding(dir, config, &[])
}

/// [`build_dir`] for a build that writes `outputs` (`bareweb build -o`, `--iso`,
/// `--disk`), which may lie inside the site: they are left out (and listed), so a second
/// build never packs the first one's image into itself. Images of earlier builds under
/// other names are left out too, whatever the outputs: a site image (its magic), and a
/// bootable `.elf`, `.iso` or `.img` that carries a bareweb kernel with a site.
pub fn build_dir_excluding(
    dir: &Path,
    config: Option<&Path>,
    outputs: &[&Path],
) -> Result<Built, Error> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| Error::Io(p, e)
    };
    let root = fs::canonicalize(dir).map_err(io(dir))?;
    if !root.is_dir() {
        return Err(Error::Io(
            dir.to_path_buf(),
            std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        ));
    }
    let default_config = root.join(CONFIG_NAME);
    let config = match config {
        Some(f) => Config::read(f).map_err(Error::Config)?,
        None if default_config.is_file() => Config::read(&default_config).map_err(Error::Config)?,
        None => Config::default(),
    };
    if !config.sites.is_empty() {
        return sites::build(config, outputs);
    }
    let mut w = Walk {
        root: root.clone(),
        files: Vec::new(),
        dirs: vec!["/".to_string()],
        skipped: Vec::new(),
        visiting: vec![root.clone()],
        outputs: outputs.iter().filter_map(|o| canonical_file(o)).collect(),
    };
    w.walk(&root, "")?;
    stats_path_is_free(&config, &w, &default_config)?;
    let mut spec = Spec {
        index_names: config.index.clone(),
        common_headers: config.common_headers(),
        stats: config.stats,
        metrics: config.metrics,
        healthz: config.healthz,
        stats_path: config.stats_path.clone(),
        stats_allow: config.stats_allow.map(|(ip, len)| (ip.octets(), len)),
        ..Spec::default()
    };
    for (path, data, mtime) in w.files {
        let content_type = content_type(&path, &config);
        let file = encoded(FileSpec {
            headers: with_freshness(config.headers_for(&path), &content_type),
            path,
            data,
            mtime,
            content_type,
            ..FileSpec::default()
        });
        spec.files.push(file);
    }
    let index_names: Vec<String> = if config.index.is_empty() {
        vec!["index.html".into()]
    } else {
        config.index.clone()
    };
    if config.listing {
        for d in &w.dirs {
            let prefix = if d == "/" {
                "/".to_string()
            } else {
                format!("{d}/")
            };
            let has_index = index_names
                .iter()
                .any(|n| spec.files.iter().any(|f| f.path == format!("{prefix}{n}")));
            if has_index {
                continue;
            }
            let html = listing::page(d, &spec.files, &w.dirs);
            spec.listings.push(encoded(FileSpec {
                path: d.clone(),
                data: html.into_bytes(),
                mtime: 0,
                content_type: "text/html; charset=utf-8".into(),
                headers: with_freshness(config.headers_for(&prefix), "text/html"),
                ..FileSpec::default()
            }));
        }
    }
    // 404.html at the root is the 404 page unless the configuration names another.
    let mut errors = config.errors.clone();
    if !errors.iter().any(|(s, _)| *s == 404) && spec.files.iter().any(|f| f.path == "/404.html") {
        errors.push((404, "/404.html".into()));
    }
    for (status, path) in &errors {
        if !spec.files.iter().any(|f| &f.path == path) {
            return Err(Error::Config(ConfigError {
                file: config
                    .file
                    .clone()
                    .unwrap_or_else(|| default_config.clone()),
                line: None,
                message: format!("error page for {status}: {path} is not a file of the site"),
            }));
        }
    }
    spec.error_pages = errors;
    rewrites_fit_the_site(&config, &spec, &default_config)?;
    spec.redirects = config
        .redirect_rules()
        .iter()
        .map(|r| RedirectSpec {
            from: r.from.clone(),
            to: r.to.clone(),
            status: r.status,
            prefix: r.prefix,
            rewrite: false,
        })
        .chain(config.rewrites.iter().map(|r| RedirectSpec {
            from: r.from.clone(),
            to: r.to.clone(),
            status: 200,
            prefix: r.prefix,
            rewrite: true,
        }))
        .collect();
    spec.server = config.server.clone();
    let image = site::build(&spec).map_err(Error::Image)?;
    Ok(Built {
        image,
        files: spec.files.len(),
        skipped: w.skipped,
        config,
    })
}

/// Refuses a rewrite whose target is not a file of the site (or a directory with its
/// index file, written with its `/`), and an exact one from a path the site serves
/// itself (it could never apply: rewrites answer only where the site has nothing).
fn rewrites_fit_the_site(config: &Config, spec: &Spec, default_config: &Path) -> Result<(), Error> {
    let is_file = |p: &str| spec.files.iter().any(|f| f.path == p);
    let index_names: Vec<&str> = if config.index.is_empty() {
        vec!["index.html"]
    } else {
        config.index.iter().map(String::as_str).collect()
    };
    let serves = |p: &str| match p.strip_suffix('/') {
        Some(dir) => {
            index_names.iter().any(|n| is_file(&format!("{dir}/{n}")))
                || spec
                    .listings
                    .iter()
                    .any(|l| l.path == if dir.is_empty() { "/" } else { dir })
        }
        None => is_file(p),
    };
    for r in &config.rewrites {
        let why = if !serves(&r.to) {
            Some(format!(
                "rewrite to {:?}: not a file of the site{}",
                r.to,
                if r.to.ends_with('/') {
                    " (that directory has no index file)"
                } else {
                    ""
                }
            ))
        } else if !r.prefix && serves(&r.from) {
            Some(format!(
                "rewrite from {:?} could never apply: the site serves that path itself \
                 (rewrites answer only where the site has nothing)",
                r.from
            ))
        } else {
            None
        };
        if let Some(message) = why {
            return Err(Error::Config(ConfigError {
                file: config
                    .file
                    .clone()
                    .unwrap_or_else(|| default_config.to_path_buf()),
                line: r.line,
                message,
            }));
        }
    }
    Ok(())
}

/// Refuses a configured stats path that would take over a path of the site: the stats
/// page answers `PATH/` and (redirecting) `PATH`, its JSON `PATH/stats`, before the site.
fn stats_path_is_free(config: &Config, w: &Walk, default_config: &Path) -> Result<(), Error> {
    let Some(base) = config.stats_path.as_deref() else {
        return Ok(());
    };
    if config.stats == Some(false) {
        return Ok(());
    }
    let json = format!("{base}/stats");
    let is_file = |p: &str| w.files.iter().any(|(f, _, _)| f == p);
    let taken = if w.dirs.iter().any(|d| d == base) {
        Some(format!(
            "{base}/, a directory of the site (its index or listing)"
        ))
    } else if is_file(base) {
        Some(format!("{base}, a file of the site"))
    } else if is_file(&json) {
        Some(format!(
            "{json}, a file of the site (the stats JSON's path)"
        ))
    } else {
        None
    };
    let Some(taken) = taken else {
        return Ok(());
    };
    Err(Error::Config(ConfigError {
        file: config
            .file
            .clone()
            .unwrap_or_else(|| default_config.to_path_buf()),
        line: config.stats_path_line,
        message: format!(
            "[stats] path {base:?} would take over {taken}; choose a path the site does not \
             use, like {:?}",
            bareweb_engine::cores::pages::DEFAULT_BASE
        ),
    }))
}

struct Walk {
    /// The site directory, canonical.
    root: PathBuf,
    files: Vec<(String, Vec<u8>, u64)>,
    dirs: Vec<String>,
    skipped: Vec<Skipped>,
    /// Canonical directories being walked (a link back to one is a loop).
    visiting: Vec<PathBuf>,
    /// The files the build writes, canonical (they may not exist yet).
    outputs: Vec<PathBuf>,
}

/// `path` with its directory made canonical (the file itself may not exist yet).
fn canonical_file(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(fs::canonicalize(parent).ok()?.join(name))
}

/// The marker of the site descriptor in bareweb's kernel (crates/kernel/src/embedded.rs),
/// which every bootable image `bareweb build` writes carries.
const BOOTABLE_MARK: &[u8] = b"BAREWEB-SITE-v1\0";

/// Why `data` at `path` is an image an earlier `bareweb build` wrote, if it is one.
fn earlier_image(path: &Path, data: &[u8]) -> Option<&'static str> {
    if data.starts_with(&bareweb_engine::site::format::MAGIC) {
        return Some("a bareweb site image (an earlier build's output): not packed into this one");
    }
    let bootable = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["elf", "iso", "img"]
            .iter()
            .any(|b| e.eq_ignore_ascii_case(b))
    });
    (bootable
        && data
            .windows(BOOTABLE_MARK.len())
            .any(|w| w == BOOTABLE_MARK))
    .then_some("a bootable bareweb image (an earlier build's output): not packed into this one")
}

impl Walk {
    fn skip(&mut self, path: &Path, why: impl Into<String>) {
        let rel = path.strip_prefix(&self.root).unwrap_or(path).to_path_buf();
        self.skipped.push(Skipped {
            path: rel,
            why: why.into(),
        });
    }

    fn walk(&mut self, dir: &Path, url: &str) -> Result<(), Error> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e| Error::Io(p, e)
        };
        let mut children = fs::read_dir(dir)
            .and_then(|rd| rd.collect::<Result<Vec<_>, _>>())
            .map_err(io(dir))?;
        children.sort_by_key(|c| c.file_name());
        for child in children {
            let path = child.path();
            let name = child
                .file_name()
                .into_string()
                .map_err(|_| Error::NotUtf8(path.clone()))?;
            let child_url = format!("{url}/{name}");
            if url.is_empty() && name == CONFIG_NAME {
                continue; // the configuration, not content
            }
            let in_well_known =
                child_url.starts_with("/.well-known/") || child_url == "/.well-known";
            if name.starts_with('.') && !in_well_known {
                self.skip(
                    &path,
                    "hidden (a name starting with '.'; only /.well-known/ is served)",
                );
                continue;
            }
            let meta = fs::symlink_metadata(&path).map_err(io(&path))?;
            let (real, meta) = if meta.file_type().is_symlink() {
                let Ok(target) = fs::canonicalize(&path) else {
                    self.skip(&path, "symbolic link to nothing (dangling)");
                    continue;
                };
                if !target.starts_with(&self.root) {
                    self.skip(
                        &path,
                        format!(
                            "symbolic link to {}, outside the site: refused",
                            target.display()
                        ),
                    );
                    continue;
                }
                let m = fs::metadata(&target).map_err(io(&path))?;
                (target, m)
            } else {
                (path.clone(), meta)
            };
            if meta.is_dir() {
                let canon = fs::canonicalize(&real).map_err(io(&real))?;
                if self.visiting.contains(&canon) {
                    self.skip(&path, "symbolic link loop (a directory containing itself)");
                    continue;
                }
                self.visiting.push(canon);
                self.dirs.push(child_url.clone());
                self.walk(&real, &child_url)?;
                self.visiting.pop();
            } else if meta.is_file() {
                if self.outputs.contains(&real) {
                    self.skip(&path, "the output of this build: not packed into itself");
                    continue;
                }
                let data = fs::read(&real).map_err(io(&path))?;
                if let Some(why) = earlier_image(&path, &data) {
                    self.skip(&path, why);
                    continue;
                }
                let mtime = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs());
                self.files.push((child_url, data, mtime));
            } else {
                self.skip(&path, "not a regular file (socket, FIFO or device)");
            }
        }
        Ok(())
    }
}

/// The `Cache-Control` a file of `content_type` is sent with when no `[[headers]]` rule
/// gives one (RFC 9111 §5.2.2): explicit freshness, so no cache guesses one from
/// `Last-Modified` (RFC 9111 §4.2.2's heuristic, up to a tenth of the file's age).
/// - HTML: `no-cache`, stored but revalidated on every use with the ETag the engine sends
///   (a 304 without the body), so a new deploy shows at once and pages naming new assets
///   never meet stale ones;
/// - everything else: `max-age=3600`, an hour without a request, then revalidated: a
///   stale stylesheet or image lasts at most an hour after a deploy. Fingerprinted assets
///   deserve `max-age=31536000, immutable` by a rule of their own.
pub fn default_cache_control(content_type: &str) -> &'static str {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("text/html")
        || essence.eq_ignore_ascii_case("application/xhtml+xml")
    {
        "no-cache"
    } else {
        "max-age=3600"
    }
}

/// `headers` (CRLF lines) with [`default_cache_control`] added when they have no
/// `Cache-Control` line: computed here, when the image is built, so every platform
/// serving the image (`serve`, the bare kernel) sends it with no work per request.
fn with_freshness(mut headers: String, content_type: &str) -> String {
    let has = headers.split_terminator("\r\n").any(|l| {
        l.split(':')
            .next()
            .is_some_and(|n| n.trim().eq_ignore_ascii_case("cache-control"))
    });
    if !has {
        headers.push_str("Cache-Control: ");
        headers.push_str(default_cache_control(content_type));
        headers.push_str("\r\n");
    }
    headers
}

/// The content type of `path`: the configuration's `[types]`, else the MIME database,
/// else `application/octet-stream`; text types in UTF-8.
pub fn content_type(path: &str, config: &Config) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
        _ => String::new(),
    };
    if let Some(t) = config.types.get(&ext) {
        // A configured text type is UTF-8 like the built-in ones, unless it says otherwise.
        let essence = t
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let has_charset = t
            .split(';')
            .skip(1)
            .any(|p| p.trim().to_ascii_lowercase().starts_with("charset"));
        return if is_texty(&essence) && !has_charset {
            format!("{t}; charset=utf-8")
        } else {
            t.clone()
        };
    }
    // Where the database lags current practice: source maps are JSON (mime_guess says
    // text/plain).
    if ext == "map" {
        return "application/json".into();
    }
    let Some(m) = mime_guess::from_ext(&ext).first() else {
        return "application/octet-stream".into();
    };
    match m.essence_str() {
        // The current registrations (RFC 9239) for what mime_guess still calls
        // application/javascript.
        "application/javascript" => "text/javascript; charset=utf-8".into(),
        e if is_texty(e) => format!("{e}; charset=utf-8"),
        e => e.to_string(),
    }
}

/// Whether a media type (its essence, lowercase) is text served with `charset=utf-8`:
/// `text/*`, JavaScript and SVG (the built-in types and `[types]` alike).
fn is_texty(essence: &str) -> bool {
    essence.starts_with("text/") || ["application/javascript", "image/svg+xml"].contains(&essence)
}

/// Whether a content type is worth compressing.
fn compressible(ctype: &str) -> bool {
    let essence = ctype.split(';').next().unwrap_or("").trim();
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || [
            "application/json",
            "application/xml",
            "application/javascript",
            "application/wasm",
            "application/manifest+json",
            "application/yaml",
            "application/x-yaml",
            "image/svg+xml",
            "image/x-icon",
            "image/vnd.microsoft.icon",
            "font/ttf",
            "font/otf",
        ]
        .contains(&essence)
}

/// Adds gzip, brotli and zstd variants to a compressible file (each kept by the image
/// writer only when smaller than the identity body).
fn encoded(mut f: FileSpec) -> FileSpec {
    if f.data.len() < 32 || !compressible(&f.content_type) {
        return f;
    }
    f.gzip = Some(site::gzip(&f.data));
    let mut br = Vec::new();
    {
        let params = brotli::enc::BrotliEncoderParams {
            quality: 11,
            lgwin: 22,
            ..Default::default()
        };
        let mut w = brotli::CompressorWriter::with_params(&mut br, 4096, &params);
        // Writing to a Vec cannot fail.
        w.write_all(&f.data).expect("brotli into a Vec");
    }
    f.br = Some(br);
    f.zstd = zstd::bulk::compress(&f.data, 19).ok();
    f
}
