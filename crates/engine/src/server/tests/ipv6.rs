//! TCP over IPv6: a client on the link reaches the server at its link-local address once
//! DAD passed; segments carry IPv6's MSS (1440), offloaded only to a NIC that segments
//! IPv6 too (`NicCaps::tso6`); the per-address limit
//! counts a link-local client by its address (an off-link one by its /64, `per_ip`'s tests); a segment from a mapped, multicast or loopback source, or to a tentative
//! address, opens nothing; a closed port answers with a RST.

use super::*;
use crate::wire::{Ipv6Address, Ipv6Packet, Ipv6Repr};

const PEER: Ipv6Address = Ipv6Address::new(0xfe80, 0, 0, 0, 0, 0, 0, 9);

fn server6(max_per_ip: usize) -> (Server<TestSite>, FakeNic, Ipv6Address, u64) {
    server6_with(max_per_ip, |_| {})
}

/// [`server6`] with `more` done to the configuration first.
fn server6_with(
    max_per_ip: usize,
    more: impl FnOnce(&mut Config),
) -> (Server<TestSite>, FakeNic, Ipv6Address, u64) {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(max_per_ip);
    cfg.syn_backlog = Some(8);
    cfg.ipv6 = true;
    cfg.ipv6_secret = Some([9; 16]);
    more(&mut cfg);
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    // Offload offered: IPv4 would use it, IPv6 must not.
    let mut nic = FakeNic::new(SERVER_MAC);
    nic.tso_max = 65535;
    let mut t = 0;
    while t < 3_000_000_000 {
        s.poll(&mut nic, &ManualClock(t), &mut NoLog);
        t += 100_000_000;
    }
    nic.tx.outbox.clear();
    let (us, phase) = s.ipv6_address().unwrap();
    assert_eq!(phase, crate::iface::addr6::Phase::Preferred);
    (s, nic, us, t)
}

/// A client → server frame's Ethernet and IPv6 headers for `len` bytes of `next_header`
/// from `src` to `dst`, the payload zero behind them.
fn frame6(
    src: Ipv6Address,
    dst: Ipv6Address,
    next_header: crate::wire::Ipv6NextHeader,
    len: usize,
) -> Vec<u8> {
    let mut f = vec![0u8; 54 + len];
    f[..6].copy_from_slice(&SERVER_MAC.0);
    f[6..12].copy_from_slice(&CLIENT_MAC.0);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header,
        payload_len: len,
        hop_limit: 64,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut f[14..54]));
    f
}

/// A client → server TCP segment over IPv6 from `src` to `dst`.
#[allow(clippy::too_many_arguments)]
fn tcp6(
    src: Ipv6Address,
    dst: Ipv6Address,
    (sport, dport): (u16, u16),
    seq: u32,
    ack: Option<u32>,
    flags: wtcp::Flags,
    payload: &[u8],
    mss: Option<u16>,
) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: sport,
        dst_port: dport,
        seq_number: seq,
        ack_number: ack,
        flags,
        window_len: 65535,
        max_seg_size: mss,
        window_scale: None,
        sack_permitted: false,
        timestamps: None,
    };
    let hl = repr.header_len();
    let len = hl + payload.len();
    let mut f = frame6(src, dst, crate::wire::Ipv6NextHeader::Tcp, len);
    repr.emit_header(&mut f[54..]);
    f[54 + hl..].copy_from_slice(payload);
    let acc = crate::wire::checksum::pseudo_header_v6(&src.0, &dst.0, 6, len as u32);
    let sum = !crate::wire::checksum::fold(crate::wire::checksum::accumulate(acc, &f[54..]));
    f[54 + 16..54 + 18].copy_from_slice(&sum.to_be_bytes());
    f
}

/// A server → client IPv6 segment, its checksum verified.
struct Seg6 {
    src: Ipv6Address,
    dst: Ipv6Address,
    dst_mac: EthernetAddress,
    seq: u32,
    ack: Option<u32>,
    flags: wtcp::Flags,
    mss: Option<u16>,
    payload: Vec<u8>,
    frame_len: usize,
}

