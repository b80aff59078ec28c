//! Test helpers: a DHCP server's replies, field by field, and in frames.

use std::vec::Vec;

use crate::wire::{EtherType, EthernetAddress, EthernetFrame, IpProtocol, Ipv4Address};
use crate::wire::{Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr};

use super::wire::{MAGIC, OPTIONS_AT};

pub const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 7]);
pub const SRV_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
pub const SRV: Ipv4Address = Ipv4Address([10, 0, 0, 1]);
pub const ADDR: Ipv4Address = Ipv4Address([10, 0, 0, 50]);
pub const OFFER: u8 = 2;
pub const ACK: u8 = 5;
pub const NAK: u8 = 6;

/// A server's reply, field by field (defaults: a good reply to `xid`).
#[derive(Clone)]
pub struct Srv {
    pub kind: u8,
    pub xid: u32,
    pub chaddr: EthernetAddress,
    pub yiaddr: Ipv4Address,
    pub sid: Option<Ipv4Address>,
    pub mask: Option<[u8; 4]>,
    pub router: Option<Ipv4Address>,
    pub lease: Option<u32>,
    pub t1: Option<u32>,
    pub t2: Option<u32>,
    /// Raw options appended after the others (before END).
    pub extra: Vec<u8>,
}

impl Srv {
    pub fn new(kind: u8, xid: u32) -> Srv {
        Srv {
            kind,
            xid,
            chaddr: MAC,
            yiaddr: ADDR,
            sid: Some(SRV),
            mask: Some([255, 255, 255, 0]),
            router: Some(SRV),
            lease: Some(3600),
            t1: None,
            t2: None,
            extra: Vec::new(),
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; OPTIONS_AT];
        b[..3].copy_from_slice(&[2, 1, 6]);
        b[4..8].copy_from_slice(&self.xid.to_be_bytes());
        b[16..20].copy_from_slice(&self.yiaddr.0);
        b[28..34].copy_from_slice(&self.chaddr.0);
        b[236..240].copy_from_slice(&MAGIC);
        b.extend_from_slice(&[53, 1, self.kind]);
        if let Some(s) = self.sid {
            b.extend_from_slice(&[54, 4]);
            b.extend_from_slice(&s.0);
        }
        if let Some(m) = self.mask {
            b.extend_from_slice(&[1, 4]);
            b.extend_from_slice(&m);
        }
        if let Some(r) = self.router {
            b.extend_from_slice(&[3, 4]);
            b.extend_from_slice(&r.0);
        }
        for (code, v) in [(51, self.lease), (58, self.t1), (59, self.t2)] {
            if let Some(v) = v {
                b.extend_from_slice(&[code, 4]);
                b.extend_from_slice(&v.to_be_bytes());
            }
        }
        b.extend_from_slice(&self.extra);
        b.push(255);
        b
    }
}

/// `payload` from SRV:67 at SRV_MAC to `dst`:68, broadcast at the Ethernet layer.
pub fn frame(payload: &[u8], dst: Ipv4Address) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + payload.len()];
    let mut e = EthernetFrame::new_unchecked(&mut f[..]);
    e.set_dst_addr(EthernetAddress::BROADCAST);
    e.set_src_addr(SRV_MAC);
    e.set_ethertype(EtherType::Ipv4);
    let mut p = Ipv4Packet::new_unchecked(e.payload_mut());
    Ipv4Repr {
        src_addr: SRV,
        dst_addr: dst,
        next_header: IpProtocol::Udp,
        payload_len: 8 + payload.len(),
        hop_limit: 64,
    }
    .emit(&mut p);
    let mut u = UdpPacket::new_unchecked(p.payload_mut());
    UdpRepr {
        src_port: 67,
        dst_port: 68,
    }
    .emit(&mut u, SRV, dst, payload.len(), |b| {
        b.copy_from_slice(payload)
    });
    f
}
