//! The resolver at its own level: a lookup, datagrams and the passing of time in; the
//! datagrams it sends and the results out.

use super::*;
use crate::wire::ipv6::mapped;

const S: u64 = SEC;

fn server(last: u8) -> Server {
    Server {
        addr: Ipv6Address(mapped([10, 0, 0, last])),
        port: 53,
    }
}

fn resolver(servers: &[Server]) -> Resolver {
    let mut r = Resolver::new([1, 2], Timing::default());
    r.set_servers(servers);
    r
}

fn name(s: &str) -> Name {
    Name::new(s).unwrap()
}

/// Sends what is due: (the datagram, where to, from which port).
fn sent(r: &mut Resolver, now: u64) -> Vec<(Vec<u8>, Transmit)> {
    let mut out = Vec::new();
    let mut buf = [0u8; wire::MAX_MESSAGE];
    while let Some(t) = r.poll_transmit(now, &mut buf) {
        out.push((buf[..t.len].to_vec(), t));
    }
    out
}

/// The answer to query `q`: rcode, and A records with `ttl` for the question's name.
fn answer(q: &[u8], rcode: u16, ttl: u32, addrs: &[[u8; 4]]) -> Vec<u8> {
    let mut m = q.to_vec();
    m[2..4].copy_from_slice(&(0x8180 | rcode).to_be_bytes());
    m[6..8].copy_from_slice(&(addrs.len() as u16).to_be_bytes());
    for a in addrs {
        m.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1]);
        m.extend_from_slice(&ttl.to_be_bytes());
        m.extend_from_slice(&[0, 4]);
        m.extend_from_slice(a);
    }
    m
}

fn pending(l: Result<Lookup, Busy>) -> Ticket {
    match l {
        Ok(Lookup::Pending(t)) => t,
        other => panic!("not pending: {other:?}"),
    }
}

#[test]
fn no_server_no_lookup() {
    let mut r = resolver(&[]);
    assert_eq!(
        r.resolve(&name("example.org"), Type::A, 0),
        Ok(Lookup::Ready(Err(Failure::NoServer)))
    );
    assert!(sent(&mut r, 0).is_empty());
}

#[test]
fn asked_answered_cached_and_expired() {
    let mut r = resolver(&[server(53)]);
    let n = name("ca.example");
    let t = pending(r.resolve(&n, Type::A, 0));
    let out = sent(&mut r, 0);
    assert_eq!(out.len(), 1);
    let (q, tx) = &out[0];
    assert_eq!(tx.to, server(53));
    assert!(tx.from_port >= PORT_BASE);
    assert!(r.owns_port(tx.from_port));
    assert_eq!(r.deadline(), Some(S));
    assert_eq!(r.take(t), None, "still waiting");
    let a = answer(q, 0, 120, &[[192, 0, 2, 10]]);
    assert!(r.on_datagram(server(53), tx.from_port, &a, S / 2));
    let got = r.take(t).unwrap().unwrap();
    assert_eq!(got.addresses(), &[Ipv6Address(mapped([192, 0, 2, 10]))]);
    assert_eq!(
        r.take(t),
        Some(Err(Failure::Forgotten)),
        "a ticket is spent once"
    );
    assert!(!r.owns_port(tx.from_port));
    assert_eq!(r.deadline(), None);
    // Within the TTL: from the cache with the TTL left (120.5 s - 100 s), nothing sent.
    assert_eq!(
        r.resolve(&n, Type::A, 100 * S),
        Ok(Lookup::Ready(Ok(Answer { ttl: 20, ..got })))
    );
    assert_eq!(r.counts().cached, 1);
    // The other type, or the TTL past: asked again.
    pending(r.resolve(&n, Type::Aaaa, 100 * S));
    pending(r.resolve(&n, Type::A, S / 2 + 120 * S));
    assert_eq!(sent(&mut r, S / 2 + 120 * S).len(), 2);
}

