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
//! - [`neigh`](mod@neigh): the next hop's MAC for a virtual address's connections (direct
//!   server return): a small ARP cache per server that learns only replies to its own
//!   requests.
//! - [`ipv6`](mod@ipv6): IPv6 on the link: frames of EtherType 0x86DD walked to their
//!   ICMPv6 message; neighbour solicitations for our address answered and learned, echo
//!   answered, the frames DAD and resolution send; with [`addr6`](mod@addr6) (the
//!   link-local address: RFC 7217's stable identifier and duplicate address detection)
//!   and [`neigh6`](mod@neigh6) (the neighbour cache of RFC 4861, fixed size, its states
//!   and timers), and [`slaac`](mod@slaac) (what router advertisements give: routers,
//!   prefixes and the global addresses made in them, the MTU; router solicitations), and
//!   [`mld6`](mod@mld6) (the multicast listener: MLDv2 reports of the groups the link
//!   listens to, answers to queries, MLDv1 compatibility), and [`dhcp6`](mod@dhcp6) (the
//!   DHCPv6 client: a leased address, renewed, when routers' M flag or `--ip6 dhcp6` asks).
//! - [`share6`](mod@share6): the per-queue mode's cores sharing one IPv6 link: core 0 runs
//!   it and publishes its addresses, the others follow and pass it the link's own frames.

pub mod addr6;
pub mod client6;
pub mod dhcp6;
pub mod egress;
pub mod ingress;
pub mod ipv6;
pub mod mld6;
pub mod neigh;
pub mod neigh6;
pub mod share6;
pub mod slaac;

pub use egress::{Egress, Sent};
pub use ingress::{
    admissible_syn, classified, ingress, ingress_offloaded, tcp_repr, Drop, Ingress,
};
pub use neigh::Neighbours;

use crate::wire::{ArpOperation, ArpPacket, ArpRepr, EthernetAddress, Ipv4Address, Ipv6Address};

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
    /// Virtual addresses whose TCP traffic is served too (direct server return), never
    /// answered in ARP.
    pub vips: Vips,
}

impl Interface {
    /// Which of our addresses `dst` is: 0 our own, `k` the `k`-th virtual address
    /// (1-based); `None`: not ours.
    #[inline(always)]
    pub fn local(&self, dst: Ipv4Address) -> Option<u8> {
        if dst == self.ip {
            Some(0)
        } else {
            self.vips.index(dst).map(|i| i as u8 + 1)
        }
    }
}

/// Most virtual addresses a server answers for.
pub const MAX_VIPS: usize = 8;

/// [`Interface::local`]'s numbers for the IPv6 link's addresses: `LOCAL_V6 | slot`, the
/// slot as `ipv6::Link::slot_of` gives it (0 the link-local address, then the global
/// ones). Far above any virtual address's number.
pub const LOCAL_V6: u8 = 0x80;

/// The virtual addresses (VIPs) a server answers for besides its own, as a real server
/// behind a direct-routing balancer (Linux IPVS-DR, keepalived, ECMP or anycast routers):
/// the balancer forwards frames for a VIP to our MAC unchanged; we accept TCP segments
/// to the VIP and answer from it, straight to the client, but never answer ARP for it
/// (the balancer owns it on the link) nor use it as a source otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Vips {
    addrs: [Ipv4Address; MAX_VIPS],
    n: u8,
}

impl Vips {
    /// None.
    pub const NONE: Vips = Vips {
        addrs: [Ipv4Address([0; 4]); MAX_VIPS],
        n: 0,
    };

    /// Adds `a` (already there: nothing); false when [`MAX_VIPS`] are there already.
    pub fn add(&mut self, a: Ipv4Address) -> bool {
        if self.index(a).is_some() {
            return true;
        }
        match self.addrs.get_mut(usize::from(self.n)) {
            Some(slot) => {
                *slot = a;
                self.n += 1;
                true
            }
            None => false,
        }
    }

    /// The addresses, in the order given.
    pub fn as_slice(&self) -> &[Ipv4Address] {
        &self.addrs[..usize::from(self.n)]
    }

    /// Where `a` is among them.
    #[inline(always)]
    pub fn index(&self, a: Ipv4Address) -> Option<usize> {
        self.as_slice().iter().position(|&v| v == a)
    }

    /// The `k`-th (1-based, as [`Interface::local`] numbers them).
    pub fn get(&self, k: u8) -> Option<Ipv4Address> {
        self.as_slice().get(usize::from(k).checked_sub(1)?).copied()
    }
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
    /// Over IPv6 instead: the server, our address and the router (`server` and `ip`
    /// above are then unused).
    pub v6: Option<FetchV6>,
}

