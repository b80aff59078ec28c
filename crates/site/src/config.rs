//! `bareweb.toml`: the site's configuration, read with serde at build time and resolved
//! into the image (per-file header lines, redirect and error-page tables, switches), so
//! the engine's request path never parses it or matches a glob.
//!
//! ```toml
//! index = ["index.html", "index.htm"]   # names a directory's index file may have
//! listing = false                       # HTML listing of directories without one
//! server_header = "mysite"              # the Server field: true, false (none) or a value
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
//!
//! [[redirects]]
//! from = "/blog/:slug"                  # placeholders: one segment each; a final * is :splat
//! to = "/posts/:slug"
//!
//! [[rewrites]]
//! from = "/app/*"                       # where the site has nothing: 200 with this file
//! to = "/app/index.html"
//! ```
//!
//! The full reference, with defaults: docs/usage.md, "bareweb.toml reference".

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
#[serde(deny_unknown_fields, expecting = "a bareweb.toml configuration")]
struct Raw {
    index: Option<Spanned<Vec<String>>>,
    listing: Option<Switch>,
    metrics: Option<Switch>,
    healthz: Option<Switch>,
    stats: Option<RawStats>,
    #[serde(default)]
    errors: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    types: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    headers: Vec<RawHeaders>,
    #[serde(default)]
    redirects: Vec<RawRedirect>,
    #[serde(default)]
    rewrites: Vec<RawRewrite>,
    server_header: Option<Spanned<ServerHeader>>,
    #[serde(default)]
    sites: Vec<crate::sites::RawSite>,
    tls: Option<RawTls>,
    acme: Option<RawAcme>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields, expecting = "an [acme] table")]
struct RawAcme {
    domains: Option<Spanned<Names>>,
    directory: Option<Spanned<String>>,
    email: Option<Spanned<String>>,
    challenge: Option<Spanned<String>>,
    dns: Option<Spanned<Names>>,
    ca: Option<Spanned<String>>,
}

/// A value that is one string or a list of them (`domains = "a.org"` or `["a.org",
/// "www.a.org"]`), given to the option as one comma-separated value.
#[derive(Deserialize, Debug)]
#[serde(untagged, expecting = "a string or a list of strings")]
enum Names {
    One(String),
    Many(Vec<String>),
}

impl Names {
    /// The names, each trimmed, joined with commas (the options' list form).
    fn joined(&self) -> String {
        let one = |s: &str| s.split(',').map(str::trim).collect::<Vec<_>>().join(",");
        match self {
            Names::One(s) => one(s),
            Names::Many(v) => v.iter().map(|s| one(s)).collect::<Vec<_>>().join(","),
        }
    }
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields, expecting = "a [tls] table")]
struct RawTls {
    cert: Option<Spanned<String>>,
    key: Option<Spanned<String>>,
    https_port: Option<Spanned<i64>>,
    http_redirect: Option<Spanned<Switch>>,
    min: Option<Spanned<String>>,
    hsts: Option<Spanned<String>>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields, expecting = "a [stats] table")]
struct RawStats {
    enabled: Option<Switch>,
    path: Option<Spanned<String>>,
    allow: Option<Spanned<String>>,
}

#[derive(Deserialize, Debug)]
#[serde(
    deny_unknown_fields,
    expecting = "a [[headers]] table with path and set"
)]
struct RawHeaders {
    path: Spanned<String>,
    set: Spanned<BTreeMap<String, String>>,
}

#[derive(Deserialize, Debug)]
#[serde(
    deny_unknown_fields,
    expecting = "a [[redirects]] table with from, to and status"
)]
struct RawRedirect {
    from: Spanned<String>,
    to: Spanned<String>,
    status: Option<Spanned<Status>>,
}

#[derive(Deserialize, Debug)]
#[serde(
    deny_unknown_fields,
    expecting = "a [[rewrites]] table with from and to"
)]
struct RawRewrite {
    from: Spanned<String>,
    to: Spanned<String>,
}

/// `server_header`: `true` (bareweb's own), `false` (none) or the value to send.
#[derive(Debug, Clone)]
enum ServerHeader {
    On,
    Off,
    Name(String),
}

impl<'de> Deserialize<'de> for ServerHeader {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ServerHeader;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false or a name like \"mysite\"")
            }
            fn visit_bool<E>(self, v: bool) -> Result<ServerHeader, E> {
                Ok(if v {
                    ServerHeader::On
                } else {
                    ServerHeader::Off
                })
            }
            fn visit_str<E>(self, v: &str) -> Result<ServerHeader, E> {
                Ok(ServerHeader::Name(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// `true` or `false`, said so in errors (serde's own words are "a boolean").
#[derive(Debug, Clone, Copy)]
struct Switch(bool);

impl<'de> Deserialize<'de> for Switch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = bool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true or false")
            }
            fn visit_bool<E>(self, v: bool) -> Result<bool, E> {
                Ok(v)
            }
        }
        d.deserialize_bool(V).map(Switch)
    }
}

/// A redirect status as written: any integer, checked afterwards with a message of its
/// own (serde's would say "expected u16").
#[derive(Debug, Clone, Copy)]
struct Status(i64);

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = i64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a redirect status: 301, 302, 303, 307 or 308")
            }
            fn visit_i64<E>(self, v: i64) -> Result<i64, E> {
                Ok(v)
            }
            fn visit_u64<E>(self, v: u64) -> Result<i64, E> {
                Ok(i64::try_from(v).unwrap_or(i64::MAX))
            }
        }
        d.deserialize_i64(V).map(Status)
    }
}

