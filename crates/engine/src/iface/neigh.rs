//! Next-hop resolution for direct server return: where a virtual address's (VIP's)
//! answers go. A balancer in direct-routing mode (Linux IPVS-DR) hands us the client's
//! frames with its own source MAC, so a VIP connection cannot answer to the MAC its frames
//! came from; it answers, as a host's stack does, to the next hop of the client's
//! address: the gateway for an off-link client, the client itself on the link, resolved
//! by ARP. This module owns that small ARP cache and its learning rule, nothing else;
//! connections on our own address never consult it.
//!
//! - A fixed table of [`SLOTS`] entries per server (per core), no allocation: the gateway
//!   (one entry serves every off-link client) and a few on-link next hops.
//! - **Learning rule** (hostile input must not poison it cheaply): an entry is learned
//!   only from an ARP *reply* sent unicast to our MAC, naming our own address and MAC as
//!   its target, from the address we asked for, within [`ANSWER_NS`] of our request; the
//!   request is then closed, so a second reply to it is not learned. Gratuitous ARP,
//!   requests and unsolicited replies teach nothing. A forger must race the real
//!   neighbour to a request it sees only on the link, at the moment we send it (every
//!   [`REACHABLE_NS`] at most); one off the link cannot at all.
//! - **Refresh and expiry**: an entry older than [`REACHABLE_NS`] is still used while a
//!   new request is sent (at most one per [`RETRY_NS`]); older than [`EXPIRE_NS`] it is
//!   forgotten. Requests are limited to [`MAX_ASKS`] per second per table, so a flood of
//!   SYNs from spoofed on-link addresses costs a bounded number of broadcasts.
//! - Unresolved: the caller falls back to the frame's source MAC (what every connection
//!   did before), see docs/design/direct-return.md.

use crate::wire::{ArpOperation, ArpRepr, EthernetAddress, Ipv4Address};

/// Entries per table.
pub const SLOTS: usize = 8;
/// How long a learned MAC is used without asking again.
pub const REACHABLE_NS: u64 = 30_000_000_000;
/// How long a learned MAC is used at all (refresh requests unanswered meanwhile).
pub const EXPIRE_NS: u64 = 120_000_000_000;
/// How long after our request a reply is taken, and how often a request is repeated.
pub const ANSWER_NS: u64 = 1_000_000_000;
/// The least time between two requests for one address.
pub const RETRY_NS: u64 = ANSWER_NS;
/// The most requests a table sends per second.
pub const MAX_ASKS: u32 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    ip: Ipv4Address,
    /// The learned MAC, if any.
    mac: Option<EthernetAddress>,
    /// When it was learned.
    learned_ns: u64,
    /// When our request for `ip` went out (`None`: none outstanding).
    asked_ns: Option<u64>,
}

const EMPTY: Entry = Entry {
    ip: Ipv4Address([0; 4]),
    mac: None,
    learned_ns: 0,
    asked_ns: None,
};

/// What [`Neighbours::resolve`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// The next hop's MAC, if known.
    pub mac: Option<EthernetAddress>,
    /// Whether an ARP request for the next hop is to be sent now.
    pub ask: bool,
}

/// The next hops' MACs (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighbours {
    slots: [Entry; SLOTS],
    /// Requests sent in the current one-second window, and its start.
    asks: u32,
    window_ns: u64,
}

impl Default for Neighbours {
    fn default() -> Self {
        Self::new()
    }
}

impl Neighbours {
    /// An empty table.
    pub const fn new() -> Self {
        Neighbours {
            slots: [EMPTY; SLOTS],
            asks: 0,
            window_ns: 0,
        }
    }

    /// The next hop of `client` for a host at `ip`/`prefix_len` with router `gateway`:
    /// the client on the link, the router beyond it.
    pub fn next_hop(
        ip: Ipv4Address,
        prefix_len: u8,
        gateway: Option<Ipv4Address>,
        client: Ipv4Address,
    ) -> Ipv4Address {
        match gateway {
            Some(g) if !client.in_subnet(ip, prefix_len) => g,
            _ => client,
        }
    }

    /// The MAC of next hop `hop` at `now_ns`, and whether to ask for it now. An unknown
    /// hop takes a slot: a free one, else the least recently learned or asked one that is
    /// not `keep` (the gateway, which serves every off-link client).
    pub fn resolve(
        &mut self,
        hop: Ipv4Address,
        keep: Option<Ipv4Address>,
        now_ns: u64,
    ) -> Resolved {
        let i = match self
            .slots
            .iter()
            .position(|e| e.ip == hop && e.ip.0 != [0; 4])
        {
            Some(i) => i,
            None => {
                let i = self.victim(keep);
                self.slots[i] = Entry { ip: hop, ..EMPTY };
                i
            }
        };
        let e = &mut self.slots[i];
        let age = now_ns.saturating_sub(e.learned_ns);
        if e.mac.is_some() && age >= EXPIRE_NS {
            e.mac = None;
        }
        let due = e.mac.is_none() || age >= REACHABLE_NS;
        let asked_recently = e
            .asked_ns
            .is_some_and(|t| now_ns.saturating_sub(t) < RETRY_NS);
        let mut ask = due && !asked_recently;
        if ask {
            if now_ns.saturating_sub(self.window_ns) >= 1_000_000_000 {
                (self.window_ns, self.asks) = (now_ns, 0);
            }
            ask = self.asks < MAX_ASKS;
            if ask {
                self.asks += 1;
                self.slots[i].asked_ns = Some(now_ns);
            }
        }
        Resolved {
            mac: self.slots[i].mac,
            ask,
        }
    }

