//! The PROXY header parser: HAProxy's own bytes (captured, `testdata/proxy/`), every shape
//! the specification allows, every byte boundary of split delivery, truncation, and a
//! malformed-input table with one case per rule.

use super::*;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

static V1_TCP4: &[u8] = include_bytes!("../../../testdata/proxy/haproxy-v1-tcp4.bin");
static V1_TCP6: &[u8] = include_bytes!("../../../testdata/proxy/haproxy-v1-tcp6.bin");
static V2_TCP4: &[u8] = include_bytes!("../../../testdata/proxy/haproxy-v2-tcp4.bin");
static V2_TCP6: &[u8] = include_bytes!("../../../testdata/proxy/haproxy-v2-tcp6.bin");
static V2_TLV: &[u8] = include_bytes!("../../../testdata/proxy/haproxy-v2-tlv.bin");
static V2_LOCAL: &[u8] = include_bytes!("../../../testdata/proxy/haproxy-v2-local-check.bin");

const LOOP4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const LOOP6: IpAddr = IpAddr::V6(Ipv6Addr::LOCALHOST);

#[track_caller]
fn complete(buf: &[u8]) -> (Repr, usize) {
    match parse(buf) {
        Parsed::Complete { repr, len } => (repr, len),
        other => panic!("{other:?} for {buf:?}"),
    }
}

fn sock(ip: IpAddr, port: u16) -> SocketAddr {
    SocketAddr::new(ip, port)
}

#[test]
fn haproxy_send_proxy_tcp4() {
    let (r, len) = complete(V1_TCP4);
    assert_eq!(r.version, Version::V1);
    assert_eq!(r.addresses, Some((sock(LOOP4, 60902), sock(LOOP4, 18080))));
    assert_eq!(len, b"PROXY TCP4 127.0.0.1 127.0.0.1 60902 18080\r\n".len());
    assert!(V1_TCP4[len..].starts_with(b"GET /a HTTP/1.1\r\n"));
}

#[test]
fn haproxy_send_proxy_tcp6() {
    let (r, len) = complete(V1_TCP6);
    assert_eq!(r.version, Version::V1);
    assert_eq!(r.addresses, Some((sock(LOOP6, 49574), sock(LOOP6, 18090))));
    assert_eq!(r.source(), Some(LOOP6));
    assert!(V1_TCP6[len..].starts_with(b"GET /b HTTP/1.1\r\n"));
}

#[test]
fn haproxy_send_proxy_v2_tcp4() {
    let (r, len) = complete(V2_TCP4);
    assert_eq!(r.version, Version::V2);
    assert_eq!(len, 28);
    assert_eq!(r.addresses, Some((sock(LOOP4, 37038), sock(LOOP4, 18081))));
    assert!(V2_TCP4[len..].starts_with(b"GET /c HTTP/1.1\r\n"));
    let p = Packet::new_checked(V2_TCP4).unwrap();
    assert_eq!(p.command(), Command::Proxy);
    assert_eq!(p.family(), 0x11);
    assert_eq!(p.addresses_len(), 12);
    assert_eq!(p.tlvs().count(), 0);
}

#[test]
fn haproxy_send_proxy_v2_tcp6() {
    let (r, len) = complete(V2_TCP6);
    assert_eq!(len, 52);
    assert_eq!(r.addresses, Some((sock(LOOP6, 39062), sock(LOOP6, 18091))));
    assert!(V2_TCP6[len..].starts_with(b"GET /d HTTP/1.1\r\n"));
}

#[test]
fn haproxy_v2_tlvs_are_walked_and_skipped() {
    let (r, len) = complete(V2_TLV);
    assert_eq!(len, 16 + 22);
    assert_eq!(r.source(), Some(LOOP4));
    assert!(V2_TLV[len..].starts_with(b"GET /e HTTP/1.1\r\n"));
    let p = Packet::new_checked(V2_TLV).unwrap();
    let tlvs: Vec<_> = p.tlvs().map(Result::unwrap).collect();
    assert_eq!(tlvs.len(), 2);
    assert_eq!((tlvs[0].kind, tlvs[0].value.len()), (0x03, 4)); // CRC32C
    assert_eq!((tlvs[1].kind, tlvs[1].value), (0x05, &[][..])); // unique id, empty
}

#[test]
fn haproxy_health_check_is_local_and_uses_the_real_addresses() {
    let (r, len) = complete(V2_LOCAL);
    assert_eq!(len, 16);
    assert_eq!(r.version, Version::V2);
    assert_eq!(r.addresses, None);
    assert_eq!(
        Packet::new_checked(V2_LOCAL).unwrap().command(),
        Command::Local
    );
}