/// A fetcher's place on an IPv6 link: its address (held behind duplicate address
/// detection, with its link-local one) and the server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchV6 {
    /// Our global address.
    pub ip: Ipv6Address,
    /// The prefix on the link (a server in it is a neighbour).
    pub prefix_len: u8,
    /// The router for a server off the link (`--gw6`); `None`: a router that advertises
    /// itself (RFC 4861's default router).
    pub gateway: Option<Ipv6Address>,
    /// The server.
    pub server: Ipv6Address,
}

impl FetchV6 {
    /// Where frames to the server go: the server on the link (a link-local address, or
    /// one in our prefix), else the router given, else `advertised` (a router's
    /// advertisement's); `None`: no router known yet.
    pub fn next_hop(&self, advertised: Option<Ipv6Address>) -> Option<Ipv6Address> {
        if self.server.is_link_local() || self.server.in_subnet(self.ip, self.prefix_len) {
            return Some(self.server);
        }
        self.gateway.or(advertised)
    }
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
            vips: Vips::NONE,
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

    /// What an ARP packet (`payload`, past the Ethernet header) tells a fetcher on this
    /// link: the next hop's MAC if it is the next hop's reply, the request to answer if it
    /// asks for our address; `None` if it does not parse.
    pub fn hear_arp(&self, payload: &[u8]) -> Option<ArpHeard> {
        let r = ArpRepr::parse(&ArpPacket::new_checked(payload).ok()?).ok()?;
        let is = |op| r.operation == op;
        Some(ArpHeard {
            next_hop_mac: (is(ArpOperation::Reply) && r.source_protocol_addr == self.next_hop())
                .then_some(r.source_hardware_addr),
            request: (is(ArpOperation::Request) && r.target_protocol_addr == self.ip).then_some(r),
        })
    }
}

/// What [`FetchLink::hear_arp`] found in an ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpHeard {
    /// The next hop's MAC, from its reply.
    pub next_hop_mac: Option<EthernetAddress>,
    /// A request for our address, to answer (`Egress::arp_reply`).
    pub request: Option<ArpRepr>,
}

#[cfg(test)]
mod fetch_link_tests {
    use super::*;
    use crate::wire::arp::BUFFER_LEN;

    const ROUTER: Ipv4Address = Ipv4Address([10, 0, 0, 1]);
    const PEER_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 9]);

    fn link() -> FetchLink {
        FetchLink {
            mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
            ip: Ipv4Address([10, 0, 0, 2]),
            prefix_len: 24,
            gateway: Some(ROUTER),
            server: Ipv4Address([192, 0, 2, 7]),
            port: 80,
            v6: None,
        }
    }

    fn arp(operation: ArpOperation, from: Ipv4Address, to: Ipv4Address) -> [u8; BUFFER_LEN] {
        let mut b = [0u8; BUFFER_LEN];
        ArpRepr {
            operation,
            source_hardware_addr: PEER_MAC,
            source_protocol_addr: from,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: to,
        }
        .emit(&mut ArpPacket::new_unchecked(&mut b[..]));
        b
    }

    #[test]
    fn a_fetcher_learns_its_next_hop_and_answers_for_its_address() {
        let l = link();
        // The server is off the link: the router is the next hop, and its reply counts.
        let h = l.hear_arp(&arp(ArpOperation::Reply, ROUTER, l.ip)).unwrap();
        assert_eq!((h.next_hop_mac, h.request), (Some(PEER_MAC), None));
        // A reply from anyone else teaches nothing.
        let h = l
            .hear_arp(&arp(ArpOperation::Reply, l.server, l.ip))
            .unwrap();
        assert_eq!((h.next_hop_mac, h.request), (None, None));
        // A request for our address is to be answered; one for another is not.
        let h = l
            .hear_arp(&arp(ArpOperation::Request, ROUTER, l.ip))
            .unwrap();
        assert_eq!(h.next_hop_mac, None);
        assert_eq!(h.request.map(|r| r.source_hardware_addr), Some(PEER_MAC));
        let other = Ipv4Address([10, 0, 0, 3]);
        let h = l
            .hear_arp(&arp(ArpOperation::Request, ROUTER, other))
            .unwrap();
        assert_eq!(h.request, None);
        // What does not parse is said so.
        assert_eq!(l.hear_arp(&[0u8; 10]), None);
    }
}
