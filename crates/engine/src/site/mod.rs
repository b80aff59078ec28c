//! The site image: the whole web site as one immutable byte string, and the lookups the
//! HTTP layer makes in it.
//!
//! This module owns the image format (see [`format`](mod@format) and
//! `docs/design/site-image.md`), its checked loader ([`Site::load`]), path lookup ([`Site`]
//! implements [`Lookup`]) and, with the `std` feature, the builder that makes an image
//! from a directory (`build_from_dir`).
//!
//! Contract: [`Site::load`] checks every field of an untrusted image (magic, version,
//! lengths, every offset and length against its area, UTF-8 and header-safe strings, a
//! strictly sorted entry table, the checksum). Once it returned `Ok`, no method of
//! [`Site`] panics and every [`Body`] handed out is consistent. Loading and lookup
//! neither allocate nor need `std`.
//!
//! ```
//! use bareweb_engine::resource::{Found, Lookup};
//! use bareweb_engine::site::{LoadError, Site};
//!
//! assert!(matches!(Site::load(b"short"), Err(LoadError::TooShort { .. })));
//! assert!(matches!(Site::load(b"not a site image"), Err(LoadError::Magic(_))));
//! # #[cfg(feature = "std")] {
//! let files = [("/index.html".to_string(), b"<!doctype html>hi".to_vec(), 0)];
//! let image = bareweb_engine::site::build_from_files(&files).unwrap();
//! let site = Site::load(&image).unwrap();
//! let Found::Resource(r) = site.lookup(b"/") else { panic!() };
//! assert_eq!(r.identity.data, b"<!doctype html>hi");
//! assert_eq!(r.content_type, "text/html; charset=utf-8");
//! # }
//! ```

#[cfg(feature = "std")]
mod build;
#[cfg(feature = "std")]
mod build_sites;
#[cfg(feature = "std")]
mod build_write;
pub mod format;
mod hosts;
mod load;
mod load_display;
mod load_sites;
mod load_tables;

#[cfg(feature = "std")]
pub use build::{
    build, build_from_files, content_type, gzip, BuildError, FileSpec, RedirectSpec, Spec,
};
#[cfg(feature = "std")]
pub use build_sites::{build_sites, SiteImage};
pub use hosts::{cmp_name, host_name, is_site_name, NAME_MAX};
pub use load::{EntryError, Field, LoadError, Section};

use core::ops::Range;

use format::{entry, le_u32, le_u64};
use load::sub;

use crate::resource::{Body, Chosen, Found, Lookup, Redirect, Resource, BLOCK};

/// A loaded, validated site image. Cheap to copy: it only borrows the image.
///
/// An image with virtual hosts (a site table) is loaded as a whole; its own entries
/// answer no host, and [`Lookup::for_host`] hands out a view of the site a request's
/// `Host` names (or the default site), made from that site's checked header.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    image: &'a [u8],
    entries: &'a [u8],
    strings: &'a [u8],
    redirects: &'a [u8],
    errors: &'a [u8],
    count: usize,
    files: usize,
    /// Redirect records before this index are exact (sorted); the rest are prefixes.
    exact_redirects: usize,
    /// The site table (virtual hosts; empty for an image that is one site).
    sites: &'a [u8],
    /// The names table, sorted by name.
    names: &'a [u8],
    /// The default site's index, or [`format::NO_INDEX`].
    default: u32,
}

/// A two-bit switch of the image: unset (the platform decides), on, or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// Not set by the site: the platform's default.
    Default,
    /// On.
    On,
    /// Off.
    Off,
}

impl Switch {
    /// The switch's value, `default` when unset.
    pub fn or(self, default: bool) -> bool {
        match self {
            Switch::Default => default,
            Switch::On => true,
            Switch::Off => false,
        }
    }
}

/// What the site's configuration says about the server's own pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pages<'a> {
    /// The stats page and JSON.
    pub stats: Switch,
    /// `/metrics`.
    pub metrics: Switch,
    /// `/healthz`.
    pub healthz: Switch,
    /// Where the stats page lives (empty: the default, `/.well-known/bareweb`).
    pub stats_path: &'a str,
    /// Clients allowed the stats page, its JSON and the metrics: a network and prefix
    /// length (0: everyone); `None` when the configuration does not say (the platform's
    /// default).
    pub stats_allow: Option<([u8; 4], u8)>,
    /// The configured header lines for every path (sent with these pages too).
    pub headers: &'a str,
}

