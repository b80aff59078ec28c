//! The URLs the generators take, `scheme://host[:port]/path`: split into the server's
//! address (resolved, or given by a [`Resolve`] entry, curl's `--resolve HOST:PORT:ADDR`;
//! an IPv6 literal in brackets where the scheme speaks IPv6, with a zone as RFC 6874
//! writes it, `[fe80::1%25eth0]`), the authority for the `Host` field (without the zone,
//! RFC 6874 §4), the host alone (the name TLS asks for and verifies) and the path.
//! One parser for `http://` and `https://` ([`crate::parse_url`]) and `bwudp://`
//! ([`crate::udp::parse_url`]); each scheme says its default port and the words of its
//! wrong-scheme error.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::str::FromStr;

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

/// curl's `--resolve HOST:PORT:ADDR`: a URL naming HOST and PORT connects to ADDR, while
/// the name stays HOST (in the `Host` field, and over HTTPS in SNI and the certificate's
/// check). For names without DNS (`site.test`) or a server at another address than its
/// name's. ADDR is an IPv4 or an IPv6 address (in brackets or not); one per entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolve {
    /// The host as URLs write it (an IPv6 literal without its brackets), matched without
    /// regard to case.
    pub host: String,
    pub port: u16,
    pub addr: IpAddr,
}

impl FromStr for Resolve {
    type Err = String;
    fn from_str(s: &str) -> Result<Resolve, String> {
        let form = || format!("expected HOST:PORT:ADDR (as curl's --resolve), not {s:?}");
        // HOST is a name, an IPv4 address or an IPv6 one in brackets.
        let (host, rest) = match s.strip_prefix('[') {
            Some(v6) => {
                let (h, rest) = v6.split_once(']').ok_or_else(form)?;
                (h, rest.strip_prefix(':').ok_or_else(form)?)
            }
            None => s.split_once(':').ok_or_else(form)?,
        };
        let (port, addr) = rest.split_once(':').ok_or_else(form)?;
        if host.is_empty() || host.bytes().any(|b| b <= b' ' || b == b'/' || b == 0x7f) {
            return Err(format!("{s:?}: no host name before the port"));
        }
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| format!("{s:?}: bad port {port:?} (expected 1 to 65535)"))?;
        if addr.contains(',') {
            return Err(format!(
                "{s:?}: one address per --resolve (give the one to connect to)"
            ));
        }
        let bare = addr
            .strip_prefix('[')
            .and_then(|a| a.strip_suffix(']'))
            .unwrap_or(addr);
        let addr = bare
            .parse::<IpAddr>()
            .map_err(|_| format!("{s:?}: {addr:?} is no IPv4 or IPv6 address"))?;
        Ok(Resolve {
            host: host.to_string(),
            port,
            addr,
        })
    }
}

/// A URL split: the server's address, the authority as written (the `Host` field), the
/// host alone (without brackets or zone: the name a certificate must hold) and the path
/// (`/` when the URL has none). An entry of `resolve` naming the URL's host and port gives
/// the address; else the host is resolved.
pub(crate) struct Split {
    pub addr: SocketAddr,
    pub authority: String,
    pub host: String,
    pub path: String,
}

/// Splits `url` (see [`Split`]); `resolve` as curl's `--resolve`.
pub(crate) fn split(url: &str, scheme: &Scheme, resolve: &[Resolve]) -> Result<Split, String> {
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
    // The host without an IPv6 literal's zone: what --resolve and a certificate name.
    let bare = match host.split_once('%') {
        Some((a, _)) if literal6 => a.to_string(),
        _ => host.clone(),
    };
    let given = resolve
        .iter()
        .find(|r| r.port == port && r.host.eq_ignore_ascii_case(&bare));
    let addr = match given {
        Some(r) => SocketAddr::new(r.addr, port),
        None => resolve_host(url, &host, port, literal6, scheme.ipv6, resolve)?,
    };
    // The Host field: the authority without the zone (RFC 6874 §4).
    let authority = match hostport.split_once("%25") {
        Some((a, rest)) => format!("{a}{}", &rest[rest.find(']').unwrap_or(rest.len())..]),
        None => hostport.to_string(),
    };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!("{url:?}: path has spaces or control characters"));
    }
    Ok(Split {
        addr,
        authority,
        host: bare,
        path: path.to_string(),
    })
}

