//! The client's state machine on its own: a reply or the time in, the actions out.

use std::vec::Vec;

use super::*;
use crate::dhcp::testing::{Srv, ACK, ADDR, MAC, NAK, OFFER, SRV, SRV_MAC};
use crate::dhcp::wire::{parse, OPTIONS_AT};
const MS: u64 = 1_000_000;

fn sent(a: &Actions) -> Transmit {
    a.send.expect("a message to send")
}

/// A client that has sent its DISCOVER at 0.
fn selecting() -> Client {
    let mut c = Client::new(MAC, 42, Timing::default());
    assert_eq!(c.state(), State::Init);
    assert_eq!(c.deadline(), 0);
    let a = c.on_timeout(0);
    assert_eq!(
        sent(&a),
        Transmit {
            kind: MessageType::Discover,
            src: Ipv4Address::UNSPECIFIED,
            dest: Dest::Broadcast
        }
    );
    assert_eq!(a.change, None);
    assert_eq!(c.state(), State::Selecting);
    c
}

/// A client bound at `at` ns to ADDR with a 3600 s lease.
fn bound(at: u64) -> Client {
    let mut c = selecting();
    let xid = c.xid();
    c.on_reply(&Srv::new(OFFER, xid).bytes(), SRV_MAC, at);
    let a = c.on_reply(&Srv::new(ACK, xid).bytes(), SRV_MAC, at);
    assert!(matches!(a.change, Some(Change::Acquired(_))));
    c
}

/// The message last built, as the options say.
fn options(c: &Client) -> Vec<(u8, Vec<u8>)> {
    let m = c.message();
    let mut out = Vec::new();
    let mut i = OPTIONS_AT;
    while m[i] != 255 {
        let n = usize::from(m[i + 1]);
        out.push((m[i], m[i + 2..i + 2 + n].to_vec()));
        i += 2 + n;
    }
    out
}

fn option(c: &Client, code: u8) -> Option<Vec<u8>> {
    options(c).into_iter().find(|o| o.0 == code).map(|o| o.1)
}

#[test]
fn discover_offer_request_ack() {
    let mut c = selecting();
    let xid = c.xid();
    let m = c.message();
    assert_eq!(&m[..3], &[1, 1, 6]);
    assert_eq!(&m[4..8], &xid.to_be_bytes());
    assert_eq!(&m[10..12], &[0x80, 0], "broadcast flag");
    assert_eq!(&m[28..34], &MAC.0);
    assert_eq!(option(&c, 53), Some(vec![1]));
    assert!((3000 * MS..=5000 * MS).contains(&c.deadline()));

    let a = c.on_reply(&Srv::new(OFFER, xid).bytes(), SRV_MAC, 10 * MS);
    assert_eq!(sent(&a).kind, MessageType::Request);
    assert_eq!(sent(&a).dest, Dest::Broadcast);
    assert_eq!(c.state(), State::Requesting);
    assert_eq!(c.xid(), xid, "the REQUEST keeps the OFFER's xid");
    assert_eq!(option(&c, 53), Some(vec![3]));
    assert_eq!(option(&c, 50), Some(ADDR.0.to_vec()));
    assert_eq!(option(&c, 54), Some(SRV.0.to_vec()));
    assert_eq!(&c.message()[12..16], &[0; 4], "no ciaddr while selecting");

    let a = c.on_reply(&Srv::new(ACK, xid).bytes(), SRV_MAC, 20 * MS);
    let lease = Lease {
        address: ADDR,
        prefix_len: 24,
        router: Some(SRV),
        server: SRV,
        dns: None,
        lease_s: 3600,
        t1_s: 1800,
        t2_s: 3150,
    };
    assert_eq!(
        a,
        Actions {
            send: None,
            change: Some(Change::Acquired(lease))
        }
    );
    assert_eq!(c.state(), State::Bound);
    assert_eq!(c.lease(), Some(&lease));
    assert_eq!(c.deadline(), 20 * MS + 1800 * 1000 * MS);
    assert_eq!(c.remaining_s(20 * MS), 3600);
    assert_eq!((c.counts.discovers, c.counts.requests), (1, 1));
    assert_eq!(
        (c.counts.offers, c.counts.acks, c.counts.refused()),
        (1, 1, 0)
    );
    // Nothing to do before T1.
    assert_eq!(c.on_timeout(1000 * 1000 * MS), Actions::default());
}

