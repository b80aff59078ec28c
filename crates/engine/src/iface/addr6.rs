//! An IPv6 address of ours (the link-local one, or one SLAAC makes in a router's prefix):
//! chosen by RFC 7217 (a stable, opaque interface identifier)
//! and checked by duplicate address detection (RFC 4862 §5.4), as a state machine driven
//! by the clock and by the solicitations and advertisements heard.
//!
//! **The identifier.** RFC 7217 §5: `F(Prefix, Net_Iface, Network_ID, DAD_Counter,
//! secret_key)`, here SipHash-2-4 (64-bit, twice) keyed with the 128-bit secret over the prefix's 8
//! octets, the MAC (the interface), no network id (a link-local prefix names no network)
//! and the counter; the first hash is the identifier. §5 asks for a
//! pseudorandom function of the secret: SipHash is one (a keyed PRF, already the engine's
//! for ISNs and SYN cookies), where SHA-256 over `secret || data` would be a hash made
//! into one. The secret comes from the platform (`Config::ipv6`): its randomness, so the
//! address is stable for a run; a configured secret makes it stable across runs. The MAC
//! cannot be read back from the address (no EUI-64, RFC 7721). An identifier RFC 5453
//! reserves is skipped as if it were a duplicate.
//!
//! **DAD.** The address is tentative (nothing is answered for it, and only DAD uses it)
//! until `DupAddrDetectTransmits` (1) solicitation from `::` to its solicited-node group
//! went unanswered for RetransTimer (1 s), after a random delay of up to
//! MAX_RTR_SOLICITATION_DELAY (1 s, RFC 4862 §5.4.2). While tentative, a solicitation for
//! it from `::` that does not carry our own nonce (RFC 7527: our probe looped back) or
//! any advertisement for it means someone holds it: RFC 7217 §6, the counter goes up and
//! a new identifier is tried, at most `IDGEN_RETRIES` (3) times; then the interface gives
//! up (RFC 4862 §5.4.5: IPv6 off on this link) and says so ([`Phase::Failed`]). Once
//! preferred, an advertisement for it from someone else is only counted (§5.4.4 asks
//! for a log, not a defence).

use core::hash::Hasher;

use siphasher::sip::SipHasher24;

use crate::wire::{EthernetAddress, Ipv6Address};

/// RFC 4862 §5.1: DupAddrDetectTransmits.
pub const DAD_TRANSMITS: u8 = 1;
/// RFC 4861 §10: RetransTimer.
pub const RETRANS_NS: u64 = 1_000_000_000;
/// RFC 4861 §10: MAX_RTR_SOLICITATION_DELAY, the most a first probe waits.
pub const MAX_DELAY_NS: u64 = 1_000_000_000;
/// RFC 7217 §7: IDGEN_RETRIES.
pub const IDGEN_RETRIES: u8 = 3;

/// Where the address stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Being checked: `sent` probes out, the next step at `deadline_ns`.
    Tentative {
        /// Probes sent.
        sent: u8,
        /// When the next probe goes, or (all sent) when the address becomes preferred.
        deadline_ns: u64,
    },
    /// Ours: answered and used.
    Preferred,
    /// Every identifier tried was in use: no IPv6 on this link.
    Failed,
}

/// What the address machine asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Send a DAD probe: a solicitation for `target` from `::` to its solicited-node
    /// group, with our nonce.
    Probe {
        /// The tentative address.
        target: Ipv6Address,
        /// Our nonce (RFC 7527).
        nonce: [u8; 6],
    },
    /// The address passed DAD.
    Preferred(Ipv6Address),
    /// The tentative address is in use by another: a new one is tried (its first probe
    /// comes at [`LinkLocal::deadline`]).
    Duplicate {
        /// The address found in use.
        taken: Ipv6Address,
        /// The next one tried.
        next: Ipv6Address,
    },
    /// The address was in use and so were the retries: for the link-local address IPv6 is
    /// off on this link; for a global one, the link goes on without an address in its
    /// prefix.
    GaveUp(Ipv6Address),
    /// A global address's valid lifetime ended ([`super::slaac`]): it is no longer ours.
    Expired(Ipv6Address),
    /// The configured address ([`LinkLocal::fixed`]) is in use by another node: it is not
    /// taken, and no other is tried (RFC 4862 §5.4.5: manual intervention).
    InUse(Ipv6Address),
    /// Told by the server, not this machine: peers beyond the link are now answered
    /// through this router (`configured`: `--gw6`; else the first advertised).
    Router {
        /// The router.
        addr: Ipv6Address,
        /// Given by `--gw6`.
        configured: bool,
    },
    /// Told by the server: no router (none given, none advertised, or the last one's
    /// lifetime ended) while a global address is held: only peers on the link are
    /// answered.
    NoRouter,
}