/// serde's words for TOML's things, in TOML's words (a sequence is an array or list, a
/// map a table, a field a key).
fn plain_words(message: &str) -> String {
    [
        (
            "expected a sequence",
            "expected a list, like [\"a\", \"b\"]",
        ),
        ("expected a map", "expected a table"),
        ("type: sequence", "type: list"),
        ("type: map", "type: table"),
        ("unknown field", "unknown key"),
        ("missing field", "missing key"),
    ]
    .iter()
    .fold(message.to_string(), |m, (rust, toml)| m.replace(rust, toml))
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redirect {
    /// The path, or for a `/prefix/*` pattern the prefix (with its trailing `/`), or a
    /// pattern with placeholders as written (`/blog/:slug`, `/docs/:v/*`).
    pub from: String,
    /// Where to (`:name` and `:splat` filled from the path).
    pub to: String,
    /// 301 (default), 302, 303, 307 or 308.
    pub status: u16,
    /// `from` ended in `*` (and has no placeholder).
    pub prefix: bool,
    /// `from` has a `:name` segment.
    pub pattern: bool,
}

/// A configured rewrite: where the site has nothing at `from`, the file at `to` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The path, or for `/prefix/*` the prefix (with its trailing `/`).
    pub from: String,
    /// The path of the file served.
    pub to: String,
    /// `from` ended in `*`.
    pub prefix: bool,
    /// Line of `from`, for errors found when the site is known.
    pub line: Option<usize>,
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
    /// The line of `[stats] path`, for errors found when the site is known.
    pub(crate) stats_path_line: Option<usize>,
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
    /// Rewrites.
    pub rewrites: Vec<Rewrite>,
    /// The `Server` field: `None` bareweb's, `Some("")` none, else this value.
    pub server: Option<String>,
    /// Virtual hosts (`[[sites]]`, crate::sites): empty for a file that is one site.
    pub sites: Vec<crate::sites::SiteDecl>,
    /// `[tls]` and `[acme]`: the options they set, as the CLI spells them, in the tables'
    /// order ([`TableKey`]); the CLI applies those not given on its command line.
    pub tls: Vec<TableKey>,
}

