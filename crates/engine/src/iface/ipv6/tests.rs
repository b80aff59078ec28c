//! The IPv6 link, frame in → step out: DAD's probe, solicitations answered and learned,
//! echo, the hop-limit rule, drops by reason, and Linux's captured frames replayed.

use super::*;
use crate::iface::addr6::{Event, Phase, MAX_DELAY_NS, RETRANS_NS};
use crate::iface::mld6::Report;
use crate::iface::neigh6::State;
use crate::wire::ipv6::NextHeader;

pub(crate) const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
pub(crate) const PEER_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 9]);
const SECRET: [u8; 16] = [7; 16];

pub(crate) fn peer() -> Ipv6Address {
    "fe80::9".parse().unwrap()
}

/// A link whose address passed DAD (the probe it sent checked, and the listener report
/// of its solicited-node group before it, from `::`), at time `t`, with nothing due.
fn preferred_link() -> (Link, u64) {
    let mut l = Link::new(SECRET, MAC, 0);
    let t = l.deadline();
    let target = l.addr.addr();
    let Some(Step::Send(join @ Out::Mld(_))) = l.poll(t) else {
        panic!("the group is joined first")
    };
    let mut buf = [0u8; 256];
    let n = l.write(&join, &mut buf).unwrap();
    assert_mld_join(&buf[..n], UNSPECIFIED, target.solicited_node());
    let mut t = l.deadline();
    let probe = loop {
        match l.poll(t) {
            Some(Step::Send(p @ Out::Solicit { .. })) => break p,
            Some(Step::Send(Out::Mld(_))) => {} // the join's second report
            other => panic!("{other:?}"),
        }
        t = l.deadline();
    };
    let n = l.write(&probe, &mut buf).unwrap();
    let (eth_dst, src, dst, hop, repr) = parse(&buf[..n]);
    assert_eq!(eth_dst, target.solicited_node().multicast_ethernet());
    assert_eq!((src, dst, hop), (UNSPECIFIED, target.solicited_node(), 255));
    let Icmpv6Repr::NeighborSolicit {
        target: t2,
        source_lladdr: None,
        nonce: Some(_),
    } = repr
    else {
        panic!("{repr:?}")
    };
    assert_eq!(t2, target);
    let t = t + RETRANS_NS;
    // The join's second report (within a second of the first), if it was not sent
    // before the probe.
    // Then, the address preferred, the group is reported again from it (for routers).
    let mut preferred = false;
    let mut from_us = 0;
    while let Some(step) = l.poll(t) {
        match step {
            Step::Address(Event::Preferred(a)) if a == target => preferred = true,
            Step::Send(m @ Out::Mld(_)) => {
                let n = l.write(&m, &mut buf).unwrap();
                if preferred {
                    assert_mld_join(&buf[..n], target, target.solicited_node());
                    from_us += 1;
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(preferred);
    assert_eq!(from_us, 1);
    // Its second report is due within a second: taken off the listener here, so the
    // tests see the link's other steps alone.
    let at = l.mld.deadline();
    assert!(at < t + 1_000_000_000);
    assert!(matches!(l.mld.poll(at), Some(Report::V2(_))));
    assert_eq!(l.mld.deadline(), u64::MAX, "every report of the join went");
    (l, t)
}

/// `f` is an MLDv2 report from `src` joining `group` alone: to ff02::16, hop limit 1,
/// behind a Router Alert.
pub(crate) fn assert_mld_join(f: &[u8], src: Ipv6Address, group: Ipv6Address) {
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    assert!(ip.walk().unwrap().router_alert);
    let (eth_dst, s, dst, hop, m) = parse(f);
    let all_mld = Ipv6Address::ALL_MLDV2_ROUTERS;
    assert_eq!(
        (eth_dst, s, dst, hop),
        (all_mld.multicast_ethernet(), src, all_mld, 1)
    );
    let Icmpv6Repr::MldReport { records } = m else {
        panic!("{m:?}")
    };
    let r: std::vec::Vec<_> = records.iter().map(|r| (r.record_type, r.group)).collect();
    assert_eq!(
        r,
        [(crate::wire::icmpv6::RecordType::ChangeToExclude, group)]
    );
}

/// A frame's Ethernet destination, IPv6 source, destination, hop limit and message.
pub(crate) type Parsed<'a> = (
    EthernetAddress,
    Ipv6Address,
    Ipv6Address,
    u8,
    Icmpv6Repr<'a>,
);

/// [`parse_from`] of a frame whose source MAC is ours.
pub(crate) fn parse(f: &[u8]) -> Parsed<'_> {
    assert_eq!(EthernetFrame::new_checked(f).unwrap().src_addr(), MAC);
    parse_from(f)
}

/// [`parse`] from any source MAC.
pub(crate) fn parse_from(f: &[u8]) -> Parsed<'_> {
    let eth = EthernetFrame::new_checked(f).unwrap();
    assert_eq!(eth.ethertype(), EtherType::Ipv6);
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    let r = Ipv6Repr::parse(&ip).unwrap();
    let up = ip.walk().unwrap();
    let body = &f[14 + up.offset..14 + up.offset + up.len];
    let p = Icmpv6Packet::new_checked(body).unwrap();
    let m = Icmpv6Repr::parse(&p, r.src_addr, r.dst_addr, r.hop_limit).unwrap();
    (eth.dst_addr(), r.src_addr, r.dst_addr, r.hop_limit, m)
}

/// A frame from the peer carrying `msg` (checksum right unless `bad_sum`).
pub(crate) fn frame(
    dst_mac: EthernetAddress,
    src: Ipv6Address,
    dst: Ipv6Address,
    hop_limit: u8,
    msg: &Icmpv6Repr<'_>,
    bad_sum: bool,
) -> std::vec::Vec<u8> {
    let n = msg.buffer_len();
    let mut f = std::vec![0u8; L2L3 + n];
    ethernet::Repr {
        src_addr: PEER_MAC,
        dst_addr: dst_mac,
        ethertype: EtherType::Ipv6,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: NextHeader::Icmpv6,
        payload_len: n,
        hop_limit,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut f[14..L2L3]));
    msg.emit(&mut Icmpv6Packet::new_unchecked(&mut f[L2L3..]), src, dst);
    if bad_sum {
        f[L2L3 + 2] ^= 0x55;
    }
    f
}

