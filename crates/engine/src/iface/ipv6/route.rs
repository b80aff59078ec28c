//! The link's routes and its followers: the router for peers beyond the link and who is
//! on it (`--gw6`, RFC 4943), and a per-queue spoke's link following core 0's addresses
//! and router ([`super::share6`]), serving what needs no state of the link.

use super::*;

impl Link {
    /// How peers beyond the link are reached: through `gateway` (`--gw6 ADDR`; `None`:
    /// a router that advertises itself, RFC 4861's default router), and which prefix
    /// besides the link-local one is on the link (`configured`, `--ip6 ADDR/PREFIX`; the
    /// /64 of any other address of ours in use always is). With no router, a SYN, a
    /// datagram or an echo request from a peer beyond the link is dropped as
    /// [`Drop::NoRoute`], as IPv4's are without `--gw`: a host has no route to it
    /// (RFC 4943: no on-link assumption).
    pub fn route(&mut self, gateway: Option<Ipv6Address>, configured: Option<(Ipv6Address, u8)>) {
        self.gateway = gateway;
        self.configured = configured;
    }

    /// The recursive DNS servers known: DHCPv6's first (RFC 8106 §5.3.1: DHCP's take
    /// precedence), then routers' not among them. Kept for the resolver still to come.
    pub fn dns_servers(&self) -> impl Iterator<Item = Ipv6Address> + '_ {
        let leased = self.dhcp6.dns.iter().flatten().copied();
        let advertised = self.slaac.dns_servers();
        leased.chain(advertised.filter(move |a| !self.dhcp6.dns.contains(&Some(*a))))
    }

    /// The router for peers beyond the link: the configured one, else the first
    /// default router advertised (a follower: its owner's, as last published).
    pub fn router(&self) -> Option<Ipv6Address> {
        match self.mirror {
            Some(_) => self.mirror_router,
            None => self.gateway.or(self.slaac.default_router()),
        }
    }

    /// Whether a peer at `src` can be answered: on the link (a link-local address, or
    /// [`on_link`](Self::on_link)), or beyond it with a router ([`Link::route`]).
    #[inline(always)]
    pub(super) fn reaches(&self, src: Ipv6Address) -> bool {
        src.is_link_local() || self.has_router() || self.on_link(src)
    }

    /// Whether [`router`](Self::router) is some, without making its address: a few loads
    /// a segment (a follower's own table is empty and its `--gw6` the owner's).
    #[inline(always)]
    fn has_router(&self) -> bool {
        self.gateway.is_some()
            || self.mirror_router.is_some()
            || self.slaac.routers.iter().any(Option::is_some)
    }

    /// Whether `src` is in the configured prefix, or the /64 of another global address
    /// of ours in use (an advertised prefix's, or a lease's).
    #[inline(never)] // only without a router
    fn on_link(&self, src: Ipv6Address) -> bool {
        let configured = self.configured.map(|c| c.0);
        if let Some((a, len)) = self.configured {
            if src.in_subnet(a, len) {
                return true;
            }
        }
        let same_64 = |a: Ipv6Address| Some(a) != configured && a.0[..8] == src.0[..8];
        match &self.mirror {
            Some(m) => m[1..].iter().flatten().any(|a| same_64(*a)),
            None => self.slaac.addresses().any(same_64),
        }
    }

    /// Makes this link a follower of another core's (the per-queue mode's spoke,
    /// [`share6`](super::share6)), or sets a follower's addresses anew: `slots` are the
    /// owner's addresses in use, by slot, and `router` its [`Link::router`]. A follower
    /// runs no timer and keeps no state of the link: it serves TCP and UDP to these
    /// addresses, answers echo and neighbour solicitations for them, takes a Packet Too
    /// Big, and gives every other frame for the link back as [`Step::Forward`].
    pub fn follow(&mut self, slots: Slots, router: Option<Ipv6Address>) {
        self.mirror = Some(slots);
        self.mirror_router = router;
    }

    /// Whether this link follows another core's ([`follow`](Self::follow)).
    pub fn is_follower(&self) -> bool {
        self.mirror.is_some()
    }

    /// A follower's ICMPv6 message to `to` from `src` (at `src_mac`): what needs no state
    /// of the link is served here (echo, a solicitation for an address in use, a Packet
    /// Too Big); everything else goes to the link's owner.
    pub(super) fn follower_icmp<'a>(
        &self,
        repr: Icmpv6Repr<'a>,
        to: Ipv6Address,
        src: Ipv6Address,
        src_mac: EthernetAddress,
    ) -> Result<Step<'a>, Drop6> {
        match repr {
            Icmpv6Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => self.echo((to, src, src_mac), ident, seq_no, data),
            Icmpv6Repr::NeighborSolicit {
                target,
                source_lladdr,
                ..
            } if self.is_preferred(target) => {
                Ok(Self::advert(target, src, source_lladdr.unwrap_or(src_mac)))
            }
            Icmpv6Repr::PacketTooBig { mtu, invoking } => {
                self.too_big(to, mtu, invoking).ok_or(Drop6::TooBig)
            }
            // Other listeners' reports: nothing for the owner either.
            Icmpv6Repr::MldReport { .. }
            | Icmpv6Repr::Other {
                msg_type: Message::MldV1Report | Message::MldDone,
                ..
            } => Ok(Step::Done),
            // What changes the link's state goes to its owner: routers, DAD's probes and
            // solicitations for a tentative address, advertisements, queries. Nothing else
            // (the owner would drop it too): a flood of it must not fill the ring.
            Icmpv6Repr::RouterAdvert { .. }
            | Icmpv6Repr::NeighborSolicit { .. }
            | Icmpv6Repr::NeighborAdvert { .. }
            | Icmpv6Repr::MldQuery { .. } => Ok(Step::Forward),
            // To a group the owner does not listen to (a router solicitation to
            // all-routers): not for us, as the owner would say.
            _ if to.is_multicast() && to != ALL_NODES && !self.is_ours_or_group(to) => {
                Err(Drop6::Frame(Drop::NotForUs))
            }
            _ => Err(Drop6::Unserved),
        }
    }
}
