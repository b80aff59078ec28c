//! What the site gives the HTTP layer: a resource's metadata and its bodies, all borrowed
//! from the site image, plus stored checksums so a TCP segment of a body costs a few
//! additions instead of a pass over its bytes.
//!
//! This module owns the *block sum* scheme: a body is cut into [`BLOCK`]-byte blocks (the
//! last may be short) and the image stores the folded one's-complement sum of each block
//! as a big-endian `u16`. The sum of any byte range is then the stored sums of the whole
//! blocks inside it plus the bytes of at most two partial blocks, summed on the spot.
//!
//! It also owns the characters a header field's name is made of (RFC 9110's `tchar`,
//! [`is_tchar`]): the site checks the header lines it stores with them, the HTTP layer
//! the requests it parses.

use crate::wire::checksum;

/// Size of a checksum block in bytes. Even, so block sums combine without byte swaps.
pub const BLOCK: usize = 64;

/// A body held in the site image, with its per-block sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Body<'a> {
    /// The bytes that go on the wire.
    pub data: &'a [u8],
    /// `ceil(data.len() / BLOCK)` big-endian folded sums, one per block.
    pub block_sums: &'a [u8],
}

impl<'a> Body<'a> {
    /// Number of block sums a body of `len` bytes needs.
    pub const fn blocks_for(len: usize) -> usize {
        len.div_ceil(BLOCK)
    }

    /// Whether `block_sums` has the right length for `data` (the loader checks this; a
    /// body that fails it is never handed out).
    pub fn is_consistent(&self) -> bool {
        self.block_sums.len() == 2 * Self::blocks_for(self.data.len())
    }

    /// Folded one's-complement sum of `data[start..end]`, as if those bytes began at an even
    /// offset. Ranges outside the body are clamped to it.
    pub fn sum(&self, start: usize, end: usize) -> u16 {
        let end = end.min(self.data.len());
        let start = start.min(end);
        if !self.is_consistent() {
            return checksum::sum(&self.data[start..end]);
        }
        let first_full = start.div_ceil(BLOCK);
        let last_full = end / BLOCK; // blocks [first_full, last_full) lie wholly inside
        if first_full >= last_full {
            return checksum::sum(&self.data[start..end]);
        }
        let head_end = first_full * BLOCK;
        let mut acc = checksum::accumulate(0, &self.data[start..head_end]);
        // Blocks begin at even offsets from `start` only when the head is even-length.
        // The stored sums are big-endian words: their own one's-complement sum is the
        // blocks' sum (the whole-block bytes are never read).
        let blocks = checksum::sum(&self.block_sums[2 * first_full..2 * last_full]);
        let head_len = head_end - start;
        acc += u64::from(if head_len % 2 == 1 {
            blocks.swap_bytes()
        } else {
            blocks
        });
        let tail_start = last_full * BLOCK;
        let tail = checksum::sum(&self.data[tail_start..end]);
        let tail_off = tail_start - start;
        acc += u64::from(if tail_off % 2 == 1 {
            tail.swap_bytes()
        } else {
            tail
        });
        checksum::fold(acc)
    }
}

/// Computes the block sums of `data` into `out` (`2 * Body::blocks_for(data.len())` bytes).
/// Used by the site builder and by tests.
pub fn block_sums_into(data: &[u8], out: &mut [u8]) {
    for (block, dst) in data.chunks(BLOCK).zip(out.chunks_exact_mut(2)) {
        dst.copy_from_slice(&checksum::sum(block).to_be_bytes());
    }
}

/// `tchar` of RFC 9110 5.6.2 (one table load per byte: the request line's method and
/// every field name are scanned with it).
#[inline]
pub fn is_tchar(b: u8) -> bool {
    TCHAR[usize::from(b)]
}

