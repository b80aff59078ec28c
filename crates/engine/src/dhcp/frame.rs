//! The client's messages in frames: Ethernet, IPv4 and UDP around a DHCP message, and
//! the DHCP reply found in a received frame.

use super::client::{Dest, Transmit};
use super::wire::{CLIENT_PORT, MESSAGE_LEN, SERVER_PORT};
use crate::wire::{
    ethernet, ipv4, udp, EtherType, EthernetAddress, EthernetFrame, IpProtocol, Ipv4Packet,
    Ipv4Repr, UdpPacket, UdpRepr,
};

/// Length of every frame the client sends.
pub const FRAME_LEN: usize =
    ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + MESSAGE_LEN;

/// Writes the frame for `t` from `mac`, carrying `msg` (a [`MESSAGE_LEN`]-octet message),
/// into `buf`; returns [`FRAME_LEN`].
///
/// # Panics
/// If `buf` is shorter than [`FRAME_LEN`] or `msg` is not [`MESSAGE_LEN`] octets.
pub fn build(buf: &mut [u8], mac: EthernetAddress, t: &Transmit, msg: &[u8]) -> usize {
    let (dst_ip, dst_mac) = match t.dest {
        Dest::Broadcast => (ipv4::Address::BROADCAST, EthernetAddress::BROADCAST),
        Dest::Server(ip, m) => (ip, m),
    };
    let mut eth = EthernetFrame::new_unchecked(&mut buf[..FRAME_LEN]);
    eth.set_dst_addr(dst_mac);
    eth.set_src_addr(mac);
    eth.set_ethertype(EtherType::Ipv4);
    let ip = Ipv4Repr {
        src_addr: t.src,
        dst_addr: dst_ip,
        next_header: IpProtocol::Udp,
        payload_len: udp::HEADER_LEN + MESSAGE_LEN,
        hop_limit: 64,
    };
    let mut p = Ipv4Packet::new_unchecked(eth.payload_mut());
    ip.emit(&mut p);
    let u = UdpRepr {
        src_port: CLIENT_PORT,
        dst_port: SERVER_PORT,
    };
    let mut d = UdpPacket::new_unchecked(p.payload_mut());
    u.emit(&mut d, t.src, dst_ip, MESSAGE_LEN, |b| {
        b.copy_from_slice(msg)
    });
    FRAME_LEN
}

/// If `f` is a DHCP reply (IPv4 unfragmented with a right header checksum, UDP from port
/// 67 to port 68 with a right checksum or none), its sender's MAC and the UDP payload.
pub fn reply(f: &[u8]) -> Option<(EthernetAddress, &[u8])> {
    let eth = EthernetFrame::new_checked(f).ok()?;
    if eth.ethertype() != EtherType::Ipv4 {
        return None;
    }
    let src_mac = eth.src_addr();
    let p = Ipv4Packet::new_checked(eth.payload()).ok()?;
    let ip = Ipv4Repr::parse(&p).ok()?;
    if ip.next_header != IpProtocol::Udp {
        return None;
    }
    let d = UdpPacket::new_checked(p.payload()).ok()?;
    if d.src_port() != SERVER_PORT || d.dst_port() != CLIENT_PORT {
        return None;
    }
    UdpRepr::parse(&d, ip.src_addr, ip.dst_addr).ok()?;
    // The payload's place in `f` (the views' borrows end here).
    let start = ethernet::HEADER_LEN + usize::from(p.header_len()) + udp::HEADER_LEN;
    let end = start + d.payload().len();
    Some((src_mac, f.get(start..end)?))
}
