//! The DHCPv6 client fed anything: each input is a sequence of events (a tag octet: even =
//! a server's message whose 2-octet length follows, parsed by `wire::dhcpv6::parse` —
//! with bit 1 set its transaction id is made the client's current one and with bit 2 its
//! Client Identifier ours, so the fuzzer reaches every state; bit 3 raises the M flag of a
//! router advertisement first, bit 4 the O flag — odd = the clock moves on by tag²
//! seconds and the client is polled until it has nothing due). Nothing may panic or loop;
//! a lease is held exactly in Bound, Renewing and Rebinding, is valid after the time it
//! was given, and is lost only if one was held; the deadline never lies in the past after
//! polling; every message built parses as DHCPv6 (type, transaction id, options whole).
#![no_main]

use bareweb_engine::iface::dhcp6::{Client, Event, Phase, Poll};
use bareweb_engine::wire::dhcpv6::{self, MAX_EMIT};
use libfuzzer_sys::fuzz_target;

const NS: u64 = 1_000_000_000;

fn held(c: &Client) -> bool {
    matches!(c.phase(), Phase::Bound | Phase::Renewing | Phase::Rebinding)
}

fn check_event(c: &Client, e: Event, had: bool, now: u64) {
    match e {
        Event::Leased(l) => {
            assert!(held(c) && c.lease() == Some(l));
            assert!(l.valid_until > now && l.preferred_until <= l.valid_until);
        }
        Event::Lost(a) => {
            assert!(had, "lost {a} never held");
            assert!(c.lease().is_none_or(|l| l.addr != a) || !held(c));
        }
    }
}

/// Options walk: the message is a type, an id, then whole options.
fn well_formed(m: &[u8]) {
    assert!(m.len() >= 4 && [1, 3, 5, 6, 11].contains(&m[0]), "{m:?}");
    let mut rest = &m[4..];
    while !rest.is_empty() {
        assert!(rest.len() >= 4);
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
        assert!(rest.len() >= 4 + len);
        rest = &rest[4 + len..];
    }
}

fuzz_target!(|data: &[u8]| {
    let mut c = Client::new([2, 0, 0, 0, 0, 7], 0x1234_5678);
    let mut now = NS;
    let mut rest = data;
    let mut buf = [0u8; MAX_EMIT];
    while let Some((&tag, tail)) = rest.split_first() {
        rest = tail;
        if tag % 2 == 0 {
            if rest.len() < 2 {
                break;
            }
            let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
            let bytes = &rest[2..2 + len];
            rest = &rest[2 + len..];
            if tag & 24 != 0 {
                c.advertised(tag & 8 != 0, tag & 16 != 0, now);
            }
            let Ok(mut m) = dhcpv6::parse(bytes) else {
                continue;
            };
            if tag & 2 != 0 {
                if let Some(x) = c.xid() {
                    m.xid = x;
                }
            }
            if tag & 4 != 0 {
                m.client_id = Some(*c.duid());
            }
            let had = c.lease().is_some();
            if let Some(e) = c.receive(&m, now) {
                check_event(&c, e, had, now);
            }
            assert_eq!(c.lease().is_some(), held(&c));
        } else {
            now = now.saturating_add(u64::from(tag) * u64::from(tag) * NS);
            let mut polls = 0;
            loop {
                let had = c.lease().is_some();
                match c.poll(now, &mut buf) {
                    None => break,
                    Some(Poll::Send(n)) => well_formed(&buf[..n]),
                    Some(Poll::Event(e)) => check_event(&c, e, had, now),
                }
                polls += 1;
                assert!(polls < 16, "the client keeps asking at {now}");
            }
            assert!(c.deadline() > now, "a deadline in the past");
            assert_eq!(c.lease().is_some(), held(&c));
        }
    }
});