/// `tchar` of RFC 9110 5.6.2, by the grammar.
const fn tchar_rule(b: u8) -> bool {
    matches!(b,
        b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`'
        | b'|' | b'~' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
}

/// [`tchar_rule`] of every byte.
static TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = tchar_rule(i as u8);
        i += 1;
    }
    t
};

/// A file of the site as the HTTP layer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource<'a> {
    /// `Content-Type` value, e.g. `text/html; charset=utf-8`.
    pub content_type: &'a str,
    /// Strong entity tag including its quotes, e.g. `"5f3a-1c2b"`.
    pub etag: &'a str,
    /// Last modification time, seconds since the Unix epoch.
    pub last_modified: u64,
    /// The body as stored on disk.
    pub identity: Body<'a>,
    /// A gzip-encoded body, present when it is smaller than the identity body.
    pub gzip: Option<Body<'a>>,
    /// A brotli-encoded body, present when it is smaller than the identity body.
    pub br: Option<Body<'a>>,
    /// A zstd-encoded body, present when it is smaller than the identity body.
    pub zstd: Option<Body<'a>>,
    /// Header lines sent with this file (`Name: value` CRLF each), resolved from the
    /// site's configuration when the image was built; empty for none.
    pub headers: &'a str,
}

impl<'a> Resource<'a> {
    /// A resource with only an identity body and no configured headers.
    pub const fn plain(
        content_type: &'a str,
        etag: &'a str,
        last_modified: u64,
        identity: Body<'a>,
    ) -> Resource<'a> {
        Resource {
            content_type,
            etag,
            last_modified,
            identity,
            gzip: None,
            br: None,
            zstd: None,
            headers: "",
        }
    }
}

/// A configured redirect that matched a request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Redirect<'a> {
    /// 301, 302, 303, 307 or 308.
    pub status: u16,
    /// The start of the `Location` value.
    pub to: &'a str,
    /// How many leading bytes of the path matched: the rest of the path follows `to`, or
    /// goes where `to` says `:splat` (all of it matched for an exact redirect).
    pub matched: usize,
    /// For a rule with placeholders, its `from` pattern (`/blog/:slug`): each `:name` of
    /// `to` takes the path segment at that place. Empty for other rules.
    pub pattern: &'a str,
}

/// Whether `b` may be part of a placeholder's name (`:slug`, `:year_2`).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The placeholder at the start of `s` (which starts after a `:`): its name, if `s` starts
/// with a letter or `_` (so `https://` and `:8080` are no placeholders).
pub fn placeholder(s: &[u8]) -> Option<&[u8]> {
    let first = *s.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let n = s.iter().position(|&b| !is_name_byte(b)).unwrap_or(s.len());
    Some(&s[..n])
}

/// Matches `path` against a pattern of `/`-separated segments, each literal, `:name`
/// (one non-empty segment) or, last, `*` (the rest, possibly empty). Returns where the
/// rest starts in `path` (`path.len()` without a `*`). Time linear in the two lengths,
/// no allocation.
pub fn match_pattern(pattern: &[u8], path: &[u8]) -> Option<usize> {
    let (pattern, path) = (pattern.strip_prefix(b"/")?, path.strip_prefix(b"/")?);
    let mut at = 1; // where the current path segment starts in the full path
    let mut segs = path.split(|&b| b == b'/');
    let mut pats = pattern.split(|&b| b == b'/').peekable();
    while let Some(p) = pats.next() {
        if p == b"*" && pats.peek().is_none() {
            return Some(at.min(path.len() + 1));
        }
        let seg = segs.next()?;
        let ok = match p.strip_prefix(b":") {
            Some(name) if placeholder(name) == Some(name) => !seg.is_empty(),
            _ => p == seg,
        };
        if !ok {
            return None;
        }
        at += seg.len() + 1;
    }
    segs.next().is_none().then_some(path.len() + 1)
}

/// The path segment of `path` at the place where `pattern` says `:name`.
fn captured<'p>(pattern: &[u8], path: &'p [u8], name: &[u8]) -> Option<&'p [u8]> {
    let k = pattern
        .split(|&b| b == b'/')
        .position(|p| p.strip_prefix(b":") == Some(name))?;
    path.split(|&b| b == b'/').nth(k)
}

impl Redirect<'_> {
    /// The `Location` of this redirect for request `path`, piece by piece: `emit(bytes,
    /// from_path)`, where pieces from the request's path (`from_path`) still need
    /// percent-encoding and the rest is the configured target as written. Without
    /// placeholders: `to`, then the unmatched rest of the path.
    pub fn location(&self, path: &[u8], mut emit: impl FnMut(&[u8], bool)) {
        let to = self.to.as_bytes();
        let rest = path.get(self.matched..).unwrap_or_default();
        let has_splat = to.windows(6).any(|w| w == b":splat");
        if self.pattern.is_empty() && !has_splat {
            emit(to, false);
            emit(rest, true);
            return;
        }
        let mut run = 0;
        let mut i = 0;
        while i < to.len() {
            let name = (to[i] == b':').then(|| placeholder(&to[i + 1..])).flatten();
            let Some(name) = name else {
                i += 1;
                continue;
            };
            let value = if name == b"splat" {
                Some(rest)
            } else {
                captured(self.pattern.as_bytes(), path, name)
            };
            if let Some(v) = value {
                emit(&to[run..i], false);
                emit(v, true);
                run = i + 1 + name.len();
            }
            i += 1 + name.len();
        }
        emit(&to[run..], false);
    }
}