pub(crate) fn ns(target: Ipv6Address) -> Icmpv6Repr<'static> {
    Icmpv6Repr::NeighborSolicit {
        target,
        source_lladdr: Some(PEER_MAC),
        nonce: None,
    }
}

#[test]
fn a_solicitation_for_our_address_gets_a_solicited_advertisement_and_is_learned() {
    let (mut l, t) = preferred_link();
    let us = l.addr.addr();
    let f = frame(
        us.solicited_node().multicast_ethernet(),
        peer(),
        us.solicited_node(),
        255,
        &ns(us),
        false,
    );
    let step = l.receive(&f, t).unwrap();
    let Step::Send(out) = step else {
        panic!("{step:?}")
    };
    let mut buf = [0u8; 256];
    let n = l.write(&out, &mut buf).unwrap();
    let (eth_dst, src, dst, hop, repr) = parse(&buf[..n]);
    assert_eq!((eth_dst, src, dst, hop), (PEER_MAC, us, peer(), 255));
    assert_eq!(
        repr,
        Icmpv6Repr::NeighborAdvert {
            router: false,
            solicited: true,
            override_: true,
            target: us,
            target_lladdr: Some(MAC),
        }
    );
    // Linux's advertisement has the same shape: 32 octets, one option.
    assert_eq!(n, L2L3 + 32);
    assert_eq!(l.neigh.state(peer()), Some((State::Stale, PEER_MAC)));
}

#[test]
fn every_neighbor_discovery_message_needs_hop_limit_255() {
    let (mut l, t) = preferred_link();
    let us = l.addr.addr();
    let na = Icmpv6Repr::NeighborAdvert {
        router: false,
        solicited: true,
        override_: true,
        target: peer(),
        target_lladdr: Some(PEER_MAC),
    };
    for (m, dst) in [(ns(us), us.solicited_node()), (na, us)] {
        let dmac = if dst.is_multicast() {
            dst.multicast_ethernet()
        } else {
            MAC
        };
        let f = frame(dmac, peer(), dst, 254, &m, false);
        let f2 = frame(MAC, peer(), dst, 64, &m, false);
        assert_eq!(l.receive(&f, t), Err(Drop6::HopLimit));
        assert_eq!(l.receive(&f2, t), Err(Drop6::HopLimit));
    }
    assert!(l.neigh.is_empty());
}

#[test]
fn echo_to_our_preferred_address_is_answered() {
    let (mut l, t) = preferred_link();
    let us = l.addr.addr();
    let data = [0xab; 48];
    let req = Icmpv6Repr::EchoRequest {
        ident: 7,
        seq_no: 3,
        data: &data,
    };
    let f = frame(MAC, peer(), us, 64, &req, false);
    let Ok(Step::Send(out)) = l.receive(&f, t) else {
        panic!()
    };
    let mut buf = [0u8; 256];
    let n = l.write(&out, &mut buf).unwrap();
    let (eth_dst, src, dst, _, repr) = parse(&buf[..n]);
    assert_eq!((eth_dst, src, dst), (PEER_MAC, us, peer()));
    assert_eq!(
        repr,
        Icmpv6Repr::EchoReply {
            ident: 7,
            seq_no: 3,
            data: &data
        }
    );
    // To all-nodes: answered from our address.
    let f = frame(
        ALL_NODES.multicast_ethernet(),
        peer(),
        ALL_NODES,
        64,
        &req,
        false,
    );
    let Ok(Step::Send(out)) = l.receive(&f, t) else {
        panic!()
    };
    let n = l.write(&out, &mut buf).unwrap();
    let (_, src, dst, _, _) = parse(&buf[..n]);
    assert_eq!((src, dst), (us, peer()));
    // A bad checksum, another address, from `::`: dropped by reason.
    let bad = frame(MAC, peer(), us, 64, &req, true);
    assert_eq!(l.receive(&bad, t), Err(Drop6::Frame(Drop::Checksum)));
    let other: Ipv6Address = "fe80::77".parse().unwrap();
    let f = frame(MAC, peer(), other, 64, &req, false);
    assert_eq!(l.receive(&f, t), Err(Drop6::Frame(Drop::NotForUs)));
    let f = frame(MAC, UNSPECIFIED, us, 64, &req, false);
    assert_eq!(l.receive(&f, t), Err(Drop6::Frame(Drop::NotForUs)));
    // Too small a slot: nothing written.
    assert_eq!(l.write(&out, &mut buf[..60]), None);
}

