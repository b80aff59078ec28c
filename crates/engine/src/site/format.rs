//! The site image layout: magic, version, field offsets and the image checksum. Shared by
//! the builder (which writes these fields) and the loader (which checks them). The format
//! is described for humans in `docs/design/site-image.md`; keep the two in step.
//!
//! All integers are little-endian. Offsets named `*_off` in the header and the body fields
//! of an entry are absolute byte offsets into the image; string offsets in an entry are
//! relative to the start of the string area.

use core::ops::Range;

/// The first eight bytes of every site image.
pub const MAGIC: [u8; 8] = *b"BWSITE\0\0";

/// The format version this code writes and reads (4: virtual hosts, a site table and a
/// names table; 3: the `Server` field's setting, rewrite and placeholder rules).
pub const VERSION: u32 = 4;

/// Length of the version-4 header in bytes.
pub const HEADER_LEN: usize = 176;

/// Length of one site record (virtual hosts) in bytes.
pub const SITE_LEN: usize = 16;

/// Length of one name record (virtual hosts) in bytes.
pub const NAME_LEN: usize = 16;

/// Length of one entry in bytes.
pub const ENTRY_LEN: usize = 144;

/// Length of one redirect record in bytes.
pub const REDIRECT_LEN: usize = 24;

/// Length of one error-page record in bytes.
pub const ERROR_LEN: usize = 8;

/// `kind` of a redirect matching the whole path.
pub const REDIRECT_EXACT: u32 = 1;

/// `kind` of a redirect matching a path prefix (the rest is appended to its target, or
/// put where it says `:splat`).
pub const REDIRECT_PREFIX: u32 = 2;

/// `kind` of a redirect whose `from` is a pattern: `:name` segments match one path
/// segment each, a final `*` the rest; its target's `:name`s (and `:splat`) are filled in.
pub const REDIRECT_PATTERN: u32 = 3;

/// `kind` of a rewrite of one path: when the site has nothing there, the file at `to` is
/// served (status 200, its own ETag, type and encodings). Its status field holds 200.
pub const REWRITE_EXACT: u32 = 4;

/// `kind` of a rewrite of every path under a prefix (the prefix without its `/` too).
pub const REWRITE_PREFIX: u32 = 5;

/// Redirect status codes a record may carry.
pub const REDIRECT_STATUSES: [u32; 5] = [301, 302, 303, 307, 308];

/// Two-bit switch values in the header's `flags` (see [`flags`]).
pub const SWITCH_DEFAULT: u32 = 0;
/// The switch is on.
pub const SWITCH_ON: u32 = 1;
/// The switch is off.
pub const SWITCH_OFF: u32 = 2;

/// Bit positions of the two-bit switches in the header's `flags`.
pub mod flags {
    /// The stats page and JSON (default on).
    pub const STATS: u32 = 0;
    /// `/metrics` in Prometheus text format (default: the platform's).
    pub const METRICS: u32 = 2;
    /// `/healthz` (default: the platform's).
    pub const HEALTHZ: u32 = 4;
    /// The `Server` field: default (the platform's name), on (the name in the header's
    /// `server` string), off (no `Server` field).
    pub const SERVER: u32 = 6;
    /// One bit: the stats allow network is set (`stats_allow`, `0.0.0.0/0` = everyone;
    /// without it a prefix of 0 means "not set": the platform's default).
    pub const STATS_ALLOW_SET: u32 = 8;
    /// Bits that must be zero.
    pub const RESERVED: u32 = !0b1_1111_1111;
}

/// Bodies start at image offsets that are multiples of this (and so does the data area).
pub const BODY_ALIGN: usize = 64;
const _: () = assert!(BODY_ALIGN.is_power_of_two());

/// `kind` of an entry that is a file.
pub const KIND_FILE: u32 = 1;

/// `kind` of an entry that is a directory.
pub const KIND_DIR: u32 = 2;

/// `index` value meaning "no entry": a file's `index`, or a directory without `index.html`.
pub const NO_INDEX: u32 = u32::MAX;

