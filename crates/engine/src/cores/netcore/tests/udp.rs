//! The stateless UDP protocol in network-core mode: core 0 hands each request to the
//! next HTTP core round robin (the UDP paper, Fig. 3), keeps no mapping, and the core id in
//! every packet says which core answered; the bodies still leave without a copy.

use super::*;
use crate::udp::wire::{write_request, Header, Start, State};
use crate::wire::{UdpPacket, UdpRepr};

const UDP_PORT: u16 = 8081;

fn udp_config(tcbs: usize, core: u8) -> Config {
    let mut cfg = config(tcbs);
    let mut u = crate::udp::Config::new(UDP_PORT);
    u.paper_mode = true;
    u.core = core;
    cfg.udp = Some(u);
    cfg
}

fn udp_request(sport: u16, path: &str) -> Vec<u8> {
    let mut req = [0u8; 1500];
    let n = write_request(&mut req, "t", path, Start::Initial, None, 0).unwrap();
    let mut f = vec![0u8; L2L3 + 8 + n];
    crate::iface::egress::write_l2l3(
        &mut f,
        CLIENT_MAC,
        SERVER_MAC,
        CLIENT_IP,
        SERVER_IP,
        IpProtocol::Udp,
        8 + n,
    );
    UdpRepr {
        src_port: sport,
        dst_port: UDP_PORT,
    }
    .emit(
        &mut UdpPacket::new_unchecked(&mut f[L2L3..]),
        CLIENT_IP,
        SERVER_IP,
        n,
        |p| p.copy_from_slice(&req[..n]),
    );
    f
}

/// (destination port, data header, payload) of a UDP frame the machine sent.
fn answer(frame: &[u8]) -> Option<(u16, Header, Vec<u8>)> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    let u = UdpPacket::new_checked(ip.payload()).ok()?;
    assert!(u.verify_checksum(SERVER_IP, CLIENT_IP), "bad UDP checksum");
    let (h, p) = Header::parse(u.payload()).ok()?;
    Some((u.dst_port(), h, p.to_vec()))
}

#[test]
fn udp_requests_go_round_robin_and_each_core_signs_its_packets() {
    let clock = TestClock(Rc::new(Cell::new(1_000_000)));
    let (ends, nics): (Vec<_>, Vec<_>) = (0..2)
        .map(|_| {
            let (n, h) = links(RingSizes::for_tcbs(8).with_udp_ids(5000));
            (n, RingNic::new(h, SERVER_MAC))
        })
        .unzip();
    let mut n0: Core0 = NetCoreNic::new(
        FakeQueues::default(),
        FakeQueues::default(),
        SERVER_MAC,
        clock.clone(),
        NetCoreSetup {
            ends,
            http_tcbs: 8,
            bsp_tcbs: None,
            addressing: Addressing::new(&udp_config(8, 0), SERVER_MAC),
        },
    );
    let mut s0 = Server::new(udp_config(1, 0), site(), SERVER_MAC);
    let mut http: Vec<_> = nics
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            (
                Server::new(udp_config(8, i as u8 + 1), site(), SERVER_MAC),
                n,
            )
        })
        .collect();
    let frames: Vec<_> = (0..4).map(|i| udp_request(5000 + i, "/")).collect();
    n0.inner_mut().0.inbox.extend(frames);
    s0.poll(&mut n0, &clock, &mut NoLog);
    assert!(n0.map().is_empty(), "no mapping for UDP requests");
    assert_eq!(n0.dispatch_counters().udp_dispatched, 4);
    for (s, n) in &mut http {
        s.poll(n, &clock, &mut NoLog);
    }
    s0.poll(&mut n0, &clock, &mut NoLog);
    let out = core::mem::take(&mut n0.inner_mut().1.outbox);
    let packets: Vec<_> = out.iter().filter_map(|f| answer(f)).collect();
    // Every request: Get-Ack, head and the page's data packets.
    let data = site().0.identity.data;
    let per = 2 + data.len().div_ceil(crate::udp::wire::UNIT);
    assert_eq!(packets.len(), 4 * per);
    for (port, h, _) in &packets {
        let want_core = if (port - 5000) % 2 == 0 { 1 } else { 2 };
        assert_eq!(h.core, want_core, "port {port}: round robin from core 1");
    }
    let for_first: Vec<_> = packets.iter().filter(|p| p.0 == 5000).collect();
    assert_eq!(for_first[0].1.state, State::GetAck);
    assert_eq!(for_first[1].1.state, State::Header);
    assert_eq!(for_first[per - 1].1.state, State::Last);
    let body: Vec<u8> = for_first[2..].iter().flat_map(|p| p.2.clone()).collect();
    assert_eq!(body, data);
    assert_eq!(s0.stats().udp_datagrams, 0, "core 0's server answered none");
    assert_eq!(http[0].0.stats().udp_initial, 2);
    assert_eq!(http[1].0.stats().udp_initial, 2);
    // The UDP paper, §5: core 0 popped an id per request (each its own), the HTTP cores
    // answered with it, and core 0 pushed it back once it had sent the last packet.
    let mut ids: Vec<u16> = packets.iter().map(|p| p.1.request_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(
        ids,
        [1, 2, 3, 4],
        "four requests in flight at once, four ids"
    );
    s0.poll(&mut n0, &clock, &mut NoLog);
    let d = n0.dispatch_counters();
    assert_eq!((d.udp_done, d.udp_ids_max, d.udp_no_id), (4, 4, 0));
    assert!(d.udp_time_max_ns <= d.udp_time_sum_ns);
    // The ids are back on the stack: the next request gets id 4 again (the top).
    n0.inner_mut().0.inbox.push_back(udp_request(6000, "/"));
    s0.poll(&mut n0, &clock, &mut NoLog);
    for (s, n) in &mut http {
        s.poll(n, &clock, &mut NoLog);
    }
    s0.poll(&mut n0, &clock, &mut NoLog);
    let out = core::mem::take(&mut n0.inner_mut().1.outbox);
    let again: Vec<_> = out.iter().filter_map(|f| answer(f)).collect();
    assert!(
        again.iter().all(|p| p.1.request_id == 4),
        "{:?}",
        again[0].1
    );
    assert_eq!(
        http[0].0.stats().udp_ids_max,
        0,
        "the HTTP cores' own stacks unused"
    );
}

#[test]
fn a_full_id_stack_drops_requests_and_an_unsent_id_comes_back() {
    let clock = TestClock(Rc::new(Cell::new(1_000_000)));
    let (ends, mut nics): (Vec<_>, Vec<_>) = (0..1)
        .map(|_| {
            let (n, h) = links(RingSizes::for_tcbs(8).with_udp_ids(2));
            (n, RingNic::new(h, SERVER_MAC))
        })
        .unzip();
    let mut cfg = udp_config(8, 0);
    cfg.udp.as_mut().unwrap().ids = 2;
    let mut n0: Core0 = NetCoreNic::new(
        FakeQueues::default(),
        FakeQueues::default(),
        SERVER_MAC,
        clock.clone(),
        NetCoreSetup {
            ends,
            http_tcbs: 8,
            bsp_tcbs: None,
            addressing: Addressing::new(&cfg, SERVER_MAC),
        },
    );
    let local = dispatch(
        &mut n0,
        (0..5).map(|i| udp_request(7000 + i, "/")).collect(),
    );
    assert!(local.is_empty());
    let d = n0.dispatch_counters();
    assert_eq!((d.udp_dispatched, d.udp_no_id, d.udp_ids_max), (2, 3, 2));
    assert_eq!(
        clist(&mut nics[0]).len(),
        2,
        "only the two with an id went on"
    );
}