impl<'a> Site<'a> {
    /// Validates `image` and returns a view for lookups.
    ///
    /// # Fuzzing
    /// Under `cfg(fuzzing)` the image checksum is not checked, so the fuzzer reaches the
    /// structural checks.
    pub fn load(image: &'a [u8]) -> Result<Site<'a>, LoadError> {
        let c = load::check(image)?;
        let site = Site {
            image,
            entries: c.entries,
            strings: c.strings,
            redirects: c.redirects,
            errors: c.errors,
            count: c.count,
            files: c.files,
            exact_redirects: c.exact_redirects,
            sites: c.sites,
            names: c.names,
            default: le_u32(image, format::header::DEFAULT_SITE),
        };
        // Each site's rewrites are checked as below when its view is loaded.
        for i in 0..site.site_count() {
            if let Some(own) = site.site(i) {
                Site::load(own.image).map_err(|_| LoadError::Site {
                    index: i as u32,
                    why: "image refused (a site's image is checked as a whole image)",
                })?;
            }
        }
        // A rewrite serves a file of the site: its target must be one (so a rewrite
        // never answers 404 or chains to another).
        for i in site.exact_redirects..site.redirect_count() {
            let rewrite = matches!(
                site.kind_at(i),
                format::REWRITE_EXACT | format::REWRITE_PREFIX
            );
            if rewrite
                && !matches!(
                    site.find_path(site.redirect_at(i).1.as_bytes()),
                    Found::Resource(_)
                )
            {
                return Err(LoadError::Redirect {
                    index: i as u32,
                    why: "rewrite target is not a file of the site",
                });
            }
        }
        Ok(site)
    }

    /// A view of image `image`, which a [`Site::load`] of it (or of the image holding it)
    /// has checked: the areas from its header, no check repeated. A few reads, no
    /// allocation (made per request for a virtual host).
    fn view(image: &'a [u8]) -> Site<'a> {
        use format::header as h;
        let area = |off, count: u32, len: usize| {
            sub(image, le_u64(image, off), u64::from(count) * len as u64)
        };
        let count = le_u32(image, h::ENTRY_COUNT);
        Site {
            image,
            entries: area(h::ENTRIES_OFF, count, format::ENTRY_LEN),
            strings: sub(
                image,
                le_u64(image, h::STRINGS_OFF),
                le_u64(image, h::STRINGS_LEN),
            ),
            redirects: area(
                h::REDIRECTS_OFF,
                le_u32(image, h::REDIRECT_COUNT),
                format::REDIRECT_LEN,
            ),
            errors: area(
                h::ERRORS_OFF,
                le_u32(image, h::ERROR_COUNT),
                format::ERROR_LEN,
            ),
            count: count as usize,
            files: le_u32(image, h::FILE_COUNT) as usize,
            exact_redirects: le_u32(image, h::EXACT_REDIRECTS) as usize,
            sites: &[],
            names: &[],
            default: format::NO_INDEX,
        }
    }

    /// Number of sites of an image with virtual hosts (0: the image is one site).
    pub fn site_count(&self) -> usize {
        self.sites.len() / format::SITE_LEN
    }

    /// Site `i` of an image with virtual hosts.
    pub fn site(&self, i: usize) -> Option<Site<'a>> {
        let rec = self
            .sites
            .get(i.checked_mul(format::SITE_LEN)?..(i + 1).checked_mul(format::SITE_LEN)?)?;
        Some(Site::view(sub(
            self.image,
            le_u64(rec, format::site::IMAGE_OFF),
            le_u64(rec, format::site::IMAGE_LEN),
        )))
    }

    /// The index of the site answering unknown hosts, if any.
    pub fn default_site(&self) -> Option<usize> {
        (self.default != format::NO_INDEX).then_some(self.default as usize)
    }

    /// Every host name with the index of its site, in name order.
    pub fn names(&self) -> impl Iterator<Item = (&'a str, usize)> + 'a {
        let (names, strings) = (self.names, self.strings);
        names.chunks_exact(format::NAME_LEN).map(move |r| {
            let name = sub(
                strings,
                u64::from(le_u32(r, format::name::NAME_OFF)),
                u64::from(le_u32(r, format::name::NAME_LEN)),
            );
            (
                core::str::from_utf8(name).unwrap_or(""),
                le_u32(r, format::name::SITE) as usize,
            )
        })
    }

    /// The index of the site named `host` (a host name as [`host_name`] gives it), by
    /// binary search of the names table, ASCII case-insensitively.
    pub fn site_named(&self, host: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.names.len() / format::NAME_LEN);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let r = self
                .names
                .get(mid * format::NAME_LEN..(mid + 1) * format::NAME_LEN)
                .unwrap_or(&[]);
            let name = sub(
                self.strings,
                u64::from(le_u32(r, format::name::NAME_OFF)),
                u64::from(le_u32(r, format::name::NAME_LEN)),
            );
            match hosts::cmp_name(name, host) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return Some(le_u32(r, format::name::SITE) as usize),
            }
        }
        None
    }

    /// The site's settings for the server's own pages.
    pub fn pages(&self) -> Pages<'a> {
        let flags = le_u32(self.image, format::header::FLAGS);
        let switch = |at: u32| match (flags >> at) & 3 {
            format::SWITCH_ON => Switch::On,
            format::SWITCH_OFF => Switch::Off,
            _ => Switch::Default,
        };
        let mut net = [0u8; 4];
        net.copy_from_slice(
            self.image
                .get(format::header::STATS_ALLOW)
                .unwrap_or(&[0; 4]),
        );
        Pages {
            stats: switch(format::flags::STATS),
            metrics: switch(format::flags::METRICS),
            healthz: switch(format::flags::HEALTHZ),
            stats_path: self.header_string(
                format::header::STATS_PATH_OFF,
                format::header::STATS_PATH_LEN,
            ),
            stats_allow: {
                let len = le_u32(self.image, format::header::STATS_ALLOW_PREFIX) as u8;
                // Images from before the flag bit mark a set network by its prefix alone.
                let set = (flags >> format::flags::STATS_ALLOW_SET) & 1 == 1 || len > 0;
                set.then_some((net, len))
            },
            headers: self.common_headers(),
        }
    }

    fn header_string(&self, off: Range<usize>, len: Range<usize>) -> &'a str {
        let b = sub(
            self.strings,
            u64::from(le_u32(self.image, off)),
            u64::from(le_u32(self.image, len)),
        );
        core::str::from_utf8(b).unwrap_or("")
    }

    /// Number of configured redirects.
    pub fn redirect_count(&self) -> usize {
        self.redirects.len() / format::REDIRECT_LEN
    }

    /// The kind of rule `i` ([`format::REDIRECT_EXACT`] …).
    fn kind_at(&self, i: usize) -> u32 {
        let r = self
            .redirects
            .get(i * format::REDIRECT_LEN..(i + 1) * format::REDIRECT_LEN)
            .unwrap_or(&[]);
        le_u32(r, format::redirect::KIND)
    }

    /// The file served for `path` by a rewrite rule, when the site has nothing there:
    /// exact rules first, then prefixes (longest first as built). One pass over the
    /// rules and one lookup, no allocation.
    fn rewrite(&self, path: &[u8]) -> Found<'a> {
        let rules = self.exact_redirects..self.redirect_count();
        let hit = |kind: u32| {
            rules.clone().find_map(|i| {
                let (from, to, _) = self.redirect_at(i);
                let hit = match self.kind_at(i) {
                    k if k != kind => false,
                    format::REWRITE_EXACT => from == path,
                    _ => path.starts_with(from) || from.strip_suffix(b"/") == Some(path),
                };
                hit.then_some(to)
            })
        };
        match hit(format::REWRITE_EXACT).or_else(|| hit(format::REWRITE_PREFIX)) {
            Some(to) => self.find_path(to.as_bytes()),
            None => Found::NotFound,
        }
    }

    fn redirect_at(&self, i: usize) -> (&'a [u8], &'a str, u16) {
        let r = self
            .redirects
            .get(i * format::REDIRECT_LEN..(i + 1) * format::REDIRECT_LEN)
            .unwrap_or(&[]);
        let s = |off, len| {
            sub(
                self.strings,
                u64::from(le_u32(r, off)),
                u64::from(le_u32(r, len)),
            )
        };
        let to = core::str::from_utf8(s(format::redirect::TO_OFF, format::redirect::TO_LEN));
        (
            s(format::redirect::FROM_OFF, format::redirect::FROM_LEN),
            to.unwrap_or(""),
            le_u32(r, format::redirect::STATUS) as u16,
        )
    }

    /// Number of files (directories not counted; of every site, for an image with
    /// virtual hosts).
    pub fn len(&self) -> usize {
        self.files
    }

    /// Whether the site has no file at all.
    pub fn is_empty(&self) -> bool {
        self.files == 0
    }

    /// The whole image.
    pub fn bytes(&self) -> &'a [u8] {
        self.image
    }

    /// Every file with its path, in path byte order.
    pub fn iter_files(&self) -> impl Iterator<Item = (&'a str, Resource<'a>)> + 'a {
        let site = *self;
        (0..self.count).filter_map(move |i| {
            let raw = site.raw(i);
            if le_u32(raw, entry::KIND) != format::KIND_FILE {
                return None;
            }
            let path = core::str::from_utf8(site.path(raw)).ok()?;
            Some((path, site.resource(raw)?))
        })
    }

    /// The bytes of entry `i` (empty if out of range, which a lookup never asks for).
    fn raw(&self, i: usize) -> &'a [u8] {
        let start = i.saturating_mul(format::ENTRY_LEN);
        start
            .checked_add(format::ENTRY_LEN)
            .and_then(|e| self.entries.get(start..e))
            .unwrap_or(&[])
    }

    fn string(&self, raw: &[u8], off: Range<usize>, len: Range<usize>) -> &'a [u8] {
        sub(
            self.strings,
            u64::from(le_u32(raw, off)),
            u64::from(le_u32(raw, len)),
        )
    }

    fn path(&self, raw: &[u8]) -> &'a [u8] {
        self.string(raw, entry::PATH_OFF, entry::PATH_LEN)
    }

    fn body(&self, off: u64, len: u64, sums_off: u64) -> Body<'a> {
        Body {
            data: sub(self.image, off, len),
            block_sums: sub(self.image, sums_off, 2 * len.div_ceil(BLOCK as u64)),
        }
    }

    /// The resource of file entry `raw`; `None` only if the image were inconsistent,
    /// which `load` rules out.
    fn resource(&self, raw: &[u8]) -> Option<Resource<'a>> {
        let text = |off, len| core::str::from_utf8(self.string(raw, off, len)).ok();
        let variant = |off, len: Range<usize>, sums| {
            let l = le_u64(raw, len);
            (l != 0).then(|| self.body(le_u64(raw, off), l, le_u64(raw, sums)))
        };
        Some(Resource {
            content_type: text(entry::CTYPE_OFF, entry::CTYPE_LEN)?,
            etag: text(entry::ETAG_OFF, entry::ETAG_LEN)?,
            last_modified: le_u64(raw, entry::LAST_MODIFIED),
            identity: self.body(
                le_u64(raw, entry::BODY_OFF),
                le_u64(raw, entry::BODY_LEN),
                le_u64(raw, entry::SUMS_OFF),
            ),
            gzip: variant(entry::GZIP_OFF, entry::GZIP_LEN, entry::GZIP_SUMS_OFF),
            br: variant(entry::BR_OFF, entry::BR_LEN, entry::BR_SUMS_OFF),
            zstd: variant(entry::ZSTD_OFF, entry::ZSTD_LEN, entry::ZSTD_SUMS_OFF),
            headers: text(entry::HEADERS_OFF, entry::HEADERS_LEN)?,
        })
    }

    /// Binary search of the sorted table for an entry whose path is exactly `key`.
    fn find(&self, key: &[u8]) -> Option<&'a [u8]> {
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let raw = self.raw(mid);
            match self.path(raw).cmp(key) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return Some(raw),
            }
        }
        None
    }
}

