//! The DHCP client against bytes captured from real servers (`testdata/dhcp/`):
//! `slirp.pcap`, QEMU user networking's server (QEMU 7.2), recorded with QEMU's `filter-dump` on the
//! NIC's netdev, and `dnsmasq.pcap`, dnsmasq 2.89 in a namespace, recorded with `tcpdump
//! -i TAP`; both while the kernel booted with `ip=dhcp` (docs/kernel.md), dnsmasq's with a
//! renewal (T1 = 3 s). Each server's replies are parsed, and the client is driven through
//! the captured exchange (the replies' xid set to the client's own, since its xids are
//! random).

use std::vec::Vec;

use super::client::{Change, Client, Dest, State, Timing};
use super::frame;
use super::wire::{self, MessageType};
use crate::capture_tests::frames;
use crate::wire::{EthernetAddress, EthernetFrame, Ipv4Address};

/// The frames of `pcap` that are DHCP replies: (sender MAC, UDP payload).
fn replies(pcap: &[u8]) -> Vec<(EthernetAddress, Vec<u8>)> {
    frames(pcap)
        .into_iter()
        .filter_map(|f| frame::reply(f).map(|(m, p)| (m, p.to_vec())))
        .collect()
}

/// Our own messages in `pcap` (UDP 68 → 67): (type, ciaddr, the frame's destination).
fn requests(pcap: &[u8]) -> Vec<(MessageType, [u8; 4], EthernetAddress)> {
    frames(pcap)
        .into_iter()
        .filter(|f| f.len() > 42 + 240 && f[23] == 17 && f[34..38] == [0, 68, 0, 67])
        .map(|f| {
            let m = &f[42..];
            let o = wire::OPTIONS_AT;
            assert_eq!((m[o], m[o + 1]), (53, 1), "the type comes first");
            let dst = EthernetFrame::new_checked(f).unwrap().dst_addr();
            (
                MessageType::from_code(m[o + 2]).unwrap(),
                [m[12], m[13], m[14], m[15]],
                dst,
            )
        })
        .collect()
}

/// Drives a client through `replies`, each answered in turn; returns the client.
fn replay(mac: EthernetAddress, replies: &[(EthernetAddress, Vec<u8>)]) -> Client {
    let mut c = Client::new(mac, 99, Timing::default());
    c.on_timeout(0);
    let mut now = 1_000_000;
    for (src, p) in replies {
        let r = wire::parse(p).unwrap();
        if r.kind == MessageType::Ack && c.state() == State::Bound {
            // The renewal the capture holds: at T1.
            now = c.deadline();
            let a = c.on_timeout(now);
            assert!(matches!(a.send.unwrap().dest, Dest::Server(..)));
        }
        let mut p = p.clone();
        p[4..8].copy_from_slice(&c.xid().to_be_bytes());
        let a = c.on_reply(&p, *src, now);
        assert_eq!(c.counts.refused(), 0, "{r:?}");
        if r.kind == MessageType::Offer {
            assert_eq!(a.send.unwrap().kind, MessageType::Request);
        } else {
            assert!(matches!(
                a.change,
                Some(Change::Acquired(_) | Change::Renewed(_))
            ));
        }
        now += 1_000_000;
    }
    c
}

#[test]
fn qemu_user_networking() {
    let pcap = include_bytes!("../../testdata/dhcp/slirp.pcap");
    let r = replies(pcap);
    let kinds: Vec<_> = r
        .iter()
        .map(|(_, p)| wire::parse(p).unwrap().kind)
        .collect();
    assert_eq!(kinds, [MessageType::Offer, MessageType::Ack]);
    let ack = wire::parse(&r[1].1).unwrap();
    assert_eq!(ack.yiaddr, Ipv4Address([10, 0, 2, 15]));
    assert_eq!(ack.server_id, Some(Ipv4Address([10, 0, 2, 2])));
    assert_eq!(
        (ack.prefix_len, ack.router),
        (Some(24), Some(Ipv4Address([10, 0, 2, 2])))
    );
    assert_eq!(ack.lease_s, Some(86400));
    let ours = requests(pcap);
    assert_eq!(ours[0].0, MessageType::Discover);
    assert_eq!(ours[1].0, MessageType::Request);
    let c = replay(ack.chaddr, &r);
    let l = c.lease().unwrap();
    assert_eq!(
        (l.address, l.prefix_len, l.lease_s),
        (ack.yiaddr, 24, 86400)
    );
    assert_eq!((l.t1_s, l.t2_s), (43200, 75600));
}

#[test]
fn dnsmasq_with_a_renewal() {
    let pcap = include_bytes!("../../testdata/dhcp/dnsmasq.pcap");
    let r = replies(pcap);
    let kinds: Vec<_> = r
        .iter()
        .map(|(_, p)| wire::parse(p).unwrap().kind)
        .collect();
    assert_eq!(
        &kinds[..3],
        [MessageType::Offer, MessageType::Ack, MessageType::Ack]
    );
    let ack = wire::parse(&r[1].1).unwrap();
    assert_eq!(ack.yiaddr, Ipv4Address([10, 0, 0, 2]));
    assert_eq!(ack.server_id, Some(Ipv4Address([10, 0, 0, 1])));
    assert_eq!((ack.lease_s, ack.t1_s), (Some(120), Some(3)));
    // Our renewal went unicast to the server, with our address as ciaddr.
    let ours = requests(pcap);
    let renew = ours.iter().find(|o| o.1 != [0; 4]).expect("a renewal");
    assert_eq!((renew.0, renew.1), (MessageType::Request, [10, 0, 0, 2]));
    assert_eq!(renew.2, r[1].0, "to the server's MAC");
    let c = replay(ack.chaddr, &r[..3]);
    assert_eq!(c.state(), State::Bound);
    assert_eq!(c.counts.acks, 2);
}
