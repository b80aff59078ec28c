//! The request target (RFC 9112 section 3.2): from origin-form or absolute-form to the
//! normalised path the site is asked for.
//!
//! Decoding comes before normalisation, so `%2e%2e` and `%2f` are dot segments and
//! separators like their literal forms; normalisation is RFC 3986 5.2.4
//! `remove_dot_segments` plus collapsing of empty segments, and a `..` at the root stays
//! at the root, so the result never names anything outside the site.

/// Why a target was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Not origin-form or absolute-form, a bad `%` escape, or a decoded NUL: 400.
    Bad,
    /// The decoded path does not fit the buffer: 414.
    TooLong,
}

/// A request target split into its raw (still percent-encoded) parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'b> {
    /// The path, beginning with `/`.
    pub path: &'b [u8],
    /// The query without its `?`, if there was one.
    pub query: Option<&'b [u8]>,
}

/// Splits a request target. Origin-form `/path?query`; absolute-form
/// `http://authority/path?query` (any case of `http`/`https`; RFC 9112 3.2.2: a server
/// MUST accept it) yields its path, `/` when empty. A fragment (never sent by conforming
/// clients) is dropped. Anything else (`*`, authority-form, other schemes) is `Bad`.
pub fn split(target: &[u8]) -> Result<Target<'_>, Error> {
    let target = match target.iter().position(|&c| c == b'#') {
        Some(i) => &target[..i],
        None => target,
    };
    let (path_and_query, absolute) = if target.first() == Some(&b'/') {
        (target, false)
    } else {
        let rest = strip_prefix_ignore_case(target, b"http://")
            .or_else(|| strip_prefix_ignore_case(target, b"https://"))
            .ok_or(Error::Bad)?;
        let end = rest
            .iter()
            .position(|&c| c == b'/' || c == b'?')
            .unwrap_or(rest.len());
        if end == 0 {
            return Err(Error::Bad); // no authority
        }
        (&rest[end..], true)
    };
    let (path, query) = match path_and_query.iter().position(|&c| c == b'?') {
        Some(i) => (&path_and_query[..i], Some(&path_and_query[i + 1..])),
        None => (path_and_query, None),
    };
    let path: &[u8] = if absolute && path.is_empty() {
        b"/"
    } else {
        path
    };
    Ok(Target { path, query })
}

fn strip_prefix_ignore_case<'b>(b: &'b [u8], prefix: &[u8]) -> Option<&'b [u8]> {
    let head = b.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &b[prefix.len()..])
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Output of the normaliser: `out[..len]` always begins with `/`, and `seg` is the index
/// just after the last `/` written (where the current segment starts).
struct Norm<'o> {
    out: &'o mut [u8],
    len: usize,
    seg: usize,
}

impl Norm<'_> {
    fn push(&mut self, b: u8) -> Result<(), Error> {
        let slot = self.out.get_mut(self.len).ok_or(Error::TooLong)?;
        *slot = b;
        self.len += 1;
        Ok(())
    }

    /// Ends the current segment, at a `/` (`last == false`) or at the end of the path.
    fn end_segment(&mut self, last: bool) -> Result<(), Error> {
        match &self.out[self.seg..self.len] {
            // "//" collapses; a trailing "/" is already written.
            [] => {}
            // "." disappears, leaving "dir/".
            [b'.'] => self.len = self.seg,
            // ".." removes itself and the previous segment, never the root "/".
            [b'.', b'.'] => {
                self.len = self.seg;
                if self.len > 1 {
                    self.len -= 1; // the '/' ending the previous segment
                    while self.len > 1 && self.out[self.len - 1] != b'/' {
                        self.len -= 1;
                    }
                }
            }
            _ if last => {}
            _ => self.push(b'/')?,
        }
        self.seg = self.len;
        Ok(())
    }
}

/// Percent-decodes and normalises a raw path (beginning with `/`) into `out`, returning
/// the length of the result, which begins with `/` and has no empty, `.` or `..`
/// segments. A trailing `/` (also one left by a final `.` or `..`) is kept.
pub fn normalise(raw: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    let [b'/', raw @ ..] = raw else {
        return Err(Error::Bad);
    };
    let mut n = Norm {
        out,
        len: 0,
        seg: 1,
    };
    n.push(b'/')?;
    let mut i = 0;
    while let Some(&c) = raw.get(i) {
        let b = if c == b'%' {
            let hi = raw.get(i + 1).copied().and_then(hex).ok_or(Error::Bad)?;
            let lo = raw.get(i + 2).copied().and_then(hex).ok_or(Error::Bad)?;
            i += 3;
            (hi << 4) | lo
        } else {
            i += 1;
            c
        };
        match b {
            0 => return Err(Error::Bad),
            b'/' => n.end_segment(false)?,
            _ => n.push(b)?,
        }
    }
    n.end_segment(true)?;
    Ok(n.len)
}

