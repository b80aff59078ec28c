//! What a load run is asked to do: the server ([`Target`], [`parse_url`]), the URLs and
//! what their responses must carry, the mode and bounds ([`LoadConfig`]), and the
//! [`Progress`] shown while it runs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bareweb_tls::rustls::pki_types::ServerName;
use bareweb_tls::rustls::ClientConfig;

use crate::surge::SurgeParams;
use crate::url::{split, Resolve, Scheme, Split};

/// Where the server is.
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: SocketAddr,
    /// Value of the Host header.
    pub host: String,
    /// `https://`: the name every connection asks for (SNI) and verifies the server's
    /// certificate against (the URL's host: a DNS name or an address); `None` for
    /// `http://`.
    pub tls_name: Option<ServerName<'static>>,
}

/// What a response must carry to count as good (with `--verify`).
#[derive(Clone, Debug)]
pub struct Expect {
    pub len: u64,
    pub sha256: [u8; 32],
}

#[derive(Clone, Debug)]
pub struct UrlEntry {
    pub path: String,
    /// The bodies a good response may carry (any one of them, whole); empty: unchecked.
    pub expect: Vec<Expect>,
}

#[derive(Clone, Debug)]
pub enum Mode {
    Parallel(usize),
    Rate(f64),
    /// Surge sessions arriving at `rate` per second; the URL list is the file set in
    /// popularity order.
    Sessions {
        rate: f64,
        params: SurgeParams,
    },
}

#[derive(Clone, Debug)]
pub struct LoadConfig {
    pub target: Target,
    pub urls: Vec<UrlEntry>,
    pub mode: Mode,
    /// Reuse connections (HTTP/1.1 persistent); otherwise one connection per fetch
    /// (`Connection: close`). Sessions are always persistent.
    pub keepalive: bool,
    /// Most fetches to begin (parallel and rate modes).
    pub fetches: u64,
    /// Most sessions to begin (session mode).
    pub sessions: u64,
    /// Wall-time bound of the run.
    pub seconds: f64,
    /// Most time a connect, or a response, may go without progress.
    pub timeout: f64,
    /// Most connections open at once (slots).
    pub max_conns: usize,
    pub seed: u64,
    pub expect_status: u16,
    /// Call the progress callback this often.
    pub progress_every: Option<Duration>,
    /// The TLS client of an `https://` target ([`super::tls::client_config`]: the roots
    /// it trusts); `None`: the Web PKI's roots. Unused over `http://`.
    pub tls: Option<Arc<ClientConfig>>,
}

impl LoadConfig {
    pub fn new(target: Target, urls: Vec<UrlEntry>, mode: Mode) -> LoadConfig {
        let max_conns = match &mode {
            Mode::Parallel(n) => *n,
            _ => 2048,
        };
        LoadConfig {
            target,
            urls,
            mode,
            keepalive: false,
            fetches: 1_000_000,
            sessions: 100_000,
            seconds: 10.0,
            timeout: 10.0,
            max_conns,
            seed: 1,
            expect_status: 200,
            progress_every: None,
            tls: None,
        }
    }

    pub fn describe(&self) -> String {
        let conn = if self.keepalive {
            "keep-alive"
        } else {
            "connection per fetch"
        };
        match &self.mode {
            Mode::Parallel(n) => format!("parallel {n}, {conn}"),
            Mode::Rate(r) => format!("rate {r}/s, {conn}"),
            Mode::Sessions { rate, .. } => {
                format!("surge sessions {rate}/s, persistent, pipelined bursts")
            }
        }
    }
}

/// Splits `http://host[:port]/path` (port 80 by default) or `https://host[:port]/path`
/// (port 443) into a target and a path.
pub fn parse_url(url: &str) -> Result<(Target, String), String> {
    parse_url_with(url, &[])
}

