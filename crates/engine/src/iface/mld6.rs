//! The multicast listener of the link (MLDv2, RFC 3810 §6, the host's part, with MLDv1
//! compatibility, RFC 3810 §8): it reports the groups the link listens to, so that an
//! MLD-snooping switch forwards their frames to us and a multicast router knows them. It
//! owns the groups last reported, the retransmissions of a change still due and the
//! answers to queries still due; [`super::ipv6::Link`] says which groups are ours (the
//! solicited-node group of each address, in any phase: RFC 4862 §5.4.2 joins it before
//! DAD) and builds the frames.
//!
//! - **A change** (a group joined or left) is reported at once and again after a random
//!   delay below the Unsolicited Report Interval (1 s), [`ROBUSTNESS`] times in all
//!   (§6.1): joins as `CHANGE_TO_EXCLUDE` with no sources, leaves as `CHANGE_TO_INCLUDE`.
//!   Reports go from `::` until the link-local address passed DAD (§5.2.13: snooping
//!   switches take them, routers do not), and then every group is reported again from
//!   it ([`Listener::rejoin`]).
//! - **A query** (a link-local source, hop limit 1 and the Router Alert option, §6.2; the
//!   link checks them) is answered after a random delay below its Maximum Response Delay:
//!   a general query with every group (`MODE_IS_EXCLUDE`), a group-specific one (with or
//!   without sources: we listen to every source) with that group if it is ours. A query
//!   already due sooner is not pushed back (§6.2's rules, without the per-source state
//!   we never have).
//! - **MLDv1** (a 24-byte query, §8.2): while an MLDv1 querier was heard in the last
//!   Older Version Querier Present Timeout (260 s, §9.12) reports are MLDv1's, one
//!   message per group to the group itself; leaves are not sent (RFC 2710 §4 makes Done
//!   a SHOULD for the last reporter only; the router's listener timer ends the group).
//! - The all-nodes group is never reported (§6); neither is anything with a scope below
//!   link-local.
//!
//! Fixed size: [`MAX_GROUPS`] groups, no allocation.

use super::slaac::MAX_PREFIXES;
use crate::wire::icmpv6::RecordType;
use crate::wire::Ipv6Address;

/// Groups the link can listen to: the solicited-node group of the link-local address and
/// of each SLAAC address.
pub const MAX_GROUPS: usize = 1 + MAX_PREFIXES;
/// Records a report can carry: every group joined, and as many left.
pub const MAX_RECORDS: usize = 2 * MAX_GROUPS;
/// How many times a change is reported (the Robustness Variable's default, §9.1).
pub const ROBUSTNESS: u8 = 2;
/// The Unsolicited Report Interval (§9.11): retransmissions of a change go within it.
pub const UNSOLICITED_NS: u64 = 1_000_000_000;
/// How long an MLDv1 querier heard keeps us speaking MLDv1 (§9.12: Robustness × Query
/// Interval + Query Response Interval = 2 × 125 s + 10 s).
pub const V1_PRESENT_NS: u64 = 260_000_000_000;

/// The records of one MLDv2 report (or, in MLDv1 mode, the group of one MLDv1 report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Records {
    items: [(RecordType, Ipv6Address); MAX_RECORDS],
    len: u8,
}

impl Records {
    const EMPTY: Records = Records {
        items: [(RecordType::ModeIsExclude, Ipv6Address::UNSPECIFIED); MAX_RECORDS],
        len: 0,
    };

    fn push(&mut self, kind: RecordType, group: Ipv6Address) {
        if let Some(slot) = self.items.get_mut(usize::from(self.len)) {
            *slot = (kind, group);
            self.len += 1;
        }
    }

    /// The records, in order.
    pub fn as_slice(&self) -> &[(RecordType, Ipv6Address)] {
        &self.items[..usize::from(self.len)]
    }
}

/// What [`Listener::poll`] asks to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// An MLDv2 report with these records, to all MLDv2 routers (ff02::16).
    V2(Records),
    /// An MLDv1 report for this group, to the group.
    V1(Ipv6Address),
}