fn parse6(f: &[u8]) -> Seg6 {
    let eth = EthernetFrame::new_checked(f).unwrap();
    assert_eq!(eth.ethertype(), EtherType::Ipv6, "an IPv6 frame");
    assert_eq!(eth.src_addr(), SERVER_MAC);
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    let r = Ipv6Repr::parse(&ip).unwrap();
    let up = ip.walk().unwrap();
    assert_eq!(up.protocol, crate::wire::Ipv6NextHeader::Tcp);
    assert_eq!(r.hop_limit, 64);
    let body = ip.upper_payload(&up);
    let sum = crate::wire::checksum::accumulate(ip.pseudo_header(&up), body);
    assert_eq!(
        crate::wire::checksum::fold(sum),
        0xffff,
        "TCP checksum over IPv6"
    );
    let p = TcpPacket::new_checked(body).unwrap();
    let (seg, ok) = crate::iface::tcp_repr(&p, body);
    assert!(ok);
    Seg6 {
        src: r.src_addr,
        dst: r.dst_addr,
        dst_mac: eth.dst_addr(),
        seq: seg.seq_number,
        ack: seg.ack_number,
        flags: seg.flags,
        mss: seg.options.mss,
        payload: seg.payload.to_vec(),
        frame_len: f.len(),
    }
}

/// Polls once at `t` and returns what was sent, parsed.
fn round(s: &mut Server<impl Lookup<'static>>, nic: &mut FakeNic, t: u64) -> Vec<Seg6> {
    s.poll(nic, &ManualClock(t), &mut NoLog);
    nic.tx.outbox.drain(..).map(|f| parse6(&f)).collect()
}

#[test]
fn a_client_on_the_link_fetches_a_mebibyte_over_ipv6_in_1440_byte_segments() {
    // A NIC that segments TCP over IPv4 only: every segment its own frame.
    let st = fetch_a_mebibyte(false);
    assert_eq!(st.tx_tso_frames, 0, "no offload over IPv6 on this NIC");
    // One that segments IPv6 too: super-frames, cut into the same 1440-byte segments.
    let st = fetch_a_mebibyte(true);
    assert!(st.tx_tso_frames > 0, "offloaded over IPv6");
}

/// The mebibyte over IPv6 (the NIC offering segmentation offload, over IPv6 too when
/// `tso6`), every byte and every segment checked; the server's counters after.
fn fetch_a_mebibyte(tso6: bool) -> crate::stats::Stats {
    let (mut s, mut nic, us, t) = server6(8);
    nic.tso6 = tso6;
    let ports = (40000, 80);
    // The client offers IPv4's MSS: over IPv6 on a 1500-byte link, 1440 is the most.
    nic.rx.inbox.push_back(tcp6(
        PEER,
        us,
        ports,
        1000,
        None,
        wtcp::Flags::SYN,
        &[],
        Some(1460),
    ));
    let out = round(&mut s, &mut nic, t);
    assert_eq!(out.len(), 1);
    let sa = &out[0];
    assert!(sa.flags.syn && sa.flags.ack);
    assert_eq!((sa.src, sa.dst, sa.dst_mac), (us, PEER, CLIENT_MAC));
    assert_eq!(sa.ack, Some(1001));
    assert_eq!(sa.mss, Some(1440), "IPv6's MSS announced");
    let iss = sa.seq;
    let req = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    nic.rx.inbox.push_back(tcp6(
        PEER,
        us,
        ports,
        1001,
        Some(iss + 1),
        wtcp::Flags::ACK,
        &[],
        None,
    ));
    nic.rx.inbox.push_back(tcp6(
        PEER,
        us,
        ports,
        1001,
        Some(iss + 1),
        wtcp::Flags::ACK,
        req,
        None,
    ));
    let out = round(&mut s, &mut nic, t + 1_000_000);
    let cli = (ports.0, 1001 + req.len() as u32);
    receive_big(&mut s, &mut nic, us, cli, iss, out, t + 1_000_000, 1440);
    let st = s.stats();
    assert_eq!((st.tcp_accepted, st.tcp_established), (1, 1));
    st.clone()
}

