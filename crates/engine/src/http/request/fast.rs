//! The common request's fast path: `GET` or `HEAD`, a target, `HTTP/1.1` or `HTTP/1.0`,
//! then field lines of the plainest form (a token, a colon, visible ASCII, SP or HTAB,
//! CRLF) up to the empty line, with no empty line before the request. Such a head is read
//! in one pass with no `httparse` call and no header array to set up; its fields go
//! through the same [`Fields`] as the general parser's, so the answer is the general
//! parser's answer. Anything else (a prefix, bare LF, obs-fold, obs-text, a control byte,
//! too many fields, a long line) is not judged here: [`parse`] returns `None` and the
//! general parser takes the bytes from the start. A test and the `http_request` fuzz
//! target hold the two paths to the same result on every input.

use super::{fields, is_target_byte, Fields, Line, Step, Version};
use crate::http::{MAX_HEADERS, MAX_REQUEST_LINE};

/// A byte a field value may hold on the fast path: HTAB, SP and visible ASCII (the
/// general parser also takes obs-text, which this path leaves to it).
fn is_plain_value_byte(c: u8) -> bool {
    c == b'\t' || (0x20..0x7f).contains(&c)
}

/// The request at the start of `buf` (already cut to `MAX_REQUEST` bytes), if it has the
/// plain form, with the general parser's answer for it; `None` otherwise.
pub(super) fn parse(buf: &[u8]) -> Option<Step<(super::Request<'_>, usize)>> {
    let (method, t0) = match buf {
        [b'G', b'E', b'T', b' ', ..] => (&buf[..3], 4),
        [b'H', b'E', b'A', b'D', b' ', ..] => (&buf[..4], 5),
        _ => return None,
    };
    let t = buf[t0..].iter().position(|&c| !is_target_byte(c))?;
    let t1 = t0 + t;
    let (version, end) = match buf.get(t1..t1 + 11)? {
        b" HTTP/1.1\r\n" => (Version::Http11, t1 + 11),
        b" HTTP/1.0\r\n" => (Version::Http10, t1 + 11),
        _ => return None,
    };
    if t == 0 || end - 2 > MAX_REQUEST_LINE {
        return None;
    }
    let line = Line {
        method,
        target: &buf[t0..t1],
        version,
        end,
    };
    let mut f = Fields::new();
    // The first error the fields give, returned only once every line proved plain (the
    // general parser judges the lines before any field).
    let mut err = None;
    let mut at = end;
    let mut count = 0;
    loop {
        let rest = &buf[at..];
        if let [b'\r', b'\n', ..] = rest {
            let len = at + 2;
            return Some(match err {
                Some(e) => Err(e),
                None => f.finish(line, len),
            });
        }
        let colon = rest.iter().position(|&c| !fields::is_tchar(c))?;
        if colon == 0 || rest[colon] != b':' {
            return None;
        }
        let v0 = colon + 1;
        let v = rest[v0..].iter().position(|&c| !is_plain_value_byte(c))?;
        let v1 = v0 + v;
        if rest.get(v1..v1 + 2)? != b"\r\n" {
            return None;
        }
        count += 1;
        if count > MAX_HEADERS {
            return None;
        }
        if err.is_none() {
            let value = fields::trim_ows(&rest[v0..v1]);
            if let Err(e) = f.add(&rest[..colon], value) {
                err = Some(e);
            }
        }
        at += v1 + 2;
    }
}