#[test]
fn discover_backs_off_4_8_16_32_64_with_jitter() {
    let mut c = selecting();
    let xid = c.xid();
    let mut now = c.deadline();
    let mut deadlines = Vec::new();
    for _ in 0..6 {
        let a = c.on_timeout(now);
        assert_eq!(sent(&a).kind, MessageType::Discover);
        assert_eq!(c.xid(), xid, "a retransmission keeps the xid");
        deadlines.push(c.deadline() - now);
        // The secs field counts from the first DISCOVER.
        assert_eq!(
            u64::from(u16::from_be_bytes([c.message()[8], c.message()[9]])),
            now / (1000 * MS)
        );
        now = c.deadline();
    }
    for (d, base) in deadlines.iter().zip([8u64, 16, 32, 64, 64, 64]) {
        assert!(
            (base - 1) * 1000 * MS <= *d && *d <= (base + 1) * 1000 * MS,
            "{deadlines:?}"
        );
    }
    // Jittered: not all exactly on the second.
    assert!(deadlines.iter().any(|d| d % (1000 * MS) != 0));
    assert_eq!((c.counts.discovers, c.counts.retransmits), (7, 6));
    // Early calls do nothing.
    assert_eq!(c.on_timeout(now - 1), Actions::default());
}

#[test]
fn unanswered_requests_start_discovery_again() {
    let mut c = selecting();
    let xid = c.xid();
    c.on_reply(&Srv::new(OFFER, xid).bytes(), SRV_MAC, 0);
    for i in 1..4 {
        let now = c.deadline();
        let a = c.on_timeout(now);
        assert_eq!(sent(&a).kind, MessageType::Request, "try {i}");
    }
    assert_eq!(c.counts.requests, 4);
    let now = c.deadline();
    assert_eq!(c.on_timeout(now), Actions::default());
    assert_eq!(c.state(), State::Init);
    assert!(c.deadline() <= now + 2000 * MS);
    let a = c.on_timeout(c.deadline());
    assert_eq!(sent(&a).kind, MessageType::Discover);
    assert_ne!(c.xid(), xid, "a new exchange, a new xid");
}

#[test]
fn renew_at_t1_unicast_then_ack() {
    let mut c = bound(0);
    let t1 = c.deadline();
    assert_eq!(t1, 1800 * 1000 * MS);
    let old_xid = c.xid();
    let a = c.on_timeout(t1);
    assert_eq!(
        sent(&a),
        Transmit {
            kind: MessageType::Request,
            src: ADDR,
            dest: Dest::Server(SRV, SRV_MAC)
        }
    );
    assert_eq!(c.state(), State::Renewing);
    assert_ne!(c.xid(), old_xid);
    assert_eq!(&c.message()[12..16], &ADDR.0, "ciaddr is ours");
    assert_eq!(&c.message()[10..12], &[0, 0], "no broadcast flag");
    assert_eq!((option(&c, 50), option(&c, 54)), (None, None));
    // Retransmission: half the time to T2 (675 s), at least 60 s.
    assert_eq!(c.deadline(), t1 + 675 * 1000 * MS);
    let now = c.deadline();
    assert_eq!(sent(&c.on_timeout(now)).dest, Dest::Server(SRV, SRV_MAC));
    assert_eq!(c.deadline(), now + 337_500 * MS);
    // The ACK re-arms everything from now.
    let mut ack = Srv::new(ACK, c.xid());
    ack.lease = Some(7200);
    let a = c.on_reply(&ack.bytes(), SRV_MAC, now + MS);
    match a.change {
        Some(Change::Renewed(l)) => assert_eq!((l.address, l.lease_s, l.t1_s), (ADDR, 7200, 3600)),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.state(), State::Bound);
    assert_eq!(c.deadline(), now + MS + 3600 * 1000 * MS);
    assert_eq!(c.counts.acks, 2);
}

