//! Tests of `wire::ipv4`, with byte fixtures from real captures.

use super::*;

const CLIENT: Address = Address::new(10, 0, 0, 1);
const SERVER: Address = Address::new(10, 0, 0, 2);

/// `ping -c1 -s 48 10.0.0.2` from a Linux host: IPv4 header (DF, TTL 64, protocol 1)
/// and a 56-byte ICMP echo request.
static PACKET_BYTES: [u8; 76] = [
    0x45, 0x00, 0x00, 0x4c, 0x3b, 0x5d, 0x40, 0x00, 0x40, 0x01, 0xeb, 0x51, 0x0a, 0x00, 0x00, 0x01,
    0x0a, 0x00, 0x00, 0x02, 0x08, 0x00, 0xcb, 0x15, 0x1c, 0x46, 0x00, 0x01, 0x65, 0xf2, 0xa1, 0xb3,
    0x00, 0x0c, 0x4a, 0x1e, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b,
    0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b,
    0x2c, 0x2d, 0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,
];

/// A 36-byte UDP datagram (40000 -> 9, "ping") with a Router Alert option (IHL 6,
/// TTL 1, no DF), in a minimum-size Ethernet frame: 10 bytes of zero padding follow.
static PADDED_BYTES: [u8; 46] = [
    0x46, 0x00, 0x00, 0x24, 0x00, 0x01, 0x00, 0x00, 0x01, 0x11, 0x10, 0xc2, 0x0a, 0x00, 0x00, 0x01,
    0x0a, 0x00, 0x00, 0x02, 0x94, 0x04, 0x00, 0x00, 0x9c, 0x40, 0x00, 0x09, 0x00, 0x0c, 0x70, 0xb9,
    0x70, 0x69, 0x6e, 0x67, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

fn repr() -> Repr {
    Repr {
        src_addr: CLIENT,
        dst_addr: SERVER,
        next_header: Protocol::Icmp,
        payload_len: 56,
        hop_limit: 64,
    }
}

/// `PACKET_BYTES` with a patched header and a refilled checksum.
fn patched(f: impl FnOnce(&mut Packet<&mut [u8]>)) -> [u8; 76] {
    let mut bytes = PACKET_BYTES;
    let mut p = Packet::new_unchecked(&mut bytes[..]);
    f(&mut p);
    p.fill_checksum();
    bytes
}

#[test]
fn deconstruct() {
    let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
    assert_eq!(p.version(), 4);
    assert_eq!(p.header_len(), 20);
    assert_eq!(p.dscp_ecn(), 0);
    assert_eq!(p.total_len(), 76);
    assert_eq!(p.ident(), 0x3b5d);
    assert!(p.dont_frag());
    assert!(!p.more_frags());
    assert_eq!(p.frag_offset(), 0);
    assert!(!p.is_fragment());
    assert_eq!(p.hop_limit(), 64);
    assert_eq!(p.next_header(), Protocol::Icmp);
    assert_eq!(p.checksum(), 0xeb51);
    assert_eq!(p.src_addr(), CLIENT);
    assert_eq!(p.dst_addr(), SERVER);
    assert!(p.options().is_empty());
    assert_eq!(p.payload(), &PACKET_BYTES[20..]);
    assert!(p.verify_checksum());
}

#[test]
fn construct() {
    let mut bytes = [0xa5u8; 76];
    let mut p = Packet::new_unchecked(&mut bytes[..]);
    p.set_version(4);
    p.set_header_len(20);
    p.set_dscp_ecn(0);
    p.set_total_len(76);
    p.set_ident(0x3b5d);
    p.clear_flags();
    p.set_dont_frag(true);
    p.set_more_frags(false);
    p.set_frag_offset(0);
    p.set_hop_limit(64);
    p.set_next_header(Protocol::Icmp);
    p.set_src_addr(CLIENT);
    p.set_dst_addr(SERVER);
    p.fill_checksum();
    p.payload_mut().copy_from_slice(&PACKET_BYTES[20..]);
    assert_eq!(&bytes[..], &PACKET_BYTES[..]);
}

#[test]
fn parse() {
    let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
    assert_eq!(Repr::parse(&p), Ok(repr()));
}

#[test]
fn emit() {
    let r = repr();
    let mut bytes = vec![0xa5; r.buffer_len() + r.payload_len];
    let mut p = Packet::new_unchecked(&mut bytes[..]);
    r.emit(&mut p);
    p.payload_mut().copy_from_slice(&PACKET_BYTES[20..]);
    // Same as the capture except the ident we leave at 0.
    let expected = patched(|p| p.set_ident(0));
    assert_eq!(&bytes[..], &expected[..]);
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(Repr::parse(&p), Ok(r));
}

#[test]
fn bad_checksum() {
    let mut bytes = PACKET_BYTES;
    bytes[8] = 63; // TTL changed without fixing the checksum
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert!(!p.verify_checksum());
    assert_eq!(Repr::parse(&p), Err(Error::Checksum));
}

#[test]
fn truncated() {
    for len in [0, 1, 19] {
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..len]).err(),
            Some(Error::Truncated),
            "len {len}"
        );
    }
    // A whole header, but the total length says 76.
    assert_eq!(
        Packet::new_checked(&PACKET_BYTES[..20]).err(),
        Some(Error::Truncated)
    );
    assert_eq!(
        Packet::new_checked(&PACKET_BYTES[..75]).err(),
        Some(Error::Truncated)
    );
}