/// [`parse_url`], with `resolve` (curl's `--resolve HOST:PORT:ADDR`) giving the address of
/// a host and port instead of the resolver; the name stays the URL's.
pub fn parse_url_with(url: &str, resolve: &[Resolve]) -> Result<(Target, String), String> {
    let https = url.starts_with("https://");
    let scheme = Scheme {
        prefix: if https { "https://" } else { "http://" },
        other: "only http:// and https:// URLs are supported",
        default_port: if https { 443 } else { 80 },
        ipv6: true,
    };
    let Split {
        addr,
        authority,
        host,
        path,
    } = split(url, &scheme, resolve)?;
    let tls_name = if https {
        Some(
            ServerName::try_from(host.as_str())
                .map_err(|_| format!("{url:?}: {host:?} is no DNS name or address for TLS"))?
                .to_owned(),
        )
    } else {
        None
    };
    Ok((
        Target {
            addr,
            host: authority,
            tls_name,
        },
        path,
    ))
}

/// Progress shown while a run goes on.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub elapsed_secs: f64,
    pub fetches: u64,
    pub errors: u64,
    pub open: u64,
    /// Fetches per second over the last interval.
    pub recent_rate: f64,
    pub sessions: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host and port as URLs write them; IPv6 literals in brackets (with an RFC 6874 zone)
    /// for HTTP, refused in words for the UDP protocol and without brackets.
    #[test]
    fn authorities_parse_and_ipv6_literals_are_taken_for_http() {
        let hp = |h, v6| crate::url::host_and_port("u", h, 80, v6);
        assert_eq!(hp("h", true), Ok(("h".into(), 80)));
        assert_eq!(hp("10.0.0.2:8080", true), Ok(("10.0.0.2".into(), 8080)));
        assert!(hp("h:0", true).unwrap_err().contains("bad port"));
        assert!(hp("h:x", true).unwrap_err().contains("bad port"));
        assert_eq!(hp("[::1]", true), Ok(("::1".into(), 80)));
        assert_eq!(
            hp("[2001:db8::1]:8080", true),
            Ok(("2001:db8::1".into(), 8080))
        );
        assert_eq!(
            hp("[fe80::1%25eth0]", true),
            Ok(("fe80::1%eth0".into(), 80))
        );
        assert!(hp("[fe80::1%25]", true).unwrap_err().contains("empty zone"));
        assert!(hp("[::1]:0", true).unwrap_err().contains("bad port"));
        assert!(hp("[not:v6:x]", true)
            .unwrap_err()
            .contains("no IPv6 address"));
        for v6 in ["[::1]", "[::1]:8080", "[fe80::1%25eth0]"] {
            let e = hp(v6, false).unwrap_err();
            assert!(
                e.contains("IPv4 only") && !e.contains("bad port"),
                "{v6}: {e}"
            );
        }
        assert!(hp("[::1", true).unwrap_err().contains("no ']'"));
        assert!(hp("::1", true).unwrap_err().contains("in brackets"));
        let (t, p) = parse_url("http://[::1]:8081/x").unwrap();
        assert_eq!(
            (t.addr.to_string(), p.as_str(), t.host.as_str()),
            ("[::1]:8081".into(), "/x", "[::1]:8081")
        );
        // The zone reaches the address (lo's index), not the Host field (RFC 6874 §4).
        let (t, _) = parse_url("http://[fe80::1%25lo]/").unwrap();
        match t.addr {
            std::net::SocketAddr::V6(a) => assert_eq!(a.scope_id(), 1, "lo is index 1"),
            a => panic!("{a}"),
        }
        assert_eq!(t.host, "[fe80::1]");
        let (t, p) = parse_url("http://127.0.0.1:81/a%20b").unwrap();
        assert_eq!(
            (t.addr.port(), p.as_str(), t.host.as_str()),
            (81, "/a%20b", "127.0.0.1:81")
        );
        // The UDP protocol's client speaks IPv6 too; a request too long for one IPv6
        // packet (1452 octets of UDP payload) is refused, one that fits IPv4 is not.
        let (u, p) = crate::udp::parse_url("bwudp://[::1]:9000/x").unwrap();
        assert_eq!(
            (u.addr.to_string(), u.host.as_str(), p.as_str()),
            ("[::1]:9000".into(), "[::1]:9000", "/x")
        );
        let long = format!("/{}", "a".repeat(1400));
        let e = crate::udp::parse_url(&format!("bwudp://[::1]{long}")).unwrap_err();
        assert!(e.contains("too long for a request over IPv6"), "{e}");
        assert!(crate::udp::parse_url(&format!("bwudp://127.0.0.1{long}")).is_ok());
    }
}
