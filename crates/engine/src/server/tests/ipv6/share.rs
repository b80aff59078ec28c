//! The per-queue mode's IPv6 (`iface::share6`): two servers from one plan, core 0's
//! running the link and core 1's following it, each on its own queue as a NIC's hash
//! would spread the frames. Core 1 answers a solicitation and serves a connection at the
//! address core 0 took; a Packet Too Big that reaches core 0 for core 1's connection makes
//! that connection's segments smaller; a router advertisement and a DAD defender's
//! advertisement that reach core 1 go to core 0, which takes the prefix and moves off the
//! address in use, and core 1 then serves at the address core 0 holds, not the other.

use super::*;
use crate::cores::plan::{Mode, Plan};
use crate::iface::ipv6::tests::{frame, ns, ra_frame_living, MAC};
use crate::wire::Icmpv6Repr;

const SEC: u64 = 1_000_000_000;

type S = Server<SiteRef>;

/// Both cores polled every 100 ms from `t` for `secs` seconds; returns the time.
fn run_both(cores: &mut [(S, FakeNic)], mut t: u64, secs: u64) -> u64 {
    let end = t + secs * SEC;
    while t < end {
        for (s, nic) in cores.iter_mut() {
            s.poll(nic, &ManualClock(t), &mut NoLog);
        }
        t += SEC / 10;
    }
    t
}

/// One round of `core` at `t`.
fn poll(core: &mut (S, FakeNic), t: u64) {
    core.0.poll(&mut core.1, &ManualClock(t), &mut NoLog);
}

/// Two cores in the per-queue mode, core 0's link-local address preferred.
fn two_cores() -> (Vec<(S, FakeNic)>, Ipv6Address, u64) {
    two_cores_with(|_| {})
}

/// [`two_cores`] with `more` done to the configuration first.
fn two_cores_with(more: impl FnOnce(&mut Config)) -> (Vec<(S, FakeNic)>, Ipv6Address, u64) {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.syn_backlog = Some(8);
    cfg.ipv6 = true;
    cfg.ipv6_secret = Some([9; 16]);
    more(&mut cfg);
    let site = SiteRef(Box::leak(Box::new(TestSite::new())));
    let plan = Plan::new(Mode::PerQueue, 2, site, cfg, SERVER_MAC);
    let mut cores: Vec<(S, FakeNic)> = plan
        .servers()
        .into_iter()
        .map(|s| (s, FakeNic::new(SERVER_MAC)))
        .collect();
    let t = run_both(&mut cores, 0, 3);
    let (us, phase) = cores[0].0.ipv6_address().unwrap();
    assert_eq!(phase, crate::iface::addr6::Phase::Preferred);
    // Core 1 follows: the same address in the same slot, and it sent nothing of its own
    // (no DAD, no report, no router solicitation).
    assert_eq!(
        cores[1].0.ipv6_address(),
        Some((us, crate::iface::addr6::Phase::Preferred))
    );
    let link1 = cores[1].0.ipv6_link().unwrap();
    assert!(link1.is_follower());
    assert_eq!(link1.slot_of(us), Some(0));
    assert!(cores[1].1.tx.outbox.is_empty());
    for (_, nic) in cores.iter_mut() {
        nic.tx.outbox.clear();
    }
    (cores, us, t)
}

#[test]
fn a_follower_answers_solicitations_and_serves_at_the_owners_address() {
    let (mut cores, us, t) = two_cores();
    let (s1, nic1) = &mut cores[1];
    let sn = us.solicited_node();
    nic1.rx.inbox.push_back(frame(
        sn.multicast_ethernet(),
        PEER,
        sn,
        255,
        &ns(us),
        false,
    ));
    s1.poll(nic1, &ManualClock(t), &mut NoLog);
    let out: Vec<Vec<u8>> = nic1.tx.outbox.drain(..).collect();
    assert_eq!(out.len(), 1);
    let (_, src, dst, _, m) = crate::iface::ipv6::tests::parse(&out[0]);
    assert_eq!((src, dst), (us, PEER));
    assert!(matches!(
        m,
        Icmpv6Repr::NeighborAdvert { target, solicited: true, target_lladdr: Some(mac), .. }
            if target == us && mac == MAC
    ));
    assert_eq!(s1.stats().ipv6_passed, 0, "answered here, not passed");
    // A connection on core 1: SYN-ACK from the address, the response in IPv6's segments.
    let (iss, _) = get_big(s1, nic1, us, 45000, t);
    let flight: Vec<Seg6> = nic1.tx.outbox.drain(..).map(|f| parse6(&f)).collect();
    assert!(!flight.is_empty());
    assert!(flight
        .iter()
        .all(|o| o.src == us && o.payload.len() == 1440));
    assert_eq!(flight[0].seq, iss + 1);
}

