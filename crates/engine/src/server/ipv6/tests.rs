//! A server with IPv6 on: DAD's probe at start, the address preferred a second later,
//! then a solicitation answered, a ping answered, the hop-limit rule and what is not
//! served counted; a DAD conflict moves the address; a server without IPv6 counts it all
//! as not served.

use std::vec::Vec;

use crate::fake::FakeNic;
use crate::iface::addr6::{Event, Phase};
use crate::iface::ipv6::tests::{frame, ns, parse, peer, MAC, PEER_MAC};
use crate::nic::Clock;
use crate::resource::{Found, Lookup};
use crate::server::{Config, NoLog, Server};
use crate::wire::{Icmpv6Repr, Ipv4Address, Ipv6Address};

#[derive(Clone, Copy)]
struct Nothing;
impl Lookup<'static> for Nothing {
    fn lookup(&self, _: &[u8]) -> Found<'static> {
        Found::NotFound
    }
}

struct At(u64);
impl Clock for At {
    fn now_ns(&self) -> u64 {
        self.0
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000
    }
}

const SEC: u64 = 1_000_000_000;

fn server(ipv6: bool) -> Server<Nothing> {
    let mut cfg = Config::new(Ipv4Address([10, 0, 0, 2]), 24, [3; 16]);
    cfg.ipv6 = ipv6;
    cfg.ipv6_secret = Some([9; 16]);
    Server::new(cfg, Nothing, MAC)
}

fn sent(nic: &mut FakeNic) -> Vec<Vec<u8>> {
    nic.tx.outbox.drain(..).collect()
}

/// Polls at 0 (DAD's probe goes within a second) and past the probe's RetransTimer.
fn started(s: &mut Server<Nothing>, nic: &mut FakeNic) -> (Ipv6Address, u64) {
    s.poll(nic, &At(0), &mut NoLog);
    let mut t = 0;
    let mut probes = Vec::new();
    while t < 3 * SEC {
        t += SEC / 10;
        s.poll(nic, &At(t), &mut NoLog);
        probes.extend(sent(nic));
    }
    let (addr, phase) = s.ipv6_address().unwrap();
    assert_eq!(phase, Phase::Preferred);
    assert_eq!(s.take_ipv6_news(), Some(Event::Preferred(addr)));
    // Once the address is ours, routers are asked (within a second): from it, to
    // all-routers, with our MAC.
    let (rs, probes): (Vec<_>, Vec<_>) = probes
        .into_iter()
        .partition(|f| matches!(parse(f).4, Icmpv6Repr::RouterSolicit { .. }));
    assert_eq!(rs.len(), 1, "one router solicitation so far");
    let (_, src, dst, _, m) = parse(&rs[0]);
    assert_eq!((src, dst), (addr, Ipv6Address::ALL_ROUTERS));
    assert_eq!(
        m,
        Icmpv6Repr::RouterSolicit {
            source_lladdr: Some(MAC)
        }
    );
    assert_eq!(s.stats().nd_router_solicits, 1);
    // Its solicited-node group joined (MLDv2, twice: the Robustness Variable) from `::`
    // before DAD's probe, and twice again from the address once it is ours.
    let (joins, probes): (Vec<_>, Vec<_>) = probes
        .into_iter()
        .partition(|f| matches!(parse(f).4, Icmpv6Repr::MldReport { .. }));
    assert_eq!(joins.len(), 4);
    for (i, j) in joins.iter().enumerate() {
        let src = if i < 2 {
            Ipv6Address::UNSPECIFIED
        } else {
            addr
        };
        crate::iface::ipv6::tests::assert_mld_join(j, src, addr.solicited_node());
    }
    assert_eq!(s.stats().mld_reports, 4);
    assert_eq!(probes.len(), 1, "DupAddrDetectTransmits = 1");
    let (_, src, _, _, m) = parse(&probes[0]);
    assert_eq!(src, Ipv6Address::UNSPECIFIED);
    assert!(matches!(m, Icmpv6Repr::NeighborSolicit { target, .. } if target == addr));
    assert_eq!(s.stats().nd_solicitations, 1);
    (addr, t)
}