/// The answer of a site lookup for a normalised path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found<'a> {
    /// A file (for a directory path ending in `/`, its `index.html`).
    Resource(Resource<'a>),
    /// The path names a directory but lacks the trailing slash: answer 301 to `path/`.
    AddSlash,
    /// Nothing there.
    NotFound,
}

/// Which site answers a request ([`Lookup::for_host`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chosen<L> {
    /// The site asked.
    This,
    /// Another site (a virtual host) of the same kind.
    Other(L),
    /// No site answers this host: 421 Misdirected Request (RFC 9110 15.5.20), but for
    /// the server's own pages, which the site asked still answers.
    Misdirected,
}

/// Anything that can resolve a normalised path (starts with `/`, no `.`/`..` segments,
/// percent-decoded) to a resource. Implemented by the site image. A wrapper around another
/// `Lookup` must forward every method, not only `lookup` (the defaults answer "none").
pub trait Lookup<'a> {
    /// The site that answers a request whose `Host` field is `host` (`None`: none, as in
    /// HTTP/1.0): this one (the default, for a server of one site), another (virtual
    /// hosts), or none (421 Misdirected Request; the server's own pages still answer).
    /// Called once per request, before the other methods, which are then asked of the
    /// site chosen.
    fn for_host(&self, _host: Option<&[u8]>) -> Chosen<Self>
    where
        Self: Sized,
    {
        Chosen::This
    }

    /// Resolves `path`.
    fn lookup(&self, path: &[u8]) -> Found<'a>;

    /// A configured redirect for `path`, checked before the lookup.
    fn redirect(&self, _path: &[u8]) -> Option<Redirect<'a>> {
        None
    }

    /// The file sent as the body of an error response with `status`, if the site has one.
    fn error_page(&self, _status: u16) -> Option<Resource<'a>> {
        None
    }

    /// Header lines (`Name: value` CRLF each) for responses that are not a file's:
    /// redirects and error pages.
    fn common_headers(&self) -> &'a str {
        ""
    }

    /// The `Server` field the site asks for: `None` the platform's (`bareweb`), `Some("")`
    /// none at all, else that value.
    fn server_name(&self) -> Option<&'a str> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tchar_table_is_the_rule() {
        for b in 0..=255u8 {
            assert_eq!(is_tchar(b), tchar_rule(b), "{b:#x}");
        }
        assert!(is_tchar(b'~') && !is_tchar(b':') && !is_tchar(b' ') && !is_tchar(0x80));
    }

    fn body_of(data: &[u8], sums: &mut [u8]) {
        block_sums_into(data, sums);
    }

    #[test]
    fn range_sums_match_direct_sums() {
        let data: [u8; 333] = core::array::from_fn(|i| (i as u8).wrapping_mul(151).wrapping_add(7));
        let mut sums = [0u8; 2 * 6];
        body_of(&data, &mut sums);
        let body = Body {
            data: &data,
            block_sums: &sums,
        };
        assert!(body.is_consistent());
        for start in [0usize, 1, 2, 63, 64, 65, 100, 127, 128, 200, 333] {
            for end in [start, start + 1, start + 64, start + 129, 333, 400] {
                let e = end.min(333);
                assert_eq!(
                    body.sum(start, end),
                    checksum::sum(&data[start..e]),
                    "range {start}..{end}"
                );
            }
        }
        // Every range, of these bytes and of all-ones bytes (the sums that carry most).
        let ones = [0xffu8; 333];
        let mut ones_sums = [0u8; 2 * 6];
        body_of(&ones, &mut ones_sums);
        let ones_body = Body {
            data: &ones,
            block_sums: &ones_sums,
        };
        for start in 0..=333 {
            for end in start..=333 {
                assert_eq!(body.sum(start, end), checksum::sum(&data[start..end]));
                assert_eq!(ones_body.sum(start, end), checksum::sum(&ones[start..end]));
            }
        }
    }

    #[test]
    fn inconsistent_sums_fall_back_to_bytes() {
        let data = [1u8; 200];
        let body = Body {
            data: &data,
            block_sums: &[0, 0],
        };
        assert!(!body.is_consistent());
        assert_eq!(body.sum(3, 150), checksum::sum(&data[3..150]));
    }
}