impl Event {
    /// The operator's line for this event, as both platforms print it (`None` for a
    /// probe, which is the link's business).
    pub fn news(self) -> Option<News> {
        (!matches!(self, Event::Probe { .. })).then_some(News(self))
    }
}

/// An address event told to the operator ([`Event::news`]): the console line's text,
/// after `bareweb: `.
#[derive(Debug, Clone, Copy)]
pub struct News(Event);

impl core::fmt::Display for News {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Event::Preferred(a) => {
                write!(
                    f,
                    "IPv6 {a} on the link (duplicate address detection passed)"
                )
            }
            Event::Duplicate { taken, next } => write!(
                f,
                "IPv6 {taken} is in use by another host on the link: trying {next}"
            ),
            Event::GaveUp(a) if a.is_link_local() => write!(
                f,
                "IPv6 off: {a} and every address tried after it are in use on the link \
                 (IPv4 serves on)"
            ),
            Event::GaveUp(a) => write!(
                f,
                "IPv6: no address in the router's prefix of {a}: it and every address tried \
                 after it are in use on the link (the link-local address serves on)"
            ),
            Event::Expired(a) => write!(f, "IPv6 {a} expired (the router's prefix lifetime ended)"),
            Event::InUse(a) => write!(
                f,
                "IPv6 {a} (configured) is in use by another host on the link: not taken \
                 (the link-local address serves on; free it or configure another)"
            ),
            Event::Router { addr, configured } => write!(
                f,
                "IPv6 router {addr} ({}): peers beyond the link are answered",
                if configured { "--gw6" } else { "advertised" }
            ),
            Event::NoRouter => write!(
                f,
                "IPv6: no router (none advertised, no --gw6 ADDR): only peers on the link \
                 are answered over IPv6"
            ),
            Event::Probe { .. } => Ok(()),
        }
    }
}

/// An address of ours and its DAD: the link-local one ([`LinkLocal::new`]) or one SLAAC
/// makes from a router's /64 prefix ([`LinkLocal::in_prefix`], RFC 4862 §5.5.3).
#[derive(Debug, Clone)]
pub struct LinkLocal {
    secret: [u8; 16],
    mac: EthernetAddress,
    /// The /64 prefix (fe80:: for the link-local address).
    prefix: [u8; 8],
    counter: u8,
    addr: Ipv6Address,
    phase: Phase,
    nonce: [u8; 6],
    /// Duplicates found (while tentative) or advertisements of our preferred address by
    /// another node.
    pub conflicts: u64,
    /// The address was configured (`--ip6 ADDR/PREFIX`), not derived: a duplicate ends
    /// it.
    fixed: bool,
}

/// The link-local prefix fe80::/64.
const PREFIX: [u8; 8] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0];

/// RFC 7217 §5's F for the link-local prefix: `(identifier, a pseudorandom word)`, the
/// second for the probe's nonce and delay. Two SipHash-2-4-64 of the input with a last
/// byte apart (not one SipHash-128: that instantiation is the ISN's, which the compiler
/// inlines on the connection path only while it has one caller).
fn stable_id(secret: &[u8; 16], prefix: &[u8; 8], mac: EthernetAddress, counter: u8) -> (u64, u64) {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(prefix);
    b[8..14].copy_from_slice(&mac.0);
    b[14] = counter;
    let f = |which: u8| {
        let mut b = b;
        b[15] = which;
        let mut h = SipHasher24::new_with_key(secret);
        h.write(&b);
        h.finish()
    };
    (f(0), f(1))
}

/// Whether `id` is an interface identifier RFC 5453 reserves (all zeros: the subnet-router
/// anycast; the proxy-mobile one; the subnet anycast range of RFC 2526).
fn reserved(id: u64) -> bool {
    id == 0 || id == 0x0200_5eff_fe00_5213 || id >= 0xfdff_ffff_ffff_ff80
}

