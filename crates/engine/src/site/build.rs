//! The site image writer (std only): lays out a [`Spec`] — files with their content types,
//! encoded variants and header lines, directory listings, redirects, error pages and the
//! server-page switches, all resolved beforehand — as image bytes that
//! [`super::Site::load`] accepts. Output depends only on the spec, so the same input gives
//! the same image. Reading a directory and a `bareweb.toml` into a spec is the host-side
//! crate `bareweb-site`'s job; [`build_from_files`] is the small form for tests.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::PathBuf;

use super::build_sites::Sites;
pub use super::build_write::gzip;
use super::build_write::{
    write_entries, write_header, write_sites, write_tables, Layout, StringArea,
};
use super::format;

/// Why an image could not be built.
#[derive(Debug)]
pub enum BuildError {
    /// Reading a file or directory failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        error: io::Error,
    },
    /// A file name is not UTF-8, so it has no URL path.
    NotUtf8(PathBuf),
    /// A URL path breaks a rule (the rule is named).
    BadPath {
        /// The path.
        path: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// Two files have the same path.
    Duplicate(String),
    /// A path is both a file and a directory of other files.
    FileAndDir(String),
    /// A configured item is invalid (a redirect, an error page, header lines).
    Invalid(String),
    /// The image would exceed a format limit (string area or entry count over `u32`).
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// Its size.
        size: u64,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            BuildError::NotUtf8(path) => write!(f, "{}: file name is not UTF-8", path.display()),
            BuildError::BadPath { path, rule } => write!(f, "bad path {path:?}: {rule}"),
            BuildError::Duplicate(path) => write!(f, "two files have the path {path:?}"),
            BuildError::FileAndDir(path) => {
                write!(f, "{path:?} is both a file and a directory")
            }
            BuildError::TooLarge { what, size } => write!(f, "{what} too large ({size})"),
            BuildError::Invalid(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The `Content-Type` for a file name, chosen by its extension (case-insensitive).
pub fn content_type(name: &str) -> &'static str {
    let ext = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.contains('/') => ext.to_ascii_lowercase(),
        _ => String::new(),
    };
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" => "application/json",
        "txt" => "text/plain; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "wasm" => "application/wasm",
        "pdf" => "application/pdf",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "mp4" => "video/mp4",
        _ => "application/octet-stream",
    }
}

/// Whether an encoded variant is worth trying for this content type.
pub fn compressible(ctype: &str) -> bool {
    ctype.starts_with("text/")
        || [
            "application/json",
            "application/xml",
            "image/svg+xml",
            "application/wasm",
            "image/x-icon",
        ]
        .contains(&ctype)
}

/// Checks a URL path given to the builder.
fn check_path(path: &str) -> Result<(), BuildError> {
    let bad = |rule| {
        Err(BuildError::BadPath {
            path: path.to_string(),
            rule,
        })
    };
    let Some(rest) = path.strip_prefix('/') else {
        return bad("does not start with '/'");
    };
    if path.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return bad("has a control character");
    }
    for segment in rest.split('/') {
        match segment {
            "" => return bad("has an empty segment"),
            "." | ".." => return bad("has a '.' or '..' segment"),
            _ => {}
        }
    }
    Ok(())
}

/// One file of a [`Spec`], or a directory listing (its `path` the directory's).
#[derive(Debug, Clone, Default)]
pub struct FileSpec {
    /// URL path.
    pub path: String,
    /// The identity body.
    pub data: Vec<u8>,
    /// Modification time, Unix seconds.
    pub mtime: u64,
    /// `Content-Type` value.
    pub content_type: String,
    /// Header lines for this file (`Name: value` CRLF each).
    pub headers: String,
    /// Encoded variants, each kept only if smaller than `data`.
    pub gzip: Option<Vec<u8>>,
    /// Brotli variant.
    pub br: Option<Vec<u8>>,
    /// Zstd variant.
    pub zstd: Option<Vec<u8>>,
}

