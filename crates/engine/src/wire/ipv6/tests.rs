//! Tests of `wire::ipv6`, with byte fixtures captured from Linux 6.1 between two network
//! namespaces (see `testdata/ipv6.pcap`).

use std::format;
use std::string::ToString;

use super::*;

/// `ping -6 -s 48 fe80::ff:fe00:60b%veth`: flow label 0x1d846, hop limit 64, ICMPv6.
static ECHO_REQUEST: [u8; 96] = [
    0x60, 0x01, 0xd8, 0x46, 0x00, 0x38, 0x3a, 0x40, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x06, 0x0a, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x06, 0x0b, 0x80, 0x00, 0x41, 0x16, 0x79, 0x5e, 0x00, 0x01,
    0x5e, 0x66, 0x0b, 0x6b, 0x00, 0x00, 0x00, 0x00, 0x55, 0x2d, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,
];

/// The kernel's MLDv2 report during DAD: from `::` to ff02::16, hop limit 1, a hop-by-hop
/// header with Router Alert and PadN, then ICMPv6 type 143 with two records.
static MLD_REPORT: [u8; 96] = [
    0x60, 0x00, 0x00, 0x00, 0x00, 0x38, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x16, 0x3a, 0x00, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00,
    0x8f, 0x00, 0x67, 0x5c, 0x00, 0x00, 0x00, 0x02, 0x04, 0x00, 0x00, 0x00, 0xff, 0x02, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x06, 0x0a, 0x04, 0x00, 0x00, 0x00,
    0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x00, 0x0a,
];

const A: Address = Address::new(0xfe80, 0, 0, 0, 0, 0xff, 0xfe00, 0x060a);
const B: Address = Address::new(0xfe80, 0, 0, 0, 0, 0xff, 0xfe00, 0x060b);

#[test]
fn deconstruct() {
    let p = Packet::new_checked(&ECHO_REQUEST[..]).unwrap();
    assert_eq!(p.version(), 6);
    assert_eq!(p.traffic_class(), 0);
    assert_eq!(p.flow_label(), 0x1d846);
    assert_eq!(p.payload_len(), 56);
    assert_eq!(p.next_header(), NextHeader::Icmpv6);
    assert_eq!(p.hop_limit(), 64);
    assert_eq!(p.src_addr(), A);
    assert_eq!(p.dst_addr(), B);
    assert_eq!(p.payload(), &ECHO_REQUEST[40..]);
    let up = p.walk().unwrap();
    assert_eq!(
        up,
        Upper {
            protocol: NextHeader::Icmpv6,
            offset: 40,
            len: 56,
            router_alert: false
        }
    );
    assert_eq!(p.upper_payload(&up), &ECHO_REQUEST[40..]);
    // The ICMPv6 checksum verifies with the pseudo-header.
    let acc = p.pseudo_header(&up);
    assert_eq!(
        checksum::fold(checksum::accumulate(acc, p.upper_payload(&up))),
        0xffff
    );
}

#[test]
fn construct_and_round_trip() {
    let r = Repr::parse(&Packet::new_checked(&ECHO_REQUEST[..]).unwrap()).unwrap();
    assert_eq!(
        r,
        Repr {
            src_addr: A,
            dst_addr: B,
            next_header: NextHeader::Icmpv6,
            payload_len: 56,
            hop_limit: 64
        }
    );
    let mut bytes = ECHO_REQUEST;
    bytes[..40].fill(0xa5);
    let mut p = Packet::new_unchecked(&mut bytes[..]);
    r.emit(&mut p);
    p.set_version_tc_flow(6, 0, 0x1d846);
    assert_eq!(bytes, ECHO_REQUEST);
    let mut p = Packet::new_unchecked(&mut bytes[..]);
    p.set_version_tc_flow(6, 0xb8, 0xfffff);
    assert_eq!(p.traffic_class(), 0xb8);
    assert_eq!(p.flow_label(), 0xfffff);
    assert_eq!(p.version(), 6);
}

