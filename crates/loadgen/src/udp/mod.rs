//! Clients of the UDP paper's stateless protocol over ordinary sockets (any Linux host):
//! [`fetch`], one file as `bareweb get bwudp://…` does it, and the load generator of
//! `bareweb load --udp` ([`load`], reported by [`report`]). Both drive the engine's fetcher state machine
//! (`bareweb_engine::udp::fetch::Transfer`), which owns every protocol decision; this
//! module only moves datagrams and keeps time.

pub mod load;
pub mod report;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::url::{split, Scheme};
use bareweb_engine::udp::fetch::{Counts, Failure, Sink, Step, Timing, Transfer};
use bareweb_engine::udp::wire::{write_request, Start, DEFAULT_PORT, MAX_REQUEST, PAD_TO};

/// Where a `bwudp://` URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpTarget {
    /// The server's address and UDP port (IPv4 or IPv6).
    pub addr: SocketAddr,
    /// The authority as written (the `Host` field).
    pub host: String,
}

/// Splits `bwudp://host[:port]/path` (port 80 by default; an IPv6 literal in brackets,
/// `bwudp://[2001:db8::1]:9000/`) into a target and a path. Over IPv6 a request must fit
/// one packet of a 1500-octet link, 1452 octets of UDP payload (docs/udp-protocol.md §2):
/// a path too long for that is refused here, not sent as fragments the server drops.
pub fn parse_url(url: &str) -> Result<(UdpTarget, String), String> {
    let scheme = Scheme {
        prefix: "bwudp://",
        other: "not a bwudp:// URL",
        default_port: DEFAULT_PORT,
        ipv6: true,
    };
    let crate::url::Split {
        addr,
        authority: host,
        path,
        ..
    } = split(url, &scheme, &[])?;
    if addr.is_ipv6() {
        // The longest request of a transfer: a subsequent GET from the largest packet
        // number, with a token.
        let mut req = [0u8; MAX_REQUEST];
        let longest = write_request(
            &mut req,
            &host,
            &path,
            Start::From(u32::MAX - 1),
            Some(&[0; 8]),
            0,
        );
        if longest.is_some_and(|n| n > MAX_REQUEST_V6) {
            return Err(format!(
                "{url:?}: the path is too long for a request over IPv6 ({MAX_REQUEST_V6} octets \
                 of UDP payload at most)"
            ));
        }
    }
    Ok((UdpTarget { addr, host }, path))
}

/// The largest request over IPv6: 1500 less the IPv6 and UDP headers.
pub const MAX_REQUEST_V6: usize = 1500 - 40 - 8;

/// A UDP socket of a fresh port, connected to `addr` (bound in its family).
pub(crate) fn socket_to(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let any = if addr.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let s = UdpSocket::bind(any)?;
    s.connect(addr)?;
    Ok(s)
}

/// A fetched file.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The HTTP response head (packet 1).
    pub head: Vec<u8>,
    /// The body.
    pub body: Vec<u8>,
    /// What the transfer counted.
    pub counts: Counts,
    /// Wall time from the first GET to the last packet.
    pub elapsed: Duration,
}

/// Largest body [`fetch`] keeps in memory.
pub const FETCH_MAX: u64 = 1 << 32;

#[derive(Default)]
struct Buffer {
    head: Vec<u8>,
    body: Vec<u8>,
}

impl Sink for Buffer {
    fn begin(&mut self, total: u64) -> bool {
        if total >= FETCH_MAX {
            return false;
        }
        self.body = vec![0; total as usize];
        true
    }
    fn head(&mut self, head: &[u8]) {
        self.head = head.to_vec();
    }
    fn data(&mut self, offset: u64, bytes: &[u8]) {
        let o = offset as usize;
        if let Some(dst) = self.body.get_mut(o..o + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
    }
}

/// Why [`fetch`] failed.
#[derive(Debug)]
pub enum FetchError {
    /// A socket call failed.
    Io(std::io::Error),
    /// The transfer gave up (the state machine's reason), with what it had counted.
    Transfer(Failure, Counts),
    /// The request cannot be written (a path too long for one datagram, or bad octets).
    Request,
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Io(e) => write!(f, "{e}"),
            FetchError::Request => f.write_str("the request does not fit one datagram"),
            FetchError::Transfer(Failure::Timeout, c) if c.packets == 0 => write!(
                f,
                "no answer after {} GETs (is a server there with --udp-port?)",
                c.gets
            ),
            FetchError::Transfer(Failure::Timeout, c) => write!(
                f,
                "the transfer stalled: {} packets, then {} timeouts in a row",
                c.packets, c.timeouts
            ),
            FetchError::Transfer(Failure::Refused(e), _) => {
                write!(f, "the server refused the request: {}", e.text())
            }
            FetchError::Transfer(Failure::RefusedUnknown(c), _) => {
                write!(f, "the server refused the request (error code {c})")
            }
            FetchError::Transfer(Failure::Inconsistent, _) => {
                f.write_str("the server's answers contradict each other")
            }
            FetchError::Transfer(Failure::TooLarge, _) => {
                write!(
                    f,
                    "the file is too large for this client ({FETCH_MAX} bytes at most)"
                )
            }
        }
    }
}

/// Fetches `path` from `target` over a socket of its own (a fresh port: nothing of an
/// earlier transfer can reach it).
pub fn fetch(target: &UdpTarget, path: &str, timing: Timing) -> Result<Fetched, FetchError> {
    let sock = socket_to(target.addr).map_err(FetchError::Io)?;
    let t0 = Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    let mut t = Transfer::new(timing, None);
    let mut sink = Buffer::default();
    let mut req = [0u8; MAX_REQUEST];
    let mut buf = [0u8; 2048];
    let mut step = t.begin(now());
    loop {
        match step {
            Step::Send(start) => {
                let pad = if start == Start::Initial { PAD_TO } else { 0 };
                let n = write_request(&mut req, &target.host, path, start, t.token(), pad)
                    .ok_or(FetchError::Request)?;
                // A send refused by a full socket buffer is like a lost datagram.
                let _ = sock.send(&req[..n]);
            }
            Step::Done => {
                return Ok(Fetched {
                    head: sink.head,
                    body: sink.body,
                    counts: t.counts,
                    elapsed: t0.elapsed(),
                })
            }
            Step::Failed(f) => return Err(FetchError::Transfer(f, t.counts)),
            Step::Wait => {}
        }
        let wait = t.deadline().saturating_sub(now()).max(1_000);
        sock.set_read_timeout(Some(Duration::from_nanos(wait)))
            .map_err(FetchError::Io)?;
        step = match sock.recv(&mut buf) {
            Ok(n) => match t.on_packet(&buf[..n], now(), &mut sink) {
                // Datagrams that bring nothing must not hold the timeout off.
                Step::Wait if now() >= t.deadline() => t.on_timeout(now()),
                s => s,
            },
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                t.on_timeout(now())
            }
            // ICMP port unreachable from an earlier datagram: no server (yet); wait.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                std::thread::sleep(Duration::from_nanos(wait.min(50_000_000)));
                t.on_timeout(now())
            }
            Err(e) => return Err(FetchError::Io(e)),
        };
    }
}
