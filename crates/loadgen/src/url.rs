//! The URLs the generators take, `scheme://host[:port]/path`: split into the server's
//! address (resolved; an IPv6 literal in brackets where the scheme speaks IPv6, with a
//! zone as RFC 6874 writes it, `[fe80::1%25eth0]`), the authority for the `Host` field
//! (without the zone, RFC 6874 §4) and the path.
//! One parser for `http://` ([`crate::parse_url`]) and `bwudp://`
//! ([`crate::udp::parse_url`]); each scheme says its default port and the words of its
//! wrong-scheme error.

use std::net::{SocketAddr, ToSocketAddrs};

/// A URL's scheme and its defaults.
pub(crate) struct Scheme {
    /// The prefix, `http://`.
    pub prefix: &'static str,
    /// What a URL without that prefix is told (after the URL).
    pub other: &'static str,
    /// The port when the URL names none.
    pub default_port: u16,
    /// IPv6 literals are taken (both schemes do now; kept for a scheme that does not).
    pub ipv6: bool,
}

/// The host and port of a URL's authority (`host`, `host:port`, `[v6]`, `[v6]:port`),
/// `default` when no port is written; `url` names the URL in errors. An IPv6 literal
/// comes back without its brackets, its zone's `%25` as `%` (what the resolver reads);
/// without `ipv6` it is refused in words.
pub fn host_and_port(
    url: &str,
    hostport: &str,
    default: u16,
    ipv6: bool,
) -> Result<(String, u16), String> {
    let bad_port = |p: &str| format!("{url:?}: bad port {p:?} (expected 1 to 65535)");
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&n| n != 0)
            .ok_or_else(|| bad_port(p))
    };
    if let Some(v6) = hostport.strip_prefix('[') {
        let Some((host, after)) = v6.split_once(']') else {
            return Err(format!(
                "{url:?}: '[' opens an IPv6 address that no ']' closes"
            ));
        };
        if !after.is_empty() && !after.starts_with(':') {
            return Err(format!("{url:?}: unexpected {after:?} after [{host}]"));
        }
        if !ipv6 {
            return Err(format!(
                "{url:?}: [{host}] is an IPv6 address; this client speaks IPv4 only (give an \
                 IPv4 address, or a name that has one)"
            ));
        }
        let (addr, zone) = match host.split_once("%25") {
            Some((a, z)) if !z.is_empty() => (a, Some(z)),
            Some(_) => return Err(format!("{url:?}: an empty zone after %25 in [{host}]")),
            None => (host, None),
        };
        if addr.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("{url:?}: [{host}] is no IPv6 address"));
        }
        let p = match after.strip_prefix(':') {
            Some(p) => port(p)?,
            None => default,
        };
        return Ok((zone.map_or(addr.to_string(), |z| format!("{addr}%{z}")), p));
    }
    match hostport.rsplit_once(':') {
        Some((h, _)) if h.contains(':') => Err(format!(
            "{url:?}: {hostport:?} looks like an IPv6 address: a URL writes it in brackets, \
             [{}]",
            hostport
        )),
        Some((h, p)) => Ok((h.to_string(), port(p)?)),
        None => Ok((hostport.to_string(), default)),
    }
}

/// A URL split: the server's address, the authority as written and the path (`/` when
/// the URL has none).
pub(crate) fn split(url: &str, scheme: &Scheme) -> Result<(SocketAddr, String, String), String> {
    let rest = url
        .strip_prefix(scheme.prefix)
        .ok_or_else(|| format!("{url:?}: {}", scheme.other))?;
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if hostport.is_empty() {
        return Err(format!("{url:?}: no host"));
    }
    let (host, port) = host_and_port(url, hostport, scheme.default_port, scheme.ipv6)?;
    let literal6 = hostport.starts_with('[');
    let addrs: Vec<SocketAddr> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("{url:?}: cannot resolve {host:?}: {e}"))?
        .collect();
    // A name: its IPv4 address first (as before IPv6 was served), else its IPv6 one.
    let addr = addrs
        .iter()
        .find(|a| a.is_ipv4() != literal6)
        .or_else(|| addrs.iter().find(|a| scheme.ipv6 && a.is_ipv6()))
        .copied()
        .ok_or_else(|| format!("{url:?}: {host:?} has no IPv4 address"))?;
    // The Host field: the authority without the zone (RFC 6874 §4).
    let authority = match hostport.split_once("%25") {
        Some((a, rest)) => format!("{a}{}", &rest[rest.find(']').unwrap_or(rest.len())..]),
        None => hostport.to_string(),
    };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!("{url:?}: path has spaces or control characters"));
    }
    Ok((addr, authority, path.to_string()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn both_schemes_split_alike_with_their_own_defaults() {
        let (t, path) = crate::parse_url("http://10.0.0.2:8080/a/b").unwrap();
        assert_eq!(
            (t.addr.to_string(), t.host.as_str()),
            ("10.0.0.2:8080".into(), "10.0.0.2:8080")
        );
        assert_eq!(path, "/a/b");
        let (t, path) = crate::parse_url("http://10.0.0.2").unwrap();
        assert_eq!((t.addr.port(), path.as_str()), (80, "/"));
        let (u, path) = crate::udp::parse_url("bwudp://10.0.0.3/x").unwrap();
        assert_eq!(
            (u.addr.to_string(), u.host.as_str(), path.as_str()),
            ("10.0.0.3:80".into(), "10.0.0.3", "/x")
        );
        // Port 0 names no server: refused for both.
        assert!(crate::parse_url("http://10.0.0.2:0/").is_err());
        assert_eq!(
            crate::udp::parse_url("bwudp://10.0.0.2:0/").unwrap_err(),
            "\"bwudp://10.0.0.2:0/\": bad port \"0\" (expected 1 to 65535)"
        );
        assert_eq!(
            crate::parse_url("bwudp://10.0.0.2/").unwrap_err(),
            "\"bwudp://10.0.0.2/\": only http:// URLs are supported"
        );
        assert_eq!(
            crate::udp::parse_url("http://10.0.0.2/").unwrap_err(),
            "\"http://10.0.0.2/\": not a bwudp:// URL"
        );
        assert_eq!(
            crate::parse_url("http:///x").unwrap_err(),
            "\"http:///x\": no host"
        );
        assert!(crate::parse_url("http://10.0.0.2/a b").is_err());
    }
}