#[test]
fn mld_report_hop_by_hop_router_alert() {
    let p = Packet::new_checked(&MLD_REPORT[..]).unwrap();
    assert_eq!(p.next_header(), NextHeader::HopByHop);
    assert_eq!(p.hop_limit(), 1);
    assert!(p.src_addr().is_unspecified());
    assert_eq!(p.dst_addr(), Address::ALL_MLDV2_ROUTERS);
    let up = p.walk().unwrap();
    assert_eq!(up.protocol, NextHeader::Icmpv6);
    assert_eq!(up.offset, 48);
    assert_eq!(up.len, 48);
    assert!(up.router_alert);
    let acc = p.pseudo_header(&up);
    assert_eq!(
        checksum::fold(checksum::accumulate(acc, p.upper_payload(&up))),
        0xffff
    );
    // What we emit for MLD is byte for byte what Linux sends.
    let mut hbh = [0xa5u8; ROUTER_ALERT_LEN];
    emit_router_alert(&mut hbh, NextHeader::Icmpv6);
    assert_eq!(hbh, MLD_REPORT[40..48]);
}

#[test]
fn truncated_and_malformed() {
    for len in [0, 39, 40, 95] {
        assert_eq!(
            Packet::new_checked(&ECHO_REQUEST[..len]).err(),
            Some(Error::Truncated),
            "len {len}"
        );
    }
    let mut bytes = ECHO_REQUEST;
    bytes[0] = 0x45;
    assert_eq!(
        Packet::new_checked(&bytes[..]).err(),
        Some(Error::Malformed)
    );
    // Padding after the payload is cut off.
    let mut long = [0u8; 120];
    long[..96].copy_from_slice(&ECHO_REQUEST);
    let p = Packet::new_checked(&long[..]).unwrap();
    assert_eq!(p.payload(), &ECHO_REQUEST[40..]);
    assert_eq!(p.walk().unwrap().len, 56);
    // A multicast source is refused.
    let mut bytes = ECHO_REQUEST;
    bytes[8] = 0xff;
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(Repr::parse(&p), Err(Error::Malformed));
}

/// A packet with the given extension-header bytes, then an 8-byte "UDP" upper layer.
fn chain(first: u8, ext: &[u8]) -> std::vec::Vec<u8> {
    let mut v = std::vec![0u8; 40];
    v[0] = 0x60;
    let len = (ext.len() + 8) as u16;
    v[4..6].copy_from_slice(&len.to_be_bytes());
    v[6] = first;
    v[7] = 64;
    v.extend_from_slice(ext);
    v.extend_from_slice(&[0; 8]);
    v
}

fn walk(first: u8, ext: &[u8]) -> core::result::Result<Upper, ChainError> {
    let v = chain(first, ext);
    Packet::new_checked(&v[..]).unwrap().walk()
}

#[test]
fn walk_skips_options_and_empty_routing() {
    // Hop-by-hop (Pad1 ×6) -> destination options (PadN 4 + unknown skip-type 0x1e) ->
    // routing type 0 with segments left 0 -> UDP.
    let ext = [
        60, 0, 0, 0, 0, 0, 0, 0, // hop-by-hop, six Pad1
        43, 1, 1, 4, 0, 0, 0, 0, 0x1e, 6, 1, 2, 3, 4, 5, 6, // dst opts, 16 bytes
        17, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // routing
    ];
    let up = walk(0, &ext).unwrap();
    assert_eq!(up.protocol, NextHeader::Udp);
    assert_eq!(up.offset, 40 + ext.len());
    assert_eq!(up.len, 8);
    assert!(!up.router_alert);
}