/// Every fixture, delivered in two pieces at every byte boundary, is partial until the
/// whole header is there and then the same header.
#[test]
fn split_delivery_at_every_byte_waits_for_the_whole_header() {
    for fixture in [V1_TCP4, V1_TCP6, V2_TCP4, V2_TCP6, V2_TLV, V2_LOCAL] {
        let (whole, len) = complete(fixture);
        for cut in 0..len {
            assert_eq!(parse(&fixture[..cut]), Parsed::Partial, "cut at {cut}");
        }
        for cut in len..=fixture.len() {
            assert_eq!(complete(&fixture[..cut]), (whole, len), "cut at {cut}");
        }
    }
}

#[test]
fn unknown_shapes_use_the_connection_addresses() {
    for line in [
        &b"PROXY UNKNOWN\r\n"[..],
        b"PROXY UNKNOWN ffff:f::f:ffff ffff:f::f:ffff 65535 65535\r\n",
        b"PROXY UNKNOWN anything at all\r\n",
    ] {
        let (r, len) = complete(line);
        assert_eq!((r.addresses, len), (None, line.len()));
    }
    // Version 2 UNSPEC family with the PROXY command, and AF_UNIX: no IP address.
    let mut unspec = V2_LOCAL.to_vec();
    unspec[12] = 0x21;
    assert_eq!(complete(&unspec).0.addresses, None);
    let mut unix = V2_LOCAL.to_vec();
    unix[12] = 0x21;
    unix[13] = 0x31;
    unix[14..16].copy_from_slice(&216u16.to_be_bytes());
    unix.extend_from_slice(&[b'/'; 216]);
    assert_eq!(
        complete(&unix),
        (
            Repr {
                version: Version::V2,
                addresses: None
            },
            232
        )
    );
    // LOCAL ignores the family and skips whatever the length says (§2.2: "must not assume
    // zero is presented for LOCAL connections").
    let mut local = V2_TCP4[..28].to_vec();
    local[12] = 0x20;
    local.extend_from_slice(b"GET");
    assert_eq!(
        complete(&local),
        (
            Repr {
                version: Version::V2,
                addresses: None
            },
            28
        )
    );
}

#[test]
fn the_longest_lines_fit_and_one_more_byte_does_not() {
    let tcp6 = b"PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    assert_eq!(tcp6.len(), 104);
    let (r, _) = complete(tcp6);
    assert_eq!(r.addresses.unwrap().0.port(), 65535);
    let tcp4 = b"PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n";
    assert_eq!(complete(tcp4).1, 56);
    // 107 bytes with the CRLF: accepted (UNKNOWN ignores what follows it).
    let mut unknown = b"PROXY UNKNOWN ".to_vec();
    unknown.resize(105, b'f');
    unknown.extend_from_slice(b"\r\n");
    assert_eq!(complete(&unknown).1, V1_MAX);
    // No CRLF in the first 107 bytes.
    let mut long = b"PROXY UNKNOWN ".to_vec();
    long.resize(106, b'f');
    assert_eq!(parse(&long), Parsed::Partial);
    long.push(b'f');
    assert_eq!(parse(&long), Parsed::Error(Error::TooLong));
    long.extend_from_slice(b"\r\n");
    assert_eq!(parse(&long), Parsed::Error(Error::TooLong));
}

#[test]
fn v2_length_is_bounded_and_truncation_waits() {
    let mut h = V2_TCP4[..16].to_vec();
    h[14..16].copy_from_slice(&((V2_MAX - 16) as u16).to_be_bytes());
    assert_eq!(parse(&h), Parsed::Partial, "a 536-byte header may come");
    h[14..16].copy_from_slice(&((V2_MAX - 15) as u16).to_be_bytes());
    assert_eq!(parse(&h), Parsed::Error(Error::TooLong));
    h[14..16].copy_from_slice(&u16::MAX.to_be_bytes());
    assert_eq!(parse(&h), Parsed::Error(Error::TooLong));
    // A whole 536-byte header: the IPv4 block and one NOOP TLV of padding.
    let mut big = V2_TCP4[..28].to_vec();
    let pad = V2_MAX - 28 - 3;
    big[14..16].copy_from_slice(&((V2_MAX - 16) as u16).to_be_bytes());
    big.extend_from_slice(&[0x04]);
    big.extend_from_slice(&(pad as u16).to_be_bytes());
    big.resize(V2_MAX, 0);
    assert_eq!(complete(&big).1, V2_MAX);
    assert_eq!(parse(&big[..V2_MAX - 1]), Parsed::Partial);
}

