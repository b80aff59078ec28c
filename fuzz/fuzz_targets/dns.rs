//! The DNS stub resolver fed anything: each input is a sequence of events (a tag octet:
//! tag % 4 == 0 = a response whose 2-octet length follows, from the server to the oldest
//! query's port, with its ID made the query's and — with bit 2 — the query's question put
//! in front, so the fuzzer gets past the checks into the records; tag % 4 == 1 = the
//! clock moves on by tag² tenths of a second and what is due is sent; tag % 4 == 2 = a new
//! lookup of one of four names, A or AAAA; tag % 4 == 3 = every finished query taken).
//! Nothing may panic; no deadline is in the past after sending; an answer has 1 to 4
//! addresses; a query is sent at most four times.
#![no_main]

use bareweb_engine::dns::{wire, Lookup, Name, Resolver, Server, Timing, Type};
use bareweb_engine::wire::Ipv6Address;
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 4] = ["acme.test", "www.acme.test", "a.b.c.d.e", "x"];

fuzz_target!(|data: &[u8]| {
    let server = Server {
        addr: Ipv6Address([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1]),
        port: 53,
    };
    let mut r = Resolver::new([7, 9], Timing::default());
    r.set_servers(&[server]);
    let mut now = 0u64;
    let mut rest = data;
    let mut buf = [0u8; wire::MAX_MESSAGE];
    // The queries sent: (their bytes, port, times sent, ticket).
    let mut asked = Vec::new();
    while let Some((&tag, tail)) = rest.split_first() {
        rest = tail;
        match tag % 4 {
            0 => {
                if rest.len() < 2 {
                    break;
                }
                let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
                let mut msg = rest[2..2 + len].to_vec();
                rest = &rest[2 + len..];
                let Some((q, port, _, _)) = asked.first() else {
                    continue;
                };
                let q: &Vec<u8> = q;
                if tag & 4 != 0 {
                    let mut m = q.clone();
                    m.extend_from_slice(msg.get(q.len()..).unwrap_or(&[]));
                    m[2..4].copy_from_slice(msg.get(2..4).unwrap_or(&[0x81, 0x80]));
                    m[6..12].copy_from_slice(msg.get(6..12).unwrap_or(&[0, 1, 0, 0, 0, 0]));
                    msg = m;
                } else if msg.len() >= 2 {
                    msg[..2].copy_from_slice(&q[..2]);
                }
                r.on_datagram(server, *port, &msg, now);
            }
            1 => {
                now = now.saturating_add(u64::from(tag) * u64::from(tag) * 100_000_000);
                while let Some(t) = r.poll_transmit(now, &mut buf) {
                    assert!(t.len <= wire::MAX_MESSAGE);
                    if let Some(a) = asked.iter_mut().find(|a| a.1 == t.from_port) {
                        a.0 = buf[..t.len].to_vec();
                        a.2 += 1;
                        assert!(a.2 <= 4, "a query sent more than four times");
                    }
                }
                if let Some(d) = r.deadline() {
                    assert!(d > now, "a deadline in the past");
                }
            }
            2 => {
                let name = Name::new(NAMES[usize::from(tag >> 2) % 4]).unwrap();
                let t = if tag & 0x40 != 0 { Type::Aaaa } else { Type::A };
                match r.resolve(&name, t, now) {
                    Ok(Lookup::Pending(ticket)) => {
                        let mut b = [0u8; wire::MAX_MESSAGE];
                        let port = loop {
                            // Its port is the one poll_transmit will name; until then
                            // the query is known by its ticket.
                            let p = r.poll_transmit(now, &mut b);
                            match p {
                                Some(p) => {
                                    if let Some(a) = asked.iter_mut().find(|a| a.1 == p.from_port)
                                    {
                                        a.0 = b[..p.len].to_vec();
                                        a.2 += 1;
                                        assert!(a.2 <= 4, "a query sent more than four times");
                                    } else {
                                        break Some((b[..p.len].to_vec(), p.from_port));
                                    }
                                }
                                None => break None,
                            }
                        };
                        if let Some((q, port)) = port {
                            asked.push((q, port, 1u32, ticket));
                        }
                    }
                    Ok(Lookup::Ready(Ok(a))) => assert!((1..=4).contains(&a.count)),
                    Ok(Lookup::Ready(Err(_))) | Err(_) => {}
                }
            }
            _ => {
                asked.retain(|(_, _, _, ticket)| match r.take(*ticket) {
                    None => true,
                    Some(Ok(a)) => {
                        assert!((1..=4).contains(&a.count));
                        false
                    }
                    Some(Err(_)) => false,
                });
            }
        }
    }
});