#[test]
fn a_packet_too_big_at_core_0_lowers_core_1s_connection() {
    let (mut cores, us, t) = two_cores();
    let (s1, nic1) = &mut cores[1];
    let (iss, req_len) = get_big(s1, nic1, us, 46000, t);
    let first: Vec<Vec<u8>> = cores[1].1.tx.outbox.drain(..).collect();
    assert!(first.len() >= 2);
    // The router's message reaches core 0's queue (the NIC hashed it by its addresses).
    cores[0].1.rx.inbox.push_back(too_big(us, 1280, &first[1]));
    let t = t + 2_000_000;
    poll(&mut cores[0], t);
    let st0 = cores[0].0.stats();
    assert_eq!((st0.ipv6_passed, st0.tcp_pmtu_lowered), (1, 0));
    let (s1, nic1) = &mut cores[1];
    let out = round(s1, nic1, t + 1_000_000);
    let st1 = s1.stats();
    assert_eq!((st1.icmp6_too_big, st1.tcp_pmtu_lowered), (1, 1));
    assert_eq!(st1.ipv6_passed, 0, "a frame from the hub goes no further");
    assert_eq!(out[0].seq, iss + 1);
    assert!(out.iter().all(|o| o.payload.len() <= 1220));
    receive_big(
        s1,
        nic1,
        us,
        (46000, 1001 + req_len),
        iss,
        out,
        t + 1_000_000,
        1220,
    );
}