#[test]
fn a_server_takes_its_address_answers_solicitations_and_ping_and_counts_the_rest() {
    let mut s = server(true);
    let mut nic = FakeNic::new(MAC);
    let (us, t) = started(&mut s, &mut nic);
    assert!(us.is_link_local());
    let sn = us.solicited_node();
    nic.rx.inbox.push_back(frame(
        sn.multicast_ethernet(),
        peer(),
        sn,
        255,
        &ns(us),
        false,
    ));
    let data = [5u8; 56];
    let echo = Icmpv6Repr::EchoRequest {
        ident: 1,
        seq_no: 2,
        data: &data,
    };
    nic.rx
        .inbox
        .push_back(frame(MAC, peer(), us, 64, &echo, false));
    // Off the link (hop limit 64 on a solicitation), and a bad checksum.
    nic.rx
        .inbox
        .push_back(frame(MAC, peer(), us, 64, &ns(us), false));
    nic.rx
        .inbox
        .push_back(frame(MAC, peer(), us, 64, &echo, true));
    s.poll(&mut nic, &At(t), &mut NoLog);
    let out = sent(&mut nic);
    assert_eq!(out.len(), 2);
    let (dst_mac, src, dst, _, m) = parse(&out[0]);
    assert_eq!((dst_mac, src, dst), (PEER_MAC, us, peer()));
    assert!(matches!(
        m,
        Icmpv6Repr::NeighborAdvert {
            solicited: true,
            target_lladdr: Some(MAC),
            ..
        }
    ));
    let (_, _, _, _, m) = parse(&out[1]);
    assert_eq!(
        m,
        Icmpv6Repr::EchoReply {
            ident: 1,
            seq_no: 2,
            data: &data
        }
    );
    let st = s.stats();
    assert_eq!(
        (
            st.nd_advertisements,
            st.icmp6_echo,
            st.drop_nd_hop_limit,
            st.drop_checksum
        ),
        (1, 1, 1, 1)
    );
    let link = s.ipv6_link().unwrap();
    assert_eq!(link.neigh.state(peer()).map(|e| e.1), Some(PEER_MAC));
}

#[test]
fn a_dad_conflict_moves_the_address_and_is_counted() {
    let mut s = server(true);
    let mut nic = FakeNic::new(MAC);
    s.poll(&mut nic, &At(0), &mut NoLog);
    let (first, _) = s.ipv6_address().unwrap();
    // Someone already holds it: its advertisement, before our probe's time is up.
    let na = Icmpv6Repr::NeighborAdvert {
        router: false,
        solicited: false,
        override_: true,
        target: first,
        target_lladdr: Some(PEER_MAC),
    };
    let all = Ipv6Address::ALL_NODES;
    nic.rx
        .inbox
        .push_back(frame(all.multicast_ethernet(), first, all, 255, &na, false));
    s.poll(&mut nic, &At(SEC / 100), &mut NoLog);
    let Some(Event::Duplicate { taken, next }) = s.take_ipv6_news() else {
        panic!()
    };
    assert_eq!(taken, first);
    assert_eq!(s.stats().nd_dad_conflicts, 1);
    let mut t = SEC / 100;
    while t < 4 * SEC {
        t += SEC / 10;
        s.poll(&mut nic, &At(t), &mut NoLog);
    }
    assert_eq!(s.ipv6_address(), Some((next, Phase::Preferred)));
}

#[test]
fn without_ipv6_every_ipv6_frame_is_counted_as_not_served() {
    let mut s = server(false);
    let mut nic = FakeNic::new(MAC);
    let us: Ipv6Address = "fe80::2".parse().unwrap();
    let sn = us.solicited_node();
    nic.rx.inbox.push_back(frame(
        sn.multicast_ethernet(),
        peer(),
        sn,
        255,
        &ns(us),
        false,
    ));
    s.poll(&mut nic, &At(0), &mut NoLog);
    s.poll(&mut nic, &At(5 * SEC), &mut NoLog);
    assert!(sent(&mut nic).is_empty());
    assert_eq!(s.stats().drop_ipv6_unserved, 1);
    assert_eq!(s.ipv6_address(), None);
}
