//! The IPv6 neighbour cache (RFC 4861 §7.3): a fixed number of entries, each INCOMPLETE,
//! REACHABLE, STALE, DELAY or PROBE, driven by events (a solicitation or advertisement
//! heard, a lookup to send, an upper layer's confirmation, the clock) that return the
//! solicitation to send, if any. Pure: the caller passes the time and builds the frames.
//!
//! Hostile input, beyond RFC 4861:
//! - an advertisement never creates an entry (§7.2.5 already says so for unsolicited
//!   ones; here for all: a solicited one answers a solicitation of ours, which made an
//!   INCOMPLETE entry), so a flood of forged advertisements fills nothing;
//! - a solicitation creates a STALE entry (§7.2.3) only in a free slot or one recycled
//!   from INCOMPLETE or STALE entries: it never evicts a neighbour proven reachable
//!   (REACHABLE, DELAY, PROBE), so a scan of a /64 sending solicitations cannot push out
//!   the live neighbours;
//! - INCOMPLETE entries, the ones a scan of addresses we are made to resolve creates,
//!   are at most [`MAX_INCOMPLETE`] and the oldest is recycled first.
//!
//! No packet is queued on an INCOMPLETE entry: a lookup that finds none answers
//! [`Resolve::Pending`] and the caller drops its packet and counts it (RFC 4861 §7.2.2
//! allows a queue of any size; the frames waiting would be copies held for an attacker
//! who names addresses that never answer, and TCP retransmits anyway).

use crate::wire::{EthernetAddress, Ipv6Address};

/// Entries of the cache.
pub const ENTRIES: usize = 16;
/// Most entries INCOMPLETE at once.
pub const MAX_INCOMPLETE: usize = ENTRIES / 4;
/// RFC 4861 §10: multicast solicitations before giving up on resolution.
pub const MAX_MULTICAST_SOLICIT: u8 = 3;
/// RFC 4861 §10: unicast probes before giving up on a neighbour.
pub const MAX_UNICAST_SOLICIT: u8 = 3;
/// RFC 4861 §10: RetransTimer, between solicitations.
pub const RETRANS_TIMER_NS: u64 = 1_000_000_000;
/// RFC 4861 §10: REACHABLE_TIME (not randomised: one host, no synchronisation to break).
pub const REACHABLE_TIME_NS: u64 = 30_000_000_000;
/// RFC 4861 §10: DELAY_FIRST_PROBE_TIME.
pub const DELAY_FIRST_PROBE_NS: u64 = 5_000_000_000;

/// An entry's state (RFC 4861 §7.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Resolution under way: multicast solicitations sent, no link-layer address yet.
    Incomplete,
    /// Confirmed reachable within REACHABLE_TIME.
    Reachable,
    /// Not confirmed lately; the address is used and a probe starts on use.
    Stale,
    /// Used while STALE: waiting DELAY_FIRST_PROBE_TIME for an upper-layer confirmation.
    Delay,
    /// Unicast solicitations under way.
    Probe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    ip: Ipv6Address,
    mac: EthernetAddress,
    state: State,
    /// When the state's timer fires (REACHABLE: falls to STALE; DELAY: probe;
    /// INCOMPLETE and PROBE: the next solicitation or the end).
    deadline_ns: u64,
    /// Solicitations sent in this state.
    sent: u8,
    /// Last lookup or confirmation: the least recently useful goes first.
    used_ns: u64,
    /// The neighbour said it is a router.
    router: bool,
}

/// What to send: a neighbour solicitation for `target`, to its solicited-node group
/// (`unicast` `None`) or straight to the MAC cached (a probe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Solicit {
    /// The address asked about.
    pub target: Ipv6Address,
    /// The cached MAC for a unicast probe; `None`: multicast.
    pub unicast: Option<EthernetAddress>,
}

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolve {
    /// Send to this MAC.
    Known(EthernetAddress),
    /// Not known yet: drop the packet (counted); send this solicitation if any.
    Pending(Option<Solicit>),
}

/// What the cache did with an event (for counters and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// An entry was made or changed.
    Updated,
    /// Nothing changed (same address, or ignored by the rules).
    Unchanged,
    /// No entry to update, none made (an advertisement for an address never asked; a
    /// solicitation while every slot holds a live neighbour).
    Ignored,
}

/// The cache.
#[derive(Debug, Clone)]
pub struct NeighbourCache {
    entries: [Option<Entry>; ENTRIES],
    /// Entries removed because resolution or probing got no answer.
    pub unreachable: u64,
}

