//! Connections per client address: a fixed-size open-addressing table (address → count;
//! an IPv4 address, or an IPv6 client's /64, [`limit_key`]),
//! allocated at start with room for every TCB twice over, so it never fills. The server
//! refuses a connection beyond `--max-per-ip` from one address (the hardening work: one client must
//! not take every TCB). Keyed SipHash: an attacker cannot aim its addresses at one bucket.
//! Each live address also carries a one-byte tag, forgotten with its last connection: the
//! send NIC of a bonded server's per-client policy (the bonding paper).

use alloc::vec;
use alloc::vec::Vec;
use core::hash::Hasher;

use siphasher::sip::SipHasher13;

use super::port_table::v4_of;

/// The address a client's connections are counted under: an IPv4 address itself (kept
/// IPv4-mapped), an IPv6 address's /64. One IPv6 host is given a whole /64 (RFC 4291 §2.5.1,
/// SLAAC): counted per address, it would have 2^64 addresses' worth of limit. A
/// link-local source (`fe80::/10`) is counted by its whole address: every host on the
/// link shares `fe80::/64`, and a host there could as well forge IPv4 sources.
#[inline(always)]
pub fn limit_key(ip: &[u8; 16]) -> [u8; 16] {
    if v4_of(ip).is_some() || (ip[0] == 0xfe && ip[1] & 0xc0 == 0x80) {
        return *ip;
    }
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&ip[..8]);
    k
}

/// An empty slot's count.
const EMPTY: u32 = 0;
/// A live address's tag before one is set.
pub const NO_TAG: u8 = u8::MAX;

/// Live connections per IPv4 address.
pub struct PerIp {
    /// (address, count, tag); count 0 marks an empty slot.
    slots: Vec<([u8; 16], u32, u8)>,
    mask: usize,
    key: [u8; 16],
    /// Bumped by every change: a [`Place`] from before one is looked up again.
    changes: u32,
}

/// Where an address's count lives, as [`PerIp::lookup`] found it: the server checks the
/// count of a SYN's address and adds its connection with one hash of the address, not two.
#[derive(Debug, Clone, Copy)]
pub struct Place {
    at: usize,
    count: u32,
    ip: [u8; 16],
    changes: u32,
    home: u32,
}

impl Place {
    /// Live connections from the address when it was looked up.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The address's home slot: the server keeps it with the connection and gives it to
    /// [`PerIp::remove_from`] when the connection ends, so the address is hashed once per
    /// connection, not twice (it does not change: the table's key and size are fixed).
    pub fn home(&self) -> u32 {
        self.home
    }
}

impl PerIp {
    /// A table for up to `entries` live addresses (at most one per TCB), keyed by `key`.
    pub fn new(entries: usize, key: [u8; 16]) -> PerIp {
        let cap = (2 * entries.max(1)).next_power_of_two();
        PerIp {
            slots: vec![([0; 16], EMPTY, NO_TAG); cap],
            mask: cap - 1,
            key,
            changes: 0,
        }
    }

    fn home(&self, ip: [u8; 16]) -> usize {
        let mut h = SipHasher13::new_with_key(&self.key);
        match v4_of(&ip) {
            // The four address bytes as one word (the same bytes, in the same order, as
            // `write(&ip)`: the hasher takes a word little-endian), without the byte loop.
            Some(v4) => h.write_u32(u32::from_le_bytes(v4)),
            None => h.write(&ip),
        }
        h.finish() as usize & self.mask
    }

    /// The slot holding `ip`, or the empty slot where it would go.
    fn find(&self, ip: [u8; 16]) -> usize {
        self.find_from(ip, self.home(ip))
    }

    /// [`find`](Self::find) from `ip`'s home slot `i`, already known.
    fn find_from(&self, ip: [u8; 16], mut i: usize) -> usize {
        // The table is never more than half full, so an empty slot ends every probe.
        while self.slots[i].1 != EMPTY && self.slots[i].0 != ip {
            i = (i + 1) & self.mask;
        }
        i
    }

    /// Live connections from `ip`.
    pub fn count(&self, ip: [u8; 16]) -> u32 {
        self.slots[self.find(ip)].1
    }

    /// Where `ip`'s count lives, and the count.
    pub fn lookup(&self, ip: [u8; 16]) -> Place {
        let home = self.home(ip);
        let at = self.find_from(ip, home);
        Place {
            at,
            count: self.slots[at].1,
            ip,
            changes: self.changes,
            home: home as u32,
        }
    }

    /// One more connection from `ip`.
    pub fn add(&mut self, ip: [u8; 16]) {
        let i = self.find(ip);
        self.add_in(i, ip);
    }

    /// One more connection from the address `place` was looked up for (looked up again if
    /// the table changed since).
    pub fn add_at(&mut self, place: Place) {
        let i = if place.changes == self.changes {
            place.at
        } else {
            self.find(place.ip)
        };
        self.add_in(i, place.ip);
    }

    fn add_in(&mut self, i: usize, ip: [u8; 16]) {
        self.changes = self.changes.wrapping_add(1);
        let (_, n, tag) = self.slots[i];
        self.slots[i] = (ip, n + 1, if n == EMPTY { NO_TAG } else { tag });
    }

    /// The tag of `ip` (`None` if it has no connection or no tag was set).
    pub fn tag(&self, ip: [u8; 16]) -> Option<u8> {
        let (_, n, tag) = self.slots[self.find(ip)];
        (n != EMPTY && tag != NO_TAG).then_some(tag)
    }

    /// Tags `ip`, if it has a connection (the tag goes with its last one).
    pub fn set_tag(&mut self, ip: [u8; 16], tag: u8) {
        let i = self.find(ip);
        if self.slots[i].1 != EMPTY {
            self.slots[i].2 = tag;
        }
    }