/// One case per rule of the specification, each refused.
#[test]
fn malformed_headers_are_refused() {
    let v2 = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut h = V2_TCP4[..28].to_vec();
        f(&mut h);
        parse(&h)
    };
    let bad = Parsed::Error(Error::Malformed);
    let cases: &[(&[u8], &str)] = &[
        (b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", "LF alone"),
        (b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX", "CR alone"),
        (b"PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", "two spaces"),
        (b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", "trailing space"),
        (b"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", "a port missing"),
        (b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", "a field too many"),
        (
            b"PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",
            "a leading zero in an address",
        ),
        (b"PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n", "an octet past 255"),
        (b"PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n", "three octets"),
        (
            b"PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
            "a leading zero in a port",
        ),
        (
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n",
            "a port past 65535",
        ),
        (b"PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n", "a signed port"),
        (b"PROXY TCP4 ::1 ::1 1 2\r\n", "IPv6 under TCP4"),
        (b"PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n", "IPv4 under TCP6"),
        (b"PROXY TCP6 1::2::3 ::1 1 2\r\n", "two double colons"),
        (b"PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n", "an unknown protocol"),
        (b"PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n", "lower case"),
        (b"PROXY \r\n", "nothing"),
        (b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\x00\r\n", "a NUL"),
        (b"PROXY TCP4 1.2.3.4 5.6.7.\xc3\xa9 1 2\r\n", "not ASCII"),
    ];
    for (line, why) in cases {
        assert_eq!(parse(line), bad, "{why}");
    }
    assert_eq!(v2(&|h| h[12] = 0x11), bad, "version 1 in a v2 header");
    assert_eq!(v2(&|h| h[12] = 0x31), bad, "version 3");
    assert_eq!(v2(&|h| h[12] = 0x22), bad, "command 2");
    assert_eq!(v2(&|h| h[12] = 0x2f), bad, "command 15");
    assert_eq!(v2(&|h| h[13] = 0x13), bad, "transport 3");
    assert_eq!(v2(&|h| h[13] = 0x41), bad, "family 4");
    assert_eq!(
        v2(&|h| {
            h[15] = 11;
            h.pop();
        }),
        bad,
        "IPv4 block short"
    );
    assert_eq!(v2(&|h| h[13] = 0x21), bad, "IPv6 family, IPv4-sized block");
    assert_eq!(
        v2(&|h| {
            h[15] = 14;
            h.extend_from_slice(&[0x04, 0]);
        }),
        bad,
        "a TLV shorter than its type and length"
    );
    assert_eq!(
        v2(&|h| {
            h[15] = 16;
            h.extend_from_slice(&[0x04, 0, 2, 0]);
        }),
        bad,
        "a TLV's value past the header"
    );
    assert_eq!(
        v2(&|h| h[11] = b'X'),
        Parsed::Error(Error::Missing),
        "a wrong last signature byte is no signature"
    );
}

#[test]
fn no_header_is_missing_and_only_signatures_count() {
    for no in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        b"\r\nGET / HTTP/1.1\r\n",
        b"\x16\x03\x01\x02\x00", // a TLS ClientHello
        b"PROXY\r\n",
        b"PROXYTCP4",
        b"proxy TCP4",
        b"\r\n\r\n\x00\r\nQUIX",
    ] {
        assert_eq!(parse(no), Parsed::Error(Error::Missing), "{no:?}");
        assert!(!has_signature(no), "{no:?}");
    }
    for yes in [
        &b"P"[..],
        b"PROXY",
        b"PROXY TCP4",
        b"\r",
        b"\r\n\r\n\0",
        V2_TCP4,
    ] {
        assert!(has_signature(yes), "{yes:?}");
    }
    assert!(!has_signature(b""));
    assert_eq!(parse(b""), Parsed::Partial);
}

#[test]
fn garbage_never_panics() {
    // A cheap stand-in for the fuzz target: every short mutation of every fixture.
    for fixture in [V1_TCP4, V1_TCP6, V2_TCP4, V2_TCP6, V2_TLV, V2_LOCAL] {
        for i in 0..fixture.len().min(64) {
            for b in [0u8, 0x0a, 0x0d, 0x20, 0x30, 0xff] {
                let mut f = fixture.to_vec();
                f[i] = b;
                let _ = parse(&f);
                let _ = parse(&f[..i]);
            }
        }
    }
}