impl LinkLocal {
    /// A tentative address for the interface with `mac`, keyed by `secret`; its first
    /// probe goes at `now` plus a random delay below [`MAX_DELAY_NS`].
    pub fn new(secret: [u8; 16], mac: EthernetAddress, now: u64) -> LinkLocal {
        LinkLocal::in_prefix(secret, mac, PREFIX, now)
    }

    /// A tentative address in the /64 `prefix` (RFC 7217 §5 with that prefix: stable for
    /// the prefix, another for another), DAD as for the link-local one.
    pub fn in_prefix(
        secret: [u8; 16],
        mac: EthernetAddress,
        prefix: [u8; 8],
        now: u64,
    ) -> LinkLocal {
        let mut l = LinkLocal {
            secret,
            mac,
            prefix,
            counter: 0,
            addr: Ipv6Address([0; 16]),
            phase: Phase::Failed,
            nonce: [0; 6],
            conflicts: 0,
            fixed: false,
        };
        l.choose(now);
        l
    }

    /// The configured address `addr` (`--ip6 ADDR/PREFIX`), checked by DAD as a derived
    /// one is (the probe's nonce and delay from `secret` and `mac`); if another node holds
    /// it, it is given up ([`Event::InUse`]), never replaced.
    pub fn fixed(secret: [u8; 16], mac: EthernetAddress, addr: Ipv6Address, now: u64) -> LinkLocal {
        let mut prefix = [0u8; 8];
        prefix.copy_from_slice(&addr.0[..8]);
        let mut l = LinkLocal {
            secret,
            mac,
            prefix,
            counter: 0,
            addr,
            phase: Phase::Failed,
            nonce: [0; 6],
            conflicts: 0,
            fixed: true,
        };
        l.choose(now);
        l
    }

    /// Derives the address for the current counter (skipping reserved identifiers, each
    /// as a retry) and starts DAD; false when the retries ran out.
    fn choose(&mut self, now: u64) -> bool {
        while self.counter <= IDGEN_RETRIES && !(self.fixed && self.counter > 0) {
            let (id, word) = stable_id(&self.secret, &self.prefix, self.mac, self.counter);
            if self.fixed {
                // The address stays as configured; the word gives the nonce and delay.
            } else if reserved(id) {
                self.counter += 1;
                continue;
            } else {
                let mut a = [0u8; 16];
                a[..8].copy_from_slice(&self.prefix);
                a[8..].copy_from_slice(&id.to_be_bytes());
                self.addr = Ipv6Address(a);
            }
            self.nonce.copy_from_slice(&word.to_be_bytes()[..6]);
            // The nonce tells our probe looped back from another node's: the word mixes
            // the secret and the MAC, so a node with another MAC or secret has another.
            self.phase = Phase::Tentative {
                sent: 0,
                // The low 48 bits (the nonce is the high 48): uniform enough over 1 s.
                deadline_ns: now + (word & 0xffff_ffff_ffff) % MAX_DELAY_NS,
            };
            return true;
        }
        self.phase = Phase::Failed;
        false
    }

    /// The /64 prefix the address is in.
    pub fn prefix(&self) -> [u8; 8] {
        self.prefix
    }