/// A configured redirect, or a rewrite.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedirectSpec {
    /// The path matched (exact), the prefix matched, or a pattern (`/blog/:slug`, a
    /// redirect's `from` holding a `:name` segment; a final `*` segment matching the rest).
    pub from: String,
    /// The `Location` value (for a prefix, the rest of the path is appended unless it
    /// says where with `:splat`; a pattern's `:name`s are filled in). For a rewrite, the
    /// path of the file served.
    pub to: String,
    /// 301, 302, 303, 307 or 308; 200 for a rewrite.
    pub status: u16,
    /// Match a prefix rather than the whole path.
    pub prefix: bool,
    /// A rewrite: when the site has nothing at the path, serve the file at `to`.
    pub rewrite: bool,
}

impl RedirectSpec {
    /// Whether `from` is a pattern (a segment starting with `:`).
    pub fn is_pattern(&self) -> bool {
        !self.rewrite && self.from.split('/').any(|s| s.starts_with(':'))
    }

    /// The record's kind.
    pub(super) fn kind(&self) -> u32 {
        match (self.rewrite, self.prefix, self.is_pattern()) {
            (true, false, _) => format::REWRITE_EXACT,
            (true, true, _) => format::REWRITE_PREFIX,
            (false, _, true) => format::REDIRECT_PATTERN,
            (false, true, false) => format::REDIRECT_PREFIX,
            (false, false, false) => format::REDIRECT_EXACT,
        }
    }

    /// Where the record goes in the table: exact redirects, patterns, prefixes, exact
    /// rewrites, prefix rewrites.
    fn class(&self) -> u8 {
        match self.kind() {
            format::REDIRECT_EXACT => 0,
            format::REDIRECT_PATTERN => 1,
            format::REDIRECT_PREFIX => 2,
            format::REWRITE_EXACT => 3,
            _ => 4,
        }
    }
}

/// Everything an image holds, resolved: the writer decides nothing but the layout.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// The files.
    pub files: Vec<FileSpec>,
    /// Directory listings, `path` naming the directory (`/` or `/a/b`); only for
    /// directories without an index file.
    pub listings: Vec<FileSpec>,
    /// Names a directory's index file may have, in order of preference (default
    /// `index.html`).
    pub index_names: Vec<String>,
    /// Redirects.
    pub redirects: Vec<RedirectSpec>,
    /// Error pages: status and the path of the file sent with it.
    pub error_pages: Vec<(u16, String)>,
    /// Header lines for responses that are not a file's (redirects, error pages).
    pub common_headers: String,
    /// The stats page and JSON: `None` the platform's default.
    pub stats: Option<bool>,
    /// `/metrics`.
    pub metrics: Option<bool>,
    /// `/healthz`.
    pub healthz: Option<bool>,
    /// The stats page's path (without trailing slash), `None` the default.
    pub stats_path: Option<String>,
    /// Clients allowed the stats JSON and metrics.
    pub stats_allow: Option<([u8; 4], u8)>,
    /// The `Server` field: `None` the platform's, `Some("")` none, else this value.
    pub server: Option<String>,
}