impl Default for NeighbourCache {
    fn default() -> Self {
        Self::new()
    }
}

impl NeighbourCache {
    /// Empty.
    pub const fn new() -> NeighbourCache {
        NeighbourCache {
            entries: [None; ENTRIES],
            unreachable: 0,
        }
    }

    fn find(&mut self, ip: Ipv6Address) -> Option<&mut Entry> {
        self.entries.iter_mut().flatten().find(|e| e.ip == ip)
    }

    /// The state of `ip`'s entry and its MAC (INCOMPLETE: zero).
    pub fn state(&self, ip: Ipv6Address) -> Option<(State, EthernetAddress)> {
        self.entries
            .iter()
            .flatten()
            .find(|e| e.ip == ip)
            .map(|e| (e.state, e.mac))
    }

    /// Entries in `state`.
    pub fn count(&self, state: State) -> usize {
        self.entries
            .iter()
            .flatten()
            .filter(|e| e.state == state)
            .count()
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.entries.iter().flatten().count()
    }

    /// Whether no entry is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A slot for a new entry: a free one, else (when `live_too`) the least recently
    /// used of any state, else the oldest INCOMPLETE, else the least recently used STALE;
    /// `None` when only live neighbours are left and `live_too` is false.
    fn slot(&mut self, live_too: bool) -> Option<&mut Option<Entry>> {
        let mut victim: Option<(u8, u64, usize)> = None;
        for (i, e) in self.entries.iter().enumerate() {
            let rank = match e {
                None => return self.entries.get_mut(i),
                Some(e) => match e.state {
                    State::Incomplete => (0, e.used_ns),
                    State::Stale => (1, e.used_ns),
                    _ if live_too => (2, e.used_ns),
                    _ => continue,
                },
            };
            if victim.is_none_or(|(r, u, _)| (rank.0, rank.1) < (r, u)) {
                victim = Some((rank.0, rank.1, i));
            }
        }
        let (_, _, i) = victim?;
        self.entries.get_mut(i)
    }

    /// We want to send to `ip` (on the link) at `now` (RFC 4861 §7.2.2, §7.3.3): its MAC,
    /// or the resolution to start. A STALE entry used goes to DELAY.
    pub fn lookup(&mut self, ip: Ipv6Address, now: u64) -> Resolve {
        if let Some(e) = self.find(ip) {
            e.used_ns = now;
            if e.state == State::Reachable && now >= e.deadline_ns {
                e.state = State::Stale;
            }
            return match e.state {
                State::Incomplete => Resolve::Pending(None),
                State::Stale => {
                    e.state = State::Delay;
                    e.deadline_ns = now + DELAY_FIRST_PROBE_NS;
                    Resolve::Known(e.mac)
                }
                _ => Resolve::Known(e.mac),
            };
        }
        let incomplete = self
            .entries
            .iter()
            .flatten()
            .filter(|e| e.state == State::Incomplete)
            .count();
        let entry = Entry {
            ip,
            mac: EthernetAddress([0; 6]),
            state: State::Incomplete,
            deadline_ns: now + RETRANS_TIMER_NS,
            sent: 1,
            used_ns: now,
            router: false,
        };
        let slot = if incomplete >= MAX_INCOMPLETE {
            // Recycle the oldest INCOMPLETE: the cap holds whatever is asked.
            let oldest = self
                .entries
                .iter_mut()
                .filter(|e| matches!(e, Some(e) if e.state == State::Incomplete))
                .min_by_key(|e| e.map_or(0, |e| e.used_ns));
            oldest
        } else {
            self.slot(true)
        };
        match slot {
            Some(s) => {
                *s = Some(entry);
                Resolve::Pending(Some(Solicit {
                    target: ip,
                    unicast: None,
                }))
            }
            None => Resolve::Pending(None),
        }
    }

    /// A neighbour solicitation from `src` (not `::`) carrying source link-layer address
    /// `lladdr` (RFC 4861 §7.2.3). Without one nothing is learned.
    pub fn solicited_by(
        &mut self,
        src: Ipv6Address,
        lladdr: Option<EthernetAddress>,
        now: u64,
    ) -> Heard {
        let Some(mac) = lladdr else {
            return Heard::Unchanged;
        };
        if src.is_unspecified() || src.is_multicast() {
            return Heard::Ignored;
        }
        if let Some(e) = self.find(src) {
            if e.state == State::Incomplete || e.mac != mac {
                e.mac = mac;
                e.state = State::Stale;
                e.sent = 0;
                return Heard::Updated;
            }
            return Heard::Unchanged;
        }
        match self.slot(false) {
            Some(s) => {
                *s = Some(Entry {
                    ip: src,
                    mac,
                    state: State::Stale,
                    deadline_ns: 0,
                    sent: 0,
                    used_ns: now,
                    router: false,
                });
                Heard::Updated
            }
            None => Heard::Ignored,
        }
    }