/// The address of `host` by the system's resolver: a name's IPv4 address first (as before
/// IPv6 was served), else its IPv6 one. A failure names a `--resolve` entry given for the
/// host with another port, the likely slip.
fn resolve_host(
    url: &str,
    host: &str,
    port: u16,
    literal6: bool,
    ipv6: bool,
    resolve: &[Resolve],
) -> Result<SocketAddr, String> {
    let hint = || match resolve.iter().find(|r| r.host.eq_ignore_ascii_case(host)) {
        Some(r) => format!(
            " (--resolve {}:{}:{} is for port {}, the URL's port is {port})",
            r.host, r.port, r.addr, r.port
        ),
        None => String::new(),
    };
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{url:?}: cannot resolve {host:?}: {e}{}", hint()))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4() != literal6)
        .or_else(|| addrs.iter().find(|a| ipv6 && a.is_ipv6()))
        .copied()
        .ok_or_else(|| format!("{url:?}: {host:?} has no IPv4 address{}", hint()))
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
            "\"bwudp://10.0.0.2/\": only http:// and https:// URLs are supported"
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

    /// `https://` takes port 443 by default and carries the host as the name TLS asks
    /// for and verifies: a DNS name, or an address (an IPv6 literal without brackets or
    /// zone); `http://` carries none.
    #[test]
    fn https_urls_name_what_tls_verifies() {
        let (t, path) = crate::parse_url("https://127.0.0.1/x").unwrap();
        assert_eq!(
            (t.addr.to_string(), t.host.as_str(), path.as_str()),
            ("127.0.0.1:443".into(), "127.0.0.1", "/x")
        );
        assert_eq!(t.tls_name.unwrap().to_str(), "127.0.0.1");
        let (t, _) = crate::parse_url("https://localhost:8443").unwrap();
        assert_eq!(t.addr.port(), 8443);
        assert_eq!(t.host, "localhost:8443");
        assert_eq!(t.tls_name.unwrap().to_str(), "localhost");
        let (t, _) = crate::parse_url("https://[fe80::1%25lo]:8443/").unwrap();
        assert_eq!(t.host, "[fe80::1]:8443");
        assert_eq!(t.tls_name.unwrap().to_str(), "fe80::1");
        let (t, _) = crate::parse_url("http://127.0.0.1/").unwrap();
        assert!(t.tls_name.is_none());
        assert_eq!(
            crate::parse_url("ftp://10.0.0.2/").unwrap_err(),
            "\"ftp://10.0.0.2/\": only http:// and https:// URLs are supported"
        );
        assert!(crate::parse_url("https://10.0.0.2:0/").is_err());
        assert_eq!(
            crate::parse_url("https:///x").unwrap_err(),
            "\"https:///x\": no host"
        );
        let to: Vec<super::Resolve> = vec!["bad!name.test:443:127.0.0.1".parse().unwrap()];
        let e = crate::parse_url_with("https://bad!name.test/", &to).unwrap_err();
        assert!(e.contains("no DNS name or address for TLS"), "{e}");
    }

    /// curl's `--resolve HOST:PORT:ADDR`: parsed with its errors said, and used for the URLs
    /// naming that host (any case) and port, http:// and https:// alike; the name stays the
    /// URL's. A name without DNS and no matching entry fails, naming an entry for another
    /// port.
    #[test]
    fn resolve_entries_parse_and_give_the_address() {
        use super::Resolve;
        let r: Resolve = "site.test:8443:127.0.0.1".parse().unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.addr.to_string()),
            ("site.test", 8443, "127.0.0.1".into())
        );
        let r: Resolve = "site.test:443:[::1]".parse().unwrap();
        assert_eq!(r.addr.to_string(), "::1");
        let r: Resolve = "site.test:443:::1".parse().unwrap();
        assert_eq!(r.addr.to_string(), "::1");
        let r: Resolve = "[2001:db8::1]:443:10.0.0.2".parse().unwrap();
        assert_eq!((r.host.as_str(), r.port), ("2001:db8::1", 443));
        for (bad, says) in [
            ("site.test", "expected HOST:PORT:ADDR"),
            ("site.test:443", "expected HOST:PORT:ADDR"),
            (":443:127.0.0.1", "no host name"),
            ("site.test:0:127.0.0.1", "bad port"),
            ("site.test:https:127.0.0.1", "bad port"),
            ("site.test:443:localhost", "is no IPv4 or IPv6 address"),
            (
                "site.test:443:10.0.0.1,10.0.0.2",
                "one address per --resolve",
            ),
            ("[::1:443:10.0.0.1", "expected HOST:PORT:ADDR"),
        ] {
            let e = bad.parse::<Resolve>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let given: Vec<Resolve> = vec![
            "SITE.test:8443:127.0.0.2".parse().unwrap(),
            "site.test:80:127.0.0.3".parse().unwrap(),
        ];
        let (t, _) = crate::parse_url_with("https://site.test:8443/a", &given).unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.2:8443");
        assert_eq!(t.host, "site.test:8443");
        assert_eq!(t.tls_name.unwrap().to_str(), "site.test");
        let (t, _) = crate::parse_url_with("http://site.test/", &given).unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.3:80");
        assert_eq!(t.host, "site.test");
        // Another port than the entries': resolved by DNS, which knows no .test name.
        let e = crate::parse_url_with("https://site.test/", &given).unwrap_err();
        assert!(e.contains("is for port 8443, the URL's port is 443"), "{e}");
        // An address URL can be redirected too.
        let to: Vec<Resolve> = vec!["10.9.9.9:443:127.0.0.1".parse().unwrap()];
        let (t, _) = crate::parse_url_with("https://10.9.9.9/", &to).unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.1:443");
        assert_eq!(t.tls_name.unwrap().to_str(), "10.9.9.9");
    }
}
