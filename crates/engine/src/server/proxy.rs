//! The PROXY protocol on the server's connections (HAProxy's doc/proxy-protocol.txt): a
//! connection from a `--proxy-protocol` source begins with a header naming the client it
//! relays; the header is read here, before the connection's first request, and the client
//! it names becomes the connection's client for the access log, the per-address limit and
//! the stats page's `allow`.
//!
//! Where it sits: the header's bytes arrive like request bytes (TCP delivers them in order
//! into the connection's receive slab, in as many segments as they came in), and the HTTP
//! step reads the header first while [`HttpConn::proxy_wait`] is set. A partial header
//! waits for more, bounded by the parser (at most 536 bytes are ever needed) and by the
//! request timeout, which runs from the connection's establishment. On the HTTPS port the
//! header comes before the TLS bytes and is read from the ciphertext held for the session
//! (`proxy_header_tls`), so the session never sees it. What is refused is
//! counted by reason (`proxy_missing`, `proxy_malformed`, `proxy_too_long`,
//! `proxy_forbidden`) and the connection is reset: §2.1, "Any sequence which does not
//! exactly match the protocol must be discarded and cause the receiver to abort the
//! connection".
//!
//! [`HttpConn::proxy_wait`]: crate::http::conn::HttpConn::proxy_wait

use core::net::IpAddr;

use super::Server;
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::tcp::per_ip::limit_key;
use crate::tcp::port_table::{mapped, v4_of};
use crate::wire::proxy::{self, Error, Parsed};

/// The per-address table's key for a client a PROXY header names.
pub(super) fn limit_key_of(client: IpAddr) -> [u8; 16] {
    match client {
        IpAddr::V4(v4) => mapped(v4.octets()),
        IpAddr::V6(v6) => limit_key(&v6.octets()),
    }
}

/// [`Server::client_of`] as an expression over the fields it reads, so that it can be
/// used where other fields of the server are borrowed (the response step).
macro_rules! client_of {
    ($s:expr, $idx:expr) => {
        match $s.proxy {
            true => $s.clients[$idx].unwrap_or($s.conns[$idx].peer.ip_addr()),
            false => $s.conns[$idx].peer.ip_addr(),
        }
    };
}
pub(super) use client_of;

/// What reading a connection's PROXY header came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Header {
    /// Read (or none was expected): requests may follow.
    Read,
    /// Not whole yet: wait for more bytes.
    Wait,
    /// Refused: the connection is reset and its TCB freed.
    Closed,
}

impl<L: Lookup<'static>> Server<L> {
    /// The client of connection `idx`: the one its PROXY header named, else its peer.
    pub(super) fn client_of(&self, idx: usize) -> IpAddr {
        client_of!(self, idx)
    }

    /// Whether a new connection from `ip` must begin with a PROXY header.
    #[inline]
    pub(super) fn proxy_source(&self, ip: [u8; 16]) -> bool {
        self.proxy && v4_of(&ip).is_some_and(|v4| self.cfg.proxy_protocol.contains(v4))
    }

    /// Reads connection `id`'s PROXY header from the start of its receive slab (it has
    /// [`HttpConn::proxy_wait`](crate::http::conn::HttpConn::proxy_wait)). A whole header
    /// is taken off the slab and its client applied: counted under the per-address limit
    /// (refused past it, like a SYN), used by the log and the stats page's `allow`.
    pub(super) fn proxy_header<T: TxRing>(&mut self, id: u32, tx: &mut T) -> Header {
        let idx = id as usize;
        let cap = self.cfg.rx_buffer;
        let base = idx * cap;
        let rx_len = self.conns[idx].app.rx_len as usize;
        let why = match proxy::parse(&self.rx_slab[base..base + rx_len]) {
            Parsed::Complete { repr, len } => {
                self.rx_slab.copy_within(base + len..base + rx_len, base);
                self.conns[idx].app.rx_len = (rx_len - len) as u32;
                return self.header_read(id, repr.source(), tx);
            }
            Parsed::Partial if !self.conns[idx].tcp.state().peer_closed() => {
                return Header::Wait;
            }
            // The client closed before the header was whole.
            Parsed::Partial => Error::Missing,
            Parsed::Error(e) => e,
        };
        self.refuse_header(id, why, tx);
        Header::Closed
    }

    /// The same for an HTTPS connection: the header comes before the TLS bytes (HAProxy's
    /// `send-proxy` on a TCP-mode backend), read from the start of the ciphertext held for
    /// the session, which then never sees it.
    pub(super) fn proxy_header_tls<T: TxRing>(&mut self, id: u32, tx: &mut T) -> Header {
        let idx = id as usize;
        let why = match proxy::parse(&self.tls_sides[idx].cin) {
            Parsed::Complete { repr, len } => {
                self.tls_sides[idx].cin.drain(..len);
                return self.header_read(id, repr.source(), tx);
            }
            Parsed::Partial if !self.conns[idx].tcp.state().peer_closed() => {
                return Header::Wait;
            }
            Parsed::Partial => Error::Missing,
            Parsed::Error(e) => e,
        };
        self.refuse_header(id, why, tx);
        Header::Closed
    }

    /// Connection `id`'s header was read whole: counted, and the client it names (none for
    /// LOCAL and UNKNOWN: the connection's own peer) applied.
    fn header_read<T: TxRing>(&mut self, id: u32, client: Option<IpAddr>, tx: &mut T) -> Header {
        self.conns[id as usize].app.proxy_wait = false;
        self.stats.proxy_headers += 1;
        match client {
            Some(client) => self.proxied_client(id, client, tx),
            None => Header::Read,
        }
    }

    /// Connection `id`'s header named `client`: counted under the per-address limit (an
    /// IPv6 client by its /64), as a SYN from it would have been (the balancer's own
    /// address was let past the limit at its SYN: `Server::listen`).
    fn proxied_client<T: TxRing>(&mut self, id: u32, client: IpAddr, tx: &mut T) -> Header {
        let idx = id as usize;
        let place = self.per_ip.lookup(limit_key_of(client));
        if place.count() >= self.max_per_ip {
            self.stats.tcp_per_ip_refused += 1;
            self.abort(id, tx);
            return Header::Closed;
        }
        self.per_ip.add_at(place);
        self.clients[idx] = Some(client);
        Header::Read
    }

    /// Counts a refused header by reason and resets its connection.
    pub(super) fn refuse_header<T: TxRing>(&mut self, id: u32, why: Error, tx: &mut T) {
        let s = &mut self.stats;
        match why {
            Error::Missing => s.proxy_missing += 1,
            Error::Malformed => s.proxy_malformed += 1,
            Error::TooLong => s.proxy_too_long += 1,
        }
        self.abort(id, tx);
    }

    /// The first bytes of connection `id` failed to parse as a request and begin like a
    /// PROXY header, from a source not trusted to send one: §5, "if the opportunity is
    /// left to a normal client to use the protocol, it will be able to hide its
    /// activities or make them appear as coming from somewhere else". Counted, and the
    /// connection reset rather than answered 400.
    pub(super) fn forbid_header<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        self.stats.proxy_forbidden += 1;
        self.abort(id, tx);
    }

    /// Resets connection `id` and frees its TCB.
    pub(super) fn abort<T: TxRing>(&mut self, id: u32, tx: &mut T) {
        let seq = self.conns[id as usize].tcp.snd_nxt();
        self.remember_reset(id);
        self.send_reset_raw(id, seq, tx);
        self.free_tcb(id);
    }
}