/// Whether [`normalise`] would give `raw` back unchanged into a buffer of `max` bytes: it
/// begins with `/`, fits, and has no `%`, no NUL, no empty segment but a trailing one,
/// and no `.` or `..` segment. The common request's path is such, and is then used as it
/// came, with no copy and no buffer to set up (a test holds this to `normalise`).
pub fn is_normal(raw: &[u8], max: usize) -> bool {
    let [b'/', rest @ ..] = raw else {
        return false;
    };
    if raw.len() > max {
        return false;
    }
    // The current segment's length, and how many of its bytes are dots.
    let mut seg_len = 0usize;
    let mut dots = 0usize;
    for &c in rest {
        match c {
            b'%' | 0 => return false,
            b'/' => {
                if seg_len == 0 || dots == seg_len && seg_len <= 2 {
                    return false; // "//", "/./" or "/../"
                }
                seg_len = 0;
                dots = 0;
            }
            b'.' => {
                seg_len += 1;
                dots += 1;
            }
            _ => seg_len += 1,
        }
    }
    // The last segment: "." or ".." is rewritten; empty (a trailing '/') is kept.
    !(seg_len > 0 && dots == seg_len && seg_len <= 2)
}

/// Whether `c` may appear unescaped in a path we emit: pchar and `/` (RFC 3986 3.3).
fn path_safe(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'/'
        )
}

/// Percent-encodes `path` for a `Location` field, calling `emit` with pieces.
pub fn encode_path(path: &[u8], mut emit: impl FnMut(&[u8])) {
    encode(path, path_safe, &mut emit);
}

/// Re-emits a raw query for a `Location` field: it came from the request line, so it is
/// visible ASCII already, except for obs-text bytes, which are escaped.
pub fn encode_query(query: &[u8], mut emit: impl FnMut(&[u8])) {
    encode(query, |c| (0x21..0x7f).contains(&c), &mut emit);
}

fn encode(bytes: &[u8], safe: impl Fn(u8) -> bool, emit: &mut impl FnMut(&[u8])) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut run = 0;
    for (i, &c) in bytes.iter().enumerate() {
        if !safe(c) {
            emit(&bytes[run..i]);
            emit(&[b'%', HEX[usize::from(c >> 4)], HEX[usize::from(c & 15)]]);
            run = i + 1;
        }
    }
    emit(&bytes[run..]);
}

#[cfg(test)]
mod tests {
    /// `is_normal` says yes exactly when `normalise` gives the path back unchanged (or
    /// fails for length only where the buffer is too small), over every path of up to
    /// five bytes from an alphabet of the bytes that matter, and some longer ones.
    #[test]
    fn is_normal_agrees_with_normalise() {
        let alphabet = [b'/', b'.', b'a', b'%', b'2', b'e', 0];
        let mut paths: alloc::vec::Vec<alloc::vec::Vec<u8>> = alloc::vec![alloc::vec![]];
        let mut all = alloc::vec::Vec::new();
        for _ in 0..5 {
            let mut next = alloc::vec::Vec::new();
            for p in &paths {
                for &c in &alphabet {
                    let mut q = p.clone();
                    q.push(c);
                    next.push(q);
                }
            }
            all.extend(next.iter().cloned());
            paths = next;
        }
        all.push(b"/4k.bin".to_vec());
        all.push(b"/docs/.../a..b/.x/".to_vec());
        for p in &all {
            for max in [3usize, 64] {
                let mut out = alloc::vec![0u8; max];
                let same = super::normalise(p, &mut out).is_ok_and(|n| out[..n] == p[..]);
                assert_eq!(super::is_normal(p, max), same, "{p:?} max {max}");
            }
        }
    }

    use super::*;
    use alloc::vec::Vec;

    fn norm(raw: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = [0u8; 64];
        normalise(raw, &mut out).map(|n| out[..n].to_vec())
    }