impl<'a> Site<'a> {
    /// The site's own answer for `path`, rewrites aside (see [`Lookup::lookup`]).
    fn find_path(&self, path: &[u8]) -> Found<'a> {
        let found = match path {
            [b'/'] => self.find(b"/").map(|raw| (raw, true)),
            [b'/', .., b'/'] => {
                let dir = &path[..path.len() - 1];
                if dir.ends_with(b"/") {
                    None
                } else {
                    self.find(dir).map(|raw| (raw, true))
                }
            }
            [b'/', ..] => self.find(path).map(|raw| (raw, false)),
            _ => None,
        };
        let Some((raw, slash)) = found else {
            return Found::NotFound;
        };
        let file = match (le_u32(raw, entry::KIND), slash) {
            (format::KIND_FILE, false) => raw,
            (format::KIND_DIR, false) => return Found::AddSlash,
            (format::KIND_DIR, true) => match le_u32(raw, entry::INDEX) {
                // A directory with a listing carries it as its own body.
                format::NO_INDEX if le_u32(raw, entry::CTYPE_LEN) != 0 => raw,
                format::NO_INDEX => return Found::NotFound,
                i => self.raw(i as usize),
            },
            _ => return Found::NotFound,
        };
        match self.resource(file) {
            Some(r) => Found::Resource(r),
            None => Found::NotFound,
        }
    }
}