#[test]
fn rebind_at_t2_broadcast_then_expiry_loses_the_address() {
    let mut c = bound(0);
    let t2 = 3150 * 1000 * MS;
    let end = 3600 * 1000 * MS;
    let mut now = c.deadline();
    while now < t2 {
        let a = c.on_timeout(now);
        assert_eq!(c.state(), State::Renewing);
        assert_eq!(sent(&a).dest, Dest::Server(SRV, SRV_MAC));
        assert!(c.deadline() <= t2);
        assert!(c.deadline() >= (now + 60 * 1000 * MS).min(t2));
        now = c.deadline();
    }
    let renew_xid = c.xid();
    let a = c.on_timeout(now);
    assert_eq!(
        sent(&a),
        Transmit {
            kind: MessageType::Request,
            src: ADDR,
            dest: Dest::Broadcast
        }
    );
    assert_eq!(c.state(), State::Rebinding);
    assert_ne!(c.xid(), renew_xid);
    assert_eq!(&c.message()[12..16], &ADDR.0);
    // Half of the 450 s left.
    assert_eq!(c.deadline(), t2 + 225 * 1000 * MS);
    now = c.deadline();
    while now < end {
        let a = c.on_timeout(now);
        assert_eq!(sent(&a).dest, Dest::Broadcast);
        assert_eq!(a.change, None);
        now = c.deadline();
    }
    assert_eq!(now, end);
    // The lease ends: the address is lost and discovery starts at once.
    let a = c.on_timeout(end);
    assert!(matches!(a.change, Some(Change::Lost(l, Loss::Expired)) if l.address == ADDR));
    assert_eq!(sent(&a).kind, MessageType::Discover);
    assert_eq!(sent(&a).src, Ipv4Address::UNSPECIFIED);
    assert_eq!(c.state(), State::Selecting);
    assert_eq!(c.lease(), None);
    assert_eq!(c.counts.expired, 1);
}

#[test]
fn an_ack_while_rebinding_keeps_the_address() {
    let mut c = bound(0);
    let t2 = 3150 * 1000 * MS;
    c.on_timeout(c.deadline());
    c.on_timeout(t2);
    assert_eq!(c.state(), State::Rebinding);
    // Any server may answer now.
    let mut ack = Srv::new(ACK, c.xid());
    ack.sid = Some(Ipv4Address([10, 0, 0, 2]));
    let a = c.on_reply(&ack.bytes(), EthernetAddress([2, 0, 0, 0, 0, 2]), t2 + MS);
    assert!(matches!(a.change, Some(Change::Renewed(l)) if l.server == Ipv4Address([10, 0, 0, 2])));
    assert_eq!(c.state(), State::Bound);
    // Renewing now goes to the new server.
    let a = c.on_timeout(c.deadline());
    assert_eq!(
        sent(&a).dest,
        Dest::Server(
            Ipv4Address([10, 0, 0, 2]),
            EthernetAddress([2, 0, 0, 0, 0, 2])
        )
    );
}

#[test]
fn a_nak_starts_over_and_ends_a_lease() {
    // While requesting: no address was held; discovery again within 2 s.
    let mut c = selecting();
    let xid = c.xid();
    c.on_reply(&Srv::new(OFFER, xid).bytes(), SRV_MAC, 0);
    let a = c.on_reply(&Srv::new(NAK, xid).bytes(), SRV_MAC, 5 * MS);
    assert_eq!(a, Actions::default());
    assert_eq!(c.state(), State::Init);
    assert!(c.deadline() <= 5 * MS + 2000 * MS);
    assert_eq!(c.counts.naks, 1);
    // While renewing: the address is lost.
    let mut c = bound(0);
    c.on_timeout(c.deadline());
    let a = c.on_reply(&Srv::new(NAK, c.xid()).bytes(), SRV_MAC, 1801 * 1000 * MS);
    assert!(matches!(a.change, Some(Change::Lost(l, Loss::Nak)) if l.address == ADDR));
    assert_eq!(c.state(), State::Init);
    assert_eq!(c.lease(), None);
    assert_eq!(c.remaining_s(0), 0);
    // A NAK from another server than the one chosen is refused.
    let mut c = selecting();
    let xid = c.xid();
    c.on_reply(&Srv::new(OFFER, xid).bytes(), SRV_MAC, 0);
    let mut nak = Srv::new(NAK, xid);
    nak.sid = Some(Ipv4Address([10, 0, 0, 66]));
    assert_eq!(c.on_reply(&nak.bytes(), SRV_MAC, 0), Actions::default());
    assert_eq!(
        (c.state(), c.counts.wrong_server, c.counts.naks),
        (State::Requesting, 1, 0)
    );
}

