//! Received frames, classified: Ethernet → ARP | IPv4 → ICMP | TCP | UDP. Every check a frame
//! must pass before it reaches a protocol's logic is here, once: addresses, fragments,
//! source sanity, the route back, the TCP checksum. Nothing a peer sends makes it panic.

use super::Interface;
use crate::wire::tcp::{self as wtcp, Options, ParsedRepr as TcpRepr};
use crate::wire::{
    ArpOperation, ArpPacket, ArpRepr, Error, EtherType, EthernetAddress, EthernetFrame, IcmpPacket,
    IcmpRepr, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, TcpPacket, UdpPacket, UdpRepr,
};

/// Why a frame was dropped (each is a counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// Shorter than its headers say.
    Truncated,
    /// A field no sender may produce.
    Malformed,
    /// A bad IPv4 or TCP checksum.
    Checksum,
    /// Another host's, or a protocol or message we do not serve.
    NotForUs,
    /// An IPv4 fragment (we reassemble nothing).
    Fragment,
    /// From off the link with no gateway to answer through.
    NoRoute,
}

impl From<Error> for Drop {
    fn from(e: Error) -> Drop {
        match e {
            Error::Truncated => Drop::Truncated,
            Error::Malformed => Drop::Malformed,
            Error::Checksum => Drop::Checksum,
            Error::Unsupported => Drop::NotForUs,
        }
    }
}

/// What a received frame is for us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingress<'a> {
    /// An ARP request for our address.
    ArpRequest {
        /// The request.
        request: ArpRepr,
        /// The frame's source MAC.
        src_mac: EthernetAddress,
    },
    /// An ARP reply to our address (learned by [`Neighbours`](super::Neighbours) when it
    /// answers a request of ours).
    ArpReply {
        /// The reply.
        reply: ArpRepr,
        /// The frame's destination MAC (ours, or broadcast).
        dst_mac: EthernetAddress,
    },
    /// An ICMP echo request.
    Echo {
        /// The frame's source MAC.
        src_mac: EthernetAddress,
        /// The sender's IP.
        src: Ipv4Address,
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Data to echo.
        data: &'a [u8],
    },
    /// A TCP segment for our port, checksum verified.
    Tcp {
        /// The frame's source MAC (the client, or the gateway).
        src_mac: EthernetAddress,
        /// The client's IP.
        src: Ipv4Address,
        /// Which of our addresses it was sent to (`Interface::local`: 0 our own).
        local: u8,
        /// The segment.
        seg: TcpRepr<'a>,
        /// Whether its options parsed (a SYN with malformed ones opens nothing; on other
        /// segments they are ignored, as Linux does).
        options_ok: bool,
    },
    /// A TCP segment for a port we do not serve (answered with a RST unless it is one).
    ClosedPort {
        /// The frame's source MAC.
        src_mac: EthernetAddress,
        /// The sender's IP.
        src: Ipv4Address,
        /// Which of our addresses it was sent to.
        local: u8,
        /// The segment.
        seg: TcpRepr<'a>,
        /// Whether its options parsed (for an owner that serves this port after all: the
        /// server's HTTPS port).
        options_ok: bool,
    },
    /// A UDP datagram for the stateless protocol's port, checksum verified.
    Udp {
        /// The frame's source MAC (the client, or the gateway).
        src_mac: EthernetAddress,
        /// The client's IP.
        src: Ipv4Address,
        /// The client's port.
        src_port: u16,
        /// The datagram's payload.
        payload: &'a [u8],
    },
    /// Dropped, for this reason.
    Drop(Drop),
}

/// Classifies one received frame for interface `iface`.
///
/// Inlined with its helpers into the caller: an [`Ingress`] is ~120 bytes (a TCP
/// segment's parsed options among them), and returned through three calls it was copied
/// at each, ~8% of the server's time per connection in the engine microbenchmark.
#[inline]
pub fn ingress<'a>(iface: &Interface, bytes: &'a [u8]) -> Ingress<'a> {
    // `classify` directly, not through `ingress_offloaded`: no call level more for an
    // `Ingress` to be copied through, should one not be inlined.
    match classify(iface, bytes, false) {
        Ok(i) => i,
        Err(d) => Ingress::Drop(d),
    }
}

/// [`ingress`] of a frame whose TCP checksum the device vouched for when `csum_trusted`
/// ([`RxRing::csum_trusted`](crate::nic::RxRing::csum_trusted): a TAP with receive
/// offloads): a TCP segment's checksum is then not verified (it may be partial); every
/// other check, the IPv4 header checksum among them, is made as for any frame.
#[inline]
pub fn ingress_offloaded<'a>(
    iface: &Interface,
    bytes: &'a [u8],
    csum_trusted: bool,
) -> Ingress<'a> {
    match classify(iface, bytes, csum_trusted) {
        Ok(i) => i,
        Err(d) => Ingress::Drop(d),
    }
}

/// [`ingress`] as a `Result`, a dropped frame as `Err`: a caller that matches on it
/// directly does not copy the ~120-byte [`Ingress`] out of the `Result` (the server's
/// receive path; ~20 instructions a frame in the engine microbenchmark).
#[inline]
pub fn classified<'a>(iface: &Interface, bytes: &'a [u8]) -> Result<Ingress<'a>, Drop> {
    classify(iface, bytes, false)
}