/// The file a directory path ending in `/` resolves to when the site names no other.
pub const INDEX_NAME: &str = "index.html";

/// Byte offsets of the header fields.
pub mod header {
    use super::Range;

    /// `[u8; 8]`, [`super::MAGIC`].
    pub const MAGIC: Range<usize> = 0..8;
    /// `u32`, the format version.
    pub const VERSION: Range<usize> = 8..12;
    /// `u32`, length of this header ([`super::HEADER_LEN`] for version 1).
    pub const HEADER_LEN: Range<usize> = 12..16;
    /// `u64`, length of the whole image.
    pub const IMAGE_LEN: Range<usize> = 16..24;
    /// `u64`, FNV-1a 64 of every image byte except this field.
    pub const CHECKSUM: Range<usize> = 24..32;
    /// `u32`, number of entries.
    pub const ENTRY_COUNT: Range<usize> = 32..36;
    /// `u32`, length of one entry ([`super::ENTRY_LEN`] for version 1).
    pub const ENTRY_LEN: Range<usize> = 36..40;
    /// `u64`, image offset of the entry table.
    pub const ENTRIES_OFF: Range<usize> = 40..48;
    /// `u64`, image offset of the string area.
    pub const STRINGS_OFF: Range<usize> = 48..56;
    /// `u64`, length of the string area.
    pub const STRINGS_LEN: Range<usize> = 56..64;
    /// `u64`, image offset of the data area (a multiple of [`super::BODY_ALIGN`]).
    pub const DATA_OFF: Range<usize> = 64..72;
    /// `u64`, length of the data area; it ends the image.
    pub const DATA_LEN: Range<usize> = 72..80;
    /// `u64`, image offset of the redirect table (after the entries).
    pub const REDIRECTS_OFF: Range<usize> = 80..88;
    /// `u32`, number of redirect records.
    pub const REDIRECT_COUNT: Range<usize> = 88..92;
    /// `u32`, number of error-page records.
    pub const ERROR_COUNT: Range<usize> = 92..96;
    /// `u64`, image offset of the error-page table (after the redirects).
    pub const ERRORS_OFF: Range<usize> = 96..104;
    /// `u32`, two-bit switches (see [`super::flags`]).
    pub const FLAGS: Range<usize> = 104..108;
    /// `[u8; 4]`, the network whose clients may read the stats JSON and metrics.
    pub const STATS_ALLOW: Range<usize> = 108..112;
    /// `u32`, its prefix length (0: everyone if [`super::flags::STATS_ALLOW_SET`], else
    /// not set).
    pub const STATS_ALLOW_PREFIX: Range<usize> = 112..116;
    /// `u32`, string offset of the header lines sent with every response that is not a
    /// file's (redirects, error pages).
    pub const COMMON_HEADERS_OFF: Range<usize> = 116..120;
    /// `u32`, their length.
    pub const COMMON_HEADERS_LEN: Range<usize> = 120..124;
    /// `u32`, string offset of the stats page's path (empty: the default).
    pub const STATS_PATH_OFF: Range<usize> = 124..128;
    /// `u32`, its length.
    pub const STATS_PATH_LEN: Range<usize> = 128..132;
    /// `u32`, string offset of the `Server` field's value when the `SERVER` switch is on.
    pub const SERVER_OFF: Range<usize> = 132..136;
    /// `u32`, its length (0 unless the switch is on).
    pub const SERVER_LEN: Range<usize> = 136..140;
    /// `u32`, number of file entries (so a view of a checked image needs no count).
    pub const FILE_COUNT: Range<usize> = 140..144;
    /// `u32`, number of exact redirect records (they come first in the table).
    pub const EXACT_REDIRECTS: Range<usize> = 144..148;
    /// `u32`, number of site records: 0 for an image that is one site; else the image
    /// carries the sites (each a whole image of its own in the data area) and its own
    /// entries answer no host.
    pub const SITE_COUNT: Range<usize> = 148..152;
    /// `u64`, image offset of the site table (after the error pages).
    pub const SITES_OFF: Range<usize> = 152..160;
    /// `u64`, image offset of the names table (after the site table).
    pub const NAMES_OFF: Range<usize> = 160..168;
    /// `u32`, number of name records.
    pub const NAME_COUNT: Range<usize> = 168..172;
    /// `u32`, index of the site answering unknown hosts, or [`super::NO_INDEX`] (then
    /// they get 421 Misdirected Request).
    pub const DEFAULT_SITE: Range<usize> = 172..176;
}

