//! The fetcher's public types: where it is ([`Config`]), how a fetch ends ([`End`],
//! [`Failure`]), what its owner hears ([`Handler`]) and its [`Counters`].

use crate::iface::FetchLink;
use crate::wire::{EthernetAddress, Ipv4Address};

use super::{REQUEST_MAX, RX_WINDOW};

/// Where the fetcher is and whom it asks.
#[derive(Debug, Clone)]
pub struct Config {
    /// The fetcher's place on its link and the server (its TCP port).
    pub link: FetchLink,
    /// Slots: fetches that may be in progress at once.
    pub slots: usize,
    /// TCBs (at least `slots`; more let closing connections linger while their slots go
    /// on).
    pub tcbs: usize,
    /// Local ports `[first, last]`.
    pub ports: (u16, u16),
    /// Where in `ports` the free-list begins (an offset, modulo the range's length). A
    /// load generator gives a random one per run: a run that began on the last run's ports
    /// would send its first SYNs on 4-tuples whose connections the server may still hold
    /// open (fetches that run's time bound cut off).
    pub port_start: u16,
    /// Key of the ISNs and timestamp offsets.
    pub isn_key: [u8; 16],
    /// Give up on a connection that makes no progress for this long.
    pub stall_ns: u64,
    /// Retransmissions of one segment before giving up.
    pub max_retries: u8,
    /// Bytes of each slot's request buffer (all of a pipelined burst's requests).
    pub request_max: usize,
    /// The receive window each connection advertises (bytes; up to 65,535 << 14). A
    /// response is taken as it comes (nothing is buffered), so this bounds only what a
    /// server may have in flight towards us, and what the link's queue to us must hold.
    /// Above 65,535 our SYN offers the window scale that can say it (RFC 7323; without
    /// the server's agreement the window stays at 65,535).
    pub rx_window: u32,
}

impl Config {
    /// Defaults: 2 TCBs per slot, Linux's ephemeral range, 10 s stall, 8 retries, a
    /// 64 KiB window ([`RX_WINDOW`]).
    pub fn new(
        mac: EthernetAddress,
        ip: Ipv4Address,
        prefix_len: u8,
        server: Ipv4Address,
        port: u16,
        slots: usize,
    ) -> Config {
        Config {
            link: FetchLink {
                mac,
                ip,
                prefix_len,
                gateway: None,
                server,
                port,
                v6: None,
            },
            slots,
            tcbs: 2 * slots.max(1),
            ports: (32_768, 60_999),
            port_start: 0x5a5a,
            isn_key: [0x5a; 16],
            stall_ns: 10_000_000_000,
            max_retries: 8,
            request_max: REQUEST_MAX,
            rx_window: RX_WINDOW,
        }
    }
}

/// Why a fetch failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The server answered our SYN with a RST.
    Refused,
    /// No SYN-ACK came (the SYN's retries were spent).
    NoAnswer,
    /// The server reset the connection.
    Reset,
    /// The server closed before the response was complete.
    Closed,
    /// The response did not parse.
    BadResponse,
    /// The connection made no progress (retransmissions or the stall bound).
    Stalled,
    /// No TCB or local port was free (the fetch never started).
    NoResources,
}

/// How a fetch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// A complete response with this status and this many body bytes.
    Done {
        /// The HTTP status.
        status: u16,
        /// Body bytes.
        body: u64,
    },
    /// The fetch failed.
    Failed(Failure),
}

/// The owner's side of the fetches.
pub trait Handler {
    /// Body bytes of slot `slot`'s response, at `offset` of the body.
    fn body(&mut self, slot: u32, offset: u64, data: &[u8]) {
        let _ = (slot, offset, data);
    }
    /// Slot `slot`'s new connection was established at `now_ns` (its request goes now).
    fn connected(&mut self, slot: u32, now_ns: u64) {
        let _ = (slot, now_ns);
    }
    /// The first byte of slot `slot`'s response came at `now_ns`.
    fn first_byte(&mut self, slot: u32, now_ns: u64) {
        let _ = (slot, now_ns);
    }
    /// Slot `slot`'s fetch ended at `now_ns`.
    fn end(&mut self, slot: u32, end: End, now_ns: u64);
}

/// Frame and connection counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames received.
    pub rx: u64,
    /// Frames sent.
    pub tx: u64,
    /// Frames not sent: no transmit slot, or the ring refused.
    pub tx_full: u64,
    /// Frames received whose TCP checksum the device vouched for (not verified here).
    pub rx_csum_trusted: u64,
    /// Received frames not for a connection of ours, or dropped by ingress (a bad
    /// checksum among them): counted, ignored or reset.
    pub ignored: u64,
    /// Connections opened.
    pub connections: u64,
    /// Segments sent again (timeouts, fast retransmit, probes).
    pub retransmits: u64,
    /// RSTs sent.
    pub resets_sent: u64,
    /// ARP requests sent (over IPv6: neighbour solicitations for the next hop).
    pub arp_requests: u64,
    /// Packet Too Big messages taken (IPv6: quoting a segment in flight).
    pub too_big: u64,
}