#[inline]
fn classify<'a>(
    iface: &Interface,
    bytes: &'a [u8],
    csum_trusted: bool,
) -> Result<Ingress<'a>, Drop> {
    let frame = EthernetFrame::new_checked(bytes)?;
    let dst = frame.dst_addr();
    if dst != iface.mac && !dst.is_broadcast() {
        return Err(Drop::NotForUs);
    }
    let src_mac = frame.src_addr();
    let payload = &bytes[crate::wire::ethernet::HEADER_LEN..];
    match frame.ethertype() {
        EtherType::Arp => {
            let request = ArpRepr::parse(&ArpPacket::new_checked(payload)?)?;
            if request.target_protocol_addr != iface.ip {
                return Err(Drop::NotForUs);
            }
            match request.operation {
                ArpOperation::Request => Ok(Ingress::ArpRequest { request, src_mac }),
                ArpOperation::Reply => Ok(Ingress::ArpReply {
                    reply: request,
                    dst_mac: dst,
                }),
                _ => Err(Drop::NotForUs),
            }
        }
        EtherType::Ipv4 => ipv4(iface, src_mac, payload, csum_trusted),
        _ => Err(Drop::NotForUs),
    }
}

#[inline]
fn ipv4<'a>(
    iface: &Interface,
    src_mac: EthernetAddress,
    payload: &'a [u8],
    csum_trusted: bool,
) -> Result<Ingress<'a>, Drop> {
    let packet = Ipv4Packet::new_checked(payload)?;
    if packet.is_fragment() {
        return Err(Drop::Fragment);
    }
    let repr = Ipv4Repr::parse(&packet)?;
    // Our address, or a virtual one (TCP only, below).
    let Some(local) = iface.local(repr.dst_addr) else {
        return Err(Drop::NotForUs);
    };
    if local != 0 && repr.next_header != IpProtocol::Tcp {
        return Err(Drop::NotForUs);
    }
    let src = repr.src_addr;
    if src.is_multicast() || src.is_broadcast() || src.is_unspecified() {
        return Err(Drop::Malformed);
    }
    if !src.in_subnet(iface.ip, iface.prefix_len) && !iface.gateway {
        return Err(Drop::NoRoute);
    }
    let header_len = usize::from(packet.header_len());
    let total = usize::from(packet.total_len());
    let body = payload.get(header_len..total).ok_or(Drop::Truncated)?;
    match repr.next_header {
        IpProtocol::Icmp => {
            let icmp = IcmpPacket::new_checked(body)?;
            match IcmpRepr::parse(&icmp)? {
                IcmpRepr::EchoRequest {
                    ident,
                    seq_no,
                    data,
                } => Ok(Ingress::Echo {
                    src_mac,
                    src,
                    ident,
                    seq_no,
                    data,
                }),
                _ => Err(Drop::NotForUs),
            }
        }
        IpProtocol::Tcp => {
            let packet = TcpPacket::new_checked(body)?;
            if !csum_trusted && !packet.verify_checksum(src, repr.dst_addr) {
                return Err(Drop::Checksum);
            }
            let (seg, options_ok) = tcp_repr(&packet, body);
            if seg.dst_port != iface.port {
                return Ok(Ingress::ClosedPort {
                    src_mac,
                    src,
                    local,
                    seg,
                    options_ok,
                });
            }
            Ok(Ingress::Tcp {
                src_mac,
                src,
                local,
                seg,
                options_ok,
            })
        }
        IpProtocol::Udp => {
            let packet = UdpPacket::new_checked(body)?;
            let repr = UdpRepr::parse(&packet, src, iface.ip)?;
            if Some(repr.dst_port) != iface.udp_port || repr.src_port == 0 {
                return Err(Drop::NotForUs);
            }
            // `check_len` bounded the length field by the buffer.
            let end = usize::from(packet.len());
            Ok(Ingress::Udp {
                src_mac,
                src,
                src_port: repr.src_port,
                payload: body.get(crate::wire::udp::HEADER_LEN..end).unwrap_or(&[]),
            })
        }
        _ => Err(Drop::NotForUs),
    }
}

/// The TCP layer's view of a checked segment. Lenient where the strict
/// [`wtcp::Repr::parse`] refuses: flags are taken as they come and malformed options read
/// as none (reported by the `bool`), so that what a peer sends on an established
/// connection is judged by the state machine, not dropped here.
#[inline(always)]
pub fn tcp_repr<'a>(packet: &TcpPacket<&'a [u8]>, body: &'a [u8]) -> (TcpRepr<'a>, bool) {
    let header_len = usize::from(packet.header_len());
    let (options, options_ok) = match wtcp::parse_options(packet.options()) {
        Ok(o) => (o, true),
        Err(_) => (Options::default(), false),
    };
    let flags = packet.flags();
    let seg = TcpRepr {
        src_port: packet.src_port(),
        dst_port: packet.dst_port(),
        seq_number: packet.seq_number(),
        ack_number: flags.ack.then(|| packet.ack_number()),
        flags,
        window_len: packet.window_len(),
        options,
        payload: body.get(header_len..).unwrap_or(&[]),
    };
    (seg, options_ok)
}

/// Whether `seg` may open a connection in LISTEN (RFC 9293 §3.10.7.2): a SYN without ACK
/// or RST whose options parsed. The server's LISTEN and network-core dispatch both ask
/// this, so a SYN that core 0 gives a core is one that core accepts (when it has a TCB).
pub fn admissible_syn(seg: &TcpRepr<'_>, options_ok: bool) -> bool {
    seg.flags.syn && seg.ack_number.is_none() && !seg.flags.rst && options_ok
}
