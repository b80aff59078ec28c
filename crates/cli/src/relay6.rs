//! `bareweb run --listen6`: the IPv6 host address of a run on QEMU's user networking.
//!
//! QEMU's `hostfwd` takes IPv4 host addresses only (QEMU 10.0 refuses
//! `hostfwd=tcp:[::1]:8080-:80` with "Bad host address", though libslirp could), so `run`
//! listens on the IPv6 address itself and relays each connection to the IPv4 forward
//! (`--listen`), byte for byte both ways. What the guest sees is therefore the forward's
//! IPv4 connection from slirp's host address, as for `--listen`: the kernel's own IPv6
//! (its address on slirp's `fec0::/64`, by SLAAC) is not reached from the host this way;
//! it is tested on a TAP.
//!
//! Bounded: at most [`MAX_CONNECTIONS`] at once (one more is closed at accept), each
//! relayed by two threads that end when either side closes: the server's close ends the
//! client's side too (a blocked read returns), the client's half-close is passed on
//! (a request sent with `shutdown(SHUT_WR)` still gets its response).

use std::io;
use std::net::{Shutdown, SocketAddr, SocketAddrV4, SocketAddrV6, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The most connections relayed at once.
pub const MAX_CONNECTIONS: usize = 256;
/// How long the IPv4 forward may take to accept.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where `--listen6` points: the IPv6 host address, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen6 {
    /// `[ADDR]:PORT`.
    At(SocketAddrV6),
    /// `off`.
    Off,
}

impl std::str::FromStr for Listen6 {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(Listen6::Off),
            _ => s
                .parse()
                .map(Listen6::At)
                .map_err(|_| format!("expected [IPV6]:PORT (e.g. [::1]:8080) or off, not {s:?}")),
        }
    }
}

/// Where a relay connects: the IPv4 forward, at loopback when it listens on every address.
pub fn target(listen: SocketAddrV4) -> SocketAddrV4 {
    match listen.ip().is_unspecified() {
        true => SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, listen.port()),
        false => listen,
    }
}

/// Binds `at` (the caller says what a failure means).
pub fn bind(at: SocketAddrV6) -> io::Result<TcpListener> {
    TcpListener::bind(at)
}

/// Relays every connection `listener` accepts to `to`, on threads of its own, for as
/// long as the process runs.
pub fn start(listener: TcpListener, to: SocketAddrV4) {
    let live = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            if live.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                drop(client);
                continue;
            }
            live.fetch_add(1, Ordering::Relaxed);
            let live = Arc::clone(&live);
            std::thread::spawn(move || {
                let _ = relay(client, to);
                live.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
}

/// One connection, until both directions ended.
fn relay(client: TcpStream, to: SocketAddrV4) -> io::Result<()> {
    let server = TcpStream::connect_timeout(&SocketAddr::V4(to), CONNECT_TIMEOUT)?;
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut c_read, mut s_write) = (client.try_clone()?, server.try_clone()?);
    // Client to server: the client's half-close is passed on.
    let up = std::thread::spawn(move || {
        let _ = io::copy(&mut c_read, &mut s_write);
        let _ = s_write.shutdown(Shutdown::Write);
    });
    // Server to client: when the server is done, so is the client's side (its blocked
    // read above returns, and the thread ends).
    let (mut s_read, mut c_write) = (server, client);
    let _ = io::copy(&mut s_read, &mut c_write);
    let _ = c_write.shutdown(Shutdown::Both);
    let _ = s_read.shutdown(Shutdown::Both);
    let _ = up.join();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::Ipv6Addr;

    #[test]
    fn listen6_takes_an_address_with_port_or_off() {
        assert_eq!("off".parse::<Listen6>(), Ok(Listen6::Off));
        let at: Listen6 = "[::1]:8080".parse().unwrap();
        assert_eq!(
            at,
            Listen6::At(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 8080, 0, 0))
        );
        assert!("::1"
            .parse::<Listen6>()
            .unwrap_err()
            .contains("[IPV6]:PORT"));
        assert!("127.0.0.1:80".parse::<Listen6>().is_err());
    }

    #[test]
    fn an_unspecified_forward_is_reached_at_loopback() {
        let any: SocketAddrV4 = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(target(any), "127.0.0.1:8080".parse().unwrap());
        let one: SocketAddrV4 = "127.0.0.2:81".parse().unwrap();
        assert_eq!(target(one), one);
    }

    /// A request relayed with the client's half-close gets the whole answer, and the
    /// server's close ends the connection.
    #[test]
    fn bytes_go_both_ways_and_half_closes_pass() {
        let l6 = bind(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 0, 0, 0)).expect("IPv6 loopback");
        let at = match l6.local_addr().unwrap() {
            SocketAddr::V6(a) => a,
            SocketAddr::V4(_) => unreachable!(),
        };
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = match server.local_addr().unwrap() {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => unreachable!(),
        };
        start(l6, to);
        let echo = std::thread::spawn(move || {
            let (mut s, _) = server.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap(); // ends at the relayed half-close
            s.write_all(&got).unwrap();
            s.write_all(b" and back").unwrap();
        });
        let mut c = TcpStream::connect(at).unwrap();
        c.write_all(b"there").unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut back = String::new();
        c.read_to_string(&mut back).unwrap(); // ends at the server's close
        assert_eq!(back, "there and back");
        echo.join().unwrap();
    }
}
