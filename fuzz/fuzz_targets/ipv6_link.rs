//! IPv6 on the link (`iface::ipv6::Link`: the link-local address with its DAD, the
//! neighbour cache, router advertisements and the global addresses made from them):
//! every input is a sequence of frames (a control byte, a 2-byte big-endian length, the
//! frame) fed at an advancing clock, with lookups of the frames' sources in between. The
//! control byte may aim the frame at us (our MAC, our address as the IPv6 destination and
//! as a Neighbor Discovery target, and an ICMPv6 message's checksum made right), so the
//! cache, DAD and SLAAC are reached with messages the fuzzer shapes. Nothing may panic;
//! the cache keeps its bounds; no timer is left in the past after a poll (no loop); every
//! frame the link asks to send is built and parses back with a valid checksum (a
//! listener report with hop limit 1 behind a Router Alert, nothing else with an extension
//! header); a TCP segment or UDP datagram is handed on only for an address of
//! ours in use, from an acceptable source. A follower link (the per-queue mode's other
//! cores, `iface::share6`), given the owner's addresses before each frame, is fed the
//! same frames: it never runs a timer, never changes the link's state (no address news,
//! router or query taken: those it forwards), and holds to the same rules for what it
//! hands on and sends.
#![no_main]

use bareweb_engine::iface::ipv6::{Link, Step};
use bareweb_engine::iface::neigh6::{State, ENTRIES, MAX_INCOMPLETE};
use bareweb_engine::wire::icmpv6::Message;
use bareweb_engine::wire::{
    EthernetAddress, EthernetFrame, Icmpv6Packet, Icmpv6Repr, Ipv6Address, Ipv6Packet, Ipv6Repr,
};
use libfuzzer_sys::fuzz_target;

const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