    /// A neighbour advertisement for `target` with its flags and target link-layer
    /// address (RFC 4861 §7.2.5). It never creates an entry.
    pub fn advertised(
        &mut self,
        target: Ipv6Address,
        lladdr: Option<EthernetAddress>,
        (solicited, override_, router): (bool, bool, bool),
        now: u64,
    ) -> Heard {
        let Some(e) = self.find(target) else {
            return Heard::Ignored;
        };
        if e.state == State::Incomplete {
            let Some(mac) = lladdr else {
                return Heard::Unchanged;
            };
            e.mac = mac;
            e.router = router;
            e.sent = 0;
            if solicited {
                e.state = State::Reachable;
                e.deadline_ns = now + REACHABLE_TIME_NS;
            } else {
                e.state = State::Stale;
            }
            return Heard::Updated;
        }
        let differs = lladdr.is_some_and(|m| m != e.mac);
        if !override_ && differs {
            // §7.2.5: keep the cached address; a REACHABLE entry is no longer sure.
            if e.state == State::Reachable {
                e.state = State::Stale;
                return Heard::Updated;
            }
            return Heard::Unchanged;
        }
        if let Some(m) = lladdr {
            e.mac = m;
        }
        e.router = router;
        if solicited {
            e.state = State::Reachable;
            e.deadline_ns = now + REACHABLE_TIME_NS;
            e.sent = 0;
            Heard::Updated
        } else if differs {
            e.state = State::Stale;
            Heard::Updated
        } else {
            Heard::Unchanged
        }
    }

    /// An upper layer saw forward progress with `ip` (RFC 4861 §7.3.1: a TCP
    /// acknowledgment of new data): the entry, if resolved, is REACHABLE again.
    pub fn confirm(&mut self, ip: Ipv6Address, now: u64) {
        if let Some(e) = self.find(ip) {
            if e.state != State::Incomplete {
                e.state = State::Reachable;
                e.deadline_ns = now + REACHABLE_TIME_NS;
                e.sent = 0;
                e.used_ns = now;
            }
        }
    }

    /// Whether `ip`'s entry says it is a router.
    pub fn is_router(&self, ip: Ipv6Address) -> bool {
        self.entries
            .iter()
            .flatten()
            .any(|e| e.ip == ip && e.router)
    }