#[test]
fn walk_reports_why_it_stopped() {
    // Routing type 0 with segments left: refused, pointer at the routing type.
    let rh0 = [
        17, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(walk(43, &rh0), Err(ChainError::Routing { pointer: 42 }));
    // A fragment header, first fragment or not.
    let frag = [17, 0, 0, 1, 0, 0, 0, 1];
    assert_eq!(walk(44, &frag), Err(ChainError::Fragment { offset: 40 }));
    let ext = [44, 0, 1, 4, 0, 0, 0, 0, 17, 0, 0, 1, 0, 0, 0, 1];
    assert_eq!(walk(60, &ext), Err(ChainError::Fragment { offset: 48 }));
    // ESP, AH, unknown upper layers: pointer at the Next Header octet naming them.
    for nh in [50u8, 51, 132, 255] {
        assert_eq!(
            walk(nh, &[]),
            Err(ChainError::Unsupported {
                next_header: NextHeader::from(nh),
                pointer: 6
            })
        );
    }
    let ext = [50, 0, 1, 4, 0, 0, 0, 0];
    assert_eq!(
        walk(60, &ext),
        Err(ChainError::Unsupported {
            next_header: NextHeader::Esp,
            pointer: 40
        })
    );
    // Hop-by-hop after destination options.
    let ext = [0, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0];
    assert_eq!(
        walk(60, &ext),
        Err(ChainError::HopByHopNotFirst { pointer: 40 })
    );
    // Options whose type says discard: 01, 10, 11 in the top bits.
    for (kind, action) in [
        (0x40u8, OptionAction::Discard),
        (0x80, OptionAction::DiscardAndReport),
        (0xc2, OptionAction::DiscardAndReportUnicast),
    ] {
        let ext = [17, 0, 0, kind, 2, 0, 0, 1];
        assert_eq!(
            walk(60, &ext),
            Err(ChainError::Option {
                action,
                pointer: 43
            }),
            "{kind:#x}"
        );
    }
    // An option running past its header, and a header running past the payload.
    assert_eq!(
        walk(0, &[17, 0, 1, 5, 0, 0, 0, 0]),
        Err(ChainError::Truncated)
    );
    let mut v = chain(60, &[17, 1, 1, 4, 0, 0, 0, 0]);
    v[4..6].copy_from_slice(&8u16.to_be_bytes()); // a 16-byte header in an 8-byte payload
    assert_eq!(
        Packet::new_checked(&v[..]).unwrap().walk(),
        Err(ChainError::Truncated)
    );
    assert_eq!(Error::from(ChainError::Truncated), Error::Truncated);
    assert_eq!(
        Error::from(ChainError::Fragment { offset: 40 }),
        Error::Unsupported
    );
}

#[test]
fn walk_is_bounded() {
    // Eight destination-options headers are followed; nine are too many.
    let mut ext = std::vec::Vec::new();
    for _ in 0..7 {
        ext.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
    }
    ext.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
    assert_eq!(walk(60, &ext).unwrap().offset, 40 + 64);
    ext.splice(0..0, [60, 0, 1, 4, 0, 0, 0, 0]);
    assert_eq!(walk(60, &ext), Err(ChainError::TooLong));
    // A 1024-byte header fits the byte bound; 1032 bytes do not.
    let mut big = std::vec![0u8; 1024];
    big[0] = 17;
    big[1] = 127;
    assert_eq!(walk(60, &big).unwrap().offset, 40 + 1024);
    let mut bigger = std::vec![0u8; 1032];
    bigger[0] = 60;
    bigger[1] = 127;
    bigger[1024] = 17;
    assert_eq!(walk(60, &bigger), Err(ChainError::TooLong));
}

#[test]
fn address_kinds() {
    assert!(A.is_link_local());
    assert!(A.is_unicast());
    assert!(!A.is_multicast());
    assert!(Address::UNSPECIFIED.is_unspecified());
    assert!(!Address::UNSPECIFIED.is_unicast());
    assert!(Address::LOOPBACK.is_loopback());
    assert!(Address::ALL_NODES.is_multicast());
    assert_eq!(Address::ALL_NODES.multicast_scope(), Some(2));
    assert_eq!(A.multicast_scope(), None);
    // fe80::/10 includes febf:: but not fec0::.
    assert!(Address::new(0xfebf, 0, 0, 0, 0, 0, 0, 1).is_link_local());
    assert!(!Address::new(0xfec0, 0, 0, 0, 0, 0, 0, 1).is_link_local());
    // The solicited-node groups Linux joined in the capture.
    let sn = A.solicited_node();
    assert_eq!(sn, Address::new(0xff02, 0, 0, 0, 0, 1, 0xff00, 0x060a));
    assert!(sn.is_solicited_node_multicast());
    assert!(!A.is_solicited_node_multicast());
    assert_eq!(sn.multicast_ethernet().0, [0x33, 0x33, 0xff, 0, 6, 0x0a]);
    let g = Address::new(0x2001, 0xdb8, 0, 0, 0x1234, 0x5678, 0x9abc, 0xdef0);
    assert_eq!(
        g.solicited_node(),
        Address::new(0xff02, 0, 0, 0, 0, 1, 0xffbc, 0xdef0)
    );
    let net = Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0);
    assert!(g.in_subnet(net, 64));
    assert!(g.in_subnet(net, 32));
    assert!(!g.in_subnet(net, 65 + 16));
    assert!(g.in_subnet(Address::UNSPECIFIED, 0));
    assert!(g.in_subnet(g, 200));
}

