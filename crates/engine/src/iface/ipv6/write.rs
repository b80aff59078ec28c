//! The frames the link sends, built into a transmit slot: neighbour solicitations and
//! advertisements, echo replies, router solicitations, MLDv2 reports and DHCPv6 messages.

use super::*;

impl Link {
    /// Builds `out` into `buf` (a transmit slot); returns the frame's length, or `None`
    /// when it does not fit or we have no address to send from.
    pub fn write(&self, out: &Out<'_>, buf: &mut [u8]) -> Option<usize> {
        let (dst_mac, src, dst, msg) = match *out {
            Out::Mld(r) => return self.write_mld(&r, buf),
            Out::Dhcp6 { len } => return self.write_dhcp6(len, buf),
            Out::Advert {
                target,
                dst_mac,
                dst,
                solicited,
            } => (
                dst_mac,
                self.is_preferred(target).then_some(target)?,
                dst,
                Icmpv6Repr::NeighborAdvert {
                    router: false,
                    solicited,
                    override_: true,
                    target,
                    target_lladdr: Some(self.mac),
                },
            ),
            Out::RouterSolicit => (
                ALL_ROUTERS.multicast_ethernet(),
                self.addr.preferred()?,
                ALL_ROUTERS,
                Icmpv6Repr::RouterSolicit {
                    source_lladdr: Some(self.mac),
                },
            ),
            Out::EchoReply {
                src,
                dst_mac,
                dst,
                ident,
                seq_no,
                data,
            } => (
                dst_mac,
                self.is_preferred(src).then_some(src)?,
                dst,
                Icmpv6Repr::EchoReply {
                    ident,
                    seq_no,
                    data,
                },
            ),
            Out::Solicit {
                target,
                unicast,
                dad_nonce,
            } => {
                let dst = match unicast {
                    Some(_) => target,
                    None => target.solicited_node(),
                };
                let (src, source_lladdr) = match dad_nonce {
                    Some(_) => (UNSPECIFIED, None),
                    None => (self.addr.preferred()?, Some(self.mac)),
                };
                (
                    unicast.unwrap_or(dst.multicast_ethernet()),
                    src,
                    dst,
                    Icmpv6Repr::NeighborSolicit {
                        target,
                        source_lladdr,
                        nonce: dad_nonce,
                    },
                )
            }
        };
        let icmp_len = msg.buffer_len();
        let len = L2L3 + icmp_len;
        let buf = buf.get_mut(..len)?;
        let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
        ethernet::Repr {
            src_addr: self.mac,
            dst_addr: dst_mac,
            ethertype: EtherType::Ipv6,
        }
        .emit(&mut frame);
        let ip = Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: Ipv6NextHeader::Icmpv6,
            payload_len: icmp_len,
            hop_limit: 255,
        };
        ip.emit(&mut Ipv6Packet::new_unchecked(
            &mut buf[ethernet::HEADER_LEN..L2L3],
        ));
        msg.emit(&mut Icmpv6Packet::new_unchecked(&mut buf[L2L3..]), src, dst);
        Some(len)
    }

    /// Builds the DHCPv6 client's message (its first `len` octets in `dhcp6_out`) in a
    /// frame: from our link-local address, port 546, to ff02::1:2, port 547, hop limit 1
    /// (the servers are on the link).
    fn write_dhcp6(&self, len: usize, buf: &mut [u8]) -> Option<usize> {
        let src = self.addr.preferred()?;
        let msg = self.dhcp6_out.get(..len)?;
        let udp_len = 8 + len;
        let total = L2L3 + udp_len;
        let buf = buf.get_mut(..total)?;
        let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
        ethernet::Repr {
            src_addr: self.mac,
            dst_addr: dhcpv6::ALL_SERVERS.multicast_ethernet(),
            ethertype: EtherType::Ipv6,
        }
        .emit(&mut frame);
        Ipv6Repr {
            src_addr: src,
            dst_addr: dhcpv6::ALL_SERVERS,
            next_header: Ipv6NextHeader::Udp,
            payload_len: udp_len,
            hop_limit: 1,
        }
        .emit(&mut Ipv6Packet::new_unchecked(
            &mut buf[ethernet::HEADER_LEN..L2L3],
        ));
        let udp = &mut buf[L2L3..];
        udp[..4].copy_from_slice(&DHCP6_PORTS_OUT);
        udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
        udp[6..8].copy_from_slice(&[0, 0]);
        udp[8..].copy_from_slice(msg);
        let pseudo = checksum::pseudo_header_v6(&src.0, &dhcpv6::ALL_SERVERS.0, 17, udp_len as u32);
        let sum = match !checksum::fold(checksum::accumulate(pseudo, udp)) {
            0 => 0xffff,
            s => s,
        };
        udp[6..8].copy_from_slice(&sum.to_be_bytes());
        Some(total)
    }

    /// Builds a listener report: from our link-local address once it is preferred, `::`
    /// before (RFC 3810 §5.2.13), hop limit 1, a hop-by-hop header with the Router Alert
    /// (§5); MLDv2's to ff02::16, MLDv1's to its group.
    fn write_mld(&self, r: &Report, buf: &mut [u8]) -> Option<usize> {
        use crate::wire::icmpv6::{emit_mld_report, emit_mld_v1_report};
        use crate::wire::icmpv6::{mld_report_len, MLDV1_REPORT_LEN};
        use crate::wire::ipv6::{emit_router_alert, ROUTER_ALERT_LEN};
        let (dst, icmp_len) = match r {
            Report::V2(rec) => (
                Ipv6Address::ALL_MLDV2_ROUTERS,
                mld_report_len(rec.as_slice().len()),
            ),
            Report::V1(group) => (*group, MLDV1_REPORT_LEN),
        };
        let src = self.addr.preferred().unwrap_or(UNSPECIFIED);
        let at = L2L3 + ROUTER_ALERT_LEN;
        let len = at + icmp_len;
        let buf = buf.get_mut(..len)?;
        ethernet::Repr {
            src_addr: self.mac,
            dst_addr: dst.multicast_ethernet(),
            ethertype: EtherType::Ipv6,
        }
        .emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
        Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: Ipv6NextHeader::HopByHop,
            payload_len: ROUTER_ALERT_LEN + icmp_len,
            hop_limit: 1,
        }
        .emit(&mut Ipv6Packet::new_unchecked(
            &mut buf[ethernet::HEADER_LEN..L2L3],
        ));
        emit_router_alert(&mut buf[L2L3..at], Ipv6NextHeader::Icmpv6);
        let mut icmp = Icmpv6Packet::new_unchecked(&mut buf[at..]);
        match r {
            Report::V2(rec) => emit_mld_report(&mut icmp, src, dst, rec.as_slice()),
            Report::V1(group) => emit_mld_v1_report(&mut icmp, src, *group),
        }
        Some(len)
    }
}