    /// The address (tentative, preferred, or the last one tried).
    pub fn addr(&self) -> Ipv6Address {
        self.addr
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The address if it passed DAD: the one we answer for and send from.
    pub fn preferred(&self) -> Option<Ipv6Address> {
        (self.phase == Phase::Preferred).then_some(self.addr)
    }

    /// Whether `a` is our address and still tentative.
    pub fn is_tentative(&self, a: Ipv6Address) -> bool {
        a == self.addr && matches!(self.phase, Phase::Tentative { .. })
    }

    /// Identifiers tried so far beyond the first (RFC 7217's DAD_Counter).
    pub fn retries(&self) -> u8 {
        self.counter
    }

    /// When [`poll`](Self::poll) next has work (`u64::MAX`: never).
    pub fn deadline(&self) -> u64 {
        match self.phase {
            Phase::Tentative { deadline_ns, .. } => deadline_ns,
            _ => u64::MAX,
        }
    }

    /// The clock at `now`: a probe to send, or the address preferred.
    pub fn poll(&mut self, now: u64) -> Option<Event> {
        let Phase::Tentative { sent, deadline_ns } = self.phase else {
            return None;
        };
        if now < deadline_ns {
            return None;
        }
        if sent < DAD_TRANSMITS {
            self.phase = Phase::Tentative {
                sent: sent + 1,
                deadline_ns: now + RETRANS_NS,
            };
            return Some(Event::Probe {
                target: self.addr,
                nonce: self.nonce,
            });
        }
        self.phase = Phase::Preferred;
        Some(Event::Preferred(self.addr))
    }

    /// A neighbour solicitation for `target` from `src` with `nonce` (RFC 4862 §5.4.3):
    /// from `::` for our tentative address and not our own probe, a duplicate.
    pub fn solicitation(
        &mut self,
        target: Ipv6Address,
        src: Ipv6Address,
        nonce: Option<[u8; 6]>,
        now: u64,
    ) -> Option<Event> {
        if !self.is_tentative(target) || !src.is_unspecified() || nonce == Some(self.nonce) {
            // A unicast source is resolving the address (ignored, §5.4.3); our own
            // probe looped back (RFC 7527) is no one else's.
            return None;
        }
        Some(self.duplicate(now))
    }

    /// A neighbour advertisement for `target` (RFC 4862 §5.4.4), not sent by us.
    pub fn advertisement(&mut self, target: Ipv6Address, now: u64) -> Option<Event> {
        if target != self.addr {
            return None;
        }
        match self.phase {
            Phase::Tentative { .. } => Some(self.duplicate(now)),
            Phase::Preferred => {
                self.conflicts += 1;
                None
            }
            Phase::Failed => None,
        }
    }

    fn duplicate(&mut self, now: u64) -> Event {
        self.conflicts += 1;
        let taken = self.addr;
        self.counter += 1;
        if self.choose(now) {
            Event::Duplicate {
                taken,
                next: self.addr,
            }
        } else if self.fixed {
            Event::InUse(taken)
        } else {
            Event::GaveUp(taken)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: EthernetAddress = EthernetAddress([2, 0xbe, 0xef, 0, 0, 1]);
    const SECRET: [u8; 16] = [0x42; 16];
    const UNSPEC: Ipv6Address = Ipv6Address([0; 16]);

    /// Runs the clock to the first probe and returns its nonce.
    fn first_probe(l: &mut LinkLocal) -> (u64, [u8; 6]) {
        let t = l.deadline();
        assert!(t < MAX_DELAY_NS);
        assert_eq!(l.poll(t.saturating_sub(1)).filter(|_| t > 0), None);
        match l.poll(t) {
            Some(Event::Probe { target, nonce }) => {
                assert_eq!(target, l.addr());
                (t, nonce)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_configured_address_is_probed_as_given_and_given_up_when_held() {
        let a = Ipv6Address::new(0x2001, 0xdb8, 7, 0, 0, 0, 0, 0x80);
        let mut l = LinkLocal::fixed(SECRET, MAC, a, 0);
        assert_eq!(l.addr(), a);
        assert_eq!(l.prefix(), [0x20, 0x01, 0x0d, 0xb8, 0, 7, 0, 0]);
        let (t, nonce) = first_probe(&mut l);
        // Our own probe looped back is nobody's; another node's probe is a duplicate.
        assert_eq!(l.solicitation(a, UNSPEC, Some(nonce), t), None);
        let e = l.solicitation(a, UNSPEC, Some([9; 6]), t);
        assert_eq!(e, Some(Event::InUse(a)), "never another address");
        assert_eq!(
            (l.phase(), l.addr(), l.deadline()),
            (Phase::Failed, a, u64::MAX)
        );
        // Unopposed, it is preferred as a derived one is.
        let mut l = LinkLocal::fixed(SECRET, MAC, a, 0);
        let (t, _) = first_probe(&mut l);
        assert_eq!(l.poll(t + RETRANS_NS), Some(Event::Preferred(a)));
    }

    #[test]
    fn the_address_is_stable_opaque_and_link_local() {
        let a = LinkLocal::new(SECRET, MAC, 0).addr();
        assert_eq!(a, LinkLocal::new(SECRET, MAC, 99).addr());
        assert!(a.is_link_local());
        assert_eq!(&a.0[..8], &PREFIX);
        // Another secret, another MAC: another identifier; not the EUI-64 of the MAC.
        assert_ne!(a, LinkLocal::new([1; 16], MAC, 0).addr());
        let other_mac = EthernetAddress([2, 0xbe, 0xef, 0, 0, 2]);
        assert_ne!(a, LinkLocal::new(SECRET, other_mac, 0).addr());
        assert_ne!(&a.0[8..], &[0x00, 0xbe, 0xef, 0xff, 0xfe, 0, 0, 1]);
    }

    #[test]
    fn unanswered_probe_makes_the_address_preferred_after_retrans_timer() {
        let mut l = LinkLocal::new(SECRET, MAC, 0);
        assert_eq!(l.preferred(), None);
        assert!(l.is_tentative(l.addr()));
        assert_eq!(l.poll(0).filter(|_| l.deadline() == 0), None);
        let (t, _) = first_probe(&mut l);
        assert_eq!(l.poll(t + RETRANS_NS - 1), None);
        assert_eq!(l.poll(t + RETRANS_NS), Some(Event::Preferred(l.addr())));
        assert_eq!(l.preferred(), Some(l.addr()));
        assert_eq!(l.deadline(), u64::MAX);
        assert_eq!(l.poll(u64::MAX - 1), None);
    }

    #[test]
    fn our_own_probe_looped_back_and_resolution_are_no_duplicates() {
        let mut l = LinkLocal::new(SECRET, MAC, 0);
        let a = l.addr();
        let (t, nonce) = first_probe(&mut l);
        assert_eq!(l.solicitation(a, UNSPEC, Some(nonce), t), None);
        let peer: Ipv6Address = "fe80::1".parse().unwrap();
        assert_eq!(l.solicitation(a, peer, None, t), None);
        assert_eq!(l.poll(t + RETRANS_NS), Some(Event::Preferred(a)));
    }

    #[test]
    fn a_duplicate_tries_the_next_identifier_then_gives_up() {
        let mut l = LinkLocal::new(SECRET, MAC, 0);
        let mut seen = [l.addr(); 4];
        // Someone else's DAD probe for it (another nonce): duplicate.
        let (t, _) = first_probe(&mut l);
        let e = l.solicitation(l.addr(), UNSPEC, Some([9; 6]), t);
        let Some(Event::Duplicate { taken, next }) = e else {
            panic!("{e:?}")
        };
        assert_eq!(taken, seen[0]);
        assert_ne!(next, taken);
        assert!(next.is_link_local());
        assert_eq!(l.retries(), 1);
        seen[1] = next;
        // An advertisement for the next ones: duplicates again, each a new address.
        for (k, s) in seen.iter_mut().enumerate().skip(2) {
            let e = l.advertisement(l.addr(), t);
            let Some(Event::Duplicate { next, .. }) = e else {
                panic!("{k}: {e:?}")
            };
            *s = next;
        }
        for i in 0..4 {
            for j in 0..i {
                assert_ne!(seen[i], seen[j]);
            }
        }
        // IDGEN_RETRIES spent: given up, nothing more sent, nothing answered.
        assert_eq!(l.advertisement(l.addr(), t), Some(Event::GaveUp(seen[3])));
        assert_eq!(l.phase(), Phase::Failed);
        assert_eq!(l.preferred(), None);
        assert_eq!(l.poll(u64::MAX - 1), None);
        assert_eq!(l.conflicts, 4);
    }

    #[test]
    fn after_dad_an_advertisement_of_our_address_is_only_counted() {
        let mut l = LinkLocal::new(SECRET, MAC, 0);
        let (t, _) = first_probe(&mut l);
        l.poll(t + RETRANS_NS);
        let a = l.addr();
        assert_eq!(l.advertisement(a, t + RETRANS_NS), None);
        assert_eq!(l.solicitation(a, UNSPEC, None, t + RETRANS_NS), None);
        assert_eq!(l.preferred(), Some(a));
        assert_eq!(l.conflicts, 1);
    }

    #[test]
    fn the_first_probe_waits_a_random_delay_spread_over_a_second() {
        // RFC 4862 §5.4.2: uniform over [0, MAX_RTR_SOLICITATION_DELAY).
        let delays: std::vec::Vec<u64> = (0..64u8)
            .map(|k| LinkLocal::new([k; 16], MAC, 0).deadline())
            .collect();
        assert!(delays.iter().all(|&d| d < MAX_DELAY_NS));
        assert!(delays.iter().any(|&d| d > MAX_DELAY_NS / 2));
        assert!(delays.iter().filter(|&&d| d < MAX_DELAY_NS / 100).count() < 8);
    }

    #[test]
    fn reserved_identifiers_are_refused() {
        assert!(reserved(0));
        assert!(reserved(0xfdff_ffff_ffff_ff80));
        assert!(reserved(u64::MAX));
        assert!(!reserved(0x1234));
    }
}