fn check_sent(link: &Link, step: &Step<'_>) {
    let Step::Send(out) = step else { return };
    let mut buf = [0u8; 1600];
    let Some(n) = link.write(out, &mut buf) else {
        return;
    };
    let f = &buf[..n];
    let eth = EthernetFrame::new_checked(f).expect("our frame parses");
    assert_eq!(eth.src_addr(), MAC);
    let ip = Ipv6Packet::new_checked(&f[14..]).expect("our IPv6 header parses");
    let r = Ipv6Repr::parse(&ip).expect("our IPv6 header is valid");
    let up = ip.walk().expect("our extension headers walk");
    let body = &f[14 + up.offset..14 + up.offset + up.len];
    let p = Icmpv6Packet::new_checked(body).expect("our ICMPv6 parses");
    assert!(p.verify_checksum(r.src_addr, r.dst_addr));
    let m = Icmpv6Repr::parse(&p, r.src_addr, r.dst_addr, r.hop_limit)
        .expect("our message is valid");
    if matches!(
        m,
        Icmpv6Repr::MldReport { .. }
            | Icmpv6Repr::Other {
                msg_type: Message::MldV1Report,
                ..
            }
    ) {
        // A listener report: hop limit 1 behind a Router Alert (RFC 3810 §5).
        assert!(r.hop_limit == 1 && up.router_alert);
    } else {
        assert_eq!(up.offset, 40, "no extension header but MLD's");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut link = Link::new([0x42; 16], MAC, 0);
    let mut follower = Link::new([0x42; 16], MAC, 0);
    let mut now = 0u64;
    let mut rest = data;
    while rest.len() >= 3 {
        let ctl = rest[0];
        let len = usize::from(u16::from_be_bytes([rest[1], rest[2]])).min(rest.len() - 3);
        let mut frame = rest[3..3 + len].to_vec();
        rest = &rest[3 + len..];
        // Control byte: bit 0 aims the frame at us, bits 1-2 pick the destination, bit 3
        // makes our address the Neighbor Discovery target, bits 4-7 let time pass (0 to
        // 3 s), so DAD ends and the cache's timers fire.
        now += u64::from(ctl >> 4) * 200_000_000;
        while let Some(step) = link.poll(now) {
            check_sent(&link, &step);
        }
        assert!(link.deadline() > now, "a timer left in the past");
        let us = link.addr.addr();
        if ctl & 1 != 0 && frame.len() >= 54 {
            frame[..6].copy_from_slice(&MAC.0);
            let dst = match ctl & 6 {
                0 => us,
                2 => us.solicited_node(),
                _ => Ipv6Address::ALL_NODES,
            };
            frame[38..54].copy_from_slice(&dst.0);
            if ctl & 6 == 2 {
                frame[..6].copy_from_slice(&dst.multicast_ethernet().0);
            }
            if frame.len() >= 78 && ctl & 8 != 0 {
                // A Neighbor Discovery target: our address.
                frame[62..78].copy_from_slice(&us.0);
            }
            // ICMPv6 right after the header, or after one hop-by-hop header (MLD's
            // Router Alert): its checksum made right.
            let at = match frame[20] {
                58 => Some(54),
                0 if frame.len() >= 56 && frame[54] == 58 => Some(54 + 8 * (1 + usize::from(frame[55]))),
                _ => None,
            };
            if let Some(at) = at.filter(|&at| frame.len() >= at + 4) {
                let src = Ipv6Address::from_bytes(&frame[22..38]);
                let end = (54 + usize::from(u16::from_be_bytes([frame[18], frame[19]])))
                    .clamp(at + 4, frame.len());
                let mut p = Icmpv6Packet::new_unchecked(&mut frame[at..end]);
                p.fill_checksum(src, dst);
            }
        }
        let src = frame.get(22..38).map(Ipv6Address::from_bytes);
        follower.follow(link.slots(), link.router());
        assert!(follower.poll(now).is_none() && follower.deadline() == u64::MAX);
        if let Ok(step) = follower.receive(&frame, now) {
            check_sent(&follower, &step);
            match step {
                Step::Tcp { slot, .. } | Step::Udp { slot, .. } => {
                    assert!(follower.slot_addr(slot).is_some());
                }
                Step::Send(_) | Step::TooBig { .. } | Step::Forward | Step::Done => {}
                other => panic!("a follower changed the link: {other:?}"),
            }
        }
        if let Ok(step) = link.receive(&frame, now) {
            check_sent(&link, &step);
            if let Step::Tcp {
                src,
                slot,
                segment,
                ..
            } = step
            {
                // Only to an address of ours in use, from a unicast source that is
                // neither loopback nor IPv4-mapped, the segment within the frame.
                assert!(link.slot_addr(slot).is_some());
                assert!(src.is_unicast() && !src.is_loopback() && !src.is_ipv4_mapped());
                assert!(segment.len() <= frame.len() - 54);
            }
            if let Step::Udp {
                src,
                slot,
                datagram,
                ..
            } = step
            {
                // As for TCP; and a UDP checksum over IPv6 is never zero.
                assert!(link.slot_addr(slot).is_some());
                assert!(src.is_unicast() && !src.is_loopback() && !src.is_ipv4_mapped());
                assert!(datagram.len() >= 8 && datagram[6..8] != [0, 0]);
                assert!(datagram.len() <= frame.len() - 54);
            }
            if let Step::TooBig { mtu, peer, .. } = step {
                // IPv6's minimum MTU or more, quoting a segment to a unicast peer.
                assert!(mtu >= 1280 && peer.is_unicast());
            }
        }
        if let Some(src) = src.filter(|a| a.is_link_local()) {
            let _ = link.neigh.lookup(src, now);
        }
        assert!(link.neigh.len() <= ENTRIES);
        assert!(link.neigh.count(State::Incomplete) <= MAX_INCOMPLETE);
    }
    // Silence: DAD ends, every resolution and probe ends (answered or given up).
    for _ in 0..20 {
        now += 1_000_000_000;
        while let Some(step) = link.poll(now) {
            check_sent(&link, &step);
        }
    }
    assert_eq!(link.neigh.deadline(), u64::MAX);
    assert_eq!(link.addr.deadline(), u64::MAX);
    assert_eq!(link.neigh.count(State::Incomplete), 0);
});