    /// The slot a new hop takes.
    fn victim(&self, keep: Option<Ipv4Address>) -> usize {
        let used = |e: &Entry| e.learned_ns.max(e.asked_ns.unwrap_or(0));
        if let Some(i) = self.slots.iter().position(|e| e.ip.0 == [0; 4]) {
            return i;
        }
        (0..SLOTS)
            .filter(|&i| Some(self.slots[i].ip) != keep)
            .min_by_key(|&i| used(&self.slots[i]))
            .unwrap_or(0)
    }

    /// Learns from ARP packet `arp` that came in a frame to `frame_dst`, for our MAC and
    /// address `(mac, ip)`, at `now_ns`, by the rule of the module doc. Returns whether
    /// it taught something.
    pub fn learn(
        &mut self,
        arp: &ArpRepr,
        frame_dst: EthernetAddress,
        (mac, ip): (EthernetAddress, Ipv4Address),
        now_ns: u64,
    ) -> bool {
        let from = arp.source_hardware_addr;
        if arp.operation != ArpOperation::Reply
            || frame_dst != mac
            || arp.target_hardware_addr != mac
            || arp.target_protocol_addr != ip
            || from.is_multicast()
            || from.0 == [0; 6]
            || arp.source_protocol_addr.0 == [0; 4]
        {
            return false;
        }
        let Some(e) = self.slots.iter_mut().find(|e| {
            e.ip == arp.source_protocol_addr
                && e.asked_ns
                    .is_some_and(|t| now_ns.saturating_sub(t) < ANSWER_NS)
        }) else {
            return false;
        };
        e.mac = Some(from);
        e.learned_ns = now_ns;
        e.asked_ns = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: (EthernetAddress, Ipv4Address) = (
        EthernetAddress([2, 0, 0, 0, 0, 2]),
        Ipv4Address([10, 0, 0, 2]),
    );
    const GW: Ipv4Address = Ipv4Address([10, 0, 0, 1]);
    const GW_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const S: u64 = 1_000_000_000;

    fn reply(from: Ipv4Address, mac: EthernetAddress) -> ArpRepr {
        ArpRepr {
            operation: ArpOperation::Reply,
            source_hardware_addr: mac,
            source_protocol_addr: from,
            target_hardware_addr: US.0,
            target_protocol_addr: US.1,
        }
    }

    #[test]
    fn the_next_hop_is_the_router_beyond_the_link_and_the_client_on_it() {
        let c = Ipv4Address([192, 0, 2, 9]);
        let l = Ipv4Address([10, 0, 0, 9]);
        assert_eq!(Neighbours::next_hop(US.1, 24, Some(GW), c), GW);
        assert_eq!(Neighbours::next_hop(US.1, 24, Some(GW), l), l);
        assert_eq!(Neighbours::next_hop(US.1, 24, None, c), c);
    }

    #[test]
    fn a_reply_to_our_request_is_learned_once_and_refreshed_before_it_expires() {
        let mut n = Neighbours::new();
        // Unknown: ask (once per retry interval), no MAC.
        let r = n.resolve(GW, Some(GW), S);
        assert_eq!(
            r,
            Resolved {
                mac: None,
                ask: true
            }
        );
        assert!(!n.resolve(GW, Some(GW), S + 1).ask);
        // Unsolicited replies for another address, or not unicast to us, teach nothing.
        let other = Ipv4Address([10, 0, 0, 7]);
        assert!(!n.learn(&reply(other, GW_MAC), US.0, US, S + 2));
        assert!(!n.learn(&reply(GW, GW_MAC), EthernetAddress::BROADCAST, US, S + 2));
        let mut req = reply(GW, GW_MAC);
        req.operation = ArpOperation::Request;
        assert!(!n.learn(&req, US.0, US, S + 2));
        // The reply to our request is learned; a second one (a forger's) is not.
        assert!(n.learn(&reply(GW, GW_MAC), US.0, US, S + 3));
        let forged = EthernetAddress([2, 0, 0, 0, 0, 0x66]);
        assert!(!n.learn(&reply(GW, forged), US.0, US, S + 4));
        assert_eq!(n.resolve(GW, Some(GW), S + 5).mac, Some(GW_MAC));
        // Stale: still used, and asked again.
        let r = n.resolve(GW, Some(GW), S + REACHABLE_NS + 10);
        assert_eq!(
            r,
            Resolved {
                mac: Some(GW_MAC),
                ask: true
            }
        );
        // A reply that comes too late is not taken.
        assert!(!n.learn(
            &reply(GW, forged),
            US.0,
            US,
            S + REACHABLE_NS + 10 + ANSWER_NS
        ));
        // Expired: forgotten.
        let r = n.resolve(GW, Some(GW), S + 3 + EXPIRE_NS);
        assert_eq!(r.mac, None);
    }

    #[test]
    fn a_flood_of_on_link_hops_is_bounded_and_keeps_the_gateway() {
        let mut n = Neighbours::new();
        assert!(n.resolve(GW, Some(GW), S).ask);
        assert!(n.learn(&reply(GW, GW_MAC), US.0, US, S));
        let mut asks = 0;
        for i in 0..200u8 {
            let hop = Ipv4Address([10, 0, 0, 10 + (i % 200)]);
            asks += u32::from(n.resolve(hop, Some(GW), 3 * S).ask);
        }
        assert_eq!(asks, MAX_ASKS);
        assert_eq!(n.resolve(GW, Some(GW), 3 * S).mac, Some(GW_MAC));
    }
}
