//! `bareweb.toml`: the site's configuration, read with serde at build time and resolved
//! into the image (per-file header lines, redirect and error-page tables, switches), so
//! the engine's request path never parses it or matches a glob.
//!
//! ```toml
//! index = ["index.html", "index.htm"]   # names a directory's index file may have
//! listing = false                       # HTML listing of directories without one
//! metrics = true                        # /metrics, Prometheus text (serve: on; images: off)
//! healthz = true                        # /healthz (serve: on; images: off)
//!
//! [stats]
//! enabled = true                        # the stats page and JSON (default on)
//! path = "/.well-known/bareweb"         # the page; its JSON at PATH/stats
//! allow = "10.0.0.0/8"                  # who may read the JSON and /metrics
//!
//! [errors]
//! 404 = "/404.html"
//!
//! [types]
//! webmanifest = "application/manifest+json"
//!
//! [[headers]]
//! path = "/assets/*"
//! set = { "Cache-Control" = "max-age=31536000, immutable", "X-Frame-Options" = "DENY" }
//!
//! [[redirects]]
//! from = "/old"
//! to = "/new/page.html"
//! status = 301
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use toml::Spanned;

/// A configuration error, located in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The configuration file.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct Raw {
    index: Option<Spanned<Vec<String>>>,
    listing: Option<bool>,
    metrics: Option<bool>,
    healthz: Option<bool>,
    stats: Option<RawStats>,
    #[serde(default)]
    errors: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    types: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    headers: Vec<RawHeaders>,
    #[serde(default)]
    redirects: Vec<RawRedirect>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct RawStats {
    enabled: Option<bool>,
    path: Option<Spanned<String>>,
    allow: Option<Spanned<String>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawHeaders {
    path: Spanned<String>,
    set: Spanned<BTreeMap<String, String>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawRedirect {
    from: Spanned<String>,
    to: Spanned<String>,
    status: Option<Spanned<u16>>,
}

/// One `[[headers]]` rule: the files its glob matches get its lines.
#[derive(Debug, Clone)]
pub struct HeaderRule {
    /// The glob as written.
    pub glob: String,
    matcher: GlobMatcher,
    /// `Name: value` CRLF lines.
    pub lines: String,
}

impl HeaderRule {
    /// Whether the rule applies to URL path `path`.
    pub fn matches(&self, path: &str) -> bool {
        self.matcher.is_match(path)
    }

    /// Whether the rule applies to every path (so also to redirects and error pages).
    pub fn matches_everything(&self) -> bool {
        matches!(self.glob.as_str(), "*" | "**" | "/*" | "/**")
    }
}

/// A configured redirect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The path, or for a `/prefix/*` pattern the prefix (with its trailing `/`).
    pub from: String,
    /// Where to.
    pub to: String,
    /// 301 (default), 302, 303, 307 or 308.
    pub status: u16,
    /// `from` ended in `*`.
    pub prefix: bool,
}

/// The site configuration, checked.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Where it was read from (`None`: no file, defaults).
    pub file: Option<PathBuf>,
    /// Index file names in order; empty means `index.html`.
    pub index: Vec<String>,
    /// Directory listings.
    pub listing: bool,
    /// `/metrics` (None: the platform's default).
    pub metrics: Option<bool>,
    /// `/healthz`.
    pub healthz: Option<bool>,
    /// The stats page and JSON.
    pub stats: Option<bool>,
    /// Its path, without trailing slash.
    pub stats_path: Option<String>,
    /// Who may read the stats JSON and metrics.
    pub stats_allow: Option<(Ipv4Addr, u8)>,
    /// Error pages: status → URL path of a file.
    pub errors: Vec<(u16, String)>,
    /// Content types by lowercase extension.
    pub types: BTreeMap<String, String>,
    /// Header rules in file order (a later rule's field replaces an earlier one's).
    pub headers: Vec<HeaderRule>,
    /// Redirects.
    pub redirects: Vec<Redirect>,
}