/// Addresses whose text forms cover RFC 5952's cases.
fn samples() -> std::vec::Vec<[u16; 8]> {
    let mut v = std::vec![
        [0; 8],
        [0, 0, 0, 0, 0, 0, 0, 1],
        [1, 0, 0, 0, 0, 0, 0, 0],
        [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1],
        [0x2001, 0xdb8, 0, 1, 0, 0, 0, 1],      // longest run wins
        [0x2001, 0xdb8, 0, 0, 1, 0, 0, 1],      // first of equal runs
        [0x2001, 0xdb8, 0, 1, 1, 1, 1, 1],      // one zero group stays
        [0x2001, 0xdb8, 0xaaaa, 0, 0, 0, 0, 0], // run at the end
        [0, 0, 0xaaaa, 0, 0, 0, 0, 1],
        [0xfe80, 0, 0, 0, 0, 0xff, 0xfe00, 0x60a],
        [0xff02, 0, 0, 0, 0, 1, 0xff00, 0x60a],
        [0xffff; 8],
        [0, 0, 0, 0, 0, 0xffff, 0xc000, 0x280], // IPv4-mapped
        [0, 0, 0, 0, 0, 0, 0xc000, 0x280],      // IPv4-compatible (deprecated)
        [0, 0, 0, 0, 0, 0xffff, 0, 0],
        [0, 0, 0, 0, 0xffff, 0, 1, 2],
        [0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x280], // NAT64
        [1, 2, 3, 4, 5, 6, 7, 8],
        [0, 1, 0, 1, 0, 1, 0, 1],
    ];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Zero about half the groups so runs of every length occur.
        v.push(core::array::from_fn(|i| {
            if (x >> (i + 40)) & 1 == 0 {
                0
            } else {
                (x >> (i * 4)) as u16
            }
        }));
    }
    v
}

#[test]
fn display_matches_std() {
    for s in samples() {
        let a = Address::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]);
        let std = std::net::Ipv6Addr::from(a.0);
        assert_eq!(a.to_string(), std.to_string(), "{s:x?}");
        assert_eq!(a.segments(), s);
    }
    assert_eq!(
        format!("[{:>20}]", Address::LOOPBACK),
        "[                 ::1]"
    );
    assert_eq!(format!("{:<5}|", Address::LOOPBACK), "::1  |");
}

#[test]
fn parse_round_trips_and_matches_std() {
    for s in samples() {
        let a = Address::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]);
        let text = a.to_string();
        assert_eq!(text.parse::<Address>(), Ok(a), "{text}");
        // The uncompressed, upper-case, leading-zero form too.
        let long = format!(
            "{:04X}:{:04X}:{:04X}:{:04X}:{:04X}:{:04X}:{:04X}:{:04X}",
            s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
        );
        assert_eq!(long.parse::<Address>(), Ok(a), "{long}");
    }
    let cases = [
        "::",
        "::1",
        "1::",
        "1:2:3:4:5:6:7::",
        "::2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:8:9",
        "1::2::3",
        ":1::2",
        "1::2:",
        "1:2:3:4:5:6:7",
        "::1.2.3.4",
        "::ffff:192.0.2.128",
        "1:2:3:4:5:6:1.2.3.4",
        "1:2:3:4:5:6:7:1.2.3.4",
        "1:2:3:4:5::1.2.3.4",
        "1:2:3:4:5:6::1.2.3.4",
        "::1.2.3",
        "::1.2.3.4.5",
        "::01.2.3.4",
        "::1.2.3.4:5",
        "12345::",
        "0000::0001",
        "g::",
        "::%eth0",
        "fe80::1%1",
        "[::1]",
        " ::1",
        "",
        ":",
        ":::",
        "1:::2",
        "1:2:3:4:5:6:7:8::",
        "::1:2:3:4:5:6:7:8",
        "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
        "::é",
    ];
    for c in cases {
        let ours = c.parse::<Address>().ok().map(|a| a.0);
        let std = c.parse::<std::net::Ipv6Addr>().ok().map(|a| a.octets());
        assert_eq!(ours, std, "{c:?}");
    }
}

#[test]
fn next_header_round_trip() {
    for v in 0..=255u8 {
        assert_eq!(u8::from(NextHeader::from(v)), v);
    }
}

#[test]
fn router_alert_only_counts_in_hop_by_hop() {
    // In destination options a Router Alert (type 5, skip-type) is skipped, not reported.
    let ext = [17, 0, 5, 2, 0, 0, 1, 0];
    let up = walk(60, &ext).unwrap();
    assert!(!up.router_alert);
    let up = walk(0, &ext).unwrap();
    assert!(up.router_alert);
    // A Router Alert of the wrong length is an unknown skip-type option.
    let ext = [17, 0, 5, 1, 0, 1, 1, 0];
    assert!(!walk(0, &ext).unwrap().router_alert);
}