#[test]
fn a_router_and_a_dad_defender_heard_by_core_1_reach_core_0() {
    let (mut cores, _, t) = two_cores();
    let router: Ipv6Address = "fe80::1".parse().unwrap();
    let ra = ra_frame_living(router, "2001:db8:7::", (86400, 14400), &mut Vec::new());
    cores[1].1.rx.inbox.push_back(ra);
    // Core 1 passes it up; core 0 takes it at its next round and probes its new address.
    poll(&mut cores[1], t);
    assert_eq!(cores[1].0.stats().ipv6_passed, 1);
    assert_eq!(cores[1].0.stats().nd_router_adverts, 0);
    let mut t = t + 1_000_000;
    poll(&mut cores[0], t);
    assert_eq!(cores[0].0.stats().nd_router_adverts, 1);
    let tentative = cores[0].0.ipv6_link().unwrap().slaac.prefixes[0]
        .as_ref()
        .unwrap()
        .addr
        .addr();
    assert!(tentative.is_unicast() && !tentative.is_link_local());
    // Another node holds it: its advertisement reaches core 1's queue.
    let na = Icmpv6Repr::NeighborAdvert {
        router: false,
        solicited: false,
        override_: true,
        target: tentative,
        target_lladdr: Some(crate::iface::ipv6::tests::PEER_MAC),
    };
    let all = Ipv6Address::ALL_NODES;
    cores[1]
        .1
        .rx
        .inbox
        .push_back(frame(all.multicast_ethernet(), PEER, all, 255, &na, false));
    t = run_both(&mut cores, t, 4);
    assert_eq!(cores[1].0.stats().ipv6_passed, 2);
    assert_eq!(cores[0].0.stats().nd_dad_conflicts, 1);
    let global: Vec<Ipv6Address> = cores[0].0.ipv6_globals().collect();
    assert_eq!(global.len(), 1, "another address taken after the conflict");
    let g = global[0];
    assert_ne!(g, tentative);
    // Core 1 serves at the address core 0 holds, in core 0's slot for it: echo, then TCP.
    assert_eq!(cores[1].0.ipv6_globals().collect::<Vec<_>>(), [g]);
    let link1 = cores[1].0.ipv6_link().unwrap();
    assert_eq!(link1.slot_of(g), Some(1));
    assert_eq!(link1.slot_of(tentative), None);
    let (s1, nic1) = &mut cores[1];
    nic1.tx.outbox.clear();
    let data = [7u8; 32];
    let echo = |dst| {
        let m = Icmpv6Repr::EchoRequest {
            ident: 9,
            seq_no: 1,
            data: &data,
        };
        frame(MAC, PEER, dst, 64, &m, false)
    };
    nic1.rx.inbox.push_back(echo(g));
    nic1.rx.inbox.push_back(echo(tentative));
    s1.poll(nic1, &ManualClock(t), &mut NoLog);
    let out: Vec<Vec<u8>> = nic1.tx.outbox.drain(..).collect();
    assert_eq!(out.len(), 1, "the address held elsewhere answers nothing");
    let (_, src, dst, _, m) = crate::iface::ipv6::tests::parse(&out[0]);
    assert_eq!((src, dst), (g, PEER));
    assert!(matches!(m, Icmpv6Repr::EchoReply { ident: 9, .. }));
    let syn = |dst| tcp6(PEER, dst, (47000, 80), 7, None, wtcp::Flags::SYN, &[], None);
    nic1.rx.inbox.push_back(syn(g));
    let out = round(s1, nic1, t + 1);
    assert_eq!(out.len(), 1);
    assert!(out[0].flags.syn && out[0].src == g);
    // The address another node holds is not ours: dropped, nothing answered.
    let before = s1.stats().drop_not_for_us;
    nic1.rx.inbox.push_back(syn(tentative));
    s1.poll(nic1, &ManualClock(t + 2), &mut NoLog);
    assert!(nic1.tx.outbox.is_empty());
    assert_eq!(s1.stats().drop_not_for_us, before + 1);
    // A peer beyond the link: answered through the router core 0 heard, which core 1
    // follows.
    assert_eq!(cores[1].0.ipv6_link().unwrap().router(), Some(router));
    let (s1, nic1) = &mut cores[1];
    let far: Ipv6Address = "2001:db8:99::5".parse().unwrap();
    nic1.rx.inbox.push_back(tcp6(
        far,
        g,
        (47001, 80),
        7,
        None,
        wtcp::Flags::SYN,
        &[],
        None,
    ));
    let out = round(s1, nic1, t + 3);
    assert!(out.len() == 1 && out[0].flags.syn && out[0].dst == far);
}

/// With no router (none advertised, no `--gw6`), core 1 drops a peer beyond the link as
/// core 0 would, and answers one on the link.
#[test]
fn without_a_router_core_1_answers_only_the_link() {
    let g: Ipv6Address = "2001:db8:7::80".parse().unwrap();
    let (mut cores, _, t) = two_cores_with(|c| c.ipv6_static = Some((g, 64)));
    assert_eq!(cores[1].0.ipv6_globals().collect::<Vec<_>>(), [g]);
    assert_eq!(cores[1].0.ipv6_link().unwrap().router(), None);
    let (s1, nic1) = &mut cores[1];
    let far: Ipv6Address = "2001:db8:99::5".parse().unwrap();
    let near: Ipv6Address = "2001:db8:7::5".parse().unwrap();
    let syn = |src, port| tcp6(src, g, (port, 80), 7, None, wtcp::Flags::SYN, &[], None);
    nic1.rx.inbox.push_back(syn(far, 47002));
    assert!(round(s1, nic1, t).is_empty());
    assert_eq!(s1.stats().drop_no_route, 1);
    for (src, port) in [(near, 47003), (PEER, 47004)] {
        nic1.rx.inbox.push_back(syn(src, port));
        assert_eq!(round(s1, nic1, t + 1).len(), 1, "{src}");
    }
}

#[test]
fn connections_to_an_address_core_0_lost_are_freed_on_core_1() {
    let (mut cores, us, t) = two_cores();
    let (s1, nic1) = &mut cores[1];
    get_big(s1, nic1, us, 48000, t);
    assert_eq!(cores[1].0.active(), 1);
    // Core 0's address leaves slot 0 (as after a DAD conflict found late, or expiry):
    // core 1 follows at its next round and frees the connection made to it.
    let mut slots = [None; crate::iface::share6::SLOTS];
    slots[0] = Some("fe80::99".parse().unwrap());
    cores[1].0.follow6(slots, None);
    assert_eq!(cores[1].0.active(), 0);
    assert_eq!(cores[1].0.stats().tcp_addr_expired, 1);
}

