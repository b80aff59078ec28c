//! IPv6 on the link: a received frame of EtherType 0x86DD walked to its ICMPv6 message
//! and acted on, and the frames that answers or the clock ask for, built. It owns the
//! link-local address ([`addr6`](super::addr6)), the neighbour cache
//! ([`neigh6`](super::neigh6)) and what routers advertise with the global addresses made
//! from it ([`slaac`](super::slaac)), and the groups it listens to ([`mld6`](super::mld6)),
//! and ties them to the wire; the caller (the server) posts
//! what [`Link::receive`] and [`Link::poll`] return and counts the drops. The router for
//! peers beyond the link and a per-queue spoke's following link are in `route`; the
//! frames the link sends are built in `write`.
//!
//! What is answered: a neighbour solicitation for our preferred address (a solicited
//! advertisement with our link-layer address, RFC 4861 §7.2.4; to all-nodes when it came
//! from `::`), an echo request to it or to all-nodes (RFC 4443 §4.2). Solicitations and advertisements
//! also feed the cache and DAD. A multicast listener query with hop limit 1 and the
//! Router Alert is taken (answered by a report later), other listeners' reports ignored.
//! Every Neighbor Discovery message needs hop limit 255
//! ([`Drop6::HopLimit`]); the ICMPv6 checksum is verified; a fragment, a bad extension
//! chain and everything not served yet (router solicitations) is dropped
//! with its reason. A TCP segment or UDP datagram to an address of ours in use, its
//! checksum verified, is handed to the server ([`Step::Tcp`], [`Step::Udp`]), which
//! serves it as an IPv4 one.

use super::addr6::{self, LinkLocal};
use super::dhcp6::{Client as Dhcp6Client, Event as Dhcp6Event, Poll as Dhcp6Poll};
use super::mld6::{Listener, Report, MAX_GROUPS};
use super::neigh6::{NeighbourCache, Solicit};
use super::share6::{Slots, SLOTS};
use super::slaac::{Routers, Slaac, MAX_PREFIXES};
use super::Drop;
use crate::wire::dhcpv6;
use crate::wire::icmpv6::Message;
use crate::wire::ipv6::{ChainError, Upper, HEADER_LEN as IP6_LEN};
use crate::wire::{
    checksum, ethernet, EtherType, EthernetAddress, EthernetFrame, Icmpv6Packet, Icmpv6Repr,
    Ipv6Address, Ipv6NextHeader, Ipv6Packet, Ipv6Repr,
};

const ALL_NODES: Ipv6Address = Ipv6Address::ALL_NODES;
const ALL_ROUTERS: Ipv6Address = Ipv6Address::ALL_ROUTERS;
/// The link MTU a router's MTU option may not exceed (Ethernet's).
const LINK_MTU: u32 = 1500;
/// A DHCPv6 server's answer: from port 547 to port 546.
const DHCP6_PORTS: [u8; 4] = [2, 35, 2, 34];
/// The client's message: from port 546 to port 547.
const DHCP6_PORTS_OUT: [u8; 4] = [2, 34, 2, 35];
const UNSPECIFIED: Ipv6Address = Ipv6Address::UNSPECIFIED;
/// Ethernet + IPv6 header bytes in front of an ICMPv6 message.
pub const L2L3: usize = ethernet::HEADER_LEN + IP6_LEN;

/// Why an IPv6 frame was dropped, beyond the reasons every frame has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop6 {
    /// One of the reasons IPv4's frames have (truncated, malformed, checksum, not for us,
    /// fragment).
    Frame(Drop),
    /// A Neighbor Discovery message with a hop limit other than 255: it came from beyond
    /// the link (RFC 4861 §6.1, §7.1).
    HopLimit,
    /// A protocol or message not served over IPv6 (router solicitations: a host does not
    /// answer them; any other upper layer but TCP, UDP and ICMPv6).
    Unserved,
    /// A Packet Too Big that is not to us, names an MTU below 1280, or quotes no TCP
    /// segment of ours.
    TooBig,
}

impl From<crate::wire::Error> for Drop6 {
    fn from(e: crate::wire::Error) -> Drop6 {
        Drop6::Frame(e.into())
    }
}