#[test]
fn a_tentative_address_answers_nothing_and_a_duplicate_moves_it() {
    let mut l = Link::new(SECRET, MAC, 0);
    let first = l.addr.addr();
    let req = Icmpv6Repr::EchoRequest {
        ident: 1,
        seq_no: 1,
        data: &[],
    };
    let f = frame(MAC, peer(), first, 64, &req, false);
    assert_eq!(l.receive(&f, 0), Err(Drop6::Frame(Drop::NotForUs)));
    // Resolution of the tentative address by a unicast source: ignored, not answered.
    let sn = first.solicited_node();
    let f = frame(sn.multicast_ethernet(), peer(), sn, 255, &ns(first), false);
    assert_eq!(l.receive(&f, 0), Err(Drop6::Frame(Drop::NotForUs)));
    // Another node's DAD probe for it: a duplicate, and a new address to try.
    let probe = Icmpv6Repr::NeighborSolicit {
        target: first,
        source_lladdr: None,
        nonce: Some([1, 2, 3, 4, 5, 6]),
    };
    let f = frame(sn.multicast_ethernet(), UNSPECIFIED, sn, 255, &probe, false);
    let Ok(Step::Address(Event::Duplicate { taken, next })) = l.receive(&f, 0) else {
        panic!()
    };
    assert_eq!((taken, next), (first, l.addr.addr()));
    assert_ne!(next, first);
    assert!(matches!(l.addr.phase(), Phase::Tentative { sent: 0, .. }));
    // The filter follows the new address's group.
    assert!(l
        .multicast_macs()
        .contains(&next.solicited_node().multicast_ethernet()));
    assert!(l.deadline() < MAX_DELAY_NS);
}

#[test]
fn a_dad_probe_for_our_preferred_address_is_defended_to_all_nodes() {
    let (mut l, t) = preferred_link();
    let us = l.addr.addr();
    let sn = us.solicited_node();
    let probe = Icmpv6Repr::NeighborSolicit {
        target: us,
        source_lladdr: None,
        nonce: Some([1; 6]),
    };
    let f = frame(sn.multicast_ethernet(), UNSPECIFIED, sn, 255, &probe, false);
    let Ok(Step::Send(out)) = l.receive(&f, t) else {
        panic!()
    };
    let mut buf = [0u8; 256];
    let n = l.write(&out, &mut buf).unwrap();
    let (eth_dst, _, dst, _, repr) = parse(&buf[..n]);
    assert_eq!((eth_dst, dst), (ALL_NODES.multicast_ethernet(), ALL_NODES));
    assert!(matches!(
        repr,
        Icmpv6Repr::NeighborAdvert {
            solicited: false,
            override_: true,
            ..
        }
    ));
}

#[test]
fn advertisements_update_only_what_we_asked_and_resolution_solicits() {
    let (mut l, t) = preferred_link();
    let us = l.addr.addr();
    let na = Icmpv6Repr::NeighborAdvert {
        router: false,
        solicited: false,
        override_: true,
        target: peer(),
        target_lladdr: Some(PEER_MAC),
    };
    let f = frame(
        ALL_NODES.multicast_ethernet(),
        peer(),
        ALL_NODES,
        255,
        &na,
        false,
    );
    assert_eq!(l.receive(&f, t), Err(Drop6::Frame(Drop::NotForUs)));
    assert!(l.neigh.is_empty());
    // We resolve the peer: a multicast solicitation from our address with our MAC.
    assert!(matches!(
        l.neigh.lookup(peer(), t),
        crate::iface::neigh6::Resolve::Pending(Some(_))
    ));
    let out = Out::Solicit {
        target: peer(),
        unicast: None,
        dad_nonce: None,
    };
    let mut buf = [0u8; 256];
    let n = l.write(&out, &mut buf).unwrap();
    let (_, src, dst, _, repr) = parse(&buf[..n]);
    assert_eq!((src, dst), (us, peer().solicited_node()));
    assert_eq!(
        repr,
        Icmpv6Repr::NeighborSolicit {
            target: peer(),
            source_lladdr: Some(MAC),
            nonce: None,
        }
    );
    // Its solicited answer makes the entry REACHABLE.
    let na = Icmpv6Repr::NeighborAdvert {
        router: false,
        solicited: true,
        override_: true,
        target: peer(),
        target_lladdr: Some(PEER_MAC),
    };
    let f = frame(MAC, peer(), us, 255, &na, false);
    assert_eq!(l.receive(&f, t), Ok(Step::Done));
    assert_eq!(l.neigh.state(peer()), Some((State::Reachable, PEER_MAC)));
}

#[test]
fn what_is_not_served_is_dropped_by_reason() {
    let (mut l, t) = preferred_link();
    let us = l.addr.addr();
    let req = Icmpv6Repr::EchoRequest {
        ident: 1,
        seq_no: 1,
        data: &[0; 16],
    };
    let mut f = frame(MAC, peer(), us, 64, &req, false);
    // UDP and TCP are the server's, their checksum verified here (these bytes are no
    // datagram's nor segment's).
    f[14 + 6] = u8::from(NextHeader::Udp);
    assert_eq!(l.receive(&f, t), Err(Drop6::Frame(Drop::Checksum)));
    // Another upper layer (SCTP): not served.
    f[14 + 6] = 132;
    assert_eq!(l.receive(&f, t), Err(Drop6::Unserved));
    f[14 + 6] = u8::from(NextHeader::Tcp);
    assert_eq!(l.receive(&f, t), Err(Drop6::Frame(Drop::Checksum)));
    // A fragment header: refused.
    f[14 + 6] = u8::from(NextHeader::Fragment);
    assert_eq!(l.receive(&f, t), Err(Drop6::Frame(Drop::Fragment)));
    // Truncated below the IPv6 header.
    assert_eq!(l.receive(&f[..40], t), Err(Drop6::Frame(Drop::Truncated)));
    // A router solicitation (hop limit right): a host does not answer them.
    let rs = Icmpv6Repr::RouterSolicit {
        source_lladdr: Some(PEER_MAC),
    };
    let f = frame(
        ALL_NODES.multicast_ethernet(),
        peer(),
        ALL_NODES,
        255,
        &rs,
        false,
    );
    assert_eq!(l.receive(&f, t), Err(Drop6::Unserved));
    // Another host's multicast group, another EtherType.
    let f = frame(
        EthernetAddress([0x33, 0x33, 0, 0, 0, 2]),
        peer(),
        us,
        64,
        &req,
        false,
    );
    assert_eq!(l.receive(&f, t), Err(Drop6::Frame(Drop::NotForUs)));
    let mut f = frame(MAC, peer(), us, 64, &req, false);
    f[12] = 8;
    f[13] = 0;
    assert_eq!(l.receive(&f, t), Err(Drop6::Frame(Drop::NotForUs)));
}