    #[test]
    fn normalisation_table() {
        type Row<'a> = (&'a [u8], Result<&'a [u8], Error>);
        let table: &[Row<'_>] = &[
            (b"/", Ok(b"/")),
            (b"/index.html", Ok(b"/index.html")),
            (b"/a/b/", Ok(b"/a/b/")),
            (b"/a/./b/../c", Ok(b"/a/c")),
            (b"/../../etc/passwd", Ok(b"/etc/passwd")),
            (b"/..", Ok(b"/")),
            (b"/../", Ok(b"/")),
            (b"/.", Ok(b"/")),
            (b"/a/..", Ok(b"/")),
            (b"/a/.", Ok(b"/a/")),
            (b"/a/b/..", Ok(b"/a/")),
            (b"/a/b/../..", Ok(b"/")),
            (b"/a/b/../../../../x", Ok(b"/x")),
            (b"//a///b//", Ok(b"/a/b/")),
            (b"//", Ok(b"/")),
            (b"/a/.../b", Ok(b"/a/.../b")),
            (b"/a/..b/.c/c.", Ok(b"/a/..b/.c/c.")),
            (b"/%2e%2e/%2E%2E/etc/passwd", Ok(b"/etc/passwd")),
            (b"/%2e%2e%2f%2e%2e%2fetc", Ok(b"/etc")),
            (b"/a/%2e/b", Ok(b"/a/b")),
            (b"/a/.%2e/b", Ok(b"/b")),
            (b"/a%2fb", Ok(b"/a/b")),
            (b"/a%2F..%2F..%2Fb", Ok(b"/b")),
            (b"/hello%20world", Ok(b"/hello world")),
            (b"/caf%C3%A9", Ok("/café".as_bytes())),
            (b"/a\\..\\b", Ok(b"/a\\..\\b")),
            (b"/%25", Ok(b"/%")),
            (b"/%00", Err(Error::Bad)),
            (b"/a%00b", Err(Error::Bad)),
            (b"/%zz", Err(Error::Bad)),
            (b"/%", Err(Error::Bad)),
            (b"/%4", Err(Error::Bad)),
            (b"/%4g", Err(Error::Bad)),
            (b"/%g4", Err(Error::Bad)),
            (b"", Err(Error::Bad)),
            (b"a", Err(Error::Bad)),
        ];
        for &(raw, want) in table {
            assert_eq!(
                norm(raw).as_deref().map_err(|e| *e),
                want,
                "{:?}",
                core::str::from_utf8(raw)
            );
        }
    }

    #[test]
    fn too_long_paths() {
        let mut out = [0u8; 8];
        assert_eq!(normalise(b"/1234567", &mut out), Ok(8));
        assert_eq!(normalise(b"/12345678", &mut out), Err(Error::TooLong));
        // The trailing '/' of a segment needs room too.
        assert_eq!(normalise(b"/1234567/", &mut out), Err(Error::TooLong));
        // Dot segments may shrink a long path back into the buffer... but only after they
        // were written, so a segment longer than the buffer is still too long.
        assert_eq!(normalise(b"/123/../4567", &mut out), Ok(5));
        assert_eq!(normalise(b"/%31%32%33%34%35%36%37", &mut out), Ok(8));
        let mut none = [0u8; 0];
        assert_eq!(normalise(b"/", &mut none), Err(Error::TooLong));
    }

    #[test]
    fn split_table() {
        type Split<'a> = Result<(&'a [u8], Option<&'a [u8]>), Error>;
        let table: &[(&[u8], Split<'_>)] = &[
            (b"/", Ok((b"/", None))),
            (b"/a?b=c", Ok((b"/a", Some(b"b=c")))),
            (b"/a?", Ok((b"/a", Some(b"")))),
            (b"/a?b?c", Ok((b"/a", Some(b"b?c")))),
            (b"/a#frag", Ok((b"/a", None))),
            (b"/a?q#frag", Ok((b"/a", Some(b"q")))),
            (b"http://h/p?q", Ok((b"/p", Some(b"q")))),
            (b"HTTP://h:80/p", Ok((b"/p", None))),
            (b"https://h", Ok((b"/", None))),
            (b"http://h?q", Ok((b"/", Some(b"q")))),
            (b"http:///p", Err(Error::Bad)),
            (b"*", Err(Error::Bad)),
            (b"example.com:443", Err(Error::Bad)),
            (b"ftp://h/p", Err(Error::Bad)),
            (b"http:/p", Err(Error::Bad)),
            (b"", Err(Error::Bad)),
            (b"a/b", Err(Error::Bad)),
        ];
        for &(t, want) in table {
            assert_eq!(
                split(t).map(|t| (t.path, t.query)),
                want,
                "{:?}",
                core::str::from_utf8(t)
            );
        }
    }

    #[test]
    fn encodes_location() {
        let mut v = Vec::new();
        encode_path("/a b/café/<x>\"%?#".as_bytes(), |p| v.extend_from_slice(p));
        assert_eq!(v, b"/a%20b/caf%C3%A9/%3Cx%3E%22%25%3F%23");
        v.clear();
        encode_path(b"/ok-._~!$&'()*+,;=:@/", |p| v.extend_from_slice(p));
        assert_eq!(v, b"/ok-._~!$&'()*+,;=:@/");
        v.clear();
        encode_query(b"a=1&b=\x80", |p| v.extend_from_slice(p));
        assert_eq!(v, b"a=1&b=%80");
    }
}