    /// One connection fewer from `ip` (nothing if it has none).
    pub fn remove(&mut self, ip: [u8; 16]) {
        self.remove_from(ip, self.home(ip) as u32);
    }

    /// [`remove`](Self::remove) given `ip`'s home slot ([`Place::home`] of a lookup of
    /// `ip` in this table); a wrong one is taken as "no connection" or as another probe
    /// start, never out of bounds.
    pub fn remove_from(&mut self, ip: [u8; 16], home: u32) {
        self.changes = self.changes.wrapping_add(1);
        let mut i = self.find_from(ip, home as usize & self.mask);
        match self.slots[i].1 {
            EMPTY => return,
            1 => {}
            n => {
                self.slots[i].1 = n - 1;
                return;
            }
        }
        // Backward-shift deletion: move later members of the probe run into the hole so
        // that no lookup stops early.
        self.slots[i].1 = EMPTY;
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            if self.slots[j].1 == EMPTY {
                return;
            }
            let home = self.home(self.slots[j].0);
            // Does j's home lie cyclically in (i, j]? Then it may stay.
            let stays = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if !stays {
                self.slots[i] = self.slots[j];
                self.slots[j].1 = EMPTY;
                i = j;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::port_table::mapped;
    use std::collections::HashMap;

    /// The home slot is the keyed hash of the address bytes (written as one word).
    #[test]
    fn home_hashes_the_address_bytes() {
        let t = PerIp::new(64, [3; 16]);
        for ip in [[10, 0, 0, 1], [192, 168, 7, 255], [0, 0, 0, 0], [255; 4]] {
            let mut h = SipHasher13::new_with_key(&[3; 16]);
            h.write(&ip);
            assert_eq!(t.home(mapped(ip)), h.finish() as usize & t.mask);
        }
        // An IPv6 key: its sixteen bytes.
        let v6 = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        let mut h = SipHasher13::new_with_key(&[3; 16]);
        h.write(&v6);
        assert_eq!(t.home(v6), h.finish() as usize & t.mask);
    }

    #[test]
    fn a_link_local_client_is_counted_by_its_address() {
        let a = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let mut b = a;
        b[15] = 9;
        assert_eq!(limit_key(&a), a);
        assert_ne!(limit_key(&a), limit_key(&b));
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_64() {
        let a = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 1, 0xaa, 0xbb, 0, 0, 0, 0, 0, 1];
        let mut b = a;
        b[15] = 2;
        b[8] = 0x77; // another interface identifier in the same /64
        let mut c = a;
        c[7] = 2; // the next /64
        assert_eq!(limit_key(&a), limit_key(&b));
        assert_ne!(limit_key(&a), limit_key(&c));
        assert_eq!(limit_key(&a)[8..], [0; 8]);
        let v4 = mapped([10, 0, 0, 1]);
        assert_eq!(limit_key(&v4), v4, "IPv4 is counted per address");
        let mut t = PerIp::new(8, [1; 16]);
        t.add(limit_key(&a));
        t.add(limit_key(&b));
        assert_eq!(t.count(limit_key(&a)), 2);
        assert_eq!(t.count(limit_key(&c)), 0);
    }

    #[test]
    fn counts_add_and_remove() {
        let mut t = PerIp::new(4, [1; 16]);
        let a = mapped([10, 0, 0, 1]);
        assert_eq!(t.count(a), 0);
        t.set_tag(a, 1); // no connection: nothing to tag
        assert_eq!(t.tag(a), None);
        t.add(a);
        assert_eq!(t.tag(a), None);
        t.set_tag(a, 1);
        t.add(a);
        assert_eq!(t.count(a), 2);
        assert_eq!(t.tag(a), Some(1), "kept while the address has connections");
        t.remove(a);
        assert_eq!(t.count(a), 1);
        t.remove(a);
        t.remove(a); // none left: nothing happens
        assert_eq!(t.count(a), 0);
        t.add(a);
        assert_eq!(t.tag(a), None, "forgotten with the last connection");
    }

    #[test]
    fn matches_a_model_under_churn() {
        // Many addresses in a small table: long probe runs and wrap-around deletions.
        let mut t = PerIp::new(64, [7; 16]);
        let mut model: HashMap<[u8; 16], u32> = HashMap::new();
        let mut x: u32 = 12345;
        for _ in 0..20_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let ip = mapped([10, 0, 0, (x >> 16) as u8 % 97]);
            let live: u32 = model.values().sum();
            if (x >> 8).is_multiple_of(2) && live < 64 {
                // Added through a place looked up now, or one a removal made stale.
                if (x >> 9).is_multiple_of(2) {
                    let place = t.lookup(ip);
                    assert_eq!(place.count(), model.get(&ip).copied().unwrap_or(0));
                    t.add_at(place);
                } else {
                    let stale = t.lookup(ip);
                    if let Some(other) = model.keys().next().copied() {
                        t.remove(other);
                        t.add(other);
                        t.set_tag(other, other[15]);
                    }
                    t.add_at(stale);
                }
                t.set_tag(ip, ip[15]);
                *model.entry(ip).or_default() += 1;
            } else if let Some(n) = model.get_mut(&ip) {
                // Removed by address, or from the home a lookup gave (as the server does).
                if (x >> 10).is_multiple_of(2) {
                    t.remove(ip);
                } else {
                    let home = t.lookup(ip).home();
                    assert_eq!(home as usize, t.home(ip));
                    t.remove_from(ip, home);
                }
                *n -= 1;
                if *n == 0 {
                    model.remove(&ip);
                }
            }
            for (ip, n) in &model {
                assert_eq!(t.count(*ip), *n);
                assert_eq!(t.tag(*ip), Some(ip[15]), "a tag moves with its slot");
            }
        }
    }
}
