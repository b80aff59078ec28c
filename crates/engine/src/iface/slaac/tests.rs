//! The SLAAC machine at its own level: advertisements and the clock in, addresses,
//! solicitations and news out.

use super::*;
use crate::iface::addr6::RETRANS_NS;
use std::vec::Vec;

const MAC: EthernetAddress = EthernetAddress([2, 0xbe, 0xef, 0, 0, 1]);
const SECRET: [u8; 16] = [0x42; 16];
const S: u64 = NS;

fn router() -> Ipv6Address {
    "fe80::1".parse().unwrap()
}

/// A Prefix Information option (RFC 4861 §4.6.2) with the L and A flags as given.
fn prefix_opt(prefix: &str, len: u8, auto: bool, valid: u32, preferred: u32) -> Vec<u8> {
    let p: Ipv6Address = prefix.parse().unwrap();
    let mut o = vec![3, 4, len, 0x80 | if auto { 0x40 } else { 0 }];
    o.extend_from_slice(&valid.to_be_bytes());
    o.extend_from_slice(&preferred.to_be_bytes());
    o.extend_from_slice(&[0; 4]);
    o.extend_from_slice(&p.0);
    o
}

fn mtu_opt(mtu: u32) -> Vec<u8> {
    let mut o = vec![5, 1, 0, 0];
    o.extend_from_slice(&mtu.to_be_bytes());
    o
}

fn advert(r: &mut Routers, src: Ipv6Address, lifetime: u16, opts: &[u8], now: u64) {
    let o = NdiscOptions::parse(opts).unwrap();
    r.advert(src, lifetime, &o, 1500, now).unwrap();
}

/// Runs the clock until the address of `prefix` passes DAD; returns it.
fn settle(r: &mut Routers, now: &mut u64) -> Vec<Ipv6Address> {
    let mut got = Vec::new();
    for _ in 0..20 {
        *now = r.deadline().max(*now);
        if *now == u64::MAX {
            break;
        }
        while let Some(e) = r.poll(*now) {
            if let Slaac::Address(Event::Preferred(a)) = e {
                got.push(a);
            }
        }
        if got.len() == r.prefixes.iter().flatten().count() {
            break;
        }
    }
    got
}

#[test]
fn an_advertised_prefix_makes_a_stable_global_address_after_dad() {
    let mut r = Routers::new(SECRET, MAC);
    let opts = prefix_opt("2001:db8:1::", 64, true, 86400, 14400);
    advert(&mut r, router(), 1800, &opts, 0);
    assert_eq!(r.default_router(), Some(router()));
    // Tentative first: DAD's probe, then preferred.
    let p = r.prefixes[0].as_ref().unwrap();
    let a = p.addr.addr();
    assert_eq!(&a.0[..8], &[0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0]);
    assert_eq!(r.addresses().count(), 0);
    let t = r.deadline();
    assert!(matches!(r.poll(t), Some(Slaac::Address(Event::Probe { target, .. })) if target == a));
    assert_eq!(
        r.poll(t + RETRANS_NS),
        Some(Slaac::Address(Event::Preferred(a)))
    );
    assert_eq!(r.addresses().collect::<Vec<_>>(), [a]);
    // Stable: the same secret, MAC and prefix give the same address; another prefix another.
    let mut again = Routers::new(SECRET, MAC);
    advert(&mut again, router(), 1800, &opts, 5 * S);
    assert_eq!(again.prefixes[0].as_ref().unwrap().addr.addr(), a);
    let other = prefix_opt("2001:db8:2::", 64, true, 86400, 14400);
    advert(&mut again, router(), 1800, &other, 5 * S);
    let b = again.prefixes[1].as_ref().unwrap().addr.addr();
    assert_ne!(&a.0[8..], &b.0[8..]);
}