/// One key of `[tls]` or `[acme]`: the option it stands for and its value as the option
/// takes it (a file's path made relative to the configuration's directory, a list joined
/// with commas, `http_redirect = false` left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableKey {
    /// The table (`tls`, `acme`), for errors.
    pub table: &'static str,
    /// The key as written (`https_port`), for errors.
    pub key: &'static str,
    /// The CLI's long option (`https-port`).
    pub long: &'static str,
    /// The value (`""` for `http_redirect = true`).
    pub value: String,
    /// Its line in the file.
    pub line: usize,
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
            let msg = plain_words(e.message().trim());
            err(e.span(), msg)
        })?;
        let mut c = Config {
            file: Some(file.to_path_buf()),
            listing: raw.listing.is_some_and(|s| s.0),
            metrics: raw.metrics.map(|s| s.0),
            healthz: raw.healthz.map(|s| s.0),
            ..Config::default()
        };
        if let Some(t) = &raw.tls {
            let dir = file.parent().unwrap_or(Path::new(""));
            let path = |s: &Spanned<String>| dir.join(s.get_ref()).to_string_lossy().into_owned();
            let text = |s: &Spanned<String>| s.get_ref().clone();
            let mut add = |key: &'static str, long: &'static str, value: String, at: usize| {
                c.tls.push(TableKey {
                    table: "tls",
                    key,
                    long,
                    value,
                    line: line_of(at),
                })
            };
            for (key, long, v) in [("cert", "tls-cert", &t.cert), ("key", "tls-key", &t.key)] {
                if let Some(v) = v {
                    add(key, long, path(v), v.span().start);
                }
            }
            if let Some(p) = &t.https_port {
                add(
                    "https_port",
                    "https-port",
                    p.get_ref().to_string(),
                    p.span().start,
                );
            }
            if let Some(r) = t.http_redirect.as_ref().filter(|s| s.get_ref().0) {
                add(
                    "http_redirect",
                    "http-redirect",
                    String::new(),
                    r.span().start,
                );
            }
            for (key, long, v) in [("min", "tls-min", &t.min), ("hsts", "hsts", &t.hsts)] {
                if let Some(v) = v {
                    add(key, long, text(v), v.span().start);
                }
            }
        }
        if let Some(a) = &raw.acme {
            let dir = file.parent().unwrap_or(Path::new(""));
            let mut add = |key: &'static str, long: &'static str, value: String, at: usize| {
                c.tls.push(TableKey {
                    table: "acme",
                    key,
                    long,
                    value,
                    line: line_of(at),
                })
            };
            for (key, long, v) in [
                ("domains", "acme-domain", &a.domains),
                ("dns", "dns", &a.dns),
            ] {
                if let Some(v) = v {
                    add(key, long, v.get_ref().joined(), v.span().start);
                }
            }
            for (key, long, v) in [
                ("directory", "acme-directory", &a.directory),
                ("email", "acme-email", &a.email),
                ("challenge", "acme-challenge", &a.challenge),
            ] {
                if let Some(v) = v {
                    add(key, long, v.get_ref().clone(), v.span().start);
                }
            }
            if let Some(v) = &a.ca {
                let path = dir.join(v.get_ref()).to_string_lossy().into_owned();
                add("ca", "acme-ca", path, v.span().start);
            }
        }
        if let Some(index) = raw.index {
            if index.get_ref().is_empty() {
                return Err(err(
                    Some(index.span()),
                    "index = [] names no index file; list at least one, like \
                     index = [\"index.html\"] (a directory without its index file gets a \
                     listing when listing = true, else 404)"
                        .into(),
                ));
            }
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
            c.stats = s.enabled.map(|s| s.0);
            if let Some(p) = s.path {
                c.stats_path_line = Some(line_of(p.span().start));
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
        let mut lines = Vec::new();
        for r in raw.redirects {
            let from = r.from.get_ref();
            let pattern = is_pattern(from);
            let (path, prefix) = match from.strip_suffix('*') {
                _ if pattern => (from.clone(), false),
                Some(p) => (p.to_string(), true),
                None => (from.clone(), false),
            };
            let why = if pattern {
                pattern_problem(from)
            } else {
                unmatchable(from, &path)
            };
            if let Some(why) = why {
                return Err(err(
                    Some(r.from.span()),
                    format!("redirect from {from:?}: {why}"),
                ));
            }
            let to = r.to.get_ref();
            if to.is_empty() || !to.bytes().all(|b| (0x21..0x7f).contains(&b)) {
                return Err(err(
                    Some(r.to.span()),
                    format!(
                        "redirect to {to:?} must be a URL or path of visible ASCII: \
                         percent-encode spaces and other characters, like {:?}",
                        percent_encode(to.trim())
                    ),
                ));
            }
            if let Some(why) = unknown_placeholder(from, to, pattern, prefix) {
                return Err(err(Some(r.to.span()), format!("redirect to {to:?}: {why}")));
            }
            let status = r.status.as_ref().map_or(301, |s| s.get_ref().0);
            let status = match u16::try_from(status) {
                Ok(s @ (301 | 302 | 303 | 307 | 308)) => s,
                _ => {
                    return Err(err(
                        r.status.map(|s| s.span()),
                        format!("redirect status {status} must be 301, 302, 303, 307 or 308"),
                    ))
                }
            };
            if c.redirects
                .iter()
                .any(|x| x.from == path && x.prefix == prefix)
            {
                return Err(err(
                    Some(r.from.span()),
                    format!("a second redirect from {from:?}"),
                ));
            }
            lines.push(line_of(r.from.span().start));
            c.redirects.push(Redirect {
                from: path,
                to: to.clone(),
                status,
                prefix,
                pattern,
            });
        }
        for r in raw.rewrites {
            let rule = rewrite(&r)
                .map_err(|(to, m)| err(Some(if to { r.to.span() } else { r.from.span() }), m))?;
            if c.rewrites
                .iter()
                .any(|x| x.from == rule.from && x.prefix == rule.prefix)
            {
                return Err(err(
                    Some(r.from.span()),
                    format!("a second rewrite from {:?}", r.from.get_ref()),
                ));
            }
            let rules = effective(&c.redirects);
            let shadow = match rule.prefix {
                false => matching(&rules, rule.from.as_bytes()),
                true => rules
                    .iter()
                    .find(|d| d.prefix && rule.from.starts_with(&d.from)),
            };
            if let Some(d) = shadow {
                return Err(err(
                    Some(r.from.span()),
                    format!(
                        "rewrite from {:?} could never apply: the redirect from {:?} answers \
                         those paths first",
                        r.from.get_ref(),
                        shown_from(d)
                    ),
                ));
            }
            c.rewrites.push(Rewrite {
                line: Some(line_of(r.from.span().start)),
                ..rule
            });
        }
        if let Some(h) = raw.server_header {
            c.server = match h.get_ref() {
                ServerHeader::On => None,
                ServerHeader::Off => Some(String::new()),
                ServerHeader::Name(n) => {
                    let ok = !n.trim().is_empty()
                        && n.len() <= 64
                        && n.bytes().all(|b| b == b' ' || (0x21..0x7f).contains(&b));
                    if !ok {
                        return Err(err(
                            Some(h.span()),
                            format!(
                                "server_header {n:?} must be up to 64 characters of visible \
                                 ASCII, like \"mysite\" (or false for no Server field)"
                            ),
                        ));
                    }
                    Some(n.trim().to_string())
                }
            };
        }
        c.sites = crate::sites::parse(raw.sites, file, &line_of, &|span, m| err(Some(span), m))?;
        if let Err((i, message)) = check_chains(&c.redirects) {
            return Err(ConfigError {
                file: file.to_path_buf(),
                line: lines.get(i).copied(),
                message,
            });
        }
        Ok(c)
    }

    /// The redirects the image holds: those written, plus for each prefix rule `/dir/*`
    /// an exact one from `/dir` to the same target (unless one from `/dir` is written),
    /// so that `/blog/*` covers `/blog` too.
    pub fn redirect_rules(&self) -> Vec<Redirect> {
        effective(&self.redirects)
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

/// Why a redirect `from` (as written; `path` without a prefix's `*`) could never match
/// the path the engine matches: the request's path percent-decoded and normalised, without
/// its query. `None`: it can match.
fn unmatchable(from: &str, path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return Some(
            "must be a path starting with '/', like \"/old\", or a prefix like \"/blog/*\"".into(),
        );
    }
    if path.contains('*') {
        return Some("a '*' may only end a prefix, like \"/blog/*\"".into());
    }
    if let Some((p, _)) = path.split_once('?') {
        return Some(format!(
            "a query (?…) is never part of the path a redirect matches, so this rule could \
             never apply; write the path alone, from = {p:?} (the request's query is passed on \
             to the target)"
        ));
    }
    if let Some((p, _)) = path.split_once('#') {
        return Some(format!(
            "a fragment (#…) is never sent by browsers, so this rule could never apply; \
             write the path alone, from = {p:?}"
        ));
    }
    if path.chars().any(char::is_control) {
        return Some("must not hold control characters".into());
    }
    if has_escape(path) {
        let decoded = String::from_utf8(percent_decode(from))
            .map(|d| format!("from = {d:?}"))
            .unwrap_or_else(|_| "the characters themselves".into());
        return Some(format!(
            "requests are matched by their decoded path (%C3%A9 is é, %20 a space), so a \
             percent-encoded from could never apply; write {decoded}"
        ));
    }
    let normal = normalise(path.as_bytes());
    if normal != path.as_bytes() {
        return Some(format!(
            "requests are matched by their normalised path (// is /, . and .. segments \
             resolved), so this rule could never apply; write from = \"{}{}\"",
            String::from_utf8_lossy(&normal),
            if from.ends_with('*') { "*" } else { "" }
        ));
    }
    None
}

/// Whether a redirect's `from` is a pattern: a segment starting with `:`.
fn is_pattern(from: &str) -> bool {
    from.split('/').any(|s| s.starts_with(':'))
}

/// The `from` as written in messages (a prefix with its `*`).
fn shown_from(r: &Redirect) -> String {
    if r.prefix {
        format!("{}*", r.from)
    } else {
        r.from.clone()
    }
}

/// Why a pattern `from` is wrong: a placeholder without a name, twice the same name, a
/// `*` not last, or (placeholders read as one segment) a path that could never match.
fn pattern_problem(from: &str) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    let segs: Vec<&str> = from.split('/').skip(1).collect();
    for (k, seg) in segs.iter().enumerate() {
        if seg.contains('*') && (*seg != "*" || k + 1 != segs.len()) {
            return Some("a '*' may only be the last segment, like \"/docs/:v/*\"".into());
        }
        if let Some(name) = seg.strip_prefix(':') {
            let whole =
                bareweb_engine::resource::placeholder(name.as_bytes()) == Some(name.as_bytes());
            if !whole {
                return Some(format!(
                    "placeholder {seg:?} must be ':' and a name of letters, digits and _ \
                     (starting with a letter), a whole segment, like \"/blog/:slug\""
                ));
            }
            if names.contains(&name) || name == "splat" {
                return Some(format!(
                    "placeholder :{name} is {}",
                    if name == "splat" {
                        "the name of what a final '*' matches; choose another name"
                    } else {
                        "there twice"
                    }
                ));
            }
            names.push(name);
        }
    }
    let literal: String = segs
        .iter()
        .map(|s| if s.starts_with(':') { "x" } else { s })
        .filter(|s| *s != "*")
        .fold(String::new(), |a, s| a + "/" + s);
    unmatchable(&literal, &literal)
}

