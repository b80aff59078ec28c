//! The site image builder (std only): turns a directory, or a list of files, into image
//! bytes that [`super::Site::load`] accepts. Output depends only on the inputs (paths,
//! contents, modification times), so the same tree gives the same image.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

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

/// Whether a gzip variant is worth trying for this content type.
fn compressible(ctype: &str) -> bool {
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

/// Builds an image from the files under `dir`, which becomes the site root.
///
/// Each regular file is read once; its URL path is its path under `dir` with `/`
/// separators, its modification time becomes `Last-Modified`. Entries whose name starts
/// with `.` are skipped, and so are symbolic links (never followed, whether they point
/// inside `dir` or not) and special files. Directories holding no file get no entry.
pub fn build_from_dir(dir: &Path) -> Result<Vec<u8>, BuildError> {
    let mut files = Vec::new();
    walk(dir, "", &mut files)?;
    build_from_files(&files)
}

fn walk(dir: &Path, url: &str, out: &mut Vec<(String, Vec<u8>, u64)>) -> Result<(), BuildError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| BuildError::Io { path, error }
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
            .map_err(|_| BuildError::NotUtf8(path.clone()))?;
        if name.starts_with('.') {
            continue;
        }
        let meta = fs::symlink_metadata(&path).map_err(io(&path))?;
        let child_url = format!("{url}/{name}");
        if meta.file_type().is_dir() {
            walk(&path, &child_url, out)?;
        } else if meta.file_type().is_file() {
            let data = fs::read(&path).map_err(io(&path))?;
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs());
            out.push((child_url, data, mtime));
        }
        // Symlinks, sockets, FIFOs, devices: skipped.
    }
    Ok(())
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

enum Item<'f> {
    File { data: &'f [u8], mtime: u64 },
    Dir,
}

/// Builds an image from `(url path, contents, mtime in Unix seconds)` triples. Paths start
/// with `/` and have no empty, `.` or `..` segments; the directories they imply get
/// entries of their own.
pub fn build_from_files(files: &[(String, Vec<u8>, u64)]) -> Result<Vec<u8>, BuildError> {
    // Every path, sorted by bytes (String's order), with the directories files imply.
    let mut items: BTreeMap<&str, Item<'_>> = BTreeMap::new();
    items.insert("/", Item::Dir);
    for (path, data, mtime) in files {
        check_path(path)?;
        for (pos, _) in path.match_indices('/').skip(1) {
            let dir = &path[..pos];
            if let Item::File { .. } = items.entry(dir).or_insert(Item::Dir) {
                return Err(BuildError::FileAndDir(dir.to_string()));
            }
        }
        let item = Item::File {
            data,
            mtime: *mtime,
        };
        match items.insert(path, item) {
            None => {}
            Some(Item::File { .. }) => return Err(BuildError::Duplicate(path.clone())),
            Some(Item::Dir) => return Err(BuildError::FileAndDir(path.clone())),
        }
    }
    let items: Vec<(&str, Item<'_>)> = items.into_iter().collect();
    if items.len() >= format::NO_INDEX as usize {
        return Err(BuildError::TooLarge {
            what: "entry count",
            size: items.len() as u64,
        });
    }

    // String area, each distinct string once.
    let mut strings = Strings::default();
    struct Meta {
        path: (u32, u32),
        ctype: (u32, u32),
        etag: (u32, u32),
    }
    let mut metas = Vec::with_capacity(items.len());
    for (path, item) in &items {
        let path_ref = strings.add(path);
        let (ctype, etag) = match item {
            Item::File { data, .. } => (
                strings.add(content_type(path)),
                strings.add(&format!("\"{:016x}\"", format::fnv1a(data))),
            ),
            Item::Dir => ((0, 0), (0, 0)),
        };
        metas.push(Meta {
            path: path_ref,
            ctype,
            etag,
        });
    }
    if strings.bytes.len() > u32::MAX as usize {
        return Err(BuildError::TooLarge {
            what: "string area",
            size: strings.bytes.len() as u64,
        });
    }

    let entries_off = format::HEADER_LEN;
    let strings_off = entries_off + items.len() * format::ENTRY_LEN;
    let data_off = align(strings_off + strings.bytes.len(), format::BODY_ALIGN);
    let mut image = vec![0u8; data_off];
    image[strings_off..strings_off + strings.bytes.len()].copy_from_slice(&strings.bytes);

    // Data area and entries.
    for (i, ((path, item), meta)) in items.iter().zip(&metas).enumerate() {
        let at = entries_off + i * format::ENTRY_LEN;
        let mut e = [0u8; format::ENTRY_LEN];
        put32(&mut e, entry::PATH_OFF, meta.path.0);
        put32(&mut e, entry::PATH_LEN, meta.path.1);
        match item {
            Item::Dir => {
                put32(&mut e, entry::KIND, format::KIND_DIR);
                let dir = if *path == "/" { "" } else { path };
                let target = format!("{dir}/{}", format::INDEX_NAME);
                let index = items
                    .binary_search_by(|(p, _)| (*p).cmp(target.as_str()))
                    .ok()
                    .filter(|&i| matches!(items[i].1, Item::File { .. }))
                    .map_or(format::NO_INDEX, |i| i as u32);
                put32(&mut e, entry::INDEX, index);
            }
            Item::File { data, mtime } => {
                put32(&mut e, entry::KIND, format::KIND_FILE);
                put32(&mut e, entry::INDEX, format::NO_INDEX);
                put32(&mut e, entry::CTYPE_OFF, meta.ctype.0);
                put32(&mut e, entry::CTYPE_LEN, meta.ctype.1);
                put32(&mut e, entry::ETAG_OFF, meta.etag.0);
                put32(&mut e, entry::ETAG_LEN, meta.etag.1);
                put64(&mut e, entry::LAST_MODIFIED, *mtime);
                let (off, sums) = push_body(&mut image, data);
                put64(&mut e, entry::BODY_OFF, off);
                put64(&mut e, entry::BODY_LEN, data.len() as u64);
                put64(&mut e, entry::SUMS_OFF, sums);
                if compressible(content_type(path)) {
                    let gz = gzip(data);
                    if gz.len() < data.len() {
                        let (off, sums) = push_body(&mut image, &gz);
                        put64(&mut e, entry::GZIP_OFF, off);
                        put64(&mut e, entry::GZIP_LEN, gz.len() as u64);
                        put64(&mut e, entry::GZIP_SUMS_OFF, sums);
                    }
                }
            }
        }
        image[at..at + format::ENTRY_LEN].copy_from_slice(&e);
    }

    // Header, checksum last.
    let image_len = image.len() as u64;
    image[header::MAGIC].copy_from_slice(&format::MAGIC);
    put32(&mut image, header::VERSION, format::VERSION);
    put32(&mut image, header::HEADER_LEN, format::HEADER_LEN as u32);
    put64(&mut image, header::IMAGE_LEN, image_len);
    put32(&mut image, header::ENTRY_COUNT, items.len() as u32);
    put32(&mut image, header::ENTRY_LEN, format::ENTRY_LEN as u32);
    put64(&mut image, header::ENTRIES_OFF, entries_off as u64);
    put64(&mut image, header::STRINGS_OFF, strings_off as u64);
    put64(&mut image, header::STRINGS_LEN, strings.bytes.len() as u64);
    put64(&mut image, header::DATA_OFF, data_off as u64);
    put64(&mut image, header::DATA_LEN, image_len - data_off as u64);
    let sum = format::image_checksum(&image);
    put64(&mut image, header::CHECKSUM, sum);
    Ok(image)
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

fn gzip(data: &[u8]) -> Vec<u8> {
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