#[test]
fn linux_captured_frames_replayed_are_taken_or_dropped_by_reason() {
    let (mut l, t) = preferred_link();
    for (i, f) in crate::capture_tests::frames(crate::capture_tests::PCAP_V6)
        .into_iter()
        .enumerate()
    {
        // None is to our MAC or groups: each is refused before any state is touched.
        let r = l.receive(f, t);
        assert!(
            matches!(r, Err(Drop6::Frame(Drop::NotForUs))),
            "frame {i}: {r:?}"
        );
    }
    // The same frames as if sent to us (our MAC as the frame's destination, all else
    // captured): parsed through every check; what they carry is not ours.
    let mut l = Link::new(SECRET, MAC, 0);
    for f in crate::capture_tests::frames(crate::capture_tests::PCAP_V6) {
        let mut f = f.to_vec();
        f[..6].copy_from_slice(&MAC.0);
        let r = l.receive(&f, t);
        assert!(
            matches!(r, Err(Drop6::Frame(Drop::NotForUs)) | Err(Drop6::Unserved)),
            "{r:?}"
        );
    }
    assert!(l.neigh.is_empty());
}

#[test]
fn without_an_address_the_cache_timers_still_run_out() {
    // DAD gives up (every identifier taken): the link has no address to solicit from.
    let mut l = Link::new(SECRET, MAC, 0);
    for _ in 0..=crate::iface::addr6::IDGEN_RETRIES {
        let a = l.addr.addr();
        l.addr.advertisement(a, 0);
    }
    assert_eq!(l.addr.phase(), Phase::Failed);
    assert!(matches!(
        l.neigh.lookup(peer(), 0),
        crate::iface::neigh6::Resolve::Pending(Some(_))
    ));
    // Nothing is sent, but the entry's solicitations run out and the deadline with them.
    let mut t = 0;
    while t < 10 * RETRANS_NS {
        t += RETRANS_NS;
        while let Some(step) = l.poll(t) {
            assert_eq!(step, Step::Done);
        }
    }
    assert_eq!(l.neigh.state(peer()), None);
    assert_eq!(l.deadline(), u64::MAX);
}

/// A router advertisement from `src` with a Prefix Information option (L and A) for
/// `prefix`/64, its source link-layer address, router lifetime 1800 s.
fn ra_frame(src: Ipv6Address, prefix: &str, opts: &mut std::vec::Vec<u8>) -> std::vec::Vec<u8> {
    ra_frame_living(src, prefix, (86400, 14400), opts)
}

/// A router advertisement from `src` for `prefix`/64 with (valid, preferred) lifetimes in
/// seconds, after the options already in `opts`.
pub(crate) fn ra_frame_living(
    src: Ipv6Address,
    prefix: &str,
    (valid, preferred): (u32, u32),
    opts: &mut std::vec::Vec<u8>,
) -> std::vec::Vec<u8> {
    let p: Ipv6Address = prefix.parse().unwrap();
    opts.extend_from_slice(&[1, 1]);
    opts.extend_from_slice(&PEER_MAC.0);
    opts.extend_from_slice(&[3, 4, 64, 0xc0]);
    opts.extend_from_slice(&valid.to_be_bytes());
    opts.extend_from_slice(&preferred.to_be_bytes());
    opts.extend_from_slice(&[0; 4]);
    opts.extend_from_slice(&p.0);
    let ra = Icmpv6Repr::RouterAdvert {
        hop_limit: 64,
        managed: false,
        other: false,
        router_lifetime: 1800,
        reachable_time: 0,
        retrans_timer: 0,
        options: crate::wire::icmpv6::NdiscOptions::parse(opts).unwrap(),
    };
    frame(
        ALL_NODES.multicast_ethernet(),
        src,
        ALL_NODES,
        255,
        &ra,
        false,
    )
}

