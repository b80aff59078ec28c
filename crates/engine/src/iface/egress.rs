//! Frames out: Ethernet and IPv4 headers, ARP and ICMP replies, TCP segments and bare RSTs,
//! UDP datagrams of the stateless protocol, each built in a transmit slot and posted. A TCP segment's payload is head bytes copied
//! into the slot and a body slice of the site image posted beside it (never copied); its
//! checksum is the header's sum combined with the body's stored block sums, or, for a
//! frame the device segments (offload), the folded pseudo-header sum the device completes.

use super::Interface;
use crate::nic::{Tso, TxRing, TX_HEAD_ROOM};
use crate::wire::ipv6::v4_of;
use crate::wire::tcp::{self as wtcp, ParsedRepr as TcpRepr};
use crate::wire::{
    arp, checksum, ethernet, ipv4, udp, ArpOperation, ArpPacket, ArpRepr, EtherType,
    EthernetAddress, EthernetFrame, IcmpPacket, IcmpRepr, IpProtocol, Ipv4Address, Ipv4Packet,
    Ipv4Repr, Ipv6Address,
};

/// Ethernet + IPv4 header bytes in front of a TCP header.
pub const L2L3: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN;
/// Ethernet + IPv6 header bytes in front of a TCP header (no extension header).
pub const L2L3_V6: usize = ethernet::HEADER_LEN + 40;
/// Largest TCP payload of one offloaded frame: the IPv4 total length must hold it with a
/// 20-byte IPv4 header and up to 60 bytes of TCP header.
pub const TSO_LIMIT: usize = 65535 - 20 - 60;
/// Most response-head bytes an offloaded frame may carry: what the transmit slot holds
/// after the largest Ethernet + IPv4 + TCP header.
pub const TSO_HEAD_MAX: usize = TX_HEAD_ROOM - L2L3 - 60;
/// Offset of the TCP checksum field in the TCP header.
const TCP_CHECKSUM_AT: usize = 16;

/// What became of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Posted as one frame.
    Frame,
    /// Posted as one frame the device segments.
    TsoFrame,
    /// No transmit slot was free: nothing was built (try again later).
    NoSlot,
    /// Built, but the ring refused it (counted as ring-full; not retried).
    Refused,
    /// Could not be built (an echo too large for a slot).
    TooBig,
    /// Its payload could not be made ([`Egress::tcp_filled`]'s `fill` said no): nothing
    /// was posted (the caller counts why).
    Unfilled,
}

impl Sent {
    /// Whether the frame left (or was given up): false only for [`Sent::NoSlot`].
    pub fn done(self) -> bool {
        self != Sent::NoSlot
    }
}

/// A TCP segment to build: its header, where it goes, its payload.
pub struct TcpOut<'p> {
    /// Header (the checksum is filled here).
    pub repr: wtcp::Repr,
    /// Destination MAC.
    pub dst_mac: EthernetAddress,
    /// Destination IP: IPv4-mapped for IPv4 (`tcp::port_table::mapped`), else IPv6 (sent
    /// from the builder's IPv6 address, [`Egress::with_ip6`]).
    pub dst: [u8; 16],
    /// Head bytes to copy after the header.
    pub head: &'p [u8],
    /// Body bytes to post after them.
    pub body: &'static [u8],
    /// Their one's-complement sum (from the stored block sums).
    pub body_sum: u16,
    /// Segmentation offload: the device cuts the payload into segments of this MSS.
    pub tso_mss: Option<u16>,
    /// With `tso_mss`, payload bytes the ring copies at post ([`TxRing::post_tso_copied`])
    /// instead of `head` and `body` (HTTPS's records, sealed into a reused buffer).
    pub copied: &'p [u8],
}

