//! A client's place on an IPv6 link ([`FetchLink::v6`](super::FetchLink::v6)), shared by
//! the engine's two bare clients (TCP's `fetch`, the UDP protocol's `udp::bare`): its own
//! [`Link`] (the link-local address and the configured one, each behind duplicate address
//! detection; neighbour solicitations answered; router advertisements heard for the
//! default router; MLD reports for its groups; no DHCPv6 lease, whatever routers' flags
//! say: its address is the one configured), and the next hop (the server on the link,
//! else `--gw6`'s router or an advertised one) resolved by neighbour solicitation as IPv4
//! asks ARP.
//!
//! Nothing is sent from our address before its DAD passed: [`Client6::next_hop_mac`] is
//! `None` until then and until the next hop answered. Once known, the next hop is looked
//! up again every 200 ms (a new MAC, another router, the cache's reachability probes);
//! traffic from the server confirms it reachable ([`Client6::heard`], RFC 4861 §7.3.1).
//!
//! The owner posts what [`Client6::poll`] and [`Client6::receive`] give it to send
//! ([`Client6::post`], counting as it counts its own frames) and takes the upper-layer
//! steps (a TCP segment, a UDP datagram, a Packet Too Big) for itself.

use alloc::boxed::Box;

use super::ipv6::{Drop6, Link, Out, Step};
use super::neigh6::Resolve;
use super::FetchV6;
use crate::nic::TxRing;
use crate::wire::{EthernetAddress, Ipv6Address};

/// How often a known next hop is looked up again.
const RESOLVE_EVERY_NS: u64 = 200_000_000;

/// A client's IPv6 link and next hop.
#[derive(Debug, Clone)]
pub struct Client6 {
    v6: FetchV6,
    link: Box<Link>,
    next_hop_mac: Option<EthernetAddress>,
    /// When the next hop is looked up again.
    resolve_at: u64,
    /// The time of the last lookup (at most one a poll round).
    resolved_at: u64,
    /// When the link next has timer work.
    link_next: u64,
    /// Traffic from the server came since the last lookup.
    heard: bool,
    /// Solicitations sent for the next hop.
    pub solicitations: u64,
}

impl Client6 {
    /// The client at `mac` holding `v6.ip`, its link-local address keyed by `secret`
    /// (RFC 7217).
    pub fn new(v6: FetchV6, mac: EthernetAddress, secret: [u8; 16]) -> Client6 {
        let mut link = Link::new(secret, mac, 0);
        link.slaac.configure(v6.ip, 0);
        // A server beyond the prefix answers through `--gw6`'s router or an advertised one.
        link.route(v6.gateway, Some((v6.ip, v6.prefix_len)));
        link.no_dhcp6();
        Client6 {
            v6,
            link: Box::new(link),
            next_hop_mac: None,
            resolve_at: 0,
            resolved_at: u64::MAX,
            link_next: 0,
            heard: false,
            solicitations: 0,
        }
    }

    /// Where it is and whom it talks to.
    pub fn place(&self) -> &FetchV6 {
        &self.v6
    }

    /// The link (addresses, routers, neighbours).
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// The address our frames leave from: the link-local one to a link-local server
    /// (as it is now: DAD may have replaced it), else the configured one. The owner's
    /// frame builder follows it.
    pub fn src(&self) -> Ipv6Address {
        match self.v6.server.is_link_local() {
            true => self.link.addr.addr(),
            false => self.v6.ip,
        }
    }

    /// The next hop's MAC: `None` until our address passed DAD and the next hop answered.
    pub fn next_hop_mac(&self) -> Option<EthernetAddress> {
        self.next_hop_mac
    }

    /// When [`poll`](Self::poll) next has work (the link's timers, the next lookup).
    pub fn deadline(&self) -> u64 {
        self.link_next.min(self.resolve_at)
    }

    /// Traffic from the server came (through the next hop: it is reachable).
    pub fn heard(&mut self) {
        self.heard = true;
    }