/// SLAAC on the link: a router advertisement's prefix gives a global address, probed
/// from `::` to its own solicited-node group, then answered for (neighbour solicitations
/// with it as the target and source, echo from it); the router is a neighbour (its MAC
/// learned) and the default router. An advertisement from a global source is dropped.
#[test]
fn a_router_advertisement_gives_a_global_address_answered_after_dad() {
    let (mut l, t) = preferred_link();
    let router: Ipv6Address = "fe80::1".parse().unwrap();
    let f = ra_frame(router, "2001:db8:5::", &mut std::vec::Vec::new());
    assert_eq!(l.receive(&f, t), Ok(Step::Router));
    assert_eq!(l.slaac.default_router(), Some(router));
    assert_eq!(l.neigh.state(router).map(|s| s.1), Some(PEER_MAC));
    let g = l.slaac.prefixes[0].as_ref().unwrap().addr.addr();
    assert_eq!(&g.0[..6], &[0x20, 0x01, 0x0d, 0xb8, 0, 5]);
    // Tentative: a solicitation for it gets nothing yet; DAD's probe goes.
    let f = frame(MAC, peer(), g, 255, &ns(g), false);
    assert_eq!(l.receive(&f, t), Err(Drop6::Frame(Drop::NotForUs)));
    let mut buf = [0u8; 256];
    let mut now;
    let mut joins = std::vec::Vec::new();
    let probe = loop {
        now = l.deadline();
        match l.poll(now) {
            Some(Step::Send(o @ Out::Solicit { .. })) => break o,
            Some(Step::Send(m @ Out::Mld(_))) => joins.push(m),
            Some(_) => continue,
            None => panic!("no probe"),
        }
    };
    // Its solicited-node group was joined before the probe (from our link-local address).
    let n = l.write(&joins[0], &mut buf).unwrap();
    assert_mld_join(&buf[..n], l.addr.addr(), g.solicited_node());
    let n = l.write(&probe, &mut buf).unwrap();
    let (eth_dst, src, dst, _, m) = parse(&buf[..n]);
    assert_eq!(
        (eth_dst, src, dst),
        (
            g.solicited_node().multicast_ethernet(),
            UNSPECIFIED,
            g.solicited_node()
        )
    );
    assert!(matches!(m, Icmpv6Repr::NeighborSolicit { target, nonce: Some(_), .. } if target == g));
    let mut news = None;
    while let Some(s) = l.poll(now + RETRANS_NS) {
        if let Step::Address(e) = s {
            news = Some(e);
        }
    }
    assert_eq!(news, Some(Event::Preferred(g)));
    let now = now + RETRANS_NS;
    // Its solicited-node group's MAC is on the filter; a solicitation is answered.
    assert!(l
        .multicast_macs()
        .contains(&g.solicited_node().multicast_ethernet()));
    let f = frame(
        g.solicited_node().multicast_ethernet(),
        peer(),
        g.solicited_node(),
        255,
        &ns(g),
        false,
    );
    let Ok(Step::Send(out)) = l.receive(&f, now) else {
        panic!()
    };
    let n = l.write(&out, &mut buf).unwrap();
    let (_, src, dst, _, m) = parse(&buf[..n]);
    assert_eq!((src, dst), (g, peer()));
    assert!(matches!(m, Icmpv6Repr::NeighborAdvert { target, solicited: true, .. } if target == g));
    // Echo to it: from it.
    let req = Icmpv6Repr::EchoRequest {
        ident: 1,
        seq_no: 2,
        data: &[5; 8],
    };
    let f = frame(MAC, "2001:db8:9::1".parse().unwrap(), g, 64, &req, false);
    let Ok(Step::Send(out)) = l.receive(&f, now) else {
        panic!()
    };
    let n = l.write(&out, &mut buf).unwrap();
    assert_eq!(parse(&buf[..n]).1, g);
    // A router advertisement from a global source: not a router's.
    let f = ra_frame(
        "2001:db8::1".parse().unwrap(),
        "2001:db8:6::",
        &mut std::vec::Vec::new(),
    );
    assert_eq!(l.receive(&f, now), Err(Drop6::Frame(Drop::Malformed)));
    assert_eq!(l.slaac.prefixes.iter().flatten().count(), 1);
}

/// The link answers Linux's captured queries (a bridge as querier, `testdata/mld.pcap`):
/// an MLDv2 general query with our group as `MODE_IS_EXCLUDE` within its 10 s, an MLDv1
/// one with an MLDv1 report to the group; a query without hop limit 1 or without the
/// Router Alert is dropped (RFC 3810 §6.2).
#[test]
fn captured_queries_are_answered_and_bad_ones_dropped() {
    static MLD: &[u8] = include_bytes!("../../../testdata/mld.pcap");
    let frames = crate::capture_tests::frames(MLD);
    let (v2q, v1q) = (frames[8].to_vec(), frames[12].to_vec());
    let (mut l, t) = preferred_link();
    let us = l.addr.addr();
    let group = us.solicited_node();
    let mut buf = [0u8; 256];
    // Hop limit 2, or the Router Alert option turned into an unknown skippable one.
    let mut hop = v2q.clone();
    hop[21] = 2;
    assert_eq!(l.receive(&hop, t), Err(Drop6::Frame(Drop::Malformed)));
    let mut no_ra = v2q.clone();
    no_ra[56] = 0x1e;
    assert_eq!(l.receive(&no_ra, t), Err(Drop6::Frame(Drop::Malformed)));
    assert_eq!(l.mld.deadline(), u64::MAX);

    assert_eq!(l.receive(&v2q, t), Ok(Step::MldQuery));
    let at = l.mld.deadline();
    assert!(at < t + 10_000_000_000);
    let Some(Step::Send(out @ Out::Mld(_))) = l.poll(at) else {
        panic!("no report")
    };
    let n = l.write(&out, &mut buf).unwrap();
    let (eth_dst, src, dst, hop, m) = parse(&buf[..n]);
    let all_mld = Ipv6Address::ALL_MLDV2_ROUTERS;
    assert_eq!(
        (eth_dst, src, dst, hop),
        (all_mld.multicast_ethernet(), us, all_mld, 1)
    );
    let Icmpv6Repr::MldReport { records } = m else {
        panic!("{m:?}")
    };
    let r: std::vec::Vec<_> = records.iter().map(|r| (r.record_type, r.group)).collect();
    assert_eq!(r, [(crate::wire::icmpv6::RecordType::ModeIsExclude, group)]);

    assert_eq!(l.receive(&v1q, at), Ok(Step::MldQuery));
    assert!(l.mld.v1(at));
    let at = l.mld.deadline();
    let Some(Step::Send(out @ Out::Mld(Report::V1(g)))) = l.poll(at) else {
        panic!("no MLDv1 report")
    };
    assert_eq!(g, group);
    let n = l.write(&out, &mut buf).unwrap();
    assert_eq!(n, 14 + 40 + 8 + 24);
    let (eth_dst, src, dst, hop, m) = parse(&buf[..n]);
    assert_eq!(
        (eth_dst, src, dst, hop),
        (group.multicast_ethernet(), us, group, 1)
    );
    assert!(matches!(
        m,
        Icmpv6Repr::Other {
            msg_type: crate::wire::icmpv6::Message::MldV1Report,
            ..
        }
    ));
}