    /// The earliest time [`poll`](Self::poll) has work (`u64::MAX`: none).
    pub fn deadline(&self) -> u64 {
        self.entries
            .iter()
            .flatten()
            .filter(|e| matches!(e.state, State::Incomplete | State::Delay | State::Probe))
            .map(|e| e.deadline_ns)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Runs the timers due at `now`: the next solicitation to send, if any (call again
    /// until `None`; at most one per entry per call). An entry whose solicitations went
    /// unanswered is removed (counted in [`unreachable`](Self::unreachable)).
    pub fn poll(&mut self, now: u64) -> Option<Solicit> {
        for slot in self.entries.iter_mut() {
            let Some(e) = slot else { continue };
            if now < e.deadline_ns {
                continue;
            }
            match e.state {
                State::Reachable => e.state = State::Stale,
                State::Stale => {}
                State::Incomplete | State::Probe => {
                    let most = if e.state == State::Incomplete {
                        MAX_MULTICAST_SOLICIT
                    } else {
                        MAX_UNICAST_SOLICIT
                    };
                    if e.sent >= most {
                        *slot = None;
                        self.unreachable += 1;
                        continue;
                    }
                    e.sent += 1;
                    e.deadline_ns = now + RETRANS_TIMER_NS;
                    return Some(Solicit {
                        target: e.ip,
                        unicast: (e.state == State::Probe).then_some(e.mac),
                    });
                }
                State::Delay => {
                    e.state = State::Probe;
                    e.sent = 1;
                    e.deadline_ns = now + RETRANS_TIMER_NS;
                    return Some(Solicit {
                        target: e.ip,
                        unicast: Some(e.mac),
                    });
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const M1: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const M2: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    fn ip(n: u16) -> Ipv6Address {
        let mut a = [0u8; 16];
        a[0] = 0xfe;
        a[1] = 0x80;
        a[14..].copy_from_slice(&n.to_be_bytes());
        Ipv6Address(a)
    }

    #[test]
    fn resolution_solicits_then_learns_from_the_solicited_advertisement() {
        let mut c = NeighbourCache::new();
        let want = Solicit {
            target: ip(1),
            unicast: None,
        };
        assert_eq!(c.lookup(ip(1), 0), Resolve::Pending(Some(want)));
        // Asked again while resolving: no new solicitation, still nothing to send to.
        assert_eq!(c.lookup(ip(1), 1), Resolve::Pending(None));
        assert_eq!(c.poll(S / 2), None);
        // RetransTimer: the second and third multicast solicitations.
        assert_eq!(c.poll(S), Some(want));
        assert_eq!(c.poll(S), None);
        let heard = c.advertised(ip(1), Some(M1), (true, true, false), S + 5);
        assert_eq!(heard, Heard::Updated);
        assert_eq!(c.state(ip(1)), Some((State::Reachable, M1)));
        assert_eq!(c.lookup(ip(1), S + 6), Resolve::Known(M1));
    }

    #[test]
    fn unanswered_resolution_gives_up_after_max_multicast_solicit() {
        let mut c = NeighbourCache::new();
        assert!(matches!(c.lookup(ip(1), 0), Resolve::Pending(Some(_))));
        assert!(c.poll(S).is_some());
        assert!(c.poll(2 * S).is_some());
        assert_eq!(c.poll(3 * S), None);
        assert_eq!(c.state(ip(1)), None);
        assert_eq!(c.unreachable, 1);
    }

    #[test]
    fn reachable_falls_stale_then_delay_probe_and_is_removed_without_answer() {
        let mut c = NeighbourCache::new();
        c.lookup(ip(1), 0);
        c.advertised(ip(1), Some(M1), (true, false, false), 0);
        assert_eq!(c.poll(REACHABLE_TIME_NS), None);
        assert_eq!(c.state(ip(1)), Some((State::Stale, M1)));
        // Used while STALE: sent to at once, DELAY.
        let t = REACHABLE_TIME_NS + S;
        assert_eq!(c.lookup(ip(1), t), Resolve::Known(M1));
        assert_eq!(c.state(ip(1)).unwrap().0, State::Delay);
        assert_eq!(c.poll(t + DELAY_FIRST_PROBE_NS - 1), None);
        let probe = Solicit {
            target: ip(1),
            unicast: Some(M1),
        };
        let t = t + DELAY_FIRST_PROBE_NS;
        assert_eq!(c.poll(t), Some(probe));
        assert_eq!(c.state(ip(1)).unwrap().0, State::Probe);
        assert_eq!(c.poll(t + S), Some(probe));
        assert_eq!(c.poll(t + 2 * S), Some(probe));
        assert_eq!(c.poll(t + 3 * S), None);
        assert_eq!(c.state(ip(1)), None);
    }

    #[test]
    fn delay_confirmed_by_an_upper_layer_needs_no_probe() {
        let mut c = NeighbourCache::new();
        c.solicited_by(ip(1), Some(M1), 0);
        assert_eq!(c.state(ip(1)), Some((State::Stale, M1)));
        assert_eq!(c.lookup(ip(1), 1), Resolve::Known(M1));
        c.confirm(ip(1), 2);
        assert_eq!(c.state(ip(1)).unwrap().0, State::Reachable);
        assert_eq!(c.poll(DELAY_FIRST_PROBE_NS + 2), None);
        // A probe answered by a solicited advertisement: REACHABLE.
        let mut c = NeighbourCache::new();
        c.solicited_by(ip(1), Some(M1), 0);
        c.lookup(ip(1), 0);
        assert!(c.poll(DELAY_FIRST_PROBE_NS).is_some());
        c.advertised(ip(1), None, (true, false, false), DELAY_FIRST_PROBE_NS);
        assert_eq!(c.state(ip(1)), Some((State::Reachable, M1)));
    }

    #[test]
    fn an_advertisement_never_creates_an_entry() {
        let mut c = NeighbourCache::new();
        for flags in [
            (true, true, false),
            (false, true, true),
            (false, false, false),
        ] {
            assert_eq!(c.advertised(ip(9), Some(M1), flags, 0), Heard::Ignored);
        }
        assert!(c.is_empty());
    }

    #[test]
    fn override_rules_of_rfc_4861_7_2_5() {
        let mut c = NeighbourCache::new();
        c.lookup(ip(1), 0);
        c.advertised(ip(1), Some(M1), (true, false, false), 0);
        // Another MAC without the override flag: kept, but REACHABLE no more.
        assert_eq!(
            c.advertised(ip(1), Some(M2), (true, false, false), 1),
            Heard::Updated
        );
        assert_eq!(c.state(ip(1)), Some((State::Stale, M1)));
        assert_eq!(
            c.advertised(ip(1), Some(M2), (false, false, false), 2),
            Heard::Unchanged
        );
        // With override, unsolicited: taken, STALE.
        assert_eq!(
            c.advertised(ip(1), Some(M2), (false, true, true), 3),
            Heard::Updated
        );
        assert_eq!(c.state(ip(1)), Some((State::Stale, M2)));
        assert!(c.is_router(ip(1)));
        // An INCOMPLETE entry's unsolicited advertisement with an address: STALE.
        c.lookup(ip(2), 4);
        c.advertised(ip(2), Some(M1), (false, false, false), 4);
        assert_eq!(c.state(ip(2)), Some((State::Stale, M1)));
    }

    #[test]
    fn a_solicitation_scan_never_evicts_live_neighbours() {
        let mut c = NeighbourCache::new();
        // Every slot a neighbour we resolved and that answered.
        for n in 0..ENTRIES as u16 {
            c.lookup(ip(n), 0);
            c.advertised(ip(n), Some(M1), (true, false, false), 0);
        }
        // A scan from many sources: nothing made, nothing lost.
        for n in 1000..3000 {
            assert_eq!(c.solicited_by(ip(n), Some(M2), 1), Heard::Ignored);
        }
        for n in 0..ENTRIES as u16 {
            assert_eq!(c.state(ip(n)), Some((State::Reachable, M1)));
        }
        // Once stale, they make room for the scan's, least recently used first.
        c.poll(REACHABLE_TIME_NS);
        c.lookup(ip(3), REACHABLE_TIME_NS + 1); // used: DELAY, live
        assert_eq!(
            c.solicited_by(ip(5000), Some(M2), REACHABLE_TIME_NS + 2),
            Heard::Updated
        );
        assert_eq!(c.state(ip(3)).unwrap().0, State::Delay);
        assert_eq!(c.len(), ENTRIES);
    }

    #[test]
    fn incomplete_entries_are_bounded_and_recycled_first() {
        let mut c = NeighbourCache::new();
        c.solicited_by(ip(1), Some(M1), 0);
        for n in 100..200 {
            assert!(matches!(c.lookup(ip(n), n.into()), Resolve::Pending(_)));
            let incomplete = (100..=n)
                .filter(|&k| matches!(c.state(ip(k)), Some((State::Incomplete, _))))
                .count();
            assert!(incomplete <= MAX_INCOMPLETE);
        }
        // The newest are the ones kept; the neighbour heard from is still there.
        assert_eq!(c.state(ip(199)).unwrap().0, State::Incomplete);
        assert_eq!(c.state(ip(100)), None);
        assert_eq!(c.state(ip(1)), Some((State::Stale, M1)));
        assert!(c.len() <= MAX_INCOMPLETE + 1);
    }

    #[test]
    fn a_solicitation_updates_a_changed_address_and_ignores_bad_sources() {
        let mut c = NeighbourCache::new();
        assert_eq!(c.solicited_by(ip(1), Some(M1), 0), Heard::Updated);
        assert_eq!(c.solicited_by(ip(1), Some(M1), 1), Heard::Unchanged);
        assert_eq!(c.solicited_by(ip(1), None, 1), Heard::Unchanged);
        assert_eq!(c.solicited_by(ip(1), Some(M2), 2), Heard::Updated);
        assert_eq!(c.state(ip(1)), Some((State::Stale, M2)));
        let unspecified = Ipv6Address([0; 16]);
        assert_eq!(c.solicited_by(unspecified, Some(M1), 3), Heard::Ignored);
        // Resolving, then solicited by it: its address is learned, STALE.
        c.lookup(ip(2), 4);
        c.solicited_by(ip(2), Some(M1), 5);
        assert_eq!(c.state(ip(2)), Some((State::Stale, M1)));
        assert_eq!(c.deadline(), u64::MAX);
    }
}
