//! The checked loader: validates every field of an untrusted site image once, so that
//! lookups afterwards need no checks that can fail (see [`super::Site::load`]).
//!
//! Order of the checks: header length, magic, version, header length field, image length,
//! checksum (skipped under `cfg(fuzzing)`), entry length, section layout, then each entry
//! in table order, then each directory's `index`. The first failure is returned.

use core::ops::Range;

use super::format::{self, entry, header, le_u32, le_u64};
use super::load_tables as tables;
use crate::resource::Body;

/// Why an image was refused. Every variant carries the offending value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadError {
    /// The image is shorter than a header.
    TooShort {
        /// Length of the image.
        len: usize,
    },
    /// The image does not begin with `BWSITE\0\0`.
    Magic([u8; 8]),
    /// A format version this loader does not read.
    Version(u32),
    /// The header length field does not match the version.
    HeaderLen(u32),
    /// The header's image length differs from the length of the bytes given.
    ImageLen {
        /// Length the header declares.
        declared: u64,
        /// Length of the bytes handed to the loader.
        actual: usize,
    },
    /// The image checksum does not match: the image is corrupt.
    Checksum {
        /// Checksum stored in the header.
        stored: u64,
        /// Checksum computed over the image.
        computed: u64,
    },
    /// The entry length field does not match the version.
    EntryLen(u32),
    /// A section does not lie where it must (after the previous one, inside the image).
    Section {
        /// Which section.
        section: Section,
        /// Its offset.
        offset: u64,
        /// Its length.
        len: u64,
        /// The lowest offset it may start at.
        min: u64,
        /// The offset it may not end past.
        max: u64,
    },
    /// The data area does not end the image.
    Trailing {
        /// Where the data area ends.
        data_end: u64,
        /// Length of the image.
        image_len: u64,
    },
    /// The data area does not start at a multiple of 64.
    DataMisaligned(u64),
    /// An entry of the table is invalid.
    Entry {
        /// Index of the entry in the table.
        index: u32,
        /// What is wrong with it.
        error: EntryError,
    },
    /// A redirect record is invalid.
    Redirect {
        /// Index of the record.
        index: u32,
        /// What is wrong with it.
        why: &'static str,
    },
    /// An error-page record is invalid.
    ErrorPage {
        /// Index of the record.
        index: u32,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A header field (flags, stats settings, common headers) is invalid.
    Settings(&'static str),
    /// A site record (virtual hosts) is invalid, or its image is refused.
    Site {
        /// Index of the record.
        index: u32,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A name record (virtual hosts) is invalid.
    Name {
        /// Index of the record.
        index: u32,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The sections of an image after the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The entry table.
    Entries,
    /// The redirect table.
    Redirects,
    /// The error-page table.
    Errors,
    /// The site table (virtual hosts).
    Sites,
    /// The names table (virtual hosts).
    Names,
    /// The string area.
    Strings,
    /// The data area (bodies and block sums).
    Data,
}

/// A field of an entry, named in an [`EntryError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The URL path.
    Path,
    /// The directory's `index.html` entry.
    Index,
    /// The content type.
    ContentType,
    /// The entity tag.
    Etag,
    /// The modification time.
    LastModified,
    /// The identity body.
    Body,
    /// The identity body's block sums.
    BodySums,
    /// The gzip body.
    Gzip,
    /// The gzip body's block sums.
    GzipSums,
    /// The brotli body.
    Br,
    /// The brotli body's block sums.
    BrSums,
    /// The zstd body.
    Zstd,
    /// The zstd body's block sums.
    ZstdSums,
    /// The configured header lines.
    Headers,
}

/// What is wrong with one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryError {
    /// A range does not lie inside the area it must lie in.
    OutOfBounds {
        /// The field.
        field: Field,
        /// Its offset (into the string area for strings, into the image otherwise).
        offset: u64,
        /// Its length.
        len: u64,
        /// Start of the area it must lie in.
        start: u64,
        /// End of that area.
        end: u64,
    },
    /// A body does not start at a multiple of 64.
    Misaligned {
        /// The field.
        field: Field,
        /// Its offset.
        offset: u64,
    },
    /// A string is not UTF-8.
    NotUtf8(Field),
    /// The path breaks a rule (the rule is named).
    BadPath(&'static str),
    /// A header string (content type, etag) is empty.
    Empty(Field),
    /// A header string holds a byte outside visible ASCII and space.
    BadText {
        /// The field.
        field: Field,
        /// The byte.
        byte: u8,
        /// Its position in the string.
        at: u32,
    },
    /// The path is not strictly greater than the previous entry's.
    NotSorted,
    /// Unknown kind.
    Kind(u32),
    /// A field that must be zero (or [`format::NO_INDEX`]) for this kind is not.
    Reserved {
        /// The field.
        field: Field,
        /// Its value.
        value: u64,
    },
    /// A directory's index does not name its `index.html` file entry.
    Index(u32),
    /// The gzip body does not begin with the gzip magic `1f 8b`.
    NotGzip([u8; 2]),
    /// The zstd body does not start with the zstd magic.
    NotZstd,
    /// The header lines are not `name: value` CRLF lines of header-safe bytes.
    BadHeaders,
}

impl core::error::Error for LoadError {}

/// The parts of a validated image the lookups use.
pub(super) struct Checked<'a> {
    pub entries: &'a [u8],
    pub strings: &'a [u8],
    pub redirects: &'a [u8],
    pub errors: &'a [u8],
    pub count: usize,
    pub files: usize,
    pub exact_redirects: usize,
    pub sites: &'a [u8],
    pub names: &'a [u8],
}

/// `a + b`, or `u64::MAX` (which fails every bounds check) on overflow.
pub(super) fn end(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

/// Whether `offset` is a multiple of [`format::BODY_ALIGN`].
fn aligned(offset: u64) -> bool {
    offset & (format::BODY_ALIGN as u64 - 1) == 0
}

/// Slices `bytes[off..off + len]` with values already checked to be in bounds, or an
/// empty slice should they not be.
pub(super) fn sub(bytes: &[u8], off: u64, len: u64) -> &[u8] {
    let (Ok(off), Ok(len)) = (usize::try_from(off), usize::try_from(len)) else {
        return &[];
    };
    off.checked_add(len)
        .and_then(|e| bytes.get(off..e))
        .unwrap_or(&[])
}

/// Validates `image`; see the module docs for the order.
pub(super) fn check(image: &[u8]) -> Result<Checked<'_>, LoadError> {
    // Magic and version first (on as few bytes as they need), so an image of another
    // version, whatever its header length, is named as such.
    if image.len() < header::VERSION.end {
        return Err(LoadError::TooShort { len: image.len() });
    }
    let mut magic = [0u8; 8];
    magic.copy_from_slice(&image[header::MAGIC]);
    if magic != format::MAGIC {
        return Err(LoadError::Magic(magic));
    }
    let version = le_u32(image, header::VERSION);
    if version != format::VERSION {
        return Err(LoadError::Version(version));
    }
    if image.len() < format::HEADER_LEN {
        return Err(LoadError::TooShort { len: image.len() });
    }
    let header_len = le_u32(image, header::HEADER_LEN);
    if header_len as usize != format::HEADER_LEN {
        return Err(LoadError::HeaderLen(header_len));
    }
    let image_len = le_u64(image, header::IMAGE_LEN);
    if usize::try_from(image_len) != Ok(image.len()) {
        return Err(LoadError::ImageLen {
            declared: image_len,
            actual: image.len(),
        });
    }
    let stored = le_u64(image, header::CHECKSUM);
    #[allow(unexpected_cfgs)]
    let skip_checksum = cfg!(fuzzing);
    if !skip_checksum {
        let computed = format::image_checksum(image);
        if stored != computed {
            return Err(LoadError::Checksum { stored, computed });
        }
    }
    let entry_len = le_u32(image, header::ENTRY_LEN);
    if entry_len as usize != format::ENTRY_LEN {
        return Err(LoadError::EntryLen(entry_len));
    }

    // Sections: header <= entries <= strings <= data, data ends the image.
    let count = le_u32(image, header::ENTRY_COUNT);
    let entries_off = le_u64(image, header::ENTRIES_OFF);
    let entries_len = u64::from(count) * format::ENTRY_LEN as u64; // < 2^40, no overflow
    let redirect_count = le_u32(image, header::REDIRECT_COUNT);
    let redirects_off = le_u64(image, header::REDIRECTS_OFF);
    let redirects_len = u64::from(redirect_count) * format::REDIRECT_LEN as u64;
    let error_count = le_u32(image, header::ERROR_COUNT);
    let errors_off = le_u64(image, header::ERRORS_OFF);
    let errors_len = u64::from(error_count) * format::ERROR_LEN as u64;
    let site_count = le_u32(image, header::SITE_COUNT);
    let sites_off = le_u64(image, header::SITES_OFF);
    let sites_len = u64::from(site_count) * format::SITE_LEN as u64;
    let name_count = le_u32(image, header::NAME_COUNT);
    let names_off = le_u64(image, header::NAMES_OFF);
    let names_len = u64::from(name_count) * format::NAME_LEN as u64;
    let strings_off = le_u64(image, header::STRINGS_OFF);
    let strings_len = le_u64(image, header::STRINGS_LEN);
    let data_off = le_u64(image, header::DATA_OFF);
    let data_len = le_u64(image, header::DATA_LEN);
    let mut min = format::HEADER_LEN as u64;
    for (section, offset, len) in [
        (Section::Entries, entries_off, entries_len),
        (Section::Redirects, redirects_off, redirects_len),
        (Section::Errors, errors_off, errors_len),
        (Section::Sites, sites_off, sites_len),
        (Section::Names, names_off, names_len),
        (Section::Strings, strings_off, strings_len),
        (Section::Data, data_off, data_len),
    ] {
        let e = end(offset, len);
        if offset < min || e > image_len {
            return Err(LoadError::Section {
                section,
                offset,
                len,
                min,
                max: image_len,
            });
        }
        min = e;
    }
    let data_end = end(data_off, data_len);
    if data_end != image_len {
        return Err(LoadError::Trailing {
            data_end,
            image_len,
        });
    }
    if !aligned(data_off) {
        return Err(LoadError::DataMisaligned(data_off));
    }

    let entries = sub(image, entries_off, entries_len);
    let strings = sub(image, strings_off, strings_len);
    let redirects = sub(image, redirects_off, redirects_len);
    let errors = sub(image, errors_off, errors_len);
    let sites = sub(image, sites_off, sites_len);
    let names = sub(image, names_off, names_len);
    let ctx = Ctx {
        image,
        strings,
        data: data_off..data_end,
    };
    let mut files = 0usize;
    let mut prev: Option<&[u8]> = None;
    for (i, raw) in entries.chunks_exact(format::ENTRY_LEN).enumerate() {
        let wrap = |error| LoadError::Entry {
            index: i as u32,
            error,
        };
        let path = ctx.check_entry(raw, prev).map_err(wrap)?;
        if le_u32(raw, entry::KIND) == format::KIND_FILE {
            files += 1;
        }
        prev = Some(path);
    }
    // Directory indexes, now that every entry's path is known to be valid.
    for (i, raw) in entries.chunks_exact(format::ENTRY_LEN).enumerate() {
        if le_u32(raw, entry::KIND) != format::KIND_DIR {
            continue;
        }
        let index = le_u32(raw, entry::INDEX);
        if index == format::NO_INDEX {
            continue;
        }
        let target = entries
            .chunks_exact(format::ENTRY_LEN)
            .nth(index as usize)
            .filter(|t| le_u32(t, entry::KIND) == format::KIND_FILE);
        let ok = target.is_some_and(|t| {
            let dir = ctx.string(raw, entry::PATH_OFF, entry::PATH_LEN);
            let file = ctx.string(t, entry::PATH_OFF, entry::PATH_LEN);
            is_child_of(dir, file)
        });
        if !ok {
            return Err(LoadError::Entry {
                index: i as u32,
                error: EntryError::Index(index),
            });
        }
    }
    let exact_redirects = tables::check_redirects(strings, redirects)?;
    tables::check_error_pages(entries, errors)?;
    tables::check_settings(image, strings)?;
    if le_u32(image, header::FILE_COUNT) as usize != files
        || le_u32(image, header::EXACT_REDIRECTS) as usize != exact_redirects
    {
        return Err(LoadError::Settings(
            "file or exact redirect count differs from the tables",
        ));
    }
    let files = files + super::load_sites::check(image, strings, data_off..data_end, sites, names)?;
    Ok(Checked {
        entries,
        strings,
        redirects,
        errors,
        count: count as usize,
        files,
        exact_redirects,
        sites,
        names,
    })
}

/// Whether `file` is a direct child of `dir` (`/x` for the root `/`).
pub(super) fn is_child_of(dir: &[u8], file: &[u8]) -> bool {
    let dir = if dir == b"/" { &[][..] } else { dir };
    file.len() > dir.len() + 1
        && file.starts_with(dir)
        && file[dir.len()] == b'/'
        && !file[dir.len() + 1..].contains(&b'/')
}

struct Ctx<'a> {
    image: &'a [u8],
    strings: &'a [u8],
    data: Range<u64>,
}

