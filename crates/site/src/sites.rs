//! Virtual hosts: the `[[sites]]` of a top-level `bareweb.toml`, each a directory of its
//! own (with its own `bareweb.toml`) answering for a host name and its aliases, built into
//! one image whose names table the engine searches per request by the `Host` field.
//!
//! ```toml
//! [[sites]]
//! host = "a.example"            # the name (any case; a trailing dot and no port)
//! aliases = ["www.a.example"]   # more names for the same site
//! root = "a"                    # a directory under this file's own
//! default = true                # answers unknown hosts and requests without Host
//!
//! [[sites]]
//! host = "b.example"
//! root = "b"
//! ```
//!
//! Checked here, each error naming the file and line: a name given twice (host or
//! alias, across sites), two defaults, a root that is missing, not a directory, the
//! configuration's own directory or outside it. With `[[sites]]` the top-level file holds
//! only the sites and the server-wide settings (`[stats]`, `metrics`, `healthz`); the rest
//! belongs to each site's own file, which may not set those server-wide ones.

use std::ops::Range;
use std::path::{Path, PathBuf};

use bareweb_engine::resource::{Found, Lookup};
use bareweb_engine::site::{self, Site, SiteImage, Spec};
use serde::Deserialize;
use toml::Spanned;

use crate::{Built, Config, ConfigError, Error, Skipped};

/// One `[[sites]]` table as written.
#[derive(Deserialize, Debug)]
#[serde(
    deny_unknown_fields,
    expecting = "a [[sites]] table with host and root"
)]
pub(crate) struct RawSite {
    host: Spanned<String>,
    root: Spanned<String>,
    aliases: Option<Spanned<Vec<String>>>,
    default: Option<Spanned<bool>>,
}

/// One site of a top-level configuration, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteDecl {
    /// Its names, normalised (lowercase, no trailing dot): the host first, then the
    /// aliases.
    pub names: Vec<String>,
    /// Its directory (canonical).
    pub root: PathBuf,
    /// Whether it answers unknown hosts.
    pub default: bool,
    /// The line of its `host`.
    pub line: usize,
}

/// `written` as the names table holds it: trimmed, lowercase, without a trailing dot; or
/// why it cannot be a host name.
pub fn site_name(written: &str) -> Result<String, String> {
    let t = written.trim();
    if !t.is_ascii() {
        return Err(format!(
            "host {written:?}: write an internationalised name in its ASCII form (xn--…)"
        ));
    }
    let lower = t.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if !name.starts_with('[') && name.contains(':') {
        return Err(format!(
            "host {written:?}: a name without a port (the site answers on every port), \
             like \"a.example\""
        ));
    }
    if !site::is_site_name(name.as_bytes()) {
        return Err(format!(
            "host {written:?} is not a host name: letters, digits, '-', '.' and '_' (or an \
             IPv6 address in brackets), up to 255 characters"
        ));
    }
    Ok(name.to_string())
}