/// One group we listen to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    addr: Ipv6Address,
    /// Change reports of its join still to send.
    retransmit: u8,
    /// A query asked about it: answer at `Listener::answer_at`.
    asked: bool,
}

/// The listener's state (the module doc).
#[derive(Debug, Clone)]
pub struct Listener {
    joined: [Option<Group>; MAX_GROUPS],
    /// Groups left whose leave is still to be reported, and how many times.
    left: [Option<(Ipv6Address, u8)>; MAX_GROUPS],
    /// When the next change report goes (`u64::MAX`: none due).
    change_at: u64,
    /// When the answer to a query goes (`u64::MAX`: none due).
    answer_at: u64,
    /// Until when an MLDv1 querier counts as present (0: never heard).
    v1_until: u64,
    /// MLDv1 change reports: the groups (by index) sent in this round.
    v1_sent: u8,
    /// xorshift64 state for the random delays (not a secret: timing jitter only).
    rng: u64,
}

impl Listener {
    /// A listener of no group; `seed` makes its delays differ from other hosts'.
    pub fn new(seed: u64) -> Listener {
        Listener {
            joined: [None; MAX_GROUPS],
            left: [None; MAX_GROUPS],
            change_at: u64::MAX,
            answer_at: u64::MAX,
            v1_until: 0,
            v1_sent: 0,
            rng: seed | 1,
        }
    }

