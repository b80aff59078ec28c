//! The fetcher over IPv6 ([`FetchLink::v6`](crate::iface::FetchLink::v6)): its place on
//! the link is a [`Client6`] (its addresses behind DAD, the next hop solicited and kept);
//! here the link's frames are posted and counted, the server's segments go to their
//! connections (checksum verified by the link), and a Packet Too Big quoting a segment in
//! flight lowers that connection's MSS (RFC 8201).

use super::{emit, Fetcher, Handler, Out as TcpOut};
use crate::iface::ipv6::{Out, Step};
use crate::iface::tcp_repr;
use crate::nic::TxRing;
use crate::tcp::port_table::Peer;
use crate::wire::{Ipv6Address, TcpPacket};

/// The most frames of the link's clock sent in one poll.
const STEPS_PER_POLL: usize = 16;

impl Fetcher {
    /// The link's clock (DAD, solicitations, reports) and the next hop's lookup. Returns
    /// whether anything was sent.
    pub(super) fn poll6<T: TxRing>(&mut self, now: u64, tx: &mut T) -> bool {
        let mut worked = false;
        for _ in 0..STEPS_PER_POLL {
            let Some(out) = self.c6.as_mut().and_then(|c| c.poll(now)) else {
                break;
            };
            worked |= self.send6(&out, tx);
        }
        if let Some(c) = &self.c6 {
            self.next_hop_mac = c.next_hop_mac();
            self.counters.arp_requests = c.solicitations;
            if self.egress.ip6() != c.src() {
                // The link-local address DAD replaced.
                self.egress = self.egress.with_ip6(c.src());
            }
        }
        worked
    }

    /// Posts one of the link's frames, counted.
    fn send6<T: TxRing>(&mut self, out: &Out<'_>, tx: &mut T) -> bool {
        match self.c6.as_ref().and_then(|c| c.post(out, tx)) {
            Some(true) => self.counters.tx += 1,
            Some(false) => self.counters.tx_full += 1,
            None => return false, // no address to send from yet
        }
        true
    }

    /// A received IPv6 frame: a segment from the server to a connection, or the link's.
    pub(super) fn frame6<T: TxRing, H: Handler>(
        &mut self,
        bytes: &[u8],
        now: u64,
        tx: &mut T,
        h: &mut H,
    ) {
        let Some(c) = self.c6.as_mut() else {
            self.counters.ignored += 1;
            return;
        };
        match c.receive(bytes, now) {
            Ok(Step::Tcp { src, segment, .. }) => self.segment6(src, segment, now, tx, h),
            Ok(Step::TooBig {
                mtu,
                peer,
                peer_port,
                our_port,
                seq,
            }) => self.too_big(mtu, peer, (peer_port, our_port), seq, now, tx),
            Ok(Step::Send(out)) => {
                self.send6(&out, tx);
            }
            Ok(_) => {}
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
        if let Some(c) = self.c6.as_mut() {
            c.heard();
        }
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