/// `--ip6 ADDR/PREFIX` with no router advertised: without `--gw6` a SYN from beyond the
/// link is dropped and counted as no route, and the operator is told, once the address
/// is held and the router solicitations went unanswered (not before), that only peers on
/// the link are answered; a peer in the prefix is answered. With `--gw6` the router is
/// told at once and the same SYN is answered.
#[test]
fn without_a_router_only_peers_on_the_link_are_answered() {
    use crate::iface::addr6::Event;
    let g: Ipv6Address = "2001:db8:7::80".parse().unwrap();
    let far: Ipv6Address = "2001:db8:99::5".parse().unwrap();
    let near: Ipv6Address = "2001:db8:7::5".parse().unwrap();
    for gw in [None, Some("fe80::1".parse().unwrap())] {
        let (mut s, mut nic, _, mut t) = server6_with(8, |c| {
            c.ipv6_static = Some((g, 64));
            c.ipv6_gateway = gw;
        });
        let mut news: Vec<Event> = std::iter::from_fn(|| s.take_ipv6_news()).collect();
        assert!(news.contains(&Event::Preferred(g)), "{news:?}");
        assert!(
            !news.contains(&Event::NoRouter),
            "not while routers are asked"
        );
        // Three router solicitations 4 s apart, unanswered, and a second after the last.
        while t < 14_000_000_000 {
            t += 100_000_000;
            s.poll(&mut nic, &ManualClock(t), &mut NoLog);
        }
        nic.tx.outbox.clear();
        news.extend(std::iter::from_fn(|| s.take_ipv6_news()));
        let told = match gw {
            None => Event::NoRouter,
            Some(addr) => Event::Router {
                addr,
                configured: true,
            },
        };
        assert_eq!(news.iter().filter(|e| **e == told).count(), 1, "{news:?}");
        let syn = |src, port| tcp6(src, g, (port, 80), 7, None, wtcp::Flags::SYN, &[], None);
        nic.rx.inbox.push_back(syn(far, 47000));
        let out = round(&mut s, &mut nic, t);
        match gw {
            None => {
                assert!(out.is_empty(), "{gw:?}");
                assert_eq!(s.stats().drop_no_route, 1);
            }
            Some(_) => {
                assert!(out.len() == 1 && out[0].flags.syn && out[0].dst == far);
                assert_eq!(s.stats().drop_no_route, 0);
            }
        }
        nic.rx.inbox.push_back(syn(near, 47001));
        let out = round(&mut s, &mut nic, t + 1);
        assert!(
            out.len() == 1 && out[0].flags.syn && out[0].dst == near,
            "{gw:?}"
        );
        assert_eq!(s.take_ipv6_news(), None, "told once");
    }
}

/// A connection to a SLAAC address whose valid lifetime ends is freed then (no RST: the
/// address is no longer ours to send from), so a prefix advertised later in its slot does
/// not inherit it; the peer's next segment finds nothing. A connection to the link-local
/// address lives on.
#[test]
fn connections_to_an_expired_address_are_freed() {
    let (mut s, mut nic, ll, mut t) = server6(8);
    let router: Ipv6Address = "fe80::1".parse().unwrap();
    let ra = crate::iface::ipv6::tests::ra_frame_living(
        router,
        "2001:db8:5::",
        (30, 20),
        &mut Vec::new(),
    );
    nic.rx.inbox.push_back(ra);
    // Only TCP is parsed here: the link's own frames (DAD, solicitations) are dropped.
    let tcp_round = |s: &mut Server<TestSite>, nic: &mut FakeNic, t: u64| -> Vec<Seg6> {
        s.poll(nic, &ManualClock(t), &mut NoLog);
        let out: Vec<_> = nic.tx.outbox.drain(..).collect();
        out.iter()
            .filter(|f| f[20] == 6)
            .map(|f| parse6(f))
            .collect()
    };
    let end = t + 3_000_000_000;
    while t < end {
        tcp_round(&mut s, &mut nic, t);
        t += 100_000_000;
    }
    let g = s.ipv6_globals().next().expect("a global address after DAD");
    let far: Ipv6Address = "2001:db8:9::7".parse().unwrap();
    for (src, dst, port) in [(far, g, 40001), (PEER, ll, 40002)] {
        nic.rx.inbox.push_back(tcp6(
            src,
            dst,
            (port, 80),
            1000,
            None,
            wtcp::Flags::SYN,
            &[],
            Some(1440),
        ));
        let out = tcp_round(&mut s, &mut nic, t);
        assert!(out.iter().any(|o| o.flags.syn && o.dst == src));
        let iss = out.iter().find(|o| o.dst == src).unwrap().seq;
        nic.rx.inbox.push_back(tcp6(
            src,
            dst,
            (port, 80),
            1001,
            Some(iss + 1),
            wtcp::Flags::ACK,
            &[],
            None,
        ));
        tcp_round(&mut s, &mut nic, t);
    }
    assert_eq!(s.active(), 2);
    // 30 s after the advertisement the address expires (the idle timeout is longer:
    // the link-local connection stays).
    let end = t + 31_000_000_000;
    let mut rst = 0;
    while t < end {
        rst += tcp_round(&mut s, &mut nic, t)
            .iter()
            .filter(|o| o.flags.rst)
            .count();
        t += 500_000_000;
    }
    assert_eq!(rst, 0, "nothing sent from an address that is gone");
    assert_eq!(s.ipv6_globals().count(), 0);
    let st = s.stats();
    assert_eq!(st.tcp_addr_expired, 1);
    assert_eq!(s.active(), 1, "the link-local connection lives on");
}