/// Frame building for one interface.
#[derive(Debug, Clone, Copy)]
pub struct Egress {
    mac: EthernetAddress,
    ip: Ipv4Address,
    /// The Ethernet + IPv4 header every frame of ours starts with, with the fields that
    /// vary per frame (destination MAC, total length, protocol, destination address,
    /// checksum) zero, and the one's-complement sum of its IPv4 words: a frame's headers
    /// are this copied whole, four fields written and the checksum finished from the sum
    /// (RFC 1071 §2(B)), not built field by field and summed again.
    l2l3: [u8; L2L3],
    l2l3_sum: u64,
    /// The IPv6 address TCP segments leave from when `v6` (`::`: none, and such a segment
    /// is refused).
    ip6: [u8; 16],
    /// A builder of IPv6 frames ([`Egress::with_ip6`]): its segments go to IPv6 peers.
    /// One byte to test per frame, where testing the destination for an IPv4-mapped
    /// address cost three instructions on every IPv4 segment.
    v6: bool,
}

impl Egress {
    /// Frames from `iface`'s addresses.
    pub fn new(iface: &Interface) -> Egress {
        Egress::from(iface.mac, iface.ip)
    }

    /// Frames from `mac` and `ip` (a virtual address's, `Interface::vips`).
    pub fn from(mac: EthernetAddress, ip: Ipv4Address) -> Egress {
        let mut e = Egress {
            mac,
            ip,
            l2l3: [0; L2L3],
            l2l3_sum: 0,
            ip6: [0; 16],
            v6: false,
        };
        e.set_mac(mac);
        e
    }

    /// The same builder, its TCP segments to IPv6 peers from `ip6` (one of the link's
    /// addresses).
    pub fn with_ip6(mut self, ip6: Ipv6Address) -> Egress {
        self.ip6 = ip6.0;
        self.v6 = true;
        self
    }

    /// The IPv6 address TCP segments leave from (`::`: none; [`Egress::with_ip6`]).
    pub fn ip6(&self) -> Ipv6Address {
        Ipv6Address(self.ip6)
    }

    /// The source MAC of the frames built.
    pub fn mac(&self) -> EthernetAddress {
        self.mac
    }

    /// Frames built from now on carry `mac` as their source (and as the ARP sender's): a
    /// bonded server sets the MAC of the NIC each frame leaves from (bonding).
    pub fn set_mac(&mut self, mac: EthernetAddress) {
        self.mac = mac;
        let zero = Ipv4Address([0; 4]);
        let mut t = [0u8; L2L3];
        let none = IpProtocol::Unknown(0);
        write_l2l3(&mut t, mac, EthernetAddress([0; 6]), self.ip, zero, none, 0);
        // Total length (IPv4 bytes 2-3), protocol (9) and checksum (10-11) left zero.
        t[ethernet::HEADER_LEN + 2..ethernet::HEADER_LEN + 4].fill(0);
        t[ethernet::HEADER_LEN + 10..ethernet::HEADER_LEN + 12].fill(0);
        self.l2l3_sum = checksum::accumulate(0, &t[ethernet::HEADER_LEN..]);
        self.l2l3 = t;
    }

    /// A gratuitous ARP (RFC 5227 §3 "ARP Announcement"): a broadcast request whose sender
    /// and target protocol addresses are both ours and whose sender hardware address is
    /// our MAC, so every neighbour that has our address in its table updates it. Linux
    /// sends this form when its bonding driver notifies peers.
    pub fn gratuitous_arp<T: TxRing>(&self, tx: &mut T) -> Sent {
        let announce = ArpRepr {
            operation: ArpOperation::Request,
            source_hardware_addr: self.mac,
            source_protocol_addr: self.ip,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: self.ip,
        };
        self.arp(tx, EthernetAddress([0xFF; 6]), &announce)
    }

    /// A broadcast ARP request for `target` (a client asking for its next hop).
    pub fn arp_request<T: TxRing>(&self, tx: &mut T, target: Ipv4Address) -> Sent {
        let request = ArpRepr {
            operation: ArpOperation::Request,
            source_hardware_addr: self.mac,
            source_protocol_addr: self.ip,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: target,
        };
        self.arp(tx, EthernetAddress::BROADCAST, &request)
    }

