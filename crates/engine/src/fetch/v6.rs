//! The fetcher over IPv6 ([`FetchLink::v6`](crate::iface::FetchLink::v6)): its own
//! [`Link`] (the link-local address and the configured one, each behind duplicate address
//! detection; neighbour solicitations answered; router advertisements heard for the
//! default router; MLD reports for its groups), the next hop (the server on the link,
//! else `--gw6`'s router or an advertised one) resolved by neighbour solicitation as IPv4
//! asks ARP, and the server's segments as the link hands them over, checksum verified.
//! Nothing is sent from our address before its DAD passed: [`Fetcher::ready`] waits for
//! it and for the next hop's MAC.

use alloc::boxed::Box;

use super::{Fetcher, Handler};
use crate::iface::ipv6::{Link, Out, Step};
use crate::iface::neigh6::Resolve;
use crate::iface::{tcp_repr, FetchV6};
use crate::nic::TxRing;
use crate::tcp::port_table::Peer;
use crate::wire::{EthernetAddress, Ipv6Address, TcpPacket};

/// The most steps of the link's clock taken in one poll.
const STEPS_PER_POLL: usize = 16;

/// The link of a fetcher at `mac` holding `v6.ip` (its secret: the ISN key), and the
/// address its segments leave from: the link-local one to a link-local server.
pub(super) fn link(
    v6: &FetchV6,
    mac: EthernetAddress,
    secret: [u8; 16],
) -> (Box<Link>, Ipv6Address) {
    let mut link = Link::new(secret, mac, 0);
    link.slaac.configure(v6.ip, 0);
    let src = match v6.server.is_link_local() {
        true => link.addr.addr(),
        false => v6.ip,
    };
    (Box::new(link), src)
}

impl Fetcher {
    /// The link's clock (DAD, solicitations, reports) and, until the next hop's MAC is
    /// known, its resolution. Returns whether anything was sent.
    pub(super) fn poll6<T: TxRing>(&mut self, now: u64, tx: &mut T) -> bool {
        let mut worked = false;
        if now >= self.link6_next {
            for _ in 0..STEPS_PER_POLL {
                let Some(step) = self.link6.as_mut().and_then(|l| l.poll(now)) else {
                    break;
                };
                if let Step::Send(out) = step {
                    worked |= self.send6(&out, tx);
                }
            }
            self.link_ran();
        }
        if self.next_hop_mac.is_none() {
            worked |= self.resolve6(now, tx);
        }
        worked
    }

    /// After the link ran: its next deadline.
    fn link_ran(&mut self) {
        self.link6_next = self.link6.as_ref().map_or(u64::MAX, |l| l.deadline());
    }

    /// Asks the neighbour cache for the next hop once our address is in use: its MAC, or
    /// a solicitation sent (the cache's own timer repeats it).
    fn resolve6<T: TxRing>(&mut self, now: u64, tx: &mut T) -> bool {
        let (Some(link), Some(v6)) = (self.link6.as_mut(), self.cfg.link.v6) else {
            return false;
        };
        if link.slot_of(self.egress.ip6()).is_none() {
            return false; // DAD still under way (or the address given up)
        }
        let Some(hop) = v6.next_hop(link.slaac.default_router()) else {
            return false; // off the link, and no router given or heard yet
        };
        match link.neigh.lookup(hop, now) {
            Resolve::Known(mac) => {
                self.next_hop_mac = Some(mac);
                true
            }
            Resolve::Pending(Some(s)) => {
                self.link_ran();
                self.counters.arp_requests += 1;
                self.send6(
                    &Out::Solicit {
                        target: s.target,
                        unicast: s.unicast,
                        dad_nonce: None,
                    },
                    tx,
                )
            }
            Resolve::Pending(None) => false,
        }
    }

    /// Builds and posts one of the link's frames.
    fn send6<T: TxRing>(&mut self, out: &Out<'_>, tx: &mut T) -> bool {
        let sent = match (self.link6.as_deref(), tx.slot()) {
            (Some(link), Some(buf)) => match link.write(out, buf) {
                Some(len) => tx.post(len, &[]).is_ok(),
                None => return false, // no address to send from yet
            },
            _ => false,
        };
        match sent {
            true => self.counters.tx += 1,
            false => self.counters.tx_full += 1,
        }
        sent
    }

    /// A received IPv6 frame: a segment from the server to a connection, or the link's.
    pub(super) fn frame6<T: TxRing, H: Handler>(
        &mut self,
        bytes: &[u8],
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) {
        let Some(link) = self.link6.as_mut() else {
            self.counters.ignored += 1;
            return;
        };
        match link.receive(bytes, now) {
            Ok(Step::Tcp { src, segment, .. }) => self.segment6(src, segment, now, tx, h),
            Ok(step) => {
                if let Step::Send(out) = step {
                    self.send6(&out, tx);
                }
                self.link_ran();
                if self.next_hop_mac.is_none() {
                    self.resolve6(now, tx); // an advertisement may have answered
                }
            }
            Err(_) => self.counters.ignored += 1,
        }
    }

    /// A TCP segment over IPv6 (checksum verified by the link) from `src`.
    fn segment6<T: TxRing, H: Handler>(
        &mut self,
        src: Ipv6Address,
        segment: &[u8],
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) {
        let Ok(packet) = TcpPacket::new_checked(segment) else {
            self.counters.ignored += 1;
            return;
        };
        let (seg, _) = tcp_repr(&packet, segment);
        let from_server = self.cfg.link.v6.is_some_and(|v| v.server == src);
        if !from_server || seg.src_port != self.cfg.link.port {
            self.counters.ignored += 1;
            return;
        }
        let key = Peer {
            ip: src.0,
            port: seg.dst_port,
        };
        self.deliver(key, &seg, now, tx, h);
    }
}
