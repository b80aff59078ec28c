//! The DHCPv6 client at its own level: a server's messages and the clock in, the messages
//! sent and the lease out.

use super::*;
use crate::wire::dhcpv6::{parse, IaNa};

const MAC: [u8; 6] = [2, 0, 0, 0, 0, 9];
const ADDR: Ipv6Address = Ipv6Address::new(0x2001, 0xdb8, 5, 0, 0, 0, 0, 0x185);
const OTHER: Ipv6Address = Ipv6Address::new(0x2001, 0xdb8, 5, 0, 0, 0, 0, 0x186);
const DNS: Ipv6Address = Ipv6Address::new(0x2001, 0xdb8, 5, 0, 0, 0, 0, 0x53);

fn server(n: u8) -> Duid {
    Duid::from_bytes(&[0, 1, 0, 1, n, n, n, n]).unwrap()
}

/// A message the client sent: (type, xid, server id, address asked for).
type Sent = (u8, [u8; 3], Option<Vec<u8>>, Option<[u8; 16]>);

fn sent(buf: &[u8]) -> Sent {
    let mut srv = None;
    let mut addr = None;
    let mut rest = &buf[4..];
    while rest.len() >= 4 {
        let code = u16::from_be_bytes([rest[0], rest[1]]);
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
        let body = &rest[4..4 + len];
        if code == 2 {
            srv = Some(body.to_vec());
        }
        if code == 3 && body.len() >= 12 + 28 {
            addr = Some(body[16..32].try_into().unwrap());
        }
        rest = &rest[4 + len..];
    }
    (buf[0], [buf[1], buf[2], buf[3]], srv, addr)
}

/// A server's answer to transaction `xid`.
fn answer(
    kind: MessageType,
    xid: [u8; 3],
    srv: u8,
    addr: Option<(Ipv6Address, u32, u32)>,
) -> ServerMessage {
    ServerMessage {
        kind,
        xid,
        client_id: Some(Duid::link_layer(MAC)),
        server_id: Some(server(srv)),
        ia_na: addr.map(|(a, preferred, valid)| IaNa {
            iaid: 1,
            t1: 0,
            t2: 0,
            addr: Some(IaAddress {
                addr: a,
                preferred,
                valid,
            }),
            revoked: None,
            status: None,
        }),
        status: None,
        preference: 0,
        dns: [Some(DNS), None, None],
        info_refresh: None,
        sol_max_rt: None,
        inf_max_rt: None,
    }
}

/// Runs the clock from `now` until the client sends (at most `limit` ns on); returns the
/// time and the message.
fn next_send(c: &mut Client, now: &mut u64, limit: u64) -> Sent {
    let end = *now + limit;
    let mut buf = [0u8; dhcpv6::MAX_EMIT];
    loop {
        if let Some(p) = c.poll(*now, &mut buf) {
            match p {
                Poll::Send(n) => return sent(&buf[..n]),
                Poll::Event(e) => panic!("unexpected {e:?}"),
            }
        }
        let d = c.deadline();
        assert!(
            d > *now && d <= end,
            "nothing sent by {end} (deadline {d}, now {now})"
        );
        *now = d;
    }
}

/// A client bound to ADDR from server 1 (preferred 1000 s, valid 2000 s) at the time
/// returned.
fn bound() -> (Client, u64) {
    let mut c = Client::new(MAC, 7);
    let mut now = 5 * NS;
    c.advertised(true, false, now);
    let (t, xid, ..) = next_send(&mut c, &mut now, 2 * NS);
    assert_eq!(t, MessageType::Solicit as u8);
    c.receive(
        &answer(MessageType::Advertise, xid, 1, Some((ADDR, 1000, 2000))),
        now,
    );
    let (t, xid, srv, addr) = next_send(&mut c, &mut now, 2 * NS);
    assert_eq!(t, MessageType::Request as u8);
    assert_eq!(srv.as_deref(), Some(server(1).as_bytes()));
    assert_eq!(addr, Some(ADDR.0));
    let e = c.receive(
        &answer(MessageType::Reply, xid, 1, Some((ADDR, 1000, 2000))),
        now,
    );
    let Some(Event::Leased(l)) = e else {
        panic!("{e:?}")
    };
    assert_eq!(l.addr, ADDR);
    assert_eq!(
        (l.preferred_until, l.valid_until),
        (now + 1000 * NS, now + 2000 * NS)
    );
    assert_eq!(c.phase(), Phase::Bound);
    assert_eq!(c.dns[0], Some(DNS));
    (c, now)
}