impl<'a> Site<'a> {
    /// [`Lookup::for_host`] for an image with sites: the site named, else the default.
    fn choose(&self, host: Option<&[u8]>) -> Chosen<Self> {
        let named = host.and_then(host_name).and_then(|h| self.site_named(h));
        match named.or(self.default_site()).and_then(|i| self.site(i)) {
            Some(site) => Chosen::Other(site),
            None => Chosen::Misdirected,
        }
    }
}

impl<'a> Lookup<'a> for Site<'a> {
    /// One site: this one. With virtual hosts: the site `host` names (port and a
    /// trailing dot aside, any case), else the default site, else none (421). No
    /// allocation: a normalised slice of the field, a binary search, a view.
    #[inline]
    fn for_host(&self, host: Option<&[u8]>) -> Chosen<Self> {
        if self.sites.is_empty() {
            return Chosen::This;
        }
        self.choose(host)
    }

    /// `/a/b` is a file, or a directory (answer [`Found::AddSlash`]); `/a/` is the
    /// index file of directory `/a` (`index.html` unless the site names others), or its
    /// listing when the site was built with listings, else not found; `/` is the root's.
    /// Where the site has nothing, a rewrite rule may name the file served instead.
    fn lookup(&self, path: &[u8]) -> Found<'a> {
        match self.find_path(path) {
            Found::NotFound => self.rewrite(path),
            found => found,
        }
    }

    /// Exact redirects by binary search, then patterns and prefixes in table order
    /// (patterns as written, then prefixes longest first, as built).
    fn redirect(&self, path: &[u8]) -> Option<Redirect<'a>> {
        let (mut lo, mut hi) = (0usize, self.exact_redirects);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (from, to, status) = self.redirect_at(mid);
            match from.cmp(path) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => {
                    return Some(Redirect {
                        status,
                        to,
                        matched: path.len(),
                        pattern: "",
                    })
                }
            }
        }
        (self.exact_redirects..self.redirect_count()).find_map(|i| {
            let (from, to, status) = self.redirect_at(i);
            match self.kind_at(i) {
                format::REDIRECT_PREFIX => path.starts_with(from).then_some(Redirect {
                    status,
                    to,
                    matched: from.len(),
                    pattern: "",
                }),
                format::REDIRECT_PATTERN => {
                    let matched = crate::resource::match_pattern(from, path)?;
                    Some(Redirect {
                        status,
                        to,
                        matched,
                        // Checked UTF-8 by the loader.
                        pattern: core::str::from_utf8(from).unwrap_or(""),
                    })
                }
                _ => None,
            }
        })
    }

    fn error_page(&self, status: u16) -> Option<Resource<'a>> {
        self.errors
            .chunks_exact(format::ERROR_LEN)
            .find(|r| le_u32(r, format::error_page::STATUS) == u32::from(status))
            .and_then(|r| self.resource(self.raw(le_u32(r, format::error_page::ENTRY) as usize)))
    }

    fn common_headers(&self) -> &'a str {
        self.header_string(
            format::header::COMMON_HEADERS_OFF,
            format::header::COMMON_HEADERS_LEN,
        )
    }

    fn server_name(&self) -> Option<&'a str> {
        let flags = le_u32(self.image, format::header::FLAGS);
        match (flags >> format::flags::SERVER) & 3 {
            format::SWITCH_ON => {
                Some(self.header_string(format::header::SERVER_OFF, format::header::SERVER_LEN))
            }
            format::SWITCH_OFF => Some(""),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