#[test]
fn prefixes_that_form_nothing_are_refused() {
    let mut r = Routers::new(SECRET, MAC);
    let mut opts = prefix_opt("fe80::", 64, true, 100, 100); // link-local
    opts.extend(prefix_opt("2001:db8:1::", 64, true, 100, 200)); // preferred > valid
    opts.extend(prefix_opt("2001:db8:2::", 48, true, 100, 100)); // not a /64
    opts.extend(prefix_opt("2001:db8:3::", 64, false, 100, 100)); // no A flag: not ours
    opts.extend(prefix_opt("2001:db8:4::", 64, true, 0, 0)); // valid 0: nothing to make
    opts.extend(prefix_opt("ff02::", 64, true, 100, 100)); // multicast
    opts.extend(prefix_opt("::", 64, true, 100, 100)); // ::/64: loopback, v4-mapped
    advert(&mut r, router(), 0, &opts, 0);
    assert!(r.prefixes.iter().all(|p| p.is_none()));
    assert_eq!(r.refused, 5);
    // Router lifetime 0: not a default router.
    assert_eq!(r.default_router(), None);
    // An advertisement from a global source is not taken at all.
    let o = NdiscOptions::parse(&[]).unwrap();
    let g: Ipv6Address = "2001:db8::1".parse().unwrap();
    assert_eq!(r.advert(g, 1800, &o, 1500, 0), Err(Refused::NotLinkLocal));
    assert_eq!(r.default_router(), None);
}

#[test]
fn lifetimes_follow_rfc4862_and_a_forged_short_one_cannot_cut_an_address() {
    let mut r = Routers::new(SECRET, MAC);
    advert(
        &mut r,
        router(),
        1800,
        &prefix_opt("2001:db8:1::", 64, true, 86400, 600),
        0,
    );
    let mut now = 0;
    let a = settle(&mut r, &mut now)[0];
    let p = |r: &Routers| r.prefixes[0].as_ref().unwrap().valid_until;
    // A valid lifetime of 60 s (< 2 h, and less than left): becomes two hours.
    advert(
        &mut r,
        router(),
        1800,
        &prefix_opt("2001:db8:1::", 64, true, 60, 30),
        now,
    );
    assert_eq!(p(&r), now + TWO_HOURS_NS);
    // Again now that two hours or less are left: unchanged.
    advert(
        &mut r,
        router(),
        1800,
        &prefix_opt("2001:db8:1::", 64, true, 60, 30),
        now + S,
    );
    assert_eq!(p(&r), now + TWO_HOURS_NS);
    // More than two hours: taken.
    advert(
        &mut r,
        router(),
        1800,
        &prefix_opt("2001:db8:1::", 64, true, 9000, 30),
        now + S,
    );
    assert_eq!(p(&r), now + S + 9000 * S);
    // Preferred lifetime over: deprecated, still held and answered.
    let t = now + S + 31 * S;
    assert_eq!(r.poll(t), None);
    assert_eq!(r.addresses().collect::<Vec<_>>(), [a]);
    // Valid lifetime over: gone, and said.
    let end = now + S + 9000 * S;
    assert!(r.deadline() <= end);
    let mut got = None;
    while let Some(e) = r.poll(end) {
        got = Some(e);
    }
    assert_eq!(got, Some(Slaac::Expired(a)));
    assert_eq!(r.addresses().count(), 0);
    // The router's lifetime (1800 s) ended too.
    assert_eq!(r.default_router(), None);
}

#[test]
fn solicitations_go_three_times_four_seconds_apart_until_an_advert() {
    let mut r = Routers::new(SECRET, MAC);
    r.start(10 * S, 300_000_000);
    let mut sent = Vec::new();
    for _ in 0..3 {
        let now = r.deadline();
        assert_eq!(r.poll(now), Some(Slaac::Solicit));
        assert!(!r.unanswered());
        sent.push(now);
    }
    assert_eq!(
        sent,
        [
            10 * S + 300_000_000,
            14 * S + 300_000_000,
            18 * S + 300_000_000
        ]
    );
    // A second after the last (MAX_RTR_SOLICITATION_DELAY), none answered: no router
    // (RFC 4861 §6.3.7), and nothing more to do.
    assert_eq!(r.deadline(), 19 * S + 300_000_000);
    assert_eq!(r.poll(19 * S), None);
    assert!(!r.unanswered());
    assert_eq!(r.poll(19 * S + 300_000_000), None);
    assert!(r.unanswered());
    assert_eq!(r.deadline(), u64::MAX);
    // An advertisement after the first stops the rest.
    let mut r = Routers::new(SECRET, MAC);
    r.start(0, 0);
    assert_eq!(r.poll(0), Some(Slaac::Solicit));
    advert(&mut r, router(), 1800, &[], S);
    assert_eq!(r.deadline(), 1800 * S + S);
    assert_eq!(r.poll(20 * S), None);
    assert!(!r.unanswered(), "answered");
    // Once heard, a later start sends none.
    r.start(30 * S, 0);
    assert_eq!(r.poll(30 * S), None);
    // A router advertising itself with lifetime 0 (prefixes only) is no answer: the
    // solicitations go on, and end unanswered.
    let mut r = Routers::new(SECRET, MAC);
    r.start(0, 0);
    assert_eq!(r.poll(0), Some(Slaac::Solicit));
    advert(&mut r, router(), 0, &[], S);
    assert_eq!(r.default_router(), None);
    let mut sent = 1;
    while r.deadline() != u64::MAX {
        if r.poll(r.deadline()) == Some(Slaac::Solicit) {
            sent += 1;
        }
    }
    assert_eq!(sent, 3);
    assert!(r.unanswered());
    // Cleared (the link-local address gave up): a later start solicits afresh.
    r.clear();
    assert!(!r.unanswered());
    r.start(100 * S, 0);
    assert_eq!(r.poll(100 * S), Some(Slaac::Solicit));
}