#[test]
fn managed_flag_solicits_collects_offers_requests_the_best_and_binds() {
    let mut c = Client::new(MAC, 3);
    let mut now = NS;
    assert_eq!(c.deadline(), u64::MAX);
    c.advertised(true, false, now);
    assert_eq!(c.phase(), Phase::Soliciting);
    // The first Solicit waits a random delay below a second.
    assert!(c.deadline() < now + NS);
    let (t, xid, srv, _) = next_send(&mut c, &mut now, NS);
    assert_eq!((t, srv), (1, None));
    // Offers during the first retransmission time are collected: the most preferred wins.
    let mut low = answer(MessageType::Advertise, xid, 1, Some((ADDR, 100, 200)));
    low.preference = 10;
    let mut high = answer(MessageType::Advertise, xid, 2, Some((OTHER, 100, 200)));
    high.preference = 20;
    assert_eq!(c.receive(&low, now), None);
    assert_eq!(c.receive(&high, now), None);
    assert_eq!(
        c.phase(),
        Phase::Soliciting,
        "collecting until the first RT ends"
    );
    let (t, _, srv, addr) = next_send(&mut c, &mut now, 2 * NS);
    assert_eq!(t, MessageType::Request as u8);
    assert_eq!(srv.as_deref(), Some(server(2).as_bytes()));
    assert_eq!(addr, Some(OTHER.0));
    bound();
}

#[test]
fn preference_255_is_taken_at_once() {
    let mut c = Client::new(MAC, 4);
    let mut now = NS;
    c.advertised(true, true, now);
    let (_, xid, ..) = next_send(&mut c, &mut now, NS);
    let mut a = answer(MessageType::Advertise, xid, 1, Some((ADDR, 100, 200)));
    a.preference = 255;
    c.receive(&a, now);
    assert_eq!(c.phase(), Phase::Requesting);
    let (t, ..) = next_send(&mut c, &mut now, 1);
    assert_eq!(t, MessageType::Request as u8);
}

#[test]
fn renew_at_t1_rebind_at_t2_lost_at_the_valid_lifetimes_end() {
    let (mut c, start) = bound();
    // T1 = 500 s, T2 = 800 s (half and 0.8 of the preferred 1000 s).
    let mut now = start;
    let (t, _, srv, addr) = next_send(&mut c, &mut now, 600 * NS);
    assert_eq!(t, MessageType::Renew as u8);
    assert_eq!(now, start + 500 * NS);
    assert_eq!(
        (srv.as_deref(), addr),
        (Some(server(1).as_bytes()), Some(ADDR.0))
    );
    // Unanswered: Renew again (10 s, doubling) until T2, then Rebind with no server id.
    let mut renews = 1;
    loop {
        let (t, _, srv, _) = next_send(&mut c, &mut now, 400 * NS);
        if t == MessageType::Rebind as u8 {
            assert_eq!(srv, None);
            break;
        }
        renews += 1;
        assert_eq!(t, MessageType::Renew as u8);
    }
    assert_eq!(now, start + 800 * NS);
    assert!(
        (4..=6).contains(&renews),
        "{renews} renews in 300 s from 10 s doubling"
    );
    // Unanswered until the valid lifetime ends: lost, and soliciting again.
    let mut buf = [0u8; dhcpv6::MAX_EMIT];
    loop {
        let d = c.deadline();
        assert!(d <= start + 2000 * NS);
        now = d;
        match c.poll(now, &mut buf) {
            Some(Poll::Event(e)) => {
                assert_eq!(e, Event::Lost(ADDR));
                break;
            }
            Some(Poll::Send(n)) => assert_eq!(buf[0], MessageType::Rebind as u8, "{n}"),
            None => {}
        }
    }
    assert_eq!(now, start + 2000 * NS);
    assert_eq!(c.phase(), Phase::Soliciting);
}

