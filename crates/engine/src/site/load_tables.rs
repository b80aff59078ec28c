//! The loader's checks of the tables that follow the entries: redirects and rewrites,
//! error pages, and the header's switches, stats settings and common header lines. Split
//! from [`super::load`] to keep each file small; the same rules (every offset in bounds,
//! header-safe text) hold.

use super::format::{self, entry, header, le_u32};
use super::load::{end, sub, LoadError};
use crate::resource::placeholder;

/// Checks the error-page records: a 4xx/5xx status naming a file entry.
pub(super) fn check_error_pages(entries: &[u8], errors: &[u8]) -> Result<(), LoadError> {
    for (i, r) in errors.chunks_exact(format::ERROR_LEN).enumerate() {
        let bad = |why| LoadError::ErrorPage {
            index: i as u32,
            why,
        };
        if !(400..=599).contains(&le_u32(r, format::error_page::STATUS)) {
            return Err(bad("status not in 400..=599"));
        }
        let target = le_u32(r, format::error_page::ENTRY) as usize;
        let is_file = entries
            .chunks_exact(format::ENTRY_LEN)
            .nth(target)
            .is_some_and(|t| le_u32(t, entry::KIND) == format::KIND_FILE);
        if !is_file {
            return Err(bad("entry is not a file"));
        }
    }
    Ok(())
}

/// Checks the redirect and rewrite records; returns how many exact redirects lead the
/// table. Order: exact redirects (sorted), patterns and prefixes, then rewrites.
pub(super) fn check_redirects(strings: &[u8], redirects: &[u8]) -> Result<usize, LoadError> {
    let mut exact = 0;
    let mut prev: Option<&[u8]> = None;
    let mut rewrites = false;
    for (i, r) in redirects.chunks_exact(format::REDIRECT_LEN).enumerate() {
        let bad = |why| LoadError::Redirect {
            index: i as u32,
            why,
        };
        let string = |off, len| {
            let (o, l) = (u64::from(le_u32(r, off)), u64::from(le_u32(r, len)));
            if end(o, l) > strings.len() as u64 {
                None
            } else {
                Some(sub(strings, o, l))
            }
        };
        let from = string(format::redirect::FROM_OFF, format::redirect::FROM_LEN)
            .ok_or(bad("from out of bounds"))?;
        let to = string(format::redirect::TO_OFF, format::redirect::TO_LEN)
            .ok_or(bad("to out of bounds"))?;
        if !from.starts_with(b"/") || core::str::from_utf8(from).is_err() {
            return Err(bad("from is not a path"));
        }
        if to.is_empty() || !to.iter().all(|b| (0x21..0x7f).contains(b)) {
            return Err(bad("to is empty or not visible ASCII"));
        }
        let status = le_u32(r, format::redirect::STATUS);
        let kind = le_u32(r, format::redirect::KIND);
        let is_rewrite = matches!(kind, format::REWRITE_EXACT | format::REWRITE_PREFIX);
        if is_rewrite {
            if status != 200 || !to.starts_with(b"/") {
                return Err(bad("rewrite without status 200 or a path as target"));
            }
            rewrites = true;
        } else if rewrites {
            return Err(bad("redirect after a rewrite"));
        } else if !format::REDIRECT_STATUSES.contains(&status) {
            return Err(bad("status is not 301, 302, 303, 307 or 308"));
        }
        match kind {
            format::REDIRECT_EXACT => {
                if exact != i {
                    return Err(bad("exact redirect after a prefix one"));
                }
                if prev.is_some_and(|p| p >= from) {
                    return Err(bad("exact redirects not sorted"));
                }
                prev = Some(from);
                exact += 1;
            }
            format::REDIRECT_PATTERN => check_pattern(from, to).map_err(bad)?,
            format::REDIRECT_PREFIX | format::REWRITE_EXACT | format::REWRITE_PREFIX => {}
            _ => return Err(bad("unknown kind")),
        }
    }
    Ok(exact)
}

/// A pattern's segments are literal, `:name` or (last) `*`, and every placeholder of its
/// target names one of them (`:splat` the `*`).
fn check_pattern(from: &[u8], to: &[u8]) -> Result<(), &'static str> {
    let segs = || from.split(|&b| b == b'/').skip(1);
    let last = segs().count().saturating_sub(1);
    for (k, seg) in segs().enumerate() {
        if seg == b"*" && k != last {
            return Err("'*' not the pattern's last segment");
        }
        if let Some(name) = seg.strip_prefix(b":") {
            if placeholder(name) != Some(name) {
                return Err("placeholder name not letters, digits and _");
            }
        }
    }
    let mut i = 0;
    while i < to.len() {
        if let Some(name) = (to[i] == b':').then(|| placeholder(&to[i + 1..])).flatten() {
            let known = if name == b"splat" {
                segs().last() == Some(b"*")
            } else {
                segs().any(|s| s.strip_prefix(b":") == Some(name))
            };
            if !known {
                return Err("target placeholder not in the pattern");
            }
            i += name.len();
        }
        i += 1;
    }
    Ok(())
}

/// Checks the header's switches, stats settings and common headers.
pub(super) fn check_settings(image: &[u8], strings: &[u8]) -> Result<(), LoadError> {
    let bad = LoadError::Settings;
    let flags = le_u32(image, header::FLAGS);
    if flags & format::flags::RESERVED != 0 {
        return Err(bad("reserved flag bits set"));
    }
    for at in [
        format::flags::STATS,
        format::flags::METRICS,
        format::flags::HEALTHZ,
        format::flags::SERVER,
    ] {
        if (flags >> at) & 3 == 3 {
            return Err(bad("switch value 3"));
        }
    }
    if le_u32(image, header::STATS_ALLOW_PREFIX) > 32 {
        return Err(bad("stats allow prefix longer than 32"));
    }
    let string = |off, len| {
        let (o, l) = (u64::from(le_u32(image, off)), u64::from(le_u32(image, len)));
        (end(o, l) <= strings.len() as u64).then(|| sub(strings, o, l))
    };
    let common = string(header::COMMON_HEADERS_OFF, header::COMMON_HEADERS_LEN)
        .ok_or(bad("common headers out of bounds"))?;
    if !format::is_header_block(common) {
        return Err(bad("common headers are not name: value CRLF lines"));
    }
    let path = string(header::STATS_PATH_OFF, header::STATS_PATH_LEN)
        .ok_or(bad("stats path out of bounds"))?;
    let path_ok = path.is_empty()
        || (path.starts_with(b"/")
            && !path.ends_with(b"/")
            && path.iter().all(|b| (0x21..0x7f).contains(b)));
    if !path_ok {
        return Err(bad("stats path is not a path without a trailing slash"));
    }
    let server =
        string(header::SERVER_OFF, header::SERVER_LEN).ok_or(bad("server name out of bounds"))?;
    let named = (flags >> format::flags::SERVER) & 3 == format::SWITCH_ON;
    let server_ok = if named {
        !server.is_empty()
            && server
                .iter()
                .all(|&b| b == b' ' || (0x21..0x7f).contains(&b))
    } else {
        server.is_empty()
    };
    if !server_ok {
        return Err(bad(
            "server name empty when set, set when not, or not visible ASCII",
        ));
    }
    Ok(())
}