/// Fields bareweb writes itself: a configured one would duplicate or contradict them.
const RESERVED_FIELDS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "content-encoding",
    "content-range",
    "content-type",
    "etag",
    "last-modified",
    "date",
    "server",
    "location",
    "accept-ranges",
    "upgrade",
    "trailer",
    "te",
];

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(bareweb_engine::http::is_tchar)
}

/// Whether `s` is a URL path bareweb can match: starts with `/`, visible ASCII.
fn is_url_path(s: &str) -> bool {
    s.starts_with('/') && s.bytes().all(|b| (0x21..0x7f).contains(&b))
}

impl Config {
    /// Reads `file`.
    pub fn read(file: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(file).map_err(|e| ConfigError {
            file: file.to_path_buf(),
            line: None,
            message: e.to_string(),
        })?;
        Config::parse(&text, file)
    }

    /// Parses `text` (read from `file`, named in errors).
    pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
        let line_of = |at: usize| text[..at.min(text.len())].matches('\n').count() + 1;
        let err = |span: Option<std::ops::Range<usize>>, message: String| ConfigError {
            file: file.to_path_buf(),
            line: span.map(|s| line_of(s.start)),
            message,
        };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let msg = e.message().trim().to_string();
            err(e.span(), msg)
        })?;
        let mut c = Config {
            file: Some(file.to_path_buf()),
            listing: raw.listing.unwrap_or(false),
            metrics: raw.metrics,
            healthz: raw.healthz,
            ..Config::default()
        };
        if let Some(index) = raw.index {
            for n in index.get_ref() {
                if n.is_empty() || n.contains('/') || n == "." || n == ".." {
                    return Err(err(
                        Some(index.span()),
                        format!("index name {n:?} must be a file name (no '/')"),
                    ));
                }
            }
            c.index = index.into_inner();
        }
        if let Some(s) = raw.stats {
            c.stats = s.enabled;
            if let Some(p) = s.path {
                let v = p.get_ref().trim_end_matches('/').to_string();
                if !is_url_path(&v) {
                    return Err(err(
                        Some(p.span()),
                        format!(
                            "stats path {:?} must be a path like /.well-known/bareweb",
                            p.get_ref()
                        ),
                    ));
                }
                c.stats_path = Some(v);
            }
            if let Some(a) = s.allow {
                let v = a.get_ref();
                let (ip, len) = v.split_once('/').unwrap_or((v, "32"));
                let parsed = ip
                    .parse::<Ipv4Addr>()
                    .ok()
                    .zip(len.parse::<u8>().ok().filter(|l| *l <= 32));
                let Some(net) = parsed else {
                    return Err(err(
                        Some(a.span()),
                        format!("stats allow {v:?} must be an IPv4 network, A.B.C.D/N"),
                    ));
                };
                c.stats_allow = Some(net);
            }
        }
        for (status, path) in raw.errors {
            let code = status
                .parse::<u16>()
                .ok()
                .filter(|s| (400..=599).contains(s));
            let Some(code) = code else {
                return Err(err(
                    Some(path.span()),
                    format!("[errors] key {status:?} must be a 4xx or 5xx status"),
                ));
            };
            if !is_url_path(path.get_ref()) {
                return Err(err(
                    Some(path.span()),
                    format!(
                        "error page {:?} must be a path in the site, like /404.html",
                        path.get_ref()
                    ),
                ));
            }
            c.errors.push((code, path.into_inner()));
        }
        for (ext, ty) in raw.types {
            let ok = ty.get_ref().split(';').next().is_some_and(|m| {
                m.split_once('/')
                    .is_some_and(|(a, b)| is_token(a.trim()) && is_token(b.trim()))
            }) && ty.get_ref().bytes().all(|b| (0x20..0x7f).contains(&b));
            if !ok || ext.is_empty() || ext.contains(['.', '/']) {
                return Err(err(
                    Some(ty.span()),
                    format!("[types] {ext:?} = {:?}: want an extension and a media type like text/plain", ty.get_ref()),
                ));
            }
            c.types.insert(ext.to_ascii_lowercase(), ty.into_inner());
        }
        for h in raw.headers {
            let glob = h.path.get_ref().clone();
            if !glob.starts_with('/') && !glob.starts_with('*') {
                return Err(err(
                    Some(h.path.span()),
                    format!("header path {glob:?} must start with '/' (a glob over URL paths)"),
                ));
            }
            let matcher = Glob::new(&glob)
                .map_err(|e| err(Some(h.path.span()), format!("header path {glob:?}: {e}")))?
                .compile_matcher();
            let mut lines = String::new();
            for (name, value) in h.set.get_ref() {
                if !is_token(name) {
                    return Err(err(
                        Some(h.set.span()),
                        format!("header name {name:?} is not a token"),
                    ));
                }
                if RESERVED_FIELDS.contains(&name.to_ascii_lowercase().as_str()) {
                    return Err(err(
                        Some(h.set.span()),
                        format!("header {name:?} is written by bareweb itself and cannot be set"),
                    ));
                }
                if !value
                    .bytes()
                    .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
                {
                    return Err(err(
                        Some(h.set.span()),
                        format!("header {name:?}: value {value:?} must be visible ASCII (no line breaks)"),
                    ));
                }
                lines.push_str(&format!("{name}: {}\r\n", value.trim()));
            }
            c.headers.push(HeaderRule {
                glob,
                matcher,
                lines,
            });
        }
        for r in raw.redirects {
            let from = r.from.get_ref();
            let (path, prefix) = match from.strip_suffix('*') {
                Some(p) => (p.to_string(), true),
                None => (from.clone(), false),
            };
            if !is_url_path(&path) || path.contains('*') {
                return Err(err(
                    Some(r.from.span()),
                    format!("redirect from {from:?} must be a path, or a prefix ending in /* "),
                ));
            }
            let to = r.to.get_ref();
            if to.is_empty() || !to.bytes().all(|b| (0x21..0x7f).contains(&b)) {
                return Err(err(
                    Some(r.to.span()),
                    format!("redirect to {to:?} must be a URL or path of visible ASCII (percent-encode spaces)"),
                ));
            }
            let status = r.status.as_ref().map_or(301, |s| *s.get_ref());
            if ![301, 302, 303, 307, 308].contains(&status) {
                return Err(err(
                    r.status.map(|s| s.span()),
                    format!("redirect status {status} must be 301, 302, 303, 307 or 308"),
                ));
            }
            if c.redirects
                .iter()
                .any(|x| x.from == path && x.prefix == prefix)
            {
                return Err(err(
                    Some(r.from.span()),
                    format!("a second redirect from {from:?}"),
                ));
            }
            c.redirects.push(Redirect {
                from: path,
                to: to.clone(),
                status,
                prefix,
            });
        }
        Ok(c)
    }

    /// The header lines for URL path `path`: every matching rule, a later rule's field
    /// replacing an earlier one's of the same name.
    pub fn headers_for(&self, path: &str) -> String {
        let rules = self.headers.iter().filter(|r| r.matches(path));
        merge(rules.map(|r| r.lines.as_str()))
    }

    /// The header lines of rules that match every path (sent with redirects and error
    /// pages too).
    pub fn common_headers(&self) -> String {
        let rules = self.headers.iter().filter(|r| r.matches_everything());
        merge(rules.map(|r| r.lines.as_str()))
    }
}