#[test]
fn a_renew_answered_extends_the_lease_and_no_binding_requests_it_again() {
    let (mut c, start) = bound();
    let mut now = start;
    let (_, xid, ..) = next_send(&mut c, &mut now, 600 * NS);
    let e = c.receive(
        &answer(MessageType::Reply, xid, 1, Some((ADDR, 3000, 4000))),
        now,
    );
    let Some(Event::Leased(l)) = e else {
        panic!("{e:?}")
    };
    assert_eq!(l.valid_until, now + 4000 * NS);
    assert_eq!(c.phase(), Phase::Bound);
    let (t, xid, ..) = next_send(&mut c, &mut now, 2000 * NS);
    assert_eq!(t, MessageType::Renew as u8);
    let mut nb = answer(MessageType::Reply, xid, 1, None);
    nb.ia_na = Some(IaNa {
        iaid: 1,
        t1: 0,
        t2: 0,
        addr: None,
        revoked: None,
        status: Some(status::NO_BINDING),
    });
    // §18.2.10.1: a Request for the same address to the same server, at once.
    assert_eq!(c.receive(&nb, now), None);
    assert_eq!(c.phase(), Phase::Requesting);
    let (t, xid, srv, addr) = next_send(&mut c, &mut now, NS);
    assert_eq!(t, MessageType::Request as u8);
    assert_eq!(
        (srv.as_deref(), addr),
        (Some(server(1).as_bytes()), Some(ADDR.0))
    );
    let e = c.receive(
        &answer(MessageType::Reply, xid, 1, Some((ADDR, 3000, 4000))),
        now,
    );
    assert!(
        matches!(e, Some(Event::Leased(l)) if l.addr == ADDR),
        "{e:?}"
    );
}

/// A Reply giving the held address a valid lifetime of 0 takes it back: lost, and
/// soliciting again. One offering another address moves the lease to it.
#[test]
fn an_address_taken_back_is_lost_and_one_replaced_is_leased_anew() {
    let (mut c, start) = bound();
    let mut now = start;
    let (_, xid, ..) = next_send(&mut c, &mut now, 600 * NS);
    let mut back = answer(MessageType::Reply, xid, 1, None);
    back.ia_na = Some(IaNa {
        iaid: 1,
        t1: 0,
        t2: 0,
        addr: None,
        revoked: Some(ADDR),
        status: None,
    });
    assert_eq!(c.receive(&back, now), Some(Event::Lost(ADDR)));
    assert_eq!(c.phase(), Phase::Soliciting);
    let (mut c, start) = bound();
    let mut now = start;
    let (_, xid, ..) = next_send(&mut c, &mut now, 600 * NS);
    let e = c.receive(
        &answer(MessageType::Reply, xid, 1, Some((OTHER, 100, 200))),
        now,
    );
    assert!(
        matches!(e, Some(Event::Leased(l)) if l.addr == OTHER),
        "{e:?}"
    );
}