/// Byte offsets of the fields of a site record.
pub mod site {
    use super::Range;

    /// `u64`, image offset of the site's own image (in the data area, 64-aligned).
    pub const IMAGE_OFF: Range<usize> = 0..8;
    /// `u64`, its length.
    pub const IMAGE_LEN: Range<usize> = 8..16;
}

/// Byte offsets of the fields of a name record (sorted strictly by name bytes).
pub mod name {
    use super::Range;

    /// `u32`, string offset of the host name (lowercase, no port, no trailing dot).
    pub const NAME_OFF: Range<usize> = 0..4;
    /// `u32`, its length.
    pub const NAME_LEN: Range<usize> = 4..8;
    /// `u32`, index of the site it names.
    pub const SITE: Range<usize> = 8..12;
    /// `u32`, must be zero.
    pub const RESERVED: Range<usize> = 12..16;
}

/// Byte offsets of the fields of a redirect record (rewrites have the same records).
pub mod redirect {
    use super::Range;

    /// `u32`, string offset of the path (or path prefix) matched.
    pub const FROM_OFF: Range<usize> = 0..4;
    /// `u32`, its length.
    pub const FROM_LEN: Range<usize> = 4..8;
    /// `u32`, string offset of the `Location` value.
    pub const TO_OFF: Range<usize> = 8..12;
    /// `u32`, its length.
    pub const TO_LEN: Range<usize> = 12..16;
    /// `u32`, the status code (one of [`super::REDIRECT_STATUSES`]; 200 for a rewrite).
    pub const STATUS: Range<usize> = 16..20;
    /// `u32`, [`super::REDIRECT_EXACT`], [`super::REDIRECT_PREFIX`],
    /// [`super::REDIRECT_PATTERN`], [`super::REWRITE_EXACT`] or [`super::REWRITE_PREFIX`].
    pub const KIND: Range<usize> = 20..24;
}

/// Byte offsets of the fields of an error-page record.
pub mod error_page {
    use super::Range;

    /// `u32`, the status code (400 to 599).
    pub const STATUS: Range<usize> = 0..4;
    /// `u32`, the entry index of the file sent as its body.
    pub const ENTRY: Range<usize> = 4..8;
}

/// Byte offsets of the fields of one entry, relative to the entry's start.
pub mod entry {
    use super::Range;

