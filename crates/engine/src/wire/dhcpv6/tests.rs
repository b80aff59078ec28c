//! DHCPv6 messages: dnsmasq's real answers, our messages byte for byte against the same
//! exchange's client side, and hostile shapes.
//!
//! `testdata/dhcpv6.pcap`: dnsmasq 2.90 (Debian 12) in a network namespace with
//! `--dhcp-range=2001:db8:5::100,2001:db8:5::1ff,64,1h
//! --dhcp-option=option6:dns-server,[2001:db8:5::53]`, recorded with `tcpdump -i d6c -w`
//! on the veth of a second namespace where a script sent a Solicit, a Request, a Renew
//! and an Information-request from DUID-LL 02:00:00:00:00:02, IAID 1, in the form
//! [`emit`] writes (the script's messages are the capture's odd frames).

use super::*;
use crate::capture_tests::frames;

static PCAP: &[u8] = include_bytes!("../../../testdata/dhcpv6.pcap");
const MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
const LEASED: Ipv6Address = Ipv6Address::new(0x2001, 0xdb8, 5, 0, 0, 0, 0, 0x185);
const DNS: Ipv6Address = Ipv6Address::new(0x2001, 0xdb8, 5, 0, 0, 0, 0, 0x53);

/// The UDP payloads of the capture, in order (Ethernet, IPv6 without extension
/// headers, UDP).
fn payloads() -> Vec<&'static [u8]> {
    frames(PCAP)
        .into_iter()
        .map(|f| &f[14 + 40 + 8..])
        .collect()
}

#[test]
fn dnsmasqs_advertise_and_replies_parse() {
    let p = payloads();
    assert_eq!(p.len(), 8);
    let ours = Duid::link_layer(MAC);
    let adv = parse(p[1]).unwrap();
    assert_eq!(adv.kind, MessageType::Advertise);
    assert_eq!(adv.xid, [0x11, 0x22, 0x33]);
    assert_eq!(adv.client_id, Some(ours));
    let server = adv.server_id.expect("a server identifier");
    let ia = adv.ia_na.unwrap();
    assert_eq!(ia.iaid, 1);
    let a = ia.addr.unwrap();
    assert_eq!(a.addr, LEASED);
    assert!(a.valid >= a.preferred && a.valid > 0, "{a:?}");
    assert!(ia.t1 <= ia.t2, "{ia:?}");
    assert_eq!(adv.dns, [Some(DNS), None, None]);
    for (i, xid) in [(3, [0x44, 0x55, 0x66]), (5, [0x77, 0x88, 0x99])] {
        let r = parse(p[i]).unwrap();
        assert_eq!((r.kind, r.xid), (MessageType::Reply, xid));
        assert_eq!(r.server_id, Some(server));
        assert_eq!(r.ia_na.and_then(|ia| ia.addr).map(|a| a.addr), Some(LEASED));
        assert_eq!(r.status.unwrap_or(status::SUCCESS), status::SUCCESS);
    }
    let info = parse(p[7]).unwrap();
    assert_eq!(
        (info.kind, info.xid),
        (MessageType::Reply, [0xaa, 0xbb, 0xcc])
    );
    assert_eq!(info.ia_na, None);
    assert_eq!(info.dns[0], Some(DNS));
}

#[test]
fn our_messages_are_the_captured_clients_byte_for_byte() {
    let p = payloads();
    let ours = Duid::link_layer(MAC);
    let server = parse(p[1]).unwrap().server_id.unwrap();
    let mut buf = [0u8; MAX_EMIT];
    let mut check = |m: ClientMessage<'_>, want: &[u8]| {
        let n = emit(&m, &mut buf).unwrap();
        assert_eq!(&buf[..n], want, "{:?}", m.kind);
    };
    let base = ClientMessage {
        kind: MessageType::Solicit,
        xid: [0x11, 0x22, 0x33],
        client_id: &ours,
        server_id: None,
        ia_na: Some((1, None)),
        elapsed_cs: 0,
    };
    check(base, p[0]);
    let request = ClientMessage {
        kind: MessageType::Request,
        xid: [0x44, 0x55, 0x66],
        server_id: Some(&server),
        ia_na: Some((1, Some(LEASED))),
        ..base
    };
    check(request, p[2]);
    check(
        ClientMessage {
            kind: MessageType::Renew,
            xid: [0x77, 0x88, 0x99],
            ..request
        },
        p[4],
    );
    check(
        ClientMessage {
            kind: MessageType::InformationRequest,
            xid: [0xaa, 0xbb, 0xcc],
            ia_na: None,
            ..base
        },
        p[6],
    );
    // The longest message fits MAX_EMIT; a shorter buffer is refused, not overrun.
    let long = Duid::from_bytes(&[7; MAX_DUID]).unwrap();
    let m = ClientMessage {
        server_id: Some(&long),
        ..request
    };
    assert!(emit(&m, &mut buf).is_some());
    assert_eq!(emit(&m, &mut buf[..40]), None);
}

