//! The image writer's second half (std only): the string area, the layout of the areas,
//! and the writing of the tables, entries with their bodies, site and names tables (virtual
//! hosts) and the header with its checksum. [`super::build`] checks a spec and calls
//! these in order.

use std::collections::HashMap;
use std::io::Write;
use std::ops::Range;

use flate2::{Compression, GzBuilder};

use super::build::{find_file, invalid, BuildError, FileSpec, Item, RedirectSpec, Spec};
use super::build_sites::Sites;
use super::format::{self, entry, header};
use crate::resource::{block_sums_into, Body};

/// Where a string sits in the string area: (offset, length).
type StrRef = (u32, u32);

/// An entry's strings.
pub(super) struct Meta {
    path: StrRef,
    ctype: StrRef,
    etag: StrRef,
    headers: StrRef,
}

/// The string area, each distinct string once, and where every entry's, redirect's and
/// header field's strings sit in it.
pub(super) struct StringArea {
    pub(super) strings: Strings,
    /// One per item, in item order.
    pub(super) metas: Vec<Meta>,
    /// One per host name, in name order (virtual hosts).
    names: Vec<StrRef>,
    /// (from, to) of each redirect, in table order.
    redirects: Vec<(StrRef, StrRef)>,
    common: StrRef,
    stats_path: StrRef,
    server: StrRef,
}

impl StringArea {
    /// Adds every string the image holds; refuses an area past `u32` offsets.
    pub(super) fn gather(
        spec: &Spec,
        items: &[(&str, Item<'_>)],
        redirects: &[&RedirectSpec],
        names: &[(String, u32)],
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
        let names = names.iter().map(|(n, _)| strings.add(n)).collect();
        if strings.bytes.len() > u32::MAX as usize {
            return Err(BuildError::TooLarge {
                what: "string area",
                size: strings.bytes.len() as u64,
            });
        }
        Ok(StringArea {
            strings,
            metas,
            names,
            redirects,
            common,
            stats_path,
            server,
        })
    }
}

/// Where each area of the image starts, and how many records the tables hold.
pub(super) struct Layout {
    entries_off: usize,
    entry_count: usize,
    redirects_off: usize,
    redirect_count: usize,
    errors_off: usize,
    error_count: usize,
    sites_off: usize,
    names_off: usize,
    strings_off: usize,
    strings_len: usize,
    pub(super) data_off: usize,
}

impl Layout {
    /// Header, entries, redirects, error pages, sites, names and strings back to back;
    /// the data area from the next body boundary.
    pub(super) fn new(
        items: &[(&str, Item<'_>)],
        redirects: &[&RedirectSpec],
        errors: &[(u16, u32)],
        strings: &Strings,
        sites: &Sites<'_>,
    ) -> Self {
        let entries_off = format::HEADER_LEN;
        let redirects_off = entries_off + items.len() * format::ENTRY_LEN;
        let errors_off = redirects_off + redirects.len() * format::REDIRECT_LEN;
        let sites_off = errors_off + errors.len() * format::ERROR_LEN;
        let names_off = sites_off + sites.images.len() * format::SITE_LEN;
        let strings_off = names_off + sites.names.len() * format::NAME_LEN;
        let data_off = align(strings_off + strings.bytes.len(), format::BODY_ALIGN);
        Layout {
            entries_off,
            entry_count: items.len(),
            redirects_off,
            redirect_count: redirects.len(),
            errors_off,
            error_count: errors.len(),
            sites_off,
            names_off,
            strings_off,
            strings_len: strings.bytes.len(),
            data_off,
        }
    }
}

/// Writes the string area, the redirect table and the error-page table.
pub(super) fn write_tables(
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
pub(super) fn write_entries(
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

/// Appends each site's image to the data area (at a multiple of 64) and writes the site
/// and names tables (virtual hosts; nothing for an image that is one site).
pub(super) fn write_sites(
    image: &mut Vec<u8>,
    layout: &Layout,
    strings: &StringArea,
    sites: &Sites<'_>,
) {
    for (i, own) in sites.images.iter().enumerate() {
        let off = align(image.len(), format::BODY_ALIGN);
        image.resize(off, 0);
        image.extend_from_slice(own);
        let at = layout.sites_off + i * format::SITE_LEN;
        let rec = &mut image[at..at + format::SITE_LEN];
        put64(rec, format::site::IMAGE_OFF, off as u64);
        put64(rec, format::site::IMAGE_LEN, own.len() as u64);
    }
    for (i, ((_, site), name)) in sites.names.iter().zip(&strings.names).enumerate() {
        let at = layout.names_off + i * format::NAME_LEN;
        let rec = &mut image[at..at + format::NAME_LEN];
        put32(rec, format::name::NAME_OFF, name.0);
        put32(rec, format::name::NAME_LEN, name.1);
        put32(rec, format::name::SITE, *site);
    }
}

/// Writes the header (areas, counts, server-page switches, stats allow prefix, common
/// header lines, stats path, the site and names tables), its checksum last; refuses a
/// stats prefix over /32.
pub(super) fn write_header(
    image: &mut [u8],
    layout: &Layout,
    spec: &Spec,
    strings: &StringArea,
    redirects: &[&RedirectSpec],
    sites: &Sites<'_>,
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
    put32(image, header::FILE_COUNT, spec.files.len() as u32);
    let exact = redirects
        .iter()
        .filter(|r| r.kind() == format::REDIRECT_EXACT)
        .count();
    put32(image, header::EXACT_REDIRECTS, exact as u32);
    put32(image, header::SITE_COUNT, sites.images.len() as u32);
    put64(image, header::SITES_OFF, layout.sites_off as u64);
    put64(image, header::NAMES_OFF, layout.names_off as u64);
    put32(image, header::NAME_COUNT, sites.names.len() as u32);
    put32(image, header::DEFAULT_SITE, sites.default);
    let sum = format::image_checksum(image);
    put64(image, header::CHECKSUM, sum);
    Ok(())
}

#[derive(Default)]
pub(super) struct Strings {
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