/// The placeholders (`:name`) of a redirect target.
fn placeholders(to: &str) -> Vec<&str> {
    let b = to.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b':' {
            if let Some(n) = bareweb_engine::resource::placeholder(&b[i + 1..]) {
                out.push(&to[i + 1..i + 1 + n.len()]);
                i += n.len();
            }
        }
        i += 1;
    }
    out
}

/// Why a target's placeholders cannot be filled from `from`: one it does not have.
fn unknown_placeholder(from: &str, to: &str, pattern: bool, prefix: bool) -> Option<String> {
    let splat = prefix || (pattern && from.ends_with("/*"));
    let names: Vec<&str> = from
        .split('/')
        .filter_map(|s| s.strip_prefix(':'))
        .collect();
    let unknown = placeholders(to)
        .into_iter()
        .find(|n| !(names.contains(n) || (*n == "splat" && splat)))?;
    let has = names
        .iter()
        .map(|n| format!(":{n}"))
        .chain(splat.then(|| ":splat".to_string()))
        .collect::<Vec<_>>();
    Some(format!(
        "placeholder :{unknown} is not in from {from:?}, which has {} (a ':' followed by a \
         letter names a placeholder; write %3A for a colon itself)",
        if has.is_empty() {
            "none".to_string()
        } else {
            has.join(", ")
        }
    ))
}

/// A `[[rewrites]]` rule checked on its own: a path or `/prefix/*` from that can match,
/// a target that is a plain path in the site. `Err((in_to, message))`.
fn rewrite(r: &RawRewrite) -> Result<Rewrite, (bool, String)> {
    let from = r.from.get_ref();
    let to = r.to.get_ref();
    if is_pattern(from) {
        return Err((
            false,
            format!(
                "rewrite from {from:?}: rewrites serve one fixed file; placeholders are for \
                 redirects (use a prefix like \"/app/*\")"
            ),
        ));
    }
    let (path, prefix) = match from.strip_suffix('*') {
        Some(p) => (p.to_string(), true),
        None => (from.clone(), false),
    };
    if let Some(why) = unmatchable(from, &path) {
        return Err((false, format!("rewrite from {from:?}: {why}")));
    }
    let plain = to.starts_with('/')
        && to.bytes().all(|b| (0x21..0x7f).contains(&b))
        && !to.contains(['?', '#', '%', '*'])
        && normalise(to.as_bytes()) == to.as_bytes();
    if !plain {
        return Err((
            true,
            format!(
                "rewrite to {to:?} must be the path of a file of the site, like \
                 \"/app/index.html\" (ASCII, no query, no escapes, no . or .. segments)"
            ),
        ));
    }
    Ok(Rewrite {
        from: path,
        to: to.clone(),
        prefix,
        line: None,
    })
}

/// Whether `s` holds a `%` followed by two hex digits.
fn has_escape(s: &str) -> bool {
    s.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}

/// `s` with its `%XX` escapes decoded (a `%` not followed by two hex digits kept).
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).and_then(|&c| hex(c)),
            b.get(i + 2).and_then(|&c| hex(c)),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// `s` with spaces, controls and non-ASCII percent-encoded (UTF-8), the rest kept.
fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if (0x21..0x7f).contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A decoded path normalised as the engine does before matching: empty segments
/// collapsed, `.` and `..` resolved (never above the root), a trailing `/` kept.
fn normalise(path: &[u8]) -> Vec<u8> {
    let mut segs: Vec<&[u8]> = Vec::new();
    let mut parts = path.split(|&b| b == b'/').peekable();
    let mut trailing = false;
    while let Some(seg) = parts.next() {
        let last = parts.peek().is_none();
        match seg {
            b"" => trailing = last,
            b"." => trailing = last,
            b".." => {
                segs.pop();
                trailing = last;
            }
            s => {
                segs.push(s);
                trailing = false;
            }
        }
    }
    let mut out = vec![b'/'];
    out.extend(segs.join(&b'/'));
    if trailing && !segs.is_empty() {
        out.push(b'/');
    }
    out
}