#[test]
fn the_per_address_limit_counts_a_link_local_client_by_its_address() {
    // Every host on the link shares fe80::/64: counted by /64 (as off-link clients are),
    // one of them would lock the others out.
    let (mut s, mut nic, us, t) = server6(2);
    let a = Ipv6Address::new(0xfe80, 0, 0, 0, 0xaa, 0, 0, 1);
    let b = Ipv6Address::new(0xfe80, 0, 0, 0, 0xaa, 0, 0, 2);
    for (i, src) in [a, a, a, b].into_iter().enumerate() {
        let f = tcp6(
            src,
            us,
            (41000 + i as u16, 80),
            7,
            None,
            wtcp::Flags::SYN,
            &[],
            Some(1440),
        );
        nic.rx.inbox.push_back(f);
    }
    let out = round(&mut s, &mut nic, t);
    let flags: Vec<_> = out.iter().map(|o| (o.flags.syn, o.flags.rst)).collect();
    assert_eq!(
        flags,
        [(true, false), (true, false), (false, true), (true, false)]
    );
    assert_eq!(s.stats().tcp_per_ip_refused, 1);
}

#[test]
fn mapped_multicast_and_loopback_sources_and_unserved_ports() {
    let (mut s, mut nic, us, t) = server6(8);
    let syn = |src| {
        tcp6(
            src,
            us,
            (42000, 80),
            7,
            None,
            wtcp::Flags::SYN,
            &[],
            Some(1440),
        )
    };
    // ::ffff:10.0.0.1 would wear an IPv4 client's connection key.
    let mapped: Ipv6Address = "::ffff:10.0.0.1".parse().unwrap();
    nic.rx.inbox.push_back(syn(mapped));
    nic.rx.inbox.push_back(syn(Ipv6Address::ALL_NODES));
    nic.rx.inbox.push_back(syn("::1".parse().unwrap()));
    assert!(round(&mut s, &mut nic, t).is_empty());
    assert_eq!(s.stats().drop_malformed, 3);
    assert_eq!(s.stats().tcp_accepted, 0);
    // To an address that is not ours.
    let other = Ipv6Address::new(0xfe80, 0, 0, 0, 0, 0, 0, 0x77);
    nic.rx.inbox.push_back(tcp6(
        PEER,
        other,
        (42000, 80),
        7,
        None,
        wtcp::Flags::SYN,
        &[],
        None,
    ));
    assert!(round(&mut s, &mut nic, t).is_empty());
    // A bad checksum.
    let mut f = syn(PEER);
    let n = f.len();
    f[n - 1] ^= 1;
    nic.rx.inbox.push_back(f);
    assert!(round(&mut s, &mut nic, t).is_empty());
    assert_eq!(s.stats().drop_checksum, 1);
    // A closed port: RST, ACK of the SYN (RFC 9293 §3.10.7.1).
    nic.rx.inbox.push_back(tcp6(
        PEER,
        us,
        (42000, 81),
        7,
        None,
        wtcp::Flags::SYN,
        &[],
        None,
    ));
    let out = round(&mut s, &mut nic, t);
    assert_eq!(out.len(), 1);
    assert!(out[0].flags.rst && out[0].flags.ack);
    assert_eq!((out[0].src, out[0].dst, out[0].ack), (us, PEER, Some(8)));
}