    /// The ARP reply to `request`, sent to `dst_mac`.
    pub fn arp_reply<T: TxRing>(
        &self,
        tx: &mut T,
        dst_mac: EthernetAddress,
        request: &ArpRepr,
    ) -> Sent {
        let reply = ArpRepr {
            operation: ArpOperation::Reply,
            source_hardware_addr: self.mac,
            source_protocol_addr: self.ip,
            target_hardware_addr: request.source_hardware_addr,
            target_protocol_addr: request.source_protocol_addr,
        };
        self.arp(tx, dst_mac, &reply)
    }

    /// An ARP packet from our MAC to `dst_mac`.
    fn arp<T: TxRing>(&self, tx: &mut T, dst_mac: EthernetAddress, repr: &ArpRepr) -> Sent {
        let Some(buf) = tx.slot() else {
            return Sent::NoSlot;
        };
        let len = ethernet::HEADER_LEN + arp::BUFFER_LEN;
        let mut frame = EthernetFrame::new_unchecked(&mut buf[..len]);
        ethernet::Repr {
            src_addr: self.mac,
            dst_addr: dst_mac,
            ethertype: EtherType::Arp,
        }
        .emit(&mut frame);
        repr.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
        post(tx, len, &[])
    }

    /// An ARP announcement of our address (RFC 5227 §2.3: a broadcast request whose sender
    /// and target address are both ours): neighbours (and QEMU's user networking) learn
    /// our MAC without asking, so the first packets to a server that just started are not
    /// held up by ARP.
    pub fn arp_announce<T: TxRing>(&self, tx: &mut T) -> Sent {
        let req = ArpRepr {
            operation: ArpOperation::Request,
            source_hardware_addr: self.mac,
            source_protocol_addr: self.ip,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: self.ip,
        };
        let Some(buf) = tx.slot() else {
            return Sent::NoSlot;
        };
        let len = ethernet::HEADER_LEN + arp::BUFFER_LEN;
        let mut frame = EthernetFrame::new_unchecked(&mut buf[..len]);
        ethernet::Repr {
            src_addr: self.mac,
            dst_addr: EthernetAddress::BROADCAST,
            ethertype: EtherType::Arp,
        }
        .emit(&mut frame);
        req.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
        post(tx, len, &[])
    }

    /// The echo reply to an echo request.
    pub fn echo_reply<T: TxRing>(
        &self,
        tx: &mut T,
        dst_mac: EthernetAddress,
        dst: Ipv4Address,
        (ident, seq_no, data): (u16, u16, &[u8]),
    ) -> Sent {
        let reply = IcmpRepr::EchoReply {
            ident,
            seq_no,
            data,
        };
        let icmp_len = reply.buffer_len();
        let len = L2L3 + icmp_len;
        if len > TX_HEAD_ROOM {
            return Sent::TooBig;
        }
        let Some(buf) = tx.slot() else {
            return Sent::NoSlot;
        };
        let buf = &mut buf[..len];
        self.write_l2l3(buf, &dst_mac, dst, IpProtocol::Icmp, icmp_len);
        reply.emit(&mut IcmpPacket::new_unchecked(&mut buf[L2L3..]));
        post(tx, len, &[])
    }

    /// A TCP segment with payload: header and head bytes in a slot, the body borrowed.
    ///
    /// Always inlined into its two callers (the server's and the client's `emit`), which
    /// build `seg` just before: inlined, it is not written to memory and read back.
    #[inline(always)]
    pub fn tcp<T: TxRing>(&self, tx: &mut T, seg: &TcpOut<'_>) -> Sent {
        self.tcp_filled(tx, seg, 0, |_| true)
    }