/// An offer of an address no host may hold (any host on the link sees our Solicit and
/// could answer it) is not an offer; an IA_NA with T1 after T2 is discarded; SOL_MAX_RT
/// out of 60..=86400 is ignored.
#[test]
fn offers_of_addresses_no_host_holds_are_refused() {
    let mut c = Client::new(MAC, 11);
    let mut now = NS;
    c.advertised(true, false, now);
    let (_, xid, ..) = next_send(&mut c, &mut now, NS);
    for bad in ["ff02::1", "fe80::1", "::1", "::", "::ffff:10.0.0.1"] {
        let a: Ipv6Address = bad.parse().unwrap();
        let mut m = answer(MessageType::Advertise, xid, 1, Some((a, 100, 200)));
        m.preference = 255;
        m.sol_max_rt = Some(1);
        assert_eq!(c.receive(&m, now), None, "{bad}");
    }
    let mut late = answer(MessageType::Advertise, xid, 1, Some((ADDR, 100, 200)));
    late.preference = 255;
    late.ia_na.as_mut().unwrap().t1 = 200;
    late.ia_na.as_mut().unwrap().t2 = 100;
    assert_eq!(c.receive(&late, now), None);
    assert_eq!(c.refused.no_address, 6);
    assert_eq!(c.phase(), Phase::Soliciting);
    assert_eq!(c.sol_max_rt, SOL_MAX_RT_NS);
}

/// A server answering every Renew at once with a preferred lifetime of 0 (so T1 = T2 = 0)
/// is renewed with no sooner than a minute after each answer, not as fast as it answers.
#[test]
fn renewals_are_at_least_a_minute_apart_whatever_the_server_says() {
    let (mut c, start) = bound();
    let mut now = start;
    for _ in 0..5 {
        let before = now;
        let (t, xid, ..) = next_send(&mut c, &mut now, 3000 * NS);
        assert_eq!(t, MessageType::Renew as u8);
        assert!(now >= before + u64::from(MIN_T1_S) * NS, "{now} {before}");
        let e = c.receive(
            &answer(MessageType::Reply, xid, 1, Some((ADDR, 0, 4000))),
            now,
        );
        assert!(matches!(e, Some(Event::Leased(_))), "{e:?}");
    }
}

#[test]
fn answers_not_ours_are_refused_and_counted() {
    let mut c = Client::new(MAC, 5);
    let mut now = NS;
    // Before anything was sent.
    c.receive(
        &answer(MessageType::Advertise, [0; 3], 1, Some((ADDR, 1, 2))),
        now,
    );
    c.advertised(true, false, now);
    let (_, xid, ..) = next_send(&mut c, &mut now, NS);
    let other_xid = [xid[0] ^ 1, xid[1], xid[2]];
    c.receive(
        &answer(MessageType::Advertise, other_xid, 1, Some((ADDR, 1, 2))),
        now,
    );
    let mut not_ours = answer(MessageType::Advertise, xid, 1, Some((ADDR, 1, 2)));
    not_ours.client_id = Some(Duid::link_layer([9; 6]));
    c.receive(&not_ours, now);
    let mut anonymous = answer(MessageType::Advertise, xid, 1, Some((ADDR, 1, 2)));
    anonymous.server_id = None;
    c.receive(&anonymous, now);
    c.receive(&answer(MessageType::Advertise, xid, 1, None), now);
    // A Reply while soliciting is not an answer to anything.
    c.receive(&answer(MessageType::Reply, xid, 1, Some((ADDR, 1, 2))), now);
    assert_eq!(
        c.refused,
        Refusals {
            unexpected: 3,
            identity: 2,
            no_address: 1
        }
    );
    assert_eq!(c.phase(), Phase::Soliciting);
    assert_eq!(c.lease(), None);
}

