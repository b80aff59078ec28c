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
//! Bounded: at most [`MAX_CONNECTIONS`] at once, fewer when the process may open fewer
//! than four descriptors each (one more is closed at accept; an accept error, such as
//! running out of descriptors, waits 50 ms rather than spinning), each relayed by two
//! threads that end when either side closes: the server's close ends the client's side
//! too (a blocked read returns), the client's half-close is passed on (a request sent
//! with `shutdown(SHUT_WR)` still gets its response); a peer that takes no bytes for
//! [`STALL`] ends its connection. The socket is IPv6-only (`IPV6_V6ONLY`), so `[::]`
//! leaves the IPv4 port to QEMU's forward.

use std::io;
use std::net::{Shutdown, SocketAddr, SocketAddrV4, SocketAddrV6, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The most connections relayed at once.
pub const MAX_CONNECTIONS: usize = 256;
/// How long the IPv4 forward may take to accept.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a write may wait for a peer that reads nothing.
const STALL: Duration = Duration::from_secs(30);

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

/// Binds `at`, IPv6 only (the caller says what a failure means): a dual-stack socket
/// on `[::]` would also take the IPv4 port QEMU's forward needs.
pub fn bind(at: SocketAddrV6) -> io::Result<TcpListener> {
    use std::os::fd::FromRawFd;
    let check = |r: libc::c_int| match r {
        -1 => Err(io::Error::last_os_error()),
        r => Ok(r),
    };
    // SAFETY: plain socket calls on a descriptor made here; on success it is handed to
    // TcpListener, which owns and closes it; on failure it is closed below.
    unsafe {
        let fd = check(libc::socket(
            libc::AF_INET6,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
        ))?;
        let one: libc::c_int = 1;
        let opt = |level, name| {
            check(libc::setsockopt(
                fd,
                level,
                name,
                (&one as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            ))
        };
        let mut sa: libc::sockaddr_in6 = std::mem::zeroed();
        sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
        sa.sin6_port = at.port().to_be();
        sa.sin6_addr.s6_addr = at.ip().octets();
        sa.sin6_scope_id = at.scope_id();
        let done = opt(libc::IPPROTO_IPV6, libc::IPV6_V6ONLY)
            .and_then(|_| opt(libc::SOL_SOCKET, libc::SO_REUSEADDR))
            .and_then(|_| {
                check(libc::bind(
                    fd,
                    (&sa as *const libc::sockaddr_in6).cast(),
                    size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                ))
            })
            .and_then(|_| check(libc::listen(fd, 128)));
        match done {
            Ok(_) => Ok(TcpListener::from_raw_fd(fd)),
            Err(e) => {
                libc::close(fd);
                Err(e)
            }
        }
    }
}

/// The most connections relayed at once: [`MAX_CONNECTIONS`], or what the descriptor
/// limit leaves room for at four a connection (64 kept for the rest of `run`).
fn cap() -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct given.
    let soft = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } {
        0 => r.rlim_cur as usize,
        _ => 1024,
    };
    MAX_CONNECTIONS.min(soft.saturating_sub(64) / 4).max(1)
}

/// Counts a connection while it lives.
struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Relays every connection `listener` accepts to `to`, on threads of its own, for as
/// long as the process runs. Returns an error only when no thread can be started.
pub fn start(listener: TcpListener, to: SocketAddrV4) -> io::Result<()> {
    let live = Arc::new(AtomicUsize::new(0));
    let cap = cap();
    std::thread::Builder::new()
        .name("relay6".into())
        .spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else {
                    // Out of descriptors, or the like: the pending connection stays
                    // queued, so wait instead of failing again at once.
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                if live.load(Ordering::Relaxed) >= cap {
                    drop(client);
                    continue;
                }
                live.fetch_add(1, Ordering::Relaxed);
                let guard = Live(Arc::clone(&live));
                // A thread that cannot start drops the connection and its count.
                let _ = std::thread::Builder::new().spawn(move || {
                    let _guard = guard;
                    let _ = relay(client, to);
                });
            }
        })
        .map(|_| ())
}

/// One connection, until both directions ended.
fn relay(client: TcpStream, to: SocketAddrV4) -> io::Result<()> {
    let server = TcpStream::connect_timeout(&SocketAddr::V4(to), CONNECT_TIMEOUT)?;
    for s in [&client, &server] {
        s.set_nodelay(true)?;
        s.set_write_timeout(Some(STALL))?;
    }
    let (mut c_read, mut s_write) = (client.try_clone()?, server.try_clone()?);
    // Client to server: the client's half-close is passed on.
    let up = std::thread::Builder::new().spawn(move || {
        let _ = io::copy(&mut c_read, &mut s_write);
        let _ = s_write.shutdown(Shutdown::Write);
    })?;
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

    /// `[::]` leaves the IPv4 port free: QEMU's forward binds it after us.
    #[test]
    fn the_listener_is_ipv6_only() {
        let l6 = bind(SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 0, 0, 0)).expect("IPv6");
        let port = l6.local_addr().unwrap().port();
        TcpListener::bind(("0.0.0.0", port)).expect("the IPv4 port is free");
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
        start(l6, to).unwrap();
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
