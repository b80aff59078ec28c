//! Global addresses from router advertisements (SLAAC, RFC 4862 §5.5) and what else a
//! router advertisement tells a host (RFC 4861 §6.3.4): the default routers, the link's
//! MTU, the prefixes whose addresses we hold. A state machine driven by the
//! advertisements heard and by the clock; the link ([`super::ipv6::Link`]) checks the
//! frame (link-local source, hop limit 255, checksum) and sends what it asks for.
//!
//! **Router solicitations** (RFC 4861 §6.3.7): once the link-local address is preferred,
//! after a random delay below MAX_RTR_SOLICITATION_DELAY (1 s), up to
//! MAX_RTR_SOLICITATIONS (3), RTR_SOLICITATION_INTERVAL (4 s) apart, until a router
//! advertises itself (a router lifetime above 0); with none a second after the last, the
//! host concludes there is no router ([`Routers::unanswered`]).
//!
//! **Prefixes** (RFC 4862 §5.5.3): a Prefix Information option with the A flag, a /64 that
//! is not link-local and a preferred lifetime not above its valid lifetime makes an address
//! in it (a unicast prefix: not multicast, not ::/64), by RFC 7217 with that prefix ([`LinkLocal::in_prefix`]), checked by DAD like the
//! link-local one. A prefix heard again has its lifetimes renewed by §5.5.3 e)'s rule: a
//! valid lifetime above two hours or above what is left is taken; else what is left, when
//! two hours or less, stays (a forged advertisement cannot cut an address's life short);
//! else it becomes two hours. When the preferred lifetime ends the address is deprecated
//! (still answered, RFC 4862 §5.5.4: nothing originates from a global address yet); when
//! the valid lifetime ends it is gone. A prefix whose address gave up DAD (every
//! identifier in use) is freed, and its next advertisement tries again. At most
//! [`MAX_PREFIXES`] prefixes are held and [`MAX_ROUTERS`] routers: what comes beyond is
//! counted and dropped, so a flood of advertisements cannot grow memory.
//!
//! **Routers**: an advertisement with a router lifetime above 0 makes or renews its
//! source a default router until the lifetime ends; 0 removes it. The MTU option is taken
//! between 1280 (IPv6's minimum) and the link's MTU.
//!
//! **DNS servers** (RFC 8106 §5.3.1): each unicast address of a Recursive DNS Server
//! option is kept until its lifetime ends (renewed when heard again; lifetime 0 removes
//! it), at most [`MAX_DNS`]; a new one when the list is full takes the place of the one
//! that expires first. Kept for the resolver still to come (with
//! DHCPv6's: `Link::dns_servers`); nothing uses them yet.

use super::addr6::{Event, LinkLocal, Phase, MAX_DELAY_NS};
use crate::wire::icmpv6::{NdiscOption, NdiscOptions};
use crate::wire::{EthernetAddress, Ipv6Address};

/// Prefixes (and so global addresses) held at most.
pub const MAX_PREFIXES: usize = 4;
/// Default routers held at most.
pub const MAX_ROUTERS: usize = 2;
/// Recursive DNS servers held at most (RFC 8106 §5.3.1 suggests three).
pub const MAX_DNS: usize = 3;
/// RFC 4861 §10: MAX_RTR_SOLICITATIONS.
pub const MAX_RTR_SOLICITATIONS: u8 = 3;
/// RFC 4861 §10: RTR_SOLICITATION_INTERVAL.
pub const RTR_SOLICITATION_INTERVAL_NS: u64 = 4_000_000_000;
/// RFC 4862 §5.5.3 e): two hours.
const TWO_HOURS_NS: u64 = 7200 * NS;
/// IPv6's minimum link MTU (RFC 8200 §5).
pub const MIN_MTU: u32 = 1280;
const NS: u64 = 1_000_000_000;
/// Lifetime in seconds meaning forever (RFC 4861 §4.6.2).
const INFINITY: u32 = u32::MAX;