#[test]
fn malformed() {
    // version 6
    let b = patched(|p| p.set_version(6));
    assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Malformed));
    // IHL 4 (16 bytes) and IHL 0
    let b = patched(|p| p.set_header_len(16));
    assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Malformed));
    let b = patched(|p| p.set_header_len(0));
    assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Malformed));
    // total length shorter than the header
    let b = patched(|p| p.set_total_len(19));
    assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Malformed));
    let b = patched(|p| {
        p.set_header_len(24);
        p.set_total_len(23);
    });
    assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Malformed));
    // IHL 15 (60 bytes) with a total length of 76 is fine, 59 is not
    let b = patched(|p| p.set_header_len(60));
    assert!(Packet::new_checked(&b[..]).is_ok());
    let b = patched(|p| {
        p.set_header_len(60);
        p.set_total_len(59);
    });
    assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Malformed));
    // total length exactly the header: empty payload
    let b = patched(|p| p.set_total_len(20));
    let p = Packet::new_checked(&b[..]).unwrap();
    assert!(p.payload().is_empty());
    // total length larger than the buffer
    let b = patched(|p| p.set_total_len(77));
    assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Truncated));
}

#[test]
fn padding_trimmed_and_options_skipped() {
    let p = Packet::new_checked(&PADDED_BYTES[..]).unwrap();
    assert_eq!(p.header_len(), 24);
    assert_eq!(p.total_len(), 36);
    assert_eq!(p.options(), &[0x94, 0x04, 0x00, 0x00]);
    assert_eq!(p.payload(), &PADDED_BYTES[24..36]);
    assert_eq!(&p.payload()[8..], b"ping");
    assert!(p.verify_checksum());
    assert!(!p.dont_frag());
    assert_eq!(
        Repr::parse(&p),
        Ok(Repr {
            src_addr: CLIENT,
            dst_addr: SERVER,
            next_header: Protocol::Udp,
            payload_len: 12,
            hop_limit: 1,
        })
    );
}

#[test]
fn fragments() {
    // first fragment: MF set, offset 0
    let b = patched(|p| p.set_more_frags(true));
    let p = Packet::new_checked(&b[..]).unwrap();
    assert!(p.more_frags());
    assert!(p.is_fragment());
    assert_eq!(Repr::parse(&p), Err(Error::Unsupported));
    // last fragment: MF clear, offset 1480
    let b = patched(|p| {
        p.set_dont_frag(false);
        p.set_frag_offset(1480);
    });
    let p = Packet::new_checked(&b[..]).unwrap();
    assert_eq!(p.frag_offset(), 1480);
    assert!(!p.more_frags());
    assert!(p.is_fragment());
    assert_eq!(Repr::parse(&p), Err(Error::Unsupported));
    // the largest offset survives a round trip
    let b = patched(|p| p.set_frag_offset(0x1fff << 3));
    let p = Packet::new_checked(&b[..]).unwrap();
    assert_eq!(p.frag_offset(), 0xfff8);
    assert!(p.dont_frag());
}

#[test]
fn protocol_round_trip() {
    for v in 0..=255u8 {
        assert_eq!(u8::from(Protocol::from(v)), v);
    }
    assert_eq!(Protocol::from(6), Protocol::Tcp);
    assert_eq!(Protocol::from(17), Protocol::Udp);
    assert_eq!(Protocol::from(2), Protocol::Unknown(2));
}

#[test]
fn address_predicates() {
    assert!(Address::BROADCAST.is_broadcast());
    assert!(!SERVER.is_broadcast());
    assert!(Address::new(224, 0, 0, 1).is_multicast());
    assert!(Address::new(239, 255, 255, 250).is_multicast());
    assert!(!Address::new(240, 0, 0, 1).is_multicast());
    assert!(!Address::new(223, 255, 255, 255).is_multicast());
    assert!(Address::UNSPECIFIED.is_unspecified());
    assert!(!CLIENT.is_unspecified());
    assert!(Address::new(127, 0, 0, 1).is_loopback());
    assert_eq!(Address::from_bytes(&[10, 0, 0, 1]), CLIENT);
    assert_eq!(CLIENT.to_bits(), 0x0a00_0001);
}

#[test]
fn subnets() {
    let net = Address::new(10, 0, 0, 0);
    assert!(SERVER.in_subnet(net, 24));
    assert!(SERVER.in_subnet(net, 8));
    assert!(!Address::new(10, 0, 1, 2).in_subnet(net, 24));
    assert!(Address::new(10, 0, 1, 2).in_subnet(net, 23));
    assert!(Address::new(192, 168, 1, 1).in_subnet(net, 0));
    assert!(SERVER.in_subnet(SERVER, 32));
    assert!(!CLIENT.in_subnet(SERVER, 32));
    assert!(SERVER.in_subnet(SERVER, 200)); // clamped to /32
    assert!(!CLIENT.in_subnet(SERVER, 200));
    assert!(Address::new(10, 0, 0, 3).in_subnet(SERVER, 31));
    assert!(!Address::new(10, 0, 0, 4).in_subnet(SERVER, 30));
}

#[test]
fn display_and_from_str() {
    assert_eq!(format!("{}", Address::new(192, 168, 69, 1)), "192.168.69.1");
    assert_eq!(format!("{}", Address::BROADCAST), "255.255.255.255");
    assert_eq!("10.0.0.2".parse::<Address>(), Ok(SERVER));
    assert_eq!("0.0.0.0".parse::<Address>(), Ok(Address::UNSPECIFIED));
    assert_eq!("255.255.255.255".parse::<Address>(), Ok(Address::BROADCAST));
    for bad in [
        "",
        "10.0.0",
        "10.0.0.2.",
        "10.0.0.2.1",
        "10..0.2",
        "256.0.0.1",
        "10.0.0.02",
        "+1.0.0.1",
        " 10.0.0.2",
        "10.0.0.x",
        "1000.0.0.1",
    ] {
        assert_eq!(bad.parse::<Address>(), Err(AddressParseError), "{bad:?}");
    }
}
