//! The fetcher over IPv6 ([`FetchLink::v6`](crate::iface::FetchLink::v6)): its own
//! [`Link`] (the link-local address and the configured one, each behind duplicate address
//! detection; neighbour solicitations answered; router advertisements heard for the
//! default router; MLD reports for its groups), the next hop (the server on the link,
//! else `--gw6`'s router or an advertised one) resolved by neighbour solicitation as IPv4
//! asks ARP, and the server's segments as the link hands them over, checksum verified.
//! Nothing is sent from our address before its DAD passed: [`Fetcher::ready`] waits for
//! it and for the next hop's MAC. Once known, the next hop is looked up again every 200
//! ms (a new MAC, another router, the cache's reachability probes; segments from the
//! server confirm it reachable, RFC 4861 §7.3.1), and a Packet Too Big quoting a segment
//! in flight lowers that connection's MSS (RFC 8201). The link takes no DHCPv6 lease:
//! its address is the one configured.

use alloc::boxed::Box;

use super::{emit, Fetcher, Handler, Out as TcpOut, ARP_EVERY_NS};
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
    link.no_dhcp6();
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
        if self.next_hop_mac.is_none() || now >= self.next_arp_ns {
            self.next_arp_ns = now + ARP_EVERY_NS;
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
        if core::mem::take(&mut self.heard6) {
            link.neigh.confirm(hop, now); // the server's segments came through it
        }
        let r = link.neigh.lookup(hop, now);
        self.link_ran(); // a lookup may start a resolution or a probe
        match r {
            Resolve::Known(mac) => {
                let new = self.next_hop_mac != Some(mac);
                self.next_hop_mac = Some(mac);
                new
            }
            Resolve::Pending(Some(s)) => {
                // Not known (first, or lost after failed probes): asked; frames go on to
                // the MAC known before, if any, until an answer comes.
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
            Ok(Step::TooBig {
                mtu,
                peer,
                peer_port,
                our_port,
                seq,
            }) => self.too_big(mtu, peer, (peer_port, our_port), seq, now, tx),
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
        self.heard6 = true;
        let key = Peer {
            ip: src.0,
            port: seg.dst_port,
        };
        self.deliver(key, &seg, now, tx, h);
    }

    /// A Packet Too Big quoting our segment `seq` to `peer` from our port: the connection
    /// there, if the segment is in flight, sends in segments the narrow link takes
    /// (everything in flight again, as the server does).
    fn too_big<T: TxRing>(
        &mut self,
        mtu: u32,
        peer: Ipv6Address,
        (peer_port, our_port): (u16, u16),
        seq: u32,
        now: u64,
        tx: &mut T,
    ) {
        let ours = self.cfg.link.v6.is_some_and(|v| v.server == peer);
        let key = Peer {
            ip: peer.0,
            port: our_port,
        };
        let idx = match self.conns.find(key) {
            Some(idx) if ours && peer_port == self.cfg.link.port => idx,
            _ => {
                self.counters.ignored += 1;
                return;
            }
        };
        let mss_cap = mtu.min(1500).saturating_sub(60);
        match self.conns[idx as usize].tcp.path_mtu(seq, mss_cap) {
            Some(true) => {
                self.counters.too_big += 1;
                emit::send(&mut TcpOut { f: self, now, tx }, idx, now);
            }
            Some(false) => self.counters.too_big += 1,
            None => self.counters.ignored += 1,
        }
    }
}