/// Checks the `[[sites]]` of the configuration `file`; `err` locates a message by span.
pub(crate) fn parse(
    raw: Vec<RawSite>,
    file: &Path,
    line_of: &dyn Fn(usize) -> usize,
    err: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<Vec<SiteDecl>, ConfigError> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let dir = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = std::fs::canonicalize(&dir).map_err(|e| ConfigError {
        file: file.to_path_buf(),
        line: None,
        message: format!("{}: {e}", dir.display()),
    })?;
    let mut sites: Vec<SiteDecl> = Vec::new();
    for s in raw {
        let mut names = vec![site_name(s.host.get_ref()).map_err(|m| err(s.host.span(), m))?];
        if let Some(a) = &s.aliases {
            for n in a.get_ref() {
                names.push(site_name(n).map_err(|m| err(a.span(), m))?);
            }
        }
        for (i, n) in names.iter().enumerate() {
            let span = match (i, &s.aliases) {
                (0, _) | (_, None) => s.host.span(),
                (_, Some(a)) => a.span(),
            };
            let earlier = sites.iter().find(|d| d.names.contains(n));
            if let Some(d) = earlier {
                return Err(err(
                    span,
                    format!("host {n:?} is already the site's on line {}", d.line),
                ));
            }
            if names[..i].contains(n) {
                return Err(err(
                    span,
                    format!("host {n:?} is named twice for this site"),
                ));
            }
        }
        let default = s.default.as_ref().is_some_and(|d| *d.get_ref());
        if default {
            if let Some(d) = sites.iter().find(|d| d.default) {
                return Err(err(
                    s.default.as_ref().map_or(s.host.span(), |d| d.span()),
                    format!(
                        "a second default site: {:?} on line {} is the default already",
                        d.names[0], d.line
                    ),
                ));
            }
        }
        let written = s.root.get_ref();
        let path = dir.join(written);
        let root = std::fs::canonicalize(&path).map_err(|e| {
            err(
                s.root.span(),
                format!("root {written:?}: {} ({e})", path.display()),
            )
        })?;
        let why = if !root.is_dir() {
            Some("is not a directory".to_string())
        } else if root == dir {
            Some(
                "is the configuration's own directory; give each site a directory of its own \
                 under it"
                    .into(),
            )
        } else if !root.starts_with(&dir) {
            Some(format!(
                "is outside {} (the configuration's directory; roots are relative to it)",
                dir.display()
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(err(s.root.span(), format!("root {written:?} {why}")));
        }
        sites.push(SiteDecl {
            names,
            root,
            default,
            line: line_of(s.host.span().start),
        });
    }
    Ok(sites)
}

/// What a configuration with `[[sites]]` may not set itself (each site's own file does).
fn content_keys(c: &Config) -> Vec<&'static str> {
    [
        ("index", !c.index.is_empty()),
        ("listing", c.listing),
        ("[errors]", !c.errors.is_empty()),
        ("[types]", !c.types.is_empty()),
        ("[[headers]]", !c.headers.is_empty()),
        ("[[redirects]]", !c.redirects.is_empty()),
        ("[[rewrites]]", !c.rewrites.is_empty()),
        ("server_header", c.server.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect()
}

/// The server-wide settings a site's own file sets (only the top-level file may).
fn server_wide_keys(c: &Config) -> Vec<&'static str> {
    [
        (
            "[stats]",
            c.stats.is_some() || c.stats_path.is_some() || c.stats_allow.is_some(),
        ),
        ("metrics", c.metrics.is_some()),
        ("healthz", c.healthz.is_some()),
        ("[tls]", c.tls.iter().any(|k| k.table == "tls")),
        ("[acme]", c.tls.iter().any(|k| k.table == "acme")),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect()
}

fn config_error(file: &Option<PathBuf>, message: String) -> Error {
    Error::Config(ConfigError {
        file: file.clone().unwrap_or_default(),
        line: None,
        message,
    })
}

/// Builds every site of `config` (which has `[[sites]]`) and lays them out as one image
/// with their names; `outputs` are left out of every site as in
/// [`build_dir_excluding`](crate::build_dir_excluding).
pub(crate) fn build(config: Config, outputs: &[&Path]) -> Result<Built, Error> {
    let content = content_keys(&config);
    if !content.is_empty() {
        return Err(config_error(
            &config.file,
            format!(
                "with [[sites]], this file holds the sites and the server-wide settings \
                 ([stats], metrics, healthz) only; move {} into each site's own bareweb.toml",
                content.join(", ")
            ),
        ));
    }
    let top = config
        .file
        .as_deref()
        .and_then(Path::parent)
        .and_then(|p| std::fs::canonicalize(p).ok())
        .unwrap_or_default();
    let mut images = Vec::with_capacity(config.sites.len());
    let mut files = 0;
    let mut skipped = Vec::new();
    for s in &config.sites {
        let built = crate::build_dir_excluding(&s.root, None, outputs)?;
        let own = built.config.file.clone();
        if !built.config.sites.is_empty() {
            return Err(config_error(
                &own,
                "[[sites]] inside a site: sites are declared in the top-level file only".into(),
            ));
        }
        let wide = server_wide_keys(&built.config);
        if !wide.is_empty() {
            return Err(config_error(
                &own,
                format!(
                    "{} {} server-wide: set {} in the top-level {}",
                    wide.join(", "),
                    if wide.len() == 1 { "is" } else { "are" },
                    if wide.len() == 1 { "it" } else { "them" },
                    config.file.as_deref().unwrap_or(Path::new("")).display()
                ),
            ));
        }
        stats_path_is_free(&config, &built.image, &s.names[0])?;
        let under = s.root.strip_prefix(&top).unwrap_or(&s.root).to_path_buf();
        skipped.extend(built.skipped.into_iter().map(|k| Skipped {
            path: under.join(k.path),
            why: k.why,
        }));
        files += built.files;
        images.push(SiteImage {
            names: s.names.clone(),
            image: built.image,
            default: s.default,
        });
    }
    let spec = Spec {
        stats: config.stats,
        metrics: config.metrics,
        healthz: config.healthz,
        stats_path: config.stats_path.clone(),
        stats_allow: config.stats_allow.map(|(ip, len)| (ip.octets(), len)),
        ..Spec::default()
    };
    let image = site::build_sites(&spec, &images).map_err(Error::Image)?;
    Ok(Built {
        image,
        files,
        skipped,
        config,
    })
}

/// Refuses a configured stats path that would take over a path of site `name` (the stats
/// page answers on every host, before the site), as for a single site.
fn stats_path_is_free(config: &Config, image: &[u8], name: &str) -> Result<(), Error> {
    let (Some(base), true) = (config.stats_path.as_deref(), config.stats != Some(false)) else {
        return Ok(());
    };
    let Ok(site) = Site::load(image) else {
        return Ok(());
    };
    let json = format!("{base}/stats");
    let taken = [base.to_string(), format!("{base}/"), json]
        .into_iter()
        .find(|p| !matches!(site.lookup(p.as_bytes()), Found::NotFound));
    let Some(taken) = taken else {
        return Ok(());
    };
    Err(Error::Config(ConfigError {
        file: config.file.clone().unwrap_or_default(),
        line: config.stats_path_line,
        message: format!(
            "[stats] path {base:?} would take over {taken} of site {name:?} (the stats page \
             answers on every host); choose a path no site uses, like {:?}",
            bareweb_engine::cores::pages::DEFAULT_BASE
        ),
    }))
}