/// A frame to build and send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out<'a> {
    /// A neighbour advertisement for one of our addresses.
    Advert {
        /// The address advertised (and the source).
        target: Ipv6Address,
        /// Where to.
        dst_mac: EthernetAddress,
        /// Where to: the solicitor, or all-nodes.
        dst: Ipv6Address,
        /// S: an answer to a solicitation from a unicast source.
        solicited: bool,
    },
    /// An echo reply.
    EchoReply {
        /// From: the address the request was sent to (ours), or our link-local one.
        src: Ipv6Address,
        /// Where to.
        dst_mac: EthernetAddress,
        /// Where to.
        dst: Ipv6Address,
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// The request's data.
        data: &'a [u8],
    },
    /// A neighbour solicitation: DAD's (from `::`, with a nonce) or resolution's.
    Solicit {
        /// The address asked about.
        target: Ipv6Address,
        /// Unicast to this MAC (a probe); `None`: to the target's solicited-node group.
        unicast: Option<EthernetAddress>,
        /// DAD: from `::` with this nonce.
        dad_nonce: Option<[u8; 6]>,
    },
    /// A router solicitation (RFC 4861 §6.3.7), to all-routers from our link-local
    /// address.
    RouterSolicit,
    /// A multicast listener report (RFC 3810 §5.2; MLDv1's, RFC 2710 §3, after an MLDv1
    /// query): from our link-local address or `::`, hop limit 1, behind a Router Alert.
    Mld(Report),
    /// The DHCPv6 client's message (its first `len` octets in the link's buffer), from
    /// our link-local address, port 546, to All_DHCP_Relay_Agents_and_Servers, port 547.
    Dhcp6 {
        /// Its length.
        len: usize,
    },
}

/// What a frame or the clock made the link do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// Send this.
    Send(Out<'a>),
    /// An address machine has news (preferred, duplicate, gave up, expired): to tell the
    /// operator.
    Address(addr6::Event),
    /// A router advertisement was taken (routers, prefixes, MTU).
    Router,
    /// A multicast listener query was taken (answered when its delay ends).
    MldQuery,
    /// A TCP segment to one of our addresses in use, its checksum verified: for the
    /// server's connections.
    Tcp {
        /// The frame's sender (the peer, or its router).
        src_mac: EthernetAddress,
        /// The peer.
        src: Ipv6Address,
        /// Which of our addresses it came to ([`Link::slot_of`]).
        slot: u8,
        /// The TCP header and payload.
        segment: &'a [u8],
    },
    /// A UDP datagram to one of our addresses in use, its checksum verified (and not
    /// zero): for the stateless protocol's port.
    Udp {
        /// The frame's sender.
        src_mac: EthernetAddress,
        /// The client.
        src: Ipv6Address,
        /// Which of our addresses it came to ([`Link::slot_of`]).
        slot: u8,
        /// The UDP header and payload.
        datagram: &'a [u8],
    },
    /// A Packet Too Big (RFC 4443 §3.2) to an address of ours, quoting a TCP segment we
    /// sent: for the server to check against the connection (RFC 8201 §4).
    TooBig {
        /// The MTU of the narrow link (1280 or more).
        mtu: u32,
        /// The peer the quoted segment went to.
        peer: Ipv6Address,
        /// Its port.
        peer_port: u16,
        /// Our port it came from.
        our_port: u16,
        /// Its sequence number.
        seq: u32,
    },
    /// For the link's owner: a follower ([`Link::follower`]) keeps none of the link's
    /// state and passes this frame to the core that does ([`share6`](super::share6)).
    Forward,
    /// Taken in (the cache learned, or nothing was to be done).
    Done,
}

/// The link's IPv6 state: the link-local address, the neighbour cache, what routers
/// advertised (global addresses, default routers).
#[derive(Debug, Clone)]
pub struct Link {
    mac: EthernetAddress,
    /// Our link-local address and its DAD.
    pub addr: LinkLocal,
    /// The neighbours.
    pub neigh: NeighbourCache,
    /// Routers, prefixes and our global addresses (SLAAC).
    pub slaac: Routers,
    /// The groups we listen to, reported (MLD).
    pub mld: Listener,
    /// The DHCPv6 client, started by a router advertisement's M or O flag.
    pub dhcp6: Dhcp6Client,
    /// Its message last built ([`Out::Dhcp6`]).
    dhcp6_out: [u8; dhcpv6::MAX_EMIT],
    /// `--ip6 dhcp6`: solicit as soon as the link-local address is preferred.
    dhcp6_at_start: bool,
    /// No DHCPv6 whatever routers' flags say ([`Link::no_dhcp6`]).
    dhcp6_never: bool,
    /// A follower's addresses: the owner's in use, by slot ([`Link::follow`]); `None` on
    /// the link's owner.
    mirror: Option<Slots>,
    /// A follower's router: the owner's [`Link::router`] ([`Link::follow`]).
    mirror_router: Option<Ipv6Address>,
    /// The configured router (`--gw6 ADDR`); `None`: an advertised one ([`Link::route`]).
    gateway: Option<Ipv6Address>,
    /// The configured address's prefix (`--ip6 ADDR/PREFIX`): on the link.
    configured: Option<(Ipv6Address, u8)>,
}