#[test]
fn packets_too_big_pass_only_when_not_taken_and_never_crowd_out_the_links_frames() {
    let (mut cores, us, t) = two_cores();
    let (s1, nic1) = &mut cores[1];
    get_big(s1, nic1, us, 49000, t);
    let first: Vec<Vec<u8>> = nic1.tx.outbox.drain(..).collect();
    // Taken where the connection is: not passed.
    nic1.rx.inbox.push_back(too_big(us, 1280, &first[1]));
    poll(&mut cores[1], t + 1_000_000);
    let st1 = cores[1].0.stats();
    assert_eq!((st1.icmp6_too_big, st1.ipv6_passed), (1, 0));
    // A forged one (no connection anywhere): passed up once, dropped at core 0, counted
    // there alone.
    let mut forged = first[1].clone();
    forged[14 + 40 + 2..14 + 40 + 4].copy_from_slice(&9u16.to_be_bytes());
    cores[1].1.rx.inbox.push_back(too_big(us, 1280, &forged));
    poll(&mut cores[1], t + 2_000_000);
    poll(&mut cores[0], t + 2_000_000);
    assert_eq!(cores[1].0.stats().ipv6_passed, 1);
    assert_eq!(cores[1].0.stats().drop_too_big, 0);
    assert_eq!(cores[0].0.stats().drop_too_big, 1);
    // A flood of them fills at most half the ring up; the link's own frame still goes.
    for _ in 0..40 {
        cores[1].1.rx.inbox.push_back(too_big(us, 1280, &forged));
    }
    let all = Ipv6Address::ALL_NODES;
    let na = Icmpv6Repr::NeighborAdvert {
        router: false,
        solicited: false,
        override_: true,
        target: "fe80::77".parse().unwrap(),
        target_lladdr: Some(crate::iface::ipv6::tests::PEER_MAC),
    };
    cores[1]
        .1
        .rx
        .inbox
        .push_back(frame(all.multicast_ethernet(), PEER, all, 255, &na, false));
    let passed = cores[1].0.stats().ipv6_passed;
    poll(&mut cores[1], t + 3_000_000);
    let st1 = cores[1].0.stats();
    let up = st1.ipv6_passed - passed;
    assert_eq!(
        up,
        1 + crate::iface::share6::RING_FRAMES as u64 / 2,
        "{st1:?}"
    );
    assert_eq!(
        st1.drop_ipv6_pass_full,
        40 - crate::iface::share6::RING_FRAMES as u64 / 2
    );
    // What the owner would drop anyway is not passed: an echo reply, a redirect-free
    // unknown message.
    let reply = Icmpv6Repr::EchoReply {
        ident: 1,
        seq_no: 1,
        data: &[0u8; 8],
    };
    let before = cores[1].0.stats().ipv6_passed;
    cores[1]
        .1
        .rx
        .inbox
        .push_back(frame(MAC, PEER, us, 64, &reply, false));
    poll(&mut cores[1], t + 4_000_000);
    assert_eq!(cores[1].0.stats().ipv6_passed, before);
    assert_eq!(cores[1].0.stats().drop_ipv6_unserved, 1);
    // A router solicitation to all-routers (a host's, at its link's start) is not for us,
    // on core 1 as on core 0.
    let rs = Icmpv6Repr::RouterSolicit {
        source_lladdr: Some(crate::iface::ipv6::tests::PEER_MAC),
    };
    let routers = Ipv6Address::ALL_ROUTERS;
    let not_for_us = cores[1].0.stats().drop_not_for_us;
    cores[1].1.rx.inbox.push_back(frame(
        routers.multicast_ethernet(),
        PEER,
        routers,
        255,
        &rs,
        false,
    ));
    poll(&mut cores[1], t + 5_000_000);
    let st1 = cores[1].0.stats();
    assert_eq!((st1.ipv6_passed, st1.drop_ipv6_unserved), (before, 1));
    assert_eq!(st1.drop_not_for_us, not_for_us + 1);
}