/// Every hostile reply: refused, counted under its reason, the state unchanged.
#[test]
fn hostile_replies_are_refused_and_counted() {
    type Bend = fn(&mut Srv);
    type Count = fn(&Counts) -> u64;
    let offers: &[(&str, Bend, Count)] = &[
        ("wrong xid", |s| s.xid ^= 1, |c| c.bad_xid),
        ("wrong chaddr", |s| s.chaddr = SRV_MAC, |c| c.bad_chaddr),
        ("no server id", |s| s.sid = None, |c| c.no_server_id),
        ("zero lease", |s| s.lease = Some(0), |c| c.bad_lease),
        (
            "0.0.0.0",
            |s| s.yiaddr = Ipv4Address::UNSPECIFIED,
            |c| c.bad_address,
        ),
        (
            "broadcast",
            |s| s.yiaddr = Ipv4Address::BROADCAST,
            |c| c.bad_address,
        ),
        (
            "multicast",
            |s| s.yiaddr = Ipv4Address([224, 0, 0, 1]),
            |c| c.bad_address,
        ),
        (
            "loopback",
            |s| s.yiaddr = Ipv4Address([127, 0, 0, 1]),
            |c| c.bad_address,
        ),
        (
            "class E",
            |s| s.yiaddr = Ipv4Address([250, 0, 0, 1]),
            |c| c.bad_address,
        ),
        (
            "subnet broadcast",
            |s| s.yiaddr = Ipv4Address([10, 0, 0, 255]),
            |c| c.bad_address,
        ),
        (
            "network address",
            |s| s.yiaddr = Ipv4Address([10, 0, 0, 0]),
            |c| c.bad_address,
        ),
        (
            "server id broadcast",
            |s| s.sid = Some(Ipv4Address::BROADCAST),
            |c| c.bad_address,
        ),
        ("an ACK while selecting", |s| s.kind = ACK, |c| c.unexpected),
        ("a NAK while selecting", |s| s.kind = NAK, |c| c.unexpected),
        (
            "truncated option",
            |s| s.extra = vec![51, 4, 0, 0],
            |c| c.bad_message,
        ),
        (
            "overlong option",
            |s| s.extra = vec![12, 200, b'x'],
            |c| c.bad_message,
        ),
        (
            "3-octet lease",
            |s| s.extra = vec![51, 3, 0, 0, 1],
            |c| c.bad_message,
        ),
        (
            "bad mask",
            |s| s.mask = Some([255, 0, 255, 0]),
            |c| c.bad_message,
        ),
        ("unknown type", |s| s.kind = 77, |c| c.bad_message),
    ];
    for (what, bend, count) in offers {
        let mut c = selecting();
        let mut s = Srv::new(OFFER, c.xid());
        bend(&mut s);
        let mut bytes = s.bytes();
        if *what == "truncated option" || *what == "overlong option" {
            bytes.pop(); // no END: the option runs off the end
        }
        let before = c.clone();
        assert_eq!(
            c.on_reply(&bytes, SRV_MAC, MS),
            Actions::default(),
            "{what}"
        );
        assert_eq!(count(&c.counts), 1, "{what}");
        assert_eq!(c.counts.refused(), 1, "{what}");
        assert_eq!(
            (c.state(), c.deadline(), c.xid()),
            (before.state(), before.deadline(), before.xid()),
            "{what}"
        );
        // The good OFFER is still taken.
        let a = c.on_reply(&Srv::new(OFFER, c.xid()).bytes(), SRV_MAC, MS);
        assert_eq!(sent(&a).kind, MessageType::Request, "{what}");
    }
    let acks: &[(&str, Bend, Count)] = &[
        ("zero lease", |s| s.lease = Some(0), |c| c.bad_lease),
        ("no lease", |s| s.lease = None, |c| c.bad_lease),
        (
            "another address",
            |s| s.yiaddr = Ipv4Address([10, 0, 0, 51]),
            |c| c.bad_address,
        ),
        (
            "another server",
            |s| s.sid = Some(Ipv4Address([10, 0, 0, 9])),
            |c| c.wrong_server,
        ),
        (
            "an OFFER while requesting",
            |s| s.kind = OFFER,
            |c| c.unexpected,
        ),
        (
            "wrong xid",
            |s| s.xid = s.xid.wrapping_add(1),
            |c| c.bad_xid,
        ),
    ];
    for (what, bend, count) in acks {
        let mut c = selecting();
        c.on_reply(&Srv::new(OFFER, c.xid()).bytes(), SRV_MAC, 0);
        let mut s = Srv::new(ACK, c.xid());
        bend(&mut s);
        assert_eq!(
            c.on_reply(&s.bytes(), SRV_MAC, MS),
            Actions::default(),
            "{what}"
        );
        assert_eq!((count(&c.counts), c.counts.refused()), (1, 1), "{what}");
        assert_eq!(c.state(), State::Requesting, "{what}");
        assert_eq!(c.lease(), None, "{what}");
    }
    // Replies while bound (no exchange under way) and garbage.
    let mut c = bound(0);
    c.on_reply(&Srv::new(ACK, c.xid()).bytes(), SRV_MAC, MS);
    c.on_reply(&[], SRV_MAC, MS);
    c.on_reply(&[0xff; 600], SRV_MAC, MS);
    assert_eq!((c.counts.unexpected, c.counts.bad_message), (1, 2));
    assert_eq!(c.state(), State::Bound);
    // While renewing, an ACK for another address does not move us.
    c.on_timeout(c.deadline());
    let mut s = Srv::new(ACK, c.xid());
    s.yiaddr = Ipv4Address([10, 0, 0, 77]);
    assert_eq!(
        c.on_reply(&s.bytes(), SRV_MAC, 1801 * 1000 * MS),
        Actions::default()
    );
    assert_eq!((c.state(), c.counts.bad_address), (State::Renewing, 1));
}

