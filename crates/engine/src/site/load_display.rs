//! How the loader's errors print (`entry 3 body out of bounds (offset 123, len 456,
//! allowed 128..789)`): the bad value and where it is.

use core::fmt;

use super::format;
use super::load::{EntryError, Field, LoadError, Section};

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Section::Entries => "entry table",
            Section::Strings => "string area",
            Section::Data => "data area",
            Section::Redirects => "redirect table",
            Section::Errors => "error-page table",
            Section::Sites => "site table",
            Section::Names => "names table",
        })
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Path => "path",
            Field::Index => "index",
            Field::ContentType => "content type",
            Field::Etag => "etag",
            Field::LastModified => "last-modified",
            Field::Body => "body",
            Field::BodySums => "body block sums",
            Field::Gzip => "gzip body",
            Field::GzipSums => "gzip block sums",
            Field::Br => "brotli body",
            Field::BrSums => "brotli block sums",
            Field::Zstd => "zstd body",
            Field::ZstdSums => "zstd block sums",
            Field::Headers => "header lines",
        })
    }
}

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EntryError::OutOfBounds {
                field,
                offset,
                len,
                start,
                end,
            } => write!(
                f,
                "{field} out of bounds (offset {offset}, len {len}, allowed {start}..{end})"
            ),
            EntryError::Misaligned { field, offset } => {
                write!(
                    f,
                    "{field} misaligned (offset {offset}, not a multiple of 64)"
                )
            }
            EntryError::NotUtf8(field) => write!(f, "{field} is not UTF-8"),
            EntryError::BadPath(rule) => write!(f, "bad path: {rule}"),
            EntryError::Empty(field) => write!(f, "{field} is empty"),
            EntryError::BadText { field, byte, at } => {
                write!(f, "{field} has byte {byte:#04x} at {at}")
            }
            EntryError::NotSorted => f.write_str("path not greater than the previous entry's"),
            EntryError::Kind(kind) => write!(f, "unknown kind {kind}"),
            EntryError::Reserved { field, value } => {
                write!(f, "{field} must be unset for this kind but is {value}")
            }
            EntryError::Index(index) => {
                write!(f, "index {index} does not name this directory's index.html")
            }
            EntryError::NotZstd => f.write_str("zstd body does not start with 28 b5 2f fd"),
            EntryError::BadHeaders => f.write_str("header lines are not name: value CRLF lines"),
            EntryError::NotGzip([a, b]) => {
                write!(f, "gzip body starts with {a:02x} {b:02x}, not 1f 8b")
            }
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LoadError::TooShort { len } => write!(
                f,
                "image too short ({len} bytes, header needs {})",
                format::HEADER_LEN
            ),
            LoadError::Magic(m) => write!(f, "not a site image (magic {m:02x?})"),
            LoadError::Version(v) if (1..format::VERSION).contains(&v) => write!(
                f,
                "site image format version {v}, made by an older bareweb; this one reads \
                 version {}: rebuild the image with this bareweb (bareweb build)",
                format::VERSION
            ),
            LoadError::Version(v) => write!(
                f,
                "site image format version {v}, which this bareweb does not know (it reads \
                 version {}): serve it with the bareweb that built it, or rebuild it with \
                 this one",
                format::VERSION
            ),
            LoadError::HeaderLen(l) => write!(
                f,
                "header length {l}, version {} needs {}",
                format::VERSION,
                format::HEADER_LEN
            ),
            LoadError::ImageLen { declared, actual } => {
                write!(f, "header says {declared} bytes, image has {actual}")
            }
            LoadError::Checksum { stored, computed } => {
                write!(
                    f,
                    "checksum mismatch (stored {stored:016x}, computed {computed:016x})"
                )
            }
            LoadError::EntryLen(l) => write!(
                f,
                "entry length {l}, version {} needs {}",
                format::VERSION,
                format::ENTRY_LEN
            ),
            LoadError::Section {
                section,
                offset,
                len,
                min,
                max,
            } => write!(
                f,
                "{section} out of place (offset {offset}, len {len}, allowed {min}..{max})"
            ),
            LoadError::Trailing {
                data_end,
                image_len,
            } => write!(
                f,
                "data area ends at {data_end}, not at the image end {image_len}"
            ),
            LoadError::DataMisaligned(off) => {
                write!(f, "data area at {off}, not a multiple of 64")
            }
            LoadError::Entry { index, error } => write!(f, "entry {index} {error}"),
            LoadError::Redirect { index, why } => write!(f, "redirect {index}: {why}"),
            LoadError::ErrorPage { index, why } => write!(f, "error page {index}: {why}"),
            LoadError::Settings(why) => write!(f, "site settings: {why}"),
            LoadError::Site { index, why } => write!(f, "site {index}: {why}"),
            LoadError::Name { index, why } => write!(f, "host name {index}: {why}"),
        }
    }
}