/// A configured address another node probes for while ours is tentative: given up with
/// `InUse` (never replaced), and its group no longer listened to (a leave reported).
#[test]
fn a_configured_address_held_elsewhere_is_given_up_and_its_group_left() {
    let (mut l, t) = preferred_link();
    let a: Ipv6Address = "2001:db8:7::80".parse().unwrap();
    l.slaac.configure(a, t);
    assert!(l.groups().contains(&Some(a.solicited_node())));
    let probe = Icmpv6Repr::NeighborSolicit {
        target: a,
        source_lladdr: None,
        nonce: Some([1; 6]),
    };
    let sn = a.solicited_node();
    let f = frame(sn.multicast_ethernet(), UNSPECIFIED, sn, 255, &probe, false);
    assert_eq!(l.receive(&f, t), Ok(Step::Address(Event::InUse(a))));
    assert!(!l.groups().contains(&Some(a.solicited_node())));
    assert!(!l.multicast_macs().contains(&sn.multicast_ethernet()));
    assert_eq!(l.slot_of(a), None);
}

/// A UDP datagram from the peer's MAC: `src`:`sport` to `dst`:`dport`, checksum right.
fn udp6_frame(
    src: Ipv6Address,
    dst: Ipv6Address,
    ports: (u16, u16),
    payload: &[u8],
) -> std::vec::Vec<u8> {
    let udp_len = 8 + payload.len();
    let mut f = std::vec![0u8; L2L3 + udp_len];
    ethernet::Repr {
        src_addr: PEER_MAC,
        dst_addr: MAC,
        ethertype: EtherType::Ipv6,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: NextHeader::Udp,
        payload_len: udp_len,
        hop_limit: 64,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut f[14..L2L3]));
    let u = &mut f[L2L3..];
    u[..2].copy_from_slice(&ports.0.to_be_bytes());
    u[2..4].copy_from_slice(&ports.1.to_be_bytes());
    u[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    u[8..].copy_from_slice(payload);
    let ph = checksum::pseudo_header_v6(&src.0, &dst.0, 17, udp_len as u32);
    let s = !checksum::fold(checksum::accumulate(ph, u));
    u[6..8].copy_from_slice(&s.to_be_bytes());
    f
}

/// A server's Advertise (`kind` 2) or Reply (7) for transaction `xid`, offering `addr`.
fn dhcp6_answer(kind: u8, xid: &[u8], addr: Ipv6Address) -> std::vec::Vec<u8> {
    let opt = |code: u16, body: &[u8]| {
        let mut v = code.to_be_bytes().to_vec();
        v.extend_from_slice(&(body.len() as u16).to_be_bytes());
        v.extend_from_slice(body);
        v
    };
    let mut m = std::vec![kind];
    m.extend_from_slice(xid);
    m.extend(opt(
        1,
        crate::wire::dhcpv6::Duid::link_layer(MAC.0).as_bytes(),
    ));
    m.extend(opt(2, &[0, 1, 0, 1, 9, 9, 9, 9]));
    let mut ia_addr = addr.0.to_vec();
    ia_addr.extend_from_slice(&[0, 0, 1, 0, 0, 0, 2, 0]); // 256 s, 512 s
    let mut ia = std::vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    ia.extend(opt(5, &ia_addr));
    m.extend(opt(3, &ia));
    m.extend(opt(7, &[255]));
    m
}

/// A router advertisement from `router` with the M flag (and O when `other`), no prefix.
fn managed_ra_frame(router: Ipv6Address, other: bool) -> std::vec::Vec<u8> {
    let mut opts = std::vec![1, 1];
    opts.extend_from_slice(&PEER_MAC.0);
    let ra = Icmpv6Repr::RouterAdvert {
        hop_limit: 64,
        managed: true,
        other,
        router_lifetime: 1800,
        reachable_time: 0,
        retrans_timer: 0,
        options: crate::wire::icmpv6::NdiscOptions::parse(&opts).unwrap(),
    };
    frame(
        ALL_NODES.multicast_ethernet(),
        router,
        ALL_NODES,
        255,
        &ra,
        false,
    )
}

/// Runs the link's clock until its DHCPv6 client sends; returns the time and the frame.
fn next_dhcp6(l: &mut Link) -> (u64, std::vec::Vec<u8>) {
    let mut buf = [0u8; 512];
    for _ in 0..50 {
        let now = l.deadline();
        if let Some(Step::Send(o @ Out::Dhcp6 { .. })) = l.poll(now) {
            let n = l.write(&o, &mut buf).unwrap();
            return (now, buf[..n].to_vec());
        }
    }
    panic!("no DHCPv6 message")
}