#[test]
fn lease_times_t1_t2_and_router_are_checked() {
    let ack = |f: fn(&mut Srv)| {
        let mut c = selecting();
        c.on_reply(&Srv::new(OFFER, c.xid()).bytes(), SRV_MAC, 0);
        let mut s = Srv::new(ACK, c.xid());
        f(&mut s);
        match c.on_reply(&s.bytes(), SRV_MAC, 0).change {
            Some(Change::Acquired(l)) => (l, c),
            other => panic!("{other:?}"),
        }
    };
    let (l, _) = ack(|s| (s.t1, s.t2) = (Some(100), Some(200)));
    assert_eq!((l.t1_s, l.t2_s), (100, 200));
    // T2 before T1, or past the lease: the defaults.
    let (l, _) = ack(|s| (s.t1, s.t2) = (Some(300), Some(200)));
    assert_eq!((l.t1_s, l.t2_s), (1800, 3150));
    let (l, _) = ack(|s| (s.t1, s.t2) = (Some(100), Some(4000)));
    assert_eq!((l.t1_s, l.t2_s), (1800, 3150));
    // No mask: /24; a router off the subnet, or ours, is not used.
    let (l, _) = ack(|s| s.mask = None);
    assert_eq!(l.prefix_len, 24);
    let (l, _) = ack(|s| s.router = Some(Ipv4Address([192, 168, 0, 1])));
    assert_eq!(l.router, None);
    let (l, _) = ack(|s| s.router = Some(ADDR));
    assert_eq!(l.router, None);
    // An infinite lease never renews.
    let (l, c) = ack(|s| s.lease = Some(u32::MAX));
    assert_eq!(l.lease_s, u32::MAX);
    assert_eq!((c.deadline(), c.remaining_s(0)), (u64::MAX, u64::MAX));
    // A one-second lease works (renew at 0.5 s would be 0 s: at the grant + 0).
    let (l, _) = ack(|s| s.lease = Some(1));
    assert_eq!((l.lease_s, l.t1_s, l.t2_s), (1, 0, 0));
    // T2 is 7/8 of the lease computed whole, never before T1 (the fuzz target found a 2 s
    // lease with T1 1 s and T2 0 s when 7/8 was taken of lease / 8).
    let (l, _) = ack(|s| s.lease = Some(2));
    assert_eq!((l.t1_s, l.t2_s), (1, 1));
    let (l, _) = ack(|s| s.lease = Some(15));
    assert_eq!((l.t1_s, l.t2_s), (7, 13));
    let (l, _) = ack(|s| (s.lease, s.t1) = (Some(2), Some(1)));
    assert_eq!((l.t1_s, l.t2_s), (1, 1));
}