impl<'a> Ctx<'a> {
    /// The string at the offset/length fields of `raw`, unchecked (empty if out of bounds).
    fn string(&self, raw: &[u8], off: Range<usize>, len: Range<usize>) -> &'a [u8] {
        sub(
            self.strings,
            u64::from(le_u32(raw, off)),
            u64::from(le_u32(raw, len)),
        )
    }

    /// Checks a string reference into the string area and returns its bytes.
    fn checked_string(
        &self,
        raw: &[u8],
        field: Field,
        off: Range<usize>,
        len: Range<usize>,
    ) -> Result<&'a [u8], EntryError> {
        let offset = u64::from(le_u32(raw, off.clone()));
        let l = u64::from(le_u32(raw, len.clone()));
        let limit = self.strings.len() as u64;
        if end(offset, l) > limit {
            return Err(EntryError::OutOfBounds {
                field,
                offset,
                len: l,
                start: 0,
                end: limit,
            });
        }
        let s = self.string(raw, off, len);
        if core::str::from_utf8(s).is_err() {
            return Err(EntryError::NotUtf8(field));
        }
        Ok(s)
    }

    /// Checks a header value: non-empty, visible ASCII or space only (no CR/LF).
    fn header_text(
        &self,
        raw: &[u8],
        field: Field,
        off: Range<usize>,
        len: Range<usize>,
    ) -> Result<(), EntryError> {
        let s = self.checked_string(raw, field, off, len)?;
        if s.is_empty() {
            return Err(EntryError::Empty(field));
        }
        if let Some((at, &byte)) = s
            .iter()
            .enumerate()
            .find(|(_, b)| !(0x20..=0x7e).contains(*b))
        {
            return Err(EntryError::BadText {
                field,
                byte,
                at: at as u32,
            });
        }
        Ok(())
    }

    /// Checks a body and its block sums; returns the body bytes.
    fn body(
        &self,
        raw: &[u8],
        (body_field, off, len): (Field, Range<usize>, Range<usize>),
        (sums_field, sums_off): (Field, Range<usize>),
    ) -> Result<&'a [u8], EntryError> {
        let offset = le_u64(raw, off);
        let len = le_u64(raw, len);
        self.in_data(body_field, offset, len)?;
        if !aligned(offset) {
            return Err(EntryError::Misaligned {
                field: body_field,
                offset,
            });
        }
        let data = sub(self.image, offset, len);
        let sums_offset = le_u64(raw, sums_off);
        let sums_len = 2 * (len.div_ceil(crate::resource::BLOCK as u64));
        self.in_data(sums_field, sums_offset, sums_len)?;
        // Lengths are implied, so this holds by construction; it is the invariant lookups
        // rely on, so state it.
        debug_assert!(Body {
            data,
            block_sums: sub(self.image, sums_offset, sums_len),
        }
        .is_consistent());
        Ok(data)
    }

    fn in_data(&self, field: Field, offset: u64, len: u64) -> Result<(), EntryError> {
        if offset < self.data.start || end(offset, len) > self.data.end {
            return Err(EntryError::OutOfBounds {
                field,
                offset,
                len,
                start: self.data.start,
                end: self.data.end,
            });
        }
        Ok(())
    }

    /// Checks one entry; returns its path.
    fn check_entry(&self, raw: &[u8], prev: Option<&[u8]>) -> Result<&'a [u8], EntryError> {
        let path = self.checked_string(raw, Field::Path, entry::PATH_OFF, entry::PATH_LEN)?;
        match path {
            [] => return Err(EntryError::BadPath("empty")),
            [first, ..] if *first != b'/' => {
                return Err(EntryError::BadPath("does not start with '/'"))
            }
            [_, .., b'/'] => return Err(EntryError::BadPath("ends with '/'")),
            _ => {}
        }
        if prev.is_some_and(|p| p >= path) {
            return Err(EntryError::NotSorted);
        }
        match le_u32(raw, entry::KIND) {
            format::KIND_FILE => {
                let index = le_u32(raw, entry::INDEX);
                if index != format::NO_INDEX {
                    return Err(EntryError::Reserved {
                        field: Field::Index,
                        value: u64::from(index),
                    });
                }
                self.representation(raw)?;
            }
            format::KIND_DIR if le_u32(raw, entry::CTYPE_LEN) != 0 => {
                // A directory listing: the same fields as a file, and no index.
                let index = le_u32(raw, entry::INDEX);
                if index != format::NO_INDEX {
                    return Err(EntryError::Reserved {
                        field: Field::Index,
                        value: u64::from(index),
                    });
                }
                self.representation(raw)?;
            }
            format::KIND_DIR => {
                // Everything but path, kind and index must be zero.
                for (field, range) in [
                    (
                        Field::ContentType,
                        entry::CTYPE_OFF.start..entry::CTYPE_LEN.end,
                    ),
                    (Field::Etag, entry::ETAG_OFF.start..entry::ETAG_LEN.end),
                    (Field::LastModified, entry::LAST_MODIFIED),
                    (Field::Body, entry::BODY_OFF),
                    (Field::Body, entry::BODY_LEN),
                    (Field::BodySums, entry::SUMS_OFF),
                    (Field::Gzip, entry::GZIP_OFF),
                    (Field::Gzip, entry::GZIP_LEN),
                    (Field::GzipSums, entry::GZIP_SUMS_OFF),
                    (Field::Br, entry::BR_OFF),
                    (Field::Br, entry::BR_LEN),
                    (Field::BrSums, entry::BR_SUMS_OFF),
                    (Field::Zstd, entry::ZSTD_OFF),
                    (Field::Zstd, entry::ZSTD_LEN),
                    (Field::ZstdSums, entry::ZSTD_SUMS_OFF),
                    (
                        Field::Headers,
                        entry::HEADERS_OFF.start..entry::HEADERS_LEN.end,
                    ),
                ] {
                    zero(raw, field, range)?;
                }
            }
            kind => return Err(EntryError::Kind(kind)),
        }
        Ok(path)
    }
}