/// One path of the image: a file, or a directory with its listing if it gets one.
pub(super) enum Item<'f> {
    File(&'f FileSpec),
    Dir(Option<&'f FileSpec>),
}

/// Builds an image from `(url path, contents, mtime in Unix seconds)` triples, with the
/// content type from the extension and a gzip variant of compressible types. Paths start
/// with `/` and have no empty, `.` or `..` segments; the directories they imply get
/// entries of their own.
pub fn build_from_files(files: &[(String, Vec<u8>, u64)]) -> Result<Vec<u8>, BuildError> {
    let files = files
        .iter()
        .map(|(path, data, mtime)| {
            let ctype = content_type(path);
            FileSpec {
                path: path.clone(),
                gzip: compressible(ctype)
                    .then(|| gzip(data))
                    .filter(|g| g.len() < data.len()),
                data: data.clone(),
                mtime: *mtime,
                content_type: ctype.to_string(),
                ..FileSpec::default()
            }
        })
        .collect();
    build(&Spec {
        files,
        ..Spec::default()
    })
}

pub(super) fn invalid<T>(why: String) -> Result<T, BuildError> {
    Err(BuildError::Invalid(why))
}

/// Lays out `spec` as an image: checks it step by step (paths, index names, header lines,
/// redirects, error pages), gathers the string area, then writes the redirect and error
/// tables, the entries with their bodies, and the header with its checksum.
pub fn build(spec: &Spec) -> Result<Vec<u8>, BuildError> {
    build_with(spec, &Sites::default())
}

/// [`build`], with the sites of an image with virtual hosts (their images after the
/// spec's own bodies in the data area, their names in the names table).
pub(super) fn build_with(spec: &Spec, sites: &Sites<'_>) -> Result<Vec<u8>, BuildError> {
    let items = collect_items(spec)?;
    let index_names = index_names(spec)?;
    check_headers(spec)?;
    let redirects = sorted_redirects(spec)?;
    let errors = error_pages(spec, &items)?;
    let strings = StringArea::gather(spec, &items, &redirects, &sites.names)?;
    let layout = Layout::new(&items, &redirects, &errors, &strings.strings, sites);
    let mut image = vec![0u8; layout.data_off];
    write_tables(&mut image, &layout, &strings, &redirects, &errors);
    write_entries(&mut image, &layout, &items, &strings.metas, &index_names);
    write_sites(&mut image, &layout, &strings, sites);
    write_header(&mut image, &layout, spec, &strings, &redirects, sites)?;
    Ok(image)
}

/// Every path, sorted by bytes (String's order), with the directories its files imply and
/// the listings set on their directories; refuses bad paths, clashes and too many entries.
fn collect_items(spec: &Spec) -> Result<Vec<(&str, Item<'_>)>, BuildError> {
    let mut items: BTreeMap<&str, Item<'_>> = BTreeMap::new();
    items.insert("/", Item::Dir(None));
    for f in &spec.files {
        let path = &f.path;
        check_path(path)?;
        for (pos, _) in path.match_indices('/').skip(1) {
            let dir = &path[..pos];
            if let Item::File(_) = items.entry(dir).or_insert(Item::Dir(None)) {
                return Err(BuildError::FileAndDir(dir.to_string()));
            }
        }
        match items.insert(path, Item::File(f)) {
            None => {}
            Some(Item::File(_)) => return Err(BuildError::Duplicate(path.clone())),
            Some(Item::Dir(_)) => return Err(BuildError::FileAndDir(path.clone())),
        }
    }
    for l in &spec.listings {
        // A directory with no file in it (empty, or holding only what the builder left
        // out, a `.gitkeep`) is implied by no file: its listing makes it, and its parents.
        if l.path != "/" && !items.contains_key(l.path.as_str()) {
            check_path(&l.path)?;
            for (pos, _) in l.path.match_indices('/').skip(1) {
                let dir = &l.path[..pos];
                if let Item::File(_) = items.entry(dir).or_insert(Item::Dir(None)) {
                    return Err(BuildError::FileAndDir(dir.to_string()));
                }
            }
            items.insert(&l.path, Item::Dir(None));
        }
        match items.get_mut(l.path.as_str()) {
            Some(Item::Dir(slot)) => *slot = Some(l),
            _ => {
                return invalid(format!(
                    "listing for {:?}, which is not a directory",
                    l.path
                ))
            }
        }
    }
    let items: Vec<(&str, Item<'_>)> = items.into_iter().collect();
    if items.len() >= format::NO_INDEX as usize {
        return Err(BuildError::TooLarge {
            what: "entry count",
            size: items.len() as u64,
        });
    }
    Ok(items)
}

/// The index of the file at `path` among the sorted `items`, if there is one.
pub(super) fn find_file(items: &[(&str, Item<'_>)], path: &str) -> Option<usize> {
    items
        .binary_search_by(|(q, _)| (*q).cmp(path))
        .ok()
        .filter(|&i| matches!(items[i].1, Item::File(_)))
}

/// The index file names to look for (the spec's, or the default), each a plain file name.
fn index_names(spec: &Spec) -> Result<Vec<&str>, BuildError> {
    let names: Vec<&str> = if spec.index_names.is_empty() {
        vec![format::INDEX_NAME]
    } else {
        spec.index_names.iter().map(String::as_str).collect()
    };
    for n in &names {
        if n.is_empty() || n.contains('/') || *n == "." || *n == ".." {
            return invalid(format!("index name {n:?} is not a file name"));
        }
    }
    Ok(names)
}

/// Checks every file's and listing's header lines, and the common ones: well formed, and
/// short enough to fit a response head.
fn check_headers(spec: &Spec) -> Result<(), BuildError> {
    for f in spec.files.iter().chain(&spec.listings) {
        if !format::is_header_block(f.headers.as_bytes()) {
            return invalid(format!("header lines of {:?} are malformed", f.path));
        }
        if f.headers.len() > format::MAX_FILE_HEADERS {
            return invalid(format!(
                "{:?} gets {} bytes of header lines; at most {} fit a response head",
                f.path,
                f.headers.len(),
                format::MAX_FILE_HEADERS
            ));
        }
    }
    if !format::is_header_block(spec.common_headers.as_bytes()) {
        return invalid("the common header lines are malformed".into());
    }
    if spec.common_headers.len() > format::MAX_COMMON_HEADERS {
        return invalid(format!(
            "{} bytes of header lines for every path; at most {} fit a redirect's head",
            spec.common_headers.len(),
            format::MAX_COMMON_HEADERS
        ));
    }
    Ok(())
}

/// The redirects and rewrites in table order: exact redirects sorted, patterns as
/// written, prefixes longest first, then exact rewrites and prefix rewrites (longest
/// first); refuses two exact ones from the same path, a source that is not a path, a
/// target that is not visible ASCII (or, for a rewrite, not a path) and a status that is
/// not a redirect's (a rewrite's is 200).
fn sorted_redirects(spec: &Spec) -> Result<Vec<&RedirectSpec>, BuildError> {
    let mut redirects: Vec<&RedirectSpec> = spec.redirects.iter().collect();
    let key = |r: &RedirectSpec| {
        let class = r.class();
        let by_len = std::cmp::Reverse(if r.prefix { r.from.len() } else { 0 });
        // Patterns keep their written order (the sort is stable).
        let name = if class == 1 {
            String::new()
        } else {
            r.from.clone()
        };
        (class, by_len, name)
    };
    redirects.sort_by_key(|r| key(r));
    for w in redirects.windows(2) {
        if w[0].class() == w[1].class() && !w[0].prefix && !w[1].prefix && w[0].from == w[1].from {
            return invalid(format!("two rules from {:?}", w[0].from));
        }
    }
    for r in &redirects {
        if !r.from.starts_with('/') {
            return invalid(format!("redirect from {:?}: not a path", r.from));
        }
        if r.to.is_empty() || !r.to.bytes().all(|b| (0x21..0x7f).contains(&b)) {
            return invalid(format!(
                "redirect to {:?}: empty or not visible ASCII (percent-encode it)",
                r.to
            ));
        }
        if r.rewrite {
            if r.status != 200 || !r.to.starts_with('/') {
                return invalid(format!(
                    "rewrite from {:?}: status {} and target {:?}: want 200 and a path",
                    r.from, r.status, r.to
                ));
            }
        } else if !format::REDIRECT_STATUSES.contains(&u32::from(r.status)) {
            return invalid(format!(
                "redirect from {:?}: status {} is not 301, 302, 303, 307 or 308",
                r.from, r.status
            ));
        }
    }
    Ok(redirects)
}

/// The error pages as (status, entry index) pairs; each must be a 4xx or 5xx status whose
/// page is a file of the site.
fn error_pages(spec: &Spec, items: &[(&str, Item<'_>)]) -> Result<Vec<(u16, u32)>, BuildError> {
    let mut errors = Vec::new();
    for (status, path) in &spec.error_pages {
        if !(400..=599).contains(status) {
            return invalid(format!("error page for {status}: not a 4xx or 5xx status"));
        }
        let Some(i) = find_file(items, path) else {
            return invalid(format!(
                "error page for {status}: {path:?} is not a file of the site"
            ));
        };
        errors.push((*status, i as u32));
    }
    Ok(errors)
}
