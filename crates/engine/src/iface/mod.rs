//! The interface: Ethernet/ARP/IPv4/ICMP in and out, and the TCP segment's way to and from
//! the wire. It owns the server's addresses and nothing else: no connection state.
//!
//! - [`ingress`](mod@ingress): a received frame → what it is for us ([`Ingress`]): an ARP request for
//!   our address, an ICMP echo request, a TCP segment for our port (checksum verified,
//!   parsed into a [`TcpRepr`](crate::wire::tcp::ParsedRepr)) or for a closed one, a UDP
//!   datagram for the stateless protocol's port, or a drop with its reason;
//!   [`ingress_offloaded`] skips the TCP checksum of a frame the device vouched for (the
//!   bare load generator's TAP with receive offloads). Also [`admissible_syn`]: the one rule for which segment may
//!   open a connection, used by the server's LISTEN and by network-core dispatch.
//! - [`egress`](mod@egress): frames out: ARP reply, ICMP echo reply, TCP segments (header + head bytes
//!   copied + body borrowed from the site image, checksum from the stored block sums, or
//!   a partial checksum for segmentation offload), bare RSTs, and UDP datagrams of the
//!   stateless protocol (header copied, body borrowed, checksum from block sums).

pub mod egress;
pub mod ingress;

pub use egress::{Egress, Sent};
pub use ingress::{admissible_syn, classified, ingress, ingress_offloaded, Drop, Ingress};

use crate::wire::{EthernetAddress, Ipv4Address};

/// The server's addresses on its link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interface {
    /// Our MAC.
    pub mac: EthernetAddress,
    /// Our IPv4 address.
    pub ip: Ipv4Address,
    /// Prefix length of the link's subnet.
    pub prefix_len: u8,
    /// Whether a router forwards for clients beyond the link (off-link sources are
    /// dropped without one).
    pub gateway: bool,
    /// The TCP port served.
    pub port: u16,
    /// The UDP port of the stateless protocol (`crate::udp`), if served.
    pub udp_port: Option<u16>,
}

/// A fetcher's place on its link and the server it talks to: what the engine's two
/// fetchers (TCP, `crate::fetch`; the stateless protocol's, `crate::udp::bare`) share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLink {
    /// The fetcher's MAC (its NIC's).
    pub mac: EthernetAddress,
    /// The fetcher's address.
    pub ip: Ipv4Address,
    /// Prefix length of the link.
    pub prefix_len: u8,
    /// The router, for a server off the link.
    pub gateway: Option<Ipv4Address>,
    /// The server.
    pub server: Ipv4Address,
    /// The server's port (TCP or UDP).
    pub port: u16,
}

impl FetchLink {
    /// The interface the fetcher sends from (it serves no port).
    pub fn interface(&self) -> Interface {
        Interface {
            mac: self.mac,
            ip: self.ip,
            prefix_len: self.prefix_len,
            gateway: self.gateway.is_some(),
            port: 0,
            udp_port: None,
        }
    }

    /// Where the fetcher's frames go, and whom it asks ARP for: the server, or the router
    /// for a server off the link.
    pub fn next_hop(&self) -> Ipv4Address {
        match self.gateway {
            Some(g) if !self.server.in_subnet(self.ip, self.prefix_len) => g,
            _ => self.server,
        }
    }
}