fn opt(code: u16, body: &[u8]) -> Vec<u8> {
    let mut v = code.to_be_bytes().to_vec();
    v.extend_from_slice(&(body.len() as u16).to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn reply(opts: &[Vec<u8>]) -> Vec<u8> {
    let mut v = vec![7, 1, 2, 3];
    for o in opts {
        v.extend_from_slice(o);
    }
    v
}

fn ia_addr(addr: Ipv6Address, preferred: u32, valid: u32, inner: &[u8]) -> Vec<u8> {
    let mut b = addr.as_bytes().to_vec();
    b.extend_from_slice(&preferred.to_be_bytes());
    b.extend_from_slice(&valid.to_be_bytes());
    b.extend_from_slice(inner);
    opt(option::IAADDR, &b)
}

fn ia(iaid: u32, inner: &[Vec<u8>]) -> Vec<u8> {
    let mut b = iaid.to_be_bytes().to_vec();
    b.extend_from_slice(&[0, 0, 0, 100, 0, 0, 0, 160]);
    for o in inner {
        b.extend_from_slice(o);
    }
    opt(option::IA_NA, &b)
}

#[test]
fn an_address_refused_or_dead_is_not_offered() {
    let no_addrs = opt(option::STATUS_CODE, &[0, 2, b'n', b'o']);
    let other = Ipv6Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 9);
    let m = parse(&reply(&[ia(
        1,
        &[
            ia_addr(LEASED, 10, 20, &no_addrs),
            ia_addr(LEASED, 0, 0, &[]),
            ia_addr(other, 10, 20, &[]),
        ],
    )]))
    .unwrap();
    let got = m.ia_na.unwrap();
    assert_eq!((got.t1, got.t2), (100, 160));
    assert_eq!(got.addr.map(|a| a.addr), Some(other));
    assert_eq!(
        got.revoked,
        Some(LEASED),
        "a valid lifetime of 0 takes it back"
    );
    // A preferred lifetime above the valid one: not usable (§21.6).
    let m = parse(&reply(&[ia(1, &[ia_addr(LEASED, 30, 20, &[])])])).unwrap();
    assert_eq!(m.ia_na.unwrap().addr, None);
    // The IA's own status, and the message's.
    let m = parse(&reply(&[
        ia(1, std::slice::from_ref(&no_addrs)),
        no_addrs.clone(),
    ]))
    .unwrap();
    assert_eq!(m.ia_na.unwrap().status, Some(status::NO_ADDRS_AVAIL));
    assert_eq!(m.ia_na.unwrap().addr, None);
    assert_eq!(m.status, Some(status::NO_ADDRS_AVAIL));
}

#[test]
fn hostile_shapes_are_refused_or_bounded() {
    assert_eq!(parse(&[7, 1, 2]), Err(Error::Truncated));
    for t in [1, 3, 5, 6, 11, 12, 13, 0, 255] {
        assert_eq!(parse(&[t, 1, 2, 3]), Err(Error::Unsupported), "type {t}");
    }
    // An option running past the message, or past its IA_NA.
    let mut m = reply(&[opt(option::DNS_SERVERS, DNS.as_bytes())]);
    m.truncate(m.len() - 1);
    assert_eq!(parse(&m), Err(Error::Truncated));
    let mut inner = ia(1, &[ia_addr(LEASED, 1, 2, &[])]);
    inner[3] += 4; // the IA_NA claims more than it has
    assert_eq!(parse(&reply(&[inner])), Err(Error::Truncated));
    // A DUID past 130 octets or under 2; a short IA_NA or IA Address; a DNS list not of
    // whole addresses; an empty preference; a short status.
    for bad in [
        opt(option::SERVERID, &[1; MAX_DUID + 1]),
        opt(option::CLIENTID, &[1]),
        opt(option::IA_NA, &[0; 11]),
        ia(1, &[opt(option::IAADDR, &[0; 23])]),
        opt(option::DNS_SERVERS, &[0; 17]),
        opt(option::PREFERENCE, &[]),
        opt(option::STATUS_CODE, &[0]),
    ] {
        assert_eq!(
            parse(&reply(std::slice::from_ref(&bad))),
            Err(Error::Malformed),
            "{bad:?}"
        );
    }
    // Many DNS servers: the first three kept. Thousands of empty unknown options: walked.
    let many: Vec<u8> = (0..10u16)
        .flat_map(|i| Ipv6Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i).0)
        .collect();
    let m = parse(&reply(&[opt(option::DNS_SERVERS, &many)])).unwrap();
    assert_eq!(
        m.dns[2],
        Some(Ipv6Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2))
    );
    let noise: Vec<Vec<u8>> = (0..16_000).map(|_| opt(999, &[])).collect();
    assert!(parse(&reply(&noise)).unwrap().ia_na.is_none());
}