#[test]
fn forgeries_are_dropped_and_the_query_waits() {
    let mut r = resolver(&[server(53)]);
    let n = name("ca.example");
    let t = pending(r.resolve(&n, Type::A, 0));
    let (q, tx) = sent(&mut r, 0).remove(0);
    let good = answer(&q, 0, 60, &[[192, 0, 2, 10]]);
    let mut bad_id = good.clone();
    bad_id[1] ^= 1;
    let other_port = Server {
        port: 5353,
        ..server(53)
    };
    // From another host, another port, with another ID: taken (the port is ours) and
    // dropped.
    assert!(r.on_datagram(server(66), tx.from_port, &good, 1));
    assert!(r.on_datagram(other_port, tx.from_port, &good, 1));
    assert!(r.on_datagram(server(53), tx.from_port, &bad_id, 1));
    assert_eq!(r.counts().not_ours, 3);
    // To another port: not the resolver's at all.
    assert!(!r.on_datagram(server(53), tx.from_port ^ 1, &good, 1));
    assert_eq!(r.take(t), None);
    assert!(r.on_datagram(server(53), tx.from_port, &good, 2));
    assert!(r.take(t).unwrap().is_ok());
}

#[test]
fn retries_double_across_the_servers_then_time_out() {
    let mut r = resolver(&[server(1), server(2)]);
    let t = pending(r.resolve(&name("slow.example"), Type::A, 0));
    let mut at = Vec::new();
    let mut now = 0;
    for _ in 0..20 {
        for (_, tx) in sent(&mut r, now) {
            at.push((now / (S / 10), tx.to));
        }
        match r.deadline() {
            Some(d) => now = d,
            None => break,
        }
    }
    // Tries at 0, 1, 3 and 7 s, in turn; given up at 11 s.
    assert_eq!(
        at,
        vec![
            (0, server(1)),
            (10, server(2)),
            (30, server(1)),
            (70, server(2))
        ]
    );
    assert_eq!(now, 11 * S);
    assert_eq!(r.take(t), Some(Err(Failure::Timeout)));
    assert_eq!(r.counts().timeouts, 1);
    assert_eq!(r.counts().sent, 4);
    // The same ID throughout: an answer to the first try counts while the query waits.
    let mut r = resolver(&[server(1), server(2)]);
    let t = pending(r.resolve(&name("slow.example"), Type::A, 0));
    let (q, tx) = sent(&mut r, 0).remove(0);
    let (q2, _) = sent(&mut r, S).remove(0);
    assert_eq!(q, q2);
    let a = answer(&q, 0, 60, &[[192, 0, 2, 1]]);
    assert!(r.on_datagram(server(1), tx.from_port, &a, S + 1));
    assert!(r.take(t).unwrap().is_ok());
}

#[test]
fn a_failing_server_hands_over_at_once_and_the_answering_one_goes_first() {
    let mut r = resolver(&[server(1), server(2)]);
    let n = name("ca.example");
    let t = pending(r.resolve(&n, Type::A, 0));
    let (q, tx) = sent(&mut r, 0).remove(0);
    assert_eq!(tx.to, server(1));
    assert!(r.on_datagram(server(1), tx.from_port, &answer(&q, 2, 0, &[]), 5));
    let next = sent(&mut r, 5);
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].1.to, server(2));
    let a = answer(&q, 0, 0, &[[192, 0, 2, 1]]);
    assert!(r.on_datagram(server(2), tx.from_port, &a, 6));
    assert!(r.take(t).unwrap().is_ok());
    assert_eq!(r.counts().failed, 1);
    // TTL 0: used once, not kept; the next query starts at the server that answered.
    pending(r.resolve(&n, Type::A, 7));
    assert_eq!(sent(&mut r, 7)[0].1.to, server(2));
}