#[test]
fn the_tables_are_bounded_and_a_router_can_withdraw() {
    let mut r = Routers::new(SECRET, MAC);
    let mut opts = Vec::new();
    for i in 0..10 {
        opts.extend(prefix_opt(&format!("2001:db8:{i}::"), 64, true, 100, 100));
    }
    advert(&mut r, router(), 1800, &opts, 0);
    assert_eq!(r.prefixes.iter().flatten().count(), MAX_PREFIXES);
    assert_eq!(r.refused, 10 - MAX_PREFIXES as u64);
    for i in 2..10 {
        advert(&mut r, format!("fe80::{i}").parse().unwrap(), 1800, &[], 0);
    }
    assert_eq!(r.routers.iter().flatten().count(), MAX_ROUTERS);
    // The first router withdraws (lifetime 0): the next is the default.
    advert(&mut r, router(), 0, &[], S);
    assert_eq!(r.default_router(), Some("fe80::2".parse().unwrap()));
}

#[test]
fn the_mtu_option_is_taken_within_1280_and_the_links() {
    let mut r = Routers::new(SECRET, MAC);
    advert(&mut r, router(), 1800, &mtu_opt(1400), 0);
    assert_eq!(r.mtu, Some(1400));
    advert(&mut r, router(), 1800, &mtu_opt(1000), 0);
    advert(&mut r, router(), 1800, &mtu_opt(9000), 0);
    assert_eq!(r.mtu, Some(1400));
    assert_eq!(r.refused, 2);
}

#[test]
fn a_duplicate_global_address_tries_another_and_gives_up_on_the_prefix_only() {
    let mut r = Routers::new(SECRET, MAC);
    advert(
        &mut r,
        router(),
        1800,
        &prefix_opt("2001:db8:1::", 64, true, 86400, 86400),
        0,
    );
    let mut events = Vec::new();
    for _ in 0..=crate::iface::addr6::IDGEN_RETRIES {
        let t = r.deadline();
        r.poll(t); // the probe
        let a = r.prefixes[0].as_ref().unwrap().addr.addr();
        let e = r.holding(a).unwrap().addr.advertisement(a, t).unwrap();
        events.push(e);
    }
    assert!(
        matches!(events.last(), Some(Event::GaveUp(_))),
        "{events:?}"
    );
    assert_eq!(r.addresses().count(), 0);
    // The slot is freed (an infinite lifetime renewed by every advertisement must not
    // hold it forever); the prefix's next advertisement tries again from the start.
    assert_eq!(r.poll(S), None);
    assert!(r.prefixes.iter().all(|p| p.is_none()));
    let opt = prefix_opt("2001:db8:1::", 64, true, INFINITY, INFINITY);
    advert(&mut r, router(), 1800, &opt, 2 * S);
    let p = r.prefixes[0].as_ref().unwrap();
    assert!(matches!(p.addr.phase(), Phase::Tentative { .. }));
    assert_eq!(p.valid_until, u64::MAX);
}

/// When the link-local address gives up (IPv6 off on the link), the link forgets what
/// routers said: a global address it can no longer hear conflicts for must not pass DAD.
#[test]
fn a_link_that_gave_up_its_link_local_address_forgets_its_routers() {
    let mut r = Routers::new(SECRET, MAC);
    advert(
        &mut r,
        router(),
        1800,
        &prefix_opt("2001:db8:1::", 64, true, 100, 100),
        0,
    );
    r.clear();
    assert!(r.prefixes.iter().all(|p| p.is_none()));
    assert_eq!(r.default_router(), None);
    assert_eq!(r.deadline(), u64::MAX);
    assert_eq!(r.poll(5 * S), None);
}