#[test]
fn retransmissions_double_with_jitter_and_a_request_gives_up_after_ten() {
    let mut c = Client::new(MAC, 6);
    let mut now = NS;
    c.advertised(true, false, now);
    let (_, xid, ..) = next_send(&mut c, &mut now, NS);
    // Solicit: 1 s, then about 2, 4, 8 ... up to an hour (the first gap is the first RT,
    // "twice" half a second).
    let mut last = now;
    let mut rt = NS / 2;
    for _ in 0..14 {
        next_send(&mut c, &mut now, 2 * SOL_MAX_RT_NS);
        let gap = now - last;
        let want = (2 * rt).min(SOL_MAX_RT_NS);
        assert!(
            gap >= want - want / 10 - 2 * rt / 10 && gap <= want + want / 10 + 2 * rt / 10,
            "{gap} vs {want}"
        );
        rt = gap;
        last = now;
    }
    assert!(rt <= SOL_MAX_RT_NS + SOL_MAX_RT_NS / 10, "capped: {rt}");
    let _ = xid;
    // A Request unanswered: ten tries, then soliciting again.
    let mut c = Client::new(MAC, 8);
    let mut now = NS;
    c.advertised(true, false, now);
    let (_, xid, ..) = next_send(&mut c, &mut now, NS);
    let mut a = answer(MessageType::Advertise, xid, 1, Some((ADDR, 1, 2)));
    a.preference = 255;
    c.receive(&a, now);
    for i in 0..REQ_MAX_RC {
        let (t, ..) = next_send(&mut c, &mut now, 60 * NS);
        assert_eq!(t, MessageType::Request as u8, "try {i}");
    }
    let (t, ..) = next_send(&mut c, &mut now, 60 * NS);
    assert_eq!(t, MessageType::Solicit as u8);
}

#[test]
fn other_flag_alone_asks_for_dns_and_refreshes() {
    let mut c = Client::new(MAC, 9);
    let mut now = NS;
    c.advertised(false, true, now);
    assert_eq!(c.phase(), Phase::Informing);
    let (t, xid, srv, addr) = next_send(&mut c, &mut now, NS);
    assert_eq!(
        (t, srv, addr),
        (MessageType::InformationRequest as u8, None, None)
    );
    let mut r = answer(MessageType::Reply, xid, 1, None);
    r.info_refresh = Some(60); // below the minimum: ten minutes
    assert_eq!(c.receive(&r, now), None);
    assert_eq!((c.phase(), c.dns[0]), (Phase::Informed, Some(DNS)));
    assert_eq!(c.deadline(), now + IRT_MINIMUM_NS);
    // The M flag later: an address is asked for.
    c.advertised(true, true, now);
    assert_eq!(c.phase(), Phase::Soliciting);
}

#[test]
fn a_leased_address_in_use_is_given_up_and_asked_again_a_minute_later() {
    let (mut c, start) = bound();
    c.declined(ADDR, start);
    assert_eq!((c.phase(), c.lease()), (Phase::Idle, None));
    assert_eq!(c.deadline(), start + DECLINED_WAIT_NS);
    let mut now = start;
    let (t, ..) = next_send(&mut c, &mut now, DECLINED_WAIT_NS + NS);
    assert_eq!(t, MessageType::Solicit as u8);
    assert!(now >= start + DECLINED_WAIT_NS);
}

/// dnsmasq's captured answers drive a client whose transaction ids are set to the
/// capture's (the client's own ids are random).
#[test]
fn dnsmasqs_captured_answers_bind_the_client() {
    static PCAP: &[u8] = include_bytes!("../../../testdata/dhcpv6.pcap");
    let p: Vec<&[u8]> = crate::capture_tests::frames(PCAP)
        .into_iter()
        .map(|f| &f[62..])
        .collect();
    let mut c = Client::new([2, 0, 0, 0, 0, 2], 1);
    let mut now = NS;
    c.advertised(true, false, now);
    let mut buf = [0u8; dhcpv6::MAX_EMIT];
    while c.poll(now, &mut buf).is_none() {
        now = c.deadline();
    }
    let mut adv = parse(p[1]).unwrap();
    adv.xid = c.tx().unwrap().xid;
    adv.preference = 255;
    c.receive(&adv, now);
    let Some(Poll::Send(_)) = c.poll(now, &mut buf) else {
        panic!()
    };
    let mut rep = parse(p[3]).unwrap();
    rep.xid = c.tx().unwrap().xid;
    let Some(Event::Leased(l)) = c.receive(&rep, now) else {
        panic!()
    };
    assert_eq!(
        l.addr,
        Ipv6Address::new(0x2001, 0xdb8, 5, 0, 0, 0, 0, 0x185)
    );
    assert_eq!(l.valid_until, now + 3600 * NS);
}