/// A prefix we hold an address in.
#[derive(Debug, Clone)]
pub struct Prefix {
    /// The address and its DAD.
    pub addr: LinkLocal,
    /// When the address stops being valid (ns; `u64::MAX`: never).
    pub valid_until: u64,
    /// When it stops being preferred: deprecated after (RFC 4862 §5.5.4), still answered;
    /// kept for choosing a source address once the server originates from global ones.
    pub preferred_until: u64,
    /// Leased by DHCPv6 ([`Routers::lease`]): its lifetimes are the lease's, and a
    /// router's prefix of the same /64 is not this entry.
    pub leased: bool,
}

/// A default router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Router {
    /// Its link-local address.
    pub addr: Ipv6Address,
    /// When its router lifetime ends (ns).
    pub until: u64,
}

/// When a lifetime of `secs` seconds heard at `now` ends (ns): `u64::MAX` for infinity
/// (RFC 4861 §4.6.2, RFC 8106 §5.1).
fn expiry(now: u64, secs: u32) -> u64 {
    match secs {
        INFINITY => u64::MAX,
        s => now.saturating_add(u64::from(s) * NS),
    }
}

/// A recursive DNS server a router advertised (RFC 8106).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DnsServer {
    /// Its address.
    pub addr: Ipv6Address,
    /// When its lifetime ends (ns; `u64::MAX`: never).
    pub until: u64,
}

/// What the machine asks for or reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slaac {
    /// A global address's DAD has news or wants a probe sent (as the link-local one's).
    Address(Event),
    /// Send a router solicitation.
    Solicit,
    /// A global address's valid lifetime ended: it is no longer ours.
    Expired(Ipv6Address),
}

/// Why (part of) an advertisement was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Its source is not link-local (RFC 4861 §6.1.2).
    NotLinkLocal,
}

/// The routers, prefixes and MTU router advertisements gave, and the router
/// solicitations still to send.
#[derive(Debug, Clone)]
pub struct Routers {
    secret: [u8; 16],
    mac: EthernetAddress,
    /// The prefixes and their addresses.
    pub prefixes: [Option<Prefix>; MAX_PREFIXES],
    /// The default routers.
    pub routers: [Option<Router>; MAX_ROUTERS],
    /// The MTU the last advertisement with an acceptable MTU option gave.
    pub mtu: Option<u32>,
    /// The recursive DNS servers advertised (RFC 8106).
    pub dns: [Option<DnsServer>; MAX_DNS],
    /// Router solicitations sent.
    solicited: u8,
    /// When the next solicitation goes (`u64::MAX`: none due).
    solicit_at: u64,
    /// An advertisement was heard (soliciting stops).
    heard: bool,
    /// Every solicitation went unanswered (RFC 4861 §6.3.7: none within
    /// MAX_RTR_SOLICITATION_DELAY of the last): the host concludes there is no router.
    unanswered: bool,
    /// Advertisements taken.
    pub adverts: u64,
    /// Prefixes, routers or options not taken: the tables full, or out of range.
    pub refused: u64,
    /// Whether advertised prefixes make addresses (SLAAC); off when an address was
    /// configured ([`Routers::configure`]).
    autoconf: bool,
}

impl Routers {
    /// Nothing heard yet; addresses keyed by `secret` for the interface with `mac`.
    pub fn new(secret: [u8; 16], mac: EthernetAddress) -> Routers {
        Routers {
            secret,
            mac,
            prefixes: Default::default(),
            routers: [None; MAX_ROUTERS],
            mtu: None,
            dns: [None; MAX_DNS],
            solicited: 0,
            solicit_at: u64::MAX,
            heard: false,
            unanswered: false,
            adverts: 0,
            refused: 0,
            autoconf: true,
        }
    }

