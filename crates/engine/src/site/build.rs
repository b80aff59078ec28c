//! The site image writer (std only): lays out a [`Spec`] — files with their content types,
//! encoded variants and header lines, directory listings, redirects, error pages and the
//! server-page switches, all resolved beforehand — as image bytes that
//! [`super::Site::load`] accepts. Output depends only on the spec, so the same input gives
//! the same image. Reading a directory and a `bareweb.toml` into a spec is the host-side
//! crate `bareweb-site`'s job; [`build_from_files`] is the small form for tests.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{self, Write};
use std::ops::Range;
use std::path::PathBuf;

use flate2::{Compression, GzBuilder};

use super::format::{self, entry, header};
use crate::resource::{block_sums_into, Body};

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
    fn kind(&self) -> u32 {
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
enum Item<'f> {
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

fn invalid<T>(why: String) -> Result<T, BuildError> {
    Err(BuildError::Invalid(why))
}

/// Lays out `spec` as an image: checks it step by step (paths, index names, header lines,
/// redirects, error pages), gathers the string area, then writes the redirect and error
/// tables, the entries with their bodies, and the header with its checksum.
pub fn build(spec: &Spec) -> Result<Vec<u8>, BuildError> {
    let items = collect_items(spec)?;
    let index_names = index_names(spec)?;
    check_headers(spec)?;
    let redirects = sorted_redirects(spec)?;
    let errors = error_pages(spec, &items)?;
    let strings = StringArea::gather(spec, &items, &redirects)?;
    let layout = Layout::new(&items, &redirects, &errors, &strings.strings);
    let mut image = vec![0u8; layout.data_off];
    write_tables(&mut image, &layout, &strings, &redirects, &errors);
    write_entries(&mut image, &layout, &items, &strings.metas, &index_names);
    write_header(&mut image, &layout, spec, &strings)?;
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
fn find_file(items: &[(&str, Item<'_>)], path: &str) -> Option<usize> {
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

/// Where a string sits in the string area: (offset, length).
type StrRef = (u32, u32);

/// An entry's strings.
struct Meta {
    path: StrRef,
    ctype: StrRef,
    etag: StrRef,
    headers: StrRef,
}

/// The string area, each distinct string once, and where every entry's, redirect's and
/// header field's strings sit in it.
struct StringArea {
    strings: Strings,
    /// One per item, in item order.
    metas: Vec<Meta>,
    /// (from, to) of each redirect, in table order.
    redirects: Vec<(StrRef, StrRef)>,
    common: StrRef,
    stats_path: StrRef,
    server: StrRef,
}

impl StringArea {
    /// Adds every string the image holds; refuses an area past `u32` offsets.
    fn gather(
        spec: &Spec,
        items: &[(&str, Item<'_>)],
        redirects: &[&RedirectSpec],
    ) -> Result<Self, BuildError> {
        let mut strings = Strings::default();
        let mut metas = Vec::with_capacity(items.len());
        for (path, item) in items {
            let path_ref = strings.add(path);
            let rep = match item {
                Item::File(f) | Item::Dir(Some(f)) => Some(f),
                Item::Dir(None) => None,
            };
            let (ctype, etag, headers) = match rep {
                Some(f) => (
                    strings.add(&f.content_type),
                    strings.add(&format!("\"{:016x}\"", format::fnv1a(&f.data))),
                    strings.add(&f.headers),
                ),
                None => ((0, 0), (0, 0), (0, 0)),
            };
            metas.push(Meta {
                path: path_ref,
                ctype,
                etag,
                headers,
            });
        }
        let redirects = redirects
            .iter()
            .map(|r| (strings.add(&r.from), strings.add(&r.to)))
            .collect();
        let common = strings.add(&spec.common_headers);
        let stats_path = strings.add(spec.stats_path.as_deref().unwrap_or(""));
        let server = strings.add(spec.server.as_deref().unwrap_or(""));
        if strings.bytes.len() > u32::MAX as usize {
            return Err(BuildError::TooLarge {
                what: "string area",
                size: strings.bytes.len() as u64,
            });
        }
        Ok(StringArea {
            strings,
            metas,
            redirects,
            common,
            stats_path,
            server,
        })
    }
}

/// Where each area of the image starts, and how many records the tables hold.
struct Layout {
    entries_off: usize,
    entry_count: usize,
    redirects_off: usize,
    redirect_count: usize,
    errors_off: usize,
    error_count: usize,
    strings_off: usize,
    strings_len: usize,
    data_off: usize,
}

impl Layout {
    /// Header, entries, redirects, error pages and strings back to back; the data area
    /// from the next body boundary.
    fn new(
        items: &[(&str, Item<'_>)],
        redirects: &[&RedirectSpec],
        errors: &[(u16, u32)],
        strings: &Strings,
    ) -> Self {
        let entries_off = format::HEADER_LEN;
        let redirects_off = entries_off + items.len() * format::ENTRY_LEN;
        let errors_off = redirects_off + redirects.len() * format::REDIRECT_LEN;
        let strings_off = errors_off + errors.len() * format::ERROR_LEN;
        let data_off = align(strings_off + strings.bytes.len(), format::BODY_ALIGN);
        Layout {
            entries_off,
            entry_count: items.len(),
            redirects_off,
            redirect_count: redirects.len(),
            errors_off,
            error_count: errors.len(),
            strings_off,
            strings_len: strings.bytes.len(),
            data_off,
        }
    }
}

/// Writes the string area, the redirect table and the error-page table.
fn write_tables(
    image: &mut [u8],
    layout: &Layout,
    strings: &StringArea,
    redirects: &[&RedirectSpec],
    errors: &[(u16, u32)],
) {
    let area = layout.strings_off..layout.strings_off + layout.strings_len;
    image[area].copy_from_slice(&strings.strings.bytes);
    for (i, (r, (from, to))) in redirects.iter().zip(&strings.redirects).enumerate() {
        let at = layout.redirects_off + i * format::REDIRECT_LEN;
        let rec = &mut image[at..at + format::REDIRECT_LEN];
        put32(rec, format::redirect::FROM_OFF, from.0);
        put32(rec, format::redirect::FROM_LEN, from.1);
        put32(rec, format::redirect::TO_OFF, to.0);
        put32(rec, format::redirect::TO_LEN, to.1);
        put32(rec, format::redirect::STATUS, u32::from(r.status));
        put32(rec, format::redirect::KIND, r.kind());
    }
    for (i, (status, entry)) in errors.iter().enumerate() {
        let at = layout.errors_off + i * format::ERROR_LEN;
        let rec = &mut image[at..at + format::ERROR_LEN];
        put32(rec, format::error_page::STATUS, u32::from(*status));
        put32(rec, format::error_page::ENTRY, *entry);
    }
}

/// Writes every entry, appending the bodies of files and listings to the data area: a
/// directory names its index file (or carries its listing when it has none).
fn write_entries(
    image: &mut Vec<u8>,
    layout: &Layout,
    items: &[(&str, Item<'_>)],
    metas: &[Meta],
    index_names: &[&str],
) {
    for (i, ((path, item), meta)) in items.iter().zip(metas).enumerate() {
        let at = layout.entries_off + i * format::ENTRY_LEN;
        let mut e = [0u8; format::ENTRY_LEN];
        put32(&mut e, entry::PATH_OFF, meta.path.0);
        put32(&mut e, entry::PATH_LEN, meta.path.1);
        let rep = match item {
            Item::Dir(listing) => {
                put32(&mut e, entry::KIND, format::KIND_DIR);
                let dir = if *path == "/" { "" } else { path };
                let index = index_names
                    .iter()
                    .find_map(|n| find_file(items, &format!("{dir}/{n}")))
                    .map_or(format::NO_INDEX, |i| i as u32);
                put32(&mut e, entry::INDEX, index);
                listing.filter(|_| index == format::NO_INDEX)
            }
            Item::File(f) => {
                put32(&mut e, entry::KIND, format::KIND_FILE);
                put32(&mut e, entry::INDEX, format::NO_INDEX);
                Some(*f)
            }
        };
        if let Some(f) = rep {
            write_body(image, &mut e, meta, f);
        }
        image[at..at + format::ENTRY_LEN].copy_from_slice(&e);
    }
}

/// Fills entry `e`'s response fields for body `f` and appends the body and its encoded
/// variants (each only when non-empty and smaller) to the data area.
fn write_body(image: &mut Vec<u8>, e: &mut [u8; format::ENTRY_LEN], meta: &Meta, f: &FileSpec) {
    put32(e, entry::CTYPE_OFF, meta.ctype.0);
    put32(e, entry::CTYPE_LEN, meta.ctype.1);
    put32(e, entry::ETAG_OFF, meta.etag.0);
    put32(e, entry::ETAG_LEN, meta.etag.1);
    put32(e, entry::HEADERS_OFF, meta.headers.0);
    put32(e, entry::HEADERS_LEN, meta.headers.1);
    put64(e, entry::LAST_MODIFIED, f.mtime);
    let (off, sums) = push_body(image, &f.data);
    put64(e, entry::BODY_OFF, off);
    put64(e, entry::BODY_LEN, f.data.len() as u64);
    put64(e, entry::SUMS_OFF, sums);
    let variants = [
        (
            &f.gzip,
            entry::GZIP_OFF,
            entry::GZIP_LEN,
            entry::GZIP_SUMS_OFF,
        ),
        (&f.br, entry::BR_OFF, entry::BR_LEN, entry::BR_SUMS_OFF),
        (
            &f.zstd,
            entry::ZSTD_OFF,
            entry::ZSTD_LEN,
            entry::ZSTD_SUMS_OFF,
        ),
    ];
    for (v, off_r, len_r, sums_r) in variants {
        let Some(v) = v
            .as_ref()
            .filter(|v| !v.is_empty() && v.len() < f.data.len())
        else {
            continue;
        };
        let (off, sums) = push_body(image, v);
        put64(e, off_r, off);
        put64(e, len_r, v.len() as u64);
        put64(e, sums_r, sums);
    }
}

/// Writes the header (areas, counts, server-page switches, stats allow prefix, common
/// header lines, stats path), its checksum last; refuses a stats prefix over /32.
fn write_header(
    image: &mut [u8],
    layout: &Layout,
    spec: &Spec,
    strings: &StringArea,
) -> Result<(), BuildError> {
    let image_len = image.len() as u64;
    image[header::MAGIC].copy_from_slice(&format::MAGIC);
    put32(image, header::VERSION, format::VERSION);
    put32(image, header::HEADER_LEN, format::HEADER_LEN as u32);
    put64(image, header::IMAGE_LEN, image_len);
    put32(image, header::ENTRY_COUNT, layout.entry_count as u32);
    put32(image, header::ENTRY_LEN, format::ENTRY_LEN as u32);
    put64(image, header::ENTRIES_OFF, layout.entries_off as u64);
    put64(image, header::REDIRECTS_OFF, layout.redirects_off as u64);
    put32(image, header::REDIRECT_COUNT, layout.redirect_count as u32);
    put64(image, header::ERRORS_OFF, layout.errors_off as u64);
    put32(image, header::ERROR_COUNT, layout.error_count as u32);
    put64(image, header::STRINGS_OFF, layout.strings_off as u64);
    put64(image, header::STRINGS_LEN, layout.strings_len as u64);
    put64(image, header::DATA_OFF, layout.data_off as u64);
    put64(image, header::DATA_LEN, image_len - layout.data_off as u64);
    let switch = |v: Option<bool>| match v {
        None => format::SWITCH_DEFAULT,
        Some(true) => format::SWITCH_ON,
        Some(false) => format::SWITCH_OFF,
    };
    let server = spec.server.as_deref().map(|s| !s.is_empty());
    if let Some(name) = spec.server.as_deref() {
        if !name.bytes().all(|b| b == b' ' || (0x21..0x7f).contains(&b)) {
            return invalid(format!("server name {name:?}: not visible ASCII"));
        }
    }
    let flags = switch(spec.stats) << format::flags::STATS
        | switch(spec.metrics) << format::flags::METRICS
        | switch(spec.healthz) << format::flags::HEALTHZ
        | switch(server) << format::flags::SERVER
        | u32::from(spec.stats_allow.is_some()) << format::flags::STATS_ALLOW_SET;
    put32(image, header::FLAGS, flags);
    if let Some((net, len)) = spec.stats_allow {
        if len > 32 {
            return invalid(format!("stats allow prefix /{len} is longer than 32"));
        }
        image[header::STATS_ALLOW].copy_from_slice(&net);
        put32(image, header::STATS_ALLOW_PREFIX, u32::from(len));
    }
    put32(image, header::COMMON_HEADERS_OFF, strings.common.0);
    put32(image, header::COMMON_HEADERS_LEN, strings.common.1);
    put32(image, header::STATS_PATH_OFF, strings.stats_path.0);
    put32(image, header::STATS_PATH_LEN, strings.stats_path.1);
    put32(image, header::SERVER_OFF, strings.server.0);
    put32(image, header::SERVER_LEN, strings.server.1);
    let sum = format::image_checksum(image);
    put64(image, header::CHECKSUM, sum);
    Ok(())
}

#[derive(Default)]
struct Strings {
    bytes: Vec<u8>,
    seen: HashMap<String, (u32, u32)>,
}

impl Strings {
    /// Appends `s` unless already there; returns its (offset, length). Offsets past
    /// `u32::MAX` are caught by the caller's size check on the whole area.
    fn add(&mut self, s: &str) -> (u32, u32) {
        if let Some(&r) = self.seen.get(s) {
            return r;
        }
        let r = (self.bytes.len() as u32, s.len() as u32);
        self.bytes.extend_from_slice(s.as_bytes());
        self.seen.insert(s.to_string(), r);
        r
    }
}

fn align(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// Appends `data` at the next 64-byte boundary, then its block sums at the next even
/// offset; returns both image offsets.
fn push_body(image: &mut Vec<u8>, data: &[u8]) -> (u64, u64) {
    let off = align(image.len(), format::BODY_ALIGN);
    image.resize(off, 0);
    image.extend_from_slice(data);
    let sums_off = align(image.len(), 2);
    image.resize(sums_off + 2 * Body::blocks_for(data.len()), 0);
    block_sums_into(data, &mut image[sums_off..]);
    (off as u64, sums_off as u64)
}

/// `data` gzip-compressed (best compression, mtime 0, so the output depends on `data`
/// alone).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = GzBuilder::new()
        .mtime(0)
        .write(Vec::with_capacity(data.len() / 2), Compression::best());
    // Writing to a Vec cannot fail.
    enc.write_all(data).expect("gzip into a Vec");
    enc.finish().expect("gzip into a Vec")
}

fn put32(buf: &mut [u8], range: Range<usize>, v: u32) {
    buf[range].copy_from_slice(&v.to_le_bytes());
}

fn put64(buf: &mut [u8], range: Range<usize>, v: u64) {
    buf[range].copy_from_slice(&v.to_le_bytes());
}