/// Where a redirect to `to` with the unmatched `rest` of the path sends a browser, as the
/// path the engine will match next; `None` when it leaves the site (another host, a
/// relative reference) or puts `rest` into a query (its path is then `to`'s alone).
fn next_path(to: &str, rest: &[u8]) -> Option<Vec<u8>> {
    if !to.starts_with('/') || to.starts_with("//") {
        return None;
    }
    let mut p = match to.find(['?', '#']) {
        Some(i) => percent_decode(&to[..i]),
        None => {
            let mut p = percent_decode(to);
            p.extend_from_slice(rest);
            p
        }
    };
    p = normalise(&p);
    Some(p)
}

/// The rule the engine applies to decoded, normalised `path`: an exact one, else the
/// first pattern that matches, else the longest prefix.
fn matching<'r>(rules: &'r [Redirect], path: &[u8]) -> Option<&'r Redirect> {
    rules
        .iter()
        .find(|r| !r.prefix && !r.pattern && r.from.as_bytes() == path)
        .or_else(|| {
            rules.iter().find(|r| {
                r.pattern
                    && bareweb_engine::resource::match_pattern(r.from.as_bytes(), path).is_some()
            })
        })
        .or_else(|| {
            rules
                .iter()
                .filter(|r| r.prefix && path.starts_with(r.from.as_bytes()))
                .max_by_key(|r| r.from.len())
        })
}

/// Where rule `r` sends a browser that asked for `path`, as the path the engine matches
/// next (the engine's own `Location` rendering, decoded); `None` when it leaves the site
/// or `r` does not match.
fn apply(r: &Redirect, path: &[u8]) -> Option<Vec<u8>> {
    let matched = if r.pattern {
        bareweb_engine::resource::match_pattern(r.from.as_bytes(), path)?
    } else if r.prefix {
        r.from.len()
    } else {
        path.len()
    };
    let engine = bareweb_engine::resource::Redirect {
        status: r.status,
        to: &r.to,
        matched,
        pattern: if r.pattern { &r.from } else { "" },
    };
    let mut location = String::new();
    engine.location(path, |piece, from_path| {
        if from_path {
            for &b in piece {
                if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
                    location.push(b as char);
                } else {
                    location.push_str(&format!("%{b:02X}"));
                }
            }
        } else {
            location.push_str(&String::from_utf8_lossy(piece));
        }
    });
    next_path(&location, b"")
}

/// A path `r` matches, to follow its chain from: its `from`, a pattern's placeholders
/// by their names and its `*` by `x`.
fn sample(r: &Redirect) -> Vec<u8> {
    if !r.pattern {
        return r.from.as_bytes().to_vec();
    }
    let p: String = r
        .from
        .split('/')
        .skip(1)
        .map(|s| match s {
            "*" => "x",
            s => s.strip_prefix(':').unwrap_or(s),
        })
        .fold(String::new(), |a, s| a + "/" + s);
    p.into_bytes()
}

/// How many redirects in a row browsers follow before giving up (Chrome and Firefox: 20).
const CHAIN_MAX: usize = 20;

/// Refuses redirect rules that send a browser round in circles: a prefix rule whose target
/// lies under its own prefix (it applies again to its own result), and any chain of rules,
/// followed from each rule's own `from`, that comes back to a path it passed or runs longer
/// than browsers follow. The error names the rule (its index in `rules`) and the chain.
fn check_chains(written: &[Redirect]) -> Result<(), (usize, String)> {
    let show = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    for (i, r) in written.iter().enumerate() {
        if !r.prefix || !placeholders(&r.to).is_empty() {
            continue;
        }
        let to = next_path(&r.to, b"");
        if to.is_some_and(|t| t.starts_with(r.from.as_bytes())) {
            let first = format!("{}x", r.from);
            let second = next_path(&r.to, b"x").unwrap_or_default();
            let rest = second.get(r.from.len()..).unwrap_or_default();
            let third = next_path(&r.to, rest).unwrap_or_default();
            return Err((
                i,
                format!(
                    "redirect from \"{}*\" to {:?} sends {first} to {}, then to {}, and so on \
                     without end: its target is under its own prefix, so it applies again to \
                     its own result; redirect to a path outside {}",
                    r.from,
                    r.to,
                    show(&second),
                    show(&third),
                    r.from
                ),
            ));
        }
    }
    let rules = effective(written);
    for r in &rules {
        let mut path = sample(r);
        let mut seen = vec![path.clone()];
        while let Some(m) = matching(&rules, &path) {
            let Some(next) = apply(m, &path) else {
                break;
            };
            let again = seen.contains(&next);
            seen.push(next.clone());
            let chain = || seen.iter().map(|p| show(p)).collect::<Vec<_>>().join(" → ");
            let at = written
                .iter()
                .position(|w| w.from == r.from && w.prefix == r.prefix)
                .unwrap_or_else(|| {
                    // An implied rule: its prefix rule's line.
                    written
                        .iter()
                        .position(|w| w.prefix && w.from == format!("{}/", r.from))
                        .unwrap_or(0)
                });
            if again {
                return Err((
                    at,
                    format!(
                        "redirect loop: {}; browsers stop with \"too many redirects\"",
                        chain()
                    ),
                ));
            }
            if seen.len() > CHAIN_MAX {
                return Err((
                    at,
                    format!(
                        "redirect chain longer than the {CHAIN_MAX} redirects browsers \
                         follow: {} → …",
                        chain()
                    ),
                ));
            }
            path = next;
        }
    }
    Ok(())
}