    fn random_below(&mut self, bound_ns: u64) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        if bound_ns == 0 {
            0
        } else {
            x % bound_ns
        }
    }

    /// The groups we listen to now (duplicates and `None` ignored). A group not listened
    /// to before is joined, one no longer in `groups` is left; either change is reported
    /// at once ([`poll`](Self::poll)).
    pub fn listen(&mut self, groups: &[Option<Ipv6Address>], now: u64) {
        let wanted = |a: Ipv6Address| groups.contains(&Some(a));
        let mut changed = false;
        for slot in self.joined.iter_mut() {
            if let Some(g) = slot.filter(|g| !wanted(g.addr)) {
                *slot = None;
                changed = true;
                let free = self.left.iter().position(Option::is_none);
                // All taken (more leaves within two reports than there are groups): the
                // one with the fewest reports still due makes room.
                let at = free.unwrap_or_else(|| {
                    (0..MAX_GROUPS)
                        .min_by_key(|&i| self.left[i].map_or(0, |l| l.1))
                        .unwrap_or(0)
                });
                self.left[at] = Some((g.addr, ROBUSTNESS));
            }
        }
        for a in groups.iter().flatten() {
            if !reportable(*a) || self.joined.iter().flatten().any(|g| g.addr == *a) {
                continue;
            }
            let Some(slot) = self.joined.iter_mut().find(|g| g.is_none()) else {
                break;
            };
            *slot = Some(Group {
                addr: *a,
                retransmit: ROBUSTNESS,
                asked: false,
            });
            changed = true;
            // Joined again before its leave was all sent: the leave is void.
            for l in self.left.iter_mut() {
                if l.is_some_and(|l| l.0 == *a) {
                    *l = None;
                }
            }
        }
        if changed {
            self.change_at = now;
        }
    }

    /// Reports every group again as a change, [`ROBUSTNESS`] times from `now`: when the
    /// link-local address becomes ours. Reports sent from `::` before serve snooping
    /// switches only; routers ignore them (RFC 3590 §4, RFC 3810 §5.2.13).
    pub fn rejoin(&mut self, now: u64) {
        let mut any = false;
        for g in self.joined.iter_mut().flatten() {
            g.retransmit = ROBUSTNESS;
            any = true;
        }
        if any {
            self.change_at = now;
        }
    }

    /// The groups listened to.
    pub fn groups(&self) -> impl Iterator<Item = Ipv6Address> + '_ {
        self.joined.iter().flatten().map(|g| g.addr)
    }

    /// A query about `group` (`::`: a general query), to be answered within
    /// `max_resp_ms`; `v1` when it was an MLDv1 query. The link checked where it came
    /// from (RFC 3810 §6.2).
    pub fn query(&mut self, group: Ipv6Address, max_resp_ms: u32, v1: bool, now: u64) {
        if v1 {
            self.v1_until = now.saturating_add(V1_PRESENT_NS);
        }
        let mut any = false;
        for g in self.joined.iter_mut().flatten() {
            if group.is_unspecified() || g.addr == group {
                g.asked = true;
                any = true;
            }
        }
        if any {
            let at = now + self.random_below(u64::from(max_resp_ms) * 1_000_000);
            self.answer_at = self.answer_at.min(at);
        }
    }

    /// Whether an MLDv1 querier was heard recently (reports are MLDv1's).
    pub fn v1(&self, now: u64) -> bool {
        now < self.v1_until
    }

    /// When [`poll`](Self::poll) next has work (`u64::MAX`: none).
    pub fn deadline(&self) -> u64 {
        self.change_at.min(self.answer_at)
    }

    /// The clock at `now`: a report to send, if one is due (call until `None`).
    pub fn poll(&mut self, now: u64) -> Option<Report> {
        if now >= self.change_at {
            let r = if self.v1(now) {
                self.change_v1(now)
            } else {
                self.change_v2(now)
            };
            if r.is_some() {
                return r;
            }
        }
        if now >= self.answer_at {
            return self.answer(now);
        }
        None
    }

    /// The change report due: every join and leave with reports still due.
    fn change_v2(&mut self, now: u64) -> Option<Report> {
        let mut r = Records::EMPTY;
        let mut more = false;
        for g in self.joined.iter_mut().flatten() {
            if g.retransmit > 0 {
                r.push(RecordType::ChangeToExclude, g.addr);
                g.retransmit -= 1;
                more |= g.retransmit > 0;
            }
        }
        for slot in self.left.iter_mut() {
            if let Some((a, n)) = *slot {
                r.push(RecordType::ChangeToInclude, a);
                *slot = (n > 1).then_some((a, n - 1));
                more |= n > 1;
            }
        }
        self.change_at = if more {
            now + self.random_below(UNSOLICITED_NS)
        } else {
            u64::MAX
        };
        (r.len > 0).then_some(Report::V2(r))
    }

    /// In MLDv1 mode: each join with reports due, one message per group and call; when
    /// all went, the next round after a random delay. Leaves are dropped (the module doc).
    fn change_v1(&mut self, now: u64) -> Option<Report> {
        self.left = [None; MAX_GROUPS];
        for (i, g) in self.joined.iter_mut().enumerate() {
            let Some(g) = g else { continue };
            if g.retransmit > 0 && self.v1_sent & (1 << i) == 0 {
                self.v1_sent |= 1 << i;
                g.retransmit -= 1;
                return Some(Report::V1(g.addr));
            }
        }
        self.v1_sent = 0;
        let more = self.joined.iter().flatten().any(|g| g.retransmit > 0);
        self.change_at = if more {
            now + self.random_below(UNSOLICITED_NS)
        } else {
            u64::MAX
        };
        None
    }

    /// The answer to the queries due: in MLDv2 one report of every group asked about; in
    /// MLDv1 one message per group and call.
    fn answer(&mut self, now: u64) -> Option<Report> {
        if self.v1(now) {
            if let Some(g) = self.joined.iter_mut().flatten().find(|g| g.asked) {
                g.asked = false;
                return Some(Report::V1(g.addr));
            }
            self.answer_at = u64::MAX;
            return None;
        }
        self.answer_at = u64::MAX;
        let mut r = Records::EMPTY;
        for g in self.joined.iter_mut().flatten() {
            if core::mem::take(&mut g.asked) {
                r.push(RecordType::ModeIsExclude, g.addr);
            }
        }
        (r.len > 0).then_some(Report::V2(r))
    }
}

/// Whether `group` is reported: multicast, link-local scope or wider, not all-nodes
/// (RFC 3810 §6).
fn reportable(group: Ipv6Address) -> bool {
    group.is_multicast() && group.0[1] & 0x0f >= 2 && group != Ipv6Address::ALL_NODES
}

#[cfg(test)]
mod tests;