#[test]
fn every_server_failing_gives_the_last_reason() {
    let mut r = resolver(&[server(1)]);
    let t = pending(r.resolve(&name("ca.example"), Type::A, 0));
    let mut now = 0;
    for _ in 0..Timing::default().tries {
        let (q, tx) = sent(&mut r, now).remove(0);
        assert!(r.on_datagram(server(1), tx.from_port, &answer(&q, 5, 0, &[]), now));
        now += 1;
    }
    assert!(sent(&mut r, now).is_empty());
    assert_eq!(r.take(t), Some(Err(Failure::Server(5))));
    assert_eq!(
        Failure::Server(5).reason(),
        "the DNS server refused (REFUSED)"
    );
}

#[test]
fn negative_answers_are_kept_for_their_soa_ttl_at_most_five_minutes() {
    let mut r = resolver(&[server(1)]);
    let n = name("gone.example");
    let t = pending(r.resolve(&n, Type::A, 0));
    let (q, tx) = sent(&mut r, 0).remove(0);
    // NXDOMAIN with an SOA of TTL 3600, MINIMUM 3600.
    let mut m = answer(&q, 3, 0, &[]);
    m[8..10].copy_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&[0xC0, 12, 0, 6, 0, 1, 0, 0, 0x0E, 0x10, 0, 24]);
    m.extend_from_slice(&[0xC0, 12, 0xC0, 12]);
    for v in [1u32, 2, 3, 4, 3600] {
        m.extend_from_slice(&v.to_be_bytes());
    }
    assert!(r.on_datagram(server(1), tx.from_port, &m, 0));
    assert_eq!(r.take(t), Some(Err(Failure::NoAddress)));
    assert_eq!(
        r.resolve(&n, Type::A, 299 * S),
        Ok(Lookup::Ready(Err(Failure::NoAddress)))
    );
    pending(r.resolve(&n, Type::A, 300 * S));
}

#[test]
fn queries_in_flight_are_bounded_with_distinct_ports_and_cancel_frees() {
    let mut r = resolver(&[server(1)]);
    let tickets: Vec<_> = (0..QUERIES)
        .map(|i| pending(r.resolve(&name(&format!("n{i}.example")), Type::A, 0)))
        .collect();
    assert_eq!(r.resolve(&name("more.example"), Type::A, 0), Err(Busy));
    let out = sent(&mut r, 0);
    let mut ports: Vec<_> = out.iter().map(|o| o.1.from_port).collect();
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), QUERIES);
    r.cancel(tickets[0]);
    assert!(!r.owns_port(out[0].1.from_port));
    let a = answer(&out[0].0, 0, 60, &[[192, 0, 2, 1]]);
    assert!(!r.on_datagram(server(1), out[0].1.from_port, &a, 1));
    assert_eq!(r.take(tickets[0]), Some(Err(Failure::Forgotten)));
    pending(r.resolve(&name("more.example"), Type::A, 0));
}

#[test]
fn a_full_cache_gives_up_the_entry_that_expires_first() {
    let mut r = resolver(&[server(1)]);
    let answer_with = |r: &mut Resolver, n: &str, ttl: u32| {
        let t = pending(r.resolve(&name(n), Type::A, 0));
        let (q, tx) = sent(r, 0).remove(0);
        let a = answer(&q, 0, ttl, &[[192, 0, 2, 1]]);
        assert!(r.on_datagram(server(1), tx.from_port, &a, 0));
        assert!(r.take(t).unwrap().is_ok());
    };
    for i in 0..CACHE {
        answer_with(&mut r, &format!("n{i}.example"), 100 + i as u32);
    }
    answer_with(&mut r, "new.example", 1000);
    // n0 (TTL 100) went; the others and the new one are cached.
    assert!(matches!(
        r.resolve(&name("n0.example"), Type::A, 1),
        Ok(Lookup::Pending(_))
    ));
    for n in ["n1.example", "n7.example", "new.example"] {
        assert!(
            matches!(r.resolve(&name(n), Type::A, 1), Ok(Lookup::Ready(Ok(_)))),
            "{n}"
        );
    }
    // A day at most, whatever the TTL.
    let mut r = resolver(&[server(1)]);
    answer_with(&mut r, "long.example", u32::MAX >> 1);
    assert!(matches!(
        r.resolve(&name("long.example"), Type::A, MAX_TTL as u64 * S),
        Ok(Lookup::Pending(_))
    ));
}