/// The rules as the image holds them: those written, and for each prefix rule
/// `/dir/*` an exact rule from `/dir` to the same target (so the prefix covers the
/// directory's own path too), unless an exact rule from `/dir` is written or the target
/// is `/dir` itself.
fn effective(written: &[Redirect]) -> Vec<Redirect> {
    let mut rules = written.to_vec();
    for r in written {
        let Some(bare) = r
            .from
            .strip_suffix('/')
            .filter(|b| r.prefix && !b.is_empty())
        else {
            continue;
        };
        let taken = rules.iter().any(|x| !x.prefix && x.from == bare);
        let onto_itself = next_path(&r.to, b"").is_some_and(|t| t == bare.as_bytes());
        if !taken && !onto_itself {
            rules.push(Redirect {
                from: bare.to_string(),
                to: r.to.clone(),
                status: r.status,
                ..Redirect::default()
            });
        }
    }
    rules
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
    fn the_tls_table_becomes_options_with_paths_beside_the_file() {
        let text = "[tls]\ncert = \"pki/c.pem\"\nkey = \"/etc/k.pem\"\nhttps_port = 8443\n\
                    http_redirect = true\nmin = \"1.3\"\nhsts = \"max-age=60\"\n";
        let c = Config::parse(text, Path::new("/srv/site/bareweb.toml")).unwrap();
        let got: Vec<(&str, &str, &str, usize)> = c
            .tls
            .iter()
            .map(|k| (k.key, k.long, k.value.as_str(), k.line))
            .collect();
        assert_eq!(
            got,
            [
                ("cert", "tls-cert", "/srv/site/pki/c.pem", 2),
                ("key", "tls-key", "/etc/k.pem", 3),
                ("https_port", "https-port", "8443", 4),
                ("http_redirect", "http-redirect", "", 5),
                ("min", "tls-min", "1.3", 6),
                ("hsts", "hsts", "max-age=60", 7),
            ]
        );
        assert!(parse("[tls]\nhttp_redirect = false\n")
            .unwrap()
            .tls
            .is_empty());
        let e = parse("[tls]\ncertificate = \"c.pem\"\n").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.to_string().contains("certificate"), "{e}");
    }

    #[test]
    fn the_acme_table_becomes_options_lists_joined_and_the_ca_beside_the_file() {
        let text = "[acme]\ndomains = [\"a.test\", \"www.a.test\"]\n\
                    directory = \"https://ca.test/dir\"\nemail = \"ops@a.test\"\n\
                    challenge = \"tls-alpn-01\"\ndns = \"10.0.0.1:53\"\nca = \"pki/ca.pem\"\n";
        let c = Config::parse(text, Path::new("/srv/site/bareweb.toml")).unwrap();
        let got: Vec<(&str, &str, &str, &str, usize)> = c
            .tls
            .iter()
            .map(|k| (k.table, k.key, k.long, k.value.as_str(), k.line))
            .collect();
        assert_eq!(
            got,
            [
                ("acme", "domains", "acme-domain", "a.test,www.a.test", 2),
                ("acme", "dns", "dns", "10.0.0.1:53", 6),
                (
                    "acme",
                    "directory",
                    "acme-directory",
                    "https://ca.test/dir",
                    3
                ),
                ("acme", "email", "acme-email", "ops@a.test", 4),
                ("acme", "challenge", "acme-challenge", "tls-alpn-01", 5),
                ("acme", "ca", "acme-ca", "/srv/site/pki/ca.pem", 7),
            ]
        );
        let one = parse("[acme]\ndomains = \"a.test\"\n").unwrap();
        assert_eq!(one.tls[0].value, "a.test");
        let spaced =
            parse("[acme]\ndomains = [\" a.test\", \"b.test \"]\ndns = \"10.0.0.1, 10.0.0.2\"\n")
                .unwrap();
        assert_eq!(spaced.tls[0].value, "a.test,b.test");
        assert_eq!(spaced.tls[1].value, "10.0.0.1,10.0.0.2");
        let e = parse("[acme]\ndomain = \"a.test\"\n").unwrap_err();
        assert!(e.to_string().contains("domain"), "{e}");
        let e = parse("[acme]\ndomains = 7\n").unwrap_err();
        assert!(
            e.to_string().contains("a string or a list of strings"),
            "{e}"
        );
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
                ..Redirect::default()
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
            ("\n\nlisting = true\ncolour = 1\n", 4, "unknown key"),
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

    #[test]
    fn redirects_that_loop_or_grow_are_refused_with_the_chain() {
        for (text, line, what) in [
            (
                "[[redirects]]\nfrom = \"/self\"\nto = \"/self\"\n",
                2,
                "redirect loop: /self → /self",
            ),
            (
                "[[redirects]]\nfrom = \"/p1\"\nto = \"/p2\"\n\n[[redirects]]\nfrom = \"/p2\"\nto = \"/p1?via=p2\"\n",
                2,
                "redirect loop: /p1 → /p2 → /p1",
            ),
            (
                "[[redirects]]\nfrom = \"/x\"\nto = \"/a/b\"\n[[redirects]]\nfrom = \"/a/*\"\nto = \"/c/\"\n[[redirects]]\nfrom = \"/c/*\"\nto = \"/a/\"\n",
                2,
                "/x → /a/b → /c/b → /a/b",
            ),
            (
                "\n[[redirects]]\nfrom = \"/g/*\"\nto = \"/g/y/\"\n",
                3,
                "sends /g/x to /g/y/x, then to /g/y/y/x",
            ),
            (
                "[[redirects]]\nfrom = \"/d/*\"\nto = \"/d/index.html?from=\"\n",
                2,
                "under its own prefix",
            ),
            (
                "[[redirects]]\nfrom = \"/a/*\"\nto = \"/b/a/\"\n[[redirects]]\nfrom = \"/b/*\"\nto = \"/a/\"\n",
                2,
                "longer than the 20 redirects",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, Some(line), "{text:?}: {e}");
            assert!(e.message.contains(what), "{text:?}: {e}");
        }
        // Chains that end are fine, and so are targets elsewhere.
        let c = parse(
            "[[redirects]]\nfrom = \"/a\"\nto = \"/b\"\n[[redirects]]\nfrom = \"/b\"\nto = \"/c\"\n\
             [[redirects]]\nfrom = \"/*\"\nto = \"https://new.example/\"\n\
             [[redirects]]\nfrom = \"/x/*\"\nto = \"/\"\n",
        )
        .unwrap();
        assert_eq!(c.redirects.len(), 4);
    }

    #[test]
    fn redirect_froms_that_could_never_match_are_refused_and_non_ascii_is_matched_decoded() {
        for (from, what) in [
            ("/q?x=1", "from = \"/q\""),
            ("/q#top", "fragment"),
            ("/caf%C3%A9", "from = \"/café\""),
            ("/my%20file*", "from = \"/my file*\""),
            ("/a//b", "from = \"/a/b\""),
            ("/a/./b/*", "from = \"/a/b/*\""),
            ("/a/../b", "from = \"/b\""),
            ("/a*b", "may only end a prefix"),
            ("old", "starting with '/'"),
        ] {
            let text = format!("[[redirects]]\nfrom = {from:?}\nto = \"/new\"\n");
            let e = parse(&text).unwrap_err();
            assert_eq!(e.line, Some(2), "{from}: {e}");
            assert!(e.message.contains(what), "{from}: {e}");
        }
        let c = parse(
            "[[redirects]]\nfrom = \"/café\"\nto = \"/cafe\"\n[[redirects]]\nfrom = \"/my file\"\nto = \"/file\"\n",
        )
        .unwrap();
        assert_eq!(c.redirects[0].from, "/café");
        let e = parse("[[redirects]]\nfrom = \"/cafe\"\nto = \"/café\"\n").unwrap_err();
        assert!(e.message.contains("\"/caf%C3%A9\""), "{e}");
    }

    #[test]
    fn a_prefix_rule_covers_its_directory_path_too() {
        let c = parse(
            "[[redirects]]\nfrom = \"/blog/*\"\nto = \"https://blog.example/\"\nstatus = 308\n\
             [[redirects]]\nfrom = \"/docs/*\"\nto = \"/manual/\"\n\
             [[redirects]]\nfrom = \"/docs\"\nto = \"/manual/start.html\"\n",
        )
        .unwrap();
        let rules = c.redirect_rules();
        let exact = |from: &str| rules.iter().find(|r| !r.prefix && r.from == from).cloned();
        assert_eq!(
            exact("/blog"),
            Some(Redirect {
                from: "/blog".into(),
                to: "https://blog.example/".into(),
                status: 308,
                ..Redirect::default()
            })
        );
        assert_eq!(
            exact("/docs").unwrap().to,
            "/manual/start.html",
            "a written rule wins"
        );
        assert_eq!(rules.len(), 4);
    }

    #[test]
    fn placeholder_redirects_are_checked_and_followed() {
        let c = parse(
            "[[redirects]]\nfrom = \"/blog/:slug\"\nto = \"/posts/:slug\"\n\
             [[redirects]]\nfrom = \"/docs/:v/*\"\nto = \"/manual/:v/:splat\"\n\
             [[redirects]]\nfrom = \"/old/*\"\nto = \"https://new.example/:splat\"\n",
        )
        .unwrap();
        assert!(c.redirects[0].pattern && !c.redirects[0].prefix);
        assert_eq!(c.redirects[0].from, "/blog/:slug");
        assert!(c.redirects[2].prefix && c.redirects[2].from == "/old/");
        let r = &c.redirects[0];
        assert_eq!(apply(r, b"/blog/hi"), Some(b"/posts/hi".to_vec()));
        assert_eq!(apply(r, b"/blog/a/b"), None, "one segment per placeholder");
        assert_eq!(
            apply(&c.redirects[1], b"/docs/2/a/b"),
            Some(b"/manual/2/a/b".to_vec())
        );
        for (text, line, what) in [
            (
                "[[redirects]]\nfrom = \"/blog/:slug\"\nto = \"/posts/:id\"\n",
                3,
                "placeholder :id is not in from \"/blog/:slug\", which has :slug",
            ),
            (
                "[[redirects]]\nfrom = \"/old\"\nto = \"/new/:splat\"\n",
                3,
                "which has none",
            ),
            (
                "[[redirects]]\nfrom = \"/a/:x/:x\"\nto = \"/b\"\n",
                2,
                "there twice",
            ),
            (
                "[[redirects]]\nfrom = \"/a/:1\"\nto = \"/b\"\n",
                2,
                "a name of letters",
            ),
            (
                "[[redirects]]\nfrom = \"/a/:x/*/b\"\nto = \"/b\"\n",
                2,
                "last segment",
            ),
            (
                "[[redirects]]\nfrom = \"/a/:x?q=1\"\nto = \"/b\"\n",
                2,
                "a name of letters",
            ),
            // Loops through placeholders.
            (
                "[[redirects]]\nfrom = \"/p/:a\"\nto = \"/q/:a\"\n\
                 [[redirects]]\nfrom = \"/q/:b\"\nto = \"/p/:b\"\n",
                2,
                "redirect loop: /p/a → /q/a → /p/a",
            ),
            (
                "[[redirects]]\nfrom = \"/g/*\"\nto = \"/g/y/:splat\"\n",
                2,
                "longer than the 20 redirects",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, Some(line), "{text:?}: {e}");
            assert!(e.message.contains(what), "{text:?}: {e}");
        }
        // A port or scheme is no placeholder.
        parse("[[redirects]]\nfrom = \"/x\"\nto = \"https://h.example:8443/y\"\n").unwrap();
    }

    #[test]
    fn rewrites_and_the_server_field_are_read_and_checked() {
        let c = parse(
            "server_header = \"shop\"\n[[rewrites]]\nfrom = \"/app/*\"\nto = \"/app/index.html\"\n\
             [[rewrites]]\nfrom = \"/about\"\nto = \"/about.html\"\n",
        )
        .unwrap();
        assert_eq!(c.server.as_deref(), Some("shop"));
        assert_eq!(
            c.rewrites[0],
            Rewrite {
                from: "/app/".into(),
                to: "/app/index.html".into(),
                prefix: true,
                line: Some(3)
            }
        );
        assert_eq!(
            parse("server_header = false\n").unwrap().server.as_deref(),
            Some("")
        );
        assert_eq!(parse("server_header = true\n").unwrap().server, None);
        for (text, line, what) in [
            ("server_header = 5\n", 1, "true, false or a name"),
            ("server_header = \"a\\nb\"\n", 1, "visible ASCII"),
            (
                "[[rewrites]]\nfrom = \"/a/:x\"\nto = \"/b.html\"\n",
                2,
                "placeholders are for redirects",
            ),
            (
                "[[rewrites]]\nfrom = \"/a/*\"\nto = \"/b.html?x=1\"\n",
                3,
                "path of a file",
            ),
            (
                "[[rewrites]]\nfrom = \"/a/*\"\nto = \"https://x.example/\"\n",
                3,
                "path of a file",
            ),
            (
                "[[rewrites]]\nfrom = \"/a?b\"\nto = \"/b.html\"\n",
                2,
                "query",
            ),
            (
                "[[redirects]]\nfrom = \"/app/*\"\nto = \"/new/\"\n\
                 [[rewrites]]\nfrom = \"/app/x/*\"\nto = \"/b.html\"\n",
                5,
                "the redirect from \"/app/*\" answers those paths first",
            ),
            (
                "[[redirects]]\nfrom = \"/a\"\nto = \"/c\"\n\
                 [[rewrites]]\nfrom = \"/a\"\nto = \"/b.html\"\n",
                5,
                "could never apply",
            ),
            ("[[rewrites]]\nfrom = \"/a\"\n", 1, "missing key"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, Some(line), "{text:?}: {e}");
            assert!(e.message.contains(what), "{text:?}: {e}");
        }
    }

    #[test]
    fn an_empty_index_list_is_refused() {
        let e = parse("listing = true\nindex = []\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("at least one"), "{e}");
    }

    /// Every kind of mistake gets a message in the user's words: TOML's (key, table, list,
    /// true or false) and the setting's, never Rust's type names.
    #[test]
    fn config_errors_speak_toml_not_rust() {
        const RUST: &[&str] = &[
            "u8",
            "u16",
            "u32",
            "u64",
            "i32",
            "i64",
            "usize",
            "bool",
            "struct",
            "Raw",
            "RawStats",
            "RawRedirect",
            "RawHeaders",
            "sequence",
            "map",
            "field",
            "Spanned",
            "Vec",
            "String",
            "Option",
            "Switch",
            "Status",
            "BTreeMap",
        ];
        for (text, want) in [
            ("listing = \"yes\"\n", "true or false"),
            ("metrics = 1\n", "true or false"),
            ("[stats]\nenabled = \"no\"\n", "true or false"),
            ("stats = 5\n", "[stats] table"),
            ("index = \"index.html\"\n", "a list"),
            ("index = [1]\n", "a string"),
            ("errors = 5\n", "a table"),
            ("types = [\"md\"]\n", "a table"),
            ("headers = 5\n", "a list"),
            ("[[headers]]\npath = \"/x\"\nset = 5\n", "a table"),
            ("[[headers]]\npath = \"/x\"\n", "missing key"),
            (
                "[[headers]]\npath = \"/x\"\nset = {}\ncolour = 1\n",
                "unknown key",
            ),
            (
                "[[redirects]]\nfrom = \"/a\"\nto = \"/b\"\nstatus = \"301\"\n",
                "301, 302",
            ),
            (
                "[[redirects]]\nfrom = \"/a\"\nto = \"/b\"\nstatus = 70000\n",
                "301, 302",
            ),
            (
                "[[redirects]]\nfrom = \"/a\"\nto = \"/b\"\nstatus = -1\n",
                "301, 302",
            ),
            (
                "[[redirects]]\nfrom = \"/a\"\nto = \"/b\"\nstatus = 3.5\n",
                "301, 302",
            ),
            ("[[redirects]]\nfrom = 5\nto = \"/b\"\n", "a string"),
            ("[[redirects]]\nto = \"/b\"\n", "missing key"),
            ("redirects = { from = \"/a\" }\n", "a list"),
            (
                "[[redirects]]\nfrom = \"/a\"\nto = \"/b\"\n[redirects.x]\n",
                "key",
            ),
            ("colour = 1\n", "unknown key"),
            ("[stats]\npath = 5\n", "a string"),
        ] {
            let e = parse(text).unwrap_err();
            let words: Vec<&str> = e
                .message
                .split(|c: char| !c.is_ascii_alphanumeric())
                .collect();
            for w in RUST {
                assert!(!words.contains(w), "{text:?}: {w:?} in {e}");
            }
            assert!(e.message.contains(want), "{text:?}: want {want:?} in {e}");
            assert!(e.line.is_some(), "{text:?}: {e}");
        }
    }
}