    /// Holds the configured address `addr` (`--ip6 ADDR/PREFIX`) in the first prefix slot,
    /// valid and preferred for ever, DAD starting at `now`; advertised prefixes then make
    /// no address (routers and the MTU are still taken).
    pub fn configure(&mut self, addr: Ipv6Address, now: u64) {
        self.autoconf = false;
        self.prefixes = Default::default();
        self.prefixes[0] = Some(Prefix {
            addr: LinkLocal::fixed(self.secret, self.mac, addr, now),
            valid_until: u64::MAX,
            preferred_until: u64::MAX,
            leased: false,
        });
    }

    /// Holds `addr`, leased by DHCPv6 (RFC 8415 §18.2.10.1), until `valid_until` (ns),
    /// preferred until `preferred_until`: a new lease takes a free slot and is checked by
    /// DAD (held by another node: given up, `Event::InUse`); a lease held has its
    /// lifetimes set. Returns whether it is held (no free slot: counted in `refused`).
    pub fn lease(
        &mut self,
        addr: Ipv6Address,
        preferred_until: u64,
        valid_until: u64,
        now: u64,
    ) -> bool {
        // An address held otherwise (SLAAC's, configured) is not leased again.
        if self
            .prefixes
            .iter()
            .flatten()
            .any(|p| !p.leased && p.addr.addr() == addr)
        {
            self.refused += 1;
            return false;
        }
        if let Some(p) = self
            .prefixes
            .iter_mut()
            .flatten()
            .find(|p| p.leased && p.addr.addr() == addr)
        {
            (p.preferred_until, p.valid_until) = (preferred_until, valid_until);
            return true;
        }
        match self.prefixes.iter_mut().find(|p| p.is_none()) {
            Some(slot) => {
                *slot = Some(Prefix {
                    addr: LinkLocal::fixed(self.secret, self.mac, addr, now),
                    valid_until,
                    preferred_until,
                    leased: true,
                });
                true
            }
            None => {
                self.refused += 1;
                false
            }
        }
    }

    /// The leased address `addr` is no longer ours (its lease lost): its slot is freed.
    /// Returns whether it was in use (preferred or deprecated), so worth telling.
    pub fn release(&mut self, addr: Ipv6Address) -> bool {
        let mut used = false;
        for slot in self.prefixes.iter_mut() {
            if slot
                .as_ref()
                .is_some_and(|p| p.leased && p.addr.addr() == addr)
            {
                used |= slot.as_ref().is_some_and(|p| p.addr.preferred().is_some());
                *slot = None;
            }
        }
        used
    }

    /// Advertised prefixes make no address from now on (`--ip6 dhcp6`: DHCPv6's alone);
    /// routers and the MTU are still taken.
    pub fn no_autoconf(&mut self) {
        self.autoconf = false;
    }

    /// The link-local address became preferred at `now`: router solicitations start after
    /// `delay` (below [`MAX_DELAY_NS`]; the caller's random word).
    pub fn start(&mut self, now: u64, delay: u64) {
        if !self.heard && self.solicited == 0 {
            self.solicit_at = now + delay % MAX_DELAY_NS;
        }
    }

    /// Forgets every router and prefix and stops soliciting: the link-local address gave up
    /// (IPv6 is off on this link, RFC 4862 §5.4.5).
    pub fn clear(&mut self) {
        self.prefixes = Default::default();
        self.routers = [None; MAX_ROUTERS];
        self.mtu = None;
        self.dns = [None; MAX_DNS];
        self.solicit_at = u64::MAX;
        // A later start solicits afresh.
        (self.solicited, self.heard, self.unanswered) = (0, false, false);
    }

    /// Whether every router solicitation went unanswered (RFC 4861 §6.3.7): no router
    /// advertised itself within a second of the last. An advertisement heard later does
    /// not undo it (the routers' table says what is now).
    pub fn unanswered(&self) -> bool {
        self.unanswered
    }

    /// The default router, if any: the first whose lifetime runs.
    pub fn default_router(&self) -> Option<Ipv6Address> {
        self.routers.iter().flatten().map(|r| r.addr).next()
    }