/// Takes the mebibyte's response, `segs` the first round's segments: each round the
/// in-order payload is kept (every frame within the link's 1514 octets and `max_payload`)
/// and acknowledged from `PEER` (`cli`: its port and next sequence number), until the
/// whole 200 response is there, checked byte by byte. Returns the clock then.
#[allow(clippy::too_many_arguments)]
fn receive_big(
    s: &mut Server<impl Lookup<'static>>,
    nic: &mut FakeNic,
    us: Ipv6Address,
    (sport, cli): (u16, u32),
    iss: u32,
    mut segs: Vec<Seg6>,
    mut t: u64,
    max_payload: usize,
) -> u64 {
    let want = big_file();
    let mut stream: Vec<u8> = Vec::new();
    for _ in 0..5000 {
        let mut acked = iss + 1 + stream.len() as u32;
        for seg in &segs {
            assert!(
                seg.frame_len <= 1514,
                "a frame the link carries: {}",
                seg.frame_len
            );
            assert!(seg.payload.len() <= max_payload);
            if seg.seq == acked && !seg.payload.is_empty() {
                stream.extend_from_slice(&seg.payload);
                acked += seg.payload.len() as u32;
            }
        }
        if let Some(h) = stream.windows(4).position(|w| w == b"\r\n\r\n") {
            if stream.len() >= h + 4 + want.len() {
                assert!(stream.starts_with(b"HTTP/1.1 200 OK\r\n"));
                assert_eq!(&stream[h + 4..], &want[..], "every byte");
                return t;
            }
        }
        let ack = tcp6(
            PEER,
            us,
            (sport, 80),
            cli,
            Some(acked),
            wtcp::Flags::ACK,
            &[],
            None,
        );
        nic.rx.inbox.push_back(ack);
        t += 1_000_000;
        segs = round(s, nic, t);
    }
    panic!("the response did not complete");
}

/// A Packet Too Big from a router (`2001:db8::1`) to us for a link of `mtu`, quoting
/// `quoted` (a frame of ours, from its IPv6 header, cut to what fits in 1280).
fn too_big(us: Ipv6Address, mtu: u32, quoted: &[u8]) -> Vec<u8> {
    let invoking = &quoted[14..quoted.len().min(14 + 1232)];
    let m = crate::wire::Icmpv6Repr::PacketTooBig { mtu, invoking };
    let router = Ipv6Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    crate::iface::ipv6::tests::frame(SERVER_MAC, router, us, 64, &m, false)
}

/// Opens a connection from `PEER` port `sport` and asks for the mebibyte: returns our ISS
/// and the request's length; the first flight is in `nic`'s outbox.
fn get_big(
    s: &mut Server<impl Lookup<'static>>,
    nic: &mut FakeNic,
    us: Ipv6Address,
    sport: u16,
    t: u64,
) -> (u32, u32) {
    let ports = (sport, 80);
    nic.rx.inbox.push_back(tcp6(
        PEER,
        us,
        ports,
        1000,
        None,
        wtcp::Flags::SYN,
        &[],
        Some(1440),
    ));
    let out = round(s, nic, t);
    let iss = out[0].seq;
    let req = b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    nic.rx.inbox.push_back(tcp6(
        PEER,
        us,
        ports,
        1001,
        Some(iss + 1),
        wtcp::Flags::ACK,
        req,
        None,
    ));
    s.poll(nic, &ManualClock(t + 1_000_000), &mut NoLog);
    (iss, req.len() as u32)
}

