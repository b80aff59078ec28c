//! Wire formats: zero-copy packet views with checked accessors, in the smoltcp manner
//! (and DHCPv6's client messages, parsed into a value: `dhcpv6`).
//!
//! Contract (every module here keeps it):
//! - untrusted bytes enter only through `Packet::new_checked`, which checks every length
//!   field against the buffer and against each other;
//! - once `new_checked` (or `check_len`) returned `Ok`, no accessor panics;
//! - setters are used only on buffers we own, sized by the emitter.
//!
//! Parsers return the cheap unit [`Error`]; the caller counts it by reason and drops.
//!
//! Tests: each module has small byte fixtures in the shape Linux sends them; bytes really
//! captured on a `bareweb serve` TAP (ARP, ping, curl, wget, Python, UDP, IPv6 noise) are
//! in `testdata/session.pcap`, and Linux's IPv6 neighbour discovery, MLD and ping between
//! two network namespaces in `testdata/ipv6.pcap`; `capture_tests.rs` runs both through
//! every view here.

pub mod arp;
pub mod checksum;
pub mod dhcpv6;
pub mod ethernet;
pub mod icmp;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod proxy;
pub mod tcp;
pub mod udp;
pub mod vnet;

pub use arp::{Operation as ArpOperation, Packet as ArpPacket, Repr as ArpRepr};
pub use ethernet::{Address as EthernetAddress, EtherType, Frame as EthernetFrame};
pub use icmp::{Packet as IcmpPacket, Repr as IcmpRepr};
pub use icmpv6::{NdiscOption, NdiscOptions, Packet as Icmpv6Packet, Repr as Icmpv6Repr};
pub use ipv4::{
    Address as Ipv4Address, Packet as Ipv4Packet, Protocol as IpProtocol, Repr as Ipv4Repr,
};
pub use ipv6::{
    Address as Ipv6Address, NextHeader as Ipv6NextHeader, Packet as Ipv6Packet, Repr as Ipv6Repr,
};
pub use proxy::{Parsed as ProxyParsed, Repr as ProxyRepr};
pub use tcp::{
    Flags as TcpFlags, Packet as TcpPacket, ParsedRepr as TcpParsedRepr, Repr as TcpRepr, TcpOption,
};
pub use udp::{Packet as UdpPacket, Repr as UdpRepr};

/// Why a frame was refused by a parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The buffer is shorter than a header or a length field says.
    Truncated,
    /// A field holds a value the format forbids (bad IHL, bad data offset, ...).
    Malformed,
    /// A checksum did not verify.
    Checksum,
    /// A valid frame of a kind we do not handle (IPv4 fragment, unknown protocol, ...).
    Unsupported,
}

/// Result type of the wire parsers.
pub type Result<T> = core::result::Result<T, Error>;