#[test]
fn short_or_broken_datagrams_cannot_end_a_lookup() {
    // From the server's own address and port, at the query's port: four datagrams too
    // short to hold an ID, or with a question that does not read, are not answers.
    let mut r = resolver(&[server(1)]);
    let t = pending(r.resolve(&name("ca.example"), Type::A, 0));
    let (q, tx) = sent(&mut r, 0).remove(0);
    let mut broken_question = q.clone();
    broken_question[12] = 0xC0; // a pointer where the question's name starts
    for d in [&[0u8][..], &q[..11], &broken_question, &[0xFF; 12]] {
        assert!(r.on_datagram(server(1), tx.from_port, d, 1));
    }
    assert_eq!(r.counts().not_ours, 4);
    assert_eq!(r.counts().failed, 0);
    assert!(sent(&mut r, 1).is_empty(), "no try was ended");
    assert_eq!(r.take(t), None);
}

#[test]
fn each_query_walks_the_servers_in_its_own_order() {
    // q1 fails at server 1 and goes to 2; q2, answered by 2, makes 2 the first for new
    // queries, but q1 goes on to 3, not back to 1.
    let mut r = resolver(&[server(1), server(2), server(3)]);
    let t1 = pending(r.resolve(&name("one.example"), Type::A, 0));
    let (q1, tx1) = sent(&mut r, 0).remove(0);
    assert!(r.on_datagram(server(1), tx1.from_port, &answer(&q1, 2, 0, &[]), 0));
    assert_eq!(sent(&mut r, 0)[0].1.to, server(2));
    let t2 = pending(r.resolve(&name("two.example"), Type::A, 0));
    let (q2, tx2) = sent(&mut r, 0).remove(0);
    assert_eq!(tx2.to, server(1));
    assert!(r.on_datagram(server(1), tx2.from_port, &answer(&q2, 2, 0, &[]), 0));
    let next = sent(&mut r, 0).remove(0);
    assert_eq!(next.1.to, server(2));
    let a = answer(&q2, 0, 60, &[[192, 0, 2, 2]]);
    assert!(r.on_datagram(server(2), tx2.from_port, &a, 0));
    assert!(r.take(t2).unwrap().is_ok());
    assert!(r.on_datagram(server(2), tx1.from_port, &answer(&q1, 2, 0, &[]), 0));
    assert_eq!(sent(&mut r, 0)[0].1.to, server(3), "q1's third server");
    r.cancel(t1);
    // An answer from a server the list no longer holds still counts: it was asked.
    let t3 = pending(r.resolve(&name("three.example"), Type::A, 0));
    let (q3, tx3) = sent(&mut r, 0).remove(0);
    assert_eq!(tx3.to, server(2));
    r.set_servers(&[server(7), server(8), server(9)]);
    let a = answer(&q3, 0, 60, &[[192, 0, 2, 3]]);
    assert!(r.on_datagram(server(2), tx3.from_port, &a, 0));
    assert!(r.take(t3).unwrap().is_ok());
}

#[test]
fn a_short_buffer_ends_the_query_rather_than_stall_it() {
    let mut r = resolver(&[server(1)]);
    let t = pending(r.resolve(&name("ca.example"), Type::A, 0));
    let mut small = [0u8; 8];
    assert_eq!(r.poll_transmit(0, &mut small), None);
    assert_eq!(r.deadline(), None);
    assert_eq!(r.take(t), Some(Err(Failure::Buffer)));
}