#[test]
fn frames_round_trip() {
    use crate::dhcp::frame::{self, FRAME_LEN};
    use crate::wire::{EthernetFrame, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr};
    let mut c = Client::new(MAC, 7, Timing::default());
    let t = sent(&c.on_timeout(0));
    let mut buf = [0u8; FRAME_LEN];
    assert_eq!(c.frame(&t, &mut buf), FRAME_LEN);
    let eth = EthernetFrame::new_checked(&buf[..]).unwrap();
    assert_eq!(
        (eth.dst_addr(), eth.src_addr()),
        (EthernetAddress::BROADCAST, MAC)
    );
    let p = Ipv4Packet::new_checked(eth.payload()).unwrap();
    let ip = Ipv4Repr::parse(&p).unwrap();
    assert_eq!(
        (ip.src_addr, ip.dst_addr),
        (Ipv4Address::UNSPECIFIED, Ipv4Address::BROADCAST)
    );
    let d = UdpPacket::new_checked(p.payload()).unwrap();
    UdpRepr::parse(&d, ip.src_addr, ip.dst_addr).unwrap();
    assert_eq!((d.src_port(), d.dst_port()), (68, 67));
    assert_eq!(d.payload(), c.message());
    // Our own DISCOVER is not a reply.
    assert_eq!(frame::reply(&buf), None);
    // A server's OFFER in a frame reaches the client through on_frame.
    let offer = Srv::new(OFFER, c.xid()).bytes();
    let mut f = crate::dhcp::testing::frame(&offer, Ipv4Address::BROADCAST);
    let a = c.on_frame(&f, MS).expect("a DHCP reply");
    assert_eq!(sent(&a).kind, MessageType::Request);
    // A wrong UDP checksum: not taken (not counted: it is not a DHCP reply).
    let last = f.len() - 1;
    f[last] ^= 1;
    assert_eq!(c.on_frame(&f, MS), None);
    // The REQUEST's frame.
    let t = sent(&a);
    c.frame(&t, &mut buf);
    assert_eq!(
        parse(&buf[42..]).err(),
        Some(crate::dhcp::wire::Error::NotReply)
    );
}

#[test]
fn mutated_replies_never_panic() {
    let good = Srv::new(ACK, 0).bytes();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        let mut c = selecting();
        let xid = c.xid();
        c.on_reply(&Srv::new(OFFER, xid).bytes(), SRV_MAC, 0);
        let mut b = good.clone();
        b[4..8].copy_from_slice(&xid.to_be_bytes());
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x as usize) % b.len();
            b[i] = (x >> 32) as u8;
        }
        let cut = (x >> 48) as usize % (b.len() + 1);
        let a = c.on_reply(&b[..cut.max(b.len() - 8)], SRV_MAC, 0);
        if let Some(Change::Acquired(l)) = a.change {
            assert!(usable(l.address, l.prefix_len) && l.lease_s > 0);
        }
    }
}
