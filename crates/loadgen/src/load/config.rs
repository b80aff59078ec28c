//! What a load run is asked to do: the server ([`Target`], [`parse_url`]), the URLs and
//! what their responses must carry, the mode and bounds ([`LoadConfig`]), and the
//! [`Progress`] shown while it runs.

use std::net::{SocketAddrV4, ToSocketAddrs};
use std::time::Duration;

use crate::surge::SurgeParams;

/// Where the server is.
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: SocketAddrV4,
    /// Value of the Host header.
    pub host: String,
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

/// Splits `http://host[:port]/path` into a target and a path.
pub fn parse_url(url: &str) -> Result<(Target, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url:?}: only http:// URLs are supported"))?;
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if hostport.is_empty() {
        return Err(format!("{url:?}: no host"));
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("{url:?}: bad port {p:?}"))?,
        ),
        None => (hostport, 80),
    };
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{url:?}: cannot resolve {host:?}: {e}"))?
        .find_map(|a| match a {
            std::net::SocketAddr::V4(v4) => Some(v4),
            _ => None,
        })
        .ok_or_else(|| format!("{url:?}: {host:?} has no IPv4 address"))?;
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!("{url:?}: path has spaces or control characters"));
    }
    Ok((
        Target {
            addr,
            host: hostport.to_string(),
        },
        path.to_string(),
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