    /// A TCP segment whose first `fill_len` payload bytes `fill` writes straight into the
    /// slot (HTTPS: a record's range sealed in place), before `seg`'s head and body; not
    /// for an offloaded frame. When `fill` returns false nothing is posted
    /// ([`Sent::Unfilled`]).
    #[inline(always)]
    pub fn tcp_filled<T: TxRing>(
        &self,
        tx: &mut T,
        seg: &TcpOut<'_>,
        fill_len: usize,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) -> Sent {
        if self.v6 {
            return self.tcp_filled_v6(tx, seg, fill_len, fill);
        }
        // An IPv4 builder's peers are IPv4 (kept IPv4-mapped): the address is the last four
        // bytes.
        debug_assert!(v4_of(&seg.dst).is_some());
        let dst = [seg.dst[12], seg.dst[13], seg.dst[14], seg.dst[15]];
        self.tcp_at::<T, L2L3>(tx, seg, fill_len, fill, |h, len| {
            self.write_l2l3(h, &seg.dst_mac, Ipv4Address(dst), IpProtocol::Tcp, len);
            checksum::pseudo_header_v4(self.ip.0, dst, 6, len as u16)
        })
    }

    /// [`tcp_filled`](Self::tcp_filled) to an IPv6 peer, from our IPv6 address. Never
    /// inlined: a second inlined copy of the frame building (and of an HTTPS record's
    /// sealing, the `fill`) in every caller doubled their stack frames, and the bare
    /// machine's 64 KiB core stack overflowed.
    #[inline(never)]
    fn tcp_filled_v6<T: TxRing>(
        &self,
        tx: &mut T,
        seg: &TcpOut<'_>,
        fill_len: usize,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) -> Sent {
        if self.ip6 == [0; 16] || v4_of(&seg.dst).is_some() {
            return Sent::Refused;
        }
        self.tcp_at::<T, L2L3_V6>(tx, seg, fill_len, fill, |h, len| {
            write_l2l3_v6(h, (self.mac, seg.dst_mac), (&self.ip6, &seg.dst), 6, len);
            checksum::pseudo_header_v6(&self.ip6, &seg.dst, 6, len as u32)
        })
    }

    /// [`tcp_filled`](Self::tcp_filled) behind `H` bytes of Ethernet and IP header, which
    /// `l3` writes (given the TCP length) before returning the pseudo-header's sum.
    #[inline(always)]
    fn tcp_at<T: TxRing, const H: usize>(
        &self,
        tx: &mut T,
        seg: &TcpOut<'_>,
        fill_len: usize,
        fill: impl FnOnce(&mut [u8]) -> bool,
        l3: impl FnOnce(&mut [u8], usize) -> u64,
    ) -> Sent {
        let tcp_hdr = seg.repr.header_len();
        let payload_len = fill_len + seg.head.len() + seg.body.len() + seg.copied.len();
        if fill_len > 0 && seg.tso_mss.is_some() {
            return Sent::Unfilled;
        }
        let Some(buf) = tx.slot() else {
            return Sent::NoSlot;
        };
        let frame_head = H + tcp_hdr + fill_len + seg.head.len();
        let Some(buf) = buf.get_mut(..frame_head) else {
            // Cannot happen (the sender bounds the head bytes of a frame by the slot); a
            // bug here must cost a frame, not the server.
            return Sent::Refused;
        };
        let tcp_len = tcp_hdr + payload_len;
        let acc = l3(&mut buf[..H], tcp_len);
        seg.repr.emit_header(&mut buf[H..H + tcp_hdr]);
        let (filled, head) = buf[H + tcp_hdr..].split_at_mut(fill_len);
        if !fill(filled) {
            return Sent::Unfilled;
        }
        head.copy_from_slice(seg.head);
        // Checksum: pseudo-header + TCP header + head bytes, then the body from its stored
        // block sums (the body starts at payload offset head.len()).
        if let Some(mss) = seg.tso_mss {
            // The device completes every segment's checksum: leave it the folded
            // pseudo-header sum, not complemented (a partial checksum).
            let partial = checksum::fold(acc);
            buf[H + TCP_CHECKSUM_AT..H + TCP_CHECKSUM_AT + 2]
                .copy_from_slice(&partial.to_be_bytes());
            let tso = Tso {
                mss,
                l4_offset: H as u16,
                header_len: (H + tcp_hdr) as u16,
            };
            let posted = if seg.copied.is_empty() {
                tx.post_tso(frame_head, seg.body, tso)
            } else {
                tx.post_tso_copied(frame_head, seg.copied, tso)
            };
            return match posted {
                Ok(()) => Sent::TsoFrame,
                Err(_) => Sent::Refused,
            };
        }
        let mut sum = checksum::fold(checksum::accumulate(acc, &buf[H..]));
        if !seg.body.is_empty() {
            sum = checksum::combine(sum, seg.body_sum, tcp_hdr + fill_len + seg.head.len());
        }
        buf[H + TCP_CHECKSUM_AT..H + TCP_CHECKSUM_AT + 2].copy_from_slice(&(!sum).to_be_bytes());
        post(tx, frame_head, seg.body)
    }