/// Joins header blocks, a later line replacing an earlier one with the same name.
fn merge<'a>(blocks: impl Iterator<Item = &'a str>) -> String {
    let mut fields: Vec<(&str, &str)> = Vec::new();
    for block in blocks {
        for line in block.split_terminator("\r\n") {
            let name = line.split(':').next().unwrap_or("");
            match fields
                .iter_mut()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
            {
                Some(slot) => slot.1 = line,
                None => fields.push((name, line)),
            }
        }
    }
    fields
        .iter()
        .map(|(_, l)| format!("{l}\r\n"))
        .collect::<String>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("bareweb.toml"))
    }

    #[test]
    fn the_two_shapes_headers_and_redirects_work_as_written() {
        let c = parse(
            r#"
[[headers]]
path = "/assets/*"
set = { "Cache-Control" = "max-age=31536000, immutable", "X-Frame-Options" = "DENY" }

[[redirects]]
from = "/old"
to = "/new/page.html"
status = 301
"#,
        )
        .unwrap();
        assert_eq!(
            c.headers_for("/assets/app.js"),
            "Cache-Control: max-age=31536000, immutable\r\nX-Frame-Options: DENY\r\n"
        );
        assert_eq!(
            c.headers_for("/assets/deep/x.css"),
            c.headers_for("/assets/app.js")
        );
        assert_eq!(c.headers_for("/index.html"), "");
        assert_eq!(
            c.redirects,
            [Redirect {
                from: "/old".into(),
                to: "/new/page.html".into(),
                status: 301,
                prefix: false
            }]
        );
    }

    #[test]
    fn later_rules_replace_fields_and_site_wide_rules_are_common() {
        let c = parse(
            r#"
[[headers]]
path = "/*"
set = { "X-Frame-Options" = "DENY", "Cache-Control" = "no-cache" }
[[headers]]
path = "/assets/*"
set = { "Cache-Control" = "max-age=60" }
"#,
        )
        .unwrap();
        assert_eq!(
            c.headers_for("/assets/a.js"),
            "Cache-Control: max-age=60\r\nX-Frame-Options: DENY\r\n"
        );
        assert_eq!(
            c.common_headers(),
            "Cache-Control: no-cache\r\nX-Frame-Options: DENY\r\n"
        );
    }

    #[test]
    fn bad_config_is_a_clear_error_with_its_line() {
        for (text, line, what) in [
            ("listing = yes\n", 1, "invalid"),
            ("\n\nlisting = true\ncolour = 1\n", 4, "unknown field"),
            (
                "[[redirects]]\nfrom = \"/a\"\nto = \"/b\"\nstatus = 200\n",
                4,
                "301, 302",
            ),
            (
                "[[redirects]]\nfrom = \"a\"\nto = \"/b\"\n",
                2,
                "must be a path",
            ),
            (
                "[[headers]]\npath = \"/x\"\nset = { \"Content-Length\" = \"1\" }\n",
                3,
                "written by bareweb",
            ),
            (
                "[[headers]]\npath = \"/x\"\nset = { \"Bad Name\" = \"1\" }\n",
                3,
                "not a token",
            ),
            ("[[headers]]\npath = \"/[x\"\nset = {}\n", 2, "/[x"),
            ("[errors]\n200 = \"/x.html\"\n", 2, "4xx or 5xx"),
            ("[stats]\nallow = \"10.0.0.0/40\"\n", 2, "IPv4 network"),
            ("[stats]\npath = \"stats\"\n", 2, "must be a path"),
            ("index = [\"a/b\"]\n", 1, "file name"),
            ("[types]\nx = \"nonsense\"\n", 2, "media type"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, Some(line), "{text:?}: {e}");
            assert!(e.to_string().contains(what), "{text:?}: {e}");
            assert!(
                e.to_string().starts_with(&format!("bareweb.toml:{line}: ")),
                "{e}"
            );
        }
    }

    #[test]
    fn prefixes_statuses_and_switches() {
        let c = parse(
            r#"
index = ["index.html", "index.htm"]
listing = true
metrics = false
healthz = true
[stats]
enabled = false
path = "/_stats/"
allow = "10.0.0.0/8"
[errors]
404 = "/404.html"
[types]
WebManifest = "application/manifest+json"
[[redirects]]
from = "/blog/*"
to = "https://blog.example/"
status = 308
"#,
        )
        .unwrap();
        assert_eq!(c.index, ["index.html", "index.htm"]);
        assert!(c.listing);
        assert_eq!(
            (c.metrics, c.healthz, c.stats),
            (Some(false), Some(true), Some(false))
        );
        assert_eq!(c.stats_path.as_deref(), Some("/_stats"));
        assert_eq!(c.stats_allow, Some((Ipv4Addr::new(10, 0, 0, 0), 8)));
        assert_eq!(c.errors, [(404, "/404.html".to_string())]);
        assert_eq!(c.types["webmanifest"], "application/manifest+json");
        assert!(c.redirects[0].prefix && c.redirects[0].from == "/blog/");
        assert_eq!(c.redirects[0].status, 308);
    }
}