#[test]
fn a_configured_address_is_held_for_ever_and_advertised_prefixes_make_none() {
    let mut r = Routers::new(SECRET, MAC);
    let a: Ipv6Address = "2001:db8:7::80".parse().unwrap();
    r.configure(a, 0);
    let mut now = 0;
    assert_eq!(settle(&mut r, &mut now), [a]);
    // An advertisement: its router and MTU are taken, its prefix makes no address.
    let mut opts = prefix_opt("2001:db8:1::", 64, true, 86400, 14400);
    opts.extend(mtu_opt(1400));
    advert(&mut r, router(), 1800, &opts, now);
    assert_eq!(r.default_router(), Some(router()));
    assert_eq!(r.mtu, Some(1400));
    assert_eq!(r.prefixes.iter().flatten().count(), 1);
    assert_eq!(r.addresses().collect::<Vec<_>>(), [a]);
    // Years later, still ours.
    now += 10 * 365 * 86400 * 1_000_000_000;
    while r.poll(now).is_some() {}
    assert_eq!(r.addresses().collect::<Vec<_>>(), [a]);
}

/// A Recursive DNS Server option (RFC 8106 §5.1) for `servers`, `lifetime` seconds.
fn rdnss_opt(lifetime: u32, servers: &[&str]) -> Vec<u8> {
    let mut o = vec![25, (1 + 2 * servers.len()) as u8, 0, 0];
    o.extend_from_slice(&lifetime.to_be_bytes());
    for s in servers {
        o.extend_from_slice(&s.parse::<Ipv6Address>().unwrap().0);
    }
    o
}

/// RFC 8106 §5.3.1: servers kept for their lifetime, renewed when heard again, removed by
/// lifetime 0 and when it ends; at most three, a fourth taking the place of the one that
/// expires first only if it outlives it; multicast, unspecified and loopback refused.
#[test]
fn advertised_dns_servers_live_their_lifetime_and_are_bounded() {
    let a = |s: &str| -> Ipv6Address { s.parse().unwrap() };
    let mut r = Routers::new(SECRET, MAC);
    let servers = |r: &Routers| r.dns_servers().collect::<Vec<_>>();
    advert(
        &mut r,
        router(),
        1800,
        &rdnss_opt(600, &["2001:db8::53", "2001:db8::54"]),
        S,
    );
    assert_eq!(servers(&r), [a("2001:db8::53"), a("2001:db8::54")]);
    assert!(r.deadline() <= 601 * S);
    // Heard again with a longer life; the other withdrawn.
    advert(
        &mut r,
        router(),
        1800,
        &rdnss_opt(1200, &["2001:db8::53"]),
        2 * S,
    );
    advert(
        &mut r,
        router(),
        1800,
        &rdnss_opt(0, &["2001:db8::54"]),
        2 * S,
    );
    assert_eq!(servers(&r), [a("2001:db8::53")]);
    // Bounded: three held; a fourth takes the place of the one that expires first
    // (RFC 8106 §5.3.1), here ::1, renewed with less time than ::2.
    advert(
        &mut r,
        router(),
        1800,
        &rdnss_opt(300, &["2001:db8::1", "2001:db8::2"]),
        3 * S,
    );
    advert(
        &mut r,
        router(),
        1800,
        &rdnss_opt(200, &["2001:db8::1"]),
        3 * S,
    );
    advert(
        &mut r,
        router(),
        1800,
        &rdnss_opt(900, &["2001:db8::4"]),
        3 * S,
    );
    let mut held = servers(&r);
    held.sort();
    assert_eq!(
        held,
        [a("2001:db8::2"), a("2001:db8::4"), a("2001:db8::53")]
    );
    // Addresses no server has.
    for bad in ["ff02::1", "::", "::1"] {
        let refused = r.refused;
        advert(&mut r, router(), 1800, &rdnss_opt(900, &[bad]), 3 * S);
        assert_eq!(r.refused, refused + 1, "{bad}");
    }
    // The lifetimes run out.
    while r.poll(304 * S).is_some() {}
    assert!(!servers(&r).contains(&a("2001:db8::2")));
    while r.poll(1300 * S).is_some() {}
    assert_eq!(servers(&r), []);
}