    /// A TCP header alone (a RST).
    pub fn tcp_bare<T: TxRing>(
        &self,
        tx: &mut T,
        dst_mac: EthernetAddress,
        dst: [u8; 16],
        repr: &wtcp::Repr,
    ) -> Sent {
        let seg = TcpOut {
            repr: *repr,
            dst_mac,
            dst,
            head: &[],
            body: &[],
            body_sum: 0,
            tso_mss: None,
            copied: &[],
        };
        self.tcp_filled(tx, &seg, 0, |_| true)
    }

    /// A UDP datagram from `src_port`: the parts in `copied` (the protocol's data header, a
    /// token or an HTTP head) written into a slot after the UDP header, then `body` posted
    /// beside it (a slice of the site image, never copied) whose one's-complement sum is
    /// `body_sum`. The checksum costs the copied octets and one addition for the body.
    /// To an IPv4-mapped `dst` over IPv4; to any other over IPv6 from our IPv6 address
    /// (a builder of [`Egress::with_ip6`]; without one, refused).
    #[allow(clippy::too_many_arguments)]
    pub fn udp<T: TxRing>(
        &self,
        tx: &mut T,
        dst_mac: EthernetAddress,
        dst: &[u8; 16],
        ports: (u16, u16),
        copied: &[&[u8]],
        body: &'static [u8],
        body_sum: u16,
    ) -> Sent {
        match v4_of(dst) {
            // An IPv6 builder sends IPv6 alone (its IPv4 fields may be stale).
            Some(_) if self.v6 => Sent::Refused,
            Some(v4) => self.udp_at::<T, L2L3>(tx, ports, copied, body, body_sum, |h, len| {
                self.write_l2l3(h, &dst_mac, Ipv4Address(v4), IpProtocol::Udp, len);
                checksum::pseudo_header_v4(self.ip.0, v4, 17, len as u16)
            }),
            None if self.v6 && self.ip6 != [0; 16] => {
                self.udp_at::<T, L2L3_V6>(tx, ports, copied, body, body_sum, |h, len| {
                    write_l2l3_v6(h, (self.mac, dst_mac), (&self.ip6, dst), 17, len);
                    checksum::pseudo_header_v6(&self.ip6, dst, 17, len as u32)
                })
            }
            None => Sent::Refused,
        }
    }