#[test]
fn a_packet_too_big_for_a_segment_in_flight_makes_the_segments_smaller() {
    let (mut s, mut nic, us, t) = server6(8);
    let (iss, req_len) = get_big(&mut s, &mut nic, us, 43000, t);
    let first: Vec<Vec<u8>> = nic.tx.outbox.drain(..).collect();
    assert!(first.len() >= 2);
    assert!(first.iter().all(|f| parse6(f).payload.len() == 1440));
    // The router before a 1280-octet link drops the second segment and says so.
    nic.rx.inbox.push_back(too_big(us, 1280, &first[1]));
    let t = t + 2_000_000;
    let out = round(&mut s, &mut nic, t);
    assert_eq!(
        (s.stats().icmp6_too_big, s.stats().tcp_pmtu_lowered),
        (1, 1)
    );
    // Everything in flight goes again, from the first unacknowledged byte, in segments a
    // 1280-octet link carries (1280 - 40 - 20).
    assert!(!out.is_empty());
    assert_eq!(out[0].seq, iss + 1);
    assert!(out
        .iter()
        .all(|o| o.payload.len() <= 1220 && o.frame_len <= 1294));
    // The transfer completes byte-exact in the smaller segments.
    let t = receive_big(
        &mut s,
        &mut nic,
        us,
        (43000, 1001 + req_len),
        iss,
        out,
        t,
        1220,
    );
    // The next connection to that peer announces and uses the path's MSS from the start.
    nic.rx.inbox.push_back(tcp6(
        PEER,
        us,
        (43001, 80),
        5,
        None,
        wtcp::Flags::SYN,
        &[],
        Some(1440),
    ));
    let out = round(&mut s, &mut nic, t + 1_000_000);
    assert_eq!(out[0].mss, Some(1220));
}

#[test]
fn forged_packets_too_big_are_dropped_and_change_nothing() {
    let (mut s, mut nic, us, t) = server6(8);
    let (iss, _) = get_big(&mut s, &mut nic, us, 44000, t);
    let first: Vec<Vec<u8>> = nic.tx.outbox.drain(..).collect();
    // Below IPv6's minimum MTU.
    nic.rx.inbox.push_back(too_big(us, 1200, &first[0]));
    // Quoting a sequence number not in flight (an attacker guessing).
    let mut forged = first[0].clone();
    let seq_at = 14 + 40 + 4;
    forged[seq_at..seq_at + 4].copy_from_slice(&(iss.wrapping_add(1 << 30)).to_be_bytes());
    nic.rx.inbox.push_back(too_big(us, 1280, &forged));
    // Quoting a segment from an address not ours.
    let mut other = first[0].clone();
    other[14 + 8 + 15] ^= 1;
    nic.rx.inbox.push_back(too_big(us, 1280, &other));
    // Quoting too little (no sequence number).
    nic.rx
        .inbox
        .push_back(too_big(us, 1280, &first[0][..14 + 40 + 6]));
    // Quoting a connection that is not there.
    let mut gone = first[0].clone();
    gone[14 + 40 + 2..14 + 40 + 4].copy_from_slice(&9u16.to_be_bytes());
    nic.rx.inbox.push_back(too_big(us, 1280, &gone));
    let out = round(&mut s, &mut nic, t + 2_000_000);
    assert!(out.iter().all(|o| o.seq != iss + 1), "nothing sent again");
    let st = s.stats();
    assert_eq!(
        (st.icmp6_too_big, st.drop_too_big, st.tcp_pmtu_lowered),
        (0, 5, 0)
    );
    assert_eq!(s.conns[0].tcp.mss(), 1440);
}

/// A client → server UDP datagram over IPv6 (its checksum made right, or left zero).
fn udp6(
    src: Ipv6Address,
    dst: Ipv6Address,
    (sport, dport): (u16, u16),
    payload: &[u8],
    sum: bool,
) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut f = frame6(src, dst, crate::wire::Ipv6NextHeader::Udp, len);
    f[54..56].copy_from_slice(&sport.to_be_bytes());
    f[56..58].copy_from_slice(&dport.to_be_bytes());
    f[58..60].copy_from_slice(&(len as u16).to_be_bytes());
    f[62..].copy_from_slice(payload);
    if sum {
        let acc = crate::wire::checksum::pseudo_header_v6(&src.0, &dst.0, 17, len as u32);
        let c = !crate::wire::checksum::fold(crate::wire::checksum::accumulate(acc, &f[54..]));
        f[60..62].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    }
    f
}

