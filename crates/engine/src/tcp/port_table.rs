//! The port table: 65,536 slots indexed by the client's TCP port, each holding the number
//! of the first TCB for that port (the multi-core paper, §III: index, don't search). Connections from
//! different hosts that share a client port are chained through an index-linked overflow
//! field inside the TCBs (`u32` numbers, no pointers); the chain is then walked comparing
//! (IP, port). A walk never visits more links than there are TCBs, so a corrupted chain
//! cannot loop.

/// "No TCB" in the table and in chain links.
pub const NONE: u32 = u32::MAX;

/// The key a TCB is found by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Peer {
    /// Client IP address: IPv6, or IPv4 as an IPv4-mapped address (`::ffff:a.b.c.d`, RFC
    /// 4291 §2.5.5.2), so one table, one key and one compare serve both.
    pub ip: [u8; 16],
    /// Client TCP port.
    pub port: u16,
}

pub use crate::wire::ipv6::{mapped, v4_of};

impl Peer {
    /// An IPv4 peer.
    #[inline(always)]
    pub const fn v4(ip: [u8; 4], port: u16) -> Peer {
        Peer {
            ip: mapped(ip),
            port,
        }
    }

    /// The peer's IPv4 address, if it is an IPv4 peer.
    #[inline(always)]
    pub fn ipv4(&self) -> Option<[u8; 4]> {
        v4_of(&self.ip)
    }

    /// The peer's address as the standard library's type (IPv4 as IPv4).
    pub fn ip_addr(&self) -> core::net::IpAddr {
        match self.ipv4() {
            Some(v4) => core::net::IpAddr::from(v4),
            None => core::net::IpAddr::from(self.ip),
        }
    }
}

/// Access to the chain links and keys stored in the TCB array.
pub trait Links {
    /// Number of TCBs.
    fn count(&self) -> usize;
    /// Key of TCB `i`.
    fn peer(&self, i: u32) -> Peer;
    /// Next TCB in `i`'s chain.
    fn next(&self, i: u32) -> u32;
    /// Sets the next link of `i`.
    fn set_next(&mut self, i: u32, next: u32);
}

/// Client ports: entries in the table.
const PORTS: usize = 65536;

/// The table's storage: on the heap when there is one, allocated there directly (a
/// `Box::new([NONE; PORTS])` would build the 256 KiB on the stack first, and a core's stack
/// is small on the bare machine).
#[cfg(any(test, feature = "alloc"))]
type Heads = alloc::boxed::Box<[u32; PORTS]>;
#[cfg(not(any(test, feature = "alloc")))]
type Heads = [u32; PORTS];

/// The 64K-entry port table.
pub struct PortTable {
    heads: Heads,
}

impl PortTable {
    /// An empty table (256 KiB, on the heap when the `alloc` feature is on; make it once
    /// at start).
    #[cfg(any(test, feature = "alloc"))]
    pub fn new() -> PortTable {
        let heads = alloc::vec![NONE; PORTS].into_boxed_slice();
        match heads.try_into() {
            Ok(heads) => PortTable { heads },
            Err(_) => unreachable!("a slice of PORTS entries converts to [u32; PORTS]"),
        }
    }

    /// An empty table (256 KiB, built in place by the caller).
    #[cfg(not(any(test, feature = "alloc")))]
    pub const fn new() -> PortTable {
        PortTable {
            heads: [NONE; PORTS],
        }
    }

    /// The TCB for `peer`, if any.
    pub fn find<L: Links + ?Sized>(&self, links: &L, peer: Peer) -> Option<u32> {
        let mut i = self.heads[usize::from(peer.port)];
        let mut steps = 0;
        while i != NONE && steps <= links.count() {
            if links.peer(i) == peer {
                return Some(i);
            }
            i = links.next(i);
            steps += 1;
        }
        None
    }