impl<'a> Ctx<'a> {
    /// Checks what a file (or a directory listing) carries: content type, entity tag,
    /// header lines, the identity body and the encoded variants.
    fn representation(&self, raw: &[u8]) -> Result<(), EntryError> {
        self.header_text(raw, Field::ContentType, entry::CTYPE_OFF, entry::CTYPE_LEN)?;
        self.header_text(raw, Field::Etag, entry::ETAG_OFF, entry::ETAG_LEN)?;
        let headers =
            self.checked_string(raw, Field::Headers, entry::HEADERS_OFF, entry::HEADERS_LEN)?;
        if !format::is_header_block(headers) {
            return Err(EntryError::BadHeaders);
        }
        self.body(
            raw,
            (Field::Body, entry::BODY_OFF, entry::BODY_LEN),
            (Field::BodySums, entry::SUMS_OFF),
        )?;
        let variants = [
            (
                Field::Gzip,
                Field::GzipSums,
                entry::GZIP_OFF,
                entry::GZIP_LEN,
                entry::GZIP_SUMS_OFF,
            ),
            (
                Field::Br,
                Field::BrSums,
                entry::BR_OFF,
                entry::BR_LEN,
                entry::BR_SUMS_OFF,
            ),
            (
                Field::Zstd,
                Field::ZstdSums,
                entry::ZSTD_OFF,
                entry::ZSTD_LEN,
                entry::ZSTD_SUMS_OFF,
            ),
        ];
        for (field, sums_field, off, len, sums) in variants {
            if le_u64(raw, len.clone()) == 0 {
                zero(raw, field, off)?;
                zero(raw, sums_field, sums)?;
                continue;
            }
            let data = self.body(raw, (field, off, len), (sums_field, sums))?;
            match field {
                Field::Gzip if !data.starts_with(&[0x1f, 0x8b]) => {
                    let first = [
                        data.first().copied().unwrap_or(0),
                        data.get(1).copied().unwrap_or(0),
                    ];
                    return Err(EntryError::NotGzip(first));
                }
                Field::Zstd if !data.starts_with(&format::ZSTD_MAGIC) => {
                    return Err(EntryError::NotZstd)
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Checks that the 8 bytes at `range` are zero.
fn zero(raw: &[u8], field: Field, range: Range<usize>) -> Result<(), EntryError> {
    let value = le_u64(raw, range);
    if value != 0 {
        return Err(EntryError::Reserved { field, value });
    }
    Ok(())
}