/// The UDP payload of a server frame over IPv6 from `us`:`sport` to `to`:`dport`, the
/// checksum verified (never zero over IPv6).
fn udp6_answer(f: &[u8], us: Ipv6Address, to: Ipv6Address, (sport, dport): (u16, u16)) -> Vec<u8> {
    let eth = EthernetFrame::new_checked(f).unwrap();
    assert_eq!(
        (eth.ethertype(), eth.dst_addr()),
        (EtherType::Ipv6, CLIENT_MAC)
    );
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    let r = Ipv6Repr::parse(&ip).unwrap();
    assert_eq!((r.src_addr, r.dst_addr), (us, to));
    let up = ip.walk().unwrap();
    assert_eq!(up.protocol, crate::wire::Ipv6NextHeader::Udp);
    let body = ip.upper_payload(&up);
    assert_ne!(&body[6..8], &[0, 0], "a checksum is always sent over IPv6");
    let sum = crate::wire::checksum::accumulate(ip.pseudo_header(&up), body);
    assert_eq!(
        crate::wire::checksum::fold(sum),
        0xffff,
        "UDP checksum over IPv6"
    );
    let u = crate::wire::UdpPacket::new_checked(body).unwrap();
    assert_eq!((u.src_port(), u.dst_port()), (sport, dport));
    assert!(f.len() <= 1514, "within a 1500-octet link: {}", f.len());
    u.payload().to_vec()
}

/// The UDP protocol over IPv6: an initial GET to the link-local address is answered from
/// it (Get-Ack with a token bound to the whole address, the head, the data), the file
/// fetched whole through the client's state machine with the token; a datagram with a
/// zero checksum (none, over IPv6) or to another port is dropped and counted.
#[test]
fn the_udp_protocol_answers_over_ipv6_from_the_address_asked() {
    use crate::udp::fetch::{Step, Timing, Transfer};
    use crate::udp::wire::{write_request, Start, PAD_TO};
    const PORT: u16 = 8081;
    let (mut s, mut nic, us, mut t) =
        server6_with(8, |cfg| cfg.udp = Some(crate::udp::Config::new(PORT)));
    let mut got = super::udp::Body::default();
    let timing = Timing {
        rto_ns: 20_000_000,
        rto_max_ns: 200_000_000,
        tries: 10,
    };
    let mut x = Transfer::new(timing, None);
    let mut steps = vec![x.begin(t)];
    let mut sent = 0;
    let mut done = false;
    for _ in 0..20_000 {
        for step in steps.drain(..) {
            match step {
                Step::Send(start) => {
                    let pad = if start == Start::Initial { PAD_TO } else { 0 };
                    let mut req = [0u8; 1500];
                    let n = write_request(&mut req, "[fe80::1]", "/big.bin", start, x.token(), pad)
                        .unwrap();
                    assert!(n <= 1452, "a request fits one IPv6 packet");
                    nic.rx
                        .inbox
                        .push_back(udp6(PEER, us, (40000, PORT), &req[..n], true));
                    sent += 1;
                }
                Step::Done => done = true,
                Step::Failed(f) => panic!("{f:?}"),
                Step::Wait => {}
            }
        }
        if done {
            break;
        }
        s.poll(&mut nic, &ManualClock(t), &mut NoLog);
        for f in nic.tx.outbox.drain(..).collect::<Vec<_>>() {
            let p = udp6_answer(&f, us, PEER, (PORT, 40000));
            steps.push(x.on_packet(&p, t, &mut got));
        }
        t += 1_000_000;
        steps.push(x.on_timeout(t));
    }
    assert!(done, "the transfer did not finish");
    assert!(got.1.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(got.0 == big_file(), "the mebibyte, byte for byte");
    assert!(sent >= 2, "the initial GET and at least one with the token");
    let st = s.stats().clone();
    assert!(st.udp_token_bad == 0 && st.udp_rate_limited == 0, "{st:?}");
    // A zero checksum, another port: dropped.
    let (ck, nf) = (st.drop_checksum, st.drop_not_for_us);
    let req = {
        let mut b = [0u8; 1500];
        let n = write_request(&mut b, "x", "/", Start::Initial, None, PAD_TO).unwrap();
        b[..n].to_vec()
    };
    nic.rx
        .inbox
        .push_back(udp6(PEER, us, (40001, PORT), &req, false));
    nic.rx
        .inbox
        .push_back(udp6(PEER, us, (40001, PORT + 1), &req, true));
    s.poll(&mut nic, &ManualClock(t + 1_000_000), &mut NoLog);
    assert!(nic.tx.outbox.is_empty());
    let st = s.stats();
    assert_eq!((st.drop_checksum - ck, st.drop_not_for_us - nf), (1, 1));
}

// The plan the sharing's test makes is not built under loom (the ring's model test).
#[cfg(not(loom))]
mod share;