    /// Links TCB `id` (whose key is already set) at the head of its port's chain.
    pub fn insert<L: Links + ?Sized>(&mut self, links: &mut L, id: u32) {
        let slot = &mut self.heads[usize::from(links.peer(id).port)];
        links.set_next(id, *slot);
        *slot = id;
    }

    /// Unlinks TCB `id`; returns whether it was found.
    pub fn remove<L: Links + ?Sized>(&mut self, links: &mut L, id: u32) -> bool {
        let port = usize::from(links.peer(id).port);
        let mut prev = NONE;
        let mut i = self.heads[port];
        let mut steps = 0;
        while i != NONE && steps <= links.count() {
            if i == id {
                let next = links.next(i);
                if prev == NONE {
                    self.heads[port] = next;
                } else {
                    links.set_next(prev, next);
                }
                links.set_next(id, NONE);
                return true;
            }
            prev = i;
            i = links.next(i);
            steps += 1;
        }
        false
    }
}

impl Default for PortTable {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Arr(Vec<(Peer, u32)>);
    impl Links for Arr {
        fn count(&self) -> usize {
            self.0.len()
        }
        fn peer(&self, i: u32) -> Peer {
            self.0[i as usize].0
        }
        fn next(&self, i: u32) -> u32 {
            self.0[i as usize].1
        }
        fn set_next(&mut self, i: u32, n: u32) {
            self.0[i as usize].1 = n;
        }
    }

    #[test]
    fn mapped_addresses_round_trip_and_only_they_are_ipv4() {
        for v4 in [[0, 0, 0, 0], [10, 0, 0, 1], [255; 4], [192, 168, 1, 200]] {
            assert_eq!(v4_of(&mapped(v4)), Some(v4));
            let std = core::net::Ipv4Addr::from(v4).to_ipv6_mapped().octets();
            assert_eq!(mapped(v4), std);
        }
        let mut not = mapped([10, 0, 0, 1]);
        for i in 0..12 {
            not[i] ^= 1;
            assert_eq!(v4_of(&not), None, "byte {i}");
            not[i] ^= 1;
        }
        assert_eq!(v4_of(&[0; 16]), None);
        let compat = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1];
        assert_eq!(
            v4_of(&compat),
            None,
            "IPv4-compatible (deprecated) is not mapped"
        );
    }

    fn p(last: u8, port: u16) -> Peer {
        Peer::v4([10, 0, 0, last], port)
    }

    #[test]
    fn chains_collisions_and_unlinks_any_position() {
        let mut links = Arr(vec![
            (p(1, 80), NONE),
            (p(2, 80), NONE),
            (p(3, 80), NONE),
            (p(1, 81), NONE),
        ]);
        let mut t = PortTable::new();
        for i in 0..4 {
            t.insert(&mut links, i);
        }
        for i in 0..4u32 {
            assert_eq!(t.find(&links, links.peer(i)), Some(i));
        }
        assert_eq!(t.find(&links, p(4, 80)), None);
        assert!(t.remove(&mut links, 1)); // middle of the chain 2 -> 1 -> 0
        assert_eq!(t.find(&links, p(2, 80)), None);
        assert_eq!(t.find(&links, p(1, 80)), Some(0));
        assert_eq!(t.find(&links, p(3, 80)), Some(2));
        assert!(t.remove(&mut links, 2)); // head
        assert!(t.remove(&mut links, 0)); // last
        assert!(!t.remove(&mut links, 0));
        assert_eq!(t.find(&links, p(1, 80)), None);
        assert_eq!(t.find(&links, p(1, 81)), Some(3));
    }

    #[test]
    fn corrupted_cycle_terminates() {
        // 0 -> 1 -> 0: a cycle that the table would never build, walked anyway.
        let mut links = Arr(vec![(p(1, 80), 1), (p(2, 80), 0), (p(3, 80), NONE)]);
        let mut t = PortTable::new();
        t.heads[80] = 0;
        assert_eq!(t.find(&links, p(9, 80)), None);
        assert!(!t.remove(&mut links, 2));
    }
}