/// The M flag of a router advertisement starts DHCPv6: a Solicit from the link-local
/// address to ff02::1:2 (hop limit 1, ports 546 → 547, checksum right); the server's
/// Advertise brings a Request; its Reply's address is held, checked by DAD, then ours in
/// use (answered). An answer from a global source, or to another transaction, is not
/// taken.
#[test]
fn a_managed_router_advertisement_leases_an_address_over_dhcpv6() {
    let (mut l, t) = preferred_link();
    let router: Ipv6Address = "fe80::1".parse().unwrap();
    let f = managed_ra_frame(router, true);
    assert_eq!(l.receive(&f, t), Ok(Step::Router));
    let (now, f) = next_dhcp6(&mut l);
    let ll = l.addr.addr();
    let servers: Ipv6Address = "ff02::1:2".parse().unwrap();
    assert_eq!(&f[..6], &servers.multicast_ethernet().0);
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    let r = Ipv6Repr::parse(&ip).unwrap();
    assert_eq!((r.src_addr, r.dst_addr, r.hop_limit), (ll, servers, 1));
    assert_eq!(r.next_header, NextHeader::Udp);
    let u = &f[L2L3..];
    assert_eq!(&u[..4], &[2, 34, 2, 35]);
    let ph = checksum::pseudo_header_v6(&ll.0, &servers.0, 17, u.len() as u32);
    assert_eq!(checksum::fold(checksum::accumulate(ph, u)), 0xffff);
    assert_eq!(u[8], 1, "a Solicit");
    let xid = u[9..12].to_vec();
    let leased: Ipv6Address = "2001:db8:5::185".parse().unwrap();
    // Not taken: from a global source; another transaction.
    let g = udp6_frame(
        "2001:db8::1".parse().unwrap(),
        ll,
        (547, 546),
        &dhcp6_answer(2, &xid, leased),
    );
    assert_eq!(l.receive(&g, now), Err(Drop6::Frame(Drop::NotForUs)));
    let other = udp6_frame(router, ll, (547, 546), &dhcp6_answer(2, &[1, 2, 3], leased));
    assert_eq!(l.receive(&other, now), Ok(Step::Done));
    assert_eq!(l.dhcp6.refused.unexpected, 1);
    let adv = udp6_frame(router, ll, (547, 546), &dhcp6_answer(2, &xid, leased));
    assert_eq!(l.receive(&adv, now), Ok(Step::Done));
    let (now, f) = next_dhcp6(&mut l);
    let u = &f[L2L3..];
    assert_eq!(u[8], 3, "a Request");
    let reply = udp6_frame(router, ll, (547, 546), &dhcp6_answer(7, &u[9..12], leased));
    assert_eq!(l.receive(&reply, now), Ok(Step::Done));
    // Held, tentative: its group listened to, DAD's probe, then preferred and served.
    let p = l.slaac.holding(leased).expect("the lease is held");
    assert!(p.leased);
    assert_eq!(p.valid_until, now + 512 * 1_000_000_000);
    assert!(l.groups().contains(&Some(leased.solicited_node())));
    assert_eq!(l.slot_of(leased), None, "tentative");
    let mut news = None;
    for _ in 0..20 {
        let at = l.deadline();
        if let Some(Step::Address(e)) = l.poll(at) {
            news = Some(e);
            break;
        }
    }
    assert_eq!(news, Some(Event::Preferred(leased)));
    assert!(l.slot_of(leased).is_some());
    assert!(l.slaac.addresses().any(|a| a == leased));
}

/// A leased address another node answers for during its DAD is given up and declined to
/// the client, which asks again only a minute later.
#[test]
fn a_leased_address_held_elsewhere_is_declined() {
    let (mut l, t) = preferred_link();
    let leased: Ipv6Address = "2001:db8:5::185".parse().unwrap();
    let router: Ipv6Address = "fe80::1".parse().unwrap();
    let f = managed_ra_frame(router, false);
    l.receive(&f, t).unwrap();
    let ll = l.addr.addr();
    let answer_next = |l: &mut Link, kind: u8| {
        let (now, sent) = next_dhcp6(l);
        let xid = &sent[L2L3 + 9..L2L3 + 12];
        let f = udp6_frame(router, ll, (547, 546), &dhcp6_answer(kind, xid, leased));
        assert_eq!(l.receive(&f, now), Ok(Step::Done));
        now
    };
    answer_next(&mut l, 2);
    let now = answer_next(&mut l, 7);
    assert_eq!(l.dhcp6.phase(), super::super::dhcp6::Phase::Bound);
    // Another node says it holds the address (its advertisement, unsolicited).
    let na = Icmpv6Repr::NeighborAdvert {
        router: false,
        solicited: false,
        override_: true,
        target: leased,
        target_lladdr: Some(PEER_MAC),
    };
    let f = frame(
        ALL_NODES.multicast_ethernet(),
        peer(),
        ALL_NODES,
        255,
        &na,
        false,
    );
    assert_eq!(l.receive(&f, now), Ok(Step::Address(Event::InUse(leased))));
    assert_eq!(l.dhcp6.phase(), super::super::dhcp6::Phase::Idle);
    assert_eq!(l.dhcp6.lease(), None);
    let next = l.dhcp6.deadline();
    assert!(
        next >= now + super::super::dhcp6::DECLINED_WAIT_NS,
        "{next} {now}"
    );
}

/// Runs the link's clock from `t` until nothing is due within 5 s; returns the time.
fn settle(l: &mut Link, mut t: u64) -> u64 {
    while l.deadline() <= t + 5_000_000_000 {
        t = t.max(l.deadline());
        while l.poll(t).is_some() {}
    }
    t
}