    /// The clock's work at `now`: the next frame to send, if any (call until `None`; at
    /// most one lookup of the next hop per `now`).
    pub fn poll(&mut self, now: u64) -> Option<Out<'static>> {
        if now >= self.link_next {
            while let Some(step) = self.link.poll(now) {
                if let Step::Send(out) = step {
                    return Some(out);
                }
            }
            self.link_next = self.link.deadline();
        }
        let due = self.next_hop_mac.is_none() || now >= self.resolve_at;
        if due && self.resolved_at != now {
            self.resolved_at = now;
            self.resolve_at = now + RESOLVE_EVERY_NS;
            return self.resolve(now);
        }
        None
    }

    /// Asks the neighbour cache for the next hop once our address is in use: its MAC
    /// taken, or a solicitation to send (the cache's own timer repeats it). Frames go on
    /// to a MAC known before until an answer comes.
    fn resolve(&mut self, now: u64) -> Option<Out<'static>> {
        // DAD still under way (or the address given up), ours or the link-local one a
        // solicitation is sent from.
        self.link.slot_of(self.src())?;
        self.link.addr.preferred()?;
        // Off the link with no router given or heard yet: nothing to ask.
        let hop = self.v6.next_hop(self.link.slaac.default_router())?;
        if core::mem::take(&mut self.heard) {
            self.link.neigh.confirm(hop, now);
        }
        let r = self.link.neigh.lookup(hop, now);
        self.link_next = self.link.deadline(); // a lookup may start a resolution or a probe
        match r {
            Resolve::Known(mac) => {
                self.next_hop_mac = Some(mac);
                None
            }
            Resolve::Pending(Some(s)) => {
                self.solicitations += 1;
                Some(Out::Solicit {
                    target: s.target,
                    unicast: s.unicast,
                    dad_nonce: None,
                })
            }
            Resolve::Pending(None) => None,
        }
    }

    /// A received frame at `now`: the link's own work is done here (what it answers is
    /// returned as [`Step::Send`]); a TCP segment, a UDP datagram or a Packet Too Big to
    /// our address comes back for the owner to check against the server.
    pub fn receive<'a>(&mut self, frame: &'a [u8], now: u64) -> Result<Step<'a>, Drop6> {
        let step = self.link.receive(frame, now)?;
        if !matches!(step, Step::Tcp { .. } | Step::Udp { .. }) {
            // The link learned (an advertisement, a router): its timers and, while the
            // next hop is unknown, the lookup at once.
            self.link_next = 0;
            if self.next_hop_mac.is_none() {
                self.resolved_at = u64::MAX;
            }
        }
        Ok(step)
    }

    /// Builds and posts one of the link's frames: whether it was posted (`Some(false)`:
    /// the ring was full), or `None` when there is no address to send it from (nothing
    /// sent, nothing lost).
    pub fn post<T: TxRing>(&self, out: &Out<'_>, tx: &mut T) -> Option<bool> {
        let Some(buf) = tx.slot() else {
            return Some(false);
        };
        let len = self.link.write(out, buf)?;
        Some(tx.post(len, &[]).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeNic;
    use crate::nic::Nic;

    /// Whatever order the two addresses' DAD ends in (their delays are random: here 32
    /// MACs), the next hop is solicited only once both are in use, and every frame the
    /// client asks to send can be built and posted; with no answer, the cache's own
    /// retries follow, every one posted too.
    #[test]
    fn the_next_hop_is_solicited_once_both_addresses_are_in_use() {
        for m in 0..32u8 {
            let mac = EthernetAddress([0x02, 0, 0, 0, 1, m]);
            let v6 = FetchV6 {
                ip: "2001:db8::3".parse().unwrap(),
                prefix_len: 64,
                gateway: None,
                server: "2001:db8::2".parse().unwrap(),
            };
            let mut c = Client6::new(v6, mac, [m; 16]);
            let mut nic = FakeNic::new(mac);
            let (mut now, mut asked) = (0u64, 0);
            while now < 6_000_000_000 {
                while let Some(out) = c.poll(now) {
                    if matches!(
                        out,
                        Out::Solicit {
                            dad_nonce: None,
                            ..
                        }
                    ) {
                        assert!(c.link().addr.preferred().is_some(), "MAC {m}");
                        asked += 1;
                    }
                    let (_, tx) = nic.split();
                    assert_eq!(c.post(&out, tx), Some(true), "MAC {m}: {out:?}");
                }
                now += 1_000_000;
            }
            assert!(asked >= 1 && c.solicitations >= 1, "MAC {m}");
            assert_eq!(c.next_hop_mac(), None, "nobody answered");
        }
    }
}
