//! The UDP paper's stateless UDP web protocol ("bwudp", specified in docs/udp-protocol.md):
//! a GET datagram in, a Get-Ack, the HTTP head and a burst of data packets out, and
//! nothing kept; the client asks for the rest, and for whatever was lost, with subsequent
//! GETs that name a starting packet.
//!
//! - [`wire`]: the request datagram and the 16-octet data header (pure, fuzzed);
//! - [`answer`]: which packets answer a request, from the site and the bounds (pure);
//! - [`token`]: address-validation tokens (keyed MAC of the address and a period);
//! - [`limit`]: the per-source rate limit (fixed table of token buckets);
//! - [`ids`]: the request-id stack (the paper's "max parallel");
//! - [`fetch`]: the fetching side of one transfer as a state machine (used by `bareweb
//!   get`, the load generator and the bare fetcher);
//! - [`load`]: the load generator's schedule (the paper's frequency and maxreq), slots and
//!   counters, shared by the socket load generator and the bare fetcher;
//! - [`bare`]: the bare fetcher: that load generator on the engine's own frames over a
//!   `Nic` (a TAP of its own on the host, or the kernel booted with `client=udp`).
//!
//! The server's glue (a datagram in, frames out) is `server::udp`; frames are built by
//! `iface::egress::Egress::udp`, with the body borrowed from the site image and its
//! checksum from the stored block sums. Nothing here allocates after start, keeps state
//! per request, or panics on what a peer sends.

pub mod answer;
#[cfg(any(test, feature = "alloc"))]
pub mod bare;
#[cfg(test)]
mod capture_tests;
pub mod fetch;
#[cfg(any(test, feature = "alloc"))]
pub mod ids;
#[cfg(any(test, feature = "alloc"))]
pub mod limit;
#[cfg(any(test, feature = "alloc"))]
pub mod load;
pub mod token;
pub mod wire;

pub use wire::{Header, Start, State};

/// The UDP server's configuration (a part of `server::Config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// The UDP port served.
    pub port: u16,
    /// Request ids on the stack (1..=ids).
    pub ids: u16,
    /// Packets per burst (the paper's n: 4 to 8 there; 1 to 64 here).
    pub burst: u8,
    /// Paper mode: no amplification bound, no token, no rate limit (the UDP paper as written).
    pub paper_mode: bool,
    /// GETs per second answered per source address that proved it receives our packets
    /// (0: unlimited). Sources that have not are held to `limit::UNPROVEN_RATE`.
    pub rate: u32,
    /// This core's id, sent in every packet (set per core by `cores::plan`).
    pub core: u8,
}

/// Most packets in a burst.
pub const MAX_BURST: u8 = 64;
/// The answer to a source that has not proved its address is at most this many times
/// the request's size (RFC 9000 §8.1's factor).
pub const AMPLIFICATION: usize = 3;

impl Config {
    /// Defaults (the UDP paper's: ids 1..5000, n = 8; bounds on) for `port`.
    pub fn new(port: u16) -> Config {
        Config {
            port,
            ids: 5000,
            burst: 8,
            paper_mode: false,
            rate: 20_000,
            core: 0,
        }
    }
}