/// Peers beyond the link (RFC 4943: a host assumes nothing on-link): with a configured
/// /64 and no router, a datagram or echo request from another prefix is dropped as
/// `NoRoute`; one from the prefix or a link-local address is taken. A router advertising
/// itself (lifetime above 0) opens the rest, its lifetime 0 closes it again; `--gw6`'s
/// router opens it for good. A follower does what its owner's published router says.
#[test]
fn peers_beyond_the_link_are_answered_only_with_a_router() {
    let (mut l, t) = preferred_link();
    let a: Ipv6Address = "2001:db8:7::80".parse().unwrap();
    l.slaac.configure(a, t);
    l.route(None, Some((a, 64)));
    let t = settle(&mut l, t);
    assert_eq!(l.slot_of(a), Some(1));
    let far: Ipv6Address = "2001:db8:99::5".parse().unwrap();
    let near: Ipv6Address = "2001:db8:7::5".parse().unwrap();
    let udp = |src| udp6_frame(src, a, (4000, 9), b"hi");
    let req = Icmpv6Repr::EchoRequest {
        ident: 1,
        seq_no: 2,
        data: &[5; 8],
    };
    let echo = |src| frame(MAC, src, a, 64, &req, false);
    let no_route = Err(Drop6::Frame(Drop::NoRoute));
    let taken = |r: Result<Step<'_>, Drop6>| matches!(r, Ok(Step::Udp { .. } | Step::Send(_)));
    assert_eq!(l.router(), None);
    assert_eq!(l.receive(&udp(far), t), no_route);
    assert_eq!(l.receive(&echo(far), t), no_route);
    for src in [near, peer()] {
        assert!(taken(l.receive(&udp(src), t)), "{src}");
        assert!(taken(l.receive(&echo(src), t)), "{src}");
    }
    // To our link-local address only a sender on the link comes (no router forwards it),
    // whatever its source.
    let ll = l.addr.addr();
    assert!(taken(l.receive(&udp6_frame(far, ll, (4000, 9), b"hi"), t)));
    assert!(taken(l.receive(&frame(MAC, far, ll, 64, &req, false), t)));
    // A router advertises itself (its prefix makes no address: one is configured).
    let router: Ipv6Address = "fe80::1".parse().unwrap();
    let ra = ra_frame(router, "2001:db8:5::", &mut std::vec::Vec::new());
    assert_eq!(l.receive(&ra, t), Ok(Step::Router));
    assert_eq!(l.router(), Some(router));
    assert!(taken(l.receive(&udp(far), t)));
    assert!(taken(l.receive(&echo(far), t)));
    // A follower follows the owner's published router.
    let mut f = Link::new(SECRET, MAC, 0);
    f.follow(l.slots(), None);
    assert_eq!(f.receive(&udp(far), t), no_route);
    assert!(taken(f.receive(&udp(near), t)));
    f.follow(l.slots(), l.router());
    assert!(taken(f.receive(&udp(far), t)));
    assert!(taken(f.receive(&echo(far), t)));
    // Its lifetime 0: no router any more.
    let mut ra = ra_frame(router, "2001:db8:5::", &mut std::vec::Vec::new());
    ra[L2L3 + 6..L2L3 + 8].copy_from_slice(&[0, 0]);
    let ph = checksum::pseudo_header_v6(&router.0, &ALL_NODES.0, 58, (ra.len() - L2L3) as u32);
    ra[L2L3 + 2..L2L3 + 4].copy_from_slice(&[0, 0]);
    let sum = !checksum::fold(checksum::accumulate(ph, &ra[L2L3..]));
    ra[L2L3 + 2..L2L3 + 4].copy_from_slice(&sum.to_be_bytes());
    assert_eq!(l.receive(&ra, t), Ok(Step::Router));
    assert_eq!(l.router(), None);
    assert_eq!(l.receive(&udp(far), t), no_route);
    // `--gw6`: a router whatever is advertised.
    let gw: Ipv6Address = "fe80::fe".parse().unwrap();
    l.route(Some(gw), Some((a, 64)));
    assert_eq!(l.router(), Some(gw));
    assert!(taken(l.receive(&udp(far), t)));
    // Whatever routers advertise: one advertising itself and withdrawing changes nothing.
    let again = ra_frame(router, "2001:db8:5::", &mut std::vec::Vec::new());
    assert_eq!(l.receive(&again, t), Ok(Step::Router));
    assert_eq!(l.receive(&ra, t), Ok(Step::Router));
    assert_eq!(l.router(), Some(gw));
    assert!(taken(l.receive(&udp(far), t)));
    // A wider configured prefix is on the link whole.
    l.route(None, Some((a, 48)));
    assert!(taken(
        l.receive(&udp("2001:db8:7:ff::1".parse().unwrap()), t)
    ));
    assert_eq!(l.receive(&udp(far), t), no_route);
}

/// dnsmasq's router advertisement, captured (`testdata/dnsmasq-ra.pcap`: `dnsmasq
/// --enable-ra --dhcp-range=2001:db8:1::,ra-only,64,1h
/// --dhcp-option=option6:dns-server,[2001:db8:1::53]` on one end of a veth pair, `tcpdump`
/// on the other): its prefix, MTU and source link-layer address, and the DNS server of
/// its RDNSS option (RFC 8106) for its lifetime (3600 s).
#[test]
fn dnsmasqs_captured_advertisement_gives_its_dns_server() {
    static RA: &[u8] = include_bytes!("../../../testdata/dnsmasq-ra.pcap");
    let frames = crate::capture_tests::frames(RA);
    assert!(!frames.is_empty());
    let (mut l, t) = preferred_link();
    assert_eq!(l.receive(frames[0], t), Ok(Step::Router));
    let dns: Ipv6Address = "2001:db8:1::53".parse().unwrap();
    assert_eq!(l.dns_servers().collect::<std::vec::Vec<_>>(), [dns]);
    assert_eq!(l.slaac.mtu, Some(1500));
    assert!(l.router().is_some());
    // Gone when its lifetime ends.
    let end = t + 3601 * 1_000_000_000;
    while l.poll(end).is_some() {}
    assert_eq!(l.dns_servers().count(), 0);
}