    /// [`udp`](Self::udp) behind `H` bytes of Ethernet and IP header, which `l3` writes
    /// (given the UDP length) before returning the pseudo-header's sum.
    #[inline(always)]
    fn udp_at<T: TxRing, const H: usize>(
        &self,
        tx: &mut T,
        (src_port, dst_port): (u16, u16),
        copied: &[&[u8]],
        body: &'static [u8],
        body_sum: u16,
        l3: impl FnOnce(&mut [u8], usize) -> u64,
    ) -> Sent {
        let copied_len: usize = copied.iter().map(|c| c.len()).sum();
        let udp_len = udp::HEADER_LEN + copied_len + body.len();
        let frame_head = H + udp::HEADER_LEN + copied_len;
        if frame_head > TX_HEAD_ROOM || udp_len > usize::from(u16::MAX) - ipv4::HEADER_LEN {
            return Sent::TooBig;
        }
        let Some(buf) = tx.slot() else {
            return Sent::NoSlot;
        };
        let buf = &mut buf[..frame_head];
        let acc = l3(&mut buf[..H], udp_len);
        let (hdr, rest) = buf[H..].split_at_mut(udp::HEADER_LEN);
        hdr[0..2].copy_from_slice(&src_port.to_be_bytes());
        hdr[2..4].copy_from_slice(&dst_port.to_be_bytes());
        hdr[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
        hdr[6..8].fill(0);
        let mut at = 0;
        for c in copied {
            rest[at..at + c.len()].copy_from_slice(c);
            at += c.len();
        }
        let mut sum = checksum::fold(checksum::accumulate(acc, &buf[H..]));
        if !body.is_empty() {
            sum = checksum::combine(sum, body_sum, udp::HEADER_LEN + copied_len);
        }
        // RFC 768: a computed zero is sent as all ones (zero means "no checksum"; over
        // IPv6 a zero checksum is not allowed at all, RFC 8200 §8.1).
        let field = match !sum {
            0 => 0xffff,
            c => c,
        };
        buf[H + 6..H + 8].copy_from_slice(&field.to_be_bytes());
        post(tx, frame_head, body)
    }

    /// Writes Ethernet and IPv4 headers for an IPv4 payload of `payload_len` bytes.
    ///
    /// `dst_mac` by reference: its bytes are copied as they lie (by value, the six bytes
    /// of a `TcpOut` just built were read back as two 4-byte words, a store-forwarding
    /// stall on every TCP frame).
    fn write_l2l3(
        &self,
        buf: &mut [u8],
        dst_mac: &EthernetAddress,
        dst: Ipv4Address,
        proto: IpProtocol,
        payload_len: usize,
    ) {
        let Some(h) = buf.get_mut(..L2L3) else {
            return write_l2l3(buf, self.mac, *dst_mac, self.ip, dst, proto, payload_len);
        };
        const IP: usize = ethernet::HEADER_LEN;
        let total = (ipv4::HEADER_LEN + payload_len) as u16;
        let p = u8::from(proto);
        h.copy_from_slice(&self.l2l3);
        h[..6].copy_from_slice(&dst_mac.0);
        h[IP + 2..IP + 4].copy_from_slice(&total.to_be_bytes());
        h[IP + 9] = p;
        h[IP + 16..IP + 20].copy_from_slice(&dst.0);
        let d = u32::from_be_bytes(dst.0);
        let acc = self.l2l3_sum
            + u64::from(total)
            + u64::from(p)
            + u64::from(d >> 16)
            + u64::from(d & 0xffff);
        h[IP + 10..IP + 12].copy_from_slice(&(!checksum::fold(acc)).to_be_bytes());
    }
}

fn post<T: TxRing>(tx: &mut T, head_len: usize, body: &'static [u8]) -> Sent {
    match tx.post(head_len, body) {
        Ok(()) => Sent::Frame,
        Err(_) => Sent::Refused,
    }
}

/// The RST for a segment that belongs to no connection (RFC 9293 §3.10.7.1): `SEQ=SEG.ACK`,
/// or `SEQ=0 ACK=SEG.SEQ+SEG.LEN` when it carried no ACK.
pub fn reset_for(seg: &TcpRepr<'_>) -> wtcp::Repr {
    let (seq_number, ack_number) = match seg.ack_number {
        Some(ack) => (ack, None),
        None => (
            0,
            Some(seg.seq_number.wrapping_add(seg.segment_len() as u32)),
        ),
    };
    reset(seg.dst_port, seg.src_port, seq_number, ack_number)
}

/// A RST header.
pub fn reset(src_port: u16, dst_port: u16, seq_number: u32, ack_number: Option<u32>) -> wtcp::Repr {
    wtcp::Repr {
        src_port,
        dst_port,
        seq_number,
        ack_number,
        flags: wtcp::Flags {
            rst: true,
            ack: ack_number.is_some(),
            ..wtcp::Flags::NONE
        },
        window_len: 0,
        max_seg_size: None,
        window_scale: None,
        sack_permitted: false,
        timestamps: None,
    }
}

/// Writes Ethernet and IPv6 headers (`L2L3_V6` bytes: no extension header, hop limit 64,
/// no flow label) for an upper-layer payload of `payload_len` bytes of `next_header`.
fn write_l2l3_v6(
    h: &mut [u8],
    (src_mac, dst_mac): (EthernetAddress, EthernetAddress),
    (src, dst): (&[u8; 16], &[u8; 16]),
    next_header: u8,
    payload_len: usize,
) {
    const IP: usize = ethernet::HEADER_LEN;
    h[..6].copy_from_slice(&dst_mac.0);
    h[6..12].copy_from_slice(&src_mac.0);
    h[12..14].copy_from_slice(&[0x86, 0xdd]);
    h[IP..IP + 4].copy_from_slice(&[0x60, 0, 0, 0]);
    h[IP + 4..IP + 6].copy_from_slice(&(payload_len as u16).to_be_bytes());
    h[IP + 6] = next_header;
    h[IP + 7] = 64;
    h[IP + 8..IP + 24].copy_from_slice(src);
    h[IP + 24..IP + 40].copy_from_slice(dst);
}

/// Writes Ethernet and IPv4 headers for an IPv4 payload of `payload_len` bytes.
pub fn write_l2l3(
    buf: &mut [u8],
    src_mac: EthernetAddress,
    dst_mac: EthernetAddress,
    src: Ipv4Address,
    dst: Ipv4Address,
    proto: IpProtocol,
    payload_len: usize,
) {
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    ethernet::Repr {
        src_addr: src_mac,
        dst_addr: dst_mac,
        ethertype: EtherType::Ipv4,
    }
    .emit(&mut frame);
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: proto,
        payload_len,
        hop_limit: 64,
    };
    ip.emit(&mut Ipv4Packet::new_unchecked(
        &mut frame.payload_mut()[..ipv4::HEADER_LEN],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The template's headers are byte for byte those the field-by-field builder writes,
    /// for any destination, length and protocol, also after the source MAC changes.
    #[test]
    fn template_headers_match_the_builder() {
        let iface = Interface {
            mac: EthernetAddress([0x02, 0, 0, 0, 0, 2]),
            ip: Ipv4Address([10, 0, 0, 2]),
            prefix_len: 24,
            gateway: false,
            port: 80,
            udp_port: None,
            vips: crate::iface::Vips::NONE,
        };
        let mut e = Egress::new(&iface);
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for i in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 10_000 == 9_999 {
                e.set_mac(EthernetAddress([
                    0xfe,
                    0xff,
                    (x >> 8) as u8,
                    0xff,
                    x as u8,
                    1,
                ]));
            }
            let b = x.to_le_bytes();
            let dst_mac = EthernetAddress([b[0], b[1], b[2], b[3], b[4], b[5]]);
            let dst = Ipv4Address([b[6], b[7], b[0] ^ 0xff, b[1] ^ 0xff]);
            let proto = [IpProtocol::Tcp, IpProtocol::Udp, IpProtocol::Icmp][i % 3];
            let len = match i % 4 {
                0 => 0,
                1 => usize::from(u16::MAX) - ipv4::HEADER_LEN,
                _ => (x >> 48) as usize % 9000,
            };
            let (mut a, mut b) = ([0u8; L2L3 + 4], [0u8; L2L3 + 4]);
            e.write_l2l3(&mut a, &dst_mac, dst, proto, len);
            write_l2l3(&mut b, e.mac, dst_mac, iface.ip, dst, proto, len);
            assert_eq!(a, b, "dst {dst_mac:?} {dst:?} {proto:?} len {len}");
        }
    }
}