impl Link {
    /// The link of the interface with `mac`, its address keyed by `secret` (RFC 7217),
    /// DAD starting at `now`.
    pub fn new(secret: [u8; 16], mac: EthernetAddress, now: u64) -> Link {
        Link {
            mac,
            addr: LinkLocal::new(secret, mac, now),
            neigh: NeighbourCache::new(),
            slaac: Routers::new(secret, mac),
            mld: Listener::new(mld_seed(&secret)),
            dhcp6: Dhcp6Client::new(mac.0, dhcp6_seed(&secret)),
            dhcp6_out: [0; dhcpv6::MAX_EMIT],
            dhcp6_at_start: false,
            dhcp6_never: false,
            mirror: None,
            mirror_router: None,
            gateway: None,
            configured: None,
        }
    }

    /// Our addresses in use, by slot (what [`slot_of`](Self::slot_of) numbers): what the
    /// owner publishes for its followers, and what an unsolicited advertisement announces
    /// after our MAC changed (RFC 4861 §7.2.6).
    pub fn slots(&self) -> Slots {
        if let Some(m) = self.mirror {
            return m;
        }
        let mut out = [None; SLOTS];
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.slot_addr(i as u8);
        }
        out
    }

    /// Our link-local address in use.
    fn link_local(&self) -> Option<Ipv6Address> {
        match &self.mirror {
            Some(m) => m[0],
            None => self.addr.preferred(),
        }
    }

    /// No DHCPv6 on this link, whatever routers' M and O flags say (a client of a
    /// configured address, which must not take a lease from the link's pool).
    pub fn no_dhcp6(&mut self) {
        self.dhcp6_never = true;
    }

    /// `--ip6 dhcp6`: the global address from DHCPv6 alone, solicited once the link-local
    /// address is preferred, whatever routers' flags say; advertised prefixes make none.
    pub fn dhcp6_only(&mut self) {
        self.slaac.no_autoconf();
        self.dhcp6_at_start = true;
    }

    /// Frames are ours at `mac` from now on, and carry it as our link-layer address (a
    /// bond's new receive NIC, bonding). Our addresses stay: they were derived once.
    pub fn set_mac(&mut self, mac: EthernetAddress) {
        self.mac = mac;
    }

    /// The groups we listen to (besides all-nodes): the solicited-node group of each
    /// address of ours in any phase (RFC 4862 §5.4.2: joined before DAD's probe); none
    /// once IPv6 is off on the link (DAD gave up).
    pub fn groups(&self) -> [Option<Ipv6Address>; MAX_GROUPS] {
        let mut g = [None; MAX_GROUPS];
        if self.addr.phase() == addr6::Phase::Failed {
            return g;
        }
        g[0] = Some(self.addr.addr().solicited_node());
        for (i, p) in self.slaac.prefixes.iter().enumerate() {
            // An address given up (in use by another node) is not listened for, though
            // its slot is freed only at the prefix table's next poll.
            let p = p
                .as_ref()
                .filter(|p| p.addr.phase() != addr6::Phase::Failed);
            if let (Some(p), Some(slot)) = (p, g.get_mut(1 + i)) {
                *slot = Some(p.addr.addr().solicited_node());
            }
        }
        g
    }

    /// The multicast MACs this link must receive (the NIC's filter): all-nodes and the
    /// solicited-node group of each address of ours (which changes when DAD picks
    /// another address); unused entries repeat all-nodes'.
    pub fn multicast_macs(&self) -> [EthernetAddress; 2 + MAX_PREFIXES] {
        let mut m = [ALL_NODES.multicast_ethernet(); 2 + MAX_PREFIXES];
        m[1] = self.addr.addr().solicited_node().multicast_ethernet();
        for (i, p) in self.slaac.prefixes.iter().enumerate() {
            if let Some(p) = p
                .as_ref()
                .filter(|p| p.addr.phase() != addr6::Phase::Failed)
            {
                m[2 + i] = p.addr.addr().solicited_node().multicast_ethernet();
            }
        }
        m
    }

    /// The destinations this link takes besides all-nodes: each address of ours in any
    /// phase but given up, and its solicited-node group (what a steering program hands
    /// the server, AF_XDP's); `None` pads.
    pub fn destinations(&self) -> [Option<Ipv6Address>; 2 * SLOTS] {
        let mut out = [None; 2 * SLOTS];
        let mut at = 0;
        let live = |a: &LinkLocal| (a.phase() != addr6::Phase::Failed).then(|| a.addr());
        let addrs = core::iter::once(live(&self.addr)).chain(
            self.slaac
                .prefixes
                .iter()
                .map(|p| p.as_ref().and_then(|p| live(&p.addr))),
        );
        for a in addrs.flatten() {
            for d in [a, a.solicited_node()] {
                if let Some(o) = out.get_mut(at) {
                    *o = Some(d);
                    at += 1;
                }
            }
        }
        out
    }

    /// Whether `a` is an address of ours in any phase (the link-local one, or one in an
    /// advertised prefix), or the solicited-node group of one.
    fn is_ours_or_group(&self, a: Ipv6Address) -> bool {
        let mine = |x: Ipv6Address| a == x || a == x.solicited_node();
        if let Some(m) = &self.mirror {
            return m.iter().flatten().any(|&x| mine(x));
        }
        mine(self.addr.addr())
            || self
                .slaac
                .prefixes
                .iter()
                .flatten()
                .any(|p| mine(p.addr.addr()))
    }

    /// A Packet Too Big to `to` for a link of `mtu`, quoting `invoking`: a step only when
    /// it is to an address of ours in use, the MTU is IPv6's minimum (1280, RFC 8200 §5)
    /// or more, and the quote is a TCP segment of ours as we build them (no extension
    /// header, from an address of ours in use, to a unicast one) with at least its ports
    /// and sequence number (RFC 4443 §3.2 quotes as much as fits).
    fn too_big(&self, to: Ipv6Address, mtu: u32, invoking: &[u8]) -> Option<Step<'static>> {
        self.slot_of(to)?;
        if mtu < 1280 || invoking.len() < IP6_LEN + 8 || invoking[0] >> 4 != 6 {
            return None;
        }
        let from = Ipv6Address::from_bytes(&invoking[8..24]);
        let peer = Ipv6Address::from_bytes(&invoking[24..40]);
        if invoking[6] != 6 || self.slot_of(from).is_none() || !peer.is_unicast() {
            return None;
        }
        let tcp = &invoking[IP6_LEN..];
        Some(Step::TooBig {
            mtu,
            peer,
            peer_port: u16::from_be_bytes([tcp[2], tcp[3]]),
            our_port: u16::from_be_bytes([tcp[0], tcp[1]]),
            seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        })
    }

    /// Which of our addresses in use `a` is, as a number a connection can keep: 0 the
    /// link-local address, `1 + i` the address of prefix slot `i` (a SLAAC address).
    pub fn slot_of(&self, a: Ipv6Address) -> Option<u8> {
        if let Some(m) = &self.mirror {
            return m.iter().position(|&x| x == Some(a)).map(|i| i as u8);
        }
        if self.addr.preferred() == Some(a) {
            return Some(0);
        }
        let at = self
            .slaac
            .prefixes
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.addr.preferred() == Some(a)))?;
        Some(1 + at as u8)
    }

    /// The address in use in slot `slot` ([`slot_of`](Self::slot_of)), if there still is
    /// one.
    pub fn slot_addr(&self, slot: u8) -> Option<Ipv6Address> {
        if let Some(m) = &self.mirror {
            return *m.get(usize::from(slot))?;
        }
        match slot.checked_sub(1) {
            None => self.addr.preferred(),
            Some(i) => self
                .slaac
                .prefixes
                .get(usize::from(i))?
                .as_ref()?
                .addr
                .preferred(),
        }
    }

    /// Whether `a` is an address of ours that passed DAD (answered and sent from).
    fn is_preferred(&self, a: Ipv6Address) -> bool {
        self.slot_of(a).is_some()
    }

    /// When [`poll`](Self::poll) next has work (`u64::MAX`: none).
    pub fn deadline(&self) -> u64 {
        if self.mirror.is_some() {
            return u64::MAX;
        }
        self.addr
            .deadline()
            .min(self.neigh.deadline())
            .min(self.slaac.deadline())
            .min(self.mld.deadline())
            .min(match self.addr.preferred() {
                Some(_) => self.dhcp6.deadline(),
                None => u64::MAX,
            })
    }

    /// The clock at `now`: the next thing to do, if any (call until `None`).
    pub fn poll(&mut self, now: u64) -> Option<Step<'static>> {
        if self.mirror.is_some() {
            return None;
        }
        // The groups follow the addresses (a new one, another after a conflict, one
        // expired): the change is reported before anything else is sent.
        let groups = self.groups();
        self.mld.listen(&groups, now);
        if let Some(r) = self.mld.poll(now) {
            return Some(Step::Send(Out::Mld(r)));
        }
        match self.addr.poll(now) {
            Some(addr6::Event::Probe { target, nonce }) => {
                return Some(Step::Send(Out::Solicit {
                    target,
                    unicast: None,
                    dad_nonce: Some(nonce),
                }))
            }
            Some(e) => {
                if let addr6::Event::Preferred(a) = e {
                    // Routers are asked once we can speak (RFC 4861 §6.3.7), after a delay
                    // from the address's opaque (pseudorandom) identifier.
                    let word = u64::from_be_bytes(a.0[8..].try_into().unwrap_or_default());
                    self.slaac.start(now, word);
                    // And our groups reported from it, for routers (the module doc).
                    self.mld.rejoin(now);
                    if self.dhcp6_at_start && self.dhcp6.phase() == super::dhcp6::Phase::Idle {
                        self.dhcp6.solicit(now);
                    }
                }
                return Some(Step::Address(e));
            }
            None => {}
        }
        if self.addr.phase() == addr6::Phase::Failed {
            // IPv6 is off on this link (RFC 4862 §5.4.5): nothing is heard, so no global
            // address may pass DAD unheard.
            self.slaac.clear();
        }
        match self.slaac.poll(now) {
            Some(Slaac::Address(addr6::Event::Probe { target, nonce })) => {
                return Some(Step::Send(Out::Solicit {
                    target,
                    unicast: None,
                    dad_nonce: Some(nonce),
                }))
            }
            Some(Slaac::Address(e)) => return Some(self.global_news(e, now)),
            Some(Slaac::Expired(a)) => return Some(Step::Address(addr6::Event::Expired(a))),
            Some(Slaac::Solicit) if self.addr.preferred().is_some() => {
                return Some(Step::Send(Out::RouterSolicit))
            }
            Some(Slaac::Solicit) => return Some(Step::Done),
            None => {}
        }
        if self.addr.preferred().is_some() {
            match self.dhcp6.poll(now, &mut self.dhcp6_out) {
                Some(Dhcp6Poll::Send(len)) => return Some(Step::Send(Out::Dhcp6 { len })),
                Some(Dhcp6Poll::Event(Dhcp6Event::Lost(a))) => {
                    return Some(match self.slaac.release(a) {
                        true => Step::Address(addr6::Event::Expired(a)),
                        false => Step::Done,
                    });
                }
                Some(Dhcp6Poll::Event(Dhcp6Event::Leased(l))) => {
                    self.slaac
                        .lease(l.addr, l.preferred_until, l.valid_until, now);
                    return Some(Step::Done);
                }
                None => {}
            }
        }
        let Solicit { target, unicast } = self.neigh.poll(now)?;
        if self.addr.preferred().is_none() {
            // No address to ask from (DAD under way or given up): the cache's timers run
            // all the same, so a resolution ends and no deadline stays in the past.
            return Some(Step::Done);
        }
        Some(Step::Send(Out::Solicit {
            target,
            unicast,
            dad_nonce: None,
        }))
    }

    /// A global address's DAD news, as a step: a leased address found held by another
    /// node (`InUse`, as for a configured one) is declined to the DHCPv6 client, which
    /// asks again later.
    fn global_news(&mut self, e: addr6::Event, now: u64) -> Step<'static> {
        if let addr6::Event::InUse(a) = e {
            self.dhcp6.declined(a, now);
        }
        Step::Address(e)
    }

    /// A DHCPv6 server's answer (UDP from port 547 to 546, checksum verified) from `src`
    /// to `dst`: taken from a link-local source to our link-local address (an on-link
    /// server; RFC 8415 §18.3: it answers there), for the client; the lease it gives is
    /// held in a prefix slot of its own, checked by DAD.
    fn dhcp6_answer<'a>(
        &mut self,
        src: Ipv6Address,
        dst: Ipv6Address,
        datagram: &[u8],
        now: u64,
    ) -> Result<Step<'a>, Drop6> {
        if !src.is_link_local() || Some(dst) != self.addr.preferred() {
            return Err(Drop6::Frame(Drop::NotForUs));
        }
        let m = dhcpv6::parse(datagram.get(8..).unwrap_or_default())?;
        let before = self.dhcp6.lease().map(|l| l.addr);
        match self.dhcp6.receive(&m, now) {
            Some(Dhcp6Event::Leased(l)) => {
                // Another address than the one held: the old one is no longer ours
                // (RFC 8415 §18.2.10.1; the client holds one).
                let replaced = before
                    .filter(|&old| old != l.addr)
                    .filter(|&old| self.slaac.release(old));
                if self
                    .slaac
                    .lease(l.addr, l.preferred_until, l.valid_until, now)
                {
                    // The new address listens to its group before its DAD probe.
                    let groups = self.groups();
                    self.mld.listen(&groups, now);
                } else {
                    // Not held (every slot taken, or the address ours otherwise): given
                    // up as if in use, asked again later.
                    self.dhcp6.declined(l.addr, now);
                }
                Ok(match replaced {
                    Some(old) => Step::Address(addr6::Event::Expired(old)),
                    None => Step::Done,
                })
            }
            Some(Dhcp6Event::Lost(a)) if self.slaac.release(a) => {
                Ok(Step::Address(addr6::Event::Expired(a)))
            }
            _ => Ok(Step::Done),
        }
    }

    /// Whether a frame to `dst` is one this link takes: our MAC, all-nodes', or our
    /// address's solicited-node group's.
    fn takes_mac(&self, dst: EthernetAddress) -> bool {
        // A follower cannot tell the owner's groups (a tentative address's among them):
        // every multicast frame goes on to the owner, which can.
        dst == self.mac
            || (self.mirror.is_some() && dst.is_multicast())
            || self.multicast_macs().contains(&dst)
    }

    /// A received frame (whole, from its Ethernet header) at `now`.
    pub fn receive<'a>(&mut self, frame: &'a [u8], now: u64) -> Result<Step<'a>, Drop6> {
        let eth = EthernetFrame::new_checked(frame)?;
        if eth.ethertype() != EtherType::Ipv6 || !self.takes_mac(eth.dst_addr()) {
            return Err(Drop6::Frame(Drop::NotForUs));
        }
        let src_mac = eth.src_addr();
        if src_mac == self.mac || src_mac.is_multicast() {
            // Our own frame looped back, or no station's.
            return Err(Drop6::Frame(Drop::NotForUs));
        }
        let packet = Ipv6Packet::new_checked(&frame[ethernet::HEADER_LEN..])?;
        let ip = Ipv6Repr::parse(&packet)?;
        // TCP right after the fixed header (every segment a client sends): no chain to
        // walk, and whether the address is ours in use is `slot_of`'s question below.
        let tcp = ip.next_header == Ipv6NextHeader::Tcp;
        let to_us = tcp
            || ip.dst_addr == ALL_NODES
            || (self.mirror.is_some() && ip.dst_addr.is_multicast())
            || self.is_ours_or_group(ip.dst_addr);
        if !to_us || self.addr.phase() == addr6::Phase::Failed {
            return Err(Drop6::Frame(Drop::NotForUs));
        }
        let upper = if tcp {
            Upper {
                protocol: Ipv6NextHeader::Tcp,
                offset: IP6_LEN,
                len: ip.payload_len,
                router_alert: false,
            }
        } else {
            packet.walk().map_err(|e| match e {
                ChainError::Fragment { .. } => Drop6::Frame(Drop::Fragment),
                ChainError::Truncated => Drop6::Frame(Drop::Truncated),
                ChainError::Unsupported { .. } => Drop6::Unserved,
                _ => Drop6::Frame(Drop::Malformed),
            })?
        };
        let ip_bytes: &'a [u8] = &frame[ethernet::HEADER_LEN..];
        let body = ip_bytes
            .get(upper.offset..upper.offset + upper.len)
            .ok_or(Drop6::Frame(Drop::Truncated))?;
        let udp = upper.protocol == Ipv6NextHeader::Udp;
        if upper.protocol == Ipv6NextHeader::Tcp || udp {
            // To an address of ours in use (not a group, not a tentative address: RFC 4862
            // §5.4), from a unicast source (RFC 4291 §2.7: no multicast source), never
            // loopback nor IPv4-mapped (RFC 4291 §2.5.3, §2.5.5.2: neither is ever on a
            // link; a mapped source would also wear an IPv4 client's connection key).
            let slot = self
                .slot_of(ip.dst_addr)
                .ok_or(Drop6::Frame(Drop::NotForUs))?;
            let src = ip.src_addr;
            if !src.is_unicast() || src.is_loopback() || src.is_ipv4_mapped() {
                return Err(Drop6::Frame(Drop::Malformed));
            }
            // A peer must be reachable to open a connection (a SYN) or send a datagram;
            // a connection's later segments are not asked again (~15 instructions a
            // segment). To our link-local address (slot 0) only a sender on the link can
            // come: no router forwards it (RFC 4291 §2.5.6).
            let opens = udp || body.get(13).is_some_and(|f| f & 0x02 != 0);
            if opens && slot != 0 && !self.reaches(src) {
                return Err(Drop6::Frame(Drop::NoRoute));
            }
            if udp && body.get(6..8).is_none_or(|c| c == [0, 0]) {
                // RFC 8200 §8.1: over IPv6 a UDP checksum of zero is no checksum, and
                // such a datagram is discarded.
                return Err(Drop6::Frame(Drop::Checksum));
            }
            // The pseudo-header from the addresses already parsed (not read again from
            // the packet: ~25 instructions a segment).
            let pseudo = checksum::pseudo_header_v6(
                &ip.src_addr.0,
                &ip.dst_addr.0,
                upper.protocol.into(),
                upper.len as u32,
            );
            let sum = checksum::accumulate(pseudo, body);
            if !cfg!(fuzzing) && checksum::fold(sum) != 0xffff {
                return Err(Drop6::Frame(Drop::Checksum));
            }
            if udp && body.get(..4) == Some(&DHCP6_PORTS) {
                if self.mirror.is_some() {
                    return Ok(Step::Forward);
                }
                return self.dhcp6_answer(src, ip.dst_addr, body, now);
            }
            return Ok(if udp {
                Step::Udp {
                    src_mac,
                    src,
                    slot,
                    datagram: body,
                }
            } else {
                Step::Tcp {
                    src_mac,
                    src: ip.src_addr,
                    slot,
                    segment: body,
                }
            });
        }
        if upper.protocol != Ipv6NextHeader::Icmpv6 {
            return Err(Drop6::Unserved);
        }
        let icmp = Icmpv6Packet::new_checked(body)?;
        let nd = matches!(
            icmp.msg_type(),
            Message::RouterSolicit
                | Message::RouterAdvert
                | Message::NeighborSolicit
                | Message::NeighborAdvert
                | Message::Redirect
        );
        if nd && ip.hop_limit != 255 {
            return Err(Drop6::HopLimit);
        }
        let repr = Icmpv6Repr::parse(&icmp, ip.src_addr, ip.dst_addr, ip.hop_limit)?;
        let src = ip.src_addr;
        let preferred = self.link_local();
        if self.mirror.is_some() {
            return self.follower_icmp(repr, ip.dst_addr, src, src_mac);
        }
        match repr {
            Icmpv6Repr::RouterAdvert {
                router_lifetime,
                options,
                managed,
                other,
                ..
            } => {
                // From a router's link-local address only (RFC 4861 §6.1.2), hop limit
                // 255 checked above.
                if self
                    .slaac
                    .advert(src, router_lifetime, &options, LINK_MTU, now)
                    .is_err()
                {
                    return Err(Drop6::Frame(Drop::Malformed));
                }
                self.neigh.solicited_by(src, options.source_lladdr(), now);
                // DHCPv6 when the router asks (RFC 4861 §4.2), once we can speak.
                if preferred.is_some() && !self.dhcp6_never {
                    self.dhcp6.advertised(managed, other, now);
                }
                // A new prefix's address listens to its group before its DAD probe.
                let groups = self.groups();
                self.mld.listen(&groups, now);
                Ok(Step::Router)
            }
            Icmpv6Repr::MldQuery {
                max_resp_code,
                group,
                v2,
            } => {
                // RFC 3810 §6.2: from a link-local source (the parse checked), hop limit
                // 1 and the Router Alert option, or dropped.
                if ip.hop_limit != 1 || !upper.router_alert {
                    return Err(Drop6::Frame(Drop::Malformed));
                }
                // MLDv1's Maximum Response Delay is in milliseconds (RFC 2710 §3.4).
                let delay_ms = match v2 {
                    Some(_) => crate::wire::icmpv6::mld_max_resp_delay_ms(max_resp_code),
                    None => u32::from(max_resp_code),
                };
                self.mld.query(group, delay_ms, v2.is_none(), now);
                Ok(Step::MldQuery)
            }
            // Other listeners' reports (MLDv2 has no report suppression, RFC 3810 §6;
            // we never suppress MLDv1's either: that is optional) and MLDv1 Done.
            Icmpv6Repr::MldReport { .. }
            | Icmpv6Repr::Other {
                msg_type: Message::MldV1Report | Message::MldDone,
                ..
            } => Ok(Step::Done),
            Icmpv6Repr::PacketTooBig { mtu, invoking } => self
                .too_big(ip.dst_addr, mtu, invoking)
                .ok_or(Drop6::TooBig),
            Icmpv6Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => self.echo((ip.dst_addr, src, src_mac), ident, seq_no, data),
            Icmpv6Repr::NeighborSolicit {
                target,
                source_lladdr,
                nonce,
            } => {
                if let Some(e) = self.addr.solicitation(target, src, nonce, now) {
                    return Ok(Step::Address(e));
                }
                if let Some(p) = self.slaac.holding(target) {
                    if let Some(e) = p.addr.solicitation(target, src, nonce, now) {
                        return Ok(self.global_news(e, now));
                    }
                }
                if !self.is_preferred(target) {
                    return Err(Drop6::Frame(Drop::NotForUs));
                }
                if !src.is_unspecified() {
                    self.neigh.solicited_by(src, source_lladdr, now);
                }
                Ok(Self::advert(target, src, source_lladdr.unwrap_or(src_mac)))
            }
            Icmpv6Repr::NeighborAdvert {
                router,
                solicited,
                override_,
                target,
                target_lladdr,
            } => {
                if let Some(e) = self.addr.advertisement(target, now) {
                    return Ok(Step::Address(e));
                }
                if let Some(p) = self.slaac.holding(target) {
                    if let Some(e) = p.addr.advertisement(target, now) {
                        return Ok(self.global_news(e, now));
                    }
                    return Ok(Step::Done);
                }
                let flags = (solicited, override_, router);
                match self.neigh.advertised(target, target_lladdr, flags, now) {
                    super::neigh6::Heard::Ignored => Err(Drop6::Frame(Drop::NotForUs)),
                    _ => Ok(Step::Done),
                }
            }
            _ => Err(Drop6::Unserved),
        }
    }

    /// An echo request to `to` from `src` (at `src_mac`): answered when it is to our
    /// preferred address (RFC 4862 §5.4: a tentative address takes nothing but DAD), or
    /// to all-nodes once we have one (RFC 4443 §4.2: a reply SHOULD be sent, from our
    /// unicast address: `ping ff02::1%dev` finds us), from a unicast source.
    fn echo<'a>(
        &self,
        (to, src, src_mac): (Ipv6Address, Ipv6Address, EthernetAddress),
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    ) -> Result<Step<'a>, Drop6> {
        let from = match self.link_local() {
            Some(ll) if to == ALL_NODES => ll,
            _ if self.is_preferred(to) => to,
            _ => return Err(Drop6::Frame(Drop::NotForUs)),
        };
        if src.is_unspecified() {
            return Err(Drop6::Frame(Drop::NotForUs));
        }
        // To our link-local address or all-nodes only a sender on the link comes.
        if from == to && !to.is_link_local() && !self.reaches(src) {
            return Err(Drop6::Frame(Drop::NoRoute));
        }
        Ok(Step::Send(Out::EchoReply {
            src: from,
            dst_mac: src_mac,
            dst: src,
            ident,
            seq_no,
            data,
        }))
    }

    /// The advertisement answering a solicitation from `src` (at `mac`) for `target`,
    /// an address of ours in use: solicited, to the solicitor; from `::` (someone's DAD
    /// for our address) it defends the address to all-nodes (RFC 4861 §7.2.4).
    fn advert(target: Ipv6Address, src: Ipv6Address, mac: EthernetAddress) -> Step<'static> {
        Step::Send(match src.is_unspecified() {
            true => Out::Advert {
                target,
                dst_mac: ALL_NODES.multicast_ethernet(),
                dst: ALL_NODES,
                solicited: false,
            },
            false => Out::Advert {
                target,
                dst_mac: mac,
                dst: src,
                solicited: true,
            },
        })
    }
}

/// The listener's random seed: a PRF of the link's secret under a label of its own (its
/// delays are seen on the wire, so they must not give the RFC 7217 secret away).
fn dhcp6_seed(secret: &[u8; 16]) -> u64 {
    use core::hash::Hasher;
    let mut h = siphasher::sip::SipHasher24::new_with_key(secret);
    h.write(b"bareweb dhcpv6 ids");
    h.finish()
}

fn mld_seed(secret: &[u8; 16]) -> u64 {
    use core::hash::Hasher;
    let mut h = siphasher::sip::SipHasher24::new_with_key(secret);
    h.write(b"bareweb mld delays");
    h.finish()
}

mod route;
mod write;

#[cfg(test)]
pub(crate) mod tests;