    /// `u32`, offset of the path in the string area.
    pub const PATH_OFF: Range<usize> = 0..4;
    /// `u32`, length of the path.
    pub const PATH_LEN: Range<usize> = 4..8;
    /// `u32`, [`super::KIND_FILE`] or [`super::KIND_DIR`].
    pub const KIND: Range<usize> = 8..12;
    /// `u32`, for a directory the entry index of its `index.html`, else [`super::NO_INDEX`].
    pub const INDEX: Range<usize> = 12..16;
    /// `u32`, offset of the content type in the string area.
    pub const CTYPE_OFF: Range<usize> = 16..20;
    /// `u32`, length of the content type.
    pub const CTYPE_LEN: Range<usize> = 20..24;
    /// `u32`, offset of the entity tag in the string area.
    pub const ETAG_OFF: Range<usize> = 24..28;
    /// `u32`, length of the entity tag.
    pub const ETAG_LEN: Range<usize> = 28..32;
    /// `u64`, last modification time in seconds since the Unix epoch.
    pub const LAST_MODIFIED: Range<usize> = 32..40;
    /// `u64`, image offset of the identity body.
    pub const BODY_OFF: Range<usize> = 40..48;
    /// `u64`, length of the identity body.
    pub const BODY_LEN: Range<usize> = 48..56;
    /// `u64`, image offset of the identity body's block sums.
    pub const SUMS_OFF: Range<usize> = 56..64;
    /// `u64`, image offset of the gzip body (0 when there is none).
    pub const GZIP_OFF: Range<usize> = 64..72;
    /// `u64`, length of the gzip body (0 when there is none).
    pub const GZIP_LEN: Range<usize> = 72..80;
    /// `u64`, image offset of the gzip body's block sums (0 when there is none).
    pub const GZIP_SUMS_OFF: Range<usize> = 80..88;
    /// `u64`, image offset of the brotli body (0 when there is none).
    pub const BR_OFF: Range<usize> = 88..96;
    /// `u64`, length of the brotli body (0 when there is none).
    pub const BR_LEN: Range<usize> = 96..104;
    /// `u64`, image offset of the brotli body's block sums (0 when there is none).
    pub const BR_SUMS_OFF: Range<usize> = 104..112;
    /// `u64`, image offset of the zstd body (0 when there is none).
    pub const ZSTD_OFF: Range<usize> = 112..120;
    /// `u64`, length of the zstd body (0 when there is none).
    pub const ZSTD_LEN: Range<usize> = 120..128;
    /// `u64`, image offset of the zstd body's block sums (0 when there is none).
    pub const ZSTD_SUMS_OFF: Range<usize> = 128..136;
    /// `u32`, string offset of the header lines sent with this file (`Name: value` CRLF
    /// each, from the site's configuration).
    pub const HEADERS_OFF: Range<usize> = 136..140;
    /// `u32`, their length (0: none).
    pub const HEADERS_LEN: Range<usize> = 140..144;
}

/// Most bytes of header lines a file may carry, so its head always fits
/// [`crate::http::HEAD_MAX`] (the fields bareweb writes itself take under 400).
pub const MAX_FILE_HEADERS: usize = 512;

/// Most bytes of common header lines (a redirect's head also holds its `Location` and a
/// small page).
pub const MAX_COMMON_HEADERS: usize = 384;

/// The magic number a zstd frame starts with.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether `block` is a sequence of header lines, each `name: value` CRLF with a token
/// name and a value of visible ASCII, SP or HTAB (so it cannot break the message framing).
pub fn is_header_block(block: &[u8]) -> bool {
    let mut rest = block;
    while !rest.is_empty() {
        let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
            return false;
        };
        let line = &rest[..end];
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return false;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || !name.iter().all(|&b| crate::resource::is_tchar(b)) {
            return false;
        }
        if !value
            .iter()
            .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
        {
            return false;
        }
        rest = &rest[end + 2..];
    }
    true
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Continues an FNV-1a 64 hash over `data`.
pub fn fnv1a_update(mut hash: u64, data: &[u8]) -> u64 {
    for &b in data {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// FNV-1a 64 of `data`.
pub fn fnv1a(data: &[u8]) -> u64 {
    fnv1a_update(FNV_OFFSET, data)
}

/// The image checksum: FNV-1a 64 over every byte of `image` except the checksum field.
/// `image` must be at least [`HEADER_LEN`] bytes long (otherwise the hash covers what is
/// there).
pub fn image_checksum(image: &[u8]) -> u64 {
    let head = image.get(..header::CHECKSUM.start).unwrap_or(image);
    let tail = image.get(header::CHECKSUM.end..).unwrap_or(&[]);
    fnv1a_update(fnv1a(head), tail)
}

/// Reads a little-endian `u32` at `range` (4 bytes); 0 if out of bounds.
pub fn le_u32(bytes: &[u8], range: Range<usize>) -> u32 {
    match bytes.get(range) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// Reads a little-endian `u64` at `range` (8 bytes); 0 if out of bounds.
pub fn le_u64(bytes: &[u8], range: Range<usize>) -> u64 {
    match bytes.get(range) {
        Some(s) if s.len() == 8 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(s);
            u64::from_le_bytes(b)
        }
        _ => 0,
    }
}
