//! Host names: the name a request's `Host` field asks for (port stripped, trailing dot
//! dropped), the names a site image's names table may hold, and their comparison (ASCII
//! case-insensitive, without copying or allocating).
//!
//! The same names, and the same normalisation, are meant for TLS's server name
//! indication: a ClientHello's `server_name` is a host name without port (RFC 6066 3),
//! looked up in the same table to pick the site, and so its certificate
//! (docs/design/site-image.md, "Virtual hosts").

use core::cmp::Ordering;

/// Longest host name the table holds and a request may ask for (RFC 1035's 255 octets).
pub const NAME_MAX: usize = 255;

/// The host name in a `Host` field value (RFC 9110 7.2: `uri-host [ ":" port ]`): an IPv6
/// literal with its brackets, or the name before `:port`, without one trailing dot.
/// `None` for an empty or over-long name, a port that is not digits, an unclosed bracket
/// or a colon in a name without brackets: such a request gets the default site.
pub fn host_name(host: &[u8]) -> Option<&[u8]> {
    let (name, port) = if host.first() == Some(&b'[') {
        let close = host.iter().position(|&b| b == b']')?;
        let (name, rest) = host.split_at(close + 1);
        match rest {
            [] => (name, &[][..]),
            [b':', port @ ..] => (name, port),
            _ => return None,
        }
    } else {
        match host.iter().position(|&b| b == b':') {
            Some(i) => (&host[..i], &host[i + 1..]),
            None => (host, &[][..]),
        }
    };
    if !port.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let name = name.strip_suffix(b".").unwrap_or(name);
    (!name.is_empty() && name.len() <= NAME_MAX).then_some(name)
}

/// Whether `name` may be in a names table: 1 to [`NAME_MAX`] bytes, lowercase letters,
/// digits, `-`, `.` and `_`, not ending in `.`; or an IPv6 literal, `[` lowercase hex
/// digits, `:` and `.` `]`.
pub fn is_site_name(name: &[u8]) -> bool {
    if name.is_empty() || name.len() > NAME_MAX {
        return false;
    }
    match name {
        [b'[', inner @ .., b']'] => {
            !inner.is_empty()
                && inner
                    .iter()
                    .all(|&b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b':' | b'.'))
        }
        _ => {
            !name.ends_with(b".")
                && name
                    .iter()
                    .all(|&b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_'))
        }
    }
}

/// Orders a stored (lowercase) name against a requested one, ASCII case-insensitively:
/// the order of the table's names compared with `host` lowercased.
pub fn cmp_name(stored: &[u8], host: &[u8]) -> Ordering {
    let n = stored.len().min(host.len());
    for i in 0..n {
        match stored[i].cmp(&host[i].to_ascii_lowercase()) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    stored.len().cmp(&host.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_lose_port_and_trailing_dot_and_keep_ipv6_brackets() {
        for (host, name) in [
            (&b"a.example"[..], Some(&b"a.example"[..])),
            (b"A.Example:8080", Some(b"A.Example")),
            (b"a.example.", Some(b"a.example")),
            (b"a.example.:80", Some(b"a.example")),
            (b"a.example:", Some(b"a.example")),
            (b"10.0.0.1:80", Some(b"10.0.0.1")),
            (b"[::1]", Some(b"[::1]")),
            (b"[2001:DB8::1]:443", Some(b"[2001:DB8::1]")),
            (b"", None),
            (b".", None),
            (b":80", None),
            (b"a.example:http", None),
            (b"a:1:2", None),
            (b"[::1", None),
            (b"[::1]x", None),
            (b"[::1]:8x", None),
        ] {
            assert_eq!(host_name(host), name, "{:?}", core::str::from_utf8(host));
        }
        let long = [b'a'; NAME_MAX + 1];
        assert_eq!(host_name(&long), None);
        assert_eq!(host_name(&long[..NAME_MAX]), Some(&long[..NAME_MAX]));
    }

    #[test]
    fn table_names_are_lowercase_without_port_or_trailing_dot() {
        for ok in [
            &b"a.example"[..],
            b"a-b_c.example",
            b"10.0.0.1",
            b"[::1]",
            b"[fe80::1]",
            b"x",
        ] {
            assert!(is_site_name(ok), "{:?}", core::str::from_utf8(ok));
        }
        for bad in [
            &b""[..],
            b"A.example",
            b"a.example.",
            b"a.example:80",
            b"[]",
            b"[::G]",
            b"a b",
            b"caf\xc3\xa9",
            &[b'a'; NAME_MAX + 1],
        ] {
            assert!(!is_site_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn names_compare_case_insensitively_in_table_order() {
        assert_eq!(cmp_name(b"a.example", b"A.EXAMPLE"), Ordering::Equal);
        assert_eq!(cmp_name(b"a.example", b"b.example"), Ordering::Less);
        assert_eq!(cmp_name(b"b", b"A"), Ordering::Greater);
        assert_eq!(cmp_name(b"a", b"ab"), Ordering::Less);
        assert_eq!(cmp_name(b"ab", b"A"), Ordering::Greater);
        // Bytes above ASCII compare as themselves (and never equal a table name).
        assert_eq!(cmp_name(b"a", b"\xc3"), Ordering::Less);
    }
}