    /// Our global addresses in use (preferred or deprecated; not tentative, not given up).
    pub fn addresses(&self) -> impl Iterator<Item = Ipv6Address> + '_ {
        self.prefixes
            .iter()
            .flatten()
            .filter_map(|p| p.addr.preferred())
    }

    /// The prefix entry whose address is `a` (in any phase).
    pub fn holding(&mut self, a: Ipv6Address) -> Option<&mut Prefix> {
        self.prefixes
            .iter_mut()
            .flatten()
            .find(|p| p.addr.addr() == a)
    }

    /// A router advertisement from `src` (hop limit and checksum already checked by the
    /// link) at `now`: `router_lifetime` seconds, its options; `link_mtu` bounds the MTU
    /// option.
    pub fn advert(
        &mut self,
        src: Ipv6Address,
        router_lifetime: u16,
        options: &NdiscOptions<'_>,
        link_mtu: u32,
        now: u64,
    ) -> Result<(), Refused> {
        if !src.is_link_local() {
            return Err(Refused::NotLinkLocal);
        }
        self.adverts += 1;
        if router_lifetime != 0 {
            // RFC 4861 §6.3.7: a router for us answered; one advertising only prefixes
            // or DNS servers (lifetime 0) does not stop the soliciting.
            self.heard = true;
            self.solicit_at = u64::MAX;
        }
        self.router(src, router_lifetime, now);
        for o in options.iter() {
            match o {
                NdiscOption::Mtu(m) => {
                    if (MIN_MTU..=link_mtu).contains(&m) {
                        self.mtu = Some(m);
                    } else {
                        self.refused += 1;
                    }
                }
                NdiscOption::Rdnss { lifetime, servers } => {
                    for s in servers.chunks_exact(16) {
                        self.dns_server(Ipv6Address::from_bytes(s), lifetime, now);
                    }
                }
                NdiscOption::PrefixInformation(p) if p.autonomous && self.autoconf => {
                    self.prefix(
                        p.prefix_len,
                        p.prefix,
                        p.valid_lifetime,
                        p.preferred_lifetime,
                        now,
                    );
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The router part of an advertisement (RFC 4861 §6.3.4).
    fn router(&mut self, src: Ipv6Address, lifetime: u16, now: u64) {
        let held = self
            .routers
            .iter_mut()
            .find(|r| r.is_some_and(|r| r.addr == src));
        match (held, lifetime) {
            (Some(r), 0) => *r = None,
            (Some(Some(r)), l) => r.until = now + u64::from(l) * NS,
            (Some(None), _) => {}
            (None, 0) => {}
            (None, l) => match self.routers.iter_mut().find(|r| r.is_none()) {
                Some(slot) => {
                    *slot = Some(Router {
                        addr: src,
                        until: now + u64::from(l) * NS,
                    })
                }
                None => self.refused += 1,
            },
        }
    }

    /// One server of a Recursive DNS Server option (RFC 8106 §5.3.1).
    fn dns_server(&mut self, addr: Ipv6Address, lifetime: u32, now: u64) {
        if !addr.is_unicast() || addr.is_loopback() || addr.is_ipv4_mapped() {
            self.refused += 1;
            return;
        }
        let new = DnsServer {
            addr,
            until: expiry(now, lifetime),
        };
        if let Some(slot) = self
            .dns
            .iter_mut()
            .find(|d| d.is_some_and(|d| d.addr == addr))
        {
            *slot = (lifetime != 0).then_some(new);
            return;
        }
        if lifetime == 0 {
            return;
        }
        if let Some(free) = self.dns.iter_mut().find(|d| d.is_none()) {
            *free = Some(new);
            return;
        }
        // Full: the one that expires first gives way (RFC 8106 §5.3.1).
        if let Some(d) = self.dns.iter_mut().flatten().min_by_key(|d| d.until) {
            *d = new;
        }
    }

    /// The recursive DNS servers advertised whose lifetime runs.
    pub fn dns_servers(&self) -> impl Iterator<Item = Ipv6Address> + '_ {
        self.dns.iter().flatten().map(|d| d.addr)
    }

    /// A Prefix Information option with the A flag (RFC 4862 §5.5.3).
    fn prefix(&mut self, len: u8, prefix: Ipv6Address, valid: u32, preferred: u32, now: u64) {
        // b) a link-local prefix is ignored, c) so is a preferred lifetime above the valid
        // one; and an interface identifier is 64 bits: another length forms nothing
        // (§5.5.3 d).
        let mut p8 = [0u8; 8];
        p8.copy_from_slice(&prefix.0[..8]);
        // Nor is a prefix no unicast address can be in: multicast (ff00::/8), or ::/64
        // (the unspecified, loopback and IPv4-mapped addresses' block).
        let unicast = p8[0] != 0xff && p8 != [0; 8];
        if prefix.is_link_local() || !unicast || preferred > valid || len != 64 {
            self.refused += 1;
            return;
        }
        if let Some(p) = self
            .prefixes
            .iter_mut()
            .flatten()
            .find(|p| !p.leased && p.addr.prefix() == p8)
        {
            // e) the lifetimes of a prefix held.
            let left = p.valid_until.saturating_sub(now);
            let received = expiry(now, valid);
            if valid == INFINITY || u64::from(valid) * NS > TWO_HOURS_NS || received > p.valid_until
            {
                p.valid_until = received;
            } else if left > TWO_HOURS_NS {
                p.valid_until = now + TWO_HOURS_NS;
            }
            p.preferred_until = expiry(now, preferred);
            return;
        }
        if valid == 0 {
            return;
        }
        match self.prefixes.iter_mut().find(|p| p.is_none()) {
            Some(slot) => {
                *slot = Some(Prefix {
                    addr: LinkLocal::in_prefix(self.secret, self.mac, p8, now),
                    valid_until: expiry(now, valid),
                    preferred_until: expiry(now, preferred),
                    leased: false,
                })
            }
            None => self.refused += 1,
        }
    }

    /// When [`poll`](Self::poll) next has work (`u64::MAX`: none).
    pub fn deadline(&self) -> u64 {
        let mut d = self.solicit_at;
        for p in self.prefixes.iter().flatten() {
            d = d.min(p.addr.deadline()).min(p.valid_until);
        }
        for r in self.routers.iter().flatten() {
            d = d.min(r.until);
        }
        for s in self.dns.iter().flatten() {
            d = d.min(s.until);
        }
        d
    }

    /// The clock at `now`: the next thing to do or tell, if any (call until `None`).
    pub fn poll(&mut self, now: u64) -> Option<Slaac> {
        for slot in self.prefixes.iter_mut() {
            let Some(p) = slot else { continue };
            if now >= p.valid_until {
                let a = p.addr.addr();
                let used = p.addr.phase() == Phase::Preferred;
                *slot = None;
                if used {
                    return Some(Slaac::Expired(a));
                }
                continue;
            }
            if p.addr.phase() == Phase::Failed {
                // Every identifier tried was in use (its GaveUp already told): the slot is
                // freed, and the prefix's next advertisement tries again.
                *slot = None;
                continue;
            }
            if let Some(e) = p.addr.poll(now) {
                return Some(Slaac::Address(e));
            }
        }
        for r in self.routers.iter_mut() {
            if r.is_some_and(|r| now >= r.until) {
                *r = None;
            }
        }
        for d in self.dns.iter_mut() {
            if d.is_some_and(|d| now >= d.until) {
                *d = None;
            }
        }
        if now >= self.solicit_at {
            if self.solicited >= MAX_RTR_SOLICITATIONS {
                // The last one's wait is over, unanswered.
                self.solicit_at = u64::MAX;
                self.unanswered = true;
                return None;
            }
            self.solicited += 1;
            self.solicit_at = now
                + if self.solicited < MAX_RTR_SOLICITATIONS {
                    RTR_SOLICITATION_INTERVAL_NS
                } else {
                    MAX_DELAY_NS
                };
            return Some(Slaac::Solicit);
        }
        None
    }
}

#[cfg(test)]
mod tests;
